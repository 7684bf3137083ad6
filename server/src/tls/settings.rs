//! The TLS keys of zoo.cfg under one prefix, validated into plain data.
//!
//! Nothing here touches a file: the store files and password files are read by `store` when the
//! material is loaded (at start and at every reload), so that a password file rotated together
//! with its store is read afresh, as ZooKeeper does when it rebuilds its SSLContext.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustls::SupportedCipherSuite;

use super::error::TlsError;
use super::suites::{self, TlsVersion};

/// ZooKeeper's `X509Util.DEFAULT_HANDSHAKE_DETECTION_TIMEOUT_MILLIS`.
pub const DEFAULT_HANDSHAKE_DETECTION_TIMEOUT_MS: u64 = 5000;

/// A password. Its Debug and Display print `***`, so a settings dump, a log line or an error
/// built with `{:?}` never shows it; only [`Secret::expose`] gives the text.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(text: impl Into<String>) -> Secret {
        Secret(text.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Which of ZooKeeper's two X509Utils the prefix stands for; some defaults differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// `ssl.quorum.` (QuorumX509Util): clientHostnameVerification and allowReverseDnsLookup
    /// default to true; enabledProtocols defaults to what the JDK context enables.
    Quorum,
    /// `ssl.` (ClientX509Util): both default to false; enabledProtocols defaults to `[protocol]`.
    Client,
}

impl Flavour {
    /// A prefix ending in `quorum.` is the quorum's (`ssl.quorum.`, or `zookeeper.ssl.quorum.`
    /// as a system property); any other is the client port's.
    pub fn of_prefix(prefix: &str) -> Flavour {
        if prefix.ends_with("quorum.") {
            Flavour::Quorum
        } else {
            Flavour::Client
        }
    }
}

/// `clientAuth`: what the server side asks of the peer that connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// A certificate verified against the trust store is required (ZooKeeper's default).
    Need,
    /// A certificate is asked for; one that is sent must verify, none at all is accepted.
    Want,
    /// No certificate is asked for.
    None,
}

/// The formats paddock reads. JKS and BCFKS are refused with the command that converts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreType {
    Pem,
    Pkcs12,
}

/// One key store or trust store: `<prefix>keyStore.*` or `<prefix>trustStore.*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSpec {
    /// `ssl.quorum.keyStore` or `ssl.quorum.trustStore`; errors name `<key>.location` and so on.
    pub key: String,
    pub location: PathBuf,
    pub store_type: StoreType,
    pub password: Option<Secret>,
    /// Read at every load; when set it wins over `password` (X509Util's
    /// getPasswordFromConfigPropertyOrFile).
    pub password_path: Option<PathBuf>,
}

impl StoreSpec {
    pub fn location_key(&self) -> String {
        format!("{}.location", self.key)
    }

    /// The files whose change means the store must be read again.
    pub fn files(&self) -> Vec<&Path> {
        let mut files = vec![self.location.as_path()];
        files.extend(self.password_path.as_deref());
        files
    }
}

/// Everything the TLS keys under one prefix say, checked. Debug never prints a password.
#[derive(Debug, Clone, PartialEq)]
pub struct TlsSettings {
    /// `ssl.quorum.` or `ssl.`: every error names `<prefix><key>`.
    pub prefix: String,
    pub flavour: Flavour,
    pub key_store: Option<StoreSpec>,
    pub trust_store: Option<StoreSpec>,
    /// The versions to enable, highest first.
    pub protocols: Vec<TlsVersion>,
    /// Names in `enabledProtocols` paddock does not speak (logged as a warning).
    pub dropped_protocols: Vec<String>,
    /// The suites to offer, in preference order.
    pub cipher_suites: Vec<SupportedCipherSuite>,
    /// Names in `ciphersuites` rustls does not implement (logged as a warning).
    pub dropped_cipher_suites: Vec<String>,
    /// The client side checks that the server's certificate names the host it dialled.
    pub hostname_verification: bool,
    /// Whether the server side should check that the client's certificate names the client's
    /// address: `clientHostnameVerification`, and only when `hostnameVerification` is on too
    /// (X509Util.isClientHostnameVerificationEnabled). A rustls verifier does not see the peer's
    /// address, so the caller checks it after the handshake with `cert_valid_for_host`.
    pub client_hostname_verification: bool,
    pub client_auth: ClientAuth,
    /// Kept for the caller; paddock itself never does a reverse lookup (names are checked
    /// against the certificate's SANs only).
    pub allow_reverse_dns_lookup: bool,
    /// How long port unification may wait for the first bytes of a connection.
    pub handshake_detection_timeout: Duration,
}

impl TlsSettings {
    /// Reads and checks the TLS keys under `prefix`. `get("keyStore.location")` returns the
    /// value of `<prefix>keyStore.location` when zoo.cfg (or a system property) sets it.
    ///
    /// Keys paddock cannot honour fail here, naming the key and what to do instead.
    pub fn from_keys(
        prefix: &str,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<TlsSettings, TlsError> {
        let flavour = Flavour::of_prefix(prefix);
        let full = |name: &str| format!("{prefix}{name}");
        // zoo.cfg values arrive trimmed from ZooKeeper's parser; trim again for system
        // properties and callers that do not. Passwords are the exception: taken verbatim.
        let value = |name: &str| get(name).map(|v| v.trim().to_string());
        let flag = |name: &str, default: bool| -> Result<bool, TlsError> {
            match value(name) {
                None => Ok(default),
                Some(v) => parse_bool(&full(name), &v),
            }
        };

        if let Some(class) = value("context.supplier.class") {
            return Err(TlsError::key(
                full("context.supplier.class"),
                format!(
                    "{class:?} is a Java class that builds an SSLContext, and paddock runs no \
                     Java: remove this key and set {} and {} instead",
                    full("keyStore.location"),
                    full("trustStore.location")
                ),
            ));
        }
        for name in ["crl", "ocsp"] {
            if flag(name, false)? {
                return Err(TlsError::key(
                    full(name),
                    format!(
                        "paddock does not check revocation: Java fetches CRLs and OCSP answers \
                         over the network from each certificate's distribution points, paddock \
                         fetches nothing. To revoke a certificate, remove its CA from {} (a \
                         trust store may hold the old and the new CA during a rotation) or \
                         rotate the members to certificates from a new CA; then set {}=false or \
                         remove it",
                        full("trustStore.location"),
                        full(name)
                    ),
                ));
            }
        }

        let key_store = store_spec(prefix, "keyStore", &get)?;
        let trust_store = store_spec(prefix, "trustStore", &get)?;

        let (protocols, dropped_protocols) = suites::resolve_protocols(
            prefix,
            flavour,
            value("protocol").as_deref(),
            value("enabledProtocols").as_deref(),
        )?;
        let (cipher_suites, dropped_cipher_suites) =
            suites::resolve_cipher_suites(prefix, value("ciphersuites").as_deref(), &protocols)?;

        let hostname_verification = flag("hostnameVerification", true)?;
        let client_hostname_verification = hostname_verification
            && flag("clientHostnameVerification", flavour == Flavour::Quorum)?;
        let allow_reverse_dns_lookup = flag("allowReverseDnsLookup", flavour == Flavour::Quorum)?;

        let client_auth = match value("clientAuth") {
            None => ClientAuth::Need,
            Some(v) => match v.to_ascii_lowercase().as_str() {
                // ZooKeeper reads an empty value as the default.
                "" | "need" => ClientAuth::Need,
                "want" => ClientAuth::Want,
                "none" => ClientAuth::None,
                _ => {
                    return Err(TlsError::key(
                        full("clientAuth"),
                        format!("expected need, want or none, got {v:?}"),
                    ))
                }
            },
        };

        let handshake_detection_timeout = match value("handshakeDetectionTimeoutMillis") {
            None => Duration::from_millis(DEFAULT_HANDSHAKE_DETECTION_TIMEOUT_MS),
            Some(v) => {
                let key = full("handshakeDetectionTimeoutMillis");
                let ms: i32 = v.parse().map_err(|_| {
                    TlsError::key(
                        &key,
                        format!("expected a number of milliseconds, got {v:?}"),
                    )
                })?;
                if ms < 1 {
                    // As SSLContextAndOptions: no wait at all (or forever) would let one
                    // silent connection hold up the accept loop.
                    tracing::warn!(
                        key = %key,
                        value = ms,
                        default = DEFAULT_HANDSHAKE_DETECTION_TIMEOUT_MS,
                        "not positive; using the default"
                    );
                    Duration::from_millis(DEFAULT_HANDSHAKE_DETECTION_TIMEOUT_MS)
                } else {
                    Duration::from_millis(ms as u64)
                }
            }
        };

        Ok(TlsSettings {
            prefix: prefix.to_string(),
            flavour,
            key_store,
            trust_store,
            protocols,
            dropped_protocols,
            cipher_suites,
            dropped_cipher_suites,
            hostname_verification,
            client_hostname_verification,
            client_auth,
            allow_reverse_dns_lookup,
            handshake_detection_timeout,
        })
    }

    /// Every file the material is read from (stores and password files), for the reloader.
    pub fn files(&self) -> Vec<&Path> {
        let mut files = Vec::new();
        for spec in [&self.key_store, &self.trust_store].into_iter().flatten() {
            files.extend(spec.files());
        }
        files
    }
}

/// Java's `Boolean.parseBoolean` reads anything but `true` as false, so `hostnameVerification=yes`
/// would silently turn verification off; paddock takes only true or false (any case).
fn parse_bool(key: &str, v: &str) -> Result<bool, TlsError> {
    if v.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if v.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(TlsError::key(
            key,
            format!("expected true or false, got {v:?}"),
        ))
    }
}

/// `<prefix><store>.{location,password,passwordPath,type}`; `None` when no location is set
/// (ZooKeeper then loads no store; whether that is acceptable is the config builder's call).
fn store_spec(
    prefix: &str,
    store: &str,
    get: &impl Fn(&str) -> Option<String>,
) -> Result<Option<StoreSpec>, TlsError> {
    let value = |name: &str| {
        get(&format!("{store}.{name}"))
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let key = format!("{prefix}{store}");
    let Some(location) = value("location") else {
        return Ok(None);
    };
    let location = PathBuf::from(location);
    let store_type = match value("type") {
        Some(t) => store_type_of_value(&key, &t, &location)?,
        None => store_type_of_name(&key, &location)?,
    };
    let password = get(&format!("{store}.password"))
        .filter(|p| !p.is_empty())
        .map(Secret);
    let password_path = value("passwordPath").map(PathBuf::from);
    Ok(Some(StoreSpec {
        key,
        location,
        store_type,
        password,
        password_path,
    }))
}

/// KeyStoreFileType.fromPropertyValue: the enum name in any case.
fn store_type_of_value(key: &str, value: &str, location: &Path) -> Result<StoreType, TlsError> {
    match value.to_ascii_uppercase().as_str() {
        "PEM" => Ok(StoreType::Pem),
        "PKCS12" => Ok(StoreType::Pkcs12),
        "JKS" => Err(convert_error(key, location, "JKS")),
        "BCFKS" => Err(convert_error(key, location, "BCFKS")),
        _ => Err(TlsError::key(
            format!("{key}.type"),
            format!("expected PEM or PKCS12, got {value:?}"),
        )),
    }
}

/// KeyStoreFileType.fromFilename: the exact extensions `.pem`, `.p12`, `.jks`, `.bcfks`
/// (case matters, and `.pfx` is not among them, as in ZooKeeper).
fn store_type_of_name(key: &str, location: &Path) -> Result<StoreType, TlsError> {
    let name = location.to_string_lossy();
    if name.ends_with(".pem") {
        Ok(StoreType::Pem)
    } else if name.ends_with(".p12") {
        Ok(StoreType::Pkcs12)
    } else if name.ends_with(".jks") {
        Err(convert_error(key, location, "JKS"))
    } else if name.ends_with(".bcfks") {
        Err(convert_error(key, location, "BCFKS"))
    } else {
        Err(TlsError::file(
            format!("{key}.location"),
            location,
            format!(
                "cannot tell the store type from the file name (ZooKeeper knows .pem, .p12, .jks \
                 and .bcfks): set {key}.type to PEM or PKCS12"
            ),
        ))
    }
}

/// JKS and BCFKS are Java's own formats (BCFKS needs BouncyCastle's FIPS provider); no Rust
/// reader exists that paddock would trust, and keytool converts both losslessly.
pub(crate) fn convert_error(key: &str, location: &Path, kind: &str) -> TlsError {
    let src = location.display().to_string();
    let dest = match location.extension().and_then(|e| e.to_str()) {
        Some("jks" | "bcfks" | "ks" | "keystore") => location.with_extension("p12"),
        _ => PathBuf::from(format!("{src}.p12")),
    };
    let dest = dest.display().to_string();
    let provider = if kind == "BCFKS" {
        " -providerpath bc-fips.jar -providerclass \
         org.bouncycastle.jcajce.provider.BouncyCastleFipsProvider"
    } else {
        ""
    };
    TlsError::file(
        format!("{key}.location"),
        location,
        format!(
            "paddock cannot read {kind} stores; convert it to PKCS12 with `keytool \
             -importkeystore -srckeystore {src} -srcstoretype {kind}{provider} -destkeystore \
             {dest} -deststoretype PKCS12` and set {key}.location={dest}"
        ),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn settings(prefix: &str, pairs: &[(&str, &str)]) -> Result<TlsSettings, TlsError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        TlsSettings::from_keys(prefix, |k| map.get(&format!("{prefix}{k}")).cloned())
    }

    const Q: &str = "ssl.quorum.";

    #[test]
    fn defaults_follow_quorum_x509_util() {
        let s = settings(Q, &[]).unwrap();
        assert_eq!(s.flavour, Flavour::Quorum);
        assert_eq!(s.key_store, None);
        assert_eq!(s.trust_store, None);
        assert_eq!(s.protocols, vec![TlsVersion::Tls13, TlsVersion::Tls12]);
        assert_eq!(s.cipher_suites.len(), 9);
        assert!(s.hostname_verification);
        assert!(s.client_hostname_verification);
        assert!(s.allow_reverse_dns_lookup);
        assert_eq!(s.client_auth, ClientAuth::Need);
        assert_eq!(s.handshake_detection_timeout, Duration::from_millis(5000));
    }

    #[test]
    fn defaults_follow_client_x509_util() {
        let s = settings("ssl.", &[]).unwrap();
        assert_eq!(s.flavour, Flavour::Client);
        assert_eq!(s.protocols, vec![TlsVersion::Tls13]);
        assert!(s.hostname_verification);
        assert!(!s.client_hostname_verification);
        assert!(!s.allow_reverse_dns_lookup);
    }

    #[test]
    fn client_hostname_verification_needs_hostname_verification() {
        let s = settings(
            Q,
            &[
                ("ssl.quorum.hostnameVerification", "false"),
                ("ssl.quorum.clientHostnameVerification", "true"),
            ],
        )
        .unwrap();
        assert!(!s.hostname_verification);
        assert!(!s.client_hostname_verification);
    }

    #[test]
    fn stores_passwords_and_types() {
        let s = settings(
            Q,
            &[
                ("ssl.quorum.keyStore.location", " /etc/zk/m1.p12 "),
                ("ssl.quorum.keyStore.password", "hunter2"),
                ("ssl.quorum.trustStore.location", "/etc/zk/ca.crt"),
                ("ssl.quorum.trustStore.type", "pem"),
                ("ssl.quorum.trustStore.passwordPath", "/run/secrets/tpw"),
            ],
        )
        .unwrap();
        assert_eq!(
            s.key_store,
            Some(StoreSpec {
                key: "ssl.quorum.keyStore".into(),
                location: "/etc/zk/m1.p12".into(),
                store_type: StoreType::Pkcs12,
                password: Some(Secret::new("hunter2")),
                password_path: None,
            })
        );
        let t = s.trust_store.as_ref().unwrap();
        assert_eq!(t.store_type, StoreType::Pem);
        assert_eq!(t.password, None);
        assert_eq!(t.password_path, Some(PathBuf::from("/run/secrets/tpw")));
        assert_eq!(
            s.files(),
            vec![
                Path::new("/etc/zk/m1.p12"),
                Path::new("/etc/zk/ca.crt"),
                Path::new("/run/secrets/tpw")
            ]
        );
    }

    #[test]
    fn debug_never_prints_a_password() {
        let s = settings(
            Q,
            &[
                ("ssl.quorum.keyStore.location", "/k.pem"),
                ("ssl.quorum.keyStore.password", "hunter2"),
            ],
        )
        .unwrap();
        let text = format!("{s:?}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("password: Some(***)"), "{text}");
        assert_eq!(Secret::new("hunter2").to_string(), "***");
    }

    #[test]
    fn store_type_from_extension_is_exact_as_in_zookeeper() {
        let e = settings(Q, &[("ssl.quorum.keyStore.location", "/etc/zk/m1.pfx")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "ssl.quorum.keyStore.location=/etc/zk/m1.pfx: cannot tell the store type from the \
             file name (ZooKeeper knows .pem, .p12, .jks and .bcfks): set ssl.quorum.keyStore.type \
             to PEM or PKCS12"
        );
        let s = settings(
            Q,
            &[
                ("ssl.quorum.keyStore.location", "/etc/zk/m1.PFX"),
                ("ssl.quorum.keyStore.type", "Pkcs12"),
            ],
        )
        .unwrap();
        assert_eq!(s.key_store.unwrap().store_type, StoreType::Pkcs12);
        let e = settings(
            Q,
            &[
                ("ssl.quorum.keyStore.location", "/k.p12"),
                ("ssl.quorum.keyStore.type", "P12"),
            ],
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "ssl.quorum.keyStore.type: expected PEM or PKCS12, got \"P12\""
        );
    }

    #[test]
    fn jks_and_bcfks_get_the_conversion_command() {
        let e = settings(
            Q,
            &[("ssl.quorum.trustStore.location", "/etc/zk/trust.jks")],
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "ssl.quorum.trustStore.location=/etc/zk/trust.jks: paddock cannot read JKS stores; \
             convert it to PKCS12 with `keytool -importkeystore -srckeystore /etc/zk/trust.jks \
             -srcstoretype JKS -destkeystore /etc/zk/trust.p12 -deststoretype PKCS12` and set \
             ssl.quorum.trustStore.location=/etc/zk/trust.p12"
        );
        let e = settings(
            Q,
            &[
                ("ssl.quorum.keyStore.location", "/etc/zk/m1.store"),
                ("ssl.quorum.keyStore.type", "bcfks"),
            ],
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "ssl.quorum.keyStore.location=/etc/zk/m1.store: paddock cannot read BCFKS stores; \
             convert it to PKCS12 with `keytool -importkeystore -srckeystore /etc/zk/m1.store \
             -srcstoretype BCFKS -providerpath bc-fips.jar -providerclass \
             org.bouncycastle.jcajce.provider.BouncyCastleFipsProvider -destkeystore \
             /etc/zk/m1.store.p12 -deststoretype PKCS12` and set \
             ssl.quorum.keyStore.location=/etc/zk/m1.store.p12"
        );
    }

    #[test]
    fn revocation_keys_fail_closed_and_say_how_to_revoke() {
        let e = settings(Q, &[("ssl.quorum.crl", "true")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "ssl.quorum.crl: paddock does not check revocation: Java fetches CRLs and OCSP \
             answers over the network from each certificate's distribution points, paddock \
             fetches nothing. To revoke a certificate, remove its CA from \
             ssl.quorum.trustStore.location (a trust store may hold the old and the new CA \
             during a rotation) or rotate the members to certificates from a new CA; then set \
             ssl.quorum.crl=false or remove it"
        );
        let e = settings("ssl.", &[("ssl.ocsp", "TRUE")]).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("ssl.ocsp: paddock does not check revocation"));
        // false is what paddock does anyway.
        assert!(settings(
            Q,
            &[("ssl.quorum.crl", "false"), ("ssl.quorum.ocsp", "false")]
        )
        .is_ok());
    }

    #[test]
    fn context_supplier_class_is_refused() {
        let e = settings(
            Q,
            &[("ssl.quorum.context.supplier.class", "com.example.Ctx")],
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "ssl.quorum.context.supplier.class: \"com.example.Ctx\" is a Java class that builds \
             an SSLContext, and paddock runs no Java: remove this key and set \
             ssl.quorum.keyStore.location and ssl.quorum.trustStore.location instead"
        );
    }

    #[test]
    fn values_are_checked_and_errors_name_the_full_key() {
        let e = settings(Q, &[("ssl.quorum.hostnameVerification", "yes")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "ssl.quorum.hostnameVerification: expected true or false, got \"yes\""
        );
        let e = settings(Q, &[("ssl.quorum.clientAuth", "required")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "ssl.quorum.clientAuth: expected need, want or none, got \"required\""
        );
        let e = settings(Q, &[("ssl.quorum.handshakeDetectionTimeoutMillis", "5s")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "ssl.quorum.handshakeDetectionTimeoutMillis: expected a number of milliseconds, got \
             \"5s\""
        );
    }

    #[test]
    fn parsed_and_kept_values() {
        let s = settings(
            "ssl.",
            &[
                ("ssl.clientAuth", "WANT"),
                ("ssl.allowReverseDnsLookup", "true"),
                ("ssl.handshakeDetectionTimeoutMillis", "250"),
                ("ssl.hostnameVerification", "False"),
            ],
        )
        .unwrap();
        assert_eq!(s.client_auth, ClientAuth::Want);
        assert!(s.allow_reverse_dns_lookup);
        assert!(!s.hostname_verification);
        assert_eq!(s.handshake_detection_timeout, Duration::from_millis(250));
        let s = settings(
            "ssl.",
            &[
                ("ssl.clientAuth", ""),
                ("ssl.handshakeDetectionTimeoutMillis", "0"),
            ],
        )
        .unwrap();
        assert_eq!(s.client_auth, ClientAuth::Need);
        assert_eq!(s.handshake_detection_timeout, Duration::from_millis(5000));
    }
}
