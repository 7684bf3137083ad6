//! Quorum SASL: members log in to each other with DIGEST-MD5 before a link's hello, from
//! ZooKeeper's keys and JAAS sections.
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
//! that does not know the password. Kerberos (`Krb5LoginModule`) is not offered for the quorum:
//! a section that uses it refuses the start.
//!
//! A login authenticates the link; it does not encrypt it or protect it afterwards (qop `auth`).
//! Without TLS, someone on the path between two members can still read and alter their traffic:
//! use quorum TLS for that (docs/security.md).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use consensus::net::{AuthClient, AuthServer, LinkAuth};

use crate::jaas::JaasConfig;
use crate::sasl::{DigestMd5Client, DigestMd5Server, DigestService, Step, DIGEST_LOGIN_MODULE};

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
    /// From the learner section: who this member is when it connects.
    learner: Option<(String, String)>,
    /// From the server section: whom it accepts.
    users: BTreeMap<String, String>,
}

impl fmt::Debug for QuorumSasl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QuorumSasl")
            .field("settings", &self.settings)
            .field("learner", &self.learner.as_ref().map(|(u, _)| u))
            .field("users", &self.users.keys().collect::<Vec<_>>())
            .finish()
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
        let section = |name: &str| -> Result<BTreeMap<String, String>, String> {
            let Some(modules) = jaas.section(name) else {
                return Err(format!(
                    "JAAS file {}: no section {name:?} (quorum SASL needs it)",
                    path.display()
                ));
            };
            if let Some(other) = modules.iter().find(|m| m.class != DIGEST_LOGIN_MODULE) {
                return Err(format!(
                    "JAAS file {}: section {name:?} uses {}; paddock's quorum SASL supports only \
                     {DIGEST_LOGIN_MODULE} (DIGEST-MD5; no Kerberos for the quorum)",
                    path.display(),
                    other.class
                ));
            }
            Ok(modules.iter().flat_map(|m| m.options.clone()).collect())
        };
        // ZooKeeper loads both sections whenever quorum SASL is enabled (each member is a learner
        // to some peers and a server to others), and so does paddock.
        let server = section(&settings.server_context)?;
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
        let learner = section(&settings.learner_context)?;
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
            learner: Some((user.clone(), password.clone())),
            users,
        }))
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

    fn client(&self) -> Result<Box<dyn AuthClient>, String> {
        let (user, password) = self
            .learner
            .as_ref()
            .ok_or("no QuorumLearner credentials")?;
        Ok(Box::new(Learner(DigestMd5Client::new(
            DigestService::QUORUM,
            user,
            password,
            DigestMd5Server::random_nonce(),
        ))))
    }

    fn server(&self) -> Box<dyn AuthServer> {
        Box::new(Server {
            inner: DigestMd5Server::for_service(
                DigestMd5Server::random_nonce(),
                DigestService::QUORUM,
            ),
            users: self.users.clone(),
        })
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
    fn check(&mut self, response: &[u8]) -> Result<Vec<u8>, String> {
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
                Ok(token)
            }
            Ok(Step::Challenge(_)) => Err("the login did not complete".into()),
            Err(e) => Err(e.to_string()),
        }
    }
}
