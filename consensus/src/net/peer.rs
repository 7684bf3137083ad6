//! The outbound side: the raft thread's queue, one writer task and one snapshot task per peer,
//! and the connector's half of the handshake.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use protobuf::Message as _;
use raft::eraftpb::{Message, MessageType};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch, Notify};

use super::frame::FramedStream;
use super::handshake::{
    self, Expect, Hello, HANDSHAKE_MAX, HANDSHAKE_TIMEOUT, REPLY_ACCEPT, REPLY_REFUSE,
};
use super::link::{self, Link};
use super::security::{self, Login};
use super::{bump, lock, stopped, Counters, LinkKind, Peer, PeerInfo, Shared, QUEUE_LEN};
use crate::Transport;

pub(crate) const TAG_MSG: u8 = 1;
pub(crate) const TAG_SNAP_START: u8 = 2;
pub(crate) const TAG_SNAP_CHUNK: u8 = 3;
pub(crate) const TAG_SNAP_END: u8 = 4;

const BACKOFF_MIN: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_secs(1);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// A flush of queued raft messages that takes longer ends the link.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// A snapshot chunk that cannot be written within this is a failed transfer.
const CHUNK_TIMEOUT: Duration = Duration::from_secs(30);
/// Messages written per flush at most, so one flush does not wait for a huge batch.
const BATCH: usize = 512;
/// Snapshots waiting for a peer's snapshot task; more are refused (reported as failed).
const SNAPSHOT_QUEUE: usize = 2;

/// The raft thread's sender (implements [`Transport`]). A message to a peer whose link is up and
/// idle is written to the socket here, on the raft thread, without blocking (`Outbox`); any other
/// is queued for the peer's writer task. Never blocks; a full queue or unknown peer drops the
/// message and counts it.
pub struct TcpTransport {
    shared: Arc<Shared>,
}

impl TcpTransport {
    pub(super) fn new(shared: Arc<Shared>) -> TcpTransport {
        TcpTransport { shared }
    }
}

impl Transport for TcpTransport {
    fn send(&mut self, msgs: Vec<Message>) {
        if self.shared.is_stopped() {
            return;
        }
        // Per peer, in order: one socket write for all of a Ready's messages to it.
        let mut by_peer: Vec<(u64, Vec<Message>)> = Vec::new();
        for m in msgs {
            match by_peer.iter_mut().find(|(to, _)| *to == m.to) {
                Some((_, v)) => v.push(m),
                None => by_peer.push((m.to, vec![m])),
            }
        }
        let peers = lock(&self.shared.peers);
        for (to, msgs) in by_peer {
            let Some(p) = peers.get(&to) else {
                bump(&self.shared.dropped_unknown, msgs.len() as u64);
                tracing::debug!(to, "no address for peer; message dropped");
                continue;
            };
            p.outbox.send(&self.shared, p, msgs);
        }
    }
}

/// What the raft thread and a peer's writer task share. While the link is up and the writer task
/// has nothing to write, the raft thread writes each batch of frames to the socket itself: the
/// writer task would otherwise be woken for every message (on a server pinned to one core, a
/// switch to the runtime's thread and back for each). The writer task keeps everything that can
/// wait: connecting, a socket buffer that is full (the bytes the raft thread could not write), what
/// was queued while the link was down, snapshots, and noticing that the link closed.
///
/// Order is kept by one rule: the raft thread writes only while `writer_busy` is false, and
/// queues otherwise, both under the lock; the writer task sets `writer_busy` under the lock before
/// it writes, and clears it only when nothing is left for it: no `rest`, nothing queued.
#[derive(Default)]
pub(crate) struct Outbox {
    state: Mutex<OutboxState>,
    /// Wakes the writer task when the raft thread leaves it a `rest`.
    wake: Notify,
}

#[derive(Default)]
struct OutboxState {
    /// The link, while it is established.
    link: Option<Arc<Link>>,
    /// The writer task writes (or is about to write): the raft thread queues instead.
    writer_busy: bool,
    /// Frames the raft thread wrote only in part (the socket buffer was full), from the first
    /// byte not written; the writer task writes them before anything queued. (A TLS link keeps
    /// that rest inside its session, already encrypted: `rest` stays empty and the writer task's
    /// flush writes it.)
    rest: Vec<u8>,
    /// The frames `rest` ends (counted as sent once written).
    rest_frames: u64,
}

impl Outbox {
    /// On the raft thread: writes `msgs` to the link if it is up and idle, else queues them.
    fn send(&self, shared: &Shared, p: &Peer, msgs: Vec<Message>) {
        let mut st = lock(&self.state);
        let link = match (&st.link, st.writer_busy) {
            (Some(l), false) => l.clone(),
            _ => {
                for m in msgs {
                    queue(shared, p, m);
                }
                return;
            }
        };
        let mut buf = Vec::new();
        let mut frames = 0u64;
        for m in msgs {
            if m.get_msg_type() == MessageType::MsgSnapshot {
                queue(shared, p, m); // the writer task hands it to the snapshot task
                continue;
            }
            if encode_frame(shared, p.id, &p.counters, &m, &mut buf) {
                frames += 1;
            }
        }
        if buf.is_empty() {
            return;
        }
        let len = buf.len();
        // Full (or not yet known writable), or failed: the writer task finishes it, and meets the
        // failure itself if there is one.
        let done = link.try_send(&mut buf).unwrap_or(false);
        bump(&p.counters.bytes_sent, (len - buf.len()) as u64);
        if done {
            bump(&p.counters.msgs_sent, frames);
            bump(&p.counters.msgs_sent_direct, frames);
            return;
        }
        st.rest = buf;
        st.rest_frames = frames;
        st.writer_busy = true;
        drop(st);
        self.wake.notify_one();
    }
}

/// Queues `m` for the peer's writer task; a full queue drops it (a snapshot is reported failed).
fn queue(shared: &Shared, p: &Peer, m: Message) {
    let snapshot = m.get_msg_type() == MessageType::MsgSnapshot;
    if p.tx.try_send(m).is_err() {
        bump(&p.counters.msgs_dropped, 1);
        if snapshot {
            // Raft waits for the outcome of a snapshot; tell it now rather than after its
            // timeout. Through the handle's channel: this does not re-enter raft.
            bump(&p.counters.snapshots_failed, 1);
            shared.snapshot_report(p.id, false);
        }
    }
}

/// Appends `m` to `buf` as one frame (length, `TAG_MSG`, protobuf). False, with the message
/// counted as dropped, when it cannot be encoded or exceeds the frame cap.
fn encode_frame(shared: &Shared, peer: u64, c: &Counters, m: &Message, buf: &mut Vec<u8>) -> bool {
    let len = m.compute_size() as usize + 1;
    if len > shared.cfg.max_frame {
        tracing::error!(
            peer,
            bytes = len,
            max_frame = shared.cfg.max_frame,
            msg_type = ?m.get_msg_type(),
            "raft message exceeds max_frame; dropped"
        );
        bump(&c.msgs_dropped, 1);
        return false;
    }
    let start = buf.len();
    buf.extend_from_slice(&(len as u32).to_be_bytes());
    buf.push(TAG_MSG);
    if let Err(e) = m.write_to_vec(buf) {
        buf.truncate(start);
        tracing::error!(peer, error = %e, "cannot encode a raft message; dropped");
        bump(&c.msgs_dropped, 1);
        return false;
    }
    if buf.len() - start != len + 4 {
        // compute_size and the encoding disagree: the frame's length would be wrong.
        buf.truncate(start);
        tracing::error!(
            peer,
            "a raft message encoded to another size than computed; dropped"
        );
        bump(&c.msgs_dropped, 1);
        return false;
    }
    true
}

/// Replaces the address book: starts tasks for new peers, stops those of removed ones.
pub(crate) fn set_peers(shared: &Arc<Shared>, peers: Vec<(u64, String)>) {
    if shared.is_stopped() {
        return;
    }
    let my_id = shared.cfg.my_id;
    let book: std::collections::HashMap<u64, String> =
        peers.into_iter().filter(|(id, _)| *id != my_id).collect();
    let mut running = lock(&shared.peers);
    running.retain(|id, p| {
        let keep = book.contains_key(id);
        if !keep {
            p.stop.send_replace(true);
        }
        keep
    });
    for &id in book.keys() {
        if running.contains_key(&id) {
            continue;
        }
        let (tx, rx) = mpsc::channel(QUEUE_LEN);
        let (stop, stop_rx) = watch::channel(false);
        let p = Arc::new(Peer {
            id,
            tx,
            outbox: Arc::new(Outbox::default()),
            counters: Arc::new(Counters::default()),
            stop,
        });
        running.insert(id, p.clone());
        let (snap_tx, snap_rx) = mpsc::channel(SNAPSHOT_QUEUE);
        shared.rt.spawn(snapshot_sender(
            shared.clone(),
            id,
            p.counters.clone(),
            snap_rx,
            stop_rx.clone(),
        ));
        shared.rt.spawn(writer(
            shared.clone(),
            id,
            p.counters.clone(),
            p.outbox.clone(),
            rx,
            snap_tx,
            stop_rx,
        ));
    }
    *lock(&shared.book) = book;
}

static JITTER: AtomicU64 = AtomicU64::new(0);

/// `d` scaled by a factor in [0.5, 1.5).
fn jittered(d: Duration) -> Duration {
    let mut x = JITTER.load(Ordering::Relaxed);
    if x == 0 {
        x = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x9e37_79b9, |t| t.as_nanos() as u64)
            | 1;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    JITTER.store(x, Ordering::Relaxed);
    d.mul_f64(0.5 + (x % 1000) as f64 / 1000.0)
}

/// The writer task of one peer: owns the only outbound Raft link to it.
async fn writer(
    shared: Arc<Shared>,
    peer: u64,
    c: Arc<Counters>,
    outbox: Arc<Outbox>,
    mut rx: mpsc::Receiver<Message>,
    snap_tx: mpsc::Sender<Message>,
    mut stop: watch::Receiver<bool>,
) {
    let mut backoff = BACKOFF_MIN;
    let mut logged_failure = false;
    loop {
        let conn = tokio::select! {
            biased;
            _ = stopped(&mut stop) => return,
            r = connect(&shared, peer, LinkKind::Raft) => r,
        };
        let stream = match conn {
            Ok((s, _)) => s,
            Err(e) => {
                bump(&c.connect_failures, 1);
                if logged_failure {
                    tracing::debug!(node = shared.cfg.my_id, peer, error = %e, "connect to peer failed");
                } else {
                    tracing::warn!(node = shared.cfg.my_id, peer, error = %e, "connect to peer failed; retrying");
                    logged_failure = true;
                }
                shared.unreachable(peer);
                discard(&shared, peer, &c, &mut rx);
                tokio::select! {
                    biased;
                    _ = stopped(&mut stop) => return,
                    _ = tokio::time::sleep(jittered(backoff)) => {}
                }
                backoff = (backoff * 2).min(BACKOFF_MAX);
                continue;
            }
        };
        tracing::info!(
            node = shared.cfg.my_id,
            peer,
            "raft link to peer established"
        );
        backoff = BACKOFF_MIN;
        logged_failure = false;
        c.connected.store(true, Ordering::Relaxed);
        let end = run_link(
            &shared, peer, &c, &outbox, stream, &mut rx, &snap_tx, &mut stop,
        )
        .await;
        // The raft thread queues again; what it left unwritten is lost with the link.
        {
            let mut st = lock(&outbox.state);
            st.link = None;
            st.writer_busy = false;
            if !st.rest.is_empty() {
                bump(&c.msgs_dropped, st.rest_frames);
            }
            st.rest = Vec::new();
            st.rest_frames = 0;
        }
        c.connected.store(false, Ordering::Relaxed);
        match end {
            LinkEnd::Stopped => return,
            LinkEnd::WriteFailed(e) => {
                tracing::warn!(node = shared.cfg.my_id, peer, error = %e, "write to peer failed");
                shared.unreachable(peer);
                discard(&shared, peer, &c, &mut rx);
            }
            LinkEnd::Closed(why) => {
                tracing::warn!(
                    node = shared.cfg.my_id,
                    peer,
                    why,
                    "raft link to peer closed"
                );
            }
        }
        shared.peer_lost(peer);
    }
}

enum LinkEnd {
    Stopped,
    WriteFailed(io::Error),
    Closed(&'static str),
}

#[allow(clippy::too_many_arguments)]
async fn run_link(
    shared: &Shared,
    peer: u64,
    c: &Counters,
    outbox: &Outbox,
    stream: FramedStream,
    rx: &mut mpsc::Receiver<Message>,
    snap_tx: &mpsc::Sender<Message>,
    stop: &mut watch::Receiver<bool>,
) -> LinkEnd {
    let (mut reader, writer) = stream.into_split();
    let link = match writer.into_link().await {
        Ok(l) => l,
        Err(e) => return LinkEnd::WriteFailed(e),
    };
    {
        // Busy until what was queued while the link was down is written.
        let mut st = lock(&outbox.state);
        st.link = Some(link.clone());
        st.writer_busy = true;
    }
    // The acceptor never writes on a Raft link after the handshake: any read result means the
    // link is gone (EOF when the peer's process died or closed it).
    let mut probe = [0u8; 1];
    let mut batch = Vec::with_capacity(BATCH);
    let mut out = Vec::new();
    loop {
        // What to write, in order: the raft thread's rest, then what is queued. Taken with the
        // link marked busy, so the raft thread queues meanwhile.
        let mut frames = {
            let mut st = lock(&outbox.state);
            st.writer_busy = true;
            out.clear();
            std::mem::swap(&mut out, &mut st.rest);
            std::mem::take(&mut st.rest_frames)
        };
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(m) => batch.push(m),
                Err(_) => break,
            }
        }
        for m in batch.drain(..) {
            if m.get_msg_type() == MessageType::MsgSnapshot {
                if snap_tx.try_send(m).is_err() {
                    bump(&c.snapshots_failed, 1);
                    shared.snapshot_report(peer, false);
                }
                continue;
            }
            if encode_frame(shared, peer, c, &m, &mut out) {
                frames += 1;
            }
        }
        if out.is_empty() && link.try_send(&mut out).unwrap_or(false) {
            // Nothing to write, and nothing left inside a TLS session either (the raft thread's
            // rest, whose frames are now all out).
            bump(&c.msgs_sent, frames);
            {
                // Nothing left for us: the raft thread writes from here, unless something came
                // in since the lock above.
                let mut st = lock(&outbox.state);
                if !st.rest.is_empty() || !rx.is_empty() {
                    continue;
                }
                st.writer_busy = false;
            }
            tokio::select! {
                biased;
                _ = stopped(stop) => return LinkEnd::Stopped,
                r = reader.read_some(&mut probe) => {
                    return LinkEnd::Closed(match r {
                        Ok(0) => "closed by the peer",
                        Ok(_) => "the peer sent data on an outbound raft link",
                        Err(_) => "reset",
                    });
                }
                n = rx.recv_many(&mut batch, BATCH) => {
                    if n == 0 {
                        return LinkEnd::Stopped; // the peer left the address book
                    }
                }
                _ = outbox.wake.notified() => {}
            }
            continue;
        }
        // A peer that stops reading (frozen, or its host gone without a reset) fills the socket
        // buffers: give up on the link rather than wait for TCP's retransmission timeout.
        let len = out.len();
        match tokio::time::timeout(WRITE_TIMEOUT, link.flush(&mut out)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return LinkEnd::WriteFailed(e),
            Err(_) => {
                return LinkEnd::WriteFailed(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("writing to the peer took over {WRITE_TIMEOUT:?}"),
                ))
            }
        }
        bump(&c.msgs_sent, frames);
        bump(&c.bytes_sent, len as u64);
    }
}

/// Drops whatever is queued for an unreachable peer (raft resends), failing snapshots at once.
fn discard(shared: &Shared, peer: u64, c: &Counters, rx: &mut mpsc::Receiver<Message>) {
    while let Ok(m) = rx.try_recv() {
        bump(&c.msgs_dropped, 1);
        if m.get_msg_type() == MessageType::MsgSnapshot {
            bump(&c.snapshots_failed, 1);
            shared.snapshot_report(peer, false);
        }
    }
}

/// The snapshot task of one peer: streams each `MsgSnapshot` on a Snapshot link of its own.
async fn snapshot_sender(
    shared: Arc<Shared>,
    peer: u64,
    c: Arc<Counters>,
    mut rx: mpsc::Receiver<Message>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let m = tokio::select! {
            biased;
            _ = stopped(&mut stop) => return,
            m = rx.recv() => match m { Some(m) => m, None => return },
        };
        let index = m.get_snapshot().get_metadata().index;
        let size = m.get_snapshot().get_data().len();
        let r = tokio::select! {
            biased;
            _ = stopped(&mut stop) => return,
            r = send_snapshot(&shared, peer, &c, m) => r,
        };
        match r {
            Ok(chunks) => {
                tracing::info!(
                    node = shared.cfg.my_id,
                    peer,
                    index,
                    size,
                    chunks,
                    "snapshot sent"
                );
                bump(&c.snapshots_sent, 1);
                shared.snapshot_report(peer, true);
            }
            Err(e) => {
                tracing::warn!(node = shared.cfg.my_id, peer, index, size, error = %e, "snapshot transfer failed");
                bump(&c.snapshots_failed, 1);
                shared.snapshot_report(peer, false);
            }
        }
    }
}

async fn send_snapshot(
    shared: &Shared,
    peer: u64,
    c: &Counters,
    mut m: Message,
) -> io::Result<u64> {
    let data = m.mut_snapshot().take_data();
    let header = m
        .write_to_bytes()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    if header.len() + 9 > shared.cfg.max_frame {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "snapshot message header exceeds max_frame",
        ));
    }
    let (stream, _) = connect(shared, peer, LinkKind::Snapshot).await?;
    let (_reader, mut writer) = stream.into_split();
    let total = (data.len() as u64).to_be_bytes();
    within(
        "snapshot header write",
        writer.feed(&[&[TAG_SNAP_START], &total, &header]),
    )
    .await?;
    let mut crc = crc32fast::Hasher::new();
    let mut chunks = 0;
    for chunk in data.chunks(shared.cfg.snapshot_chunk) {
        crc.update(chunk);
        within("snapshot chunk write", async {
            writer.feed(&[&[TAG_SNAP_CHUNK], chunk]).await?;
            writer.flush().await
        })
        .await?;
        chunks += 1;
        bump(&c.snapshot_chunks_sent, 1);
        bump(&c.bytes_sent, chunk.len() as u64 + 5);
    }
    let end = crc.finalize().to_be_bytes();
    within("snapshot end write", async {
        writer.feed(&[&[TAG_SNAP_END], &end]).await?;
        writer.close().await
    })
    .await?;
    Ok(chunks)
}

async fn within(
    what: &str,
    f: impl std::future::Future<Output = io::Result<()>>,
) -> io::Result<()> {
    match tokio::time::timeout(CHUNK_TIMEOUT, f).await {
        Ok(r) => r,
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("{what} took over {CHUNK_TIMEOUT:?}"),
        )),
    }
}

/// Connects to `peer` and runs the connector's half of the handshake for a `kind` link. Probe
/// links are closed after the reply; other links are confirmed and handed back.
pub(crate) async fn connect(
    shared: &Shared,
    peer: u64,
    kind: LinkKind,
) -> io::Result<(FramedStream, PeerInfo)> {
    let my_id = shared.cfg.my_id;
    let addr = shared.address(peer).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("node {peer} has no address in node {my_id}'s peer list"),
        )
    })?;
    if shared.is_stopped() {
        return Err(io::Error::new(
            io::ErrorKind::NotConnected,
            "peer transport shut down",
        ));
    }
    // Resolved at every attempt: a container's address may change when it restarts.
    let mut last = io::Error::new(
        io::ErrorKind::NotFound,
        format!("{addr} resolved to nothing"),
    );
    let mut tcp = None;
    let resolved = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::lookup_host(&addr))
        .await
        .map_err(|_| {
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!("resolving {addr} timed out"),
            )
        })??;
    for a in resolved {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(a)).await {
            Ok(Ok(s)) => {
                tcp = Some(s);
                break;
            }
            Ok(Err(e)) => last = e,
            Err(_) => {
                last = io::Error::new(io::ErrorKind::TimedOut, format!("connect to {a} timed out"))
            }
        }
    }
    let tcp = tcp.ok_or(last)?;
    tcp.set_nodelay(true)?;
    let sec = &shared.cfg.security;
    let link = match &sec.tls {
        Some(tls) if sec.tls_connect => {
            let name = link::server_name(&addr)?;
            link::connect_tls(tls.client_config(), name, tcp, HANDSHAKE_TIMEOUT)
                .await
                .map_err(|e| {
                    let msg = format!("node {my_id} to node {peer} at {addr}: {e}");
                    if e.kind() == io::ErrorKind::ConnectionRefused {
                        shared.note_refusal(&msg);
                    }
                    io::Error::new(e.kind(), msg)
                })?
        }
        _ => Link::plain(tcp),
    };
    let stream = FramedStream::new(link, HANDSHAKE_MAX, peer);
    let (mut reader, mut writer) = stream.into_split();
    if let Some(auth) = sec.auth.as_ref().filter(|a| a.login_on_connect()) {
        let client = auth.client(&addr).map_err(handshake::refused)?;
        // A member that logs in insists on it (ZooKeeper's learnerRequireSasl): an acceptor that
        // runs no login is refused, not trusted.
        match security::login(&mut reader, &mut writer, client, true).await {
            Ok(Login::Done) | Ok(Login::Skipped) => {}
            Err(e) => {
                let msg = format!("node {my_id} to node {peer}: {e}");
                if e.kind() == io::ErrorKind::ConnectionRefused {
                    tracing::warn!("{msg}");
                    shared.note_refusal(&msg);
                }
                return Err(io::Error::new(e.kind(), msg));
            }
        }
    }
    let hello = Hello::new(
        kind,
        my_id,
        peer,
        shared.cfg.cluster_id,
        shared.cfg.fingerprint,
        shared.local_info(),
    );
    writer.feed(&[&hello.encode()]).await?;
    writer.flush().await?;
    let reply = handshake::read(&mut reader).await?;
    let (&tag, rest) = reply
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "empty handshake reply"))?;
    let theirs = Hello::decode(rest).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    if tag == REPLY_REFUSE {
        let reason = String::from_utf8_lossy(&rest[handshake::HELLO_LEN..]).into_owned();
        let msg = format!("node {peer} refused node {my_id}: {reason}");
        tracing::warn!("{msg}");
        shared.note_refusal(&msg);
        return Err(handshake::refused(msg));
    }
    if tag != REPLY_ACCEPT {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unknown handshake reply tag {tag}"),
        ));
    }
    let want = Expect {
        my_id,
        // A probe's answer may name another cluster: the caller decides (see the module doc).
        cluster_id: if kind == LinkKind::Probe {
            theirs.cluster_id
        } else {
            shared.cfg.cluster_id
        },
        fingerprint: shared.cfg.fingerprint,
        from: Some(peer),
        from_known: true,
        kind: Some(kind),
    };
    if let Some(reason) = theirs.mismatch(&want) {
        let msg = format!("node {my_id} refused node {peer}: {reason}");
        tracing::warn!("{msg}");
        shared.note_refusal(&msg);
        if kind != LinkKind::Probe {
            let _ = handshake::write(&mut writer, REPLY_REFUSE, None, &reason).await;
        }
        return Err(handshake::refused(msg));
    }
    if kind != LinkKind::Probe {
        handshake::write(&mut writer, REPLY_ACCEPT, None, "").await?;
    }
    let stream = FramedStream::join(reader, writer, shared.cfg.max_frame, peer);
    Ok((stream, theirs.peer_info()))
}
