//! Where a request becomes a log entry and leaves the core for raft. `stamp` is the one place an
//! entry gets its session, xid, time and auth; `propose` is the one place an entry leaves the
//! core. Forwarding a follower's writes to the leader belongs here.

use tokio::time::Instant;
use tracing::warn;

use consensus::ConsensusError;
use wire::{Id, RequestHeader};
use znode_tree::{Entry, Txn};

use super::requests::{Pending, Queued};
use super::Core;
use crate::forward_codec::ToLeader;
use crate::msg::ConnId;
use crate::session::SessionId;
use crate::throttle::Slot;

/// The log entry for `txn`, as the proposer stamps it. `time_ms` is the proposer's wall clock,
/// read once by the caller (the TTL sweep stamps with the time it decided by), so every replica
/// applies the same time.
pub(super) fn stamp(session: SessionId, xid: i32, time_ms: i64, auth: Vec<Id>, txn: Txn) -> Entry {
    Entry {
        session_id: session.0,
        xid,
        time_ms,
        auth,
        via: None,
        txn,
    }
}

impl Core {
    pub(super) fn propose_write(
        &mut self,
        id: ConnId,
        header: RequestHeader,
        txn: Txn,
        received: Instant,
        slot: Slot,
    ) {
        let queued = std::time::Instant::now();
        let conn = self.conns.get_mut(&id).unwrap();
        let mut entry = stamp(
            conn.session_id,
            header.xid,
            self.wall.now_ms(),
            conn.auth.clone(),
            txn,
        );
        // In an ensemble a write names the member it came through, so that apply refuses it
        // with SessionMoved on every member alike once the session attached elsewhere.
        if self.ensemble.is_some() && self.cfg.session_owners {
            entry.via = Some(self.cfg.my_id.unwrap_or(0));
        }
        // Read before the hand-off: the raft thread may persist the entry before `submit` returns.
        let proposed = std::time::Instant::now();
        match self.submit(&entry) {
            Ok(link) => {
                let stamps = crate::latency::WriteStamps {
                    received: received.into_std(),
                    queued,
                    proposed,
                };
                let conn = self.conns.get_mut(&id).unwrap();
                conn.queue.push_back(Queued {
                    pending: Pending::Write {
                        xid: header.xid,
                        received,
                        link,
                        stamps,
                    },
                    _slot: Some(slot),
                });
            }
            // No leader, a broken link, or a stopped raft thread: the client reconnects
            // elsewhere (or retries).
            Err(()) => self.close_conn(id),
        }
    }

    /// Where a client's entry goes: raft here on the leader (and on a standalone server), the
    /// leader's forward link elsewhere. `Ok(Some(epoch))` names the link it went on.
    pub(super) fn submit(&mut self, entry: &Entry) -> Result<Option<u64>, ()> {
        if self.ensemble.is_none() || self.role.is_leader {
            return self.propose(entry).map(|_| None).map_err(|_| ());
        }
        match self.forward(ToLeader::Propose(entry.encode())) {
            Some(epoch) => Ok(Some(epoch)),
            None => Err(()),
        }
    }

    /// Hands `entry` to raft. A refusal is logged and returned: `NotLeader` (a follower, or a
    /// leader that just lost its role) and `Stopped` (the raft thread is gone) call for different
    /// handling once writes can be forwarded.
    pub(super) fn propose(&mut self, entry: &Entry) -> Result<(), ConsensusError> {
        self.raft
            .propose(entry.encode())
            .inspect_err(|e| warn!(error = %e, "proposal refused"))
    }
}
