//! Reading key stores and trust stores (PEM or PKCS12) as ZooKeeper's FileKeyStoreLoaders do.
//!
//! - PEM key store (PEMFileLoader): one file holding the certificate chain, end-entity first,
//!   and the private key. ZooKeeper reads PKCS#8 only, encrypted (`ENCRYPTED PRIVATE KEY`) when
//!   a password is set; paddock also reads PKCS#1 and SEC1 keys, and an unencrypted key even
//!   when a password is set.
//! - PEM trust store: every `CERTIFICATE` in the file is a trust anchor; no password.
//! - PKCS12 (PKCS12FileLoader, i.e. the JDK's KeyStore): opened with the password (empty when
//!   none is set, as ZooKeeper passes an empty char array). In a key store, the one private key
//!   entry and its chain; in a trust store, the certificate entries marked trusted (the JDK's
//!   `trustedKeyUsage` bag attribute, which keytool writes), exactly what the JDK's PKIX trust
//!   manager takes as anchors.
//! - JKS and JCEKS (by their magic bytes, whatever the file is called) and BCFKS (by type or
//!   name) are refused with the keytool command that converts them.
//!
//! paddock is stricter in two ways: a key store must hold exactly one private key (the JDK's
//! key manager would pick one per handshake), and a key that does not belong to the first
//! certificate is an error here, not a handshake failure later.
//!
//! EC keys the JDK wrote (keytool's PKCS12) leave out their public key; aws-lc-rs derives it,
//! so they load as they are, and the key-certificate check still holds.

use p12_keystore::{KeyStore, KeyStoreEntry};
use pkcs5::der::asn1::{AnyRef, OctetStringRef};
use pkcs5::der::{Decode, Reader, SliceReader, Tag, Tagged};
use rustls::pki_types::{
    CertificateDer, PrivateKeyDer, PrivatePkcs1KeyDer, PrivatePkcs8KeyDer, PrivateSec1KeyDer,
};
use rustls::sign::CertifiedKey;
use rustls::{InconsistentKeys, RootCertStore};

use super::configs::crypto_provider;
use super::error::TlsError;
use super::pem::{self, Section};
use super::settings::{convert_error, Secret, StoreSpec, StoreType};

/// The JDK's proprietary store formats, recognised by their first four bytes.
const JKS_MAGIC: [u8; 4] = [0xFE, 0xED, 0xFE, 0xED];
const JCEKS_MAGIC: [u8; 4] = [0xCE, 0xCE, 0xCE, 0xCE];

/// The certificate chain (end-entity first) and the private key of a key store, checked to
/// belong together.
pub fn load_key_store(
    spec: &StoreSpec,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let password = password(spec)?;
    let data = read_store(spec)?;
    let (chain, key) = match spec.store_type {
        StoreType::Pem => pem_key_store(spec, &data, &password)?,
        StoreType::Pkcs12 => p12_key_store(spec, &data, &password)?,
    };
    let key = usable_key(spec, &chain, key)?;
    Ok((chain, key))
}

/// The CA certificates of a trust store, each checked to be usable as a trust anchor. Several
/// are normal: during a rotation a trust store holds the old and the new CA.
pub fn load_trust_store(spec: &StoreSpec) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let password = password(spec)?;
    let data = read_store(spec)?;
    let certs = match spec.store_type {
        StoreType::Pem => pem_trust_store(spec, &data)?,
        StoreType::Pkcs12 => p12_trust_store(spec, &data, &password)?,
    };
    let mut roots = RootCertStore::empty();
    let count = certs.len();
    for (i, cert) in certs.iter().enumerate() {
        roots.add(cert.clone()).map_err(|e| {
            location_error(
                spec,
                format!(
                    "certificate {} of {count} cannot be a trust anchor: {e}",
                    i + 1
                ),
            )
        })?;
    }
    Ok(certs)
}

/// A password and the key it came from, for error texts.
struct Password {
    secret: Option<Secret>,
    from: Option<String>,
}

/// X509Util.getPasswordFromConfigPropertyOrFile: `passwordPath`, when set, wins over `password`.
/// The file is taken whole, less one trailing line separator (SecretUtils.readSecret strips
/// `System.lineSeparator()`, `\n` on the systems paddock runs on), so a `\r\n` file keeps its
/// `\r` as in ZooKeeper.
fn password(spec: &StoreSpec) -> Result<Password, TlsError> {
    if let Some(path) = &spec.password_path {
        let key = format!("{}.passwordPath", spec.key);
        let bytes = std::fs::read(path).map_err(|e| {
            TlsError::file(&key, path, format!("cannot read the password file: {e}"))
        })?;
        let text = String::from_utf8(bytes)
            .map_err(|_| TlsError::file(&key, path, "the password file is not UTF-8"))?;
        let text = text.strip_suffix('\n').unwrap_or(&text);
        return Ok(Password {
            secret: (!text.is_empty()).then(|| Secret::new(text)),
            from: Some(key),
        });
    }
    Ok(Password {
        secret: spec.password.clone(),
        from: spec
            .password
            .as_ref()
            .map(|_| format!("{}.password", spec.key)),
    })
}

fn location_error(spec: &StoreSpec, reason: impl Into<String>) -> TlsError {
    TlsError::file(spec.location_key(), &spec.location, reason)
}

fn read_store(spec: &StoreSpec) -> Result<Vec<u8>, TlsError> {
    let data = std::fs::read(&spec.location)
        .map_err(|e| location_error(spec, format!("cannot read the store: {e}")))?;
    if data.starts_with(&JKS_MAGIC) {
        return Err(convert_error(&spec.key, &spec.location, "JKS"));
    }
    if data.starts_with(&JCEKS_MAGIC) {
        return Err(convert_error(&spec.key, &spec.location, "JCEKS"));
    }
    Ok(data)
}

fn pem_sections(spec: &StoreSpec, data: &[u8]) -> Result<Vec<Section>, TlsError> {
    let sections = pem::sections(data).map_err(|e| location_error(spec, e.to_string()))?;
    if sections.is_empty() {
        let hint = if data.first() == Some(&0x30) {
            format!(
                " (it looks like DER or PKCS12: set {}.type=PKCS12 if it is a PKCS12 store)",
                spec.key
            )
        } else {
            String::new()
        };
        return Err(location_error(spec, format!("holds no PEM section{hint}")));
    }
    Ok(sections)
}

fn certificates(sections: &[Section]) -> Vec<CertificateDer<'static>> {
    sections
        .iter()
        .filter(|s| s.label == "CERTIFICATE")
        .map(|s| CertificateDer::from(s.der.clone()))
        .collect()
}

fn pem_key_store(
    spec: &StoreSpec,
    data: &[u8],
    password: &Password,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let sections = pem_sections(spec, data)?;
    let keys: Vec<&Section> = sections
        .iter()
        .filter(|s| s.label.ends_with("PRIVATE KEY"))
        .collect();
    let key = match keys.as_slice() {
        [] => {
            return Err(location_error(
                spec,
                "holds no private key (a PEM key store is one file with the certificate chain \
                 and the private key)",
            ))
        }
        [one] => pem_private_key(spec, one, password)?,
        more => {
            return Err(location_error(
                spec,
                format!(
                    "holds {} private keys; a key store holds exactly one",
                    more.len()
                ),
            ))
        }
    };
    let chain = certificates(&sections);
    if chain.is_empty() {
        return Err(location_error(
            spec,
            "holds no CERTIFICATE (a PEM key store is one file with the certificate chain and \
             the private key)",
        ));
    }
    Ok((chain, key))
}

fn pem_private_key(
    spec: &StoreSpec,
    section: &Section,
    password: &Password,
) -> Result<PrivateKeyDer<'static>, TlsError> {
    let legacy = || {
        location_error(
            spec,
            format!(
                "the private key is encrypted in OpenSSL's legacy PEM format ({} with \
                 Proc-Type headers), which neither ZooKeeper nor paddock reads: convert it to \
                 PKCS#8 with `openssl pkcs8 -topk8 -v2 aes-256-cbc` and keep the password",
                section.label
            ),
        )
    };
    match section.label.as_str() {
        "PRIVATE KEY" => Ok(PrivatePkcs8KeyDer::from(section.der.clone()).into()),
        "RSA PRIVATE KEY" if section.has_headers => Err(legacy()),
        "EC PRIVATE KEY" if section.has_headers => Err(legacy()),
        "RSA PRIVATE KEY" => Ok(PrivatePkcs1KeyDer::from(section.der.clone()).into()),
        "EC PRIVATE KEY" => Ok(PrivateSec1KeyDer::from(section.der.clone()).into()),
        "ENCRYPTED PRIVATE KEY" => {
            let pkcs8 = decrypt_pkcs8(spec, &section.der, password)?;
            Ok(PrivatePkcs8KeyDer::from(pkcs8).into())
        }
        other => Err(location_error(
            spec,
            format!(
                "the private key ({other}) is of a kind paddock does not read: use PKCS#8 \
                 (PRIVATE KEY or ENCRYPTED PRIVATE KEY), PKCS#1 (RSA PRIVATE KEY) or SEC1 (EC \
                 PRIVATE KEY)"
            ),
        )),
    }
}

/// PKCS#8 EncryptedPrivateKeyInfo with PBES2 (what `openssl pkcs8 -topk8` and OpenSSL 3's
/// `genpkey -aes-256-cbc` write), as the JDK's EncryptedPrivateKeyInfo in PemReader reads it.
fn decrypt_pkcs8(spec: &StoreSpec, der: &[u8], password: &Password) -> Result<Vec<u8>, TlsError> {
    let Some(secret) = &password.secret else {
        return Err(location_error(
            spec,
            format!(
                "the private key is encrypted (ENCRYPTED PRIVATE KEY) and neither {0}.password \
                 nor {0}.passwordPath is set",
                spec.key
            ),
        ));
    };
    let malformed = || {
        location_error(
            spec,
            "the ENCRYPTED PRIVATE KEY is not a PKCS#8 EncryptedPrivateKeyInfo",
        )
    };
    let mut reader = SliceReader::new(der).map_err(|_| malformed())?;
    let (scheme, data) = reader
        .sequence(|r| {
            let scheme: pkcs5::EncryptionScheme<'_> = r.decode()?;
            let data: OctetStringRef<'_> = r.decode()?;
            Ok((scheme, data))
        })
        .map_err(|_| malformed())?;
    if scheme.pbes2().is_none() {
        return Err(location_error(
            spec,
            format!(
                "the private key is encrypted with PBES1 ({}), which paddock does not decrypt: \
                 re-encrypt it with `openssl pkcs8 -topk8 -v2 aes-256-cbc`",
                scheme.oid()
            ),
        ));
    }
    let wrong = || {
        location_error(
            spec,
            format!(
                "cannot decrypt the private key: wrong password or damaged key (password from \
                 {})",
                password.from.as_deref().unwrap_or("nowhere")
            ),
        )
    };
    let plain = match scheme.decrypt(secret.expose(), data.as_bytes()) {
        Ok(plain) => plain,
        Err(pkcs5::Error::UnsupportedAlgorithm { oid }) => {
            return Err(location_error(
                spec,
                format!(
                    "the private key is encrypted with an algorithm paddock does not decrypt \
                     ({oid}): re-encrypt it with `openssl pkcs8 -topk8 -v2 aes-256-cbc`"
                ),
            ))
        }
        Err(_) => return Err(wrong()),
    };
    // A wrong password passes CBC's padding check about once in 256 tries and yields noise;
    // a PKCS#8 PrivateKeyInfo is one DER SEQUENCE filling the plaintext.
    match AnyRef::from_der(&plain) {
        Ok(any) if any.tag() == Tag::Sequence => Ok(plain),
        _ => Err(wrong()),
    }
}

fn pem_trust_store(
    spec: &StoreSpec,
    data: &[u8],
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let sections = pem_sections(spec, data)?;
    let certs = certificates(&sections);
    if certs.is_empty() {
        let hint = if sections.iter().any(|s| s.label == "TRUSTED CERTIFICATE") {
            " (TRUSTED CERTIFICATE is OpenSSL's own format: write plain PEM with `openssl x509 \
             -in FILE -out ca.pem`)"
        } else {
            ""
        };
        return Err(location_error(spec, format!("holds no CERTIFICATE{hint}")));
    }
    Ok(certs)
}

/// Opens a PKCS12 file. A wrong password shows as a MAC mismatch, or, in a store without a MAC,
/// as bad padding or undecodable contents: all of them "wrong password or damaged store".
fn open_p12(spec: &StoreSpec, data: &[u8], password: &Password) -> Result<KeyStore, TlsError> {
    if data.starts_with(b"-----BEGIN") {
        return Err(location_error(
            spec,
            format!(
                "is PEM, not PKCS12: set {}.type=PEM (or name the file .pem)",
                spec.key
            ),
        ));
    }
    if data.first() != Some(&0x30) {
        return Err(location_error(spec, "is not a PKCS12 file"));
    }
    let text = password.secret.as_ref().map_or("", Secret::expose);
    KeyStore::from_pkcs12(data, text).map_err(|e| {
        use p12_keystore::error::Error as P12;
        match e {
            P12::UnsupportedEncryptionScheme | P12::UnsupportedMacAlgorithm => location_error(
                spec,
                format!(
                    "the PKCS12 store uses an encryption or MAC algorithm paddock cannot read \
                     ({e}): re-export it with OpenSSL 3's defaults (`openssl pkcs12 -export`) \
                     or keytool"
                ),
            ),
            P12::InvalidVersion | P12::UnsupportedContentType | P12::UnsupportedCertificateType => {
                location_error(
                    spec,
                    format!("is not a PKCS12 store paddock can read ({e})"),
                )
            }
            _ => {
                let whence = match &password.from {
                    Some(key) => format!("password from {key}"),
                    None => format!(
                        "no password is set: set {0}.password or {0}.passwordPath",
                        spec.key
                    ),
                };
                location_error(
                    spec,
                    format!(
                        "cannot open the PKCS12 store: wrong password or damaged store ({whence})"
                    ),
                )
            }
        }
    })
}

fn p12_key_store(
    spec: &StoreSpec,
    data: &[u8],
    password: &Password,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let store = open_p12(spec, data, password)?;
    let keys: Vec<(&String, &p12_keystore::PrivateKeyChain)> = store
        .entries()
        .filter_map(|(alias, e)| match e {
            KeyStoreEntry::PrivateKeyChain(k) => Some((alias, k)),
            _ => None,
        })
        .collect();
    match keys.as_slice() {
        [] => Err(location_error(
            spec,
            "the PKCS12 store holds no private key entry",
        )),
        [(_, chain)] => {
            let certs = chain
                .chain()
                .iter()
                .map(|c| CertificateDer::from(c.as_der().to_vec()))
                .collect();
            // PKCS12 key bags hold PKCS#8 PrivateKeyInfo.
            let key = PrivatePkcs8KeyDer::from(chain.key().to_vec()).into();
            Ok((certs, key))
        }
        more => {
            let aliases: Vec<&str> = more.iter().map(|(a, _)| a.as_str()).collect();
            Err(location_error(
                spec,
                format!(
                    "the PKCS12 store holds {} private key entries ({}); a key store holds \
                     exactly one",
                    more.len(),
                    aliases.join(", ")
                ),
            ))
        }
    }
}

fn p12_trust_store(
    spec: &StoreSpec,
    data: &[u8],
    password: &Password,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let store = open_p12(spec, data, password)?;
    let certs: Vec<CertificateDer<'static>> = store
        .entries()
        .filter_map(|(_, e)| match e {
            KeyStoreEntry::Certificate(c) => Some(CertificateDer::from(c.as_der().to_vec())),
            _ => None,
        })
        .collect();
    if certs.is_empty() {
        return Err(location_error(
            spec,
            "the PKCS12 store holds no trusted certificate entry: add the CA with `keytool \
             -importcert` (`openssl pkcs12 -export` does not mark certificates trusted for \
             Java), or use a PEM trust store",
        ));
    }
    Ok(certs)
}

/// The key rustls will be given, checked against the first certificate: rustls would find a
/// mismatch only when the first handshake fails; say so at load instead. (An EC key the JDK wrote
/// leaves out its public key; aws-lc-rs derives it, so such keys load as they are.)
fn usable_key(
    spec: &StoreSpec,
    chain: &[CertificateDer<'static>],
    key: PrivateKeyDer<'static>,
) -> Result<PrivateKeyDer<'static>, TlsError> {
    let provider = crypto_provider();
    let mismatch = || {
        location_error(
            spec,
            "the private key does not belong to the first certificate (the end-entity \
             certificate comes first, then its issuers)",
        )
    };
    let signing = provider
        .key_provider
        .load_private_key(key.clone_key())
        .map_err(|e| location_error(spec, format!("the private key cannot be used: {e}")))?;
    // A version 1 certificate (which Java serves, and kazoo's harness makes) is beyond rustls's
    // parser: its public key is compared here.
    if let Some(first) = chain.first() {
        if let Ok(Some(spki)) = super::legacy_v1::spki_of(first) {
            return match signing.public_key() {
                Some(key_spki) if key_spki.as_ref() != spki => Err(mismatch()),
                _ => Ok(key),
            };
        }
    }
    match CertifiedKey::new(chain.to_vec(), signing).keys_match() {
        // Unknown: the signer cannot tell its public key; nothing to compare.
        Ok(()) | Err(rustls::Error::InconsistentKeys(InconsistentKeys::Unknown)) => Ok(key),
        Err(rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch)) => Err(mismatch()),
        Err(e) => Err(location_error(
            spec,
            format!("the first certificate cannot be parsed: {e}"),
        )),
    }
}
