//! multi (`zk-protocol.md` §8.3): ops run in order against the state earlier ops left, all
//! under one zxid. The first failure rolls everything back from the undo log, so a failed
//! multi changes nothing (not even the sequence counters) and emits no changes.

use wire::{ErrorCode, MultiResult, Request, Response};

use crate::tree::{Change, Cx, Tree};

impl Tree {
    pub(crate) fn multi(
        &mut self,
        cx: &Cx,
        ops: &[Request],
        changes: &mut Vec<Change>,
    ) -> Response {
        self.undo = Some(Vec::new());
        let mut results = Vec::with_capacity(ops.len());
        let mut pending = Vec::new();
        let mut failed = None;
        for (i, op) in ops.iter().enumerate() {
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
                Response::Multi(results)
            }
            Some((at, err)) => {
                self.rollback(undo);
                Response::Multi(
                    (0..ops.len())
                        .map(|i| match i.cmp(&at) {
                            std::cmp::Ordering::Less => MultiResult::error(ErrorCode::Ok),
                            std::cmp::Ordering::Equal => MultiResult::error(err),
                            std::cmp::Ordering::Greater => {
                                MultiResult::error(ErrorCode::RuntimeInconsistency)
                            }
                        })
                        .collect(),
                )
            }
        }
    }
}
