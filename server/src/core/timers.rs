//! The core's ticker: what runs on it and how often. Each room does its own part (the sessions'
//! clocks, touches, syncs and revalidations asked again, membership, snapshots); this room sweeps
//! containers and TTL nodes (only on the leader, as proposals) and says when the checkpoint and
//! the sweep are due.

use std::collections::HashMap;

use tokio::time::{Duration, Instant};

use znode_tree::Txn;

use super::sessions::CHECKPOINT_EVERY;
use super::submit::stamp;
use super::Core;
use crate::session::SessionId;

/// The shortest sweep period: `znode.container.checkIntervalMs` below it (Curator's tests ask for
/// 1 ms) sweeps every 10 ms, which keeps an idle server's wake-ups bounded.
const SWEEP_FLOOR: Duration = Duration::from_millis(10);

/// A deletion proposed by a sweep is not proposed again for this long: the sweep runs every few
/// milliseconds when asked to, and a proposal takes a commit round to apply.
const SWEEP_REPROPOSE_AFTER: Duration = Duration::from_secs(1);

/// When the ticker's less frequent work is next due, and the sweep's own state.
pub(super) struct Schedule {
    next_checkpoint: Instant,
    /// Paths whose deletion a sweep proposed, and when: skipped by the sweeps that follow until
    /// `SWEEP_REPROPOSE_AFTER` has passed (the proposal may have been lost with a leader change).
    swept: HashMap<String, Instant>,
    /// The earliest moment the next deletion may be proposed (`znode.container.maxPerMinute`).
    pub(super) next_deletion: Option<Instant>,
    /// A sweep left candidates for later because of that spacing: sweep again at `next_deletion`.
    pub(super) held: bool,
}

impl Schedule {
    pub(super) fn new(now: Instant) -> Schedule {
        Schedule {
            next_checkpoint: now + CHECKPOINT_EVERY,
            swept: HashMap::new(),
            next_deletion: None,
            held: false,
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
        if now >= schedule.next_checkpoint {
            schedule.next_checkpoint = now + CHECKPOINT_EVERY;
            self.write_checkpoint(now);
        }
    }

    /// How often the container and TTL sweep runs: `znode.container.checkIntervalMs`, as in
    /// ZooKeeper, but not below `SWEEP_FLOOR`. Its own timer, not the tick: ZooKeeper's
    /// ContainerManager honours short intervals, and clients' tests count on it (a container reaped
    /// one interval after its last child went, not one tick).
    pub(super) fn sweep_every(&self) -> Duration {
        Duration::from_millis(self.cfg.container_check_interval_ms).max(SWEEP_FLOOR)
    }

    /// The gap ZooKeeper's ContainerManager keeps between two deletions: a minute divided by
    /// `znode.container.maxPerMinute` (whole milliseconds, as its long division).
    fn deletion_spacing(&self) -> Duration {
        Duration::from_millis(60_000 / u64::from(self.cfg.container_max_per_minute.max(1)))
    }

    /// The leader proposes the deletion of empty containers and TTL nodes that are due (and,
    /// with `znode.container.maxNeverUsedIntervalMs`, of containers that never had a child),
    /// one per `deletion_spacing`: candidates left when the next one is not allowed yet wait for
    /// a sweep at that moment (`held`). The tree checks again at apply time, so a child created
    /// meanwhile keeps the node.
    pub(super) fn propose_expired_nodes(&mut self, now: Instant, schedule: &mut Schedule) {
        schedule.held = false;
        if !self.role.is_leader {
            schedule.swept.clear();
            return;
        }
        let never_used =
            i64::try_from(self.cfg.container_max_never_used_interval_ms).unwrap_or(i64::MAX);
        let spacing = self.deletion_spacing();
        schedule
            .swept
            .retain(|_, at| now.saturating_duration_since(*at) < SWEEP_REPROPOSE_AFTER);
        let wall = self.wall.now_ms();
        for path in self.tree.expired_nodes_with(wall, never_used) {
            if schedule.swept.contains_key(&path) {
                continue;
            }
            if schedule.next_deletion.is_some_and(|at| now < at) {
                schedule.held = true;
                break;
            }
            if !spacing.is_zero() {
                schedule.next_deletion = Some(now + spacing);
            }
            schedule.swept.insert(path.clone(), now);
            let entry = stamp(
                SessionId::NONE,
                0,
                wall,
                Vec::new(),
                Txn::DeleteExpired { path },
            );
            // A refusal is logged by `propose`; a sweep after SWEEP_REPROPOSE_AFTER finds the node again.
            let _ = self.propose(&entry);
        }
    }
}
