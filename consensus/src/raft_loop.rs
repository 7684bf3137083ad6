//! The raft thread: owns the `RawNode` and the log store, runs the Ready loop, and the snapshot
//! writer thread it hands files to.
//!
//! Ready handling follows consensus-notes §4 (see the crate docs for the picture). The one rule
//! that matters most: committed entries go to the applier only when they are durable here. raft-rs
//! guarantees it (it hands out entries up to min(commit, persisted)); `deliver` checks it anyway
//! and stops the node if it is ever broken, because a replica that applied a non-durable entry can
//! diverge after a crash.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use crossbeam_channel::{select, Receiver, Sender};
use protobuf::Message as _;
use raft::eraftpb::{
    ConfChange, ConfChangeV2, ConfState, Entry, EntryType, Message, SnapshotMetadata,
};
use raft::{ProgressState, RawNode, SnapshotStatus, StateRole};

use crate::snapshot_file;
use crate::status::{Shared, Status};
use crate::storage::LogStore;
use crate::transport::Transport;
use crate::{CommittedEntry, Config, ConsensusError, Event, Snapshot};

/// Commands taken from the channel before handling a Ready: enough to amortise an fsync over a
/// large burst, small enough to keep one iteration's latency and memory bounded.
const MAX_COMMANDS_PER_READY: usize = 4096;

/// Election timeouts a leader waits for a follower to acknowledge a snapshot before it takes the
/// snapshot as lost and sends it again (see `expire_lost_snapshots`).
const SNAPSHOT_ACK_ELECTIONS: usize = 5;

pub(crate) enum Command {
    Propose(Vec<u8>),
    ConfChange(ConfChangeV2),
    ReadIndex(u64),
    Step(Message),
    Unreachable(u64),
    SnapshotReport {
        peer: u64,
        ok: bool,
    },
    SaveSnapshot {
        index: u64,
        term: u64,
        data: Vec<u8>,
    },
    Shutdown,
}

/// A snapshot for the writer thread, and its acknowledgement once durable.
struct SnapshotJob {
    index: u64,
    term: u64,
    conf_state: ConfState,
    data: Vec<u8>,
}

struct SnapshotSaved {
    index: u64,
    term: u64,
    conf_state: ConfState,
}

struct Node {
    cfg: Config,
    raw: RawNode<LogStore>,
    commands: Receiver<Command>,
    saved: Receiver<SnapshotSaved>,
    writer: Option<Sender<SnapshotJob>>,
    events: Sender<Event>,
    transport: Box<dyn Transport>,
    shared: Arc<Shared>,
    snapshot_dir: PathBuf,
    /// Last index handed to the applier.
    delivered: u64,
    /// Membership after each change applied in this process (and the one it started from), so a
    /// snapshot records the membership as of its own index.
    conf_history: Vec<(u64, ConfState)>,
    /// Last (is_leader, leader_id) reported, to emit RoleChanged only on change.
    role: (bool, u64),
    /// Followers with a snapshot in flight: (its index, ticks waited for the acknowledgement).
    snapshots_in_flight: HashMap<u64, (u64, usize)>,
    readies: u64,
    shutting_down: bool,
}

pub(crate) fn spawn(
    cfg: Config,
    store: LogStore,
    applied: u64,
    commands: Receiver<Command>,
    events: Sender<Event>,
    transport: Box<dyn Transport>,
    shared: Arc<Shared>,
) -> Result<Vec<JoinHandle<()>>, ConsensusError> {
    let logger = crate::logger::raft_logger(cfg.id);
    let mut raw = RawNode::new(&cfg.raft_config(applied), store, &logger)?;
    if cfg.is_sole_voter() && raw.raft.state != StateRole::Leader {
        // Alone in the group: no election timeout to wait for.
        raw.campaign()?;
    }
    let snapshot_dir = cfg.snapshot_dir();
    let (job_tx, job_rx) = crossbeam_channel::unbounded();
    let (saved_tx, saved_rx) = crossbeam_channel::unbounded();
    let writer_dir = snapshot_dir.clone();
    let id = cfg.id;
    let writer = std::thread::Builder::new()
        .name(format!("snapshot-writer-{id}"))
        .spawn(move || write_snapshots(writer_dir, job_rx, saved_tx))?;

    let start_conf = raw.store().conf_state().clone();
    let mut node = Node {
        cfg,
        raw,
        commands,
        saved: saved_rx,
        writer: Some(job_tx),
        events,
        transport,
        shared,
        snapshot_dir,
        delivered: applied,
        conf_history: vec![(applied, start_conf)],
        role: (false, 0),
        snapshots_in_flight: HashMap::new(),
        readies: 0,
        shutting_down: false,
    };
    node.publish_status();
    let raft = std::thread::Builder::new()
        .name(format!("raft-{id}"))
        .spawn(move || {
            let span = tracing::info_span!("raft", node = id);
            let _enter = span.enter();
            // Marks the node stopped however the loop ends, panics (broken invariants) included,
            // so handles answer Stopped instead of queueing into a dead channel.
            let _stopped = StopOnExit(node.shared.clone());
            if let Err(e) = node.run() {
                tracing::error!("raft loop stopped: {e}");
            }
        })?;
    Ok(vec![raft, writer])
}

struct StopOnExit(Arc<Shared>);

impl Drop for StopOnExit {
    fn drop(&mut self) {
        self.0.stopped.store(true, Ordering::Release);
        let mut status = self.0.status();
        status.is_leader = false;
        self.0.set_status(status);
    }
}

impl Node {
    fn run(&mut self) -> Result<(), ConsensusError> {
        let tick = self.cfg.tick;
        let mut next_tick = Instant::now() + tick;
        loop {
            // Ready first: work queued before the loop started (the campaign at start) or by the
            // previous iteration must not wait for the next tick.
            while self.raw.has_ready() {
                self.on_ready()?;
            }
            self.publish_status();
            if self.shutting_down {
                break;
            }
            let timeout = next_tick.saturating_duration_since(Instant::now());
            select! {
                recv(self.commands) -> cmd => match cmd {
                    Ok(cmd) => self.command(cmd)?,
                    // Every handle is gone: nobody can use what we would produce.
                    Err(_) => self.shutting_down = true,
                },
                recv(self.saved) -> saved => match saved {
                    Ok(saved) => self.snapshot_saved(saved)?,
                    Err(_) => self.saved = crossbeam_channel::never(),
                },
                default(timeout) => {}
            }
            // Drain what is queued so one Ready (one fsync) carries the whole burst; bounded, so
            // producers faster than us cannot hold the Ready (and every commit) back forever.
            for _ in 0..MAX_COMMANDS_PER_READY {
                match self.commands.try_recv() {
                    Ok(cmd) => self.command(cmd)?,
                    Err(_) => break,
                }
            }
            while let Ok(saved) = self.saved.try_recv() {
                self.snapshot_saved(saved)?;
            }
            if Instant::now() >= next_tick {
                self.raw.tick();
                self.expire_lost_snapshots();
                next_tick = Instant::now() + tick;
            }
        }
        Ok(())
    }

    fn command(&mut self, cmd: Command) -> Result<(), ConsensusError> {
        match cmd {
            Command::Propose(data) => {
                // Only a leader appends. A follower's raft-rs would forward the proposal to the
                // leader, where it may commit or vanish without a trace; the caller was told "not
                // leader" semantics at the handle, so keep them here too (a proposal racing with
                // a leadership loss is dropped, and RoleChanged tells the applier).
                if self.raw.raft.state != StateRole::Leader {
                    tracing::debug!("proposal dropped: no longer leader");
                } else if let Err(e) = self.raw.propose(Vec::new(), data) {
                    tracing::debug!("proposal dropped: {e}");
                }
            }
            Command::ConfChange(cc) => {
                if self.raw.raft.state != StateRole::Leader {
                    tracing::debug!("membership change dropped: no longer leader");
                } else if let Err(e) = self.raw.propose_conf_change(Vec::new(), cc) {
                    tracing::warn!("membership change refused: {e}");
                }
            }
            Command::ReadIndex(ctx) => self.raw.read_index(ctx.to_be_bytes().to_vec()),
            Command::Step(msg) => {
                if let Err(e) = self.raw.step(msg) {
                    tracing::debug!("peer message ignored: {e}");
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
            Command::SaveSnapshot { index, term, data } => self.save_snapshot(index, term, data)?,
            Command::Shutdown => self.shutting_down = true,
        }
        Ok(())
    }

    fn on_ready(&mut self) -> Result<(), ConsensusError> {
        let mut rd = self.raw.ready();
        self.readies += 1;

        // 1. Leader messages go out before our own fsync (raft thesis 10.2.1).
        if !rd.messages().is_empty() {
            self.transport.send(rd.take_messages());
        }
        if let Some(ss) = rd.ss() {
            let role = (ss.raft_state == StateRole::Leader, ss.leader_id);
            if role != self.role {
                self.role = role;
                let term = self.raw.raft.term;
                tracing::info!(is_leader = role.0, leader = role.1, term, "role changed");
                self.emit(Event::RoleChanged {
                    is_leader: role.0,
                    leader_id: role.1,
                    term,
                });
            }
        }

        // 2. A snapshot from the leader replaces everything before it.
        let installed = if rd.snapshot().is_empty() {
            None
        } else {
            let snap = rd.snapshot();
            let meta = snap.get_metadata().clone();
            let previous = snapshot_file::previous(&self.snapshot_dir, meta.index)?;
            snapshot_file::write(
                &self.snapshot_dir,
                meta.index,
                meta.term,
                meta.get_conf_state(),
                &snap.data,
            )?;
            snapshot_file::prune_before(&self.snapshot_dir, previous)?;
            tracing::info!(
                index = meta.index,
                term = meta.term,
                "installing snapshot from leader"
            );
            self.delivered = meta.index;
            self.conf_history = vec![(meta.index, meta.get_conf_state().clone())];
            self.publish_status();
            self.emit(Event::InstallSnapshot(Snapshot {
                index: meta.index,
                term: meta.term,
                data: snap.data.to_vec(),
            }));
            Some(meta)
        };

        // 3. Entries committed by earlier Readys (already durable).
        self.deliver(rd.take_committed_entries())?;

        // 4. Group commit: everything this Ready must persist, in one synced batch.
        self.raw
            .mut_store()
            .write_ready(installed.as_ref(), rd.entries(), rd.hs())?;

        // 5. Read barriers.
        for rs in rd.take_read_states() {
            self.emit_read_state(rs);
        }

        // 6. Votes and acks only after the fsync.
        if !rd.persisted_messages().is_empty() {
            self.transport.send(rd.take_persisted_messages());
        }

        // 7. What became possible now that the Ready is durable.
        let mut light = self.raw.advance(rd);
        if let Some(commit) = light.commit_index() {
            self.raw.mut_store().set_commit(commit)?;
        }
        if !light.messages().is_empty() {
            self.transport.send(light.take_messages());
        }
        self.deliver(light.take_committed_entries())?;
        self.raw.advance_apply();
        Ok(())
    }

    /// raft-rs stops replicating to a follower once it sends it a snapshot, until the follower
    /// acknowledges it or someone calls `report_snapshot`. A snapshot message lost on the way (a
    /// partition, a follower restarting) would leave that follower behind for good, so a
    /// snapshot unacknowledged for `SNAPSHOT_ACK_ELECTIONS` election timeouts is reported as
    /// failed: raft-rs probes the follower again at the next heartbeat and resends. A late
    /// acknowledgement of the first copy is harmless; the follower ignores the second.
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
        let limit = self.cfg.election_tick * SNAPSHOT_ACK_ELECTIONS;
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

    fn emit_read_state(&mut self, rs: raft::ReadState) {
        match <[u8; 8]>::try_from(rs.request_ctx.as_slice()) {
            Ok(ctx) => self.emit(Event::ReadIndexReady {
                ctx: u64::from_be_bytes(ctx),
                index: rs.index,
            }),
            Err(_) => tracing::warn!(
                len = rs.request_ctx.len(),
                "read state with a foreign context ignored"
            ),
        }
    }

    /// Hands committed entries to the applier after checking they are durable and contiguous.
    fn deliver(&mut self, entries: Vec<Entry>) -> Result<(), ConsensusError> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut out = Vec::with_capacity(entries.len());
        for e in entries {
            if e.index != self.delivered + 1 {
                panic!(
                    "raft delivered entry {} after {}: the applier would skip or repeat",
                    e.index, self.delivered
                );
            }
            let store = self.raw.store();
            // The term comparison uses the cache only: a restart replays far more entries than it
            // holds, and reading each one back from RocksDB would double the replay cost.
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
            let data = match e.get_entry_type() {
                EntryType::EntryNormal => e.data.to_vec(),
                EntryType::EntryConfChange => {
                    let cc = ConfChange::parse_from_bytes(&e.data)?;
                    self.apply_conf_change(e.index, &cc)?;
                    Vec::new()
                }
                EntryType::EntryConfChangeV2 => {
                    let cc = ConfChangeV2::parse_from_bytes(&e.data)?;
                    self.apply_conf_change(e.index, &cc)?;
                    Vec::new()
                }
            };
            out.push(CommittedEntry {
                index: e.index,
                term: e.term,
                data,
            });
        }
        // Publish before emitting so an applier that reacts to these entries (save_snapshot at
        // the last one) sees a status that already covers them.
        self.publish_status();
        self.emit(Event::Committed(out));
        Ok(())
    }

    fn apply_conf_change(
        &mut self,
        index: u64,
        cc: &impl raft_proto::ConfChangeI,
    ) -> Result<(), ConsensusError> {
        let cs = match self.raw.apply_conf_change(cc) {
            Ok(cs) => cs,
            // A change raft cannot apply (e.g. removing the last voter) was committed anyway:
            // every replica refuses it the same way, so skipping keeps them in step.
            Err(raft::Error::ConfChangeError(why)) => {
                tracing::error!(index, "membership change not applied: {why}");
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        tracing::info!(index, voters = ?cs.voters, learners = ?cs.learners, "membership changed");
        self.conf_history.push((index, cs.clone()));
        self.raw.mut_store().set_conf_state(cs)
    }

    /// The membership in force after applying entry `index`.
    fn conf_state_at(&self, index: u64) -> Option<ConfState> {
        self.conf_history
            .iter()
            .rev()
            .find(|(i, _)| *i <= index)
            .map(|(_, cs)| cs.clone())
    }

    fn emit(&mut self, event: Event) {
        if self.events.send(event).is_err() {
            tracing::debug!("event dropped: the applier is gone");
        }
    }

    /// Validates a snapshot request on the raft thread (which knows the log and membership), then
    /// passes the bytes to the writer thread.
    fn save_snapshot(
        &mut self,
        index: u64,
        term: u64,
        data: Vec<u8>,
    ) -> Result<(), ConsensusError> {
        let store = self.raw.store();
        if index <= store.snapshot_meta().index {
            tracing::debug!(
                index,
                "snapshot request not newer than the current snapshot; ignored"
            );
            return Ok(());
        }
        if index > self.delivered {
            tracing::error!(
                index,
                delivered = self.delivered,
                "snapshot request past the applied index; ignored"
            );
            return Ok(());
        }
        match store.term_of(index) {
            Ok(t) if t == term => {}
            other => {
                tracing::error!(index, term, log_term = ?other.ok(), "snapshot request term mismatch; ignored");
                return Ok(());
            }
        }
        let Some(conf_state) = self.conf_state_at(index) else {
            tracing::error!(
                index,
                "no membership known as of the snapshot index; ignored"
            );
            return Ok(());
        };
        let job = SnapshotJob {
            index,
            term,
            conf_state,
            data,
        };
        if let Some(w) = &self.writer {
            if w.send(job).is_err() {
                tracing::error!("snapshot writer is gone");
                self.writer = None;
            }
        }
        Ok(())
    }

    /// The snapshot file is durable: record it, compact the log, drop old files.
    fn snapshot_saved(&mut self, saved: SnapshotSaved) -> Result<(), ConsensusError> {
        let store = self.raw.store();
        if saved.index <= store.snapshot_meta().index {
            return Ok(());
        }
        // Keep the log back to the previous snapshot too, so a damaged newest file can fall back.
        let previous = snapshot_file::previous(&self.snapshot_dir, saved.index)?;
        let compact_to = saved
            .index
            .saturating_sub(self.cfg.snapshot_keep_entries)
            .min(previous);
        let meta = SnapshotMetadata {
            index: saved.index,
            term: saved.term,
            conf_state: Some(saved.conf_state).into(),
            ..Default::default()
        };
        match self.raw.mut_store().record_snapshot(&meta, compact_to) {
            Ok(()) => {}
            // The log moved under the request (e.g. a leader's snapshot was installed meanwhile):
            // the file is useless but harmless.
            Err(ConsensusError::Invalid(why)) => {
                tracing::warn!(index = saved.index, "snapshot not recorded: {why}");
                return Ok(());
            }
            Err(e) => return Err(e),
        }
        snapshot_file::prune_before(&self.snapshot_dir, previous)?;
        // Later snapshots are newer than this one: older memberships are no longer needed.
        let keep_from = self
            .conf_history
            .iter()
            .rposition(|(i, _)| *i <= saved.index)
            .unwrap_or(0);
        self.conf_history.drain(..keep_from);
        let store = self.raw.store();
        tracing::info!(
            index = saved.index,
            first_index = store.first(),
            "snapshot durable; log compacted"
        );
        Ok(())
    }

    fn publish_status(&self) {
        let raft = &self.raw.raft;
        let store = self.raw.store();
        self.shared.set_status(Status {
            id: self.cfg.id,
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
        });
    }
}

/// The snapshot writer thread: file IO and fsyncs stay off the raft thread.
fn write_snapshots(dir: PathBuf, jobs: Receiver<SnapshotJob>, saved: Sender<SnapshotSaved>) {
    while let Ok(mut job) = jobs.recv() {
        // If the applier got ahead of the disk, only the newest state is worth writing.
        while let Ok(newer) = jobs.try_recv() {
            tracing::debug!(
                skipped = job.index,
                newer = newer.index,
                "snapshot superseded before it was written"
            );
            job = newer;
        }
        let started = Instant::now();
        match snapshot_file::write(&dir, job.index, job.term, &job.conf_state, &job.data) {
            Ok(path) => {
                tracing::info!(index = job.index, bytes = job.data.len(), ms = started.elapsed().as_millis() as u64,
                    path = %path.display(), "snapshot written");
                let _ = saved.send(SnapshotSaved {
                    index: job.index,
                    term: job.term,
                    conf_state: job.conf_state,
                });
            }
            Err(e) => tracing::error!(index = job.index, "snapshot write failed: {e}"),
        }
    }
}
