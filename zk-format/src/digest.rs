//! ZooKeeper's tree digest (`DigestCalculator`, digest version 2, and `NodeHashMapImpl`): per
//! node, the CRC32 of its path's bytes, its data and 60 bytes of stat (czxid, mzxid, pzxid,
//! ctime, mtime, version, cversion, aversion, ephemeralOwner); the tree's digest is the sum of
//! the nodes' (mod 2^64). Nodes under `/zookeeper/` count 0 (quota nodes change outside the log)
//! and the root is hashed as `""` (its path in a snapshot; `"/"` is its alias).

use crate::snapshot::StatPersisted;

/// One node's share of the digest; `path` as ZooKeeper names it (`"/"` or `""` for the root).
pub fn node_digest(path: &str, data: Option<&[u8]>, stat: &StatPersisted) -> u64 {
    if path.starts_with("/zookeeper/") {
        return 0;
    }
    let path = if path == "/" { "" } else { path };
    let mut b = [0u8; 60];
    let longs = [stat.czxid, stat.mzxid, stat.pzxid, stat.ctime, stat.mtime];
    for (i, v) in longs.iter().enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&v.to_be_bytes());
    }
    b[40..44].copy_from_slice(&stat.version.to_be_bytes());
    b[44..48].copy_from_slice(&stat.cversion.to_be_bytes());
    b[48..52].copy_from_slice(&stat.aversion.to_be_bytes());
    b[52..60].copy_from_slice(&stat.ephemeral_owner.to_be_bytes());
    let mut h = crc32fast::Hasher::new();
    h.update(path.as_bytes());
    if let Some(d) = data {
        h.update(d);
    }
    h.update(&b);
    u64::from(h.finalize())
}
