//! The crate's Curator-compatible lock recipe (ephemeral sequential contenders, each watching its
//! predecessor) and its lock-guarded writes (multi with a check of the lock node).

use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use tokio::sync::oneshot;
use tokio::time::timeout;

use crate::support::{eq, expect_err, persistent, wait_until, Ctx, EVENT_WAIT};
use zookeeper_client::{Acls, CreateMode, Error, LockOptions, LockPrefix};

fn lock_options() -> Result<LockOptions<'static>> {
    Ok(LockOptions::new(Acls::anyone_all())
        .with_ancestor_options(CreateMode::Persistent.with_acls(Acls::anyone_all()))?)
}

/// Curator's lock node name: `_c_<uuid>-lock-<10 digits>`; returns the sequence number.
fn curator_sequence(dir: &str, path: &str) -> Result<u32> {
    let name = path
        .strip_prefix(dir)
        .and_then(|rest| rest.strip_prefix("/_c_"))
        .ok_or_else(|| anyhow!("lock path {path:?} is not {dir}/_c_..."))?;
    let (uuid, rest) = name.split_at(36.min(name.len()));
    let digits = rest
        .strip_prefix("-lock-")
        .ok_or_else(|| anyhow!("lock path {path:?}: no -lock- after the uuid"))?;
    if uuid.chars().filter(|c| *c == '-').count() != 4 || digits.len() != 10 {
        bail!("lock path {path:?} is not _c_<uuid>-lock-<10 digits>");
    }
    Ok(digits.parse()?)
}

pub async fn lock_curator_contention(ctx: Ctx, base: String) -> Result<()> {
    let a = ctx.connect().await?;
    let b = ctx.connect().await?;
    let observer = ctx.connect().await?;
    let dir = format!("{base}/lock");
    let lock_a = a
        .lock(
            LockPrefix::new_curator(&dir, "lock-")?,
            b"a",
            lock_options()?,
        )
        .await?;
    let seq_a = curator_sequence(&dir, lock_a.lock_path())?;
    eq("first contender's sequence", seq_a, 0)?;
    eq(
        "lock node owner",
        observer
            .get_data(lock_a.lock_path())
            .await?
            .1
            .ephemeral_owner,
        a.session_id().0,
    )?;

    let (acquired_tx, mut acquired_rx) = oneshot::channel::<String>();
    let (release_tx, release_rx) = oneshot::channel::<()>();
    let dir_b = dir.clone();
    let contender = tokio::spawn(async move {
        let lock = b
            .lock(
                LockPrefix::new_curator(&dir_b, "lock-")?,
                b"b",
                lock_options()?,
            )
            .await?;
        let _ = acquired_tx.send(lock.lock_path().to_string());
        let _ = release_rx.await;
        drop(lock);
        Ok::<_, anyhow::Error>(())
    });

    // B is contending once its node exists; it must not hold the lock while A does.
    wait_until("second contender's node", || async {
        Ok(observer.list_children(&dir).await?.len() == 2)
    })
    .await?;
    if let Ok(got) = timeout(Duration::from_millis(300), &mut acquired_rx).await {
        bail!("second client acquired the lock while the first held it: {got:?}");
    }
    let (stat, _) = lock_a
        .create(&format!("{base}/by-a"), b"", &persistent())
        .await?;
    eq("guarded create version", stat.version, 0)?;

    let path_a = lock_a.lock_path().to_string();
    drop(lock_a); // deletes A's node in the background
    let path_b = timeout(EVENT_WAIT, acquired_rx).await.map_err(|_| {
        anyhow!("second client did not acquire within {EVENT_WAIT:?} of the release")
    })??;
    eq(
        "second contender's sequence",
        curator_sequence(&dir, &path_b)?,
        1,
    )?;
    eq(
        "first lock node after release",
        observer.check_stat(&path_a).await?,
        None,
    )?;
    let _ = release_tx.send(());
    timeout(EVENT_WAIT, contender)
        .await
        .map_err(|_| anyhow!("contender did not finish"))???;
    wait_until("lock nodes gone", || async {
        Ok(observer.list_children(&dir).await?.is_empty())
    })
    .await?;
    Ok(())
}

pub async fn lock_guarded_write_after_loss(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let other = ctx.connect().await?;
    let dir = format!("{base}/lock");
    let guarded = format!("{base}/guarded");
    zk.create(&guarded, b"v0", &persistent()).await?;
    let lock = zk
        .lock(
            LockPrefix::new_curator(&dir, "lock-")?,
            b"",
            lock_options()?,
        )
        .await?;
    let stat = lock.set_data(&guarded, b"v1", Some(0)).await?;
    eq("guarded setData version", stat.version, 1)?;
    // Someone else deletes the lock node: the check op inside the guarded multi now fails.
    other.delete(lock.lock_path(), None).await?;
    expect_err(
        "guarded setData after the lock is lost",
        lock.set_data(&guarded, b"v2", None).await,
        Error::RuntimeInconsistent,
    )?;
    expect_err(
        "guarded delete after the lock is lost",
        lock.delete(&guarded, None).await,
        Error::RuntimeInconsistent,
    )?;
    let (data, stat) = other.get_data(&guarded).await?;
    eq("data after refused guarded writes", data, b"v1".to_vec())?;
    eq("version after refused guarded writes", stat.version, 1)?;
    Ok(())
}
