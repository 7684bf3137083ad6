//! Writes a synthetic ZooKeeper data directory for measuring `paddock import` at scale: one
//! snapshot (ZooKeeper 3.9's format and trailers, as `SnapshotWriter` writes it) of N znodes of
//! 100 bytes under 1000 parents, and one log of `--txns` setData transactions after it.
//!
//!     cargo run --release -p zk-format --example synth_zk_dir -- OUT_DIR [NODES] [TXNS]

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeMap;

use zk_format::snapshot::{SnapshotWriter, StatPersisted};
use zk_format::txnlog::{self, op, Txn, TxnDigest, TxnHeader};
use zk_format::DataTree;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let out = std::path::Path::new(&args[1]).join("version-2");
    let nodes: usize = args.get(2).map_or(1_000_000, |a| a.parse().unwrap());
    let txns: i64 = args.get(3).map_or(10_000, |a| a.parse().unwrap());
    std::fs::create_dir_all(&out).unwrap();
    let parents = 1000.min(nodes);
    let per = nodes / parents;
    let mut acls = BTreeMap::new();
    acls.insert(1, wire::Acl::open_unsafe());
    let data = vec![b'x'; 100];
    let mut w = SnapshotWriter::new(&[], &acls, nodes * 170);
    let mut zxid = 1i64;
    let mut digest = 0u64;
    let mut node = |w: &mut SnapshotWriter, p: &str, d: &[u8], st: StatPersisted| {
        w.node(p, Some(d), 1, &st);
        digest = digest.wrapping_add(zk_format::digest::node_digest(p, Some(d), &st));
    };
    let stat = |z: i64, cv: i32| StatPersisted {
        czxid: z,
        mzxid: z,
        ctime: 1_700_000_000_000 + z,
        mtime: 1_700_000_000_000 + z,
        cversion: cv,
        pzxid: z,
        ..Default::default()
    };
    node(&mut w, "", b"", stat(0, parents as i32 + 1));
    let mut children = Vec::new();
    for i in 0..parents {
        let pz = zxid;
        zxid += 1;
        children.clear();
        for j in 0..per {
            children.push((format!("/p{i:04}/n{j:06}"), zxid));
            zxid += 1;
        }
        let last = children.last().map_or(pz, |c| c.1);
        let mut ps = stat(pz, per as i32);
        ps.pzxid = last;
        node(&mut w, &format!("/p{i:04}"), b"", ps);
        for (p, z) in &children {
            node(&mut w, p, &data, stat(*z, 0));
        }
    }
    let mut zk = stat(0, 0);
    zk.cversion = 0;
    node(&mut w, "/zookeeper", b"", zk);
    node(&mut w, "/zookeeper/config", b"", zk);
    node(&mut w, "/zookeeper/quota", b"", zk);
    let snap_zxid = zxid - 1;
    let bytes = w.finish(snap_zxid, digest as i64);
    std::fs::write(out.join(format!("snapshot.{snap_zxid:x}")), &bytes).unwrap();
    // The log: setData on the nodes in turn, each record with the digest after it.
    let snap = zk_format::snapshot::decode(&bytes).unwrap();
    let mut tree = DataTree::from_snapshot(&snap, zk_format::MissingAcl::Refuse).unwrap();
    let mut recs = Vec::new();
    for k in 0..txns {
        let z = snap_zxid + 1 + k;
        let i = (k as usize) % parents;
        let j = (k as usize / parents) % per.max(1);
        let h = TxnHeader {
            session_id: 0,
            cxid: k as i32,
            zxid: z,
            time: 1_800_000_000_000 + k,
            kind: op::SET_DATA,
        };
        let t = Txn::SetData {
            path: format!("/p{i:04}/n{j:06}"),
            data: Some(vec![b'y'; 100]),
            version: 1,
        };
        tree.apply(&h, &t, None);
        let d = TxnDigest {
            version: 2,
            digest: tree.digest(),
        };
        recs.push(txnlog::encode_txn(&h, &t, Some(d)));
    }
    let log = txnlog::encode_log(&recs);
    std::fs::write(out.join(format!("log.{:x}", snap_zxid + 1)), &log).unwrap();
    println!(
        "{}: snapshot.{snap_zxid:x} ({} nodes, {:.1} MB), log of {txns} transactions ({:.1} MB)",
        out.display(),
        snap.nodes.len(),
        bytes.len() as f64 / 1e6,
        log.len() as f64 / 1e6
    );
}
