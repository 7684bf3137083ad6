//! One client connection: a reader task that frames and decodes, and a writer task that
//! drains the connection's outbound queue onto the socket.
//!
//! The reader never interprets requests; it hands decoded records to the core in arrival
//! order. It decodes nothing after the ConnectRequest until the core says the session is set
//! up, as ZooKeeper does, so pipelined requests cannot overtake the handshake; meanwhile it
//! only buffers what arrives, to notice a client that leaves while the core holds its
//! handshake (a member between leaders, `core::handshake`).
//!
//! Both tasks are generic over the stream's halves: a plaintext connection runs on a
//! `TcpStream`'s owned halves as it always did (`serve`; the code is monomorphised, so TLS adds
//! nothing to it), a TLS connection on the two halves of tokio-rustls's stream (`serve_tls`,
//! after `client_tls` completed the handshake).

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{timeout, Duration, Instant};
use tracing::{debug, Instrument};

use wire::frame::{self, Check};
use wire::{FourLetterWord, Writer};

use crate::config::FourLetterWhitelist;
use crate::fourlw;
use crate::latency::{Latency, ReplyStamps};
use crate::msg::{ConnId, CoreMsg, Transport};
use crate::outbound::{self, Outbound, OutboundRx};
use crate::stats::{ClientPortCounters, ResponseSizes};
use crate::throttle::Throttle;

/// How long a connection may take to send its ConnectRequest
/// (`zookeeper.nio.sessionlessCnxnTimeout`), and its TLS handshake (Netty's SslHandler default).
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

pub struct ConnParams {
    pub max_frame: usize,
    /// `4lw.commands.whitelist`: a word outside it is answered here, without the core.
    pub four_letter_words: FourLetterWhitelist,
    /// Where the writers record the size of every reply and notification (for mntr).
    pub response_sizes: Arc<ResponseSizes>,
    /// `globalOutstandingLimit`, shared by every connection.
    pub throttle: Arc<Throttle>,
    /// Where the writers record the last stage of each write they put on the wire.
    pub latency: Arc<Latency>,
    /// The client ports' accept and handshake counters (mntr, /metrics).
    pub counters: Arc<ClientPortCounters>,
}

/// Serves a plaintext connection.
pub async fn serve(
    stream: TcpStream,
    remote: SocketAddr,
    id: ConnId,
    core: mpsc::Sender<CoreMsg>,
    params: Arc<ConnParams>,
    transport: Transport,
) {
    let span = tracing::debug_span!("conn", peer = %remote, id);
    async move {
        let _ = stream.set_nodelay(true);
        let (rd, wr) = stream.into_split();
        if let Err(reason) = run(rd, wr, remote, id, &core, &params, transport).await {
            debug!(reason, "connection ended");
        }
        let _ = core.send(CoreMsg::Closed { conn: id }).await;
    }
    .instrument(span)
    .await
}

/// Serves a connection whose TLS handshake is done (`transport` says what it proved).
pub async fn serve_tls(
    stream: tokio_rustls::server::TlsStream<TcpStream>,
    remote: SocketAddr,
    id: ConnId,
    core: mpsc::Sender<CoreMsg>,
    params: Arc<ConnParams>,
    transport: Transport,
) {
    let span = tracing::debug_span!("conn", peer = %remote, id, tls = true);
    async move {
        let (rd, wr) = tokio::io::split(stream);
        if let Err(reason) = run(rd, wr, remote, id, &core, &params, transport).await {
            debug!(reason, "connection ended");
        }
        let _ = core.send(CoreMsg::Closed { conn: id }).await;
    }
    .instrument(span)
    .await
}

async fn run<R, W>(
    mut rd: R,
    mut wr: W,
    remote: SocketAddr,
    id: ConnId,
    core: &mpsc::Sender<CoreMsg>,
    params: &ConnParams,
    transport: Transport,
) -> Result<(), &'static str>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let mut buf = BytesMut::with_capacity(4096);

    // The first four bytes: a four-letter word, or the length of a ConnectRequest.
    timeout(HANDSHAKE_TIMEOUT, read_at_least(&mut rd, &mut buf, 4))
        .await
        .map_err(|_| "no handshake in time")??;
    if let Some(word) = FourLetterWord::detect([buf[0], buf[1], buf[2], buf[3]]) {
        ClientPortCounters::add(&params.counters.bytes_received, 4);
        // A word outside the whitelist costs the core task nothing: anyone can send one, before
        // any handshake or authentication.
        if !params.four_letter_words.allows(word) {
            debug!(
                word = word.as_str(),
                "four-letter word not in the whitelist"
            );
            let _ = wr.write_all(fourlw::refusal(word).as_bytes()).await;
            let _ = wr.shutdown().await;
            return Ok(());
        }
        // `stmk` carries the new mask as a big-endian long; ZooKeeper reads it only when the word
        // is whitelisted, and closes without a reply when it is missing. So does paddock.
        let mask = if word == FourLetterWord::Stmk {
            timeout(HANDSHAKE_TIMEOUT, read_at_least(&mut rd, &mut buf, 12))
                .await
                .map_err(|_| "stmk without its 8-byte mask")?
                .map_err(|_| "stmk without its 8-byte mask")?;
            Some(i64::from_be_bytes(buf[4..12].try_into().expect("8 bytes")))
        } else {
            None
        };
        let (tx, rx) = oneshot::channel();
        core.send(CoreMsg::FourLetter {
            word,
            mask,
            remote,
            secure_port: transport.secure_port,
            reply: tx,
        })
        .await
        .map_err(|_| "server stopping")?;
        let text = rx.await.map_err(|_| "server stopping")?;
        let _ = wr.write_all(text.as_bytes()).await;
        let _ = wr.shutdown().await;
        return Ok(());
    }

    let body = timeout(
        HANDSHAKE_TIMEOUT,
        next_frame(&mut rd, &mut buf, params.max_frame),
    )
    .await
    .map_err(|_| "no handshake in time")??;
    ClientPortCounters::add(&params.counters.bytes_received, 4 + body.len() as u64);
    let req = wire::decode_connect_frame(&body).map_err(|_| "malformed ConnectRequest")?;
    ClientPortCounters::bump(&params.counters.connection_requests);

    let (out_tx, out_rx) = outbound::queue();
    let (ready_tx, ready_rx) = oneshot::channel();
    // Dropped by the writer when it ends, which tells the reader to stop as well.
    let (writer_done_tx, mut writer_done) = oneshot::channel::<()>();
    let writer = tokio::spawn(write_loop(
        wr,
        out_rx,
        params.response_sizes.clone(),
        params.latency.clone(),
        writer_done_tx,
    ));
    core.send(CoreMsg::Connect {
        conn: id,
        remote,
        req,
        out: out_tx,
        ready: ready_tx,
        transport,
    })
    .await
    .map_err(|_| "server stopping")?;
    // The core may hold the handshake while its member is between leaders: meanwhile the socket
    // is read (into `buf`, for later) only to learn whether the client gives up, so that the core
    // forgets a held request whose client has left (`Closed` follows the return).
    let mut ready_rx = ready_rx;
    let established = loop {
        tokio::select! {
            biased;
            ready = &mut ready_rx => break ready.unwrap_or(false),
            read = rd.read_buf(&mut buf), if buf.len() < params.max_frame + 4 => match read {
                Ok(0) | Err(_) => {
                    writer.abort();
                    return Err("client left before its session was set up");
                }
                Ok(_) => {}
            },
        }
    };
    if !established {
        let _ = writer.await;
        return Err("session refused");
    }

    let throttle = params.throttle.for_connection();
    let result = loop {
        let body = tokio::select! {
            frame = next_frame(&mut rd, &mut buf, params.max_frame) => match frame {
                Ok(b) => b,
                Err(e) => break Err(e),
            },
            // The writer ends when the core closes the connection: stop reading too.
            _ = &mut writer_done => break Ok(()),
        };
        let received = Instant::now();
        ClientPortCounters::add(&params.counters.bytes_received, 4 + body.len() as u64);
        let (header, req) = match wire::decode_request_frame(&body) {
            Ok((header, req)) => (header, Ok(req)),
            Err((Some(header), e)) => (header, Err(e)),
            Err((None, _)) => break Err("request shorter than its header"),
        };
        // Over globalOutstandingLimit this waits, and the socket is not read meanwhile.
        let slot = tokio::select! {
            slot = throttle.admit() => slot,
            _ = &mut writer_done => break Ok(()),
        };
        if core
            .send(CoreMsg::Request {
                conn: id,
                header,
                req,
                received,
                slot,
            })
            .await
            .is_err()
        {
            break Err("server stopping");
        }
    };
    writer.abort();
    result
}

/// Drains the outbound queue, coalescing whatever is queued into one write.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut wr: W,
    mut rx: OutboundRx,
    sizes: Arc<ResponseSizes>,
    latency: Arc<Latency>,
    _done: oneshot::Sender<()>,
) {
    let mut w = Writer::with_capacity(64 * 1024);
    // The write replies in `w`, timed once the write returns (reused: no allocation per batch).
    let mut timed: Vec<ReplyStamps> = Vec::with_capacity(64);
    let mut scratch: Vec<u64> = Vec::with_capacity(64);
    // Encodes one message; false once it is `Close`.
    let encode = |msg: Outbound, w: &mut Writer, timed: &mut Vec<ReplyStamps>| {
        if let Outbound::WriteReply { stamps, .. } = &msg {
            timed.push(*stamps);
        }
        let before = w.len();
        if !msg.encode(w) {
            return false;
        }
        // ZooKeeper counts replies and notifications, not the handshake, without the prefix.
        if !matches!(msg, Outbound::Connect(_)) {
            sizes.record((w.len() - before - 4) as i64);
        }
        true
    };
    while let Some(msg) = rx.recv().await {
        let mut close = !encode(msg, &mut w, &mut timed);
        while !close && w.len() < 1 << 20 {
            match rx.try_recv() {
                Some(msg) => close = !encode(msg, &mut w, &mut timed),
                None => break,
            }
        }
        if !w.is_empty() {
            if wr.write_all(&w.buf).await.is_err() {
                return;
            }
            w.buf.clear();
        }
        if !timed.is_empty() {
            latency.written_all(&timed, std::time::Instant::now(), &mut scratch);
            timed.clear();
        }
        if close {
            let _ = wr.shutdown().await;
            return;
        }
    }
}

async fn read_at_least<R: AsyncRead + Unpin>(
    rd: &mut R,
    buf: &mut BytesMut,
    n: usize,
) -> Result<(), &'static str> {
    while buf.len() < n {
        if rd.read_buf(buf).await.map_err(|_| "read error")? == 0 {
            return Err("peer closed");
        }
    }
    Ok(())
}

/// Reads one whole frame body. An oversized or negative length ends the connection before
/// anything is allocated for it.
async fn next_frame<R: AsyncRead + Unpin>(
    rd: &mut R,
    buf: &mut BytesMut,
    max: usize,
) -> Result<Vec<u8>, &'static str> {
    loop {
        match frame::check(buf, max) {
            Ok(Check::Frame { len }) => {
                buf.advance(4);
                let body = buf.split_to(len).to_vec();
                return Ok(body);
            }
            Ok(Check::NeedMore(n)) => {
                buf.reserve(n.min(64 * 1024));
                if rd.read_buf(buf).await.map_err(|_| "read error")? == 0 {
                    return Err("peer closed");
                }
            }
            Err(_) => return Err("frame length out of bounds"),
        }
    }
}
