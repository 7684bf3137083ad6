//! DataTree's replay rules on hand-made transactions, for what the kazoo-written logs in
//! tests/data do not hold: a pre-3.3 create without parentCVersion, reconfig (type 16), a record
//! above 1 MiB, a failed multi applying nothing, the fuzzy-snapshot fix-ups, closeSession of a
//! session whose paths are not listed.

use zk_format::datatree::code;
use zk_format::snapshot::{SnapNode, Snapshot, StatPersisted};
use zk_format::txnlog::{self, op, Txn, TxnHeader};
use zk_format::{DataTree, MissingAcl};

fn tree() -> DataTree {
    let root = SnapNode {
        path: String::new(),
        data: Some(vec![]),
        acl: -1,
        stat: StatPersisted::default(),
    };
    let zk = |p: &str| SnapNode {
        path: p.into(),
        ..root.clone()
    };
    let snap = Snapshot {
        dbid: -1,
        nodes: vec![root.clone(), zk("/zookeeper"), zk("/zookeeper/config")],
        ..Snapshot::default()
    };
    DataTree::from_snapshot(&snap, MissingAcl::Refuse).unwrap()
}

fn h(zxid: i64, kind: i32, session: i64) -> TxnHeader {
    TxnHeader {
        session_id: session,
        cxid: 0,
        zxid,
        time: 1000 + zxid,
        kind,
    }
}

fn create(path: &str, pcv: i32, ephemeral: bool) -> Txn {
    Txn::Create {
        path: path.into(),
        data: Some(b"d".to_vec()),
        acl: None,
        ephemeral,
        parent_cversion: pcv,
    }
}

/// Encodes and decodes a record, as a replay reads it from a log.
fn through_log(hdr: &TxnHeader, txn: &Txn) -> Txn {
    let bytes = txnlog::encode_txn(hdr, txn, None);
    let log = txnlog::encode_log(&[bytes]);
    let file = txnlog::decode(&log).unwrap();
    file.records[0].txn.clone()
}

#[test]
fn a_pre_3_3_create_without_parent_cversion_counts_from_the_parent() {
    let mut t = tree();
    // The record as 3.2 wrote it: CreateTxnV0, no parentCVersion.
    let hdr = h(1, op::CREATE, 0);
    let mut bytes = txnlog::encode_txn(&hdr, &create("/a", 0, false), None);
    bytes.truncate(bytes.len() - 4);
    let (_, txn, _) = txnlog::decode_txn(&bytes, 0).unwrap();
    assert!(matches!(
        txn,
        Txn::Create {
            parent_cversion: -1,
            ..
        }
    ));
    assert_eq!(t.apply(&hdr, &txn, None), code::OK);
    assert_eq!(t.node("/").unwrap().stat.cversion, 1);
}

#[test]
fn reconfig_is_a_set_data_of_the_config_node() {
    let mut t = tree();
    let hdr = h(5, op::RECONFIG, 0);
    let txn = through_log(
        &hdr,
        &Txn::SetData {
            path: "/zookeeper/config".into(),
            data: Some(b"server.1=a:1:2;3\nversion=5".to_vec()),
            version: -1,
        },
    );
    assert_eq!(t.apply(&hdr, &txn, None), code::OK);
    let n = t.node("/zookeeper/config").unwrap();
    assert_eq!(n.stat.mzxid, 5);
    assert_eq!(n.stat.version, -1);
}

#[test]
fn a_record_above_one_mib_reads_and_applies() {
    let mut t = tree();
    let hdr = h(1, op::MULTI, 0);
    let big = Txn::Multi(vec![
        (op::CREATE, create("/big", 1, false)),
        (
            op::SET_DATA,
            Txn::SetData {
                path: "/big".into(),
                data: Some(vec![7; 1_500_000]),
                version: 1,
            },
        ),
    ]);
    let bytes = txnlog::encode_txn(&hdr, &big, None);
    assert!(bytes.len() > 1 << 20);
    let txn = through_log(&hdr, &big);
    assert_eq!(t.apply(&hdr, &txn, None), code::OK);
    assert_eq!(
        t.node("/big").unwrap().data.as_ref().unwrap().len(),
        1_500_000
    );
}

#[test]
fn a_multi_with_an_error_applies_nothing() {
    let mut t = tree();
    let hdr = h(1, op::MULTI, 0);
    let failed = Txn::Multi(vec![
        (op::CREATE, create("/x", 1, false)),
        (op::ERROR, Txn::Error { err: -103 }),
        (op::ERROR, Txn::Error { err: -2 }),
    ]);
    let digest = t.digest();
    assert_eq!(t.apply(&hdr, &through_log(&hdr, &failed), None), -103);
    assert!(t.node("/x").is_none());
    assert_eq!(t.digest(), digest);
    assert_eq!(t.stats.failed_multis, 1);
    assert_eq!(t.last_zxid, 1);
}

#[test]
fn fuzzy_replay_fix_ups() {
    let mut t = tree();
    t.apply(&h(1, op::CREATE, 0), &create("/p", 1, false), None);
    t.apply(&h(2, op::CREATE, 0), &create("/p/c", 1, false), None);
    // Replayed again over a snapshot that already has it: NodeExists, but the parent's
    // cversion and pzxid follow the transaction's (create, type 1, only).
    assert_eq!(
        t.apply(&h(3, op::CREATE, 0), &create("/p/c", 5, false), None),
        code::NODE_EXISTS
    );
    let p = t.node("/p").unwrap().stat;
    assert_eq!((p.cversion, p.pzxid), (5, 3));
    // A create2 that exists changes nothing on the parent.
    assert_eq!(
        t.apply(&h(4, op::CREATE2, 0), &create("/p/c", 9, false), None),
        code::NODE_EXISTS
    );
    assert_eq!(t.node("/p").unwrap().stat.cversion, 5);
    // A delete of a node already gone still raises the parent's pzxid.
    let del = Txn::Delete {
        path: "/p/gone".into(),
    };
    assert_eq!(t.apply(&h(6, op::DELETE, 0), &del, None), code::NO_NODE);
    assert_eq!(t.node("/p").unwrap().stat.pzxid, 6);
    // A lower parentCVersion does not lower the parent's.
    t.apply(&h(7, op::CREATE, 0), &create("/p/d", 2, false), None);
    let p = t.node("/p").unwrap().stat;
    assert_eq!((p.cversion, p.pzxid), (5, 6));
}

#[test]
fn close_session_deletes_listed_and_unlisted_ephemerals() {
    let mut t = tree();
    let s = 0x42;
    t.apply(
        &h(1, op::CREATE_SESSION, s),
        &Txn::CreateSession { timeout: 30000 },
        None,
    );
    t.apply(&h(2, op::CREATE, s), &create("/e1", 1, true), None);
    t.apply(&h(3, op::CREATE, s), &create("/e2", 2, true), None);
    assert_eq!(t.sessions.get(&s), Some(&30000));
    let close = Txn::CloseSession {
        paths: Some(vec!["/e1".into()]),
    };
    t.apply(&h(4, op::CLOSE_SESSION, s), &close, None);
    assert!(t.node("/e1").is_none() && t.node("/e2").is_none());
    assert!(t.sessions.is_empty());
    assert_eq!(t.node("/").unwrap().stat.pzxid, 4);
}
