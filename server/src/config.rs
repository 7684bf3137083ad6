//! The server's one validated configuration, built from ZooKeeper's `zoo.cfg` format, from
//! paddock's embedded defaults, or from either plus command-line overrides (`cli.rs`).
//!
//! A zoo.cfg is a Java properties file. ZooKeeper's `QuorumPeerConfig` handles a fixed set of
//! keys and turns every other key into the system property `zookeeper.<key>`; several settings
//! (`4lw.commands.whitelist`, `extendedTypesEnabled`, `DigestAuthenticationProvider.superDigest`,
//! `enforceQuota`, `skipACL`, `globalOutstandingLimit`, `enforce.auth.*`) are read from those
//! properties. So each such key is accepted here
//! with or without the `zookeeper.` prefix, which also lets the CLI pass Java `-D` settings
//! through unchanged. SASL is configured the same way: the JVM property
//! `java.security.auth.login.config` (flag only) names the JAAS file, and `sasl.serverconfig`,
//! `superUser[.*]`, `SASLAuthenticationProvider.superPassword` and `allowSaslFailedClients`
//! tune it (see `sasl.rs`). Keys ZooKeeper knows but paddock does not use (TLS, Jetty tuning, quorum
//! timing) are logged and ignored; unknown keys are logged at warn level. Neither is fatal,
//! because the client test harnesses (kazoo, go-zookeeper) write many of them.
//!
//! Every entry carries its origin (file and line, or flag), so a bad value is reported as
//! `zoo.cfg:7: clientPort: "abc" is not a valid port number` and the server refuses to start.

use std::collections::BTreeSet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use thiserror::Error;
use wire::FourLetterWord;

use crate::sasl::{SaslConfig, SaslSettings};

/// ZooKeeper's code default when a zoo.cfg has no `tickTime` (`ZooKeeperServer.DEFAULT_TICK_TIME`).
pub const ZK_DEFAULT_TICK_TIME_MS: u32 = 3000;
/// The tick of `conf/zoo_sample.cfg`, used by paddock's embedded default.
pub const SAMPLE_TICK_TIME_MS: u32 = 2000;
/// `jute.maxbuffer` default: the largest frame a client may send, 1 MiB - 1.
pub const DEFAULT_JUTE_MAX_BUFFER: usize = wire::frame::DEFAULT_MAX_FRAME;

/// Which four-letter words the client port answers (`4lw.commands.whitelist`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FourLetterWhitelist {
    /// `*`: every word.
    All,
    /// Only these words. `srvr` is always among them, as in ZooKeeper (`zkServer.sh status`
    /// depends on it).
    Only(BTreeSet<&'static str>),
}

impl FourLetterWhitelist {
    /// ZooKeeper's default for a server started from a zoo.cfg: `srvr` only.
    pub fn zookeeper_default() -> FourLetterWhitelist {
        FourLetterWhitelist::only(std::iter::empty())
    }

    /// The given words plus `srvr`.
    pub fn only(words: impl IntoIterator<Item = FourLetterWord>) -> FourLetterWhitelist {
        let mut set: BTreeSet<&'static str> =
            words.into_iter().map(FourLetterWord::as_str).collect();
        set.insert(FourLetterWord::Srvr.as_str());
        FourLetterWhitelist::Only(set)
    }

    /// Parses ZooKeeper's comma-separated form. Any `*` item means all words. Names that are not
    /// four-letter words are returned separately so the caller can warn; ZooKeeper ignores them.
    pub fn parse(list: &str) -> (FourLetterWhitelist, Vec<String>) {
        let mut words = Vec::new();
        let mut unknown = Vec::new();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if item == "*" {
                return (FourLetterWhitelist::All, Vec::new());
            }
            match FourLetterWord::from_name(item) {
                Some(w) => words.push(w),
                None => unknown.push(item.to_string()),
            }
        }
        (FourLetterWhitelist::only(words), unknown)
    }

    pub fn allows(&self, word: FourLetterWord) -> bool {
        match self {
            FourLetterWhitelist::All => true,
            FourLetterWhitelist::Only(set) => set.contains(word.as_str()),
        }
    }

    fn add(&mut self, word: FourLetterWord) {
        if let FourLetterWhitelist::Only(set) = self {
            set.insert(word.as_str());
        }
    }
}

impl fmt::Display for FourLetterWhitelist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FourLetterWhitelist::All => f.write_str("*"),
            FourLetterWhitelist::Only(set) => {
                let list: Vec<&str> = set.iter().copied().collect();
                f.write_str(&list.join(","))
            }
        }
    }
}

/// A server's role in an ensemble (`server.N=...:participant|observer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerRole {
    Participant,
    Observer,
}

/// One `server.N=host:peerPort:electionPort[:role][;[clientHost:]clientPort]` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub id: u64,
    pub host: String,
    /// ZooKeeper's quorum port; paddock uses it for Raft traffic.
    pub peer_port: u16,
    pub election_port: u16,
    /// `None` when the line names no role; ZooKeeper then treats the server as a participant.
    pub role: Option<PeerRole>,
    pub client_host: Option<String>,
    pub client_port: Option<u16>,
}

/// The ids of `servers` that are observers (`true`) or voting participants (`false`), in their
/// order.
pub fn ids_by_role(servers: &[ServerSpec], observers: bool) -> Vec<u64> {
    servers
        .iter()
        .filter(|s| (s.role == Some(PeerRole::Observer)) == observers)
        .map(|s| s.id)
        .collect()
}

impl ServerSpec {
    /// Parses the value of a `server.<id>` key.
    pub fn parse(id: u64, value: &str) -> Result<ServerSpec, String> {
        let (server_part, client_part) = match value.split_once(';') {
            Some((s, c)) => (s.trim(), Some(c.trim())),
            None => (value.trim(), None),
        };
        if server_part.contains('|') {
            return Err("multiple addresses per server (multiAddress) are not supported".into());
        }
        let (host, rest) = split_host(server_part)?;
        let fields: Vec<&str> = rest.split(':').collect();
        if fields.len() < 2 || fields.len() > 3 {
            return Err("expected host:peerPort:electionPort[:participant|observer]".into());
        }
        let peer_port = parse_port(fields[0])?;
        let election_port = parse_port(fields[1])?;
        let role = match fields.get(2).map(|s| s.to_ascii_lowercase()) {
            None => None,
            Some(r) if r == "participant" => Some(PeerRole::Participant),
            Some(r) if r == "observer" => Some(PeerRole::Observer),
            Some(r) => {
                return Err(format!(
                    "unknown server role {r:?} (participant or observer)"
                ))
            }
        };
        let (client_host, client_port) = match client_part.filter(|c| !c.is_empty()) {
            None => (None, None),
            Some(c) if c.parse::<u16>().is_ok() => (None, Some(parse_port(c)?)),
            Some(c) => {
                let (h, p) = split_host(c)?;
                (Some(h), Some(parse_port(p)?))
            }
        };
        Ok(ServerSpec {
            id,
            host,
            peer_port,
            election_port,
            role,
            client_host,
            client_port,
        })
    }
}

impl ServerSpec {
    /// `host:peerPort`, where the other members reach this one.
    pub fn peer_address(&self) -> String {
        format!("{}:{}", bracket_v6(&self.host), self.peer_port)
    }
}

impl fmt::Display for ServerSpec {
    /// ZooKeeper's `QuorumServer.toString` form, as used in `/zookeeper/config`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}",
            bracket_v6(&self.host),
            self.peer_port,
            self.election_port
        )?;
        match self.role {
            Some(PeerRole::Observer) => f.write_str(":observer")?,
            // An unnamed role is a participant; ZooKeeper always prints it.
            _ => f.write_str(":participant")?,
        }
        if let Some(port) = self.client_port {
            let host = self.client_host.as_deref().unwrap_or("0.0.0.0");
            write!(f, ";{}:{}", bracket_v6(host), port)?;
        }
        Ok(())
    }
}

fn bracket_v6(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// Splits `host:rest` or `[v6]:rest` into the host and what follows the first port colon.
fn split_host(s: &str) -> Result<(String, &str), String> {
    if let Some(inner) = s.strip_prefix('[') {
        let (host, after) = inner
            .split_once(']')
            .ok_or("unterminated [ in IPv6 address")?;
        let rest = after.strip_prefix(':').ok_or("expected : after ]")?;
        Ok((host.to_string(), rest))
    } else {
        let (host, rest) = s.split_once(':').ok_or("expected host:port")?;
        if host.is_empty() {
            return Err("empty host".into());
        }
        Ok((host.to_string(), rest))
    }
}

fn parse_port(s: &str) -> Result<u16, String> {
    s.trim()
        .parse::<u16>()
        .map_err(|_| format!("{:?} is not a valid port number", s.trim()))
}

/// Where a setting came from, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Line { file: PathBuf, line: usize },
    Flag(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Line { file, line } => write!(f, "{}:{}", file.display(), line),
            Origin::Flag(flag) => write!(f, "command-line {flag}"),
        }
    }
}

/// One `key=value` setting, before interpretation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub value: String,
    pub origin: Origin,
}

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin}: {key}: {reason}")]
    InvalidValue {
        origin: Origin,
        key: String,
        reason: String,
    },
    #[error("{}: {key} is not set", file.display())]
    Missing { file: PathBuf, key: String },
    #[error("{}: {reason}", path.display())]
    MyId { path: PathBuf, reason: String },
    /// A rule across settings (min > max, duplicate server ids, ...).
    #[error("{0}")]
    Invalid(String),
}

/// The validated settings, passed down from `main`; no global mutable settings elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub tick_time_ms: u32,
    pub data_dir: PathBuf,
    /// Where the Raft log lives, if not in `data_dir`.
    pub data_log_dir: Option<PathBuf>,
    /// 0 asks the OS for a free port (tests).
    pub client_port: u16,
    pub client_port_address: IpAddr,
    /// Per client IP; 0 = unlimited.
    pub max_client_cnxns: u32,
    /// Requests held at once before connections with requests out stop being read
    /// (`globalOutstandingLimit`, see `throttle.rs`).
    pub global_outstanding_limit: usize,
    pub min_session_timeout_ms: u32,
    pub max_session_timeout_ms: u32,
    pub four_letter_words: FourLetterWhitelist,
    /// TTL nodes.
    pub extended_types_enabled: bool,
    /// `user:base64(sha1(user:password))`.
    pub super_digest: Option<String>,
    pub enforce_quota: bool,
    pub skip_acl: bool,
    /// `zookeeper.letAnySaslUserDoX`: the ACL entry `sasl:<this>` admits every SASL user.
    pub let_any_sasl_user_do_x: Option<String>,
    /// Authentication schemes a connection must have used before any request but auth and
    /// SASL is served (`enforce.auth.*`, `sessionRequireClientSASLAuth`); `None` = not enforced.
    pub enforce_auth_schemes: Option<Vec<String>>,
    pub jute_max_buffer: usize,
    pub my_id: Option<u64>,
    pub servers: Vec<ServerSpec>,
    pub reconfig_enabled: bool,
    pub standalone_enabled: bool,
    pub container_check_interval_ms: u64,
    /// Take a snapshot after this many applied log entries (ZooKeeper's `snapCount` analogue).
    pub snapshot_every_entries: u64,
    /// `--ignore-peers`: run alone although server.N lines list others (each server keeps its own
    /// data; for harnesses that start "ensembles" of unrelated servers).
    pub ignore_peers: bool,
    /// `peerType`: this server's own role; its `server.N` line's role wins when both are given.
    pub peer_type: Option<PeerRole>,
    /// `initLimit` and `syncLimit`, in ticks: printed by `conf` in quorum mode. Raft's own timing
    /// is `Config::raft_timing`.
    pub init_limit: u32,
    pub sync_limit: u32,
    /// `readonlymode.enabled`: a member cut off from the quorum serves reads to read-only clients.
    pub read_only_mode: bool,
    /// `quorumListenOnAllIPs`: bind the peer port on every interface instead of this server's host.
    pub quorum_listen_on_all_ips: bool,
    /// Raft timing overrides (`paddock.raft.tickMs`, `paddock.raft.electionTicks`,
    /// `paddock.raft.heartbeatTicks`); `None` = derived from tickTime (`Config::raft_timing`).
    pub raft_tick_ms: Option<u32>,
    pub raft_election_ticks: Option<u32>,
    pub raft_heartbeat_ticks: Option<u32>,
    /// `paddock.linearizableReads`: every read waits for a ReadIndex (see `core/requests.rs`).
    pub linearizable_reads: bool,
    /// SASL DIGEST-MD5 users from the JAAS file; `None` when no JAAS `Server` section is
    /// configured, and then SASL tokens are refused (see `sasl.rs`).
    pub sasl: Option<SaslConfig>,
    /// How peer links are protected: `sslQuorum`, `portUnification`, `sslQuorumReloadCertFiles`,
    /// `ssl.quorum.*` and `quorum.auth.*` (`quorum_security.rs` turns it into the transport's).
    pub quorum_security: QuorumSecurityConfig,
    /// `java.security.auth.login.config`: the JAAS file, read for the client port's SASL users
    /// (`sasl`) and for quorum SASL.
    pub jaas_file: Option<PathBuf>,
    /// The AdminServer (`admin.enableServer`, `admin.serverAddress`, `admin.serverPort`,
    /// `admin.commandURL`): ZooKeeper's JSON commands over HTTP (see `http::admin`).
    pub admin: AdminConfig,
    /// `metricsProvider.className=...PrometheusMetricsProvider`: `GET /metrics` on
    /// `metricsProvider.httpHost:httpPort` (see `http::metrics`); `None` = no metrics endpoint.
    pub metrics: Option<MetricsConfig>,
    /// `metricsProvider.httpHost` when the key is absent (differs between the embedded default
    /// and a zoo.cfg).
    pub metrics_default_host: IpAddr,
    pub source: Option<PathBuf>,
}

/// ZooKeeper's Prometheus provider class, the one `metricsProvider.className` paddock serves.
pub const PROMETHEUS_PROVIDER: &str =
    "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider";
/// ZooKeeper's default provider: no endpoint (what a zoo.cfg without the key gets).
pub const DEFAULT_METRICS_PROVIDER: &str =
    "org.apache.zookeeper.metrics.impl.DefaultMetricsProvider";

/// The AdminServer's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminConfig {
    /// `admin.enableServer`, default true (ZooKeeper's default).
    pub enabled: bool,
    /// `admin.serverAddress`: 0.0.0.0 with a zoo.cfg (ZooKeeper's default), 127.0.0.1 in the
    /// embedded default.
    pub address: IpAddr,
    /// `admin.serverPort`, default 8080; 0 picks a free port (tests).
    pub port: u16,
    /// `admin.snapshot.enabled`, default true: the `snapshot` command (`http/admin_snapshot.rs`).
    pub snapshot_enabled: bool,
    /// `admin.rateLimiterIntervalInMS`: at most one `snapshot` per interval. Default 300 ms, the
    /// interval ZooKeeper 3.9.5 enforces (its limiter reads the documented 300000 as µs).
    pub rate_limiter_interval_ms: u64,
    /// `admin.commandURL`, default `/commands`.
    pub command_url: String,
}

/// The Prometheus endpoint's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsConfig {
    /// `metricsProvider.httpHost`: 0.0.0.0 with a zoo.cfg (ZooKeeper's default), 127.0.0.1 in
    /// the embedded default.
    pub host: IpAddr,
    /// `metricsProvider.httpPort`, default 7000; 0 picks a free port (tests).
    pub port: u16,
}

/// The quorum's protection as configured, before any file is read.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct QuorumSecurityConfig {
    /// `sslQuorum`: connect to peers over TLS, and accept only TLS unless `port_unification`.
    pub ssl_quorum: bool,
    /// `portUnification`: accept plaintext and TLS links on the peer port (a rolling upgrade).
    pub port_unification: bool,
    /// `sslQuorumReloadCertFiles`: new links use the stores' files as they change.
    pub reload_cert_files: bool,
    /// The `ssl.quorum.*` keys, by the part after the prefix (`keyStore.location`, ...).
    pub ssl_keys: std::collections::BTreeMap<String, String>,
    /// `quorum.auth.*`.
    pub sasl: crate::quorum_auth::QuorumSaslSettings,
}

impl QuorumSecurityConfig {
    /// Whether TLS material is needed: to connect with TLS, or to accept it on a unified port.
    pub fn wants_tls(&self) -> bool {
        self.ssl_quorum || self.port_unification
    }
}

/// Store passwords stay out of logs and `conf` dumps.
impl fmt::Debug for QuorumSecurityConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<String> = self
            .ssl_keys
            .iter()
            .map(|(k, v)| {
                if k.to_ascii_lowercase().contains("password") && !k.ends_with("passwordPath") {
                    format!("{k}=******")
                } else {
                    format!("{k}={v}")
                }
            })
            .collect();
        f.debug_struct("QuorumSecurityConfig")
            .field("ssl_quorum", &self.ssl_quorum)
            .field("port_unification", &self.port_unification)
            .field("reload_cert_files", &self.reload_cert_files)
            .field("ssl_keys", &keys)
            .field("sasl", &self.sasl)
            .finish()
    }
}

/// A saved snapshot is read into its restore this many bytes at a time.
const RESTORE_PIECE: usize = 1 << 20;

impl Config {
    /// What `paddock serve` uses with no config file: zoo_sample.cfg's timing, `./data`, port
    /// 2181 on loopback only (ZooKeeper binds all interfaces, as a zoo.cfg without
    /// clientPortAddress does here too; an embedded default should not expose itself), and every
    /// four-letter word (ZooKeeper enables only `srvr`; so does `embedded_with` once the address
    /// is not loopback).
    pub fn embedded_default() -> Config {
        let mut c = Config::zookeeper_base(SAMPLE_TICK_TIME_MS);
        c.data_dir = PathBuf::from("./data");
        c.client_port_address = IpAddr::V4(Ipv4Addr::LOCALHOST);
        c.four_letter_words = FourLetterWhitelist::All;
        // Same reasoning as the client port: stats, the connection list and the environment
        // are for the operator on this host unless a config says otherwise.
        c.admin.address = IpAddr::V4(Ipv4Addr::LOCALHOST);
        c.metrics_default_host = IpAddr::V4(Ipv4Addr::LOCALHOST);
        c
    }

    /// ZooKeeper's own defaults for keys a zoo.cfg leaves out.
    fn zookeeper_base(tick: u32) -> Config {
        Config {
            tick_time_ms: tick,
            data_dir: PathBuf::new(),
            data_log_dir: None,
            client_port: 2181,
            client_port_address: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            max_client_cnxns: 60,
            global_outstanding_limit: 1000,
            min_session_timeout_ms: tick.saturating_mul(2),
            max_session_timeout_ms: tick.saturating_mul(20),
            four_letter_words: FourLetterWhitelist::zookeeper_default(),
            extended_types_enabled: false,
            super_digest: None,
            enforce_quota: false,
            skip_acl: false,
            let_any_sasl_user_do_x: None,
            enforce_auth_schemes: None,
            jute_max_buffer: DEFAULT_JUTE_MAX_BUFFER,
            my_id: None,
            servers: Vec::new(),
            reconfig_enabled: false,
            standalone_enabled: true,
            container_check_interval_ms: 60_000,
            snapshot_every_entries: 100_000,
            ignore_peers: false,
            peer_type: None,
            init_limit: 10,
            sync_limit: 5,
            read_only_mode: false,
            quorum_listen_on_all_ips: false,
            raft_tick_ms: None,
            raft_election_ticks: None,
            raft_heartbeat_ticks: None,
            linearizable_reads: false,
            sasl: None,
            quorum_security: QuorumSecurityConfig::default(),
            jaas_file: None,
            admin: AdminConfig {
                enabled: true,
                address: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                port: 8080,
                snapshot_enabled: true,
                rate_limiter_interval_ms: 300,
                command_url: "/commands".to_string(),
            },
            metrics: None,
            metrics_default_host: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            source: None,
        }
    }

    /// Reads a zoo.cfg, then `myid` from its dataDir (required when the config is distributed).
    pub fn from_zoo_cfg(path: &Path) -> Result<Config, ConfigError> {
        Config::from_zoo_cfg_with(path, Vec::new())
    }

    /// As `from_zoo_cfg`, with `overrides` applied after the file's own lines (the CLI's flags).
    pub fn from_zoo_cfg_with(path: &Path, overrides: Vec<Entry>) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut entries = parse_properties(&text, path);
        entries.extend(overrides);
        let mut b = Builder::new(
            Config::zookeeper_base(ZK_DEFAULT_TICK_TIME_MS),
            path.to_path_buf(),
            true,
        );
        for e in &entries {
            b.apply(e)?;
        }
        let myid_path = b.cfg.data_dir.join("myid");
        match std::fs::read_to_string(&myid_path) {
            Ok(text) => b.cfg.my_id = Some(parse_myid(&text, &myid_path)?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(ConfigError::Io {
                    path: myid_path,
                    source,
                })
            }
        }
        if b.cfg.my_id.is_none() && b.cfg.is_distributed() {
            return Err(ConfigError::MyId {
                path: myid_path,
                reason: "myid file is missing (required when the config lists servers and is not standalone)"
                    .into(),
            });
        }
        b.finish()
    }

    /// Interprets zoo.cfg text without touching the disk (so `my_id` stays `None`). `base` is
    /// the file the text came from; it names lines in errors and becomes `source`. A relative
    /// dataDir stays relative: it is resolved against the process's cwd, as ZooKeeper does.
    pub fn parse_zoo_cfg(text: &str, base: &Path) -> Result<Config, ConfigError> {
        let mut b = Builder::new(
            Config::zookeeper_base(ZK_DEFAULT_TICK_TIME_MS),
            base.to_path_buf(),
            true,
        );
        for e in parse_properties(text, base) {
            b.apply(&e)?;
        }
        b.finish()
    }

    /// The embedded default with `overrides` applied (the CLI without `--config`). Its `*`
    /// whitelist is for a server on loopback: bound beyond it (`--bind 0.0.0.0`) with no
    /// whitelist given, only `srvr` is answered, as ZooKeeper's default, with a warning.
    pub fn embedded_with(overrides: Vec<Entry>) -> Result<Config, ConfigError> {
        let mut b = Builder::new(
            Config::embedded_default(),
            PathBuf::from("<embedded default>"),
            false,
        );
        for e in &overrides {
            b.apply(e)?;
        }
        let whitelist_given = overrides.iter().any(|e| {
            e.key.strip_prefix("zookeeper.").unwrap_or(&e.key) == "4lw.commands.whitelist"
        });
        let address = b.cfg.client_port_address;
        if !whitelist_given && !address.is_loopback() {
            tracing::warn!(
                %address,
                "the client port is bound beyond loopback without --config: only the srvr \
                 four-letter word is answered, since the others (dump, cons, wchc, srst, stmk, ...) \
                 would answer, and reset counters for, anyone who reaches the port; \
                 --four-letter-words (or -D 4lw.commands.whitelist) enables more"
            );
            b.cfg.four_letter_words = FourLetterWhitelist::zookeeper_default();
        }
        b.finish()
    }

    /// More than one server, or standalone mode switched off: paddock runs Raft with peers (or
    /// a group of one that can grow by reconfig).
    pub fn is_distributed(&self) -> bool {
        self.servers.len() > 1 || (!self.standalone_enabled && !self.servers.is_empty())
    }

    /// The `server.N` line for this server, if the config lists servers and myid is known.
    pub fn my_server(&self) -> Option<&ServerSpec> {
        let id = self.my_id?;
        self.servers.iter().find(|s| s.id == id)
    }

    /// Ids of the voting members (participants), in id order.
    pub fn voters(&self) -> Vec<u64> {
        ids_by_role(&self.servers, false)
    }

    /// Ids of the observers (Raft learners), in id order.
    pub fn observers(&self) -> Vec<u64> {
        ids_by_role(&self.servers, true)
    }

    /// This server's role: its server line's, else `peerType`'s, else participant.
    pub fn my_role(&self) -> PeerRole {
        self.my_server()
            .and_then(|s| s.role)
            .or(self.peer_type)
            .unwrap_or(PeerRole::Participant)
    }

    /// Raft's timing: (tick, election ticks, heartbeat ticks). Derived from tickTime unless the
    /// `paddock.raft.*` keys say otherwise: a tick of tickTime/20 (50 to 100 ms), an election
    /// after 10 ticks (raft-rs randomises it to between 10 and 20) and a heartbeat every 3. With
    /// tickTime 2000 a follower that stops hearing its leader gives up on it after 1 to 2 s, well
    /// inside the smallest session timeout (2 x tickTime = 4 s), so a member cut off from the
    /// quorum drops its clients before the quorum expires their sessions. A leader whose process
    /// died is replaced faster: its peers see the link close and elect at once. The 50 ms floor
    /// keeps a loaded machine (a starved raft thread) from deposing a healthy leader when tickTime
    /// is short: go-zookeeper's test servers use tickTime 500.
    pub fn raft_timing(&self) -> (std::time::Duration, u32, u32) {
        let tick_ms = self
            .raft_tick_ms
            .unwrap_or_else(|| (self.tick_time_ms / 20).clamp(50, 100));
        let election = self.raft_election_ticks.unwrap_or(10);
        let heartbeat = self.raft_heartbeat_ticks.unwrap_or(3);
        (
            std::time::Duration::from_millis(u64::from(tick_ms)),
            election,
            heartbeat,
        )
    }

    /// The peer address to listen on: this server's `host:peerPort`, or every interface with
    /// `quorumListenOnAllIPs`.
    pub fn peer_listen_host(&self) -> Option<(String, u16)> {
        let me = self.my_server()?;
        let host = if self.quorum_listen_on_all_ips {
            "0.0.0.0".to_string()
        } else {
            me.host.clone()
        };
        Some((host, me.peer_port))
    }

    /// The other members and their `host:peerPort`, for the peer transport.
    pub fn peer_addresses(&self) -> Vec<(u64, String)> {
        self.servers
            .iter()
            .filter(|s| Some(s.id) != self.my_id)
            .map(|s| (s.id, s.peer_address()))
            .collect()
    }

    /// Checks the rules that hold whatever the settings came from.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Invalid(m));
        if self.tick_time_ms == 0 {
            return bad("tickTime must be greater than 0".into());
        }
        if self.min_session_timeout_ms > self.max_session_timeout_ms {
            return bad(format!(
                "minSessionTimeout ({}) must not be larger than maxSessionTimeout ({})",
                self.min_session_timeout_ms, self.max_session_timeout_ms
            ));
        }
        if self.max_session_timeout_ms > i32::MAX as u32 {
            return bad(format!(
                "maxSessionTimeout ({}) does not fit the protocol's 32-bit timeout",
                self.max_session_timeout_ms
            ));
        }
        if self.data_dir.as_os_str().is_empty() {
            return bad("dataDir is empty".into());
        }
        if self.jute_max_buffer == 0 {
            return bad("jute.maxbuffer must be greater than 0".into());
        }
        if self.snapshot_every_entries == 0 {
            return bad("snapCount must be greater than 0".into());
        }
        if self.container_check_interval_ms == 0 {
            return bad("znode.container.checkIntervalMs must be greater than 0".into());
        }
        if let Some(d) = &self.super_digest {
            validate_super_digest(d).map_err(ConfigError::Invalid)?;
        }
        let mut ids = BTreeSet::new();
        for s in &self.servers {
            if !ids.insert(s.id) {
                return bad(format!("server.{} is listed twice", s.id));
            }
        }
        // A missing myid is caught where it is read (`from_zoo_cfg`); text-only parsing leaves it
        // unknown.
        if self.is_distributed() {
            if let Some(id) = self.my_id {
                // Raft reserves id 0; session ids carry the server id in their top byte.
                if id == 0 || id > 255 {
                    return bad(format!(
                        "myid is {id}: members of an ensemble need an id from 1 to 255"
                    ));
                }
            }
            for s in &self.servers {
                if s.id == 0 || s.id > 255 {
                    return bad(format!(
                        "server.{}: ids of ensemble members go from 1 to 255",
                        s.id
                    ));
                }
            }
            if self.voters().is_empty() {
                return bad("every listed server is an observer: an ensemble needs at least one participant".into());
            }
            let (tick, election, heartbeat) = self.raft_timing();
            if heartbeat >= election {
                return bad(format!(
                    "paddock.raft.heartbeatTicks ({heartbeat}) must be smaller than paddock.raft.electionTicks ({election})"
                ));
            }
            if tick.as_millis() as u64 * u64::from(election) * 2
                >= u64::from(self.min_session_timeout_ms)
            {
                tracing::warn!(
                    election_timeout_ms = tick.as_millis() as u64 * u64::from(election),
                    min_session_timeout_ms = self.min_session_timeout_ms,
                    "the Raft election timeout is not well below the smallest session timeout: a \
                     member cut off from the quorum may keep its clients until the quorum expires them"
                );
            }
        }
        if let Some(id) = self.my_id {
            if !self.servers.is_empty() && !ids.contains(&id) {
                return bad(format!("myid is {id} but there is no server.{id} line"));
            }
        }
        Ok(())
    }

    /// ZooKeeper's negotiation: the client's request clamped to [min, max].
    pub fn negotiate_timeout(&self, requested: i32) -> i32 {
        let min = i64::from(self.min_session_timeout_ms);
        let max = i64::from(self.max_session_timeout_ms);
        // validate() keeps max within i32, so the clamp result fits.
        i64::from(requested).clamp(min, max) as i32
    }

    /// The static lines of the `conf` 4lw, in ZooKeeper's order (`ZooKeeperServer.dumpConf`).
    /// The measured `dataDirSize` and `dataLogSize` lines are not here: `fourlw::render` inserts
    /// them after `dataDir` and `dataLogDir` from its `ServerView`.
    pub fn as_conf_lines(&self) -> Vec<(String, String)> {
        let data_dir = absolute(&self.data_dir);
        let log_dir = self
            .data_log_dir
            .as_deref()
            .map(absolute)
            .unwrap_or_else(|| data_dir.clone());
        let mut lines = vec![
            ("clientPort".to_string(), self.client_port.to_string()),
            // No TLS port: ZooKeeper prints -1 when it has none.
            ("secureClientPort".to_string(), "-1".to_string()),
            ("dataDir".to_string(), data_dir.display().to_string()),
            ("dataLogDir".to_string(), log_dir.display().to_string()),
            ("tickTime".to_string(), self.tick_time_ms.to_string()),
            (
                "maxClientCnxns".to_string(),
                self.max_client_cnxns.to_string(),
            ),
            (
                "minSessionTimeout".to_string(),
                self.min_session_timeout_ms.to_string(),
            ),
            (
                "maxSessionTimeout".to_string(),
                self.max_session_timeout_ms.to_string(),
            ),
            // The OS default backlog; ZooKeeper prints -1 for "not set".
            ("clientPortListenBacklog".to_string(), "-1".to_string()),
            // A standalone ZooKeeper server reports 0 whatever myid says.
            (
                "serverId".to_string(),
                if self.is_distributed() {
                    self.my_id.unwrap_or(0)
                } else {
                    0
                }
                .to_string(),
            ),
        ];
        if self.is_distributed() {
            // QuorumZooKeeperServer.dumpConf: the quorum keys, then the membership.
            let me = self.my_server();
            lines.push(("initLimit".to_string(), self.init_limit.to_string()));
            lines.push(("syncLimit".to_string(), self.sync_limit.to_string()));
            lines.push(("electionAlg".to_string(), "3".to_string()));
            lines.push((
                "electionPort".to_string(),
                me.map_or(String::new(), |s| s.election_port.to_string()),
            ));
            lines.push((
                "quorumPort".to_string(),
                me.map_or(String::new(), |s| s.peer_port.to_string()),
            ));
            // LearnerType's ordinal: PARTICIPANT 0, OBSERVER 1.
            let peer_type = match self.my_role() {
                PeerRole::Participant => "0",
                PeerRole::Observer => "1",
            };
            lines.push(("peerType".to_string(), peer_type.to_string()));
            lines.push(("membership: ".to_string(), String::new()));
            for s in &self.servers {
                lines.push((format!("server.{}", s.id), s.to_string()));
            }
        }
        lines
    }

    /// The tree settings this config implies.
    pub fn tree_config(&self) -> znode_tree::TreeConfig {
        znode_tree::TreeConfig {
            extended_types: self.extended_types_enabled,
            enforce_quota: self.enforce_quota,
            super_digest: self.super_digest.clone(),
            skip_acl: self.skip_acl,
            let_any_sasl_user_do_x: self.let_any_sasl_user_do_x.clone(),
        }
    }

    /// The tree a consensus snapshot holds, with this config's settings. The bootstrap snapshot
    /// (index 1) carries no data by consensus's contract: it is the empty tree (a member that
    /// joined an ensemble empty can have it as its newest snapshot, at start-up or installed).
    pub fn tree_from_snapshot(
        &self,
        data: &[u8],
    ) -> Result<znode_tree::Tree, znode_tree::TreeError> {
        if data.is_empty() {
            Ok(znode_tree::Tree::new(self.tree_config()))
        } else {
            znode_tree::Tree::restore(data, self.tree_config())
        }
    }

    /// `tree_from_snapshot` for the snapshot a start loads: its data is read from the file a
    /// piece at a time into the restore (`znode_tree::Restore`), never whole into memory.
    pub fn tree_from_saved_snapshot(
        &self,
        snap: &consensus::ScannedSnapshot,
    ) -> anyhow::Result<znode_tree::Tree> {
        if snap.data_len == 0 {
            return Ok(znode_tree::Tree::new(self.tree_config()));
        }
        // `consensus::load_newest` verified the file's checksum over these bytes when it chose
        // this snapshot (a damaged one falls back to the previous before raft opens), so the tree
        // format's own checksum is not computed a second time.
        let mut restore = znode_tree::Restore::of_checked_bytes(self.tree_config());
        snap.for_each_piece(RESTORE_PIECE, |piece| -> anyhow::Result<()> {
            Ok(restore.feed(piece)?)
        })?;
        Ok(restore.finish()?)
    }

    /// Where the raft log and snapshots live: `dataLogDir` if set, else `dataDir`.
    pub fn raft_dir(&self) -> PathBuf {
        self.data_log_dir
            .clone()
            .unwrap_or_else(|| self.data_dir.clone())
            .join("paddock")
    }
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

fn parse_myid(text: &str, path: &Path) -> Result<u64, ConfigError> {
    let t = text.trim();
    t.parse::<u64>().map_err(|_| ConfigError::MyId {
        path: path.to_path_buf(),
        reason: format!("{t:?} is not a server id (a non-negative integer)"),
    })
}

/// The value is a password hash (guessable offline), so the error says what is wrong with it
/// and never repeats it; the caller names the key and the line.
fn validate_super_digest(d: &str) -> Result<(), String> {
    let wrong = match d.split_once(':') {
        None => "has no ':'",
        Some(("", _)) => "has an empty user name before ':'",
        Some((_, "")) => "has an empty hash after ':'",
        Some(_) => return Ok(()),
    };
    Err(format!(
        "the value {wrong}: it must be user:base64-sha1, as DigestAuthenticationProvider prints it \
         (the value is not shown: it is a secret)"
    ))
}

/// Splits Java properties text into entries: `#`/`!` comments, `key=value`, `key: value` or
/// `key value`, whitespace around both trimmed, a trailing backslash continuing the line.
/// Escapes inside keys and values are not interpreted (zoo.cfg files do not use them).
pub fn parse_properties(text: &str, file: &Path) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((idx, raw)) = lines.next() {
        let mut logical = raw.trim_start().to_string();
        if logical.is_empty() || logical.starts_with('#') || logical.starts_with('!') {
            continue;
        }
        while ends_with_continuation(&logical) {
            logical.pop();
            match lines.next() {
                Some((_, next)) => logical.push_str(next.trim_start()),
                None => break,
            }
        }
        let key_end = logical
            .find(|c: char| c == '=' || c == ':' || c.is_whitespace())
            .unwrap_or(logical.len());
        let key = logical[..key_end].to_string();
        let mut rest = logical[key_end..].trim_start();
        if let Some(r) = rest.strip_prefix('=').or_else(|| rest.strip_prefix(':')) {
            rest = r;
        }
        out.push(Entry {
            key,
            value: rest.trim().to_string(),
            origin: Origin::Line {
                file: file.to_path_buf(),
                line: idx + 1,
            },
        });
    }
    out
}

fn ends_with_continuation(s: &str) -> bool {
    s.chars().rev().take_while(|&c| c == '\\').count() % 2 == 1
}

/// Keys ZooKeeper understands that have no meaning for paddock. They are logged at info
/// level rather than warned about, since real harnesses always write some of them.
const IGNORED_KEYS: &[&str] = &[
    "connectToLearnerMasterLimit",
    "localSessionsEnabled",
    "localSessionsUpgradingEnabled",
    "secureClientPortAddress",
    "serverCnxnFactory",
    "clientPortListenBacklog",
    "observerMasterPort",
    "syncEnabled",
    "autopurge.snapRetainCount",
    "autopurge.purgeInterval",
    "multiAddress.enabled",
    // Jetty tuning of the AdminServer: paddock's responder has none (its TLS keys refuse the
    // start when they ask for TLS: see Builder::apply).
    "admin.idleTimeout",
    "admin.snapshot.intervalInMS",
    "admin.restore.intervalInMS",
    "metricsProvider.exportJvmInfo",
    "emulate353TTLNodes",
    "preAllocSize",
    "forceSync",
    "fsync.warningthresholdms",
    // ZooKeeper's JDK trust manager instead of its own (default true in 3.9): paddock's TLS checks
    // are the same either way (DESIGN.md, Security).
    "fips-mode",
];

const IGNORED_PREFIXES: &[&str] = &[
    // Client-port TLS settings: they configure a secure client port, which paddock does not
    // have; asking for one (secureClientPort, client.portUnification) refuses the start.
    "ssl.",
    // Further PrometheusMetricsProvider tuning (numWorkerThreads, maxQueueSize,
    // workerShutdownTimeoutMs, ssl.*): no equivalent here.
    "metricsProvider.",
    // QuorumCnxManager tuning (quorum.cnxn.threads.size, quorum.cnxn.timeout): paddock's peer
    // transport has its own.
    "quorum.cnxn.",
    "jvm.pause.",
    "multiAddress.",
    "group.",
    "weight.",
];

/// Accumulates entries over a starting config, then derives what depends on other keys.
struct Builder {
    cfg: Config,
    file: PathBuf,
    from_file: bool,
    data_dir_set: bool,
    client_port_set: bool,
    client_address_set: bool,
    min_set: bool,
    max_set: bool,
    read_only_mode: bool,
    sasl: SaslSettings,
    enforce_auth: EnforceAuth,
    /// `metricsProvider.className` names the Prometheus provider.
    prometheus: bool,
    metrics_host: Option<IpAddr>,
    metrics_port: Option<u16>,
}

/// `zookeeper.sessionRequireClientSASLAuth`, `zookeeper.enforce.auth.enabled` and
/// `zookeeper.enforce.auth.schemes`, combined as ZooKeeper's `AuthenticationHelper` does.
#[derive(Default)]
struct EnforceAuth {
    require_sasl: bool,
    enabled: bool,
    schemes: Option<String>,
}

impl EnforceAuth {
    /// The schemes a connection must have authenticated with, or `None` when nothing is enforced.
    fn schemes(&self) -> Result<Option<Vec<String>>, ConfigError> {
        if self.require_sasl {
            // The older switch wins and means exactly "sasl", whatever the other two say.
            return Ok(Some(vec!["sasl".to_string()]));
        }
        if !self.enabled {
            return Ok(None);
        }
        let schemes: Vec<String> = self
            .schemes
            .as_deref()
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        if schemes.is_empty() {
            return Err(ConfigError::Invalid(
                "enforce.auth.enabled is true, so enforce.auth.schemes must be configured".into(),
            ));
        }
        // paddock's authentication providers; x509 needs a TLS port, which paddock lacks.
        if let Some(missing) = schemes
            .iter()
            .find(|s| !matches!(s.as_str(), "ip" | "digest" | "sasl"))
        {
            return Err(ConfigError::Invalid(format!(
                "enforce.auth.schemes: authentication scheme {missing} is not available"
            )));
        }
        Ok(Some(schemes))
    }
}

impl Builder {
    fn new(cfg: Config, file: PathBuf, from_file: bool) -> Builder {
        Builder {
            cfg,
            file,
            from_file,
            data_dir_set: false,
            client_port_set: false,
            client_address_set: false,
            min_set: false,
            max_set: false,
            read_only_mode: false,
            sasl: SaslSettings::default(),
            enforce_auth: EnforceAuth::default(),
            prometheus: false,
            metrics_host: None,
            metrics_port: None,
        }
    }

    fn apply(&mut self, e: &Entry) -> Result<(), ConfigError> {
        let invalid = |reason: String| ConfigError::InvalidValue {
            origin: e.origin.clone(),
            key: e.key.clone(),
            reason,
        };
        let v = e.value.as_str();
        // A JVM property, not a `zookeeper.*` one: only `-D` can set it (a zoo.cfg line would
        // become `zookeeper.java.security...`, which ZooKeeper never reads). Java reads
        // `==file` as "this file only", and accepts a file: URL.
        if e.key == "java.security.auth.login.config" {
            if let Origin::Line { .. } = e.origin {
                tracing::warn!(origin = %e.origin, "ignoring java.security.auth.login.config in a zoo.cfg (ZooKeeper reads it only as a JVM property): pass it as -D");
                return Ok(());
            }
            let path = v.trim_start_matches('=');
            let path = path
                .strip_prefix("file://")
                .or_else(|| path.strip_prefix("file:"))
                .unwrap_or(path);
            self.sasl.jaas_file = Some(non_empty_path(path).map_err(invalid)?);
            return Ok(());
        }
        // Settings ZooKeeper reads from `zookeeper.*` system properties may be written with or
        // without the prefix (the file form sets the property, `-D` sets it directly).
        let key = e.key.strip_prefix("zookeeper.").unwrap_or(&e.key);
        match key {
            "tickTime" => self.cfg.tick_time_ms = parse_num(v).map_err(invalid)?,
            "dataDir" => {
                self.cfg.data_dir = non_empty_path(v).map_err(invalid)?;
                self.data_dir_set = true;
            }
            "dataLogDir" => self.cfg.data_log_dir = Some(non_empty_path(v).map_err(invalid)?),
            "clientPort" => {
                self.cfg.client_port = parse_port(v).map_err(invalid)?;
                self.client_port_set = true;
            }
            "clientPortAddress" => {
                self.cfg.client_port_address = parse_ip(v).map_err(invalid)?;
                self.client_address_set = true;
            }
            "maxClientCnxns" => self.cfg.max_client_cnxns = parse_num(v).map_err(invalid)?,
            // Integer.getInteger: a negative limit is accepted and throttles like 0 does.
            "globalOutstandingLimit" => {
                self.cfg.global_outstanding_limit = match v.strip_prefix('-') {
                    Some(magnitude) => parse_java_int(magnitude).map(|_| 0),
                    None => parse_java_int(v),
                }
                .map_err(invalid)?
            }
            "minSessionTimeout" => {
                self.cfg.min_session_timeout_ms = parse_timeout(v).map_err(invalid)?;
                self.min_set = true;
            }
            "maxSessionTimeout" => {
                self.cfg.max_session_timeout_ms = parse_timeout(v).map_err(invalid)?;
                self.max_set = true;
            }
            "4lw.commands.whitelist" => {
                let (list, unknown) = FourLetterWhitelist::parse(v);
                if !unknown.is_empty() {
                    tracing::warn!(origin = %e.origin, ?unknown, "ignoring unknown four-letter words in whitelist");
                }
                self.cfg.four_letter_words = list;
            }
            "readonlymode.enabled" => {
                self.read_only_mode = parse_bool(v).map_err(invalid)?;
                self.cfg.read_only_mode = self.read_only_mode;
            }
            "initLimit" => self.cfg.init_limit = parse_positive(v).map_err(invalid)?,
            "syncLimit" => self.cfg.sync_limit = parse_positive(v).map_err(invalid)?,
            "quorumListenOnAllIPs" => {
                self.cfg.quorum_listen_on_all_ips = parse_bool(v).map_err(invalid)?
            }
            "paddock.raft.tickMs" => {
                self.cfg.raft_tick_ms = Some(parse_positive(v).map_err(invalid)?)
            }
            "paddock.raft.electionTicks" => {
                self.cfg.raft_election_ticks = Some(parse_positive(v).map_err(invalid)?)
            }
            "paddock.linearizableReads" => {
                self.cfg.linearizable_reads = parse_bool(v).map_err(invalid)?
            }
            "paddock.raft.heartbeatTicks" => {
                self.cfg.raft_heartbeat_ticks = Some(parse_positive(v).map_err(invalid)?)
            }
            "extendedTypesEnabled" => {
                self.cfg.extended_types_enabled = parse_bool(v).map_err(invalid)?
            }
            "DigestAuthenticationProvider.superDigest" => {
                validate_super_digest(v).map_err(invalid)?;
                self.cfg.super_digest = Some(v.to_string());
            }
            "sasl.serverconfig" => self.sasl.section = Some(v.to_string()),
            "SASLAuthenticationProvider.superPassword" => {
                self.sasl.super_password = Some(v.to_string())
            }
            "allowSaslFailedClients" => {
                self.sasl.allow_failed_clients = parse_bool(v).map_err(invalid)?
            }
            // isSaslSuperUser reads `zookeeper.superUser` and any `zookeeper.superUser.<suffix>`.
            k if k == "superUser" || k.starts_with("superUser.") => {
                if !self.sasl.super_users.iter().any(|u| u == v) {
                    self.sasl.super_users.push(v.to_string());
                }
            }
            "sessionRequireClientSASLAuth" => {
                self.enforce_auth.require_sasl = parse_bool(v).map_err(invalid)?
            }
            "enforce.auth.enabled" => self.enforce_auth.enabled = parse_bool(v).map_err(invalid)?,
            "enforce.auth.schemes" => self.enforce_auth.schemes = Some(v.to_string()),
            "letAnySaslUserDoX" => self.cfg.let_any_sasl_user_do_x = Some(v.to_string()),
            "enforceQuota" => self.cfg.enforce_quota = parse_bool(v).map_err(invalid)?,
            "skipACL" => self.cfg.skip_acl = parse_bool(v).map_err(invalid)?,
            "jute.maxbuffer" => self.cfg.jute_max_buffer = parse_java_int(v).map_err(invalid)?,
            "reconfigEnabled" => self.cfg.reconfig_enabled = parse_bool(v).map_err(invalid)?,
            "standaloneEnabled" => self.cfg.standalone_enabled = parse_bool(v).map_err(invalid)?,
            "znode.container.checkIntervalMs" => {
                self.cfg.container_check_interval_ms = parse_num(v).map_err(invalid)?
            }
            "snapCount" => self.cfg.snapshot_every_entries = parse_num(v).map_err(invalid)?,
            "electionAlg" => {
                if v != "3" {
                    return Err(invalid(format!("{v:?}: only electionAlg 3 exists")));
                }
            }
            "peerType" => {
                self.cfg.peer_type = Some(match v.to_ascii_lowercase().as_str() {
                    "participant" => PeerRole::Participant,
                    "observer" => PeerRole::Observer,
                    _ => return Err(invalid(format!("{v:?} is not participant or observer"))),
                });
            }
            "admin.enableServer" => self.cfg.admin.enabled = parse_bool(v).map_err(invalid)?,
            "admin.serverAddress" => self.cfg.admin.address = parse_ip(v).map_err(invalid)?,
            "admin.serverPort" => self.cfg.admin.port = parse_port(v).map_err(invalid)?,
            "admin.snapshot.enabled" => {
                self.cfg.admin.snapshot_enabled = parse_bool(v).map_err(invalid)?
            }
            "admin.rateLimiterIntervalInMS" => {
                self.cfg.admin.rate_limiter_interval_ms = v
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| invalid(format!("{v:?} is not a number of milliseconds")))?
            }
            "admin.commandURL" => {
                if !v.starts_with('/') || v.contains(char::is_whitespace) {
                    return Err(invalid(format!("{v:?} is not a URL path (like /commands)")));
                }
                self.cfg.admin.command_url = v.trim_end_matches('/').to_string();
                if self.cfg.admin.command_url.is_empty() {
                    return Err(invalid(
                        "\"/\" would hide every other page; use a path like /commands".into(),
                    ));
                }
            }
            // ZooKeeper fails to start on a class it cannot load; paddock knows two.
            "metricsProvider.className" => {
                self.prometheus = match v {
                    PROMETHEUS_PROVIDER => true,
                    DEFAULT_METRICS_PROVIDER => false,
                    _ => {
                        return Err(invalid(format!(
                            "{v:?}: paddock provides {PROMETHEUS_PROVIDER} and {DEFAULT_METRICS_PROVIDER} only"
                        )))
                    }
                };
            }
            "metricsProvider.httpHost" => self.metrics_host = Some(parse_ip(v).map_err(invalid)?),
            "metricsProvider.httpPort" => self.metrics_port = Some(parse_port(v).map_err(invalid)?),
            "sslQuorum" => self.cfg.quorum_security.ssl_quorum = parse_bool(v).map_err(invalid)?,
            "portUnification" => {
                self.cfg.quorum_security.port_unification = parse_bool(v).map_err(invalid)?
            }
            "sslQuorumReloadCertFiles" => {
                self.cfg.quorum_security.reload_cert_files = parse_bool(v).map_err(invalid)?
            }
            k if k.starts_with("ssl.quorum.") => {
                let suffix = &k["ssl.quorum.".len()..];
                self.cfg
                    .quorum_security
                    .ssl_keys
                    .insert(suffix.to_string(), v.to_string());
            }
            "quorum.auth.enableSasl" => {
                self.cfg.quorum_security.sasl.enable = parse_bool(v).map_err(invalid)?
            }
            "quorum.auth.learnerRequireSasl" => {
                self.cfg.quorum_security.sasl.learner_require = parse_bool(v).map_err(invalid)?
            }
            "quorum.auth.serverRequireSasl" => {
                self.cfg.quorum_security.sasl.server_require = parse_bool(v).map_err(invalid)?
            }
            "quorum.auth.learner.saslLoginContext" => {
                self.cfg.quorum_security.sasl.learner_context = v.to_string()
            }
            "quorum.auth.server.saslLoginContext" => {
                self.cfg.quorum_security.sasl.server_context = v.to_string()
            }
            "quorum.auth.kerberos.servicePrincipal" => {
                self.cfg.quorum_security.sasl.kerberos_service_principal = Some(v.to_string())
            }
            k if k.starts_with("quorum.auth.") => {
                return Err(invalid(
                    "not a quorum.auth key paddock knows; refusing to start rather than run the \
                     quorum less protected than asked (see DESIGN.md, Security)"
                        .into(),
                ));
            }
            k if is_auth_provider_key(k) => {
                check_auth_provider(v).map_err(invalid)?;
            }
            // Asks for TLS on the client port, which paddock does not have yet: a start would
            // serve in plaintext what the operator meant to protect.
            "secureClientPort" => {
                return Err(invalid(
                    "paddock has no TLS on the client port yet, so it refuses to start rather than \
                     serve clients in plaintext; remove secureClientPort (and client.portUnification) \
                     and keep clients on clientPort, or put a TLS proxy in front of it"
                        .into(),
                ));
            }
            "client.portUnification" => {
                if parse_bool(v).map_err(invalid)? {
                    return Err(invalid(
                        "paddock has no TLS on the client port yet; set it to false or remove it"
                            .into(),
                    ));
                }
            }
            "ssl.authProvider" => {
                return Err(invalid(
                    "x509 authentication needs TLS on the client port, which paddock does not have \
                     yet; remove the key (and x509 ACLs will not match)"
                        .into(),
                ));
            }
            "admin.portUnification" | "admin.forceHttps" | "admin.needClientAuth" => {
                if parse_bool(v).map_err(invalid)? {
                    return Err(invalid(
                        "the AdminServer has no HTTPS in paddock; bind it to loopback \
                         (admin.serverAddress=127.0.0.1) or turn it off (admin.enableServer=false)"
                            .into(),
                    ));
                }
            }
            "DigestAuthenticationProvider.digestAlg" => {
                let alg = v.to_ascii_uppercase().replace('-', "");
                if alg != "SHA1" {
                    return Err(invalid(format!(
                        "{v:?}: paddock computes digest ids with SHA1 only; another algorithm would \
                         make every digest ACL fail to match (remove the key, or keep SHA1)"
                    )));
                }
            }
            "DigestAuthenticationProvider.enabled" => {
                if !parse_bool(v).map_err(invalid)? {
                    return Err(invalid(
                        "paddock cannot turn the digest scheme off; remove the key (digest \
                         authentication stays on, as ZooKeeper's default)"
                            .into(),
                    ));
                }
            }
            "dynamicConfigFile" => {
                return Err(invalid(
                    "a separate dynamic config file is not supported; put the server.N lines in this file".into(),
                ));
            }
            _ => {
                if let Some(id) = key.strip_prefix("server.") {
                    let id: u64 = id
                        .parse()
                        .map_err(|_| invalid(format!("{id:?} is not a server id")))?;
                    let spec = ServerSpec::parse(id, v).map_err(invalid)?;
                    self.cfg.servers.retain(|s| s.id != id);
                    self.cfg.servers.push(spec);
                } else if IGNORED_KEYS.contains(&key)
                    || IGNORED_PREFIXES.iter().any(|p| key.starts_with(p))
                {
                    tracing::info!(origin = %e.origin, key = %e.key, "ignoring setting paddock does not use");
                } else {
                    tracing::warn!(origin = %e.origin, key = %e.key, "ignoring unknown setting");
                }
            }
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Config, ConfigError> {
        let c = &mut self.cfg;
        // httpHost and httpPort mean something only with the Prometheus provider.
        c.metrics = self.prometheus.then(|| MetricsConfig {
            host: self.metrics_host.unwrap_or(c.metrics_default_host),
            port: self.metrics_port.unwrap_or(7000),
        });
        if self.from_file && !self.data_dir_set {
            return Err(ConfigError::Missing {
                file: self.file,
                key: "dataDir".into(),
            });
        }
        // Derived after all keys are read, so the order of lines does not matter.
        if !self.min_set {
            c.min_session_timeout_ms = c.tick_time_ms.saturating_mul(2);
        }
        if !self.max_set {
            c.max_session_timeout_ms = c.tick_time_ms.saturating_mul(20);
        }
        if self.read_only_mode {
            c.four_letter_words.add(FourLetterWord::Isro);
        }
        c.servers.sort_by_key(|s| s.id);
        // Without clientPort, ZooKeeper takes the client address from this server's line.
        if !self.client_port_set {
            let mine = c.my_server().cloned();
            match mine.as_ref().and_then(|s| s.client_port) {
                Some(port) => {
                    c.client_port = port;
                    if !self.client_address_set {
                        if let Some(host) = mine.as_ref().and_then(|s| s.client_host.as_deref()) {
                            c.client_port_address = resolve_host(host).map_err(|reason| {
                                ConfigError::Invalid(format!(
                                    "server.{} client address: {reason}",
                                    c.my_id.unwrap_or(0)
                                ))
                            })?;
                        }
                    }
                }
                None if self.from_file => {
                    return Err(ConfigError::Missing {
                        file: self.file,
                        key: "clientPort".into(),
                    })
                }
                None => {}
            }
        }
        if self.from_file {
            c.source = Some(self.file.clone());
        }
        // Read last, so a bad JAAS file is reported after the zoo.cfg's own mistakes.
        c.sasl = self.sasl.load().map_err(ConfigError::Invalid)?;
        c.jaas_file = self.sasl.jaas_file.clone();
        // Checked now so a mistake stops `paddock serve` before anything else; loaded again (with
        // the stores) when the peer transport starts.
        crate::quorum_auth::QuorumSasl::load(
            &c.quorum_security.sasl,
            self.sasl.jaas_file.as_deref(),
        )
        .map_err(ConfigError::Invalid)?;
        crate::quorum_security::check(&c.quorum_security).map_err(ConfigError::Invalid)?;
        c.enforce_auth_schemes = self.enforce_auth.schemes()?;
        self.cfg.validate()?;
        Ok(self.cfg)
    }
}

/// `authProvider.<anything>` (ZooKeeper's ProviderRegistry reads every such property).
fn is_auth_provider_key(k: &str) -> bool {
    k.strip_prefix("authProvider.")
        .is_some_and(|rest| !rest.is_empty())
}

/// The authentication providers paddock has built in; any other class refuses the start, as
/// ZooKeeper's does when it cannot load one.
fn check_auth_provider(class: &str) -> Result<(), String> {
    const KNOWN: &[&str] = &[
        "org.apache.zookeeper.server.auth.DigestAuthenticationProvider",
        "org.apache.zookeeper.server.auth.IPAuthenticationProvider",
        "org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
    ];
    if KNOWN.contains(&class) {
        return Ok(());
    }
    if class == "org.apache.zookeeper.server.auth.X509AuthenticationProvider" {
        return Err(
            "x509 authentication needs TLS on the client port, which paddock does not have yet; \
             remove the key"
                .into(),
        );
    }
    Err(format!(
        "{class:?} is not an authentication provider paddock has (it has digest, ip and sasl); \
         remove the key"
    ))
}

fn parse_num<T: std::str::FromStr>(v: &str) -> Result<T, String> {
    v.parse::<T>()
        .map_err(|_| format!("{v:?} is not a valid non-negative number"))
}

fn parse_positive(v: &str) -> Result<u32, String> {
    match v.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{v:?} is not a positive number")),
    }
}

fn parse_timeout(v: &str) -> Result<u32, String> {
    // ZooKeeper stores -1 for "derive from tickTime"; a config never needs to write it.
    parse_num(v)
}

/// `Integer.decode` as used by `Integer.getInteger("jute.maxbuffer")`: decimal, `0x`/`#` hex.
fn parse_java_int(v: &str) -> Result<usize, String> {
    let parsed = if let Some(h) = v
        .strip_prefix("0x")
        .or_else(|| v.strip_prefix("0X"))
        .or_else(|| v.strip_prefix('#'))
    {
        usize::from_str_radix(h, 16).ok()
    } else {
        v.parse::<usize>().ok()
    };
    match parsed {
        Some(n) if n <= i32::MAX as usize => Ok(n),
        _ => Err(format!("{v:?} is not a valid positive 32-bit integer")),
    }
}

/// Java's `Boolean.parseBoolean` is lenient (anything but "true" is false); ZooKeeper's own
/// `parseBoolean` rejects other words, and so do we, so a typo cannot silently disable a
/// setting. `skipACL` uses yes/no, so those are accepted too.
fn parse_bool(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "yes" => Ok(true),
        "false" | "no" => Ok(false),
        _ => Err(format!("{v:?} is not a boolean (true/false)")),
    }
}

fn parse_ip(v: &str) -> Result<IpAddr, String> {
    if v.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    v.trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .map_err(|_| {
            format!("{v:?} is not an IP address (host names other than localhost are not resolved)")
        })
}

/// An IP address, `localhost`, or a host name resolved now (a client address on a server line,
/// such as `;zoo1:2181` in a compose file, names this server's own address).
fn resolve_host(v: &str) -> Result<IpAddr, String> {
    if let Ok(ip) = parse_ip(v) {
        return Ok(ip);
    }
    use std::net::ToSocketAddrs;
    match (v, 0u16).to_socket_addrs() {
        Ok(mut addrs) => addrs
            .next()
            .map(|a| a.ip())
            .ok_or_else(|| format!("host name {v:?} resolves to no address")),
        Err(e) => Err(format!("host name {v:?} does not resolve: {e}")),
    }
}

fn non_empty_path(v: &str) -> Result<PathBuf, String> {
    if v.is_empty() {
        Err("empty path".into())
    } else {
        Ok(PathBuf::from(v))
    }
}
