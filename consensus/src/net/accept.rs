//! The accepting side: the listener, the acceptor's half of the handshake, and the reader of each
//! inbound Raft or Snapshot link (which reassembles chunked snapshots).

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use protobuf::Message as _;
use raft::eraftpb::{Message, MessageType};
use tokio::net::{TcpListener, TcpStream};

use super::frame::{FrameReader, FramedStream};
use super::handshake::{
    self, Expect, Hello, HANDSHAKE_MAX, HANDSHAKE_TIMEOUT, REPLY_ACCEPT, REPLY_REFUSE,
};
use super::link::{self, Link};
use super::peer::{TAG_MSG, TAG_SNAP_CHUNK, TAG_SNAP_END, TAG_SNAP_START};
use super::security;
use super::{bump, stopped, Counters, LinkKind, Shared};

/// Reserved up front for an incoming snapshot at most; the rest grows as chunks arrive.
const SNAPSHOT_RESERVE: u64 = 64 * 1024 * 1024;

pub(crate) async fn accept_loop(shared: Arc<Shared>, listener: TcpListener) {
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        let r = tokio::select! {
            biased;
            _ = stopped(&mut shutdown) => return,
            r = listener.accept() => r,
        };
        match r {
            Ok((stream, addr)) => {
                tokio::spawn(serve(shared.clone(), stream, addr));
            }
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!(node = shared.cfg.my_id, error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}

async fn serve(shared: Arc<Shared>, tcp: TcpStream, addr: std::net::SocketAddr) {
    let mut shutdown = shared.shutdown.subscribe();
    tokio::select! {
        biased;
        _ = stopped(&mut shutdown) => {}
        r = handshake_and_read(&shared, tcp, addr) => {
            if let Err(e) = r {
                tracing::warn!(node = shared.cfg.my_id, %addr, error = %e, "peer connection closed");
            }
        }
    }
}

async fn handshake_and_read(
    shared: &Arc<Shared>,
    tcp: TcpStream,
    addr: std::net::SocketAddr,
) -> io::Result<()> {
    let my_id = shared.cfg.my_id;
    let sec = &shared.cfg.security;
    let _ = tcp.set_nodelay(true);
    // TLS or plaintext, told apart by the first byte (a ClientHello opens with 0x16, a plaintext
    // frame with its length's high byte, 0): ZooKeeper's `portUnification` does the same.
    let first = link::first_byte(&tcp, HANDSHAKE_TIMEOUT)
        .await
        .map_err(|e| io::Error::new(e.kind(), format!("before the handshake: {e}")))?;
    let link = if first == link::TLS_HANDSHAKE_BYTE {
        let Some(tls) = &sec.tls else {
            return Err(refuse_silently(
                shared,
                addr,
                "a TLS link, and this member has no TLS configured (sslQuorum, ssl.quorum.*)",
            ));
        };
        match link::accept_tls(tls.server_config(), tcp, HANDSHAKE_TIMEOUT).await {
            Ok(l) => {
                bump(&shared.accepted_tls, 1);
                l
            }
            Err(e) => return Err(refuse_silently(shared, addr, &e.to_string())),
        }
    } else if sec.accept_plain {
        bump(&shared.accepted_plain, 1);
        Link::plain(tcp)
    } else {
        return Err(refuse_silently(
            shared,
            addr,
            "a plaintext link, and this member accepts only TLS (sslQuorum=true without portUnification)",
        ));
    };
    let tls_link = link.is_tls();
    let (mut reader, mut writer) = FramedStream::new(link, HANDSHAKE_MAX, 0).into_split();
    let mut first = match handshake::read(&mut reader).await {
        Ok(b) => b,
        Err(e) => {
            if e.kind() == io::ErrorKind::InvalidData {
                bump(&shared.bad_frames, 1);
            }
            return Err(io::Error::new(
                e.kind(),
                format!("before the handshake: {e}"),
            ));
        }
    };
    let mut login: Option<String> = None;
    if security::is_auth_frame(&first) {
        match security::check_login(&mut reader, &mut writer, sec.auth.as_ref(), &first).await {
            Ok(identity) => login = identity,
            Err(e) => {
                if e.kind() == io::ErrorKind::ConnectionRefused {
                    bump(&shared.login_failures, 1);
                    return Err(refuse_silently(shared, addr, &e.to_string()));
                }
                return Err(e);
            }
        }
        first = handshake::read(&mut reader).await?;
    }
    if login.is_none() && sec.auth.as_ref().is_some_and(|a| a.require_on_accept()) {
        let _ = writer.close().await;
        return Err(refuse_silently(
            shared,
            addr,
            "a link that did not log in, and this member requires it (quorum.auth.serverRequireSasl=true)",
        ));
    }
    let mine = |kind: u8, to: u64| Hello {
        kind,
        ..Hello::new(
            LinkKind::Probe,
            my_id,
            to,
            shared.cfg.cluster_id,
            shared.cfg.fingerprint,
            shared.local_info(),
        )
    };
    let theirs = match Hello::decode(&first) {
        Ok(h) => h,
        Err(e) => {
            let reason = format!("bad handshake: {e}");
            refuse(shared, &mut writer, &mine(0, 0), addr, &reason).await;
            return Ok(());
        }
    };
    let reply = mine(theirs.kind, theirs.from);
    // A probe is answered whatever cluster it names, from whoever (see the module doc).
    let probe = theirs.kind == LinkKind::Probe as u8;
    let want = Expect {
        my_id,
        cluster_id: if probe {
            theirs.cluster_id
        } else {
            shared.cfg.cluster_id
        },
        fingerprint: shared.cfg.fingerprint,
        from: None,
        from_known: theirs.from != my_id && (probe || shared.address(theirs.from).is_some()),
        kind: None,
    };
    if let Some(reason) = theirs.mismatch(&want) {
        refuse(shared, &mut writer, &reply, addr, &reason).await;
        return Ok(());
    }
    let peer = theirs.from;
    // A TLS peer is one of the trust store's; the member it claims to be must be the one its
    // certificate names (ZooKeeper checks only the chain, so any member could claim another's id).
    if tls_link && sec.tls.as_ref().is_some_and(|t| t.bind_identity()) {
        if let Some(book) = shared.address(peer) {
            if let Err(why) = certificate_names(reader.link(), &book) {
                let reason =
                    format!("node {peer}'s certificate is not valid for its address {book}: {why}");
                refuse(shared, &mut writer, &Hello::zeroed(), addr, &reason).await;
                return Ok(());
            }
        }
    }
    // Likewise a login: a Kerberos member's principal must name the host of the member it claims
    // to be (ZooKeeper only checks that it names some member's host).
    if let (Some(identity), Some(auth), Some(book)) =
        (&login, sec.auth.as_ref(), shared.address(peer))
    {
        if let Err(why) = auth.may_be_member(identity, &book) {
            bump(&shared.login_failures, 1);
            let reason = format!("node {peer} logged in as {identity}, which cannot be it: {why}");
            refuse(shared, &mut writer, &Hello::zeroed(), addr, &reason).await;
            return Ok(());
        }
    }
    let kind = LinkKind::from_u8(theirs.kind).unwrap_or(LinkKind::Probe);
    if shared.is_stopped() {
        return Ok(()); // shutting down: accept nothing new
    }
    handshake::write(&mut writer, REPLY_ACCEPT, Some(&reply), "").await?;
    if kind == LinkKind::Probe {
        let _ = writer.close().await;
        return Ok(());
    }
    let confirm = handshake::read(&mut reader).await?;
    match confirm.split_first() {
        Some((&REPLY_ACCEPT, _)) => {}
        Some((&REPLY_REFUSE, reason)) => {
            let msg = format!(
                "node {peer} refused node {my_id}: {}",
                String::from_utf8_lossy(reason)
            );
            tracing::warn!(%addr, "{msg}");
            shared.note_refusal(&msg);
            return Ok(());
        }
        _ => {
            bump(&shared.bad_frames, 1);
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("node {peer} sent a bad handshake confirmation"),
            ));
        }
    }
    let stream = FramedStream::join(reader, writer, shared.cfg.max_frame, peer);
    match kind {
        LinkKind::App => {
            if shared.app_tx.try_send((peer, stream)).is_err() {
                tracing::warn!(
                    node = my_id,
                    peer,
                    "app link from peer closed: nobody takes app streams or too many are waiting"
                );
            }
            Ok(())
        }
        LinkKind::Raft | LinkKind::Snapshot | LinkKind::Probe => {
            read_link(shared, peer, kind, stream).await
        }
    }
}

/// Refuses a link that has not authenticated: logged and counted, and closed without a byte, so
/// a stranger learns nothing.
fn refuse_silently(shared: &Shared, addr: std::net::SocketAddr, why: &str) -> io::Error {
    let msg = format!(
        "node {} refused a connection from {addr}: {why}",
        shared.cfg.my_id
    );
    shared.note_refusal(&msg);
    io::Error::new(io::ErrorKind::ConnectionRefused, msg)
}

/// Whether the TLS peer's certificate is valid for the host of `addr` (`host:port`).
fn certificate_names(link: &Link, addr: &str) -> Result<(), String> {
    let cert = link
        .peer_certificate()
        .ok_or("it presented no certificate")?;
    let name = link::server_name(addr).map_err(|e| e.to_string())?;
    let parsed = rustls::server::ParsedCertificate::try_from(&cert).map_err(|e| e.to_string())?;
    rustls::client::verify_server_name(&parsed, &name).map_err(|e| e.to_string())
}

async fn refuse(
    shared: &Shared,
    writer: &mut super::frame::FrameWriter,
    reply: &Hello,
    addr: std::net::SocketAddr,
    reason: &str,
) {
    let msg = format!(
        "node {} refused a connection from {addr}: {reason}",
        shared.cfg.my_id
    );
    tracing::warn!("{msg}");
    shared.note_refusal(&msg);
    let _ = handshake::write(writer, REPLY_REFUSE, Some(reply), reason).await;
    let _ = writer.close().await;
}

/// Runs an inbound Raft or Snapshot link until it closes; a Raft link's end is a lost peer.
async fn read_link(
    shared: &Arc<Shared>,
    peer: u64,
    kind: LinkKind,
    stream: FramedStream,
) -> io::Result<()> {
    let c = shared
        .counters(peer)
        .unwrap_or_else(|| Arc::new(Counters::default()));
    let (mut reader, _writer) = stream.into_split();
    if kind != LinkKind::Raft {
        return read_frames(shared, peer, &c, &mut reader).await;
    }
    // Several inbound Raft links from one peer may coexist for a moment (it reconnected before
    // we saw the old one close); each is read to its end. A stranger who passed the handshake
    // cannot push out a peer's link this way.
    bump(&c.inbound_links, 1);
    let r = read_frames(shared, peer, &c, &mut reader).await;
    c.inbound_links.fetch_sub(1, Ordering::Relaxed);
    tracing::info!(
        node = shared.cfg.my_id,
        peer,
        "inbound raft link from peer closed"
    );
    shared.peer_lost(peer);
    r
}

/// A snapshot being reassembled.
struct Pending {
    msg: Message,
    total: u64,
    data: BytesMut,
    crc: crc32fast::Hasher,
    chunks: u64,
}

fn bad(shared: &Shared, peer: u64, what: String) -> io::Error {
    bump(&shared.bad_frames, 1);
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("from node {peer}: {what}"),
    )
}

async fn read_frames(
    shared: &Shared,
    peer: u64,
    c: &Counters,
    reader: &mut FrameReader,
) -> io::Result<()> {
    let my_id = shared.cfg.my_id;
    let mut pending: Option<Pending> = None;
    loop {
        let frame = match reader.recv().await {
            Ok(Some(f)) => f,
            Ok(None) => {
                if pending.is_some() {
                    return Err(bad(shared, peer, "link closed inside a snapshot".into()));
                }
                return Ok(());
            }
            Err(e) => {
                if e.kind() == io::ErrorKind::InvalidData {
                    bump(&shared.bad_frames, 1);
                }
                return Err(e);
            }
        };
        bump(&c.bytes_received, frame.len() as u64 + 4);
        let (&tag, body) = frame
            .split_first()
            .ok_or_else(|| bad(shared, peer, "empty frame".into()))?;
        match tag {
            TAG_MSG => {
                let msg = decode(shared, peer, frame.slice(1..))?;
                if msg.get_msg_type() == MessageType::MsgSnapshot
                    && !msg.get_snapshot().get_data().is_empty()
                {
                    return Err(bad(shared, peer, "snapshot data outside chunks".into()));
                }
                deliver(shared, peer, c, msg);
            }
            TAG_SNAP_START => {
                if pending.is_some() {
                    return Err(bad(
                        shared,
                        peer,
                        "a snapshot started inside another".into(),
                    ));
                }
                if body.len() < 8 {
                    return Err(bad(shared, peer, "short snapshot header".into()));
                }
                let total = u64::from_be_bytes(body[..8].try_into().unwrap_or([0; 8]));
                if total > shared.cfg.max_snapshot {
                    return Err(bad(
                        shared,
                        peer,
                        format!(
                            "snapshot of {total} bytes exceeds the cap of {} bytes",
                            shared.cfg.max_snapshot
                        ),
                    ));
                }
                let msg = decode(shared, peer, frame.slice(9..))?;
                if msg.get_msg_type() != MessageType::MsgSnapshot {
                    return Err(bad(
                        shared,
                        peer,
                        "snapshot header is not a MsgSnapshot".into(),
                    ));
                }
                pending = Some(Pending {
                    msg,
                    total,
                    data: BytesMut::with_capacity(total.min(SNAPSHOT_RESERVE) as usize),
                    crc: crc32fast::Hasher::new(),
                    chunks: 0,
                });
            }
            TAG_SNAP_CHUNK => {
                let p = pending
                    .as_mut()
                    .ok_or_else(|| bad(shared, peer, "snapshot chunk outside a snapshot".into()))?;
                if p.data.len() as u64 + body.len() as u64 > p.total {
                    return Err(bad(
                        shared,
                        peer,
                        format!("snapshot chunks exceed the announced {} bytes", p.total),
                    ));
                }
                p.crc.update(body);
                p.data.extend_from_slice(body);
                p.chunks += 1;
                bump(&c.snapshot_chunks_received, 1);
            }
            TAG_SNAP_END => {
                let p = pending
                    .take()
                    .ok_or_else(|| bad(shared, peer, "snapshot end outside a snapshot".into()))?;
                if body.len() != 4 {
                    return Err(bad(shared, peer, "bad snapshot end".into()));
                }
                let want = u32::from_be_bytes(body.try_into().unwrap_or([0; 4]));
                let got = p.crc.finalize();
                if p.data.len() as u64 != p.total || want != got {
                    return Err(bad(
                        shared,
                        peer,
                        format!(
                            "snapshot damaged: {} of {} bytes, crc {got:#010x}, expected {want:#010x}",
                            p.data.len(),
                            p.total
                        ),
                    ));
                }
                let mut msg = p.msg;
                let index = msg.get_snapshot().get_metadata().index;
                tracing::info!(
                    node = my_id,
                    peer,
                    index,
                    bytes = p.total,
                    chunks = p.chunks,
                    "snapshot received"
                );
                let data = p.data.freeze();
                if let Some(check) = shared.cfg.check_snapshot.clone() {
                    let bytes = data.clone();
                    let verdict = tokio::task::spawn_blocking(move || (check.0)(&bytes))
                        .await
                        .unwrap_or_else(|e| Err(format!("the check did not finish: {e}")));
                    if let Err(why) = verdict {
                        return Err(bad(
                            shared,
                            peer,
                            format!("snapshot at index {index} does not restore: {why}"),
                        ));
                    }
                }
                msg.mut_snapshot().set_data(data);
                bump(&c.snapshots_received, 1);
                deliver(shared, peer, c, msg);
            }
            other => return Err(bad(shared, peer, format!("unknown frame tag {other}"))),
        }
    }
}

fn decode(shared: &Shared, peer: u64, bytes: Bytes) -> io::Result<Message> {
    Message::parse_from_carllerche_bytes(&bytes)
        .map_err(|e| bad(shared, peer, format!("undecodable raft message: {e}")))
}

/// Steps a message that the link's handshake vouches for.
fn deliver(shared: &Shared, peer: u64, c: &Counters, msg: Message) {
    if msg.from != peer || msg.to != shared.cfg.my_id {
        tracing::warn!(
            node = shared.cfg.my_id,
            peer,
            from = msg.from,
            to = msg.to,
            "message addressed inconsistently with its link; dropped"
        );
        return;
    }
    bump(&c.msgs_received, 1);
    match shared.inbound() {
        Some(i) => i.step(msg),
        None => tracing::debug!(peer, "message before attach; dropped"),
    }
}
