//! TLS material as ZooKeeper's X509Util reads it: zoo.cfg's `ssl.quorum.*` (peer links) and
//! `ssl.*` (the client port) keys, turned into rustls configurations.
//!
//! ```text
//!  zoo.cfg keys ─▶ settings (TlsSettings) ─▶ store (PEM / PKCS12 files) ─▶ configs (rustls)
//!                                                   ▲                             │
//!                                                   └── reload (poll, rebuild) ◀──┘ LiveTls
//! ```
//!
//! - `settings`: the keys under a prefix, validated; no file is read. Passwords are a
//!   [`Secret`] that prints as `***`.
//! - `suites`: Java protocol and cipher suite names mapped to rustls's (aws-lc-rs provider).
//! - `store`, `pem`: key stores and trust stores, PEM or PKCS12.
//! - `configs`: [`Material`] (the loaded stores) to `ClientConfig` / `ServerConfig`, and
//!   [`cert_valid_for_host`].
//! - `reload`: [`LiveTls`], the current configs, rebuilt when the files change.
//! - `x509_name`: [`rfc2253_name`], a client certificate's subject as the string ZooKeeper's
//!   x509 authentication provider makes its id from (Java's `X500Principal.getName()`).
//! - `legacy_v1`: X.509 version 1 certificates on the client port (its own, and clients' signed
//!   directly by a trust anchor), which Java accepts and webpki refuses.
//!
//! # What is reproduced from ZooKeeper 3.9
//!
//! - Keys: `keyStore.{location,password,passwordPath,type}`, the same for `trustStore`,
//!   `protocol`, `enabledProtocols`, `ciphersuites`, `hostnameVerification` (default true),
//!   `clientHostnameVerification` (default true for the quorum, false for clients, and only on
//!   when `hostnameVerification` is), `clientAuth` (need | want | none, any case, default need),
//!   `allowReverseDnsLookup` (default true for the quorum, false for clients),
//!   `handshakeDetectionTimeoutMillis` (default 5000; a value below 1 means the default).
//! - Store type: `type` (PEM, PKCS12, JKS, BCFKS in any case) or, when unset, the file name's
//!   exact extension `.pem`, `.p12`, `.jks`, `.bcfks` (KeyStoreFileType).
//! - Passwords: `passwordPath` wins over `password`; the file is read at every load and loses
//!   one trailing `\n` (SecretUtils). No password means the empty password.
//! - Protocols: `protocol` defaults to TLSv1.3. Without `enabledProtocols`, the quorum enables
//!   what the JDK's context for `protocol` enables (TLSv1.3 → TLSv1.3 and TLSv1.2; TLSv1.2 →
//!   TLSv1.2), the client port exactly `[protocol]` (Netty, ClientX509Util).
//! - A store without a `location` is not loaded.
//!
//! # Where paddock is stricter, or different
//!
//! - `crl=true`, `ocsp=true`: refused. Java fetches CRLs and OCSP answers from the certificates'
//!   distribution points over the network; paddock does not. Revoking is done by removing a CA
//!   from the trust store or rotating to certificates from a new CA.
//! - `context.supplier.class`: refused (a Java class).
//! - JKS, JCEKS and BCFKS stores: refused with the `keytool -importkeystore` command that
//!   converts them to PKCS12. JKS and JCEKS are recognised by their magic bytes under any name.
//! - No trust store: refused where one is needed. ZooKeeper would fall back to the JVM's
//!   cacerts, trusting every public CA.
//! - Booleans must be `true` or `false`; Java reads any other word (`yes`, empty) as false.
//! - `enabledProtocols` and `ciphersuites` names paddock cannot use (SSLv3, TLSv1, TLSv1.1, CBC
//!   and non-ECDHE suites) are dropped with a warning; a list with nothing usable left is an
//!   error. The default suites are rustls's: the TLS 1.3 suites and ECDHE with AES-GCM or
//!   ChaCha20-Poly1305 for TLS 1.2 (ZooKeeper's default list adds CBC suites).
//! - A key store holds exactly one private key, and it must belong to the first certificate;
//!   both are checked at load, not at the first handshake.
//! - PEM keys may also be PKCS#1 or SEC1 (ZooKeeper reads PKCS#8 only); an encrypted PEM key
//!   must be PKCS#8 with PBES2 (`openssl pkcs8 -topk8`), as for the JDK; OpenSSL's legacy
//!   `Proc-Type: 4,ENCRYPTED` keys are refused with the conversion command.
//! - Host names: certificates are matched by subject alternative names only (no CN fallback)
//!   and without reverse DNS, whatever `allowReverseDnsLookup` says. ZooKeeper 3.9 runs in FIPS
//!   mode by default, which turns off its hostname checks on the quorum altogether; paddock's
//!   dialling side checks the dialled host unless `hostnameVerification=false` (the chain is
//!   always checked). The accepting side cannot see the peer's address inside rustls, so
//!   `clientHostnameVerification` is the caller's to apply with [`cert_valid_for_host`] on the
//!   peer's certificate and address once the handshake is done.
//! - No session resumption and no TLS 1.3 tickets on either side; ALPN is not set.
//! - X.509 version 1 certificates (no extensions) are accepted on the client port only, as its
//!   own certificate and from a client whose certificate a trust anchor signed directly; peer
//!   links take v3 certificates only.
//! - Reloads poll the files every second instead of using inotify, so symlink swaps are seen.

mod configs;
mod error;
mod legacy_v1;
mod pem;
mod reload;
mod settings;
mod store;
mod suites;
mod x509_name;

pub use configs::{
    cert_valid_for_host, client_port_server_config, quorum_client_config, quorum_server_config,
    server_config, Material,
};
pub use error::TlsError;
pub use reload::{LiveTls, TlsConfigs};
pub use settings::{
    ClientAuth, Flavour, Secret, StoreSpec, StoreType, TlsSettings,
    DEFAULT_HANDSHAKE_DETECTION_TIMEOUT_MS,
};
pub use store::{load_key_store, load_trust_store};
pub use suites::{java_suite_name, TlsVersion, DEFAULT_PROTOCOL};
pub use x509_name::{rfc2253_name, rfc2253_name_from_subject};
