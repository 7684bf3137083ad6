//! The core as a member of an ensemble: who leads, whether this member serves, the link that
//! forwards writes and session activity to the leader, and what a change of leader does to the
//! work in flight.
//!
//! Rules (ZooKeeper's, made exact):
//! - A member serves clients only while it knows a leader, and once it holds that leader's state
//!   (`caught_up`). When raft reports no leader (the leader is gone, or this member is cut off
//!   from the quorum and its election timer ran out, which `Config::raft_timing` keeps well
//!   inside the smallest session timeout), every client
//!   connection with a session is closed, so a client cut off in a minority cannot go on
//!   believing it holds a lock that the majority is about to expire. New ConnectRequests, and
//!   reconnects still waiting for a leader's confirmation, are held for the next leader, within
//!   a bound (`handshake`). Four-letter words keep answering ("not currently serving").
//! - Any change of leader or term fails every write, sync and session creation in flight, by
//!   closing the client's connection: raft may have dropped them, or they may still commit; the
//!   client learns "connection lost" and decides. No silent retry, and no later reply overtakes a
//!   lost one, since the connection is gone.
//! - A new leader restarts every session's timer (as ZooKeeper's does): it never saw the
//!   sessions' activity on other members.
//! - Followers report their sessions' activity to the leader every core tick, as ZooKeeper's
//!   learners do with the PING packet's session table; only the leader expires sessions.

use std::collections::HashMap;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use consensus::PeerNet;
use wire::ops::data::GetDataRequest;
use wire::{Request, Response};
use znode_tree::{ReadCtx, Txn};

use super::conns::Conn;
use super::requests::Pending;
use super::submit::stamp;
use super::Core;
use crate::forward::LeaderLink;
use crate::forward_codec::ToLeader;
use crate::msg::{ConnId, CoreMsg};
use crate::session::SessionId;

/// Who leads, as raft last said; changed only by `role_changed`.
#[derive(Default)]
pub(super) struct Role {
    /// Whether this server leads: only a leader expires sessions and nodes.
    pub(super) is_leader: bool,
    /// The leader raft last named (0: none known) and its term.
    pub(super) leader_id: u64,
    pub(super) term: u64,
    /// When this member became leader (mntr's zk_leader_uptime; ensemble members only).
    pub(super) leader_since: Option<Instant>,
    /// The term in which this leader wrote (or found) the membership in /zookeeper/config.
    pub(super) membership_published: Option<u64>,
    /// Whether this process has followed another leader: a standalone server that leads from its
    /// own start keeps the checkpointed session clocks, one that took over restarts them.
    pub(super) followed_another: bool,
}

/// What the core keeps when it is a member of an ensemble (`None` for a standalone server).
pub struct Ensemble {
    pub(super) net: PeerNet,
    /// The core's own inbox, for the link tasks to report to.
    pub(super) core_tx: mpsc::Sender<CoreMsg>,
    /// The link to the current leader, opened at the first write after a leader is known.
    pub(super) link: Option<LeaderLink>,
    pub(super) next_epoch: u64,
    /// Reconnects on a follower waiting for a ReadIndex (ZooKeeper's follower asks its leader,
    /// `REVALIDATE`): the answer shows a live leader still leads, and the session may have been
    /// created on another member a moment ago. By ReadIndex context.
    pub(super) revalidating: HashMap<u64, Revalidation>,
    /// ConnectRequests that came while this member did not serve, waiting for it to serve again
    /// (`handshake`).
    pub(super) held: Vec<super::handshake::Held>,
    /// When this member last lost its leader (or started without one): a member leaderless for
    /// long is cut off, and refuses new connections at once instead of holding them.
    pub(super) leaderless_since: Instant,
}

/// A reconnect waiting to learn from a live leader whether its session exists.
pub(super) struct Revalidation {
    pub(super) conn: ConnId,
    pub(super) session_id: SessionId,
    pub(super) passwd: Option<Vec<u8>>,
    /// Set by the ReadIndex answer: check once applied reaches it.
    pub(super) index: Option<u64>,
    /// When its ReadIndex was last asked for (see `retry_revalidations`).
    pub(super) asked: Instant,
    /// Asked for before this member saw its leader commit in its term: raft-rs drops such a
    /// read silently, so it is asked again once this member applies an entry of the term.
    pub(super) early: bool,
    /// When the reconnect is given up (its session timeout: the client has moved on by then).
    pub(super) until: Instant,
    /// How long an unanswered ReadIndex waits before it is asked again.
    pub(super) patience: std::time::Duration,
}

impl Ensemble {
    pub fn new(net: PeerNet, core_tx: mpsc::Sender<CoreMsg>) -> Ensemble {
        Ensemble {
            net,
            core_tx,
            link: None,
            next_epoch: 1,
            revalidating: HashMap::new(),
            held: Vec::new(),
            leaderless_since: Instant::now(),
        }
    }

    /// Removes and returns the waiting revalidations `pick` selects.
    fn take_revalidations(&mut self, pick: impl Fn(&Revalidation) -> bool) -> Vec<Revalidation> {
        self.revalidating
            .extract_if(|_, r| pick(r))
            .map(|(_, r)| r)
            .collect()
    }
}

impl Core {
    /// Whether this member answers clients now: a standalone server always does; a member of an
    /// ensemble while it knows a leader and holds that leader's state (`caught_up`).
    pub(crate) fn serving(&self) -> bool {
        self.leader_known() && self.caught_up()
    }

    /// Whether this member knows a leader and is in the configuration, or was removed by a
    /// reconfig while serving and is still replicated to (`Membership::retained`): a member that
    /// does not may serve read-only sessions (`readonlymode.enabled`).
    pub(crate) fn leader_known(&self) -> bool {
        self.ensemble.is_none()
            || (self.role.leader_id != 0 && (!self.membership.removed || self.membership.retained))
    }

    /// Whether this member is an observer: a raft learner the configuration lists (a removed
    /// member raft still replicates to is a non-voting follower, as in ZooKeeper's `srvr`).
    pub(crate) fn is_observer(&self, is_learner: bool) -> bool {
        is_learner && !self.membership.removed
    }

    /// Whether this member has applied an entry of its leader's term: the leader's first entry of
    /// its term commits everything before it, so this member then holds every write acknowledged
    /// before the leader was elected. Until then (a member that joined empty and waits for the
    /// leader's snapshot, one that restarted behind, any member just after an election) it does
    /// not take new clients, as a ZooKeeper follower serves only once synced with its leader
    /// (UPTODATE): it would show them an older tree, and drop them when the snapshot installs
    /// (BUGS.md P8).
    fn caught_up(&self) -> bool {
        self.ensemble.is_none() || self.applied.term >= self.role.term
    }

    pub(crate) fn is_ensemble(&self) -> bool {
        self.ensemble.is_some()
    }

    /// Syncs waiting on this member (for mntr's zk_pending_syncs).
    pub(crate) fn pending_syncs(&self) -> usize {
        self.conns.pending_syncs()
    }

    /// How long this member has led (zero when it does not).
    pub(crate) fn leader_uptime(&self) -> std::time::Duration {
        self.role
            .leader_since
            .map_or(std::time::Duration::ZERO, |t| t.elapsed())
    }

    /// Sends a frame to the leader, opening the link if needed. `Some(epoch)` names the link it
    /// went on; `None` when there is no leader or the link cannot take it (then the link is
    /// treated as lost).
    pub(super) fn forward(&mut self, frame: ToLeader) -> Option<u64> {
        let leader = self.role.leader_id;
        let me = self.cfg.my_id.unwrap_or(0);
        let ens = self.ensemble.as_mut()?;
        if leader == 0 || leader == me {
            return None;
        }
        if ens.link.as_ref().map(|l| l.leader) != Some(leader) {
            let epoch = ens.next_epoch;
            ens.next_epoch += 1;
            ens.link = Some(LeaderLink::open(
                ens.net.clone(),
                leader,
                epoch,
                ens.core_tx.clone(),
            ));
        }
        let link = ens.link.as_ref().expect("opened above");
        let epoch = link.epoch;
        if link.send(&frame) {
            Some(epoch)
        } else {
            self.forward_lost(epoch);
            None
        }
    }

    /// On the core's ticker: send the sessions heard from since the last tick to the leader.
    pub(super) fn send_touches(&mut self) {
        if self.role.is_leader || self.ensemble.is_none() || self.role.leader_id == 0 {
            return;
        }
        let sessions = self.sessions.take_touched();
        if sessions.is_empty() {
            return;
        }
        let sessions = sessions.into_iter().map(|(s, t)| (s.0, t)).collect();
        self.forward(ToLeader::Touch(sessions));
    }

    /// The link `epoch` broke: whatever went on it has an unknown outcome.
    pub(super) fn forward_lost(&mut self, epoch: u64) {
        let Some(ens) = self.ensemble.as_mut() else {
            return;
        };
        if ens.link.as_ref().map(|l| l.epoch) == Some(epoch) {
            ens.link = None;
        }
        let lost = self.close_conns_where(|_, c| {
            c.queue
                .iter()
                .any(|q| matches!(q.pending, Pending::Write { link: Some(e), .. } if e == epoch))
        });
        if lost > 0 {
            warn!(
                epoch,
                connections = lost,
                "writes in flight to the leader were lost with the link; closed their connections"
            );
        }
        self.refuse_connecting();
        // A closeSession that went on the link may never commit: the session lives on.
        self.sessions.clear_closing();
    }

    /// Closes every client connection `pred` picks; returns how many.
    fn close_conns_where(&mut self, pred: impl Fn(ConnId, &Conn) -> bool) -> usize {
        let ids: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(id, c)| pred(**id, c))
            .map(|(id, _)| *id)
            .collect();
        for id in &ids {
            self.close_conn(*id);
        }
        ids.len()
    }

    /// Sessions being created, and reconnects whose attach is in flight, have an unknown fate:
    /// refuse their connections. (Reconnects waiting for a revalidation have nothing in flight: a
    /// new leader is asked again, see `ensemble_role_changed`, and they wait through a gap without
    /// a leader for as long as `handshake` holds a new ConnectRequest.)
    fn refuse_connecting(&mut self) {
        for id in self.sessions.take_connecting() {
            self.refuse_connection(id);
        }
    }

    /// Raft's view of the leader changed.
    pub(super) fn role_changed(&mut self, is_leader: bool, leader_id: u64, term: u64) {
        if self.ensemble.is_some() {
            self.ensemble_role_changed(is_leader, leader_id, term);
            return;
        }
        self.role.leader_id = leader_id;
        self.role.term = term;
        if !is_leader && leader_id != 0 {
            self.role.followed_another = true;
        }
        if is_leader && !self.role.is_leader && self.role.followed_another {
            // A leader that took over from another server never saw the sessions' activity, so it
            // restarts every timer (ZooKeeper does the same). A server that leads from its own
            // start resumes the checkpointed clocks instead.
            self.sessions.restart_all(&self.tree, Instant::now());
        }
        self.role.is_leader = is_leader;
    }

    /// Raft's view of the leader changed on a member of an ensemble.
    fn ensemble_role_changed(&mut self, is_leader: bool, leader_id: u64, term: u64) {
        let changed = leader_id != self.role.leader_id
            || term != self.role.term
            || is_leader != self.role.is_leader;
        let was_leader = self.role.is_leader;
        if leader_id == 0 && self.role.leader_id != 0 {
            if let Some(ens) = self.ensemble.as_mut() {
                ens.leaderless_since = Instant::now();
            }
        }
        self.role.leader_id = leader_id;
        self.role.term = term;
        self.role.is_leader = is_leader;
        self.role.leader_since = if is_leader {
            self.role.leader_since.or(Some(Instant::now()))
        } else {
            None
        };
        if !changed {
            return;
        }
        if let Some(ens) = self.ensemble.as_mut() {
            ens.link = None; // dropping it closes the old link
        }
        self.forget_proposed_reconfigs();
        self.sessions.forget_touched();
        // Writes and syncs in flight may have been dropped by raft, or may still commit.
        let doomed = self.close_conns_where(|_, c| {
            c.queue
                .iter()
                .any(|q| matches!(q.pending, Pending::Write { .. } | Pending::Sync { .. }))
        });
        if doomed > 0 {
            info!(
                connections = doomed,
                "leader changed with requests in flight; closed their connections"
            );
        }
        self.refuse_connecting();
        self.sessions.clear_closing();
        if leader_id == 0 {
            // A reconnect still waiting for a leader to confirm it has nothing in flight and has
            // not been answered: it waits for the next leader as a new ConnectRequest would be
            // held (`handshake`), at most that hold from now. Every other connection closes.
            let now = Instant::now();
            let mut waiting = Vec::new();
            if let Some(ens) = self.ensemble.as_ref() {
                for (ctx, r) in &ens.revalidating {
                    let timeout = self.conns.get(&r.conn).map(|c| c.timeout_ms);
                    if let (None, Some(timeout)) = (r.index, timeout) {
                        waiting.push((*ctx, r.conn, now + self.hold_span(timeout)));
                    }
                }
            }
            if let Some(ens) = self.ensemble.as_mut() {
                ens.revalidating
                    .retain(|ctx, _| waiting.iter().any(|w| w.0 == *ctx));
                for (ctx, _, until) in &waiting {
                    if let Some(r) = ens.revalidating.get_mut(ctx) {
                        r.until = r.until.min(*until);
                    }
                }
            }
            let all = self.close_conns_where(|id, _| !waiting.iter().any(|w| w.1 == id));
            if all > 0 {
                warn!(
                    connections = all,
                    "no leader: this member stops serving and closed its client connections"
                );
            }
            return;
        }
        // Read-only sessions end when the quorum is back, as ZooKeeper's read-only server shuts
        // down: their clients reconnect and find a read-write server.
        let read_only = self.close_conns_where(|_, c| c.read_only);
        if read_only > 0 {
            info!(
                connections = read_only,
                "a leader is known again: closed read-only sessions"
            );
        }
        // A reconnect still waiting for its ReadIndex asks the new leader: raft dropped the old
        // request, or the old leader will never answer. One answered already waits only for this
        // member to apply that far.
        self.reask_revalidations(|r| r.index.is_none());
        if is_leader && !was_leader {
            // The sessions' activity was seen by the old leader, not by us: everyone starts
            // afresh, as in ZooKeeper.
            self.sessions.restart_all(&self.tree, Instant::now());
            self.publish_membership();
        }
    }

    /// On the ticker: a leader whose membership write was refused (raft may not have published
    /// its leadership yet when the core heard of it) tries again.
    pub(super) fn ensure_membership_published(&mut self) {
        if self.ensemble.is_some()
            && self.role.is_leader
            && self.role.membership_published != Some(self.role.term)
        {
            self.publish_membership();
        }
    }

    /// The leader writes the membership into `/zookeeper/config` when it differs from what is
    /// there (a new ensemble, or one whose static config changed).
    pub(super) fn publish_membership(&mut self) {
        if self.cfg.reconfig_enabled && !self.membership.members.servers.is_empty() {
            // With reconfig the tree is the membership; zoo.cfg only seeds a new ensemble.
            self.role.membership_published = Some(self.role.term);
            return;
        }
        let members: String = self
            .cfg
            .servers
            .iter()
            .map(|s| format!("server.{}={}\n", s.id, s))
            .collect();
        let current = match self.tree.read(
            &ReadCtx {
                session_id: 0,
                auth: &[],
            },
            &Request::GetData(GetDataRequest {
                path: "/zookeeper/config".into(),
                watch: false,
            }),
        ) {
            Ok(Response::GetData(r)) => r.data.unwrap_or_default(),
            _ => Vec::new(),
        };
        let current = String::from_utf8_lossy(&current);
        let listed = current
            .rfind("version=")
            .map_or(&current[..], |at| &current[..at]);
        if listed == members {
            self.role.membership_published = Some(self.role.term);
            return;
        }
        let entry = stamp(
            SessionId::NONE,
            0,
            self.wall.now_ms(),
            Vec::new(),
            Txn::SetConfig { members },
        );
        if self.propose(&entry).is_ok() {
            self.role.membership_published = Some(self.role.term);
        }
    }

    /// A reconnect on a follower: learn the leader's commit index first (a ReadIndex, which also
    /// shows that a live leader still leads), then look again (the session may have been created
    /// elsewhere a moment ago). `false` on a leader or a standalone server: they decide at once.
    /// The request is asked again until answered (`retry_revalidations`, a new leader, the first
    /// entry of the leader's term applied here), and the connection is refused once its session
    /// timeout has passed without an answer.
    pub(super) fn revalidate(
        &mut self,
        conn: ConnId,
        session_id: SessionId,
        passwd: Option<Vec<u8>>,
    ) -> bool {
        if self.ensemble.is_none() || self.role.is_leader {
            return false;
        }
        let Some(timeout_ms) = self.conns.get(&conn).map(|c| c.timeout_ms) else {
            return false;
        };
        let timeout = std::time::Duration::from_millis(timeout_ms.max(0) as u64);
        let (tick, election, _) = self.cfg.raft_timing();
        // One election timeout (a lost request or a leader that just changed is noticed by
        // then), but a fraction of the session's timeout, so that several tries fit in it.
        let core_tick =
            std::time::Duration::from_millis((self.cfg.tick_time_ms as u64 / 2).clamp(10, 500));
        let patience = (tick * election).min(timeout / 4).max(core_tick);
        let now = Instant::now();
        let r = Revalidation {
            conn,
            session_id,
            passwd,
            index: None,
            asked: now,
            early: false,
            until: now + timeout,
            patience,
        };
        self.ask_revalidation(r, now);
        true
    }

    /// Asks for a ReadIndex for `r` under a fresh context. A refusal (no leader known at this
    /// instant) is asked again by the ticker.
    fn ask_revalidation(&mut self, mut r: Revalidation, now: Instant) {
        let ctx = self.conns.next_read_ctx();
        r.index = None;
        r.asked = now;
        r.early = self.applied.term < self.role.term;
        if let Err(e) = self.raft.read_index(ctx) {
            debug!(ctx, error = %e, "revalidation's read index refused; asking again later");
        }
        if let Some(ens) = self.ensemble.as_mut() {
            ens.revalidating.insert(ctx, r);
        }
    }

    /// Asks again, under fresh contexts, for every waiting revalidation `pick` selects.
    fn reask_revalidations(&mut self, pick: impl Fn(&Revalidation) -> bool) {
        let Some(ens) = self.ensemble.as_mut() else {
            return;
        };
        let again = ens.take_revalidations(pick);
        let now = Instant::now();
        for r in again {
            debug!(
                session = %r.session_id,
                "revalidation unanswered; asking for a read index again"
            );
            self.ask_revalidation(r, now);
        }
    }

    /// On the ticker: a revalidation whose connection is gone is dropped, one past its session
    /// timeout is refused, and one unanswered for its patience is asked again (raft-rs drops a
    /// ReadIndex silently when the leader has not committed in its term yet or is lost on the
    /// way; the old request is then answered never).
    pub(super) fn retry_revalidations(&mut self, now: Instant) {
        let Some(ens) = self.ensemble.as_mut() else {
            return;
        };
        if ens.revalidating.is_empty() {
            return;
        }
        let conns = &self.conns;
        ens.take_revalidations(|r| conns.get(&r.conn).is_none_or(|c| c.closed));
        let expired = ens.take_revalidations(|r| now >= r.until);
        for r in expired {
            info!(
                session = %r.session_id,
                "no leader confirmed a reconnect within its session timeout; closing it"
            );
            self.refuse_connection(r.conn);
        }
        self.reask_revalidations(|r| {
            r.index.is_none() && now.saturating_duration_since(r.asked) >= r.patience
        });
    }

    /// A ReadIndex answer for a revalidation (false: not one of ours).
    pub(super) fn revalidation_ready(&mut self, ctx: u64, index: u64) -> bool {
        let Some(r) = self
            .ensemble
            .as_mut()
            .and_then(|e| e.revalidating.get_mut(&ctx))
        else {
            return false;
        };
        r.index = Some(index);
        self.finish_revalidations();
        true
    }

    /// Completes the revalidations whose index this member has applied; asks again for those
    /// asked before the leader had committed in its term, once it has.
    pub(super) fn finish_revalidations(&mut self) {
        let applied = self.applied.index;
        let term_committed = self.applied.term >= self.role.term;
        let Some(ens) = self.ensemble.as_mut() else {
            return;
        };
        if ens.revalidating.is_empty() {
            return;
        }
        let ready = ens.take_revalidations(|r| r.index.is_some_and(|i| i <= applied));
        for r in ready {
            self.reconnect(r.conn, r.session_id, r.passwd, false);
        }
        if term_committed {
            self.reask_revalidations(|r| r.index.is_none() && r.early);
        }
    }
}
