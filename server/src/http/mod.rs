//! The two HTTP endpoints ZooKeeper operators scrape and script against: the Prometheus
//! metrics (`metricsProvider.*`, `metrics.rs`) and the AdminServer (`admin.*`, `admin.rs`).
//!
//! A small HTTP/1.1 responder on tokio instead of hyper or axum: both endpoints answer a GET
//! of a path with one body and close, so a request line and headers read with a size and time
//! bound are all the protocol they need, and the server pulls in no HTTP stack. Each request
//! asks the core for a `ServerView` (`CoreMsg::View`), the same data the four-letter words
//! print; file-system and `/proc` facts are read off the core task.

pub mod admin;
pub mod metrics;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tracing::debug;

use crate::fourlw::{Parts, ServerView};
use crate::msg::{CoreMsg, ViewReset};

/// The longest request head (request line and headers) accepted.
const MAX_HEAD: usize = 16 * 1024;
/// How long a client may take to send its request head.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A parsed request: what the endpoints route on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// The path without the query string, percent-decoding not applied.
    pub path: String,
    pub query: String,
}

/// A response; sent with `Connection: close`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Response {
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            content_type,
            body: body.into(),
        }
    }

    fn text(status: u16, body: &str) -> Response {
        Response::new(status, "text/plain; charset=utf-8", body)
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// Asks the core for a view holding `parts`; `None` when the core has stopped.
pub async fn view(
    core: &mpsc::Sender<CoreMsg>,
    reset: ViewReset,
    parts: Parts,
) -> Option<ServerView> {
    let (tx, rx) = oneshot::channel();
    core.send(CoreMsg::View {
        reset,
        parts,
        reply: tx,
    })
    .await
    .ok()?;
    rx.await.ok()
}

/// Serves `handler` on `listener` until the task is aborted.
pub async fn serve<H, F>(listener: TcpListener, handler: H)
where
    H: Fn(Request) -> F + Send + Sync + 'static,
    F: Future<Output = Response> + Send + 'static,
{
    let handler = Arc::new(handler);
    loop {
        let (stream, remote) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                debug!(error = %e, "http accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let handler = handler.clone();
        tokio::spawn(async move {
            if let Err(e) = one(stream, remote, &*handler).await {
                debug!(peer = %remote, error = %e, "http connection ended");
            }
        });
    }
}

async fn one<H, F>(mut stream: TcpStream, _remote: SocketAddr, handler: &H) -> std::io::Result<()>
where
    H: Fn(Request) -> F,
    F: Future<Output = Response>,
{
    let head = match tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream)).await {
        Ok(Ok(Some(head))) => head,
        Ok(Ok(None)) => return Ok(()),
        Ok(Err(e)) => return Err(e),
        Err(_) => return Ok(()),
    };
    let (resp, head_only) = match head {
        Head::TooLarge => (Response::text(413, "request head too large\n"), false),
        Head::Complete(text) => match parse_request(&text) {
            Err(why) => (Response::text(400, &format!("{why}\n")), false),
            Ok(req) if req.method == "GET" || req.method == "HEAD" => {
                let head_only = req.method == "HEAD";
                (handler(req).await, head_only)
            }
            Ok(_) => (Response::text(405, "only GET and HEAD are served\n"), false),
        },
    };
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        resp.status,
        reason(resp.status),
        resp.content_type,
        resp.body.len()
    );
    if resp.status == 405 {
        out.push_str("Allow: GET, HEAD\r\n");
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    if !head_only {
        bytes.extend_from_slice(&resp.body);
    }
    stream.write_all(&bytes).await?;
    stream.shutdown().await
}

enum Head {
    Complete(String),
    TooLarge,
}

/// Reads up to the blank line that ends the head; `None` if the peer closed before sending one.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<Head>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = find_end(&buf) {
            buf.truncate(end);
            return Ok(Some(Head::Complete(
                String::from_utf8_lossy(&buf).into_owned(),
            )));
        }
        if buf.len() > MAX_HEAD {
            return Ok(Some(Head::TooLarge));
        }
    }
}

fn find_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4)
        .position(|w| w == b"\r\n\r\n")
        .or_else(|| buf.windows(2).position(|w| w == b"\n\n"))
}

/// Parses the request line of `head` (`GET /path?query HTTP/1.1`).
pub fn parse_request(head: &str) -> Result<Request, String> {
    let line = head.lines().next().unwrap_or("");
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("malformed request line {line:?}"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("unsupported protocol {version:?}"));
    }
    if !target.starts_with('/') {
        return Err(format!("unsupported request target {target:?}"));
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    Ok(Request {
        method: method.to_string(),
        path: path.to_string(),
        query: query.to_string(),
    })
}

/// Starts the AdminServer and the metrics endpoint the config asks for. A port the AdminServer
/// cannot bind is logged and skipped, as ZooKeeper does; the metrics port is required (ZooKeeper
/// fails to start without it).
pub async fn start(
    cfg: &Arc<crate::config::Config>,
    core: mpsc::Sender<CoreMsg>,
) -> anyhow::Result<Endpoints> {
    use anyhow::Context;
    let mut eps = Endpoints::default();
    if let Some(m) = &cfg.metrics {
        let bind = SocketAddr::new(m.host, m.port);
        let listener = TcpListener::bind(bind)
            .await
            .with_context(|| format!("binding metricsProvider.httpPort {bind}"))?;
        let addr = listener.local_addr()?;
        tracing::info!(%addr, "serving Prometheus metrics on /metrics");
        let core = core.clone();
        eps.metrics_addr = Some(addr);
        eps.tasks.push(tokio::spawn(serve(listener, move |req| {
            let core = core.clone();
            async move { metrics_route(req, &core).await }
        })));
    }
    if cfg.admin.enabled {
        let bind = SocketAddr::new(cfg.admin.address, cfg.admin.port);
        match TcpListener::bind(bind).await {
            Ok(listener) => {
                let addr = listener.local_addr()?;
                tracing::info!(%addr, url = %cfg.admin.command_url, "AdminServer started");
                eps.admin_addr = Some(addr);
                let cfg = cfg.clone();
                eps.tasks.push(tokio::spawn(serve(listener, move |req| {
                    let core = core.clone();
                    let cfg = cfg.clone();
                    async move { admin_route(req, &core, &cfg).await }
                })));
            }
            Err(e) => tracing::warn!(
                %bind, error = %e,
                "AdminServer not started (admin.enableServer=false turns it off; admin.serverPort moves it)"
            ),
        }
    }
    Ok(eps)
}

/// The running endpoints.
#[derive(Debug, Default)]
pub struct Endpoints {
    pub admin_addr: Option<SocketAddr>,
    pub metrics_addr: Option<SocketAddr>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Endpoints {
    pub fn stop(&self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

async fn metrics_route(req: Request, core: &mpsc::Sender<CoreMsg>) -> Response {
    if req.path != "/metrics" && req.path != "/" {
        return Response::text(404, "not found: metrics are on /metrics\n");
    }
    match view(core, ViewReset::Nothing, metrics::PARTS).await {
        Some(v) => Response::new(200, metrics::CONTENT_TYPE, metrics::render(&v)),
        None => Response::text(503, "the server is stopping\n"),
    }
}

async fn admin_route(
    req: Request,
    core: &mpsc::Sender<CoreMsg>,
    cfg: &crate::config::Config,
) -> Response {
    let base = cfg.admin.command_url.as_str();
    let rest = req.path.strip_prefix(base);
    let name = match rest {
        Some("") | Some("/") => {
            return Response::new(200, "text/html", admin::list_page(base));
        }
        Some(r) if r.starts_with('/') => r[1..].trim_end_matches('/'),
        _ => return Response::text(404, &format!("not found: commands are under {base}\n")),
    };
    let json = match admin::resolve(name) {
        None => admin::unknown(name),
        Some(command) => {
            let v = match admin::parts_of(command) {
                Some(parts) => view(core, admin::reset_of(command), parts).await,
                None => None,
            };
            let cfg = Arc::new(cfg.clone());
            admin::answer(command, v.as_ref(), &cfg)
        }
    };
    let mut body = serde_json::to_string_pretty(&json).unwrap_or_else(|_| "{}".into());
    body.push('\n');
    Response::new(200, "application/json", body)
}
