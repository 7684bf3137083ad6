//! The quorum's protection, from zoo.cfg to the peer transport: which links are TLS, which must
//! log in, and the material for both (consensus's `PeerSecurity`).
//!
//! | keys | connect with | accept |
//! |---|---|---|
//! | none | plaintext | plaintext |
//! | `portUnification=true` + `ssl.quorum.*` | plaintext | plaintext and TLS |
//! | `sslQuorum=true` + `portUnification=true` | TLS | plaintext and TLS |
//! | `sslQuorum=true` | TLS | TLS only |
//!
//! That is ZooKeeper's rolling upgrade to quorum TLS, a restart per member at each step: the
//! unified port first, so every member can take TLS before any member dials with it; then
//! `sslQuorum`; then `portUnification` off. Quorum SASL (`quorum_auth.rs`) runs inside TLS when
//! both are on.
//!
//! Stricter than ZooKeeper, each refusing the start with the reason: `ssl.quorum.clientAuth`
//! other than `need` (a member's certificate is what makes it a member), `sslQuorum` or
//! `portUnification` without a key store and a trust store, and every `ssl.quorum.*` key
//! `tls::TlsSettings` cannot honour (`crl`, `ocsp`, a Java context supplier, a JKS store).

use std::sync::Arc;
use std::time::Duration;

use consensus::net::{PeerSecurity, PeerTls};

use crate::config::{Config, QuorumSecurityConfig};
use crate::quorum_auth::QuorumSasl;
use crate::tls::{ClientAuth, LiveTls, TlsSettings};

const PREFIX: &str = "ssl.quorum.";

/// The `ssl.quorum.*` settings, checked; no file is read. `None` when TLS is not asked for. The
/// keys are checked whenever any is set, so one that asks for what paddock cannot do (`crl`,
/// `ocsp`) refuses the start even before TLS is switched on.
fn tls_settings(q: &QuorumSecurityConfig) -> Result<Option<TlsSettings>, String> {
    if !q.wants_tls() && q.ssl_keys.is_empty() {
        return Ok(None);
    }
    let settings = TlsSettings::from_keys(PREFIX, |k| q.ssl_keys.get(k).cloned())
        .map_err(|e| e.to_string())?;
    if !q.wants_tls() {
        return Ok(None);
    }
    let why = if q.ssl_quorum {
        "sslQuorum=true"
    } else {
        "portUnification=true"
    };
    if settings.key_store.is_none() {
        return Err(format!(
            "{why} needs {PREFIX}keyStore.location: this member's certificate and key"
        ));
    }
    if settings.trust_store.is_none() {
        return Err(format!(
            "{why} needs {PREFIX}trustStore.location: the CA certificates that sign the members' \
             (paddock does not fall back to a system trust store, which would admit any public CA)"
        ));
    }
    if settings.client_auth != ClientAuth::Need {
        return Err(format!(
            "{PREFIX}clientAuth={}: paddock requires every member to present its certificate \
             (need), since the certificate is what makes a peer a member; remove the key",
            q.ssl_keys
                .get("clientAuth")
                .map(String::as_str)
                .unwrap_or("")
        ));
    }
    Ok(Some(settings))
}

/// Checks the quorum settings without reading a store (config time).
pub fn check(q: &QuorumSecurityConfig) -> Result<(), String> {
    tls_settings(q).map(|_| ())
}

/// The quorum's TLS over the stores as they are now (reloaded when `sslQuorumReloadCertFiles`).
struct QuorumTls {
    live: LiveTls,
    bind_identity: bool,
}

impl PeerTls for QuorumTls {
    fn client_config(&self) -> Arc<rustls::ClientConfig> {
        // A quorum LiveTls always builds a client config.
        self.live
            .client_config()
            .expect("a quorum TLS build has a client config")
    }
    fn server_config(&self) -> Arc<rustls::ServerConfig> {
        self.live.server_config()
    }
    fn bind_identity(&self) -> bool {
        self.bind_identity
    }
}

/// How often reloadable stores are looked at.
const RELOAD_POLL: Duration = Duration::from_secs(1);

/// The transport's protection for this member: loads the stores and the JAAS sections. An
/// error names the key or file; the member must not start.
pub fn build(cfg: &Config) -> Result<PeerSecurity, String> {
    let q = &cfg.quorum_security;
    let tls: Option<Arc<dyn PeerTls>> = match tls_settings(q)? {
        None => None,
        Some(settings) => {
            let bind_identity = settings.hostname_verification;
            if !bind_identity {
                tracing::warn!(
                    "{PREFIX}hostnameVerification=false: peers' certificates are checked against \
                     the trust store only, so any holder of a certificate from it can act as any \
                     member"
                );
            }
            for dropped in settings
                .dropped_protocols
                .iter()
                .chain(&settings.dropped_cipher_suites)
            {
                tracing::warn!(name = %dropped, "{PREFIX}: a protocol or cipher suite paddock cannot use was left out");
            }
            let poll = q.reload_cert_files.then_some(RELOAD_POLL);
            let live = LiveTls::start_quorum(settings, poll).map_err(|e| e.to_string())?;
            Some(Arc::new(QuorumTls {
                live,
                bind_identity,
            }))
        }
    };
    let auth = QuorumSasl::load(&q.sasl, cfg.jaas_file.as_deref())?
        .map(|a| Arc::new(a) as Arc<dyn consensus::net::LinkAuth>);
    let security = PeerSecurity {
        tls,
        tls_connect: q.ssl_quorum,
        accept_plain: !q.ssl_quorum || q.port_unification,
        auth,
    };
    tracing::info!(
        tls_connect = security.tls_connect,
        accept_tls = security.tls.is_some(),
        accept_plaintext = security.accept_plain,
        login = security.auth.is_some(),
        closed = security.closed(),
        "peer links"
    );
    if !security.closed() {
        tracing::warn!(
            "the peer port accepts links that have not authenticated: anyone who can reach it can \
             act as a member; keep it on a trusted network, or set sslQuorum=true (docs/security.md)"
        );
    }
    Ok(security)
}
