//! The client port's TLS, from ZooKeeper's own keys (`secureClientPort`,
//! `secureClientPortAddress`, `client.portUnification`, `ssl.*`, `serverCnxnFactory`), and the
//! x509 identity a client's certificate gives its connection (X509AuthenticationProvider).
//!
//! | keys | `clientPort` | `secureClientPort` |
//! |---|---|---|
//! | none | plaintext | none |
//! | `secureClientPort` | plaintext | TLS |
//! | `client.portUnification=true` | plaintext and TLS, told apart by the first byte | none |
//! | both | plaintext and TLS | TLS |
//!
//! ```text
//!  accept ─▶ Port::Plain ─────────────────────────────────────────▶ connection::serve
//!        └─▶ Port::Unified ─ peek 1 byte ─ 0x16? ─no──────────────▶ connection::serve
//!        │                                    └─yes─┐
//!        └─▶ Port::Secure ──────────────────────────┴▶ TLS handshake (10 s) ─▶ client certificate
//!               ─▶ Transport { x509: subject } ─▶ connection::serve_tls ─▶ core: ip, [super], x509
//! ```
//!
//! What is ZooKeeper's (NettyServerCnxnFactory, ClientX509Util, X509AuthenticationProvider in
//! 3.9.5), and what paddock does differently:
//!
//! - TLS needs `serverCnxnFactory=...NettyServerCnxnFactory`. ZooKeeper's default NIO factory
//!   refuses `secureClientPort` at start ("SSL isn't supported") and ignores
//!   `client.portUnification`; paddock refuses both without the Netty factory, since the second
//!   would leave clients that expect TLS unable to connect to a server that says it started.
//! - A unified port takes a connection whose first byte is 0x16 (a TLS handshake record) as
//!   TLS, anything else (a ZooKeeper frame's length, a four-letter word) as plaintext, as
//!   ZooKeeper's `DualModeSslHandler` does.
//! - `ssl.clientAuth` need, want or none. A verified certificate gives the connection
//!   `x509:<subject>` (Java's `X500Principal.getName()`, `tls::rfc2253_name`), preceded by
//!   `super:<subject>` when the subject equals `X509AuthenticationProvider.superUser`, after its
//!   `ip:` id: ZooKeeper's ids, added in its order. With `want`, a client without a certificate
//!   connects with its `ip:` id only.
//! - The key store and the trust store are read again when their files change, whether or not
//!   `client.certReload` is set: ZooKeeper builds a new SSL context from the files for every
//!   connection it accepts, so new connections always see new files there too (its
//!   `client.certReload` watcher changes nothing on the server's Netty port; with
//!   `ssl.authProvider` set, it uses the provider's stores instead, loaded once). paddock watches
//!   every second instead of reading per connection (a PKCS12 store costs a PBKDF2 per read).
//!   A file that does not load keeps the previous configuration (ZooKeeper fails every new TLS
//!   connection until the file is fixed).
//! - The client certificate is checked once, by the handshake, against the trust store as it
//!   is now. ZooKeeper checks it a second time with the X509AuthenticationProvider's trust
//!   manager, loaded once (when its providers are first used): after a trust store rotation without restart it closes
//!   clients whose certificates come from a CA added since. A PEM trust store keeps every CA
//!   in it, also several with the same subject (ZooKeeper 3.9.5 keeps one per subject,
//!   ZOOKEEPER-4992).
//! - `ssl.clientHostnameVerification` (with `ssl.hostnameVerification`): the client
//!   certificate must name the address the connection comes from in its subject alternative
//!   names (an IP SAN; no reverse DNS). ZooKeeper 3.9's default `fips-mode` leaves that to the
//!   JDK's endpoint identification.
//! - No trust store with `clientAuth` need or want refuses the start (ZooKeeper falls back to
//!   the JVM's cacerts, every public CA); `ssl.crl` and `ssl.ocsp` refuse it too (`tls`'s
//!   module documentation says why).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::timeout;
use tokio_rustls::TlsAcceptor;
use tracing::{debug, info, warn};

use crate::config::{ClientTlsConfig, Config, NETTY_FACTORY};
use crate::connection::{self, ConnParams, HANDSHAKE_TIMEOUT};
use crate::msg::{ConnId, CoreMsg, Transport};
use crate::stats::ClientPortCounters;
use crate::tls::{cert_valid_for_host, rfc2253_name, ClientAuth, LiveTls, TlsSettings};

const PREFIX: &str = "ssl.";
/// The first byte of every TLS ClientHello (a handshake record). As a ZooKeeper frame's length
/// it would announce over 350 MB, beyond any `jute.maxbuffer`.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;
/// How often the stores' files are looked at.
const RELOAD_POLL: Duration = Duration::from_secs(1);

/// The `ssl.*` settings for a TLS client port, checked; no file is read. `None` when the
/// client port does not speak TLS.
fn tls_settings(c: &ClientTlsConfig) -> Result<Option<TlsSettings>, String> {
    if c.secure_address.is_some() && c.secure_port.is_none() {
        return Err(
            "secureClientPortAddress is set but secureClientPort is not set (ZooKeeper refuses \
             this too)"
                .into(),
        );
    }
    if !c.wants_tls() {
        return Ok(None);
    }
    let why = if c.secure_port.is_some() {
        "secureClientPort"
    } else {
        "client.portUnification=true"
    };
    if !c.netty {
        return Err(format!(
            "{why} needs serverCnxnFactory={NETTY_FACTORY}: ZooKeeper's default NIO factory has no \
             TLS (with it ZooKeeper refuses secureClientPort and ignores client.portUnification, \
             so TLS clients cannot connect)"
        ));
    }
    let settings = TlsSettings::from_keys(PREFIX, |k| c.ssl_keys.get(k).cloned())
        .map_err(|e| e.to_string())?;
    if settings.key_store.is_none() {
        return Err(format!(
            "{why} needs {PREFIX}keyStore.location: the certificate and key the client port \
             presents"
        ));
    }
    if settings.trust_store.is_none() && settings.client_auth != ClientAuth::None {
        return Err(format!(
            "{why} with {PREFIX}clientAuth={} needs {PREFIX}trustStore.location: the CA \
             certificates that sign the clients' (ZooKeeper would fall back to the JVM's cacerts, \
             trusting every public CA; paddock has no system trust store); or set \
             {PREFIX}clientAuth=none to ask clients for no certificate",
            match settings.client_auth {
                ClientAuth::Need => "need",
                ClientAuth::Want => "want",
                ClientAuth::None => "none",
            }
        ));
    }
    Ok(Some(settings))
}

/// Checks the client port's TLS settings without reading a store (config time).
pub fn check(c: &ClientTlsConfig) -> Result<(), String> {
    tls_settings(c).map(|_| ())
}

/// The client port's TLS over the stores as they are now.
pub struct ClientPortTls {
    live: LiveTls,
    client_hostname_verification: bool,
}

/// What a client listener does with the connections it accepts.
#[derive(Clone)]
pub enum Port {
    /// `clientPort` in plaintext only.
    Plain,
    /// `clientPort` with `client.portUnification=true`: TLS when the first byte says so.
    Unified(Arc<ClientPortTls>),
    /// `secureClientPort`: TLS only.
    Secure(Arc<ClientPortTls>),
}

impl Port {
    pub fn is_secure(&self) -> bool {
        matches!(self, Port::Secure(_))
    }
}

impl ClientPortTls {
    /// Loads the stores and builds the client port's TLS configuration, watched for changes;
    /// `None` when the client port does not speak TLS. An error names the key or file: the
    /// server must not start.
    pub fn start(cfg: &Config) -> Result<Option<Arc<ClientPortTls>>, String> {
        let c = &cfg.client_tls;
        let Some(settings) = tls_settings(c)? else {
            return Ok(None);
        };
        for dropped in settings
            .dropped_protocols
            .iter()
            .chain(&settings.dropped_cipher_suites)
        {
            warn!(name = %dropped, "{PREFIX}: a protocol or cipher suite paddock cannot use was left out");
        }
        let client_auth = settings.client_auth;
        let client_hostname_verification = settings.client_hostname_verification;
        let live =
            LiveTls::start_client_port(settings, Some(RELOAD_POLL)).map_err(|e| e.to_string())?;
        info!(
            secure_port = ?c.secure_port,
            unified = c.port_unification,
            client_auth = ?client_auth,
            client_hostname_verification,
            x509_super_user = c.x509_super_user.is_some(),
            "client port TLS"
        );
        Ok(Some(Arc::new(ClientPortTls {
            live,
            client_hostname_verification,
        })))
    }

    /// Successful reloads of the stores since start.
    pub fn reload_count(&self) -> u64 {
        self.live.reload_count()
    }

    /// The TLS handshake, then the connection over it. A failed handshake, a silent client or a
    /// certificate refused after the handshake is counted (ZooKeeper counts it as a failed
    /// authentication) and closes the connection.
    async fn serve(
        &self,
        stream: TcpStream,
        remote: SocketAddr,
        id: ConnId,
        core: mpsc::Sender<CoreMsg>,
        params: Arc<ConnParams>,
        secure_port: bool,
    ) {
        let _ = stream.set_nodelay(true);
        let counters = &params.counters;
        let acceptor = TlsAcceptor::from(self.live.server_config());
        let stream = match timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                ClientPortCounters::bump(&counters.tls_refused);
                info!(peer = %remote, error = %e, "client TLS handshake failed");
                return;
            }
            Err(_) => {
                ClientPortCounters::bump(&counters.tls_refused);
                info!(peer = %remote, "no client TLS handshake in time");
                return;
            }
        };
        ack_now(stream.get_ref().0);
        let x509 = match self.identity(&stream, remote) {
            Ok(x509) => x509,
            Err(why) => {
                ClientPortCounters::bump(&counters.tls_refused);
                info!(peer = %remote, why, "client certificate refused");
                return;
            }
        };
        ClientPortCounters::bump(&counters.accepted_tls);
        debug!(peer = %remote, subject = ?x509, "client TLS handshake done");
        let transport = Transport {
            secure_port,
            tls: true,
            x509,
        };
        connection::serve_tls(stream, remote, id, core, params, transport).await;
    }

    /// The subject of the client's certificate, if it sent one (the handshake verified it
    /// against the trust store), checked against its address with
    /// `ssl.clientHostnameVerification`.
    fn identity(
        &self,
        stream: &tokio_rustls::server::TlsStream<TcpStream>,
        remote: SocketAddr,
    ) -> Result<Option<String>, String> {
        let Some(cert) = stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|c| c.first())
        else {
            return Ok(None);
        };
        if self.client_hostname_verification && !cert_valid_for_host(cert, &remote.ip().to_string())
        {
            return Err(format!(
                "{PREFIX}clientHostnameVerification: the certificate does not name {} in its \
                 subject alternative names",
                remote.ip()
            ));
        }
        rfc2253_name(cert)
            .map(Some)
            .map_err(|e| format!("its subject cannot be read: {e}"))
    }
}

/// Sends the ACK the kernel holds for what a client sent last (Linux's TCP_QUICKACK), once its
/// TLS handshake is done. The handshake ends on the client's Finished flight, which the server
/// answers with nothing (TLS 1.3 and no session tickets: `tls::server_config`), so the ACK
/// would wait for the delayed-ACK timer, 40 ms. A client with Nagle on (no TCP_NODELAY, as the
/// Rust `zookeeper-client` crate) holds its ConnectRequest, written right behind Finished, until
/// that ACK comes: each TLS session connect took 40 ms more than its work. Best effort, as
/// TCP_NODELAY: a socket refusing it only connects slower.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn ack_now(stream: &TcpStream) {
    let _ = socket2::SockRef::from(stream).set_tcp_quickack(true);
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn ack_now(_stream: &TcpStream) {}

/// Serves one accepted client connection as its port says.
pub async fn serve(
    stream: TcpStream,
    remote: SocketAddr,
    id: ConnId,
    core: mpsc::Sender<CoreMsg>,
    params: Arc<ConnParams>,
    port: Port,
) {
    match port {
        Port::Plain => plain(stream, remote, id, core, params).await,
        Port::Secure(tls) => tls.serve(stream, remote, id, core, params, true).await,
        Port::Unified(tls) => {
            let mut first = [0u8; 1];
            match timeout(HANDSHAKE_TIMEOUT, stream.peek(&mut first)).await {
                Ok(Ok(1)) if first[0] == TLS_HANDSHAKE_RECORD => {
                    tls.serve(stream, remote, id, core, params, false).await
                }
                Ok(Ok(1)) => plain(stream, remote, id, core, params).await,
                // Closed, or silent for as long as a handshake may take: nothing to serve.
                _ => debug!(peer = %remote, "client sent nothing"),
            }
        }
    }
}

async fn plain(
    stream: TcpStream,
    remote: SocketAddr,
    id: ConnId,
    core: mpsc::Sender<CoreMsg>,
    params: Arc<ConnParams>,
) {
    ClientPortCounters::bump(&params.counters.accepted_plaintext);
    connection::serve(stream, remote, id, core, params, Transport::default()).await;
}
