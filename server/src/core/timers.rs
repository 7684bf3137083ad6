//! What the core does on its ticker: expire sessions, sweep containers and TTL nodes (both
//! only on the leader, as proposals), and save the sessions' remaining time for a restart.

use tokio::time::{Duration, Instant};
use tracing::{debug, info, warn};

use znode_tree::Txn;

use super::requests::Pending;
use super::submit::stamp;
use super::{now_ms, Core};
use crate::session::checkpoint;

/// How often the sessions' remaining time is saved for a restart (see `session::checkpoint`).
pub(super) const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

impl Core {
    pub(super) fn expire_sessions(&mut self, now: Instant) {
        if !self.is_leader {
            return;
        }
        for session_id in self.tracker.take_expired(now) {
            if self.tree.session(session_id).is_none() {
                self.tracker.forget(session_id);
                continue;
            }
            info!(
                session = format_args!("{:#x}", session_id),
                "session timed out; proposing its close"
            );
            let entry = stamp(session_id, 0, now_ms(), Vec::new(), Txn::CloseSession);
            // A refusal is logged by `propose`.
            let _ = self.propose(&entry);
        }
    }

    /// The leader proposes the deletion of empty containers and TTL nodes that are due;
    /// the tree checks again at apply time, so a child created meanwhile keeps the node.
    pub(super) fn propose_expired_nodes(&mut self) {
        if !self.is_leader {
            return;
        }
        let now = now_ms();
        for path in self.tree.expired_nodes(now) {
            let entry = stamp(0, 0, now, Vec::new(), Txn::DeleteExpired { path });
            // A refusal is logged by `propose`; the next sweep finds the node again.
            let _ = self.propose(&entry);
        }
    }

    /// raft-rs drops a ReadIndex silently in a few cases (a leader that has not committed in its
    /// term yet, no leader at the moment it arrives): a sync unanswered for two election timeouts
    /// asks again with a fresh context, so it cannot hang its connection forever.
    pub(super) fn retry_syncs(&mut self, now: Instant) {
        let (tick, election, _) = self.cfg.raft_timing();
        let patience = tick * election * 2;
        let mut stale = Vec::new();
        for (id, conn) in self.conns.iter() {
            for q in conn.queue.iter() {
                if let Pending::Sync {
                    ctx,
                    index: None,
                    asked,
                    ..
                } = &q.pending
                {
                    if now.saturating_duration_since(*asked) >= patience {
                        stale.push((*id, *ctx));
                    }
                }
            }
        }
        for (id, old) in stale {
            let ctx = self.next_read_ctx;
            self.next_read_ctx += 1;
            if let Some(conn) = self.conns.get_mut(&id) {
                for q in conn.queue.iter_mut() {
                    if let Pending::Sync { ctx: c, asked, .. } = &mut q.pending {
                        if *c == old {
                            *c = ctx;
                            *asked = now;
                        }
                    }
                }
            }
            debug!(ctx, "sync unanswered; asking for a read index again");
            if self.raft.read_index(ctx).is_err() {
                self.close_conn(id);
            }
        }
    }

    /// Saves the sessions' remaining time on a blocking thread (see `session::checkpoint`).
    pub(super) fn write_checkpoint(&self, now: Instant) {
        let dir = self.cfg.raft_dir();
        let remaining = self.tracker.remaining(now);
        tokio::task::spawn_blocking(move || {
            if let Err(e) = checkpoint::write(&dir, &remaining) {
                warn!(error = %e, "session checkpoint not written");
            }
        });
    }
}
