//! Replicates opaque byte entries with Raft (raft-rs 0.7) over a log kept in segment files. It knows
//! nothing of znodes: the caller (the applier) owns the state machine, applies `Event::Committed`
//! entries in order, and hands back serialized snapshots with `Handle::save_snapshot`.
//!
//! ## Threads
//!
//! Two OS threads per node. The raft thread (`raft_loop.rs`) owns a [`driver::Driver`] (the
//! `RawNode` and the log store) and only pumps into it: commands from the cloneable [`Handle`],
//! durable snapshot files from the writer thread, and a tick every `Config::tick`. The driver is
//! the whole of the raft logic, with no clock, sleep or channel inside, so tests step it by hand
//! (`tests/steps.rs`). The snapshot writer thread writes and fsyncs snapshot files. Results go
//! out through a [`Transport`] (messages for peers, called on the raft thread: it must not block)
//! and a channel of [`Event`]s (for the applier). Each loop iteration drains the pending commands
//! (up to 4096) before asking raft for a `Ready`, so a burst of proposals shares one fsync (group
//! commit):
//!
//! ```text
//!  Handle ──commands──▶ raft thread: Driver::command / tick ─▶ Driver::ready:
//!                        1 messages ─▶ Transport      (leader sends before its fsync)
//!                        1b role/term change ─▶ Event::RoleChanged
//!                        2 snapshot install ─▶ Event::InstallSnapshot, MembershipChanged
//!                        3 committed entries ─▶ Event::Committed  (only entries already durable)
//!                          (a membership change ends its batch ─▶ Event::MembershipChanged)
//!                        4 entries + hard state ─▶ one log-segment record (O_DSYNC write);
//!                          a hard state that moved only its commit is kept in memory and
//!                          rides with the next record (raft needs no sync for it)
//!                        5 read states ─▶ Event::ReadIndexReady
//!                        6 persisted messages ─▶ Transport  (votes/acks after the fsync)
//!                        7 advance ─▶ light ready: commit index, messages, committed entries
//!                        (raft wanted a snapshot the store cannot serve ─▶ Event::SnapshotWanted)
//!  save_snapshot ─▶ raft thread (validate) ─▶ writer thread (file, fsync, rename) ─▶ raft thread
//!                    (record snapshot_meta, compact the log, prune old files)
//! ```
//!
//! Invariants: an entry reaches the applier only once it is durable on this node; each index is
//! delivered exactly once per process lifetime, in log order; the log is never compacted past the
//! second-newest durable snapshot, so a damaged newest snapshot can fall back to the previous one.
//! A standalone node is a group of one voter that elects itself at start.
//!
//! ## The applier's side of the contract
//!
//! - Load `Started::snapshot` (if any) first; the first `Committed` entry is the one after it.
//!   It is a checked, open file (`ScannedSnapshot`): read its data with `for_each_piece`, a
//!   piece at a time rather than whole. `Started::membership` is the membership as of that state.
//! - Apply `Committed` entries in order; skip entries with empty `data` (raft no-ops and
//!   membership changes). Index 1 is the bootstrap snapshot, so the first entry ever delivered is
//!   index 2.
//! - On `InstallSnapshot`, replace the whole state; entries continue from its `index + 1`.
//! - On `MembershipChanged`, record the members (`voters`, `learners`, and the `context` the
//!   proposer put in the `ConfChangeV2`); it follows the batch that ends with its entry.
//! - On `SnapshotWanted`, call `save_snapshot` at the current applied index now: a new member
//!   waits for it, and a quiet group takes no periodic snapshot.
//! - **Proposals and read barriers can vanish.** raft-rs drops a proposal that reaches a node no
//!   longer leading, or a leader transferring leadership, without telling anyone; and it drops a
//!   `read_index` that reaches a leader which has not yet committed an entry in its term, or a
//!   follower that knows no leader, or a leader that dies on the way (docs/consensus.md §5).
//!   So the applier must fail what it still waits for on `RoleChanged` (emitted when leadership,
//!   the known leader or only the term changes: a re-elected leader may have lost what the old
//!   term held), and bound every wait with a timeout, retrying a read with a fresh ctx.
//! - `propose` answers `Busy` past `Config::max_uncommitted_bytes` (back-pressure): fail or
//!   delay the request; nothing was queued.
//! - Call `save_snapshot(index, term, bytes)` with the state exactly as of a delivered `index`;
//!   only then can the log shrink.
//! - A node whose id is in `Config::voters` or `Config::learners` bootstraps a new group on first
//!   start; every initial member must list the same voters and learners. Later members join
//!   through `propose_conf_change` and catch up from a snapshot saved after the change.
//!
//! ## What the transport calls
//!
//! `Handle::step` for each message received; `report_unreachable` when a send fails;
//! `report_snapshot` when it ships snapshots out of band; and `peer_lost` when its link to a peer
//! closes (EOF or reset), so a follower whose leader died campaigns within a few ticks instead of
//! a full election timeout. A leader stopping gracefully calls `transfer_leadership_and_wait`
//! before `shutdown`.

/// A named point where a test build (feature `crash-points`) aborts the process, to check what
/// a crash there leaves on disk (`consensus/tests/crash_points.rs`). Without the feature it
/// expands to nothing.
macro_rules! crash_point {
    ($name:literal) => {{
        #[cfg(feature = "crash-points")]
        {
            $crate::crash::hit($name);
        }
    }};
}
pub(crate) use crash_point;

mod aligned;
pub mod background;
mod config;
#[cfg(feature = "crash-points")]
pub mod crash;
pub mod driver;
mod error;
mod handle;
mod logger;
pub mod net;
pub mod private_fs;
mod raft_loop;
pub mod record;
pub mod repair;
pub mod segments;
pub mod snapshot_file;
mod status;
pub mod storage;
pub mod timing;
mod transport;

pub use config::{Config, IMPORT_TERM};
pub use error::ConsensusError;
#[cfg(feature = "testing")]
pub use handle::start_stepped;
pub use handle::{start, start_opened, start_with_sink, start_with_transport, Handle, Started};
pub use net::{Inbound, NetConfig, PeerNet, TcpTransport};
pub use raft::eraftpb::{
    ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2, ConfState, Message,
    MessageType,
};
#[cfg(feature = "testing")]
pub use raft_loop::Stepper;
pub use snapshot_file::ScannedSnapshot;
pub use status::{PeerProgress, Status};
pub use transport::{EventSink, NoPeers, Transport};

/// A snapshot of the applier's state machine, exactly as of `index`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub index: u64,
    pub term: u64,
    /// The applier's serialized state. Empty for the bootstrap snapshot (index 1): an empty state.
    pub data: Vec<u8>,
}

/// One committed log entry. `data` empty = a raft no-op (a new leader's empty entry, or a
/// membership change handled inside this crate): the applier skips it. `data` shares the log
/// entry's buffer (no copy on the raft thread).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedEntry {
    pub index: u64,
    pub term: u64,
    pub data: bytes::Bytes,
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
