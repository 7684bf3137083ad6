//! paddock, the server: a ZooKeeper-compatible coordination service on Raft.
//!
//! ```text
//!  listener ─▶ connection tasks ─▶ core task (tree, watches, sessions) ◀─▶ raft thread (RocksDB)
//! ```
//!
//! `startup` starts and stops a server; `connection` frames and decodes one client and talks
//! to the core only through `msg`; `core` owns all state and orders replies and events;
//! `session` decides expiry; `core::views` and `fourlw` answer the four-letter words; `config` and
//! `cli` turn zoo.cfg and flags into one `Config`; `sasl` runs the DIGEST-MD5 exchange with the
//! users `jaas` reads from a JAAS file; `throttle` bounds the requests held at once
//! (`globalOutstandingLimit`).

pub mod cli;
pub mod config;
pub mod connection;
pub mod core;
pub mod forward;
pub mod forward_codec;
pub mod fourlw;
pub mod identity;
pub mod jaas;
pub mod msg;
pub mod outbound;
pub mod sasl;
pub mod session;
pub mod startup;
pub mod stats;
pub mod throttle;
