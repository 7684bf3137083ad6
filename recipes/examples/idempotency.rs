//! Idempotency keys with expiry: a request carries a key; the first to create the TTL node
//! /idempotency/<key> (PERSISTENT_WITH_TTL, --window-ms) is accepted, a duplicate inside the
//! window finds the node and is refused, and once the server has swept the expired node the key
//! is accepted again. Prints `accepted` or `duplicate` (exit 0 either way).
//! Needs TTL nodes on the server: paddock --extended-types, ZooKeeper extendedTypesEnabled=true.

use clap::Parser;
use std::time::Duration;
use zookeeper_client::{Acls, CreateMode, Error as ZkError};

mod common;
use common::say;

#[derive(Parser)]
struct Args {
    #[arg(long)]
    servers: String,
    #[arg(long)]
    key: String,
    #[arg(long)]
    window_ms: u64,
    #[arg(long, default_value = "")]
    request: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let zk = common::zk(&a.servers, 4000).await?;
    let _ = zk
        .mkdir(
            "/idempotency",
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await;
    let ttl = CreateMode::Persistent
        .with_acls(Acls::anyone_all())
        .with_ttl(Duration::from_millis(a.window_ms));
    match zk
        .create(
            &format!("/idempotency/{}", a.key),
            a.request.as_bytes(),
            &ttl,
        )
        .await
    {
        Ok(_) => say("accepted"),
        Err(ZkError::NodeExists) => say("duplicate"),
        Err(e) => return Err(e.into()),
    }
    Ok(())
}
