//! What the raft thread publishes for handles to read: a `Copy` status, the membership and the
//! leader's view of its peers, refreshed after every loop iteration, and the stopped flag.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// A cheap copy of the node's state, refreshed by the raft thread after every iteration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Status {
    pub id: u64,
    /// 0 when no leader is known.
    pub leader_id: u64,
    pub term: u64,
    pub is_leader: bool,
    pub commit: u64,
    /// Last index durable in the local log.
    pub last_index: u64,
    pub first_index: u64,
    /// Index of the newest durable snapshot (1 = the bootstrap snapshot).
    pub snapshot_index: u64,
    /// Last index handed to the applier.
    pub applied: u64,
    /// Synced log records written since start: one per Ready that had something to persist.
    pub synced_writes: u64,
    /// Readys processed since start.
    pub readies: u64,
    /// This node is a learner (a ZooKeeper observer): it replicates but does not vote.
    pub is_learner: bool,
    /// Proposals the raft thread dropped since start: leadership lost after the handle's check,
    /// a leader transfer in progress, or raft-rs's uncommitted-size backstop. The applier learns
    /// of the first two through `RoleChanged` and its own timeouts.
    pub dropped_proposals: u64,
    /// Append acknowledgements not sent since start because they repeated, within a tick, the
    /// last one sent to the same leader (the answers to commit-only appends: see the driver).
    pub acks_skipped: u64,
    /// Entries (data and membership changes) this node appended as leader since start: ZooKeeper's
    /// `proposal_count`, which its leader counts in `Leader.propose`.
    pub proposed: u64,
    /// Entries this node saw committed while it led, since start, leaving out raft's empty entry
    /// at the start of each term: ZooKeeper's `commit_count`, counted in `Leader.commit`.
    pub committed_as_leader: u64,
}

/// The leader's view of one peer (see `Handle::progress`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerProgress {
    pub id: u64,
    /// Highest log index known to be replicated on the peer.
    pub matched: u64,
    pub is_learner: bool,
    /// The leader heard from it within the last election timeout.
    pub recent_active: bool,
}

/// What handles read besides `Status`: the current membership and, on the leader, its peers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Detail {
    pub voters: Vec<u64>,
    pub learners: Vec<u64>,
    /// A joint configuration (a change of more than one member) is not yet left.
    pub joint: bool,
    /// In a joint configuration: the outgoing voters and the learners-to-be (ascending), members
    /// raft still counts that `voters` and `learners` do not show.
    pub joint_only: Vec<u64>,
    pub progress: Vec<PeerProgress>,
}

#[derive(Default)]
pub(crate) struct Shared {
    pub status: Mutex<Status>,
    pub detail: Mutex<Detail>,
    pub stopped: AtomicBool,
    /// Back-pressure accounting (see `Handle::propose`): the leader's uncommitted payload bytes
    /// as raft counts them, published by the raft thread after each proposal and Ready, and the
    /// bytes of proposals queued for the raft thread but not yet taken. The raft thread
    /// publishes a proposal's effect before it un-queues it, so the sum never under-counts.
    pub uncommitted: AtomicU64,
    pub queued: AtomicU64,
    /// The commit index this node knows, stored before every batch of messages goes out (the
    /// status above is published once per loop iteration, after the Ready's write).
    pub commit_known: AtomicU64,
    /// When each recent entry became durable and committed, and the synced writes' durations.
    pub times: crate::timing::EntryTimes,
}

impl Shared {
    pub(crate) fn status(&self) -> Status {
        *self.status.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn set_status(&self, s: Status) {
        *self.status.lock().unwrap_or_else(|p| p.into_inner()) = s;
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    pub(crate) fn detail(&self) -> Detail {
        self.detail
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn set_detail(&self, d: Detail) {
        let mut cur = self.detail.lock().unwrap_or_else(|p| p.into_inner());
        if *cur != d {
            *cur = d;
        }
    }
}
