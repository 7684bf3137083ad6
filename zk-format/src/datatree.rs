//! ZooKeeper's `DataTree` as far as replaying its files needs it: the nodes by path, the ACL
//! lists, the sessions and the tree digest, loaded from a snapshot and changed by transactions
//! exactly as `DataTree.processTxn` and `FileTxnSnapLog.processTransaction` change them,
//! including what a fuzzy snapshot's replay relies on:
//!
//! - a create whose node exists fails with NodeExists but still gives the node the create's ACL;
//!   a `create` (type 1, not create2) that fails so sets the parent's cversion and pzxid from
//!   the transaction (`setCversionPzxid`), if larger;
//! - a create raises the parent's cversion and pzxid only when the transaction's
//!   parentCVersion is larger than the stored one (-1, from a pre-3.3 log: the stored one + 1);
//! - a delete raises the parent's pzxid if its zxid is larger, before finding the node gone;
//! - a multi holding any error sub-transaction applies nothing;
//! - closeSession deletes the paths its transaction lists and then any other ephemeral the
//!   session still owns.
//!
//! Nothing here keeps children lists: no transaction needs them, and the depth-first order is
//! made once at the end (`depth_first`). ZooKeeper's quota statistics nodes
//! (`/zookeeper/quota/**/zookeeper_stats`) are kept as the files have them; ZooKeeper rewrites
//! them when it loads a tree, and so does paddock from its own counts.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use wire::Acl;

use crate::digest::node_digest;
use crate::error::FormatError;
use crate::jute::Writer;
use crate::snapshot::{Snapshot, StatPersisted, OPEN_ACL_INDEX};
use crate::txnlog::{op, Txn, TxnHeader};

/// ZooKeeper's error codes that a replay meets.
pub mod code {
    pub const OK: i32 = 0;
    pub const NO_NODE: i32 = -101;
    pub const NODE_EXISTS: i32 = -110;
    pub const RUNTIME_INCONSISTENCY: i32 = -2;
}

/// `EphemeralType.CONTAINER_EPHEMERAL_OWNER`.
pub const CONTAINER_OWNER: i64 = i64::MIN;
const TTL_MASK: i64 = 0xFFFF_0000_0000_0000_u64 as i64;
const TTL_MARK: i64 = 0xFF00_0000_0000_0000_u64 as i64;
const MAX_TTL: i64 = (1 << 40) - 1;

/// `EphemeralType.TTL.toEphemeralOwner`.
pub fn ttl_owner(ttl: i64) -> i64 {
    TTL_MARK | (ttl & MAX_TTL)
}

/// Whether `owner` is a session (a normal ephemeral), not 0, a container or a TTL.
pub fn is_session_owner(owner: i64) -> bool {
    owner != 0 && owner != CONTAINER_OWNER && owner & TTL_MASK != TTL_MARK
}

/// A node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZNode {
    pub data: Option<Vec<u8>>,
    /// Index into `DataTree::acl_lists`.
    pub acl: u32,
    pub stat: StatPersisted,
}

/// How a snapshot's ACL index missing from its cache is treated (ZooKeeper logs "Ignoring acl"
/// and fails later with "Failed to fetch acls").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MissingAcl {
    /// Refuse the snapshot.
    #[default]
    Refuse,
    /// The operator consents: such nodes get OPEN_ACL_UNSAFE.
    Open,
}

/// What a replay counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayStats {
    pub applied: u64,
    /// Transactions ZooKeeper's replay also ignores (NoNode, NodeExists: a fuzzy snapshot).
    pub failed: u64,
    /// Multis that held an error sub-transaction (nothing applied).
    pub failed_multis: u64,
    /// Transactions whose digest was compared with the tree's, and those that differed.
    pub digests_compared: u64,
    pub digest_mismatches: u64,
    pub first_mismatch: Option<i64>,
    /// The snapshot's digest, when taken at the snapshot's own zxid, compared at load: `Some(true)`
    /// if it matched. Not counted above: ZooKeeper writes that digest after the nodes, and a
    /// transaction applied to the tree but not yet recorded as processed makes it differ
    /// (ZooKeeper's own load then logs a mismatch, and goes on).
    pub snapshot_digest_matched: Option<bool>,
}

/// The tree.
#[derive(Debug, Clone, Default)]
pub struct DataTree {
    /// By path; the root is `"/"`.
    nodes: HashMap<String, ZNode>,
    acl_lists: Vec<Option<Vec<Acl>>>,
    acl_index: HashMap<Vec<u8>, u32>,
    pub sessions: BTreeMap<i64, i32>,
    ephemerals: HashMap<i64, BTreeSet<String>>,
    digest: u64,
    pub last_zxid: i64,
    /// The snapshot's digest while replaying its fuzzy range; compared once its zxid is reached.
    pending_digest: Option<(i64, i64)>,
    pub stats: ReplayStats,
}

fn parent_of(path: &str) -> Option<&str> {
    let i = path.rfind('/')?;
    Some(if i == 0 { "/" } else { &path[..i] })
}

fn acl_key(list: Option<&[Acl]>) -> Vec<u8> {
    let mut w = Writer::default();
    w.acls(list);
    w.buf
}

impl DataTree {
    /// The tree a snapshot holds. `missing_acl` decides about ACL indexes absent from the cache.
    pub fn from_snapshot(
        snap: &Snapshot,
        missing_acl: MissingAcl,
    ) -> Result<DataTree, FormatError> {
        let mut t = DataTree {
            nodes: HashMap::with_capacity(snap.nodes.len()),
            ..DataTree::default()
        };
        let mut by_index: HashMap<i64, u32> = HashMap::new();
        for (idx, list) in &snap.acls {
            let id = t.intern(Some(list));
            by_index.insert(*idx, id);
        }
        for n in &snap.nodes {
            let path = if n.path.is_empty() {
                "/"
            } else {
                n.path.as_str()
            };
            let acl = if n.acl == OPEN_ACL_INDEX {
                t.intern(None)
            } else {
                match (by_index.get(&n.acl), missing_acl) {
                    (Some(&id), _) => id,
                    (None, MissingAcl::Open) => t.intern(None),
                    (None, MissingAcl::Refuse) => {
                        return Err(FormatError::Tree(
                            format!(
                                "node {path:?} refers to ACL index {} that the snapshot's ACL \
                                 cache lacks (ZooKeeper would fail later with \"Failed to fetch \
                                 acls\"; paddock import --missing-acl-open gives it OPEN_ACL_UNSAFE)",
                                n.acl
                            ),
                        ))
                    }
                }
            };
            if path != "/" {
                if !path.starts_with('/') || path.ends_with('/') {
                    return Err(FormatError::Tree(format!(
                        "node path {path:?} is not a ZooKeeper path"
                    )));
                }
                let parent = parent_of(path).unwrap_or("/");
                if !t.nodes.contains_key(parent) {
                    return Err(FormatError::Tree(format!(
                        "invalid tree: node {path:?} comes before its parent"
                    )));
                }
            }
            let node = ZNode {
                data: n.data.clone(),
                acl,
                stat: n.stat,
            };
            t.add_index(path, &node);
            if t.nodes.insert(path.to_owned(), node).is_some() {
                return Err(FormatError::Tree(format!("node {path:?} is listed twice")));
            }
        }
        if !t.nodes.contains_key("/") {
            return Err(FormatError::Tree("the snapshot has no root".into()));
        }
        for &(id, timeout) in &snap.sessions {
            t.sessions.insert(id, timeout);
        }
        t.pending_digest = snap
            .digest
            .filter(|d| d.zxid > 0)
            .map(|d| (d.zxid, d.digest));
        Ok(t)
    }

    fn intern(&mut self, list: Option<&[Acl]>) -> u32 {
        let key = acl_key(list);
        if let Some(&id) = self.acl_index.get(&key) {
            return id;
        }
        let id = self.acl_lists.len() as u32;
        self.acl_lists.push(list.map(<[Acl]>::to_vec));
        self.acl_index.insert(key, id);
        id
    }

    /// The ACL list of a node: `None` is ZooKeeper's null list (reads as OPEN_ACL_UNSAFE).
    pub fn acl_list(&self, id: u32) -> Option<&[Acl]> {
        self.acl_lists.get(id as usize).and_then(|l| l.as_deref())
    }

    /// The ACL list a client reads for a node.
    pub fn acl_of(&self, n: &ZNode) -> Vec<Acl> {
        self.acl_list(n.acl)
            .map(<[Acl]>::to_vec)
            .unwrap_or_else(Acl::open_unsafe)
    }

    pub fn node(&self, path: &str) -> Option<&ZNode> {
        self.nodes.get(path)
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The tree's digest (`DataTree.getTreeDigest`).
    pub fn digest(&self) -> i64 {
        self.digest as i64
    }

    /// Adds a node's share of the indexes and the digest.
    fn add_index(&mut self, path: &str, n: &ZNode) {
        self.digest = self
            .digest
            .wrapping_add(node_digest(path, n.data.as_deref(), &n.stat));
        if is_session_owner(n.stat.ephemeral_owner) {
            self.ephemerals
                .entry(n.stat.ephemeral_owner)
                .or_default()
                .insert(path.to_owned());
        }
    }

    fn remove_index(&mut self, path: &str, n: &ZNode) {
        self.digest = self
            .digest
            .wrapping_sub(node_digest(path, n.data.as_deref(), &n.stat));
        if is_session_owner(n.stat.ephemeral_owner) {
            if let Some(set) = self.ephemerals.get_mut(&n.stat.ephemeral_owner) {
                set.remove(path);
            }
        }
    }

    /// Changes a node in place, keeping the digest.
    fn change(&mut self, path: &str, f: impl FnOnce(&mut ZNode)) -> bool {
        let Some(n) = self.nodes.get_mut(path) else {
            return false;
        };
        let before = node_digest(path, n.data.as_deref(), &n.stat);
        f(n);
        let after = node_digest(path, n.data.as_deref(), &n.stat);
        self.digest = self.digest.wrapping_sub(before).wrapping_add(after);
        true
    }

    /// Applies one transaction as ZooKeeper's start-up replay does; the error code it gives
    /// (ZooKeeper ignores them: a fuzzy snapshot makes NoNode and NodeExists expected).
    pub fn apply(&mut self, h: &TxnHeader, txn: &Txn, digest: Option<i64>) -> i32 {
        match txn {
            Txn::CreateSession { timeout } => {
                self.sessions.insert(h.session_id, *timeout);
            }
            Txn::CloseSession { .. } => {
                self.sessions.remove(&h.session_id);
            }
            _ => {}
        }
        let err = self.process(h, h.kind, txn);
        if err == code::OK {
            self.stats.applied += 1;
        } else {
            self.stats.failed += 1;
        }
        if h.zxid > self.last_zxid {
            self.last_zxid = h.zxid;
        }
        // Digests: the snapshot's, once its zxid is reached (before that the tree is fuzzy);
        // then every transaction's own.
        match self.pending_digest {
            Some((z, d)) if z == h.zxid => {
                self.pending_digest = None;
                self.compare(h.zxid, d);
            }
            Some((z, _)) if h.zxid > z => self.pending_digest = None,
            Some(_) => {}
            None => {
                if let Some(d) = digest {
                    self.compare(h.zxid, d);
                }
            }
        }
        err
    }

    /// Whether the replay is past the snapshot's fuzzy range (no digest pending).
    pub fn digest_settled(&self) -> bool {
        self.pending_digest.is_none()
    }

    /// Compares the snapshot's digest if it was taken at the snapshot's own zxid (not fuzzy):
    /// call it right after loading, as ZooKeeper's `FileSnap.deserialize` does.
    pub fn check_snapshot_digest(&mut self, snapshot_zxid: i64) {
        if let Some((z, d)) = self.pending_digest {
            if z == snapshot_zxid {
                self.pending_digest = None;
                self.stats.snapshot_digest_matched = Some(d == self.digest as i64);
            }
        }
    }

    fn compare(&mut self, zxid: i64, expected: i64) {
        self.stats.digests_compared += 1;
        if expected != self.digest as i64 {
            self.stats.digest_mismatches += 1;
            self.stats.first_mismatch.get_or_insert(zxid);
        }
    }

    /// `DataTree.processTxn` for one (sub-)transaction of type `kind`.
    fn process(&mut self, h: &TxnHeader, kind: i32, txn: &Txn) -> i32 {
        let zxid = h.zxid;
        match txn {
            Txn::Create {
                path,
                data,
                acl,
                ephemeral,
                parent_cversion,
            } => {
                let owner = if *ephemeral { h.session_id } else { 0 };
                let err = self.create(
                    path,
                    data,
                    acl.as_deref(),
                    owner,
                    *parent_cversion,
                    zxid,
                    h.time,
                );
                if err == code::NODE_EXISTS && kind == op::CREATE {
                    // `processTxn`'s fix-up for a create replayed over a fuzzy snapshot.
                    if let Some(parent) = parent_of(path) {
                        let parent = parent.to_owned();
                        self.set_cversion_pzxid(&parent, *parent_cversion, zxid);
                    }
                }
                err
            }
            Txn::CreateContainer {
                path,
                data,
                acl,
                parent_cversion,
            } => self.create(
                path,
                data,
                acl.as_deref(),
                CONTAINER_OWNER,
                *parent_cversion,
                zxid,
                h.time,
            ),
            Txn::CreateTtl {
                path,
                data,
                acl,
                parent_cversion,
                ttl,
            } => self.create(
                path,
                data,
                acl.as_deref(),
                ttl_owner(*ttl),
                *parent_cversion,
                zxid,
                h.time,
            ),
            Txn::Delete { path } => self.delete(path, zxid),
            Txn::SetData {
                path,
                data,
                version,
            } => {
                let ok = self.change(path, |n| {
                    n.data = data.clone();
                    n.stat.mtime = h.time;
                    n.stat.mzxid = zxid;
                    n.stat.version = *version;
                });
                if ok {
                    code::OK
                } else {
                    code::NO_NODE
                }
            }
            Txn::SetAcl { path, acl, version } => {
                let id = self.intern(acl.as_deref());
                let ok = self.change(path, |n| {
                    n.stat.aversion = *version;
                    n.acl = id;
                });
                if ok {
                    code::OK
                } else {
                    code::NO_NODE
                }
            }
            Txn::CloseSession { paths } => {
                let mut local = self.ephemerals.remove(&h.session_id).unwrap_or_default();
                if let Some(paths) = paths {
                    for p in paths {
                        self.delete(p, zxid);
                        local.remove(p);
                    }
                }
                for p in local {
                    self.delete(&p, zxid);
                }
                code::OK
            }
            Txn::CreateSession { .. } | Txn::Check { .. } => code::OK,
            Txn::Error { err } => *err,
            Txn::Multi(subs) => {
                let failed = subs.iter().any(|(k, _)| *k == op::ERROR);
                if failed {
                    self.stats.failed_multis += 1;
                    return subs
                        .iter()
                        .find_map(|(_, t)| match t {
                            Txn::Error { err } if *err != code::OK => Some(*err),
                            _ => None,
                        })
                        .unwrap_or(code::RUNTIME_INCONSISTENCY);
                }
                let mut first = code::OK;
                for (k, sub) in subs {
                    let e = self.process(h, *k, sub);
                    if e != code::OK && first == code::OK {
                        first = e;
                    }
                }
                first
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn create(
        &mut self,
        path: &str,
        data: &Option<Vec<u8>>,
        acl: Option<&[Acl]>,
        owner: i64,
        parent_cversion: i32,
        zxid: i64,
        time: i64,
    ) -> i32 {
        let Some(parent) = parent_of(path) else {
            return code::NO_NODE;
        };
        if !self.nodes.contains_key(parent) {
            return code::NO_NODE;
        }
        let acl_id = self.intern(acl);
        if self.nodes.contains_key(path) {
            // ZooKeeper sets the existing node's ACL before throwing NodeExists.
            self.change(path, |n| n.acl = acl_id);
            return code::NODE_EXISTS;
        }
        let parent = parent.to_owned();
        self.change(&parent, |p| {
            let cv = if parent_cversion == -1 {
                p.stat.cversion.wrapping_add(1)
            } else {
                parent_cversion
            };
            if cv > p.stat.cversion {
                p.stat.cversion = cv;
                p.stat.pzxid = zxid;
            }
        });
        let node = ZNode {
            data: data.clone(),
            acl: acl_id,
            stat: StatPersisted {
                czxid: zxid,
                mzxid: zxid,
                ctime: time,
                mtime: time,
                version: 0,
                cversion: 0,
                aversion: 0,
                ephemeral_owner: owner,
                pzxid: zxid,
            },
        };
        self.add_index(path, &node);
        self.nodes.insert(path.to_owned(), node);
        code::OK
    }

    fn delete(&mut self, path: &str, zxid: i64) -> i32 {
        let Some(parent) = parent_of(path) else {
            return code::NO_NODE;
        };
        let parent = parent.to_owned();
        if !self.change(&parent, |p| {
            if zxid > p.stat.pzxid {
                p.stat.pzxid = zxid;
            }
        }) {
            return code::NO_NODE;
        }
        match self.nodes.remove(path) {
            Some(n) => {
                self.remove_index(path, &n);
                code::OK
            }
            None => code::NO_NODE,
        }
    }

    fn set_cversion_pzxid(&mut self, path: &str, cversion: i32, zxid: i64) {
        let path = path
            .strip_suffix('/')
            .filter(|p| !p.is_empty())
            .unwrap_or(path);
        let path = if path.is_empty() { "/" } else { path };
        self.change(path, |n| {
            let cv = if cversion == -1 {
                n.stat.cversion + 1
            } else {
                cversion
            };
            if cv > n.stat.cversion {
                n.stat.cversion = cv;
                n.stat.pzxid = zxid;
            }
        });
    }

    /// Every node, depth first from the root, siblings in byte order of name (paddock's
    /// snapshot order). Errors on a node whose parent is gone (unreachable from the root, which
    /// ZooKeeper's next snapshot would drop).
    pub fn depth_first(&self) -> Result<Vec<(&str, &ZNode)>, FormatError> {
        let mut all: Vec<(&str, &ZNode)> =
            self.nodes.iter().map(|(p, n)| (p.as_str(), n)).collect();
        // '/' sorts before every other byte: a node's subtree comes before its next sibling.
        all.sort_unstable_by(|a, b| {
            let key = |c: &u8| if *c == b'/' { 0u8 } else { *c };
            a.0.as_bytes()
                .iter()
                .map(key)
                .cmp(b.0.as_bytes().iter().map(key))
        });
        for (p, _) in &all {
            if let Some(parent) = parent_of(p) {
                if *p != "/" && !self.nodes.contains_key(parent) {
                    return Err(FormatError::Tree(format!(
                        "node {p:?} has no parent after the replay"
                    )));
                }
            }
        }
        Ok(all)
    }

    /// Children counts (for the client-visible cversion, `stored * 2 - numChildren`).
    pub fn child_counts(&self) -> HashMap<&str, i32> {
        let mut m: HashMap<&str, i32> = HashMap::with_capacity(self.nodes.len());
        for p in self.nodes.keys() {
            if p != "/" {
                if let Some(parent) = parent_of(p) {
                    *m.entry(parent).or_default() += 1;
                }
            }
        }
        m
    }
}
