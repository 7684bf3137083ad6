//! zk-format on bytes a real ZooKeeper 3.9.5 wrote (tests/data/README.md): every snapshot of
//! each directory (raw, gzip, snappy), replayed through every later log, must give the tree
//! ZooKeeper's own restart served, node by node and stat by stat, with its digest; sessions
//! keep the passwords their clients hold. Damaged copies must fail where the damage is.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use zk_format::datatree::is_session_owner;
use zk_format::files::{self, FileKind};
use zk_format::{compress, snapshot, txnlog, DataTree, FormatError, LogEnd, MissingAcl};

fn data_dir(name: &str) -> PathBuf {
    manifest_dir().join("tests/data").join(name)
}

fn names(dir: &Path) -> Vec<(FileKind, i64, String)> {
    let mut v: Vec<_> = std::fs::read_dir(dir.join("version-2"))
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().to_string_lossy().into_owned();
            files::parse_name(&n).map(|(k, z)| (k, z, n))
        })
        .collect();
    v.sort();
    v
}

fn read_snapshot(dir: &Path, name: &str) -> snapshot::Snapshot {
    let raw = std::fs::read(dir.join("version-2").join(name)).unwrap();
    let bytes = compress::decompress(compress::Codec::of_name(name), &raw, 1 << 30).unwrap();
    snapshot::decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Replays `dir` from the snapshot at `snap_zxid`: the tree, the transactions replayed, and
/// how each log ended.
fn replay(dir: &Path, snap_name: &str, snap_zxid: i64) -> (DataTree, u64, Vec<LogEnd>) {
    let snap = read_snapshot(dir, snap_name);
    assert_eq!(snap.dbid, snapshot::SNAP_DBID);
    let mut tree = DataTree::from_snapshot(&snap, MissingAcl::Refuse).unwrap();
    tree.check_snapshot_digest(snap_zxid);
    let logs: Vec<(i64, String)> = names(dir)
        .into_iter()
        .filter(|(k, _, _)| *k == FileKind::Log)
        .map(|(_, z, n)| (z, n))
        .collect();
    let mut n = 0;
    let mut ends = Vec::new();
    let mut last = snap_zxid;
    for (_, name) in files::logs_to_replay(&logs, snap_zxid) {
        let bytes = std::fs::read(dir.join("version-2").join(&name)).unwrap();
        let file = txnlog::decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        for rec in file.records.iter().filter(|r| r.header.zxid > snap_zxid) {
            assert_eq!(rec.header.zxid, last + 1, "{name}: zxids follow each other");
            last = rec.header.zxid;
            tree.apply(&rec.header, &rec.txn, rec.digest.map(|d| d.digest));
            n += 1;
        }
        ends.push(file.end);
    }
    (tree, n, ends)
}

/// The client's view of every node, as tree_dump.py writes it.
fn client_view(tree: &DataTree) -> BTreeMap<String, Value> {
    let counts = tree.child_counts();
    let mut out = BTreeMap::new();
    for (p, n) in tree.depth_first().unwrap() {
        let s = n.stat;
        let kids = counts.get(p).copied().unwrap_or(0);
        let mut acl: Vec<Value> = tree
            .acl_of(n)
            .iter()
            .map(|a| serde_json::json!([a.perms, a.id.scheme, a.id.id]))
            .collect();
        acl.sort_by_key(|a| a.to_string());
        let hex = |d: &[u8]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
        out.insert(
            p.to_string(),
            serde_json::json!({
                "acl": acl,
                // Null data (length -1) reads as None in kazoo, so as null in the dump.
                "data": n.data.as_deref().map(hex),
                "stat": {
                    "czxid": s.czxid, "mzxid": s.mzxid, "ctime": s.ctime, "mtime": s.mtime,
                    "version": s.version, "cversion": s.cversion * 2 - kids,
                    "aversion": s.aversion,
                    "ephemeralOwner": if is_session_owner(s.ephemeral_owner) { s.ephemeral_owner } else { 0 },
                    "dataLength": n.data.as_ref().map_or(0, |d| d.len()),
                    "numChildren": kids, "pzxid": s.pzxid,
                },
            }),
        );
    }
    out
}

fn expected(dir: &Path) -> BTreeMap<String, Value> {
    let v: Value =
        serde_json::from_slice(&std::fs::read(dir.join("expected.json")).unwrap()).unwrap();
    let mut out = BTreeMap::new();
    for (p, node) in v.as_object().unwrap() {
        let mut node = node.clone();
        let acl = node["acl"].as_array_mut().unwrap();
        acl.sort_by_key(|a| a.to_string());
        out.insert(p.clone(), node);
    }
    out
}

fn check_dir(name: &str) {
    let dir = data_dir(name);
    let want = expected(&dir);
    let live: Value =
        serde_json::from_slice(&std::fs::read(dir.join("live.json")).unwrap()).unwrap();
    let snaps: Vec<(i64, String)> = names(&dir)
        .into_iter()
        .filter(|(k, _, _)| *k == FileKind::Snapshot)
        .map(|(_, z, n)| (z, n))
        .collect();
    assert!(snaps.len() >= 3, "{name}: several snapshots: {snaps:?}");
    let mut own_digest_matched = 0;
    for (zxid, snap_name) in &snaps {
        let (tree, n, ends) = replay(&dir, snap_name, *zxid);
        own_digest_matched += usize::from(tree.stats.snapshot_digest_matched == Some(true));
        let got = client_view(&tree);
        for (p, node) in &want {
            assert_eq!(got.get(p), Some(node), "{name} from {snap_name}: node {p}");
        }
        assert_eq!(got.len(), want.len(), "{name} from {snap_name}: node count");
        // The digest the log's last transaction carries is the tree's.
        assert!(
            tree.stats.digests_compared > 0 || n == 0,
            "{name}: digests compared"
        );
        assert_eq!(
            tree.stats.digest_mismatches, 0,
            "{name} from {snap_name}: digest"
        );
        // kill -9 mid-preallocation: the last log ends at its zeros.
        assert!(
            matches!(ends.last(), Some(LogEnd::Padding { .. })),
            "{ends:?}"
        );
        for s in live.as_array().unwrap() {
            let id = s["session"].as_i64().unwrap();
            assert!(
                tree.sessions.contains_key(&id),
                "{name}: session {id:#x} kept"
            );
            let pw: String = zk_format::password::session_password(id)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(
                pw,
                s["password"].as_str().unwrap(),
                "the password its client holds"
            );
        }
    }
    // Some snapshots' own digests are compared and match at load (snapshot.0 has none, one
    // whose digest zxid is later is compared in the replay, and one ZooKeeper wrote while
    // applying a transaction may differ: DataTree's snapshot_digest_matched says why).
    assert!(
        own_digest_matched >= 1,
        "{name}: {own_digest_matched} of {}",
        snaps.len()
    );
}

#[test]
fn raw_snapshots_and_logs_replay_to_zookeepers_restart() {
    check_dir("raw");
}

#[test]
fn gzip_snapshots_replay_to_zookeepers_restart() {
    check_dir("gz");
}

#[test]
fn snappy_snapshots_replay_to_zookeepers_restart() {
    check_dir("snappy");
}

#[test]
fn every_transaction_type_of_the_writer_is_in_the_logs() {
    let dir = data_dir("raw");
    let mut kinds = std::collections::BTreeSet::new();
    let mut failed_multi = false;
    for (k, _, n) in names(&dir) {
        if k != FileKind::Log {
            continue;
        }
        let file = txnlog::decode(&std::fs::read(dir.join("version-2").join(&n)).unwrap()).unwrap();
        for r in file.records {
            kinds.insert(r.header.kind);
            if let txnlog::Txn::Multi(subs) = &r.txn {
                failed_multi |= subs.iter().any(|(k, _)| *k == txnlog::op::ERROR);
                kinds.extend(subs.iter().map(|(k, _)| *k));
            }
        }
    }
    use txnlog::op::*;
    for k in [
        CREATE_SESSION,
        CLOSE_SESSION,
        CREATE,
        CREATE2,
        CREATE_CONTAINER,
        CREATE_TTL,
        DELETE,
        DELETE_CONTAINER,
        SET_DATA,
        SET_ACL,
        MULTI,
        CHECK,
        ERROR,
    ] {
        assert!(kinds.contains(&k), "type {k} in {kinds:?}");
    }
    assert!(failed_multi, "a multi with an error sub-transaction");
}

#[test]
fn a_snapshot_reencoded_by_the_writer_reads_back_the_same() {
    let dir = data_dir("raw");
    let snaps: Vec<String> = names(&dir)
        .into_iter()
        .filter(|(k, _, _)| *k == FileKind::Snapshot)
        .map(|(_, _, n)| n)
        .collect();
    let snap = read_snapshot(&dir, snaps.last().unwrap());
    let mut w = snapshot::SnapshotWriter::new(&snap.sessions, &snap.acls, 1 << 16);
    for n in &snap.nodes {
        w.node(&n.path, n.data.as_deref(), n.acl, &n.stat);
    }
    let z = snap.last_processed_zxid.unwrap();
    let bytes = w.finish(z, snap.digest.unwrap().digest);
    let again = snapshot::decode(&bytes).unwrap();
    assert_eq!(again.nodes, snap.nodes);
    assert_eq!(again.acls, snap.acls);
    assert_eq!(again.last_processed_zxid, Some(z));
    // Byte for byte, except the sessions' order (ZooKeeper writes a HashMap's).
    let raw = std::fs::read(dir.join("version-2").join(snaps.last().unwrap())).unwrap();
    assert_eq!(bytes.len(), raw.len());
}

fn flip(bytes: &mut [u8], at: usize) {
    bytes[at] ^= 0x40;
}

#[test]
fn damage_is_found_where_it_is() {
    let dir = data_dir("raw");
    let all = names(&dir);
    let (_, _, log) = all.iter().find(|(k, _, _)| *k == FileKind::Log).unwrap();
    let good = std::fs::read(dir.join("version-2").join(log)).unwrap();
    let file = txnlog::decode(&good).unwrap();
    assert!(file.records.len() > 3);
    // A byte inside the second record: its checksum fails, and records follow it.
    let second = file.records[1].offset as usize;
    let mut bad = good.clone();
    flip(&mut bad, second + 8 + 4 + 10);
    match txnlog::decode(&bad) {
        Err(FormatError::Checksum { offset, .. }) => assert_eq!(offset, second as u64),
        other => panic!("{other:?}"),
    }
    // The log cut inside its last record: a torn tail, the records before it kept.
    let last = file.records.last().unwrap().offset as usize;
    let torn = txnlog::decode(&good[..last + 20]).unwrap();
    assert_eq!(
        torn.end,
        LogEnd::Torn {
            offset: last as u64
        }
    );
    assert_eq!(torn.records.len(), file.records.len() - 1);
    // The last record's checksum broken with only zeros after it: a torn write.
    let mut tail = good[..last + file.records.last().unwrap().len + 13].to_vec();
    tail.extend_from_slice(&[0; 64]);
    flip(&mut tail, last + 20);
    assert_eq!(
        txnlog::decode(&tail).unwrap().end,
        LogEnd::TornChecksum {
            offset: last as u64
        }
    );
    // A snapshot with a byte changed fails its seal; one cut short is refused.
    let (_, _, snap) = all
        .iter()
        .rfind(|(k, _, _)| *k == FileKind::Snapshot)
        .unwrap();
    let good = std::fs::read(dir.join("version-2").join(snap)).unwrap();
    let mut bad = good.clone();
    flip(&mut bad, good.len() / 2);
    assert!(snapshot::decode(&bad).is_err());
    assert!(snapshot::decode(&good[..good.len() - 30]).is_err());
    // An ACL index the cache lacks: refused, or OPEN with consent.
    let mut s = snapshot::decode(&good).unwrap();
    let idx = s.nodes.iter().position(|n| n.acl > 0).unwrap();
    s.nodes[idx].acl = 999;
    assert!(DataTree::from_snapshot(&s, MissingAcl::Refuse).is_err());
    assert!(DataTree::from_snapshot(&s, MissingAcl::Open).is_ok());
}

/// The package directory of the `cargo test` run, read at run time: a test binary that cargo reuses
/// from a build in another checkout (same target dir, same sources) still reads this checkout's files.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}
