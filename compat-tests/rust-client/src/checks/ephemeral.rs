//! Sequential and ephemeral znodes: 10-digit suffixes from the parent's counter, the owner session, and
//! removal when the owner's session closes, as another session sees it.

use anyhow::{bail, Result};

use crate::support::{
    ephemeral, ephemeral_sequential, eq, expect_event, oneshot_event, persistent, Ctx,
};
use zookeeper_client::{Acls, CreateMode, EventType};

pub async fn sequential_names_10_digits(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    // A plain create uses up counter value 0: the suffix is the parent's count of creates ever made.
    zk.create(&format!("{base}/plain"), b"", &persistent())
        .await?;
    let mut names = Vec::new();
    for (i, options) in [
        ephemeral_sequential(),
        CreateMode::PersistentSequential.with_acls(Acls::anyone_all()),
        ephemeral_sequential(),
    ]
    .iter()
    .enumerate()
    {
        let (_, seq) = zk.create(&format!("{base}/lock-"), b"", options).await?;
        eq(&format!("sequence {i}"), seq.into_i64(), i as i64 + 1)?;
        eq(
            &format!("sequence {i} printed"),
            seq.to_string(),
            format!("{:010}", i + 1),
        )?;
        names.push(format!("lock-{seq}"));
    }
    eq(
        "names",
        names.clone(),
        vec![
            "lock-0000000001".to_string(),
            "lock-0000000002".into(),
            "lock-0000000003".into(),
        ],
    )?;
    let mut children = zk.list_children(&base).await?;
    children.sort();
    names.push("plain".into());
    eq("children", children, names)?;
    // A trailing slash makes the suffix the whole name.
    let dir = format!("{base}/plain");
    let (_, seq) = zk
        .create(&format!("{dir}/"), b"", &ephemeral_sequential())
        .await?;
    eq(
        "child of plain/",
        zk.list_children(&dir).await?,
        vec![format!("{seq}")],
    )?;
    eq("its name", format!("{seq}"), "0000000000".to_string())?;
    Ok(())
}

pub async fn ephemeral_owner_is_session(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let other = ctx.connect().await?;
    let sid = zk.session_id().0;
    if sid == 0 || sid == other.session_id().0 {
        bail!(
            "session ids must be non-zero and distinct: {sid:#x} {:#x}",
            other.session_id().0
        );
    }
    let (stat, _) = zk
        .create(&format!("{base}/e"), b"eph", &ephemeral())
        .await?;
    crate::support::expect_fresh_stat("ephemeral create stat", &stat, 3, sid)?;
    let (stat, seq) = zk
        .create(&format!("{base}/s-"), b"", &ephemeral_sequential())
        .await?;
    eq("ephemeral sequential owner", stat.ephemeral_owner, sid)?;
    // Another session sees the same owner.
    let (_, seen) = other.get_data(&format!("{base}/s-{seq}")).await?;
    eq("owner seen by another session", seen.ephemeral_owner, sid)?;
    let (p, _) = zk.create(&format!("{base}/p"), b"", &persistent()).await?;
    eq("persistent owner", p.ephemeral_owner, 0)?;
    Ok(())
}

pub async fn ephemerals_vanish_on_close(ctx: Ctx, base: String) -> Result<()> {
    let owner = ctx.connect().await?;
    let observer = ctx.connect().await?;
    let mut paths = Vec::new();
    for _ in 0..3 {
        let (_, seq) = owner
            .create(&format!("{base}/worker-"), b"", &ephemeral_sequential())
            .await?;
        paths.push(format!("{base}/worker-{seq}"));
    }
    owner
        .create(&format!("{base}/single"), b"", &ephemeral())
        .await?;
    paths.push(format!("{base}/single"));
    let mut watchers = Vec::new();
    for path in &paths {
        let (stat, watcher) = observer.check_and_watch_stat(path).await?;
        if stat.is_none() {
            bail!("{path} missing before the owner closed");
        }
        watchers.push(watcher);
    }
    let (_, _, child_watcher) = observer.get_and_watch_children(&base).await?;
    // Dropping the only handle closes the session (closeSession).
    drop(owner);
    for (path, watcher) in paths.iter().zip(watchers) {
        let event = oneshot_event(path, watcher).await?;
        expect_event(path, &event, EventType::NodeDeleted, path)?;
    }
    let event = oneshot_event("child watch on the parent", child_watcher).await?;
    expect_event(
        "child watch on the parent",
        &event,
        EventType::NodeChildrenChanged,
        &base,
    )?;
    eq(
        "children left",
        observer.list_children(&base).await?,
        Vec::<String>::new(),
    )?;
    Ok(())
}

pub async fn list_ephemerals(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let other = ctx.connect().await?;
    zk.create(&format!("{base}/a"), b"", &persistent()).await?;
    zk.create(&format!("{base}/a/e1"), b"", &ephemeral())
        .await?;
    zk.create(&format!("{base}/e2"), b"", &ephemeral()).await?;
    other
        .create(&format!("{base}/theirs"), b"", &ephemeral())
        .await?;
    // getEphemerals lists only this session's ephemerals under the prefix, as full paths.
    let mut mine = zk.list_ephemerals(&base).await?;
    mine.sort();
    eq(
        "this session's ephemerals",
        mine,
        vec![format!("{base}/a/e1"), format!("{base}/e2")],
    )?;
    eq(
        "the other session's",
        other.list_ephemerals(&base).await?,
        vec![format!("{base}/theirs")],
    )?;
    Ok(())
}
