//! The steppable core of a node: `RawNode<LogStore>` and the rules paddock adds on top of raft-rs,
//! with explicit inputs and no clock, sleep or channel inside (the shape of raft-rs's
//! `examples/single_mem_node`). The raft thread (`raft_loop.rs`) only pumps its channels and the
//! time into a [`Driver`]; tests drive several by hand, moving messages between them and counting
//! ticks.
//!
//! Inputs: [`Driver::tick`] (one raft tick), [`Driver::command`] (a peer's message, a proposal, a
//! read barrier, a membership change, a snapshot report or a snapshot to save) and
//! [`Driver::snapshot_saved`] (a snapshot file became durable). Output: [`Driver::ready`] handles
//! every pending Ready in the order of docs/consensus.md §4 and hands what it produces to an
//! [`Output`]: messages for peers, events for the applier, snapshot files to write.
//!
//! The one rule that matters most: committed entries go to the applier only when they are durable
//! here. raft-rs guarantees it (it hands out entries up to min(commit, persisted)); `deliver`
//! checks it anyway and stops the node if it is ever broken, because a replica that applied a
//! non-durable entry can diverge after a crash.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use protobuf::Message as _;
use raft::eraftpb::{
    ConfChange, ConfChangeV2, ConfState, Entry, EntryType, Message, MessageType, SnapshotMetadata,
};
use raft::{ProgressState, RawNode, SnapshotStatus, StateRole, INVALID_ID};

use crate::snapshot_file::{self, ScannedSnapshot};
use crate::status::PeerProgress;
use crate::storage::{LogStore, BOOTSTRAP_INDEX};
use crate::{CommittedEntry, Config, ConsensusError, Event, Snapshot, Status};

/// Election timeouts a leader waits for a follower to acknowledge a snapshot before it takes the
/// snapshot as lost and sends it again (see `expire_lost_snapshots`).
pub const SNAPSHOT_ACK_ELECTIONS: usize = 5;

/// One input for the driver, other than a tick.
#[derive(Debug)]
pub enum Command {
    /// Append `data` (leader only; dropped otherwise).
    Propose(Vec<u8>),
    /// Propose a membership change (leader only).
    ConfChange(ConfChangeV2),
    /// Ask for a read point; answered by `Event::ReadIndexReady { ctx, .. }`.
    ReadIndex(u64),
    /// A message from a peer.
    Step(Message),
    /// Sending to this peer failed.
    Unreachable(u64),
    /// How sending a snapshot to `peer` ended.
    SnapshotReport { peer: u64, ok: bool },
    /// The applier's state exactly as of `index`; validated, then handed to
    /// `Output::write_snapshot`.
    SaveSnapshot {
        index: u64,
        term: u64,
        data: Vec<u8>,
    },
    /// Hand leadership to this voter, or (`None`) to the most up-to-date one that is reachable.
    /// Leader only. `chosen`, if given, hears which voter was asked, or `None` when the transfer
    /// was not started (not leader, or no voter to hand it to): a stopping leader need not wait.
    TransferLeader {
        to: Option<u64>,
        chosen: Option<crossbeam_channel::Sender<Option<u64>>>,
    },
    /// The transport's link to this peer closed (EOF, reset: its process probably died). If it
    /// is our leader, forget it and campaign after a short delay instead of waiting for a whole
    /// election timeout (see `Driver::peer_lost`).
    PeerLost(u64),
}

/// A validated snapshot to write to disk; [`SnapshotJob::write`] does it.
#[derive(Debug, Clone)]
pub struct SnapshotJob {
    pub index: u64,
    pub term: u64,
    /// The membership as of `index`.
    pub conf_state: ConfState,
    pub data: Vec<u8>,
}

impl SnapshotJob {
    /// Writes the file durably (fsync, rename, fsync the directory); feed the result to
    /// [`Driver::snapshot_saved`].
    pub fn write(&self, dir: &Path) -> Result<SnapshotSaved, ConsensusError> {
        snapshot_file::write(dir, self.index, self.term, &self.conf_state, &self.data)?;
        Ok(SnapshotSaved {
            index: self.index,
            term: self.term,
            conf_state: self.conf_state.clone(),
        })
    }
}

/// A snapshot file that is durable, to be recorded in the log store.
#[derive(Debug, Clone)]
pub struct SnapshotSaved {
    pub index: u64,
    pub term: u64,
    pub conf_state: ConfState,
}

/// Where a driver's results go. Called on the driver's thread, so it must not block.
pub trait Output {
    /// Messages for peers, in the order raft produced them.
    fn send(&mut self, msgs: Vec<Message>);
    /// An event for the applier.
    fn event(&mut self, event: Event);
    /// A snapshot to write off the driver's thread; report it with `Driver::snapshot_saved`.
    fn write_snapshot(&mut self, job: SnapshotJob);
    /// The driver's state changed (`status()`, …). Called before any event the applier may
    /// react to with a call that checks that state (`save_snapshot` after `Committed`).
    fn publish(&mut self, driver: &Driver) {
        let _ = driver;
    }
    /// The commit index this node knows, told before messages that may carry it go out.
    fn commit_known(&mut self, commit: u64) {
        let _ = commit;
    }
    /// A Ready's synced write starts (the raft thread reads its clock here; the driver has none).
    fn persisting(&mut self) {}
    /// That write is done; `entries` is the first and last index it appended, if any.
    fn persisted(&mut self, entries: Option<(u64, u64)>) {
        let _ = entries;
    }
}

/// The context of a follower's rejection that tells its leader where its log really ends after
/// its data was wiped (`Driver::ask_for_our_real_position`).
const WIPED: &[u8] = b"paddock:wiped";

/// `RawNode` plus paddock's rules; see the module docs.
pub struct Driver {
    id: u64,
    election_tick: usize,
    snapshot_keep_entries: u64,
    snapshot_dir: PathBuf,
    raw: RawNode<LogStore>,
    /// Last index handed to the applier.
    delivered: u64,
    /// Membership after each change applied in this process (and the one it started from), so a
    /// snapshot records the membership as of its own index. Never empty; the last is current.
    conf_history: Vec<(u64, ConfState)>,
    /// Last (is_leader, leader_id, term) reported, to emit RoleChanged only on change.
    role: (bool, u64, u64),
    /// Ticks left before the campaign a lost leader link scheduled (see `peer_lost`).
    campaign_in: Option<usize>,
    /// The snapshot index for which `SnapshotWanted` was last emitted: one event per need, until
    /// a newer snapshot is recorded.
    wanted_at: Option<u64>,
    dropped_proposals: u64,
    /// Followers with a snapshot in flight: (its index, ticks waited for the acknowledgement).
    snapshots_in_flight: HashMap<u64, (u64, usize)>,
    readies: u64,
    /// This member started with an empty store and joined an existing group (a new member, or
    /// one whose data was wiped), and has not yet caught up with a leader. Until it has, it
    /// neither votes nor campaigns: it may have acknowledged entries before losing them, and
    /// forgotten a vote cast in the current term, so its vote could hand a majority to a
    /// candidate missing committed entries (BUGS.md P4). It has caught up once it holds,
    /// persisted, an entry (or a snapshot) of the current leader's term: by log matching it then
    /// holds everything that leader held when elected, which is every committed entry.
    rejoining: bool,
    /// Prepared by `paddock import --join` (`Config::import_join`): while empty and rejoining, it
    /// votes for a candidate at the import's term.
    import_join: bool,
    /// Ticks in a row spent rejoining without knowing a leader (see `REJOIN_PATIENCE_ELECTIONS`).
    leaderless_ticks: usize,
    /// Ticks since open: the clock of `skip_repeated_acks` and of `check_quorum_heard`.
    ticks: u64,
    /// When (`ticks`) each peer was last heard from: any message it sent that reached `command`.
    heard: HashMap<u64, u64>,
    /// Peers whose link the transport reported closed (`PeerLost`) and that have not been heard
    /// from since: never picked to take over leadership (`best_successor`).
    lost: HashSet<u64>,
    /// The term this node last led in, so that a new leadership starts every peer's clock afresh.
    led_term: u64,
    /// The last append acknowledgement sent to each peer: (term, index, `ticks` when sent).
    acks_sent: HashMap<u64, (u64, u64, u64)>,
    /// Acknowledgements not sent because they repeated the last one (`skip_repeated_acks`).
    acks_skipped: u64,
    /// `Status::proposed` and `Status::committed_as_leader`.
    proposed: u64,
    committed_as_leader: u64,
    /// The sole voter campaigns once every entry committed at open has been delivered (see
    /// `open_with`).
    campaign_when_applied: bool,
}

/// How many election timeouts a rejoining member goes without any leader before it votes anyway.
/// Members that start at the same time race to bootstrap: the losers join empty, and if they are
/// needed for a majority nobody could ever be elected. Abstaining protects what a wiped member had
/// acknowledged while a leader returns within this time; past it, an ensemble that cannot elect is
/// worse, and the member warns that it votes without its old data.
pub const REJOIN_PATIENCE_ELECTIONS: usize = 10;

impl Driver {
    /// Opens (or creates) the node's store in `cfg.dir`, bootstraps a new group if this node is
    /// an initial member, and loads the newest intact snapshot. Returns the driver and the
    /// snapshot the applier must load first (`None` = start from the empty state).
    pub fn open(cfg: &Config) -> Result<(Driver, Option<ScannedSnapshot>), ConsensusError> {
        Driver::open_with(cfg, None)
    }

    /// As `open`, with the store already opened from `cfg.db_dir()` by the caller (the server
    /// opens it first to learn whether a log exists; opening RocksDB twice costs a recovery and
    /// a manifest read each time, hundreds of milliseconds at a million znodes).
    pub fn open_with(
        cfg: &Config,
        opened: Option<LogStore>,
    ) -> Result<(Driver, Option<ScannedSnapshot>), ConsensusError> {
        cfg.validate()?;
        let db_dir = cfg.db_dir();
        let snapshot_dir = cfg.snapshot_dir();
        // RocksDB creates its own files in `db_dir` with its own modes (0644 less the umask; the
        // rocksdb crate offers no way to change that). The directory, created here 0700, is what
        // keeps other users out of them: they cannot reach a name inside it.
        crate::private_fs::create_dir_all(&db_dir)?;
        crate::private_fs::create_dir_all(&snapshot_dir)?;
        snapshot_file::remove_temporaries(&snapshot_dir)?;

        let mut store = match opened {
            Some(store) => store,
            None => LogStore::open_with_segment_bytes(&db_dir, cfg.segment_bytes)?,
        };
        if !store.is_initialized() && cfg.is_initial_member() {
            tracing::info!(node = cfg.id, voters = ?cfg.voters, learners = ?cfg.learners,
                "bootstrapping a new group");
            store.bootstrap(&cfg.voters, &cfg.learners)?;
        } else if !store.is_initialized() && !store.is_rejoining() && !cfg.fresh_join {
            tracing::info!(
                node = cfg.id,
                "joining with an empty log: no votes until caught up with a leader"
            );
            store.set_rejoining(true)?;
        }
        let rejoining = store.is_rejoining();
        store.set_snapshot_dir(snapshot_dir.clone());

        let loaded = load_snapshot(&mut store, &snapshot_dir)?;
        // Raft restarts with the membership as of the state it restarts from; replaying the log
        // re-applies later membership changes in order, as they were applied the first time.
        let (applied, conf_state) = match &loaded {
            Some(s) => (s.index, s.conf_state.clone()),
            None => (
                store.first() - 1,
                store.snapshot_meta().get_conf_state().clone(),
            ),
        };
        if store.is_initialized() {
            store.restart_with_conf_state(conf_state);
        }

        let logger = crate::logger::raft_logger(cfg.id);
        let raw = RawNode::new(&cfg.raft_config(applied), store, &logger)?;
        // The role raft starts in is not news; the sole voter's election below is.
        let role = (false, INVALID_ID, raw.raft.term);
        // Alone in the group: no election timeout to wait for. But not before the committed log
        // has gone to the applier: raft-rs's campaign first reads every committed entry not yet
        // applied, to look for a pending membership change, and at a restart that is all of the
        // log after the snapshot (98.5k entries after a 1M fill: 54 ms of a 1.1 s restart spent
        // reading and parsing entries that delivery then read again).
        let campaign_when_applied =
            cfg.is_sole_voter() && raw.raft.state != StateRole::Leader && raw.raft.promotable();
        let start_conf = raw.store().conf_state().clone();
        let mut driver = Driver {
            id: cfg.id,
            election_tick: cfg.election_tick,
            snapshot_keep_entries: cfg.snapshot_keep_entries,
            snapshot_dir,
            raw,
            delivered: applied,
            conf_history: vec![(applied, start_conf)],
            role,
            campaign_in: None,
            wanted_at: None,
            dropped_proposals: 0,
            snapshots_in_flight: HashMap::new(),
            readies: 0,
            rejoining,
            import_join: cfg.import_join,
            leaderless_ticks: 0,
            ticks: 0,
            heard: HashMap::new(),
            lost: HashSet::new(),
            led_term: 0,
            acks_sent: HashMap::new(),
            acks_skipped: 0,
            proposed: 0,
            committed_as_leader: 0,
            campaign_when_applied,
        };
        driver.maybe_campaign_alone()?;
        Ok((driver, loaded))
    }

    /// One raft tick (heartbeats, election timeouts), then paddock's own timers.
    pub fn tick(&mut self) {
        if self.rejoining && self.raw.raft.leader_id == INVALID_ID {
            self.leaderless_ticks += 1;
            if self.leaderless_ticks >= REJOIN_PATIENCE_ELECTIONS * self.election_tick {
                tracing::warn!(
                    elections = REJOIN_PATIENCE_ELECTIONS,
                    "joined empty and no leader for this long: voting again without the data this \
                     member may have had (if it had acknowledged writes no other member holds, they \
                     can be lost)"
                );
                self.end_rejoining();
            }
        } else {
            self.leaderless_ticks = 0;
        }
        if self.rejoining && self.raw.raft.state != StateRole::Leader {
            // No election timeout while rejoining: it must not campaign (its own vote counts).
            self.raw.raft.election_elapsed = 0;
            self.campaign_in = None;
        }
        self.raw.tick();
        self.ticks += 1;
        self.check_quorum_heard();
        self.expire_lost_snapshots();
        if let Some(left) = self.campaign_in.take() {
            if left > 1 {
                self.campaign_in = Some(left - 1);
            } else if self.raw.raft.leader_id == INVALID_ID
                && self.raw.raft.state == StateRole::Follower
                && self.raw.raft.promotable()
            {
                // Still no leader heard since the link closed: pre-vote now. A majority that
                // still hears a live leader refuses (its lease holds), so this cannot depose it.
                tracing::info!(term = self.raw.raft.term, "leader link lost; campaigning");
                if let Err(e) = self.raw.campaign() {
                    tracing::warn!("campaign after a lost leader failed: {e}");
                }
            }
        }
    }

    /// Starts an election now (pre-vote first). For tests and for a sole voter; raft-rs
    /// randomises election timeouts, so tests elect explicitly.
    /// A learner (or a removed node) never campaigns: raft-rs 0.7 itself would start an election
    /// for one and could even win it.
    pub fn campaign(&mut self) -> Result<(), ConsensusError> {
        if !self.raw.raft.promotable() {
            tracing::warn!("not a voter: no campaign");
            return Ok(());
        }
        if self.rejoining {
            tracing::warn!("rejoining and not caught up yet: no campaign");
            return Ok(());
        }
        Ok(self.raw.campaign()?)
    }

    /// Applies one input. Only errors that must stop the node are returned.
    pub fn command(&mut self, cmd: Command, out: &mut impl Output) -> Result<(), ConsensusError> {
        match cmd {
            Command::Propose(data) => {
                // Only a leader appends. A follower's raft-rs would forward the proposal to the
                // leader, where it may commit or vanish without a trace; the caller was told "not
                // leader" semantics at the handle, so keep them here too (a proposal racing with
                // a leadership loss is dropped, and RoleChanged tells the applier).
                if self.raw.raft.state != StateRole::Leader {
                    tracing::debug!("proposal dropped: no longer leader");
                    self.dropped_proposals += 1;
                } else if let Err(e) = self.raw.propose(Vec::new(), data) {
                    tracing::warn!("proposal dropped: {e}");
                    self.dropped_proposals += 1;
                } else {
                    self.proposed += 1;
                }
            }
            Command::ConfChange(cc) => {
                if self.raw.raft.state != StateRole::Leader {
                    tracing::debug!("membership change dropped: no longer leader");
                } else if let Err(e) = self.raw.propose_conf_change(Vec::new(), cc) {
                    tracing::warn!("membership change refused: {e}");
                } else {
                    self.proposed += 1;
                }
            }
            Command::ReadIndex(ctx) => self.raw.read_index(ctx.to_be_bytes().to_vec()),
            Command::Step(mut msg) => {
                self.heard.insert(msg.from, self.ticks);
                self.lost.remove(&msg.from);
                self.answer_a_behind_candidate(&msg);
                // A leader's heartbeat carries min(what it believes we hold, its commit). After
                // our data was wiped and we rejoined empty, that belief is stale, and raft-rs
                // panics committing past the end of our log ("to_commit out of range"). Every
                // entry we hold came from this leader since the wipe (a new leader re-learns what
                // we hold), so committing only what we have is safe; the leader then finds our
                // real position and sends the rest (`ask_for_our_real_position`, below).
                let last = self.raw.raft.raft_log.last_index();
                let mut believed = None;
                if msg.get_msg_type() == MessageType::MsgHeartbeat && msg.commit > last {
                    tracing::warn!(
                        from = msg.from,
                        commit = msg.commit,
                        last,
                        "heartbeat commits past the end of this log (a wiped member rejoining); clamped"
                    );
                    believed = Some((msg.from, msg.term, msg.commit));
                    msg.commit = last;
                }
                if self.rejoining
                    && matches!(
                        msg.get_msg_type(),
                        MessageType::MsgRequestVote
                            | MessageType::MsgRequestPreVote
                            | MessageType::MsgTimeoutNow
                    )
                    && !self.votes_for_import(&msg)
                {
                    tracing::info!(
                        from = msg.from,
                        kind = ?msg.get_msg_type(),
                        "joined empty and not caught up yet: vote request ignored (if a majority \
                         of the members lost their data, none can be elected: see ARCHITECTURE.md)"
                    );
                    return Ok(());
                }
                if msg.get_msg_type() == MessageType::MsgAppendResponse
                    && msg.reject
                    && msg.context.as_ref() == WIPED
                {
                    self.correct_wiped_progress(&msg);
                    return Ok(());
                }
                if let Err(e) = self.raw.step(msg) {
                    tracing::debug!("peer message ignored: {e}");
                }
                if let Some((leader, term, believed)) = believed {
                    self.ask_for_our_real_position(leader, term, believed, last, out);
                }
            }
            Command::Unreachable(peer) => self.raw.report_unreachable(peer),
            Command::SnapshotReport { peer, ok } => {
                let status = if ok {
                    SnapshotStatus::Finish
                } else {
                    SnapshotStatus::Failure
                };
                self.raw.report_snapshot(peer, status);
            }
            Command::SaveSnapshot { index, term, data } => {
                if let Some(job) = self.snapshot_job(index, term, data) {
                    out.write_snapshot(job);
                }
            }
            Command::TransferLeader { to, chosen } => {
                let asked = self.transfer_leader(to);
                if let Some(reply) = chosen {
                    let _ = reply.try_send(asked);
                }
            }
            Command::PeerLost(peer) => self.peer_lost(peer),
        }
        Ok(())
    }

    /// Starts handing leadership to `to`, or to the most up-to-date reachable voter
    /// (`best_successor`). raft-rs sends it `MsgTimeoutNow` once its log matches (at once if it
    /// already does), and gives up after an election timeout; proposals are dropped meanwhile.
    /// Returns the voter asked, `None` if the transfer was not started.
    fn transfer_leader(&mut self, to: Option<u64>) -> Option<u64> {
        if self.raw.raft.state != StateRole::Leader {
            tracing::debug!("leader transfer ignored: not leader");
            return None;
        }
        let Some(to) = to.or_else(|| self.best_successor()) else {
            tracing::info!(
                "leader transfer ignored: no other voter is reachable and recently heard from"
            );
            return None;
        };
        if to == self.id || !self.current_conf().voters.contains(&to) {
            tracing::warn!(to, "leader transfer ignored: not another voter");
            return None;
        }
        tracing::info!(to, "transferring leadership");
        self.raw.transfer_leader(to);
        Some(to)
    }

    /// The voter (other than this leader) with the highest matched index among those heard from
    /// within the last half election timeout (two heartbeats at least) whose link is not known to be closed; the lowest id
    /// on a tie. (raft-rs's `recent_active` alone lags: it is reset once per election timeout,
    /// so a voter whose process just stopped would still be picked and the hand-over would wait
    /// for nothing.)
    fn best_successor(&self) -> Option<u64> {
        let voters = &self.current_conf().voters;
        let heartbeat = self.raw.raft.heartbeat_timeout() as u64;
        let window = (self.election_tick as u64 / 2).max(2 * heartbeat + 1);
        let fresh = |id: &u64| {
            !self.lost.contains(id)
                && self
                    .heard
                    .get(id)
                    .is_some_and(|&t| self.ticks.saturating_sub(t) <= window)
        };
        self.raw
            .raft
            .prs()
            .iter()
            .filter(|(id, pr)| {
                **id != self.id && voters.contains(id) && pr.recent_active && fresh(id)
            })
            .map(|(&id, pr)| (pr.matched, std::cmp::Reverse(id)))
            .max()
            .map(|(_, std::cmp::Reverse(id))| id)
    }

    /// A leader that has not heard from a quorum of voters (itself included) within the last
    /// `election_tick` ticks steps down. Checked every tick, so a leader keeps its quorum as long
    /// as every voter it needs spoke within one election timeout: ZooKeeper's leader likewise
    /// gives up once a quorum of its followers missed `syncLimit` ticks. raft-rs's own
    /// check-quorum (kept, as a backstop) only looks once per election timeout at who spoke since
    /// the last look, so it tolerates between one and two timeouts of silence.
    fn check_quorum_heard(&mut self) {
        if self.raw.raft.state != StateRole::Leader {
            return;
        }
        let now = self.ticks;
        if self.led_term != self.raw.raft.term {
            // A new leadership: every peer gets a whole election timeout to answer it.
            self.led_term = self.raw.raft.term;
            let peers: Vec<u64> = self.raw.raft.prs().iter().map(|(&id, _)| id).collect();
            for id in peers {
                self.heard.insert(id, now);
            }
            return;
        }
        let window = self.election_tick as u64;
        let me = self.id;
        let conf = self.current_conf().clone();
        for id in conf.voters.iter().chain(&conf.voters_outgoing) {
            // A voter this leadership has not heard of yet gets a whole window from now.
            self.heard.entry(*id).or_insert(now);
        }
        let heard = |id: &u64| {
            *id == me
                || self
                    .heard
                    .get(id)
                    .is_some_and(|&at| now.saturating_sub(at) <= window)
        };
        // A majority of the voters, and in a joint configuration of the outgoing voters too.
        let majority = |ids: &[u64]| {
            ids.is_empty() || ids.iter().filter(|id| heard(id)).count() > ids.len() / 2
        };
        if !(majority(&conf.voters) && majority(&conf.voters_outgoing)) {
            let term = self.raw.raft.term;
            tracing::warn!(
                term,
                ticks = window,
                "stepping down: a quorum of voters was not heard from within the election timeout"
            );
            self.raw.raft.become_follower(term, INVALID_ID);
        }
    }

    /// A pre-vote reached this voter while it knows no leader, from a candidate whose log is
    /// behind its own: this voter refuses it, and would win an election that candidate cannot.
    /// It campaigns at the next tick instead of waiting out its own election timeout, as
    /// ZooKeeper's leader election settles as soon as the peers that are up have exchanged their
    /// votes (a member restarted behind a lone survivor gets a leader in a tick, not a timeout).
    fn answer_a_behind_candidate(&mut self, msg: &Message) {
        let raft = &self.raw.raft;
        if msg.get_msg_type() != MessageType::MsgRequestPreVote
            || raft.leader_id != INVALID_ID
            || raft.state != StateRole::Follower
            || !raft.promotable()
            || self.rejoining
            || self.campaign_in.is_some()
        {
            return;
        }
        let ours = (raft.raft_log.last_term(), raft.raft_log.last_index());
        if (msg.log_term, msg.index) < ours {
            tracing::info!(
                from = msg.from,
                "a candidate behind this member's log asked for a pre-vote; campaigning"
            );
            self.campaign_in = Some(1);
        }
    }

    /// The transport lost its link to `peer`. On a follower whose leader that is, forget the
    /// leader at once (`leader_id` 0): check-quorum's lease then no longer makes this node ignore
    /// pre-votes, and the applier hears `RoleChanged { leader_id: 0 }`. Campaign after `1 + rank`
    /// ticks, where rank orders the other voters by id: survivors of a dead leader start one tick
    /// apart instead of splitting the vote. A leader only stops pipelining to the peer.
    fn peer_lost(&mut self, peer: u64) {
        if peer != self.id {
            self.lost.insert(peer);
        }
        let raft = &self.raw.raft;
        if raft.state == StateRole::Leader {
            self.raw.report_unreachable(peer);
            return;
        }
        if peer == INVALID_ID || peer != raft.leader_id || peer == self.id {
            return;
        }
        let term = raft.term;
        tracing::info!(peer, term, "link to the leader lost; forgetting it");
        self.raw.raft.become_follower(term, INVALID_ID);
        if self.raw.raft.promotable() {
            let rank = self
                .current_conf()
                .voters
                .iter()
                .filter(|&&v| v != peer && v < self.id)
                .count();
            self.campaign_in = Some((1 + rank).min(self.election_tick / 2).max(1));
        }
    }

    /// Handles every pending Ready, then publishes the state.
    pub fn ready(&mut self, out: &mut impl Output) -> Result<(), ConsensusError> {
        self.want_snapshot(out);
        while self.raw.has_ready() {
            self.on_ready(out)?;
            self.want_snapshot(out);
            // The deferred campaign makes a Ready of its own, handled by the next turn.
            self.maybe_campaign_alone()?;
        }
        self.check_caught_up()?;
        out.publish(self);
        Ok(())
    }

    /// True while the sole voter's campaign waits for the committed log to be delivered.
    pub(crate) fn campaign_pending(&self) -> bool {
        self.campaign_when_applied
    }

    /// The sole voter's deferred campaign (`campaign_when_applied`), once nothing committed is
    /// left to deliver.
    fn maybe_campaign_alone(&mut self) -> Result<(), ConsensusError> {
        let log = &self.raw.raft.raft_log;
        if !self.campaign_when_applied || log.applied < log.committed {
            return Ok(());
        }
        self.campaign_when_applied = false;
        if self.raw.raft.state != StateRole::Leader && self.raw.raft.promotable() {
            self.raw.campaign()?;
        }
        Ok(())
    }

    /// Ends `rejoining` once the log holds, persisted, an entry (or a snapshot) of the term of
    /// the leader this member follows.
    fn check_caught_up(&mut self) -> Result<(), ConsensusError> {
        let raft = &self.raw.raft;
        if !self.rejoining || raft.state != StateRole::Follower || raft.leader_id == INVALID_ID {
            return Ok(());
        }
        let store = self.raw.store();
        let last = store.last();
        let term = if last == store.first() - 1 {
            store.snapshot_meta().term
        } else {
            store.term_of(last)?
        };
        if last == 0 || term != raft.term {
            return Ok(());
        }
        tracing::info!(
            leader = raft.leader_id,
            term,
            last,
            "caught up after joining empty: voting again"
        );
        self.end_rejoining();
        Ok(())
    }

    /// An empty member prepared by `paddock import --join` answers the importer's (pre-)vote: a
    /// candidate whose log ends at the import's term holds the imported state and nothing a
    /// leader wrote after it. Any entry a leader of this group committed is at a later term on a
    /// majority, which then refuses such a candidate, so this vote cannot elect one that lacks a
    /// committed entry; unless that majority counts members whose data was lost, which is what
    /// abstaining guards against, and why only `import --join` (a member that never held data in
    /// this group) answers.
    fn votes_for_import(&self, msg: &Message) -> bool {
        let votes = self.import_join
            && self.raw.raft.raft_log.last_index() == 0
            && msg.log_term == crate::config::IMPORT_TERM
            && msg.index > 0
            && matches!(
                msg.get_msg_type(),
                MessageType::MsgRequestVote | MessageType::MsgRequestPreVote
            );
        if votes {
            tracing::info!(
                from = msg.from,
                kind = ?msg.get_msg_type(),
                index = msg.index,
                "prepared to join an imported state: answering the importer's vote request"
            );
        }
        votes
    }

    fn end_rejoining(&mut self) {
        self.rejoining = false;
        self.leaderless_ticks = 0;
        if let Err(e) = self.raw.mut_store().set_rejoining(false) {
            // Only the marker is lost: the next start abstains again until caught up.
            tracing::warn!("could not record that this member caught up: {e}");
        }
    }

    /// True if this node is the group's only member (one voter, no learner, no joint change).
    pub(crate) fn is_alone(&self) -> bool {
        let cs = &self.conf_history.last().expect("never empty").1;
        cs.voters.len() == 1
            && cs.learners.is_empty()
            && cs.voters_outgoing.is_empty()
            && cs.learners_next.is_empty()
    }

    /// True while this member joined empty and has not caught up with a leader (it does not
    /// vote or campaign meanwhile).
    pub fn is_rejoining(&self) -> bool {
        self.rejoining
    }

    /// raft wanted to send a peer a snapshot the store cannot give (the newest one predates the
    /// peer's membership, or is older than the peer asked for, or its file is unreadable): ask the
    /// applier for a fresh one, once per stored snapshot.
    fn want_snapshot(&mut self, out: &mut impl Output) {
        let Some(peer) = self.raw.store().take_snapshot_wanted() else {
            return;
        };
        let have = self.raw.store().snapshot_meta().index;
        if self.wanted_at == Some(have) {
            return;
        }
        self.wanted_at = Some(have);
        tracing::info!(
            peer,
            snapshot = have,
            "asking the applier for a fresh snapshot"
        );
        out.event(Event::SnapshotWanted { peer });
    }

    /// One Ready, in the order of docs/consensus.md §4 (numbered as in the crate docs).
    fn on_ready(&mut self, out: &mut impl Output) -> Result<(), ConsensusError> {
        let mut rd = self.raw.ready();
        self.readies += 1;

        // 1. Role: published, and told to the applier, before anything committed in the new role
        // and before the messages that tell the peers of it (below): a peer that learns from our
        // first append that we lead may forward a proposal at once, and `Handle::propose` must not
        // refuse it as NotLeader while this Ready's fsync runs (BUGS.md P7).
        self.report_role(out);
        // 1b. Leader messages go out before our own fsync (raft thesis 10.2.1).
        if !rd.messages().is_empty() {
            self.send(rd.take_messages(), out);
        }

        // 2. A snapshot from the leader replaces everything before it. The file is written (and
        // fsynced) here, before step 4 records it in the log store: a crash in between leaves an
        // unrecorded file, which start-up ignores or uses, both consistent.
        let installed = if rd.snapshot().is_empty() {
            None
        } else {
            let snap = rd.snapshot();
            let meta = snap.get_metadata().clone();
            snapshot_file::write(
                &self.snapshot_dir,
                meta.index,
                meta.term,
                meta.get_conf_state(),
                &snap.data,
            )?;
            crate::crash_point!("install-file-written");
            tracing::info!(
                index = meta.index,
                term = meta.term,
                "installing snapshot from leader"
            );
            self.delivered = meta.index;
            self.conf_history = vec![(meta.index, meta.get_conf_state().clone())];
            out.publish(self);
            out.event(Event::InstallSnapshot(Snapshot {
                index: meta.index,
                term: meta.term,
                data: snap.data.to_vec(),
            }));
            let cs = meta.get_conf_state();
            out.event(Event::MembershipChanged {
                index: meta.index,
                voters: cs.voters.clone(),
                learners: cs.learners.clone(),
                context: Vec::new(),
            });
            Some(meta)
        };

        // 3. Entries committed by earlier Readys (already durable).
        self.deliver(rd.take_committed_entries(), out)?;

        // 4. Group commit: everything this Ready must persist, in one batch, synced when raft
        // needs it (`LogStore::write_ready`).
        let appended = rd
            .entries()
            .first()
            .zip(rd.entries().last())
            .map(|(f, l)| (f.index, l.index));
        out.persisting();
        self.raw
            .mut_store()
            .write_ready(installed.as_ref(), rd.entries(), rd.hs())?;
        out.persisted(appended);
        if let Some(meta) = &installed {
            crate::crash_point!("install-recorded");
            // Older snapshot files go only now that the install is durable: until then the log
            // before it, and the snapshots it rests on, are what a restart uses. After it the log
            // starts past the installed snapshot, which is then the only state this member holds
            // (no fallback): a damaged copy of it refuses the start, and `paddock repair` says to
            // rejoin.
            let previous = snapshot_file::previous(&self.snapshot_dir, meta.index)?;
            snapshot_file::prune_before(&self.snapshot_dir, previous)?;
        }

        // 5. Read barriers.
        for rs in rd.take_read_states() {
            emit_read_state(rs, out);
        }

        // 6. Votes and acks only after the fsync.
        if !rd.persisted_messages().is_empty() {
            self.send(rd.take_persisted_messages(), out);
        }

        // 7. What became possible now that the Ready is durable.
        // The committed entries go out before the commit index is recorded: that record is an
        // unsynced hint (see `LogStore::set_commit`), and writing it first kept every reply
        // waiting for one more store write.
        let mut light = self.raw.advance(rd);
        if !light.messages().is_empty() {
            self.send(light.take_messages(), out);
        }
        self.deliver(light.take_committed_entries(), out)?;
        if let Some(commit) = light.commit_index() {
            if self.is_alone() {
                self.raw.mut_store().note_commit(commit);
            } else {
                self.raw.mut_store().set_commit(commit)?;
            }
        }
        self.raw.advance_apply();
        Ok(())
    }

    /// Hands raft's messages to the transport, less the acknowledgements that tell the leader
    /// nothing (`skip_repeated_acks`).
    fn send(&mut self, mut msgs: Vec<Message>, out: &mut impl Output) {
        // Before the peers can learn of a commit, so nothing they answer after applying it can
        // reach this node's applier ahead of its own knowledge (`Handle::commit_known`).
        out.commit_known(self.raw.raft.raft_log.committed);
        self.skip_repeated_acks(&mut msgs);
        if !msgs.is_empty() {
            out.send(msgs);
        }
    }

    /// Drops an append acknowledgement that repeats, within the same tick, the last one sent to
    /// that peer: same term, same index, not a rejection.
    ///
    /// After every commit a leader tells its followers the new commit index in an append without
    /// entries, and raft-rs has each follower acknowledge it with the index it acknowledged a
    /// moment before. The leader learns nothing from it: its progress for the follower stays where
    /// it was (raft-rs's `maybe_update` refuses an index that is not higher), no inflight slot is
    /// freed, and the follower's commit index it records is never read. Sent, it cost a message and
    /// a wake-up on both sides per follower per write: on three members sharing a core, one lock
    /// hand-off sent 30 messages and took 1,600 us of CPU; without the repeats, 25 and 1,460 us.
    ///
    /// A repeat is sent anyway once a tick has passed since the original. That matters when the
    /// original was lost (a link that broke): a leader whose follower's acknowledgement went
    /// missing probes again after each heartbeat response, and that probe's answer, a tick or more
    /// later, goes out. The cost of the loss is then at most one more heartbeat interval.
    /// Rejections are always sent (they carry a hint and move the leader's probe), and the
    /// acknowledgement after one always goes out: the leader waits for it before it sends more.
    fn skip_repeated_acks(&mut self, msgs: &mut Vec<Message>) {
        let now = self.ticks;
        let before = msgs.len();
        msgs.retain(|m| {
            if m.get_msg_type() != MessageType::MsgAppendResponse {
                return true;
            }
            if m.reject {
                // The leader will probe from the hint; its answer must reach it even if it names
                // the index acknowledged last.
                self.acks_sent.remove(&m.to);
                return true;
            }
            let this = (m.term, m.index, now);
            self.acks_sent.insert(m.to, this) != Some(this)
        });
        self.acks_skipped += (before - msgs.len()) as u64;
    }

    /// The leader believes we hold up to `believed` (a heartbeat's commit), but our log ends at
    /// `last`: our data was wiped. Heartbeats alone never correct that belief (raft-rs answers
    /// them without an index), so until the next write made the leader append to us, a wiped
    /// member of an idle ensemble held nothing, and, not caught up, could not serve (BUGS.md P8).
    /// Tell the leader where our log really ends: a rejection marked `WIPED` (raft-rs itself
    /// ignores it as stale), which the leader's driver turns into a probe from there
    /// (`correct_wiped_progress`).
    fn ask_for_our_real_position(
        &mut self,
        leader: u64,
        term: u64,
        believed: u64,
        last: u64,
        out: &mut impl Output,
    ) {
        let raft = &self.raw.raft;
        if raft.state != StateRole::Follower || raft.leader_id != leader || raft.term != term {
            return;
        }
        let mut m = Message::default();
        m.set_msg_type(MessageType::MsgAppendResponse);
        m.to = leader;
        m.from = self.id;
        m.term = term;
        m.reject = true;
        m.index = believed;
        m.reject_hint = last;
        m.commit = raft.raft_log.committed;
        m.context = WIPED.to_vec().into();
        out.send(vec![m]);
    }

    /// On the leader: a follower says its log ends at `reject_hint`, below what this leader
    /// believes it matches (`ask_for_our_real_position`). Every entry it holds came from this
    /// leader since its wipe, so its log is a prefix of ours: lower the belief and probe from
    /// there (appends, or a snapshot if that part of our log is compacted). Lowering a match only
    /// delays commits, never commits anything early.
    fn correct_wiped_progress(&mut self, msg: &Message) {
        let raft = &mut self.raw.raft;
        if raft.state != StateRole::Leader || msg.term != raft.term {
            return;
        }
        let Some(pr) = raft.mut_prs().get_mut(msg.from) else {
            return;
        };
        if pr.matched <= msg.reject_hint || pr.state == ProgressState::Snapshot {
            return;
        }
        tracing::info!(
            peer = msg.from,
            believed = pr.matched,
            last = msg.reject_hint,
            "a follower's log ends before what this leader believed it held (its data was wiped): probing from its end"
        );
        pr.matched = msg.reject_hint;
        pr.become_probe();
        raft.send_append(msg.from);
    }

    /// Emits `RoleChanged` when leadership, the known leader or the term changed (a term alone:
    /// the same leader re-elected, and what the old term held may have been dropped). The new
    /// role is published first (`Output::publish`): the applier reacts to the event with calls
    /// that check it (`Handle::propose` wants a leader, `Handle::read_index` a known one).
    fn report_role(&mut self, out: &mut impl Output) {
        let raft = &self.raw.raft;
        let role = (raft.state == StateRole::Leader, raft.leader_id, raft.term);
        if role != self.role {
            self.role = role;
            out.publish(self);
            let (is_leader, leader_id, term) = role;
            tracing::info!(is_leader, leader = leader_id, term, "role changed");
            out.event(Event::RoleChanged {
                is_leader,
                leader_id,
                term,
            });
        }
    }

    /// raft-rs stops replicating to a follower once it sends it a snapshot, until the follower
    /// acknowledges it or someone calls `report_snapshot`. A snapshot message lost on the way (a
    /// partition, a follower restarting) would leave that follower behind for good, so a
    /// snapshot unacknowledged for `SNAPSHOT_ACK_ELECTIONS` election timeouts (counted in ticks)
    /// is reported as failed: raft-rs probes the follower again at the next heartbeat and
    /// resends. A late acknowledgement of the first copy is harmless; the follower ignores the
    /// second.
    fn expire_lost_snapshots(&mut self) {
        if self.raw.raft.state != StateRole::Leader {
            self.snapshots_in_flight.clear();
            return;
        }
        let pending: HashMap<u64, u64> = self
            .raw
            .raft
            .prs()
            .iter()
            .filter(|(_, pr)| pr.state == ProgressState::Snapshot)
            .map(|(&id, pr)| (id, pr.pending_snapshot))
            .collect();
        self.snapshots_in_flight
            .retain(|id, (index, _)| pending.get(id) == Some(index));
        let limit = self.election_tick * SNAPSHOT_ACK_ELECTIONS;
        let mut lost = Vec::new();
        for (id, index) in pending {
            let waited = &mut self.snapshots_in_flight.entry(id).or_insert((index, 0)).1;
            *waited += 1;
            if *waited >= limit {
                lost.push((id, index));
            }
        }
        for (id, index) in lost {
            tracing::warn!(
                peer = id,
                index,
                "snapshot not acknowledged; sending it again"
            );
            self.snapshots_in_flight.remove(&id);
            self.raw.report_snapshot(id, SnapshotStatus::Failure);
        }
    }

    /// Hands committed entries to the applier after checking they are durable and contiguous.
    fn deliver(
        &mut self,
        entries: Vec<Entry>,
        out: &mut impl Output,
    ) -> Result<(), ConsensusError> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut batch = Vec::with_capacity(entries.len());
        let leading = self.raw.raft.state == StateRole::Leader;
        for mut e in entries {
            // raft's empty entry at the start of a term was proposed by no one.
            if leading && !(e.get_entry_type() == EntryType::EntryNormal && e.data.is_empty()) {
                self.committed_as_leader += 1;
            }
            if e.index != self.delivered + 1 {
                panic!(
                    "raft delivered entry {} after {}: the applier would skip or repeat",
                    e.index, self.delivered
                );
            }
            let store = self.raw.store();
            // The term comparison uses the cache only: a restart replays far more entries than it
            // holds, and reading each one back from the segments would double the replay cost.
            let durable = e.index <= store.last()
                && !matches!(store.cached_term(e.index), Some(t) if t != e.term);
            if !durable {
                panic!(
                    "entry {} (term {}) committed before it was durable (log ends at {})",
                    e.index,
                    e.term,
                    store.last()
                );
            }
            self.delivered = e.index;
            let changed = match e.get_entry_type() {
                EntryType::EntryNormal => None,
                EntryType::EntryConfChange => {
                    let cc = ConfChange::parse_from_bytes(&e.data)?;
                    let context = cc.context.to_vec();
                    self.apply_conf_change(e.index, &cc)?
                        .map(|cs| (cs, context))
                }
                EntryType::EntryConfChangeV2 => {
                    let cc = ConfChangeV2::parse_from_bytes(&e.data)?;
                    let context = cc.context.to_vec();
                    self.apply_conf_change(e.index, &cc)?
                        .map(|cs| (cs, context))
                }
            };
            // A membership change reaches the applier as a no-op (empty data).
            let data = match e.get_entry_type() {
                EntryType::EntryNormal => std::mem::take(&mut e.data),
                _ => bytes::Bytes::new(),
            };
            batch.push(CommittedEntry {
                index: e.index,
                term: e.term,
                data,
            });
            if let Some((cs, context)) = changed {
                // The batch ends at the change, so the applier has applied exactly up to it
                // when it hears of the new membership.
                // Published now, before the applier hears of the entry, not after this Ready's
                // write: an applier that has applied the change must find it in the handle (the
                // server's ReconfigInProgress reads it).
                out.publish(self);
                self.emit_committed(std::mem::take(&mut batch), out);
                out.event(Event::MembershipChanged {
                    index: e.index,
                    voters: cs.voters,
                    learners: cs.learners,
                    context,
                });
            }
        }
        self.emit_committed(batch, out);
        if self.is_alone() {
            // No follower will ask for these entries; the cache's copies go now, so the
            // applier's drop frees each entry's buffer on the thread that allocated it. Freed
            // here, 4096 entries later, every buffer crossed threads (glibc's per-thread cache
            // never got them back): a smaller cache alone made sets 2.9% faster.
            self.raw.mut_store().uncache_through(self.delivered);
        }
        Ok(())
    }

    fn emit_committed(&mut self, batch: Vec<CommittedEntry>, out: &mut impl Output) {
        if batch.is_empty() {
            return;
        }
        // Publish before emitting so an applier that reacts to these entries (save_snapshot at
        // the last one) sees a status that already covers them.
        out.publish(self);
        out.event(Event::Committed(batch));
    }

    fn apply_conf_change(
        &mut self,
        index: u64,
        cc: &impl raft_proto::ConfChangeI,
    ) -> Result<Option<ConfState>, ConsensusError> {
        let cs = match self.raw.apply_conf_change(cc) {
            Ok(cs) => cs,
            // A change raft cannot apply (e.g. removing the last voter) was committed anyway:
            // every replica refuses it the same way, so skipping keeps them in step.
            Err(raft::Error::ConfChangeError(why)) => {
                tracing::error!(index, "membership change not applied: {why}");
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        tracing::info!(index, voters = ?cs.voters, learners = ?cs.learners, "membership changed");
        self.conf_history.push((index, cs.clone()));
        self.raw.mut_store().set_conf_state(cs.clone())?;
        Ok(Some(cs))
    }

    /// The membership now (as of the last delivered entry).
    fn current_conf(&self) -> &ConfState {
        &self
            .conf_history
            .last()
            .expect("conf_history is never empty")
            .1
    }

    /// The membership in force after applying entry `index`.
    fn conf_state_at(&self, index: u64) -> Option<ConfState> {
        self.conf_history
            .iter()
            .rev()
            .find(|(i, _)| *i <= index)
            .map(|(_, cs)| cs.clone())
    }

    /// Validates a snapshot request (here, where the log and membership are known).
    fn snapshot_job(&self, index: u64, term: u64, data: Vec<u8>) -> Option<SnapshotJob> {
        let store = self.raw.store();
        if index <= store.snapshot_meta().index {
            tracing::debug!(
                index,
                "snapshot request not newer than the current snapshot; ignored"
            );
            return None;
        }
        if index > self.delivered {
            tracing::error!(
                index,
                delivered = self.delivered,
                "snapshot request past the applied index; ignored"
            );
            return None;
        }
        match store.term_of(index) {
            Ok(t) if t == term => {}
            other => {
                tracing::error!(index, term, log_term = ?other.ok(), "snapshot request term mismatch; ignored");
                return None;
            }
        }
        let Some(conf_state) = self.conf_state_at(index) else {
            tracing::error!(
                index,
                "no membership known as of the snapshot index; ignored"
            );
            return None;
        };
        Some(SnapshotJob {
            index,
            term,
            conf_state,
            data,
        })
    }

    /// The snapshot file is durable: record it and compact the log. The log is never compacted
    /// past the second-newest durable snapshot (so a damaged newest file can fall back to it) and
    /// keeps `snapshot_keep_entries` behind the newest. Returns the index below which snapshot
    /// files are no longer needed, once recorded: the caller deletes them
    /// (`snapshot_file::prune_before`), off the raft thread. Deleting a 160 MB snapshot took the
    /// thread 60-100 ms (a file system mounted with `discard` trims the freed blocks as it
    /// frees them), and every write waited for it.
    pub fn snapshot_saved(&mut self, saved: SnapshotSaved) -> Result<Option<u64>, ConsensusError> {
        let store = self.raw.store();
        if saved.index <= store.snapshot_meta().index {
            return Ok(None);
        }
        let previous = snapshot_file::previous(&self.snapshot_dir, saved.index)?;
        let compact_to = saved
            .index
            .saturating_sub(self.snapshot_keep_entries)
            .min(previous);
        let meta = SnapshotMetadata {
            index: saved.index,
            term: saved.term,
            conf_state: Some(saved.conf_state).into(),
            ..Default::default()
        };
        match self.raw.mut_store().record_snapshot(&meta, compact_to) {
            Ok(()) => crate::crash_point!("snapshot-recorded"),
            // The log moved under the request (e.g. a leader's snapshot was installed meanwhile):
            // the file is useless but harmless.
            Err(ConsensusError::Invalid(why)) => {
                tracing::warn!(index = saved.index, "snapshot not recorded: {why}");
                return Ok(None);
            }
            Err(e) => return Err(e),
        }
        // Later snapshots are newer than this one: older memberships are no longer needed.
        let keep_from = self
            .conf_history
            .iter()
            .rposition(|(i, _)| *i <= saved.index)
            .unwrap_or(0);
        self.conf_history.drain(..keep_from);
        tracing::info!(
            index = saved.index,
            first_index = self.raw.store().first(),
            "snapshot durable; log compacted"
        );
        Ok(Some(previous))
    }

    /// The node's state now.
    pub fn status(&self) -> Status {
        let raft = &self.raw.raft;
        let store = self.raw.store();
        Status {
            id: self.id,
            leader_id: raft.leader_id,
            term: raft.term,
            is_leader: raft.state == StateRole::Leader,
            commit: raft.raft_log.committed,
            last_index: store.last(),
            first_index: store.first(),
            snapshot_index: store.snapshot_meta().index,
            applied: self.delivered,
            synced_writes: store.synced_writes(),
            readies: self.readies,
            is_learner: self.current_conf().learners.contains(&self.id),
            dropped_proposals: self.dropped_proposals,
            acks_skipped: self.acks_skipped,
            proposed: self.proposed,
            committed_as_leader: self.committed_as_leader,
        }
    }

    /// The current membership: (voters, learners), each ascending. During a joint change the
    /// voters are the incoming set.
    pub fn membership(&self) -> (Vec<u64>, Vec<u64>) {
        let cs = self.current_conf();
        let mut voters = cs.voters.clone();
        let mut learners = cs.learners.clone();
        voters.sort_unstable();
        learners.sort_unstable();
        (voters, learners)
    }

    /// The members of a joint configuration that `membership` does not show: outgoing voters
    /// and learners-to-be (a voter being demoted), ascending, without duplicates.
    pub fn joint_only(&self) -> Vec<u64> {
        let cs = self.current_conf();
        let mut ids: Vec<u64> = cs
            .voters_outgoing
            .iter()
            .chain(&cs.learners_next)
            .filter(|id| !cs.voters.contains(id) && !cs.learners.contains(id))
            .copied()
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// True while the membership is a joint one (raft-rs leaves it by itself once it commits).
    pub fn is_joint(&self) -> bool {
        let cs = self.current_conf();
        !cs.voters_outgoing.is_empty() || !cs.learners_next.is_empty()
    }

    /// On the leader, its view of every other member, by id; empty elsewhere.
    pub fn progress(&self) -> Vec<PeerProgress> {
        let raft = &self.raw.raft;
        if raft.state != StateRole::Leader {
            return Vec::new();
        }
        let learners = &self.current_conf().learners;
        let mut out: Vec<PeerProgress> = raft
            .prs()
            .iter()
            .filter(|(&id, _)| id != self.id)
            .map(|(&id, pr)| PeerProgress {
                id,
                matched: pr.matched,
                is_learner: learners.contains(&id),
                recent_active: pr.recent_active,
            })
            .collect();
        out.sort_unstable_by_key(|p| p.id);
        out
    }

    /// Uncommitted payload bytes as raft counts them for back-pressure (0 when not leading).
    pub fn uncommitted_bytes(&self) -> u64 {
        if self.raw.raft.state == StateRole::Leader {
            self.raw.raft.uncommitted_size() as u64
        } else {
            0
        }
    }

    /// The raft node itself, for inspection (tests, metrics).
    pub fn raw(&self) -> &RawNode<LogStore> {
        &self.raw
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// Where this node's snapshot files live.
    pub fn snapshot_dir(&self) -> &Path {
        &self.snapshot_dir
    }
}

fn emit_read_state(rs: raft::ReadState, out: &mut impl Output) {
    match <[u8; 8]>::try_from(rs.request_ctx.as_slice()) {
        Ok(ctx) => out.event(Event::ReadIndexReady {
            ctx: u64::from_be_bytes(ctx),
            index: rs.index,
        }),
        Err(_) => tracing::warn!(
            len = rs.request_ctx.len(),
            "read state with a foreign context ignored"
        ),
    }
}

/// Finds the newest intact snapshot and checks the log can continue from it.
fn load_snapshot(
    store: &mut LogStore,
    dir: &Path,
) -> Result<Option<snapshot_file::ScannedSnapshot>, ConsensusError> {
    let Some(file) = snapshot_file::load_newest(dir, store.last())? else {
        // Without a snapshot the log must reach back to the bootstrap snapshot (or be empty).
        if store.first() > BOOTSTRAP_INDEX + 1 {
            return Err(ConsensusError::Corrupt(format!(
                "the log starts at {} but no intact snapshot covers the entries before it",
                store.first()
            )));
        }
        return Ok(None);
    };
    if file.index + 1 < store.first() {
        return Err(ConsensusError::Corrupt(format!(
            "newest intact snapshot is at {} but the log starts at {}",
            file.index,
            store.first()
        )));
    }
    let log_term = store.term_of(file.index)?;
    if log_term != file.term {
        return Err(ConsensusError::Corrupt(format!(
            "snapshot at {} has term {} but the log says {log_term}",
            file.index, file.term
        )));
    }
    // A snapshot is only ever taken of applied, hence committed, state; a commit index behind it
    // was not written yet (commits ride with the next batch: `LogStore::write_ready`) or lost
    // with an unsynced write, and can be restored from it.
    if file.index > store.hard_state().commit {
        store.set_commit(file.index)?;
    }
    tracing::info!(
        index = file.index,
        term = file.term,
        bytes = file.data_len,
        "loaded snapshot"
    );
    Ok(Some(file))
}
