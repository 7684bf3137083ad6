//! Lock measurements (compat-tests/locks/bench.sh runs it): `uncontended N` prints the p50/p99 of
//! N acquire calls (each followed by a release), `contended K SECS` runs K contenders, each its
//! own session, in a loop of acquire+release and prints hand-offs per second.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};

mod common;

#[derive(Parser)]
struct Args {
    #[arg(long)]
    servers: String,
    #[arg(long, default_value = "/bench/lock")]
    path: String,
    #[command(subcommand)]
    what: What,
}

#[derive(Subcommand)]
enum What {
    Uncontended { n: usize },
    Contended { k: usize, secs: u64 },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    match a.what {
        What::Uncontended { n } => {
            let lock = recipes::Lock::new(common::zk(&a.servers, 4000).await?, &a.path)?;
            for _ in 0..20 {
                lock.acquire().await?.release().await?;
            }
            let mut us = Vec::with_capacity(n);
            for _ in 0..n {
                let t0 = Instant::now();
                let held = lock.acquire().await?;
                us.push(t0.elapsed().as_micros());
                held.release().await?;
            }
            us.sort_unstable();
            println!(
                "p50_us {} p99_us {}",
                us[n / 2],
                us[(n * 99 / 100).min(n - 1)]
            );
        }
        What::Contended { k, secs } => {
            let count = Arc::new(AtomicU64::new(0));
            let end = Instant::now() + Duration::from_secs(secs);
            let mut tasks = Vec::new();
            let mut locks = Vec::new();
            for _ in 0..k {
                locks.push(recipes::Lock::new(
                    common::zk(&a.servers, 4000).await?,
                    &a.path,
                )?);
            }
            for lock in locks {
                let count = count.clone();
                tasks.push(tokio::spawn(async move {
                    while Instant::now() < end {
                        let held = lock.acquire().await?;
                        count.fetch_add(1, Ordering::Relaxed);
                        held.release().await?;
                    }
                    Ok::<(), anyhow::Error>(())
                }));
            }
            for t in tasks {
                t.await??;
            }
            println!(
                "handoffs_per_s {:.1}",
                count.load(Ordering::Relaxed) as f64 / secs as f64
            );
        }
    }
    Ok(())
}
