//! What apply does with each log entry. `Tree::apply` dispatches an entry's transaction and
//! `Tree::write` a client's write to one file per op:
//! `create`, `delete` (also deleteContainer and the expiry scan), `set_data` (also the
//! membership in `/zookeeper/config`), `set_acl`, `check`, `multi`, `session` (createSession,
//! closeSession and the ephemerals it removes), and `quota` (the checks and the usage counts
//! creates, deletes and setData keep).
//!
//! ZooKeeper checks a write on the leader (`PrepRequestProcessor.pRequest2Txn`, which turns it
//! into a transaction or an error) and then every member applies the transaction
//! (`DataTree.processTxn`). Here both happen in apply, on every member, against the same state:
//! each op makes all of its checks, in the order the file's documentation gives (ZooKeeper's
//! order, so that a request that breaks two rules gets ZooKeeper's error), before it changes
//! anything, so an error leaves the tree untouched. A failed write still advances `last_zxid`,
//! as ZooKeeper's error transaction takes a zxid.

use wire::ops::create::{Create2Response, CreateResponse};
use wire::ops::data::SetDataResponse;
use wire::ops::set_acl::SetAclResponse;
use wire::{ErrorCode, MultiResult, OpCode, Request, Response, Stat};

use crate::entry::{Entry, Txn};
use crate::tree::{Change, Tree, WriteCtx};

use create::CreateOp;
pub use multi::as_zookeeper_reads_it;
pub use restore::next_epoch;

mod check;
mod create;
mod delete;
mod multi;
mod quota;
mod restore;
mod session;
mod set_acl;
mod set_data;

/// What applying one log entry produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub reply: Result<Response, ErrorCode>,
    pub changes: Vec<Change>,
}

/// A successful op's result, before it is shaped as a reply (`into_response`) or as one result
/// of a multi (`into_multi`).
pub(crate) enum OpReply {
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

impl OpReply {
    pub(crate) fn into_response(self) -> Response {
        match self {
            OpReply::Created {
                op: OpCode::Create,
                path,
                ..
            } => Response::Create(CreateResponse { path }),
            OpReply::Created { path, stat, .. } => {
                Response::Create2(Create2Response { path, stat })
            }
            OpReply::Deleted | OpReply::Checked => Response::Empty,
            OpReply::DataSet(stat) => Response::SetData(SetDataResponse { stat }),
            OpReply::AclSet(stat) => Response::SetAcl(SetAclResponse { stat }),
        }
    }

    pub(crate) fn into_multi(self) -> MultiResult {
        match self {
            OpReply::Created {
                op: OpCode::Create,
                path,
                ..
            } => MultiResult::Create { path },
            OpReply::Created { path, stat, .. } => MultiResult::Create2 { path, stat },
            OpReply::Deleted => MultiResult::Delete,
            OpReply::DataSet(stat) | OpReply::AclSet(stat) => MultiResult::SetData { stat },
            OpReply::Checked => MultiResult::Check,
        }
    }
}

impl Tree {
    /// Applies one committed entry at `zxid`. Failed writes still count: `last_zxid` advances
    /// (ZooKeeper's error transaction).
    pub fn apply(&mut self, zxid: i64, entry: &Entry) -> Applied {
        let cx = WriteCtx {
            zxid,
            time: entry.time_ms,
            session: entry.session_id,
            auth: &entry.auth,
        };
        let mut changes = Vec::new();
        let mut last_zxid = zxid;
        let reply = match &entry.txn {
            Txn::CreateSession {
                timeout_ms,
                password,
            } => {
                self.create_session(&cx, *timeout_ms, *password);
                Ok(Response::Empty)
            }
            Txn::CloseSession => self.close_session(&cx, &mut changes),
            Txn::DeleteExpired { path } => self
                .delete_expired(&cx, path, &mut changes)
                .map(|_| Response::Empty),
            Txn::Write(req) => match entry.via {
                // An empty multi checks nothing in ZooKeeper (the check is per op).
                Some(via) if !matches!(req, Request::Multi(ops) if ops.is_empty()) => self
                    .check_owner(entry.session_id, via)
                    .and_then(|()| self.write(&cx, req, &mut changes)),
                _ => self.write(&cx, req, &mut changes),
            },
            Txn::SetConfig { members } => {
                self.set_config(&cx, members, &mut changes);
                Ok(Response::Empty)
            }
            Txn::Restore { max_zxid, snapshot } => {
                self.restore_from(&cx, *max_zxid, snapshot)
                    .map(|restored_at| {
                        last_zxid = restored_at;
                        Response::Empty
                    })
            }
            Txn::Refused { code } => {
                Err(ErrorCode::from_code(*code).unwrap_or(ErrorCode::SystemError))
            }
            Txn::Attach { member } => self.attach_session(&cx, *member),
        };
        self.last_zxid = last_zxid;
        Applied { reply, changes }
    }

    /// A client's write.
    pub(crate) fn write(
        &mut self,
        cx: &WriteCtx,
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
            _ => self.write_op(cx, req, changes).map(OpReply::into_response),
        }
    }

    /// One op that may stand alone or inside a multi.
    pub(crate) fn write_op(
        &mut self,
        cx: &WriteCtx,
        req: &Request,
        changes: &mut Vec<Change>,
    ) -> Result<OpReply, ErrorCode> {
        match req {
            Request::Delete(r) => self
                .delete(cx, &r.path, r.version, changes)
                .map(|_| OpReply::Deleted),
            Request::SetData(r) => self
                .set_data(cx, &r.path, &r.data, r.version, changes)
                .map(OpReply::DataSet),
            Request::SetAcl(r) => self
                .set_acl(cx, &r.path, &r.acl, r.version)
                .map(OpReply::AclSet),
            Request::Check(r) => self.check(cx, &r.path, r.version).map(|_| OpReply::Checked),
            _ => match CreateOp::of(req) {
                Some(op) => {
                    let (path, stat) = self.create(cx, &op, changes)?;
                    Ok(OpReply::Created {
                        op: op.opcode,
                        path,
                        stat,
                    })
                }
                None => Err(ErrorCode::Unimplemented),
            },
        }
    }
}
