//! TTL and container create modes (opcodes 21 and 19). The server must allow TTL nodes and sweep every
//! second (znode.container.checkIntervalMs=1000) for the expiry checks to finish in time.

use std::time::Duration;

use anyhow::{bail, Result};

use crate::support::{eq, expect_event, expect_fresh_stat, oneshot_event, persistent, Ctx};
use zookeeper_client::{Acls, CreateMode, EventType};

pub async fn ttl_node_expires(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let short = format!("{base}/short");
    let long = format!("{base}/long");
    let ttl = |ms| {
        CreateMode::Persistent
            .with_acls(Acls::anyone_all())
            .with_ttl(Duration::from_millis(ms))
    };
    zk.create(&long, b"", &ttl(3_600_000)).await?;
    let (stat, _) = zk.create(&short, b"t", &ttl(500)).await?;
    // The TTL lives in the stored ephemeralOwner; the wire shows 0.
    expect_fresh_stat("TTL create stat", &stat, 1, 0)?;
    let (stat, watcher) = zk.check_and_watch_stat(&short).await?;
    if stat.is_some() {
        let event = oneshot_event("TTL expiry", watcher).await?;
        expect_event("TTL expiry", &event, EventType::NodeDeleted, &short)?;
    }
    if zk.check_stat(&long).await?.is_none() {
        bail!("the 1-hour TTL node was removed along with the 500 ms one");
    }
    Ok(())
}

pub async fn ttl_sequential_name(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let options = CreateMode::PersistentSequential
        .with_acls(Acls::anyone_all())
        .with_ttl(Duration::from_secs(3600));
    let (stat, seq) = zk.create(&format!("{base}/t-"), b"", &options).await?;
    eq(
        "TTL sequential name",
        format!("t-{seq}"),
        "t-0000000000".to_string(),
    )?;
    eq("TTL sequential owner on the wire", stat.ephemeral_owner, 0)?;
    let (_, seq) = zk.create(&format!("{base}/t-"), b"", &options).await?;
    eq(
        "second TTL sequential name",
        format!("t-{seq}"),
        "t-0000000001".to_string(),
    )?;
    eq("children", zk.list_children(&base).await?.len(), 2)?;
    // A TTL node may have children, unlike an ephemeral.
    zk.create(&format!("{base}/t-{seq}/child"), b"", &persistent())
        .await?;
    eq(
        "TTL node's num_children",
        zk.get_data(&format!("{base}/t-{seq}"))
            .await?
            .1
            .num_children,
        1,
    )?;
    Ok(())
}

pub async fn container_deleted_when_emptied(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let c = format!("{base}/c");
    let unused = format!("{base}/unused");
    let container = CreateMode::Container.with_acls(Acls::anyone_all());
    zk.create(&unused, b"", &container).await?;
    let (stat, _) = zk.create(&c, b"cc", &container).await?;
    expect_fresh_stat("container create stat", &stat, 2, 0)?;
    zk.create(&format!("{c}/x"), b"", &persistent()).await?;
    let (stat, watcher) = zk.check_and_watch_stat(&c).await?;
    eq(
        "container num_children",
        stat.map(|s| s.num_children),
        Some(1),
    )?;
    zk.delete(&format!("{c}/x"), None).await?;
    let event = oneshot_event("container removal", watcher).await?;
    expect_event("container removal", &event, EventType::NodeDeleted, &c)?;
    // A container that never had a child is kept by the same sweeps.
    if zk.check_stat(&unused).await?.is_none() {
        bail!("a never-used container was removed");
    }
    Ok(())
}
