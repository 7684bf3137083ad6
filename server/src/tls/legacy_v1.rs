//! X.509 version 1 certificates on the client port, which Java accepts and webpki does not.
//!
//! A v1 certificate has no extensions: no subject alternative names, key usages or basic
//! constraints. webpki refuses every such certificate (`UnsupportedCertVersion`), as a browser
//! would. Java's PKIX validator accepts a v1 end-entity certificate, and some clients' harnesses
//! make them: kazoo's test harness signs its server's and its client's certificates as v1 under a
//! v3 CA, and ZooKeeper 3.9.5 serves those clients. So the client port accepts, as Java does:
//!
//! - as its own certificate (the key store's first), a v1 certificate whose public key is the
//!   key store's key (`spki_of` is the comparison `store` makes);
//! - from a client, a v1 certificate **signed directly by a trust anchor** of the trust store,
//!   within its validity dates, whose signature algorithm is one rustls verifies; and then the
//!   handshake's signature against that certificate's key. No intermediate may stand between it
//!   and the anchor (webpki checks every chain with a v3 certificate in it, and a v1 certificate
//!   cannot say it is a CA). With no extensions there is no key usage to check, as in Java.
//!
//! Everything else goes to rustls's WebPki verifier unchanged; peer links never take this path.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{verify_tls13_signature_with_raw_key, CryptoProvider};
use rustls::pki_types::{CertificateDer, SubjectPublicKeyInfoDer, TrustAnchor, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{
    CertificateError, DigitallySignedStruct, DistinguishedName, Error, RootCertStore,
    SignatureScheme,
};

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const BIT_STRING: u8 = 0x03;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;
/// `[0] EXPLICIT Version`: present in v2 and v3 certificates only.
const VERSION_TAG: u8 = 0xa0;

/// The parts of a v1 certificate this module uses; slices into the certificate's DER.
#[derive(Debug)]
pub(super) struct V1Cert<'a> {
    /// The whole `tbsCertificate` TLV: what the issuer signed.
    tbs: &'a [u8],
    /// `signatureAlgorithm`'s contents (the AlgorithmIdentifier without its SEQUENCE header).
    signature_alg: &'a [u8],
    signature: &'a [u8],
    /// `issuer`'s contents, compared with a trust anchor's subject.
    issuer: &'a [u8],
    not_before: i64,
    not_after: i64,
    /// The whole `subjectPublicKeyInfo` TLV.
    spki: &'a [u8],
}

/// `Ok(None)`: the certificate is not v1 (it has a version field), so it is webpki's.
pub(super) fn parse(cert: &[u8]) -> Result<Option<V1Cert<'_>>, String> {
    let mut top = Der::new(cert);
    let (outer, _) = top.read(SEQUENCE, "certificate")?;
    top.end("certificate")?;
    let mut c = Der::new(outer);
    let (tbs_content, tbs) = c.read(SEQUENCE, "tbsCertificate")?;
    let (signature_alg, _) = c.read(SEQUENCE, "signatureAlgorithm")?;
    let signature = bit_string(c.read(BIT_STRING, "signatureValue")?.0)?;
    c.end("certificate")?;
    let mut t = Der::new(tbs_content);
    if t.peek() == Some(VERSION_TAG) {
        return Ok(None);
    }
    t.read(INTEGER, "serialNumber")?;
    let (inner_alg, _) = t.read(SEQUENCE, "signature")?;
    if inner_alg != signature_alg {
        return Err("the signature algorithm inside and outside tbsCertificate differ".into());
    }
    let (issuer, _) = t.read(SEQUENCE, "issuer")?;
    let (validity, _) = t.read(SEQUENCE, "validity")?;
    let mut v = Der::new(validity);
    let not_before = time(&mut v, "notBefore")?;
    let not_after = time(&mut v, "notAfter")?;
    v.end("validity")?;
    t.read(SEQUENCE, "subject")?;
    let (_, spki) = t.read(SEQUENCE, "subjectPublicKeyInfo")?;
    // A v1 certificate ends here: unique ids and extensions came with v2 and v3.
    t.end("a version 1 tbsCertificate")?;
    Ok(Some(V1Cert {
        tbs,
        signature_alg,
        signature,
        issuer,
        not_before,
        not_after,
        spki,
    }))
}

/// The subjectPublicKeyInfo of a v1 certificate (`None` for any other version), for the key
/// store's check that its key belongs to its certificate.
pub(super) fn spki_of(cert: &[u8]) -> Result<Option<&[u8]>, String> {
    Ok(parse(cert)?.map(|c| c.spki))
}

impl V1Cert<'_> {
    /// Signed by `anchor` with an algorithm `provider` verifies, and valid `now`.
    fn verify(
        &self,
        anchors: &[TrustAnchor<'_>],
        provider: &CryptoProvider,
        now: UnixTime,
    ) -> Result<(), Error> {
        let now = now.as_secs() as i64;
        if now < self.not_before {
            return Err(CertificateError::NotValidYet.into());
        }
        if now > self.not_after {
            return Err(CertificateError::Expired.into());
        }
        let mut issuer_known = false;
        for anchor in anchors.iter().filter(|a| a.subject.as_ref() == self.issuer) {
            issuer_known = true;
            let Ok((key_alg, key)) = spki_parts(anchor.subject_public_key_info.as_ref()) else {
                continue;
            };
            let signed = provider
                .signature_verification_algorithms
                .all
                .iter()
                .filter(|alg| {
                    alg.public_key_alg_id().as_ref() == key_alg
                        && alg.signature_alg_id().as_ref() == self.signature_alg
                })
                .any(|alg| alg.verify_signature(key, self.tbs, self.signature).is_ok());
            if signed {
                return Ok(());
            }
        }
        Err(if issuer_known {
            CertificateError::BadSignature
        } else {
            CertificateError::UnknownIssuer
        }
        .into())
    }
}

/// An AlgorithmIdentifier's contents and the key bits of a subjectPublicKeyInfo's contents
/// (the form a trust anchor keeps it in).
fn spki_parts(content: &[u8]) -> Result<(&[u8], &[u8]), String> {
    let mut d = Der::new(content);
    let (alg, _) = d.read(SEQUENCE, "algorithm")?;
    let key = bit_string(d.read(BIT_STRING, "subjectPublicKey")?.0)?;
    d.end("subjectPublicKeyInfo")?;
    Ok((alg, key))
}

fn bit_string(content: &[u8]) -> Result<&[u8], String> {
    match content.split_first() {
        Some((0, bits)) => Ok(bits),
        _ => Err("a BIT STRING with unused bits".into()),
    }
}

/// UTCTime `YYMMDDHHMMSSZ` (years 1950-2049, RFC 5280) or GeneralizedTime `YYYYMMDDHHMMSSZ`, in
/// seconds since the epoch.
fn time(d: &mut Der<'_>, what: &str) -> Result<i64, String> {
    let tag = d.peek().ok_or_else(|| format!("{what}: missing"))?;
    let (s, _) = d.read(tag, what)?;
    let digits = |s: &[u8]| -> Result<i64, String> {
        s.iter().try_fold(0i64, |acc, b| {
            b.is_ascii_digit()
                .then(|| acc * 10 + i64::from(b - b'0'))
                .ok_or_else(|| format!("{what}: not a time"))
        })
    };
    let (year, rest) = match (tag, s.len()) {
        (UTC_TIME, 13) => {
            let yy = digits(&s[..2])?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, &s[2..])
        }
        (GENERALIZED_TIME, 15) => (digits(&s[..4])?, &s[4..]),
        _ => {
            return Err(format!(
                "{what}: not a UTCTime or GeneralizedTime in Z form"
            ))
        }
    };
    if rest[10] != b'Z' {
        return Err(format!("{what}: not in Z form"));
    }
    let (month, day) = (digits(&rest[0..2])?, digits(&rest[2..4])?);
    let (h, m, sec) = (
        digits(&rest[4..6])?,
        digits(&rest[6..8])?,
        digits(&rest[8..10])?,
    );
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 59 {
        return Err(format!("{what}: not a valid time"));
    }
    Ok(days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + sec)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A strict DER reader: single-byte tags, definite lengths in their shortest form.
struct Der<'a> {
    rest: &'a [u8],
}

impl<'a> Der<'a> {
    fn new(bytes: &'a [u8]) -> Der<'a> {
        Der { rest: bytes }
    }

    fn peek(&self) -> Option<u8> {
        self.rest.first().copied()
    }

    fn end(&self, what: &str) -> Result<(), String> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(format!("{what}: bytes after its last field"))
        }
    }

    /// One TLV of `tag`: (its contents, the whole TLV).
    fn read(&mut self, tag: u8, what: &str) -> Result<(&'a [u8], &'a [u8]), String> {
        let all = self.rest;
        let short = || format!("{what}: truncated");
        let (&t, rest) = all.split_first().ok_or_else(short)?;
        if t != tag {
            return Err(format!("{what}: tag {t:#04x}, expected {tag:#04x}"));
        }
        let (&first, mut rest) = rest.split_first().ok_or_else(short)?;
        let len = match first {
            0x00..=0x7f => usize::from(first),
            0x81..=0x83 => {
                let n = usize::from(first & 0x7f);
                if rest.len() < n || rest[0] == 0 {
                    return Err(format!("{what}: not a DER length"));
                }
                let (bytes, after) = rest.split_at(n);
                rest = after;
                let len = bytes
                    .iter()
                    .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
                if len < 0x80 {
                    return Err(format!("{what}: not a DER length"));
                }
                len
            }
            _ => return Err(format!("{what}: not a DER length")),
        };
        if rest.len() < len {
            return Err(short());
        }
        let header = all.len() - rest.len();
        self.rest = &rest[len..];
        Ok((&rest[..len], &all[..header + len]))
    }
}

/// The client port's client certificate verifier: rustls's WebPki verifier, and v1 client
/// certificates signed directly by a trust anchor (see the module documentation).
#[derive(Debug)]
pub(super) struct AcceptV1 {
    pub(super) inner: Arc<dyn ClientCertVerifier>,
    pub(super) roots: Arc<RootCertStore>,
    pub(super) provider: Arc<CryptoProvider>,
}

fn bad_encoding(_: String) -> Error {
    CertificateError::BadEncoding.into()
}

impl ClientCertVerifier for AcceptV1 {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        match parse(end_entity).map_err(bad_encoding)? {
            None => self
                .inner
                .verify_client_cert(end_entity, intermediates, now),
            Some(v1) => {
                v1.verify(&self.roots.roots, &self.provider, now)?;
                Ok(ClientCertVerified::assertion())
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        let Some(v1) = parse(cert).map_err(bad_encoding)? else {
            return self.inner.verify_tls12_signature(message, cert, dss);
        };
        let (key_alg, key) = spki_parts(
            Der::new(v1.spki)
                .read(SEQUENCE, "spki")
                .map_err(bad_encoding)?
                .0,
        )
        .map_err(bad_encoding)?;
        let algs = &self.provider.signature_verification_algorithms;
        let valid = algs
            .mapping
            .iter()
            .filter(|(scheme, _)| *scheme == dss.scheme)
            .flat_map(|(_, algs)| algs.iter())
            .filter(|alg| alg.public_key_alg_id().as_ref() == key_alg)
            .any(|alg| alg.verify_signature(key, message, dss.signature()).is_ok());
        if valid {
            Ok(HandshakeSignatureValid::assertion())
        } else {
            Err(Error::InvalidCertificate(CertificateError::BadSignature))
        }
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        let Some(v1) = parse(cert).map_err(bad_encoding)? else {
            return self.inner.verify_tls13_signature(message, cert, dss);
        };
        verify_tls13_signature_with_raw_key(
            message,
            &SubjectPublicKeyInfoDer::from(v1.spki),
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_days_and_times() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        let t = |tag: u8, s: &str| {
            let mut der = vec![tag, s.len() as u8];
            der.extend_from_slice(s.as_bytes());
            time(&mut Der::new(&der), "t")
        };
        assert_eq!(t(UTC_TIME, "700101000000Z"), Ok(0));
        assert_eq!(t(UTC_TIME, "491231235959Z"), Ok(2_524_607_999));
        assert_eq!(t(GENERALIZED_TIME, "20380119031408Z"), Ok(2_147_483_648));
        assert!(t(UTC_TIME, "700101000000+0100").is_err());
        assert!(t(UTC_TIME, "701301000000Z").is_err());
    }

    #[test]
    fn der_lengths_must_be_minimal() {
        assert!(Der::new(&[0x30, 0x81, 0x05, 1, 2, 3, 4, 5])
            .read(0x30, "x")
            .is_err());
        assert!(Der::new(&[0x30, 0x82, 0x00, 0x80]).read(0x30, "x").is_err());
        let (content, all) = Der::new(&[0x30, 0x02, 7, 8, 9]).read(0x30, "x").unwrap();
        assert_eq!((content, all), (&[7u8, 8][..], &[0x30u8, 2, 7, 8][..]));
    }
}
