//! The crate's Rust errors. ZooKeeper outcomes (`NoNode`, `BadVersion`, ...) are not here:
//! they are data (`wire::ErrorCode`) returned from apply and read.

use thiserror::Error;

/// Why bytes handed to the state machine could not be turned back into state.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TreeError {
    #[error("log entry is empty")]
    EmptyEntry,
    #[error("log entry has unknown format version {0}")]
    EntryVersion(u8),
    #[error("log entry has unknown txn tag {0}")]
    EntryTag(u8),
    #[error("log entry is malformed: {0}")]
    BadEntry(wire::DecodeError),
    #[error("snapshot is too short ({0} bytes)")]
    SnapshotTooShort(usize),
    #[error("snapshot checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Checksum { stored: u32, computed: u32 },
    #[error("snapshot has bad magic or unknown version")]
    SnapshotFormat,
    #[error("snapshot is malformed: {0}")]
    BadSnapshot(wire::DecodeError),
    #[error("snapshot is inconsistent: {0}")]
    Inconsistent(String),
}
