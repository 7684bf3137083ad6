//! Replicates opaque byte entries with Raft (raft-rs 0.7) over a log kept in RocksDB. It knows
//! nothing of znodes: the caller (the applier) owns the state machine, applies `Event::Committed`
//! entries in order, and hands back serialized snapshots with `Handle::save_snapshot`.
//!
//! One OS thread owns the `RawNode` and the log store; callers talk to it through a cloneable
//! [`Handle`] (commands in) and a channel of [`Event`]s (results out). Each loop iteration drains
//! the pending commands (up to 4096) before asking raft for a `Ready`, so a burst of proposals
//! shares one fsync (group commit):
//!
//! ```text
//!  Handle ──commands──▶ raft thread: step/propose/read_index/tick ─▶ Ready
//!                        1 messages ─▶ Transport      (leader sends before its fsync)
//!                        2 snapshot install ─▶ Event::InstallSnapshot
//!                        3 committed entries ─▶ Event::Committed  (only entries already durable)
//!                        4 entries + hard state ─▶ one synced RocksDB WriteBatch
//!                        5 read states ─▶ Event::ReadIndexReady
//!                        6 persisted messages ─▶ Transport  (votes/acks after the fsync)
//!                        7 advance ─▶ light ready: commit index, messages, committed entries
//!  save_snapshot ─▶ raft thread (validate) ─▶ writer thread (file, fsync, rename) ─▶ raft thread
//!                    (record snapshot_meta, compact the log, prune old files)
//! ```
//!
//! Invariants: an entry reaches the applier only once it is durable on this node; each index is
//! delivered exactly once per process lifetime, in log order; the log is never compacted past the
//! second-newest durable snapshot, so a damaged newest snapshot can fall back to the previous one.
//! A standalone node is a group of one voter that elects itself at start.
//!
//! The applier's side of the contract:
//! - Load `Started::snapshot` (if any) first; the first `Committed` entry is the one after it.
//! - Apply `Committed` entries in order; skip entries with empty `data` (raft no-ops).
//!   Index 1 is the bootstrap snapshot, so the first entry ever delivered is index 2.
//! - On `InstallSnapshot`, replace the whole state; entries continue from its `index + 1`.
//! - On `RoleChanged`, fail proposals and read barriers still waiting: raft may have dropped them.
//! - Call `save_snapshot(index, term, bytes)` with the state exactly as of a delivered `index`;
//!   only then can the log shrink.
//! - A node whose id is in `Config::voters` bootstraps a new group on first start; every initial
//!   member must list the same voters. Later members join through `propose_conf_change` and catch
//!   up from the first snapshot saved after the change.

mod config;
pub mod driver;
mod error;
mod handle;
mod logger;
pub mod net;
mod raft_loop;
pub mod snapshot_file;
mod status;
pub mod storage;
mod transport;

pub use config::Config;
pub use error::ConsensusError;
pub use handle::{start, start_with_transport, Handle, Started};
pub use net::{Inbound, NetConfig, PeerNet, TcpTransport};
pub use raft::eraftpb::{
    ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2, ConfState, Message,
    MessageType,
};
pub use status::{PeerProgress, Status};
pub use transport::{NoPeers, Transport};

/// A snapshot of the applier's state machine, exactly as of `index`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub index: u64,
    pub term: u64,
    /// The applier's serialized state. Empty for the bootstrap snapshot (index 1): an empty state.
    pub data: Vec<u8>,
}

/// One committed log entry. `data` empty = a raft no-op (a new leader's empty entry, or a
/// membership change handled inside this crate): the applier skips it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedEntry {
    pub index: u64,
    pub term: u64,
    pub data: Vec<u8>,
}

/// What the raft thread tells the applier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// In log order, durable, each index exactly once per process lifetime.
    Committed(Vec<CommittedEntry>),
    /// Leadership or known leader changed. Pending proposals and read barriers may have been
    /// dropped by raft: the applier should fail the ones it is still waiting for.
    RoleChanged {
        is_leader: bool,
        leader_id: u64,
        term: u64,
    },
    /// Answer to `read_index(ctx)`: serve the read once applied >= index.
    ReadIndexReady { ctx: u64, index: u64 },
    /// This node received a snapshot from the leader: replace the state machine with it. Committed
    /// entries that follow continue from `index + 1`. A `MembershipChanged` with the snapshot's
    /// membership (and an empty context) follows it.
    InstallSnapshot(Snapshot),
    /// The membership changed by the entry at `index` (the `Committed` batch before this event
    /// ends with it, as a no-op), or by an installed snapshot at `index`. `voters` (during a joint
    /// change: the incoming voters) and `learners` are the membership now; `context` is the
    /// applied `ConfChangeV2::context`, for the applier's own record of the members (addresses,
    /// ZooKeeper `server.N` lines), empty after a snapshot. Re-emitted on replay after a restart,
    /// like every entry after the loaded snapshot.
    MembershipChanged {
        index: u64,
        voters: Vec<u64>,
        learners: Vec<u64>,
        context: Vec<u8>,
    },
    /// The leader needs a snapshot newer than the stored one (a member was added after it, or its
    /// file is unreadable): call `save_snapshot` at the current applied index now rather than
    /// waiting for the periodic one. Sent once per need; a quiet group depends on it, since
    /// without writes the periodic snapshot never comes.
    SnapshotWanted { peer: u64 },
}
