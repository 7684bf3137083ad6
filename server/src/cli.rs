//! The command line: `paddock serve [--config FILE] [flags]`. Flags override the file; each
//! flag is turned into the zoo.cfg entry it stands for and goes through the same parser, so a
//! bad flag value is reported exactly like a bad line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::{Config, ConfigError, Entry, Origin};

const AFTER_HELP: &str = "\
Defaults: with no --config, paddock uses its embedded defaults: tickTime 2000, dataDir ./data,
port 2181 on 127.0.0.1 only, and every four-letter word enabled (only srvr, with a warning, when
--bind puts the port beyond loopback and no --four-letter-words is given). With --config FILE the file is
read as ZooKeeper reads it: keys it leaves out take ZooKeeper's defaults (tickTime 3000, every
interface (0.0.0.0) unless clientPortAddress is set, only the `srvr` four-letter word), dataDir
is required, and myid is read from dataDir. Unknown keys are logged and ignored.

SASL: -D java.security.auth.login.config=jaas.conf turns on DIGEST-MD5 logins for the users of
its `Server` section (DigestLoginModule, user_<name>=\"<password>\"; -D
zookeeper.sasl.serverconfig=<section> picks another); -D zookeeper.superUser=<name> makes one a
super user. -D zookeeper.enforce.auth.enabled=true with -D zookeeper.enforce.auth.schemes=sasl
(or digest, ip; comma-separated) answers any other request from a client not yet logged in with
one of them by SessionClosedRequireSaslAuth (-124) and closes its connection.

Ensembles: server.N=host:peerPort:electionPort[:participant|:observer][;[host:]clientPort] lines and
dataDir/myid make this server a member; peers talk on peerPort (electionPort is bound for health checks
and closes every connection). Raft timing derives from tickTime and syncLimit (election timeout
syncLimit x tickTime, as ZooKeeper's); paddock.raft.tickMs, paddock.raft.electionTicks and paddock.raft.heartbeatTicks
override it. readonlymode.enabled=true lets a member cut off from its quorum serve read-only clients.
paddock.linearizableReads=true makes every read wait for a ReadIndex, so no read is stale on any member
(ZooKeeper has no such mode; it costs a round to the leader per read). paddock.sessionOwners=false
stops this member proposing session owners (SessionMoved), for a rolling upgrade from a release
before them (docs/operations.md).

Limits: -D zookeeper.globalOutstandingLimit=N (default 1000) is how many requests the server
holds at once; past it, clients with a request outstanding are not read from until it drains.

HTTP: the AdminServer (admin.enableServer, default true; admin.serverAddress, default 0.0.0.0 with
--config and 127.0.0.1 without; admin.serverPort 8080; admin.commandURL /commands) answers
ZooKeeper 3.9's JSON commands; a port it cannot bind is logged and skipped, as ZooKeeper does.
admin.forceHttps=true (HTTPS only) or admin.portUnification=true (HTTPS and HTTP) serve it with the
ssl.quorum.* stores; admin.needClientAuth=true then requires a client certificate.
metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider serves
GET /metrics on metricsProvider.httpHost (default 0.0.0.0 with --config, 127.0.0.1 without) and
metricsProvider.httpPort (default 7000) under ZooKeeper's metric names; exportJvmInfo is ignored.

Example: paddock serve --config conf/zoo.cfg --port 2182";

#[derive(Debug, Parser)]
#[command(
    name = "paddock",
    version = crate::fourlw::VERSION_REVISION,
    about = "A ZooKeeper-compatible coordination server on Raft.",
    long_about = "A ZooKeeper-compatible coordination server on Raft. It speaks the ZooKeeper 3.9 client \
                  protocol, so existing clients (kazoo, zkCli, Curator, go-zookeeper, Kafka) work unchanged.",
    after_help = AFTER_HELP,
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,

    /// Log format on stderr: `text` (human-readable) or `json` (one JSON object per line, for log
    /// shippers). Levels per module come from RUST_LOG (default `info`, e.g.
    /// RUST_LOG=info,paddock::connection=debug).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server in the foreground.
    #[command(after_help = AFTER_HELP)]
    Serve(ServeArgs),
    /// Print one table for an ensemble: each server's role, zxid, lag behind the leader,
    /// connections and whether it serves, from the `srvr` and `mntr` four-letter words.
    /// Exits 0 only if every server serves.
    Status(crate::status_cmd::StatusArgs),
    /// Hold a lock (Curator InterProcessMutex layout) while CMD runs; CMD gets a fencing token.
    Lock(recipes::cli::LockArgs),
    /// Campaign for leadership (Curator LeaderLatch layout) and run CMD while leader.
    Elect(recipes::cli::ElectArgs),
    /// Turn a ZooKeeper 3.5-3.9 data directory (snapshots and logs, sessions kept) into a new
    /// paddock data directory. Writes nothing if the input is damaged.
    Import(crate::zk_import::ImportArgs),
    /// Write a stopped server's state as a ZooKeeper 3.9 snapshot (ZooKeeper loads it as
    /// version-2/snapshot.<zxid> or through its restore command).
    Export(crate::zk_export::ExportArgs),
    /// Take the ensemble's state as a ZooKeeper snapshot from the leader's AdminServer
    /// (`snapshot`), written whole to --out or not at all; or, with --follow DIR, keep DIR a
    /// ZooKeeper data directory of every committed transaction, for point-in-time restores.
    Backup(crate::backup_cmd::BackupArgs),
    /// Restore every member of an ensemble from a ZooKeeper snapshot (AdminServer `restore`),
    /// or from a ZooKeeper data directory replayed up to --to-zxid or --to-time. Nothing is
    /// restored if the input is damaged.
    Restore(crate::backup_cmd::RestoreArgs),
    /// Say what is damaged in a stopped server's raft log, what dropping it would lose and
    /// whether a majority may count on the server; change it only when told.
    Repair(crate::repair_cmd::RepairArgs),
}

#[derive(Debug, Clone, Default, Args)]
pub struct ServeArgs {
    /// Read settings from this ZooKeeper zoo.cfg (Java properties: key=value lines, # comments).
    /// myid is read from its dataDir. Without it, the embedded defaults apply.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Client port to listen on; 0 picks a free port. Default 2181. zoo.cfg key: clientPort.
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,

    /// Address to listen on for clients. Default 127.0.0.1 without --config; with --config,
    /// ZooKeeper's default of every interface (0.0.0.0). zoo.cfg key: clientPortAddress.
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<String>,

    /// Directory for the Raft log, snapshots and myid. Default ./data (relative to the
    /// working directory). zoo.cfg key: dataDir.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// Length of a tick in milliseconds: session expiry granularity; session timeouts default to
    /// 2 and 20 ticks. Default 2000 (3000 when a zoo.cfg leaves it out). zoo.cfg key: tickTime.
    #[arg(long, value_name = "MS")]
    pub tick_time: Option<u32>,

    /// Four-letter words to answer, comma-separated, or * for all; srvr is always on. Default *
    /// without --config (srvr only when --bind is not a loopback address), srvr only with one.
    /// zoo.cfg key: 4lw.commands.whitelist.
    #[arg(long, value_name = "LIST")]
    pub four_letter_words: Option<String>,

    /// Allow TTL nodes (CreateMode PERSISTENT_WITH_TTL and friends). Default off. zoo.cfg key:
    /// extendedTypesEnabled (also read as the property zookeeper.extendedTypesEnabled).
    #[arg(long)]
    pub extended_types: bool,

    /// Digest of the super user, user:base64(sha1(user:password)), as
    /// DigestAuthenticationProvider prints it. Default none. zoo.cfg key:
    /// DigestAuthenticationProvider.superDigest (or zookeeper.DigestAuthenticationProvider.superDigest).
    #[arg(long, value_name = "USER:HASH")]
    pub super_digest: Option<String>,

    /// Most concurrent connections from one client IP; 0 = unlimited. Default 60. zoo.cfg key:
    /// maxClientCnxns.
    #[arg(long, value_name = "N")]
    pub max_client_cnxns: Option<u32>,

    /// Run this server alone even though the config lists several servers (server.N lines):
    /// it does not join the ensemble and keeps its own separate data. Meant for test harnesses
    /// that start "ensembles" of unrelated servers to exercise single-server behaviour.
    #[arg(long)]
    pub ignore_peers: bool,

    /// Set any zoo.cfg key or ZooKeeper system property, as if written in the file (for example
    /// -D zookeeper.extendedTypesEnabled=true or -D readonlymode.enabled=true). Repeatable;
    /// applied after the file and before the flags above.
    #[arg(short = 'D', long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

/// Parses the process arguments; exits with clap's usage message on error or `--help`.
pub fn parse_args() -> Cli {
    Cli::parse()
}

impl Cli {
    /// The server configuration `paddock serve` runs with (an error for other subcommands).
    pub fn into_config(self) -> Result<Config, ConfigError> {
        match self.command {
            Command::Serve(args) => args.into_config(),
            Command::Status(_) => Err(ConfigError::Invalid(
                "`paddock status` runs no server".into(),
            )),
            Command::Import(_)
            | Command::Export(_)
            | Command::Repair(_)
            | Command::Backup(_)
            | Command::Restore(_) => Err(ConfigError::Invalid(
                "`paddock import`, `export`, `repair`, `backup` and `restore` run no server".into(),
            )),
            Command::Lock(_) | Command::Elect(_) => Err(ConfigError::InvalidValue {
                origin: Origin::Flag("command".into()),
                key: "command".into(),
                reason: "lock and elect are clients; they take no server configuration".into(),
            }),
        }
    }
}

impl ServeArgs {
    /// The zoo.cfg entries the flags stand for, in the order they apply.
    pub fn overrides(&self) -> Result<Vec<Entry>, ConfigError> {
        let mut out = Vec::new();
        for (n, kv) in self.set.iter().enumerate() {
            // Not repeated in the error: without its '=' there is no telling a key from a
            // password (`-D superPassword:secret`).
            let (key, value) = kv
                .split_once('=')
                .ok_or_else(|| ConfigError::InvalidValue {
                    origin: Origin::Flag("-D".into()),
                    key: format!("the -D number {}", n + 1),
                    reason: "expected KEY=VALUE, found no '=' (the argument is not shown, as it may hold a secret)".into(),
                })?;
            out.push(flag_entry("-D", key.trim(), value.trim().to_string()));
        }
        let mut push = |flag: &str, key: &str, value: Option<String>| {
            if let Some(v) = value {
                out.push(flag_entry(flag, key, v));
            }
        };
        push("--port", "clientPort", self.port.map(|p| p.to_string()));
        push("--bind", "clientPortAddress", self.bind.clone());
        push(
            "--data-dir",
            "dataDir",
            self.data_dir
                .as_ref()
                .map(|d| d.to_string_lossy().into_owned()),
        );
        push(
            "--tick-time",
            "tickTime",
            self.tick_time.map(|t| t.to_string()),
        );
        push(
            "--four-letter-words",
            "4lw.commands.whitelist",
            self.four_letter_words.clone(),
        );
        push(
            "--extended-types",
            "extendedTypesEnabled",
            self.extended_types.then(|| "true".to_string()),
        );
        push(
            "--super-digest",
            "DigestAuthenticationProvider.superDigest",
            self.super_digest.clone(),
        );
        push(
            "--max-client-cnxns",
            "maxClientCnxns",
            self.max_client_cnxns.map(|n| n.to_string()),
        );
        Ok(out)
    }

    pub fn into_config(self) -> Result<Config, ConfigError> {
        let overrides = self.overrides()?;
        let mut cfg = match &self.config {
            Some(path) => Config::from_zoo_cfg_with(path, overrides)?,
            None => Config::embedded_with(overrides)?,
        };
        cfg.ignore_peers = self.ignore_peers;
        Ok(cfg)
    }
}

fn flag_entry(flag: &str, key: &str, value: String) -> Entry {
    Entry {
        key: key.to_string(),
        value,
        origin: Origin::Flag(flag.to_string()),
    }
}
