//! The error kinds ZooKeeper answers, and that a failed write changes nothing.

use anyhow::Result;

use crate::support::{ephemeral, eq, expect_err, persistent, Ctx};
use zookeeper_client::Error;

pub async fn error_node_exists(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let path = format!("{base}/n");
    zk.create(&path, b"first", &persistent()).await?;
    let (_, before) = zk.get_data(&base).await?;
    expect_err(
        "second create",
        zk.create(&path, b"second", &persistent()).await,
        Error::NodeExists,
    )?;
    expect_err(
        "ephemeral over it",
        zk.create(&path, b"", &ephemeral()).await,
        Error::NodeExists,
    )?;
    eq("data kept", zk.get_data(&path).await?.0, b"first".to_vec())?;
    eq(
        "parent stat unchanged by failed creates",
        zk.get_data(&base).await?.1,
        before,
    )?;
    Ok(())
}

pub async fn error_no_node(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let missing = format!("{base}/missing");
    let child = format!("{missing}/child");
    expect_err(
        "create under a missing parent",
        zk.create(&child, b"", &persistent()).await,
        Error::NoNode,
    )?;
    expect_err("getData", zk.get_data(&missing).await, Error::NoNode)?;
    expect_err(
        "setData",
        zk.set_data(&missing, b"x", None).await,
        Error::NoNode,
    )?;
    expect_err("delete", zk.delete(&missing, None).await, Error::NoNode)?;
    expect_err(
        "getChildren",
        zk.get_children(&missing).await,
        Error::NoNode,
    )?;
    expect_err("getACL", zk.get_acl(&missing).await, Error::NoNode)?;
    expect_err(
        "getData watch",
        zk.get_and_watch_data(&missing)
            .await
            .map(|(d, s, _)| (d, s)),
        Error::NoNode,
    )?;
    Ok(())
}

pub async fn error_bad_version(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let path = format!("{base}/n");
    zk.create(&path, b"v0", &persistent()).await?;
    expect_err(
        "setData with version 5",
        zk.set_data(&path, b"x", Some(5)).await,
        Error::BadVersion,
    )?;
    expect_err(
        "delete with version 3",
        zk.delete(&path, Some(3)).await,
        Error::BadVersion,
    )?;
    let stat = zk.set_data(&path, b"v1", Some(0)).await?;
    eq("version after the matching set", stat.version, 1)?;
    expect_err(
        "delete with the old version",
        zk.delete(&path, Some(0)).await,
        Error::BadVersion,
    )?;
    let (data, stat) = zk.get_data(&path).await?;
    eq("data after failed writes", data, b"v1".to_vec())?;
    eq("version after failed writes", stat.version, 1)?;
    Ok(())
}

pub async fn error_not_empty(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let path = format!("{base}/n");
    zk.create(&path, b"", &persistent()).await?;
    zk.create(&format!("{path}/c"), b"", &persistent()).await?;
    expect_err(
        "delete with a child",
        zk.delete(&path, None).await,
        Error::NotEmpty,
    )?;
    expect_err(
        "versioned delete with a child",
        zk.delete(&path, Some(0)).await,
        Error::NotEmpty,
    )?;
    // ZooKeeper checks the version before the children.
    expect_err(
        "wrong-version delete with a child",
        zk.delete(&path, Some(3)).await,
        Error::BadVersion,
    )?;
    eq(
        "children kept",
        zk.list_children(&path).await?,
        vec!["c".to_string()],
    )?;
    zk.delete(&format!("{path}/c"), None).await?;
    zk.delete(&path, None).await?;
    Ok(())
}

pub async fn error_no_children_for_ephemerals(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let path = format!("{base}/e");
    zk.create(&path, b"", &ephemeral()).await?;
    expect_err(
        "child of an ephemeral",
        zk.create(&format!("{path}/c"), b"", &persistent()).await,
        Error::NoChildrenForEphemerals,
    )?;
    eq(
        "ephemeral still childless",
        zk.get_data(&path).await?.1.num_children,
        0,
    )?;
    Ok(())
}
