//! From loaded material to rustls configurations.
//!
//! Both sides verify the peer's chain against the trust store only (never a system store, never
//! a CA list the peer sends), offer exactly the settings' protocols and suites, leave ALPN unset
//! and never resume a session: peer links are long-lived, and a resumed session would skip the
//! certificate check, so a link reopened after a CA was removed from the trust store would still
//! be let in.

use std::fmt;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_cert_signed_by_trust_anchor, verify_server_name, Resumption};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{NoServerSessionStorage, ParsedCertificate, WebPkiClientVerifier};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{
    ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme,
    SupportedProtocolVersion,
};

use super::error::TlsError;
use super::legacy_v1::AcceptV1;
use super::settings::{ClientAuth, TlsSettings};
use super::store::{load_key_store, load_trust_store};

/// What the stores hold, loaded and checked: this member's chain and key, and the CA
/// certificates it trusts (empty when no trust store is set). Debug shows no key.
pub struct Material {
    pub chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    pub roots: Vec<CertificateDer<'static>>,
}

impl fmt::Debug for Material {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Material")
            .field("chain", &self.chain.len())
            .field("key", &"***")
            .field("roots", &self.roots.len())
            .finish()
    }
}

impl Material {
    /// Reads the key store (required: paddock always presents a certificate) and the trust
    /// store when one is set.
    pub fn load(settings: &TlsSettings) -> Result<Material, TlsError> {
        let Some(key_store) = &settings.key_store else {
            return Err(TlsError::key(
                format!("{}keyStore.location", settings.prefix),
                "not set: paddock needs a key store (its certificate chain and private key) to \
                 present on every TLS connection",
            ));
        };
        let (chain, key) = load_key_store(key_store)?;
        let roots = match &settings.trust_store {
            Some(spec) => load_trust_store(spec)?,
            None => Vec::new(),
        };
        Ok(Material { chain, key, roots })
    }

    /// The certificate this side presents.
    pub fn end_entity(&self) -> &CertificateDer<'static> {
        &self.chain[0]
    }
}

/// rustls's aws-lc-rs provider (the workspace's choice, see the root Cargo.toml): its key
/// exchange prefers X25519MLKEM768 between paddock members and falls back to X25519 and the NIST
/// curves that ZooKeeper's JDK clients offer.
pub(crate) fn crypto_provider() -> CryptoProvider {
    rustls::crypto::aws_lc_rs::default_provider()
}

fn provider(settings: &TlsSettings) -> Arc<CryptoProvider> {
    let mut provider = crypto_provider();
    provider.cipher_suites = settings.cipher_suites.clone();
    Arc::new(provider)
}

fn versions(settings: &TlsSettings) -> Vec<&'static SupportedProtocolVersion> {
    settings.protocols.iter().map(|v| v.rustls()).collect()
}

fn build_error(settings: &TlsSettings, e: impl fmt::Display) -> TlsError {
    TlsError::Build {
        prefix: settings.prefix.clone(),
        reason: e.to_string(),
    }
}

/// ZooKeeper with no trust store falls back to the JVM's cacerts, which would let any
/// certificate from a public CA in; paddock refuses instead.
fn roots(settings: &TlsSettings, material: &Material) -> Result<Arc<RootCertStore>, TlsError> {
    if material.roots.is_empty() {
        return Err(TlsError::key(
            format!("{}trustStore.location", settings.prefix),
            "not set: paddock verifies peers against this trust store only and has no system \
             trust store to fall back to",
        ));
    }
    let mut roots = RootCertStore::empty();
    for cert in &material.roots {
        // Each was checked to be a valid anchor when the trust store was loaded.
        roots
            .add(cert.clone())
            .map_err(|e| build_error(settings, e))?;
    }
    Ok(Arc::new(roots))
}

/// The dialling side of a peer link: presents the key store's chain, verifies the server's
/// chain against the trust store and, with `hostnameVerification` (the default), that the
/// certificate names the host dialled (the caller's `ServerName`: an IP literal matches an IP
/// SAN, a DNS name a DNS SAN). With `hostnameVerification=false` only the name check goes.
pub fn quorum_client_config(
    settings: &TlsSettings,
    material: &Material,
) -> Result<Arc<ClientConfig>, TlsError> {
    let provider = provider(settings);
    let roots = roots(settings, material)?;
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions(settings))
        .map_err(|e| build_error(settings, e))?;
    let builder = if settings.hostname_verification {
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider)
            .build()
            .map_err(|e| build_error(settings, e))?;
        builder.with_webpki_verifier(verifier)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnlyVerifier { roots, provider }))
    };
    let mut config = builder
        .with_client_auth_cert(material.chain.clone(), material.key.clone_key())
        .map_err(|e| build_error(settings, e))?;
    config.resumption = Resumption::disabled();
    Ok(Arc::new(config))
}

/// The accepting side of a peer link: [`server_config`] with a client certificate required.
pub fn quorum_server_config(
    settings: &TlsSettings,
    material: &Material,
) -> Result<Arc<ServerConfig>, TlsError> {
    server_config(settings, material, ClientAuth::Need)
}

/// An accepting side: presents the key store's chain; asks for a client certificate verified
/// against the trust store as `client_auth` says (`None` needs no trust store). No session
/// cache and no TLS 1.3 tickets.
pub fn server_config(
    settings: &TlsSettings,
    material: &Material,
    client_auth: ClientAuth,
) -> Result<Arc<ServerConfig>, TlsError> {
    build_server_config(settings, material, client_auth, false)
}

/// The client port's accepting side: [`server_config`] with the settings' `clientAuth`, which
/// also takes a client's X.509 version 1 certificate signed directly by a trust anchor, as Java
/// does (`legacy_v1`).
pub fn client_port_server_config(
    settings: &TlsSettings,
    material: &Material,
) -> Result<Arc<ServerConfig>, TlsError> {
    build_server_config(settings, material, settings.client_auth, true)
}

fn build_server_config(
    settings: &TlsSettings,
    material: &Material,
    client_auth: ClientAuth,
    accept_v1: bool,
) -> Result<Arc<ServerConfig>, TlsError> {
    let provider = provider(settings);
    let verifier: Arc<dyn ClientCertVerifier> = match client_auth {
        ClientAuth::None => WebPkiClientVerifier::no_client_auth(),
        ClientAuth::Need | ClientAuth::Want => {
            let roots = roots(settings, material)?;
            let builder =
                WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone());
            let builder = if client_auth == ClientAuth::Want {
                builder.allow_unauthenticated()
            } else {
                builder
            };
            let webpki = builder.build().map_err(|e| build_error(settings, e))?;
            if accept_v1 {
                Arc::new(AcceptV1 {
                    inner: webpki,
                    roots,
                    provider: provider.clone(),
                })
            } else {
                webpki
            }
        }
    };
    // The key was checked to belong to the first certificate when the store was read
    // (`store::usable_key`), also for a version 1 certificate, which rustls's own check
    // (`with_single_cert`) cannot parse.
    let signing = provider
        .key_provider
        .load_private_key(material.key.clone_key())
        .map_err(|e| build_error(settings, e))?;
    let certified = CertifiedKey::new(material.chain.clone(), signing);
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions(settings))
        .map_err(|e| build_error(settings, e))?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(Arc::new(SingleCertAndKey::from(certified)));
    config.session_storage = Arc::new(NoServerSessionStorage {});
    config.send_tls13_tickets = 0;
    Ok(Arc::new(config))
}

/// Whether an end-entity certificate is valid for `host`, an IP literal (`127.0.0.2`, `::1` or
/// `[::1]`) or a DNS name, by its subject alternative names only (not the CN), as rustls checks
/// a server. Used to bind a member id to its certificate, and for `clientHostnameVerification`.
pub fn cert_valid_for_host(cert: &CertificateDer<'_>, host: &str) -> bool {
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let Ok(name) = ServerName::try_from(host) else {
        return false;
    };
    let Ok(parsed) = ParsedCertificate::try_from(cert) else {
        return false;
    };
    verify_server_name(&parsed, &name).is_ok()
}

/// `hostnameVerification=false`: the chain, its validity dates and the serverAuth usage are
/// checked exactly as the WebPki verifier does; only the name is not.
#[derive(Debug)]
struct ChainOnlyVerifier {
    roots: Arc<RootCertStore>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for ChainOnlyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let cert = ParsedCertificate::try_from(end_entity)?;
        verify_server_cert_signed_by_trust_anchor(
            &cert,
            &self.roots,
            intermediates,
            now,
            self.provider.signature_verification_algorithms.all,
        )?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
