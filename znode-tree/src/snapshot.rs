//! Snapshot and restore. Snapshots are one canonical encoding of the state: sessions by id,
//! ACL lists numbered by first use in node order, nodes depth first with siblings in byte
//! order of name. Internal numbering (ACL table slots) never leaks into it, so two replicas
//! with the same history, or a tree and its restored copy, encode to the same bytes. The
//! digest is kept incrementally (`digest.rs`); restore rebuilds it from scratch, which is what
//! the determinism tests compare against.
//!
//! Layout, version 2: `"PDKT" u8 version=2, i64 last_zxid, i32 n, n × (i64 id, i32 timeout,
//! 16 bytes), i32 n, n × vector<ACL>, i32 n, n × (ustring path, buffer data, i32 acl, i64
//! czxid, mzxid, pzxid, ctime, mtime, ephemeralOwner, i32 version, cversion, aversion)`, then
//! the CRC32 of everything before it as a big-endian u32. Nodes come depth first, the root
//! first, each node's children right after it in byte order of name, so `/a`, `/a/b`, `/a-x`
//! (sorted full paths would give `/a`, `/a-x`, `/a/b`); ACL lists are numbered in that order.
//! Restore builds each child map in one pass from that order (`bulk::Builder`).
//!
//! Version 3, written only by a tree a restore moved to a new epoch (`ops/restore.rs`), is
//! version 2 with `i64 zxid_offset, i64 restored_zxid` after `last_zxid`; a tree never
//! restored writes version 2, byte for byte as before, so a member of an older release still
//! reads it.
//!
//! Version 4, written only by a tree where some session has an owner (`Session::owner`, set by
//! `Txn::Attach` in an ensemble), is version 3 (with the zxid offset and restored zxid, zero when
//! never restored) with `i64 owner` (-1 for none) after each session's password. A tree without
//! owners writes version 2 or 3 as before; a release before version 4 refuses such a snapshot
//! (`RestoreError::Format`) rather than dropping the owners.
//!
//! Version 1 is the same records with nodes (and the ACL numbering) in sorted full-path order,
//! as the flat map keyed by full path wrote them. Restore still reads it: it checks that order,
//! then sorts the nodes depth first and builds the same way.

use std::ops::ControlFlow;
use std::sync::Arc;

use wire::jute::{Reader, Record, Writer};
use wire::{Acl, DecodeError};

use crate::acl::AclTable;
use crate::bulk::Builder;
use crate::config::TreeConfig;
use crate::error::TreeError;
use crate::node::{depth_first, Node, StoredStat};
use crate::session::Session;
use crate::tree::Tree;

const MAGIC: &[u8; 4] = b"PDKT";
/// What `encode` writes for a tree never restored; `restore` reads 1 to 4.
const VERSION: u8 = 2;
/// What `encode` writes once a restore set the zxid offset.
const VERSION_RESTORED: u8 = 3;
/// What `encode` writes once some session has an owner.
const VERSION_OWNERS: u8 = 4;

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
    zxid_offset: i64,
    restored_zxid: i64,
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
        let owners = self.sessions.iter().any(|s| s.owner.is_some());
        if owners {
            w.write_u8(VERSION_OWNERS);
            w.write_i64(self.last_zxid);
            w.write_i64(self.zxid_offset);
            w.write_i64(self.restored_zxid);
        } else if self.zxid_offset == 0 && self.restored_zxid == 0 {
            w.write_u8(VERSION);
            w.write_i64(self.last_zxid);
        } else {
            w.write_u8(VERSION_RESTORED);
            w.write_i64(self.last_zxid);
            w.write_i64(self.zxid_offset);
            w.write_i64(self.restored_zxid);
        }
        w.write_i32(self.sessions.len() as i32);
        for s in &self.sessions {
            w.write_i64(s.id);
            w.write_i32(s.timeout_ms);
            w.buf.extend_from_slice(&s.password);
            if owners {
                w.write_i64(s.owner.map_or(-1, |o| o as i64));
            }
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
            zxid_offset: self.zxid_offset,
            restored_zxid: self.restored_zxid,
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

    /// Rebuilds a tree from `snapshot` bytes after verifying the checksum. (`Restore` takes
    /// the same bytes in pieces.)
    pub fn restore(bytes: &[u8], config: TreeConfig) -> Result<Tree, TreeError> {
        if bytes.len() < MIN_SNAPSHOT {
            return Err(TreeError::SnapshotTooShort(bytes.len()));
        }
        let (body, trailer) = bytes.split_at(bytes.len() - 4);
        let stored = u32::from_be_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
        let computed = crc32fast::hash(body);
        if stored != computed {
            return Err(TreeError::Checksum { stored, computed });
        }
        let mut r = Restore::of_checked_bytes(config);
        r.feed(bytes)?;
        r.finish()
    }
}

/// Magic, version and checksum: the shortest snapshot there could be.
const MIN_SNAPSHOT: usize = MAGIC.len() + 1 + 4;

/// A restore fed the snapshot's bytes in pieces of any size, as they are read from a file: the
/// tree is built as the nodes arrive, so the snapshot never has to be in memory whole. At 1M
/// znodes that is 200 MB of memory a restart no longer allocates (and the kernel no longer
/// zeroes) before the tree's own (ARCHITECTURE.md, "The tree's layout").
///
/// Each piece is decoded as far as whole records go; a record cut by the end of a piece waits
/// in `carry` for the next one. `finish` checks that the bytes ended just after the last
/// node with the checksum of everything before it.
pub struct Restore {
    tree: Tree,
    phase: Phase,
    /// The start of a record the pieces so far cut short (or, once the nodes are read, the
    /// checksum).
    carry: Vec<u8>,
    /// Over every byte decoded (`None`: the caller checked the checksum already).
    hasher: Option<crc32fast::Hasher>,
    fed: usize,
    /// Bytes decoded so far (where the next record starts).
    decoded: usize,
    version: u8,
    lists: Vec<(Vec<Acl>, Option<u32>)>,
    builder: Builder,
    /// Version 1 only: its nodes, sorted depth first once all are read.
    unsorted: Vec<(String, Node)>,
    /// A piece was refused: the tree is half built and `carry` lost.
    failed: bool,
}

enum Phase {
    Head,
    Nodes { left: usize },
    Trailer,
}

impl Restore {
    pub fn new(config: TreeConfig) -> Restore {
        Restore {
            tree: Tree::empty(config),
            phase: Phase::Head,
            carry: Vec::new(),
            hasher: Some(crc32fast::Hasher::new()),
            fed: 0,
            decoded: 0,
            version: VERSION,
            lists: Vec::new(),
            builder: Builder::default(),
            unsorted: Vec::new(),
            failed: false,
        }
    }

    /// A restore of bytes whose integrity the caller has checked already, such as the data of a
    /// snapshot file whose own checksum covers them: the format's trailing checksum must still be
    /// there, but is not computed again. A start read and checksummed the 200 MB of a 1M-znode
    /// snapshot twice, once for the file (to fall back to an older snapshot before raft opens if
    /// it is damaged) and once here: about 2% of a restart's CPU (21 ms at 1M znodes).
    pub fn of_checked_bytes(config: TreeConfig) -> Restore {
        Restore {
            hasher: None,
            ..Restore::new(config)
        }
    }

    /// The next piece of the snapshot's bytes. After an error the restore is over: every later
    /// call returns an error too.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), TreeError> {
        if self.failed {
            return Err(TreeError::Inconsistent("the restore already failed".into()));
        }
        let fed = self.feed_inner(bytes);
        self.failed = fed.is_err();
        fed
    }

    fn feed_inner(&mut self, bytes: &[u8]) -> Result<(), TreeError> {
        self.fed += bytes.len();
        let mut at = 0;
        // A record cut short by the last piece: complete it from this one. `carry` is the
        // start of one record, so a decode either uses all of it and more, or nothing yet.
        while !self.carry.is_empty() {
            if at == bytes.len() {
                return Ok(());
            }
            let had = self.carry.len();
            let take = (bytes.len() - at).min(had.max(4096));
            self.carry.extend_from_slice(&bytes[at..at + take]);
            let carry = std::mem::take(&mut self.carry);
            let used = self.decode(&carry).map_err(RestoreError::into_error)?;
            if used == 0 {
                self.carry = carry;
                at += take;
            } else {
                // The rest of `carry` is still in `bytes`: decode it from there. (The record
                // `carry` started with did not fit in `had` bytes, so `used` is past them.)
                at += used.saturating_sub(had);
            }
        }
        let used = self
            .decode(&bytes[at..])
            .map_err(RestoreError::into_error)?;
        self.carry.extend_from_slice(&bytes[at + used..]);
        Ok(())
    }

    /// Decodes whole records from the start of `buf` while they last; the bytes used.
    fn decode(&mut self, buf: &[u8]) -> Result<usize, RestoreError> {
        let mut used = 0;
        loop {
            let mut r = Reader::new(&buf[used..]);
            let step = match self.phase {
                Phase::Trailer => break,
                Phase::Head => self.decode_head(&mut r),
                Phase::Nodes { left: 0 } => {
                    self.phase = Phase::Trailer;
                    continue;
                }
                Phase::Nodes { left } => {
                    let step = read_node(&mut r, &mut self.tree, &mut self.lists);
                    step.and_then(|(p, node)| {
                        self.phase = Phase::Nodes { left: left - 1 };
                        if self.version == 1 {
                            if self.unsorted.last().is_some_and(|(q, _)| q.as_str() >= p) {
                                return Err(RestoreError::Inconsistent(format!(
                                    "node {p:?} out of order"
                                )));
                            }
                            self.unsorted.push((p.to_owned(), node));
                            Ok(())
                        } else {
                            self.tree
                                .bulk_push(&mut self.builder, p, node)
                                .map_err(RestoreError::Inconsistent)
                        }
                    })
                }
            };
            match step {
                Ok(()) => {
                    let n = buf.len() - used - r.remaining();
                    used += n;
                    self.decoded += n;
                }
                // The piece ends inside this record: wait for the next one.
                Err(RestoreError::Decode(DecodeError::Truncated { .. })) => break,
                Err(e) => return Err(e),
            }
        }
        // Once per piece: per record (about 150 bytes at a time) the checksum took its slow path.
        if let Some(h) = &mut self.hasher {
            h.update(&buf[..used]);
        }
        Ok(used)
    }

    /// Magic and version, `last_zxid`, sessions, ACL lists and the node count: one record here.
    fn decode_head(&mut self, r: &mut Reader<'_>) -> Result<(), RestoreError> {
        let rest = r.rest();
        let start = rest.len();
        if rest.len() > MAGIC.len() {
            let version = rest[MAGIC.len()];
            if &rest[..MAGIC.len()] != MAGIC || !(1..=VERSION_OWNERS).contains(&version) {
                return Err(RestoreError::Format);
            }
            self.version = version;
        }
        for _ in 0..MAGIC.len() + 1 {
            r.read_u8("snapshot.magic")?;
        }
        let last_zxid = r.read_i64("last_zxid")?;
        let (zxid_offset, restored_zxid) = if self.version >= VERSION_RESTORED {
            (r.read_i64("zxid_offset")?, r.read_i64("restored_zxid")?)
        } else {
            (0, 0)
        };
        let n = r.read_count("sessions", 28)?.unwrap_or(0);
        let mut sessions = Vec::with_capacity(n);
        for _ in 0..n {
            let id = r.read_i64("session.id")?;
            let timeout_ms = r.read_i32("session.timeout")?;
            let mut password = [0u8; 16];
            for b in password.iter_mut() {
                *b = r.read_u8("session.password")?;
            }
            let owner = if self.version == VERSION_OWNERS {
                match r.read_i64("session.owner")? {
                    o if o < 0 => None,
                    o => Some(o as u64),
                }
            } else {
                None
            };
            sessions.push(Session {
                id,
                timeout_ms,
                password,
                owner,
            });
        }
        let n = r.read_count("acls", 4)?.unwrap_or(0);
        let mut lists: Vec<(Vec<Acl>, Option<u32>)> = Vec::with_capacity(n);
        for _ in 0..n {
            lists.push((r.read_vec("acl", 1, Acl::decode)?, None));
        }
        // Not `read_count`: the nodes are not in this piece yet.
        let at = self.decoded + start - r.remaining();
        let nodes = match r.read_i32("nodes")? {
            -1 => 0,
            n if n < 0 => {
                return Err(RestoreError::Decode(DecodeError::BadLength {
                    what: "nodes",
                    len: n,
                    at,
                }))
            }
            n => n as usize,
        };
        self.tree.last_zxid = last_zxid;
        self.tree.zxid_offset = zxid_offset;
        self.tree.restored_zxid = restored_zxid;
        for s in sessions {
            self.tree.sessions.insert(s.id, s);
        }
        self.lists = lists;
        if self.version == 1 {
            self.unsorted = Vec::with_capacity(nodes.min(1 << 20));
        }
        self.phase = Phase::Nodes { left: nodes };
        Ok(())
    }

    /// The tree, once every byte was fed: the last node must be followed by exactly the
    /// checksum of everything before it.
    pub fn finish(mut self) -> Result<Tree, TreeError> {
        if self.failed {
            return Err(TreeError::Inconsistent("the restore already failed".into()));
        }
        if self.fed < MIN_SNAPSHOT {
            return Err(TreeError::SnapshotTooShort(self.fed));
        }
        if !matches!(self.phase, Phase::Trailer) {
            // Every record was cut short at the end: a truncated snapshot.
            let carry = std::mem::take(&mut self.carry);
            let mut r = Reader::new(&carry);
            let step = match self.phase {
                Phase::Head => self.decode_head(&mut r),
                _ => read_node(&mut r, &mut self.tree, &mut self.lists).map(|_| ()),
            };
            return Err(match step {
                Err(e) => e.into_error(),
                Ok(()) => TreeError::Inconsistent("the snapshot ends before its nodes".into()),
            });
        }
        if self.carry.len() > 4 {
            return Err(TreeError::Inconsistent(format!(
                "{} trailing bytes",
                self.carry.len() - 4
            )));
        }
        if self.carry.len() < 4 {
            return Err(TreeError::SnapshotTooShort(self.fed));
        }
        if let Some(h) = self.hasher.take() {
            let stored = u32::from_be_bytes(self.carry[..4].try_into().expect("4 bytes"));
            let computed = h.finalize();
            if stored != computed {
                return Err(TreeError::Checksum { stored, computed });
            }
        }
        let mut t = self.tree;
        let mut b = self.builder;
        if self.version == 1 {
            // Sorted full paths put every parent before its children, but not depth first
            // (`/a-x` before `/a/b`): sort component by component, which is depth first with
            // siblings in byte order.
            let mut nodes = self.unsorted;
            nodes.sort_by(|(a, _), (b, _)| a.split('/').cmp(b.split('/')));
            for (p, node) in nodes {
                t.bulk_push(&mut b, &p, node)
                    .map_err(TreeError::Inconsistent)?;
            }
        }
        t.bulk_finish(b).map_err(TreeError::Inconsistent)?;
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
) -> Result<(&'a str, Node), RestoreError> {
    let p = r.read_str("node.path")?;
    let data = r.read_buffer("node.data")?;
    // The ACL number and the stat: ten fixed-size fields, read as one block (one bounds check
    // instead of ten). Read one at a time they and this function's own code were 7% of a
    // 1M-znode restart's profile; as a block the restore took 768 -> 693 ms (3105a7e).
    let b: &[u8; 64] = r.read_array("node.stat")?;
    let i32_at = |o: usize| i32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    let i64_at = |o: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[o..o + 8]);
        i64::from_be_bytes(w)
    };
    let ai = i32_at(0);
    let l: [i64; 6] = std::array::from_fn(|k| i64_at(4 + 8 * k));
    let i: [i32; 3] = std::array::from_fn(|k| i32_at(52 + 4 * k));
    let slot = usize::try_from(ai)
        .ok()
        .and_then(|ai| lists.get_mut(ai))
        .ok_or_else(|| RestoreError::Inconsistent(format!("node {p:?} has bad ACL {ai}")))?;
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

/// Why a restore refused its bytes, before it becomes the crate's `TreeError`.
enum RestoreError {
    Decode(DecodeError),
    Inconsistent(String),
    Format,
}

impl RestoreError {
    fn into_error(self) -> TreeError {
        match self {
            RestoreError::Decode(d) => TreeError::BadSnapshot(d),
            RestoreError::Inconsistent(s) => TreeError::Inconsistent(s),
            RestoreError::Format => TreeError::SnapshotFormat,
        }
    }
}

impl From<DecodeError> for RestoreError {
    fn from(e: DecodeError) -> RestoreError {
        RestoreError::Decode(e)
    }
}

impl SnapshotView {
    /// The sessions, by id.
    pub fn sessions(&self) -> &[Session] {
        &self.sessions
    }

    /// Znodes in the view, the root included.
    pub fn node_count(&self) -> usize {
        self.nodes
    }

    /// Sum of path and data lengths over the nodes (`Tree::approximate_data_size`).
    pub fn data_size(&self) -> u64 {
        self.data_size
    }

    /// Calls `f` on every node, depth first from the root, siblings in byte order of name, with
    /// its full path, data, ACL list, stored stat and number of children: what an export to
    /// another format needs (`paddock export`, the AdminServer's `snapshot`). Stops early when
    /// `f` breaks.
    pub fn for_each_node(
        &self,
        mut f: impl FnMut(&str, Option<&[u8]>, &[Acl], &StoredStat, usize) -> ControlFlow<()>,
    ) {
        depth_first(&self.root, |p, n| {
            // Paths are built from names, which are UTF-8.
            let path = std::str::from_utf8(p).unwrap_or_default();
            f(
                path,
                n.data.as_deref(),
                self.acls.get(n.acl),
                &n.stat,
                n.num_children(),
            )
        });
    }
}

/// A tree built from nodes listed elsewhere, for `paddock import`: sessions and nodes as another
/// server stored them (ZooKeeper's snapshot and log, replayed), every stat field kept as given.
/// Nodes come depth first from the root, siblings in byte order of name, as a snapshot's
/// restore takes them (`bulk::Builder`), so the result is the tree a restore of its own
/// snapshot would give, digest and indexes included.
pub struct Listing {
    tree: Tree,
    builder: Builder,
}

impl Listing {
    /// An empty listing whose tree will have applied everything up to `last_zxid`.
    pub fn new(config: TreeConfig, last_zxid: i64) -> Listing {
        let mut tree = Tree::empty(config);
        tree.last_zxid = last_zxid;
        Listing {
            tree,
            builder: Builder::default(),
        }
    }

    pub fn session(&mut self, s: Session) {
        self.tree.sessions.insert(s.id, s);
    }

    /// The next node; `stat.cversion` is the stored count of child creates (ZooKeeper's
    /// `StatPersisted`), not a client's figure.
    pub fn node(
        &mut self,
        path: &str,
        data: Option<Box<[u8]>>,
        acl: &[Acl],
        stat: StoredStat,
    ) -> Result<(), TreeError> {
        let idx = self.tree.acls.intern(acl);
        let node = Node::new(stat, data, idx);
        self.tree
            .bulk_push(&mut self.builder, path, node)
            .map_err(TreeError::Inconsistent)
    }

    pub fn finish(self) -> Result<Tree, TreeError> {
        let mut t = self.tree;
        t.bulk_finish(self.builder)
            .map_err(TreeError::Inconsistent)?;
        Ok(t)
    }
}
