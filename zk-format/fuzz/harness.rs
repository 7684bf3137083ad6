//! The fuzz targets' bodies, shared by `cargo fuzz` (fuzz_targets/*.rs) and the stable-Rust
//! smoke run (`zk-format/tests/fuzz_smoke.rs`), which include this file with `#[path]`.
//!
//! The readers take files from another system's disk, possibly damaged: they must never panic,
//! allocate beyond what the input can describe, or accept bytes that do not round-trip.

#![allow(dead_code)]

use zk_format::{compress, snapshot, txnlog, DataTree, MissingAcl};

/// What a target made of one input; the smoke run tallies these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    Decoded,
    Refused,
}

/// A decompressed snapshot stream: decode; what decodes re-encodes (nodes, ACLs, trailers) to
/// a stream that decodes the same, and loads into a DataTree or is refused cleanly.
pub fn snapshot_reader(data: &[u8]) -> Outcome {
    // The first byte picks a codec, so compressed inputs are exercised too.
    let (codec, rest) = match data.split_first() {
        Some((b, rest)) => (
            match b % 3 {
                0 => compress::Codec::Raw,
                1 => compress::Codec::Gzip,
                _ => compress::Codec::Snappy,
            },
            rest,
        ),
        None => return Outcome::Refused,
    };
    let Ok(bytes) = compress::decompress(codec, rest, 16 << 20) else {
        return Outcome::Refused;
    };
    let Ok(snap) = snapshot::decode(&bytes) else {
        return Outcome::Refused;
    };
    let mut w = snapshot::SnapshotWriter::new(&snap.sessions, &snap.acls, bytes.len());
    for n in &snap.nodes {
        w.node(&n.path, n.data.as_deref(), n.acl, &n.stat);
    }
    let again = snapshot::decode(&w.finish(0, 0)).expect("a re-encoded snapshot decodes");
    assert_eq!(again.nodes, snap.nodes);
    assert_eq!(again.acls, snap.acls);
    let _ =
        DataTree::from_snapshot(&snap, MissingAcl::Open).map(|t| t.depth_first().map(|v| v.len()));
    Outcome::Decoded
}

/// A log file: decode; every record re-encodes to the bytes its checksum covered, and replays
/// into a tree without panicking.
pub fn log_reader(data: &[u8]) -> Outcome {
    let Ok(file) = txnlog::decode(data) else {
        return Outcome::Refused;
    };
    let mut tree = DataTree::default();
    for r in &file.records {
        let bytes = txnlog::encode_txn(&r.header, &r.txn, r.digest);
        let (h, t, d) = txnlog::decode_txn(&bytes, 0).expect("a re-encoded record decodes");
        assert_eq!((h, &t, d), (r.header, &r.txn, r.digest));
        tree.apply(&r.header, &r.txn, r.digest.map(|d| d.digest));
    }
    Outcome::Decoded
}
