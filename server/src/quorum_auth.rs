//! Quorum SASL: members log in to each other with DIGEST-MD5 or Kerberos (GSSAPI) before a
//! link's hello, from ZooKeeper's keys and JAAS sections.
//!
//! ```text
//! quorum.auth.enableSasl=true                 this member can check a learner's login
//! quorum.auth.learnerRequireSasl=true         it logs in when it connects, and insists on it
//! quorum.auth.serverRequireSasl=true          it refuses a link that did not log in
//! quorum.auth.learner.saslLoginContext=QuorumLearner   JAAS section: username="..." password="..."
//! quorum.auth.server.saslLoginContext=QuorumServer     JAAS section: user_<name>="<password>"
//! ```
//!
//! ZooKeeper's rolling upgrade to quorum SASL turns these on in that order (enable everywhere,
//! then learners, then servers), and so can an operator of paddock. Two differences, both
//! stricter: a login that fails is refused even when the acceptor does not require logins
//! (ZooKeeper lets such a learner through, so wrong credentials surface only at the last step of
//! the upgrade), and a learner checks the acceptor's `rspauth`, so it never trusts an acceptor
//! that does not know the password.
//!
//! Kerberos: both sections use `Krb5LoginModule` (keyTab, principal). A member connecting to
//! the member at `host` asks for a ticket to `quorum.auth.kerberos.servicePrincipal` (default
//! `zkquorum/localhost`) with `_HOST` replaced by `host`, and the login runs RFC 4752's GSSAPI
//! exchange with mutual authentication. The acceptor then checks the connector's principal
//! (CVE-2023-44981): it must be `name/host@REALM` with the host of the server line of the member
//! its hello claims to be. ZooKeeper 3.9.5 accepts the host of any member's line, so a member
//! could claim another's id; paddock does not.
//!
//! A login authenticates the link; it does not encrypt it or protect it afterwards (qop `auth`).
//! Without TLS, someone on the path between two members can still read and alter their traffic:
//! use quorum TLS for that (docs/security.md).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use consensus::net::{AuthClient, AuthServer, Checked, LinkAuth};

use crate::gssapi::{GssapiClient, GssapiServer, KrbAcceptor, ServerStep};
use crate::jaas::JaasConfig;
use crate::kerberos::{KerberosName, Krb5Login, KRB5_LOGIN_MODULE};
use crate::sasl::{DigestMd5Client, DigestMd5Server, DigestService, Step, DIGEST_LOGIN_MODULE};

/// ZooKeeper's default `quorum.auth.kerberos.servicePrincipal`.
pub const DEFAULT_SERVICE_PRINCIPAL: &str = "zkquorum/localhost";

/// The `quorum.auth.*` keys as read from zoo.cfg or `-D`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumSaslSettings {
    pub enable: bool,
    pub learner_require: bool,
    pub server_require: bool,
    pub learner_context: String,
    pub server_context: String,
    /// `quorum.auth.kerberos.servicePrincipal`: meaningful only with Kerberos.
    pub kerberos_service_principal: Option<String>,
}

impl Default for QuorumSaslSettings {
    fn default() -> QuorumSaslSettings {
        QuorumSaslSettings {
            enable: false,
            learner_require: false,
            server_require: false,
            learner_context: "QuorumLearner".into(),
            server_context: "QuorumServer".into(),
            kerberos_service_principal: None,
        }
    }
}

/// The credentials a member logs in with and checks others' against.
pub struct QuorumSasl {
    settings: QuorumSaslSettings,
    mech: Mech,
}

enum Mech {
    Digest {
        /// From the learner section: who this member is when it connects.
        learner: (String, String),
        /// From the server section: whom it accepts.
        users: BTreeMap<String, String>,
    },
    Kerberos {
        /// The learner section's login: our principal when we connect.
        learner: Krb5Login,
        /// The server section's login: the principal we accept for.
        server: Krb5Login,
        /// `quorum.auth.kerberos.servicePrincipal`, `_HOST` not yet replaced.
        service_principal: String,
    },
}

impl fmt::Debug for QuorumSasl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("QuorumSasl");
        d.field("settings", &self.settings);
        match &self.mech {
            Mech::Digest { learner, users } => d
                .field("learner", &learner.0)
                .field("users", &users.keys().collect::<Vec<_>>()),
            Mech::Kerberos {
                learner,
                server,
                service_principal,
            } => d
                .field("learner", &learner.principal)
                .field("server", &server.principal)
                .field("service_principal", service_principal),
        };
        d.finish()
    }
}

/// The host of `host:port` (`[v6]:port` too).
fn host_of(address: &str) -> &str {
    let host = address.rsplit_once(':').map_or(address, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

/// `SecurityUtils.getServerPrincipal`: `name/_HOST[@REALM]` with `_HOST` replaced by the host,
/// lower-cased; then, as `SecurityUtils.createSaslClient`, the learner's realm when none is
/// given.
pub fn service_principal_for(configured: &str, host: &str, learner_realm: Option<&str>) -> String {
    let (name, realm) = match configured.split_once('@') {
        Some((n, r)) => (n, Some(r)),
        None => (configured, None),
    };
    let parts: Vec<&str> = name.split('/').collect();
    let name = if parts.len() == 2 && parts[1] == "_HOST" {
        format!("{}/{}", parts[0], host.to_lowercase())
    } else {
        name.to_string()
    };
    match realm.or(learner_realm) {
        Some(r) => format!("{name}@{r}"),
        None => name,
    }
}

/// The acceptor's check of a member's principal: `name/host@REALM` with the host of the server
/// line of the member it claims to be.
pub fn principal_names_member(principal: &str, member_address: &str) -> Result<(), String> {
    let n = KerberosName::parse(principal)?;
    let want = host_of(member_address);
    match (&n.host, &n.realm) {
        (Some(h), Some(_)) if h.eq_ignore_ascii_case(want) => Ok(()),
        (Some(h), Some(_)) => Err(format!(
            "its principal names host {h}, and that member's server line names {want}"
        )),
        _ => Err("a member's principal must be name/host@REALM".into()),
    }
}

impl QuorumSasl {
    /// Reads the JAAS sections the settings name. `Ok(None)` when quorum SASL is off. Whatever
    /// the settings ask for must be there: a learner section with `username` and `password` when
    /// this member logs in, a server section with at least one `user_<name>` when it checks
    /// logins, DigestLoginModule only. Errors name the section and the key, never a password.
    pub fn load(
        settings: &QuorumSaslSettings,
        jaas_file: Option<&Path>,
    ) -> Result<Option<QuorumSasl>, String> {
        if !settings.enable {
            if settings.learner_require || settings.server_require {
                return Err(
                    "quorum.auth.learnerRequireSasl and quorum.auth.serverRequireSasl need \
                     quorum.auth.enableSasl=true"
                        .into(),
                );
            }
            return Ok(None);
        }
        let Some(path) = jaas_file else {
            return Err(
                "quorum.auth.enableSasl=true needs a JAAS file with the QuorumServer and \
                 QuorumLearner sections: pass -Djava.security.auth.login.config=FILE"
                    .into(),
            );
        };
        let jaas = JaasConfig::read(path)?;
        let section = |name: &str| -> Result<(bool, BTreeMap<String, String>), String> {
            let Some(modules) = jaas.section(name) else {
                return Err(format!(
                    "JAAS file {}: no section {name:?} (quorum SASL needs it)",
                    path.display()
                ));
            };
            if let Some(other) = modules
                .iter()
                .find(|m| m.class != DIGEST_LOGIN_MODULE && m.class != KRB5_LOGIN_MODULE)
            {
                return Err(format!(
                    "JAAS file {}: section {name:?} uses {}; paddock's quorum SASL supports \
                     {DIGEST_LOGIN_MODULE} (DIGEST-MD5) and {KRB5_LOGIN_MODULE} (Kerberos)",
                    path.display(),
                    other.class
                ));
            }
            let krb = modules.iter().any(|m| m.class == KRB5_LOGIN_MODULE);
            let options = modules
                .iter()
                .filter(|m| (m.class == KRB5_LOGIN_MODULE) == krb)
                .flat_map(|m| m.options.clone())
                .collect();
            Ok((krb, options))
        };
        // ZooKeeper loads both sections whenever quorum SASL is enabled (each member is a learner
        // to some peers and a server to others), and so does paddock.
        let (server_krb, server) = section(&settings.server_context)?;
        let (learner_krb, learner) = section(&settings.learner_context)?;
        if server_krb != learner_krb {
            return Err(format!(
                "JAAS file {}: sections {:?} and {:?} must both use {KRB5_LOGIN_MODULE} or both \
                 {DIGEST_LOGIN_MODULE}: a member logs in with the mechanism its peers check",
                path.display(),
                settings.server_context,
                settings.learner_context
            ));
        }
        if server_krb {
            let login = |name: &str, options: &BTreeMap<String, String>| {
                let l = Krb5Login::from_options(options)
                    .map_err(|e| format!("JAAS file {}: section {name:?}: {e}", path.display()))?;
                if l.principal.is_none() {
                    return Err(format!(
                        "JAAS file {}: section {name:?} needs principal=\"name/host@REALM\"",
                        path.display()
                    ));
                }
                Ok(l)
            };
            let server = login(&settings.server_context, &server)?;
            let learner = login(&settings.learner_context, &learner)?;
            let service_principal = settings
                .kerberos_service_principal
                .clone()
                .unwrap_or_else(|| DEFAULT_SERVICE_PRINCIPAL.to_string());
            tracing::info!(
                file = %path.display(),
                learner = ?learner.principal,
                server = ?server.principal,
                service_principal,
                learner_require = settings.learner_require,
                server_require = settings.server_require,
                "quorum SASL (Kerberos) enabled"
            );
            return Ok(Some(QuorumSasl {
                settings: settings.clone(),
                mech: Mech::Kerberos {
                    learner,
                    server,
                    service_principal,
                },
            }));
        }
        if settings.kerberos_service_principal.is_some() {
            tracing::warn!("quorum.auth.kerberos.servicePrincipal is set, but the quorum sections use DIGEST-MD5: it is not used");
        }
        let users: BTreeMap<String, String> = server
            .iter()
            .filter_map(|(k, v)| k.strip_prefix("user_").map(|u| (u.to_string(), v.clone())))
            .collect();
        if users.is_empty() {
            return Err(format!(
                "JAAS file {}: section {:?} defines no user_<name> entries, so no member could log in",
                path.display(),
                settings.server_context
            ));
        }
        let (Some(user), Some(password)) = (learner.get("username"), learner.get("password"))
        else {
            return Err(format!(
                "JAAS file {}: section {:?} needs username and password",
                path.display(),
                settings.learner_context
            ));
        };
        tracing::info!(
            file = %path.display(),
            learner = %user,
            users = ?users.keys().collect::<Vec<_>>(),
            learner_require = settings.learner_require,
            server_require = settings.server_require,
            "quorum SASL (DIGEST-MD5) enabled"
        );
        Ok(Some(QuorumSasl {
            settings: settings.clone(),
            mech: Mech::Digest {
                learner: (user.clone(), password.clone()),
                users,
            },
        }))
    }

    /// The Kerberos logins, when the quorum uses Kerberos: (learner, server).
    pub fn kerberos_logins(&self) -> Option<(&Krb5Login, &Krb5Login)> {
        match &self.mech {
            Mech::Kerberos {
                learner, server, ..
            } => Some((learner, server)),
            Mech::Digest { .. } => None,
        }
    }
}

impl LinkAuth for QuorumSasl {
    fn login_on_connect(&self) -> bool {
        self.settings.learner_require
    }

    fn can_check(&self) -> bool {
        true
    }

    fn require_on_accept(&self) -> bool {
        self.settings.server_require
    }

    fn client(&self, peer_address: &str) -> Result<Box<dyn AuthClient>, String> {
        match &self.mech {
            Mech::Digest {
                learner: (user, password),
                ..
            } => Ok(Box::new(Learner(DigestMd5Client::new(
                DigestService::QUORUM,
                user,
                password,
                DigestMd5Server::random_nonce(),
            )))),
            Mech::Kerberos {
                learner,
                service_principal,
                ..
            } => {
                let principal = learner.principal.clone();
                let realm = principal
                    .as_deref()
                    .and_then(|p| KerberosName::parse(p).ok())
                    .and_then(|n| n.realm);
                let service = service_principal_for(
                    service_principal,
                    host_of(peer_address),
                    realm.as_deref(),
                );
                Ok(Box::new(KrbLearner {
                    principal,
                    service,
                    ctx: None,
                }))
            }
        }
    }

    fn server(&self) -> Result<Box<dyn AuthServer>, String> {
        match &self.mech {
            Mech::Digest { users, .. } => Ok(Box::new(Server {
                inner: DigestMd5Server::for_service(
                    DigestMd5Server::random_nonce(),
                    DigestService::QUORUM,
                ),
                users: users.clone(),
            })),
            Mech::Kerberos { server, .. } => Ok(Box::new(KrbServer(GssapiServer::new(
                KrbAcceptor::new(server.principal.as_deref())?,
            )))),
        }
    }

    fn may_be_member(&self, identity: &str, member_address: &str) -> Result<(), String> {
        match &self.mech {
            Mech::Digest { .. } => Ok(()),
            Mech::Kerberos { .. } => principal_names_member(identity, member_address),
        }
    }
}

const GSSAPI: &str = "GSSAPI";

/// A Kerberos learner: the context is made at the first step, on the transport's blocking
/// thread, since getting the ticket may ask the KDC.
struct KrbLearner {
    principal: Option<String>,
    service: String,
    ctx: Option<GssapiClient>,
}

impl AuthClient for KrbLearner {
    fn mechanism(&self) -> &str {
        GSSAPI
    }
    fn respond(&mut self, challenge: &[u8]) -> Result<Vec<u8>, String> {
        let ctx = match &mut self.ctx {
            Some(c) => c,
            None => self.ctx.insert(
                GssapiClient::new(self.principal.as_deref(), &self.service)
                    .map_err(|e| format!("to {}: {e}", self.service))?,
            ),
        };
        ctx.respond(challenge)
            .map_err(|e| format!("to {}: {e}", self.service))
    }
    fn verify(&mut self, _token: &[u8]) -> Result<(), String> {
        self.ctx
            .as_ref()
            .ok_or_else(|| "the login never started".to_string())?
            .finished()
    }
    fn blocks(&self) -> bool {
        true
    }
}

struct KrbServer(GssapiServer);

impl AuthServer for KrbServer {
    fn mechanism(&self) -> &str {
        GSSAPI
    }
    fn challenge(&mut self) -> Vec<u8> {
        // The connector speaks first (its AP-REQ answers this empty challenge).
        Vec::new()
    }
    fn check(&mut self, response: &[u8]) -> Result<Checked, String> {
        match self.0.evaluate(response)? {
            ServerStep::Challenge(c) => Ok(Checked::Continue(c)),
            ServerStep::Complete { principal, .. } => {
                tracing::debug!(%principal, "a member logged in with Kerberos");
                Ok(Checked::Done {
                    token: Vec::new(),
                    identity: principal,
                })
            }
        }
    }
    fn blocks(&self) -> bool {
        true
    }
}

const MECHANISM: &str = "DIGEST-MD5";

struct Learner(DigestMd5Client);

impl AuthClient for Learner {
    fn mechanism(&self) -> &str {
        MECHANISM
    }
    fn respond(&mut self, challenge: &[u8]) -> Result<Vec<u8>, String> {
        self.0.respond(challenge).map_err(|e| e.to_string())
    }
    fn verify(&mut self, token: &[u8]) -> Result<(), String> {
        self.0.verify(token).map_err(|e| e.to_string())
    }
}

struct Server {
    inner: DigestMd5Server,
    users: BTreeMap<String, String>,
}

impl AuthServer for Server {
    fn mechanism(&self) -> &str {
        MECHANISM
    }
    fn challenge(&mut self) -> Vec<u8> {
        match self.inner.evaluate_with(b"", &|_| None) {
            Ok(Step::Challenge(c)) => c,
            // A fresh server always answers an empty token with its challenge.
            _ => Vec::new(),
        }
    }
    fn check(&mut self, response: &[u8]) -> Result<Checked, String> {
        let users = &self.users;
        match self
            .inner
            .evaluate_with(response, &|u| users.get(u).cloned())
        {
            Ok(Step::Complete {
                token,
                authorization_id,
            }) => {
                tracing::debug!(user = %authorization_id, "a member logged in");
                Ok(Checked::Done {
                    token: token.unwrap_or_default(),
                    identity: authorization_id,
                })
            }
            Ok(Step::Challenge(_)) => Err("the login did not complete".into()),
            Err(e) => Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_pattern_and_realm_as_zookeeper_makes_them() {
        assert_eq!(
            service_principal_for("zookeeper/_HOST", "ZK2.Example.com", Some("R")),
            "zookeeper/zk2.example.com@R"
        );
        assert_eq!(
            service_principal_for("zookeeper/_HOST@OTHER", "h", Some("R")),
            "zookeeper/h@OTHER"
        );
        assert_eq!(
            service_principal_for("zkquorum/localhost", "h", Some("R")),
            "zkquorum/localhost@R"
        );
        assert_eq!(service_principal_for("a/_HOST/b", "h", None), "a/_HOST/b");
        assert_eq!(host_of("127.0.0.2:2888"), "127.0.0.2");
        assert_eq!(host_of("[::1]:2888"), "::1");
    }

    /// CVE-2023-44981: a member's principal must name the host of the member it claims to be.
    #[test]
    fn a_principal_must_name_the_claimed_members_host() {
        assert!(principal_names_member("zookeeper/127.0.0.2@R", "127.0.0.2:2888").is_ok());
        assert!(principal_names_member("zookeeper/ZK2@R", "zk2:2888").is_ok());
        let err = principal_names_member("zookeeper/127.0.0.3@R", "127.0.0.2:2888").unwrap_err();
        assert!(
            err.contains("127.0.0.3") && err.contains("127.0.0.2"),
            "{err}"
        );
        assert!(principal_names_member("zookeeper@R", "127.0.0.2:2888").is_err());
        assert!(principal_names_member("a/b/c@R", "b:1").is_err());
    }

    fn jaas(text: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), text).unwrap();
        f
    }

    const KRB: &str = "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true \
                       keyTab=\"/k\" principal=\"zookeeper/h@R\";";
    const DIGEST: &str = "org.apache.zookeeper.server.auth.DigestLoginModule required \
                          username=\"m\" password=\"p\" user_m=\"p\";";

    fn enabled() -> QuorumSaslSettings {
        QuorumSaslSettings {
            enable: true,
            ..QuorumSaslSettings::default()
        }
    }

    #[test]
    fn kerberos_sections_load_and_mixed_sections_refuse() {
        let f = jaas(&format!(
            "QuorumServer {{ {KRB} }}; QuorumLearner {{ {KRB} }};"
        ));
        let q = QuorumSasl::load(&enabled(), Some(f.path()))
            .unwrap()
            .unwrap();
        let (learner, server) = q.kerberos_logins().unwrap();
        assert_eq!(learner.principal.as_deref(), Some("zookeeper/h@R"));
        assert_eq!(server.keytab.as_deref(), Some(Path::new("/k")));
        let mixed = jaas(&format!(
            "QuorumServer {{ {KRB} }}; QuorumLearner {{ {DIGEST} }};"
        ));
        let err = QuorumSasl::load(&enabled(), Some(mixed.path())).unwrap_err();
        assert!(err.contains("must both use"), "{err}");
        let digest = jaas(&format!(
            "QuorumServer {{ {DIGEST} }}; QuorumLearner {{ {DIGEST} }};"
        ));
        let q = QuorumSasl::load(&enabled(), Some(digest.path()))
            .unwrap()
            .unwrap();
        assert!(q.kerberos_logins().is_none());
    }
}
