//! `zk-format`: Apache ZooKeeper 3.5-3.9's on-disk formats, read and written as bytes, and the
//! replay of its transaction log over its snapshot. Pure: no IO, clock, randomness or threads
//! (clippy.toml); the caller opens the files (`paddock import`, `paddock export`, the
//! AdminServer's `snapshot` command in `server/`).
//!
//! ```text
//!  snapshot.<zxid>[.gz|.snappy] ──compress::decompress──▶ snapshot::decode ──▶ Snapshot
//!                                                                              │ DataTree::from_snapshot
//!  log.<zxid> ──txnlog::decode──▶ LogFile { records, end } ──DataTree::apply──▶ DataTree (+ digest)
//!  a tree ──snapshot::SnapshotWriter──▶ snapshot bytes ZooKeeper 3.9 loads
//! ```
//!
//! ZooKeeper's source is the authority; each module names the classes it follows. Modules:
//! `jute` (the binary archive), `adler32`, `compress` (gzip, snappy-java's stream),
//! `snapshot` (the file, its seals and trailers), `txnlog` (log files, records and transaction
//! bodies), `datatree` (`DataTree.processTxn` as a replay needs it), `digest` (the tree digest),
//! `password` (session passwords, `java.util.Random`), `files` (names, which logs to read).

// Purity, checked: clippy.toml lists the clock, randomness, thread and file calls this crate
// must not make; denied here so that one in the library fails `cargo clippy`.
#![deny(clippy::disallowed_methods, clippy::disallowed_types)]

pub mod adler32;
pub mod compress;
pub mod datatree;
pub mod digest;
pub mod error;
pub mod files;
pub mod jute;
pub mod password;
pub mod snapshot;
pub mod txnlog;

pub use datatree::{DataTree, MissingAcl, ReplayStats, ZNode};
pub use error::FormatError;
pub use snapshot::{Snapshot, SnapshotWriter, StatPersisted};
pub use txnlog::{LogEnd, LogFile, LogRecord, Txn, TxnHeader};
