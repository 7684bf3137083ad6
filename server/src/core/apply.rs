//! The log comes back: committed entries are applied to the tree in order, their watch events
//! queued, then the write's reply; raft's role changes, ReadIndex answers and installed
//! snapshots; and the trigger that takes a snapshot every `snapshot_every_entries`.

use tokio::time::{Duration, Instant};
use tracing::{debug, info, warn};

use consensus::{CommittedEntry, Event};
use wire::{ReplyHeader, Response};
use znode_tree::{acl, Entry, Tree, Txn};

use super::requests::Pending;
use super::Core;
use crate::outbound::Outbound;

impl Core {
    pub(super) fn consensus_event(&mut self, ev: Event) {
        match ev {
            Event::Committed(entries) => {
                for ce in entries {
                    self.apply(ce);
                }
                self.maybe_snapshot();
            }
            Event::RoleChanged {
                is_leader,
                leader_id,
                term,
            } => {
                info!(is_leader, leader_id, term, "raft role changed");
                if !is_leader && leader_id != 0 {
                    self.followed_another = true;
                }
                if is_leader && !self.is_leader && self.followed_another {
                    // A leader that took over from another server never saw the sessions'
                    // activity, so it restarts every timer (ZooKeeper does the same). A server
                    // that leads from its own start resumes the checkpointed clocks instead.
                    let now = Instant::now();
                    let sessions: Vec<(i64, i32)> =
                        self.tree.sessions().map(|s| (s.id, s.timeout_ms)).collect();
                    for (id, timeout) in sessions {
                        self.tracker.touch(id, timeout, now);
                    }
                }
                self.is_leader = is_leader;
            }
            Event::ReadIndexReady { ctx, index } => {
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
                }
            }
            Event::InstallSnapshot(snap) => {
                match Tree::restore(&snap.data, self.cfg.tree_config()) {
                    Ok(tree) => {
                        info!(index = snap.index, "installed a snapshot from the leader");
                        self.tree = tree;
                        self.applied_index = snap.index;
                        self.applied_term = snap.term;
                        self.last_snapshot_index = snap.index;
                    }
                    Err(e) => panic!(
                        "snapshot at index {} from the leader does not restore: {e}",
                        snap.index
                    ),
                }
            }
        }
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

    fn apply(&mut self, ce: CommittedEntry) {
        if ce.index <= self.applied_index && self.applied_index != 0 {
            // Already in the state (replayed below a restored snapshot).
            return;
        }
        self.applied_index = ce.index;
        self.applied_term = ce.term;
        if ce.data.is_empty() {
            return; // the leader's no-op entry
        }
        let entry = match Entry::decode(&ce.data) {
            Ok(e) => e,
            // Every replica decodes the same bytes: one that cannot must stop, not diverge.
            Err(e) => panic!("log entry {} does not decode: {e}", ce.index),
        };
        let zxid = ce.index as i64;
        let applied = self.tree.apply(zxid, &entry);

        let conns = &self.conns;
        let tree_cfg = self.tree.config();
        // ZooKeeper 3.9 delivers an event only to watchers that may READ the node.
        let events = self.watches.trigger(&applied.changes, |w, node_acl| {
            conns
                .get(&w)
                .is_some_and(|c| acl::allowed(tree_cfg, node_acl, wire::perms::READ, &c.auth))
        });
        for (w, event) in events {
            self.send(w, Outbound::Event { zxid, event });
        }

        match &entry.txn {
            Txn::CreateSession {
                timeout_ms,
                password,
            } => {
                let full = Duration::from_millis((*timeout_ms).max(0) as u64);
                match self.resume_left.remove(&entry.session_id) {
                    // Replayed at start-up: the clock goes on from the checkpoint.
                    Some(left) => {
                        self.tracker
                            .resume(entry.session_id, left.min(full), Instant::now())
                    }
                    None => self
                        .tracker
                        .touch(entry.session_id, *timeout_ms, Instant::now()),
                }
                if let Some(id) = self.connecting.remove(&entry.session_id) {
                    self.by_session.insert(entry.session_id, id);
                    info!(
                        session = format_args!("{:#x}", entry.session_id),
                        timeout_ms, "session established"
                    );
                    self.finish_handshake(id, *password);
                }
            }
            Txn::CloseSession => {
                self.tracker.forget(entry.session_id);
                if let Some(id) = self.by_session.remove(&entry.session_id) {
                    if self.pop_write(id, entry.xid).is_some() {
                        self.send_header(id, entry.xid, zxid, 0);
                    }
                    self.close_conn(id);
                }
                // The expiry timer proposes with xid 0; a client's closeSession has its own
                // xid, even when its connection is gone by the time the entry applies (and at
                // a replay after a restart).
                let session = format_args!("{:#x}", entry.session_id);
                if entry.xid == 0 {
                    info!(session, "session expired");
                } else {
                    info!(session, "session closed");
                }
            }
            Txn::Write(_) => {
                if let Some(&id) = self.by_session.get(&entry.session_id) {
                    if let Some(received) = self.pop_write(id, entry.xid) {
                        self.record_latency(id, received);
                        let (err, body) = match applied.reply {
                            Ok(Response::Empty) => (0, None),
                            Ok(body) => (0, Some(body)),
                            Err(code) => (code.code(), None),
                        };
                        self.send(
                            id,
                            Outbound::Reply {
                                header: ReplyHeader {
                                    xid: entry.xid,
                                    zxid,
                                    err,
                                },
                                body,
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
        }
    }

    fn maybe_snapshot(&mut self) {
        let every = self.cfg.snapshot_every_entries.max(1);
        if self.applied_index >= self.last_snapshot_index + every {
            // Only the view is taken here, on the core task, where clients wait for it: it copies
            // the node map's pointers (about 0.1 s at 500k znodes). Encoding, the longer part,
            // runs on a blocking thread while writes go on; they copy a node only if the view
            // still holds it.
            let started = std::time::Instant::now();
            let view = self.tree.snapshot_view();
            let view_ms = started.elapsed().as_millis() as u64;
            let (index, term) = (self.applied_index, self.applied_term);
            let raft = self.raft.clone();
            tokio::task::spawn_blocking(move || {
                let started = std::time::Instant::now();
                let data = view.encode();
                drop(view);
                let ms = started.elapsed().as_millis() as u64;
                info!(index, bytes = data.len(), view_ms, ms, "snapshot taken");
                if let Err(e) = raft.save_snapshot(index, term, data) {
                    warn!(error = %e, "snapshot not saved");
                }
            });
            self.last_snapshot_index = index;
        }
    }
}
