//! Node configuration and its translation into raft-rs settings.

use std::path::PathBuf;
use std::time::Duration;

use crate::ConsensusError;

/// Largest AppendEntries payload; bigger batches are split across messages.
pub const MAX_SIZE_PER_MSG: u64 = 1024 * 1024;
/// Pipelining window per follower.
pub const MAX_INFLIGHT_MSGS: usize = 256;
/// Bound on the bytes of committed entries handed out per Ready, so one apply batch stays small.
pub const MAX_COMMITTED_SIZE_PER_READY: u64 = 16 * 1024 * 1024;
/// Default bound on the payload bytes a leader holds appended but not yet committed
/// (back-pressure: past it `Handle::propose` answers `Busy`). 32 MiB is well over a second of
/// writes at the rates paddock sees (entries are a few hundred bytes, at most jute.maxbuffer,
/// 1 MiB), so a healthy quorum never reaches it; a leader whose followers stall stops taking
/// writes instead of buffering without limit.
pub const MAX_UNCOMMITTED_BYTES: u64 = 32 * 1024 * 1024;

/// Settings for one node. `dir` holds `raftdb/` (the log: RocksDB's checkpoint and `log/`) and `snapshots/`.
#[derive(Debug, Clone)]
pub struct Config {
    pub id: u64,
    pub dir: PathBuf,
    /// Initial voters. A node whose id is listed bootstraps the group with this membership; a node
    /// not listed starts empty and waits for a leader's snapshot (a later-added member).
    pub voters: Vec<u64>,
    /// Initial learners (ZooKeeper observers): bootstrapped into the initial membership with
    /// `voters` by every initial member. A node listed here bootstraps too, and replicates
    /// without voting.
    pub learners: Vec<u64>,
    /// This node starts empty and joins a group that was only just bootstrapped (its peers hold
    /// nothing past the bootstrap entry): it never held data, so it votes at once instead of
    /// waiting to catch up (see `Driver`'s `rejoining`). Members started together race to
    /// bootstrap, and the losers join this way.
    pub fresh_join: bool,
    /// This node was prepared to join a group that an import created (`paddock import --join`: the
    /// importer holds the imported state as a snapshot of term [`IMPORT_TERM`] and nothing else).
    /// While it is still empty and rejoining it grants its vote to a candidate whose log ends at
    /// that term, the importer at the group's birth, instead of abstaining for
    /// `REJOIN_PATIENCE_ELECTIONS`: it never held data in this group, so it has nothing to forget.
    /// A candidate whose log went past the import (a leader's entry) still gets no vote until this
    /// node caught up.
    pub import_join: bool,
    pub tick: Duration,
    /// A leader steps down once it has not heard from a quorum for this many ticks (checked every
    /// tick, `Driver::tick`), and a follower that hears no leader campaigns after a random number
    /// of ticks in `election_tick..max_election_tick`.
    pub election_tick: usize,
    /// The end (exclusive) of a follower's randomised election timeout; 0 = `2 * election_tick`
    /// (raft-rs's default).
    pub max_election_tick: usize,
    pub heartbeat_tick: usize,
    /// Entries kept in the log behind the newest snapshot, so lagging followers can catch up from
    /// the log instead of needing a snapshot.
    pub snapshot_keep_entries: u64,
    /// Back-pressure bound on uncommitted payload bytes on the leader (see
    /// `MAX_UNCOMMITTED_BYTES`: 32 MiB in `standalone`), enforced by `Handle::propose`. One entry is always admitted,
    /// however large. raft-rs's own backstop is set to this, or 1 MiB if smaller.
    pub max_uncommitted_bytes: u64,
    /// The size of new log segments (`segments::SEGMENT_BYTES`; tests use small ones to fill,
    /// rotate, prune and reuse several).
    pub segment_bytes: u64,
}

/// The term of an imported state's snapshot (`paddock import`): every leader of the group it starts
/// writes entries of a later term.
pub const IMPORT_TERM: u64 = 1;

impl Config {
    /// A group of one: id 1, voters `[1]`, 100 ms tick, election after 10 ticks, heartbeat every 3.
    pub fn standalone(dir: impl Into<PathBuf>) -> Config {
        Config {
            id: 1,
            dir: dir.into(),
            voters: vec![1],
            learners: Vec::new(),
            fresh_join: false,
            import_join: false,
            tick: Duration::from_millis(100),
            election_tick: 10,
            max_election_tick: 0,
            heartbeat_tick: 3,
            snapshot_keep_entries: 1000,
            max_uncommitted_bytes: MAX_UNCOMMITTED_BYTES,
            segment_bytes: crate::segments::SEGMENT_BYTES,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), ConsensusError> {
        if self.id == 0 {
            return Err(ConsensusError::Invalid(
                "node id 0 is reserved by raft".into(),
            ));
        }
        if self.voters.contains(&0) {
            return Err(ConsensusError::Invalid(
                "voter id 0 is reserved by raft".into(),
            ));
        }
        if self.learners.contains(&0) {
            return Err(ConsensusError::Invalid(
                "learner id 0 is reserved by raft".into(),
            ));
        }
        if let Some(both) = self.learners.iter().find(|l| self.voters.contains(l)) {
            return Err(ConsensusError::Invalid(format!(
                "node {both} is listed both as a voter and as a learner"
            )));
        }
        if self.voters.is_empty() && !self.learners.is_empty() {
            return Err(ConsensusError::Invalid(
                "a group with learners needs at least one voter".into(),
            ));
        }
        if self.max_uncommitted_bytes == 0 {
            return Err(ConsensusError::Invalid(
                "max_uncommitted_bytes must be positive".into(),
            ));
        }
        if self.tick.is_zero() {
            return Err(ConsensusError::Invalid("tick must be positive".into()));
        }
        if self.heartbeat_tick == 0 || self.election_tick <= self.heartbeat_tick {
            return Err(ConsensusError::Invalid(format!(
                "election_tick ({}) must exceed heartbeat_tick ({}) > 0",
                self.election_tick, self.heartbeat_tick
            )));
        }
        if self.max_election_tick != 0 && self.max_election_tick <= self.election_tick {
            return Err(ConsensusError::Invalid(format!(
                "max_election_tick ({}) must exceed election_tick ({})",
                self.max_election_tick, self.election_tick
            )));
        }
        Ok(())
    }

    /// True when this node is an initial member (voter or learner): it bootstraps the group.
    pub(crate) fn is_initial_member(&self) -> bool {
        self.voters.contains(&self.id) || self.learners.contains(&self.id)
    }

    /// True when this node alone is the whole group: it can elect itself without waiting.
    pub(crate) fn is_sole_voter(&self) -> bool {
        self.voters == [self.id]
    }

    pub(crate) fn raft_config(&self, applied: u64) -> raft::Config {
        raft::Config {
            id: self.id,
            election_tick: self.election_tick,
            max_election_tick: self.max_election_tick,
            heartbeat_tick: self.heartbeat_tick,
            applied,
            max_size_per_msg: MAX_SIZE_PER_MSG,
            max_inflight_msgs: MAX_INFLIGHT_MSGS,
            check_quorum: true,
            pre_vote: true,
            // Leases break under pauses and clock jumps (docs/consensus.md §3).
            read_only_option: raft::ReadOnlyOption::Safe,
            max_committed_size_per_ready: MAX_COMMITTED_SIZE_PER_READY,
            // The handle refuses proposals past this bound with `Busy` before they reach raft;
            // raft-rs's own limit is the backstop (it drops what passes, counted in
            // `Status::dropped_proposals`).
            // (raft-rs insists on at least one message's worth.)
            max_uncommitted_size: self.max_uncommitted_bytes.max(MAX_SIZE_PER_MSG),
            ..Default::default()
        }
    }

    /// The election timeout in wall time (the randomised timeout lies between this and twice it).
    pub fn election_timeout(&self) -> Duration {
        self.tick * self.election_tick as u32
    }

    pub(crate) fn db_dir(&self) -> PathBuf {
        self.dir.join("raftdb")
    }

    pub(crate) fn snapshot_dir(&self) -> PathBuf {
        self.dir.join("snapshots")
    }
}
