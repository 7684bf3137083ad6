//! Chroot, both through Client::chroot (a shared session) and a `host:port/path` connect string: paths in
//! replies, multi results, getEphemerals and watch events are relative to the chroot.

use anyhow::{anyhow, Result};

use crate::support::{
    connect, ephemeral_sequential, eq, expect_event, next_event, oneshot_event, persistent, Ctx,
};
use zookeeper_client::{AddWatchMode, Client, EventType, MultiWriteResult};

fn chrooted(zk: &Client, root: &str) -> Result<Client> {
    zk.clone()
        .chroot(root.to_string())
        .map_err(|_| anyhow!("chroot {root} refused"))
}

pub async fn chroot_ops_and_paths(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let root = format!("{base}/app");
    zk.create(&root, b"", &persistent()).await?;
    let app = chrooted(&zk, &root)?;
    app.create("/a", b"1", &persistent()).await?;
    eq(
        "data through the full path",
        zk.get_data(&format!("{root}/a")).await?.0,
        b"1".to_vec(),
    )?;
    eq(
        "children of the chroot's /",
        app.list_children("/").await?,
        vec!["a".to_string()],
    )?;
    eq(
        "chroot's / is the chroot node",
        app.get_data("/").await?.1,
        zk.get_data(&root).await?.1,
    )?;
    let (_, seq) = app.create("/s-", b"", &ephemeral_sequential()).await?;
    eq(
        "sequence under the chroot",
        seq.to_string(),
        "0000000001".to_string(),
    )?;
    eq(
        "getEphemerals under the chroot",
        app.list_ephemerals("/").await?,
        vec!["/s-0000000001".to_string()],
    )?;
    let mut w = app.new_multi_writer();
    w.add_create("/m", b"", &persistent())?;
    w.add_set_data("/a", b"2", None)?;
    let results = w.commit().await?;
    match results.first() {
        Some(MultiWriteResult::Create { path, .. }) => {
            eq("multi create path", path.as_str(), "/m")?
        }
        other => anyhow::bail!("multi result 0: {other:?}"),
    }
    eq(
        "data set through the chroot",
        zk.get_data(&format!("{root}/a")).await?.0,
        b"2".to_vec(),
    )?;
    app.delete("/m", None).await?;
    eq(
        "deleted through the chroot",
        zk.check_stat(&format!("{root}/m")).await?,
        None,
    )?;
    Ok(())
}

pub async fn chroot_watch_paths(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let writer = ctx.connect().await?;
    let root = format!("{base}/app");
    zk.create(&root, b"", &persistent()).await?;
    zk.create(&format!("{root}/a"), b"", &persistent()).await?;
    let app = chrooted(&zk, &root)?;
    let (_, _, data_watcher) = app.get_and_watch_data("/a").await?;
    let (_, _, child_watcher) = app.get_and_watch_children("/").await?;
    let mut recursive = app.watch("/", AddWatchMode::PersistentRecursive).await?;
    writer.set_data(&format!("{root}/a"), b"x", None).await?;
    writer
        .create(&format!("{root}/b"), b"", &persistent())
        .await?;
    let event = oneshot_event("data watch", data_watcher).await?;
    expect_event("data watch", &event, EventType::NodeDataChanged, "/a")?;
    let event = oneshot_event("child watch on the chroot", child_watcher).await?;
    expect_event(
        "child watch on the chroot",
        &event,
        EventType::NodeChildrenChanged,
        "/",
    )?;
    let event = next_event("recursive 0", &mut recursive).await?;
    expect_event("recursive 0", &event, EventType::NodeDataChanged, "/a")?;
    let event = next_event("recursive 1", &mut recursive).await?;
    expect_event("recursive 1", &event, EventType::NodeCreated, "/b")?;
    Ok(())
}

pub async fn chroot_in_connect_string(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let root = format!("{base}/app");
    zk.create(&root, b"", &persistent()).await?;
    let app = connect(&format!("{}{root}", ctx.addr)).await?;
    eq("client path", app.path(), root.as_str())?;
    app.create("/x", b"via string", &persistent()).await?;
    eq(
        "seen from the root",
        zk.get_data(&format!("{root}/x")).await?.0,
        b"via string".to_vec(),
    )?;
    eq(
        "children",
        app.list_children("/").await?,
        vec!["x".to_string()],
    )?;
    Ok(())
}
