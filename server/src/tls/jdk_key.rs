//! EC private keys as the JDK writes them, made readable to ring.
//!
//! The JDK encodes an EC private key (keytool's `-keyalg EC`, and any key it re-encodes when
//! importing) as PKCS#8 whose inner ECPrivateKey (RFC 5915) omits the optional public key. ring
//! requires it: it derives the public key from the private one and checks the two agree. The
//! certificate the key belongs to carries that public key, so it is copied in from there. A key
//! that does not belong to the certificate then fails ring's check, which is the mismatch error
//! it should be.
//!
//! A few lines of DER by hand: only the outer structure is walked, no value is interpreted.

use rustls::pki_types::CertificateDer;
use rustls::server::ParsedCertificate;

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const OCTET_STRING: u8 = 0x04;
const BIT_STRING: u8 = 0x03;
/// ECPrivateKey's `[0] parameters` and `[1] publicKey`, explicitly tagged.
const PARAMETERS: u8 = 0xA0;
const PUBLIC_KEY: u8 = 0xA1;

/// One DER element: its tag, its content, the whole element, and the input that follows it.
type Element<'a> = (u8, &'a [u8], &'a [u8], &'a [u8]);

fn element(input: &[u8]) -> Option<Element<'_>> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | *b as usize);
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    let header = input.len() - rest.len();
    Some((tag, &rest[..len], &input[..header + len], &rest[len..]))
}

fn encode(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

/// `pkcs8` with the public key of `cert` added to its ECPrivateKey, when it is an EC key
/// without one and the certificate's key is of the same algorithm and curve; `None` otherwise
/// (not EC, already complete, or not parseable: the caller reports the original failure).
pub(crate) fn with_public_key(pkcs8: &[u8], cert: &CertificateDer<'_>) -> Option<Vec<u8>> {
    // PrivateKeyInfo ::= SEQUENCE { version, privateKeyAlgorithm, privateKey OCTET STRING,
    //                               [0] attributes OPTIONAL }
    let Some((SEQUENCE, info, _, [])) = element(pkcs8) else {
        return None;
    };
    let Some((INTEGER, _, version, rest)) = element(info) else {
        return None;
    };
    let Some((SEQUENCE, _, algorithm, rest)) = element(rest) else {
        return None;
    };
    let Some((OCTET_STRING, ec_key, _, attributes)) = element(rest) else {
        return None;
    };
    // ECPrivateKey ::= SEQUENCE { version 1, privateKey OCTET STRING, [0] parameters OPTIONAL,
    //                             [1] publicKey OPTIONAL }
    let Some((SEQUENCE, inner, _, [])) = element(ec_key) else {
        return None;
    };
    let Some((INTEGER, _, ec_version, rest)) = element(inner) else {
        return None;
    };
    let Some((OCTET_STRING, _, private, mut rest)) = element(rest) else {
        return None;
    };
    let mut parameters: &[u8] = &[];
    if rest.first() == Some(&PARAMETERS) {
        let (_, _, whole, after) = element(rest)?;
        parameters = whole;
        rest = after;
    }
    if !rest.is_empty() {
        // The public key is there already (or something this does not know).
        return None;
    }

    // SubjectPublicKeyInfo ::= SEQUENCE { algorithm, subjectPublicKey BIT STRING }
    let parsed = ParsedCertificate::try_from(cert).ok()?;
    let spki = parsed.subject_public_key_info();
    let Some((SEQUENCE, spki, _, [])) = element(spki.as_ref()) else {
        return None;
    };
    let Some((SEQUENCE, _, cert_algorithm, rest)) = element(spki) else {
        return None;
    };
    let Some((BIT_STRING, bits, _, [])) = element(rest) else {
        return None;
    };
    // The same AlgorithmIdentifier: id-ecPublicKey and the same named curve.
    if cert_algorithm != algorithm {
        return None;
    }

    let public = encode(PUBLIC_KEY, &encode(BIT_STRING, bits));
    let ec_key = encode(
        SEQUENCE,
        &[ec_version, private, parameters, &public].concat(),
    );
    Some(encode(
        SEQUENCE,
        &[
            version,
            algorithm,
            &encode(OCTET_STRING, &ec_key),
            attributes,
        ]
        .concat(),
    ))
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use base64::Engine;

    use super::*;

    fn pem_body(text: &str) -> Vec<u8> {
        let b64: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap()
    }

    /// A self-signed EC certificate and its PKCS#8 key, from the real openssl.
    fn cert_and_key(dir: &std::path::Path, name: &str) -> (CertificateDer<'static>, Vec<u8>) {
        let status = Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.pem"),
                "-days",
                "1",
                "-subj",
                "/CN=jdk-key-test",
            ])
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(status.status.success());
        let cert = pem_body(&std::fs::read_to_string(dir.join(format!("{name}.pem"))).unwrap());
        let key = pem_body(&std::fs::read_to_string(dir.join(format!("{name}.key"))).unwrap());
        (CertificateDer::from(cert), key)
    }

    /// The key as the JDK would write it: the ECPrivateKey without `[1] publicKey`.
    fn strip_public_key(pkcs8: &[u8]) -> Vec<u8> {
        let (_, info, _, _) = element(pkcs8).unwrap();
        let (_, _, version, rest) = element(info).unwrap();
        let (_, _, algorithm, rest) = element(rest).unwrap();
        let (_, ec_key, _, _) = element(rest).unwrap();
        let (_, inner, _, _) = element(ec_key).unwrap();
        let (_, _, ec_version, rest) = element(inner).unwrap();
        let (_, _, private, rest) = element(rest).unwrap();
        assert_eq!(rest.first(), Some(&PUBLIC_KEY));
        let ec_key = encode(SEQUENCE, &[ec_version, private].concat());
        encode(
            SEQUENCE,
            &[version, algorithm, &encode(OCTET_STRING, &ec_key)].concat(),
        )
    }

    fn ring_loads(pkcs8: Vec<u8>) -> bool {
        let key = rustls::pki_types::PrivatePkcs8KeyDer::from(pkcs8).into();
        super::super::configs::ring_provider()
            .key_provider
            .load_private_key(key)
            .is_ok()
    }

    #[test]
    fn the_public_key_comes_back_from_the_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = cert_and_key(dir.path(), "a");
        let jdk = strip_public_key(&key);
        assert!(!ring_loads(jdk.clone()));
        // OpenSSL's encoding, byte for byte: the one element that was missing is back.
        assert_eq!(with_public_key(&jdk, &cert), Some(key.clone()));
        assert!(ring_loads(with_public_key(&jdk, &cert).unwrap()));
        // A complete key is left alone.
        assert_eq!(with_public_key(&key, &cert), None);
    }

    #[test]
    fn another_certificates_public_key_is_rejected_by_ring() {
        let dir = tempfile::tempdir().unwrap();
        let (_, key) = cert_and_key(dir.path(), "a");
        let (other, _) = cert_and_key(dir.path(), "b");
        let completed = with_public_key(&strip_public_key(&key), &other).unwrap();
        assert!(!ring_loads(completed));
    }
}
