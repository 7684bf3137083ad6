//! The digest: a 64-bit hash of the whole replicated state that every member computes the same
//! way, so the `hash` four-letter word and the determinism tests can compare members without
//! comparing trees. Like ZooKeeper's `DataTree` digest (`NodeHashMapImpl` with
//! `DigestCalculator`), it is a sum of one hash per node that the primitives keep up to date as
//! they add, remove and change nodes (`Tree::node_digest`), so it costs O(1) per write and
//! O(sessions) to read (`Tree::digest`). The per-node hash (`node_hash`) and the mixing of the
//! sum with the sessions and `last_zxid` (`state_digest`) are here; the functions are this
//! project's own, not ZooKeeper's, so the two servers' digests never compare.

use crate::node::Node;
use crate::session::Session;

/// The digest of a whole state: the sum of the node hashes (`node_digest`), `last_zxid`, and
/// each session's id, timeout, password and owner (only when it has one, so a state without
/// owners digests as before owners existed), in the order given (the tree's: by id).
pub(crate) fn state_digest<'a>(
    node_digest: u64,
    last_zxid: i64,
    sessions: impl IntoIterator<Item = &'a Session>,
) -> u64 {
    let mut h = Fnv::new();
    h.put(&node_digest.to_be_bytes());
    h.put(&last_zxid.to_be_bytes());
    for s in sessions {
        h.put(&s.id.to_be_bytes());
        h.put(&s.timeout_ms.to_be_bytes());
        h.put(&s.password);
        if let Some(owner) = s.owner {
            h.put(&owner.to_be_bytes());
        }
    }
    h.0
}

/// FNV-1a, 64 bit: small, and stable across platforms and releases (unlike std's hashers).
pub(crate) struct Fnv(pub u64);

impl Fnv {
    pub fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    pub fn put(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// One node's contribution to the digest: path, data, stat and ACL content (never the
/// internal ACL index; `acl` is the list's `acl::list_hash`, kept by the ACL table). Summed
/// with wrapping addition, so order does not matter.
///
/// The path and the data are hashed with XXH3 (a fixed, published function: every member
/// computes the same value), the data seeded with the path's hash and its length; the nine stat
/// fields and the ACL's hash are folded in one at a time by a 64x64->128-bit multiply. Digests
/// of different functions differ, so the `hash` 4lw of members of different versions do not
/// compare. History: FNV-1a a byte at a time took about 0.3 us per 100-byte node, a third of
/// restoring a 1M-znode snapshot; XXH3 over the path, the data, the stat's 60 bytes and each
/// ACL entry's two strings took about 50 ns; this form about 34 ns, and a change that keeps the
/// path (a parent's stat, a setData) hashes the path once for before and after (`node_hash_at`).
pub(crate) fn node_hash(p: &str, n: &Node, acl: u64) -> u64 {
    node_hash_at(path_hash(p), n, acl)
}

/// The path's share of `node_hash`.
pub(crate) fn path_hash(p: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(p.as_bytes(), p.len() as u64)
}

/// `node_hash` of a node whose path hashed to `path`.
pub(crate) fn node_hash_at(path: u64, n: &Node, acl: u64) -> u64 {
    let mut h = match &n.data {
        None => fold(path ^ 0x9e37_79b9_7f4a_7c15),
        Some(d) => xxhash_rust::xxh3::xxh3_64_with_seed(d, path ^ d.len() as u64),
    };
    let (longs, ints) = n.stat.fields();
    for v in longs {
        h = fold(h ^ v as u64);
    }
    h = fold(h ^ (u64::from(ints[0] as u32) | u64::from(ints[1] as u32) << 32));
    h = fold(h ^ u64::from(ints[2] as u32));
    h = fold(h ^ acl);
    // Mix so that sums of similar hashes do not cancel in simple ways.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h
}

/// One step of `node_hash_at`: the high and low halves of a 128-bit product, xored (as in
/// wyhash's `mum`), with constants so that zero does not map to zero.
#[inline]
fn fold(x: u64) -> u64 {
    let m = u128::from(x ^ 0xa076_1d64_78bd_642f) * u128::from(0xe703_7ed1_a0b4_28db_u64);
    (m as u64) ^ ((m >> 64) as u64)
}
