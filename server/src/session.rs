//! Session liveness: when each session expires if nothing more is heard from it.
//!
//! ZooKeeper groups deadlines into buckets of `tickTime` width, so a session expires between
//! `timeout` and `timeout + tickTime` after its last frame (`zk-protocol.md` §11.1). The
//! tracker does the same rounding. It only decides *when*; the expiry itself is a
//! `CloseSession` log entry that the core proposes, so every replica deletes the same
//! ephemerals at the same zxid.

use std::collections::{BTreeSet, HashMap};

use tokio::time::{Duration, Instant};

#[derive(Debug)]
pub struct SessionTracker {
    tick: Duration,
    origin: Instant,
    deadlines: HashMap<i64, Instant>,
    /// (deadline, session) in deadline order, so finding the due ones is cheap.
    by_deadline: BTreeSet<(Instant, i64)>,
    /// Sessions whose CloseSession has been proposed: frames for them are ignored.
    closing: BTreeSet<i64>,
}

impl SessionTracker {
    pub fn new(tick: Duration) -> SessionTracker {
        SessionTracker {
            tick: tick.max(Duration::from_millis(1)),
            origin: Instant::now(),
            deadlines: HashMap::new(),
            by_deadline: BTreeSet::new(),
            closing: BTreeSet::new(),
        }
    }

    /// `expiryTime = (floor((now + timeout) / tick) + 1) × tick`, measured from the
    /// tracker's origin.
    fn bucket(&self, now: Instant, timeout: Duration) -> Instant {
        let since = (now + timeout).saturating_duration_since(self.origin);
        let tick = self.tick.as_millis().max(1);
        let buckets = since.as_millis() / tick + 1;
        self.origin + Duration::from_millis((buckets * tick) as u64)
    }

    /// Records activity on a session: its deadline moves to `now + timeout` (rounded up to
    /// the next tick). A closing session is not revived.
    pub fn touch(&mut self, session: i64, timeout_ms: i32, now: Instant) {
        if self.closing.contains(&session) {
            return;
        }
        let deadline = self.bucket(now, Duration::from_millis(timeout_ms.max(0) as u64));
        if let Some(old) = self.deadlines.insert(session, deadline) {
            self.by_deadline.remove(&(old, session));
        }
        self.by_deadline.insert((deadline, session));
    }

    /// Sessions whose deadline has passed. They are marked closing and leave the tracker.
    pub fn take_expired(&mut self, now: Instant) -> Vec<i64> {
        let mut due = Vec::new();
        while let Some(&(deadline, session)) = self.by_deadline.first() {
            if deadline > now {
                break;
            }
            self.by_deadline.pop_first();
            self.deadlines.remove(&session);
            self.closing.insert(session);
            due.push(session);
        }
        due
    }

    /// Marks a session closing (explicit closeSession): no more touches revive it.
    pub fn mark_closing(&mut self, session: i64) {
        if let Some(d) = self.deadlines.remove(&session) {
            self.by_deadline.remove(&(d, session));
        }
        self.closing.insert(session);
    }

    pub fn is_closing(&self, session: i64) -> bool {
        self.closing.contains(&session)
    }

    /// The session is gone from the tree: forget it entirely.
    pub fn forget(&mut self, session: i64) {
        if let Some(d) = self.deadlines.remove(&session) {
            self.by_deadline.remove(&(d, session));
        }
        self.closing.remove(&session);
    }

    pub fn deadline(&self, session: i64) -> Option<Instant> {
        self.deadlines.get(&session).copied()
    }

    pub fn len(&self) -> usize {
        self.deadlines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.deadlines.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn session_expires_between_timeout_and_timeout_plus_tick() {
        let mut t = SessionTracker::new(Duration::from_millis(2000));
        let start = Instant::now();
        t.touch(7, 4000, start);
        assert!(t.take_expired(start + Duration::from_millis(3999)).is_empty());
        let d = t.deadline(7).unwrap();
        assert!(d >= start + Duration::from_millis(4000) && d <= start + Duration::from_millis(6000));
        assert_eq!(t.take_expired(d), vec![7]);
        assert!(t.is_closing(7));
    }

    #[tokio::test(start_paused = true)]
    async fn touch_moves_the_deadline_and_closing_sessions_stay_closed() {
        let mut t = SessionTracker::new(Duration::from_millis(100));
        let start = Instant::now();
        t.touch(1, 1000, start);
        t.touch(1, 1000, start + Duration::from_millis(900));
        assert!(t.take_expired(start + Duration::from_millis(1500)).is_empty());
        assert_eq!(t.take_expired(start + Duration::from_millis(2100)), vec![1]);
        t.touch(1, 1000, start + Duration::from_millis(2200));
        assert!(t.deadline(1).is_none(), "a closing session is not revived by a late frame");
        t.forget(1);
        assert!(!t.is_closing(1));
    }
}
