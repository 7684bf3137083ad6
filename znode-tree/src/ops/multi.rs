//! multi: its ops run in order against the state the earlier ones left, all under one zxid, as
//! ZooKeeper's `PrepRequestProcessor.pRequestHelper`, case `OpCode.multi`, runs them. Before
//! any runs, each create is read as ZooKeeper 3.9.5 reads it (`as_zookeeper_reads_it`: a bad or
//! misplaced mode fails the whole multi with MarshallingError, except a bad one in createTTL). Each op then makes its own
//! checks, in the order its file gives (create, delete, setData, check; any other op is
//! MarshallingError). The first failure stops the multi and rolls every earlier op back from
//! the undo log (ZooKeeper's `rollbackPendingChanges`), so a failed multi changes nothing (not
//! even the sequence counters) and fires no watch. Its results, as `DataTree.processTxn`, case
//! `OpCode.multi`, gives them: Ok for each op before the failing one, the error for it and
//! RuntimeInconsistency for each after it.

use wire::ops::create::CreateRequest;
use wire::{CreateMode, ErrorCode, MultiResult, Request, Response};

use crate::tree::{Change, Tree, WriteCtx};

impl Tree {
    pub(crate) fn multi(
        &mut self,
        cx: &WriteCtx,
        ops: &[Request],
        changes: &mut Vec<Change>,
    ) -> Result<Response, ErrorCode> {
        let ops = ops
            .iter()
            .map(as_zookeeper_reads_it)
            .collect::<Result<Vec<_>, _>>()?;
        self.undo = Some(Vec::new());
        let mut results = Vec::with_capacity(ops.len());
        let mut pending = Vec::new();
        let mut failed = None;
        for (i, op) in ops.iter().enumerate() {
            let op = op.as_ref();
            let res = match op {
                Request::Create(_)
                | Request::Create2(_)
                | Request::CreateContainer(_)
                | Request::CreateTtl(_)
                | Request::Delete(_)
                | Request::SetData(_)
                | Request::Check(_) => self.write_op(cx, op, &mut pending),
                // The decoder refuses these; an entry built in-process could still hold one.
                _ => Err(ErrorCode::MarshallingError),
            };
            match res {
                Ok(done) => results.push(done.into_multi()),
                Err(e) => {
                    failed = Some((i, e));
                    break;
                }
            }
        }
        let undo = self.undo.take().unwrap_or_default();
        match failed {
            None => {
                changes.extend(pending);
                Ok(Response::Multi(results))
            }
            Some((at, err)) => {
                self.rollback(undo);
                Ok(Response::Multi(
                    (0..ops.len())
                        .map(|i| match i.cmp(&at) {
                            std::cmp::Ordering::Less => MultiResult::error(ErrorCode::Ok),
                            std::cmp::Ordering::Equal => MultiResult::error(err),
                            std::cmp::Ordering::Greater => {
                                MultiResult::error(ErrorCode::RuntimeInconsistency)
                            }
                        })
                        .collect(),
                ))
            }
        }
    }
}

/// A create inside a multi as ZooKeeper 3.9.5 answers it (measured by the back-to-back suite;
/// `MultiOperationRecord` rebuilds creates with `Op.create`). For create, create2 and
/// createContainer the mode must be valid and not a TTL mode; otherwise the whole multi fails
/// with MarshallingError. create2 and createContainer keep their type (a result with the stat)
/// whatever plain mode they carry; a plain create with the container mode becomes
/// createContainer. createTTL with a non-TTL mode becomes the create its mode implies, its ttl
/// dropped; with an invalid mode it becomes a plain create that keeps the invalid flags
/// (`Op.create(.., flags, ttl)` reads them with PERSISTENT as the default and does not refuse
/// them), which the op's own checks then refuse with BadArguments, failing the multi per op.
/// Other ops pass unchanged.
pub fn as_zookeeper_reads_it(op: &Request) -> Result<std::borrow::Cow<'_, Request>, ErrorCode> {
    use std::borrow::Cow;
    let flags = match op {
        Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => r.flags,
        Request::CreateTtl(r) => r.flags,
        _ => return Ok(Cow::Borrowed(op)),
    };
    if let (Request::CreateTtl(r), None) = (op, CreateMode::from_flags(flags)) {
        return Ok(Cow::Owned(Request::Create(CreateRequest {
            path: r.path.clone(),
            data: r.data.clone(),
            acl: r.acl.clone(),
            flags: r.flags,
        })));
    }
    let mode = CreateMode::from_flags(flags).ok_or(ErrorCode::MarshallingError)?;
    Ok(match op {
        Request::CreateTtl(_) if mode.is_ttl() => Cow::Borrowed(op),
        Request::CreateTtl(r) => {
            let req = CreateRequest {
                path: r.path.clone(),
                data: r.data.clone(),
                acl: r.acl.clone(),
                flags: r.flags,
            };
            Cow::Owned(if mode.is_container() {
                Request::CreateContainer(req)
            } else {
                Request::Create(req)
            })
        }
        _ if mode.is_ttl() => return Err(ErrorCode::MarshallingError),
        Request::Create(r) if mode.is_container() => {
            Cow::Owned(Request::CreateContainer(r.clone()))
        }
        _ => Cow::Borrowed(op),
    })
}
