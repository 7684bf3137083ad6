//! multi (opcode 14): committed with one zxid and per-op results; failing with nothing applied and the
//! first failing op's index and error; multiRead (22) with a per-op error.

use anyhow::{bail, Result};

use crate::support::{ephemeral, eq, expect_event, oneshot_event, persistent, Ctx};
use zookeeper_client::{
    Acls, CreateMode, Error, EventType, MultiReadResult, MultiWriteError, MultiWriteResult,
};

pub async fn multi_commit_results(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let a = format!("{base}/a");
    let tmp = format!("{base}/tmp");
    let mut w = zk.new_multi_writer();
    w.add_create(&a, b"a", &persistent())?;
    w.add_create(
        &format!("{a}/s-"),
        b"",
        &CreateMode::PersistentSequential.with_acls(Acls::anyone_all()),
    )?;
    w.add_set_data(&a, b"aa", Some(0))?;
    w.add_check_version(&a, 1)?;
    w.add_create(&tmp, b"", &persistent())?;
    w.add_delete(&tmp, Some(0))?;
    let results = w.commit().await?;
    eq("result count", results.len(), 6)?;
    let (path0, s0) = match &results[0] {
        MultiWriteResult::Create { path, stat } => (path.clone(), *stat),
        other => bail!("result 0: {other:?}, want Create"),
    };
    eq("result 0 path", path0, a.clone())?;
    let zxid = s0.czxid;
    eq("result 0 mzxid", s0.mzxid, zxid)?;
    eq("result 0 version", s0.version, 0)?;
    eq("result 0 data_length", s0.data_length, 1)?;
    match &results[1] {
        MultiWriteResult::Create { path, stat } => {
            eq(
                "result 1 path (sequential)",
                path.clone(),
                format!("{a}/s-0000000000"),
            )?;
            eq(
                "result 1 czxid: one zxid for the whole multi",
                stat.czxid,
                zxid,
            )?;
        }
        other => bail!("result 1: {other:?}, want Create"),
    }
    match &results[2] {
        MultiWriteResult::SetData { stat } => {
            eq("result 2 version", stat.version, 1)?;
            eq("result 2 mzxid", stat.mzxid, zxid)?;
            eq("result 2 czxid", stat.czxid, zxid)?;
            eq("result 2 data_length", stat.data_length, 2)?;
        }
        other => bail!("result 2: {other:?}, want SetData"),
    }
    eq("result 3", &results[3], &MultiWriteResult::Check)?;
    match &results[4] {
        MultiWriteResult::Create { path, stat } => {
            eq("result 4 path", path.clone(), tmp.clone())?;
            eq("result 4 czxid", stat.czxid, zxid)?;
        }
        other => bail!("result 4: {other:?}, want Create"),
    }
    eq("result 5", &results[5], &MultiWriteResult::Delete)?;

    let (data, stat) = zk.get_data(&a).await?;
    eq("data after multi", data, b"aa".to_vec())?;
    eq("version after multi", stat.version, 1)?;
    eq("num_children after multi", stat.num_children, 1)?;
    eq("pzxid after multi", stat.pzxid, zxid)?;
    eq("tmp after multi", zk.check_stat(&tmp).await?, None)?;
    let (_, parent) = zk.get_data(&base).await?;
    // a and tmp created, tmp deleted: wire cversion 3, one child.
    eq("base cversion", parent.cversion, 3)?;
    eq("base num_children", parent.num_children, 1)?;
    Ok(())
}

pub async fn multi_failure_applies_nothing(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let new1 = format!("{base}/new1");
    let mut w = zk.new_multi_writer();
    w.add_create(&new1, b"", &persistent())?;
    w.add_create(
        &format!("{new1}/s-"),
        b"",
        &CreateMode::PersistentSequential.with_acls(Acls::anyone_all()),
    )?;
    w.add_set_data(&format!("{base}/missing"), b"x", None)?;
    w.add_create(&format!("{base}/new2"), b"", &persistent())?;
    match w.commit().await {
        Err(MultiWriteError::OperationFailed {
            index: 2,
            source: Error::NoNode,
        }) => {}
        other => bail!("multi: got {other:?}, want op 2 failing with NoNode"),
    }
    eq("new1 after failed multi", zk.check_stat(&new1).await?, None)?;
    let (children, stat) = zk.get_children(&base).await?;
    eq(
        "children after failed multi",
        children,
        Vec::<String>::new(),
    )?;
    eq("base cversion after failed multi", stat.cversion, 0)?;
    // The sequence counter did not move either.
    let (_, seq) = zk
        .create(
            &format!("{base}/q-"),
            b"",
            &CreateMode::PersistentSequential.with_acls(Acls::anyone_all()),
        )
        .await?;
    eq("next sequence", seq.to_string(), "0000000000".to_string())?;
    Ok(())
}

pub async fn multi_check_version_fails(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let n = format!("{base}/n");
    zk.create(&n, b"keep", &persistent()).await?;
    let mut w = zk.new_multi_writer();
    w.add_check_version(&n, 5)?;
    w.add_set_data(&n, b"lost", None)?;
    match w.commit().await {
        Err(MultiWriteError::OperationFailed {
            index: 0,
            source: Error::BadVersion,
        }) => {}
        other => bail!("check version 5: got {other:?}, want op 0 failing with BadVersion"),
    }
    let mut w = zk.new_multi_writer();
    w.add_set_data(&n, b"lost", None)?;
    w.add_check_version(&format!("{base}/missing"), -1)?;
    match w.commit().await {
        Err(MultiWriteError::OperationFailed {
            index: 1,
            source: Error::NoNode,
        }) => {}
        other => bail!("check of a missing node: got {other:?}, want op 1 failing with NoNode"),
    }
    let mut w = zk.new_multi_writer();
    w.add_delete(&n, None)?;
    w.add_create(&n, b"", &persistent())?;
    w.add_create(&n, b"", &persistent())?;
    match w.commit().await {
        Err(MultiWriteError::OperationFailed {
            index: 2,
            source: Error::NodeExists,
        }) => {}
        other => bail!("create twice: got {other:?}, want op 2 failing with NodeExists"),
    }
    let (data, stat) = zk.get_data(&n).await?;
    eq("data after failed multis", data, b"keep".to_vec())?;
    eq("version after failed multis", stat.version, 0)?;
    // An empty multi is answered with no results.
    eq(
        "empty multi",
        zk.new_multi_writer().commit().await?,
        Vec::new(),
    )?;
    Ok(())
}

pub async fn multi_ephemeral_owner(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let observer = ctx.connect().await?;
    let sid = zk.session_id().0;
    let path = format!("{base}/broker");
    // Kafka's broker registration shape: an ephemeral create and a setData in one multi.
    let mut w = zk.new_multi_writer();
    w.add_create(&path, b"", &ephemeral())?;
    w.add_set_data(&path, b"registered", Some(0))?;
    let results = w.commit().await?;
    match &results[..] {
        [MultiWriteResult::Create { stat: created, .. }, MultiWriteResult::SetData { stat }] => {
            eq("multi create owner", created.ephemeral_owner, sid)?;
            eq(
                "setData after create in one multi: version",
                stat.version,
                1,
            )?;
            eq("owner in the setData stat", stat.ephemeral_owner, sid)?;
        }
        other => bail!("results {other:?}, want [Create, SetData]"),
    }
    let (data, watcher) = observer
        .get_and_watch_data(&path)
        .await
        .map(|(d, _, w)| (d, w))?;
    eq("data", data, b"registered".to_vec())?;
    drop(zk);
    let event = oneshot_event("ephemeral from a multi after close", watcher).await?;
    expect_event(
        "ephemeral from a multi after close",
        &event,
        EventType::NodeDeleted,
        &path,
    )?;
    Ok(())
}

pub async fn multi_read(ctx: Ctx, base: String) -> Result<()> {
    let zk = ctx.connect().await?;
    let n = format!("{base}/n");
    let (created, _) = zk.create(&n, b"data", &persistent()).await?;
    let mut r = zk.new_multi_reader();
    r.add_get_data(&n)?;
    r.add_get_children(&base)?;
    r.add_get_data(&format!("{base}/missing"))?;
    r.add_get_children(&n)?;
    let results = r.commit().await?;
    eq("result count", results.len(), 4)?;
    match &results[0] {
        MultiReadResult::Data { data, stat } => {
            eq("result 0 data", data.clone(), b"data".to_vec())?;
            eq("result 0 stat", *stat, created)?;
        }
        other => bail!("result 0: {other:?}, want Data"),
    }
    match &results[1] {
        MultiReadResult::Children { children } => {
            eq("result 1", children.clone(), vec!["n".to_string()])?
        }
        other => bail!("result 1: {other:?}, want Children"),
    }
    match &results[2] {
        MultiReadResult::Error { err: Error::NoNode } => {}
        other => bail!("result 2: {other:?}, want Error NoNode"),
    }
    match &results[3] {
        MultiReadResult::Children { children } => {
            eq("result 3", children.clone(), Vec::<String>::new())?
        }
        other => bail!("result 3: {other:?}, want Children"),
    }
    Ok(())
}
