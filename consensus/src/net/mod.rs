//! The peer transport over TCP: raft messages, snapshots and application links between the
//! members of an ensemble.
//!
//! # Use
//!
//! ```text
//! let net = PeerNet::bind(cfg).await?;                  // listener bound, accepting
//! let started = consensus::start_with_transport(c, Box::new(net.transport()))?;
//! net.attach(Arc::new(started.handle.clone()));        // inbound messages now reach raft
//! ```
//!
//! Messages that arrive before `attach` are dropped (raft retries). `set_peers` replaces the
//! address book at any time; host names are resolved again at every connection attempt.
//!
//! # Wire format
//!
//! Every connection carries frames: a `u32` big-endian payload length, then the payload. The
//! reader checks the length against its cap before allocating: [`NetConfig::max_frame`] for
//! frames after the handshake, 4 KiB for handshake frames. A frame over the cap closes the
//! connection (logged at warn).
//!
//! Before any frame, a link may be protected ([`PeerSecurity`], `security.rs`): a TLS session
//! (the acceptor tells TLS from plaintext by the first byte, 0x16 for a ClientHello, so one port
//! can take both during a rolling upgrade), then a login (frames opening with "PDKA": the
//! mechanism, the acceptor's challenge, the connector's response, the verdict with the acceptor's
//! proof). A member that requires either closes a link that did not pass it without writing a
//! byte. Over TLS the acceptor also checks, once the hello names the connector, that its
//! certificate is valid for that member's host in the address book, as the connector's TLS checked
//! the acceptor's against the host it dialled: a member's id is bound to its certificate.
//!
//! The handshake, both directions checked before either side acts on the link:
//!
//! ```text
//! connector -> acceptor   Hello (48 bytes)
//!   0..4   magic "PDKN"          4..6   protocol version u16 (1)
//!   6      link kind u8: 1 Raft, 2 App, 3 Probe, 4 Snapshot
//!   7      flags u8: bit 0 = initialized (LocalInfo)
//!   8..16  sender id u64         16..24 the receiver's expected id u64
//!   24..32 cluster_id u64        32..40 fingerprint u64
//!   40..48 last_index u64 (LocalInfo)            (all integers big-endian)
//! acceptor -> connector   Reply: tag u8 (0 accept, 1 refuse), the acceptor's Hello, then for a
//!                         refusal the reason as UTF-8 ("cluster_id differs: ours 7, theirs 8")
//! connector -> acceptor   Confirm: tag u8 (0 accept, 1 refuse) then the reason as UTF-8
//!                         (not sent on Probe links, which close after the reply)
//! ```
//!
//! The acceptor refuses a hello with another magic, version, cluster id or fingerprint, a sender
//! that is not in its address book, or an expected id that is not its own; the connector refuses a
//! reply from another node than the one it dialled, or one that differs in the same fields. A
//! refusal carries the acceptor's hello, except when the link failed the identity check: then a
//! zeroed one.
//! Either refusal is logged at warn, counted ([`NetStats::refused`]) and closes the connection;
//! nothing from a refused peer reaches [`Inbound::step`]. The connector's error names the
//! difference with both values. A Probe is the exception for the cluster id and the address book:
//! it carries no Raft data, only each side's facts, so it is answered whatever cluster the prober
//! names and whether or not the acceptor knows it; the prober decides from the cluster id in the
//! answer (a member added by reconfig is not in anyone's book yet, and its server lines imply
//! another cluster id than the ensemble's initial ones).
//!
//! After the handshake, Raft and Snapshot links carry frames whose first byte is a tag:
//!
//! ```text
//! 1 Msg        raft Message, protobuf (data of MsgSnapshot excluded: see 2-4)
//! 2 SnapStart  total data length u64, then the MsgSnapshot as protobuf with empty snapshot data
//! 3 SnapChunk  the next bytes of the snapshot data (at most NetConfig::snapshot_chunk)
//! 4 SnapEnd    CRC32 (IEEE, crc32fast) u32 of the whole snapshot data
//! ```
//!
//! The receiver reassembles a snapshot under [`NetConfig::max_snapshot`] (the announced size is
//! checked against the cap, and at most 64 MiB is reserved up front), checks length and CRC, runs
//! [`NetConfig::check_snapshot`] on it (the server restores it into a throwaway tree), and only
//! then steps the message. Undecodable frames close the link (logged, never a panic). A
//! message whose `from`/`to` do not match the link's handshake is dropped.
//!
//! App links carry the caller's own frames ([`FramedStream`]); Probe links end after the reply.
//!
//! # Tasks
//!
//! All on the tokio runtime that called [`PeerNet::bind`]:
//! - one accept task; one task per accepted connection (handshake, then for Raft/Snapshot links
//!   the reader, which steps messages in arrival order). Inbound links end on EOF, a bad frame
//!   or shutdown; two from one peer may briefly coexist when it reconnects.
//! - per peer in the address book, one writer task owning the only outbound Raft link: it
//!   connects (backoff 10 ms doubling to 1 s, jittered; name lookup and connect bounded by 2 s,
//!   the handshake by 5 s), writes what the raft thread could not (below) and every queued
//!   message (a batch not written within 10 s ends the link: the peer stopped reading), and
//!   watches the link for EOF. A failed connect or write calls [`Inbound::unreachable`] and
//!   discards what is queued; a link that closes after it was established calls
//!   [`Inbound::peer_lost`] once (so does an inbound Raft link that closes).
//! - per peer, one snapshot task: the writer hands it each `MsgSnapshot`; it opens a Snapshot
//!   link, streams the chunks, and reports [`Inbound::snapshot_report`], so heartbeats on the
//!   Raft link never wait behind a snapshot.
//!
//! [`TcpTransport::send`] runs on the raft thread and never blocks. While a peer's link is up and
//! its writer task has nothing left to write, it writes the peer's messages to the socket itself,
//! as much as the socket takes at once, and leaves any rest to the writer task; otherwise it
//! `try_send`s them into the peer's bounded queue ([`QUEUE_LEN`] messages) and counts a drop when
//! the queue is full. Writing on the raft thread saves waking the runtime for each message: on
//! three members pinned to one core, 42 -> 31 runtime context switches per lock hand-off, 7%
//! more hand-offs. `peer.rs` (`Outbox`) has the rule that keeps the frames in order.
//!
//! [`PeerNet::shutdown`] stops every task and closes every socket (peers see EOF, as if the
//! process died); it does not wait, so a restart on the same port retries `bind` briefly.
//! Dropping the last `PeerNet` clone does not stop the tasks: call `shutdown`.
//!
//! A TLS link's session sits behind a mutex in its [`link::Link`], so the raft thread's direct
//! writes encrypt in place and what the socket did not take waits, encrypted, inside the session
//! for the writer task (`link.rs`).
//!
//! Without TLS or a required login (`PeerSecurity::open`) the handshake identifies, it does not
//! authenticate: anyone who reaches the port can act as a member. Not covered: TCP keepalive on
//! inbound links (a peer whose host vanishes without a reset leaves a silent inbound link until it
//! reconnects).

mod accept;
mod frame;
mod handshake;
mod link;
mod peer;
mod security;

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::{mpsc, watch};

pub use frame::{FrameReader, FrameWriter, FramedStream};
pub use peer::TcpTransport;
pub use security::{AuthClient, AuthServer, Checked, LinkAuth, PeerSecurity, PeerTls};

use crate::Handle;

/// Messages queued per peer before `TcpTransport::send` starts dropping.
pub const QUEUE_LEN: usize = 4096;
/// Default cap on one frame after the handshake.
pub const DEFAULT_MAX_FRAME: usize = 16 * 1024 * 1024;
/// Default size of one snapshot chunk.
pub const DEFAULT_SNAPSHOT_CHUNK: usize = 1024 * 1024;
/// Default cap on a reassembled snapshot.
pub const DEFAULT_MAX_SNAPSHOT: u64 = 4 * 1024 * 1024 * 1024;
/// Accepted App links waiting for [`PeerNet::app_streams`]'s receiver.
const APP_BACKLOG: usize = 64;

/// Settings of one node's peer transport.
#[derive(Debug, Clone)]
pub struct NetConfig {
    pub my_id: u64,
    /// A peer with another cluster id is refused.
    pub cluster_id: u64,
    /// Hash of the settings that change apply results; a peer with another one is refused.
    pub fingerprint: u64,
    /// Where to listen; port 0 picks a free port (see [`PeerNet::local_addr`]).
    pub listen: SocketAddr,
    /// The address book: peer id -> "host:port". Host names are resolved at each connect attempt.
    pub peers: Vec<(u64, String)>,
    /// Cap on one frame after the handshake, checked before anything is allocated or decoded.
    /// Must exceed the largest raft message (entries up to 1 MiB per append, plus one entry).
    pub max_frame: usize,
    /// Size of one snapshot chunk; must be below `max_frame`.
    pub snapshot_chunk: usize,
    /// Largest snapshot accepted from a peer.
    pub max_snapshot: u64,
    /// TLS and login on peer links (`security.rs`); the default is plaintext and open.
    pub security: PeerSecurity,
    /// Checks a snapshot received from a peer before raft sees it (the application decodes it
    /// fully); one that fails closes the link and is never installed. `None` checks nothing.
    pub check_snapshot: Option<SnapshotCheck>,
}

/// What [`NetConfig::check_snapshot`] runs, on a blocking thread: `Err(why)` for snapshot data
/// this node could not restore.
#[derive(Clone)]
pub struct SnapshotCheck(pub Arc<SnapshotCheckFn>);

/// The check itself: `Err(why)` for snapshot data this node could not restore.
pub type SnapshotCheckFn = dyn Fn(&[u8]) -> Result<(), String> + Send + Sync;

impl std::fmt::Debug for SnapshotCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SnapshotCheck")
    }
}

impl NetConfig {
    /// A config with the default caps and chunk size, no fingerprint and an empty address book.
    pub fn new(my_id: u64, cluster_id: u64, listen: SocketAddr) -> NetConfig {
        NetConfig {
            my_id,
            cluster_id,
            fingerprint: 0,
            listen,
            peers: Vec::new(),
            max_frame: DEFAULT_MAX_FRAME,
            snapshot_chunk: DEFAULT_SNAPSHOT_CHUNK,
            max_snapshot: DEFAULT_MAX_SNAPSHOT,
            security: PeerSecurity::open(),
            check_snapshot: None,
        }
    }

    fn validate(&self) -> io::Result<()> {
        let bad = |m: String| Err(io::Error::new(io::ErrorKind::InvalidInput, m));
        if self.my_id == 0 {
            return bad("node id 0 is reserved by raft".into());
        }
        if self.max_frame < 1024 || self.max_frame > u32::MAX as usize {
            return bad(format!(
                "max_frame {} must be between 1 KiB and 4 GiB",
                self.max_frame
            ));
        }
        if self.snapshot_chunk == 0 || self.snapshot_chunk + 16 > self.max_frame {
            return bad(format!(
                "snapshot_chunk {} must be positive and below max_frame {}",
                self.snapshot_chunk, self.max_frame
            ));
        }
        if let Err(e) = self.security.validate() {
            return bad(e);
        }
        Ok(())
    }
}

/// What this node tells peers about itself in handshakes and probes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LocalInfo {
    /// The node has a raft log (bootstrapped or joined).
    pub initialized: bool,
    pub last_index: u64,
}

impl LocalInfo {
    /// From the node's status: a node with any log (the bootstrap snapshot is index 1) is
    /// initialized; a member added later has none until its first snapshot arrives.
    pub fn from_status(s: &crate::Status) -> LocalInfo {
        LocalInfo {
            initialized: s.last_index > 0,
            last_index: s.last_index,
        }
    }
}

/// What a probe learned about a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerInfo {
    pub id: u64,
    pub cluster_id: u64,
    pub initialized: bool,
    pub last_index: u64,
}

/// The kind of a link, chosen by the connector in its hello.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum LinkKind {
    /// Raft messages from the connector to the acceptor.
    Raft = 1,
    /// The application's own frames, both ways ([`PeerNet::connect_app`]).
    App = 2,
    /// Handshake only: the reply carries the acceptor's [`PeerInfo`].
    Probe = 3,
    /// One or more chunked snapshots from the connector to the acceptor.
    Snapshot = 4,
}

impl LinkKind {
    fn from_u8(b: u8) -> Option<LinkKind> {
        Some(match b {
            1 => LinkKind::Raft,
            2 => LinkKind::App,
            3 => LinkKind::Probe,
            4 => LinkKind::Snapshot,
            _ => return None,
        })
    }
}

/// Where inbound traffic and link events go (a [`Handle`] in production). Called on tokio tasks:
/// must not block.
pub trait Inbound: Send + Sync + 'static {
    /// A raft message from a peer, in the order the link delivered it.
    fn step(&self, msg: raft::eraftpb::Message);
    /// Connecting or writing to `peer` failed.
    fn unreachable(&self, peer: u64);
    /// A snapshot transfer to `peer` ended: `ok` once its last chunk was written.
    fn snapshot_report(&self, peer: u64, ok: bool);
    /// An established Raft link to or from `peer` closed (EOF or reset: the process likely died).
    fn peer_lost(&self, peer: u64);
}

impl Inbound for Handle {
    fn step(&self, msg: raft::eraftpb::Message) {
        let _ = Handle::step(self, msg);
    }

    fn unreachable(&self, peer: u64) {
        let _ = self.report_unreachable(peer);
    }

    fn snapshot_report(&self, peer: u64, ok: bool) {
        let _ = self.report_snapshot(peer, ok);
    }

    fn peer_lost(&self, peer: u64) {
        tracing::info!(peer, "link to peer lost");
        let _ = self.report_unreachable(peer);
        // If it was our leader, elect a new one now instead of after an election timeout.
        let _ = Handle::peer_lost(self, peer);
    }
}

/// Counters for one peer, as [`PeerNet::stats`] reports them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerStats {
    pub id: u64,
    pub addr: String,
    /// The outbound Raft link is established.
    pub connected: bool,
    /// Inbound Raft links from this peer currently open (usually 1; briefly 2 on reconnect).
    pub inbound_links: u64,
    pub msgs_sent: u64,
    /// Of `msgs_sent`, those the raft thread wrote to the socket itself (the link was idle).
    pub msgs_sent_direct: u64,
    /// Messages dropped: queue full, discarded after a failed connect or write, or too big.
    pub msgs_dropped: u64,
    pub bytes_sent: u64,
    pub msgs_received: u64,
    pub bytes_received: u64,
    /// Outbound connect or handshake attempts that failed.
    pub connect_failures: u64,
    pub snapshots_sent: u64,
    pub snapshots_failed: u64,
    pub snapshot_chunks_sent: u64,
    pub snapshots_received: u64,
    pub snapshot_chunks_received: u64,
}

/// Counters for the whole transport.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetStats {
    /// Handshakes refused, by either side (a mismatch, an unknown peer, a bad magic).
    pub refused: u64,
    /// Connections closed for a bad frame: over the cap, undecodable, out of protocol.
    pub bad_frames: u64,
    /// Messages for a peer with no address in the book.
    pub dropped_unknown_peer: u64,
    /// The most recent refusal, naming what differed.
    pub last_refusal: Option<String>,
    /// Links accepted over TLS, and in plaintext (which should stay 0 once a rolling upgrade to
    /// TLS is done: the signal that `portUnification` can go).
    pub accepted_tls: u64,
    pub accepted_plain: u64,
    /// Links whose login failed (also counted in `refused`).
    pub login_failures: u64,
}

#[derive(Default)]
struct Counters {
    connected: AtomicBool,
    inbound_links: AtomicU64,
    msgs_sent: AtomicU64,
    msgs_sent_direct: AtomicU64,
    msgs_dropped: AtomicU64,
    bytes_sent: AtomicU64,
    msgs_received: AtomicU64,
    bytes_received: AtomicU64,
    connect_failures: AtomicU64,
    snapshots_sent: AtomicU64,
    snapshots_failed: AtomicU64,
    snapshot_chunks_sent: AtomicU64,
    snapshots_received: AtomicU64,
    snapshot_chunks_received: AtomicU64,
}

fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// One peer's outbound side: its queue, the link the raft thread writes to directly, counters and
/// stop signal.
struct Peer {
    id: u64,
    tx: mpsc::Sender<raft::eraftpb::Message>,
    outbox: Arc<peer::Outbox>,
    counters: Arc<Counters>,
    stop: watch::Sender<bool>,
}

struct Shared {
    cfg: NetConfig,
    local_addr: SocketAddr,
    rt: tokio::runtime::Handle,
    book: Mutex<HashMap<u64, String>>,
    peers: Mutex<HashMap<u64, Arc<Peer>>>,
    /// Counters outlive a peer's removal from the book only as long as its tasks hold them.
    inbound: RwLock<Option<Arc<dyn Inbound>>>,
    local: Mutex<LocalInfo>,
    shutdown: watch::Sender<bool>,
    stopped: AtomicBool,
    app_tx: mpsc::Sender<(u64, FramedStream)>,
    app_rx: Mutex<Option<mpsc::Receiver<(u64, FramedStream)>>>,
    refused: AtomicU64,
    bad_frames: AtomicU64,
    dropped_unknown: AtomicU64,
    last_refusal: Mutex<Option<String>>,
    accepted_tls: AtomicU64,
    accepted_plain: AtomicU64,
    login_failures: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn inbound(&self) -> Option<Arc<dyn Inbound>> {
        self.inbound
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    fn local_info(&self) -> LocalInfo {
        *lock(&self.local)
    }

    fn address(&self, peer: u64) -> Option<String> {
        lock(&self.book).get(&peer).cloned()
    }

    fn counters(&self, peer: u64) -> Option<Arc<Counters>> {
        lock(&self.peers).get(&peer).map(|p| p.counters.clone())
    }

    fn note_refusal(&self, reason: &str) {
        bump(&self.refused, 1);
        *lock(&self.last_refusal) = Some(reason.to_string());
    }

    fn unreachable(&self, peer: u64) {
        if let Some(i) = self.inbound() {
            i.unreachable(peer);
        }
    }

    fn snapshot_report(&self, peer: u64, ok: bool) {
        if let Some(i) = self.inbound() {
            i.snapshot_report(peer, ok);
        }
    }

    fn peer_lost(&self, peer: u64) {
        if self.is_stopped() {
            return;
        }
        if let Some(i) = self.inbound() {
            i.peer_lost(peer);
        }
    }
}

/// One node's peer transport. Cloneable (shared inside); all clones drive the same listener,
/// links and address book.
#[derive(Clone)]
pub struct PeerNet {
    shared: Arc<Shared>,
}

impl PeerNet {
    /// Binds the listener (SO_REUSEADDR, so a restarted node can take its port back) and starts
    /// accepting, and starts a writer for every peer in `cfg.peers`. Must run inside a tokio
    /// runtime: every task of the transport runs on it.
    pub async fn bind(cfg: NetConfig) -> io::Result<PeerNet> {
        cfg.validate()?;
        let socket = if cfg.listen.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        socket.bind(cfg.listen)?;
        let listener = socket.listen(1024)?;
        let local_addr = listener.local_addr()?;
        let (app_tx, app_rx) = mpsc::channel(APP_BACKLOG);
        let peers = cfg.peers.clone();
        let shared = Arc::new(Shared {
            cfg,
            local_addr,
            rt: tokio::runtime::Handle::current(),
            book: Mutex::default(),
            peers: Mutex::default(),
            inbound: RwLock::new(None),
            local: Mutex::default(),
            shutdown: watch::channel(false).0,
            stopped: AtomicBool::new(false),
            app_tx,
            app_rx: Mutex::new(Some(app_rx)),
            refused: AtomicU64::new(0),
            bad_frames: AtomicU64::new(0),
            dropped_unknown: AtomicU64::new(0),
            last_refusal: Mutex::new(None),
            accepted_tls: AtomicU64::new(0),
            accepted_plain: AtomicU64::new(0),
            login_failures: AtomicU64::new(0),
        });
        tracing::info!(node = shared.cfg.my_id, addr = %local_addr, "peer transport listening");
        tokio::spawn(accept::accept_loop(shared.clone(), listener));
        let net = PeerNet { shared };
        net.set_peers(peers);
        Ok(net)
    }

    /// The address the listener is bound to (the real port when `listen` had port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.shared.local_addr
    }

    /// Replaces the address book. New peers get a writer; removed peers' links close; a changed
    /// address is used from the next connection attempt on. Our own id is ignored.
    pub fn set_peers(&self, peers: Vec<(u64, String)>) {
        peer::set_peers(&self.shared, peers);
    }

    /// The raft-side sender: give it to `consensus::start_with_transport`. Never blocks.
    pub fn transport(&self) -> TcpTransport {
        TcpTransport::new(self.shared.clone())
    }

    /// Where inbound messages and link events go from now on (usually the node's `Handle`).
    pub fn attach(&self, inbound: Arc<dyn Inbound>) {
        *self
            .shared
            .inbound
            .write()
            .unwrap_or_else(|p| p.into_inner()) = Some(inbound);
    }

    /// Accepted App links with the peer's id, in the order their handshakes completed. The
    /// receiver can be taken once: later calls return `None`. Up to 64 links wait for the
    /// receiver; beyond that, or once it is dropped, new App links are closed with a warning.
    pub fn app_streams(&self) -> Option<mpsc::Receiver<(u64, FramedStream)>> {
        lock(&self.shared.app_rx).take()
    }

    /// Opens an App link to `peer` (in the address book). A refused handshake is an error of kind
    /// `ConnectionRefused` naming what differed.
    pub async fn connect_app(&self, peer: u64) -> io::Result<FramedStream> {
        let (stream, _) = peer::connect(&self.shared, peer, LinkKind::App).await?;
        Ok(stream)
    }

    /// Handshakes with `peer` as a Probe and closes: its id, cluster id and LocalInfo. A refusal
    /// (either side) is an error naming what differed.
    pub async fn probe(&self, peer: u64) -> io::Result<PeerInfo> {
        let (_, info) = peer::connect(&self.shared, peer, LinkKind::Probe).await?;
        Ok(info)
    }

    /// What handshakes and probes report about this node from now on.
    pub fn set_local_info(&self, info: LocalInfo) {
        *lock(&self.shared.local) = info;
    }

    /// Per peer in the address book, sorted by id.
    pub fn stats(&self) -> Vec<PeerStats> {
        let book = lock(&self.shared.book).clone();
        let peers = lock(&self.shared.peers);
        let mut out: Vec<PeerStats> = peers
            .values()
            .map(|p| {
                let c = &p.counters;
                let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
                PeerStats {
                    id: p.id,
                    addr: book.get(&p.id).cloned().unwrap_or_default(),
                    connected: c.connected.load(Ordering::Relaxed),
                    inbound_links: get(&c.inbound_links),
                    msgs_sent: get(&c.msgs_sent),
                    msgs_sent_direct: get(&c.msgs_sent_direct),
                    msgs_dropped: get(&c.msgs_dropped),
                    bytes_sent: get(&c.bytes_sent),
                    msgs_received: get(&c.msgs_received),
                    bytes_received: get(&c.bytes_received),
                    connect_failures: get(&c.connect_failures),
                    snapshots_sent: get(&c.snapshots_sent),
                    snapshots_failed: get(&c.snapshots_failed),
                    snapshot_chunks_sent: get(&c.snapshot_chunks_sent),
                    snapshots_received: get(&c.snapshots_received),
                    snapshot_chunks_received: get(&c.snapshot_chunks_received),
                }
            })
            .collect();
        out.sort_by_key(|s| s.id);
        out
    }

    /// Transport-wide counters.
    pub fn net_stats(&self) -> NetStats {
        let s = &self.shared;
        NetStats {
            refused: s.refused.load(Ordering::Relaxed),
            bad_frames: s.bad_frames.load(Ordering::Relaxed),
            dropped_unknown_peer: s.dropped_unknown.load(Ordering::Relaxed),
            last_refusal: lock(&s.last_refusal).clone(),
            accepted_tls: s.accepted_tls.load(Ordering::Relaxed),
            accepted_plain: s.accepted_plain.load(Ordering::Relaxed),
            login_failures: s.login_failures.load(Ordering::Relaxed),
        }
    }

    /// Closes the listener and every link, and stops every task; later sends are dropped.
    /// Idempotent. The tasks finish asynchronously: a restart on the same port may need to retry
    /// `bind` for a moment.
    pub fn shutdown(&self) {
        if self.shared.stopped.swap(true, Ordering::AcqRel) {
            return;
        }
        tracing::info!(node = self.shared.cfg.my_id, "peer transport shutting down");
        self.shared.shutdown.send_replace(true);
        let peers: Vec<Arc<Peer>> = lock(&self.shared.peers).drain().map(|(_, p)| p).collect();
        for p in peers {
            p.stop.send_replace(true);
        }
        *self
            .shared
            .inbound
            .write()
            .unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// Resolves once `rx` reads true or its sender is gone.
async fn stopped(rx: &mut watch::Receiver<bool>) {
    loop {
        if *rx.borrow_and_update() {
            return;
        }
        if rx.changed().await.is_err() {
            return;
        }
    }
}
