//! `znode-tree`: the replicated ZooKeeper state machine. Pure and deterministic: no clock, no
//! IO, no randomness, no threads. Every replica applies the same log entries in the same order
//! and computes the identical tree, byte for byte (`Tree::digest`, `Tree::snapshot`).
//!
//! ```text
//!   Entry (session, xid, time, auth, Txn) ──Tree::apply(zxid)──▶ Applied { reply, changes }
//!                                                                          │
//!   Request (reads) ──read_with_watch──▶ reply         WatchRegistry::trigger(changes)
//!                          │ registers                                      ▼
//!                          └────────────▶ WatchRegistry ──▶ (WatcherId, WatcherEvent)*
//! ```
//!
//! Contract:
//! - time comes only from `Entry::time_ms`; zxids only from the caller (the log index);
//! - a write that fails still advances `last_zxid` (ZooKeeper's error transaction) and changes
//!   nothing else; a multi is all-or-nothing;
//! - ZooKeeper outcomes are `wire::ErrorCode` values; `TreeError` is only for bad bytes
//!   (entries, snapshots); nothing panics on client input;
//! - semantics follow Apache ZooKeeper 3.9 as summarised in `zk-protocol.md` §4-§9, §11, §12;
//!   child lists are returned sorted (ZooKeeper's order is undefined);
//! - the watch registry is per server and not replicated;
//! - apply is O(path depth + log n) per op; getChildren is O(children × log n); memory is
//!   about 320 bytes per znode with 100 bytes of data (nodes keyed by full path in an ordered
//!   map, no per-node child sets, ACL lists interned; `tests/scale.rs` measures it). Keys and
//!   nodes are behind `Arc`, so `snapshot_view` can take the state without encoding it and a
//!   server can encode it off its request path; that sharing costs about 30 of those bytes.
//!
//! Layout: `entry` (log records), `tree` (state, primitives, reads), `write` (write ops and
//! quotas), `multi`, `acl`, `quota`, `path`, `node`, `session`, `snapshot` (snapshot, restore,
//! digest), `watch`, `read` (reads that register watches).

pub mod acl;
mod entry;
mod error;
mod multi;
mod node;
pub mod path;
mod quota;
mod read;
mod session;
mod snapshot;
mod tree;
mod watch;
mod write;

pub use entry::{Entry, Txn};
pub use error::TreeError;
pub use read::read_with_watch;
pub use session::Session;
pub use snapshot::SnapshotView;
pub use tree::{Applied, Change, ReadCtx, Tree, TreeConfig};
pub use watch::{WatchKind, WatchRegistry, WatchStats, WatcherId};
