//! paddock, the server: a ZooKeeper-compatible coordination service on Raft.
//!
//! ```text
//!  listener ─▶ connection tasks ─▶ core task (tree, watches, sessions) ◀─▶ raft thread (log segments)
//! ```
//!
//! - `startup` starts and stops a server: recovery and log replay before the listener opens,
//!   the raft thread's event queue into the core, the accept loop;
//! - `connection` runs one client's reader and writer tasks and talks to the core only through
//!   `msg` (`CoreMsg`, `ConnId`);
//! - `core` is the one task that owns all state and orders replies and events; `core/` has a
//!   room per role, each owning its part of the state (sessions, conns, apply, snapshots,
//!   ensemble, reconfig, views) or none (handshake, requests, auth, reads, submit, timers);
//! - `http` serves the AdminServer's JSON commands and the Prometheus `/metrics` from the same
//!   view the four-letter words use;
//! - `session` decides expiry; `fourlw` renders the four-letter words that `core::views` gathers;
//! - `config` (a folder by concern) and `cli` turn zoo.cfg and flags into one `Config`; `sasl`
//!   runs the DIGEST-MD5 exchange with the users `jaas` reads from a JAAS file; `throttle` bounds
//!   the requests held at once (`globalOutstandingLimit`); `outbound` is a connection's reply
//!   queue; `stats` counts; `latency` times every write's stages and keeps ZooKeeper's latency
//!   summaries;
//! - `data_dir` creates the data directories owner-only; `identity` decides whose data a
//!   directory holds; `forward` and `forward_codec` carry a
//!   member's writes and session touches to the leader;
//! - `reconfig` computes the membership a reconfig asks for (the pure part of `core/reconfig`);
//! - `redact` masks secret values (passwords, the super digest) in every view of the
//!   configuration;
//! - `status_cmd` is `paddock status`, the ensemble table from `srvr`/`mntr`; `repair_cmd` is
//!   `paddock repair`, what is damaged in a stopped server's raft log and what can be done;
//! - `tls` turns the `ssl.quorum.*` and `ssl.*` keys into rustls configurations (PEM and
//!   PKCS12 stores, as ZooKeeper's X509Util reads them) and reloads them when the files change;
//!   `quorum_security` makes the peer transport's protection of them and of `quorum_auth`
//!   (quorum SASL); `client_tls` the client port's (secure port, unified port, x509 ids);
//! - `zk_import` and `zk_export` are `paddock import` and `paddock export`: a ZooKeeper data
//!   directory into a paddock one, and paddock's state as a ZooKeeper snapshot (zk-format);
//! - `clock` is the one reading of the wall clock (`now_ms`), for the core (through `WallClock`)
//!   and `forward`.
//!
//! ARCHITECTURE.md at the repository root describes the threads, the request paths and the
//! invariants.

pub mod backup_cmd;
pub mod backup_follow;
pub mod cli;
pub mod client_tls;
pub mod clock;
pub mod config;
pub mod connection;
pub mod core;
pub mod data_dir;
pub mod election_port;
pub mod forward;
pub mod forward_codec;
pub mod fourlw;
pub mod gssapi;
pub mod http;
pub mod identity;
pub mod jaas;
pub mod kerberos;
pub mod latency;
pub mod msg;
pub mod outbound;
pub mod quorum_auth;
pub mod quorum_security;
pub mod reconfig;
pub mod redact;
pub mod repair_cmd;
pub mod sasl;
pub mod session;
pub mod startup;
pub mod stats;
pub mod status_cmd;
pub mod throttle;
pub mod tls;
pub mod zk_export;
pub mod zk_import;
pub mod zk_restore;
pub mod zk_txn;
