//! `Builder`: entries applied in order over a starting config (ZooKeeper's defaults, or the
//! embedded one), each key by its family, then what depends on several keys derived at the end
//! (`finish`). The security keys' family is in `security.rs`.

use std::net::IpAddr;
use std::path::PathBuf;

use wire::FourLetterWord;

use super::dynamic::{is_hierarchical_key, read_dynamic_file, HIERARCHICAL_REFUSED};
use super::security::EnforceAuth;
use super::server_spec::parse_port;
use super::zoo_cfg::{
    non_empty_path, parse_bool, parse_ip, parse_java_int, parse_num, parse_positive, parse_timeout,
    resolve_host,
};
use super::{
    Config, ConfigError, Entry, FourLetterWhitelist, MetricsConfig, PeerRole, ServerSpec,
    DEFAULT_METRICS_PROVIDER, PROMETHEUS_PROVIDER,
};
use crate::sasl::SaslSettings;

/// Keys ZooKeeper understands that have no meaning for paddock. They are logged at info
/// level rather than warned about, since real harnesses always write some of them.
const IGNORED_KEYS: &[&str] = &[
    "connectToLearnerMasterLimit",
    "localSessionsEnabled",
    "localSessionsUpgradingEnabled",
    "clientPortListenBacklog",
    "observerMasterPort",
    "syncEnabled",
    "autopurge.snapRetainCount",
    "autopurge.purgeInterval",
    "multiAddress.enabled",
    // Jetty tuning of the AdminServer: paddock's responder has none (its TLS keys refuse the
    // start when they ask for TLS: see security.rs).
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
    // Kerberos settings of the JVM and of ZooKeeper's client side: MIT Kerberos reads krb5.conf
    // itself (java.security.krb5.conf becomes KRB5_CONFIG), and these tune only Java's view of it.
    "requireKerberosConfig",
    "server.realm",
    "sasl.client.username",
    "sasl.client.canonicalize.hostname",
];

const IGNORED_PREFIXES: &[&str] = &[
    // Further PrometheusMetricsProvider tuning (numWorkerThreads, maxQueueSize,
    // workerShutdownTimeoutMs, ssl.*): no equivalent here.
    "metricsProvider.",
    // QuorumCnxManager tuning (quorum.cnxn.threads.size, quorum.cnxn.timeout): paddock's peer
    // transport has its own.
    "quorum.cnxn.",
    "jvm.pause.",
    "multiAddress.",
];

/// Accumulates entries over a starting config, then derives what depends on other keys.
pub(super) struct Builder {
    pub(super) cfg: Config,
    file: PathBuf,
    from_file: bool,
    data_dir_set: bool,
    client_port_set: bool,
    client_address_set: bool,
    min_set: bool,
    max_set: bool,
    read_only_mode: bool,
    pub(super) sasl: SaslSettings,
    pub(super) enforce_auth: EnforceAuth,
    /// `metricsProvider.className` names the Prometheus provider.
    prometheus: bool,
    metrics_host: Option<IpAddr>,
    metrics_port: Option<u16>,
    /// `dynamicConfigFile`: read by `load_dynamic_file` once every entry is applied.
    dynamic_file: Option<PathBuf>,
    /// zoo.cfg itself holds `server.N` lines (not allowed beside `dynamicConfigFile`).
    static_servers: bool,
}

impl Builder {
    pub(super) fn new(cfg: Config, file: PathBuf, from_file: bool) -> Builder {
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
            dynamic_file: None,
            static_servers: false,
        }
    }

    /// Applies one entry. Keys ZooKeeper reads from `zookeeper.*` system properties may be written
    /// with or without the prefix (the file form sets the property, `-D` sets it directly). Each
    /// family of keys is tried in turn; a bad value is reported with the entry's origin and key,
    /// and a key no family knows is logged and ignored.
    pub(super) fn apply(&mut self, e: &Entry) -> Result<(), ConfigError> {
        let invalid = |reason: String| ConfigError::InvalidValue {
            origin: e.origin.clone(),
            key: e.key.clone(),
            reason,
        };
        if e.key == "java.security.auth.login.config" {
            return self.jaas_file_key(e).map_err(invalid);
        }
        if e.key == "java.security.krb5.conf" {
            return self.krb5_conf_key(e).map_err(invalid);
        }
        let key = e.key.strip_prefix("zookeeper.").unwrap_or(&e.key);
        let v = e.value.as_str();
        let known = self.server_key(key, e).map_err(invalid)?
            || self.ensemble_key(key, v).map_err(invalid)?
            || self.http_key(key, v).map_err(invalid)?
            || self.client_auth_key(key, v).map_err(invalid)?
            || self.quorum_security_key(key, v).map_err(invalid)?
            || self.client_tls_key(key, v).map_err(invalid)?;
        if !known {
            unused_key(key, e);
        }
        Ok(())
    }

    /// The server's own settings: directories, the client port, limits, sessions, the tree's
    /// options, snapshots. `Ok(false)`: not such a key.
    fn server_key(&mut self, key: &str, e: &Entry) -> Result<bool, String> {
        let v = e.value.as_str();
        match key {
            "tickTime" => self.cfg.tick_time_ms = parse_num(v)?,
            "dataDir" => {
                self.cfg.data_dir = non_empty_path(v)?;
                self.data_dir_set = true;
            }
            "dataLogDir" => self.cfg.data_log_dir = Some(non_empty_path(v)?),
            "clientPort" => {
                self.cfg.client_port = parse_port(v)?;
                self.client_port_set = true;
            }
            "clientPortAddress" => {
                self.cfg.client_port_address = parse_ip(v)?;
                self.client_address_set = true;
            }
            "maxClientCnxns" => self.cfg.max_client_cnxns = parse_num(v)?,
            // Integer.getInteger: a negative limit is accepted and throttles like 0 does.
            "globalOutstandingLimit" => {
                self.cfg.global_outstanding_limit = match v.strip_prefix('-') {
                    Some(magnitude) => parse_java_int(magnitude).map(|_| 0),
                    None => parse_java_int(v),
                }?
            }
            "minSessionTimeout" => {
                self.cfg.min_session_timeout_ms = parse_timeout(v)?;
                self.min_set = true;
            }
            "maxSessionTimeout" => {
                self.cfg.max_session_timeout_ms = parse_timeout(v)?;
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
                self.read_only_mode = parse_bool(v)?;
                self.cfg.read_only_mode = self.read_only_mode;
            }
            "paddock.linearizableReads" => self.cfg.linearizable_reads = parse_bool(v)?,
            "paddock.sessionOwners" => self.cfg.session_owners = parse_bool(v)?,
            "extendedTypesEnabled" => self.cfg.extended_types_enabled = parse_bool(v)?,
            "enforceQuota" => self.cfg.enforce_quota = parse_bool(v)?,
            "skipACL" => self.cfg.skip_acl = parse_bool(v)?,
            "jute.maxbuffer" => self.cfg.jute_max_buffer = parse_java_int(v)?,
            "znode.container.checkIntervalMs" => {
                self.cfg.container_check_interval_ms = parse_num(v)?
            }
            "znode.container.maxPerMinute" => self.cfg.container_max_per_minute = parse_num(v)?,
            "znode.container.maxNeverUsedIntervalMs" => {
                self.cfg.container_max_never_used_interval_ms = parse_num(v)?
            }
            "snapCount" => self.cfg.snapshot_every_entries = parse_num(v)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Membership and timing of an ensemble: `server.N` lines, roles, reconfig, raft's timing.
    /// `Ok(false)`: not such a key.
    fn ensemble_key(&mut self, key: &str, v: &str) -> Result<bool, String> {
        match key {
            "initLimit" => self.cfg.init_limit = parse_positive(v)?,
            "syncLimit" => self.cfg.sync_limit = parse_positive(v)?,
            "quorumListenOnAllIPs" => self.cfg.quorum_listen_on_all_ips = parse_bool(v)?,
            "paddock.raft.tickMs" => self.cfg.raft_tick_ms = Some(parse_positive(v)?),
            "paddock.raft.electionTicks" => self.cfg.raft_election_ticks = Some(parse_positive(v)?),
            "paddock.raft.heartbeatTicks" => {
                self.cfg.raft_heartbeat_ticks = Some(parse_positive(v)?)
            }
            "reconfigEnabled" => self.cfg.reconfig_enabled = parse_bool(v)?,
            "standaloneEnabled" => self.cfg.standalone_enabled = parse_bool(v)?,
            "electionAlg" => {
                if v != "3" {
                    return Err(format!("{v:?}: only electionAlg 3 exists"));
                }
            }
            "peerType" => {
                self.cfg.peer_type = Some(match v.to_ascii_lowercase().as_str() {
                    "participant" => PeerRole::Participant,
                    "observer" => PeerRole::Observer,
                    _ => return Err(format!("{v:?} is not participant or observer")),
                });
            }
            "dynamicConfigFile" => self.dynamic_file = Some(non_empty_path(v)?),
            // The membership's version in ZooKeeper's backward-compatible form (server.N lines in
            // zoo.cfg); a dynamic file's name carries it otherwise (`dynamic.rs`).
            "version" => {
                self.cfg.config_version = i64::from_str_radix(v, 16)
                    .map_err(|_| format!("{v:?} is not a hexadecimal version"))?
            }
            _ if is_hierarchical_key(key) => return Err(HIERARCHICAL_REFUSED.into()),
            _ => {
                let Some(id) = key.strip_prefix("server.") else {
                    return Ok(false);
                };
                self.static_servers = true;
                let id: u64 = id
                    .parse()
                    .map_err(|_| format!("{id:?} is not a server id"))?;
                let spec = ServerSpec::parse(id, v)?;
                self.cfg.servers.retain(|s| s.id != id);
                self.cfg.servers.push(spec);
            }
        }
        Ok(true)
    }

    /// The AdminServer and the Prometheus endpoint. `Ok(false)`: not such a key.
    fn http_key(&mut self, key: &str, v: &str) -> Result<bool, String> {
        match key {
            "admin.enableServer" => self.cfg.admin.enabled = parse_bool(v)?,
            "admin.serverAddress" => self.cfg.admin.address = parse_ip(v)?,
            "admin.serverPort" => self.cfg.admin.port = parse_port(v)?,
            "admin.snapshot.enabled" => self.cfg.admin.snapshot_enabled = parse_bool(v)?,
            "admin.restore.enabled" => self.cfg.admin.restore_enabled = parse_bool(v)?,
            "admin.portUnification" => self.cfg.admin.port_unification = parse_bool(v)?,
            "admin.forceHttps" => self.cfg.admin.force_https = parse_bool(v)?,
            "admin.needClientAuth" => self.cfg.admin.need_client_auth = parse_bool(v)?,
            "admin.rateLimiterIntervalInMS" => {
                self.cfg.admin.rate_limiter_interval_ms = v
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| format!("{v:?} is not a number of milliseconds"))?
            }
            "admin.commandURL" => {
                if !v.starts_with('/') || v.contains(char::is_whitespace) {
                    return Err(format!("{v:?} is not a URL path (like /commands)"));
                }
                self.cfg.admin.command_url = v.trim_end_matches('/').to_string();
                if self.cfg.admin.command_url.is_empty() {
                    return Err(
                        "\"/\" would hide every other page; use a path like /commands".into(),
                    );
                }
            }
            // ZooKeeper fails to start on a class it cannot load; paddock knows two.
            "metricsProvider.className" => {
                self.prometheus = match v {
                    PROMETHEUS_PROVIDER => true,
                    DEFAULT_METRICS_PROVIDER => false,
                    _ => {
                        return Err(format!(
                            "{v:?}: paddock provides {PROMETHEUS_PROVIDER} and {DEFAULT_METRICS_PROVIDER} only"
                        ))
                    }
                };
            }
            "metricsProvider.httpHost" => self.metrics_host = Some(parse_ip(v)?),
            "metricsProvider.httpPort" => self.metrics_port = Some(parse_port(v)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Reads the `dynamicConfigFile`, if zoo.cfg names one: its servers and its version replace
    /// any given in zoo.cfg (which may not list servers beside it, as in ZooKeeper).
    pub(super) fn load_dynamic_file(&mut self) -> Result<(), ConfigError> {
        let Some(path) = self.dynamic_file.clone() else {
            return Ok(());
        };
        if self.static_servers {
            return Err(ConfigError::Invalid(format!(
                "{}: server.N lines must be in the dynamic config file ({}) when dynamicConfigFile is set",
                self.file.display(),
                path.display()
            )));
        }
        let (servers, version) = read_dynamic_file(&path)?;
        self.cfg.servers = servers;
        self.cfg.config_version = version;
        self.cfg.dynamic_config_file = Some(path);
        Ok(())
    }

    pub(super) fn finish(mut self) -> Result<Config, ConfigError> {
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
        c.krb5_conf = self.sasl.krb5_conf.clone();
        // Checked now so a mistake stops `paddock serve` before anything else; loaded again (with
        // the stores) when the peer transport starts.
        crate::quorum_auth::QuorumSasl::load(
            &c.quorum_security.sasl,
            self.sasl.jaas_file.as_deref(),
        )
        .map_err(ConfigError::Invalid)?;
        crate::quorum_security::check(&c.quorum_security).map_err(ConfigError::Invalid)?;
        crate::client_tls::check(&c.client_tls).map_err(ConfigError::Invalid)?;
        crate::http::admin_tls::check(c).map_err(ConfigError::Invalid)?;
        c.enforce_auth_schemes = self.enforce_auth.schemes(c.client_tls.x509_available())?;
        self.cfg.validate()?;
        Ok(self.cfg)
    }
}

/// A key no family knows: one ZooKeeper has and paddock does not use is logged at info level
/// (harnesses write many), any other at warn level. Neither stops the start.
fn unused_key(key: &str, e: &Entry) {
    if IGNORED_KEYS.contains(&key) || IGNORED_PREFIXES.iter().any(|p| key.starts_with(p)) {
        tracing::info!(origin = %e.origin, key = %e.key, "ignoring setting paddock does not use");
    } else {
        tracing::warn!(origin = %e.origin, key = %e.key, "ignoring unknown setting");
    }
}
