//! The sessions this member knows of: their clocks (`SessionTracker`), which connection holds each
//! established one, the ones being created, the time left from the restart checkpoint, what a
//! follower still has to report to its leader, and where new ids come from.
//!
//! A session's life as this room sees it:
//!
//! ```text
//!  ConnectRequest(0) ─ allocate ─▶ connecting ─ CreateSession applied: established ─▶ held by a conn
//!        frames: touch (a follower also reports it to the leader) ──▶ deadline moves
//!        ticker: expire_due (leader only) ─▶ CloseSession proposed, session closing
//!        CloseSession applied: closed ─▶ forgotten, its connection closed
//!  new leader, installed snapshot: restart_all (every timer afresh, as ZooKeeper's new leader)
//! ```
//!
//! Only the leader's clocks expire anyone; a follower's run too (they are the leader's if it takes
//! over from its own start) but decide nothing.

use std::collections::HashMap;

use rustc_hash::FxHashMap;
use tokio::time::{Duration, Instant};
use tracing::{info, warn};

use znode_tree::{Tree, Txn};

use super::submit::stamp;
use super::Core;
use crate::config::Config;
use crate::msg::ConnId;
use crate::session::{checkpoint, SessionId, SessionTracker};

/// How often the sessions' remaining time is saved for a restart (see `session::checkpoint`).
pub(super) const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// ZooKeeper's first session id: the server id in the top byte, then milliseconds since
/// the epoch shifted into the middle (`SessionTrackerImpl.initializeNextSessionId`), so ids
/// stay unique across restarts without persisting a counter.
pub(super) fn initial_session_id(server_id: u64, now_ms: i64) -> i64 {
    let time_part = ((now_ms as u64) << 24) >> 8;
    ((server_id << 56) | time_part) as i64
}

/// Every session's state on this member, apart from what the tree replicates (id, timeout,
/// password, ephemerals).
pub(super) struct Sessions {
    /// Deadlines, and the sessions whose close is in flight.
    tracker: SessionTracker,
    /// The deadline buckets' width (tickTime), for a tracker started afresh.
    tick: Duration,
    /// Which connection holds each established local session.
    held: FxHashMap<SessionId, ConnId>,
    /// New sessions whose CreateSession entry is in flight, and the connection waiting for each.
    connecting: FxHashMap<SessionId, ConnId>,
    /// Reconnects in an ensemble whose `Txn::Attach` entry is in flight, and the connection
    /// waiting for each: answered once it applies (`Core::attached`).
    attaching: FxHashMap<SessionId, ConnId>,
    /// Remaining time read from the checkpoint, for sessions the replay has not created yet.
    resume_left: HashMap<SessionId, Duration>,
    /// Sessions heard from since the last touch a follower sent its leader, with their timeouts.
    touched: HashMap<SessionId, i32>,
    /// The next session id to try (see `initial_session_id`).
    next_id: i64,
}

impl Sessions {
    /// The sessions of a recovered `tree`: each resumes with the time it had left at the last
    /// checkpoint; one missing from it (created just before a crash) gets a full timeout.
    /// Sessions created in the log after the snapshot get theirs when the replay applies them
    /// (`established`).
    pub(super) fn recover(cfg: &Config, tree: &Tree, wall_ms: i64, now: Instant) -> Sessions {
        let tick = Duration::from_millis(cfg.tick_time_ms as u64);
        let mut tracker = SessionTracker::new(tick);
        let mut resume_left = checkpoint::read(&cfg.raft_dir());
        for s in tree.sessions() {
            let id = SessionId(s.id);
            let full = Duration::from_millis(s.timeout_ms.max(0) as u64);
            let left = resume_left.remove(&id).unwrap_or(full).min(full);
            tracker.resume(id, left, now);
        }
        let server_id = cfg.my_id.unwrap_or(1).min(254);
        Sessions {
            tracker,
            tick,
            held: FxHashMap::default(),
            connecting: FxHashMap::default(),
            attaching: FxHashMap::default(),
            resume_left,
            touched: HashMap::new(),
            next_id: initial_session_id(server_id, wall_ms),
        }
    }

    /// A new id: not in the tree, not being created, neither 0 ("no session") nor `i64::MIN`
    /// (containers' owner).
    pub(super) fn allocate(&mut self, tree: &Tree) -> SessionId {
        loop {
            let id = self.next_id;
            self.next_id = self.next_id.wrapping_add(1);
            if id != 0
                && id != i64::MIN
                && tree.session(id).is_none()
                && !self.connecting.contains_key(&SessionId(id))
            {
                return SessionId(id);
            }
        }
    }

    /// `conn` waits for `session`'s CreateSession to apply.
    pub(super) fn connecting(&mut self, session: SessionId, conn: ConnId) {
        self.connecting.insert(session, conn);
    }

    /// The CreateSession of `session` was not proposed after all.
    pub(super) fn not_connecting(&mut self, session: SessionId) {
        self.connecting.remove(&session);
    }

    /// A reconnect of `session` on `conn` waits for its `Txn::Attach` to apply.
    pub(super) fn attaching(&mut self, session: SessionId, conn: ConnId) {
        self.attaching.insert(session, conn);
    }

    /// `session`'s attach applied: the connection that waited for it, if it still does.
    pub(super) fn attached(&mut self, session: SessionId) -> Option<ConnId> {
        self.attaching.remove(&session)
    }

    /// Every session being created or attached, forgotten: their connections, to be refused.
    pub(super) fn take_connecting(&mut self) -> Vec<ConnId> {
        let mut conns: Vec<ConnId> = self.connecting.drain().map(|(_, conn)| conn).collect();
        conns.extend(self.attaching.drain().map(|(_, conn)| conn));
        conns
    }

    /// `session`'s CreateSession applied: its clock starts (from the checkpoint at a replay), and
    /// the connection that asked for it, if it is here, holds it now.
    pub(super) fn established(
        &mut self,
        session: SessionId,
        timeout_ms: i32,
        now: Instant,
    ) -> Option<ConnId> {
        let full = Duration::from_millis(timeout_ms.max(0) as u64);
        match self.resume_left.remove(&session) {
            // Replayed at start-up: the clock goes on from the checkpoint.
            Some(left) => self.tracker.resume(session, left.min(full), now),
            None => self.tracker.touch(session, timeout_ms, now),
        }
        let conn = self.connecting.remove(&session)?;
        self.held.insert(session, conn);
        Some(conn)
    }

    /// `session`'s CloseSession applied: it is gone. Returns the connection that held it.
    pub(super) fn closed(&mut self, session: SessionId) -> Option<ConnId> {
        self.tracker.forget(session);
        self.held.remove(&session)
    }

    /// The connection holding `session` here, if any.
    pub(super) fn holder(&self, session: SessionId) -> Option<ConnId> {
        self.held.get(&session).copied()
    }

    /// `conn` holds `session` now; returns the other connection that held it (only one does: the
    /// caller closes the older).
    pub(super) fn hold(&mut self, session: SessionId, conn: ConnId) -> Option<ConnId> {
        self.held.insert(session, conn).filter(|old| *old != conn)
    }

    /// `conn` lets go of `session` (it closed, or is closing).
    pub(super) fn release(&mut self, session: SessionId, conn: ConnId) {
        if self.held.get(&session) == Some(&conn) {
            self.held.remove(&session);
        }
    }

    /// `conn` is gone: it holds nothing and waits for nothing.
    pub(super) fn conn_closed(&mut self, session: SessionId, conn: ConnId) {
        self.release(session, conn);
        if self.connecting.get(&session) == Some(&conn) {
            self.connecting.remove(&session);
        }
        if self.attaching.get(&session) == Some(&conn) {
            self.attaching.remove(&session);
        }
    }

    /// Activity on `session`: its deadline moves; `report` (a follower) keeps it for the next touch
    /// sent to the leader. A closing session is not revived.
    pub(super) fn touch(
        &mut self,
        session: SessionId,
        timeout_ms: i32,
        now: Instant,
        report: bool,
    ) {
        self.tracker.touch(session, timeout_ms, now);
        if report {
            self.touched.insert(session, timeout_ms);
        }
    }

    /// The sessions to report to the leader, in id order; none are kept.
    pub(super) fn take_touched(&mut self) -> Vec<(SessionId, i32)> {
        let mut sessions: Vec<(SessionId, i32)> = self.touched.drain().collect();
        sessions.sort_unstable();
        sessions
    }

    /// What was heard since the last report goes nowhere (the leader changed).
    pub(super) fn forget_touched(&mut self) {
        self.touched.clear();
    }

    /// The leader hears that another member's client is alive. Sessions it does not know, or is
    /// closing, stay as they are.
    pub(super) fn touched_elsewhere(
        &mut self,
        tree: &Tree,
        session: SessionId,
        timeout_ms: i32,
        now: Instant,
    ) {
        if tree.session(session.0).is_some() && !self.tracker.is_closing(session) {
            self.tracker.touch(session, timeout_ms, now);
        }
    }

    /// The sessions whose deadline has passed, now closing; ones the tree no longer has are
    /// forgotten instead.
    pub(super) fn expire_due(&mut self, tree: &Tree, now: Instant) -> Vec<SessionId> {
        let mut due = self.tracker.take_expired(now);
        due.retain(|session| {
            let live = tree.session(session.0).is_some();
            if !live {
                self.tracker.forget(*session);
            }
            live
        });
        due
    }

    /// Every session in the tree starts its timeout afresh from `now`: a leader that takes over
    /// never saw the sessions' activity (ZooKeeper's new leader does the same). Closing sessions
    /// stay closing.
    pub(super) fn restart_all(&mut self, tree: &Tree, now: Instant) {
        for s in tree.sessions() {
            self.tracker.touch(SessionId(s.id), s.timeout_ms, now);
        }
    }

    /// After a snapshot replaced the tree: every clock starts afresh from it, closes in flight
    /// included. Returns the connections waiting for a session's creation, to be refused.
    pub(super) fn reset(&mut self, tree: &Tree, now: Instant) -> Vec<ConnId> {
        let refused = self.take_connecting();
        self.tracker = SessionTracker::new(self.tick);
        self.restart_all(tree, now);
        refused
    }

    /// A client asked to close `session`: frames for it are ignored from now on.
    pub(super) fn mark_closing(&mut self, session: SessionId) {
        self.tracker.mark_closing(session);
    }

    /// Closes in flight may have been dropped (a change of leader, a broken link): the sessions are
    /// alive until a CloseSession applies.
    pub(super) fn clear_closing(&mut self) {
        self.tracker.clear_closing();
    }

    pub(super) fn is_closing(&self, session: SessionId) -> bool {
        self.tracker.is_closing(session)
    }

    pub(super) fn deadline(&self, session: SessionId) -> Option<Instant> {
        self.tracker.deadline(session)
    }

    /// Time left for every session with a clock, for the restart checkpoint.
    pub(super) fn remaining(&self, now: Instant) -> Vec<(SessionId, Duration)> {
        self.tracker.remaining(now)
    }
}

impl Core {
    /// A client's session was heard from: its clock restarts; a follower tells the leader at the
    /// next tick.
    pub(super) fn touch_session(&mut self, session: SessionId, timeout_ms: i32, now: Instant) {
        let report = self.ensemble.is_some() && !self.role.is_leader;
        self.sessions.touch(session, timeout_ms, now, report);
    }

    /// The leader hears that another member's clients are alive.
    pub(super) fn peer_touch(&mut self, sessions: Vec<(i64, i32)>) {
        if !self.role.is_leader {
            return;
        }
        let now = Instant::now();
        for (id, timeout) in sessions {
            self.sessions
                .touched_elsewhere(&self.tree, SessionId(id), timeout, now);
        }
    }

    /// On the ticker, on the leader: proposes the close of every session past its deadline.
    pub(super) fn expire_sessions(&mut self, now: Instant) {
        if !self.role.is_leader {
            return;
        }
        for session in self.sessions.expire_due(&self.tree, now) {
            info!(%session, "session timed out; proposing its close");
            let entry = stamp(
                session,
                0,
                self.wall.now_ms(),
                Vec::new(),
                Txn::CloseSession,
            );
            // A refusal is logged by `propose`.
            let _ = self.propose(&entry);
        }
    }

    /// Saves the sessions' remaining time on a blocking thread (see `session::checkpoint`).
    pub(super) fn write_checkpoint(&self, now: Instant) {
        let dir = self.cfg.raft_dir();
        let remaining = self.sessions.remaining(now);
        tokio::task::spawn_blocking(move || {
            if let Err(e) = checkpoint::write(&dir, &remaining) {
                warn!(error = %e, "session checkpoint not written");
            }
        });
    }
}
