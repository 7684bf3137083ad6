//! Java's protocol and cipher suite names, mapped to what rustls (on aws-lc-rs) can do.
//!
//! ZooKeeper hands `protocol`, `enabledProtocols` and `ciphersuites` to the JDK, which refuses
//! names it does not know and quietly skips suites it knows but has disabled. rustls speaks
//! fewer of them (TLS 1.2 and 1.3 only, AEAD suites with ECDHE only), so a list written for the
//! JDK often names some paddock cannot use: those are dropped with a warning, and a list of which
//! nothing is left is an error, never an empty configuration.

use rustls::crypto::aws_lc_rs::cipher_suite as aws;
use rustls::{SupportedCipherSuite, SupportedProtocolVersion};

use super::error::TlsError;
use super::settings::Flavour;

/// A TLS version paddock speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TlsVersion {
    Tls12,
    Tls13,
}

impl TlsVersion {
    /// The name Java (and zoo.cfg) uses.
    pub fn java_name(self) -> &'static str {
        match self {
            TlsVersion::Tls12 => "TLSv1.2",
            TlsVersion::Tls13 => "TLSv1.3",
        }
    }

    pub(crate) fn rustls(self) -> &'static SupportedProtocolVersion {
        match self {
            TlsVersion::Tls12 => &rustls::version::TLS12,
            TlsVersion::Tls13 => &rustls::version::TLS13,
        }
    }

    fn of_suite(suite: &SupportedCipherSuite) -> TlsVersion {
        match suite {
            SupportedCipherSuite::Tls12(_) => TlsVersion::Tls12,
            SupportedCipherSuite::Tls13(_) => TlsVersion::Tls13,
        }
    }
}

/// ZooKeeper's `DEFAULT_PROTOCOL` on any JDK with TLS 1.3 (11 and later, 8u272 and later).
pub const DEFAULT_PROTOCOL: &str = "TLSv1.3";

/// Names the JDK knows for protocols paddock will not speak (it has no SSL 3.0, TLS 1.0 or 1.1).
const OLD_PROTOCOLS: [&str; 6] = ["SSL", "SSLv2", "SSLv2Hello", "SSLv3", "TLSv1", "TLSv1.1"];

/// The IANA names Java uses for the suites rustls's aws-lc-rs provider has. Java calls the TLS 1.3
/// suites `TLS_AES_128_GCM_SHA256` and so on; rustls prefixes them `TLS13_`.
const SUITES: [(&str, SupportedCipherSuite); 9] = [
    ("TLS_AES_128_GCM_SHA256", aws::TLS13_AES_128_GCM_SHA256),
    ("TLS_AES_256_GCM_SHA384", aws::TLS13_AES_256_GCM_SHA384),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        aws::TLS13_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        aws::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        aws::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        aws::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        aws::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        aws::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        aws::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
];

/// The Java name of a suite paddock can use.
pub fn java_suite_name(suite: SupportedCipherSuite) -> &'static str {
    SUITES
        .iter()
        .find(|(_, s)| *s == suite)
        .map(|(name, _)| *name)
        .expect("every suite paddock selects comes from SUITES")
}

/// Items of a comma list, trimmed, empty items skipped (`a,,b` and `a, b` mean `a,b`; the JDK
/// would refuse both, which helps nobody).
fn items(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// The versions to enable, highest first, and the names dropped from `enabledProtocols`.
///
/// Without `enabledProtocols` the JDK enables what the `protocol` context enables by default:
/// a `TLSv1.3` context enables TLSv1.3 and TLSv1.2, a `TLSv1.2` context TLSv1.2 only
/// (SSLContextAndOptions, the quorum). The client port is built by Netty from ClientX509Util,
/// which enables exactly `[protocol]`, so there `TLSv1.3` means TLS 1.3 alone.
pub(crate) fn resolve_protocols(
    prefix: &str,
    flavour: Flavour,
    protocol: Option<&str>,
    enabled: Option<&str>,
) -> Result<(Vec<TlsVersion>, Vec<String>), TlsError> {
    let key = format!("{prefix}enabledProtocols");
    if let Some(list) = enabled {
        let mut versions = Vec::new();
        let mut dropped = Vec::new();
        for name in items(list) {
            match parse_version(name) {
                Some(v) if !versions.contains(&v) => versions.push(v),
                Some(_) => {}
                None => dropped.push(name.to_string()),
            }
        }
        if versions.is_empty() {
            return Err(TlsError::key(
                key,
                format!(
                    "none of {list:?} can be used: paddock speaks TLSv1.2 and TLSv1.3 (SSLv3, \
                     TLSv1 and TLSv1.1 are not offered)"
                ),
            ));
        }
        if !dropped.is_empty() {
            tracing::warn!(
                key = %key,
                dropped = %dropped.join(","),
                "protocols paddock does not speak are left out"
            );
        }
        versions.sort_unstable_by(|a, b| b.cmp(a));
        return Ok((versions, dropped));
    }
    let key = format!("{prefix}protocol");
    let protocol = protocol.unwrap_or(DEFAULT_PROTOCOL);
    let versions = match (parse_version(protocol), flavour) {
        (Some(TlsVersion::Tls13), Flavour::Quorum) => vec![TlsVersion::Tls13, TlsVersion::Tls12],
        (Some(TlsVersion::Tls13), Flavour::Client) => vec![TlsVersion::Tls13],
        (Some(TlsVersion::Tls12), _) => vec![TlsVersion::Tls12],
        // The JDK's generic context: its default protocols on 11 and later.
        (None, _) if protocol.eq_ignore_ascii_case("TLS") => {
            vec![TlsVersion::Tls13, TlsVersion::Tls12]
        }
        (None, _)
            if OLD_PROTOCOLS
                .iter()
                .any(|p| p.eq_ignore_ascii_case(protocol)) =>
        {
            return Err(TlsError::key(
                key,
                format!("{protocol} is not offered by paddock: use TLSv1.3 or TLSv1.2"),
            ))
        }
        (None, _) => {
            return Err(TlsError::key(
                key,
                format!("unknown protocol {protocol:?}: expected TLSv1.3 or TLSv1.2"),
            ))
        }
    };
    Ok((versions, Vec::new()))
}

fn parse_version(name: &str) -> Option<TlsVersion> {
    if name.eq_ignore_ascii_case("TLSv1.3") {
        Some(TlsVersion::Tls13)
    } else if name.eq_ignore_ascii_case("TLSv1.2") {
        Some(TlsVersion::Tls12)
    } else {
        None
    }
}

/// The suites to offer, in the order given, and the names dropped from `ciphersuites`.
///
/// Unset means rustls's aws-lc-rs defaults: all nine suites above, TLS 1.3 first. ZooKeeper's
/// default list adds the CBC suites, which rustls does not implement.
pub(crate) fn resolve_cipher_suites(
    prefix: &str,
    list: Option<&str>,
    versions: &[TlsVersion],
) -> Result<(Vec<SupportedCipherSuite>, Vec<String>), TlsError> {
    let key = format!("{prefix}ciphersuites");
    let (suites, dropped) = match list {
        None => (
            rustls::crypto::aws_lc_rs::DEFAULT_CIPHER_SUITES.to_vec(),
            Vec::new(),
        ),
        Some(list) => {
            let mut suites = Vec::new();
            let mut dropped = Vec::new();
            for name in items(list) {
                match SUITES.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
                    Some((_, s)) if !suites.contains(s) => suites.push(*s),
                    Some(_) => {}
                    None => dropped.push(name.to_string()),
                }
            }
            if suites.is_empty() {
                return Err(TlsError::key(
                    key,
                    format!(
                        "none of {list:?} can be used: paddock offers {}",
                        SUITES.map(|(n, _)| n).join(", ")
                    ),
                ));
            }
            (suites, dropped)
        }
    };
    // A TLS 1.3 suite with only TLS 1.2 enabled (or the reverse) can never be chosen; if that
    // leaves nothing, no handshake could succeed, so refuse the configuration now.
    if !suites
        .iter()
        .any(|s| versions.contains(&TlsVersion::of_suite(s)))
    {
        let names: Vec<&str> = suites.iter().map(|s| java_suite_name(*s)).collect();
        let enabled: Vec<&str> = versions.iter().map(|v| v.java_name()).collect();
        return Err(TlsError::key(
            key,
            format!(
                "none of the usable suites ({}) works with the enabled protocols ({})",
                names.join(", "),
                enabled.join(", ")
            ),
        ));
    }
    if !dropped.is_empty() {
        tracing::warn!(
            key = %key,
            dropped = %dropped.join(","),
            "cipher suites paddock does not implement are left out"
        );
    }
    Ok((suites, dropped))
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "ssl.quorum.";

    #[test]
    fn quorum_default_is_tls13_and_tls12_as_the_jdk_context_enables() {
        let (v, dropped) = resolve_protocols(P, Flavour::Quorum, None, None).unwrap();
        assert_eq!(v, vec![TlsVersion::Tls13, TlsVersion::Tls12]);
        assert!(dropped.is_empty());
    }

    #[test]
    fn client_port_default_is_exactly_the_protocol_as_netty_enables() {
        let (v, _) = resolve_protocols("ssl.", Flavour::Client, None, None).unwrap();
        assert_eq!(v, vec![TlsVersion::Tls13]);
        let (v, _) = resolve_protocols("ssl.", Flavour::Client, Some("TLSv1.2"), None).unwrap();
        assert_eq!(v, vec![TlsVersion::Tls12]);
    }

    #[test]
    fn protocol_tls12_enables_tls12_only() {
        let (v, _) = resolve_protocols(P, Flavour::Quorum, Some("TLSv1.2"), None).unwrap();
        assert_eq!(v, vec![TlsVersion::Tls12]);
        let (v, _) = resolve_protocols(P, Flavour::Quorum, Some("TLS"), None).unwrap();
        assert_eq!(v, vec![TlsVersion::Tls13, TlsVersion::Tls12]);
    }

    #[test]
    fn enabled_protocols_override_protocol_and_drop_old_versions() {
        let (v, dropped) = resolve_protocols(
            P,
            Flavour::Quorum,
            Some("TLSv1.1"),
            Some("TLSv1.1, TLSv1.2,,TLSv1.3"),
        )
        .unwrap();
        assert_eq!(v, vec![TlsVersion::Tls13, TlsVersion::Tls12]);
        assert_eq!(dropped, vec!["TLSv1.1".to_string()]);
    }

    #[test]
    fn no_usable_protocol_is_an_error() {
        let e = resolve_protocols(P, Flavour::Quorum, None, Some("TLSv1,TLSv1.1")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "ssl.quorum.enabledProtocols: none of \"TLSv1,TLSv1.1\" can be used: paddock speaks \
             TLSv1.2 and TLSv1.3 (SSLv3, TLSv1 and TLSv1.1 are not offered)"
        );
        let e = resolve_protocols(P, Flavour::Quorum, Some("TLSv1.1"), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "ssl.quorum.protocol: TLSv1.1 is not offered by paddock: use TLSv1.3 or TLSv1.2"
        );
        let e = resolve_protocols(P, Flavour::Quorum, Some("TLSv13"), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "ssl.quorum.protocol: unknown protocol \"TLSv13\": expected TLSv1.3 or TLSv1.2"
        );
    }

    #[test]
    fn default_suites_are_rings_nine() {
        let (s, dropped) = resolve_cipher_suites(P, None, &[TlsVersion::Tls13]).unwrap();
        let names: Vec<&str> = s.iter().map(|s| java_suite_name(*s)).collect();
        assert_eq!(
            names,
            vec![
                "TLS_AES_256_GCM_SHA384",
                "TLS_AES_128_GCM_SHA256",
                "TLS_CHACHA20_POLY1305_SHA256",
                "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
            ]
        );
        assert!(dropped.is_empty());
    }

    #[test]
    fn java_names_map_and_unknown_ones_are_dropped_in_order() {
        let list = "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,\
                    TLS_AES_128_GCM_SHA256,TLS_RSA_WITH_AES_128_GCM_SHA256";
        let (s, dropped) =
            resolve_cipher_suites(P, Some(list), &[TlsVersion::Tls13, TlsVersion::Tls12]).unwrap();
        assert_eq!(
            s,
            vec![
                aws::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
                aws::TLS13_AES_128_GCM_SHA256
            ]
        );
        assert_eq!(
            dropped,
            vec![
                "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256".to_string(),
                "TLS_RSA_WITH_AES_128_GCM_SHA256".to_string()
            ]
        );
    }

    #[test]
    fn suites_none_usable_or_none_for_the_enabled_versions_are_errors() {
        let e = resolve_cipher_suites(
            P,
            Some("TLS_RSA_WITH_AES_128_CBC_SHA"),
            &[TlsVersion::Tls12],
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with(
                "ssl.quorum.ciphersuites: none of \"TLS_RSA_WITH_AES_128_CBC_SHA\" can be used: \
                 paddock offers TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, "
            ),
            "{e}"
        );
        let e = resolve_cipher_suites(P, Some("TLS_AES_128_GCM_SHA256"), &[TlsVersion::Tls12])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "ssl.quorum.ciphersuites: none of the usable suites (TLS_AES_128_GCM_SHA256) works \
             with the enabled protocols (TLSv1.2)"
        );
    }
}
