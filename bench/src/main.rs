//! `paddock-bench`: a load generator for any server that speaks the ZooKeeper client protocol,
//! so paddock and Apache ZooKeeper are measured by the same client code in the same way.
//!
//! Workloads: create, set, get, mixed (90% get / 10% set), lock (ephemeral-sequential hand-off
//! between K contenders), fill (N znodes), and probe (time until a znode is readable, for
//! restart measurements), and failover (time from killing the leader to the next acknowledged
//! write through the survivors), and connect (sessions opened and closed per second: with --tls-ca
//! each is a TLS handshake too). Every run is bounded in operation count and in time and stops by
//! itself. Results go to stderr as text and, with `--json`, one JSON object per line per run.
//! The exit code is 1 when any operation failed or the lock's mutual exclusion was violated.

mod driver;
mod executor;
mod failover;
mod lock;
mod probe;
mod report;
mod workload;

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, ValueEnum};

use crate::report::RunReport;
use crate::workload::KeyMix;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Workload {
    Create,
    Set,
    Get,
    Mixed,
    Lock,
    Fill,
    Probe,
    Failover,
    Connect,
}

#[derive(Parser, Debug)]
#[command(
    name = "paddock-bench",
    about = "Load generator for ZooKeeper-protocol servers"
)]
pub struct Args {
    /// Connect string, as for any ZooKeeper client.
    #[arg(long, default_value = "127.0.0.1:2181")]
    pub hosts: String,
    /// Workloads to run in order, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "create")]
    workload: Vec<Workload>,
    /// Sessions, each on its own connection.
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Requests each session keeps outstanding (pipelined on its connection).
    #[arg(long, default_value_t = 4)]
    pub inflight: usize,
    /// Time bound of each throughput or lock run, and of the probe.
    #[arg(long, default_value_t = 10)]
    pub duration_secs: u64,
    /// Count bound of each throughput or lock run (0: only the time bound).
    #[arg(long, default_value_t = 0)]
    pub ops: u64,
    /// Bytes of data per znode written.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Size of the key set that set, get and mixed work on.
    #[arg(long, default_value_t = 1000)]
    pub keys: usize,
    /// Sessions competing for the lock.
    #[arg(long, default_value_t = 8)]
    pub contenders: usize,
    /// Znodes the fill workload creates.
    #[arg(long, default_value_t = 10_000)]
    pub znodes: u64,
    /// Time bound of the fill workload, which is otherwise bounded by --znodes only.
    #[arg(long, default_value_t = 900)]
    pub fill_timeout_secs: u64,
    /// Directory the run works in; a fresh random one by default.
    #[arg(long)]
    pub root: Option<String>,
    /// Write one JSON object per run, one per line, to this file.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
    /// Name of the server under test, carried into the reports.
    #[arg(long, default_value = "")]
    pub label: String,
    /// Leave the root in place afterwards (the comparison script keeps a fill for the restart).
    #[arg(long)]
    pub keep: bool,
    /// Session timeout asked of the server.
    #[arg(long, default_value_t = 15_000)]
    pub session_timeout_ms: u64,
    /// The znode the probe workload reads.
    #[arg(long)]
    pub path: Option<String>,
    /// Spread sessions evenly over the hosts: session i connects to the i-th host alone.
    #[arg(long)]
    pub spread: bool,
    /// Failover: the process to signal (the leader); --hosts then lists the survivors only.
    #[arg(long)]
    pub kill_pid: Option<u32>,
    /// Failover: kill (SIGKILL, a crash) or stop (SIGSTOP: silent to its peers, like a partition).
    #[arg(long, default_value = "kill")]
    pub signal: String,
    /// Failover: seconds of write load before the signal.
    #[arg(long, default_value_t = 2)]
    pub warmup_secs: u64,
    /// List every operation at least this many microseconds long in the JSON report
    /// (`slow_ops`: when it ended, Unix seconds, and its latency), to match stalls against events
    /// of known time, such as a snapshot. 0: off. create, set, get, mixed and fill.
    #[arg(long, default_value_t = 0)]
    pub slow_us: u64,
    /// TLS to the servers' secureClientPort (the options of `paddock lock`).
    #[command(flatten)]
    pub tls: recipes::secure::TlsArgs,
}

impl Args {
    pub fn session_timeout(&self) -> Duration {
        Duration::from_millis(self.session_timeout_ms)
    }
}

fn random_root() -> String {
    // RandomState is seeded from the OS per process: enough to keep concurrent runs apart
    // without a dependency on a random number crate.
    let mut h = RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    format!("/bench-{:016x}", h.finish())
}

async fn run(args: &Args, reports: &mut Vec<RunReport>) -> anyhow::Result<()> {
    if args.workload == [Workload::Probe] {
        reports.push(probe::run_probe(args).await?);
        return Ok(());
    }
    let root = args.root.clone().unwrap_or_else(random_root);
    let setup = driver::connect(&args.hosts, args.session_timeout()).await?;
    driver::ensure_path(&setup, &root).await?;
    for &w in &args.workload {
        let report = match w {
            Workload::Probe => probe::run_probe(args).await?,
            Workload::Lock => lock::run_lock(args, &root, &setup).await?,
            Workload::Failover => failover::run_failover(args, &root, &setup).await?,
            _ => {
                let clients = driver::connect_many(
                    &args.hosts,
                    args.clients.max(1),
                    args.session_timeout(),
                    args.spread,
                )
                .await?;
                match w {
                    Workload::Create => workload::run_create(args, &root, &setup, &clients).await?,
                    Workload::Set => {
                        workload::run_keys(args, &root, &setup, &clients, KeyMix::Set).await?
                    }
                    Workload::Get => {
                        workload::run_keys(args, &root, &setup, &clients, KeyMix::Get).await?
                    }
                    Workload::Mixed => {
                        workload::run_keys(args, &root, &setup, &clients, KeyMix::Mixed).await?
                    }
                    Workload::Connect => workload::run_connect(args, &clients).await?,
                    _ => workload::run_fill(args, &root, &setup, &clients).await?,
                }
            }
        };
        eprint!("{}", report.text());
        reports.push(report);
    }
    if !args.keep {
        // A failover run may have cost the set-up session its connection: clean up on a new one.
        let setup = if args.workload.contains(&Workload::Failover) {
            driver::connect(&args.hosts, args.session_timeout()).await?
        } else {
            setup
        };
        let deleted = driver::delete_tree(&setup, &root).await?;
        eprintln!("cleaned up {root} ({deleted} znodes)");
    }
    Ok(())
}

fn write_json(path: &std::path::Path, reports: &[RunReport]) -> anyhow::Result<()> {
    let mut out =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    for r in reports {
        serde_json::to_writer(&mut out, r)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let mut args = Args::parse();
    if args.label.is_empty() {
        args.label = args.hosts.clone();
    }
    if args.tls.tls_ca.is_some() {
        let security = recipes::secure::SecurityArgs {
            tls: args.tls.clone(),
            auth: None,
            sasl: None,
        };
        match security.load() {
            Ok(s) => driver::set_security(s),
            Err(e) => {
                eprintln!("paddock-bench: {e:#}");
                return ExitCode::from(2);
            }
        }
    }
    let mut reports = Vec::new();
    let outcome = executor::block_on(run(&args, &mut reports));
    // Probe output is printed here; other workloads print as they finish.
    if args.workload == [Workload::Probe] {
        for r in &reports {
            eprint!("{}", r.text());
        }
    }
    let mut failed = false;
    if let Some(path) = &args.json {
        if let Err(e) = write_json(path, &reports) {
            eprintln!("paddock-bench: {e:#}");
            failed = true;
        }
    }
    if let Err(e) = outcome {
        eprintln!("paddock-bench: {e:#}");
        failed = true;
    }
    for failure in reports.iter().flat_map(RunReport::failures) {
        eprintln!("paddock-bench: FAILED: {failure}");
        failed = true;
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
