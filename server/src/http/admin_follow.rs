//! The AdminServer's `follow` (paddock's own, not ZooKeeper's): `GET <commandURL>/follow
//! [?after=<zxid>]`, authenticated and authorized as `snapshot` is (every permission on `/`),
//! streams this member's committed transactions as they apply, in ZooKeeper's log record
//! format, for `paddock backup --follow` (`backup_follow.rs`). The body, until either side
//! closes, is a sequence of frames:
//!
//! ```text
//! frame = u8 kind, i64 zxid, u64 len, len bytes      (big-endian)
//!   'S'  a ZooKeeper snapshot whose last processed zxid is `zxid` (the file ZooKeeper loads as
//!        version-2/snapshot.<zxid>); the records that follow continue right after it
//!   'T'  one transaction at `zxid`: TxnHeader and body, as a log record holds them
//!        (`zk_format::txnlog::frame_record` makes the record of it)
//!   'H'  nothing new; the member has applied up to `zxid` (every 2 s while idle)
//! ```
//!
//! With `after` the follower holds everything up to that zxid: if the member's follow log
//! (`core/follow.rs`) still has every record after it, the stream starts with them; otherwise,
//! and without `after`, with a snapshot. A follower that falls behind the log, or reaches a
//! restore or a snapshot this member installed from its leader, gets a new snapshot in the
//! same stream. The core never waits on a stream: a stream that stops reading holds only
//! its own task, and the connection closes after the write timeout.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::admin_snapshot::{caller, NOT_SERVING};
use super::{Request, Response};
use crate::config::Config;
use crate::core::follow::{FollowLog, Item, Next, Start};
use crate::msg::CoreMsg;

/// The most record bytes sent in one write.
const BATCH_BYTES: usize = 1 << 20;
/// How long an idle stream waits before a heartbeat.
const HEARTBEAT: Duration = Duration::from_secs(2);

/// A frame's head: kind, zxid, length.
pub fn frame_head(kind: u8, zxid: i64, len: u64) -> [u8; 17] {
    let mut h = [0u8; 17];
    h[0] = kind;
    h[1..9].copy_from_slice(&zxid.to_be_bytes());
    h[9..17].copy_from_slice(&len.to_be_bytes());
    h
}

fn answer(status: u16, error: &str) -> Response {
    let body = serde_json::json!({ "command": "follow", "error": error });
    Response::json(status, &body)
}

fn parse_zxid(v: &str) -> Option<i64> {
    match v.strip_prefix("0x") {
        Some(h) => i64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

/// `GET .../follow`.
pub async fn handle(req: &Request, core: &mpsc::Sender<CoreMsg>, cfg: &Arc<Config>) -> Response {
    let ids = match caller(req, cfg) {
        Ok(ids) => ids,
        Err((status, why)) => return answer(status, why),
    };
    let after = match req
        .query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == "after")
    {
        None => None,
        Some((_, v)) => match parse_zxid(v) {
            Some(z) => Some(z),
            None => return answer(400, "after= takes a zxid (0x<hex> or decimal)"),
        },
    };
    if !cfg.admin.snapshot_enabled {
        return answer(503, "follow sends snapshots: admin.snapshot.enabled=false");
    }
    let Some(start) = ask(core, ids.clone(), after).await else {
        return answer(200, NOT_SERVING);
    };
    let (log, first) = match start {
        Start::Denied => return answer(403, "Not authorized"),
        Start::Continue(log) => (log, None),
        Start::Snapshot(log, view) => (log, Some(view)),
    };
    let (tx, rx) = mpsc::channel(8);
    let core = core.clone();
    tokio::spawn(async move {
        if let Err(why) = stream(core, ids, log, after, first, tx).await {
            tracing::info!("a follow stream ended: {why}");
        }
    });
    let mut resp = Response::new(200, "application/octet-stream", Vec::new());
    resp.stream = Some(rx);
    resp
}

async fn ask(
    core: &mpsc::Sender<CoreMsg>,
    auth: Vec<wire::Id>,
    after: Option<i64>,
) -> Option<Start> {
    let (tx, rx) = oneshot::channel();
    core.send(CoreMsg::Follow {
        auth,
        after,
        reply: tx,
    })
    .await
    .ok()?;
    rx.await.ok()
}

/// Encodes `view` as a ZooKeeper snapshot off the runtime, at idle priority as the `snapshot`
/// command does; the 'S' frame.
async fn snapshot_frame(view: znode_tree::SnapshotView) -> Result<(i64, Vec<u8>), String> {
    let (done_tx, done_rx) = oneshot::channel();
    std::thread::Builder::new()
        .name("zk-follow-snapshot".into())
        .spawn(move || {
            consensus::background::lower_current_thread_priority();
            let bytes = crate::zk_export::zk_snapshot(&view);
            let zxid = view.last_zxid();
            drop(view);
            let mut frame = Vec::with_capacity(bytes.len() + 17);
            frame.extend_from_slice(&frame_head(b'S', zxid, bytes.len() as u64));
            frame.extend_from_slice(&bytes);
            let _ = done_tx.send((zxid, frame));
        })
        .map_err(|e| format!("no thread to encode a snapshot: {e}"))?;
    done_rx
        .await
        .map_err(|_| "the snapshot encoder stopped".to_string())
}

async fn stream(
    core: mpsc::Sender<CoreMsg>,
    auth: Vec<wire::Id>,
    log: Arc<FollowLog>,
    after: Option<i64>,
    mut first: Option<znode_tree::SnapshotView>,
    tx: mpsc::Sender<Vec<u8>>,
) -> Result<(), String> {
    let gone = |_| "the follower went away".to_string();
    let mut tick = log.subscribe();
    let mut cursor = after.unwrap_or(i64::MIN);
    let mut just_sent_snapshot = false;
    loop {
        if let Some(view) = first.take() {
            if just_sent_snapshot {
                // The ring moved past a snapshot before the stream read a record after it.
                return Err("the follow log moves faster than snapshots stream".into());
            }
            just_sent_snapshot = true;
            let (zxid, frame) = snapshot_frame(view).await?;
            tracing::info!(
                zxid = format_args!("{zxid:#x}"),
                bytes = frame.len(),
                "follow: a snapshot sent"
            );
            tx.send(frame).await.map_err(gone)?;
            cursor = zxid;
        }
        match log.next(cursor, BATCH_BYTES) {
            Next::Items(items) => {
                just_sent_snapshot = false;
                let mut out = Vec::new();
                for item in items {
                    match item {
                        Item::Txn { zxid, bytes } => {
                            out.extend_from_slice(&frame_head(b'T', zxid, bytes.len() as u64));
                            out.extend_from_slice(&bytes);
                            cursor = zxid;
                        }
                        Item::Reset { .. } => {
                            // A restore, or a snapshot from the leader: a new snapshot.
                            first = Some(new_snapshot(&core, &auth).await?);
                        }
                    }
                }
                if !out.is_empty() {
                    tx.send(out).await.map_err(gone)?;
                }
            }
            Next::Behind => {
                tracing::info!(
                    cursor = format_args!("{cursor:#x}"),
                    "follow: the follower fell behind the follow log; a new snapshot"
                );
                first = Some(new_snapshot(&core, &auth).await?);
            }
            Next::Idle(at) => {
                just_sent_snapshot = false;
                tokio::select! {
                    changed = tick.changed() => changed.map_err(|_| "the core stopped".to_string())?,
                    _ = tokio::time::sleep(HEARTBEAT) => {
                        tx.send(frame_head(b'H', at, 0).to_vec()).await.map_err(gone)?;
                    }
                    _ = tx.closed() => return Err("the follower went away".into()),
                }
            }
        }
    }
}

/// A view for a snapshot, asked of the core (which also rechecks the permission).
async fn new_snapshot(
    core: &mpsc::Sender<CoreMsg>,
    auth: &[wire::Id],
) -> Result<znode_tree::SnapshotView, String> {
    // `after: None`: the core's answer is a snapshot whatever the ring holds.
    match ask(core, auth.to_vec(), None).await {
        Some(Start::Snapshot(_, view)) => Ok(view),
        Some(Start::Denied) => Err("the follower's ids lost a permission on /".into()),
        Some(Start::Continue(_)) | None => Err("the core stopped".into()),
    }
}
