//! The write ops, each checking in the Java server's order (`zk-protocol.md` §5.2) before it
//! changes anything, so that an error leaves the tree untouched.

use wire::ops::create::{Create2Response, CreateResponse};
use wire::ops::data::SetDataResponse;
use wire::ops::set_acl::SetAclResponse;
use wire::{perms, Acl, CreateMode, ErrorCode, MultiResult, OpCode, Request, Response, Stat};

use crate::acl::{self, fixup_acl};
use crate::node::{ttl_owner, Kind, Node, StoredStat, CONTAINER_OWNER, MAX_TTL};
use crate::path::{self, validate_path};
use crate::quota::{self, StatsTrack};
use crate::tree::{Change, Cx, Tree, SPECIAL_PATHS};

/// A successful sub-op's result, before it is shaped as a reply or a multi result.
pub(crate) enum Done {
    Created {
        op: OpCode,
        path: String,
        stat: Stat,
    },
    Deleted,
    DataSet(Stat),
    AclSet(Stat),
    Checked,
}

impl Done {
    pub(crate) fn into_response(self) -> Response {
        match self {
            Done::Created {
                op: OpCode::Create,
                path,
                ..
            } => Response::Create(CreateResponse { path }),
            Done::Created { path, stat, .. } => Response::Create2(Create2Response { path, stat }),
            Done::Deleted | Done::Checked => Response::Empty,
            Done::DataSet(stat) => Response::SetData(SetDataResponse { stat }),
            Done::AclSet(stat) => Response::SetAcl(SetAclResponse { stat }),
        }
    }

    pub(crate) fn into_multi(self) -> MultiResult {
        match self {
            Done::Created {
                op: OpCode::Create,
                path,
                ..
            } => MultiResult::Create { path },
            Done::Created { path, stat, .. } => MultiResult::Create2 { path, stat },
            Done::Deleted => MultiResult::Delete,
            Done::DataSet(stat) | Done::AclSet(stat) => MultiResult::SetData { stat },
            Done::Checked => MultiResult::Check,
        }
    }
}

fn check_version(expected: i32, actual: i32) -> Result<(), ErrorCode> {
    if expected == -1 || expected == actual {
        Ok(())
    } else {
        Err(ErrorCode::BadVersion)
    }
}

/// The parent and name of a path that delete-like ops accept: has a `/`, no NUL, not special.
fn deletable_parent(p: &str) -> Result<(&str, &str), ErrorCode> {
    if p.contains('\0') || SPECIAL_PATHS.contains(&p) {
        return Err(ErrorCode::BadArguments);
    }
    path::split(p).ok_or(ErrorCode::BadArguments)
}

impl Tree {
    pub(crate) fn write(
        &mut self,
        cx: &Cx,
        req: &Request,
        changes: &mut Vec<Change>,
    ) -> Result<Response, ErrorCode> {
        match req {
            Request::Multi(ops) => self.multi(cx, ops, changes),
            Request::DeleteContainer(r) => self
                .delete_expired(cx, &r.path, changes)
                .map(|_| Response::Empty),
            Request::CloseSession => self.close_session(cx, changes),
            Request::Check(_) => Err(ErrorCode::Unimplemented),
            _ => self.write_op(cx, req, changes).map(Done::into_response),
        }
    }

    /// One op that may stand alone or inside a multi.
    pub(crate) fn write_op(
        &mut self,
        cx: &Cx,
        req: &Request,
        changes: &mut Vec<Change>,
    ) -> Result<Done, ErrorCode> {
        match req {
            Request::Create(r) => self.create(
                cx,
                OpCode::Create,
                &r.path,
                &r.data,
                &r.acl,
                r.flags,
                -1,
                changes,
            ),
            Request::Create2(r) => self.create(
                cx,
                OpCode::Create2,
                &r.path,
                &r.data,
                &r.acl,
                r.flags,
                -1,
                changes,
            ),
            Request::CreateContainer(r) => self.create(
                cx,
                OpCode::CreateContainer,
                &r.path,
                &r.data,
                &r.acl,
                r.flags,
                -1,
                changes,
            ),
            Request::CreateTtl(r) => self.create(
                cx,
                OpCode::CreateTtl,
                &r.path,
                &r.data,
                &r.acl,
                r.flags,
                r.ttl,
                changes,
            ),
            Request::Delete(r) => self
                .delete(cx, &r.path, r.version, changes)
                .map(|_| Done::Deleted),
            Request::SetData(r) => self
                .set_data(cx, &r.path, &r.data, r.version, changes)
                .map(Done::DataSet),
            Request::SetAcl(r) => self
                .set_acl(cx, &r.path, &r.acl, r.version)
                .map(Done::AclSet),
            Request::Check(r) => self.check(cx, &r.path, r.version).map(|_| Done::Checked),
            _ => Err(ErrorCode::Unimplemented),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn create(
        &mut self,
        cx: &Cx,
        op: OpCode,
        req_path: &str,
        data: &Option<Vec<u8>>,
        acl: &[Acl],
        flags: i32,
        ttl: i64,
        changes: &mut Vec<Change>,
    ) -> Result<Done, ErrorCode> {
        let mode = CreateMode::from_flags(flags).ok_or(ErrorCode::BadArguments)?;
        if mode.is_ttl() && !self.config.extended_types {
            return Err(ErrorCode::Unimplemented);
        }
        // EphemeralType.validateTTL: opcodes 1/15/19 carry ttl -1, so a TTL mode there fails.
        if mode.is_ttl() {
            if ttl <= 0 || ttl > MAX_TTL {
                return Err(ErrorCode::BadArguments);
            }
        } else if ttl >= 0 {
            return Err(ErrorCode::BadArguments);
        }
        // The opcode decides containers (ZooKeeper's CreateContainerTxn); the mode the rest.
        let owner = if op == OpCode::CreateContainer {
            CONTAINER_OWNER
        } else if mode.is_ttl() {
            ttl_owner(ttl)
        } else if mode.is_ephemeral() {
            if !self.sessions.contains_key(&cx.session) {
                return Err(ErrorCode::SessionExpired);
            }
            cx.session
        } else {
            0
        };
        if req_path.contains('\0') {
            return Err(ErrorCode::BadArguments);
        }
        let (parent, _) = path::split(req_path).ok_or(ErrorCode::BadArguments)?;
        let acl = fixup_acl(acl, cx.auth)?;
        let pnode = self.node(parent).ok_or(ErrorCode::NoNode)?;
        self.require(pnode, perms::CREATE, cx.auth)?;
        let full = if mode.is_sequential() {
            format!("{req_path}{:010}", pnode.stat.cversion)
        } else {
            req_path.to_owned()
        };
        if !validate_path(&full) {
            return Err(ErrorCode::BadArguments);
        }
        // The new node's parent is `parent` (a sequence number adds no `/`), so whether it
        // exists is one lookup in the parent's children, not another walk from the root. The
        // root, the one valid path without a name, always exists.
        let (_, name) = path::split(&full).ok_or(ErrorCode::BadArguments)?;
        if name.is_empty() || pnode.children.get(name.as_bytes()).is_some() {
            return Err(ErrorCode::NodeExists);
        }
        if matches!(pnode.kind(), Kind::Ephemeral(_)) {
            return Err(ErrorCode::NoChildrenForEphemerals);
        }
        let len = data.as_ref().map_or(0, |d| d.len()) as i64;
        self.check_quota(&full, len, 1)?;

        let stat = StoredStat {
            czxid: cx.zxid,
            mzxid: cx.zxid,
            pzxid: cx.zxid,
            ctime: cx.time,
            mtime: cx.time,
            ephemeral_owner: owner,
            version: 0,
            cversion: 0,
            aversion: 0,
        };
        let idx = self.acls.intern(&acl);
        let node = Node::new(stat, data.as_deref().map(Box::from), idx);
        let stat = node.wire_stat();
        let parent_acl = self.insert_child(&full, node, |ps| {
            ps.cversion = ps.cversion.wrapping_add(1);
            ps.pzxid = ps.pzxid.max(cx.zxid);
        });
        if name == quota::STAT_NODE && quota::is_quota_dir(parent) {
            self.recount_quota(quota::trim_quota_path(parent));
        }
        self.update_quota_stat(&full, len, 1);
        let parent_acl = self.acls.shared(parent_acl).clone();
        changes.push(Change::Created {
            path: full.clone(),
            acl: self.acls.shared(idx).clone(),
        });
        changes.push(Change::ChildrenChanged {
            path: parent.to_owned(),
            acl: parent_acl,
        });
        Ok(Done::Created {
            op,
            path: full,
            stat,
        })
    }

    fn delete(
        &mut self,
        cx: &Cx,
        p: &str,
        version: i32,
        changes: &mut Vec<Change>,
    ) -> Result<(), ErrorCode> {
        let (parent, name) = deletable_parent(p)?;
        let pnode = self.node(parent).ok_or(ErrorCode::NoNode)?;
        self.require(pnode, perms::DELETE, cx.auth)?;
        // The node is found among its parent's children, not by a second walk from the root;
        // a path that is not canonical in its last step (`//a`) names no node, as before.
        let n = path::is_child_path(p, parent)
            .then(|| pnode.children.get(name.as_bytes()))
            .flatten()
            .ok_or(ErrorCode::NoNode)?;
        check_version(version, n.stat.version)?;
        if n.num_children() != 0 {
            return Err(ErrorCode::NotEmpty);
        }
        self.unlink(cx.zxid, p, changes);
        Ok(())
    }

    /// Removes a childless node and reports it (shared by delete, session close and expiry).
    fn unlink(&mut self, zxid: i64, p: &str, changes: &mut Vec<Change>) {
        let (parent, _) = path::split(p).expect("checked by caller");
        let (node, acl, parent_acl) = self.remove_child(p, |ps| ps.pzxid = ps.pzxid.max(zxid));
        self.update_quota_stat(p, -(node.data_len() as i64), -1);
        let parent_acl = self.acls.shared(parent_acl).clone();
        changes.push(Change::Deleted {
            path: p.to_owned(),
            acl,
        });
        changes.push(Change::ChildrenChanged {
            path: parent.to_owned(),
            acl: parent_acl,
        });
    }

    fn set_data(
        &mut self,
        cx: &Cx,
        p: &str,
        data: &Option<Vec<u8>>,
        version: i32,
        changes: &mut Vec<Change>,
    ) -> Result<Stat, ErrorCode> {
        if !validate_path(p) {
            return Err(ErrorCode::BadArguments);
        }
        if self.quota_prefix(p).is_none() {
            // No quota to check or count: the checks and the change in one walk.
            let (stat, acl) = self.update_if(
                p,
                |n, acls, config| {
                    if !acl::allowed(config, acls.get(n.acl), perms::WRITE, cx.auth) {
                        return Err(ErrorCode::NoAuth);
                    }
                    check_version(version, n.stat.version)
                },
                |n, acls| {
                    n.data = data.as_deref().map(Box::from);
                    n.stat.mzxid = cx.zxid;
                    n.stat.mtime = cx.time;
                    n.stat.version = n.stat.version.wrapping_add(1);
                    (n.wire_stat(), acls.shared(n.acl).clone())
                },
            )?;
            changes.push(Change::DataChanged {
                path: p.to_owned(),
                acl,
            });
            return Ok(stat);
        }
        let n = self.node(p).ok_or(ErrorCode::NoNode)?;
        self.require(n, perms::WRITE, cx.auth)?;
        let diff = data.as_ref().map_or(0, |d| d.len()) as i64 - n.data_len() as i64;
        self.check_quota(p, diff, 0)?;
        check_version(version, n.stat.version)?;
        let (stat, acl) = self.update(p, |n, acls| {
            n.data = data.as_deref().map(Box::from);
            n.stat.mzxid = cx.zxid;
            n.stat.mtime = cx.time;
            n.stat.version = n.stat.version.wrapping_add(1);
            (n.wire_stat(), acls.shared(n.acl).clone())
        });
        self.update_quota_stat(p, diff, 0);
        changes.push(Change::DataChanged {
            path: p.to_owned(),
            acl,
        });
        Ok(stat)
    }

    /// `/zookeeper/config` gets the membership and its version, without ACL or quota checks (the
    /// node is the server's own, READ-only for clients), as ZooKeeper's reconfig apply does.
    pub(crate) fn set_config(&mut self, cx: &Cx, members: &str, changes: &mut Vec<Change>) {
        const CONFIG: &str = "/zookeeper/config";
        let data = format!("{members}version={:x}", cx.zxid).into_bytes();
        self.update(CONFIG, |n, _| {
            n.data = Some(data.into_boxed_slice());
            n.stat.mzxid = cx.zxid;
            n.stat.mtime = cx.time;
            n.stat.version = n.stat.version.wrapping_add(1);
            n.wire_stat()
        });
        changes.push(Change::DataChanged {
            path: CONFIG.to_owned(),
            acl: self.acl_of(self.existing(CONFIG)),
        });
    }

    fn set_acl(&mut self, cx: &Cx, p: &str, acl: &[Acl], version: i32) -> Result<Stat, ErrorCode> {
        if !validate_path(p) {
            return Err(ErrorCode::BadArguments);
        }
        let acl = fixup_acl(acl, cx.auth)?;
        let n = self.node(p).ok_or(ErrorCode::NoNode)?;
        self.require(n, perms::ADMIN, cx.auth)?;
        check_version(version, n.stat.aversion)?;
        Ok(self.update(p, |n, acls| {
            let old = std::mem::replace(&mut n.acl, acls.intern(&acl));
            acls.release(old);
            n.stat.aversion = n.stat.aversion.wrapping_add(1);
            n.wire_stat()
        }))
    }

    fn check(&self, cx: &Cx, p: &str, version: i32) -> Result<(), ErrorCode> {
        if !validate_path(p) {
            return Err(ErrorCode::BadArguments);
        }
        let n = self.node(p).ok_or(ErrorCode::NoNode)?;
        self.require(n, perms::READ, cx.auth)?;
        check_version(version, n.stat.version)
    }

    /// Explicit close or expiry: the session's ephemerals go in sorted path order.
    pub(crate) fn close_session(
        &mut self,
        cx: &Cx,
        changes: &mut Vec<Change>,
    ) -> Result<Response, ErrorCode> {
        if self.sessions.remove(&cx.session).is_none() {
            return Err(ErrorCode::SessionExpired);
        }
        for p in self.ephemerals_of(cx.session) {
            self.unlink(cx.zxid, &p, changes);
        }
        Ok(Response::Empty)
    }

    /// ZooKeeper's deleteContainer: no ACL check; a child that appeared since the leader
    /// looked gives NotEmpty, and normal ephemerals are refused (BadVersion, ZK's guard).
    pub(crate) fn delete_expired(
        &mut self,
        cx: &Cx,
        p: &str,
        changes: &mut Vec<Change>,
    ) -> Result<(), ErrorCode> {
        let (parent, _) = deletable_parent(p)?;
        let n = self.node(p).ok_or(ErrorCode::NoNode)?;
        if n.num_children() != 0 {
            return Err(ErrorCode::NotEmpty);
        }
        if matches!(n.kind(), Kind::Ephemeral(_)) {
            return Err(ErrorCode::BadVersion);
        }
        self.node(parent).ok_or(ErrorCode::NoNode)?;
        self.unlink(cx.zxid, p, changes);
        Ok(())
    }

    // ---- quotas ----

    /// The deepest path at or above `p` that has a quota (ZooKeeper's `getMaxPrefixWithQuota`;
    /// the root never counts).
    fn quota_prefix(&self, p: &str) -> Option<String> {
        if self.quota_roots.is_empty() {
            return None;
        }
        let mut cur = p;
        loop {
            if cur == "/" || cur.is_empty() {
                return None;
            }
            if self.quota_roots.contains(cur) {
                return Some(cur.to_owned());
            }
            cur = path::split(cur)?.0;
        }
    }

    /// Hard limits only, and only with `enforce_quota` (`ZooKeeperServer.checkQuota`).
    fn check_quota(&self, p: &str, bytes: i64, count: i64) -> Result<(), ErrorCode> {
        if !self.config.enforce_quota {
            return Ok(());
        }
        let Some(prefix) = self.quota_prefix(p) else {
            return Ok(());
        };
        let Some(limit) = self.node(&quota::limit_path(&prefix)) else {
            return Ok(());
        };
        let limit = StatsTrack::parse(limit.data.as_deref().unwrap_or(&[]));
        let check_count = count != 0 && (limit.count() > -1 || limit.get(quota::COUNT_HARD) > -1);
        let check_bytes = bytes != 0 && (limit.bytes() > -1 || limit.get(quota::BYTE_HARD) > -1);
        if !check_count && !check_bytes {
            return Ok(());
        }
        let Some(stats) = self.node(&quota::stat_path(&prefix)) else {
            return Ok(());
        };
        let stats = StatsTrack::parse(stats.data.as_deref().unwrap_or(&[]));
        let hard_count = limit.get(quota::COUNT_HARD);
        if check_count && hard_count > -1 && stats.count() + count > hard_count {
            return Err(ErrorCode::QuotaExceeded);
        }
        let hard_bytes = limit.get(quota::BYTE_HARD);
        if check_bytes && hard_bytes > -1 && stats.bytes() + bytes > hard_bytes {
            return Err(ErrorCode::QuotaExceeded);
        }
        Ok(())
    }

    /// Writes usage into the stats node in place: no version bump, no events.
    fn update_quota_stat(&mut self, p: &str, bytes: i64, count: i64) {
        let Some(prefix) = self.quota_prefix(p) else {
            return;
        };
        let sp = quota::stat_path(&prefix);
        let Some(n) = self.node(&sp) else { return };
        let mut st = StatsTrack::parse(n.data.as_deref().unwrap_or(&[]));
        st.add(count, bytes);
        self.update(&sp, |n, _| n.data = Some(st.render().into_boxed_slice()));
    }

    /// A new stats node starts from the subtree's real usage (`updateQuotaForPath`).
    fn recount_quota(&mut self, prefix: &str) {
        let (mut count, mut bytes) = (0i64, 0i64);
        if let Some(n) = self.node(prefix) {
            count += 1;
            bytes += n.data_len() as i64;
            for d in self.descendants(prefix) {
                count += 1;
                bytes += d.data_len() as i64;
            }
        }
        let sp = quota::stat_path(prefix);
        if self.node(&sp).is_none() {
            return;
        }
        let st = StatsTrack::new(count, bytes);
        self.update(&sp, |n, _| n.data = Some(st.render().into_boxed_slice()));
    }
}
