//! Migration: N instances start at once; the migration (schema + data, one transaction) must run
//! exactly once and every instance must wait until it is done before serving. Each instance takes
//! the migration lock and checks schema_migrations: the first runs it (prints `migrating`, then
//! `migrated <token>`), the others find it done (`already-migrated`). All then print `ready <rows>`.
//! An instance killed mid-migration leaves nothing (its transaction dies with its connection) and
//! its lock goes with its session, so the next one runs the migration instead.

use clap::Parser;
use std::time::Duration;

mod common;
use common::say;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    zk: common::ZkArgs,
    #[arg(long)]
    pg: String,
    #[arg(long)]
    instance: String,
    /// How long the migration's work takes (the window in which the tests kill it).
    #[arg(long, default_value_t = 1500)]
    work_ms: u64,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let mut db = common::pg(&a.pg).await?;
    let zk = a.zk.connect().await?;
    let lock = recipes::Lock::new(zk, "/migrations/lock")?;
    let held = lock.acquire().await?;
    let token = held.token();
    let done = db
        .query_opt("SELECT 1 FROM schema_migrations WHERE version = 1", &[])
        .await?;
    if done.is_some() {
        say("already-migrated");
    } else {
        say("migrating");
        let tx = db.transaction().await?;
        tx.batch_execute(
            "CREATE TABLE accounts (id int PRIMARY KEY, balance_cents bigint NOT NULL);
             INSERT INTO accounts SELECT g, 0 FROM generate_series(1, 1000) g;",
        )
        .await?;
        tokio::time::sleep(Duration::from_millis(a.work_ms)).await;
        tx.execute(
            "INSERT INTO migration_runs (version, run_by, fencing_token) VALUES (1, $1, $2)",
            &[&a.instance, &token],
        )
        .await?;
        tx.execute("INSERT INTO schema_migrations (version) VALUES (1)", &[])
            .await?;
        tx.commit().await?;
        say(format!("migrated {token}"));
    }
    held.release().await?;
    let rows: i64 = db
        .query_one("SELECT count(*) FROM accounts", &[])
        .await?
        .get(0);
    say(format!("ready {rows}"));
    Ok(())
}
