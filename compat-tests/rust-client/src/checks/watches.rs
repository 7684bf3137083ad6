//! One-shot data, exist and child watches, persistent and persistent-recursive watches: exact event type,
//! path, zxid and order.

use std::time::Duration;

use anyhow::{bail, Result};

use crate::support::{eq, expect_event, next_event, oneshot_event, persistent, Ctx};
use zookeeper_client::{Acls, AddWatchMode, CreateMode, EventType};

pub async fn watch_data_changed(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let writer = ctx.connect().await?;
    let path = format!("{base}/n");
    writer.create(&path, b"v0", &persistent()).await?;
    let (data, _, watcher) = zk.get_and_watch_data(&path).await?;
    eq("data", data, b"v0".to_vec())?;
    // A child create is not a data change: the watch must still be armed for the setData below.
    writer
        .create(&format!("{path}/child"), b"", &persistent())
        .await?;
    let stat = writer.set_data(&path, b"v1", None).await?;
    let event = oneshot_event("data watch", watcher).await?;
    expect_event("data watch", &event, EventType::NodeDataChanged, &path)?;
    eq("event zxid == setData mzxid", event.zxid, stat.mzxid)?;

    // The writer's own watch: its event arrives before the reply to its setData.
    let (_, _, watcher) = writer.get_and_watch_data(&path).await?;
    let stat = writer.set_data(&path, b"v2", None).await?;
    let event = tokio::time::timeout(Duration::ZERO, watcher.changed())
        .await
        .map_err(|_| {
            anyhow::anyhow!("own data watch event not delivered before the setData reply")
        })?;
    expect_event("own data watch", &event, EventType::NodeDataChanged, &path)?;
    eq("own event zxid", event.zxid, stat.mzxid)?;
    Ok(())
}

pub async fn watch_data_deleted(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let writer = ctx.connect().await?;
    let path = format!("{base}/n");
    writer.create(&path, b"", &persistent()).await?;
    let (_, _, data_watcher) = zk.get_and_watch_data(&path).await?;
    let (_, exist_watcher) = zk.check_and_watch_stat(&path).await?;
    writer.delete(&path, None).await?;
    let event = oneshot_event("getData watch", data_watcher).await?;
    expect_event("getData watch", &event, EventType::NodeDeleted, &path)?;
    let event = oneshot_event("exists watch", exist_watcher).await?;
    expect_event("exists watch", &event, EventType::NodeDeleted, &path)?;
    Ok(())
}

pub async fn watch_exists_created(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let writer = ctx.connect().await?;
    let path = format!("{base}/n");
    // exists on a missing node registers the watch anyway.
    let (stat, watcher) = zk.check_and_watch_stat(&path).await?;
    eq("exists before create", stat, None)?;
    let (stat, _) = writer.create(&path, b"", &persistent()).await?;
    let event = oneshot_event("exists watch", watcher).await?;
    expect_event("exists watch", &event, EventType::NodeCreated, &path)?;
    eq("event zxid == czxid", event.zxid, stat.czxid)?;
    Ok(())
}

pub async fn watch_children_changed(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let writer = ctx.connect().await?;
    let p = format!("{base}/p");
    writer.create(&p, b"", &persistent()).await?;

    let (children, _, watcher) = zk.get_and_watch_children(&p).await?;
    eq("children", children, Vec::<String>::new())?;
    // setData on the parent is not a child change; the create after it fires the watch.
    writer.set_data(&p, b"x", None).await?;
    let (stat, _) = writer.create(&format!("{p}/c"), b"", &persistent()).await?;
    let event = oneshot_event("child watch on create", watcher).await?;
    expect_event(
        "child watch on create",
        &event,
        EventType::NodeChildrenChanged,
        &p,
    )?;
    eq("event zxid == child czxid", event.zxid, stat.czxid)?;

    let (children, _, watcher) = zk.get_and_watch_children(&p).await?;
    eq("children", children, vec!["c".to_string()])?;
    writer.delete(&format!("{p}/c"), None).await?;
    let event = oneshot_event("child watch on delete", watcher).await?;
    expect_event(
        "child watch on delete",
        &event,
        EventType::NodeChildrenChanged,
        &p,
    )?;
    Ok(())
}

pub async fn watch_children_node_deleted(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let writer = ctx.connect().await?;
    let p = format!("{base}/p");
    writer.create(&p, b"", &persistent()).await?;
    let (_, _, watcher) = zk.get_and_watch_children(&p).await?;
    writer.delete(&p, None).await?;
    let event = oneshot_event("child watch", watcher).await?;
    expect_event(
        "child watch on the deleted node",
        &event,
        EventType::NodeDeleted,
        &p,
    )?;
    Ok(())
}

pub async fn persistent_recursive_grandchild(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let writer = ctx.connect().await?;
    let c = format!("{base}/c");
    let g = format!("{c}/g");
    let mut watcher = zk.watch(&base, AddWatchMode::PersistentRecursive).await?;
    writer.create(&c, b"", &persistent()).await?;
    writer.create(&g, b"", &persistent()).await?;
    writer.set_data(&g, b"changed", None).await?;
    writer.delete(&g, None).await?;
    writer.delete(&c, None).await?;
    // A recursive watch never sees NodeChildrenChanged; the exact sequence proves none came between.
    let want = [
        (EventType::NodeCreated, &c),
        (EventType::NodeCreated, &g),
        (EventType::NodeDataChanged, &g),
        (EventType::NodeDeleted, &g),
        (EventType::NodeDeleted, &c),
    ];
    let mut last_zxid = 0;
    for (i, (kind, path)) in want.into_iter().enumerate() {
        let event = next_event(&format!("event {i}"), &mut watcher).await?;
        expect_event(&format!("event {i}"), &event, kind, path)?;
        if event.zxid <= last_zxid {
            bail!("event {i}: zxid {} not after {last_zxid}", event.zxid);
        }
        last_zxid = event.zxid;
    }
    // Still armed after five events.
    writer.create(&c, b"", &persistent()).await?;
    let event = next_event("event after re-create", &mut watcher).await?;
    expect_event("event after re-create", &event, EventType::NodeCreated, &c)?;
    Ok(())
}

pub async fn persistent_watch_node(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let writer = ctx.connect().await?;
    let p = format!("{base}/p");
    let c = format!("{p}/c");
    let g = format!("{c}/g");
    writer.create(&p, b"", &persistent()).await?;
    let mut watcher = zk.watch(&p, AddWatchMode::Persistent).await?;
    writer.create(&c, b"", &persistent()).await?; // NodeChildrenChanged(p)
    writer.create(&g, b"", &persistent()).await?; // grandchild: nothing
    writer.set_data(&p, b"x", None).await?; // NodeDataChanged(p)
    writer.set_data(&c, b"x", None).await?; // child data: nothing
    writer.delete(&g, None).await?; // nothing
    writer.delete(&c, None).await?; // NodeChildrenChanged(p)
    writer.delete(&p, None).await?; // NodeDeleted(p)
    writer.create(&p, b"", &persistent()).await?; // NodeCreated(p): the watch outlives the node
    let want = [
        EventType::NodeChildrenChanged,
        EventType::NodeDataChanged,
        EventType::NodeChildrenChanged,
        EventType::NodeDeleted,
        EventType::NodeCreated,
    ];
    for (i, kind) in want.into_iter().enumerate() {
        let event = next_event(&format!("event {i}"), &mut watcher).await?;
        expect_event(&format!("event {i}"), &event, kind, &p)?;
    }
    Ok(())
}

pub async fn watch_events_need_read_acl(ctx: Ctx, base: String) -> Result<()> {
    let watcher_client = ctx.connect().await?;
    let alice = ctx.connect().await?;
    alice.auth("digest", b"alice:secret").await?;
    let mut recursive = watcher_client
        .watch(&base, AddWatchMode::PersistentRecursive)
        .await?;
    let hidden = format!("{base}/hidden");
    let open = format!("{base}/open");
    // The watcher cannot read `hidden`, so (ZooKeeper 3.9.2+) it is not told about it.
    alice
        .create(
            &hidden,
            b"",
            &CreateMode::Persistent.with_acls(Acls::creator_all()),
        )
        .await?;
    alice.set_data(&hidden, b"x", None).await?;
    alice.create(&open, b"", &persistent()).await?;
    let event = next_event("first visible event", &mut recursive).await?;
    expect_event("first visible event", &event, EventType::NodeCreated, &open)?;
    Ok(())
}

/// removeWatches (opcode 18) as the crate sends it when the last watcher of a path and kind goes away.
#[allow(deprecated)] // remove() is the only way to see the server's answer; Drop sends the same request.
pub async fn watch_remove_answers(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let writer = ctx.connect().await?;
    let p = format!("{base}/p");
    writer.create(&p, b"", &persistent()).await?;
    let persistent_watcher = zk.watch(&p, AddWatchMode::Persistent).await?;
    persistent_watcher.remove().await?;
    let (_, _, data_watcher) = zk.get_and_watch_data(&p).await?;
    data_watcher.remove().await?;
    let (_, _, child_watcher) = zk.get_and_watch_children(&p).await?;
    child_watcher.remove().await?;
    // Watching again after the removals still works.
    let (_, _, watcher) = zk.get_and_watch_data(&p).await?;
    let stat = writer.set_data(&p, b"x", None).await?;
    let event = oneshot_event("data watch after removals", watcher).await?;
    expect_event(
        "data watch after removals",
        &event,
        EventType::NodeDataChanged,
        &p,
    )?;
    eq("event zxid", event.zxid, stat.mzxid)?;
    Ok(())
}
