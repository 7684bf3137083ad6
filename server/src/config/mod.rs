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
//! tune it (see `sasl.rs`). Keys ZooKeeper knows but paddock does not use (Jetty tuning, quorum
//! timing) are logged and ignored; unknown keys are logged at warn level. Neither is fatal,
//! because the client test harnesses (kazoo, go-zookeeper) write many of them.
//!
//! Every entry carries its origin (file and line, or flag), so a bad value is reported as
//! `zoo.cfg:7: clientPort: "abc" is not a valid port number` and the server refuses to start.
//!
//! By concern: `zoo_cfg` reads the text (properties, and the values' forms), `builder` applies
//! the entries by key family and derives what depends on several keys, `security` holds the keys
//! that protect the server and the rules that keep it fail-closed, `server_spec` the
//! `server.N` lines, `whitelist` the four-letter words; this file holds `Config`, its defaults,
//! what is derived from it, and the errors.

mod builder;
pub mod dynamic;
mod security;
mod server_spec;
mod whitelist;
mod zoo_cfg;

use std::collections::BTreeSet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::sasl::SaslConfig;

use builder::Builder;
use security::validate_super_digest;
pub use security::{
    ClientTlsConfig, QuorumSecurityConfig, NETTY_FACTORY, NIO_FACTORY, X509_PROVIDER,
};
pub use server_spec::{ids_by_role, PeerRole, ServerSpec};
pub use whitelist::FourLetterWhitelist;
pub use zoo_cfg::parse_properties;

/// ZooKeeper's code default when a zoo.cfg has no `tickTime` (`ZooKeeperServer.DEFAULT_TICK_TIME`).
pub const ZK_DEFAULT_TICK_TIME_MS: u32 = 3000;
/// The tick of `conf/zoo_sample.cfg`, used by paddock's embedded default.
pub const SAMPLE_TICK_TIME_MS: u32 = 2000;
/// `jute.maxbuffer` default: the largest frame a client may send, 1 MiB - 1.
pub const DEFAULT_JUTE_MAX_BUFFER: usize = wire::frame::DEFAULT_MAX_FRAME;

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

/// Which of the schemes with an optional provider are registered (`Config::acl_schemes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AclSchemes {
    pub sasl: bool,
    pub x509: bool,
}

impl AclSchemes {
    /// Whether an ACL id of `scheme` has a provider to validate it. `world` and `auth` are
    /// handled by fixupACL itself; any other unknown scheme is refused by apply anyway.
    pub fn has(&self, scheme: &str) -> bool {
        match scheme {
            "sasl" => self.sasl,
            "x509" => self.x509,
            _ => true,
        }
    }
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
    /// `authProvider.N=...SASLAuthenticationProvider`: ZooKeeper's registry then has the `sasl`
    /// scheme, without which a create or setACL naming a `sasl:` id is refused (`acl_schemes`).
    /// SASL logins work either way, as in ZooKeeper (they need the JAAS `Server` section only).
    pub sasl_provider: bool,
    pub jute_max_buffer: usize,
    pub my_id: Option<u64>,
    pub servers: Vec<ServerSpec>,
    /// The membership's version: the hex suffix of the `dynamicConfigFile`'s name, or zoo.cfg's
    /// `version=` line, else 0 (what `/zookeeper/config` shows before a leader writes it).
    pub config_version: i64,
    /// `dynamicConfigFile`: where `servers` came from, if not from zoo.cfg (`dynamic.rs`).
    pub dynamic_config_file: Option<PathBuf>,
    pub reconfig_enabled: bool,
    pub standalone_enabled: bool,
    pub container_check_interval_ms: u64,
    /// `znode.container.maxPerMinute` (default 10000): container and TTL deletions are proposed
    /// at least 60000 / this many ms apart, as ZooKeeper's ContainerManager spaces them.
    pub container_max_per_minute: u32,
    /// `znode.container.maxNeverUsedIntervalMs` (default 0 = never, ZooKeeper 3.9's): a container
    /// that never had a child is deleted once it is older than this (by its mtime).
    pub container_max_never_used_interval_ms: u64,
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
    /// `paddock.sessionOwners` (default true): in an ensemble, a reconnect records the session's
    /// member through the log and writes name theirs, so a write on a session's old connection
    /// is refused with SessionMoved (`Txn::Attach`, `Entry::via`). Off, this member proposes
    /// neither (it still applies them): for a rolling upgrade from a release without them,
    /// whose members stop at such an entry, until every member runs this one.
    pub session_owners: bool,
    /// SASL DIGEST-MD5 users from the JAAS file; `None` when no JAAS `Server` section is
    /// configured, and then SASL tokens are refused (see `sasl.rs`).
    pub sasl: Option<SaslConfig>,
    /// How peer links are protected: `sslQuorum`, `portUnification`, `sslQuorumReloadCertFiles`,
    /// `ssl.quorum.*` and `quorum.auth.*` (`quorum_security.rs` turns it into the transport's).
    pub quorum_security: QuorumSecurityConfig,
    /// The client port's TLS (`secureClientPort`, `client.portUnification`, `ssl.*`,
    /// `client.certReload`, `serverCnxnFactory`) and x509 identities (`client_tls.rs`).
    pub client_tls: ClientTlsConfig,
    /// `java.security.auth.login.config`: the JAAS file, read for the client port's SASL users
    /// (`sasl`) and for quorum SASL.
    pub jaas_file: Option<PathBuf>,
    /// `java.security.krb5.conf`: MIT Kerberos's configuration (`kerberos::ProcessKerberos`).
    pub krb5_conf: Option<PathBuf>,
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
    /// `admin.restore.enabled`, default true (ZooKeeper's): the `restore` command
    /// (`http/admin_restore.rs`).
    pub restore_enabled: bool,
    /// `admin.rateLimiterIntervalInMS`: at most one `snapshot`, and one `restore`, per interval. Default 300 ms, the
    /// interval ZooKeeper 3.9.5 enforces (its limiter reads the documented 300000 as µs).
    pub rate_limiter_interval_ms: u64,
    /// `admin.commandURL`, default `/commands`.
    pub command_url: String,
    /// `admin.portUnification`: the port takes HTTPS as well as HTTP (by the first byte, 0x16
    /// for TLS), with the `ssl.quorum.*` stores, as ZooKeeper's JettyAdminServer does.
    pub port_unification: bool,
    /// `admin.forceHttps`: the port takes HTTPS only (wins over `port_unification`).
    pub force_https: bool,
    /// `admin.needClientAuth`: an HTTPS client must present a certificate the `ssl.quorum`
    /// trust store verifies. Without it no certificate is asked for (Jetty's default).
    pub need_client_auth: bool,
}

impl AdminConfig {
    /// Whether the AdminServer speaks TLS at all (`admin.forceHttps` or `admin.portUnification`).
    pub fn https(&self) -> bool {
        self.force_https || self.port_unification
    }
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
            sasl_provider: false,
            jute_max_buffer: DEFAULT_JUTE_MAX_BUFFER,
            my_id: None,
            servers: Vec::new(),
            config_version: 0,
            dynamic_config_file: None,
            reconfig_enabled: false,
            standalone_enabled: true,
            container_check_interval_ms: 60_000,
            container_max_per_minute: 10_000,
            container_max_never_used_interval_ms: 0,
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
            session_owners: true,
            sasl: None,
            quorum_security: QuorumSecurityConfig::default(),
            client_tls: ClientTlsConfig::default(),
            jaas_file: None,
            krb5_conf: None,
            admin: AdminConfig {
                enabled: true,
                address: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                port: 8080,
                snapshot_enabled: true,
                restore_enabled: true,
                rate_limiter_interval_ms: 300,
                command_url: "/commands".to_string(),
                port_unification: false,
                force_https: false,
                need_client_auth: false,
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
        b.load_dynamic_file()?;
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

    /// Raft's timing: (tick, election ticks, heartbeat ticks). Derived from tickTime and
    /// syncLimit unless the `paddock.raft.*` keys say otherwise: a tick of tickTime/20 (50 to
    /// 100 ms), a heartbeat every 3 ticks, and an election timeout of syncLimit x tickTime (at
    /// least 10 ticks), ZooKeeper's own bound on a follower's silence: its leader gives up on a
    /// follower that has not answered within syncLimit ticks, and its follower on a leader it
    /// has not heard for tickTime x syncLimit (its socket's read timeout). So a leader keeps its
    /// quorum while every voter it needs was heard within that time (checked every raft tick),
    /// and a follower campaigns only after it (`Config::raft_max_election_ticks` adds the random
    /// spread raft needs). A loaded machine deposes no healthy leader sooner than ZooKeeper's
    /// would. A leader whose process died is replaced faster: its peers see the link close and
    /// elect at once (DESIGN.md, "Fast failover").
    pub fn raft_timing(&self) -> (std::time::Duration, u32, u32) {
        let tick_ms = self
            .raft_tick_ms
            .unwrap_or_else(|| (self.tick_time_ms / 20).clamp(50, 100));
        let election = self.raft_election_ticks.unwrap_or_else(|| {
            let sync_ms = u64::from(self.tick_time_ms) * u64::from(self.sync_limit.max(1));
            let ticks = sync_ms.div_ceil(u64::from(tick_ms));
            ticks.clamp(10, u64::from(u32::MAX)) as u32
        });
        let heartbeat = self.raft_heartbeat_ticks.unwrap_or(3);
        (
            std::time::Duration::from_millis(u64::from(tick_ms)),
            election,
            heartbeat,
        )
    }

    /// The end (exclusive) of a follower's randomised election timeout, in ticks: the election
    /// timeout plus a quarter of it (at least 3 ticks), so that followers that lost a silent leader
    /// do not all campaign at once, without doubling the wait as raft's default would.
    /// With `paddock.raft.electionTicks` given, raft's own default: twice the timeout.
    pub fn raft_max_election_ticks(&self) -> u32 {
        let (_, election, _) = self.raft_timing();
        if self.raft_election_ticks.is_some() {
            return election.saturating_mul(2);
        }
        election.saturating_add((election / 4).max(3))
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
        if self.container_max_per_minute == 0 {
            // ZooKeeper divides a minute by it: 0 makes every check fail, so nothing is deleted.
            return bad("znode.container.maxPerMinute must be greater than 0".into());
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
            // Derived, the timeout is ZooKeeper's own (syncLimit x tickTime), which shares the
            // window; only settings that ask for something else are worth a warning.
            let overridden = self.raft_tick_ms.is_some() || self.raft_election_ticks.is_some();
            if overridden
                && tick.as_millis() as u64 * u64::from(election) * 2
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
            // ZooKeeper prints -1 when it has no TLS port.
            (
                "secureClientPort".to_string(),
                self.client_tls
                    .secure_port
                    .map_or("-1".to_string(), |p| p.to_string()),
            ),
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

    /// The ACL schemes this server has a provider for, as ZooKeeper's `ProviderRegistry` would:
    /// ip and digest always (paddock refuses `DigestAuthenticationProvider.enabled=false`),
    /// sasl with its `authProvider` line, x509 with its line or a secure client port. A create or
    /// setACL naming another scheme (but `world:anyone` and `auth`) gets InvalidACL
    /// (`core/acl_schemes.rs`).
    pub fn acl_schemes(&self) -> AclSchemes {
        AclSchemes {
            sasl: self.sasl_provider,
            x509: self.client_tls.x509_available(),
        }
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
