//! Shared test fixtures: an in-process paddock on port 0 with its own data directory, and a
//! raw protocol client for the cases a well-behaved client library will not produce.

#![allow(dead_code)]

pub mod ensemble;
pub mod process;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use paddock::config::Config;
use paddock::startup::Server;
use wire::{
    ConnectRequest, ConnectResponse, Reader, Record, ReplyHeader, Request, RequestHeader, Writer,
};

/// A config for tests: loopback, port 0, short ticks so that sessions expire quickly.
pub fn test_config(dir: &Path) -> Config {
    let mut cfg = Config::embedded_default();
    cfg.client_port = 0;
    cfg.data_dir = dir.to_path_buf();
    cfg.tick_time_ms = 100;
    cfg.min_session_timeout_ms = 200;
    cfg.max_session_timeout_ms = 60_000;
    cfg.extended_types_enabled = true;
    cfg.container_check_interval_ms = 200;
    // A free port per server, so parallel tests do not contend for 8080.
    cfg.admin.port = 0;
    cfg
}

/// `count` consecutive ports for servers a test starts a moment later, none of them handed out
/// before in this process and each free now.
///
/// Not `bind("127.0.0.1:0")`: that hands out a port from the ephemeral range, which the OS may give
/// again to the next such call (two members of one ensemble got the same peer port) or to any
/// outgoing connection (the tests' own clients and four-letter probes) between the moment it is
/// picked and the moment the server binds it ("Address already in use"). These ports are below the
/// ephemeral range (`ip_local_port_range` starts at 32768), so no connect takes them, and a
/// per-process counter keeps the tests of one binary, running in parallel, from sharing them. The
/// start depends on the process id, so that test binaries running at the same time mostly differ.
pub fn reserve_ports(count: u16) -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::OnceLock;
    const LOW: u32 = 10_000;
    const HIGH: u32 = 32_000;
    static NEXT: OnceLock<AtomicU32> = OnceLock::new();
    let next =
        NEXT.get_or_init(|| AtomicU32::new(std::process::id().wrapping_mul(7919) % (HIGH - LOW)));
    let count = u32::from(count.max(1));
    for _ in 0..(HIGH - LOW) {
        let at = LOW + next.fetch_add(count, Ordering::Relaxed) % (HIGH - LOW - count);
        let free =
            (at..at + count).all(|p| std::net::TcpListener::bind(("0.0.0.0", p as u16)).is_ok());
        if free {
            return at as u16;
        }
    }
    panic!("no {count} free ports in {LOW}..{HIGH}");
}

pub async fn start(dir: &Path) -> Server {
    Server::start(test_config(dir))
        .await
        .expect("server starts")
}

pub async fn start_with(cfg: Config) -> Server {
    Server::start(cfg).await.expect("server starts")
}

/// A standalone server whose every clock is the runtime's (`Server::start_stepped`), for tests on
/// paused time (`#[tokio::test(start_paused = true)]` with `hold_clock`): its sessions, sweeps and
/// checkpoint then run on the test's clock.
pub async fn start_stepped(dir: &Path) -> Server {
    Server::start_stepped(test_config(dir))
        .await
        .expect("server starts")
}

/// Keeps paused time still except when the test advances it (`tokio::time::advance`), for as long
/// as it lives.
///
/// Paused, tokio moves its clock to the next timer whenever the runtime has nothing to run, and
/// waiting for a socket counts: readiness found while parked does not stop the jump. So every
/// round trip between a client and the server would add up to a core tick of virtual time, a
/// different amount each run. A running blocking task holds that auto-advance off (tokio's
/// documented way, `time::pause`, "Preventing auto-advance"): sockets are then waited for in real
/// time while the clock stands, and the test alone says when time passes.
pub struct HeldClock {
    _release: std::sync::mpsc::Sender<()>,
}

pub fn hold_clock() -> HeldClock {
    let (release, held) = std::sync::mpsc::channel::<()>();
    tokio::task::spawn_blocking(move || {
        let _ = held.recv();
    });
    HeldClock { _release: release }
}

/// With the clock held: advances it `step` at a time until `done` (a request through the server,
/// so that it has answered everything the last step set off) says so, and returns how much
/// virtual time that took. The answer may come a step late: a request and a timer can wake the
/// core in the same turn, and it takes its inbox before its ticker.
pub async fn advance_until<F, Fut>(step: Duration, limit: Duration, mut done: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = tokio::time::Instant::now();
    loop {
        if done().await {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < limit,
            "still not done after {limit:?} of virtual time"
        );
        tokio::time::advance(step).await;
    }
}

pub async fn client(addr: SocketAddr) -> zookeeper_client::Client {
    zookeeper_client::Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(&addr.to_string())
        .await
        .expect("client connects")
}

/// Speaks the protocol frame by frame.
pub struct RawClient {
    pub stream: TcpStream,
    pub session_id: i64,
    pub passwd: Vec<u8>,
    pub timeout: i32,
}

impl RawClient {
    pub async fn connect(addr: SocketAddr, timeout_ms: i32) -> RawClient {
        Self::connect_with(
            addr,
            ConnectRequest {
                timeout: timeout_ms,
                passwd: Some(vec![0; 16]),
                read_only: Some(false),
                ..Default::default()
            },
        )
        .await
        .1
        .expect("session established")
    }

    /// Sends a ConnectRequest; returns the response (if any) and the client when established.
    pub async fn connect_with(
        addr: SocketAddr,
        req: ConnectRequest,
    ) -> (Option<ConnectResponse>, Option<RawClient>) {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let mut w = Writer::new();
        let at = w.begin_frame();
        req.encode(&mut w);
        w.finish_frame(at);
        stream.write_all(&w.buf).await.unwrap();
        let Some(body) = read_frame(&mut stream).await else {
            return (None, None);
        };
        let resp = ConnectResponse::from_bytes(&body).unwrap();
        if resp.timeout <= 0 {
            return (Some(resp), None);
        }
        let client = RawClient {
            stream,
            session_id: resp.session_id,
            passwd: resp.passwd.clone().unwrap(),
            timeout: resp.timeout,
        };
        (Some(resp), Some(client))
    }

    pub async fn send(&mut self, xid: i32, req: &Request) {
        self.send_batch(&[(xid, req)]).await;
    }

    /// Sends several requests in one write, so the server reads them together.
    pub async fn send_batch(&mut self, reqs: &[(i32, &Request)]) {
        let mut w = Writer::new();
        for (xid, req) in reqs {
            let at = w.begin_frame();
            RequestHeader {
                xid: *xid,
                op_type: req.opcode().code(),
            }
            .encode(&mut w);
            req.encode_body(&mut w);
            w.finish_frame(at);
        }
        self.stream.write_all(&w.buf).await.unwrap();
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    /// The next frame as (header, body), or None when the server closed the connection.
    pub async fn recv(&mut self) -> Option<(ReplyHeader, Vec<u8>)> {
        let body = tokio::time::timeout(Duration::from_secs(10), read_frame(&mut self.stream))
            .await
            .expect("reply in time")?;
        let mut r = Reader::new(&body);
        let h = ReplyHeader::decode(&mut r).unwrap();
        Some((h, r.rest().to_vec()))
    }

    /// True if the server closes the connection (EOF) within the timeout.
    pub async fn closed_by_server(&mut self) -> bool {
        let mut b = [0u8; 1024];
        loop {
            match tokio::time::timeout(Duration::from_secs(10), self.stream.read(&mut b)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(_)) => continue,
                Err(_) => return false,
            }
        }
    }
}

pub async fn read_frame(stream: &mut (impl tokio::io::AsyncRead + Unpin)) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).await.ok()?;
    let len = i32::from_be_bytes(len) as usize;
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).await.ok()?;
    Some(body)
}

/// Sends a four-letter word and returns the whole text reply.
pub async fn four_letter(addr: SocketAddr, word: &str) -> String {
    four_letter_bytes(addr, word.as_bytes()).await
}

/// One mntr value.
pub async fn mntr_value(addr: SocketAddr, key: &str) -> i64 {
    let mntr = four_letter(addr, "mntr").await;
    mntr.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('\t'))
        .unwrap_or_else(|| panic!("no {key} in {mntr}"))
        .parse()
        .unwrap()
}

/// Sends raw bytes (a word and its argument) and returns the whole text reply.
pub async fn four_letter_bytes(addr: SocketAddr, bytes: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_string(&mut out))
        .await
        .unwrap()
        .unwrap();
    out
}

/// Like `four_letter`, but `None` when nothing listens yet.
pub async fn four_letter_try(addr: SocketAddr, word: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).await.ok()?;
    s.write_all(word.as_bytes()).await.ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).await.ok()?;
    Some(out)
}
