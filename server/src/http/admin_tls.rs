//! The AdminServer over HTTPS, as ZooKeeper 3.9's JettyAdminServer sets it up:
//! `admin.forceHttps=true` takes TLS only, `admin.portUnification=true` takes TLS and plaintext
//! on one port (a first byte of 0x16 is TLS, as its `UnifiedConnectionFactory` decides), and
//! `admin.needClientAuth=true` wants a client certificate the trust store verifies; without it
//! none is asked for. The certificate and the trust store are the quorum's (`ssl.quorum.*`:
//! Jetty loads them through `QuorumX509Util`), read once at start, as Jetty reads them. A secure
//! reply carries `Strict-Transport-Security: max-age=86400; includeSubDomains` (Jetty's
//! `SecureRequestCustomizer` with the settings ZooKeeper gives it). The client's chain goes with
//! the request, for `snapshot`'s `x509` authentication (`admin_snapshot.rs`).
//!
//! Where ZooKeeper starts without an AdminServer (a key store it cannot load: it logs and goes
//! on with none) or ignores a key (`needClientAuth` on plain HTTP), paddock refuses the start:
//! the operator asked for protection the AdminServer would not have.

use std::sync::Arc;

use rustls::ServerConfig;

use crate::config::Config;
use crate::tls::{server_config, ClientAuth, Material, TlsSettings};

const PREFIX: &str = "ssl.quorum.";

/// The value of `Strict-Transport-Security` on every reply over TLS.
pub const STS: &str = "max-age=86400; includeSubDomains";

/// How the AdminServer's port takes connections.
#[derive(Clone)]
pub enum Transport {
    /// HTTP only (no `admin.forceHttps`, no `admin.portUnification`).
    Plain,
    /// `admin.forceHttps`: TLS only; anything else is closed after a failed handshake.
    Tls(Arc<ServerConfig>),
    /// `admin.portUnification`: TLS when the first byte is 0x16, HTTP otherwise.
    Unified(Arc<ServerConfig>),
}

fn settings(c: &Config) -> Result<TlsSettings, String> {
    TlsSettings::from_keys(PREFIX, |k| c.quorum_security.ssl_keys.get(k).cloned())
        .map_err(|e| e.to_string())
}

fn asked(c: &Config) -> &'static str {
    if c.admin.force_https {
        "admin.forceHttps=true"
    } else {
        "admin.portUnification=true"
    }
}

/// Checks the `admin.*` TLS keys against the `ssl.quorum.*` ones; reads no file.
pub fn check(c: &Config) -> Result<(), String> {
    let a = &c.admin;
    if !a.enabled {
        return Ok(());
    }
    if a.need_client_auth && !a.https() {
        return Err(
            "admin.needClientAuth=true asks for client certificates, which plain HTTP \
                    cannot carry: add admin.forceHttps=true (or admin.portUnification=true), or \
                    remove admin.needClientAuth"
                .into(),
        );
    }
    if !a.https() {
        return Ok(());
    }
    let s = settings(c)?;
    if s.key_store.is_none() {
        return Err(format!(
            "{} needs ssl.quorum.keyStore.location: the AdminServer presents the quorum's \
             certificate, as ZooKeeper's does (ZooKeeper would start without an AdminServer)",
            asked(c)
        ));
    }
    if a.need_client_auth && s.trust_store.is_none() {
        return Err(
            "admin.needClientAuth=true needs ssl.quorum.trustStore.location to verify \
                    the clients' certificates"
                .into(),
        );
    }
    Ok(())
}

/// The transport the config asks for, with the stores read; an error names the file or key.
pub fn transport(c: &Config) -> Result<Transport, String> {
    let a = &c.admin;
    if !a.https() {
        return Ok(Transport::Plain);
    }
    let s = settings(c)?;
    let material = Material::load(&s).map_err(|e| format!("the AdminServer's HTTPS: {e}"))?;
    let auth = if a.need_client_auth {
        ClientAuth::Need
    } else {
        ClientAuth::None
    };
    let config =
        server_config(&s, &material, auth).map_err(|e| format!("the AdminServer's HTTPS: {e}"))?;
    Ok(if a.force_https {
        Transport::Tls(config)
    } else {
        Transport::Unified(config)
    })
}
