//! Four-letter-word replies (`docs/protocol.md` §10), formatted byte for byte as ZooKeeper 3.9
//! prints them, because tools parse them: go-zookeeper's health check matches the `srvr`
//! version line with a regex, kazoo's `server_version()` reads `zookeeper.version=` from `envi`,
//! and monitoring scripts split `mntr` on tabs.
//!
//! Pure: the server gathers a `ServerView` (plain data) and sends back what `render` returns,
//! then closes the connection. Side effects of `srst`, `crst` and `stmk` (resetting statistics,
//! setting the trace mask) are the server's job, done before it builds the view.
//!
//! Java's number formatting is reproduced where it shows: `Long.toHexString` (two's complement,
//! lower case, no padding), `Double.toString` (`0.0`, `1.5`), `InetSocketAddress.toString`
//! (`/127.0.0.1:5000`, IPv6 uncompressed) and `Date.toString` (in UTC).

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};

use wire::FourLetterWord;

use crate::config::FourLetterWhitelist;

/// Expands to the ZooKeeper release paddock answers as; the one place the number is written.
macro_rules! zk_compat_version {
    () => {
        "3.9.4"
    };
}

/// The ZooKeeper version clients see (kazoo parses it out of `envi` and compares features).
pub const ZK_COMPAT_VERSION: &str = zk_compat_version!();

/// ZooKeeper's "version-revision": the revision slot carries paddock's own version.
pub const VERSION_REVISION: &str =
    concat!(zk_compat_version!(), "-paddock-", env!("CARGO_PKG_VERSION"));

/// A fixed build date in the `MM/dd/yyyy HH:mm zz` form ZooKeeper used up to 3.6: go-zookeeper
/// parses it with `01/02/2006 15:04 MST` and rejects the newer `yyyy-MM-dd` form.
pub const BUILD_DATE: &str = "01/01/2025 00:00 GMT";

/// ZooKeeper's `Version.getFullVersion()`.
pub fn full_version() -> String {
    format!("{VERSION_REVISION}, built on {BUILD_DATE}")
}

/// `ZooTrace`'s initial mask: client requests, server packets, sessions, warnings.
pub const DEFAULT_TRACE_MASK: i64 = 0b1_0011_0010;

/// Printed by most words when the server is not serving.
pub const NOT_SERVING: &str = "This ZooKeeper instance is not currently serving requests";

/// The role printed after `Mode:` and as `zk_server_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Standalone,
    Leader,
    Follower,
    Observer,
    ReadOnly,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Standalone => "standalone",
            Mode::Leader => "leader",
            Mode::Follower => "follower",
            Mode::Observer => "observer",
            Mode::ReadOnly => "read-only",
        }
    }
}

/// Request latencies in ms, kept as ZooKeeper's `AvgMinMaxCounter` keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatencyStats {
    pub count: u64,
    pub total_ms: u64,
    /// `u64::MAX` until the first sample (printed as 0).
    pub min_ms: u64,
    pub max_ms: u64,
}

impl Default for LatencyStats {
    fn default() -> Self {
        LatencyStats {
            count: 0,
            total_ms: 0,
            min_ms: u64::MAX,
            max_ms: 0,
        }
    }
}

impl LatencyStats {
    pub fn add(&mut self, ms: u64) {
        self.count += 1;
        self.total_ms = self.total_ms.saturating_add(ms);
        self.min_ms = self.min_ms.min(ms);
        self.max_ms = self.max_ms.max(ms);
    }

    pub fn reset(&mut self) {
        *self = LatencyStats::default();
    }

    pub fn min(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min_ms
        }
    }

    pub fn max(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.max_ms
        }
    }

    /// The server-wide average: a double rounded half-up to 4 places.
    pub fn avg(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        round_half_up_4(self.total_ms as f64 / self.count as f64)
    }

    /// A connection's average: integer division, as `ServerCnxn.getAvgLatency` does.
    pub fn avg_whole(&self) -> u64 {
        self.total_ms.checked_div(self.count).unwrap_or(0)
    }
}

fn round_half_up_4(x: f64) -> f64 {
    // Java goes through BigDecimal; for latencies (non-negative, far below 2^40) scaling is exact
    // enough that the two agree.
    (x * 10_000.0 + 0.5).floor() / 10_000.0
}

/// One client connection as `stat` and `cons` print it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnView {
    pub remote: SocketAddr,
    /// Came through the secure client port (`secureClientPort`).
    pub secure: bool,
    /// NIO interest set (1 = read, 4 = write, 0 = throttled); printed in hex.
    pub interest_ops: u32,
    pub queued: u64,
    pub recved: u64,
    pub sent: u64,
    /// 0 until the handshake completes; the session fields are printed only when non-zero.
    pub session_id: i64,
    /// ZooKeeper's short op name (`Request.op2String`): `NA` before any request, then `PING`,
    /// `GETD`, `CREA`, `SESS`, ...
    pub last_op: String,
    /// Wall-clock epoch ms.
    pub established_ms: i64,
    pub timeout_ms: i32,
    /// Negative = none yet (then omitted).
    pub last_cxid: i64,
    pub last_zxid: i64,
    /// Wall-clock epoch ms of the last reply.
    pub last_response_ms: i64,
    pub last_latency_ms: u64,
    pub latency: LatencyStats,
}

/// Sessions whose expiry falls in one `tickTime` bucket (`dump`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpiryBucket {
    /// Wall-clock epoch ms of the bucket's deadline.
    pub expire_at_ms: i64,
    pub sessions: Vec<i64>,
}

/// The parts of a `ServerView` a reply prints. The core task, which serves every client, gathers
/// only these (`core::views`): a word that prints a count copies no table, and `srvr`, which
/// every health check sends, copies neither the watches nor the sessions. Every view also holds
/// `is_serving`, `mode`, `trace_mask` and `leader_id`, which cost nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Parts {
    /// `srvr`'s counters: `latency`, `packets_*`, `connection_count`, `outstanding_requests`,
    /// `zxid`, `node_count`, `leader`.
    pub summary: bool,
    /// `mntr`'s further counters: `uptime_ms`, `watch_count`, `ephemerals_count`,
    /// `approximate_data_size`, `*_sessions`, the reply sizes, `auth_failed_count`, `quorum_size`.
    pub counts: bool,
    /// paddock's own metrics and the latency summaries: `extra_metrics`, `summaries`.
    pub extras: bool,
    /// One `ConnView` per connection.
    pub connections: bool,
    pub conf_lines: bool,
    pub watch_summary: bool,
    pub watches_by_session: bool,
    pub watches_by_path: bool,
    /// `session_buckets` and `ephemerals_by_session`.
    pub sessions: bool,
    pub digest_log: bool,
    /// Read off the core task: `data_dir_size` and `log_dir_size` (a walk of both directories).
    pub dir_sizes: bool,
    /// Read off the core task: the descriptor counts (`/proc`).
    pub fds: bool,
    /// Read off the core task: `environment`.
    pub environment: bool,
    /// `last_snapshot`: its index and zxid on the core, its file's time off the core task.
    pub last_snapshot: bool,
}

impl Parts {
    pub const NONE: Parts = Parts {
        summary: false,
        counts: false,
        extras: false,
        connections: false,
        conf_lines: false,
        watch_summary: false,
        watches_by_session: false,
        watches_by_path: false,
        sessions: false,
        digest_log: false,
        dir_sizes: false,
        fds: false,
        environment: false,
        last_snapshot: false,
    };
    /// What `mntr` prints (the AdminServer's `monitor` too).
    pub const MONITOR: Parts = Parts {
        summary: true,
        counts: true,
        extras: true,
        fds: true,
        ..Parts::NONE
    };
}

/// What `word` prints, when it is whitelisted.
pub fn parts_of(word: FourLetterWord) -> Parts {
    use FourLetterWord as W;
    let none = Parts::NONE;
    match word {
        // The answer is fixed, or `is_serving`/`mode`/`trace_mask` alone.
        W::Ruok | W::Isro | W::Gtmk | W::Stmk | W::Srst | W::Crst => none,
        W::Envi => Parts {
            environment: true,
            ..none
        },
        W::Srvr => Parts {
            summary: true,
            ..none
        },
        W::Stat => Parts {
            summary: true,
            connections: true,
            ..none
        },
        W::Cons => Parts {
            connections: true,
            ..none
        },
        W::Conf => Parts {
            conf_lines: true,
            dir_sizes: true,
            ..none
        },
        W::Mntr => Parts::MONITOR,
        W::Wchs => Parts {
            watch_summary: true,
            ..none
        },
        W::Wchc => Parts {
            watches_by_session: true,
            ..none
        },
        W::Wchp => Parts {
            watches_by_path: true,
            ..none
        },
        W::Dump => Parts {
            sessions: true,
            ..none
        },
        W::Dirs => Parts {
            dir_sizes: true,
            ..none
        },
        W::Hash => Parts {
            digest_log: true,
            ..none
        },
    }
}

/// The data-watch table's size, as `wchs` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WatchSummary {
    /// Connections with a data watch.
    pub connections: u64,
    /// Paths with a data watch.
    pub paths: u64,
    /// (path, connection) pairs.
    pub total: u64,
}

/// Everything the four-letter words print. Plain data; lists are printed in the order given.
/// A view holds the `Parts` its reply prints; the rest is left at its default.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ServerView {
    pub is_serving: bool,
    pub mode: Mode,
    /// The member raft names as leader (0: none known, or standalone's own 1).
    pub leader_id: u64,
    pub latency: LatencyStats,
    pub packets_received: u64,
    pub packets_sent: u64,
    /// Client connections, the asking one included for a four-letter word (ZooKeeper counts it).
    pub connection_count: u64,
    pub connections: Vec<ConnView>,
    pub outstanding_requests: u64,
    /// Last applied zxid.
    pub zxid: i64,
    pub node_count: u64,
    /// `Config::as_conf_lines()`; `dataDirSize`/`dataLogSize` are inserted by `render`.
    pub conf_lines: Vec<(String, String)>,
    /// `envi` lines after `zookeeper.version` (host.name, os.*, user.*, ...).
    pub environment: Vec<(String, String)>,
    /// The data-watch table by session: what `wchc` prints and `wchs` counts.
    pub watches_by_session: Vec<(i64, Vec<String>)>,
    /// The same table by path: what `wchp` prints.
    pub watches_by_path: Vec<(String, Vec<i64>)>,
    /// The table's size: what `wchs` prints.
    pub watch_summary: WatchSummary,
    /// Data plus child watch entries (`zk_watch_count`).
    pub watch_count: u64,
    pub session_buckets: Vec<ExpiryBucket>,
    pub ephemerals_by_session: Vec<(i64, Vec<String>)>,
    pub ephemerals_count: u64,
    pub approximate_data_size: u64,
    pub global_sessions: u64,
    pub local_sessions: u64,
    pub data_dir_size: u64,
    pub log_dir_size: u64,
    pub uptime_ms: u64,
    pub open_file_descriptor_count: Option<u64>,
    pub max_file_descriptor_count: Option<u64>,
    /// Size of the last, smallest and largest reply, -1 before the first.
    pub last_client_response_size: i64,
    pub min_client_response_size: i64,
    pub max_client_response_size: i64,
    pub auth_failed_count: u64,
    /// Connections the Netty factory accepted on the plaintext client port, from loopback and
    /// from elsewhere (ZooKeeper's `non_mtls_*_conn_count`; 0 with the NIO factory).
    pub non_mtls_local_conn_count: u64,
    pub non_mtls_remote_conn_count: u64,
    /// Ensemble size, printed as `zk_quorum_size` when not standalone.
    pub quorum_size: Option<u64>,
    /// Leader-only gauges (`zk_learners`, `zk_synced_followers`, ...) and the `Proposal sizes`
    /// line, when this server leads.
    pub leader: Option<LeaderView>,
    /// Further `mntr` metrics, appended as `zk_<key>\t<value>`.
    pub extra_metrics: Vec<(String, String)>,
    /// Latency summaries for `/metrics` (ZooKeeper's and paddock's write stages, `latency.rs`).
    pub summaries: Vec<crate::latency::SummaryView>,
    /// The current text trace mask (`gtmk`; after `stmk` the newly set one).
    pub trace_mask: i64,
    /// `(zxid, digest)` pairs for `hash`.
    pub digest_log: Vec<(i64, i64)>,
    /// The AdminServer's `last_snapshot`: the newest snapshot saved to disk, if any beyond the
    /// bootstrap one.
    pub last_snapshot: Option<LastSnapshot>,
}

/// The newest raft snapshot durable on this member (ZooKeeper's `SnapshotInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastSnapshot {
    /// Its raft index, which names its file.
    pub index: u64,
    /// The zxid of the last entry it holds.
    pub zxid: i64,
    /// Its file's modification time in seconds since the epoch (ZooKeeper's
    /// `lastModified() / 1000`); -1 if the file could not be read.
    pub timestamp_s: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LeaderView {
    pub learners: u64,
    pub synced_followers: u64,
    pub synced_non_voting_followers: u64,
    pub synced_observers: u64,
    pub pending_syncs: u64,
    pub leader_uptime_ms: u64,
    pub last_proposal_size: i64,
    pub min_proposal_size: i64,
    pub max_proposal_size: i64,
    /// The observers (raft learners) the leader heard from within an election timeout.
    pub observers: Vec<ObserverView>,
}

/// One observer as the leader sees it (the AdminServer's `observers`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObserverView {
    pub sid: u64,
    /// The highest index known replicated on it.
    pub last_zxid: i64,
    /// Wall-clock ms since which this leader replicates to it: its term's start.
    pub established_ms: i64,
}

/// The reply to a word that is not whitelisted (ZooKeeper's `NopCommand` message, `println`ed).
/// The connection answers it itself: the core task does nothing for such a word.
pub fn refusal(word: FourLetterWord) -> String {
    format!(
        "{} is not executed because it is not in the whitelist.\n",
        word.as_str()
    )
}

/// The reply to `word`, given the server's state and the whitelist. The caller writes it and
/// closes the connection.
pub fn render(word: FourLetterWord, view: &ServerView, whitelist: &FourLetterWhitelist) -> String {
    if !whitelist.allows(word) {
        return refusal(word);
    }
    let mut out = String::new();
    let o = &mut out;
    use FourLetterWord as W;
    // ruok, envi, gtmk and stmk answer whatever the state; isro and hash have their own
    // not-serving replies; the rest print NOT_SERVING.
    match word {
        W::Ruok => o.push_str("imok"),
        W::Isro => o.push_str(match (view.is_serving, view.mode) {
            (false, _) => "null",
            (true, Mode::ReadOnly) => "ro",
            (true, _) => "rw",
        }),
        W::Envi => envi(o, view),
        W::Gtmk | W::Stmk => {
            let _ = write!(o, "{}", view.trace_mask);
        }
        W::Hash if !view.is_serving => o.push_str(NOT_SERVING),
        _ if !view.is_serving => {
            o.push_str(NOT_SERVING);
            o.push('\n');
        }
        W::Srvr | W::Stat => srvr_or_stat(o, view, word == W::Stat),
        W::Cons => {
            for c in &view.connections {
                connection_info(o, c, false);
                o.push('\n');
            }
            o.push('\n');
        }
        W::Conf => conf(o, view),
        W::Mntr => mntr(o, view),
        W::Wchs => {
            let w = &view.watch_summary;
            let _ = writeln!(
                o,
                "{} connections watching {} paths\nTotal watches:{}",
                w.connections, w.paths, w.total
            );
        }
        W::Wchc => {
            for (sid, paths) in &view.watches_by_session {
                let _ = writeln!(o, "0x{}", java_hex(*sid));
                for p in paths {
                    let _ = writeln!(o, "\t{p}");
                }
            }
            o.push('\n');
        }
        W::Wchp => {
            for (path, sids) in &view.watches_by_path {
                let _ = writeln!(o, "{path}");
                for sid in sids {
                    let _ = writeln!(o, "\t0x{}", java_hex(*sid));
                }
            }
            o.push('\n');
        }
        W::Dump => dump(o, view),
        W::Dirs => {
            let _ = writeln!(
                o,
                "datadir_size: {}\nlogdir_size: {}",
                view.data_dir_size, view.log_dir_size
            );
        }
        W::Srst => o.push_str("Server stats reset.\n"),
        W::Crst => o.push_str("Connection stats reset.\n"),
        W::Hash => {
            for (zxid, digest) in &view.digest_log {
                let _ = writeln!(o, "{}: {}", java_hex(*zxid), digest);
            }
        }
    }
    out
}

fn srvr_or_stat(o: &mut String, v: &ServerView, with_clients: bool) {
    let _ = writeln!(o, "Zookeeper version: {}", full_version());
    if v.mode == Mode::ReadOnly {
        o.push_str("READ-ONLY mode; serving only read-only clients\n");
    }
    if with_clients {
        o.push_str("Clients:\n");
        for c in &v.connections {
            connection_info(o, c, true);
            o.push('\n');
        }
        o.push('\n');
    }
    let _ = writeln!(
        o,
        "Latency min/avg/max: {}/{}/{}",
        v.latency.min(),
        java_double(v.latency.avg()),
        v.latency.max()
    );
    let _ = writeln!(o, "Received: {}", v.packets_received);
    let _ = writeln!(o, "Sent: {}", v.packets_sent);
    let _ = writeln!(o, "Connections: {}", v.connection_count);
    let _ = writeln!(o, "Outstanding: {}", v.outstanding_requests);
    let _ = writeln!(o, "Zxid: 0x{}", java_hex(v.zxid));
    let _ = writeln!(o, "Mode: {}", v.mode.as_str());
    let _ = writeln!(o, "Node count: {}", v.node_count);
    if let (Mode::Leader, Some(l)) = (v.mode, &v.leader) {
        let _ = writeln!(
            o,
            "Proposal sizes last/min/max: {}/{}/{}",
            l.last_proposal_size, l.min_proposal_size, l.max_proposal_size
        );
    }
}

/// `ServerCnxn.dumpConnectionInfo`.
fn connection_info(o: &mut String, c: &ConnView, brief: bool) {
    let _ = write!(
        o,
        " {}[{:x}](queued={},recved={},sent={}",
        java_socket_addr(&c.remote),
        c.interest_ops,
        c.queued,
        c.recved,
        c.sent
    );
    if !brief && c.session_id != 0 {
        let _ = write!(
            o,
            ",sid=0x{},lop={},est={},to={}",
            java_hex(c.session_id),
            c.last_op,
            c.established_ms,
            c.timeout_ms
        );
        if c.last_cxid >= 0 {
            let _ = write!(o, ",lcxid=0x{}", java_hex(c.last_cxid));
        }
        let _ = write!(
            o,
            ",lzxid=0x{},lresp={},llat={},minlat={},avglat={},maxlat={}",
            java_hex(c.last_zxid),
            c.last_response_ms,
            c.last_latency_ms,
            c.latency.min(),
            c.latency.avg_whole(),
            c.latency.max()
        );
    }
    o.push(')');
}

fn conf(o: &mut String, v: &ServerView) {
    for (k, val) in &v.conf_lines {
        // ZooKeeper prints the membership header with println("membership: ") and the
        // server lines without a separator of their own.
        if k == "membership: " {
            o.push_str("membership: \n");
            continue;
        }
        let _ = writeln!(o, "{k}={val}");
        if k == "dataDir" {
            let _ = writeln!(o, "dataDirSize={}", v.data_dir_size);
        } else if k == "dataLogDir" {
            let _ = writeln!(o, "dataLogSize={}", v.log_dir_size);
        }
    }
}

fn envi(o: &mut String, v: &ServerView) {
    o.push_str("Environment:\n");
    let _ = writeln!(o, "zookeeper.version={}", full_version());
    for (k, val) in &v.environment {
        let _ = writeln!(o, "{k}={val}");
    }
}

fn mntr(o: &mut String, v: &ServerView) {
    let mut kv = |k: &str, val: String| {
        let _ = writeln!(o, "zk_{k}\t{val}");
    };
    kv("version", full_version());
    kv("server_state", v.mode.as_str().to_string());
    kv("avg_latency", java_double(v.latency.avg()));
    kv("max_latency", v.latency.max().to_string());
    kv("min_latency", v.latency.min().to_string());
    kv("packets_received", v.packets_received.to_string());
    kv("packets_sent", v.packets_sent.to_string());
    kv("num_alive_connections", v.connection_count.to_string());
    kv("outstanding_requests", v.outstanding_requests.to_string());
    kv("uptime", v.uptime_ms.to_string());
    kv("znode_count", v.node_count.to_string());
    kv("watch_count", v.watch_count.to_string());
    kv("ephemerals_count", v.ephemerals_count.to_string());
    kv("approximate_data_size", v.approximate_data_size.to_string());
    kv("global_sessions", v.global_sessions.to_string());
    kv("local_sessions", v.local_sessions.to_string());
    if let Some(n) = v.open_file_descriptor_count {
        kv("open_file_descriptor_count", n.to_string());
    }
    if let Some(n) = v.max_file_descriptor_count {
        kv("max_file_descriptor_count", n.to_string());
    }
    // paddock never drops connections to shed load.
    kv("connection_drop_probability", java_double(0.0));
    kv(
        "last_client_response_size",
        v.last_client_response_size.to_string(),
    );
    kv(
        "max_client_response_size",
        v.max_client_response_size.to_string(),
    );
    kv(
        "min_client_response_size",
        v.min_client_response_size.to_string(),
    );
    // Handshakes are counted only with zookeeper.netty.server.outstandingHandshake.limit set,
    // which paddock does not have: ZooKeeper's default prints 0.
    kv("outstanding_tls_handshake", "0".to_string());
    kv("auth_failed_count", v.auth_failed_count.to_string());
    kv(
        "non_mtls_remote_conn_count",
        v.non_mtls_remote_conn_count.to_string(),
    );
    kv(
        "non_mtls_local_conn_count",
        v.non_mtls_local_conn_count.to_string(),
    );
    if let (Mode::Leader, Some(l)) = (v.mode, &v.leader) {
        kv("learners", l.learners.to_string());
        kv("synced_followers", l.synced_followers.to_string());
        kv(
            "synced_non_voting_followers",
            l.synced_non_voting_followers.to_string(),
        );
        kv("synced_observers", l.synced_observers.to_string());
        kv("pending_syncs", l.pending_syncs.to_string());
        kv("leader_uptime", l.leader_uptime_ms.to_string());
        kv("last_proposal_size", l.last_proposal_size.to_string());
        kv("min_proposal_size", l.min_proposal_size.to_string());
        kv("max_proposal_size", l.max_proposal_size.to_string());
    }
    if let Some(n) = v.quorum_size {
        kv("quorum_size", n.to_string());
    }
    for (k, val) in &v.extra_metrics {
        kv(k, val.clone());
    }
}

fn dump(o: &mut String, v: &ServerView) {
    o.push_str("SessionTracker dump:\n");
    let sessions: usize = v.session_buckets.iter().map(|b| b.sessions.len()).sum();
    let _ = writeln!(
        o,
        "Session Sets ({})/({}):",
        v.session_buckets.len(),
        sessions
    );
    let mut buckets: Vec<&ExpiryBucket> = v.session_buckets.iter().collect();
    buckets.sort_by_key(|b| b.expire_at_ms);
    for b in buckets {
        let _ = writeln!(
            o,
            "{} expire at {}:",
            b.sessions.len(),
            java_date(b.expire_at_ms)
        );
        for sid in &b.sessions {
            let _ = writeln!(o, "\t0x{}", java_hex(*sid));
        }
    }
    o.push_str("ephemeral nodes dump:\n");
    let _ = writeln!(
        o,
        "Sessions with Ephemerals ({}):",
        v.ephemerals_by_session.len()
    );
    for (sid, paths) in &v.ephemerals_by_session {
        let _ = writeln!(o, "0x{}:", java_hex(*sid));
        for p in paths {
            let _ = writeln!(o, "\t{p}");
        }
    }
    // ZooKeeper's NIO factory adds its connection expiry queue here; the Netty factory (what
    // kazoo's harness configures) prints nothing more, and neither does paddock.
    o.push_str("Connections dump:\n");
}

/// `Long.toHexString`: lower case, no padding, negatives as 64-bit two's complement.
pub fn java_hex(n: i64) -> String {
    format!("{:x}", n as u64)
}

/// `Double.toString` for the values 4lw output holds: at least one fractional digit, the
/// shortest digits that round-trip, scientific form outside [1e-3, 1e7).
pub fn java_double(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    let a = x.abs();
    if (1e-3..1e7).contains(&a) {
        let s = format!("{x}");
        if s.contains('.') {
            s
        } else {
            format!("{s}.0")
        }
    } else {
        // Rust prints `1e7` / `1.5e-5`; Java prints `1.0E7` / `1.5E-5`.
        let s = format!("{x:e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = if mantissa.contains('.') {
            mantissa.to_string()
        } else {
            format!("{mantissa}.0")
        };
        format!("{mantissa}E{exp}")
    }
}

/// `InetSocketAddress.toString` for an address without a host name: `/ip:port`, IPv6 as eight
/// uncompressed hex groups without brackets.
pub fn java_socket_addr(addr: &SocketAddr) -> String {
    match addr.ip() {
        IpAddr::V4(ip) => format!("/{}:{}", ip, addr.port()),
        IpAddr::V6(ip) => {
            let groups: Vec<String> = ip.segments().iter().map(|g| format!("{g:x}")).collect();
            format!("/{}:{}", groups.join(":"), addr.port())
        }
    }
}

/// `java.util.Date.toString` in UTC: `Sun Nov 29 11:13:31 UTC 2026`.
pub fn java_date(epoch_ms: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = epoch_ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{} {} {:02} {:02}:{:02}:{:02} UTC {}",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(m - 1) as usize],
        d,
        sod / 3600,
        sod % 3600 / 60,
        sod % 60,
        y
    )
}

/// Days since 1970-01-01 to (year, month 1-12, day 1-31), proleptic Gregorian
/// (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}
