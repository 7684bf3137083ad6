//! Where a request becomes a log entry and leaves the core for raft. `stamp` is the one place an
//! entry gets its session, xid, time and auth; `propose` is the one place an entry leaves the
//! core. Forwarding a follower's writes to the leader belongs here.

use tokio::time::Instant;
use tracing::warn;

use consensus::ConsensusError;
use wire::{Acl, Id, Request, RequestHeader};
use znode_tree::{Entry, Txn};

use super::requests::{Pending, Queued};
use super::Core;
use crate::config::AclSchemes;
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

/// ZooKeeper's fixupACL refuses an ACL id whose scheme has no registered provider (sasl and x509
/// are registered only when configured). Every ACL list of `req` (create's four opcodes, setACL,
/// and the creates inside a multi) naming such a scheme is emptied here, before the entry is
/// stamped: apply refuses an empty list with InvalidACL at the very step fixupACL would, so the
/// errors before it (flags, ttl, path) and after it, and a multi's per-op results, stay apply's.
///
/// Why here and not in apply (`TreeConfig`): ZooKeeper decides this on its leader, before the
/// transaction, from that server's registry; apply must compute alike on every member, so the
/// schemes would have to join the settings fingerprint (`identity.rs`), and members of older
/// releases (which accept every scheme) would refuse upgraded ones: no rolling upgrade. Emptying
/// the list at the proposer keeps apply and the log format as they were. The member that takes the
/// request decides (a follower's write is not re-checked by the leader); members are meant to
/// share their `authProvider` lines, as ZooKeeper's are (see DESIGN.md).
pub(super) fn empty_acls_without_provider(req: &mut Request, schemes: AclSchemes) {
    let lacks = |acl: &[Acl]| acl.iter().any(|a| !schemes.has(&a.id.scheme));
    let acl = match req {
        Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => &mut r.acl,
        Request::CreateTtl(r) => &mut r.acl,
        Request::SetAcl(r) => &mut r.acl,
        Request::Multi(ops) => {
            for op in ops {
                empty_acls_without_provider(op, schemes);
            }
            return;
        }
        _ => return,
    };
    if lacks(acl) {
        acl.clear();
    }
}

impl Core {
    pub(super) fn propose_write(
        &mut self,
        id: ConnId,
        header: RequestHeader,
        mut txn: Txn,
        received: Instant,
        slot: Slot,
    ) {
        let queued = std::time::Instant::now();
        if let Txn::Write(req) = &mut txn {
            empty_acls_without_provider(req, self.cfg.acl_schemes());
        }
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
