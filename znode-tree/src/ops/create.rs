//! create, create2, createContainer and createTTL: one op with four opcodes.
//!
//! The checks, in the order of ZooKeeper's `PrepRequestProcessor.pRequest2TxnCreate` (with
//! its `validateCreateRequest` and `validatePathForCreate`), each failing with the error
//! given and changing nothing:
//! 1. the flags name a `CreateMode` (`CreateMode.fromFlag`), else BadArguments;
//! 2. a TTL mode needs extended types (`zookeeper.extendedTypesEnabled`), else Unimplemented;
//! 3. the ttl fits the mode (`EphemeralType.validateTTL`): a TTL mode needs
//!    `0 < ttl <= MAX_TTL`, any other mode no ttl (createTTL with a plain mode and a ttl of 0
//!    or more is refused), else BadArguments;
//! 4. an ephemeral needs the session to be live (`SessionTracker.checkGlobalSession`), else
//!    SessionExpired;
//! 5. the path has a `/` and no NUL (`validatePathForCreate`), else BadArguments;
//! 6. the ACL is valid once fixed up (`fixupACL`), else InvalidACL;
//! 7. the parent exists, else NoNode, and grants CREATE, else NoAuth;
//! 8. a sequential node's name gets the parent's cversion, `%010d`, appended;
//! 9. the full path is valid (`PathUtils.validatePath`), else BadArguments;
//! 10. no node is there yet, else NodeExists;
//! 11. the parent is not an ephemeral, else NoChildrenForEphemerals (containers and TTL nodes
//!     may have children);
//! 12. a hard quota above the path leaves room for one more node and its data
//!     (`ZooKeeperServer.checkQuota`, only with `zookeeper.enforceQuota`), else QuotaExceeded.
//!
//! The change, as `DataTree.createNode` makes it: the node with czxid = mzxid = pzxid = this
//! zxid, ctime = mtime = the entry's time, versions 0 and the owner the mode implies (the
//! session for an ephemeral, a mark for containers and TTL nodes); the parent's cversion up
//! by one and its pzxid raised to this zxid; the quota usage above it counted
//! (`updateQuotaStat`), a new `zookeeper_stats` node filled with its subtree's usage
//! (`updateQuotaForPath`) and a new `zookeeper_limits` node indexed. Watches: NodeCreated on the
//! path, NodeChildrenChanged on the parent.

use wire::{perms, Acl, CreateMode, ErrorCode, OpCode, Request, Stat};

use crate::acl::fixup_acl;
use crate::node::{ttl_owner, Kind, Node, StoredStat, CONTAINER_OWNER, MAX_TTL};
use crate::path::{self, validate_path};
use crate::quota;
use crate::tree::{Change, Tree, WriteCtx};

/// A create's fields, whichever of the four requests carried them: create, create2 and
/// createContainer a `CreateRequest`, createTTL a `CreateTtlRequest` with its ttl.
pub(crate) struct CreateOp<'a> {
    /// The opcode: it decides the reply's shape and makes a container.
    pub opcode: OpCode,
    pub path: &'a str,
    pub data: Option<&'a [u8]>,
    pub acl: &'a [Acl],
    pub flags: i32,
    /// createTTL's ttl; the other three carry none.
    pub ttl: Option<i64>,
}

impl<'a> CreateOp<'a> {
    /// The create in `req`; `None` if `req` is not one of the four.
    pub fn of(req: &'a Request) -> Option<CreateOp<'a>> {
        let (r, ttl) = match req {
            Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => (r, None),
            Request::CreateTtl(r) => {
                return Some(CreateOp {
                    opcode: OpCode::CreateTtl,
                    path: &r.path,
                    data: r.data.as_deref(),
                    acl: &r.acl,
                    flags: r.flags,
                    ttl: Some(r.ttl),
                })
            }
            _ => return None,
        };
        Some(CreateOp {
            opcode: req.opcode(),
            path: &r.path,
            data: r.data.as_deref(),
            acl: &r.acl,
            flags: r.flags,
            ttl,
        })
    }
}

impl Tree {
    /// Creates the node `op` asks for; its path (sequence number included) and stat.
    pub(crate) fn create(
        &mut self,
        cx: &WriteCtx,
        op: &CreateOp,
        changes: &mut Vec<Change>,
    ) -> Result<(String, Stat), ErrorCode> {
        let req_path = op.path;
        let mode = CreateMode::from_flags(op.flags).ok_or(ErrorCode::BadArguments)?;
        if mode.is_ttl() && !self.config.extended_types {
            return Err(ErrorCode::Unimplemented);
        }
        // EphemeralType.validateTTL: ZooKeeper reads ttl -1 for the opcodes that carry none
        // (1/15/19), so a TTL mode there fails.
        let ttl = op.ttl.unwrap_or(-1);
        if mode.is_ttl() {
            if ttl <= 0 || ttl > MAX_TTL {
                return Err(ErrorCode::BadArguments);
            }
        } else if ttl >= 0 {
            return Err(ErrorCode::BadArguments);
        }
        // The opcode decides containers (ZooKeeper's CreateContainerTxn); the mode the rest.
        let owner = if op.opcode == OpCode::CreateContainer {
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
        let acl = fixup_acl(op.acl, cx.auth)?;
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
        let len = op.data.map_or(0, <[u8]>::len) as i64;
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
        let node = Node::new(stat, op.data.map(Box::from), idx);
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
        Ok((full, stat))
    }
}
