//! Leader election among replicas: each campaigns with recipes::LeaderLatch; the leader appends
//! `<instance> <ms since epoch>` to --log every 100 ms while it leads, and stops at once (exit 4)
//! when its session is lost. Killing the leader hands leadership to another within the session
//! timeout.

use clap::Parser;
use std::time::Duration;

mod common;
use common::{now_ms, say};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    zk: common::ZkArgs,
    #[arg(long, default_value = "/election/replicas")]
    path: String,
    #[arg(long)]
    instance: String,
    #[arg(long)]
    log: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let zk = a.zk.connect().await?;
    let latch = recipes::LeaderLatch::new(zk, &a.path, &a.instance)?;
    let held = latch.campaign().await?;
    say(format!("leader {} {}", a.instance, held.token()));
    let lead = async {
        loop {
            common::append(&a.log, &format!("{} {}", a.instance, now_ms()))?;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        #[allow(unreachable_code)]
        Ok::<(), std::io::Error>(())
    };
    tokio::select! {
        r = lead => r?,
        loss = held.lost() => { say(format!("lost {loss}")); std::process::exit(4); }
    }
    Ok(())
}
