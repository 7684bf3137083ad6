//! One peer connection's byte stream, plain TCP or TLS, shared by the tasks and the thread that
//! use it.
//!
//! A [`Link`] is held in an `Arc` by its reading half, its writing half and, for an outbound Raft
//! link, the raft thread, which writes frames to the socket itself while the link's writer task is
//! idle (`peer.rs`, `Outbox`). For that the link offers a non-blocking [`Link::try_send`] that any
//! thread may call, beside the async halves ([`LinkReader`], [`LinkWriter`]) the tasks use.
//!
//! A TLS link keeps its `rustls::Connection` under a mutex. Every operation that touches it holds
//! the lock only for CPU work and non-blocking socket calls: sending moves the plaintext into the
//! session (which encrypts it into its own outgoing buffer) and writes what the socket takes;
//! receiving feeds the socket's bytes to the session and returns the plaintext it yields. Bytes
//! the socket did not take stay in the session, in order, so a later send or flush writes them
//! first; [`Link::try_send`] reports whether anything is left, exactly as the rest of a plain
//! link's buffer does. The session's buffers are unbounded (`set_buffer_limit(None)`): the callers
//! bound what they queue (the raft thread's batches, the writer's `BATCH`), and a session that
//! refused plaintext halfway would break the frame it was given.
//!
//! The handshakes are done with tokio-rustls before a `Link` exists ([`connect_tls`],
//! [`accept_tls`]); a link that comes out of them has authenticated the other end by the trust
//! store, and the acceptor knows the certificate the connector presented ([`Link::peer_certificate`]).

use std::io::{self, Read, Write};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The first byte of a TLS record carrying a handshake message (a ClientHello opens every TLS
/// connection); paddock's plaintext links open with a frame length whose first byte is 0.
pub(crate) const TLS_HANDSHAKE_BYTE: u8 = 0x16;

/// How many bytes one read from the socket hands to a TLS session at most.
const TLS_READ_CHUNK: usize = 64 * 1024;

/// One connection to a peer: a TCP socket, and a TLS session over it when the link is encrypted.
pub(crate) struct Link {
    tcp: TcpStream,
    tls: Option<Mutex<rustls::Connection>>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

fn lock(m: &Mutex<rustls::Connection>) -> std::sync::MutexGuard<'_, rustls::Connection> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// `std::io::Write`/`Read` over a tokio socket that never blocks: `WouldBlock` when the socket
/// is full (or empty). What rustls's `write_tls`/`read_tls` take.
struct NonBlocking<'a>(&'a TcpStream);

impl Write for NonBlocking<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Read for NonBlocking<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }
}

impl Link {
    pub(crate) fn plain(tcp: TcpStream) -> Arc<Link> {
        Arc::new(Link { tcp, tls: None })
    }

    pub(crate) fn tls(tcp: TcpStream, conn: rustls::Connection) -> Arc<Link> {
        let mut conn = conn;
        conn.set_buffer_limit(None);
        Arc::new(Link {
            tcp,
            tls: Some(Mutex::new(conn)),
        })
    }

    pub(crate) fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The end-entity certificate the other end presented in the TLS handshake.
    pub(crate) fn peer_certificate(&self) -> Option<CertificateDer<'static>> {
        let conn = lock(self.tls.as_ref()?);
        conn.peer_certificates()
            .and_then(|chain| chain.first())
            .map(|c| c.clone().into_owned())
    }

    /// Writes what the socket takes now, never waiting. A plain link writes from `buf` and leaves
    /// in it what the socket did not take; a TLS link takes all of `buf` into its session
    /// (leaving `buf` empty) and keeps the ciphertext the socket did not take. `Ok(true)` when
    /// nothing is left to write, `Ok(false)` when a later call (or [`Link::flush`]) must write the
    /// rest. An error is the socket's or the session's: the link is unusable.
    pub(crate) fn try_send(&self, buf: &mut Vec<u8>) -> io::Result<bool> {
        match &self.tls {
            None => {
                let mut written = 0;
                let result = loop {
                    if written == buf.len() {
                        break Ok(true);
                    }
                    match self.tcp.try_write(&buf[written..]) {
                        Ok(0) => break Err(io::ErrorKind::WriteZero.into()),
                        Ok(n) => written += n,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Ok(false),
                        Err(e) => break Err(e),
                    }
                };
                buf.drain(..written);
                result
            }
            Some(tls) => {
                let mut conn = lock(tls);
                if !buf.is_empty() {
                    conn.writer().write_all(buf)?;
                    buf.clear();
                }
                self.write_ciphertext(&mut conn)
            }
        }
    }

    /// Writes the session's pending ciphertext until the socket is full; true when none is left.
    fn write_ciphertext(&self, conn: &mut rustls::Connection) -> io::Result<bool> {
        while conn.wants_write() {
            match conn.write_tls(&mut NonBlocking(&self.tcp)) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Waits until everything handed to [`Link::try_send`] so far is on the socket.
    pub(crate) async fn flush(&self, buf: &mut Vec<u8>) -> io::Result<()> {
        loop {
            if self.try_send(buf)? {
                return Ok(());
            }
            self.tcp.writable().await?;
        }
    }

    fn poll_send(&self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        match &self.tls {
            None => loop {
                ready!(self.tcp.poll_write_ready(cx))?;
                match self.tcp.try_write(data) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    r => return Poll::Ready(r),
                }
            },
            Some(tls) => {
                // Take more plaintext only once the last write's ciphertext is out, as a socket
                // takes more only once it has room: a peer that stops reading stops the writer.
                ready!(self.poll_flush_tls(cx, tls))?;
                let mut conn = lock(tls);
                conn.writer().write_all(data)?;
                // Best effort now; the rest goes out with the next write or the flush.
                self.write_ciphertext(&mut conn)?;
                Poll::Ready(Ok(data.len()))
            }
        }
    }

    fn poll_flush_tls(
        &self,
        cx: &mut Context<'_>,
        tls: &Mutex<rustls::Connection>,
    ) -> Poll<io::Result<()>> {
        loop {
            if self.write_ciphertext(&mut lock(tls))? {
                return Poll::Ready(Ok(()));
            }
            ready!(self.tcp.poll_write_ready(cx))?;
        }
    }

    fn poll_receive(&self, cx: &mut Context<'_>, out: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let Some(tls) = &self.tls else {
            loop {
                ready!(self.tcp.poll_read_ready(cx))?;
                let unfilled = out.initialize_unfilled();
                match self.tcp.try_read(unfilled) {
                    Ok(n) => {
                        out.advance(n);
                        return Poll::Ready(Ok(()));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
        };
        loop {
            {
                let mut conn = lock(tls);
                let unfilled = out.initialize_unfilled();
                match conn.reader().read(unfilled) {
                    Ok(n) => {
                        // 0: the peer closed the session cleanly (close_notify).
                        out.advance(n);
                        return Poll::Ready(Ok(()));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    // The socket closed without close_notify: a member killed or stopped without a
                    // goodbye, as a plain link's EOF. A cut cannot pass for a whole message: every
                    // frame carries its length, and a frame cut short is an error of its own.
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                        return Poll::Ready(Ok(()));
                    }
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
            ready!(self.tcp.poll_read_ready(cx))?;
            let mut conn = lock(tls);
            let mut limited = NonBlocking(&self.tcp).take(TLS_READ_CHUNK as u64);
            match conn.read_tls(&mut limited) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
            if let Err(e) = conn.process_new_packets() {
                // Tell the peer why (the session queued an alert), then give up on the link.
                let _ = self.write_ciphertext(&mut conn);
                return Poll::Ready(Err(match e {
                    // In TLS 1.3 the connector's handshake ends before the acceptor has checked
                    // its certificate: a refusal arrives as an alert on the first read.
                    rustls::Error::AlertReceived(alert) => io::Error::new(
                        io::ErrorKind::ConnectionRefused,
                        format!("TLS handshake failed: the peer refused the session ({alert:?})"),
                    ),
                    e => io::Error::new(io::ErrorKind::InvalidData, e),
                }));
            }
            // A post-handshake message may want an answer (a key update).
            self.write_ciphertext(&mut conn)?;
        }
    }

    fn poll_close(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(tls) = &self.tls {
            lock(tls).send_close_notify();
            ready!(self.poll_flush_tls(cx, tls))?;
        }
        // Half-close the sending direction, as a dropped write half does: the peer reads EOF
        // after our last byte while we can still read.
        let _ = socket2::SockRef::from(&self.tcp).shutdown(std::net::Shutdown::Write);
        Poll::Ready(Ok(()))
    }
}

/// The reading half of a link (what `FrameReader` buffers).
pub(crate) struct LinkReader(pub(crate) Arc<Link>);

/// The writing half of a link (what `FrameWriter` buffers).
pub(crate) struct LinkWriter(pub(crate) Arc<Link>);

impl AsyncRead for LinkReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.0.poll_receive(cx, buf)
    }
}

impl AsyncWrite for LinkWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.0.poll_send(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &self.0.tls {
            Some(tls) => self.0.poll_flush_tls(cx, tls),
            None => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.0.poll_close(cx)
    }
}

/// The name a member's certificate must be valid for: its configured host, an IP literal or a
/// DNS name (`host:port` or `[v6]:port` as written on its server line).
pub(crate) fn server_name(addr: &str) -> io::Result<ServerName<'static>> {
    let host = match addr.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => addr,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_string()).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{host:?} is neither an IP address nor a DNS name a certificate can name: {e}"),
        )
    })
}

/// Runs the connector's TLS handshake on `tcp`, verifying that the acceptor's certificate chains
/// to the trust store and (per the config's verifier) that it names `name`.
pub(crate) async fn connect_tls(
    config: Arc<rustls::ClientConfig>,
    name: ServerName<'static>,
    tcp: TcpStream,
    timeout: Duration,
) -> io::Result<Arc<Link>> {
    let connector = tokio_rustls::TlsConnector::from(config);
    let (tcp, conn) = within(timeout, connector.connect(name, tcp))
        .await?
        .into_inner();
    Ok(Link::tls(tcp, rustls::Connection::Client(conn)))
}

/// Runs the acceptor's TLS handshake on `tcp`, which requires and verifies a client certificate.
pub(crate) async fn accept_tls(
    config: Arc<rustls::ServerConfig>,
    tcp: TcpStream,
    timeout: Duration,
) -> io::Result<Arc<Link>> {
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let (tcp, conn) = within(timeout, acceptor.accept(tcp)).await?.into_inner();
    Ok(Link::tls(tcp, rustls::Connection::Server(conn)))
}

/// A handshake bounded by `timeout`, its failure made a refusal by `tls_error`.
async fn within<T>(
    timeout: Duration,
    handshake: impl std::future::Future<Output = io::Result<T>>,
) -> io::Result<T> {
    match tokio::time::timeout(timeout, handshake).await {
        Ok(r) => r.map_err(tls_error),
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no TLS handshake within {timeout:?}"),
        )),
    }
}

/// A failed handshake is a refusal (kind `ConnectionRefused`) naming what TLS said: the other
/// end's certificate did not verify, or it refused ours.
fn tls_error(e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::InvalidData {
        io::Error::new(
            io::ErrorKind::ConnectionRefused,
            format!("TLS handshake failed: {e}"),
        )
    } else {
        e
    }
}

/// Waits for the connection's first byte without consuming it, within `timeout`.
pub(crate) async fn first_byte(tcp: &TcpStream, timeout: Duration) -> io::Result<u8> {
    let mut b = [0u8; 1];
    match tokio::time::timeout(timeout, tcp.peek(&mut b)).await {
        Ok(Ok(0)) => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "closed before sending anything",
        )),
        Ok(Ok(_)) => Ok(b[0]),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("nothing received within {timeout:?}"),
        )),
    }
}
