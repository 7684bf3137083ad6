//! The log comes back: committed entries are applied to the tree in order, their watch events
//! queued, then the write's reply; raft's role changes, ReadIndex answers and installed
//! snapshots; and the trigger that takes a snapshot every `snapshot_every_entries`.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::time::Instant;
use tracing::{debug, error, info, warn};

use consensus::{CommittedEntry, Event};
use wire::{ReplyHeader, Request, Response};
use znode_tree::{acl, Entry, Txn};

use super::requests::Pending;
use super::Core;
use crate::outbound::Outbound;
use crate::session::SessionId;

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
                self.finish_revalidations();
                self.maybe_snapshot();
            }
            Event::RoleChanged {
                is_leader,
                leader_id,
                term,
            } => {
                info!(is_leader, leader_id, term, "raft role changed");
                self.latency.leader_changed(leader_id);
                if self.ensemble.is_some() {
                    self.ensemble_role_changed(is_leader, leader_id, term);
                    return ControlFlow::Continue(());
                }
                self.leader_id = leader_id;
                self.term = term;
                if !is_leader && leader_id != 0 {
                    self.followed_another = true;
                }
                if is_leader && !self.is_leader && self.followed_another {
                    // A leader that took over from another server never saw the sessions'
                    // activity, so it restarts every timer (ZooKeeper does the same). A server
                    // that leads from its own start resumes the checkpointed clocks instead.
                    self.sessions.restart_all(&self.tree, Instant::now());
                }
                self.is_leader = is_leader;
            }
            Event::ReadIndexReady { ctx, index } => {
                if self.revalidation_ready(ctx, index) {
                    return ControlFlow::Continue(());
                }
                let mut waiting = None;
                for (id, conn) in self.conns.iter_mut() {
                    for q in conn.queue.iter_mut() {
                        if let Pending::Sync {
                            ctx: c, index: i, ..
                        } = &mut q.pending
                        {
                            if *c == ctx {
                                *i = Some(index);
                                waiting = Some(*id);
                            }
                        }
                    }
                }
                if let Some(id) = waiting {
                    self.drain(id);
                    // A member behind the leader answers once it has applied that far.
                    if self.head_is_sync(id) {
                        self.sync_ready.insert(id);
                    }
                }
            }
            Event::InstallSnapshot(snap) => match self.cfg.tree_from_snapshot(&snap.data) {
                Ok(tree) => {
                    info!(index = snap.index, "installed a snapshot from the leader");
                    self.tree = tree;
                    self.applied_index = snap.index;
                    self.applied_term = snap.term;
                    self.last_snapshot_index = snap.index;
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

    pub(super) fn release_applied_waiters(&mut self) {
        let applied = self.applied_index;
        let (done, waiting): (Vec<_>, Vec<_>) = self
            .applied_waiters
            .drain(..)
            .partition(|(i, _)| *i <= applied);
        self.applied_waiters = waiting;
        for (_, reply) in done {
            let _ = reply.send(());
        }
    }

    fn apply(&mut self, ce: CommittedEntry) -> Result<(), String> {
        if ce.index <= self.applied_index && self.applied_index != 0 {
            // Already in the state (replayed below a restored snapshot).
            return Ok(());
        }
        if ce.data.is_empty() {
            self.applied_index = ce.index;
            self.applied_term = ce.term;
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
        self.applied_index = ce.index;
        self.applied_term = ce.term;
        let zxid = ce.index as i64;
        let session = SessionId(entry.session_id);
        if let Txn::Write(Request::Reconfig(req)) = &entry.txn {
            self.apply_reconfig(zxid, &entry, req);
            self.latency.count_applied();
            return Ok(());
        }
        let applied = self.tree.apply(zxid, &entry);
        self.latency.count_applied();
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
                    info!(%session, timeout_ms, "session established");
                    self.finish_handshake(id, *password);
                }
            }
            Txn::CloseSession => {
                if let Some(id) = self.sessions.closed(session) {
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
            Txn::Write(_) => {
                if let Some(id) = self.sessions.holder(session) {
                    if let Some((received, stamps)) = self.pop_write(id, entry.xid) {
                        let applied_at = self.record_latency(id, received).into_std();
                        let durable = self.raft.entry_times().get(ce.index);
                        self.latency.applied(&stamps, durable, applied_at);
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
        }
        Ok(())
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
        let all: Vec<crate::msg::ConnId> = self.conns.keys().copied().collect();
        for id in all {
            self.close_conn(id);
        }
        for id in self.sessions.reset(&self.tree, Instant::now()) {
            self.refuse_connection(id);
        }
        if let Some(ens) = self.ensemble.as_mut() {
            ens.revalidating.clear(); // their connections closed above
        }
        self.watches = znode_tree::WatchRegistry::new();
        self.sync_ready.clear();
    }

    fn head_is_sync(&self, id: crate::msg::ConnId) -> bool {
        self.conns
            .get(&id)
            .and_then(|c| c.queue.front())
            .is_some_and(|q| matches!(q.pending, Pending::Sync { .. }))
    }

    /// Syncs answered by the leader but waiting for this member to apply that far.
    fn drain_ready_syncs(&mut self) {
        if self.sync_ready.is_empty() {
            return;
        }
        let ids: Vec<crate::msg::ConnId> = self.sync_ready.drain().collect();
        for id in ids {
            self.drain(id);
            if self.head_is_sync(id) {
                self.sync_ready.insert(id);
            }
        }
    }

    /// Takes a snapshot every `snapCount` applied entries, one at a time: while one is still
    /// being encoded the next waits for it (as ZooKeeper skips a snapshot while its snapshot
    /// thread runs), and is taken at the first commit or core tick after it. Encoding runs at background
    /// priority, so under a load that keeps the core busy (a fill of 1M znodes) it finishes late;
    /// without the wait a new one started every 100k entries, and at the end of the fill six
    /// encoded snapshots of 80-180 MB were in memory at once (763 MiB of RSS against 340 once
    /// they were written), four of them only to be discarded by the writer as outdated.
    pub(super) fn maybe_snapshot(&mut self) {
        let every = self.cfg.snapshot_every_entries.max(1);
        if self.applied_index >= self.last_snapshot_index + every
            && self.snapshot_encoding.load(Ordering::Acquire) == 0
        {
            self.take_snapshot();
        }
    }

    fn take_snapshot(&mut self) {
        if self.applied_index <= 1 {
            return; // nothing beyond the bootstrap snapshot to save
        }
        {
            // Only the view is taken here, on the core task, where clients wait for it: it shares
            // the tree's root and copies the sessions and ACL tables (microseconds at 1M znodes).
            // Encoding runs on its own thread while writes go on; the first write below a node
            // the view still shares copies that node's path (tens of microseconds).
            let started = std::time::Instant::now();
            let view = self.tree.snapshot_view();
            let view_took = started.elapsed();
            let view_ms = view_took.as_millis() as u64;
            let (index, term) = (self.applied_index, self.applied_term);
            let raft = self.raft.clone();
            let latency = self.latency.clone();
            let encoding = EncodingMark::set(&self.snapshot_encoding);
            if self.view_reaper.is_none() {
                // Spawned here, on the core's worker, so that it runs at normal priority.
                match super::reaper::Reaper::spawn("snapshot-drop") {
                    Ok(r) => self.view_reaper = Some(r),
                    Err(e) => {
                        warn!(error = %e, "no thread to drop snapshot views: the encoder will")
                    }
                }
            }
            let reaper = self.view_reaper.clone();
            // A thread of its own at background priority (`consensus::background`): on a
            // server with one core the encoding would otherwise take turns with the core task
            // and every client would wait for its slices.
            let encoder = std::thread::Builder::new()
                .name("snapshot-encode".into())
                .spawn(move || {
                    let _encoding = encoding; // cleared when this thread ends, however it ends
                    consensus::background::lower_current_thread_priority();
                    let started = std::time::Instant::now();
                    let data = view.encode();
                    // Not dropped here: freeing nodes deleted meanwhile takes the core worker's
                    // allocator lock, which this SCHED_IDLE thread may then hold for as long as
                    // the core stays busy (reaper.rs, BUGS.md P10).
                    match &reaper {
                        Some(r) => r.reap(view),
                        None => drop(view),
                    }
                    latency.snapshot.record_ms(view_took + started.elapsed());
                    let ms = started.elapsed().as_millis() as u64;
                    info!(index, bytes = data.len(), view_ms, ms, "snapshot taken");
                    if let Err(e) = raft.save_snapshot(index, term, data) {
                        warn!(error = %e, "snapshot not saved");
                    }
                });
            if let Err(e) = encoder {
                warn!(error = %e, "snapshot not taken: no thread to encode it");
                return;
            }
            self.last_snapshot_index = index;
        }
    }
}

/// Counts a snapshot as being encoded for as long as it lives (the encoder thread owns it, so a
/// panic ends the count too).
struct EncodingMark(Arc<AtomicUsize>);

impl EncodingMark {
    fn set(count: &Arc<AtomicUsize>) -> EncodingMark {
        count.fetch_add(1, Ordering::AcqRel);
        EncodingMark(count.clone())
    }
}

impl Drop for EncodingMark {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
