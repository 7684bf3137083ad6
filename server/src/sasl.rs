//! SASL authentication (opcode 102) with the DIGEST-MD5 mechanism, as Apache ZooKeeper 3.9 does
//! it with the JDK's `DigestMD5Server` (RFC 2831) and `SaslServerCallbackHandler`:
//!
//! ```text
//!  client                                   server (one DigestMd5Server per connection)
//!  sasl(empty token)              ───▶      realm="zk-sasl-md5",nonce="…",charset=utf-8,algorithm=md5-sess
//!  sasl(username=…,response=…)    ───▶      rspauth=<hex>        (complete: conn gains sasl:<id>)
//!                                           or AuthFailed (-115), then the connection closes
//! ```
//!
//! Users and passwords come from the `user_<name>="<password>"` options of the JAAS file's
//! `Server` section (`SaslConfig`). ZooKeeper creates the SASL server with protocol `zookeeper`
//! and server name `zk-sasl-md5`, so the realm is `zk-sasl-md5` and the client's digest-uri must
//! be `zookeeper/zk-sasl-md5`; only qop `auth` is offered (no integrity or privacy layer), as the
//! JDK does when no properties are given.
//!
//! The authorization id the connection gains is the authenticated user name. ZooKeeper's callback
//! handler passes it through Kerberos-style canonicalization (`name[/host][@realm]`), but a
//! DIGEST user is always a JAAS `user_<name>` key, and a JAAS key cannot contain `/` or `@`, so
//! the name comes out unchanged. The authzid a client asks for only enters the digest: it cannot
//! make one user act as another.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use md5::{Digest, Md5};
use thiserror::Error;

use crate::gssapi::{GssapiServer, KrbAcceptor, ServerStep};
use crate::jaas::JaasConfig;
use crate::kerberos::{AuthToLocal, Krb5Login, NameRules, KRB5_LOGIN_MODULE};

/// `ZooKeeperSaslServer`: the server name the SASL server is created with, hence the realm.
pub const REALM: &str = "zk-sasl-md5";
/// The digest-uri a client must send: `<protocol>/<server name>`.
pub const DIGEST_URI: &str = "zookeeper/zk-sasl-md5";

/// Which DIGEST-MD5 service an exchange belongs to: its realm and the digest-uri the client
/// sends. ZooKeeper's client port and its quorum (`QuorumAuth`: protocol `zookeeper-quorum`,
/// server name `zk-quorum-sasl-md5`) are different services, so a response for one is refused by
/// the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DigestService {
    pub realm: &'static str,
    pub digest_uri: &'static str,
}

impl DigestService {
    /// Clients on the client port.
    pub const CLIENT: DigestService = DigestService {
        realm: REALM,
        digest_uri: DIGEST_URI,
    };
    /// Members logging in to each other on the peer port (quorum SASL).
    pub const QUORUM: DigestService = DigestService {
        realm: "zk-quorum-sasl-md5",
        digest_uri: "zookeeper-quorum/zk-quorum-sasl-md5",
    };
}
/// The default JAAS section (`zookeeper.sasl.serverconfig` overrides it).
pub const DEFAULT_SECTION: &str = "Server";
/// The login module whose `user_*` options are DIGEST-MD5 credentials.
pub const DIGEST_LOGIN_MODULE: &str = "org.apache.zookeeper.server.auth.DigestLoginModule";
/// The JDK refuses longer client responses.
const MAX_RESPONSE_LENGTH: usize = 4096;

/// Everything a connection's SASL exchange needs, loaded once at start-up.
#[derive(Clone, PartialEq, Eq)]
pub struct SaslConfig {
    pub jaas_file: PathBuf,
    pub section: String,
    users: BTreeMap<String, String>,
    /// A `Krb5LoginModule` in the section: the client port runs GSSAPI instead of DIGEST-MD5
    /// (ZooKeeper picks GSSAPI whenever the section's login yields a principal).
    pub kerberos: Option<KerberosServer>,
    /// `zookeeper.superUser` (and `zookeeper.superUser.*`): authorization ids that also get `super`.
    pub super_users: Vec<String>,
    /// `zookeeper.SASLAuthenticationProvider.superPassword`: replaces the JAAS password of `super`.
    pub super_password: Option<String>,
    /// `zookeeper.allowSaslFailedClients`: keep the connection (unauthenticated) after a failure.
    pub allow_failed_clients: bool,
}

/// Passwords stay out of logs and `conf` dumps.
impl fmt::Debug for SaslConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SaslConfig")
            .field("jaas_file", &self.jaas_file)
            .field("section", &self.section)
            .field("users", &self.users.keys().collect::<Vec<_>>())
            .field("kerberos", &self.kerberos)
            .field("super_users", &self.super_users)
            .field(
                "super_password",
                &self.super_password.as_ref().map(|_| "<set>"),
            )
            .field("allow_failed_clients", &self.allow_failed_clients)
            .finish()
    }
}

/// The settings that decide whether and how SASL runs, before the JAAS file is read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SaslSettings {
    /// `java.security.auth.login.config`.
    pub jaas_file: Option<PathBuf>,
    /// `zookeeper.sasl.serverconfig`, when set.
    pub section: Option<String>,
    pub super_users: Vec<String>,
    pub super_password: Option<String>,
    pub allow_failed_clients: bool,
    /// `zookeeper.kerberos.removeHostFromPrincipal`.
    pub remove_host: bool,
    /// `zookeeper.kerberos.removeRealmFromPrincipal`.
    pub remove_realm: bool,
    /// `zookeeper.security.auth_to_local` (default `DEFAULT`).
    pub auth_to_local: Option<String>,
    /// `java.security.krb5.conf` (`-D` only): MIT Kerberos reads it as `KRB5_CONFIG`.
    pub krb5_conf: Option<PathBuf>,
}

/// The client port's Kerberos acceptor: its JAAS login and the name rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KerberosServer {
    pub login: Krb5Login,
    pub names: NameRules,
}

impl SaslSettings {
    /// The rules a Kerberos principal's id is made with; a bad rule refuses the start.
    pub fn name_rules(&self) -> Result<NameRules, String> {
        let rules = self.auth_to_local.as_deref().unwrap_or("DEFAULT");
        Ok(NameRules {
            auth_to_local: AuthToLocal::parse(rules, None)
                .map_err(|e| format!("zookeeper.security.auth_to_local: {e}"))?,
            remove_host: self.remove_host,
            remove_realm: self.remove_realm,
        })
    }

    /// `ServerCnxnFactory.configureSaslLogin`: no JAAS file, or a file without the section,
    /// means no SASL (tokens are refused as before); a file that cannot be read or parsed, or a
    /// section name set without a file, stops the server. `Ok(None)` is "SASL off".
    pub fn load(&self) -> Result<Option<SaslConfig>, String> {
        let section = self
            .section
            .clone()
            .unwrap_or_else(|| DEFAULT_SECTION.to_string());
        let Some(path) = &self.jaas_file else {
            if self.section.is_some() {
                return Err(format!(
                    "zookeeper.sasl.serverconfig names JAAS section {section:?}, but no JAAS file is set \
                     (java.security.auth.login.config)"
                ));
            }
            return Ok(None);
        };
        let jaas = JaasConfig::read(path)?;
        let Some(modules) = jaas.section(&section) else {
            tracing::info!(file = %path.display(), section, "the JAAS file has no such section: SASL is off");
            return Ok(None);
        };
        if let Some(other) = modules
            .iter()
            .find(|m| m.class != DIGEST_LOGIN_MODULE && m.class != KRB5_LOGIN_MODULE)
        {
            return Err(format!(
                "JAAS file {}: section {section:?} uses login module {}; paddock supports \
                 {DIGEST_LOGIN_MODULE} (SASL DIGEST-MD5) and {KRB5_LOGIN_MODULE} (SASL GSSAPI)",
                path.display(),
                other.class
            ));
        }
        let kerberos = match modules.iter().find(|m| m.class == KRB5_LOGIN_MODULE) {
            Some(m) => {
                let login = Krb5Login::from_options(&m.options).map_err(|e| {
                    format!("JAAS file {}: section {section:?}: {e}", path.display())
                })?;
                tracing::info!(file = %path.display(), section, principal = ?login.principal, keytab = ?login.keytab, "SASL GSSAPI (Kerberos) enabled");
                Some(KerberosServer {
                    login,
                    names: self.name_rules()?,
                })
            }
            None => None,
        };
        // ServerCnxnFactory.getDigestMd5Credentials: every `user_<name>` option of every module.
        let users: BTreeMap<String, String> = modules
            .iter()
            .flat_map(|m| m.options.iter())
            .filter_map(|(k, v)| {
                k.strip_prefix("user_")
                    .map(|name| (name.to_string(), v.clone()))
            })
            .collect();
        if kerberos.is_some() {
            if !users.is_empty() {
                tracing::warn!(file = %path.display(), section, "the section has a Krb5LoginModule: clients log in with GSSAPI, and its user_<name> entries are not used (as in ZooKeeper)");
            }
        } else if users.is_empty() {
            tracing::warn!(file = %path.display(), section, "the JAAS section defines no user_<name> entries: every SASL login will fail");
        } else {
            let names: Vec<&str> = users.keys().map(String::as_str).collect();
            tracing::info!(file = %path.display(), section, ?names, "SASL DIGEST-MD5 enabled");
        }
        Ok(Some(SaslConfig {
            jaas_file: path.clone(),
            section,
            users,
            kerberos,
            super_users: self.super_users.clone(),
            super_password: self.super_password.clone(),
            allow_failed_clients: self.allow_failed_clients,
        }))
    }
}

impl SaslConfig {
    /// `SaslServerCallbackHandler`: the password of a known user; `super` may take it from
    /// `superPassword` instead.
    pub(crate) fn password(&self, user: &str) -> Option<&str> {
        let known = self.users.get(user)?;
        match (&self.super_password, user) {
            (Some(p), "super") => Some(p),
            _ => Some(known),
        }
    }

    /// `ZooKeeperServer.isSaslSuperUser`.
    pub fn is_super_user(&self, authorization_id: &str) -> bool {
        !authorization_id.is_empty() && self.super_users.iter().any(|u| u == authorization_id)
    }
}

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SaslError {
    #[error("DIGEST-MD5 must not have an initial response")]
    InitialResponse,
    #[error(
        "DIGEST-MD5: Invalid digest response length. Got: {0} Expected < {MAX_RESPONSE_LENGTH}"
    )]
    TooLong(usize),
    #[error("DIGEST-MD5: {0}")]
    Malformed(String),
    #[error("DIGEST-MD5: digest response format violation. {0}")]
    Violation(String),
    #[error("DIGEST-MD5: cannot acquire password for {user} in realm : {realm}")]
    UnknownUser { user: String, realm: String },
    #[error("DIGEST-MD5: digest response format violation. Mismatched response.")]
    WrongPassword,
    #[error("DIGEST-MD5: Server at illegal state")]
    IllegalState,
    #[error("DIGEST-MD5 authentication already completed")]
    AlreadyComplete,
    #[error("GSSAPI: {0}")]
    Gssapi(String),
}

/// What a token evaluation produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send this challenge and wait for the next token.
    Challenge(Vec<u8>),
    /// Authenticated: send `token` (DIGEST-MD5's rspauth; none for GSSAPI, as ZooKeeper sends a
    /// null token) and add `sasl:<authorization_id>`.
    Complete {
        token: Option<Vec<u8>>,
        authorization_id: String,
    },
}

/// One connection's SASL server, of the mechanism the JAAS section implies.
#[derive(Debug)]
pub enum SaslServer {
    Digest(DigestMd5Server),
    Gssapi(Box<GssapiServer>),
}

impl SaslServer {
    /// A server for a connection's first token: GSSAPI when the section logs in with Kerberos.
    pub fn for_config(cfg: &SaslConfig) -> Result<SaslServer, SaslError> {
        Ok(match &cfg.kerberos {
            Some(k) => SaslServer::Gssapi(Box::new(GssapiServer::new(
                KrbAcceptor::new(k.login.principal.as_deref()).map_err(SaslError::Gssapi)?,
            ))),
            None => SaslServer::Digest(DigestMd5Server::new(DigestMd5Server::random_nonce())),
        })
    }

    pub fn evaluate(&mut self, token: &[u8], cfg: &SaslConfig) -> Result<Step, SaslError> {
        match self {
            SaslServer::Digest(d) => d.evaluate(token, cfg),
            SaslServer::Gssapi(g) => match g.evaluate(token).map_err(SaslError::Gssapi)? {
                ServerStep::Challenge(c) => Ok(Step::Challenge(c)),
                ServerStep::Complete {
                    principal,
                    requested,
                } => {
                    let names = &cfg
                        .kerberos
                        .as_ref()
                        .expect("a GSSAPI server has Kerberos settings")
                        .names;
                    let authorization_id = crate::gssapi::authorized_id(names, &principal);
                    tracing::info!(principal, requested_authzid = ?requested, authorization_id, "GSSAPI login");
                    Ok(Step::Complete {
                        token: None,
                        authorization_id,
                    })
                }
            },
        }
    }
}

#[derive(Debug)]
enum State {
    Start,
    Challenged,
    Complete,
    /// After a failed response, as the JDK's `step = 0`.
    Failed,
}

/// One connection's DIGEST-MD5 server. The nonce is chosen by the caller (random in the core,
/// fixed in tests), so this type does no IO and reads no randomness.
#[derive(Debug)]
pub struct DigestMd5Server {
    state: State,
    nonce: Vec<u8>,
    service: DigestService,
}

impl DigestMd5Server {
    /// A server for the client port.
    pub fn new(nonce: Vec<u8>) -> DigestMd5Server {
        DigestMd5Server::for_service(nonce, DigestService::CLIENT)
    }

    pub fn for_service(nonce: Vec<u8>, service: DigestService) -> DigestMd5Server {
        DigestMd5Server {
            state: State::Start,
            nonce,
            service,
        }
    }

    /// The JDK's nonce: 30 random bytes in base64, 40 characters with no padding or quotes.
    pub fn random_nonce() -> Vec<u8> {
        use base64::Engine;
        let mut raw = [0u8; 30];
        rand::Rng::fill(&mut rand::thread_rng(), &mut raw[..]);
        base64::engine::general_purpose::STANDARD
            .encode(raw)
            .into_bytes()
    }

    pub fn is_complete(&self) -> bool {
        matches!(self.state, State::Complete)
    }

    /// `SaslServer.evaluateResponse`, with the client port's users (`SaslConfig`).
    pub fn evaluate(&mut self, token: &[u8], cfg: &SaslConfig) -> Result<Step, SaslError> {
        self.evaluate_with(token, &|user| cfg.password(user).map(str::to_string))
    }

    /// `evaluate` with the users' passwords from `password`.
    pub fn evaluate_with(
        &mut self,
        token: &[u8],
        password: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Step, SaslError> {
        if self.is_complete() {
            return Err(SaslError::AlreadyComplete);
        }
        if token.len() > MAX_RESPONSE_LENGTH {
            return Err(SaslError::TooLong(token.len()));
        }
        match self.state {
            State::Start => {
                if !token.is_empty() {
                    return Err(SaslError::InitialResponse);
                }
                self.state = State::Challenged;
                Ok(Step::Challenge(self.challenge()))
            }
            State::Challenged => {
                let result = self.validate(token, password);
                self.state = if result.is_ok() {
                    State::Complete
                } else {
                    State::Failed
                };
                result
            }
            State::Complete | State::Failed => Err(SaslError::IllegalState),
        }
    }

    /// `DigestMD5Server.generateChallenge` with no properties: one realm, no qop directive
    /// (so `auth`), the default maxbuf, UTF-8, md5-sess.
    fn challenge(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(96);
        out.extend_from_slice(b"realm=\"");
        write_quoted(&mut out, self.service.realm.as_bytes());
        out.extend_from_slice(b"\",nonce=\"");
        write_quoted(&mut out, &self.nonce);
        out.extend_from_slice(b"\",charset=utf-8,algorithm=md5-sess");
        out
    }

    /// `DigestMD5Server.validateClientResponse`, check for check in the same order.
    fn validate(
        &self,
        token: &[u8],
        password: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Step, SaslError> {
        let d = Directives::parse(token)?;
        // The challenge said charset=utf-8, so values are read as UTF-8.
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let violation = |s: String| Err(SaslError::Violation(s));
        if let Some(cs) = &d.charset {
            if cs.as_slice() != b"utf-8" {
                return violation(format!("Incompatible charset value: {}", text(cs)));
            }
        }
        if let Some(mb) = &d.maxbuf {
            if text(mb).parse::<i32>().is_err() {
                return Err(SaslError::Malformed(format!(
                    "invalid maxbuf {:?}",
                    text(mb)
                )));
            }
        }
        let Some(username) = d.username.as_deref().map(text) else {
            return violation("Missing username.".into());
        };
        let realm = d.realm.as_deref().map(text).unwrap_or_default();
        if realm != self.service.realm {
            return violation(format!("Nonexistent realm: {realm}"));
        }
        let Some(nonce) = &d.nonce else {
            return violation("Missing nonce.".into());
        };
        if *nonce != self.nonce {
            return violation("Mismatched nonce.".into());
        }
        let Some(cnonce) = &d.cnonce else {
            return violation("Missing cnonce.".into());
        };
        if let Some(nc) = &d.nonce_count {
            if i64::from_str_radix(&text(nc), 16).ok() != Some(1) {
                return violation(format!("Nonce count does not match: {}", text(nc)));
            }
        }
        let qop = d.qop.as_deref().map(text).unwrap_or_else(|| "auth".into());
        match qop.as_str() {
            "auth" => {}
            "auth-int" | "auth-conf" => {
                return Err(SaslError::Malformed(format!(
                    "server does not support  qop: {qop}"
                )));
            }
            _ => return violation(format!("Invalid QOP: {qop}")),
        }
        let uri = d.digest_uri.as_deref().map(text);
        let expected_uri = self.service.digest_uri;
        if !uri
            .as_deref()
            .is_some_and(|u| u.eq_ignore_ascii_case(expected_uri))
        {
            return violation(format!(
                "Mismatched URI: {}; expecting: {expected_uri}",
                uri.as_deref().unwrap_or("null")
            ));
        }
        // The client's spelling of the URI enters the digest (the JDK keeps it after the check).
        let uri = uri.unwrap_or_default();
        let Some(response) = &d.response else {
            return violation("Missing response.".into());
        };
        let Some(password) = password(&username) else {
            return Err(SaslError::UnknownUser {
                user: username,
                realm,
            });
        };
        let inputs = DigestInputs {
            digest_uri: &uri,
            username: &username,
            realm: &realm,
            password: &password,
            nonce,
            cnonce,
            authzid: d.authzid.as_deref(),
        };
        if response_value(b"AUTHENTICATE", &inputs) != *response {
            return Err(SaslError::WrongPassword);
        }
        let mut token = b"rspauth=".to_vec();
        token.extend_from_slice(&response_value(b"", &inputs));
        Ok(Step::Complete {
            token: Some(token),
            authorization_id: username,
        })
    }
}

/// The client side of DIGEST-MD5 (RFC 2831 §2.1.2, qop `auth`): answers a server's challenge for
/// one user and checks the server's `rspauth`, which proves the server knew the password too.
/// paddock runs it only between its own members (quorum SASL); the client cnonce is the caller's,
/// so this type reads no randomness.
pub struct DigestMd5Client {
    service: DigestService,
    username: String,
    password: String,
    cnonce: Vec<u8>,
    /// The rspauth the server must send, once the response is made.
    expected: Option<Vec<u8>>,
}

impl fmt::Debug for DigestMd5Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DigestMd5Client")
            .field("service", &self.service)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

impl DigestMd5Client {
    pub fn new(
        service: DigestService,
        username: &str,
        password: &str,
        cnonce: Vec<u8>,
    ) -> DigestMd5Client {
        DigestMd5Client {
            service,
            username: username.to_string(),
            password: password.to_string(),
            cnonce,
            expected: None,
        }
    }

    /// The digest-response to `challenge`. The realm must be this service's: a client that
    /// answered another realm's challenge would prove its password to a different service.
    pub fn respond(&mut self, challenge: &[u8]) -> Result<Vec<u8>, SaslError> {
        if self.expected.is_some() {
            return Err(SaslError::IllegalState);
        }
        let d = Directives::parse(challenge)?;
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let realm = d.realm.as_deref().map(text).unwrap_or_default();
        if realm != self.service.realm {
            return Err(SaslError::Violation(format!(
                "the server's realm {realm:?} is not {:?}",
                self.service.realm
            )));
        }
        let Some(nonce) = d.nonce else {
            return Err(SaslError::Violation("Missing nonce.".into()));
        };
        if let Some(qop) = &d.qop {
            if !text(qop).split(',').any(|q| q.trim() == "auth") {
                return Err(SaslError::Violation(format!(
                    "the server offers no qop auth: {}",
                    text(qop)
                )));
            }
        }
        let inputs = DigestInputs {
            digest_uri: self.service.digest_uri,
            username: &self.username,
            realm: self.service.realm,
            password: &self.password,
            nonce: &nonce,
            cnonce: &self.cnonce,
            authzid: None,
        };
        let response = response_value(b"AUTHENTICATE", &inputs);
        let mut rspauth = b"rspauth=".to_vec();
        rspauth.extend(response_value(b"", &inputs));
        self.expected = Some(rspauth);
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(b"charset=utf-8,username=\"");
        write_quoted(&mut out, self.username.as_bytes());
        out.extend_from_slice(b"\",realm=\"");
        write_quoted(&mut out, self.service.realm.as_bytes());
        out.extend_from_slice(b"\",nonce=\"");
        write_quoted(&mut out, &nonce);
        out.extend_from_slice(b"\",nc=00000001,cnonce=\"");
        write_quoted(&mut out, &self.cnonce);
        out.extend_from_slice(b"\",digest-uri=\"");
        write_quoted(&mut out, self.service.digest_uri.as_bytes());
        out.extend_from_slice(b"\",maxbuf=65536,response=");
        out.extend_from_slice(&response);
        out.extend_from_slice(b",qop=auth");
        Ok(out)
    }

    /// Checks the server's final token against the rspauth its password implies.
    pub fn verify(&self, token: &[u8]) -> Result<(), SaslError> {
        match &self.expected {
            Some(want) if want.as_slice() == token => Ok(()),
            Some(_) => Err(SaslError::Violation(
                "the server's rspauth does not match: it does not know the password".into(),
            )),
            None => Err(SaslError::IllegalState),
        }
    }
}

/// The directives of a digest-response the server reads (`DigestMD5Server.DIRECTIVE_KEY`).
/// Others are ignored, including `nc`: the JDK's table names it `nonce-count`, so it never
/// checks the `nc` that RFC 2831 clients send, and always hashes with a count of 1.
#[derive(Debug, Default)]
struct Directives {
    username: Option<Vec<u8>>,
    realm: Option<Vec<u8>>,
    nonce: Option<Vec<u8>>,
    cnonce: Option<Vec<u8>>,
    nonce_count: Option<Vec<u8>>,
    qop: Option<Vec<u8>>,
    digest_uri: Option<Vec<u8>>,
    response: Option<Vec<u8>>,
    maxbuf: Option<Vec<u8>>,
    charset: Option<Vec<u8>>,
    cipher: Option<Vec<u8>>,
    authzid: Option<Vec<u8>>,
    auth_param: Option<Vec<u8>>,
}

fn is_lws(b: u8) -> bool {
    matches!(b, b'\r' | b'\n' | b' ' | b'\t')
}

impl Directives {
    /// `DigestMD5Base.parseDirectives`: `key=value` or `key="quoted\"value"`, separated by
    /// commas and linear white space; empty elements are skipped; a repeated directive is an
    /// error.
    fn parse(buf: &[u8]) -> Result<Directives, SaslError> {
        let err = |s: String| Err(SaslError::Malformed(s));
        let skip_lws = |mut i: usize| {
            while i < buf.len() && is_lws(buf[i]) {
                i += 1;
            }
            i
        };
        let mut d = Directives::default();
        let mut key: Vec<u8> = Vec::new();
        let mut value: Vec<u8> = Vec::new();
        let (mut getting_key, mut quoted, mut expect_sep) = (true, false, false);
        let mut i = skip_lws(0);
        while i < buf.len() {
            let b = buf[i];
            if getting_key {
                if b == b',' {
                    if !key.is_empty() {
                        return err(format!(
                            "Directive key contains a ',':{}",
                            String::from_utf8_lossy(&key)
                        ));
                    }
                    i = skip_lws(i + 1);
                } else if b == b'=' {
                    if key.is_empty() {
                        return err("Empty directive key".into());
                    }
                    getting_key = false;
                    i = skip_lws(i + 1);
                    if i < buf.len() {
                        if buf[i] == b'"' {
                            quoted = true;
                            i += 1;
                        }
                    } else {
                        return err(format!(
                            "Valueless directive found: {}",
                            String::from_utf8_lossy(&key)
                        ));
                    }
                } else if is_lws(b) {
                    i = skip_lws(i + 1);
                    if i >= buf.len() || buf[i] != b'=' {
                        return err(format!(
                            "'=' expected after key: {}",
                            String::from_utf8_lossy(&key)
                        ));
                    }
                } else {
                    key.push(b);
                    i += 1;
                }
            } else if quoted {
                if b == b'\\' {
                    i += 1;
                    if i >= buf.len() {
                        return err(format!(
                            "Unmatched quote found for directive: {}",
                            String::from_utf8_lossy(&key)
                        ));
                    }
                    value.push(buf[i]);
                    i += 1;
                } else if b == b'"' {
                    i += 1;
                    quoted = false;
                    expect_sep = true;
                } else {
                    value.push(b);
                    i += 1;
                }
            } else if is_lws(b) || b == b',' {
                d.set(&key, std::mem::take(&mut value))?;
                key.clear();
                getting_key = true;
                expect_sep = false;
                i = skip_lws(i + 1);
            } else if expect_sep {
                // The JDK quotes the value here; it may be the response digest, which is a
                // password guessing oracle in a log, so only the directive is named.
                return err(format!(
                    "Expecting comma or linear whitespace after the quoted value of directive: {}",
                    String::from_utf8_lossy(&key)
                ));
            } else {
                value.push(b);
                i += 1;
            }
        }
        if quoted {
            return err(format!(
                "Unmatched quote found for directive: {}",
                String::from_utf8_lossy(&key)
            ));
        }
        if !key.is_empty() {
            d.set(&key, value)?;
        }
        Ok(d)
    }

    fn set(&mut self, key: &[u8], value: Vec<u8>) -> Result<(), SaslError> {
        let key = String::from_utf8_lossy(key).to_ascii_lowercase();
        let slot = match key.as_str() {
            "username" => &mut self.username,
            "realm" => &mut self.realm,
            "nonce" => &mut self.nonce,
            "cnonce" => &mut self.cnonce,
            "nonce-count" => &mut self.nonce_count,
            "qop" => &mut self.qop,
            "digest-uri" => &mut self.digest_uri,
            "response" => &mut self.response,
            "maxbuf" => &mut self.maxbuf,
            "charset" => &mut self.charset,
            "cipher" => &mut self.cipher,
            "authzid" => &mut self.authzid,
            "auth-param" => &mut self.auth_param,
            _ => return Ok(()),
        };
        if slot.is_some() {
            // The JDK adds the value; not here, as it may be the response digest (see `parse`).
            return Err(SaslError::Malformed(format!(
                "peer sent more than one {key} directive"
            )));
        }
        *slot = Some(value);
        Ok(())
    }
}

fn write_quoted(out: &mut Vec<u8>, value: &[u8]) {
    for &b in value {
        if matches!(b, b'"' | b'\\' | 127) || (b < 32 && !matches!(b, b'\t' | b'\r' | b'\n')) {
            out.push(b'\\');
        }
        out.push(b);
    }
}

struct DigestInputs<'a> {
    digest_uri: &'a str,
    username: &'a str,
    realm: &'a str,
    password: &'a str,
    nonce: &'a [u8],
    cnonce: &'a [u8],
    authzid: Option<&'a [u8]>,
}

/// RFC 2831 §2.1.2.1 response-value (qop auth, nonce count 1); `method` is `AUTHENTICATE` for
/// the client's response and empty for the server's rspauth.
fn response_value(method: &[u8], x: &DigestInputs) -> Vec<u8> {
    let mut a2 = method.to_vec();
    a2.push(b':');
    a2.extend_from_slice(x.digest_uri.as_bytes());

    let mut secret = latin1_or_utf8(x.username);
    secret.push(b':');
    secret.extend(latin1_or_utf8(x.realm));
    secret.push(b':');
    secret.extend(latin1_or_utf8(x.password));

    let mut a1 = Md5::digest(&secret).to_vec();
    a1.push(b':');
    a1.extend_from_slice(x.nonce);
    a1.push(b':');
    a1.extend_from_slice(x.cnonce);
    if let Some(authzid) = x.authzid {
        a1.push(b':');
        a1.extend_from_slice(authzid);
    }

    let mut kd = hex(&Md5::digest(&a1));
    kd.push(b':');
    kd.extend_from_slice(x.nonce);
    kd.extend_from_slice(b":00000001:");
    kd.extend_from_slice(x.cnonce);
    kd.extend_from_slice(b":auth:");
    kd.extend(hex(&Md5::digest(&a2)));
    hex(&Md5::digest(&kd))
}

/// RFC 2831 §2.1.2.1: user name, realm and password are hashed in ISO 8859-1 when every
/// character fits, else in UTF-8.
fn latin1_or_utf8(s: &str) -> Vec<u8> {
    if s.chars().all(|c| (c as u32) <= 0xff) {
        s.chars().map(|c| c as u8).collect()
    } else {
        s.as_bytes().to_vec()
    }
}

fn hex(bytes: &[u8]) -> Vec<u8> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|b| [DIGITS[(b >> 4) as usize], DIGITS[(b & 15) as usize]])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(users: &[(&str, &str)]) -> SaslConfig {
        SaslConfig {
            jaas_file: PathBuf::from("jaas.conf"),
            section: DEFAULT_SECTION.into(),
            users: users
                .iter()
                .map(|(u, p)| (u.to_string(), p.to_string()))
                .collect(),
            kerberos: None,
            super_users: Vec::new(),
            super_password: None,
            allow_failed_clients: false,
        }
    }

    /// RFC 2831 §4's worked example (IMAP, realm elwood.innosoft.com, user chris/secret):
    /// proves the digest arithmetic independently of ZooKeeper's fixed realm and URI.
    #[test]
    fn response_value_matches_rfc2831_example() {
        let x = DigestInputs {
            digest_uri: "imap/elwood.innosoft.com",
            username: "chris",
            realm: "elwood.innosoft.com",
            password: "secret",
            nonce: b"OA6MG9tEQGm2hh",
            cnonce: b"OA6MHXh6VqTrRk",
            authzid: None,
        };
        assert_eq!(
            response_value(b"AUTHENTICATE", &x),
            b"d388dad90d4bbd760a152321f2143af7".to_vec()
        );
        assert_eq!(
            response_value(b"", &x),
            b"ea40f60335c427b5527b84dbabcdfffd".to_vec()
        );
    }

    #[test]
    fn challenge_is_the_jdk_default_form() {
        let mut s = DigestMd5Server::new(b"abc+/=".to_vec());
        let step = s.evaluate(b"", &cfg(&[])).unwrap();
        assert_eq!(
            step,
            Step::Challenge(
                b"realm=\"zk-sasl-md5\",nonce=\"abc+/=\",charset=utf-8,algorithm=md5-sess".to_vec()
            )
        );
        assert_eq!(DigestMd5Server::random_nonce().len(), 40);
    }

    #[test]
    fn initial_response_is_refused() {
        let mut s = DigestMd5Server::new(b"n".to_vec());
        assert_eq!(
            s.evaluate(b"username=\"a\"", &cfg(&[])),
            Err(SaslError::InitialResponse)
        );
    }

    fn client_response(user: &str, password: &str, nonce: &str, extra: &str) -> Vec<u8> {
        let x = DigestInputs {
            digest_uri: DIGEST_URI,
            username: user,
            realm: REALM,
            password,
            nonce: nonce.as_bytes(),
            cnonce: b"cn",
            authzid: None,
        };
        let r = String::from_utf8(response_value(b"AUTHENTICATE", &x)).unwrap();
        format!(
            "username=\"{user}\",realm=\"zk-sasl-md5\",nonce=\"{nonce}\",cnonce=\"cn\",nc=00000001,qop=auth,\
             digest-uri=\"zookeeper/zk-sasl-md5\",response={r}{extra}"
        )
        .into_bytes()
    }

    #[test]
    fn right_password_completes_with_rspauth_and_a_second_token_is_refused() {
        let c = cfg(&[("bob", "pw")]);
        let mut s = DigestMd5Server::new(b"N1".to_vec());
        s.evaluate(b"", &c).unwrap();
        let Step::Complete {
            token,
            authorization_id,
        } = s
            .evaluate(&client_response("bob", "pw", "N1", ""), &c)
            .unwrap()
        else {
            panic!("not complete")
        };
        assert_eq!(authorization_id, "bob");
        let token = token.unwrap();
        assert!(token.starts_with(b"rspauth=") && token.len() == 8 + 32);
        assert_eq!(s.evaluate(b"", &c), Err(SaslError::AlreadyComplete));
    }

    #[test]
    fn failures_say_why() {
        let c = cfg(&[("bob", "pw")]);
        let run = |resp: Vec<u8>| {
            let mut s = DigestMd5Server::new(b"N1".to_vec());
            s.evaluate(b"", &c).unwrap();
            let r = s.evaluate(&resp, &c);
            assert_eq!(s.evaluate(b"", &c), Err(SaslError::IllegalState));
            r.unwrap_err()
        };
        assert_eq!(
            run(client_response("bob", "nope", "N1", "")),
            SaslError::WrongPassword
        );
        assert_eq!(
            run(client_response("eve", "pw", "N1", "")),
            SaslError::UnknownUser {
                user: "eve".into(),
                realm: REALM.into()
            }
        );
        assert_eq!(
            run(client_response("bob", "pw", "N2", "")),
            SaslError::Violation("Mismatched nonce.".into())
        );
        assert_eq!(
            run(client_response("bob", "pw", "N1", ",charset=iso-8859-1")),
            SaslError::Violation("Incompatible charset value: iso-8859-1".into())
        );
        assert_eq!(
            run(client_response("bob", "pw", "N1", ",realm=x")),
            SaslError::Malformed("peer sent more than one realm directive".into())
        );
        // A repeated or badly quoted response digest is not repeated into the log line.
        let err = run(client_response(
            "bob",
            "pw",
            "N1",
            ",response=\"0123abcd\"x",
        ))
        .to_string();
        assert_eq!(
            err,
            "DIGEST-MD5: Expecting comma or linear whitespace after the quoted value of directive: response"
        );
        let err = run(client_response("bob", "pw", "N1", ",response=0123abcd")).to_string();
        assert_eq!(
            err,
            "DIGEST-MD5: peer sent more than one response directive"
        );
        assert_eq!(
            run(b"username=bob,realm=\"zk-sasl-md5\",nonce=N1,cnonce=c,digest-uri=\"zookeeper/other\",response=0".to_vec()),
            SaslError::Violation("Mismatched URI: zookeeper/other; expecting: zookeeper/zk-sasl-md5".into())
        );
        assert_eq!(
            run(b"username=bob,nonce=N1".to_vec()),
            SaslError::Violation("Nonexistent realm: ".into())
        );
        assert_eq!(
            run(b"username=bob,realm=\"zk-sasl-md5\",nonce=N1,cnonce=c,qop=auth-conf".to_vec()),
            SaslError::Malformed("server does not support  qop: auth-conf".into())
        );
        assert_eq!(
            run(b"username=\"bob".to_vec()),
            SaslError::Malformed("Unmatched quote found for directive: username".into())
        );
    }

    #[test]
    fn super_password_replaces_the_jaas_password_of_super_only() {
        let mut c = cfg(&[("super", "jaas"), ("bob", "pw")]);
        c.super_password = Some("prop".into());
        assert_eq!(c.password("super"), Some("prop"));
        assert_eq!(c.password("bob"), Some("pw"));
        assert_eq!(c.password("eve"), None);
        c.super_users = vec!["bob".into()];
        assert!(c.is_super_user("bob") && !c.is_super_user("super") && !c.is_super_user(""));
    }

    #[test]
    fn a_requested_authzid_enters_the_digest_but_not_the_identity() {
        let c = cfg(&[("bob", "pw")]);
        let x = DigestInputs {
            digest_uri: DIGEST_URI,
            username: "bob",
            realm: REALM,
            password: "pw",
            nonce: b"N1",
            cnonce: b"cn",
            authzid: Some(b"super"),
        };
        let r = String::from_utf8(response_value(b"AUTHENTICATE", &x)).unwrap();
        let resp = format!(
            "username=bob,realm=\"zk-sasl-md5\",nonce=N1,cnonce=cn,digest-uri=\"zookeeper/zk-sasl-md5\",\
             authzid=\"super\",response={r}"
        );
        let mut s = DigestMd5Server::new(b"N1".to_vec());
        s.evaluate(b"", &c).unwrap();
        let Step::Complete {
            token,
            authorization_id,
        } = s.evaluate(resp.as_bytes(), &c).unwrap()
        else {
            panic!("not complete")
        };
        assert_eq!(authorization_id, "bob");
        let rspauth = response_value(b"", &x);
        assert_eq!(token.unwrap(), [b"rspauth=".as_slice(), &rspauth].concat());
    }

    fn quorum_users(user: &str) -> Option<String> {
        (user == "learner").then(|| "pw".to_string())
    }

    /// A member logging in to another: the client's response passes the quorum server's checks,
    /// and the server's rspauth passes the client's.
    #[test]
    fn a_quorum_client_and_server_log_in_and_prove_the_password_both_ways() {
        let mut server = DigestMd5Server::for_service(b"N2".to_vec(), DigestService::QUORUM);
        let Step::Challenge(challenge) = server.evaluate_with(b"", &quorum_users).unwrap() else {
            panic!("no challenge")
        };
        assert_eq!(
            challenge,
            b"realm=\"zk-quorum-sasl-md5\",nonce=\"N2\",charset=utf-8,algorithm=md5-sess".to_vec()
        );
        let mut client =
            DigestMd5Client::new(DigestService::QUORUM, "learner", "pw", b"cn2".to_vec());
        let response = client.respond(&challenge).unwrap();
        let Step::Complete {
            token,
            authorization_id,
        } = server.evaluate_with(&response, &quorum_users).unwrap()
        else {
            panic!("not complete")
        };
        assert_eq!(authorization_id, "learner");
        client.verify(&token.unwrap()).unwrap();
        // A server that did not know the password could not have made that token.
        assert!(client
            .verify(b"rspauth=00000000000000000000000000000000")
            .is_err());
    }

    #[test]
    fn a_wrong_quorum_password_is_refused() {
        let mut server = DigestMd5Server::for_service(b"N3".to_vec(), DigestService::QUORUM);
        let Step::Challenge(challenge) = server.evaluate_with(b"", &quorum_users).unwrap() else {
            panic!("no challenge")
        };
        let mut client =
            DigestMd5Client::new(DigestService::QUORUM, "learner", "guess", b"cn".to_vec());
        let response = client.respond(&challenge).unwrap();
        assert_eq!(
            server.evaluate_with(&response, &quorum_users),
            Err(SaslError::WrongPassword)
        );
    }

    /// The client port's and the quorum's logins are separate services: neither side answers or
    /// accepts the other's.
    #[test]
    fn a_client_port_login_does_not_pass_for_a_quorum_one() {
        let mut client =
            DigestMd5Client::new(DigestService::QUORUM, "learner", "pw", b"cn".to_vec());
        let err = client
            .respond(b"realm=\"zk-sasl-md5\",nonce=\"N\",charset=utf-8,algorithm=md5-sess")
            .unwrap_err();
        assert!(
            err.to_string().contains("is not \"zk-quorum-sasl-md5\""),
            "{err}"
        );
        let mut quorum = DigestMd5Server::for_service(b"N".to_vec(), DigestService::QUORUM);
        quorum.evaluate_with(b"", &quorum_users).unwrap();
        let mut port_client =
            DigestMd5Client::new(DigestService::CLIENT, "learner", "pw", b"cn".to_vec());
        let response = port_client
            .respond(b"realm=\"zk-sasl-md5\",nonce=\"N\",charset=utf-8,algorithm=md5-sess")
            .unwrap();
        assert!(matches!(
            quorum.evaluate_with(&response, &quorum_users),
            Err(SaslError::Violation(_))
        ));
    }
}
