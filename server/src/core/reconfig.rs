//! ZooKeeper's `reconfig` on an ensemble: the membership lives in the tree, raft follows it.
//!
//! ```text
//! client ─▶ any member: reconfigEnabled? ─▶ Txn::Write(Reconfig) through the log like any write
//!                                              │ committed at zxid Z
//! every member, applying Z: next_members(/zookeeper/config, request) (pure, same answer everywhere)
//!        ├─ error (BadVersion, BadArguments, NoAuth): the tree is unchanged, the client gets the code
//!        └─ ok: /zookeeper/config := the new server lines + version=<Z hex>; address book and
//!               "am I still a member" follow at once
//! leader, on its ticker: raft's (voters, learners) differ from the tree's? propose one ConfChangeV2
//!        with every difference (raft-rs uses joint consensus for more than one, and leaves it by
//!        itself); a member the config drops stays a learner while reachable (it serves on as a
//!        non-voting follower, as in ZooKeeper); a leader the new config drops hands leadership
//!        to a remaining voter first
//! the session's member: replies (GetData of /zookeeper/config) once its raft membership matches
//! ```
//!
//! Deciding at apply time, instead of on the leader before proposing, lets a follower's reconfig
//! travel the ordinary forward link and makes the version check exact: the version compared is the
//! one in the replicated tree at the entry's own position in the log, so two racing reconfigs with
//! the same `-v` cannot both pass. Driving raft from the tree (a reconciling loop rather than a
//! one-shot proposal) means a leader that dies between the two steps leaves nothing half done: its
//! successor sees the difference and finishes it. After a restart the membership comes from the
//! replicated state (raft's conf state in the log store, `/zookeeper/config` in the snapshot and log), not
//! from zoo.cfg.

use std::collections::{BTreeMap, BTreeSet};

use tokio::time::{Duration, Instant};
use tracing::{info, warn};

use consensus::{ConfChangeSingle, ConfChangeType, ConfChangeV2};
use wire::ops::data::GetDataRequest;
use wire::ops::get_acl::GetAclRequest;
use wire::ops::reconfig::ReconfigRequest;
use wire::{ErrorCode, Id, ReplyHeader, Request, Response};
use znode_tree::{acl, Entry, ReadCtx, Txn};

use super::Core;
use crate::msg::ConnId;
use crate::outbound::Outbound;
use crate::reconfig::{self as rc, Members};
use crate::session::SessionId;

const CONFIG_NODE: &str = "/zookeeper/config";

/// How long a reconfig the leader proposed counts as in flight at most: raft may drop a
/// proposal without a change of role (a hand-over in progress), and the entry then never applies.
const IN_FLIGHT_BOUND: Duration = Duration::from_secs(30);

/// How long a reconfig's reply waits for raft's membership to match before the connection is
/// closed instead (the outcome is then unknown to the client, as with any lost reply).
const REPLY_WAIT: Duration = Duration::from_secs(30);

/// The core's view of the membership and the reconfig work in flight.
#[derive(Default)]
pub(crate) struct Membership {
    /// What `/zookeeper/config` says (empty until a leader first wrote it).
    pub(super) members: Members,
    /// Every member address ever known, by id (zoo.cfg's, then each config's): a member that
    /// leaves the tree's config stays reachable while raft still counts it (a joint change needs
    /// the old majority too).
    known_addrs: BTreeMap<u64, String>,
    /// This member is not in the current config.
    pub(super) removed: bool,
    /// A member a reconfig removed while it served, that raft still replicates to: it keeps
    /// serving its clients as a non-voting member, as ZooKeeper's removed follower does, until
    /// the leader drops it from raft's learners. A member that starts removed does not serve.
    pub(super) retained: bool,
    /// The index start-up replays the log to (`CoreMsg::WaitApplied`): a removal at or below it
    /// was applied again at a restart, not while this process served.
    pub(super) replay_to: u64,
    /// Replies that wait for raft's membership to match the config they wrote.
    waiting: Vec<WaitingReply>,
    /// When the leader last proposed a membership change or a hand-over.
    last_step: Option<Instant>,
    /// On the leader: since when each member raft still counts but the config no longer lists
    /// has been unreachable (its link down and not heard from).
    lost_since: BTreeMap<u64, Instant>,
    /// When this member last applied a config write: a leader hands over only a few heartbeats
    /// later, so the followers have applied it and answered their clients first.
    applied_at: Option<Instant>,
    /// On the leader: reconfig entries it proposed that have not applied yet, and when it
    /// proposed the last one (ZooKeeper's "last seen" configuration ahead of the current one).
    proposed: u32,
    proposed_at: Option<Instant>,
    /// On the leader: forwarded reconfigs waiting for this member to apply what it knew to be
    /// committed when they arrived (their forward link waits with them).
    deferred: Vec<Deferred>,
    /// The newest membership version written to `zoo.cfg.dynamic.<version>` by this process
    /// (`None`: none yet; zoo.cfg then points at `Config::config_version`'s).
    written_version: Option<i64>,
}

/// A forwarded reconfig the leader judges once its applied index reaches `commit`.
struct Deferred {
    commit: u64,
    entry: Entry,
    done: tokio::sync::oneshot::Sender<Result<(), String>>,
}

struct WaitingReply {
    conn: ConnId,
    xid: i32,
    zxid: i64,
    body: Response,
    voters: Vec<u64>,
    learners: Vec<u64>,
    since: Instant,
}

impl Core {
    /// A reconfig request from a client, in its connection's turn.
    pub(super) fn reconfig_request(
        &mut self,
        id: ConnId,
        header: wire::RequestHeader,
        req: ReconfigRequest,
        received: Instant,
        slot: crate::throttle::Slot,
    ) {
        let refused = if !self.cfg.reconfig_enabled {
            Some(ErrorCode::ReconfigDisabled)
        } else if self.ensemble.is_none() {
            // ZooKeeper: "standalone mode - reconfiguration currently not supported".
            Some(ErrorCode::Unimplemented)
        } else {
            None
        };
        match refused {
            Some(code) => {
                self.conns
                    .get_mut(&id)
                    .unwrap()
                    .queue
                    .push_back(super::requests::Queued {
                        pending: super::requests::Pending::Error {
                            xid: header.xid,
                            code,
                            received,
                        },
                        _slot: Some(slot),
                    });
                self.drain(id);
            }
            None => {
                // The leader judges what only it can (ReconfigInProgress, NewConfigNoQuorum)
                // before ordering the entry; a follower's reconfig is judged when it reaches the
                // leader (`forward.rs` hands it to `forwarded_reconfig`).
                let txn = if self.role.is_leader {
                    self.leader_reconfig_txn(req)
                } else {
                    Txn::Write(Request::Reconfig(req))
                };
                self.propose_write(id, header, txn, received, slot)
            }
        }
    }

    /// On the leader, a reconfig another member forwarded: judged like the leader's own clients'
    /// (`leader_reconfig_txn`), then proposed. `done` tells the forward link whether it went in.
    ///
    /// Judged only once this leader has applied everything it knew committed when the reconfig
    /// arrived: the follower may have answered the previous reconfig (or its refusal) from its
    /// own apply, and the client's next one must not find the leader still counting the previous
    /// one as in flight.
    pub(super) fn forwarded_reconfig(
        &mut self,
        entry: Entry,
        done: tokio::sync::oneshot::Sender<Result<(), String>>,
    ) {
        if !self.role.is_leader {
            let _ = done.send(Err("this member is not the leader".into()));
            return;
        }
        let commit = self.raft.commit_known();
        if commit > self.applied.index || !self.membership.deferred.is_empty() {
            self.membership.deferred.push(Deferred {
                commit,
                entry,
                done,
            });
            return;
        }
        self.judge_forwarded_reconfig(entry, done);
    }

    /// Judges the deferred forwarded reconfigs the applied index has reached, in arrival order.
    pub(super) fn judge_deferred_reconfigs(&mut self) {
        while self
            .membership
            .deferred
            .first()
            .is_some_and(|d| d.commit <= self.applied.index)
        {
            let d = self.membership.deferred.remove(0);
            if self.role.is_leader {
                self.judge_forwarded_reconfig(d.entry, d.done);
            } else {
                let _ = d
                    .done
                    .send(Err("this member is no longer the leader".into()));
            }
        }
    }

    fn judge_forwarded_reconfig(
        &mut self,
        mut entry: Entry,
        done: tokio::sync::oneshot::Sender<Result<(), String>>,
    ) {
        if let Txn::Write(Request::Reconfig(req)) = &entry.txn {
            entry.txn = self.leader_reconfig_txn(req.clone());
        }
        let _ = done.send(self.propose(&entry).map_err(|e| e.to_string()));
    }

    /// What the leader proposes for a client's reconfig: the request itself, or the refusal
    /// only the leader can decide (`Txn::Refused`, ZooKeeper's error transaction: it is ordered
    /// and answered like any write, so a session's replies keep their order).
    fn leader_reconfig_txn(&mut self, req: ReconfigRequest) -> Txn {
        if self.cfg.reconfig_enabled {
            if let Some(code) = self.reconfig_precheck(&req) {
                info!(?code, "reconfig refused by the leader");
                return Txn::Refused { code: code.code() };
            }
            self.membership.proposed += 1;
            self.membership.proposed_at = Some(Instant::now());
        }
        Txn::Write(Request::Reconfig(req))
    }

    /// ZooKeeper's leader-side checks, in its order (PrepRequestProcessor): ReconfigInProgress
    /// while a change is under way; then, once the request parses and its version matches (else
    /// the apply answers BadVersion or BadArguments, as every member decides them),
    /// NewConfigNoQuorum unless a majority of the new configuration's voters is connected and
    /// synced with this leader. The ACL check stays last, at apply.
    fn reconfig_precheck(&self, req: &ReconfigRequest) -> Option<ErrorCode> {
        if self.reconfig_in_progress() {
            return Some(ErrorCode::ReconfigInProgress);
        }
        let servers =
            rc::next_members(&self.current_members(), req, self.cfg.standalone_enabled).ok()?;
        let voters: Vec<u64> = servers
            .iter()
            .filter(|s| s.role != Some(crate::config::PeerRole::Observer))
            .map(|s| s.id)
            .collect();
        let synced = self.synced_members();
        let with_us = voters.iter().filter(|v| synced.contains(v)).count();
        if with_us * 2 > voters.len() {
            None
        } else {
            warn!(
                ?voters,
                ?synced,
                "reconfig refused: the new configuration has no connected and synced majority"
            );
            Some(ErrorCode::NewConfigNoQuorum)
        }
    }

    /// A reconfig is under way: one this leader proposed has not applied yet (ZooKeeper's
    /// "last seen" configuration is ahead of its current one until the entry commits). Raft still
    /// moving to the applied configuration does not count, as ZooKeeper's reconfig is over once
    /// committed: the leader's reconciling loop takes raft to whichever configuration is newest,
    /// one step at a time (raft-rs refuses a change while another is pending or joint).
    fn reconfig_in_progress(&self) -> bool {
        let m = &self.membership;
        m.proposed > 0 && m.proposed_at.is_some_and(|t| t.elapsed() < IN_FLIGHT_BOUND)
    }

    /// The members this leader can reach: its raft link to them is up, or raft heard from them
    /// within the last election timeout.
    fn reachable_members(&self) -> BTreeSet<u64> {
        let linked: BTreeSet<u64> = self
            .ensemble
            .as_ref()
            .map(|ens| {
                ens.net
                    .stats()
                    .into_iter()
                    .filter(|p| p.connected || p.inbound_links > 0)
                    .map(|p| p.id)
                    .collect()
            })
            .unwrap_or_default();
        self.raft
            .progress()
            .into_iter()
            .filter(|p| p.recent_active || linked.contains(&p.id))
            .map(|p| p.id)
            .collect()
    }

    /// The members connected and synced with this leader: itself, and every member raft
    /// replicates to that acknowledged entries of this leadership (raft forgets a follower's
    /// match when a leader is elected) and is connected: its raft link is up, or raft heard from
    /// it within the last election timeout (raft-rs clears that flag at every quorum check, so
    /// alone it would miss live members for a heartbeat). A member raft does not replicate to yet
    /// (one a reconfig would add) does not count, so a new configuration needs a majority among
    /// the members already in.
    fn synced_members(&self) -> BTreeSet<u64> {
        let reachable = self.reachable_members();
        let mut synced: BTreeSet<u64> = self
            .raft
            .progress()
            .into_iter()
            .filter(|p| p.matched > 0 && reachable.contains(&p.id))
            .map(|p| p.id)
            .collect();
        synced.insert(self.cfg.my_id.unwrap_or(0));
        synced
    }

    /// A new leader knows nothing of its predecessor's proposals: what raft and the tree say is
    /// what counts.
    pub(super) fn forget_proposed_reconfigs(&mut self) {
        self.membership.proposed = 0;
        self.membership.proposed_at = None;
        for d in std::mem::take(&mut self.membership.deferred) {
            // Its forward link closes: the follower fails the write (ConnectionLoss).
            let _ = d.done.send(Err("the leader changed".into()));
        }
    }

    /// The membership the tree holds, or zoo.cfg's before any leader wrote one.
    fn current_members(&self) -> Members {
        if self.membership.members.servers.is_empty() {
            Members {
                servers: self.cfg.servers.clone(),
                version: Some(self.cfg.config_version),
            }
        } else {
            self.membership.members.clone()
        }
    }

    /// Applies a committed reconfig entry at `zxid`: decides it (the same way on every member),
    /// writes the new config on success, and answers (or defers the answer to) the client.
    /// Applies a reconfig; its error, if it was refused (the follow log records it).
    pub(super) fn apply_reconfig(
        &mut self,
        zxid: i64,
        entry: &Entry,
        req: &ReconfigRequest,
    ) -> Result<(), ErrorCode> {
        self.membership.proposed = self.membership.proposed.saturating_sub(1);
        let decided = rc::next_members(&self.current_members(), req, self.cfg.standalone_enabled)
            .and_then(|servers| {
                // ZooKeeper checks WRITE on /zookeeper/config last (the super user passes).
                if self.may_write_config(&entry.auth) {
                    Ok(servers)
                } else {
                    Err(ErrorCode::NoAuth)
                }
            });
        let mut was_removed = None;
        // Whether this process served when it applied its own removal (not a restart's replay).
        let live = self.serving() && self.applied.index > self.membership.replay_to;
        let result = match decided {
            Ok(servers) => {
                let members = rc::render(&servers);
                let set = Entry {
                    txn: Txn::SetConfig { members },
                    ..entry.clone()
                };
                let applied = self.tree.apply(zxid, &set);
                self.fire_events(zxid, &applied.changes);
                // Clients of a member this change removes are dropped after the reply below.
                was_removed = Some(self.read_membership());
                info!(zxid, "reconfig applied: /zookeeper/config rewritten");
                Ok(self.config_node())
            }
            Err(code) => {
                // The entry still takes its zxid; the tree refuses the op without a change.
                let _ = self.tree.apply(zxid, entry);
                info!(zxid, ?code, "reconfig refused");
                Err(code)
            }
        };
        let outcome = result.as_ref().map(|_| ()).map_err(|c| *c);
        if let Some(id) = self.sessions.holder(SessionId(entry.session_id)) {
            self.answer_reconfig(id, zxid, entry, result);
        }
        if let Some(was) = was_removed {
            self.drop_clients_if_removed(was, live);
        }
        outcome
    }

    fn answer_reconfig(
        &mut self,
        id: ConnId,
        zxid: i64,
        entry: &Entry,
        result: Result<Response, ErrorCode>,
    ) {
        match result {
            Ok(body) => {
                let members = &self.membership.members;
                let me = self.cfg.my_id.unwrap_or(0);
                let waiting = WaitingReply {
                    conn: id,
                    xid: entry.xid,
                    zxid,
                    body,
                    voters: members.voters(),
                    learners: members.observers(),
                    since: Instant::now(),
                };
                // A member the new config drops may never hear raft's change, and a leader
                // that leaves the voters hands over before raft changes, which fails every write
                // in flight (the leader-change rule): both answer now, the change being committed
                // in the log and finished by the (next) leader.
                let leaving = !members.servers.iter().any(|s| s.id == me);
                let leader_leaves = !waiting.voters.contains(&self.role.leader_id);
                if leaving
                    || leader_leaves
                    || self.membership_matches(&waiting.voters, &waiting.learners)
                {
                    self.send_reconfig_reply(waiting);
                } else {
                    self.membership.waiting.push(waiting);
                }
            }
            Err(code) => {
                if let Some((received, _)) = self.pop_write(id, entry.xid) {
                    self.record_latency(id, received);
                    self.send_header(id, entry.xid, zxid, code.code());
                    self.drain(id);
                }
            }
        }
    }

    fn send_reconfig_reply(&mut self, w: WaitingReply) {
        if let Some((received, _)) = self.pop_write(w.conn, w.xid) {
            self.record_latency(w.conn, received);
            self.send(
                w.conn,
                Outbound::Reply {
                    header: ReplyHeader {
                        xid: w.xid,
                        zxid: w.zxid,
                        err: 0,
                    },
                    body: Some(w.body),
                },
            );
            self.drain(w.conn);
        }
    }

    /// A later write of connection `id` (`xid`) is being answered while its reconfig's reply
    /// still waits for raft's membership at the head of its queue: the reconfig, committed and
    /// applied, is answered first, so the later reply is neither lost nor sent ahead of it.
    pub(super) fn answer_waiting_reconfig_before(&mut self, id: ConnId, xid: i32) {
        let waiting = &self.membership.waiting;
        if let Some(at) = waiting.iter().position(|w| w.conn == id && w.xid != xid) {
            let w = self.membership.waiting.remove(at);
            self.send_reconfig_reply(w);
        }
    }

    /// Whether raft's membership on this member is `voters` and `learners`, joint configuration
    /// left. Learners the config does not list (removed members still replicated to, see
    /// `leftover_learners`) do not count.
    fn membership_matches(&self, voters: &[u64], learners: &[u64]) -> bool {
        let (v, l) = self.raft.membership();
        let listed = &self.membership.members;
        let l: Vec<u64> = l.into_iter().filter(|id| listed.lists(*id)).collect();
        v == voters && l == learners && !self.raft.is_joint()
    }

    /// The members raft replicates to as learners that the config does not list: members a
    /// reconfig removed, kept as non-voting members while they follow (ZooKeeper's "non-voting
    /// followers"). Empty without reconfig or before a leader wrote the config.
    pub(crate) fn leftover_learners(&self) -> Vec<u64> {
        let listed = &self.membership.members;
        if !self.cfg.reconfig_enabled || listed.servers.is_empty() {
            return Vec::new();
        }
        let (_, learners) = self.raft.membership();
        learners
            .into_iter()
            .filter(|id| !listed.lists(*id))
            .collect()
    }

    /// Whether raft, as this member sees it, still counts this member (voter or learner, also
    /// only in a joint configuration: a voter being demoted is an outgoing voter and a
    /// learner-to-be until raft leaves it).
    fn raft_counts_me(&self) -> bool {
        let me = self.cfg.my_id.unwrap_or(0);
        let (v, l) = self.raft.membership();
        v.contains(&me) || l.contains(&me) || self.raft.joint_only().contains(&me)
    }

    /// Answers the reconfigs whose membership raft has reached; closes the connections of those
    /// that waited too long.
    pub(super) fn finish_waiting_reconfigs(&mut self) {
        if self.membership.waiting.is_empty() {
            return;
        }
        let now = Instant::now();
        let waiting = std::mem::take(&mut self.membership.waiting);
        for w in waiting {
            if self.membership_matches(&w.voters, &w.learners) {
                self.send_reconfig_reply(w);
            } else if now.duration_since(w.since) > REPLY_WAIT {
                warn!(
                    voters = ?w.voters,
                    learners = ?w.learners,
                    "raft did not reach the reconfigured membership in time; closing the client's connection"
                );
                self.close_conn(w.conn);
            } else {
                self.membership.waiting.push(w);
            }
        }
    }

    fn may_write_config(&self, auth: &[Id]) -> bool {
        let ctx = ReadCtx {
            session_id: 0,
            auth,
        };
        let req = Request::GetAcl(GetAclRequest {
            path: CONFIG_NODE.into(),
        });
        match self.tree.read(&ctx, &req) {
            Ok(Response::GetAcl(r)) => {
                acl::allowed(self.tree.config(), &r.acl, wire::perms::WRITE, auth)
            }
            _ => false,
        }
    }

    /// `/zookeeper/config` as a getData answers it: the reconfig reply.
    fn config_node(&self) -> Response {
        let ctx = ReadCtx {
            session_id: 0,
            auth: &[],
        };
        let req = Request::GetData(GetDataRequest {
            path: CONFIG_NODE.into(),
            watch: false,
        });
        self.tree.read(&ctx, &req).unwrap_or(Response::Empty)
    }

    /// The bytes of `/zookeeper/config`.
    pub(super) fn config_text(&self) -> String {
        match self.config_node() {
            Response::GetData(r) => String::from_utf8_lossy(&r.data.unwrap_or_default()).into(),
            _ => String::new(),
        }
    }

    /// Re-reads the membership from the tree (after a config write, a restart's replay, an
    /// installed snapshot): the peer address book, and whether this member still belongs.
    pub(super) fn membership_from_tree(&mut self) {
        let was_removed = self.read_membership();
        self.drop_clients_if_removed(was_removed, false);
    }

    /// The part of `membership_from_tree` before clients are dropped; returns whether this member
    /// was removed before.
    fn read_membership(&mut self) -> bool {
        let members = Members::parse(&self.config_text());
        if self.membership.known_addrs.is_empty() {
            for s in &self.cfg.servers {
                self.membership.known_addrs.insert(s.id, s.peer_address());
            }
        }
        for s in &members.servers {
            self.membership.known_addrs.insert(s.id, s.peer_address());
        }
        self.membership.members = members;
        self.membership.applied_at = Some(Instant::now());
        self.write_dynamic_config();
        self.update_address_book();
        let me = self.cfg.my_id.unwrap_or(0);
        let listed = &self.membership.members;
        let removed = self.ensemble.is_some()
            && self.cfg.reconfig_enabled
            && !listed.servers.is_empty()
            && !listed.lists(me);
        std::mem::replace(&mut self.membership.removed, removed)
    }

    /// With reconfigEnabled on an ensemble started from a zoo.cfg, a membership newer than the
    /// one zoo.cfg points at goes to `zoo.cfg.dynamic.<version>` and zoo.cfg is pointed at it, as
    /// ZooKeeper does, so a member restarted later starts from it (`config/dynamic.rs`). A failed
    /// write is logged: the replicated membership stands either way.
    fn write_dynamic_config(&mut self) {
        let (Some(zoo_cfg), Some(version)) = (&self.cfg.source, self.membership.members.version)
        else {
            return;
        };
        if self.ensemble.is_none()
            || !self.cfg.reconfig_enabled
            || self.membership.members.servers.is_empty()
            || version
                <= self
                    .membership
                    .written_version
                    .unwrap_or(self.cfg.config_version)
        {
            return;
        }
        self.membership.written_version = Some(version);
        let text = self.config_text();
        let me = self.cfg.my_id.unwrap_or(0);
        match crate::config::dynamic::write_dynamic_config(zoo_cfg, &text, version, me) {
            Ok(path) => {
                info!(file = %path.display(), "membership written to the dynamic config file; zoo.cfg points at it")
            }
            Err(e) => {
                warn!(zoo_cfg = %zoo_cfg.display(), error = %e, "could not write the dynamic config file")
            }
        }
    }

    /// What a getData of `/zookeeper/config` answers on an ensemble before a leader wrote the
    /// node: zoo.cfg's membership and its version, as ZooKeeper's servers hold it from the start.
    /// `None` when the node has data (or on a standalone server, whose node stays empty).
    pub(super) fn config_before_written(&self) -> Option<Vec<u8>> {
        if self.ensemble.is_none()
            || self.cfg.servers.is_empty()
            || !self.membership.members.servers.is_empty()
        {
            return None;
        }
        let text =
            rc::render(&self.cfg.servers) + &format!("version={:x}", self.cfg.config_version);
        Some(text.into_bytes())
    }

    /// A member that just left the configuration. Removed by a reconfig it applied while it was
    /// listed (`live`), it keeps serving its clients while raft still replicates to it: the
    /// leader keeps it as a learner for as long as it follows (`reconcile_membership`), as
    /// ZooKeeper 3.9's removed follower goes on as a non-voting participant. Otherwise (it
    /// learned of its removal from a snapshot or at start) it closes its clients and serves none.
    fn drop_clients_if_removed(&mut self, was_removed: bool, live: bool) {
        let me = self.cfg.my_id.unwrap_or(0);
        let removed = self.membership.removed;
        if removed && !was_removed {
            if live && self.raft_counts_me() {
                self.membership.retained = true;
                info!(
                    member = me,
                    "this member is not in the ensemble's configuration any more: it goes on \
                     serving its clients as a non-voting member while the leader replicates to it"
                );
            } else {
                self.stop_serving_removed();
            }
        } else if !removed {
            if was_removed {
                info!(member = me, "this member is in the configuration again");
            }
            self.membership.retained = false;
        }
    }

    fn stop_serving_removed(&mut self) {
        self.membership.retained = false;
        let all: Vec<ConnId> = self.conns.ids();
        warn!(
            member = self.cfg.my_id.unwrap_or(0),
            connections = all.len(),
            "this member is not in the ensemble's configuration: it stops serving clients"
        );
        for id in all {
            self.close_conn(id);
        }
    }

    /// Raft's membership changed: a removed member the leader dropped from raft's learners gets
    /// no more of the log, so it stops serving (its clients reconnect to a member).
    pub(super) fn drop_clients_if_dropped(&mut self) {
        if self.membership.removed && self.membership.retained && !self.raft_counts_me() {
            info!("the leader no longer replicates to this removed member");
            self.stop_serving_removed();
        }
    }

    /// The peer address book: the tree's members and whoever raft still counts.
    pub(super) fn update_address_book(&mut self) {
        let Some(ens) = self.ensemble.as_ref() else {
            return;
        };
        if self.membership.members.servers.is_empty() || !self.cfg.reconfig_enabled {
            // zoo.cfg's book, set at start-up, stands: without reconfig zoo.cfg is the
            // membership (and a member's own line may name a bind address such as 0.0.0.0).
            return;
        }
        let me = self.cfg.my_id.unwrap_or(0);
        let (voters, learners) = self.raft.membership();
        // With a joint configuration's outgoing voters and learners-to-be: the old majority must
        // stay reachable, and a demoted member keeps its link to the leader (losing it would
        // make it forget its leader and drop its clients).
        let wanted: BTreeSet<u64> = self
            .membership
            .members
            .ids()
            .chain(voters)
            .chain(learners)
            .chain(self.raft.joint_only())
            .filter(|id| *id != me)
            .collect();
        let book: Vec<(u64, String)> = wanted
            .into_iter()
            .filter_map(|id| {
                self.membership
                    .known_addrs
                    .get(&id)
                    .map(|a| (id, a.clone()))
            })
            .collect();
        ens.net.set_peers(book);
    }

    /// A membership change was applied: the next step may follow at once.
    pub(super) fn membership_step_done(&mut self) {
        self.membership.last_step = None;
    }

    /// On the leader's ticker (and after a membership event): moves raft's membership one step
    /// towards the tree's. Only with reconfigEnabled: otherwise zoo.cfg is the membership and raft
    /// keeps the bootstrapped one.
    pub(super) fn reconcile_membership(&mut self) {
        if self.ensemble.is_none() || !self.role.is_leader {
            return;
        }
        if !self.cfg.reconfig_enabled {
            self.grow_to_zoo_cfg();
            return;
        }
        let members = &self.membership.members;
        if members.servers.is_empty() {
            return;
        }
        let target_v: BTreeSet<u64> = members.voters().into_iter().collect();
        let mut target_l: BTreeSet<u64> = members.observers().into_iter().collect();
        let (cur_v, cur_l) = self.raft.membership();
        let cur_v: BTreeSet<u64> = cur_v.into_iter().collect();
        let cur_l: BTreeSet<u64> = cur_l.into_iter().collect();
        let (tick, election, heartbeat) = self.cfg.raft_timing();
        let pause = tick * election;
        let now = Instant::now();
        // Members raft counts that the config no longer lists stay as learners while they
        // follow: they go on serving their clients (see `drop_clients_if_removed`). One that has
        // been unreachable for an election timeout (syncLimit x tickTime, the bound after which
        // ZooKeeper's leader drops a silent learner) leaves raft's membership.
        let me = self.cfg.my_id.unwrap_or(0);
        let listed: BTreeSet<u64> = target_v.union(&target_l).copied().collect();
        let reachable = self.reachable_members();
        let leftovers: Vec<u64> = cur_v
            .union(&cur_l)
            .copied()
            .filter(|x| *x != me && !listed.contains(x))
            .collect();
        self.membership
            .lost_since
            .retain(|id, _| leftovers.contains(id));
        for x in leftovers {
            if reachable.contains(&x) {
                self.membership.lost_since.remove(&x);
                target_l.insert(x);
            } else {
                let since = *self.membership.lost_since.entry(x).or_insert(now);
                if now.duration_since(since) < pause {
                    target_l.insert(x);
                }
            }
        }
        if cur_v == target_v && cur_l == target_l {
            return;
        }
        if self
            .membership
            .last_step
            .is_some_and(|t| now.duration_since(t) < pause)
        {
            return;
        }
        self.membership.last_step = Some(now);
        let mut changes = Vec::new();
        let single = |change_type, node_id| ConfChangeSingle {
            change_type,
            node_id,
            ..Default::default()
        };
        for &v in target_v.difference(&cur_v) {
            changes.push(single(ConfChangeType::AddNode, v));
        }
        // A learner the config adds, or a voter it removed and raft keeps replicating to (a
        // demotion: raft-rs carries it out with any other change through joint consensus).
        for &l in target_l.difference(&cur_l) {
            if l != me {
                changes.push(single(ConfChangeType::AddLearnerNode, l));
            }
        }
        for &x in cur_v.union(&cur_l) {
            if x != me && !target_v.contains(&x) && !target_l.contains(&x) {
                changes.push(single(ConfChangeType::RemoveNode, x));
            }
        }
        if changes.is_empty() {
            // What is left is this leader's own removal or demotion: hand over first; the next
            // leader finishes the change. Not before the followers had two heartbeats to apply
            // the config write (and answer the reconfig's client): the hand-over fails every
            // write still in flight on them.
            // Nor while a reconfig it proposed is in flight: it may list this leader again (a
            // client removing and re-adding a member on one connection), and the hand-over
            // would fail it.
            let settle = tick * heartbeat * 2;
            if self.reconfig_in_progress()
                || self
                    .membership
                    .applied_at
                    .is_some_and(|t| now.duration_since(t) < settle)
            {
                self.membership.last_step = None;
                return;
            }
            let to = target_v.intersection(&cur_v).copied().find(|v| *v != me);
            if let Some(to) = to {
                info!(
                    to,
                    "the new configuration drops this leader: handing leadership over"
                );
                if let Err(e) = self.raft.transfer_leader(to) {
                    warn!(error = %e, "leadership hand-over refused");
                }
            }
            return;
        }
        info!(
            ?changes,
            "proposing a raft membership change to match /zookeeper/config"
        );
        let cc = ConfChangeV2 {
            changes: changes.into(),
            context: self.config_text().into_bytes().into(),
            ..Default::default()
        };
        if let Err(e) = self.raft.propose_conf_change(cc) {
            warn!(error = %e, "membership change refused");
        }
    }
}

impl Core {
    /// Without reconfigEnabled, zoo.cfg is the membership, and ZooKeeper's classic way to grow
    /// an ensemble is a rolling restart: the new members start with the new server list, then
    /// the old ones restart one at a time with it. A leader whose zoo.cfg lists members raft does
    /// not have adds them, never putting raft's commits in their hands before they follow: first
    /// as learners (they catch up from a snapshot), then promoted to voters once connected and
    /// synced, and only while the promoted configuration keeps a synced majority. Members raft
    /// has and zoo.cfg does not list stay (a leader still on the old list must not undo what a
    /// leader on the new one did during the rolling restart); `reconfig` removes members.
    fn grow_to_zoo_cfg(&mut self) {
        let (cur_v, cur_l) = self.raft.membership();
        if self.raft.is_joint() {
            return;
        }
        let (tick, election, _) = self.cfg.raft_timing();
        let now = Instant::now();
        if self
            .membership
            .last_step
            .is_some_and(|t| now.duration_since(t) < tick * election)
        {
            return;
        }
        let me = self.cfg.my_id.unwrap_or(0);
        let single = |change_type, node_id| ConfChangeSingle {
            change_type,
            node_id,
            ..Default::default()
        };
        let mut changes = Vec::new();
        // Anyone listed that raft does not know yet starts as a learner.
        for s in &self.cfg.servers {
            if s.id != me && !cur_v.contains(&s.id) && !cur_l.contains(&s.id) {
                changes.push(single(ConfChangeType::AddLearnerNode, s.id));
            }
        }
        if changes.is_empty() {
            // Learners that zoo.cfg lists as participants become voters once synced.
            let synced = self.synced_members();
            let promote: Vec<u64> = self
                .cfg
                .voters()
                .into_iter()
                .filter(|id| cur_l.contains(id) && synced.contains(id))
                .collect();
            let after: Vec<u64> = cur_v.iter().chain(&promote).copied().collect();
            let with_us = after.iter().filter(|v| synced.contains(v)).count();
            if !promote.is_empty() && with_us * 2 > after.len() {
                for id in promote {
                    changes.push(single(ConfChangeType::AddNode, id));
                }
            }
        }
        if changes.is_empty() {
            return;
        }
        self.membership.last_step = Some(now);
        info!(
            ?changes,
            "zoo.cfg lists members raft does not count yet: adding them (rolling restart)"
        );
        let cc = ConfChangeV2 {
            changes: changes.into(),
            ..Default::default()
        };
        if let Err(e) = self.raft.propose_conf_change(cc) {
            warn!(error = %e, "membership change refused");
        }
    }
}
