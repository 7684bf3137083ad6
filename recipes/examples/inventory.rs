//! Inventory: N instances buy from a stock of K until it runs out; exactly K sales, never below zero.
//!
//! `--mode cas`: the stock is a znode's data; a sale is a versioned setData (compare-and-set):
//! read (count, version), write count-1 only if the version is unchanged, else read again.
//! `--mode lock`: the stock is a PostgreSQL row; a sale is a read, a pause, and a write of the
//! computed value (a read-modify-write that loses updates without the lock) under the
//! recipes::Lock, the write fenced by the token. Prints one `sold` line per sale, then `sold-out`.

use clap::{Parser, ValueEnum};
use std::time::Duration;
use zookeeper_client::{Acls, CreateMode, Error as ZkError};

mod common;
use common::say;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    Cas,
    Lock,
}

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    zk: common::ZkArgs,
    #[arg(long, value_enum)]
    mode: Mode,
    #[arg(long)]
    pg: Option<String>,
    #[arg(long, default_value = "widget")]
    sku: String,
    #[arg(long)]
    instance: String,
    /// cas mode: create the stock node with this count if it does not exist.
    #[arg(long)]
    stock: u32,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let zk = a.zk.connect().await?;
    match a.mode {
        Mode::Cas => {
            let path = format!("/inventory/{}", a.sku);
            let _ = zk
                .mkdir(
                    "/inventory",
                    &CreateMode::Persistent.with_acls(Acls::anyone_all()),
                )
                .await;
            match zk
                .create(
                    &path,
                    a.stock.to_string().as_bytes(),
                    &CreateMode::Persistent.with_acls(Acls::anyone_all()),
                )
                .await
            {
                Ok(_) | Err(ZkError::NodeExists) => {}
                Err(e) => return Err(e.into()),
            }
            loop {
                let (data, stat) = zk.get_data(&path).await?;
                let n: i64 = String::from_utf8_lossy(&data).trim().parse()?;
                if n <= 0 {
                    say("sold-out");
                    break;
                }
                let next = (n - 1).to_string();
                match zk
                    .set_data(&path, next.as_bytes(), Some(stat.version))
                    .await
                {
                    Ok(_) => say(format!("sold {n}")),
                    Err(ZkError::BadVersion) => continue, // someone else sold in between
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Mode::Lock => {
            let Some(pg) = &a.pg else {
                anyhow::bail!("--mode lock needs --pg");
            };
            let db = common::pg(pg).await?;
            let lock = recipes::Lock::new(zk, &format!("/locks/inventory-{}", a.sku))?;
            loop {
                let held = lock.acquire().await?;
                let token = held.token();
                let row = db
                    .query_one("SELECT qty FROM stock WHERE sku = $1", &[&a.sku])
                    .await?;
                let qty: i32 = row.get(0);
                if qty <= 0 {
                    held.release().await?;
                    say("sold-out");
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
                let n = db
                    .execute(
                        "UPDATE stock SET qty = $1, fencing_token = $2 WHERE sku = $3 AND fencing_token <= $2",
                        &[&(qty - 1), &token, &a.sku],
                    )
                    .await?;
                if n == 1 {
                    db.execute(
                        "INSERT INTO sales (sku, buyer, fencing_token) VALUES ($1, $2, $3)",
                        &[&a.sku, &a.instance, &token],
                    )
                    .await?;
                    say(format!("sold {qty}"));
                }
                held.release().await?;
            }
        }
    }
    Ok(())
}
