//! `paddock::tls` against real files and real handshakes: certificates, keys and stores are made
//! at test time by the `openssl` (3.0) and `keytool` (JDK 17) commands, the way operators make
//! them, and the configurations are used by tokio-rustls over loopback TCP.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    AlertDescription, CertificateError, ClientConfig, HandshakeKind, ProtocolVersion, ServerConfig,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use paddock::tls::{
    cert_valid_for_host, java_suite_name, load_key_store, load_trust_store, quorum_client_config,
    quorum_server_config, server_config, ClientAuth, LiveTls, Material, TlsError, TlsSettings,
};

const PW: &str = "s3cret-pw";
const Q: &str = "ssl.quorum.";

// ---------------------------------------------------------------------------------------------
// Material, made once per test binary by the real tools.

/// The directory all fixtures live in, made on first use.
fn pki() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // Remade on every run: a fixture from an earlier run may have expired.
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tls-store-pki");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        make_pki(&dir);
        dir
    })
}

fn run(dir: &Path, program: &str, command: &str) {
    // Written as on a shell line; no argument here has a space in it.
    let args: Vec<&str> = command.split_whitespace().collect();
    let out = Command::new(program)
        .args(&args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {command} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn openssl(dir: &Path, command: &str) {
    run(dir, "openssl", command);
}

fn keytool(dir: &Path, command: &str) {
    run(dir, "keytool", command);
}

fn cat(dir: &Path, out: &str, parts: &[&str]) {
    let mut all = Vec::new();
    for p in parts {
        all.extend(std::fs::read(dir.join(p)).unwrap());
    }
    std::fs::write(dir.join(out), all).unwrap();
}

const EC: &str = "-newkey ec -pkeyopt ec_paramgen_curve:P-256";

fn make_ca(dir: &Path, name: &str, cn: &str) {
    openssl(
        dir,
        &format!(
            "req -x509 {EC} -nodes -keyout {name}.key -out {name}.pem -days 3650 -subj /CN={cn} \
             -addext basicConstraints=critical,CA:TRUE \
             -addext keyUsage=critical,keyCertSign,cRLSign"
        ),
    );
}

/// A member key (EC P-256 unless `rsa`) and a certificate from `ca` naming `san`, for both
/// serverAuth and clientAuth, as a member that dials and accepts needs.
fn make_member(dir: &Path, name: &str, ca: &str, san: &str, rsa: bool) {
    let newkey = if rsa { "-newkey rsa:2048" } else { EC };
    openssl(
        dir,
        &format!("req -new {newkey} -nodes -keyout {name}.key -out {name}.csr -subj /CN={name}"),
    );
    std::fs::write(
        dir.join(format!("{name}.ext")),
        format!(
            "subjectAltName={san}\nextendedKeyUsage=serverAuth,clientAuth\n\
             basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
        ),
    )
    .unwrap();
    openssl(
        dir,
        &format!(
            "x509 -req -in {name}.csr -CA {ca}.pem -CAkey {ca}.key -CAcreateserial \
             -out {name}.pem -days 365 -extfile {name}.ext"
        ),
    );
    cat(
        dir,
        &format!("{name}-keystore.pem"),
        &[&format!("{name}.pem"), &format!("{name}.key")],
    );
}

/// A certificate valid only on 1 January 2020: `openssl x509` (3.0) cannot backdate, `openssl
/// ca` can.
fn make_expired(dir: &Path) {
    std::fs::create_dir_all(dir.join("cadb")).unwrap();
    std::fs::write(dir.join("cadb/index.txt"), "").unwrap();
    std::fs::write(dir.join("cadb/serial"), "1000\n").unwrap();
    std::fs::write(
        dir.join("ca.cnf"),
        "[ca]\ndefault_ca = test\n[test]\ndatabase = cadb/index.txt\nnew_certs_dir = cadb\n\
         serial = cadb/serial\ndefault_md = sha256\npolicy = any\nunique_subject = no\n\
         copy_extensions = none\n[any]\ncommonName = supplied\n",
    )
    .unwrap();
    openssl(
        dir,
        "ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in m1.csr -out expired.pem \
         -startdate 20200101000000Z -enddate 20200102000000Z -extfile m1.ext -notext",
    );
    cat(dir, "expired-keystore.pem", &["expired.pem", "m1.key"]);
}

fn make_pki(dir: &Path) {
    make_ca(dir, "ca", "paddock-test-CA-one");
    make_ca(dir, "ca2", "paddock-test-CA-two");
    make_member(
        dir,
        "m1",
        "ca",
        "IP:127.0.0.2,DNS:member1.paddock.test",
        false,
    );
    make_member(
        dir,
        "m2",
        "ca",
        "IP:127.0.0.3,DNS:member2.paddock.test",
        false,
    );
    make_member(dir, "m3", "ca", "IP:127.0.0.2", true);
    make_member(dir, "other", "ca2", "IP:127.0.0.2", false);
    make_member(dir, "elsewhere", "ca", "DNS:elsewhere.paddock.test", false);
    make_expired(dir);
    cat(dir, "trust-both.pem", &["ca.pem", "ca2.pem"]);

    // PEM keys in their three unencrypted forms, and encrypted two ways.
    openssl(dir, "rsa -in m3.key -traditional -out m3-pkcs1.key");
    cat(dir, "m3-pkcs1-keystore.pem", &["m3.pem", "m3-pkcs1.key"]);
    openssl(dir, "ec -in m1.key -out m1-sec1.key");
    cat(dir, "m1-sec1-keystore.pem", &["m1.pem", "m1-sec1.key"]);
    openssl(
        dir,
        &format!("pkcs8 -topk8 -in m1.key -passout pass:{PW} -out m1-enc.key"),
    );
    cat(dir, "m1-enc-keystore.pem", &["m1.pem", "m1-enc.key"]);
    openssl(
        dir,
        &format!("ec -in m1.key -aes256 -passout pass:{PW} -out m1-legacy.key"),
    );
    cat(dir, "m1-legacy-keystore.pem", &["m1.pem", "m1-legacy.key"]);
    cat(dir, "mismatch-keystore.pem", &["m1.pem", "m2.key"]);
    cat(
        dir,
        "ca-first-keystore.pem",
        &["ca.pem", "m1.pem", "m1.key"],
    );

    // PKCS12: OpenSSL 3's defaults (PBES2, AES-256-CBC, HMAC-SHA256), its -legacy (RC2-40,
    // 3DES, SHA-1 MAC), an empty password, another password; keytool's own.
    let m1_p12 = "pkcs12 -export -in m1.pem -inkey m1.key -certfile ca.pem -name member1";
    openssl(dir, &format!("{m1_p12} -passout pass:{PW} -out m1.p12"));
    openssl(
        dir,
        &format!("{m1_p12} -passout pass:{PW} -legacy -out m1-legacy.p12"),
    );
    openssl(dir, &format!("{m1_p12} -passout pass: -out m1-nopass.p12"));
    openssl(
        dir,
        &format!("{m1_p12} -passout pass:another-pw -out m1-other-pw.p12"),
    );
    openssl(
        dir,
        &format!("pkcs12 -export -in m2.pem -inkey m2.key -passout pass:{PW} -out m2.p12"),
    );
    openssl(
        dir,
        &format!("pkcs12 -export -nokeys -in ca.pem -passout pass:{PW} -out trust-openssl.p12"),
    );
    keytool(
        dir,
        &format!(
            "-genkeypair -alias member -keyalg EC -groupname secp256r1 -dname CN=keytool-member \
             -ext SAN=IP:127.0.0.2 -validity 30 -storetype PKCS12 -keystore kt.p12 \
             -storepass {PW} -keypass {PW}"
        ),
    );
    keytool(
        dir,
        &format!(
            "-importcert -noprompt -alias ca -file ca.pem -storetype PKCS12 -keystore trust.p12 \
             -storepass {PW}"
        ),
    );
    keytool(
        dir,
        &format!(
            "-genkeypair -alias member -keyalg EC -groupname secp256r1 -dname CN=jks-member \
             -storetype JKS -keystore kt.jks -storepass {PW} -keypass {PW}"
        ),
    );
    std::fs::copy(dir.join("kt.jks"), dir.join("kt-misnamed.p12")).unwrap();
    // m1's store rewritten by the JDK, which re-encodes the EC key without its public key.
    keytool(
        dir,
        &format!(
            "-importkeystore -srckeystore m1.p12 -srcstoretype PKCS12 -srcstorepass {PW} \
             -destkeystore m1-keytool.p12 -deststoretype PKCS12 -deststorepass {PW}"
        ),
    );
}

fn file(name: &str) -> String {
    pki().join(name).display().to_string()
}

fn cert(name: &str) -> CertificateDer<'static> {
    let text = std::fs::read_to_string(pki().join(name)).unwrap();
    let b64: String = text
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN CERTIFICATE"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    use base64::Engine;
    CertificateDer::from(
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap(),
    )
}

// ---------------------------------------------------------------------------------------------
// Settings from key/value pairs, as zoo.cfg would give them.

fn settings_with(prefix: &str, pairs: &[(&str, &str)]) -> Result<TlsSettings, TlsError> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (format!("{prefix}{k}"), v.to_string()))
        .collect();
    TlsSettings::from_keys(prefix, |k| map.get(&format!("{prefix}{k}")).cloned())
}

/// Quorum settings with `keystore` and `truststore` (fixture names) and extra keys.
fn quorum(keystore: &str, truststore: &str, extra: &[(&str, &str)]) -> TlsSettings {
    let ks = file(keystore);
    let ts = file(truststore);
    let mut pairs = vec![
        ("keyStore.location", ks.as_str()),
        ("keyStore.password", PW),
        ("trustStore.location", ts.as_str()),
        ("trustStore.password", PW),
    ];
    pairs.extend_from_slice(extra);
    settings_with(Q, &pairs).unwrap()
}

fn store_settings(store: &str, pairs: &[(&str, &str)]) -> TlsSettings {
    let loc = file(store);
    let mut all = vec![("keyStore.location", loc.as_str())];
    all.extend_from_slice(pairs);
    settings_with(Q, &all).unwrap()
}

fn key_store(
    store: &str,
    pairs: &[(&str, &str)],
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    load_key_store(store_settings(store, pairs).key_store.as_ref().unwrap())
}

fn key_store_err(store: &str, pairs: &[(&str, &str)]) -> String {
    key_store(store, pairs)
        .expect_err("load should fail")
        .to_string()
}

fn trust_store(
    store: &str,
    pairs: &[(&str, &str)],
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let loc = file(store);
    let mut all = vec![("trustStore.location", loc.as_str())];
    all.extend_from_slice(pairs);
    let s = settings_with(Q, &all).unwrap();
    load_trust_store(s.trust_store.as_ref().unwrap())
}

fn key_kind(key: &PrivateKeyDer<'_>) -> &'static str {
    match key {
        PrivateKeyDer::Pkcs1(_) => "pkcs1",
        PrivateKeyDer::Sec1(_) => "sec1",
        PrivateKeyDer::Pkcs8(_) => "pkcs8",
        _ => "other",
    }
}

// ---------------------------------------------------------------------------------------------
// Key stores.

#[test]
fn pem_key_stores_with_pkcs8_pkcs1_and_sec1_keys_load() {
    let (chain, key) = key_store("m1-keystore.pem", &[]).unwrap();
    assert_eq!(chain, vec![cert("m1.pem")]);
    assert_eq!(key_kind(&key), "pkcs8");
    let (chain, key) = key_store("m3-pkcs1-keystore.pem", &[]).unwrap();
    assert_eq!(chain, vec![cert("m3.pem")]);
    assert_eq!(key_kind(&key), "pkcs1");
    let (chain, key) = key_store("m1-sec1-keystore.pem", &[]).unwrap();
    assert_eq!(chain, vec![cert("m1.pem")]);
    assert_eq!(key_kind(&key), "sec1");
}

#[test]
fn encrypted_pem_key_needs_its_password() {
    let (chain, key) = key_store("m1-enc-keystore.pem", &[("keyStore.password", PW)]).unwrap();
    assert_eq!(chain, vec![cert("m1.pem")]);
    assert_eq!(key_kind(&key), "pkcs8");
    // The same key as the unencrypted file's.
    let (_, plain) = key_store("m1-keystore.pem", &[]).unwrap();
    assert_eq!(key.secret_der(), plain.secret_der());

    assert_eq!(
        key_store_err("m1-enc-keystore.pem", &[]),
        format!(
            "ssl.quorum.keyStore.location={}: the private key is encrypted (ENCRYPTED PRIVATE \
             KEY) and neither ssl.quorum.keyStore.password nor ssl.quorum.keyStore.passwordPath \
             is set",
            file("m1-enc-keystore.pem")
        )
    );
    let e = key_store_err("m1-enc-keystore.pem", &[("keyStore.password", "not-it")]);
    assert_eq!(
        e,
        format!(
            "ssl.quorum.keyStore.location={}: cannot decrypt the private key: wrong password or \
             damaged key (password from ssl.quorum.keyStore.password)",
            file("m1-enc-keystore.pem")
        )
    );
    assert!(!e.contains("not-it"));
}

#[test]
fn legacy_openssl_encrypted_key_gets_the_conversion_command() {
    assert_eq!(
        key_store_err("m1-legacy-keystore.pem", &[("keyStore.password", PW)]),
        format!(
            "ssl.quorum.keyStore.location={}: the private key is encrypted in OpenSSL's legacy \
             PEM format (EC PRIVATE KEY with Proc-Type headers), which neither ZooKeeper nor \
             paddock reads: convert it to PKCS#8 with `openssl pkcs8 -topk8 -v2 aes-256-cbc` \
             and keep the password",
            file("m1-legacy-keystore.pem")
        )
    );
}

#[test]
fn key_not_matching_the_first_certificate_is_refused_at_load() {
    let expected = |f: &str| {
        format!(
            "ssl.quorum.keyStore.location={}: the private key does not belong to the first \
             certificate (the end-entity certificate comes first, then its issuers)",
            file(f)
        )
    };
    assert_eq!(
        key_store_err("mismatch-keystore.pem", &[]),
        expected("mismatch-keystore.pem")
    );
    assert_eq!(
        key_store_err("ca-first-keystore.pem", &[]),
        expected("ca-first-keystore.pem")
    );
}

#[test]
fn pkcs12_from_openssl_3_defaults_and_legacy_load_with_the_chain() {
    for store in ["m1.p12", "m1-legacy.p12"] {
        let (chain, key) = key_store(store, &[("keyStore.password", PW)]).unwrap();
        assert_eq!(chain, vec![cert("m1.pem"), cert("ca.pem")], "{store}");
        assert_eq!(key_kind(&key), "pkcs8");
    }
}

#[test]
fn pkcs12_without_a_password_opens_with_the_empty_password() {
    let (chain, _) = key_store("m1-nopass.p12", &[]).unwrap();
    assert_eq!(chain, vec![cert("m1.pem"), cert("ca.pem")]);
    // And a store that has one says that none was given.
    assert_eq!(
        key_store_err("m1.p12", &[]),
        format!(
            "ssl.quorum.keyStore.location={}: cannot open the PKCS12 store: wrong password or \
             damaged store (no password is set: set ssl.quorum.keyStore.password or \
             ssl.quorum.keyStore.passwordPath)",
            file("m1.p12")
        )
    );
}

#[test]
fn pkcs12_from_keytool_loads() {
    let (chain, key) = key_store("kt.p12", &[("keyStore.password", PW)]).unwrap();
    assert_eq!(chain.len(), 1);
    assert_eq!(key_kind(&key), "pkcs8");
    assert!(cert_valid_for_host(&chain[0], "127.0.0.2"));
    // The JDK's EC key lacks its public key; it is completed from the certificate, and is then
    // m1's key exactly as OpenSSL wrote it.
    let (chain, key) = key_store("m1-keytool.p12", &[("keyStore.password", PW)]).unwrap();
    assert_eq!(chain, vec![cert("m1.pem"), cert("ca.pem")]);
    let (_, openssl_key) = key_store("m1-keystore.pem", &[]).unwrap();
    assert_eq!(key.secret_der(), openssl_key.secret_der());
}

#[test]
fn wrong_pkcs12_password_names_where_it_came_from_never_itself() {
    let e = key_store_err("m1.p12", &[("keyStore.password", "hunter2")]);
    assert_eq!(
        e,
        format!(
            "ssl.quorum.keyStore.location={}: cannot open the PKCS12 store: wrong password or \
             damaged store (password from ssl.quorum.keyStore.password)",
            file("m1.p12")
        )
    );
    assert!(!e.contains("hunter2"));
}

#[test]
fn password_path_wins_over_password_and_loses_one_trailing_newline() {
    let dir = tempfile::tempdir().unwrap();
    let pw_file = dir.path().join("pw");
    std::fs::write(&pw_file, format!("{PW}\n")).unwrap();
    let pw_path = pw_file.display().to_string();
    // The wrong inline password is ignored: the file wins (X509Util).
    let (chain, _) = key_store(
        "m1.p12",
        &[
            ("keyStore.password", "wrong"),
            ("keyStore.passwordPath", &pw_path),
        ],
    )
    .unwrap();
    assert_eq!(chain[0], cert("m1.pem"));

    // Only one newline goes: a second one is part of the password, as in SecretUtils.
    std::fs::write(&pw_file, format!("{PW}\n\n")).unwrap();
    assert_eq!(
        key_store_err("m1.p12", &[("keyStore.passwordPath", &pw_path)]),
        format!(
            "ssl.quorum.keyStore.location={}: cannot open the PKCS12 store: wrong password or \
             damaged store (password from ssl.quorum.keyStore.passwordPath)",
            file("m1.p12")
        )
    );

    let missing = dir.path().join("absent").display().to_string();
    assert_eq!(
        key_store_err("m1.p12", &[("keyStore.passwordPath", &missing)]),
        format!(
            "ssl.quorum.keyStore.passwordPath={missing}: cannot read the password file: No such \
             file or directory (os error 2)"
        )
    );
}

#[test]
fn jks_is_refused_with_the_keytool_command_by_name_and_by_magic() {
    let e = settings_with(Q, &[("keyStore.location", &file("kt.jks"))]).unwrap_err();
    let jks = file("kt.jks");
    let p12 = file("kt.p12");
    assert_eq!(
        e.to_string(),
        format!(
            "ssl.quorum.keyStore.location={jks}: paddock cannot read JKS stores; convert it to \
             PKCS12 with `keytool -importkeystore -srckeystore {jks} -srcstoretype JKS \
             -destkeystore {p12} -deststoretype PKCS12` and set ssl.quorum.keyStore.location={p12}"
        )
    );
    // A JKS file named .p12 is recognised by its 0xFEEDFEED magic when it is read.
    let misnamed = file("kt-misnamed.p12");
    assert_eq!(
        key_store_err("kt-misnamed.p12", &[("keyStore.password", PW)]),
        format!(
            "ssl.quorum.keyStore.location={misnamed}: paddock cannot read JKS stores; convert it \
             to PKCS12 with `keytool -importkeystore -srckeystore {misnamed} -srcstoretype JKS \
             -destkeystore {misnamed}.p12 -deststoretype PKCS12` and set \
             ssl.quorum.keyStore.location={misnamed}.p12"
        )
    );
}

#[test]
fn a_store_of_the_wrong_type_says_so() {
    let pem = file("m1-keystore.pem");
    assert_eq!(
        key_store_err("m1-keystore.pem", &[("keyStore.type", "PKCS12")]),
        format!(
            "ssl.quorum.keyStore.location={pem}: is PEM, not PKCS12: set \
             ssl.quorum.keyStore.type=PEM (or name the file .pem)"
        )
    );
    assert_eq!(
        key_store_err("m1.p12", &[("keyStore.type", "PEM")]),
        format!(
            "ssl.quorum.keyStore.location={}: holds no PEM section (it looks like DER or PKCS12: \
             set ssl.quorum.keyStore.type=PKCS12 if it is a PKCS12 store)",
            file("m1.p12")
        )
    );
    let absent = file("absent.pem");
    assert_eq!(
        key_store_err("absent.pem", &[]),
        format!(
            "ssl.quorum.keyStore.location={absent}: cannot read the store: No such file or \
             directory (os error 2)"
        )
    );
}

// ---------------------------------------------------------------------------------------------
// Trust stores.

#[test]
fn trust_stores_pem_with_two_cas_and_keytool_pkcs12() {
    assert_eq!(
        trust_store("trust-both.pem", &[]).unwrap(),
        vec![cert("ca.pem"), cert("ca2.pem")]
    );
    assert_eq!(
        trust_store("trust.p12", &[("trustStore.password", PW)]).unwrap(),
        vec![cert("ca.pem")]
    );
}

#[test]
fn openssl_pkcs12_trust_store_has_no_trusted_entry_as_for_java() {
    assert_eq!(
        trust_store("trust-openssl.p12", &[("trustStore.password", PW)])
            .unwrap_err()
            .to_string(),
        format!(
            "ssl.quorum.trustStore.location={}: the PKCS12 store holds no trusted certificate \
             entry: add the CA with `keytool -importcert` (`openssl pkcs12 -export` does not \
             mark certificates trusted for Java), or use a PEM trust store",
            file("trust-openssl.p12")
        )
    );
}

#[test]
fn missing_stores_are_named() {
    let s = settings_with(Q, &[("trustStore.location", &file("ca.pem"))]).unwrap();
    assert_eq!(
        Material::load(&s).unwrap_err().to_string(),
        "ssl.quorum.keyStore.location: not set: paddock needs a key store (its certificate \
         chain and private key) to present on every TLS connection"
    );
    let s = store_settings("m1-keystore.pem", &[]);
    let m = Material::load(&s).unwrap();
    assert_eq!(
        quorum_server_config(&s, &m).unwrap_err().to_string(),
        "ssl.quorum.trustStore.location: not set: paddock verifies peers against this trust \
         store only and has no system trust store to fall back to"
    );
    // A client port that asks for no certificate needs no trust store.
    server_config(&s, &m, ClientAuth::None).unwrap();
}

#[test]
fn cert_valid_for_host_checks_ip_and_dns_sans() {
    let m1 = cert("m1.pem");
    assert!(cert_valid_for_host(&m1, "127.0.0.2"));
    assert!(cert_valid_for_host(&m1, "member1.paddock.test"));
    assert!(!cert_valid_for_host(&m1, "127.0.0.3"));
    assert!(!cert_valid_for_host(&m1, "member2.paddock.test"));
    assert!(!cert_valid_for_host(&m1, "[::1]"));
    // The CN (m1) is not a name it is valid for.
    assert!(!cert_valid_for_host(&m1, "m1"));
    assert!(!cert_valid_for_host(&m1, "not a host"));
    let m3 = cert("m3.pem");
    assert!(cert_valid_for_host(&m3, "127.0.0.2"));
    assert!(!cert_valid_for_host(&m3, "member1.paddock.test"));
}

// ---------------------------------------------------------------------------------------------
// Real handshakes.

struct Side {
    peer: Option<CertificateDer<'static>>,
    version: Option<ProtocolVersion>,
    suite: Option<&'static str>,
    kind: Option<HandshakeKind>,
}

struct Outcome {
    client: io::Result<Side>,
    server: io::Result<Side>,
}

fn side(conn: &rustls::CommonState) -> Side {
    Side {
        peer: conn.peer_certificates().map(|c| c[0].clone()),
        version: conn.protocol_version(),
        suite: conn.negotiated_cipher_suite().map(java_suite_name),
        kind: conn.handshake_kind(),
    }
}

/// One connection: the server side on 127.0.0.2, the client dialling it by `name`; each side
/// exchanges a message so that a refusal sent after the client's handshake (TLS 1.3 checks the
/// client's certificate then) shows on the client too.
async fn handshake(server: Arc<ServerConfig>, client: Arc<ClientConfig>, name: &str) -> Outcome {
    let listener = TcpListener::bind("127.0.0.2:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accept = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await?;
        let mut tls = TlsAcceptor::from(server).accept(tcp).await?;
        let mut buf = [0u8; 4];
        tls.read_exact(&mut buf).await?;
        tls.write_all(b"pong").await?;
        tls.flush().await?;
        let side = side(tls.get_ref().1);
        let _ = tls.shutdown().await;
        Ok::<Side, io::Error>(side)
    });
    let name = ServerName::try_from(name.to_string()).unwrap();
    let dial = async {
        let tcp = TcpStream::connect(addr).await?;
        let mut tls = TlsConnector::from(client).connect(name, tcp).await?;
        tls.write_all(b"ping").await?;
        tls.flush().await?;
        let mut buf = [0u8; 4];
        tls.read_exact(&mut buf).await?;
        assert_eq!(&buf, b"pong");
        Ok::<Side, io::Error>(side(tls.get_ref().1))
    };
    let client = tokio::time::timeout(Duration::from_secs(10), dial)
        .await
        .expect("client side timed out");
    let server = tokio::time::timeout(Duration::from_secs(10), accept)
        .await
        .expect("server side timed out")
        .unwrap();
    Outcome { client, server }
}

fn rustls_error(e: &io::Error) -> &rustls::Error {
    e.get_ref()
        .and_then(|i| i.downcast_ref::<rustls::Error>())
        .unwrap_or_else(|| panic!("not a rustls error: {e:?}"))
}

fn configs(s: &TlsSettings) -> (Arc<ServerConfig>, Arc<ClientConfig>) {
    let m = Material::load(s).unwrap();
    (
        quorum_server_config(s, &m).unwrap(),
        quorum_client_config(s, &m).unwrap(),
    )
}

#[tokio::test]
async fn mutual_tls_between_two_members_of_one_ca() {
    // keytool's rewrite of OpenSSL's PKCS12 with a PEM trust store on one side, OpenSSL's
    // PKCS12 with keytool's trust store on the other.
    let (server, _) = configs(&quorum("m1-keytool.p12", "ca.pem", &[]));
    let (_, client) = configs(&quorum("m2.p12", "trust.p12", &[]));
    let out = handshake(server, client, "127.0.0.2").await;
    let c = out.client.unwrap();
    let s = out.server.unwrap();
    assert_eq!(c.peer, Some(cert("m1.pem")));
    assert_eq!(s.peer, Some(cert("m2.pem")));
    assert_eq!(c.version, Some(ProtocolVersion::TLSv1_3));
    assert_eq!(s.kind, Some(HandshakeKind::Full));
    // The member id binding the lead does with the peer's certificate.
    assert!(cert_valid_for_host(s.peer.as_ref().unwrap(), "127.0.0.3"));
}

#[tokio::test]
async fn a_client_certificate_from_another_ca_is_refused_by_the_server() {
    let (server, _) = configs(&quorum("m1-keystore.pem", "ca.pem", &[]));
    // The client trusts both CAs, so only the server's check can fail.
    let (_, client) = configs(&quorum("other-keystore.pem", "trust-both.pem", &[]));
    let out = handshake(server, client, "127.0.0.2").await;
    assert_eq!(
        rustls_error(&out.server.err().unwrap()),
        &rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)
    );
    assert_eq!(
        rustls_error(&out.client.err().unwrap()),
        &rustls::Error::AlertReceived(AlertDescription::UnknownCA)
    );
}

#[tokio::test]
async fn a_trust_store_with_two_cas_accepts_chains_from_either() {
    let (server, _) = configs(&quorum("m1-keystore.pem", "trust-both.pem", &[]));
    for (keystore, expect) in [
        ("m2-keystore.pem", "m2.pem"),
        ("other-keystore.pem", "other.pem"),
    ] {
        let (_, client) = configs(&quorum(keystore, "trust-both.pem", &[]));
        let out = handshake(server.clone(), client, "127.0.0.2").await;
        assert_eq!(out.server.unwrap().peer, Some(cert(expect)));
        assert_eq!(out.client.unwrap().peer, Some(cert("m1.pem")));
    }
}

#[tokio::test]
async fn server_without_the_dialled_name_is_refused_unless_hostname_verification_is_off() {
    let (server, _) = configs(&quorum("elsewhere-keystore.pem", "ca.pem", &[]));
    let (_, strict) = configs(&quorum("m2-keystore.pem", "ca.pem", &[]));
    let out = handshake(server.clone(), strict, "127.0.0.2").await;
    assert_eq!(
        rustls_error(&out.client.err().unwrap()),
        &rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
            expected: ServerName::IpAddress(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)).into()),
            presented: vec!["DnsName(\"elsewhere.paddock.test\")".to_string()],
        })
    );

    let (_, lax) = configs(&quorum(
        "m2-keystore.pem",
        "ca.pem",
        &[("hostnameVerification", "false")],
    ));
    let out = handshake(server, lax.clone(), "127.0.0.2").await;
    assert_eq!(out.client.unwrap().peer, Some(cert("elsewhere.pem")));

    // Without the name check the chain is still checked.
    let (stranger, _) = configs(&quorum("other-keystore.pem", "trust-both.pem", &[]));
    let out = handshake(stranger, lax, "127.0.0.2").await;
    assert_eq!(
        rustls_error(&out.client.err().unwrap()),
        &rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)
    );
}

#[tokio::test]
async fn an_expired_certificate_is_refused() {
    let (server, _) = configs(&quorum("expired-keystore.pem", "ca.pem", &[]));
    for verify in ["true", "false"] {
        let (_, client) = configs(&quorum(
            "m2-keystore.pem",
            "ca.pem",
            &[("hostnameVerification", verify)],
        ));
        let out = handshake(server.clone(), client, "127.0.0.2").await;
        match rustls_error(&out.client.err().unwrap()) {
            rustls::Error::InvalidCertificate(CertificateError::ExpiredContext {
                not_after,
                ..
            }) => assert_eq!(
                *not_after,
                UnixTime::since_unix_epoch(Duration::from_secs(1_577_923_200))
            ),
            other => panic!("hostnameVerification={verify}: {other:?}"),
        }
    }
    // And as a client certificate.
    let (server, _) = configs(&quorum("m1-keystore.pem", "ca.pem", &[]));
    let (_, client) = configs(&quorum("expired-keystore.pem", "ca.pem", &[]));
    let out = handshake(server, client, "127.0.0.2").await;
    assert!(matches!(
        rustls_error(&out.server.err().unwrap()),
        rustls::Error::InvalidCertificate(CertificateError::ExpiredContext { .. })
    ));
}

#[tokio::test]
async fn protocol_pinning_tls12_server_and_tls13_client_do_not_meet() {
    let (server12, _) = configs(&quorum(
        "m1-keystore.pem",
        "ca.pem",
        &[("enabledProtocols", "TLSv1.2")],
    ));
    let (_, client13) = configs(&quorum(
        "m2-keystore.pem",
        "ca.pem",
        &[("enabledProtocols", "TLSv1.3")],
    ));
    let out = handshake(server12.clone(), client13, "127.0.0.2").await;
    assert_eq!(
        rustls_error(&out.server.err().unwrap()),
        &rustls::Error::PeerIncompatible(rustls::PeerIncompatible::Tls12NotOfferedOrEnabled)
    );
    assert_eq!(
        rustls_error(&out.client.err().unwrap()),
        &rustls::Error::AlertReceived(AlertDescription::ProtocolVersion)
    );

    // The default client (TLSv1.3 and TLSv1.2) meets it on TLS 1.2, with the pinned suite.
    let (server12, _) = configs(&quorum(
        "m1-keystore.pem",
        "ca.pem",
        &[
            ("protocol", "TLSv1.2"),
            (
                "ciphersuites",
                "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
            ),
        ],
    ));
    let (_, client) = configs(&quorum("m2-keystore.pem", "ca.pem", &[]));
    let out = handshake(server12, client, "127.0.0.2").await;
    let c = out.client.unwrap();
    assert_eq!(c.version, Some(ProtocolVersion::TLSv1_2));
    assert_eq!(
        c.suite,
        Some("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256")
    );
}

#[tokio::test]
async fn no_session_is_resumed() {
    let (server, client) = configs(&quorum("m1-keystore.pem", "ca.pem", &[]));
    for _ in 0..2 {
        let out = handshake(server.clone(), client.clone(), "127.0.0.2").await;
        assert_eq!(out.client.unwrap().kind, Some(HandshakeKind::Full));
        assert_eq!(out.server.unwrap().kind, Some(HandshakeKind::Full));
    }
    // TLS 1.2 too (session ids rather than tickets).
    let (server, client) = configs(&quorum(
        "m1-keystore.pem",
        "ca.pem",
        &[("protocol", "TLSv1.2")],
    ));
    for _ in 0..2 {
        let out = handshake(server.clone(), client.clone(), "127.0.0.2").await;
        assert_eq!(out.client.unwrap().kind, Some(HandshakeKind::Full));
    }
}

#[tokio::test]
async fn client_auth_want_and_none_for_the_client_port() {
    let s = settings_with(
        "ssl.",
        &[
            ("keyStore.location", &file("m1-keystore.pem")),
            ("trustStore.location", &file("ca.pem")),
        ],
    )
    .unwrap();
    let m = Material::load(&s).unwrap();
    // A client with no certificate, trusting the CA: as kazoo with only `ca` set.
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert("ca.pem")).unwrap();
    let anonymous = Arc::new(
        ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    );
    let need = server_config(&s, &m, ClientAuth::Need).unwrap();
    let out = handshake(need, anonymous.clone(), "127.0.0.2").await;
    assert_eq!(
        rustls_error(&out.server.err().unwrap()),
        &rustls::Error::NoCertificatesPresented
    );
    for auth in [ClientAuth::Want, ClientAuth::None] {
        let cfg = server_config(&s, &m, auth).unwrap();
        let out = handshake(cfg, anonymous.clone(), "127.0.0.2").await;
        assert_eq!(out.server.unwrap().peer, None, "{auth:?}");
    }
    // `want` still verifies a certificate that is sent.
    let (_, stranger) = configs(&quorum("other-keystore.pem", "trust-both.pem", &[]));
    let want = server_config(&s, &m, ClientAuth::Want).unwrap();
    let out = handshake(want, stranger, "127.0.0.2").await;
    assert_eq!(
        rustls_error(&out.server.err().unwrap()),
        &rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)
    );
}

// ---------------------------------------------------------------------------------------------
// Reload.

const POLL: Duration = Duration::from_millis(20);

/// Waits until `done` holds (the watcher polls every 20 ms; allow for a loaded machine).
fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn copy(name: &str, to: &Path) {
    std::fs::copy(pki().join(name), to).unwrap();
}

async fn presented(server: Arc<ServerConfig>) -> CertificateDer<'static> {
    let (_, client) = configs(&quorum(
        "m2-keystore.pem",
        "ca.pem",
        &[("hostnameVerification", "false")],
    ));
    handshake(server, client, "127.0.0.2")
        .await
        .client
        .unwrap()
        .peer
        .unwrap()
}

fn live_settings(keystore: &Path, extra: &[(&str, &str)]) -> TlsSettings {
    let ks = keystore.display().to_string();
    let ts = file("ca.pem");
    let mut pairs = vec![
        ("keyStore.location", ks.as_str()),
        ("trustStore.location", ts.as_str()),
    ];
    pairs.extend_from_slice(extra);
    settings_with(Q, &pairs).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_picks_up_in_place_rewrites_and_renames() {
    let dir = tempfile::tempdir().unwrap();
    let ks = dir.path().join("keystore.pem");
    copy("m1-keystore.pem", &ks);
    let live = LiveTls::start_quorum(live_settings(&ks, &[]), Some(POLL)).unwrap();
    let first = live.server_config();
    assert_eq!(presented(first.clone()).await, cert("m1.pem"));

    // In place: same inode, new content.
    std::fs::write(&ks, std::fs::read(pki().join("m2-keystore.pem")).unwrap()).unwrap();
    wait_for("the rewrite to be loaded", || {
        live.reload_count() >= 1 && live.last_reload_error().is_none()
    });
    assert_eq!(presented(live.server_config()).await, cert("m2.pem"));
    // A connection made with the old config still presents the old certificate.
    assert_eq!(presented(first.clone()).await, cert("m1.pem"));

    // By rename over the file: a new inode.
    let tmp = dir.path().join("keystore.pem.tmp");
    copy("m1-keystore.pem", &tmp);
    let before = live.reload_count();
    std::fs::rename(&tmp, &ks).unwrap();
    wait_for("the renamed file to be loaded", || {
        live.reload_count() > before
    });
    assert_eq!(presented(live.server_config()).await, cert("m1.pem"));
    assert!(live.client_config().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_follows_a_kubernetes_style_symlink_swap() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("..v1")).unwrap();
    copy("m1-keystore.pem", &d.join("..v1/keystore.pem"));
    symlink("..v1", d.join("..data")).unwrap();
    symlink("..data/keystore.pem", d.join("keystore.pem")).unwrap();
    let live =
        LiveTls::start_quorum(live_settings(&d.join("keystore.pem"), &[]), Some(POLL)).unwrap();
    assert_eq!(presented(live.server_config()).await, cert("m1.pem"));

    // The kubelet writes a new directory and swaps `..data` to it with one rename.
    std::fs::create_dir(d.join("..v2")).unwrap();
    copy("m2-keystore.pem", &d.join("..v2/keystore.pem"));
    symlink("..v2", d.join("..data_tmp")).unwrap();
    std::fs::rename(d.join("..data_tmp"), d.join("..data")).unwrap();
    std::fs::remove_dir_all(d.join("..v1")).unwrap();
    wait_for("the swap to be loaded", || live.reload_count() >= 1);
    assert_eq!(presented(live.server_config()).await, cert("m2.pem"));
    assert_eq!(live.reload_failures(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_reload_keeps_the_old_configs_and_a_later_change_retries() {
    let dir = tempfile::tempdir().unwrap();
    let ks = dir.path().join("keystore.pem");
    copy("m1-keystore.pem", &ks);
    let live = LiveTls::start_quorum(live_settings(&ks, &[]), Some(POLL)).unwrap();

    std::fs::write(&ks, "not a key store\n").unwrap();
    wait_for("the failure", || live.reload_failures() >= 1);
    assert_eq!(live.reload_count(), 0);
    assert_eq!(
        live.last_reload_error(),
        Some(format!(
            "ssl.quorum.keyStore.location={}: holds no PEM section",
            ks.display()
        ))
    );
    assert_eq!(presented(live.server_config()).await, cert("m1.pem"));

    copy("m2-keystore.pem", &ks);
    wait_for("the retry", || live.reload_count() == 1);
    assert_eq!(live.last_reload_error(), None);
    assert_eq!(presented(live.server_config()).await, cert("m2.pem"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_watches_the_password_file_too() {
    let dir = tempfile::tempdir().unwrap();
    let ks = dir.path().join("keystore.p12");
    let pw = dir.path().join("keystore.pw");
    copy("m1.p12", &ks);
    std::fs::write(&pw, PW).unwrap();
    let pw_path = pw.display().to_string();
    let live = LiveTls::start_quorum(
        live_settings(&ks, &[("keyStore.passwordPath", &pw_path)]),
        Some(POLL),
    )
    .unwrap();

    // A store under another password, before its password file is updated: refused, kept.
    // Renamed into place, so that no poll sees it half-written (which fails differently).
    let tmp = dir.path().join("keystore.p12.tmp");
    copy("m1-other-pw.p12", &tmp);
    std::fs::rename(&tmp, &ks).unwrap();
    wait_for("the wrong-password failure", || live.reload_failures() >= 1);
    let error = live.last_reload_error().unwrap();
    assert_eq!(
        error,
        format!(
            "ssl.quorum.keyStore.location={}: cannot open the PKCS12 store: wrong password or \
             damaged store (password from ssl.quorum.keyStore.passwordPath)",
            ks.display()
        )
    );
    assert!(!error.contains(PW));
    std::fs::write(&pw, "another-pw\n").unwrap();
    wait_for("the new password to be used", || live.reload_count() == 1);
    assert_eq!(live.last_reload_error(), None);
    assert_eq!(presented(live.server_config()).await, cert("m1.pem"));
}

#[test]
fn start_fails_on_a_bad_store_and_without_watching_nothing_reloads() {
    let dir = tempfile::tempdir().unwrap();
    let ks = dir.path().join("keystore.pem");
    std::fs::write(&ks, "").unwrap();
    let e = LiveTls::start_quorum(live_settings(&ks, &[]), None)
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        format!(
            "ssl.quorum.keyStore.location={}: holds no PEM section",
            ks.display()
        )
    );

    copy("m1-keystore.pem", &ks);
    let live = LiveTls::start_quorum(live_settings(&ks, &[]), None).unwrap();
    copy("m2-keystore.pem", &ks);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(live.reload_count(), 0);
    // An explicit reload does it.
    live.reload_now().unwrap();
    assert_eq!(live.reload_count(), 1);
}
