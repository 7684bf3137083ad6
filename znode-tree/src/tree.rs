//! The tree: nodes from the root down, each owning its children by name (`node.rs`), interned
//! ACLs, sessions and the indexes apply keeps up to date (ephemerals by session, containers/TTL
//! nodes, quota roots). Every mutation goes through a handful of primitives (`insert_node`,
//! `remove_node`, `update`, and `Builder` for a whole tree at once) so that a multi can be
//! rolled back exactly from its undo log, and so that the indexes can never drift from the
//! nodes. A path is found by walking its components from the root: no allocation, one map
//! lookup per component. A write walks the same way through `Arc::make_mut`, copying the nodes
//! on its path that a `SnapshotView` still shares (and only those). A create or delete changes
//! its parent's stat and links or unlinks the child in that one walk (`insert_child`,
//! `remove_child`): a restart's replay of 98.5k creates spent most of its time walking the same
//! path six times per create before.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use wire::ops::children::{
    GetAllChildrenNumberResponse, GetChildren2Response, GetChildrenResponse,
};
use wire::ops::data::GetDataResponse;
use wire::ops::ephemerals::GetEphemeralsResponse;
use wire::ops::exists::ExistsResponse;
use wire::ops::get_acl::GetAclResponse;
use wire::ops::sync::SyncResponse;
use wire::{perms, Acl, ErrorCode, Id, MultiResult, Request, Response};

use crate::acl::{self, AclTable};
use crate::children::SortedChildren;
use crate::config::TreeConfig;
use crate::entry::{Entry, Txn};
use crate::name::Name;
use crate::node::{Kind, Node, StoredStat};
use crate::path;
use crate::quota;
use crate::session::Session;

/// Who is reading: the session and the connection's authenticated ids.
#[derive(Debug, Clone, Copy)]
pub struct ReadCtx<'a> {
    pub session_id: i64,
    pub auth: &'a [Id],
}

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

/// What applying one log entry produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub reply: Result<Response, ErrorCode>,
    pub changes: Vec<Change>,
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

/// The per-entry facts every write op needs.
pub(crate) struct Cx<'a> {
    pub zxid: i64,
    pub time: i64,
    pub session: i64,
    pub auth: &'a [Id],
}

pub(crate) const SPECIAL_PATHS: [&str; 4] =
    ["/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"];

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
            b.push(&mut t, p, n)
                .expect("the fresh tree is listed depth first");
        }
        b.finish(&mut t).expect("the fresh tree has a root");
        t
    }

    /// No znodes at all, not even the root (its place holds a blank node that counts for
    /// nothing): only for `Builder` to fill.
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
            undo: None,
        }
    }

    pub fn config(&self) -> &TreeConfig {
        &self.config
    }

    /// Applies one committed entry at `zxid`. Failed writes still count: `last_zxid` advances
    /// (ZooKeeper's error transaction).
    pub fn apply(&mut self, zxid: i64, entry: &Entry) -> Applied {
        let cx = Cx {
            zxid,
            time: entry.time_ms,
            session: entry.session_id,
            auth: &entry.auth,
        };
        let mut changes = Vec::new();
        let reply = match &entry.txn {
            Txn::CreateSession {
                timeout_ms,
                password,
            } => {
                let s = Session {
                    id: entry.session_id,
                    timeout_ms: *timeout_ms,
                    password: *password,
                };
                self.sessions.insert(entry.session_id, s);
                Ok(Response::Empty)
            }
            Txn::CloseSession => self.close_session(&cx, &mut changes),
            Txn::DeleteExpired { path } => self
                .delete_expired(&cx, path, &mut changes)
                .map(|_| Response::Empty),
            Txn::Write(req) => self.write(&cx, req, &mut changes),
            Txn::SetConfig { members } => {
                self.set_config(&cx, members, &mut changes);
                Ok(Response::Empty)
            }
        };
        self.last_zxid = zxid;
        Applied { reply, changes }
    }

    /// zxid of the last applied entry; 0 for a fresh tree.
    pub fn last_zxid(&self) -> i64 {
        self.last_zxid
    }

    /// Answers a read. Only the read ops are routed here; anything else is Unimplemented.
    pub fn read(&self, ctx: &ReadCtx, req: &Request) -> Result<Response, ErrorCode> {
        match req {
            Request::Exists(r) => {
                if r.path.contains('\0') {
                    return Err(ErrorCode::BadArguments);
                }
                let n = self.node(read_path(&r.path)).ok_or(ErrorCode::NoNode)?;
                self.require(n, perms::READ, ctx.auth)?;
                Ok(Response::Exists(ExistsResponse {
                    stat: n.wire_stat(),
                }))
            }
            Request::GetData(r) => {
                let n = self.readable(read_path(&r.path), ctx)?;
                Ok(Response::GetData(GetDataResponse {
                    data: n.data_vec(),
                    stat: n.wire_stat(),
                }))
            }
            Request::GetChildren(r) => {
                self.readable(read_path(&r.path), ctx)?;
                Ok(Response::GetChildren(GetChildrenResponse {
                    children: self.child_names(read_path(&r.path)),
                }))
            }
            Request::GetChildren2(r) => {
                let n = self.readable(read_path(&r.path), ctx)?;
                Ok(Response::GetChildren2(GetChildren2Response {
                    children: self.child_names(read_path(&r.path)),
                    stat: n.wire_stat(),
                }))
            }
            Request::GetAllChildrenNumber(r) => {
                self.readable(read_path(&r.path), ctx)?;
                let total = self.descendants(read_path(&r.path)).count() as i32;
                Ok(Response::GetAllChildrenNumber(
                    GetAllChildrenNumberResponse {
                        total_number: total,
                    },
                ))
            }
            Request::GetAcl(r) => {
                let n = self.node(read_path(&r.path)).ok_or(ErrorCode::NoNode)?;
                self.require(n, acl::READ_OR_ADMIN, ctx.auth)?;
                let list = self.acls.get(n.acl);
                let shown = if acl::allowed(&self.config, list, perms::ADMIN, ctx.auth) {
                    list.to_vec()
                } else {
                    acl::mask_digests(list)
                };
                Ok(Response::GetAcl(GetAclResponse {
                    acl: shown,
                    stat: n.wire_stat(),
                }))
            }
            Request::GetEphemerals(r) => {
                let all = r.prefix_path.is_empty() || r.prefix_path == "/";
                let ephemerals = self
                    .ephemerals
                    .get(&ctx.session_id)
                    .into_iter()
                    .flatten()
                    .filter(|p| all || p.starts_with(r.prefix_path.as_str()))
                    .map(|p| p.to_string())
                    .collect();
                Ok(Response::GetEphemerals(GetEphemeralsResponse {
                    ephemerals,
                }))
            }
            Request::MultiRead(ops) => Ok(Response::Multi(
                ops.iter().map(|op| self.read_one(ctx, op)).collect(),
            )),
            Request::Sync(r) => Ok(Response::Sync(SyncResponse {
                path: r.path.clone(),
            })),
            _ => Err(ErrorCode::Unimplemented),
        }
    }

    fn read_one(&self, ctx: &ReadCtx, op: &Request) -> MultiResult {
        let res = match op {
            Request::GetChildren(_) | Request::GetData(_) => self.read(ctx, op),
            _ => Err(ErrorCode::MarshallingError),
        };
        match res {
            Ok(Response::GetChildren(r)) => MultiResult::GetChildren {
                children: r.children,
            },
            Ok(Response::GetData(r)) => MultiResult::GetData {
                data: r.data,
                stat: r.stat,
            },
            Ok(_) => MultiResult::error(ErrorCode::MarshallingError),
            Err(e) => MultiResult::error(e),
        }
    }

    fn readable(&self, p: &str, ctx: &ReadCtx) -> Result<&Node, ErrorCode> {
        let n = self.node(p).ok_or(ErrorCode::NoNode)?;
        self.require(n, perms::READ, ctx.auth)?;
        Ok(n)
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

    /// The session's ephemeral paths, sorted.
    pub fn ephemerals_of(&self, session: i64) -> Vec<String> {
        self.ephemerals
            .get(&session)
            .into_iter()
            .flatten()
            .map(|p| p.to_string())
            .collect()
    }

    /// Containers that have had children and have none now, and TTL nodes without children
    /// whose `now - mtime` exceeds their ttl (ZooKeeper's `ContainerManager`), sorted.
    pub fn expired_nodes(&self, now_ms: i64) -> Vec<String> {
        self.expirable
            .iter()
            .filter(|p| {
                let Some(n) = self.node(p) else {
                    return false;
                };
                n.num_children() == 0
                    && match n.kind() {
                        Kind::Container => n.stat.cversion > 0,
                        Kind::Ttl(ttl) => ttl != 0 && now_ms.saturating_sub(n.stat.mtime) > ttl,
                        _ => false,
                    }
            })
            .map(|p| p.to_string())
            .collect()
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
        if let Some(root) = quota_root_of_limit_node(p) {
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
        if let Some(root) = quota_root_of_limit_node(p) {
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

/// Builds a whole tree from nodes listed depth first with siblings in byte order of name (the
/// order a version-2 snapshot lists them in, and the fresh tree's): each node's children are
/// gathered in a vector while it is open and become its map in one bulk build when the listing
/// leaves its subtree, so nothing is inserted one by one. Every node goes through the same
/// index bookkeeping as `insert_node`. Out-of-order, duplicate and orphan nodes are errors.
#[derive(Default)]
pub(crate) struct Builder {
    /// The open nodes, root first; each one's path is `path[..len]`.
    open: Vec<Open>,
    path: String,
    rooted: bool,
}

struct Open {
    len: usize,
    name: Name,
    node: Node,
    children: SortedChildren,
}

impl Builder {
    /// Adds the next node in depth-first order; its ACL reference is the caller's to hand over.
    pub fn push(&mut self, tree: &mut Tree, p: &str, node: Node) -> Result<(), String> {
        if !self.rooted {
            if p != "/" {
                return Err(format!("node {p:?} comes before the root"));
            }
            self.rooted = true;
            tree.index_add(p, &node);
            self.path.push('/');
            self.open.push(Open {
                len: 1,
                name: Name::new(""),
                node,
                children: SortedChildren::default(),
            });
            return Ok(());
        }
        if p == "/" {
            return Err(format!("node {p:?} is listed twice"));
        }
        let Some((parent, name)) = path::split(p).filter(|(_, name)| !name.is_empty()) else {
            return Err(format!("node {p:?} has no parent"));
        };
        // Close the subtrees the listing has left: every open node that is not `parent` or
        // above it. The root is above every path that starts with `/`.
        while self.open.len() > 1 && !path::is_at_or_below(parent, self.open_path()) {
            self.close();
        }
        if self.open_path() != parent {
            return Err(format!(
                "node {p:?} has no parent before it in depth-first order"
            ));
        }
        let top = self.open.last().expect("the root stays open");
        if let Some(last) = top.children.last() {
            match last.as_bytes().cmp(name.as_bytes()) {
                std::cmp::Ordering::Less => {}
                std::cmp::Ordering::Equal => return Err(format!("node {p:?} is listed twice")),
                std::cmp::Ordering::Greater => {
                    return Err(format!("node {p:?} is out of depth-first order"))
                }
            }
        }
        tree.index_add(p, &node);
        self.path.clear();
        self.path.push_str(p);
        self.open.push(Open {
            len: p.len(),
            name: Name::new(name),
            node,
            children: SortedChildren::default(),
        });
        Ok(())
    }

    /// The finished tree's root goes into `tree`.
    pub fn finish(mut self, tree: &mut Tree) -> Result<(), String> {
        if !self.rooted {
            return Err("no root".into());
        }
        while self.open.len() > 1 {
            self.close();
        }
        let mut root = self.open.pop().expect("the root is open");
        root.node.children = root.children.finish();
        tree.root = Arc::new(root.node);
        Ok(())
    }

    fn open_path(&self) -> &str {
        &self.path[..self.open.last().map_or(0, |o| o.len)]
    }

    /// Finishes the innermost open node (not the root) into its parent's list.
    fn close(&mut self) {
        let Some(mut done) = self.open.pop() else {
            return;
        };
        done.node.children = done.children.finish();
        if let Some(parent) = self.open.last_mut() {
            parent.children.push(done.name, Arc::new(done.node));
            self.path.truncate(parent.len);
        }
    }
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

/// `/zookeeper/quota/a/zookeeper_limits` → `Some("/a")`.
fn quota_root_of_limit_node(p: &str) -> Option<&str> {
    let (parent, name) = path::split(p)?;
    if name == quota::LIMIT_NODE && quota::is_quota_dir(parent) {
        Some(quota::trim_quota_path(parent))
    } else {
        None
    }
}

/// The node a read names. ZooKeeper's node map holds the root under both `""` and `/`, so a
/// read of the empty path answers with the root (found by the back-to-back suite).
fn read_path(p: &str) -> &str {
    if p.is_empty() {
        "/"
    } else {
        p
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
