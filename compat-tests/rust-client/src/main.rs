//! paddock-compat-rust: named client-compatibility checks with the `zookeeper-client` crate (0.11).
//!
//! Usage: `paddock-compat-rust --server HOST:PORT [--only NAME]... [--list]`
//!
//! The same checks run unchanged against paddock and Apache ZooKeeper 3.9; a check that fails against
//! ZooKeeper is a wrong check. The server must allow TTL nodes (paddock `--extended-types`, ZooKeeper
//! `-Dzookeeper.extendedTypesEnabled=true`) and run its container/TTL sweep often
//! (`znode.container.checkIntervalMs=1000`), or the `ttl_*` and `container_*` checks fail.
//!
//! Each check gets its own fresh persistent parent `/rust-client-<millis>/<check name>`, prints
//! `ok <name>` or `FAIL <name>: <why>`, and the last line is `checks: passed N failed M` (run.sh reads it).
//! Exit status 0 only if at least one check ran and none failed.

mod checks;
mod support;

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Result};
use support::Ctx;

pub type CheckFuture = Pin<Box<dyn Future<Output = Result<()>> + Send>>;
/// A check gets the context and its own parent path (already created, empty).
pub type CheckFn = fn(Ctx, String) -> CheckFuture;

/// A whole check, however many events it waits for, must finish within this.
const CHECK_DEADLINE: Duration = Duration::from_secs(60);

struct Args {
    server: String,
    only: Vec<String>,
    list: bool,
}

fn parse_args() -> Result<Args> {
    let mut args = Args {
        server: String::new(),
        only: Vec::new(),
        list: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--server" => args.server = it.next().unwrap_or_default(),
            "--only" => args.only.push(it.next().unwrap_or_default()),
            "--list" => args.list = true,
            "-h" | "--help" => {
                println!("usage: paddock-compat-rust --server HOST:PORT [--only NAME]... [--list]");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (try --help)"),
        }
    }
    if args.server.is_empty() && !args.list {
        bail!("--server HOST:PORT is required");
    }
    Ok(args)
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = parse_args()?;
    let all = checks::all();
    let selected: Vec<_> = all
        .into_iter()
        .filter(|(name, _)| args.only.is_empty() || args.only.iter().any(|o| o == name))
        .collect();
    if args.list {
        for (name, _) in &selected {
            println!("{name}");
        }
        return Ok(());
    }
    if selected.is_empty() {
        bail!("no check matches {:?}", args.only);
    }

    let ctx = Ctx {
        addr: args.server.clone(),
    };
    let setup = ctx.connect().await?;
    let millis = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let root = format!("/rust-client-{millis}");
    setup.create(&root, b"", &support::persistent()).await?;

    let (mut passed, mut failed) = (0usize, 0usize);
    for (name, check) in selected {
        let base = format!("{root}/{name}");
        let outcome = match setup.create(&base, b"", &support::persistent()).await {
            Err(err) => Err(anyhow::anyhow!("creating the check's parent {base}: {err}")),
            Ok(_) => match tokio::time::timeout(CHECK_DEADLINE, check(ctx.clone(), base)).await {
                Ok(result) => result,
                Err(_) => Err(anyhow::anyhow!("did not finish within {CHECK_DEADLINE:?}")),
            },
        };
        match outcome {
            Ok(()) => {
                passed += 1;
                println!("ok {name}");
            }
            Err(err) => {
                failed += 1;
                // One line per check, so a CI log shows what broke.
                println!("FAIL {name}: {}", format!("{err:#}").replace('\n', " | "));
            }
        }
    }
    println!("checks: passed {passed} failed {failed}");
    if failed > 0 || passed == 0 {
        std::process::exit(1);
    }
    Ok(())
}
