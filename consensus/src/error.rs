//! The crate's one error type.

/// Everything that can go wrong between a caller and the raft thread.
#[derive(Debug, thiserror::Error)]
pub enum ConsensusError {
    /// RocksDB refused a read or a write (what was being done, where, and RocksDB's message);
    /// the node stops rather than diverge.
    #[error("log store: {0}")]
    Storage(String),
    /// raft-rs rejected a call (bad config, storage error surfaced through raft).
    #[error("raft: {0}")]
    Raft(#[from] raft::Error),
    /// This node is known not to be the leader. `leader_id` is 0 when no leader is known.
    #[error("not leader (leader is {leader_id})")]
    NotLeader { leader_id: u64 },
    /// Back-pressure: the leader holds `pending` uncommitted bytes, and this proposal would take
    /// it past `limit`. Nothing was queued; retry later or fail the request.
    #[error("busy: {pending} uncommitted bytes, limit {limit}")]
    Busy { pending: u64, limit: u64 },
    /// A wait the caller bounded ran out (`transfer_leadership_and_wait`).
    #[error("timed out: {0}")]
    Timeout(String),
    /// The raft thread has stopped (shutdown or a fatal error).
    #[error("consensus stopped")]
    Stopped,
    /// Persistent state failed a check: bad checksum, undecodable record, missing snapshot.
    #[error("corrupt state: {0}")]
    Corrupt(String),
    /// File-system error outside RocksDB (snapshot files, directories).
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// The caller passed a value the node cannot accept (bad config, snapshot past commit).
    #[error("invalid: {0}")]
    Invalid(String),
}

impl From<rocksdb::Error> for ConsensusError {
    fn from(e: rocksdb::Error) -> Self {
        ConsensusError::Storage(e.into_string())
    }
}

impl From<protobuf::ProtobufError> for ConsensusError {
    fn from(e: protobuf::ProtobufError) -> Self {
        ConsensusError::Corrupt(format!("protobuf: {e}"))
    }
}
