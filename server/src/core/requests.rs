//! The request pipeline: every request after the handshake comes in here, is classified
//! (auth, sync, write, read) and takes its place in its connection's FIFO, so replies leave in
//! request order (per-session FIFO, see the module doc of `core`).

use tracing::{debug, warn};

use tokio::time::Instant;

use wire::{ErrorCode, Request, RequestHeader};
use znode_tree::Txn;

use super::Core;
use crate::msg::ConnId;
use crate::throttle::Slot;

/// A request waiting in a connection's FIFO.
#[derive(Debug)]
pub(super) enum Pending {
    /// A write proposed to the log; answered when its entry is applied. `link` is the epoch of
    /// the forward link it went to the leader on (`None`: proposed here).
    Write {
        xid: i32,
        received: Instant,
        link: Option<u64>,
        stamps: crate::latency::WriteStamps,
    },
    /// A read (or an op answered like one) that waits behind earlier writes.
    Read {
        header: RequestHeader,
        req: Request,
        received: Instant,
    },
    /// A request answered with an error in its turn (a body that did not decode).
    Error {
        xid: i32,
        code: ErrorCode,
        received: Instant,
    },
    /// sync: answered once the local applied index reaches the ReadIndex.
    Sync {
        xid: i32,
        path: String,
        ctx: u64,
        index: Option<u64>,
        received: Instant,
        /// When the ReadIndex for `ctx` was asked for (see `timers::retry_syncs`).
        asked: Instant,
        /// A client's sync is answered; the barrier that `paddock.linearizableReads` puts before
        /// every read is not (it only holds the read back until this member has applied as far
        /// as the leader had committed when the read arrived).
        reply: bool,
    },
}

/// A pending request and its throttle slot, freed when it leaves the queue.
#[derive(Debug)]
pub(super) struct Queued {
    pub(super) pending: Pending,
    pub(super) _slot: Option<Slot>,
}

impl Core {
    pub(super) fn request(
        &mut self,
        id: ConnId,
        header: RequestHeader,
        req: Result<Request, wire::DecodeError>,
        received: Instant,
        slot: Slot,
    ) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.closed {
            return;
        }
        let (session_id, timeout_ms) = (conn.session_id, conn.timeout_ms);
        self.meters.stats.packets_received += 1;
        conn.stats.received += 1;
        // ZooKeeper drops frames of a closing session without a reply (§5.2).
        if self.sessions.is_closing(session_id) {
            return;
        }
        if !self.authenticated_as_required(id, header.op_type) {
            // AuthenticationHelper.enforceAuthentication: -124 with zxid 0, then the
            // connection closes; the session lives on until it expires.
            warn!(
                peer = %self.conns[&id].remote,
                session = %session_id,
                "request before authenticating with a required scheme; closing the connection"
            );
            let code = ErrorCode::SessionClosedRequireSaslAuth.code();
            self.send_header(id, header.xid, 0, code);
            self.close_conn(id);
            return;
        }
        self.touch_session(session_id, timeout_ms, received);
        let conn = self.conns.get_mut(&id).expect("checked above");

        let req = match req {
            Ok(req) => req,
            Err(e) if e.reply_code() == ErrorCode::Unimplemented => {
                debug!(
                    op = header.op_type,
                    "opcode not accepted from clients: Unimplemented, then close"
                );
                self.reply_error_and_close(id, header.xid, ErrorCode::Unimplemented);
                return;
            }
            Err(e) => {
                debug!(error = %e, "undecodable request body");
                conn.queue.push_back(Queued {
                    pending: Pending::Error {
                        xid: header.xid,
                        code: ErrorCode::MarshallingError,
                        received,
                    },
                    _slot: Some(slot),
                });
                self.drain(id);
                return;
            }
        };
        conn.stats.last_op = req.opcode();
        if header.xid > 0 {
            conn.stats.last_cxid = header.xid;
        }

        let read_only = conn.read_only;
        if self.moved_away(session_id)
            && !matches!(
                req,
                Request::Auth(_) | Request::Sasl(_) | Request::CloseSession
            )
        {
            // ZooKeeper's leader checks the session's owner for every request but closeSession
            // (PrepRequestProcessor, SessionTrackerImpl.checkSession) and closes the connection
            // on SessionMoved without a reply (FinalRequestProcessor). A follower checks no read:
            // its writes are refused at apply (`Txn::Write` with `via`), its reads answered.
            debug!(session = %session_id, "session moved to another member; closing its old connection");
            self.close_conn(id);
            return;
        }
        match req {
            // A read-only session: closing it forgets it here (it is in no log); every write and
            // sync is answered NotReadOnly in its turn (ReadOnlyRequestProcessor).
            Request::CloseSession if read_only => {
                self.send_header(id, header.xid, self.tree.last_zxid(), 0);
                self.close_conn(id);
            }
            req if read_only
                && (req.is_write() || matches!(req, Request::Sync(_) | Request::Reconfig(_))) =>
            {
                self.conns.get_mut(&id).unwrap().queue.push_back(Queued {
                    pending: Pending::Error {
                        xid: header.xid,
                        code: ErrorCode::NotReadOnly,
                        received,
                    },
                    _slot: Some(slot),
                });
                self.drain(id);
            }
            // Auth is answered at once, outside the ordered pipeline, as ZooKeeper does.
            Request::Auth(packet) => self.auth(id, header.xid, packet),
            Request::Sasl(req) => self.sasl(id, header.xid, req.token.unwrap_or_default()),
            Request::Check(_) | Request::DeleteContainer(_) => {
                // Valid only inside multi / only from the server itself.
                self.reply_error_and_close(id, header.xid, ErrorCode::Unimplemented);
            }
            Request::Sync(sync) => {
                let ctx = self
                    .conns
                    .queue_sync(id, header.xid, sync.path, received, true, Some(slot))
                    .expect("checked above");
                if self.raft.read_index(ctx).is_err() {
                    self.close_conn(id);
                }
            }
            Request::CloseSession => {
                self.sessions.mark_closing(session_id);
                self.propose_write(id, header, Txn::CloseSession, received, slot);
            }
            Request::Reconfig(r) => self.reconfig_request(id, header, r, received, slot),
            req if req.is_write() => {
                self.propose_write(id, header, Txn::Write(req), received, slot);
            }
            req => {
                if self.cfg.linearizable_reads
                    && reads_the_tree(&req)
                    && !self.barrier(id, received)
                {
                    return;
                }
                self.conns.get_mut(&id).unwrap().queue.push_back(Queued {
                    pending: Pending::Read {
                        header,
                        req,
                        received,
                    },
                    _slot: Some(slot),
                });
                self.drain(id);
            }
        }
    }

    /// This member leads an ensemble and `session` is attached to another member: a request on
    /// a connection here is on the session's old path.
    fn moved_away(&self, session: crate::session::SessionId) -> bool {
        self.ensemble.is_some()
            && self.cfg.session_owners
            && self.role.is_leader
            && self
                .tree
                .session(session.0)
                .and_then(|s| s.owner)
                .is_some_and(|owner| Some(owner) != self.cfg.my_id)
    }

    pub(super) fn reply_error_and_close(&mut self, id: ConnId, xid: i32, code: ErrorCode) {
        let zxid = self.tree.last_zxid();
        self.send_header(id, xid, zxid, code.code());
        self.close_conn(id);
    }

    /// Removes the head write of a connection if it is the one with `xid`.
    pub(super) fn pop_write(
        &mut self,
        id: ConnId,
        xid: i32,
    ) -> Option<(Instant, crate::latency::WriteStamps)> {
        self.answer_waiting_reconfig_before(id, xid);
        let conn = self.conns.get_mut(&id)?;
        match conn.queue.front().map(|q| &q.pending) {
            Some(Pending::Write { xid: x, .. }) if *x == xid => match conn.queue.pop_front() {
                Some(Queued {
                    pending:
                        Pending::Write {
                            received, stamps, ..
                        },
                    ..
                }) => Some((received, stamps)),
                _ => None,
            },
            _ => None,
        }
    }
}

/// The requests whose answer depends on the tree's state (what `paddock.linearizableReads` holds
/// back behind a ReadIndex); pings, watch bookkeeping and whoAmI do not.
fn reads_the_tree(req: &Request) -> bool {
    matches!(
        req,
        Request::GetData(_)
            | Request::Exists(_)
            | Request::GetChildren(_)
            | Request::GetChildren2(_)
            | Request::GetAllChildrenNumber(_)
            | Request::GetAcl(_)
            | Request::GetEphemerals(_)
            | Request::MultiRead(_)
    )
}

impl Core {
    /// Queues a ReadIndex barrier before a read (`paddock.linearizableReads`): the read is answered
    /// only once this member has applied everything the leader had committed when it arrived, so
    /// no read is stale, on any member. `false` when no ReadIndex can be asked (no leader): the
    /// connection is closed, as for a sync.
    fn barrier(&mut self, id: ConnId, received: Instant) -> bool {
        let Some(ctx) = self
            .conns
            .queue_sync(id, 0, String::new(), received, false, None)
        else {
            return false;
        };
        if self.raft.read_index(ctx).is_err() {
            self.close_conn(id);
            return false;
        }
        true
    }
}
