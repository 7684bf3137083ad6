//! Answering reads in their turn: `drain` answers what is ready at the head of a connection's
//! FIFO (reads, errors, syncs whose ReadIndex is applied) and stops at the first unapplied write.

use tokio::time::Instant;

use wire::ops::who_am_i::WhoAmIResponse;
use wire::{ErrorCode, ReplyHeader, Request, RequestHeader, Response};
use znode_tree::{acl, ReadCtx};

use super::requests::Pending;
use super::Core;
use crate::msg::ConnId;
use crate::outbound::Outbound;

impl Core {
    /// Answers queued reads (and ready syncs) at the head of a connection's FIFO, stopping at
    /// the first write that is not yet applied.
    pub(super) fn drain(&mut self, id: ConnId) {
        loop {
            let Some(conn) = self.conns.get_mut(&id) else {
                return;
            };
            let ready = match conn.queue.front().map(|q| &q.pending) {
                None | Some(Pending::Write { .. }) => false,
                Some(Pending::Sync { index, .. }) => index.is_some_and(|i| i <= self.applied_index),
                Some(Pending::Read { .. } | Pending::Error { .. }) => true,
            };
            if !ready {
                return;
            }
            match conn.queue.pop_front().unwrap().pending {
                Pending::Read {
                    header,
                    req,
                    received,
                } => self.answer_read(id, header, req, received),
                Pending::Error {
                    xid,
                    code,
                    received,
                } => {
                    let zxid = self.tree.last_zxid();
                    self.record_latency(id, received);
                    self.send_header(id, xid, zxid, code.code());
                }
                Pending::Sync { reply: false, .. } => {}
                Pending::Sync {
                    xid,
                    path,
                    received,
                    ..
                } => {
                    let zxid = self.tree.last_zxid();
                    self.record_latency(id, received);
                    self.send(
                        id,
                        Outbound::Reply {
                            header: ReplyHeader { xid, zxid, err: 0 },
                            body: Some(Response::Sync(wire::ops::sync::SyncResponse { path })),
                        },
                    );
                }
                Pending::Write { .. } => unreachable!("checked above"),
            }
        }
    }

    fn answer_read(&mut self, id: ConnId, header: RequestHeader, req: Request, received: Instant) {
        let zxid = self.tree.last_zxid();
        let conn = self.conns.get(&id).unwrap();
        let session_id = conn.session_id;
        let result: Result<Response, ErrorCode> = {
            match &req {
                Request::Ping => {
                    self.send_header(id, wire::xid::PING, zxid, 0);
                    return;
                }
                Request::WhoAmI => Ok(Response::WhoAmI(WhoAmIResponse {
                    client_info: acl::who_am_i(&conn.auth),
                })),
                Request::SetWatches(sw) => {
                    let sw2 = wire::ops::watches::SetWatches2 {
                        relative_zxid: sw.relative_zxid,
                        data_watches: sw.data_watches.clone(),
                        exist_watches: sw.exist_watches.clone(),
                        child_watches: sw.child_watches.clone(),
                        persistent_watches: Vec::new(),
                        persistent_recursive_watches: Vec::new(),
                    };
                    self.set_watches(id, &sw2);
                    Ok(Response::Empty)
                }
                Request::SetWatches2(sw2) => {
                    let sw2 = sw2.clone();
                    self.set_watches(id, &sw2);
                    Ok(Response::Empty)
                }
                Request::CheckWatches(w) => self
                    .watches
                    .check(id, &w.path, w.watcher_type)
                    .map(|_| Response::Empty),
                Request::RemoveWatches(w) => self
                    .watches
                    .remove(id, &w.path, w.watcher_type)
                    .map(|_| Response::Empty),
                _ => {
                    let auth = conn.auth.clone();
                    let ctx = ReadCtx {
                        session_id: session_id.0,
                        auth: &auth,
                    };
                    znode_tree::read_with_watch(&self.tree, &mut self.watches, &ctx, id, &req)
                }
            }
        };
        let now = self.record_latency(id, received);
        self.latency
            .read_answered(now.saturating_duration_since(received));
        let (err, body) = match result {
            Ok(body) => (0, Some(body)),
            Err(code) => (code.code(), None),
        };
        let body = body.filter(|b| !matches!(b, Response::Empty));
        self.send(
            id,
            Outbound::Reply {
                header: ReplyHeader {
                    xid: header.xid,
                    zxid,
                    err,
                },
                body,
            },
        );
    }

    fn set_watches(&mut self, id: ConnId, sw2: &wire::ops::watches::SetWatches2) {
        let events = self.watches.set_watches(&self.tree, id, sw2);
        for event in events {
            self.send(id, Outbound::Event { zxid: -1, event });
        }
    }
}
