//! The peer transport's protections over real loopback sockets: TLS links between members, each
//! member's id bound to its certificate on both ends, strangers refused before they learn
//! anything, plaintext and TLS on one port for a rolling upgrade, new certificates for new links
//! while old links stay up, and the login that runs before the hello.
//!
//! Members listen on 127.0.0.1, 127.0.0.2 and 127.0.0.3 (all loopback on Linux), each with a
//! certificate naming only its own address, so a certificate for one member's address is a
//! different identity from another's.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::net::{
    append, bind, record_both, runtime, send_a_burst_over_the_socket_buffers, wait_until, Recorder,
    Seen, WAIT,
};
use common::pki::{Ca, Names, TestTls, Use};
use consensus::net::{AuthClient, AuthServer, Checked, LinkAuth, NetConfig, PeerNet, PeerSecurity};

const CLUSTER: u64 = 7;

fn addr(host: &str) -> SocketAddr {
    format!("{host}:0").parse().unwrap()
}

/// Node `id` on 127.0.0.`id`, with `security`.
fn node(rt: &tokio::runtime::Runtime, id: u64, security: PeerSecurity) -> PeerNet {
    let mut cfg = NetConfig::new(id, CLUSTER, addr(&format!("127.0.0.{id}")));
    cfg.security = security;
    bind(rt, cfg)
}

fn tls_only(tls: Arc<TestTls>) -> PeerSecurity {
    PeerSecurity {
        tls: Some(tls),
        tls_connect: true,
        accept_plain: false,
        auth: None,
    }
}

/// A member of the test CA, with its certificate for its own address.
fn member(ca: &Ca, id: u64) -> Arc<TestTls> {
    let me = ca.issue(
        &format!("member {id}"),
        &format!("127.0.0.{id}"),
        Use::Member,
    );
    TestTls::new(&me, &[ca], Names::Verified)
}

/// Tells every node of every other's address.
fn introduce(nodes: &[(u64, &PeerNet)]) {
    for (_, n) in nodes {
        n.set_peers(
            nodes
                .iter()
                .map(|(id, m)| (*id, m.local_addr().to_string()))
                .collect(),
        );
    }
}

fn refused_with(err: &std::io::Error, words: &str) {
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused, "{err}");
    assert!(err.to_string().contains(words), "{err:?} lacks {words:?}");
}

/// Many messages, over the socket buffers' size, cross a TLS link whole and in order: the raft
/// thread encrypts and writes what the socket takes, the writer task finishes the rest, which
/// waits inside the TLS session, and what is sent meanwhile queues behind it.
#[test]
fn a_burst_over_tls_arrives_whole_and_in_order_partly_written_by_the_sender_itself() {
    let rt = runtime();
    let ca = Ca::new("members");
    let a = node(&rt, 1, tls_only(member(&ca, 1)));
    let b = node(&rt, 2, tls_only(member(&ca, 2)));
    introduce(&[(1, &a), (2, &b)]);
    let (_, rb) = record_both(&a, &b);
    let s = send_a_burst_over_the_socket_buffers(&a, &rb);
    assert!(
        s.msgs_sent_direct >= 1,
        "the raft thread never wrote: {s:?}"
    );
    assert!(
        s.msgs_sent_direct < 121,
        "30 MB fitted in the buffers: {s:?}"
    );
    let (na, nb) = (a.net_stats(), b.net_stats());
    assert_eq!((na.accepted_tls, na.accepted_plain), (1, 0), "{na:?}");
    assert_eq!((nb.accepted_tls, nb.accepted_plain), (1, 0), "{nb:?}");
    assert_eq!((na.refused, nb.refused), (0, 0));
    a.shutdown();
    b.shutdown();
}

/// App links and probes run over TLS too, and carry frames both ways.
#[test]
fn app_links_and_probes_work_over_tls() {
    let rt = runtime();
    let ca = Ca::new("members");
    let a = node(&rt, 1, tls_only(member(&ca, 1)));
    let b = node(&rt, 2, tls_only(member(&ca, 2)));
    introduce(&[(1, &a), (2, &b)]);
    let mut incoming = a.app_streams().unwrap();
    rt.block_on(async {
        let mut out = b.connect_app(1).await.unwrap();
        out.send(b"over tls").await.unwrap();
        let (peer, stream) = tokio::time::timeout(WAIT, incoming.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(peer, 2);
        let (mut r, mut w) = stream.into_split();
        assert_eq!(r.recv().await.unwrap().unwrap(), &b"over tls"[..]);
        w.send(b"and back").await.unwrap();
        assert_eq!(out.recv().await.unwrap().unwrap(), &b"and back"[..]);
        let info = b.probe(1).await.unwrap();
        assert_eq!((info.id, info.cluster_id), (1, CLUSTER));
    });
    a.shutdown();
    b.shutdown();
}

/// Members of another CA cannot connect, and are not connected to: the TLS handshake fails on
/// either side before a hello is sent.
#[test]
fn a_member_of_another_ca_is_refused_both_ways() {
    let rt = runtime();
    let ca = Ca::new("members");
    let other = Ca::new("someone else");
    let a = node(&rt, 1, tls_only(member(&ca, 1)));
    let intruder = node(&rt, 2, tls_only(member(&other, 2)));
    introduce(&[(1, &a), (2, &intruder)]);
    let mut incoming = a.app_streams().unwrap();
    let err = rt.block_on(intruder.connect_app(1)).unwrap_err();
    refused_with(&err, "TLS handshake failed");
    let err = rt.block_on(a.connect_app(2)).unwrap_err();
    refused_with(&err, "TLS handshake failed");
    assert!(
        incoming.try_recv().is_err(),
        "an intruder's link was delivered"
    );
    assert!(a.net_stats().refused >= 2, "{:?}", a.net_stats());
    assert_eq!(a.net_stats().accepted_tls, 0);
    a.shutdown();
    intruder.shutdown();
}

/// An expired certificate from the right CA does not get in.
#[test]
fn an_expired_certificate_is_refused() {
    let rt = runtime();
    let ca = Ca::new("members");
    let a = node(&rt, 1, tls_only(member(&ca, 1)));
    let old = ca.issue_expired("member 2", "127.0.0.2");
    let b = node(
        &rt,
        2,
        tls_only(TestTls::new(&old, &[&ca], Names::Verified)),
    );
    introduce(&[(1, &a), (2, &b)]);
    let err = rt.block_on(b.connect_app(1)).unwrap_err();
    refused_with(&err, "TLS handshake failed");
    let err = rt.block_on(a.connect_app(2)).unwrap_err();
    refused_with(&err, "expired");
    a.shutdown();
    b.shutdown();
}

/// A process on member 3's address holding the right CA's certificate for member 2's address
/// cannot be member 3: the acceptor checks the certificate names member 3's host, and a connector
/// dialling 3 checks the same of the acceptor. With name checks off
/// (`hostnameVerification=false`) no id is bound and it gets in: that mode trusts every holder of a
/// certificate from the CA.
#[test]
fn a_certificate_for_another_members_address_cannot_claim_its_id() {
    let rt = runtime();
    let ca = Ca::new("members");
    let a = node(&rt, 1, tls_only(member(&ca, 1)));
    let stolen = ca.issue("member 2", "127.0.0.2", Use::Member);
    let impostor = node(
        &rt,
        3,
        tls_only(TestTls::new(&stolen, &[&ca], Names::Verified)),
    );
    introduce(&[(1, &a), (3, &impostor)]);
    let mut incoming = a.app_streams().unwrap();
    let err = rt.block_on(impostor.connect_app(1)).unwrap_err();
    refused_with(
        &err,
        &format!(
            "node 3's certificate is not valid for its address {}",
            impostor.local_addr()
        ),
    );
    // The probe is refused the same way, and its refusal says nothing about node 1.
    let err = rt.block_on(impostor.probe(1)).unwrap_err();
    refused_with(&err, "certificate is not valid");
    let err = rt.block_on(a.connect_app(3)).unwrap_err();
    refused_with(&err, "TLS handshake failed");
    assert!(
        incoming.try_recv().is_err(),
        "the impostor's link was delivered"
    );
    a.shutdown();
    impostor.shutdown();

    // The control: without name checks the same certificate gets in, both ways.
    let a = node(
        &rt,
        1,
        tls_only(TestTls::new(
            &ca.issue("member 1", "127.0.0.1", Use::Member),
            &[&ca],
            Names::Ignored,
        )),
    );
    let impostor = node(
        &rt,
        3,
        tls_only(TestTls::new(&stolen, &[&ca], Names::Ignored)),
    );
    introduce(&[(1, &a), (3, &impostor)]);
    rt.block_on(impostor.connect_app(1)).unwrap();
    rt.block_on(a.probe(3)).unwrap();
    a.shutdown();
    impostor.shutdown();
}

/// A certificate for a client of the client port (clientAuth only, no address) cannot act as a
/// member either way.
#[test]
fn a_client_certificate_cannot_act_as_a_member() {
    let rt = runtime();
    let ca = Ca::new("members");
    let a = node(&rt, 1, tls_only(member(&ca, 1)));
    let client = ca.issue("client", "10.9.9.9", Use::Client);
    let c = node(
        &rt,
        2,
        tls_only(TestTls::new(&client, &[&ca], Names::Verified)),
    );
    introduce(&[(1, &a), (2, &c)]);
    let err = rt.block_on(c.connect_app(1)).unwrap_err();
    refused_with(&err, "node 2's certificate is not valid for its address");
    let err = rt.block_on(a.connect_app(2)).unwrap_err();
    refused_with(&err, "TLS handshake failed");
    a.shutdown();
    c.shutdown();
}

/// Everything a stranger's bytes get back from a member that requires TLS or a login: the
/// connection closes without a byte.
fn stranger_gets_nothing(target: SocketAddr, first: &[u8]) {
    let mut s = TcpStream::connect(target).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(first).unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert!(
        got.is_empty(),
        "a stranger was told {} bytes: {got:?}",
        got.len()
    );
}

/// A plaintext probe of the kind a member sends, claiming to be node 2.
fn plaintext_probe() -> Vec<u8> {
    let mut f = 48u32.to_be_bytes().to_vec();
    f.extend_from_slice(b"PDKN");
    f.extend_from_slice(&1u16.to_be_bytes());
    f.push(3); // Probe
    f.push(0);
    f.extend_from_slice(&2u64.to_be_bytes());
    f.extend_from_slice(&1u64.to_be_bytes());
    f.extend_from_slice(&CLUSTER.to_be_bytes());
    f.extend_from_slice(&[0u8; 16]);
    f
}

/// A TLS-only member answers a plaintext probe, and a TLS client without a certificate, with
/// nothing at all: the cluster id, fingerprint and log position are for members.
#[test]
fn a_stranger_learns_nothing_from_a_tls_only_member() {
    let rt = runtime();
    let ca = Ca::new("members");
    let a = node(&rt, 1, tls_only(member(&ca, 1)));
    a.set_local_info(consensus::net::LocalInfo {
        initialized: true,
        last_index: 4242,
    });
    stranger_gets_nothing(a.local_addr(), &plaintext_probe());
    // TLS without a client certificate: the handshake fails; nothing of ours follows.
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.cert.clone()).unwrap();
    let cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let mut conn = rustls::ClientConnection::new(Arc::new(cfg), name).unwrap();
    let mut s = TcpStream::connect(a.local_addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut plain = Vec::new();
    let outcome = {
        let mut tls = rustls::Stream::new(&mut conn, &mut s);
        tls.write_all(&plaintext_probe())
            .and_then(|_| tls.read_to_end(&mut plain))
    };
    assert!(
        outcome.is_err(),
        "a certificate-less TLS client got {plain:?}"
    );
    assert!(plain.is_empty());
    // Counted by the acceptor's task, which may finish after the client saw the alert.
    wait_until("both refusals counted", || a.net_stats().refused == 2);
    assert_eq!(a.net_stats().accepted_plain, 0);
    assert_eq!(a.net_stats().accepted_tls, 0);
    a.shutdown();
}

/// During a rolling upgrade a member accepts both (`portUnification`): plaintext links from
/// members not yet moved, TLS links from those that have, on one port; each kind counted.
#[test]
fn one_port_takes_plaintext_and_tls_links_during_an_upgrade() {
    let rt = runtime();
    let ca = Ca::new("members");
    let unified = PeerSecurity {
        tls: Some(member(&ca, 1)),
        tls_connect: false,
        accept_plain: true,
        auth: None,
    };
    let a = node(&rt, 1, unified);
    let old = node(&rt, 2, PeerSecurity::open());
    let new = node(&rt, 3, tls_only(member(&ca, 3)));
    introduce(&[(1, &a), (2, &old), (3, &new)]);
    let mut incoming = a.app_streams().unwrap();
    rt.block_on(async {
        old.connect_app(1).await.unwrap();
        new.connect_app(1).await.unwrap();
        let mut peers = Vec::new();
        for _ in 0..2 {
            let (p, _) = tokio::time::timeout(WAIT, incoming.recv())
                .await
                .unwrap()
                .unwrap();
            peers.push(p);
        }
        peers.sort();
        assert_eq!(peers, vec![2, 3]);
    });
    let s = a.net_stats();
    assert!(s.accepted_plain >= 1 && s.accepted_tls >= 1, "{s:?}");
    // The TLS-only member refuses the plaintext one, which is still open itself.
    let err = rt.block_on(old.connect_app(3)).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
        ),
        "{err:?}"
    );
    rt.block_on(new.connect_app(2)).unwrap_err();
    for n in [a, old, new] {
        n.shutdown();
    }
}

/// A reloaded store applies to new links; a link opened before stays up and keeps delivering.
/// During the overlap a trust store holding the old and the new CA accepts both.
#[test]
fn new_certificates_serve_new_links_while_open_links_stay_up() {
    let rt = runtime();
    let ca1 = Ca::new("2026");
    let ca2 = Ca::new("2027");
    let both = [&ca1, &ca2];
    let tls_a = TestTls::new(
        &ca1.issue("member 1", "127.0.0.1", Use::Member),
        &both,
        Names::Verified,
    );
    let tls_b = TestTls::new(
        &ca1.issue("member 2", "127.0.0.2", Use::Member),
        &both,
        Names::Verified,
    );
    let a = node(&rt, 1, tls_only(tls_a.clone()));
    let b = node(&rt, 2, tls_only(tls_b.clone()));
    introduce(&[(1, &a), (2, &b)]);
    let (ra, rb) = record_both(&a, &b);
    // Failures before both links were up (one side dialled before the other knew it) are not the
    // rotation's: only what changes from here counts.
    let failures = (a.stats()[0].connect_failures, b.stats()[0].connect_failures);
    // b moves to the new CA's certificate; a still presents the old one.
    tls_b.replace(&ca2.issue("member 2", "127.0.0.2", Use::Member), &both);
    let mut t = a.transport();
    consensus::Transport::send(&mut t, vec![append(1, 2, 1)]);
    wait_until("a message on the old link", || rb.steps().len() == 1);
    assert_eq!(
        (a.stats()[0].connect_failures, b.stats()[0].connect_failures),
        failures,
        "a link broke during the rotation"
    );
    rt.block_on(b.connect_app(1)).unwrap();
    rt.block_on(a.connect_app(2)).unwrap();
    // The overlap ends: a trusts only the new CA, and so refuses its own old certificate's peers.
    tls_a.replace(&ca2.issue("member 1", "127.0.0.1", Use::Member), &[&ca2]);
    rt.block_on(b.connect_app(1)).unwrap();
    let c = node(
        &rt,
        3,
        tls_only(TestTls::new(
            &ca1.issue("member 3", "127.0.0.3", Use::Member),
            &both,
            Names::Verified,
        )),
    );
    introduce(&[(1, &a), (2, &b), (3, &c)]);
    refused_with(
        &rt.block_on(c.connect_app(1)).unwrap_err(),
        "TLS handshake failed",
    );
    // The first link never broke.
    consensus::Transport::send(&mut t, vec![append(1, 2, 2)]);
    wait_until("a second message on the old link", || rb.steps().len() == 2);
    assert_eq!(
        (ra.count(&Seen::PeerLost(2)), rb.count(&Seen::PeerLost(1))),
        (0, 0),
        "a raft link between the two closed during the rotation"
    );
    for n in [a, b, c] {
        n.shutdown();
    }
}

/// A toy login over a shared secret, for the transport's exchange only (the server's is quorum
/// SASL DIGEST-MD5): the response and the final token are checksums of the secret and the
/// challenge.
struct Shared {
    secret: Vec<u8>,
    login: bool,
    require: bool,
}

static NONCE: AtomicU64 = AtomicU64::new(1);

fn sum(parts: &[&[u8]]) -> Vec<u8> {
    let mut h = crc32fast::Hasher::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().to_be_bytes().to_vec()
}

struct ToyClient(Vec<u8>, Vec<u8>);
struct ToyServer(Vec<u8>, Vec<u8>);

impl AuthClient for ToyClient {
    fn mechanism(&self) -> &str {
        "TOY"
    }
    fn respond(&mut self, challenge: &[u8]) -> Result<Vec<u8>, String> {
        self.1 = challenge.to_vec();
        Ok(sum(&[b"client", &self.0, challenge]))
    }
    fn verify(&mut self, token: &[u8]) -> Result<(), String> {
        if token == sum(&[b"server", &self.0, &self.1]) {
            Ok(())
        } else {
            Err("bad server proof".into())
        }
    }
}

impl AuthServer for ToyServer {
    fn mechanism(&self) -> &str {
        "TOY"
    }
    fn challenge(&mut self) -> Vec<u8> {
        self.1 = NONCE.fetch_add(1, Ordering::Relaxed).to_be_bytes().to_vec();
        self.1.clone()
    }
    fn check(&mut self, response: &[u8]) -> Result<Checked, String> {
        if response == sum(&[b"client", &self.0, &self.1]) {
            Ok(Checked::Done {
                token: sum(&[b"server", &self.0, &self.1]),
                identity: "toy".into(),
            })
        } else {
            Err("wrong secret".into())
        }
    }
}

impl LinkAuth for Shared {
    fn login_on_connect(&self) -> bool {
        self.login
    }
    fn can_check(&self) -> bool {
        true
    }
    fn require_on_accept(&self) -> bool {
        self.require
    }
    fn client(&self, _peer_address: &str) -> Result<Box<dyn AuthClient>, String> {
        Ok(Box::new(ToyClient(self.secret.clone(), Vec::new())))
    }
    fn server(&self) -> Result<Box<dyn AuthServer>, String> {
        Ok(Box::new(ToyServer(self.secret.clone(), Vec::new())))
    }
}

fn with_login(secret: &str, login: bool, require: bool) -> PeerSecurity {
    PeerSecurity {
        auth: Some(Arc::new(Shared {
            secret: secret.as_bytes().to_vec(),
            login,
            require,
        })),
        ..PeerSecurity::open()
    }
}

/// Members that share the secret log in and link up; a wrong secret is refused and counted; a
/// connector that does not log in is refused without a byte by a member that requires it.
#[test]
fn the_login_before_the_hello_admits_members_and_refuses_the_rest() {
    let rt = runtime();
    let a = node(&rt, 1, with_login("s3cret", true, true));
    let b = node(&rt, 2, with_login("s3cret", true, true));
    let wrong = node(&rt, 3, with_login("guess", true, true));
    introduce(&[(1, &a), (2, &b), (3, &wrong)]);
    let (ra, rb): (Arc<Recorder>, Arc<Recorder>) = record_both(&a, &b);
    let mut t = a.transport();
    consensus::Transport::send(&mut t, vec![append(1, 2, 1)]);
    wait_until("a message after the login", || rb.steps().len() == 1);
    drop(ra);
    let err = rt.block_on(wrong.connect_app(1)).unwrap_err();
    refused_with(&err, "the peer refused the login: authentication failed");
    assert!(a.net_stats().login_failures >= 1, "{:?}", a.net_stats());
    let err = rt.block_on(a.connect_app(3)).unwrap_err();
    refused_with(&err, "the peer refused the login");
    // No login at all: a closed member answers nothing.
    stranger_gets_nothing(a.local_addr(), &plaintext_probe());
    for n in [a, b, wrong] {
        n.shutdown();
    }
}

/// A member that logs in refuses an acceptor that runs no login (it would be trusting a stranger),
/// and a member that does not require logins still checks one that is offered.
#[test]
fn a_member_that_logs_in_refuses_an_acceptor_without_logins() {
    let rt = runtime();
    let a = node(&rt, 1, PeerSecurity::open());
    let b = node(&rt, 2, with_login("s3cret", true, false));
    introduce(&[(1, &a), (2, &b)]);
    let err = rt.block_on(b.connect_app(1)).unwrap_err();
    refused_with(&err, "the peer runs no quorum login");
    // b does not require a login of a, and a offers none: accepted.
    rt.block_on(a.connect_app(2)).unwrap();
    a.shutdown();
    b.shutdown();
}

#[test]
fn tls_material_is_required_for_tls_settings() {
    let rt = runtime();
    let mut cfg = NetConfig::new(1, CLUSTER, addr("127.0.0.1"));
    cfg.security = PeerSecurity {
        tls_connect: true,
        ..PeerSecurity::open()
    };
    let err = rt.block_on(PeerNet::bind(cfg)).err().unwrap();
    assert_eq!(err.to_string(), "connecting with TLS needs TLS material");
}

/// A login of several rounds (as Kerberos takes): the acceptor challenges `rounds` times more
/// before its verdict, and the identity is the connector's `name`, which `may_be_member` accepts
/// only when it is "member".
struct Rounds {
    secret: Vec<u8>,
    name: &'static str,
    rounds: usize,
}

struct RoundsClient(Vec<u8>, &'static str);
struct RoundsServer {
    secret: Vec<u8>,
    nonce: Vec<u8>,
    left: usize,
}

impl AuthClient for RoundsClient {
    fn mechanism(&self) -> &str {
        "ROUNDS"
    }
    fn respond(&mut self, challenge: &[u8]) -> Result<Vec<u8>, String> {
        let mut r = self.1.as_bytes().to_vec();
        r.push(b'|');
        r.extend(sum(&[&self.0, challenge]));
        Ok(r)
    }
    fn verify(&mut self, _token: &[u8]) -> Result<(), String> {
        Ok(())
    }
}

impl AuthServer for RoundsServer {
    fn mechanism(&self) -> &str {
        "ROUNDS"
    }
    fn challenge(&mut self) -> Vec<u8> {
        self.nonce = NONCE.fetch_add(1, Ordering::Relaxed).to_be_bytes().to_vec();
        self.nonce.clone()
    }
    fn check(&mut self, response: &[u8]) -> Result<Checked, String> {
        let at = response.iter().position(|&b| b == b'|').ok_or("no name")?;
        if response[at + 1..] != sum(&[&self.secret, &self.nonce]) {
            return Err("wrong secret".into());
        }
        if self.left > 0 {
            self.left -= 1;
            return Ok(Checked::Continue(self.challenge()));
        }
        Ok(Checked::Done {
            token: Vec::new(),
            identity: String::from_utf8_lossy(&response[..at]).into_owned(),
        })
    }
}

impl LinkAuth for Rounds {
    fn login_on_connect(&self) -> bool {
        true
    }
    fn can_check(&self) -> bool {
        true
    }
    fn require_on_accept(&self) -> bool {
        true
    }
    fn client(&self, _peer_address: &str) -> Result<Box<dyn AuthClient>, String> {
        Ok(Box::new(RoundsClient(self.secret.clone(), self.name)))
    }
    fn server(&self) -> Result<Box<dyn AuthServer>, String> {
        Ok(Box::new(RoundsServer {
            secret: self.secret.clone(),
            nonce: Vec::new(),
            left: self.rounds,
        }))
    }
    fn may_be_member(&self, identity: &str, member_address: &str) -> Result<(), String> {
        assert!(member_address.starts_with("127.0.0."), "{member_address}");
        if identity == "member" {
            Ok(())
        } else {
            Err(format!("{identity} is not a member"))
        }
    }
}

fn with_rounds(name: &'static str, rounds: usize) -> PeerSecurity {
    PeerSecurity {
        auth: Some(Arc::new(Rounds {
            secret: b"s3cret".to_vec(),
            name,
            rounds,
        })),
        ..PeerSecurity::open()
    }
}

/// Members log in over several rounds and link up; one that logs in with the right secret but an
/// identity that cannot be the member its hello claims is refused after its hello.
#[test]
fn a_login_of_several_rounds_binds_its_identity_to_the_member() {
    let rt = runtime();
    let a = node(&rt, 1, with_rounds("member", 3));
    let b = node(&rt, 2, with_rounds("member", 3));
    let impostor = node(&rt, 3, with_rounds("stranger", 3));
    introduce(&[(1, &a), (2, &b), (3, &impostor)]);
    let (_ra, rb): (Arc<Recorder>, Arc<Recorder>) = record_both(&a, &b);
    let mut t = a.transport();
    consensus::Transport::send(&mut t, vec![append(1, 2, 1)]);
    wait_until("a message after a login of 4 rounds", || {
        rb.steps().len() == 1
    });
    assert!(rt.block_on(impostor.connect_app(1)).is_err());
    wait_until("the impostor's refusal counted", || {
        a.net_stats().login_failures >= 1
    });
    for n in [a, b, impostor] {
        n.shutdown();
    }
}
