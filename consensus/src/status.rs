//! What the raft thread publishes for handles to read: a `Copy` status, refreshed after every
//! loop iteration, and the stopped flag.

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
    /// Synced RocksDB batches written since start: one per Ready that had something to persist.
    pub synced_writes: u64,
    /// Readys processed since start.
    pub readies: u64,
}

pub(crate) struct Shared {
    pub status: Mutex<Status>,
    pub stopped: std::sync::atomic::AtomicBool,
}

impl Shared {
    pub(crate) fn status(&self) -> Status {
        *self.status.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn set_status(&self, s: Status) {
        *self.status.lock().unwrap_or_else(|p| p.into_inner()) = s;
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::Acquire)
    }
}
