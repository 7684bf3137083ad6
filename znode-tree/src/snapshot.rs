//! Snapshot, restore and digest. Snapshots are one canonical encoding of the state: sessions
//! by id, ACL lists numbered by first use in path order, nodes in path order. Internal
//! numbering (ACL table slots) never leaks into it, so two replicas with the same history, or
//! a tree and its restored copy, encode to the same bytes. The digest is kept incrementally
//! (see `tree::node_hash`); restore rebuilds it from scratch, which is what the determinism
//! tests compare against.
//!
//! Layout: `"PDKT" u8 version=1, i64 last_zxid, i32 n, n × (i64 id, i32 timeout, 16 bytes),
//! i32 n, n × vector<ACL>, i32 n, n × (ustring path, buffer data, i32 acl, i64 czxid, mzxid,
//! pzxid, ctime, mtime, ephemeralOwner, i32 version, cversion, aversion)`, then the CRC32 of
//! everything before it as a big-endian u32.

use std::collections::BTreeMap;
use std::sync::Arc;

use wire::jute::{Reader, Record, Writer};
use wire::{Acl, DecodeError};

use crate::acl::AclTable;
use crate::error::TreeError;
use crate::node::{Node, StoredStat};
use crate::path;
use crate::session::Session;
use crate::tree::{Fnv, Tree, TreeConfig};

const MAGIC: &[u8; 4] = b"PDKT";
const VERSION: u8 = 1;

/// The state as of one moment, for encoding later and elsewhere: taking it copies the node map
/// by reference (its nodes are shared with the tree, which copies a node only when it changes
/// one while a view still holds it) and the small tables outright. A server takes the view on
/// the task that owns the tree and encodes it on another thread, so clients do not wait for
/// the encoding.
#[derive(Debug, Clone)]
pub struct SnapshotView {
    last_zxid: i64,
    sessions: Vec<Session>,
    acls: AclTable,
    nodes: BTreeMap<Arc<str>, Arc<Node>>,
    data_size: u64,
}

impl SnapshotView {
    /// The last zxid the viewed state includes.
    pub fn last_zxid(&self) -> i64 {
        self.last_zxid
    }

    /// The whole state plus a CRC32 trailer; the same bytes `Tree::snapshot` gave at the moment
    /// the view was taken.
    pub fn encode(&self) -> Vec<u8> {
        // Paths average well under 60 bytes; a short guess only costs a reallocation.
        let fixed = 4 + 4 + 4 + 6 * 8 + 3 * 4;
        let guess = self.data_size as usize + self.nodes.len() * (fixed + 60) + 64;
        let mut w = Writer::with_capacity(guess);
        self.encode_state(&mut w);
        let mut out = w.into_inner();
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    /// Appends the canonical encoding to `w`: one pass per section, no lookups per node beyond
    /// the ACL slot index.
    fn encode_state(&self, w: &mut Writer) {
        w.buf.extend_from_slice(MAGIC);
        w.write_u8(VERSION);
        w.write_i64(self.last_zxid);
        w.write_i32(self.sessions.len() as i32);
        for s in &self.sessions {
            w.write_i64(s.id);
            w.write_i32(s.timeout_ms);
            w.buf.extend_from_slice(&s.password);
        }
        // ACL lists numbered by first use in path order; `canon` maps a table slot to that number.
        let mut canon: Vec<i32> = vec![-1; self.acls.slots()];
        let mut order: Vec<u32> = Vec::new();
        for n in self.nodes.values() {
            let c = &mut canon[n.acl as usize];
            if *c < 0 {
                *c = order.len() as i32;
                order.push(n.acl);
            }
        }
        w.write_i32(order.len() as i32);
        for &i in &order {
            w.write_vec(self.acls.get(i), |w, a| a.encode(w));
        }
        w.write_i32(self.nodes.len() as i32);
        for (p, n) in &self.nodes {
            w.write_string(p);
            w.write_buffer(n.data.as_deref());
            w.write_i32(canon[n.acl as usize]);
            let (longs, ints) = n.stat.fields();
            for v in longs {
                w.write_i64(v);
            }
            for v in ints {
                w.write_i32(v);
            }
        }
    }
}

impl Tree {
    /// The current state, to encode later (see `SnapshotView`). O(nodes) pointer copies.
    pub fn snapshot_view(&self) -> SnapshotView {
        SnapshotView {
            last_zxid: self.last_zxid,
            sessions: self.sessions.values().cloned().collect(),
            acls: self.acls.clone(),
            nodes: self.nodes.clone(),
            data_size: self.data_size,
        }
    }

    /// The whole state plus a CRC32 trailer.
    pub fn snapshot(&self) -> Vec<u8> {
        self.snapshot_view().encode()
    }

    /// A deterministic 64-bit hash of the whole state: the running sum of per-node hashes
    /// (kept by apply, like ZooKeeper's `NodeHashMap` digest) mixed with the sessions and
    /// `last_zxid`. O(sessions), so the `hash` four-letter word and divergence checks are cheap.
    pub fn digest(&self) -> u64 {
        let mut h = Fnv::new();
        h.put(&self.node_digest.to_be_bytes());
        h.put(&self.last_zxid.to_be_bytes());
        for s in self.sessions.values() {
            h.put(&s.id.to_be_bytes());
            h.put(&s.timeout_ms.to_be_bytes());
            h.put(&s.password);
        }
        h.0
    }

    /// Rebuilds a tree from `snapshot` bytes after verifying the checksum.
    pub fn restore(bytes: &[u8], config: TreeConfig) -> Result<Tree, TreeError> {
        if bytes.len() < MAGIC.len() + 1 + 4 {
            return Err(TreeError::SnapshotTooShort(bytes.len()));
        }
        let (body, trailer) = bytes.split_at(bytes.len() - 4);
        let stored = u32::from_be_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
        let computed = crc32fast::hash(body);
        if stored != computed {
            return Err(TreeError::Checksum { stored, computed });
        }
        if &body[..4] != MAGIC || body[4] != VERSION {
            return Err(TreeError::SnapshotFormat);
        }
        let r = &mut Reader::new(&body[5..]);
        Tree::decode_state(r, config).map_err(|e| match e {
            Bad::Decode(d) => TreeError::BadSnapshot(d),
            Bad::Inconsistent(s) => TreeError::Inconsistent(s),
        })
    }

    fn decode_state(r: &mut Reader<'_>, config: TreeConfig) -> Result<Tree, Bad> {
        let mut t = Tree::empty(config);
        t.last_zxid = r.read_i64("last_zxid")?;
        let n = r.read_count("sessions", 28)?.unwrap_or(0);
        for _ in 0..n {
            let id = r.read_i64("session.id")?;
            let timeout_ms = r.read_i32("session.timeout")?;
            let mut password = [0u8; 16];
            for b in password.iter_mut() {
                *b = r.read_u8("session.password")?;
            }
            t.sessions.insert(
                id,
                Session {
                    id,
                    timeout_ms,
                    password,
                },
            );
        }
        let n = r.read_count("acls", 4)?.unwrap_or(0);
        let mut lists: Vec<(Vec<Acl>, Option<u32>)> = Vec::with_capacity(n);
        for _ in 0..n {
            lists.push((r.read_vec("acl", 1, Acl::decode)?, None));
        }
        let n = r.read_count("nodes", 4 + 4 + 4 + 48 + 12)?.unwrap_or(0);
        let mut prev: Option<String> = None;
        for _ in 0..n {
            let p = r.read_string("node.path")?;
            let data = r.read_buffer("node.data")?;
            let ai = r.read_i32("node.acl")?;
            let mut l = [0i64; 6];
            for v in l.iter_mut() {
                *v = r.read_i64("node.stat")?;
            }
            let mut i = [0i32; 3];
            for v in i.iter_mut() {
                *v = r.read_i32("node.stat")?;
            }
            if prev.as_deref().is_some_and(|q| q >= p.as_str()) {
                return Err(Bad::Inconsistent(format!("node {p:?} out of order")));
            }
            let parent_ok = if p == "/" {
                true
            } else {
                path::split(&p)
                    .is_some_and(|(parent, name)| !name.is_empty() && t.nodes.contains_key(parent))
            };
            if !parent_ok {
                return Err(Bad::Inconsistent(format!("node {p:?} has no parent")));
            }
            let slot = lists
                .get_mut(ai as usize)
                .ok_or_else(|| Bad::Inconsistent(format!("node {p:?} has bad ACL {ai}")))?;
            let acl = match slot.1 {
                Some(idx) => {
                    t.acls.add_ref(idx);
                    idx
                }
                None => {
                    let idx = t.acls.intern(&slot.0);
                    slot.1 = Some(idx);
                    idx
                }
            };
            let stat = StoredStat {
                czxid: l[0],
                mzxid: l[1],
                pzxid: l[2],
                ctime: l[3],
                mtime: l[4],
                ephemeral_owner: l[5],
                version: i[0],
                cversion: i[1],
                aversion: i[2],
            };
            t.insert_node(
                &p,
                Node {
                    stat,
                    data: data.map(Vec::into_boxed_slice),
                    acl,
                    num_children: 0,
                },
            );
            prev = Some(p);
        }
        if !t.nodes.contains_key("/") {
            return Err(Bad::Inconsistent("no root".into()));
        }
        if !r.is_empty() {
            return Err(Bad::Inconsistent(format!(
                "{} trailing bytes",
                r.remaining()
            )));
        }
        Ok(t)
    }
}

enum Bad {
    Decode(DecodeError),
    Inconsistent(String),
}

impl From<DecodeError> for Bad {
    fn from(e: DecodeError) -> Bad {
        Bad::Decode(e)
    }
}
