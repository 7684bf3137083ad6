//! The electionPort of this member's `server.N=host:peerPort:electionPort` line.
//!
//! paddock's members elect over the peer port (raft); nothing of theirs uses the election port.
//! It is bound anyway, because operators' health checks and firewalls expect the port a ZooKeeper
//! member listens on (`nc -z host electionPort`), and because an unbound port would let any other
//! process on the host take it. What arrives on it is never answered, and every connection ends
//! closed:
//!
//! - With quorum TLS or quorum SASL required (the peer port refuses links that have not
//!   authenticated, `PeerSecurity::closed`), a connection is closed as soon as it is accepted,
//!   without reading: ZooKeeper's quorum TLS covers its election port too, and paddock has
//!   nothing to say to a peer there, so nothing is read in plaintext.
//! - Otherwise it reads at most what ZooKeeper's election protocol starts with (a protocol version
//!   or a server id, then for versions -65536 and -65535 the id and the length of an address
//!   list, and the list), within ZooKeeper's read timeout on that port (syncLimit x tickTime), and
//!   closes. A well-formed header from a listed member id other than this one is a ZooKeeper
//!   server trying to elect with this member: logged as a warning (at most once a minute), since a
//!   ZooKeeper server cannot join a paddock ensemble. Anything else is closed at once.
//!
//! Nothing is ever written back, so the port tells a stranger nothing but that it is open. At most
//! `MAX_OPEN` connections are held at a time; past that, new ones are closed as they are accepted.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

use crate::config::Config;

/// Connections held open (being read) at a time; more are closed as soon as they are accepted.
pub const MAX_OPEN: usize = 16;

/// ZooKeeper's election protocol versions (a connection starts with one of them, or with the
/// connecting server's id).
const PROTOCOL_V1: i64 = -65536;
const PROTOCOL_V2: i64 = -65535;
/// The longest address list accepted in a header (ZooKeeper's own bound is its buffer size; a
/// few addresses of `host:port` fit in far less).
const MAX_ADDRESSES_LEN: usize = 4096;

/// What the port does with a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Read a ZooKeeper election header within the timeout, then close.
    ReadHeader { timeout: Duration },
    /// Close at once, reading nothing (quorum TLS or SASL required).
    CloseAtOnce,
}

/// The bound port and its accept loop.
pub struct ElectionPort {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl ElectionPort {
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for ElectionPort {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The address to bind: this member's host (every interface with `quorumListenOnAllIPs`) and its
/// electionPort; `None` when the member has no server line, or when its electionPort is its
/// peerPort (already bound).
pub fn listen_address(cfg: &Config) -> Option<(String, u16)> {
    let me = cfg.my_server()?;
    if me.election_port == me.peer_port {
        return None;
    }
    let (host, _) = cfg.peer_listen_host()?;
    Some((host, me.election_port))
}

/// Binds the election port (a member restarted at once may find it still held for a moment: a
/// few retries) and starts accepting on the current runtime.
pub async fn bind(cfg: &Config, mode: Mode) -> anyhow::Result<Option<ElectionPort>> {
    use anyhow::Context as _;
    let Some((host, port)) = listen_address(cfg) else {
        return Ok(None);
    };
    let listen = tokio::net::lookup_host((host.as_str(), port))
        .await
        .with_context(|| format!("resolving this server's election address {host}:{port}"))?
        .next()
        .with_context(|| format!("{host} resolves to no address"))?;
    let mut tries = 0;
    let listener = loop {
        match TcpListener::bind(listen).await {
            Ok(l) => break l,
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && tries < 50 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e).with_context(|| format!("binding the election port {listen}")),
        }
    };
    let addr = listener.local_addr()?;
    let me = cfg.my_id.unwrap_or(0);
    let members: Vec<u64> = cfg.servers.iter().map(|s| s.id).collect();
    info!(%addr, ?mode, "election port bound (paddock elects over the peer port; connections here are closed)");
    let task = tokio::spawn(accept_loop(listener, mode, me, members));
    Ok(Some(ElectionPort { addr, task }))
}

/// The mode for this member's settings: closed at once when its peer port takes only
/// authenticated links.
pub fn mode_for(cfg: &Config, peer_port_closed: bool) -> Mode {
    if peer_port_closed {
        return Mode::CloseAtOnce;
    }
    let ms = u64::from(cfg.tick_time_ms).saturating_mul(u64::from(cfg.sync_limit.max(1)));
    Mode::ReadHeader {
        timeout: Duration::from_millis(ms),
    }
}

async fn accept_loop(listener: TcpListener, mode: Mode, me: u64, members: Vec<u64>) {
    let open = Arc::new(Semaphore::new(MAX_OPEN));
    let members = Arc::new(members);
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of descriptors and the like: wait rather than spin.
                debug!(error = %e, "election port: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let timeout = match mode {
            Mode::CloseAtOnce => {
                debug!(%peer, "election port: closed (quorum links must authenticate)");
                drop(stream);
                continue;
            }
            Mode::ReadHeader { timeout } => timeout,
        };
        let Ok(permit) = open.clone().try_acquire_owned() else {
            debug!(%peer, "election port: too many connections open; closed");
            drop(stream);
            continue;
        };
        let members = members.clone();
        tokio::spawn(async move {
            let verdict = tokio::time::timeout(timeout, read_header(stream)).await;
            match verdict {
                Ok(Some(sid)) if sid != me && members.contains(&sid) => warn_zookeeper(sid, peer),
                Ok(_) => debug!(%peer, "election port: not a member's election header; closed"),
                Err(_) => {
                    debug!(%peer, "election port: nothing complete within the read timeout; closed")
                }
            }
            drop(permit);
        });
    }
}

/// Reads a ZooKeeper election header; `Some(server id)` when it is well formed. The stream is
/// dropped (closed) on return.
async fn read_header(mut s: TcpStream) -> Option<u64> {
    let first = s.read_i64().await.ok()?;
    if first >= 0 {
        // The old protocol: the connecting server's id alone.
        return Some(first as u64);
    }
    if first != PROTOCOL_V1 && first != PROTOCOL_V2 {
        return None;
    }
    let sid = s.read_i64().await.ok()?;
    let len = s.read_i32().await.ok()?;
    if sid < 0 || len <= 0 || len as usize > MAX_ADDRESSES_LEN {
        return None;
    }
    let mut addrs = vec![0u8; len as usize];
    s.read_exact(&mut addrs).await.ok()?;
    let text = std::str::from_utf8(&addrs).ok()?;
    // `host:port`, or several joined by `|` (version -65535).
    let well_formed = text.split('|').all(|a| {
        a.rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
    });
    well_formed.then_some(sid as u64)
}

/// A ZooKeeper server is running its leader election against this member: said at most once a
/// minute (anyone who can reach the port can send the header, so it must not flood the log).
fn warn_zookeeper(sid: u64, peer: SocketAddr) {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let last = LAST.load(Ordering::Relaxed);
    if (last == 0 || now >= last + 60)
        && LAST
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        warn!(
            sid,
            %peer,
            "a ZooKeeper election connection claiming to be server.{sid} reached the election \
             port: paddock members elect over the peer port, and a ZooKeeper server cannot join a \
             paddock ensemble; closed"
        );
    }
}
