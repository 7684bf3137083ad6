//! Session liveness: when each session expires if nothing more is heard from it.
//!
//! ZooKeeper groups deadlines into buckets of `tickTime` width, so a session expires between
//! `timeout` and `timeout + tickTime` after its last frame (`docs/protocol.md` §11.1). The
//! tracker does the same rounding. It only decides *when*; the expiry itself is a
//! `CloseSession` log entry that the core proposes, so every replica deletes the same
//! ephemerals at the same zxid.

use std::collections::BTreeSet;
use std::fmt;

use tokio::time::{Duration, Instant};

/// A session's id, as the server handles it. The protocol crates (`wire`, `znode-tree`) keep
/// a bare `i64`; the core converts at its edge. Displayed as ZooKeeper logs it: `0x` and hex
/// (two's complement for the negative ids a server id of 128 or more makes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SessionId(pub i64);

impl SessionId {
    /// "No session": a connection before its handshake, an entry the server itself proposes.
    pub const NONE: SessionId = SessionId(0);
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

#[derive(Debug)]
pub struct SessionTracker {
    tick: Duration,
    origin: Instant,
    deadlines: rustc_hash::FxHashMap<SessionId, Instant>,
    /// (deadline, session) in deadline order, so finding the due ones is cheap.
    by_deadline: BTreeSet<(Instant, SessionId)>,
    /// Sessions whose CloseSession has been proposed: frames for them are ignored.
    closing: BTreeSet<SessionId>,
}

impl SessionTracker {
    pub fn new(tick: Duration) -> SessionTracker {
        SessionTracker {
            tick: tick.max(Duration::from_millis(1)),
            origin: Instant::now(),
            deadlines: Default::default(),
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
    pub fn touch(&mut self, session: SessionId, timeout_ms: i32, now: Instant) {
        if self.closing.contains(&session) {
            return;
        }
        let deadline = self.bucket(now, Duration::from_millis(timeout_ms.max(0) as u64));
        // Deadlines are whole ticks, so most frames of a busy session land in the bucket it
        // already has: nothing to move in the deadline order then.
        if let Some(old) = self.deadlines.insert(session, deadline) {
            if old == deadline {
                return;
            }
            self.by_deadline.remove(&(old, session));
        }
        self.by_deadline.insert((deadline, session));
    }

    /// Sessions whose deadline has passed. They are marked closing and leave the tracker.
    pub fn take_expired(&mut self, now: Instant) -> Vec<SessionId> {
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
    pub fn mark_closing(&mut self, session: SessionId) {
        if let Some(d) = self.deadlines.remove(&session) {
            self.by_deadline.remove(&(d, session));
        }
        self.closing.insert(session);
    }

    /// Forgets every close in flight: their proposals may have been dropped with a change of
    /// leader, and the sessions are alive until a CloseSession applies (the leader's timers
    /// expire them again if they are really gone).
    pub fn clear_closing(&mut self) {
        self.closing.clear();
    }

    pub fn is_closing(&self, session: SessionId) -> bool {
        self.closing.contains(&session)
    }

    /// The session is gone from the tree: forget it entirely.
    pub fn forget(&mut self, session: SessionId) {
        if let Some(d) = self.deadlines.remove(&session) {
            self.by_deadline.remove(&(d, session));
        }
        self.closing.remove(&session);
    }

    pub fn deadline(&self, session: SessionId) -> Option<Instant> {
        self.deadlines.get(&session).copied()
    }

    /// Time left for every tracked session, for the restart checkpoint.
    pub fn remaining(&self, now: Instant) -> Vec<(SessionId, Duration)> {
        let mut v: Vec<(SessionId, Duration)> = self
            .deadlines
            .iter()
            .map(|(s, d)| (*s, d.saturating_duration_since(now)))
            .collect();
        v.sort_unstable();
        v
    }

    /// Starts a session's clock with `left` to go (a recovered session), rounded to a tick
    /// like any other deadline.
    pub fn resume(&mut self, session: SessionId, left: Duration, now: Instant) {
        self.touch(session, left.as_millis().min(i32::MAX as u128) as i32, now);
    }
}

/// The sessions' remaining time, kept beside the raft log so that a restart resumes each
/// session's clock where it stood instead of granting every session a fresh timeout.
///
/// Text, one `<session id hex> <remaining ms>` line per session. It is written about once a
/// second and at shut-down; after a crash it is at most that old, so a session can get up to
/// a second more than it had. Time while the server is down is not counted: clients cannot
/// reach a stopped server, so charging them for its outage would expire every session of an
/// outage longer than their timeout.
pub mod checkpoint {
    use std::collections::HashMap;
    use std::io::Write;
    use std::path::Path;

    use tokio::time::Duration;

    use super::SessionId;

    pub const FILE: &str = "sessions.remaining";

    pub fn write(dir: &Path, remaining: &[(SessionId, Duration)]) -> std::io::Result<()> {
        let mut text = String::with_capacity(remaining.len() * 28);
        for (session, left) in remaining {
            text.push_str(&format!("{:x} {}\n", session.0 as u64, left.as_millis()));
        }
        let tmp = dir.join(format!("{FILE}.tmp"));
        let mut f = consensus::private_fs::create_file(&tmp)?;
        f.write_all(text.as_bytes())?;
        drop(f);
        std::fs::rename(tmp, dir.join(FILE))
    }

    /// Missing or unreadable lines are skipped: such a session simply gets a full timeout.
    pub fn read(dir: &Path) -> HashMap<SessionId, Duration> {
        let Ok(text) = std::fs::read_to_string(dir.join(FILE)) else {
            return HashMap::new();
        };
        text.lines()
            .filter_map(|l| {
                let (id, ms) = l.split_once(' ')?;
                Some((
                    SessionId(u64::from_str_radix(id, 16).ok()? as i64),
                    Duration::from_millis(ms.parse().ok()?),
                ))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn s(id: i64) -> SessionId {
        SessionId(id)
    }

    #[tokio::test(start_paused = true)]
    async fn session_expires_between_timeout_and_timeout_plus_tick() {
        let mut t = SessionTracker::new(Duration::from_millis(2000));
        let start = Instant::now();
        t.touch(s(7), 4000, start);
        assert!(t
            .take_expired(start + Duration::from_millis(3999))
            .is_empty());
        let d = t.deadline(s(7)).unwrap();
        assert!(
            d >= start + Duration::from_millis(4000) && d <= start + Duration::from_millis(6000)
        );
        assert_eq!(t.take_expired(d), vec![s(7)]);
        assert!(t.is_closing(s(7)));
    }

    #[test]
    fn checkpoint_round_trips_and_skips_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let v = vec![
            (s(-5), Duration::from_millis(1234)),
            (s(0x0100_0000_0000_0001), Duration::from_millis(0)),
        ];
        checkpoint::write(dir.path(), &v).unwrap();
        let back = checkpoint::read(dir.path());
        assert_eq!(back.len(), 2);
        assert_eq!(back[&s(-5)], Duration::from_millis(1234));
        assert_eq!(back[&s(0x0100_0000_0000_0001)], Duration::ZERO);
        std::fs::write(dir.path().join(checkpoint::FILE), "zz 1\n7 x\n8 9\n").unwrap();
        let back = checkpoint::read(dir.path());
        assert_eq!(
            back.into_iter().collect::<Vec<_>>(),
            vec![(s(8), Duration::from_millis(9))]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn touch_moves_the_deadline_and_closing_sessions_stay_closed() {
        let mut t = SessionTracker::new(Duration::from_millis(100));
        let start = Instant::now();
        t.touch(s(1), 1000, start);
        t.touch(s(1), 1000, start + Duration::from_millis(900));
        assert!(t
            .take_expired(start + Duration::from_millis(1500))
            .is_empty());
        assert_eq!(
            t.take_expired(start + Duration::from_millis(2100)),
            vec![s(1)]
        );
        t.touch(s(1), 1000, start + Duration::from_millis(2200));
        assert!(
            t.deadline(s(1)).is_none(),
            "a closing session is not revived by a late frame"
        );
        t.forget(s(1));
        assert!(!t.is_closing(s(1)));
    }

    /// Touches within one tick keep the deadline they had (and skip the reordering); the first
    /// touch in the next tick moves it, and expiry follows the latest deadline, one entry per
    /// session.
    #[tokio::test(start_paused = true)]
    async fn touches_within_a_tick_keep_the_deadline_and_a_later_tick_moves_it() {
        let mut t = SessionTracker::new(Duration::from_millis(100));
        let start = Instant::now();
        t.touch(s(1), 1000, start);
        t.touch(s(2), 1000, start);
        let first = t.deadline(s(1)).unwrap();
        for ms in [10, 40, 90] {
            t.touch(s(1), 1000, start + Duration::from_millis(ms));
            assert_eq!(t.deadline(s(1)), Some(first), "touched {ms} ms in");
        }
        t.touch(s(1), 1000, start + Duration::from_millis(150));
        let moved = t.deadline(s(1)).unwrap();
        assert_eq!(moved - first, Duration::from_millis(100));
        assert_eq!(t.by_deadline.len(), 2);
        assert_eq!(t.take_expired(first), vec![s(2)]);
        assert!(t.take_expired(moved - Duration::from_millis(1)).is_empty());
        assert_eq!(t.take_expired(moved), vec![s(1)]);
        assert!(t.by_deadline.is_empty());
    }

    #[test]
    fn a_session_id_displays_as_zookeeper_logs_it() {
        assert_eq!(s(0x1f).to_string(), "0x1f");
        assert_eq!(s(-1).to_string(), "0xffffffffffffffff");
        assert_eq!(
            s(0x0100_0000_0000_0001).to_string(),
            format!("{:#x}", 0x0100_0000_0000_0001i64)
        );
    }
}
