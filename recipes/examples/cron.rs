//! Cron: N instances run one job every --period-ms, for the periods --from..=--to (period
//! numbers: milliseconds since the epoch / period). One instance leads (recipes::LeaderLatch);
//! the leader runs each due period whose marker node /cron/<job>/runs/<period> it manages to create
//! (create fails if it exists, so a period runs once even across leader changes), and catches up
//! periods missed while no one led: killing the leader delays a period, never drops or repeats it.
//! A run appends `<period> <instance>` to --log.

use clap::Parser;
use std::time::Duration;
use zookeeper_client::{Acls, CreateMode, Error as ZkError};

mod common;
use common::{now_ms, say};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    zk: common::ZkArgs,
    #[arg(long, default_value = "report")]
    job: String,
    #[arg(long)]
    instance: String,
    #[arg(long)]
    period_ms: u64,
    #[arg(long)]
    from: u64,
    #[arg(long)]
    to: u64,
    #[arg(long)]
    log: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let zk = a.zk.connect().await?;
    let runs = format!("/cron/{}/runs", a.job);
    zk.mkdir(&runs, &CreateMode::Persistent.with_acls(Acls::anyone_all()))
        .await
        .or_else(|e| {
            if e == ZkError::NodeExists {
                Ok(())
            } else {
                Err(e)
            }
        })?;
    let latch =
        recipes::LeaderLatch::new(zk.clone(), &format!("/cron/{}/leader", a.job), &a.instance)?;
    // Stay a candidate until the last period is over (plus a session timeout, so a killed
    // leader's last periods are caught up by someone).
    let end_ms = (a.to + 1) * a.period_ms + a.zk.session_timeout_ms * 2;
    let wait = Duration::from_millis((end_ms as u128).saturating_sub(now_ms()) as u64);
    let held = tokio::select! {
        h = latch.campaign() => h?,
        _ = tokio::time::sleep(wait) => { say("never-led"); return Ok(()); }
    };
    say(format!("leader {}", a.instance));
    let mut next = a.from;
    loop {
        let current = (now_ms() / a.period_ms as u128) as u64;
        while next <= current.min(a.to) {
            let marker = format!("{runs}/{next:020}");
            match zk
                .create(
                    &marker,
                    a.instance.as_bytes(),
                    &CreateMode::Persistent.with_acls(Acls::anyone_all()),
                )
                .await
            {
                Ok(_) => {
                    common::append(&a.log, &format!("{next} {}", a.instance))?;
                    say(format!("ran {next}"));
                }
                Err(ZkError::NodeExists) => {}
                Err(e) => return Err(e.into()),
            }
            next += 1;
        }
        if next > a.to {
            held.release().await?;
            return Ok(());
        }
        let due = next as u128 * a.period_ms as u128;
        let sleep = Duration::from_millis(due.saturating_sub(now_ms()) as u64);
        tokio::select! {
            _ = tokio::time::sleep(sleep) => {}
            loss = held.lost() => { say(format!("lost {loss}")); std::process::exit(4); }
        }
    }
}
