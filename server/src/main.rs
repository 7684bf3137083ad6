//! `paddock`: the server binary. See `paddock --help`.

use anyhow::Context;
use tracing_subscriber::EnvFilter;

fn main() -> anyhow::Result<()> {
    let cli = paddock::cli::parse_args();
    // The client commands (recipes crate) run on their own and exit with their own status.
    match cli.command {
        paddock::cli::Command::Lock(args) => std::process::exit(recipes::cli::run_lock(args)),
        paddock::cli::Command::Elect(args) => std::process::exit(recipes::cli::run_elect(args)),
        paddock::cli::Command::Serve(_) => {}
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let config = match cli.into_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("paddock: invalid configuration: {e}");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async move {
        let server = paddock::node::Server::start(config).await?;
        server.run_until_signal().await
    })
}
