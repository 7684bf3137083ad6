//! Payment: N instances race to charge one order. Under the order's lock, an instance looks up
//! the order's idempotency key in PostgreSQL; only if absent does it call the payment gateway
//! (here: a line appended to --gateway-log, an effect outside the database, which is why the
//! database's unique key alone is not enough) and record the charge with its fencing token.
//! Prints `charged <token>` or `already-charged`.

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
    order: String,
    #[arg(long)]
    instance: String,
    #[arg(long)]
    gateway_log: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let db = common::pg(&a.pg).await?;
    let zk = a.zk.connect().await?;
    let lock = recipes::Lock::new(zk, &format!("/payments/{}", a.order))?;
    let held = lock.acquire().await?;
    let token = held.token();
    let key = format!("charge-{}", a.order);
    let seen = db
        .query_opt("SELECT 1 FROM charges WHERE idempotency_key = $1", &[&key])
        .await?;
    if seen.is_some() {
        say("already-charged");
    } else {
        // The gateway call: slow, and not undoable.
        tokio::time::sleep(Duration::from_millis(100)).await;
        common::append(&a.gateway_log, &format!("{} {}", a.order, a.instance))?;
        db.execute(
            "INSERT INTO charges (idempotency_key, order_id, amount_cents, charged_by, fencing_token)
             VALUES ($1, $2, 1999, $3, $4)",
            &[&key, &a.order, &a.instance, &token],
        )
        .await?;
        say(format!("charged {token}"));
    }
    held.release().await?;
    Ok(())
}
