//! The tree: nodes keyed by full path, interned ACLs, sessions and the indexes apply keeps
//! up to date (ephemerals by session, containers/TTL nodes, quota roots). Every mutation goes
//! through a handful of primitives so that a multi can be rolled back exactly from its undo
//! log, and so that the indexes can never drift from the nodes.

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
use crate::entry::{Entry, Txn};
use crate::node::{Kind, Node, StoredStat};
use crate::path;
use crate::quota;
use crate::session::Session;

/// Settings that change what apply accepts. Every replica must run with the same values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeConfig {
    /// `zookeeper.extendedTypesEnabled`: TTL nodes allowed.
    pub extended_types: bool,
    /// `zookeeper.enforceQuota`: hard quota limits give QuotaExceeded.
    pub enforce_quota: bool,
    /// `super:base64sha1`; used by the server with `acl::authenticate`.
    pub super_digest: Option<String>,
    /// `zookeeper.skipACL=yes`: every ACL check passes.
    pub skip_acl: bool,
    /// `zookeeper.letAnySaslUserDoX`: every SASL-authenticated user matches `sasl:<this>`.
    pub let_any_sasl_user_do_x: Option<String>,
}

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
        acl: Vec<Acl>,
    },
    Deleted {
        path: String,
        acl: Vec<Acl>,
    },
    DataChanged {
        path: String,
        acl: Vec<Acl>,
    },
    /// `path` is the parent whose child list changed and `acl` that parent's ACL.
    ChildrenChanged {
        path: String,
        acl: Vec<Acl>,
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

/// The replicated state machine. See the crate documentation for the contract. `Clone` gives
/// a full copy (for snapshotting off the apply task; it costs O(tree)).
#[derive(Debug, Clone)]
pub struct Tree {
    pub(crate) config: TreeConfig,
    /// Shared pointers, so a snapshot can take the whole map by reference (`snapshot_view`)
    /// and a write copies only the node it changes while that snapshot is still being encoded.
    pub(crate) nodes: BTreeMap<Arc<str>, Arc<Node>>,
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
        let blank = |acl| Node {
            stat: StoredStat::default(),
            data: Some(Box::from(&[][..])),
            acl,
            num_children: 0,
        };
        t.insert_node("/", blank(open));
        t.insert_node("/zookeeper", blank(open));
        t.insert_node("/zookeeper/quota", blank(open));
        let mut config_node = blank(read);
        config_node.stat.aversion = -1;
        t.insert_node("/zookeeper/config", config_node);
        t
    }

    pub(crate) fn empty(config: TreeConfig) -> Tree {
        Tree {
            config,
            nodes: BTreeMap::new(),
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
                let Some(n) = self.nodes.get(&***p) else {
                    return false;
                };
                n.num_children == 0
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
        self.nodes.len() + 1
    }

    /// Sum of path length plus data length over all znodes (ZooKeeper's
    /// `approximateDataSize`; its extra `""` root entry adds 0). A fresh tree reports 44.
    pub fn approximate_data_size(&self) -> u64 {
        self.data_size
    }

    pub fn ephemerals_count(&self) -> usize {
        self.ephemerals.values().map(|s| s.len()).sum()
    }

    pub(crate) fn node(&self, p: &str) -> Option<&Node> {
        self.nodes.get(p).map(|n| &**n)
    }

    pub(crate) fn acl_of(&self, n: &Node) -> Vec<Acl> {
        self.acls.get(n.acl).to_vec()
    }

    /// The names of `p`'s children, sorted. Children are the keys in `p/`..`p0` without a
    /// further `/`; on meeting a grandchild the scan jumps past that child's whole subtree
    /// (`p/c/`..`p/c0`), so the cost is O(children × log n) however deep the subtree is.
    pub(crate) fn child_names(&self, p: &str) -> Vec<String> {
        use std::ops::Bound::{Excluded, Included};
        let prefix = if p == "/" {
            "/".to_string()
        } else {
            format!("{p}/")
        };
        let end = if p == "/" {
            "0".to_string()
        } else {
            format!("{p}0")
        };
        let mut out = Vec::new();
        let mut lo = prefix.clone();
        loop {
            let mut next = None;
            for (k, _) in self
                .nodes
                .range::<str, _>((Included(lo.as_str()), Excluded(end.as_str())))
            {
                let rest = &k[prefix.len()..];
                match rest.find('/') {
                    None if rest.is_empty() => {}
                    None => out.push(rest.to_owned()),
                    Some(i) => {
                        next = Some(format!("{prefix}{}0", &rest[..i]));
                        break;
                    }
                }
            }
            match next {
                Some(n) => lo = n,
                None => return out,
            }
        }
    }

    /// All nodes strictly below `p`, in path order.
    pub(crate) fn descendants<'a>(
        &'a self,
        p: &str,
    ) -> impl Iterator<Item = (&'a Arc<str>, &'a Arc<Node>)> + 'a {
        let (lo, hi): (String, String) = if p == "/" {
            ("/".into(), "0".into())
        } else {
            (format!("{p}/"), format!("{p}0"))
        };
        let root = p == "/";
        self.nodes
            .range::<str, _>((
                std::ops::Bound::Included(lo.as_str()),
                std::ops::Bound::Excluded(hi.as_str()),
            ))
            .filter(move |(k, _)| !(root && &***k == "/"))
    }

    // ---- primitives: the only code that adds, removes or rewrites nodes ----

    /// Inserts `node` (whose ACL reference the caller holds) and links it into its parent
    /// and the indexes.
    pub(crate) fn insert_node(&mut self, p: &str, node: Node) {
        if p != "/" {
            let (parent, _) = path::split(p).expect("absolute path");
            Arc::make_mut(self.nodes.get_mut(parent).expect("parent exists")).num_children += 1;
        }
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
                .wrapping_add(node_hash(p, &node, self.acls.get(node.acl)));
        self.nodes.insert(p.into(), Arc::new(node));
        if let Some(u) = self.undo.as_mut() {
            u.push(Undo::Inserted(p.into()));
        }
    }

    /// Unlinks a childless node and releases its ACL reference.
    pub(crate) fn remove_node(&mut self, p: &str) -> Node {
        let node = Arc::unwrap_or_clone(self.nodes.remove(p).expect("node exists"));
        if let Some((parent, _)) = path::split(p).filter(|_| p != "/") {
            if let Some(pn) = self.nodes.get_mut(parent) {
                Arc::make_mut(pn).num_children -= 1;
            }
        }
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
        let acl = self.acls.get(node.acl).to_vec();
        self.node_digest = self.node_digest.wrapping_sub(node_hash(p, &node, &acl));
        self.acls.release(node.acl);
        if let Some(u) = self.undo.as_mut() {
            u.push(Undo::Removed(p.into(), node.clone(), acl));
        }
        node
    }

    /// Changes a node in place (stat, data, ACL; never its children), recording its old state
    /// for a failing multi and keeping the size counter and the digest right.
    pub(crate) fn update<R>(
        &mut self,
        p: &str,
        f: impl FnOnce(&mut Node, &mut AclTable) -> R,
    ) -> R {
        self.save_meta(p);
        let n = Arc::make_mut(self.nodes.get_mut(p).expect("node exists"));
        let before = node_hash(p, n, self.acls.get(n.acl));
        let old_len = n.data_len() as u64;
        let r = f(n, &mut self.acls);
        let after = node_hash(p, n, self.acls.get(n.acl));
        self.node_digest = self.node_digest.wrapping_sub(before).wrapping_add(after);
        self.data_size = self.data_size - old_len + n.data_len() as u64;
        r
    }

    /// Records the node's stat, data and ACL so a failing multi can restore them.
    fn save_meta(&mut self, p: &str) {
        if self.undo.is_none() {
            return;
        }
        let n = &self.nodes[p];
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
/// internal ACL index). Summed with wrapping addition, so order does not matter.
pub(crate) fn node_hash(p: &str, n: &Node, acl: &[Acl]) -> u64 {
    let mut h = Fnv::new();
    h.put(&(p.len() as u32).to_be_bytes());
    h.put(p.as_bytes());
    match &n.data {
        None => h.put(&[0]),
        Some(d) => {
            h.put(&[1]);
            h.put(&(d.len() as u32).to_be_bytes());
            h.put(d);
        }
    }
    let (longs, ints) = n.stat.fields();
    for v in longs {
        h.put(&v.to_be_bytes());
    }
    for v in ints {
        h.put(&v.to_be_bytes());
    }
    for a in acl {
        h.put(&a.perms.to_be_bytes());
        for part in [&a.id.scheme, &a.id.id] {
            h.put(&(part.len() as u32).to_be_bytes());
            h.put(part.as_bytes());
        }
    }
    // Mix so that sums of similar hashes do not cancel in simple ways.
    let mut x = h.0;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x
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
