//! The core's ticker: what runs on it and how often. Each room does its own part (the sessions'
//! clocks, touches, syncs and revalidations asked again, membership, snapshots); this room sweeps
//! containers and TTL nodes (only on the leader, as proposals) and says when the checkpoint and
//! the sweep are due.

use tokio::time::{Duration, Instant};

use znode_tree::Txn;

use super::sessions::CHECKPOINT_EVERY;
use super::submit::stamp;
use super::Core;
use crate::config::Config;
use crate::session::SessionId;

/// When the ticker's less frequent work is next due.
pub(super) struct Schedule {
    container_every: Duration,
    next_container_check: Instant,
    next_checkpoint: Instant,
}

impl Schedule {
    pub(super) fn new(cfg: &Config, now: Instant) -> Schedule {
        let container_every = Duration::from_millis(cfg.container_check_interval_ms.max(100));
        Schedule {
            container_every,
            next_container_check: now + container_every,
            next_checkpoint: now + CHECKPOINT_EVERY,
        }
    }
}

impl Core {
    /// The core's tick: half of tickTime, between 10 and 500 ms.
    pub(super) fn tick_every(&self) -> Duration {
        Duration::from_millis((self.cfg.tick_time_ms as u64 / 2).clamp(10, 500))
    }

    /// One tick of the core's ticker.
    pub(super) fn on_tick(&mut self, now: Instant, schedule: &mut Schedule) {
        self.expire_sessions(now);
        self.send_touches();
        self.ensure_membership_published();
        self.reconcile_membership();
        self.finish_waiting_reconfigs();
        self.retry_syncs(now);
        self.retry_revalidations(now);
        // A snapshot that waited for the previous one's encoding is due even if no write follows
        // (the end of a fill).
        self.maybe_snapshot();
        if now >= schedule.next_container_check {
            schedule.next_container_check = now + schedule.container_every;
            self.propose_expired_nodes();
        }
        if now >= schedule.next_checkpoint {
            schedule.next_checkpoint = now + CHECKPOINT_EVERY;
            self.write_checkpoint(now);
        }
    }

    /// The leader proposes the deletion of empty containers and TTL nodes that are due;
    /// the tree checks again at apply time, so a child created meanwhile keeps the node.
    pub(super) fn propose_expired_nodes(&mut self) {
        if !self.role.is_leader {
            return;
        }
        let now = self.wall.now_ms();
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
}
