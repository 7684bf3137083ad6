//! paddock, the server: a ZooKeeper-compatible coordination service on Raft.
//!
//! ```text
//!  listener ─▶ connection tasks ─▶ core task (tree, watches, sessions) ◀─▶ raft thread (RocksDB)
//! ```
//!
//! `node` starts and stops a server; `connection` frames and decodes one client; `core` owns
//! all state and orders replies and events; `session` decides expiry; `admin` and `fourlw`
//! answer the four-letter words; `config` and `cli` turn zoo.cfg and flags into one `Config`;
//! `status_cmd` is `paddock status`, the ensemble table from `srvr`/`mntr`;
//! `sasl` runs the DIGEST-MD5 exchange with the users `jaas` reads from a JAAS file; `throttle`
//! bounds the requests held at once (`globalOutstandingLimit`).

pub mod admin;
pub mod cli;
pub mod config;
pub mod connection;
pub mod core;
pub mod fourlw;
pub mod jaas;
pub mod node;
pub mod outbound;
pub mod sasl;
pub mod session;
pub mod stats;
pub mod status_cmd;
pub mod throttle;
