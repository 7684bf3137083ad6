//! The AdminServer's `restore`, as ZooKeeper 3.9's `Commands.RestoreCommand` takes it:
//! `POST <commandURL>/restore` with a ZooKeeper snapshot as the body and `Authorization:
//! <scheme> <auth>` whose ids hold every permission on `/` (401 without, 403 short of it);
//! `admin.restore.enabled=false` answers 503, more than one per `admin.rateLimiterIntervalInMS`
//! 429. The answer is ZooKeeper's JSON, `{"last_zxid": <n>, "command": "restore", "error":
//! null}`, where `last_zxid` is the zxid the ensemble is at once restored.
//!
//! Unlike ZooKeeper's, whose restore replaces one server's database and leaves the others to
//! the operator, this restores the whole ensemble: the snapshot is checked and listed into a
//! paddock tree off the core (`zk_restore::prepare`), then proposed as one log entry
//! (`Txn::Restore`) that every member applies at the same index, into a new epoch
//! (`znode-tree/src/ops/restore.rs`). The answer waits until this member applied it. A body
//! that is not a ZooKeeper snapshot answers 400 with why, and nothing is proposed.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::{mpsc, oneshot};

use super::admin_snapshot::{admin_caller, Limiter, NOT_SERVING};
use super::{Request, Response};
use crate::config::Config;
use crate::msg::CoreMsg;

/// The largest body taken: a ZooKeeper snapshot several times larger than the restore entry
/// it becomes (`zk_restore::MAX_RESTORE_ENTRY`) is refused after reading anyway.
pub const MAX_BODY: usize = 256 << 20;
/// How long the caller waits for the entry to commit and apply here.
const APPLY_WAIT: Duration = Duration::from_secs(60);

fn answer(status: u16, error: Option<&str>, last_zxid: Option<i64>) -> Response {
    let mut body = json!({ "command": "restore", "error": error });
    if let Some(z) = last_zxid {
        body["last_zxid"] = json!(z);
    }
    Response::json(status, &body)
}

/// `POST .../restore`.
pub async fn handle(
    req: &Request,
    core: &mpsc::Sender<CoreMsg>,
    cfg: &Arc<Config>,
    limiter: &Limiter,
) -> Response {
    if req.method != "POST" {
        return answer(
            405,
            Some("restore takes a POST with the snapshot as its body"),
            None,
        );
    }
    let ids = match admin_caller(req, core, cfg).await {
        Ok(ids) => ids,
        Err((status, why)) => return answer(status, Some(why), None),
    };
    if !cfg.admin.restore_enabled {
        tracing::warn!("restore command is disabled (admin.restore.enabled=false)");
        return answer(503, None, None);
    }
    if req.body.is_empty() {
        return answer(400, Some("InputStream from restore request is null"), None);
    }
    if !limiter.allow() {
        tracing::warn!("restore request was rate limited");
        return answer(429, None, None);
    }
    let body = req.body.clone();
    let cfg2 = cfg.clone();
    let prepared = tokio::task::spawn_blocking(move || crate::zk_restore::prepare(&body, &cfg2))
        .await
        .unwrap_or_else(|e| Err(format!("reading the snapshot failed: {e}")));
    let prepared = match prepared {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(error = %e, "restore refused: nothing restored");
            return answer(400, Some(&format!("{e}; nothing restored")), None);
        }
    };
    for line in prepared.report.lines() {
        tracing::info!("restore: {line}");
    }
    let (tx, rx) = oneshot::channel();
    let sent = core
        .send(CoreMsg::Restore {
            auth: ids,
            max_zxid: prepared.max_zxid,
            snapshot: prepared.snapshot,
            reply: tx,
        })
        .await;
    if sent.is_err() {
        return answer(200, Some(NOT_SERVING), None);
    }
    match tokio::time::timeout(APPLY_WAIT, rx).await {
        Ok(Ok(Ok(zxid))) => {
            tracing::info!(
                zxid = format_args!("{zxid:#x}"),
                nodes = prepared.nodes,
                sessions = prepared.sessions,
                "restore applied"
            );
            answer(200, None, Some(zxid))
        }
        Ok(Ok(Err(e))) if e == "Not authorized" => answer(403, Some(&e), None),
        Ok(Ok(Err(e))) => answer(500, Some(&e), None),
        Ok(Err(_)) | Err(_) => answer(
            500,
            Some(
                "the restore was proposed but this member did not see it apply within 60 s (a \
                 change of leader may have dropped it): its outcome is unknown; read \
                 last_zxid from srvr on any member to tell",
            ),
            None,
        ),
    }
}
