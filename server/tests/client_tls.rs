//! The client port's TLS end to end, in process: a server started from zoo.cfg text with
//! ZooKeeper's keys (`secureClientPort`, `client.portUnification`, `ssl.*` PEM stores,
//! `X509AuthenticationProvider.superUser`, `enforce.auth.schemes=x509`), and clients speaking the
//! protocol over tokio-rustls with certificates made by rcgen: the x509 ids they get (whoAmI),
//! x509 ACLs, refusals, the four-letter words per port, and the stores reloaded while clients
//! stay connected.
//!
//! The compat suite (compat-tests/security, group `client`) runs the same cases with real
//! clients (kazoo, the Java client and zkCli, Curator, go-zookeeper) against paddock and
//! ZooKeeper 3.9.5, with stores made by openssl.

mod common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use paddock::config::Config;
use paddock::startup::Server;
use paddock::tls::rfc2253_name;
use wire::ops::create::CreateRequest;
use wire::ops::data::GetDataRequest;
use wire::ops::who_am_i::WhoAmIResponse;
use wire::{perms, Acl, ConnectRequest, ConnectResponse, Reader, Record, ReplyHeader, Request};
use wire::{RequestHeader, Writer};

// ---------------------------------------------------------------------------------------------
// Certificates.

struct Ca {
    der: CertificateDer<'static>,
    issuer: Issuer<'static, KeyPair>,
}

/// A certificate with its key, as a client presents it or a server's key store holds it.
struct Leaf {
    der: CertificateDer<'static>,
    pem: String,
    key: KeyPair,
}

impl Leaf {
    fn subject(&self) -> String {
        rfc2253_name(&self.der).unwrap()
    }

    fn key_der(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.serialize_der()))
    }

    /// A PEM key store: the certificate, then the PKCS#8 key.
    fn write_key_store(&self, path: &Path) {
        replace(path, format!("{}{}", self.pem, self.key.serialize_pem()));
    }
}

impl Ca {
    fn new(cn: &str) -> Ca {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, cn);
        p.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().unwrap();
        let der = p.self_signed(&key).unwrap().der().clone();
        Ca {
            der,
            issuer: Issuer::new(p, key),
        }
    }

    fn pem(&self) -> String {
        let b64 = base64_encode(&self.der);
        let lines: Vec<&str> = b64
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
            lines.join("\n")
        )
    }

    /// The server's certificate: SAN 127.0.0.1.
    fn server(&self) -> Leaf {
        self.leaf(
            &[(DnType::CommonName, "paddock server")],
            Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            ExtendedKeyUsagePurpose::ServerAuth,
        )
    }

    /// A client's certificate with this subject, EKU clientAuth, no SAN.
    fn client(&self, dn: &[(DnType, &str)]) -> Leaf {
        self.leaf(dn, None, ExtendedKeyUsagePurpose::ClientAuth)
    }

    fn leaf(
        &self,
        dn: &[(DnType, &str)],
        ip: Option<IpAddr>,
        eku: ExtendedKeyUsagePurpose,
    ) -> Leaf {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        for (t, v) in dn {
            p.distinguished_name.push(t.clone(), *v);
        }
        p.subject_alt_names = ip.into_iter().map(SanType::IpAddress).collect();
        p.extended_key_usages = vec![eku];
        let key = KeyPair::generate().unwrap();
        let cert = p.signed_by(&key, &self.issuer).unwrap();
        Leaf {
            der: cert.der().clone(),
            pem: cert.pem(),
            key,
        }
    }
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Writes `path` the way an operator replaces a store: beside it, then renamed over it.
fn replace(path: &Path, text: String) {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

// ---------------------------------------------------------------------------------------------
// A server from zoo.cfg text.

fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_test_writer()
        .try_init();
}

/// A server on 127.0.0.1 (free ports) with the Netty factory and `extra` lines.
async fn serve(dir: &Path, extra: &str) -> Server {
    logs();
    let text = format!(
        "tickTime=100\ndataDir={}\nclientPort=0\nclientPortAddress=127.0.0.1\n\
         minSessionTimeout=400\nmaxSessionTimeout=60000\n4lw.commands.whitelist=*\n\
         admin.serverPort=0\nadmin.serverAddress=127.0.0.1\n\
         serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n{extra}",
        dir.join("data").display()
    );
    let cfg = Config::parse_zoo_cfg(&text, &dir.join("zoo.cfg")).expect("zoo.cfg parses");
    Server::start(cfg).await.expect("server starts")
}

/// `ssl.*` lines for the stores in `dir` (`server.pem`, `trust.pem`).
fn store_lines(dir: &Path) -> String {
    format!(
        "ssl.keyStore.location={}\nssl.keyStore.type=PEM\nssl.trustStore.location={}\n\
         ssl.trustStore.type=PEM\n",
        dir.join("server.pem").display(),
        dir.join("trust.pem").display()
    )
}

// ---------------------------------------------------------------------------------------------
// A client speaking the protocol over any stream.

/// TLS to `addr`, trusting `ca`, presenting `cert` if given.
async fn tls(
    addr: SocketAddr,
    ca: &Ca,
    cert: Option<&Leaf>,
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let mut roots = RootCertStore::empty();
    roots.add(ca.der.clone()).unwrap();
    let builder = ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots);
    let config = match cert {
        Some(c) => builder
            .with_client_auth_cert(vec![c.der.clone()], c.key_der())
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    let tcp = TcpStream::connect(addr).await?;
    TlsConnector::from(Arc::new(config))
        .connect(ServerName::IpAddress(Ipv4Addr::LOCALHOST.into()), tcp)
        .await
}

struct Session<S> {
    s: S,
    xid: i32,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Session<S> {
    /// Sends a ConnectRequest; `None` when the server refuses or closes.
    async fn open(mut s: S) -> Option<Session<S>> {
        let req = ConnectRequest {
            timeout: 10_000,
            passwd: Some(vec![0; 16]),
            read_only: Some(false),
            ..Default::default()
        };
        let mut w = Writer::new();
        let at = w.begin_frame();
        req.encode(&mut w);
        w.finish_frame(at);
        s.write_all(&w.buf).await.ok()?;
        let body = tokio::time::timeout(Duration::from_secs(10), common::read_frame(&mut s))
            .await
            .ok()??;
        let resp = ConnectResponse::from_bytes(&body).ok()?;
        (resp.timeout > 0).then_some(Session { s, xid: 0 })
    }

    /// One request; `None` when the server closed the connection instead of answering.
    async fn call(&mut self, req: &Request) -> Option<(ReplyHeader, Vec<u8>)> {
        self.xid += 1;
        let mut w = Writer::new();
        let at = w.begin_frame();
        RequestHeader {
            xid: self.xid,
            op_type: req.opcode().code(),
        }
        .encode(&mut w);
        req.encode_body(&mut w);
        w.finish_frame(at);
        self.s.write_all(&w.buf).await.ok()?;
        let body = tokio::time::timeout(Duration::from_secs(10), common::read_frame(&mut self.s))
            .await
            .expect("an answer or a close in time")?;
        let mut r = Reader::new(&body);
        let h = ReplyHeader::decode(&mut r).unwrap();
        Some((h, r.rest().to_vec()))
    }

    /// whoAmI as `scheme:user` strings.
    async fn who_am_i(&mut self) -> Vec<String> {
        let (h, body) = self.call(&Request::WhoAmI).await.expect("whoAmI answered");
        assert_eq!(h.err, 0);
        WhoAmIResponse::from_bytes(&body)
            .unwrap()
            .client_info
            .into_iter()
            .map(|c| format!("{}:{}", c.auth_scheme, c.user))
            .collect()
    }

    async fn create(&mut self, path: &str, acl: Vec<Acl>) -> i32 {
        let req = Request::Create(CreateRequest {
            path: path.into(),
            data: Some(b"x".to_vec()),
            acl,
            flags: 0,
        });
        self.call(&req).await.expect("create answered").0.err
    }

    async fn get(&mut self, path: &str) -> i32 {
        let req = Request::GetData(GetDataRequest {
            path: path.into(),
            watch: false,
        });
        self.call(&req).await.expect("getData answered").0.err
    }
}

async fn plain(addr: SocketAddr) -> Session<TcpStream> {
    Session::open(TcpStream::connect(addr).await.unwrap())
        .await
        .expect("plaintext session")
}

async fn over_tls(
    addr: SocketAddr,
    ca: &Ca,
    cert: Option<&Leaf>,
) -> Option<Session<tokio_rustls::client::TlsStream<TcpStream>>> {
    Session::open(tls(addr, ca, cert).await.ok()?).await
}

/// A four-letter word over TLS.
async fn four_letter_tls(addr: SocketAddr, ca: &Ca, cert: &Leaf, word: &str) -> String {
    let mut s = tls(addr, ca, Some(cert)).await.unwrap();
    s.write_all(word.as_bytes()).await.unwrap();
    let mut out = String::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_string(&mut out)).await;
    out
}

fn mntr(text: &str, key: &str) -> i64 {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('\t'))
        .unwrap_or_else(|| panic!("no {key} in {text}"))
        .parse()
        .unwrap()
}

const NO_AUTH: i32 = -102;
const REQUIRE_AUTH: i32 = -124;

// ---------------------------------------------------------------------------------------------

/// `secureClientPort` with `clientAuth` need: a client's certificate is its `x509:` id (and
/// `super` for `X509AuthenticationProvider.superUser`), x509 ACLs match it exactly, the
/// plaintext port is unchanged, and a client without a certificate or with one from another CA
/// is refused and counted.
#[tokio::test]
async fn secure_port_gives_x509_ids_that_acls_match() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("paddock clients CA");
    let stranger = Ca::new("someone else's CA");
    ca.server().write_key_store(&dir.path().join("server.pem"));
    std::fs::write(dir.path().join("trust.pem"), ca.pem()).unwrap();
    let alice = ca.client(&[
        (DnType::CommonName, "alice"),
        (DnType::OrganizationName, "Example, Inc."),
    ]);
    let bob = ca.client(&[(DnType::CommonName, "bob")]);
    let admin = ca.client(&[(DnType::CommonName, "admin")]);
    let outsider = stranger.client(&[(DnType::CommonName, "alice")]);
    assert_eq!(alice.subject(), "O=Example\\, Inc.,CN=alice");
    let server = serve(
        dir.path(),
        &format!(
            "secureClientPort=0\nsecureClientPortAddress=127.0.0.1\n{}\
             X509AuthenticationProvider.superUser=CN=admin\n",
            store_lines(dir.path())
        ),
    )
    .await;
    let secure = server.secure_addr().expect("a secure port");
    assert_ne!(secure, server.local_addr());

    let mut a = over_tls(secure, &ca, Some(&alice)).await.expect("alice");
    assert_eq!(
        a.who_am_i().await,
        vec!["ip:127.0.0.1", "x509:O=Example\\, Inc.,CN=alice"]
    );
    let mut root = over_tls(secure, &ca, Some(&admin)).await.expect("admin");
    assert_eq!(
        root.who_am_i().await,
        vec!["ip:127.0.0.1", "super:", "x509:CN=admin"]
    );
    let mut b = over_tls(secure, &ca, Some(&bob)).await.expect("bob");
    let mut p = plain(server.local_addr()).await;
    assert_eq!(p.who_am_i().await, vec!["ip:127.0.0.1"]);

    let only_alice = vec![Acl::new(perms::ALL, "x509", &alice.subject())];
    assert_eq!(a.create("/alice", only_alice).await, 0);
    assert_eq!(a.get("/alice").await, 0);
    assert_eq!(b.get("/alice").await, NO_AUTH);
    assert_eq!(p.get("/alice").await, NO_AUTH);
    assert_eq!(root.get("/alice").await, 0, "the x509 super user reads all");
    // `auth` expands to the connection's x509 id, as ZooKeeper's does for any authenticated id.
    assert_eq!(
        b.create("/bob", vec![Acl::new(perms::ALL, "auth", "")])
            .await,
        0
    );
    assert_eq!(b.get("/bob").await, 0);
    assert_eq!(a.get("/bob").await, NO_AUTH);

    // need: no certificate, or one from a CA the trust store lacks, gets no session.
    assert!(over_tls(secure, &ca, None).await.is_none());
    assert!(over_tls(secure, &ca, Some(&outsider)).await.is_none());
    // The plaintext port speaks no TLS.
    assert!(over_tls(server.local_addr(), &ca, Some(&alice))
        .await
        .is_none());

    // Each port's `cons` lists its own connections; `srvr` counts both; mntr counts refusals as
    // failed authentications and the plaintext port's connections as non-mTLS.
    let cons_tls = four_letter_tls(secure, &ca, &alice, "cons").await;
    let cons_plain = common::four_letter(server.local_addr(), "cons").await;
    assert_eq!(cons_tls.matches("sid=0x").count(), 3, "{cons_tls}");
    assert_eq!(cons_plain.matches("sid=0x").count(), 1, "{cons_plain}");
    let srvr = common::four_letter(server.local_addr(), "srvr").await;
    assert!(srvr.contains("Connections: 5\n"), "{srvr}");
    let conf = four_letter_tls(secure, &ca, &alice, "conf").await;
    assert!(conf.contains("secureClientPort=0\n"), "{conf}");
    let text = common::four_letter(server.local_addr(), "mntr").await;
    assert_eq!(mntr(&text, "zk_paddock_client_tls_refused"), 2, "{text}");
    assert_eq!(mntr(&text, "zk_auth_failed_count"), 2);
    // p, the TLS client at the plaintext port, cons, srvr and this mntr.
    assert_eq!(mntr(&text, "zk_non_mtls_local_conn_count"), 5, "{text}");
    assert_eq!(mntr(&text, "zk_non_mtls_remote_conn_count"), 0);
    assert_eq!(mntr(&text, "zk_paddock_client_accepted_tls"), 5, "{text}");

    // The AdminServer lists the secure port's connections apart, as ZooKeeper's ConsCommand.
    let admin_addr = server.admin_addr().unwrap();
    let json = http_get(admin_addr, "/commands/connections").await;
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["connections"].as_array().unwrap().len(), 1, "{json}");
    assert_eq!(
        v["secure_connections"].as_array().unwrap().len(),
        3,
        "{json}"
    );
    server.shutdown().await;
}

async fn http_get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out.split_once("\r\n\r\n").unwrap().1.to_string()
}

/// `client.portUnification=true` with `clientAuth=want`: one port serves plaintext and TLS
/// clients at once, a TLS client without a certificate gets only its `ip:` id, and the
/// four-letter words still work in plaintext.
#[tokio::test]
async fn unified_port_serves_plaintext_and_tls_clients_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("paddock clients CA");
    ca.server().write_key_store(&dir.path().join("server.pem"));
    std::fs::write(dir.path().join("trust.pem"), ca.pem()).unwrap();
    let carol = ca.client(&[(DnType::CommonName, "carol")]);
    let server = serve(
        dir.path(),
        &format!(
            "client.portUnification=true\nssl.clientAuth=want\n{}",
            store_lines(dir.path())
        ),
    )
    .await;
    assert_eq!(server.secure_addr(), None);
    let addr = server.local_addr();
    let mut p = plain(addr).await;
    let mut t = over_tls(addr, &ca, Some(&carol))
        .await
        .expect("TLS on the unified port");
    let mut anon = over_tls(addr, &ca, None)
        .await
        .expect("want: no certificate");
    assert_eq!(p.who_am_i().await, vec!["ip:127.0.0.1"]);
    assert_eq!(t.who_am_i().await, vec!["ip:127.0.0.1", "x509:CN=carol"]);
    assert_eq!(anon.who_am_i().await, vec!["ip:127.0.0.1"]);
    assert_eq!(
        t.create("/t", vec![Acl::new(perms::ALL, "world", "anyone")])
            .await,
        0
    );
    assert_eq!(p.get("/t").await, 0);
    assert_eq!(common::four_letter(addr, "ruok").await, "imok");
    // All three are on the one (plaintext) port's listing.
    let cons = common::four_letter(addr, "cons").await;
    assert_eq!(cons.matches("sid=0x").count(), 3, "{cons}");
    let text = common::four_letter(addr, "mntr").await;
    assert_eq!(mntr(&text, "zk_paddock_client_accepted_tls"), 2, "{text}");
    server.shutdown().await;
}

/// `enforce.auth.schemes=x509` (with the provider line: a unified port alone does not register
/// it in time, in ZooKeeper): a plaintext client is closed at its first request with
/// SessionClosedRequireSaslAuth, a client with a certificate is served.
#[tokio::test]
async fn enforce_auth_x509_admits_only_clients_with_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("paddock clients CA");
    ca.server().write_key_store(&dir.path().join("server.pem"));
    std::fs::write(dir.path().join("trust.pem"), ca.pem()).unwrap();
    let dave = ca.client(&[(DnType::CommonName, "dave")]);
    let server = serve(
        dir.path(),
        &format!(
            "client.portUnification=true\nssl.clientAuth=want\n\
             authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n\
             enforce.auth.enabled=true\nenforce.auth.schemes=x509\n{}",
            store_lines(dir.path())
        ),
    )
    .await;
    let addr = server.local_addr();
    let mut t = over_tls(addr, &ca, Some(&dave)).await.expect("dave");
    assert_eq!(t.get("/").await, 0);
    let mut anon = over_tls(addr, &ca, None).await.expect("a session");
    let (h, _) = anon.call(&Request::WhoAmI).await.expect("an answer");
    assert_eq!(h.err, REQUIRE_AUTH);
    let mut p = plain(addr).await;
    let (h, _) = p.call(&Request::WhoAmI).await.expect("an answer");
    assert_eq!(h.err, REQUIRE_AUTH);
    server.shutdown().await;
}

/// The stores are read again when their files change (by rename, as a secret update does),
/// without a restart and whether or not `client.certReload` is set: a trust store that gains a
/// second CA with the same subject as the first trusts both (ZOOKEEPER-4992), a new key store
/// is presented to new clients, and the sessions opened before stay up.
#[tokio::test]
async fn rotation_reloads_the_stores_and_trusts_two_cas_with_one_subject() {
    let dir = tempfile::tempdir().unwrap();
    let old = Ca::new("paddock clients CA");
    let new = Ca::new("paddock clients CA");
    let other = Ca::new("paddock server CA 2");
    old.server().write_key_store(&dir.path().join("server.pem"));
    std::fs::write(dir.path().join("trust.pem"), old.pem()).unwrap();
    let erin_old = old.client(&[(DnType::CommonName, "erin")]);
    let erin_new = new.client(&[(DnType::CommonName, "erin")]);
    let server = serve(
        dir.path(),
        &format!(
            "secureClientPort=0\nsecureClientPortAddress=127.0.0.1\n{}",
            store_lines(dir.path())
        ),
    )
    .await;
    let secure = server.secure_addr().unwrap();
    let mut before = over_tls(secure, &old, Some(&erin_old))
        .await
        .expect("old CA");
    assert!(over_tls(secure, &old, Some(&erin_new)).await.is_none());

    // 1. The trust store holds both CAs, with one subject.
    replace(
        &dir.path().join("trust.pem"),
        format!("{}{}", old.pem(), new.pem()),
    );
    let mut waited = 0;
    while over_tls(secure, &old, Some(&erin_new)).await.is_none() {
        waited += 1;
        assert!(waited < 100, "the new CA is still not trusted after 10 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(over_tls(secure, &old, Some(&erin_old)).await.is_some());
    // 2. A server certificate from another CA: a client trusting only that CA connects.
    other
        .server()
        .write_key_store(&dir.path().join("server.pem"));
    let mut waited = 0;
    while over_tls(secure, &other, Some(&erin_new)).await.is_none() {
        waited += 1;
        assert!(
            waited < 100,
            "the new key store is not presented after 10 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // 3. The old CA leaves the trust store.
    replace(&dir.path().join("trust.pem"), new.pem());
    let mut waited = 0;
    while over_tls(secure, &other, Some(&erin_old)).await.is_some() {
        waited += 1;
        assert!(waited < 100, "the old CA is still trusted after 10 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(over_tls(secure, &other, Some(&erin_new)).await.is_some());
    // The session opened at the start is still served.
    assert_eq!(
        before.who_am_i().await,
        vec!["ip:127.0.0.1", "x509:CN=erin"]
    );
    server.shutdown().await;
}

/// `ssl.clientHostnameVerification=true`: a client certificate must name the address the client
/// connects from.
#[tokio::test]
async fn client_hostname_verification_checks_the_clients_address() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("paddock clients CA");
    ca.server().write_key_store(&dir.path().join("server.pem"));
    std::fs::write(dir.path().join("trust.pem"), ca.pem()).unwrap();
    let named = ca.leaf(
        &[(DnType::CommonName, "frank")],
        Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        ExtendedKeyUsagePurpose::ClientAuth,
    );
    let unnamed = ca.client(&[(DnType::CommonName, "grace")]);
    let elsewhere = ca.leaf(
        &[(DnType::CommonName, "heidi")],
        Some(IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3))),
        ExtendedKeyUsagePurpose::ClientAuth,
    );
    let server = serve(
        dir.path(),
        &format!(
            "secureClientPort=0\nsecureClientPortAddress=127.0.0.1\n\
             ssl.clientHostnameVerification=true\n{}",
            store_lines(dir.path())
        ),
    )
    .await;
    let secure = server.secure_addr().unwrap();
    let mut s = over_tls(secure, &ca, Some(&named)).await.expect("frank");
    assert_eq!(s.who_am_i().await, vec!["ip:127.0.0.1", "x509:CN=frank"]);
    assert!(over_tls(secure, &ca, Some(&unnamed)).await.is_none());
    assert!(over_tls(secure, &ca, Some(&elsewhere)).await.is_none());
    server.shutdown().await;
}

/// A store that does not load refuses the start, naming the key.
#[tokio::test]
async fn a_missing_key_store_refuses_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "tickTime=100\ndataDir={}\nclientPort=0\nclientPortAddress=127.0.0.1\n\
         admin.enableServer=false\nsecureClientPort=0\n\
         serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n{}",
        dir.path().join("data").display(),
        store_lines(dir.path())
    );
    let cfg = Config::parse_zoo_cfg(&text, &dir.path().join("zoo.cfg")).unwrap();
    let err = Server::start(cfg).await.err().expect("refused").to_string();
    assert!(err.contains("ssl.keyStore.location="), "{err}");
}

// ---------------------------------------------------------------------------------------------
// X.509 version 1 certificates, as kazoo's harness makes them.

fn openssl(dir: &Path, args: &str) {
    let out = std::process::Command::new("openssl")
        .args(args.split_whitespace())
        .current_dir(dir)
        .output()
        .expect("openssl");
    assert!(
        out.status.success(),
        "openssl {args}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA (v3, `req -x509`) in `dir/NAME.crt` and `.key`.
fn openssl_ca(dir: &Path, name: &str) {
    openssl(
        dir,
        &format!(
            "req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
             -subj /CN={name} -keyout {name}.key -out {name}.crt"
        ),
    );
}

/// A version 1 certificate (`x509 -req` without extensions, as openssl 3.0 makes it) for
/// `/CN=cn`, signed by `ca`, in `dir/NAME.crt` and `.key`.
fn openssl_v1(dir: &Path, name: &str, cn: &str, ca: &str) {
    openssl(
        dir,
        &format!(
            "req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN={cn} \
             -keyout {name}.key -out {name}.csr"
        ),
    );
    openssl(
        dir,
        &format!(
            "x509 -req -in {name}.csr -CA {ca}.crt -CAkey {ca}.key -CAcreateserial -days 30 \
             -out {name}.crt"
        ),
    );
}

fn pem_cert(path: &Path) -> CertificateDer<'static> {
    use rustls::pki_types::pem::PemObject;
    CertificateDer::from_pem_file(path).unwrap()
}

fn pem_key(path: &Path) -> PrivateKeyDer<'static> {
    use rustls::pki_types::pem::PemObject;
    PrivateKeyDer::from_pem_file(path).unwrap()
}

/// The server's v1 certificate cannot be checked by rustls (nor names the host), so this test's
/// client takes any server; what is tested is the server's side.
#[derive(Debug)]
struct AnyServer(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyServer {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }
    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Presents `cert` with `key`, whether or not they belong together.
#[derive(Debug)]
struct Present(Arc<rustls::sign::CertifiedKey>);

impl rustls::client::ResolvesClientCert for Present {
    fn resolve(
        &self,
        _: &[&[u8]],
        _: &[rustls::SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(self.0.clone())
    }
    fn has_certs(&self) -> bool {
        true
    }
}

/// A session over TLS 1.2 or 1.3 presenting `cert` signed with `key`.
async fn v1_session(
    addr: SocketAddr,
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
    version: &'static rustls::SupportedProtocolVersion,
) -> Option<Session<tokio_rustls::client::TlsStream<TcpStream>>> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let signing = provider.key_provider.load_private_key(key).unwrap();
    let certified = Arc::new(rustls::sign::CertifiedKey::new(vec![cert], signing));
    let config = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[version])
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyServer(provider)))
        .with_client_cert_resolver(Arc::new(Present(certified)));
    let tcp = TcpStream::connect(addr).await.ok()?;
    let stream = TlsConnector::from(Arc::new(config))
        .connect(ServerName::IpAddress(Ipv4Addr::LOCALHOST.into()), tcp)
        .await
        .ok()?;
    Session::open(stream).await
}

/// kazoo's harness signs its server's and its client's certificates as X.509 version 1 (no
/// extensions) under a v3 CA, and ZooKeeper (Java) serves them; rustls's own checks refuse every
/// v1 certificate. The client port presents a v1 certificate of its own, and takes a client's
/// v1 certificate signed directly by a trust anchor, verifying its signature, its issuer and the
/// handshake's signature, over TLS 1.3 and 1.2.
#[tokio::test]
async fn version_1_certificates_are_taken_as_java_takes_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    openssl_ca(d, "ca");
    openssl_ca(d, "other");
    openssl_v1(d, "server", "localhost", "ca");
    openssl_v1(d, "client", "client", "ca");
    openssl_v1(d, "stranger", "client", "other");
    let mut key_store = std::fs::read_to_string(d.join("server.crt")).unwrap();
    key_store.push_str(&std::fs::read_to_string(d.join("server.key")).unwrap());
    std::fs::write(d.join("server.pem"), key_store).unwrap();
    std::fs::copy(d.join("ca.crt"), d.join("trust.pem")).unwrap();
    let client = pem_cert(&d.join("client.crt"));
    let text = std::process::Command::new("openssl")
        .args(["x509", "-noout", "-text", "-in"])
        .arg(d.join("client.crt"))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("Version: 1 (0x0)"),
        "openssl made a v1 certificate"
    );
    let server = serve(
        d,
        &format!(
            "secureClientPort=0\nsecureClientPortAddress=127.0.0.1\n\
             ssl.enabledProtocols=TLSv1.3,TLSv1.2\n{}",
            store_lines(d)
        ),
    )
    .await;
    let secure = server.secure_addr().unwrap();
    let key = || pem_key(&d.join("client.key"));
    for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let mut s = v1_session(secure, client.clone(), key(), version)
            .await
            .unwrap_or_else(|| panic!("a v1 client certificate over {version:?}"));
        assert_eq!(s.who_am_i().await, vec!["ip:127.0.0.1", "x509:CN=client"]);
    }
    // Signed by a CA the trust store lacks.
    let stranger = pem_cert(&d.join("stranger.crt"));
    assert!(v1_session(
        secure,
        stranger,
        pem_key(&d.join("stranger.key")),
        &rustls::version::TLS13
    )
    .await
    .is_none());
    // The right certificate, the handshake signed with another key.
    assert!(v1_session(
        secure,
        client.clone(),
        pem_key(&d.join("stranger.key")),
        &rustls::version::TLS13
    )
    .await
    .is_none());
    assert!(v1_session(
        secure,
        client.clone(),
        pem_key(&d.join("stranger.key")),
        &rustls::version::TLS12
    )
    .await
    .is_none());
    // A certificate whose signature was tampered with.
    let mut tampered = client.as_ref().to_vec();
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    assert!(v1_session(
        secure,
        CertificateDer::from(tampered),
        key(),
        &rustls::version::TLS13
    )
    .await
    .is_none());
    let text = common::four_letter(server.local_addr(), "mntr").await;
    assert_eq!(mntr(&text, "zk_paddock_client_tls_refused"), 4, "{text}");
    server.shutdown().await;
}

/// The reply head and body to `GET path` over an established stream; `None` when the server
/// closes (or the TLS session fails) without an HTTP reply.
async fn http_over<S: AsyncRead + AsyncWrite + Unpin>(s: S, path: &str) -> Option<String> {
    http_with(s, path, "").await
}

/// As `http_over`, with `headers` (each ending in CRLF) added to the request.
async fn http_with<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    path: &str,
    headers: &str,
) -> Option<String> {
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: x\r\n{headers}Connection: close\r\n\r\n").as_bytes(),
    )
    .await
    .ok()?;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
        .await
        .expect("an answer or a close in time");
    let text = String::from_utf8_lossy(&out).into_owned();
    text.starts_with("HTTP/1.1 ").then_some(text)
}

/// The AdminServer over HTTPS with the quorum's stores, as ZooKeeper's JettyAdminServer:
/// `admin.forceHttps` with `admin.needClientAuth` answers only TLS clients with a certificate
/// from the trust store (and says so with HSTS); `admin.portUnification` alone answers plain
/// HTTP and TLS without a certificate on one port. compat-tests/security's group `admin` runs the
/// same against ZooKeeper 3.9.5 with curl.
#[tokio::test]
async fn admin_server_over_https_with_the_quorum_stores() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("paddock quorum CA");
    let stranger = Ca::new("someone else's CA");
    ca.server().write_key_store(&dir.path().join("quorum.pem"));
    std::fs::write(dir.path().join("quorum-trust.pem"), ca.pem()).unwrap();
    let operator = ca.client(&[(DnType::CommonName, "operator")]);
    let outsider = stranger.client(&[(DnType::CommonName, "operator")]);
    let stores = format!(
        "ssl.quorum.keyStore.location={}\nssl.quorum.keyStore.type=PEM\n\
         ssl.quorum.trustStore.location={}\nssl.quorum.trustStore.type=PEM\n",
        dir.path().join("quorum.pem").display(),
        dir.path().join("quorum-trust.pem").display()
    );
    let sts = "Strict-Transport-Security: max-age=86400; includeSubDomains\r\n";

    // The client port's stores too, and the x509 provider: `Authorization: x509` over HTTPS.
    ca.server().write_key_store(&dir.path().join("server.pem"));
    std::fs::write(dir.path().join("trust.pem"), ca.pem()).unwrap();
    let server = serve(
        dir.path(),
        &format!(
            "{stores}{}authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n\
             admin.forceHttps=true\nadmin.needClientAuth=true\n",
            store_lines(dir.path())
        ),
    )
    .await;
    let addr = server.admin_addr().expect("AdminServer");
    let reply = http_over(
        tls(addr, &ca, Some(&operator)).await.unwrap(),
        "/commands/ruok",
    )
    .await
    .expect("an HTTP reply over TLS with a certificate");
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    assert!(reply.contains(sts), "{reply}");
    assert!(reply.contains("\"command\": \"ruok\""), "{reply}");
    let snapshot = http_over(
        tls(addr, &ca, Some(&operator)).await.unwrap(),
        "/commands/snapshot",
    )
    .await
    .expect("an HTTP reply");
    assert!(snapshot.starts_with("HTTP/1.1 401 "), "{snapshot}");
    tokio::time::sleep(Duration::from_millis(400)).await; // admin.rateLimiterIntervalInMS
    let by_cert = http_with(
        tls(addr, &ca, Some(&operator)).await.unwrap(),
        "/commands/snapshot?streaming=false",
        "Authorization: x509\r\n",
    )
    .await
    .expect("an HTTP reply");
    assert!(by_cert.starts_with("HTTP/1.1 200 OK\r\n"), "{by_cert}");
    assert!(by_cert.contains("last_zxid: 0x"), "{by_cert}");
    // No certificate, another CA's, plain HTTP: no HTTP reply at all.
    let no_cert = match tls(addr, &ca, None).await {
        Ok(s) => http_over(s, "/commands/ruok").await,
        Err(_) => None,
    };
    assert_eq!(no_cert, None);
    let other_ca = match tls(addr, &ca, Some(&outsider)).await {
        Ok(s) => http_over(s, "/commands/ruok").await,
        Err(_) => None,
    };
    assert_eq!(other_ca, None);
    let plain = http_over(TcpStream::connect(addr).await.unwrap(), "/commands/ruok").await;
    assert_eq!(plain, None);
    server.shutdown().await;

    let server = serve(dir.path(), &format!("{stores}admin.portUnification=true\n")).await;
    let addr = server.admin_addr().expect("AdminServer");
    let plain = http_over(TcpStream::connect(addr).await.unwrap(), "/commands/ruok")
        .await
        .expect("plain HTTP on the unified port");
    assert!(plain.starts_with("HTTP/1.1 200 OK\r\n"), "{plain}");
    assert!(!plain.contains("Strict-Transport-Security"), "{plain}");
    let secure = http_over(tls(addr, &ca, None).await.unwrap(), "/commands/ruok")
        .await
        .expect("TLS without a certificate on the unified port");
    assert!(
        secure.starts_with("HTTP/1.1 200 OK\r\n") && secure.contains(sts),
        "{secure}"
    );
    server.shutdown().await;
}
