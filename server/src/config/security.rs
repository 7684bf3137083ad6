//! The keys that protect the server, and the rules that keep it fail-closed: quorum TLS
//! (`sslQuorum`, `portUnification`, `ssl.quorum.*`) and quorum SASL (`quorum.auth.*`); the
//! client port's TLS (`secureClientPort`, `client.portUnification`, `ssl.*`) and x509 identities;
//! client authentication (the super digest, SASL users, `enforce.auth.*`, auth providers); and the
//! keys that ask for protection paddock does not have (HTTPS on the AdminServer, another digest
//! algorithm), which refuse the start rather than run less protected than asked.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use super::builder::Builder;
use super::server_spec::parse_port;
use super::zoo_cfg::{non_empty_path, parse_bool, parse_ip};
use super::{ConfigError, Entry, Origin};

/// The quorum's protection as configured, before any file is read.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct QuorumSecurityConfig {
    /// `sslQuorum`: connect to peers over TLS, and accept only TLS unless `port_unification`.
    pub ssl_quorum: bool,
    /// `portUnification`: accept plaintext and TLS links on the peer port (a rolling upgrade).
    pub port_unification: bool,
    /// `sslQuorumReloadCertFiles`: new links use the stores' files as they change.
    pub reload_cert_files: bool,
    /// The `ssl.quorum.*` keys, by the part after the prefix (`keyStore.location`, ...).
    pub ssl_keys: std::collections::BTreeMap<String, String>,
    /// `quorum.auth.*`.
    pub sasl: crate::quorum_auth::QuorumSaslSettings,
}

impl QuorumSecurityConfig {
    /// Whether TLS material is needed: to connect with TLS, or to accept it on a unified port.
    pub fn wants_tls(&self) -> bool {
        self.ssl_quorum || self.port_unification
    }
}

/// `key=value` lines with store passwords masked, for Debug output.
fn masked(keys: &BTreeMap<String, String>) -> Vec<String> {
    keys.iter()
        .map(|(k, v)| {
            if k.to_ascii_lowercase().contains("password") && !k.ends_with("passwordPath") {
                format!("{k}=******")
            } else {
                format!("{k}={v}")
            }
        })
        .collect()
}

/// Store passwords stay out of logs and `conf` dumps.
impl fmt::Debug for QuorumSecurityConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QuorumSecurityConfig")
            .field("ssl_quorum", &self.ssl_quorum)
            .field("port_unification", &self.port_unification)
            .field("reload_cert_files", &self.reload_cert_files)
            .field("ssl_keys", &masked(&self.ssl_keys))
            .field("sasl", &self.sasl)
            .finish()
    }
}

/// ZooKeeper's server connection factories (`serverCnxnFactory`). Only Netty's speaks TLS.
pub const NETTY_FACTORY: &str = "org.apache.zookeeper.server.NettyServerCnxnFactory";
pub const NIO_FACTORY: &str = "org.apache.zookeeper.server.NIOServerCnxnFactory";
/// The authentication provider whose ids are client certificates' subjects.
pub const X509_PROVIDER: &str = "org.apache.zookeeper.server.auth.X509AuthenticationProvider";

/// The client port's TLS and x509 identities as configured, before any file is read
/// (`client_tls.rs` checks the `ssl.*` keys and loads the stores).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ClientTlsConfig {
    /// `secureClientPort`: a second client port that speaks TLS only (0 picks a free port).
    pub secure_port: Option<u16>,
    /// `secureClientPortAddress`; every interface when unset, as ZooKeeper binds it.
    pub secure_address: Option<IpAddr>,
    /// `client.portUnification`: the plaintext client port takes TLS too, told apart by the
    /// first byte.
    pub port_unification: bool,
    /// `client.certReload` (the stores are watched whether it is set or not: see `client_tls.rs`).
    pub cert_reload: bool,
    /// `serverCnxnFactory` names ZooKeeper's Netty factory, the only one with TLS (and the one
    /// whose plaintext connections `non_mtls_*_conn_count` count).
    pub netty: bool,
    /// The client port's `ssl.*` keys (not `ssl.quorum.*` nor `ssl.authProvider`), by the part
    /// after the prefix.
    pub ssl_keys: BTreeMap<String, String>,
    /// `authProvider.N=...X509AuthenticationProvider`.
    pub x509_provider: bool,
    /// `X509AuthenticationProvider.superUser`: the subject whose connections are also `super`.
    pub x509_super_user: Option<String>,
}

impl ClientTlsConfig {
    /// A TLS client port is asked for: a secure port, or TLS on the plaintext one.
    pub fn wants_tls(&self) -> bool {
        self.secure_port.is_some() || self.port_unification
    }

    /// Whether `enforce.auth.schemes` may name `x509`: its provider is configured, or ZooKeeper
    /// registers it itself for `secureClientPort` (`QuorumPeerConfig.configureSSLAuth`). For a
    /// unified port alone ZooKeeper registers it only once its providers are loaded (measured:
    /// 3.9.5 refuses the start with `enforce.auth.schemes=x509`, and closes TLS clients that
    /// present a certificate, "X509 Auth provider not found"); paddock refuses the same start,
    /// and gives such clients their x509 id.
    pub fn x509_available(&self) -> bool {
        self.x509_provider || self.secure_port.is_some()
    }
}

impl fmt::Debug for ClientTlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientTlsConfig")
            .field("secure_port", &self.secure_port)
            .field("secure_address", &self.secure_address)
            .field("port_unification", &self.port_unification)
            .field("cert_reload", &self.cert_reload)
            .field("netty", &self.netty)
            .field("ssl_keys", &masked(&self.ssl_keys))
            .field("x509_provider", &self.x509_provider)
            .field("x509_super_user", &self.x509_super_user)
            .finish()
    }
}

/// The value is a password hash (guessable offline), so the error says what is wrong with it
/// and never repeats it; the caller names the key and the line.
pub(super) fn validate_super_digest(d: &str) -> Result<(), String> {
    let wrong = match d.split_once(':') {
        None => "has no ':'",
        Some(("", _)) => "has an empty user name before ':'",
        Some((_, "")) => "has an empty hash after ':'",
        Some(_) => return Ok(()),
    };
    Err(format!(
        "the value {wrong}: it must be user:base64-sha1, as DigestAuthenticationProvider prints it \
         (the value is not shown: it is a secret)"
    ))
}

/// `zookeeper.sessionRequireClientSASLAuth`, `zookeeper.enforce.auth.enabled` and
/// `zookeeper.enforce.auth.schemes`, combined as ZooKeeper's `AuthenticationHelper` does.
#[derive(Default)]
pub(super) struct EnforceAuth {
    pub(super) require_sasl: bool,
    pub(super) enabled: bool,
    pub(super) schemes: Option<String>,
}

impl EnforceAuth {
    /// The schemes a connection must have authenticated with, or `None` when nothing is enforced.
    /// `x509`: whether that scheme has a provider (ZooKeeper refuses a scheme without one).
    pub(super) fn schemes(&self, x509: bool) -> Result<Option<Vec<String>>, ConfigError> {
        if self.require_sasl {
            // The older switch wins and means exactly "sasl", whatever the other two say.
            return Ok(Some(vec!["sasl".to_string()]));
        }
        if !self.enabled {
            return Ok(None);
        }
        let schemes: Vec<String> = self
            .schemes
            .as_deref()
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        if schemes.is_empty() {
            return Err(ConfigError::Invalid(
                "enforce.auth.enabled is true, so enforce.auth.schemes must be configured".into(),
            ));
        }
        // paddock's authentication providers; x509 has one when configured or with a secure
        // client port (AuthenticationHelper: a scheme without a provider refuses the start).
        if let Some(missing) = schemes
            .iter()
            .find(|s| !(matches!(s.as_str(), "ip" | "digest" | "sasl") || (x509 && *s == "x509")))
        {
            let hint = if missing == "x509" {
                format!(
                    " (set secureClientPort, or authProvider.x509={X509_PROVIDER}, as ZooKeeper \
                     needs too)"
                )
            } else {
                String::new()
            };
            return Err(ConfigError::Invalid(format!(
                "enforce.auth.schemes: authentication scheme {missing} is not available{hint}"
            )));
        }
        Ok(Some(schemes))
    }
}

impl Builder {
    /// `java.security.auth.login.config`: a JVM property, not a `zookeeper.*` one, so only `-D` can
    /// set it (a zoo.cfg line would become `zookeeper.java.security...`, which ZooKeeper never
    /// reads). Java reads `==file` as "this file only", and accepts a file: URL.
    pub(super) fn jaas_file_key(&mut self, e: &Entry) -> Result<(), String> {
        if let Origin::Line { .. } = e.origin {
            tracing::warn!(origin = %e.origin, "ignoring java.security.auth.login.config in a zoo.cfg (ZooKeeper reads it only as a JVM property): pass it as -D");
            return Ok(());
        }
        let path = e.value.trim_start_matches('=');
        let path = path
            .strip_prefix("file://")
            .or_else(|| path.strip_prefix("file:"))
            .unwrap_or(path);
        self.sasl.jaas_file = Some(non_empty_path(path)?);
        Ok(())
    }

    /// `java.security.krb5.conf`: the JVM's krb5.conf, `-D` only like the JAAS file. paddock
    /// hands it to MIT Kerberos as `KRB5_CONFIG`.
    pub(super) fn krb5_conf_key(&mut self, e: &Entry) -> Result<(), String> {
        if let Origin::Line { .. } = e.origin {
            tracing::warn!(origin = %e.origin, "ignoring java.security.krb5.conf in a zoo.cfg (a JVM property): pass it as -D");
            return Ok(());
        }
        self.sasl.krb5_conf = Some(non_empty_path(&e.value)?);
        Ok(())
    }

    /// Client authentication: the super digest, SASL users, `enforce.auth.*`, auth providers and
    /// the digest scheme's settings. `Ok(false)`: not such a key.
    pub(super) fn client_auth_key(&mut self, key: &str, v: &str) -> Result<bool, String> {
        match key {
            "DigestAuthenticationProvider.superDigest" => {
                validate_super_digest(v)?;
                self.cfg.super_digest = Some(v.to_string());
            }
            "sasl.serverconfig" => self.sasl.section = Some(v.to_string()),
            "SASLAuthenticationProvider.superPassword" => {
                self.sasl.super_password = Some(v.to_string())
            }
            "allowSaslFailedClients" => self.sasl.allow_failed_clients = parse_bool(v)?,
            // SaslServerCallbackHandler compares with "true" exactly (anything else is false).
            "kerberos.removeHostFromPrincipal" => self.sasl.remove_host = v == "true",
            "kerberos.removeRealmFromPrincipal" => self.sasl.remove_realm = v == "true",
            "security.auth_to_local" => self.sasl.auth_to_local = Some(v.to_string()),
            // isSaslSuperUser reads `zookeeper.superUser` and any `zookeeper.superUser.<suffix>`.
            k if k == "superUser" || k.starts_with("superUser.") => {
                if !self.sasl.super_users.iter().any(|u| u == v) {
                    self.sasl.super_users.push(v.to_string());
                }
            }
            "sessionRequireClientSASLAuth" => self.enforce_auth.require_sasl = parse_bool(v)?,
            "enforce.auth.enabled" => self.enforce_auth.enabled = parse_bool(v)?,
            "enforce.auth.schemes" => self.enforce_auth.schemes = Some(v.to_string()),
            "letAnySaslUserDoX" => self.cfg.let_any_sasl_user_do_x = Some(v.to_string()),
            k if is_auth_provider_key(k) => match check_auth_provider(v)? {
                Some("x509") => self.cfg.client_tls.x509_provider = true,
                Some("sasl") => self.cfg.sasl_provider = true,
                _ => {}
            },
            "DigestAuthenticationProvider.digestAlg" => {
                let alg = v.to_ascii_uppercase().replace('-', "");
                if alg != "SHA1" {
                    return Err(format!(
                        "{v:?}: paddock computes digest ids with SHA1 only; another algorithm would \
                         make every digest ACL fail to match (remove the key, or keep SHA1)"
                    ));
                }
            }
            "DigestAuthenticationProvider.enabled" => {
                if !parse_bool(v)? {
                    return Err(
                        "paddock cannot turn the digest scheme off; remove the key (digest \
                         authentication stays on, as ZooKeeper's default)"
                            .into(),
                    );
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The quorum's protection: TLS between members and quorum SASL. An unknown `quorum.auth.*`
    /// key refuses the start. `Ok(false)`: not such a key.
    pub(super) fn quorum_security_key(&mut self, key: &str, v: &str) -> Result<bool, String> {
        let q = &mut self.cfg.quorum_security;
        match key {
            "sslQuorum" => q.ssl_quorum = parse_bool(v)?,
            "portUnification" => q.port_unification = parse_bool(v)?,
            "sslQuorumReloadCertFiles" => q.reload_cert_files = parse_bool(v)?,
            k if k.starts_with("ssl.quorum.") => {
                let suffix = &k["ssl.quorum.".len()..];
                q.ssl_keys.insert(suffix.to_string(), v.to_string());
            }
            "quorum.auth.enableSasl" => q.sasl.enable = parse_bool(v)?,
            "quorum.auth.learnerRequireSasl" => q.sasl.learner_require = parse_bool(v)?,
            "quorum.auth.serverRequireSasl" => q.sasl.server_require = parse_bool(v)?,
            "quorum.auth.learner.saslLoginContext" => q.sasl.learner_context = v.to_string(),
            "quorum.auth.server.saslLoginContext" => q.sasl.server_context = v.to_string(),
            "quorum.auth.kerberos.servicePrincipal" => {
                q.sasl.kerberos_service_principal = Some(v.to_string())
            }
            k if k.starts_with("quorum.auth.") => {
                return Err(
                    "not a quorum.auth key paddock knows; refusing to start rather than run the \
                     quorum less protected than asked (see DESIGN.md, Security)"
                        .into(),
                );
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The client port's TLS and x509 identities. The `ssl.*` keys are checked when the config is
    /// finished (`client_tls::check`), all together. `Ok(false)`: not such a key.
    pub(super) fn client_tls_key(&mut self, key: &str, v: &str) -> Result<bool, String> {
        let c = &mut self.cfg.client_tls;
        match key {
            "secureClientPort" => c.secure_port = Some(parse_port(v)?),
            "secureClientPortAddress" => c.secure_address = Some(parse_ip(v.trim())?),
            "client.portUnification" => c.port_unification = parse_bool(v)?,
            "client.certReload" => c.cert_reload = parse_bool(v)?,
            "serverCnxnFactory" => {
                c.netty = match v.trim() {
                    NETTY_FACTORY => true,
                    NIO_FACTORY => false,
                    other => {
                        return Err(format!(
                            "{other:?}: paddock serves clients as ZooKeeper's {NIO_FACTORY} (the \
                             default) or {NETTY_FACTORY} (which adds TLS) do; another class \
                             would not load in ZooKeeper either"
                        ))
                    }
                }
            }
            // The scheme whose provider authenticates TLS clients; ZooKeeper looks the provider
            // up by this name, and X509AuthenticationProvider's scheme is x509, so any other
            // name is a Java class paddock does not have.
            "ssl.authProvider" => {
                if v.trim() != "x509" {
                    return Err(format!(
                        "{v:?}: paddock authenticates TLS clients with ZooKeeper's \
                         X509AuthenticationProvider (scheme x509) only; remove the key or set \
                         it to x509"
                    ));
                }
            }
            "X509AuthenticationProvider.superUser" => {
                c.x509_super_user = Some(v.trim().to_string())
            }
            k if k.starts_with("ssl.") && !k.starts_with("ssl.quorum.") => {
                c.ssl_keys
                    .insert(k["ssl.".len()..].to_string(), v.to_string());
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// `authProvider.<anything>` (ZooKeeper's ProviderRegistry reads every such property).
fn is_auth_provider_key(k: &str) -> bool {
    k.strip_prefix("authProvider.")
        .is_some_and(|rest| !rest.is_empty())
}

/// The authentication providers paddock has built in; any other class refuses the start, as
/// ZooKeeper's does when it cannot load one. `Ok(Some(scheme))`: a provider ZooKeeper registers
/// only when asked (sasl, x509); `Ok(None)`: one it always has (digest, ip).
fn check_auth_provider(class: &str) -> Result<Option<&'static str>, String> {
    match class {
        "org.apache.zookeeper.server.auth.DigestAuthenticationProvider"
        | "org.apache.zookeeper.server.auth.IPAuthenticationProvider" => return Ok(None),
        "org.apache.zookeeper.server.auth.SASLAuthenticationProvider" => return Ok(Some("sasl")),
        X509_PROVIDER => return Ok(Some("x509")),
        _ => {}
    }
    Err(format!(
        "{class:?} is not an authentication provider paddock has (it has digest, ip, sasl and \
         x509); remove the key"
    ))
}
