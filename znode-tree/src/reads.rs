//! Reads: `Tree::read` answers exists, getData, getChildren, getChildren2,
//! getAllChildrenNumber, getACL, getEphemerals, multiRead and sync from the state as it is,
//! and `read_with_watch` also registers the watch the read asked for. Reads change nothing and
//! are not replicated: a server answers them from its own copy.
//!
//! The checks, in the order of ZooKeeper's `FinalRequestProcessor.processRequest` (and its
//! `handleGetDataRequest`, `handleGetChildrenRequest`):
//! - exists: a path with NUL is BadArguments; then the node (NoNode), READ on it (NoAuth);
//! - getData, getChildren, getChildren2, getAllChildrenNumber: the node (NoNode), then READ
//!   on it (NoAuth);
//! - getACL: the node (NoNode), then READ or ADMIN (NoAuth); without ADMIN the digest ids come
//!   back masked (`user:x`);
//! - getEphemerals: no check; the caller's own ephemerals, all of them for an empty prefix
//!   or `/`, else those whose path starts with the prefix;
//! - multiRead: getChildren and getData only, each answered on its own (an error is that op's
//!   result); any other op is MarshallingError (ZooKeeper's `IOException`, "Invalid type of
//!   readOp").
//!
//! An empty path reads the root: ZooKeeper's node map holds it under both `""` and `/`.
//!
//! Watches (`read_with_watch`), as `DataTree.statNode`, `getData` and `getChildren` register
//! them: exists registers even on NoNode (an exist watch, which a create fires); getData and
//! the getChildren reads only when the read succeeds; addWatch registers without any check.

use wire::ops::children::{
    GetAllChildrenNumberResponse, GetChildren2Response, GetChildrenResponse,
};
use wire::ops::data::GetDataResponse;
use wire::ops::ephemerals::GetEphemeralsResponse;
use wire::ops::exists::ExistsResponse;
use wire::ops::get_acl::GetAclResponse;
use wire::ops::sync::SyncResponse;
use wire::ops::watches::{add_watch_mode, ErrorResponse};
use wire::{perms, ErrorCode, Id, MultiResult, Request, Response};

use crate::acl;
use crate::node::Node;
use crate::tree::Tree;
use crate::watch::{WatchKind, WatchRegistry, WatcherId};

/// Who is reading: the session and the connection's authenticated ids.
#[derive(Debug, Clone, Copy)]
pub struct ReadCtx<'a> {
    pub session_id: i64,
    pub auth: &'a [Id],
}

impl Tree {
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

/// A read that also registers the watch it asks for (see the module documentation).
pub fn read_with_watch(
    tree: &Tree,
    watches: &mut WatchRegistry,
    ctx: &ReadCtx,
    w: WatcherId,
    req: &Request,
) -> Result<Response, ErrorCode> {
    if let Request::AddWatch(r) = req {
        let kind = match r.mode {
            add_watch_mode::PERSISTENT => WatchKind::Persistent,
            add_watch_mode::PERSISTENT_RECURSIVE => WatchKind::PersistentRecursive,
            // ZooKeeper's AddWatchMode.fromInt throws, which its server reports this way.
            _ => return Err(ErrorCode::MarshallingError),
        };
        watches.add(w, &r.path, kind);
        return Ok(Response::AddWatch(ErrorResponse { err: 0 }));
    }
    let res = tree.read(ctx, req);
    match req {
        Request::Exists(r) if r.watch => match &res {
            Ok(_) => watches.add(w, &r.path, WatchKind::Data),
            Err(ErrorCode::NoNode) => watches.add(w, &r.path, WatchKind::Exist),
            Err(_) => {}
        },
        Request::GetData(r) if r.watch && res.is_ok() => watches.add(w, &r.path, WatchKind::Data),
        Request::GetChildren(r) | Request::GetChildren2(r) if r.watch && res.is_ok() => {
            watches.add(w, &r.path, WatchKind::Child)
        }
        _ => {}
    }
    res
}
