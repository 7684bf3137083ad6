//! multi (`zk-protocol.md` §8.3): ops run in order against the state earlier ops left, all
//! under one zxid. The first failure rolls everything back from the undo log, so a failed
//! multi changes nothing (not even the sequence counters) and emits no changes.

use wire::ops::create::CreateRequest;
use wire::{CreateMode, ErrorCode, MultiResult, Request, Response};

use crate::tree::{Change, Cx, Tree};

impl Tree {
    pub(crate) fn multi(
        &mut self,
        cx: &Cx,
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

/// A create inside a multi as ZooKeeper reads it. `MultiOperationRecord` rebuilds each create
/// with `Op.create`, whose type follows the create *mode*, not the opcode the client sent:
/// a container mode becomes createContainer (a create2-style result), a TTL mode needs the
/// createTTL record (its ttl), and any other mode is a plain create (result: path only), even
/// when sent as create2 or createTTL (whose ttl is then dropped). An invalid mode, or a TTL
/// mode without a ttl, fails the whole multi with MarshallingError. Other ops pass unchanged.
fn as_zookeeper_reads_it(op: &Request) -> Result<std::borrow::Cow<'_, Request>, ErrorCode> {
    use std::borrow::Cow;
    let (req, has_ttl) = match op {
        Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => {
            (r.clone(), false)
        }
        Request::CreateTtl(r) => (
            CreateRequest {
                path: r.path.clone(),
                data: r.data.clone(),
                acl: r.acl.clone(),
                flags: r.flags,
            },
            true,
        ),
        _ => return Ok(Cow::Borrowed(op)),
    };
    let mode = CreateMode::from_flags(req.flags).ok_or(ErrorCode::MarshallingError)?;
    Ok(Cow::Owned(if mode.is_ttl() {
        if !has_ttl {
            return Err(ErrorCode::MarshallingError);
        }
        return Ok(Cow::Borrowed(op));
    } else if mode.is_container() {
        Request::CreateContainer(req)
    } else {
        Request::Create(req)
    }))
}
