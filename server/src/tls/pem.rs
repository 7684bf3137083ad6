//! PEM sections, read by hand rather than through rustls-pki-types's reader for two reasons:
//! its errors quote the offending line, which in a key file is key material, and it skips the
//! sections paddock must tell apart (`ENCRYPTED PRIVATE KEY`, OpenSSL's legacy encrypted keys
//! with `Proc-Type` headers, `TRUSTED CERTIFICATE`) instead of reporting them.
//!
//! Text outside sections is ignored, as ZooKeeper's PemReader does (it lets `openssl pkcs12`
//! output with its "Bag Attributes" lines be used as it is).

use base64::Engine;

/// One `-----BEGIN <label>-----` ... `-----END <label>-----` section.
pub(crate) struct Section {
    pub label: String,
    /// The section had RFC 1421 headers (`Proc-Type: 4,ENCRYPTED`, `DEK-Info: ...`): OpenSSL's
    /// legacy encryption of a PKCS#1 or SEC1 key.
    pub has_headers: bool,
    pub der: Vec<u8>,
}

/// Why a file is not PEM paddock can read. Never carries the file's content.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PemError {
    Unterminated { label: String },
    Mismatched { label: String },
    Base64 { label: String },
}

impl std::fmt::Display for PemError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PemError::Unterminated { label } => {
                write!(f, "the PEM section {label} has no END line")
            }
            PemError::Mismatched { label } => {
                write!(
                    f,
                    "the PEM section {label} ends with another label's END line"
                )
            }
            PemError::Base64 { label } => {
                write!(f, "the PEM section {label} is not valid base64")
            }
        }
    }
}

/// Labels are echoed in errors; a hostile or binary file could make one long or odd.
fn clean_label(label: &str) -> String {
    label
        .chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(40)
        .collect()
}

pub(crate) fn sections(text: &[u8]) -> Result<Vec<Section>, PemError> {
    let mut out = Vec::new();
    let mut open: Option<(String, bool, Vec<u8>)> = None;
    for raw in text.split(|b| *b == b'\n') {
        let line = raw.trim_ascii();
        if let Some((label, has_headers, body)) = open.as_mut() {
            if let Some(rest) = line.strip_prefix(b"-----END ") {
                let end = rest.strip_suffix(b"-----").unwrap_or(rest);
                if end != label.as_bytes() {
                    return Err(PemError::Mismatched {
                        label: label.clone(),
                    });
                }
                let der = base64::engine::general_purpose::STANDARD
                    .decode(&body[..])
                    .map_err(|_| PemError::Base64 {
                        label: label.clone(),
                    })?;
                out.push(Section {
                    label: std::mem::take(label),
                    has_headers: *has_headers,
                    der,
                });
                open = None;
            } else if line.contains(&b':') {
                *has_headers = true;
            } else {
                body.extend_from_slice(line);
            }
        } else if let Some(rest) = line.strip_prefix(b"-----BEGIN ") {
            if let Some(label) = rest.strip_suffix(b"-----") {
                let label = clean_label(&String::from_utf8_lossy(label));
                open = Some((label, false, Vec::new()));
            }
        }
    }
    match open {
        Some((label, _, _)) => Err(PemError::Unterminated { label }),
        None => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_in_order_with_text_between_ignored() {
        let text = b"Bag Attributes\n    localKeyID: 01\n-----BEGIN CERTIFICATE-----\r\nAAEC\r\n\
                     -----END CERTIFICATE-----\r\nsubject=CN = x\n-----BEGIN PRIVATE KEY-----\n\
                     AwQF\nBg==\n-----END PRIVATE KEY-----\n";
        let s = sections(text).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].label, "CERTIFICATE");
        assert_eq!(s[0].der, vec![0, 1, 2]);
        assert_eq!(s[1].label, "PRIVATE KEY");
        assert_eq!(s[1].der, vec![3, 4, 5, 6]);
        assert!(!s[1].has_headers);
    }

    #[test]
    fn legacy_encryption_headers_are_noted() {
        let text = b"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\
                     DEK-Info: AES-256-CBC,00\n\nAAEC\n-----END RSA PRIVATE KEY-----\n";
        let s = sections(text).unwrap();
        assert!(s[0].has_headers);
        assert_eq!(s[0].der, vec![0, 1, 2]);
    }

    #[test]
    fn broken_sections_are_errors_without_content() {
        let e = sections(b"-----BEGIN PRIVATE KEY-----\nAAEC\n")
            .err()
            .unwrap();
        assert_eq!(e.to_string(), "the PEM section PRIVATE KEY has no END line");
        let e = sections(b"-----BEGIN PRIVATE KEY-----\nsecret!\n-----END PRIVATE KEY-----\n")
            .err()
            .unwrap();
        assert_eq!(
            e.to_string(),
            "the PEM section PRIVATE KEY is not valid base64"
        );
        let e = sections(b"-----BEGIN CERTIFICATE-----\nAAEC\n-----END PRIVATE KEY-----\n")
            .err()
            .unwrap();
        assert_eq!(
            e.to_string(),
            "the PEM section CERTIFICATE ends with another label's END line"
        );
    }
}
