//! The two HTTP endpoints ZooKeeper operators scrape and script against: the Prometheus
//! metrics (`metricsProvider.*`, `metrics.rs`) and the AdminServer (`admin.*`, `admin.rs`).
//!
//! A small HTTP/1.1 responder on tokio instead of hyper or axum: both endpoints answer a GET
//! of a path with one body and close, so a request line and headers read with a size and time
//! bound are all the protocol they need, and the server pulls in no HTTP stack. The one POST,
//! the AdminServer's `restore`, sends its body with a `Content-Length` (`Limits::max_body`
//! bounds it; the metrics endpoint takes none). Each endpoint
//! serves at most 64 connections at once and gives a client 10 s to send its request and 10 s
//! to take the reply (`Limits`). Each request asks the core for the parts of a `ServerView` it
//! prints (`CoreMsg::View`, `fourlw::Parts`), the same data the four-letter words print;
//! file-system and `/proc` facts are read off the core task.

pub mod admin;
pub mod admin_follow;
pub mod admin_restore;
pub mod admin_shed;
pub mod admin_snapshot;
pub mod admin_tls;
pub mod metrics;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, Semaphore};
use tracing::debug;

use self::admin_tls::Transport;
use crate::fourlw::{Parts, ServerView};
use crate::msg::{CoreMsg, ViewReset};

/// The longest request head (request line and headers) accepted.
const MAX_HEAD: usize = 16 * 1024;

/// What one endpoint lets its clients hold. Neither endpoint authenticates anyone, so these are
/// what keeps a client that opens many connections, or sends slowly, or never reads its reply,
/// from using up the process's descriptors and tasks (the client port's among them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once; one more is closed as soon as it is accepted.
    pub max_connections: usize,
    /// How long a client may take to send its request head.
    pub read_timeout: Duration,
    /// How long a client may take to take its reply: one that does not read holds its
    /// connection (and a slot of `max_connections`) until then, not for ever.
    pub write_timeout: Duration,
    /// The largest POST body taken (0: POST is refused). Each MiB of it must arrive within
    /// `read_timeout`.
    pub max_body: usize,
}

impl Limits {
    /// Both endpoints': a scraper or an operator's script needs a few connections, not 64.
    pub const DEFAULT: Limits = Limits {
        max_connections: 64,
        read_timeout: Duration::from_secs(10),
        write_timeout: Duration::from_secs(10),
        max_body: 0,
    };
}

/// A parsed request: what the endpoints route on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// The path without the query string, percent-decoding not applied.
    pub path: String,
    pub query: String,
    /// The header lines, names as sent (look them up with `header`).
    pub headers: Vec<(String, String)>,
    /// The client's address (the AdminServer's `ip` authentication).
    pub remote: Option<SocketAddr>,
    /// A POST's body (empty for GET and HEAD).
    pub body: Vec<u8>,
    /// Whether the request came over TLS (the AdminServer's `admin.forceHttps` or
    /// `admin.portUnification`).
    pub secure: bool,
    /// The certificate chain the TLS client presented (empty without one): the AdminServer's
    /// `x509` authentication.
    pub client_chain: Vec<rustls::pki_types::CertificateDer<'static>>,
}

impl Request {
    /// The first header named `name`, case-insensitively.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A response; sent with `Connection: close`.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    /// Headers beyond the content type, length and `Connection: close`.
    pub headers: Vec<(&'static str, String)>,
    /// A body sent as it comes, after `body`, without a length: the connection's close ends
    /// it (the AdminServer's `follow`). Each piece must be taken within the write timeout.
    pub stream: Option<mpsc::Receiver<Vec<u8>>>,
}

impl Response {
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            content_type,
            body: body.into(),
            headers: Vec::new(),
            stream: None,
        }
    }

    /// A JSON answer as the AdminServer writes it: pretty-printed, ending in a newline.
    pub fn json(status: u16, value: &serde_json::Value) -> Response {
        let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| "{}".into());
        text.push('\n');
        Response::new(status, "application/json", text)
    }

    fn text(status: u16, body: &str) -> Response {
        Response::new(status, "text/plain; charset=utf-8", body)
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
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

/// Serves `handler` on `listener` within `limits`, over `transport`, until the task is aborted.
pub async fn serve<H, F>(listener: TcpListener, limits: Limits, transport: Transport, handler: H)
where
    H: Fn(Request) -> F + Send + Sync + 'static,
    F: Future<Output = Response> + Send + 'static,
{
    let handler = Arc::new(handler);
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    loop {
        let (stream, remote) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                debug!(error = %e, "http accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Over the cap: closed at once (dropped), before anything is read or spawned.
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            debug!(peer = %remote, max = limits.max_connections, "http connection refused: too many open");
            continue;
        };
        let handler = handler.clone();
        let transport = transport.clone();
        tokio::spawn(async move {
            if let Err(e) = accept(stream, remote, limits, transport, &*handler).await {
                debug!(peer = %remote, error = %e, "http connection ended");
            }
            drop(slot);
        });
    }
}

/// Serves one connection over `transport`: a TLS handshake first where it asks for one (within
/// the read timeout, as the request head is).
async fn accept<H, F>(
    stream: TcpStream,
    remote: SocketAddr,
    limits: Limits,
    transport: Transport,
    handler: &H,
) -> std::io::Result<()>
where
    H: Fn(Request) -> F,
    F: Future<Output = Response>,
{
    let config = match transport {
        Transport::Plain => return one(stream, remote, None, limits, handler).await,
        Transport::Tls(config) => config,
        Transport::Unified(config) => {
            let mut first = [0u8; 1];
            let tls = match tokio::time::timeout(limits.read_timeout, stream.peek(&mut first)).await
            {
                Ok(Ok(1)) => first[0] == 0x16,
                Ok(Ok(_)) | Err(_) => return Ok(()),
                Ok(Err(e)) => return Err(e),
            };
            if !tls {
                return one(stream, remote, None, limits, handler).await;
            }
            config
        }
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let tls = match tokio::time::timeout(limits.read_timeout, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            debug!(peer = %remote, error = %e, "AdminServer TLS handshake failed");
            return Ok(());
        }
        Err(_) => return Ok(()),
    };
    let chain = tls
        .get_ref()
        .1
        .peer_certificates()
        .map(<[_]>::to_vec)
        .unwrap_or_default();
    one(tls, remote, Some(chain), limits, handler).await
}

/// Serves one request on `stream`; `tls` is the client's certificate chain when it came over TLS.
async fn one<S, H, F>(
    mut stream: S,
    remote: SocketAddr,
    tls: Option<Vec<rustls::pki_types::CertificateDer<'static>>>,
    limits: Limits,
    handler: &H,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
    H: Fn(Request) -> F,
    F: Future<Output = Response>,
{
    let secure = tls.is_some();
    let (head, early) =
        match tokio::time::timeout(limits.read_timeout, read_head(&mut stream)).await {
            Ok(Ok(Some(head))) => head,
            Ok(Ok(None)) => return Ok(()),
            Ok(Err(e)) => return Err(e),
            Err(_) => return Ok(()),
        };
    let (mut resp, head_only) = match head {
        Head::TooLarge => (Response::text(413, "request head too large\n"), false),
        Head::Complete(text) => match parse_request(&text) {
            Err(why) => (Response::text(400, &format!("{why}\n")), false),
            Ok(mut req) if req.method == "GET" || req.method == "HEAD" => {
                req.remote = Some(remote);
                req.secure = secure;
                req.client_chain = tls.unwrap_or_default();
                let head_only = req.method == "HEAD";
                (handler(req).await, head_only)
            }
            Ok(mut req) if req.method == "POST" && limits.max_body > 0 => {
                match read_body(&mut stream, &req, early, limits).await? {
                    Ok(body) => {
                        req.remote = Some(remote);
                        req.secure = secure;
                        req.client_chain = tls.unwrap_or_default();
                        req.body = body;
                        (handler(req).await, false)
                    }
                    Err(refused) => (refused, false),
                }
            }
            Ok(_) if limits.max_body > 0 => (
                Response::text(405, "only GET, HEAD and POST are served\n"),
                false,
            ),
            Ok(_) => (Response::text(405, "only GET and HEAD are served\n"), false),
        },
    };
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\n",
        resp.status,
        reason(resp.status),
        resp.content_type,
    );
    if resp.stream.is_none() || head_only {
        out.push_str(&format!("Content-Length: {}\r\n", resp.body.len()));
    }
    out.push_str("Connection: close\r\n");
    if resp.status == 405 {
        out.push_str(if limits.max_body > 0 {
            "Allow: GET, HEAD, POST\r\n"
        } else {
            "Allow: GET, HEAD\r\n"
        });
    }
    for (k, v) in &resp.headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    if secure {
        out.push_str(&format!(
            "Strict-Transport-Security: {}\r\n",
            admin_tls::STS
        ));
    }
    out.push_str("\r\n");
    let head = out.into_bytes();
    let body: &[u8] = if head_only { &[] } else { &resp.body };
    // The bound is on progress: each MiB must be taken within the write timeout, so a large
    // body (a snapshot) read at a steady pace is not cut, and a client that stops reading is.
    // The head and the body go out as they are: copying a 200 MB snapshot into one buffer took
    // a runtime worker, which the core may be waiting for, for tens of milliseconds.
    let late = || {
        std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "the client did not take its reply in time",
        )
    };
    for chunk in std::iter::once(&head[..]).chain(body.chunks(1 << 20)) {
        tokio::time::timeout(limits.write_timeout, stream.write_all(chunk))
            .await
            .map_err(|_| late())??;
    }
    if let Some(mut rx) = resp.stream.take().filter(|_| !head_only) {
        while let Some(piece) = rx.recv().await {
            tokio::time::timeout(limits.write_timeout, stream.write_all(&piece))
                .await
                .map_err(|_| late())??;
        }
    }
    if resp.body.len() > 8 << 20 {
        // Unmapping a large body takes milliseconds too: not on a runtime worker.
        let body = std::mem::take(&mut resp.body);
        tokio::task::spawn_blocking(move || drop(body));
    }
    tokio::time::timeout(limits.write_timeout, stream.shutdown())
        .await
        .map_err(|_| late())?
}

enum Head {
    Complete(String),
    TooLarge,
}

/// A POST's body: `Content-Length` bytes, the first of them `early` (read with the head). A
/// missing or too large length is refused with the response to send; a client that stops
/// sending mid-body (no MiB within the read timeout) or closes ends the connection.
async fn read_body<S: AsyncRead + Unpin>(
    stream: &mut S,
    req: &Request,
    early: Vec<u8>,
    limits: Limits,
) -> std::io::Result<Result<Vec<u8>, Response>> {
    if req
        .header("Transfer-Encoding")
        .is_some_and(|v| !v.eq_ignore_ascii_case("identity"))
    {
        return Ok(Err(Response::text(
            411,
            "send the body with a Content-Length, not chunked\n",
        )));
    }
    let Some(len) = req
        .header("Content-Length")
        .and_then(|v| v.trim().parse::<usize>().ok())
    else {
        return Ok(Err(Response::text(411, "a POST needs a Content-Length\n")));
    };
    if len > limits.max_body {
        return Ok(Err(Response::text(
            413,
            &format!(
                "the body of {len} bytes is larger than the {} bytes taken\n",
                limits.max_body
            ),
        )));
    }
    let mut body = early;
    if body.len() > len {
        body.truncate(len);
    }
    body.reserve_exact(len - body.len());
    let mut chunk = vec![0u8; 1 << 16];
    while body.len() < len {
        let want = (len - body.len()).min(chunk.len());
        let step = async {
            let mut got = 0;
            // Progress bound: a MiB (or the rest) within the read timeout.
            let goal = (len - body.len()).min(1 << 20);
            while got < goal {
                let n = stream.read(&mut chunk[..want.min(goal - got)]).await?;
                if n == 0 {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the client closed before its body ended",
                    ));
                }
                body.extend_from_slice(&chunk[..n]);
                got += n;
            }
            Ok::<(), std::io::Error>(())
        };
        tokio::time::timeout(limits.read_timeout, step)
            .await
            .map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the client did not send its body in time",
                )
            })??;
    }
    Ok(Ok(body))
}

/// Reads up to the blank line that ends the head; `None` if the peer closed before sending one.
/// With the head, the bytes read past it (the start of a POST's body).
async fn read_head<S: AsyncRead + Unpin>(
    stream: &mut S,
) -> std::io::Result<Option<(Head, Vec<u8>)>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some((end, body_at)) = find_end(&buf) {
            let early = buf.split_off(body_at);
            buf.truncate(end);
            return Ok(Some((
                Head::Complete(String::from_utf8_lossy(&buf).into_owned()),
                early,
            )));
        }
        if buf.len() > MAX_HEAD {
            return Ok(Some((Head::TooLarge, Vec::new())));
        }
    }
}

/// Where the head ends, and where the body starts.
fn find_end(buf: &[u8]) -> Option<(usize, usize)> {
    buf.windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| (p, p + 4))
        .or_else(|| {
            buf.windows(2)
                .position(|w| w == b"\n\n")
                .map(|p| (p, p + 2))
        })
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
    let headers = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    Ok(Request {
        method: method.to_string(),
        path: path.to_string(),
        query: query.to_string(),
        headers,
        remote: None,
        body: Vec::new(),
        secure: false,
        client_chain: Vec::new(),
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
        eps.tasks.push(tokio::spawn(serve(
            listener,
            Limits::DEFAULT,
            Transport::Plain,
            move |req| {
                let core = core.clone();
                async move { metrics_route(req, &core).await }
            },
        )));
    }
    if cfg.admin.enabled {
        let bind = SocketAddr::new(cfg.admin.address, cfg.admin.port);
        // The stores are read before the port is bound: one that does not load refuses the start.
        let transport = admin_tls::transport(cfg).map_err(anyhow::Error::msg)?;
        match TcpListener::bind(bind).await {
            Ok(listener) => {
                let addr = listener.local_addr()?;
                let https = match &transport {
                    Transport::Plain => "no",
                    Transport::Tls(_) => "only",
                    Transport::Unified(_) => "and http",
                };
                tracing::info!(
                    %addr, url = %cfg.admin.command_url, https,
                    need_client_auth = cfg.admin.need_client_auth,
                    "AdminServer started"
                );
                eps.admin_addr = Some(addr);
                let cfg = cfg.clone();
                let limiters = AdminLimiters {
                    snapshot: admin_snapshot::Limiter::new(cfg.admin.rate_limiter_interval_ms),
                    restore: admin_snapshot::Limiter::new(cfg.admin.rate_limiter_interval_ms),
                };
                let limits = Limits {
                    max_body: admin_restore::MAX_BODY,
                    ..Limits::DEFAULT
                };
                eps.tasks.push(tokio::spawn(serve(
                    listener,
                    limits,
                    transport,
                    move |req| {
                        let core = core.clone();
                        let cfg = cfg.clone();
                        let limiters = limiters.clone();
                        async move { admin_route(req, &core, &cfg, &limiters).await }
                    },
                )));
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

/// One rate limiter per command that has one, as ZooKeeper's.
#[derive(Clone)]
struct AdminLimiters {
    snapshot: admin_snapshot::Limiter,
    restore: admin_snapshot::Limiter,
}

async fn admin_route(
    req: Request,
    core: &mpsc::Sender<CoreMsg>,
    cfg: &Arc<crate::config::Config>,
    limiters: &AdminLimiters,
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
    if name == "follow" && req.method != "POST" {
        return admin_follow::handle(&req, core, cfg).await;
    }
    let json = match admin::resolve(name) {
        Some("snapshot") => {
            return admin_snapshot::handle(&req, core, cfg, &limiters.snapshot).await
        }
        Some("restore") => return admin_restore::handle(&req, core, cfg, &limiters.restore).await,
        Some("shed_connections") => return admin_shed::handle(&req, core, cfg).await,
        // Every other command is a GET; a POST to one is refused, not run.
        Some(_) | None if req.method == "POST" => {
            return Response::text(405, "only restore and shed_connections take a POST\n")
        }
        None => admin::unknown(name),
        Some("set_trace_mask") => match admin::trace_mask_arg(&req.query) {
            Err(e) => admin::with_error("set_trace_mask", e),
            Ok(mask) => {
                let v = view(core, ViewReset::TraceMask(mask), Parts::NONE).await;
                admin::answer("set_trace_mask", v.as_ref(), cfg)
            }
        },
        Some(command) => {
            let v = match admin::parts_of(command) {
                Some(parts) => view(core, admin::reset_of(command), parts).await,
                None => None,
            };
            admin::answer(command, v.as_ref(), cfg)
        }
    };
    Response::json(200, &json)
}
