//! A small certificate authority for the transport's TLS tests, and a `PeerTls` over it that can
//! be given new material while links are open (as a reloaded store is).
//!
//! The server builds its rustls configurations from ZooKeeper's key and trust stores
//! (`server/src/tls/`); these tests need only the shape the transport relies on: a member's chain
//! and key, the CAs it trusts, a client verifier that requires a certificate, and a server
//! verifier with or without the name check.

use std::net::IpAddr;
use std::sync::{Arc, RwLock};

use consensus::net::PeerTls;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

/// A certificate authority.
pub struct Ca {
    pub cert: CertificateDer<'static>,
    issuer: Issuer<'static, KeyPair>,
}

/// A certificate and its key.
#[derive(Clone)]
pub struct Identity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key_der: Vec<u8>,
}

impl Identity {
    fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone()))
    }
}

/// What a certificate is for.
pub enum Use {
    /// A member: serverAuth and clientAuth.
    Member,
    /// A client of the client port: clientAuth only.
    Client,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, name);
        p.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().unwrap();
        let cert = p.self_signed(&key).unwrap().der().clone();
        Ca {
            cert,
            issuer: Issuer::new(p, key),
        }
    }

    /// A certificate for `ip` (its only subject alternative name).
    pub fn issue(&self, cn: &str, ip: &str, usage: Use) -> Identity {
        self.issue_with(cn, Some(ip), usage, None)
    }

    /// A certificate valid from two days ago until yesterday.
    pub fn issue_expired(&self, cn: &str, ip: &str) -> Identity {
        let now = time::OffsetDateTime::now_utc();
        self.issue_with(
            cn,
            Some(ip),
            Use::Member,
            Some((now - time::Duration::days(2), now - time::Duration::days(1))),
        )
    }

    fn issue_with(
        &self,
        cn: &str,
        ip: Option<&str>,
        usage: Use,
        validity: Option<(time::OffsetDateTime, time::OffsetDateTime)>,
    ) -> Identity {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name.push(DnType::CommonName, cn);
        if let Some(ip) = ip {
            p.subject_alt_names = vec![SanType::IpAddress(ip.parse::<IpAddr>().unwrap())];
        }
        p.extended_key_usages = match usage {
            Use::Member => vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
            Use::Client => vec![ExtendedKeyUsagePurpose::ClientAuth],
        };
        if let Some((from, to)) = validity {
            p.not_before = from;
            p.not_after = to;
        }
        let key = KeyPair::generate().unwrap();
        let cert = p.signed_by(&key, &self.issuer).unwrap().der().clone();
        Identity {
            chain: vec![cert],
            key_der: key.serialize_der(),
        }
    }
}

/// The name check a member's TLS does on the acceptor's certificate, and on the connector's.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Names {
    /// `ssl.quorum.hostnameVerification=true` (ZooKeeper's default).
    Verified,
    /// `false`: the chain is checked, the name is not, and no member id is bound.
    Ignored,
}

struct Built {
    client: Arc<rustls::ClientConfig>,
    server: Arc<rustls::ServerConfig>,
}

/// A `PeerTls` over an identity and a set of trusted CAs, replaceable at run time.
pub struct TestTls {
    names: Names,
    built: RwLock<Built>,
}

impl TestTls {
    pub fn new(me: &Identity, trusted: &[&Ca], names: Names) -> Arc<TestTls> {
        Arc::new(TestTls {
            names,
            built: RwLock::new(build(me, trusted, names)),
        })
    }

    /// What a reload does: new links use `me` and trust `trusted`; open links are untouched.
    pub fn replace(&self, me: &Identity, trusted: &[&Ca]) {
        *self.built.write().unwrap() = build(me, trusted, self.names);
    }
}

impl PeerTls for TestTls {
    fn client_config(&self) -> Arc<rustls::ClientConfig> {
        self.built.read().unwrap().client.clone()
    }
    fn server_config(&self) -> Arc<rustls::ServerConfig> {
        self.built.read().unwrap().server.clone()
    }
    fn bind_identity(&self) -> bool {
        self.names == Names::Verified
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

fn build(me: &Identity, trusted: &[&Ca], names: Names) -> Built {
    let mut roots = RootCertStore::empty();
    for ca in trusted {
        roots.add(ca.cert.clone()).unwrap();
    }
    let roots = Arc::new(roots);
    let server_verifier =
        rustls::client::WebPkiServerVerifier::builder_with_provider(roots.clone(), provider())
            .build()
            .unwrap();
    let server_verifier: Arc<dyn ServerCertVerifier> = match names {
        Names::Verified => server_verifier,
        Names::Ignored => Arc::new(ChainOnly(server_verifier)),
    };
    let client = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(server_verifier)
        .with_client_auth_cert(me.chain.clone(), me.key())
        .unwrap();
    let client_verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(roots, provider())
            .build()
            .unwrap();
    let mut server = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(client_verifier)
        .with_single_cert(me.chain.clone(), me.key())
        .unwrap();
    server.send_tls13_tickets = 0;
    Built {
        client: Arc::new(client),
        server: Arc::new(server),
    }
}

/// Verifies the chain and ignores a name mismatch (`hostnameVerification=false`).
#[derive(Debug)]
struct ChainOnly(Arc<rustls::client::WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
