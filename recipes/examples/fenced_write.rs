//! Fencing, end to end: take a lock, (maybe) stall, then write to PostgreSQL.
//!
//! `--mode fenced`: the lock is a recipes::Lock; the write carries its token and the database
//! refuses a token older than the row's:
//!   UPDATE fenced SET value = $1, fencing_token = $2 WHERE key = $3 AND fencing_token < $2
//! (or the INSERT when the row is new). A holder paused past its session timeout comes back to a
//! refused write. Prints `acquired <token>`, then `written` or `refused`.
//!
//! `--mode ttl`: the lock is a plain lease with no token, a SETNX+TTL lock as on Redis (a TTL node
//! that exists = held; it expires on its own), and the write is unconditional. A paused holder's
//! late write lands on top of the next holder's: the double write fencing prevents.

use clap::{Parser, ValueEnum};
use std::time::Duration;
use zookeeper_client::{Acls, CreateMode, Error as ZkError};

mod common;
use common::say;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    Fenced,
    Ttl,
}

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    zk: common::ZkArgs,
    /// PostgreSQL connection string.
    #[arg(long)]
    pg: String,
    #[arg(long, value_enum)]
    mode: Mode,
    #[arg(long, default_value = "/fence/lock")]
    lock: String,
    #[arg(long, default_value = "balance")]
    key: String,
    #[arg(long)]
    value: String,
    /// Stall this long between taking the lock and writing (a GC pause, a slow disk...).
    #[arg(long, default_value_t = 0)]
    pause_ms: u64,
    /// The TTL lock's lease.
    #[arg(long, default_value_t = 1000)]
    ttl_ms: u64,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let db = common::pg(&a.pg).await?;
    db.batch_execute(
        "CREATE TABLE IF NOT EXISTS fenced (key text PRIMARY KEY, value text NOT NULL, fencing_token bigint NOT NULL);
         CREATE TABLE IF NOT EXISTS fenced_writes (id serial PRIMARY KEY, key text, value text, fencing_token bigint)",
    )
    .await
    .ok(); // two writers may race to create the tables; the loser's error is harmless
    let zk = a.zk.connect().await?;
    match a.mode {
        Mode::Fenced => {
            let lock = recipes::Lock::new(zk.clone(), &a.lock)?;
            let held = lock.acquire().await?;
            let token = held.token();
            say(format!("acquired {token}"));
            tokio::time::sleep(Duration::from_millis(a.pause_ms)).await;
            // The write does not ask ZooKeeper whether it still holds the lock: a pause can come
            // between any such check and the write. The token makes the database the judge.
            let mut n = db
                .execute(
                    "UPDATE fenced SET value = $1, fencing_token = $2 WHERE key = $3 AND fencing_token < $2",
                    &[&a.value, &token, &a.key],
                )
                .await?;
            if n == 0 {
                n = db
                    .execute(
                        "INSERT INTO fenced (key, value, fencing_token) VALUES ($3, $1, $2) ON CONFLICT (key) DO NOTHING",
                        &[&a.value, &token, &a.key],
                    )
                    .await?;
            }
            if n == 1 {
                db.execute(
                    "INSERT INTO fenced_writes (key, value, fencing_token) VALUES ($1, $2, $3)",
                    &[&a.key, &a.value, &token],
                )
                .await?;
                say("written");
            } else {
                say("refused");
            }
            let _ = held.release().await;
        }
        Mode::Ttl => {
            let ttl = CreateMode::Persistent
                .with_acls(Acls::anyone_all())
                .with_ttl(Duration::from_millis(a.ttl_ms));
            let dir = a.lock.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
            if !dir.is_empty() {
                let _ = zk
                    .mkdir(dir, &CreateMode::Persistent.with_acls(Acls::anyone_all()))
                    .await;
            }
            loop {
                match zk.create(&a.lock, a.value.as_bytes(), &ttl).await {
                    Ok(_) => break,
                    Err(ZkError::NodeExists) => {
                        tokio::time::sleep(Duration::from_millis(100)).await
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            say("acquired ttl");
            tokio::time::sleep(Duration::from_millis(a.pause_ms)).await;
            db.execute(
                "INSERT INTO fenced (key, value, fencing_token) VALUES ($1, $2, 0)
                 ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                &[&a.key, &a.value],
            )
            .await?;
            db.execute(
                "INSERT INTO fenced_writes (key, value, fencing_token) VALUES ($1, $2, 0)",
                &[&a.key, &a.value],
            )
            .await?;
            say("written");
            // As `DEL lock` would: it may well delete the next holder's lease.
            let _ = zk.delete(&a.lock, None).await;
        }
    }
    Ok(())
}
