//! The log comes back: committed entries are applied to the tree in order, their watch events
//! queued, then the write's reply; raft's role changes, ReadIndex answers and installed
//! snapshots; and the trigger that takes a snapshot every `snapshot_every_entries`.

use std::ops::ControlFlow;

use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::{debug, error, info};

use consensus::{CommittedEntry, Event};
use wire::{ReplyHeader, Request, Response};
use znode_tree::{acl, Entry, Txn};

use super::Core;
use crate::outbound::Outbound;
use crate::session::SessionId;

/// How far the tree is applied: the raft index and term of the last entry applied (the index is
/// its zxid), and start-up's waits for the replay to reach an index (`CoreMsg::WaitApplied`).
pub(super) struct Applied {
    pub(super) index: u64,
    pub(super) term: u64,
    waiters: Vec<(u64, oneshot::Sender<()>)>,
}

impl Applied {
    /// A tree restored at `index` (0: empty) of `term`.
    pub(super) fn new(index: u64, term: u64) -> Applied {
        Applied {
            index,
            term,
            waiters: Vec::new(),
        }
    }

    /// `reply` is answered once the tree is applied up to `index`.
    pub(super) fn wait_for(&mut self, index: u64, reply: oneshot::Sender<()>) {
        self.waiters.push((index, reply));
        self.release();
    }

    /// Answers the waits the applied index has reached.
    pub(super) fn release(&mut self) {
        let applied = self.index;
        let (done, waiting): (Vec<_>, Vec<_>) =
            self.waiters.drain(..).partition(|(i, _)| *i <= applied);
        self.waiters = waiting;
        for (_, reply) in done {
            let _ = reply.send(());
        }
    }
}

impl Core {
    /// `Break` when this member cannot go on: a committed entry it cannot decode, or a snapshot
    /// from the leader it cannot restore. Every replica applies the same bytes, so one that
    /// cannot must stop rather than diverge; it stops cleanly (the core ends, `paddock serve`
    /// exits 1, see `startup.rs`), never by a panic, and says what to do.
    pub(super) fn consensus_event(&mut self, ev: Event) -> ControlFlow<()> {
        match ev {
            Event::Committed(entries) => {
                for ce in entries {
                    if let Err(e) = self.apply(ce) {
                        error!("{e}");
                        return ControlFlow::Break(());
                    }
                }
                self.drain_ready_syncs();
                self.judge_deferred_reconfigs();
                self.finish_revalidations();
                self.maybe_snapshot();
            }
            Event::RoleChanged {
                is_leader,
                leader_id,
                term,
            } => {
                info!(is_leader, leader_id, term, "raft role changed");
                self.meters.latency.leader_changed(leader_id);
                self.role_changed(is_leader, leader_id, term);
            }
            Event::ReadIndexReady { ctx, index } => {
                if !self.revalidation_ready(ctx, index) {
                    self.read_index_ready(ctx, index);
                }
            }
            Event::InstallSnapshot(snap) => match self.cfg.tree_from_snapshot(&snap.data) {
                Ok(tree) => {
                    info!(index = snap.index, "installed a snapshot from the leader");
                    self.tree = tree;
                    self.applied.index = snap.index;
                    self.applied.term = snap.term;
                    self.snapshots.last_index = snap.index;
                    self.follow.push_reset(self.tree.zxid_at(snap.index));
                    self.reset_after_install();
                    self.membership_from_tree();
                }
                Err(e) => {
                    error!(
                        index = snap.index,
                        "the snapshot from the leader does not restore: {e}; this member stops. \
                         Its data cannot be trusted: move its data directory aside and start it \
                         empty to rejoin (docs/security.md)"
                    );
                    return ControlFlow::Break(());
                }
            },
            Event::MembershipChanged {
                index,
                voters,
                learners,
                ..
            } => {
                info!(index, ?voters, ?learners, "raft membership changed");
                self.membership_step_done();
                self.update_address_book();
                self.drop_clients_if_dropped();
                self.finish_waiting_reconfigs();
                self.reconcile_membership();
            }
            Event::SnapshotWanted { peer } => {
                info!(
                    peer,
                    "a peer needs a snapshot newer than the last one: taking one now"
                );
                self.take_snapshot();
            }
        }
        ControlFlow::Continue(())
    }

    fn apply(&mut self, ce: CommittedEntry) -> Result<(), String> {
        if ce.index <= self.applied.index && self.applied.index != 0 {
            // Already in the state (replayed below a restored snapshot).
            return Ok(());
        }
        if ce.data.is_empty() {
            self.applied.index = ce.index;
            self.applied.term = ce.term;
            self.follow.push_noop(self.tree.zxid_at(ce.index));
            return Ok(()); // the leader's no-op entry
        }
        let entry = Entry::decode(&ce.data).map_err(|e| {
            format!(
                "committed log entry {} (term {}) does not decode: {e}; this member stops before \
                 applying it. Another member's log holds the same entry: check the members' \
                 versions, and see docs/security.md for how a member that cannot apply rejoins",
                ce.index, ce.term
            )
        })?;
        self.applied.index = ce.index;
        self.applied.term = ce.term;
        // The index itself, until a restore made the zxids jump (`Tree::zxid_at`).
        let zxid = self.tree.zxid_at(ce.index);
        let session = SessionId(entry.session_id);
        if let Txn::Write(Request::Reconfig(req)) = &entry.txn {
            let outcome = self.apply_reconfig(zxid, &entry, req);
            self.meters.latency.count_applied();
            if self.follow.is_on() {
                let outcome = outcome.map_err(|c| c.code());
                let (h, t) = crate::zk_txn::reconfig(&entry, zxid, outcome, &self.tree);
                self.follow.push_txn(&h, &t);
            }
            return Ok(());
        }
        let applied = self.tree.apply(zxid, &entry);
        self.meters.latency.count_applied();
        if self.follow.is_on() {
            if matches!(entry.txn, Txn::Attach { .. }) {
                self.follow.push_noop(zxid);
            } else {
                self.follow_applied(&entry, zxid, &applied);
            }
        }
        self.fire_events(zxid, &applied.changes);

        match &entry.txn {
            Txn::CreateSession {
                timeout_ms,
                password,
            } => {
                let held = self
                    .sessions
                    .established(session, *timeout_ms, Instant::now());
                if let Some(id) = held {
                    let _in_conn = self.conns.span(id).entered();
                    info!(%session, timeout_ms, "session established");
                    self.finish_handshake(id, *password);
                }
            }
            Txn::CloseSession => {
                let held = self.sessions.closed(session);
                let _in_conn = held.map(|id| self.conns.span(id).entered());
                if let Some(id) = held {
                    if self.pop_write(id, entry.xid).is_some() {
                        self.send_header(id, entry.xid, zxid, 0);
                    }
                    self.close_conn(id);
                }
                // The expiry timer proposes with xid 0; a client's closeSession has its own
                // xid, even when its connection is gone by the time the entry applies (and at
                // a replay after a restart).
                if entry.xid == 0 {
                    info!(%session, "session expired");
                } else {
                    info!(%session, "session closed");
                }
            }
            Txn::Attach { member } => {
                if Some(*member) == self.cfg.my_id {
                    self.attached(session, applied.reply.is_ok());
                }
            }
            // Only the member a write came through answers it: after a move another member's
            // connection may hold the session with a write of the same xid at its head.
            Txn::Write(_) | Txn::Refused { .. }
                if entry.via.is_some_and(|v| Some(v) != self.cfg.my_id) => {}
            Txn::Write(_) if applied.reply == Err(wire::ErrorCode::SessionMoved) => {
                // ZooKeeper's FinalRequestProcessor: SessionMoved is a connection-level error,
                // the connection is closed with no reply (ZOOKEEPER-710), so no reply on the
                // old path can overtake the new connection's.
                if let Some(id) = self.sessions.holder(session) {
                    if self.pop_write(id, entry.xid).is_some() {
                        let _in_conn = self.conns.span(id).entered();
                        info!(%session, "session moved to another member; closing its old connection");
                        self.close_conn(id);
                    }
                }
            }
            Txn::Write(_) | Txn::Refused { .. } => {
                if let Some(id) = self.sessions.holder(session) {
                    if let Some((received, stamps)) = self.pop_write(id, entry.xid) {
                        let applied_at = self.record_latency(id, received).into_std();
                        let durable = self.raft.entry_times().get(ce.index);
                        self.meters.latency.applied(&stamps, durable, applied_at);
                        let (err, body) = match applied.reply {
                            Ok(Response::Empty) => (0, None),
                            Ok(body) => (0, Some(body)),
                            Err(code) => (code.code(), None),
                        };
                        self.send(
                            id,
                            Outbound::WriteReply {
                                header: ReplyHeader {
                                    xid: entry.xid,
                                    zxid,
                                    err,
                                },
                                body,
                                stamps: crate::latency::ReplyStamps {
                                    received: stamps.received,
                                    applied: applied_at,
                                },
                            },
                        );
                        self.drain(id);
                    }
                }
            }
            Txn::DeleteExpired { path } => {
                if let Err(code) = applied.reply {
                    debug!(path, ?code, "expired node was not deleted");
                }
            }
            Txn::SetConfig { .. } => {
                info!(zxid, "ensemble membership written to /zookeeper/config");
                self.membership_from_tree();
            }
            Txn::Restore { .. } => {
                let outcome = match applied.reply {
                    Ok(_) => Ok(self.tree.last_zxid()),
                    Err(code) => Err(code),
                };
                self.restore_applied(ce.index, &entry, outcome);
            }
        }
        Ok(())
    }

    /// The follow log's record of an applied entry (`follow.rs`, `zk_txn.rs`).
    fn follow_applied(&self, entry: &Entry, zxid: i64, applied: &znode_tree::Applied) {
        match crate::zk_txn::of_entry(entry, zxid, applied, &self.tree) {
            crate::zk_txn::Mapped::Txn(h, t) => self.follow.push_txn(&h, &t),
            crate::zk_txn::Mapped::Restore => self.follow.push_reset(self.tree.last_zxid()),
            crate::zk_txn::Mapped::Unmapped => {
                error!(
                    zxid,
                    "an applied entry has no ZooKeeper transaction to write for backup --follow; \
                     followers take a new snapshot here"
                );
                self.follow.push_reset(zxid);
            }
        }
    }

    /// A restore applied at `index`: every connection closes, as ZooKeeper's restore closes
    /// them, and everything that hung off the old tree goes (`reset_after_install`). Clients
    /// reconnect: to a session the snapshot holds (its password kept if it was live here), or
    /// are told theirs expired; either way with a `lastZxidSeen` below the restore's zxid, which
    /// the handshake accepts. The caller that proposed it, if it waits on this member, learns
    /// the zxid.
    fn restore_applied(
        &mut self,
        index: u64,
        entry: &Entry,
        outcome: Result<i64, wire::ErrorCode>,
    ) {
        let waiter = (entry.session_id == 0)
            .then(|| self.restores.iter().position(|(x, _)| *x == entry.xid))
            .flatten()
            .map(|i| self.restores.swap_remove(i).1);
        match outcome {
            Ok(zxid) => {
                info!(
                    index,
                    zxid = format_args!("{zxid:#x}"),
                    nodes = self.tree.node_count(),
                    sessions = self.tree.sessions().count(),
                    "restored the state from a snapshot: every client connection closes; new \
                     zxids continue in a new epoch"
                );
                self.reset_after_install();
                self.membership_from_tree();
                if let Some(w) = waiter {
                    let _ = w.send(Ok(zxid));
                }
            }
            Err(code) => {
                error!(
                    index,
                    ?code,
                    "a restore entry did not restore; the state is unchanged"
                );
                if let Some(w) = waiter {
                    let _ = w.send(Err(format!(
                        "the restore entry did not apply ({code:?}); the state is unchanged"
                    )));
                }
            }
        }
    }

    /// Queues the watch events `changes` fire. ZooKeeper 3.9 delivers an event only to watchers
    /// that may READ the node.
    pub(super) fn fire_events(&mut self, zxid: i64, changes: &[znode_tree::Change]) {
        let conns = &self.conns;
        let tree_cfg = self.tree.config();
        let events = self.watches.trigger(changes, |w, node_acl| {
            conns
                .get(&w)
                .is_some_and(|c| acl::allowed(tree_cfg, node_acl, wire::perms::READ, &c.auth))
        });
        for (w, event) in events {
            self.send(w, Outbound::Event { zxid, event });
        }
    }

    /// Everything that hangs off the tree is stale after a snapshot replaced it: watches,
    /// sessions' connections and timers, writes and syncs in flight. Like a ZooKeeper follower
    /// syncing by SNAP, the member drops its clients; they reconnect and re-register watches.
    fn reset_after_install(&mut self) {
        for id in self.conns.ids() {
            self.close_conn(id);
        }
        for id in self.sessions.reset(&self.tree, Instant::now()) {
            self.refuse_connection(id);
        }
        if let Some(ens) = self.ensemble.as_mut() {
            ens.revalidating.clear(); // their connections closed above
        }
        self.watches = znode_tree::WatchRegistry::new();
        self.conns.take_syncs_waiting_for_apply();
    }
}
