//! The tree's state and the primitives that change it: nodes from the root down, each owning
//! its children by name (`node.rs`), interned ACLs, sessions and the indexes apply keeps up to
//! date (ephemerals by session, containers/TTL nodes, quota roots). Every mutation goes through
//! a handful of primitives (`insert_node`, `remove_node`, `update`, and `bulk_push` for a whole
//! tree at once) so that a multi can be rolled back exactly from its undo log, and so that the
//! indexes and the digest can never drift from the nodes. A path is found by walking its
//! components from the root: no allocation, one map lookup per component. A write walks the
//! same way through `Arc::make_mut`, copying the nodes on its path that a `SnapshotView` still
//! shares (and only those). A create or delete changes its parent's stat and links or unlinks
//! the child in that one walk (`insert_child`, `remove_child`): a restart's replay of 98.5k
//! creates spent most of its time walking the same path six times per create before.
//!
//! What uses them: the ops in `ops/` (one file per op, with ZooKeeper's order of checks),
//! the reads in `reads.rs`, the snapshot restore in `snapshot.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use wire::{Acl, ErrorCode, Id};

use crate::acl::{self, AclTable};
use crate::bulk::Builder;
use crate::config::TreeConfig;
use crate::digest::{node_hash, node_hash_at, path_hash, state_digest};
use crate::name::Name;
use crate::node::{Kind, Node, StoredStat};
use crate::path;
use crate::quota;
use crate::session::Session;

/// A state change, in the order it happened; the watch registry turns these into events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Created {
        path: String,
        acl: Arc<[Acl]>,
    },
    Deleted {
        path: String,
        acl: Arc<[Acl]>,
    },
    DataChanged {
        path: String,
        acl: Arc<[Acl]>,
    },
    /// `path` is the parent whose child list changed and `acl` that parent's ACL.
    ChildrenChanged {
        path: String,
        acl: Arc<[Acl]>,
    },
}

/// An inverse step recorded while a multi runs.
#[derive(Debug, Clone)]
pub(crate) enum Undo {
    Inserted(Box<str>),
    Removed(Box<str>, Node, Vec<Acl>),
    Meta {
        path: Box<str>,
        stat: StoredStat,
        data: Option<Box<[u8]>>,
        acl: Vec<Acl>,
    },
}

/// The per-entry facts every write op needs: the zxid the entry is applied at, the proposer's
/// clock reading, the session and the connection's authenticated ids.
pub(crate) struct WriteCtx<'a> {
    pub zxid: i64,
    pub time: i64,
    pub session: i64,
    pub auth: &'a [Id],
}

/// The replicated state machine. See the crate documentation for the contract. `Clone` shares
/// the nodes copy-on-write (O(1) for them) and copies the indexes and tables outright.
#[derive(Debug, Clone)]
pub struct Tree {
    pub(crate) config: TreeConfig,
    /// Shared with every `SnapshotView` taken since the last write below it.
    pub(crate) root: Arc<Node>,
    /// Znodes in the tree, the root included.
    pub(crate) nodes: usize,
    pub(crate) acls: AclTable,
    pub(crate) sessions: BTreeMap<i64, Session>,
    pub(crate) ephemerals: BTreeMap<i64, BTreeSet<Box<str>>>,
    /// Containers and TTL nodes: the only candidates for `expired_nodes`.
    pub(crate) expirable: BTreeSet<Box<str>>,
    /// Paths that have a `zookeeper_limits` node (ZooKeeper's `pTrie`).
    pub(crate) quota_roots: BTreeSet<Box<str>>,
    pub(crate) data_size: u64,
    /// Wrapping sum of `node_hash` over all nodes, kept up to date by the primitives.
    pub(crate) node_digest: u64,
    pub(crate) last_zxid: i64,
    /// What a log position adds to become a zxid (`zxid_at`): 0 until a restore makes the
    /// zxids jump to a new epoch above every zxid clients saw and every zxid in the restored
    /// snapshot, while the log's positions go on one by one (`ops/restore.rs`).
    pub(crate) zxid_offset: i64,
    /// The zxid of the last restore (0: none): a client reconnecting with a `lastZxidSeen`
    /// below it saw another tree, and its watches fire as if every node had changed.
    pub(crate) restored_zxid: i64,
    pub(crate) undo: Option<Vec<Undo>>,
}

impl Tree {
    /// A fresh tree: `/`, `/zookeeper`, `/zookeeper/quota` (open ACL) and `/zookeeper/config`
    /// (READ only, aversion -1 because ZooKeeper builds it with setACL version -1).
    pub fn new(config: TreeConfig) -> Tree {
        let mut t = Tree::empty(config);
        let open = t.acls.intern(&Acl::open_unsafe());
        t.acls.add_ref(open);
        t.acls.add_ref(open);
        let read = t.acls.intern(&Acl::read_unsafe());
        let blank = |acl| Node::new(StoredStat::default(), Some(Box::from(&[][..])), acl);
        let mut config_node = blank(read);
        config_node.stat.aversion = -1;
        let mut b = Builder::default();
        for (p, n) in [
            ("/", blank(open)),
            ("/zookeeper", blank(open)),
            ("/zookeeper/config", config_node),
            ("/zookeeper/quota", blank(open)),
        ] {
            t.bulk_push(&mut b, p, n)
                .expect("the fresh tree is listed depth first");
        }
        t.bulk_finish(b).expect("the fresh tree has a root");
        t
    }

    /// No znodes at all, not even the root (its place holds a blank node that counts for
    /// nothing): only for `bulk_push` to fill.
    pub(crate) fn empty(config: TreeConfig) -> Tree {
        Tree {
            config,
            root: Arc::new(Node::new(StoredStat::default(), None, 0)),
            nodes: 0,
            acls: AclTable::default(),
            sessions: BTreeMap::new(),
            ephemerals: BTreeMap::new(),
            expirable: BTreeSet::new(),
            quota_roots: BTreeSet::new(),
            data_size: 0,
            node_digest: 0,
            last_zxid: 0,
            zxid_offset: 0,
            restored_zxid: 0,
            undo: None,
        }
    }

    pub fn config(&self) -> &TreeConfig {
        &self.config
    }

    /// zxid of the last applied entry; 0 for a fresh tree.
    pub fn last_zxid(&self) -> i64 {
        self.last_zxid
    }

    /// The zxid of the entry at log position `position` (a raft index): the position itself
    /// until a restore, then the position plus the jump the restore made (`zxid_offset`).
    pub fn zxid_at(&self, position: u64) -> i64 {
        (position as i64).wrapping_add(self.zxid_offset)
    }

    /// What a log position adds to become a zxid (0 until a restore).
    pub fn zxid_offset(&self) -> i64 {
        self.zxid_offset
    }

    /// The zxid the last restore took the tree to (0: never restored).
    pub fn restored_zxid(&self) -> i64 {
        self.restored_zxid
    }

    /// A deterministic 64-bit hash of the whole state: the running sum of per-node hashes
    /// (kept by the primitives, like ZooKeeper's `NodeHashMap` digest) mixed with the sessions
    /// and `last_zxid` (`digest.rs`). O(sessions), so the `hash` four-letter word and
    /// divergence checks are cheap.
    pub fn digest(&self) -> u64 {
        state_digest(self.node_digest, self.last_zxid, self.sessions.values())
    }

    pub(crate) fn require(&self, n: &Node, needed: i32, auth: &[Id]) -> Result<(), ErrorCode> {
        if acl::allowed(&self.config, self.acls.get(n.acl), needed, auth) {
            Ok(())
        } else {
            Err(ErrorCode::NoAuth)
        }
    }

    pub fn session(&self, id: i64) -> Option<&Session> {
        self.sessions.get(&id)
    }

    pub fn sessions(&self) -> impl Iterator<Item = &Session> {
        self.sessions.values()
    }

    /// ZooKeeper's "Node count": the number of znodes plus one, because ZooKeeper's node map
    /// holds the root twice (as `""` and `/`). A fresh tree reports 5, as ZooKeeper does, so
    /// `srvr`/`mntr` output compares equal with a real server.
    pub fn node_count(&self) -> usize {
        self.nodes + 1
    }

    /// Sum of path length plus data length over all znodes (ZooKeeper's
    /// `approximateDataSize`; its extra `""` root entry adds 0). A fresh tree reports 44.
    pub fn approximate_data_size(&self) -> u64 {
        self.data_size
    }

    pub fn ephemerals_count(&self) -> usize {
        self.ephemerals.values().map(|s| s.len()).sum()
    }

    /// The stored stat of the node at `p` (the stored cversion: the count of child creates),
    /// read without an ACL check: for the server's own uses, such as writing the applied
    /// transactions in ZooKeeper's log format (`paddock backup --follow`).
    pub fn stored_stat(&self, p: &str) -> Option<StoredStat> {
        self.node(p).map(|n| n.stat)
    }

    /// The data of the node at `p`, read without an ACL check (see `stored_stat`).
    pub fn stored_data(&self, p: &str) -> Option<Option<&[u8]>> {
        self.node(p).map(|n| n.data.as_deref())
    }

    /// The node at `p`, found by walking its components from the root. Any path that is not
    /// absolute and canonical (empty components, a trailing `/`) names no node.
    pub(crate) fn node(&self, p: &str) -> Option<&Node> {
        let mut cur = &*self.root;
        if p == "/" {
            return Some(cur);
        }
        for name in p.strip_prefix('/')?.split('/') {
            cur = cur.children.get(name.as_bytes())?;
        }
        Some(cur)
    }

    /// A node the caller knows is there: its absence is a corrupt tree.
    pub(crate) fn existing(&self, p: &str) -> &Node {
        match self.node(p) {
            Some(n) => n,
            None => panic!("node {p:?} is missing: the tree is corrupt"),
        }
    }

    /// The node at `p` for writing: every node on the way is made this tree's own, copied if a
    /// view still shares it (`Arc::make_mut`). A free function over the root so the caller can
    /// keep using the tree's other fields.
    fn node_mut<'a>(root: &'a mut Arc<Node>, p: &str) -> Option<&'a mut Node> {
        let mut cur = Arc::make_mut(root);
        if p == "/" {
            return Some(cur);
        }
        for name in p.strip_prefix('/')?.split('/') {
            cur = Arc::make_mut(cur.children.get_mut(name.as_bytes())?);
        }
        Some(cur)
    }

    pub(crate) fn acl_of(&self, n: &Node) -> Arc<[Acl]> {
        self.acls.shared(n.acl).clone()
    }

    /// The names of `p`'s children, sorted (their stored order); empty if there is no such node.
    pub(crate) fn child_names(&self, p: &str) -> Vec<String> {
        self.node(p).map_or_else(Vec::new, |n| {
            n.children
                .iter()
                .map(|(k, _)| k.as_str().to_owned())
                .collect()
        })
    }

    /// All nodes strictly below `p`, depth first.
    pub(crate) fn descendants<'a>(&'a self, p: &str) -> impl Iterator<Item = &'a Node> + 'a {
        let mut stack: Vec<_> = self
            .node(p)
            .map(|n| n.children.iter())
            .into_iter()
            .collect();
        std::iter::from_fn(move || loop {
            let top = stack.last_mut()?;
            match top.next() {
                None => {
                    stack.pop();
                }
                Some((_, n)) => {
                    if !n.children.is_empty() {
                        stack.push(n.children.iter());
                    }
                    return Some(&**n);
                }
            }
        })
    }

    // ---- primitives: the only code that adds, removes or rewrites nodes ----

    /// Hands the next node of a depth-first listing to `b` and adds it to the indexes, the
    /// counters and the digest, as `insert_node` would: how `Tree::new` and a snapshot's
    /// restore build a whole tree. The node's ACL reference is the caller's to hand over.
    pub(crate) fn bulk_push(&mut self, b: &mut Builder, p: &str, node: Node) -> Result<(), String> {
        let node = b.push(p, node)?;
        self.index_add(p, node);
        Ok(())
    }

    /// Makes the listing `b` was given the tree's nodes.
    pub(crate) fn bulk_finish(&mut self, b: Builder) -> Result<(), String> {
        self.root = Arc::new(b.finish()?);
        Ok(())
    }

    /// Adds a node's share to the indexes, the counters and the digest.
    fn index_add(&mut self, p: &str, node: &Node) {
        match node.kind() {
            Kind::Ephemeral(owner) => {
                self.ephemerals.entry(owner).or_default().insert(p.into());
            }
            Kind::Container | Kind::Ttl(_) => {
                self.expirable.insert(p.into());
            }
            Kind::Persistent => {}
        }
        if let Some(root) = quota::root_of_limit_node(p) {
            self.quota_roots.insert(root.into());
        }
        self.data_size += (p.len() + node.data_len()) as u64;
        self.node_digest =
            self.node_digest
                .wrapping_add(node_hash(p, node, self.acls.hash(node.acl)));
        self.nodes += 1;
    }

    /// Inserts a childless `node` (whose ACL reference the caller holds) under its parent, and
    /// into the indexes. Never the root: that comes only from `Builder`.
    pub(crate) fn insert_node(&mut self, p: &str, node: Node) {
        self.insert_child(p, node, |_| {});
    }

    /// `insert_node`, changing the parent's stat (`parent_stat`) in the same walk: what a create
    /// does (cversion, pzxid), as one walk down the path instead of one per step. Returns the
    /// parent's ACL reference.
    pub(crate) fn insert_child(
        &mut self,
        p: &str,
        node: Node,
        parent_stat: impl FnOnce(&mut StoredStat),
    ) -> u32 {
        debug_assert!(node.children.is_empty());
        let Some((parent, name)) = path::split(p).filter(|(_, name)| !name.is_empty()) else {
            panic!("insert_node({p:?}): not a child path");
        };
        self.save_meta(parent);
        self.index_add(p, &node);
        let Some(pn) = Tree::node_mut(&mut self.root, parent) else {
            panic!("insert_node({p:?}): no parent: the tree is corrupt");
        };
        let (ph, acl) = (path_hash(parent), self.acls.hash(pn.acl));
        let before = node_hash_at(ph, pn, acl);
        parent_stat(&mut pn.stat);
        let after = node_hash_at(ph, pn, acl);
        self.node_digest = self.node_digest.wrapping_sub(before).wrapping_add(after);
        if pn
            .children
            .insert(Name::new(name), Arc::new(node))
            .is_some()
        {
            panic!("insert_node({p:?}): already there: the tree is corrupt");
        }
        let parent_acl = pn.acl;
        if let Some(u) = self.undo.as_mut() {
            u.push(Undo::Inserted(p.into()));
        }
        parent_acl
    }

    /// Unlinks a childless node and releases its ACL reference.
    pub(crate) fn remove_node(&mut self, p: &str) -> Node {
        self.remove_child(p, |_| {}).0
    }

    /// `remove_node`, changing the parent's stat (`parent_stat`) in the same walk: what a delete
    /// does (pzxid). Returns the node, its ACL and its parent's ACL reference.
    pub(crate) fn remove_child(
        &mut self,
        p: &str,
        parent_stat: impl FnOnce(&mut StoredStat),
    ) -> (Node, Arc<[Acl]>, u32) {
        let Some((parent, name)) = path::split(p).filter(|(_, name)| !name.is_empty()) else {
            panic!("remove_node({p:?}): not a child path");
        };
        self.save_meta(parent);
        let Some(pn) = Tree::node_mut(&mut self.root, parent) else {
            panic!("remove_node({p:?}): no parent: the tree is corrupt");
        };
        let Some(node) = pn.children.remove(name.as_bytes()) else {
            panic!("remove_node({p:?}): no such node: the tree is corrupt");
        };
        // The parent's hash covers its stat, not its children: taken after the unlink, it is
        // the same as before it.
        let (ph, acl) = (path_hash(parent), self.acls.hash(pn.acl));
        let before = node_hash_at(ph, pn, acl);
        parent_stat(&mut pn.stat);
        let after = node_hash_at(ph, pn, acl);
        let parent_acl = pn.acl;
        self.node_digest = self.node_digest.wrapping_sub(before).wrapping_add(after);
        // A view may still hold it; then this copies one childless node.
        let node = Arc::unwrap_or_clone(node);
        debug_assert!(node.children.is_empty());
        match node.kind() {
            Kind::Ephemeral(owner) => {
                if let Some(set) = self.ephemerals.get_mut(&owner) {
                    set.remove(p);
                    if set.is_empty() {
                        self.ephemerals.remove(&owner);
                    }
                }
            }
            Kind::Container | Kind::Ttl(_) => {
                self.expirable.remove(p);
            }
            Kind::Persistent => {}
        }
        if let Some(root) = quota::root_of_limit_node(p) {
            self.quota_roots.remove(root);
        }
        self.data_size -= (p.len() + node.data_len()) as u64;
        let acl = self.acls.shared(node.acl).clone();
        self.node_digest =
            self.node_digest
                .wrapping_sub(node_hash(p, &node, self.acls.hash(node.acl)));
        self.nodes -= 1;
        self.acls.release(node.acl);
        if let Some(u) = self.undo.as_mut() {
            u.push(Undo::Removed(p.into(), node.clone(), acl.to_vec()));
        }
        (node, acl, parent_acl)
    }

    /// Changes a node in place (stat, data, ACL; never its children), recording its old state
    /// for a failing multi and keeping the size counter and the digest right.
    pub(crate) fn update<R>(
        &mut self,
        p: &str,
        f: impl FnOnce(&mut Node, &mut AclTable) -> R,
    ) -> R {
        self.save_meta(p);
        let Some(n) = Tree::node_mut(&mut self.root, p) else {
            panic!("update({p:?}): no such node: the tree is corrupt");
        };
        let counts = (&mut self.node_digest, &mut self.data_size);
        change_in_place(p, n, &mut self.acls, counts, f)
    }

    /// `update` after `check` on the node as it is, in one walk down the path (a setData's checks
    /// and its change walked it twice: child lookups were 5% of a set's CPU). An error from
    /// `check` leaves the tree as it was: the walk only made the nodes on the path this tree's own,
    /// copies of any a snapshot view shares, with the same contents. `Err(NoNode)` if there is no
    /// node at `p`. Inside a multi (which records the node first, to undo it) it walks twice.
    pub(crate) fn update_if<R>(
        &mut self,
        p: &str,
        check: impl FnOnce(&Node, &AclTable, &TreeConfig) -> Result<(), ErrorCode>,
        f: impl FnOnce(&mut Node, &mut AclTable) -> R,
    ) -> Result<R, ErrorCode> {
        if self.undo.is_some() {
            let n = self.node(p).ok_or(ErrorCode::NoNode)?;
            check(n, &self.acls, &self.config)?;
            return Ok(self.update(p, f));
        }
        let n = Tree::node_mut(&mut self.root, p).ok_or(ErrorCode::NoNode)?;
        check(n, &self.acls, &self.config)?;
        let counts = (&mut self.node_digest, &mut self.data_size);
        Ok(change_in_place(p, n, &mut self.acls, counts, f))
    }

    /// Records the node's stat, data and ACL so a failing multi can restore them.
    fn save_meta(&mut self, p: &str) {
        if self.undo.is_none() {
            return;
        }
        let n = self.existing(p);
        let saved = Undo::Meta {
            path: p.into(),
            stat: n.stat,
            data: n.data.clone(),
            acl: self.acls.get(n.acl).to_vec(),
        };
        if let Some(u) = self.undo.as_mut() {
            u.push(saved);
        }
    }

    /// Undoes a failed multi, newest step first.
    pub(crate) fn rollback(&mut self, steps: Vec<Undo>) {
        debug_assert!(self.undo.is_none());
        for step in steps.into_iter().rev() {
            match step {
                Undo::Inserted(p) => {
                    self.remove_node(&p);
                }
                Undo::Removed(p, mut node, acl) => {
                    node.acl = self.acls.intern(&acl);
                    self.insert_node(&p, node);
                }
                Undo::Meta {
                    path: p,
                    stat,
                    data,
                    acl,
                } => {
                    self.update(&p, |n, acls| {
                        n.data = data;
                        n.stat = stat;
                        let old = std::mem::replace(&mut n.acl, acls.intern(&acl));
                        acls.release(old);
                    });
                }
            }
        }
    }
}

/// `f` applied to `n`, the node at `p`, with the tree's digest and data size (`counts`) kept
/// right: `update` and `update_if` once they hold the node.
fn change_in_place<R>(
    p: &str,
    n: &mut Node,
    acls: &mut AclTable,
    (node_digest, data_size): (&mut u64, &mut u64),
    f: impl FnOnce(&mut Node, &mut AclTable) -> R,
) -> R {
    let ph = path_hash(p);
    let before = node_hash_at(ph, n, acls.hash(n.acl));
    let old_len = n.data_len() as u64;
    let r = f(n, acls);
    let after = node_hash_at(ph, n, acls.hash(n.acl));
    *node_digest = node_digest.wrapping_sub(before).wrapping_add(after);
    *data_size = *data_size - old_len + n.data_len() as u64;
    r
}
