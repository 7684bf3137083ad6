//! The outbound side: the raft thread's queue, one writer task and one snapshot task per peer,
//! and the connector's half of the handshake.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use protobuf::Message as _;
use raft::eraftpb::{Message, MessageType};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use super::frame::FramedStream;
use super::handshake::{self, Expect, Hello, HANDSHAKE_MAX, REPLY_ACCEPT, REPLY_REFUSE};
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

/// The raft thread's sender (implements [`Transport`]): queues each message for its peer's writer
/// task and returns. Never blocks; a full queue or unknown peer drops the message and counts it.
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
        let peers = lock(&self.shared.peers);
        for m in msgs {
            let Some(p) = peers.get(&m.to) else {
                bump(&self.shared.dropped_unknown, 1);
                tracing::debug!(to = m.to, "no address for peer; message dropped");
                continue;
            };
            let snapshot = m.get_msg_type() == MessageType::MsgSnapshot;
            if p.tx.try_send(m).is_err() {
                bump(&p.counters.msgs_dropped, 1);
                if snapshot {
                    // Raft waits for the outcome of a snapshot; tell it now rather than after
                    // its timeout. Through the handle's channel: this does not re-enter raft.
                    bump(&p.counters.snapshots_failed, 1);
                    self.shared.snapshot_report(p.id, false);
                }
            }
        }
    }
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
        let end = run_link(&shared, peer, &c, stream, &mut rx, &snap_tx, &mut stop).await;
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

async fn run_link(
    shared: &Shared,
    peer: u64,
    c: &Counters,
    stream: FramedStream,
    rx: &mut mpsc::Receiver<Message>,
    snap_tx: &mpsc::Sender<Message>,
    stop: &mut watch::Receiver<bool>,
) -> LinkEnd {
    let (mut reader, mut writer) = stream.into_split();
    // The acceptor never writes on a Raft link after the handshake: any read result means the
    // link is gone (EOF when the peer's process died or closed it).
    let mut probe = [0u8; 1];
    let mut batch = Vec::with_capacity(BATCH);
    loop {
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
        }
        let mut frames = Vec::with_capacity(batch.len());
        for m in batch.drain(..) {
            if m.get_msg_type() == MessageType::MsgSnapshot {
                if snap_tx.try_send(m).is_err() {
                    bump(&c.snapshots_failed, 1);
                    shared.snapshot_report(peer, false);
                }
                continue;
            }
            match m.write_to_bytes() {
                Ok(b) if b.len() < shared.cfg.max_frame => frames.push(b),
                Ok(b) => {
                    tracing::error!(
                        peer,
                        bytes = b.len(),
                        max_frame = shared.cfg.max_frame,
                        msg_type = ?m.get_msg_type(),
                        "raft message exceeds max_frame; dropped"
                    );
                    bump(&c.msgs_dropped, 1);
                }
                Err(e) => {
                    tracing::error!(peer, error = %e, "cannot encode a raft message; dropped");
                    bump(&c.msgs_dropped, 1);
                }
            }
        }
        if frames.is_empty() {
            continue;
        }
        // Every frame, then one flush. A peer that stops reading (frozen, or its host gone without
        // a reset) fills the socket buffers: give up on the link rather than wait for TCP's
        // retransmission timeout.
        let write = async {
            for f in &frames {
                writer.feed(&[&[TAG_MSG], f]).await?;
            }
            writer.flush().await
        };
        match tokio::time::timeout(WRITE_TIMEOUT, write).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return LinkEnd::WriteFailed(e),
            Err(_) => {
                return LinkEnd::WriteFailed(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("writing to the peer took over {WRITE_TIMEOUT:?}"),
                ))
            }
        }
        bump(&c.msgs_sent, frames.len() as u64);
        bump(
            &c.bytes_sent,
            frames.iter().map(|f| f.len() as u64 + 5).sum::<u64>(),
        );
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
    let stream = FramedStream::new(tcp, HANDSHAKE_MAX, peer);
    let (mut reader, mut writer) = stream.into_split();
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
