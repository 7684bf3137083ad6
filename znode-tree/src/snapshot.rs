//! Snapshot, restore and digest. Snapshots are one canonical encoding of the state: sessions
//! by id, ACL lists numbered by first use in node order, nodes depth first with siblings in
//! byte order of name. Internal numbering (ACL table slots) never leaks into it, so two
//! replicas with the same history, or a tree and its restored copy, encode to the same bytes.
//! The digest is kept incrementally (see `tree::node_hash`); restore rebuilds it from scratch,
//! which is what the determinism tests compare against.
//!
//! Layout, version 2: `"PDKT" u8 version=2, i64 last_zxid, i32 n, n × (i64 id, i32 timeout,
//! 16 bytes), i32 n, n × vector<ACL>, i32 n, n × (ustring path, buffer data, i32 acl, i64
//! czxid, mzxid, pzxid, ctime, mtime, ephemeralOwner, i32 version, cversion, aversion)`, then
//! the CRC32 of everything before it as a big-endian u32. Nodes come depth first, the root
//! first, each node's children right after it in byte order of name, so `/a`, `/a/b`, `/a-x`
//! (sorted full paths would give `/a`, `/a-x`, `/a/b`); ACL lists are numbered in that order.
//! Restore builds each child map in one pass from that order (`tree::Builder`).
//!
//! Version 1 is the same records with nodes (and the ACL numbering) in sorted full-path order,
//! as the flat map keyed by full path wrote them. Restore still reads it: it checks that order,
//! then sorts the nodes depth first and builds the same way.

use std::ops::ControlFlow;
use std::sync::Arc;

use wire::jute::{Reader, Record, Writer};
use wire::{Acl, DecodeError};

use crate::acl::AclTable;
use crate::error::TreeError;
use crate::node::{depth_first, Node, StoredStat};
use crate::session::Session;
use crate::tree::{Builder, Fnv, Tree, TreeConfig};

const MAGIC: &[u8; 4] = b"PDKT";
/// What `encode` writes; `restore` reads this and 1.
const VERSION: u8 = 2;

/// The state as of one moment, for encoding later and elsewhere. Taking it is O(1) in the
/// znodes: it holds the tree's root `Arc` (the whole node structure is shared; the tree copies
/// a node only when it writes to it while a view still holds it, see `node.rs`) and copies
/// the small tables (sessions, ACL lists) outright. A server takes the view on the task that
/// owns the tree and encodes it on another thread, so clients wait for neither.
///
/// The cost moves to the writes that follow: the first write below a node after a view is
/// taken copies each node on its path that the view still shares, and copying a node copies
/// its chunk list of children and the one chunk of at most 256 the path goes through
/// (`children.rs`): O(256 + children / 256) pointer copies per node, each node at most once per
/// view. At 1M znodes that first write took 10–46 µs under a parent of 1000 children, 14–42 µs
/// under a parent of 100k and 0.07–0.7 ms under a parent of 1M (`tests/scale.rs`). Later
/// writes on the same path copy nothing.
#[derive(Debug, Clone)]
pub struct SnapshotView {
    last_zxid: i64,
    sessions: Vec<Session>,
    acls: AclTable,
    root: Arc<Node>,
    nodes: usize,
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
        let guess = self.data_size as usize + self.nodes * (fixed + 60) + 64;
        let mut w = Writer::with_capacity(guess);
        self.encode_state(&mut w);
        let mut out = w.into_inner();
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    /// Appends the canonical encoding to `w`: one walk of the nodes per section (the ACL walk
    /// stops once it has seen every live list, usually after a few nodes), no lookups per node
    /// beyond the ACL slot index.
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
        // ACL lists numbered by first use in node order; `canon` maps a table slot to that number.
        let mut canon: Vec<i32> = vec![-1; self.acls.slots()];
        let mut order: Vec<u32> = Vec::new();
        let live = self.acls.live();
        depth_first(&self.root, |_, n| {
            let c = &mut canon[n.acl as usize];
            if *c < 0 {
                *c = order.len() as i32;
                order.push(n.acl);
                if order.len() == live {
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        });
        w.write_i32(order.len() as i32);
        for &i in &order {
            w.write_vec(self.acls.get(i), |w, a| a.encode(w));
        }
        w.write_i32(self.nodes as i32);
        let mut written = 0;
        depth_first(&self.root, |p, n| {
            // A jute ustring; the path is built from names, so it is UTF-8 already.
            w.write_i32(p.len() as i32);
            w.buf.extend_from_slice(p);
            w.write_buffer(n.data.as_deref());
            w.write_i32(canon[n.acl as usize]);
            let (longs, ints) = n.stat.fields();
            for v in longs {
                w.write_i64(v);
            }
            for v in ints {
                w.write_i32(v);
            }
            written += 1;
            ControlFlow::Continue(())
        });
        assert_eq!(written, self.nodes, "the node count drifted from the nodes");
    }
}

impl Tree {
    /// The current state, to encode later (see `SnapshotView`): the root's `Arc` and copies
    /// of the sessions and the ACL table; O(sessions + ACL lists), nothing per znode.
    pub fn snapshot_view(&self) -> SnapshotView {
        SnapshotView {
            last_zxid: self.last_zxid,
            sessions: self.sessions.values().cloned().collect(),
            acls: self.acls.clone(),
            root: Arc::clone(&self.root),
            nodes: self.nodes,
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
        let version = body[4];
        if &body[..4] != MAGIC || !(version == 1 || version == VERSION) {
            return Err(TreeError::SnapshotFormat);
        }
        let r = &mut Reader::new(&body[5..]);
        Tree::decode_state(r, config, version).map_err(|e| match e {
            Bad::Decode(d) => TreeError::BadSnapshot(d),
            Bad::Inconsistent(s) => TreeError::Inconsistent(s),
        })
    }

    fn decode_state(r: &mut Reader<'_>, config: TreeConfig, version: u8) -> Result<Tree, Bad> {
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
        let mut b = Builder::default();
        if version == 1 {
            // Sorted full paths put every parent before its children, but not depth first
            // (`/a-x` before `/a/b`). Check the old order, then sort component by component,
            // which is depth first with siblings in byte order.
            let mut nodes: Vec<(String, Node)> = Vec::with_capacity(n);
            for _ in 0..n {
                let (p, node) = read_node(r, &mut t, &mut lists)?;
                if nodes.last().is_some_and(|(q, _)| q.as_str() >= p) {
                    return Err(Bad::Inconsistent(format!("node {p:?} out of order")));
                }
                nodes.push((p.to_owned(), node));
            }
            nodes.sort_by(|(a, _), (b, _)| a.split('/').cmp(b.split('/')));
            for (p, node) in nodes {
                b.push(&mut t, &p, node).map_err(Bad::Inconsistent)?;
            }
        } else {
            for _ in 0..n {
                let (p, node) = read_node(r, &mut t, &mut lists)?;
                b.push(&mut t, p, node).map_err(Bad::Inconsistent)?;
            }
        }
        b.finish(&mut t).map_err(Bad::Inconsistent)?;
        if !r.is_empty() {
            return Err(Bad::Inconsistent(format!(
                "{} trailing bytes",
                r.remaining()
            )));
        }
        Ok(t)
    }
}

/// One node record, its ACL number resolved to a reference in the tree's table. The path is
/// borrowed from the snapshot's bytes: the tree keeps only its last component, so an owned copy
/// was one allocation and one free per node restored.
fn read_node<'a>(
    r: &mut Reader<'a>,
    t: &mut Tree,
    lists: &mut [(Vec<Acl>, Option<u32>)],
) -> Result<(&'a str, Node), Bad> {
    let p = r.read_str("node.path")?;
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
    let slot = usize::try_from(ai)
        .ok()
        .and_then(|ai| lists.get_mut(ai))
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
    Ok((p, Node::new(stat, data.map(Vec::into_boxed_slice), acl)))
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
