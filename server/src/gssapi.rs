//! SASL GSSAPI (RFC 4752) with Kerberos V5 over Debian's MIT Kerberos (`libgssapi`), as the
//! JDK's `GssKrb5Server` and `GssKrb5Client` run it for ZooKeeper, on the client port (opcode
//! 102) and between members (quorum SASL):
//!
//! ```text
//!  client                                       server (acceptor of zookeeper/host@REALM)
//!  sasl(AP-REQ)                       ───▶       AP-REP                (mutual authentication)
//!  sasl(empty)                        ───▶       wrap([layers=1 (none), maxbuf 65536])
//!  sasl(wrap([layer, maxbuf, authzid])) ─▶       null token: complete, conn gains sasl:<id>
//! ```
//!
//! The server offers only "no security layer" (RFC 4752's bit 1, `auth`), as ZooKeeper's does:
//! it creates its SASL server with no properties, so the JDK offers qop `auth` and nothing else,
//! and neither ZooKeeper's server nor any client it ships ever wraps a packet after the login. A
//! client that selects integrity or confidentiality is refused (DESIGN.md, "Security"). The
//! layer message is still integrity-protected by the context (`gss_wrap` without confidentiality),
//! as the RFC requires, so the offer and the choice cannot be altered on the way.
//!
//! The id is the authenticated principal through `NameRules`; the authzid a client asks for is
//! read and logged but never becomes the id.
//!
//! MIT Kerberos finds its key tables through the process environment (`KRB5_KTNAME` for the
//! acceptor, `KRB5_CLIENT_KTNAME` for a member logging in to another), set once at start from the
//! JAAS sections (`ProcessKerberos`).

use std::sync::OnceLock;

use libgssapi::context::{ClientCtx, CtxFlags, SecurityContext, ServerCtx};
use libgssapi::credential::{Cred, CredUsage};
use libgssapi::name::Name;
use libgssapi::oid::{OidSet, GSS_MECH_KRB5, GSS_NT_KRB5_PRINCIPAL};

use crate::kerberos::NameRules;

/// RFC 4752 §3.3: the security layers, as bits of the first octet of the layer messages.
pub const LAYER_NONE: u8 = 1;
pub const LAYER_INTEGRITY: u8 = 2;
pub const LAYER_CONFIDENTIALITY: u8 = 4;
/// What the JDK's server sends as its receive buffer size (`javax.security.sasl.maxbuffer`'s
/// default); meaningless without a layer, but clients read it.
const SERVER_MAXBUF: u32 = 65536;

/// The acceptor's side of a GSS-API context: `ServerCtx`, or a stand-in in tests.
pub trait Acceptor: Send {
    /// One `gss_accept_sec_context`: the output token (maybe empty) and whether the context is
    /// now established.
    fn accept(&mut self, token: &[u8]) -> Result<(Vec<u8>, bool), String>;
    /// The initiator's principal, once established.
    fn peer(&self) -> Result<String, String>;
    /// Integrity-only `gss_wrap`.
    fn wrap(&mut self, msg: &[u8]) -> Result<Vec<u8>, String>;
    fn unwrap(&mut self, msg: &[u8]) -> Result<Vec<u8>, String>;
}

/// An MIT Kerberos acceptor for `principal` (`None`: any key in the table, JAAS's `*`).
pub struct KrbAcceptor(ServerCtx);

impl KrbAcceptor {
    pub fn new(principal: Option<&str>) -> Result<KrbAcceptor, String> {
        let cred = acquire(principal, CredUsage::Accept)?;
        Ok(KrbAcceptor(ServerCtx::new(Some(cred))))
    }
}

fn krb5_mechs() -> Result<OidSet, String> {
    let mut s = OidSet::new();
    s.add(GSS_MECH_KRB5).map_err(|e| e.to_string())?;
    Ok(s)
}

/// Credentials for `principal` (default: the key table's, or the cache's), Kerberos only.
fn acquire(principal: Option<&str>, usage: CredUsage) -> Result<Cred, String> {
    let name = principal
        .filter(|p| *p != "*")
        .map(|p| Name::new(p.as_bytes(), Some(GSS_NT_KRB5_PRINCIPAL)))
        .transpose()
        .map_err(|e| format!("principal {principal:?}: {e}"))?;
    Cred::acquire(name.as_ref(), None, usage, Some(&krb5_mechs()?)).map_err(|e| {
        format!(
            "no Kerberos credentials for {}: {e}",
            principal.unwrap_or("the default principal")
        )
    })
}

/// Checks at start that the key table holds `principal`'s key, so a wrong keyTab or principal
/// stops the start instead of failing every login (ZooKeeper's JAAS login does the same).
pub fn check_acceptor(principal: Option<&str>) -> Result<(), String> {
    acquire(principal, CredUsage::Accept).map(|_| ())
}

impl Acceptor for KrbAcceptor {
    fn accept(&mut self, token: &[u8]) -> Result<(Vec<u8>, bool), String> {
        let out = self.0.step(token, None).map_err(|e| e.to_string())?;
        Ok((
            out.map(|b| b.to_vec()).unwrap_or_default(),
            self.0.is_complete(),
        ))
    }
    fn peer(&self) -> Result<String, String> {
        self.0
            .source_name()
            .map(|n| n.to_string())
            .map_err(|e| e.to_string())
    }
    fn wrap(&mut self, msg: &[u8]) -> Result<Vec<u8>, String> {
        self.0
            .wrap(false, msg)
            .map(|b| b.to_vec())
            .map_err(|e| e.to_string())
    }
    fn unwrap(&mut self, msg: &[u8]) -> Result<Vec<u8>, String> {
        self.0
            .unwrap(msg)
            .map(|b| b.to_vec())
            .map_err(|e| e.to_string())
    }
}

/// The realm `DEFAULT` rules map (krb5.conf's `default_realm`), read once through MIT Kerberos
/// itself; empty when there is no configuration, as ZooKeeper's `KerberosName` does.
pub fn default_realm() -> String {
    static REALM: OnceLock<String> = OnceLock::new();
    REALM
        .get_or_init(|| {
            let probe = || -> Option<String> {
                let n = Name::new(b"paddock", Some(GSS_NT_KRB5_PRINCIPAL)).ok()?;
                let c = n.canonicalize(Some(GSS_MECH_KRB5)).ok()?;
                Some(c.to_string().rsplit_once('@')?.1.to_string())
            };
            probe().unwrap_or_default()
        })
        .clone()
}

#[derive(Debug)]
enum ServerState {
    /// Context tokens until the context is established.
    Accepting,
    /// Established, and the last context token sent: the client answers with an empty token.
    Established,
    /// The layer offer sent: the client's choice comes next.
    Offered,
    Complete,
    Failed,
}

/// What a server step produced (the client port answers `None` as a null token, as ZooKeeper).
#[derive(Debug, PartialEq, Eq)]
pub enum ServerStep {
    Challenge(Vec<u8>),
    Complete {
        /// The principal the context authenticated.
        principal: String,
        /// The authzid the client asked for, if any (only logged).
        requested: Option<String>,
    },
}

/// One login's server side: the context, then RFC 4752's layer negotiation.
pub struct GssapiServer<A: Acceptor = KrbAcceptor> {
    acceptor: A,
    state: ServerState,
    peer: Option<String>,
}

impl<A: Acceptor> std::fmt::Debug for GssapiServer<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GssapiServer")
            .field("state", &self.state)
            .field("peer", &self.peer)
            .finish()
    }
}

impl<A: Acceptor> GssapiServer<A> {
    pub fn new(acceptor: A) -> GssapiServer<A> {
        GssapiServer {
            acceptor,
            state: ServerState::Accepting,
            peer: None,
        }
    }

    pub fn is_complete(&self) -> bool {
        matches!(self.state, ServerState::Complete)
    }

    /// `SaslServer.evaluateResponse`. Any error leaves the server failed.
    pub fn evaluate(&mut self, token: &[u8]) -> Result<ServerStep, String> {
        let r = self.step(token);
        if r.is_err() {
            self.state = ServerState::Failed;
        }
        r
    }

    fn offer(&mut self) -> Result<ServerStep, String> {
        let mut msg = vec![LAYER_NONE];
        msg.extend_from_slice(&SERVER_MAXBUF.to_be_bytes()[1..]);
        self.state = ServerState::Offered;
        Ok(ServerStep::Challenge(self.acceptor.wrap(&msg)?))
    }

    fn step(&mut self, token: &[u8]) -> Result<ServerStep, String> {
        match self.state {
            ServerState::Accepting => {
                if token.is_empty() {
                    return Err("the client sent no Kerberos token (is it using GSSAPI?)".into());
                }
                let (out, done) = self.acceptor.accept(token)?;
                if !done {
                    return Ok(ServerStep::Challenge(out));
                }
                self.peer = Some(self.acceptor.peer()?);
                if out.is_empty() {
                    // No mutual authentication asked for: nothing to send but the offer.
                    return self.offer();
                }
                self.state = ServerState::Established;
                Ok(ServerStep::Challenge(out))
            }
            ServerState::Established => self.offer(),
            ServerState::Offered => {
                let msg = self.acceptor.unwrap(token)?;
                if msg.len() < 4 {
                    return Err(format!(
                        "the client's security layer message has {} bytes, fewer than 4",
                        msg.len()
                    ));
                }
                let layer = msg[0];
                if layer != LAYER_NONE {
                    return Err(format!(
                        "the client asked for a security layer ({}) the server did not offer: \
                         ZooKeeper's protocol carries no SASL integrity or confidentiality \
                         (qop auth only); use TLS on the client port for that",
                        layer_name(layer)
                    ));
                }
                let authzid = &msg[4..];
                let requested =
                    (!authzid.is_empty()).then(|| String::from_utf8_lossy(authzid).into_owned());
                self.state = ServerState::Complete;
                Ok(ServerStep::Complete {
                    principal: self.peer.clone().unwrap_or_default(),
                    requested,
                })
            }
            ServerState::Complete => Err("GSSAPI authentication already completed".into()),
            ServerState::Failed => Err("GSSAPI: the exchange has already failed".into()),
        }
    }
}

fn layer_name(layer: u8) -> String {
    let mut names = Vec::new();
    for (bit, name) in [
        (LAYER_NONE, "auth"),
        (LAYER_INTEGRITY, "auth-int"),
        (LAYER_CONFIDENTIALITY, "auth-conf"),
    ] {
        if layer & bit != 0 {
            names.push(name);
        }
    }
    if names.is_empty() {
        format!("0x{layer:02x}")
    } else {
        names.join("+")
    }
}

/// The client's side, for a member logging in to another: the service principal is the
/// acceptor's (`quorum.auth.kerberos.servicePrincipal` with `_HOST` replaced). Mutual
/// authentication is required: the login completes only once the acceptor proved it holds the
/// service key.
pub struct GssapiClient {
    ctx: ClientCtx,
    state: ClientState,
    authzid: String,
}

#[derive(Debug, PartialEq, Eq)]
enum ClientState {
    Start,
    Context,
    /// Established; the next challenge is the layer offer.
    AwaitOffer,
    Sent,
}

impl GssapiClient {
    /// `principal`: ours (the learner section's); `service`: the acceptor's full principal.
    pub fn new(principal: Option<&str>, service: &str) -> Result<GssapiClient, String> {
        let cred = acquire(principal, CredUsage::Initiate)?;
        let target = Name::new(service.as_bytes(), Some(GSS_NT_KRB5_PRINCIPAL))
            .map_err(|e| format!("service principal {service:?}: {e}"))?;
        let flags = CtxFlags::GSS_C_MUTUAL_FLAG
            | CtxFlags::GSS_C_SEQUENCE_FLAG
            | CtxFlags::GSS_C_INTEG_FLAG;
        Ok(GssapiClient {
            ctx: ClientCtx::new(Some(cred), target, flags, Some(GSS_MECH_KRB5)),
            state: ClientState::Start,
            authzid: principal.unwrap_or_default().to_string(),
        })
    }

    /// The next token for the acceptor's `challenge`.
    pub fn respond(&mut self, challenge: &[u8]) -> Result<Vec<u8>, String> {
        match self.state {
            ClientState::Start | ClientState::Context => {
                let input = (self.state == ClientState::Context).then_some(challenge);
                let out = self.ctx.step(input, None).map_err(|e| e.to_string())?;
                self.state = if self.ctx.is_complete() {
                    ClientState::AwaitOffer
                } else {
                    ClientState::Context
                };
                Ok(out.map(|b| b.to_vec()).unwrap_or_default())
            }
            ClientState::AwaitOffer => {
                let flags = self.ctx.flags().map_err(|e| e.to_string())?;
                if !flags.contains(CtxFlags::GSS_C_MUTUAL_FLAG) {
                    return Err("the acceptor did not authenticate itself (no mutual flag)".into());
                }
                let offer = self.ctx.unwrap(challenge).map_err(|e| e.to_string())?;
                if offer.first().is_none_or(|l| l & LAYER_NONE == 0) {
                    return Err("the acceptor does not offer qop auth".into());
                }
                let mut msg = vec![LAYER_NONE, 0, 0, 0];
                msg.extend_from_slice(self.authzid.as_bytes());
                self.state = ClientState::Sent;
                self.ctx
                    .wrap(false, &msg)
                    .map(|b| b.to_vec())
                    .map_err(|e| e.to_string())
            }
            ClientState::Sent => Err("GSSAPI: the login is already complete".into()),
        }
    }

    /// Whether the exchange ended where it should: context established with mutual
    /// authentication, the layer choice sent.
    pub fn finished(&self) -> Result<(), String> {
        if self.state == ClientState::Sent {
            Ok(())
        } else {
            Err("the acceptor ended the GSSAPI login early".into())
        }
    }
}

/// The name rules applied to a finished login, for the client port's `sasl:<id>`.
pub fn authorized_id(rules: &NameRules, principal: &str) -> String {
    match rules.authorized_id(principal) {
        Ok(id) => id,
        Err(e) => {
            tracing::warn!(principal, error = %e, "no auth_to_local rule maps the principal; its id is the full principal");
            principal.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A context that establishes on token "AP-REQ" (answering "AP-REP", or nothing when
    /// `mutual` is off) and "wraps" by prefixing 'W'.
    struct Fake {
        mutual: bool,
    }
    impl Acceptor for Fake {
        fn accept(&mut self, token: &[u8]) -> Result<(Vec<u8>, bool), String> {
            match token {
                b"AP-REQ" if self.mutual => Ok((b"AP-REP".to_vec(), true)),
                b"AP-REQ" => Ok((Vec::new(), true)),
                b"PART" => Ok((b"MORE".to_vec(), false)),
                _ => Err("Request is a replay".into()),
            }
        }
        fn peer(&self) -> Result<String, String> {
            Ok("client@EXAMPLE.COM".into())
        }
        fn wrap(&mut self, msg: &[u8]) -> Result<Vec<u8>, String> {
            Ok([b"W".as_slice(), msg].concat())
        }
        fn unwrap(&mut self, msg: &[u8]) -> Result<Vec<u8>, String> {
            msg.strip_prefix(b"W")
                .map(<[u8]>::to_vec)
                .ok_or_else(|| "bad MIC".to_string())
        }
    }

    #[test]
    fn a_mutual_login_runs_the_jdk_exchange() {
        let mut s = GssapiServer::new(Fake { mutual: true });
        assert_eq!(
            s.evaluate(b"PART").unwrap(),
            ServerStep::Challenge(b"MORE".to_vec())
        );
        assert_eq!(
            s.evaluate(b"AP-REQ").unwrap(),
            ServerStep::Challenge(b"AP-REP".to_vec())
        );
        // The offer: no layer only, maxbuf 65536, integrity-wrapped.
        assert_eq!(
            s.evaluate(b"").unwrap(),
            ServerStep::Challenge(b"W\x01\x01\x00\x00".to_vec())
        );
        assert_eq!(
            s.evaluate(b"W\x01\x00\x00\x00super").unwrap(),
            ServerStep::Complete {
                principal: "client@EXAMPLE.COM".into(),
                requested: Some("super".into())
            }
        );
        assert!(s.is_complete());
        assert!(s.evaluate(b"").is_err());
    }

    #[test]
    fn without_mutual_authentication_the_offer_comes_at_once() {
        let mut s = GssapiServer::new(Fake { mutual: false });
        assert_eq!(
            s.evaluate(b"AP-REQ").unwrap(),
            ServerStep::Challenge(b"W\x01\x01\x00\x00".to_vec())
        );
        assert!(matches!(
            s.evaluate(b"W\x01\x00\x00\x00").unwrap(),
            ServerStep::Complete {
                requested: None,
                ..
            }
        ));
    }

    #[test]
    fn integrity_or_confidentiality_is_refused_and_so_is_a_bad_token() {
        for (layer, name) in [
            (2u8, "auth-int"),
            (4, "auth-conf"),
            (6, "auth-int+auth-conf"),
        ] {
            let mut s = GssapiServer::new(Fake { mutual: true });
            s.evaluate(b"AP-REQ").unwrap();
            s.evaluate(b"").unwrap();
            let err = s.evaluate(&[b'W', layer, 0, 0x10, 0]).unwrap_err();
            assert!(err.contains(name) && err.contains("TLS"), "{err}");
            assert!(s.evaluate(b"").is_err(), "a failed exchange stays failed");
        }
        let mut s = GssapiServer::new(Fake { mutual: true });
        assert!(s.evaluate(b"").unwrap_err().contains("no Kerberos token"));
        let mut s = GssapiServer::new(Fake { mutual: true });
        assert_eq!(s.evaluate(b"old").unwrap_err(), "Request is a replay");
        let mut s = GssapiServer::new(Fake { mutual: true });
        s.evaluate(b"AP-REQ").unwrap();
        s.evaluate(b"").unwrap();
        assert_eq!(s.evaluate(b"X\x01\0\0\0").unwrap_err(), "bad MIC");
        let mut s = GssapiServer::new(Fake { mutual: true });
        s.evaluate(b"AP-REQ").unwrap();
        s.evaluate(b"").unwrap();
        assert!(s.evaluate(b"W\x01").unwrap_err().contains("fewer than 4"));
    }
}
