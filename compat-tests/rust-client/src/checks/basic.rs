//! create / get / set / delete with the exact Stat fields ZooKeeper reports.

use anyhow::{bail, Result};

use crate::support::{eq, expect_err, expect_fresh_stat, persistent, Ctx};
use zookeeper_client::Error;

pub async fn create_get_stat(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let path = format!("{base}/n");
    let (stat, seq) = zk.create(&path, b"hello", &persistent()).await?;
    eq("sequence of a non-sequential create", seq.into_i64(), -1)?;
    expect_fresh_stat("create stat", &stat, 5, 0)?;
    let (data, got) = zk.get_data(&path).await?;
    eq("data", data.as_slice(), b"hello".as_slice())?;
    eq("getData stat == create stat", got, stat)?;
    let (_, parent) = zk.get_data(&base).await?;
    eq("parent num_children", parent.num_children, 1)?;
    eq("parent cversion", parent.cversion, 1)?;
    eq("parent pzxid == child czxid", parent.pzxid, stat.czxid)?;
    eq("parent version", parent.version, 0)?;
    Ok(())
}

pub async fn set_data_stat(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let path = format!("{base}/n");
    let (s0, _) = zk.create(&path, b"a", &persistent()).await?;
    let s1 = zk.set_data(&path, b"bcd", None).await?;
    eq("version after one set", s1.version, 1)?;
    eq("czxid unchanged", s1.czxid, s0.czxid)?;
    eq("ctime unchanged", s1.ctime, s0.ctime)?;
    eq("pzxid unchanged by setData", s1.pzxid, s0.pzxid)?;
    eq("cversion unchanged", s1.cversion, 0)?;
    eq("aversion unchanged", s1.aversion, 0)?;
    eq("data_length", s1.data_length, 3)?;
    if s1.mzxid <= s0.mzxid || s1.mtime < s0.mtime {
        bail!("setData must raise mzxid and not lower mtime: {s0:?} -> {s1:?}");
    }
    let s2 = zk.set_data(&path, b"", Some(1)).await?;
    eq("version after a versioned set", s2.version, 2)?;
    eq("data_length of empty data", s2.data_length, 0)?;
    let (data, got) = zk.get_data(&path).await?;
    eq("data after setting empty", data.len(), 0)?;
    eq("getData stat == setData stat", got, s2)?;
    Ok(())
}

pub async fn delete_with_version(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let path = format!("{base}/n");
    zk.create(&path, b"x", &persistent()).await?;
    zk.set_data(&path, b"y", Some(0)).await?;
    zk.delete(&path, Some(1)).await?;
    expect_err(
        "getData after delete",
        zk.get_data(&path).await,
        Error::NoNode,
    )?;
    eq("exists after delete", zk.check_stat(&path).await?, None)?;
    // Unversioned delete (-1) matches any version.
    zk.create(&path, b"x", &persistent()).await?;
    zk.set_data(&path, b"z", None).await?;
    zk.delete(&path, None).await?;
    eq(
        "exists after unversioned delete",
        zk.check_stat(&path).await?,
        None,
    )?;
    Ok(())
}

pub async fn parent_cversion_pzxid(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let p = format!("{base}/p");
    let (p0, _) = zk.create(&p, b"", &persistent()).await?;
    let (a, _) = zk.create(&format!("{p}/a"), b"", &persistent()).await?;
    let (b, _) = zk.create(&format!("{p}/b"), b"", &persistent()).await?;
    if !(p0.czxid < a.czxid && a.czxid < b.czxid) {
        bail!("zxids must increase: {} {} {}", p0.czxid, a.czxid, b.czxid);
    }
    let (children, s) = zk.get_children(&p).await?;
    let mut children = children;
    children.sort();
    eq("children", children, vec!["a".to_string(), "b".to_string()])?;
    eq("cversion after two creates", s.cversion, 2)?;
    eq("num_children", s.num_children, 2)?;
    eq("pzxid == last child's czxid", s.pzxid, b.czxid)?;
    eq("mzxid unchanged by children", s.mzxid, p0.czxid)?;
    zk.delete(&format!("{p}/a"), None).await?;
    let s = zk
        .check_stat(&p)
        .await?
        .ok_or_else(|| anyhow::anyhow!("parent vanished"))?;
    // Wire cversion counts child creates plus deletes.
    eq("cversion after two creates and a delete", s.cversion, 3)?;
    eq("num_children after delete", s.num_children, 1)?;
    if s.pzxid <= b.czxid {
        bail!(
            "a child delete must raise pzxid: {} <= {}",
            s.pzxid,
            b.czxid
        );
    }
    eq("version unchanged by children", s.version, 0)?;
    eq(
        "list_children after delete",
        zk.list_children(&p).await?,
        vec!["b".to_string()],
    )?;
    Ok(())
}

pub async fn exists_and_sync(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let writer = ctx.connect().await?;
    let path = format!("{base}/n");
    eq(
        "exists on a missing node",
        zk.check_stat(&path).await?,
        None,
    )?;
    let (stat, _) = writer.create(&path, b"data", &persistent()).await?;
    // sync makes the other session's write visible to this one.
    zk.sync(&path).await?;
    eq(
        "exists after another session's create",
        zk.check_stat(&path).await?,
        Some(stat),
    )?;
    Ok(())
}

pub async fn descendant_count(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    for p in ["a", "a/b", "a/c", "a/b/d", "e"] {
        zk.create(&format!("{base}/{p}"), b"", &persistent())
            .await?;
    }
    eq(
        "getAllChildrenNumber of base",
        zk.count_descendants_number(&base).await?,
        5,
    )?;
    eq(
        "getAllChildrenNumber of a",
        zk.count_descendants_number(&format!("{base}/a")).await?,
        3,
    )?;
    eq(
        "getAllChildrenNumber of a leaf",
        zk.count_descendants_number(&format!("{base}/e")).await?,
        0,
    )?;
    Ok(())
}

pub async fn system_nodes(ctx: Ctx, _base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let (mut children, stat) = zk.get_children("/zookeeper").await?;
    children.sort();
    eq(
        "children of /zookeeper",
        children,
        vec!["config".to_string(), "quota".to_string()],
    )?;
    // Never-incremented stored cversion with two children: wire cversion -2.
    eq("/zookeeper cversion", stat.cversion, -2)?;
    eq("/zookeeper num_children", stat.num_children, 2)?;
    eq("/zookeeper czxid", stat.czxid, 0)?;
    eq(
        "/zookeeper/quota children",
        zk.list_children("/zookeeper/quota").await?,
        Vec::<String>::new(),
    )?;
    let (_, config) = zk.get_config().await?;
    eq(
        "/zookeeper/config ephemeral_owner",
        config.ephemeral_owner,
        0,
    )?;
    Ok(())
}
