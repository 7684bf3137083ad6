//! A ZooKeeper snapshot (from ZooKeeper's or paddock's AdminServer `snapshot`, or a
//! `version-2/snapshot.<zxid>` file) made ready for the AdminServer's `restore`: decoded and
//! checked by `zk_format` (every seal; the digest where it was taken at the snapshot's zxid),
//! listed into a paddock tree as `paddock import` lists one, and encoded as the tree snapshot
//! that `Txn::Restore` carries to every member (DESIGN.md, "Restore and point-in-time
//! recovery"). Nothing here touches the server's state: a snapshot that does not read is
//! refused before anything is proposed.

use std::fmt::Write as _;

use zk_format::{compress, files, snapshot, DataTree, MissingAcl};

use crate::config::Config;
use crate::zk_import::{to_paddock, Imported};

/// The largest restore entry: it travels to the other members as one raft message, and the
/// peer links take frames of at most 16 MiB (`consensus::net::DEFAULT_MAX_FRAME`).
pub const MAX_RESTORE_ENTRY: usize = 15 << 20;
/// The largest decompressed snapshot read.
const MAX_DECOMPRESSED: usize = 1 << 30;

/// What a restore proposes.
pub struct Prepared {
    /// znode-tree's encoding of the restored state.
    pub snapshot: Vec<u8>,
    /// The largest zxid anywhere in the ZooKeeper snapshot.
    pub max_zxid: i64,
    pub nodes: usize,
    pub sessions: usize,
    /// What was read, one line each.
    pub report: String,
}

/// Decodes `bytes` (a ZooKeeper snapshot stream; gzip or snappy compressed ones are recognised
/// by their magic) into the entry a restore proposes.
pub fn prepare(bytes: &[u8], cfg: &Config) -> Result<Prepared, String> {
    if bytes.is_empty() {
        return Err(
            "the body is empty: POST the snapshot's bytes (curl --data-binary @FILE)".into(),
        );
    }
    let codec = if bytes.starts_with(&[0x1f, 0x8b]) {
        compress::Codec::Gzip
    } else if bytes.starts_with(&[0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0]) {
        compress::Codec::Snappy
    } else {
        compress::Codec::Raw
    };
    let raw = compress::decompress(codec, bytes, MAX_DECOMPRESSED)
        .map_err(|e| format!("not a ZooKeeper snapshot: {e}"))?;
    let snap = snapshot::decode(&raw).map_err(|e| format!("not a ZooKeeper snapshot: {e}"))?;
    if snap.dbid != snapshot::SNAP_DBID {
        return Err(format!(
            "a snapshot of another database: dbid {:#x} (ZooKeeper writes {})",
            snap.dbid,
            snapshot::SNAP_DBID
        ));
    }
    let mut report = String::new();
    // A stream has no name: its zxid is the last-processed trailer (ZooKeeper 3.9's restore
    // requires it), else the digest's.
    let zxid = snap
        .last_processed_zxid
        .or(snap.digest.map(|d| d.zxid))
        .unwrap_or(0);
    let mut max_zxid = zxid.max(snap.digest.map_or(0, |d| d.zxid));
    for n in &snap.nodes {
        max_zxid = max_zxid
            .max(n.stat.czxid)
            .max(n.stat.mzxid)
            .max(n.stat.pzxid);
    }
    let _ = writeln!(
        report,
        "snapshot: {:?}, {} bytes, {} nodes, {} sessions, {} ACL lists, last processed zxid {}, \
         largest zxid {}",
        codec,
        raw.len(),
        snap.nodes.len(),
        snap.sessions.len(),
        snap.acls.len(),
        snap.last_processed_zxid
            .map_or("none".into(), files::zxid_hex),
        files::zxid_hex(max_zxid)
    );
    let mut tree = DataTree::from_snapshot(&snap, MissingAcl::Refuse)
        .map_err(|e| format!("the snapshot does not load: {e}"))?;
    drop(snap);
    tree.check_snapshot_digest(zxid);
    match tree.stats.snapshot_digest_matched {
        Some(true) => report.push_str("digest: match\n"),
        Some(false) => report.push_str(
            "digest: differs at load, as ZooKeeper's load would log it (a snapshot taken while \
             writes went on); restored as ZooKeeper restores it\n",
        ),
        None => report.push_str("digest: none taken at the snapshot's zxid to compare\n"),
    }
    if tree.depth_first().map_or(true, |all| {
        !all.iter().any(|(p, _)| *p == "/zookeeper/config")
    }) {
        return Err("the snapshot has no /zookeeper/config: not a ZooKeeper 3.5+ snapshot".into());
    }
    let imp = Imported {
        tree,
        snapshot_zxid: zxid,
        max_zxid,
        report: String::new(),
        digest_matched: None,
    };
    let (paddock, orphans) = to_paddock(&imp, cfg, max_zxid.max(0) as u64)?;
    if orphans > 0 {
        let _ = writeln!(
            report,
            "sessions: {orphans} ephemeral owners not among the snapshot's sessions get the \
             shortest timeout, so they close at once"
        );
    }
    let encoded = paddock.snapshot();
    if encoded.len() > MAX_RESTORE_ENTRY {
        return Err(format!(
            "the restored tree is {} bytes, above the {} bytes one restore entry carries to \
             every member (docs/operations.md, \"Restore\"): nothing was restored",
            encoded.len(),
            MAX_RESTORE_ENTRY
        ));
    }
    Ok(Prepared {
        snapshot: encoded,
        max_zxid,
        nodes: paddock.node_count(),
        sessions: paddock.sessions().count(),
        report,
    })
}
