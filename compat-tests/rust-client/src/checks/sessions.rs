//! Sessions: reattaching to a live session by id and password keeps its ephemerals; closing it ends them.

use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use tokio::time::timeout;

use crate::support::{connector, ephemeral, eq, expect_event, oneshot_event, Ctx};
use zookeeper_client::{EventType, SessionState};

pub async fn session_reattach_keeps_ephemerals(ctx: Ctx, base: String) -> Result<()> {
    let observer = ctx.connect().await?;
    // Detached: dropping the client drops the connection but does not close the session.
    let first = connector().with_detached().connect(&ctx.addr).await?;
    eq("state", first.state(), SessionState::SyncConnected)?;
    let sid = first.session_id().0;
    let path = format!("{base}/e");
    first.create(&path, b"", &ephemeral()).await?;
    let session = first.session().clone();
    drop(first);

    let second = connector().with_session(session).connect(&ctx.addr).await?;
    eq("reattached session id", second.session_id().0, sid)?;
    let (stat, watcher) = observer.check_and_watch_stat(&path).await?;
    match stat {
        Some(stat) => eq("ephemeral owner after reattach", stat.ephemeral_owner, sid)?,
        None => bail!("ephemeral gone after its session was reattached"),
    }
    eq(
        "the reattached session lists it",
        second.list_ephemerals(&base).await?,
        vec![path.clone()],
    )?;
    drop(second); // not detached: closes the session
    let event = oneshot_event("ephemeral after close", watcher).await?;
    expect_event(
        "ephemeral after close",
        &event,
        EventType::NodeDeleted,
        &path,
    )?;
    Ok(())
}

pub async fn session_expiry_removes_ephemerals(ctx: Ctx, base: String) -> Result<()> {
    let observer = ctx.connect().await?;
    // 4 s is the smallest timeout both servers grant with tickTime 2000 (2 ticks).
    let doomed = connector()
        .with_session_timeout(Duration::from_secs(4))
        .with_detached()
        .connect(&ctx.addr)
        .await?;
    eq(
        "negotiated session timeout",
        doomed.session_timeout(),
        Duration::from_secs(4),
    )?;
    let path = format!("{base}/e");
    doomed.create(&path, b"", &ephemeral()).await?;
    let (_, watcher) = observer.check_and_watch_stat(&path).await?;
    // Dropping a detached client only drops the connection: no closeSession, so the server must expire it.
    drop(doomed);
    let event = timeout(Duration::from_secs(20), watcher.changed())
        .await
        .map_err(|_| anyhow!("ephemeral of an abandoned 4 s session still there after 20 s"))?;
    expect_event(
        "ephemeral after expiry",
        &event,
        EventType::NodeDeleted,
        &path,
    )?;
    Ok(())
}
