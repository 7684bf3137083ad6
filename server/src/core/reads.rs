//! Answering reads in their turn: `drain` answers what is ready at the head of a connection's
//! FIFO (reads, errors, syncs whose ReadIndex is applied) and stops at the first unapplied write.
//! And the syncs' ReadIndex: its answer, the wait for this member to apply that far, and asking
//! again when raft dropped the request.

use tokio::time::Instant;
use tracing::debug;

use wire::ops::who_am_i::WhoAmIResponse;
use wire::{ErrorCode, ReplyHeader, Request, RequestHeader, Response};
use znode_tree::{acl, ReadCtx};

use super::requests::Pending;
use super::Core;
use crate::msg::ConnId;
use crate::outbound::Outbound;

impl Core {
    /// The ReadIndex answer a sync (or a read barrier) waited for: answered now if this member
    /// has applied that far, once it has otherwise.
    pub(super) fn read_index_ready(&mut self, ctx: u64, index: u64) {
        let Some(id) = self.conns.read_ready(ctx, index) else {
            return;
        };
        self.drain(id);
        // A member behind the leader answers once it has applied that far.
        if self.conns.head_is_sync(id) {
            self.conns.sync_waits_for_apply(id);
        }
    }

    /// Syncs answered by the leader but waiting for this member to apply that far.
    pub(super) fn drain_ready_syncs(&mut self) {
        for id in self.conns.take_syncs_waiting_for_apply() {
            self.drain(id);
            if self.conns.head_is_sync(id) {
                self.conns.sync_waits_for_apply(id);
            }
        }
    }

    /// raft-rs drops a ReadIndex silently in a few cases (a leader that has not committed in its
    /// term yet, no leader at the moment it arrives): a sync unanswered for two election timeouts
    /// asks again with a fresh context, so it cannot hang its connection forever.
    pub(super) fn retry_syncs(&mut self, now: Instant) {
        let (tick, election, _) = self.cfg.raft_timing();
        let patience = tick * election * 2;
        for (id, old) in self.conns.unanswered_reads(now, patience) {
            let ctx = self.conns.ask_read_again(id, old, now);
            debug!(ctx, "sync unanswered; asking for a read index again");
            if self.raft.read_index(ctx).is_err() {
                self.close_conn(id);
            }
        }
    }

    /// Answers queued reads (and ready syncs) at the head of a connection's FIFO, stopping at
    /// the first write that is not yet applied.
    pub(super) fn drain(&mut self, id: ConnId) {
        loop {
            let Some(conn) = self.conns.get_mut(&id) else {
                return;
            };
            let ready = match conn.queue.front().map(|q| &q.pending) {
                None | Some(Pending::Write { .. }) => false,
                Some(Pending::Sync { index, .. }) => index.is_some_and(|i| i <= self.applied.index),
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
                    let read =
                        znode_tree::read_with_watch(&self.tree, &mut self.watches, &ctx, id, &req);
                    self.fill_unwritten_config(&req, read)
                }
            }
        };
        let now = self.record_latency(id, received);
        self.meters
            .latency
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

    /// A getData of `/zookeeper/config` before the node was first written: zoo.cfg's membership
    /// (`Core::config_before_written`), the stat's length to match.
    fn fill_unwritten_config(
        &self,
        req: &Request,
        read: Result<Response, ErrorCode>,
    ) -> Result<Response, ErrorCode> {
        match (req, read) {
            (Request::GetData(g), Ok(Response::GetData(mut r)))
                if g.path == "/zookeeper/config"
                    && r.data.as_deref().unwrap_or_default().is_empty() =>
            {
                if let Some(data) = self.config_before_written() {
                    r.stat.data_length = data.len() as i32;
                    r.data = Some(data);
                }
                Ok(Response::GetData(r))
            }
            (_, read) => read,
        }
    }

    fn set_watches(&mut self, id: ConnId, sw2: &wire::ops::watches::SetWatches2) {
        // Watches set before a restore were set on another tree: each fires as if its node
        // changed (or was created, or deleted), never silently kept (`ops/restore.rs`).
        let before_restore;
        let sw2 = if sw2.relative_zxid < self.tree.restored_zxid() {
            before_restore = wire::ops::watches::SetWatches2 {
                relative_zxid: i64::MIN,
                ..sw2.clone()
            };
            &before_restore
        } else {
            sw2
        };
        let events = self.watches.set_watches(&self.tree, id, sw2);
        for event in events {
            self.send(id, Outbound::Event { zxid: -1, event });
        }
    }
}
