//! The AdminServer's `snapshot` command, as ZooKeeper 3.9's `Commands.SnapshotCommand` answers
//! it: `GET <commandURL>/snapshot[?streaming=true|false]` with `Authorization: <scheme> <auth>`
//! (`digest user:password`, `ip`, or `x509` with the HTTPS client's certificate, `admin_tls.rs`),
//! the caller holding every permission on `/`, each bit checked alone. The body is a ZooKeeper
//! snapshot of the state as of one moment (`zk_export::zk_snapshot`) that ZooKeeper 3.9 loads
//! as `version-2/snapshot.<zxid>` or through its `restore` command; the headers `last_zxid`
//! (`0x<hex>`) and `snapshot_size` say what it is. `admin.snapshot.enabled=false` answers 503,
//! more than one call per `admin.rateLimiterIntervalInMS` answers 429.
//!
//! The core only checks the ACL and takes an O(1) view of the tree (`core/export.rs`); the
//! encoding runs on its own thread at idle priority (`consensus::background`), as the raft
//! snapshots' does, so clients' requests do not wait for it. The view is dropped at normal
//! priority afterwards: dropping it frees the nodes written since, under the allocator lock
//! (compat-tests/faults/BUGS.md P10).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::{mpsc, oneshot};
use wire::Id;

use super::{Request, Response};
use crate::config::Config;
use crate::msg::CoreMsg;

/// One `snapshot` per interval (ZooKeeper's `RateLimiter` with one permit).
#[derive(Clone)]
pub struct Limiter {
    last: Arc<Mutex<Option<Instant>>>,
    every: Duration,
}

impl Limiter {
    pub fn new(interval_ms: u64) -> Limiter {
        Limiter {
            last: Arc::new(Mutex::new(None)),
            every: Duration::from_millis(interval_ms),
        }
    }

    pub fn allow(&self) -> bool {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        match *last {
            Some(t) if now.duration_since(t) < self.every => false,
            _ => {
                *last = Some(now);
                true
            }
        }
    }
}

fn json_answer(status: u16, error: Option<&str>) -> Response {
    let body = json!({ "command": "snapshot", "error": error });
    Response::json(status, &body)
}

/// ZooKeeper's answer while the member is not serving (stopping, or its core gone).
pub const NOT_SERVING: &str = "This ZooKeeper instance is not currently serving requests";

/// Why an admin command was refused before it ran: the HTTP status and ZooKeeper's error text.
pub type Refusal = (u16, &'static str);

/// The caller's ids from the request's `Authorization` header, as `Commands.handleAuthentication`
/// takes them: 401 when the header is missing or does not authenticate.
pub fn caller(req: &Request, cfg: &Config) -> Result<Vec<Id>, Refusal> {
    let Some(value) = req.header("Authorization") else {
        return Err((401, "Auth info is missing for the command"));
    };
    authenticate(value, req, cfg).ok_or((401, "Not authenticated"))
}

/// The caller's ids once the core has found them holding every permission on `/` (`restore` and
/// `shed_connections`; `snapshot` and `follow` have the core check the same rule as it takes its
/// view): 403 when they do not, 200 with [`NOT_SERVING`] when the core cannot answer.
pub async fn admin_caller(
    req: &Request,
    core: &mpsc::Sender<CoreMsg>,
    cfg: &Config,
) -> Result<Vec<Id>, Refusal> {
    let ids = caller(req, cfg)?;
    let (tx, rx) = oneshot::channel();
    let asked = core.send(CoreMsg::AdminAllowed {
        auth: ids.clone(),
        reply: tx,
    });
    match (asked.await, rx.await) {
        (Ok(()), Ok(true)) => Ok(ids),
        (Ok(()), Ok(false)) => Err((403, "Not authorized")),
        _ => Err((200, NOT_SERVING)),
    }
}

/// The ids an `Authorization` value authenticates (`Commands.handleAuthentication`): the
/// scheme, a space, and the scheme's credentials; `ip` takes the client's address.
pub fn authenticate(value: &str, req: &Request, cfg: &Config) -> Option<Vec<Id>> {
    let parts: Vec<&str> = value.split(' ').collect();
    if parts.is_empty() || parts.len() > 2 {
        return None;
    }
    match parts[0] {
        "ip" => req.remote.map(|a| vec![Id::new("ip", &a.ip().to_string())]),
        "digest" => {
            let auth = parts.get(1)?;
            znode_tree::acl::authenticate("digest", auth.as_bytes(), cfg.super_digest.as_deref())
                .ok()
                .filter(|ids| !ids.is_empty())
        }
        "x509" => x509_ids(req, cfg),
        _ => None,
    }
}

/// `x509`, as ZooKeeper's X509AuthenticationProvider takes an HTTP request: the chain the HTTPS
/// client presented, verified against the client port's trust store (`ssl.trustStore`, the
/// provider's), gives `x509:<subject>`. Only where the provider exists (`secureClientPort` or its
/// `authProvider` line); never over plain HTTP, which carries no certificate.
fn x509_ids(req: &Request, cfg: &Config) -> Option<Vec<Id>> {
    use rustls::pki_types::UnixTime;
    use rustls::server::WebPkiClientVerifier;
    if !cfg.client_tls.x509_available() {
        return None;
    }
    let (leaf, intermediates) = req.client_chain.split_first()?;
    let settings =
        crate::tls::TlsSettings::from_keys("ssl.", |k| cfg.client_tls.ssl_keys.get(k).cloned())
            .ok()?;
    let mut roots = rustls::RootCertStore::empty();
    for ca in crate::tls::load_trust_store(settings.trust_store.as_ref()?).ok()? {
        roots.add(ca).ok()?;
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .ok()?;
    verifier
        .verify_client_cert(leaf, intermediates, UnixTime::now())
        .ok()?;
    let subject = crate::tls::rfc2253_name(leaf).ok()?;
    Some(vec![Id::new("x509", &subject)])
}

/// `GET .../snapshot`.
pub async fn handle(
    req: &Request,
    core: &mpsc::Sender<CoreMsg>,
    cfg: &Arc<Config>,
    limiter: &Limiter,
) -> Response {
    let ids = match caller(req, cfg) {
        Ok(ids) => ids,
        Err((status, why)) => return json_answer(status, Some(why)),
    };
    let (tx, rx) = oneshot::channel();
    if core
        .send(CoreMsg::ZkSnapshot {
            auth: ids,
            reply: tx,
        })
        .await
        .is_err()
    {
        return json_answer(200, Some(NOT_SERVING));
    }
    let view = match rx.await {
        Ok(Some(v)) => v,
        Ok(None) => return json_answer(403, Some("Not authorized")),
        Err(_) => return json_answer(200, Some(NOT_SERVING)),
    };
    if !cfg.admin.snapshot_enabled {
        tracing::warn!("snapshot command is disabled (admin.snapshot.enabled=false)");
        return json_answer(503, None);
    }
    if !limiter.allow() {
        tracing::warn!("snapshot request was rate limited");
        return json_answer(429, None);
    }
    let streaming = req
        .query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == "streaming")
        .is_none_or(|(_, v)| v.eq_ignore_ascii_case("true"));
    let started = Instant::now();
    let (done_tx, done_rx) = oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("zk-snapshot-encode".into())
        .spawn(move || {
            consensus::background::lower_current_thread_priority();
            let bytes = crate::zk_export::zk_snapshot(&view);
            let _ = done_tx.send((bytes, view));
        });
    if spawned.is_err() {
        return json_answer(500, None);
    }
    let Ok((bytes, view)) = done_rx.await else {
        return json_answer(500, None);
    };
    let last_zxid = view.last_zxid();
    let nodes = view.node_count();
    tokio::task::spawn_blocking(move || drop(view));
    tracing::info!(
        last_zxid = format_args!("{last_zxid:#x}"),
        nodes,
        bytes = bytes.len(),
        took_ms = started.elapsed().as_millis() as u64,
        streaming,
        "snapshot taken for the AdminServer"
    );
    let headers = vec![
        ("last_zxid", format!("0x{last_zxid:x}")),
        ("snapshot_size", bytes.len().to_string()),
    ];
    let mut resp = if streaming {
        Response::new(200, "application/octet-stream", bytes)
    } else {
        json_answer(200, None)
    };
    resp.headers = headers;
    resp
}
