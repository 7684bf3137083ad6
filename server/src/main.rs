//! `paddock`: the server binary. See `paddock --help`.

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Context;
use paddock::cli::{Command, LogFormat};
use tracing::{error, info};
use tracing_subscriber::EnvFilter;

/// How long a stop signal may take to flush and exit before the process exits anyway (status 1).
const SHUTDOWN_BOUND: Duration = Duration::from_secs(10);

fn main() -> anyhow::Result<()> {
    let cli = paddock::cli::parse_args();
    // The client commands run on their own and exit with their own status.
    match &cli.command {
        Command::Lock(_) | Command::Elect(_) => {}
        _ => init_logs(cli.log_format),
    }
    match cli.command {
        Command::Status(ref args) => std::process::exit(paddock::status_cmd::run(args)),
        Command::Repair(ref args) => std::process::exit(paddock::repair_cmd::run(args)),
        Command::Lock(args) => std::process::exit(recipes::cli::run_lock(args)),
        Command::Elect(args) => std::process::exit(recipes::cli::run_elect(args)),
        Command::Import(ref args) => std::process::exit(paddock::zk_import::run(args)),
        Command::Export(ref args) => std::process::exit(paddock::zk_export::run(args)),
        Command::Backup(ref args) => std::process::exit(paddock::backup_cmd::run_backup(args)),
        Command::Restore(ref args) => std::process::exit(paddock::backup_cmd::run_restore(args)),
        Command::Serve(_) => {}
    }
    let config = match cli.into_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("paddock: invalid configuration: {e}");
            std::process::exit(2);
        }
    };
    // Kerberos reads its key tables and ticket cache from the environment: set it now, while
    // this is the only thread, and check the keys before anything listens.
    if let Err(e) = paddock::kerberos::ProcessKerberos::from_config(&config).and_then(|k| {
        k.apply();
        k.check()
    }) {
        eprintln!("paddock: invalid configuration: Kerberos: {e}");
        std::process::exit(2);
    }
    let me = config.my_server();
    info!(
        version = paddock::fourlw::VERSION_REVISION,
        my_id = config.my_id.unwrap_or(1),
        client_port = config.client_port,
        client_address = %config.client_port_address,
        peer_port = me.map(|s| s.peer_port),
        election_port = me.map(|s| s.election_port),
        servers = config.servers.len(),
        data_dir = %config.data_dir.display(),
        data_log_dir = %config.data_log_dir.as_ref().unwrap_or(&config.data_dir).display(),
        "paddock starting"
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let result = runtime.block_on(async move {
        tokio::spawn(exit_if_stop_hangs());
        let server = paddock::startup::Server::start(config).await?;
        server.run_until_signal().await
    });
    // Everything that must be durable is by now (the raft thread has flushed and stopped): do
    // not wait for idle or straggling blocking threads before exiting.
    runtime.shutdown_timeout(Duration::from_millis(500));
    result
}

/// Text (the default; colours only on a terminal) or one JSON object per line; levels per
/// module from RUST_LOG.
fn init_logs(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(format == LogFormat::Text && std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .init(),
    }
}

/// Sees the same SIGTERM/SIGINT the server stops on, and ends the process if the clean stop
/// takes longer than SHUTDOWN_BOUND (a wedged disk, a stuck task), so a supervisor never waits
/// forever.
async fn exit_if_stop_hangs() {
    let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
    else {
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tokio::time::sleep(SHUTDOWN_BOUND).await;
    error!(
        bound_s = SHUTDOWN_BOUND.as_secs(),
        "clean stop did not finish in time; exiting"
    );
    std::process::exit(1);
}
