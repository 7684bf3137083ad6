//! What the core does on its ticker besides the sessions' clocks (`sessions`): sweep containers
//! and TTL nodes (only on the leader, as proposals), and ask again for syncs raft dropped.

use tokio::time::Instant;
use tracing::debug;

use znode_tree::Txn;

use super::requests::Pending;
use super::submit::stamp;
use super::{now_ms, Core};
use crate::session::SessionId;

impl Core {
    /// The leader proposes the deletion of empty containers and TTL nodes that are due;
    /// the tree checks again at apply time, so a child created meanwhile keeps the node.
    pub(super) fn propose_expired_nodes(&mut self) {
        if !self.is_leader {
            return;
        }
        let now = now_ms();
        for path in self.tree.expired_nodes(now) {
            let entry = stamp(
                SessionId::NONE,
                0,
                now,
                Vec::new(),
                Txn::DeleteExpired { path },
            );
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
}
