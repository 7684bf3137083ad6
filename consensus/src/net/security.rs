//! Who may speak on the peer port: TLS with a certificate bound to the member it claims to be,
//! and a challenge-response login (quorum SASL) before the hello. The server builds both from
//! ZooKeeper's keys (`sslQuorum`, `ssl.quorum.*`, `portUnification`, `quorum.auth.*`); this module
//! only runs them.
//!
//! The order on every link, before a byte of paddock's own protocol:
//!
//! ```text
//! TCP ─▶ TLS handshake (when the connector uses TLS: the acceptor tells by the first byte)
//!     ─▶ login (when the connector logs in: an Auth frame, then challenge, response, outcome)
//!     ─▶ hello ─▶ the acceptor checks that a TLS peer's certificate names the member it claims
//! ```
//!
//! A node is *closed* when it accepts no link that has not authenticated: TLS is required
//! (`accept_plain` off) or a login is (`LinkAuth::require_on_accept`). A closed node tells a peer
//! nothing before that peer authenticated, not even in a refusal: a refusal then carries a zeroed
//! hello instead of ours, so the cluster id, the fingerprint and our log position stay with the
//! members. An open node (no security, or the middle of a rolling upgrade) answers as it always
//! has.

use std::sync::Arc;

use super::frame::{FrameReader, FrameWriter};
use super::handshake;

/// TLS material for peer links. Implemented by the server over its key and trust stores; called
/// at every connection, so a store reloaded in between applies to new links only.
pub trait PeerTls: Send + Sync + 'static {
    /// How this node connects: its certificate as the client's, and the verifier of the
    /// acceptor's chain and name.
    fn client_config(&self) -> Arc<rustls::ClientConfig>;
    /// How this node accepts: its certificate, and a verifier that requires the connector's.
    fn server_config(&self) -> Arc<rustls::ServerConfig>;
    /// Whether a member's certificate must be valid for the host on its server line, checked by
    /// the acceptor as the connector's TLS already checks it (`ssl.quorum.hostnameVerification`).
    fn bind_identity(&self) -> bool;
}

/// A login run on a link before the hello: a challenge from the acceptor, then responses from the
/// connector and further challenges until the acceptor's verdict, with a token that proves the
/// acceptor knew the secret too (one round for DIGEST-MD5; a Kerberos login takes three). Both
/// sides are synchronous state machines; the transport carries their tokens in frames.
pub trait LinkAuth: Send + Sync + 'static {
    /// This node logs in when it connects (ZooKeeper's `quorum.auth.learnerRequireSasl`).
    fn login_on_connect(&self) -> bool;
    /// This node can check a connector's login (`quorum.auth.enableSasl`).
    fn can_check(&self) -> bool;
    /// An accepted link must log in before its hello (`quorum.auth.serverRequireSasl`).
    fn require_on_accept(&self) -> bool;
    /// A fresh connector side of the login to the member at `peer_address` (the `host:port` of
    /// its server line: a Kerberos login names the acceptor's host in the service principal).
    fn client(&self, peer_address: &str) -> Result<Box<dyn AuthClient>, String>;
    /// A fresh acceptor side of the login.
    fn server(&self) -> Result<Box<dyn AuthServer>, String>;
    /// Whether a connector that logged in as `identity` may be the member whose server line has
    /// `member_address`, checked once its hello names the member. The default allows any.
    fn may_be_member(&self, identity: &str, member_address: &str) -> Result<(), String> {
        let _ = (identity, member_address);
        Ok(())
    }
}

/// The connector's side of a login.
pub trait AuthClient: Send {
    /// The mechanism's name, sent first so an acceptor can refuse one it does not run.
    fn mechanism(&self) -> &str;
    /// The response to the acceptor's challenge.
    fn respond(&mut self, challenge: &[u8]) -> Result<Vec<u8>, String>;
    /// Checks the acceptor's final token (its proof that it knew the secret).
    fn verify(&mut self, token: &[u8]) -> Result<(), String>;
    /// True when a step may block (a Kerberos library reading a key table or asking a KDC): the
    /// transport then runs the steps on a blocking thread.
    fn blocks(&self) -> bool {
        false
    }
}

/// What the acceptor made of a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// Send this challenge and wait for the next response.
    Continue(Vec<u8>),
    /// Logged in as `identity`; `token` goes to the connector with the verdict.
    Done { token: Vec<u8>, identity: String },
}

/// The acceptor's side of a login.
pub trait AuthServer: Send {
    fn mechanism(&self) -> &str;
    /// The challenge that opens the exchange.
    fn challenge(&mut self) -> Vec<u8>;
    /// Checks a connector's response: another challenge, or the verdict; else why not (for our
    /// log; the connector only learns that it was refused).
    fn check(&mut self, response: &[u8]) -> Result<Checked, String>;
    /// See `AuthClient::blocks`.
    fn blocks(&self) -> bool {
        false
    }
}

/// Most rounds a login may take before it is refused (Kerberos needs three).
const MAX_ROUNDS: usize = 8;

/// Runs `f` on `state`, on a blocking thread when `blocks`.
async fn step<S: Send + 'static, T: Send + 'static>(
    blocks: bool,
    mut state: S,
    f: impl FnOnce(&mut S) -> T + Send + 'static,
) -> std::io::Result<(S, T)> {
    if !blocks {
        let t = f(&mut state);
        return Ok((state, t));
    }
    tokio::task::spawn_blocking(move || {
        let t = f(&mut state);
        (state, t)
    })
    .await
    .map_err(|e| std::io::Error::other(format!("login step: {e}")))
}

/// How a node's peer links are protected. The default is none: plaintext, no login, open.
#[derive(Clone, Default)]
pub struct PeerSecurity {
    /// TLS material; accepting TLS links needs it, and so does `tls_connect`.
    pub tls: Option<Arc<dyn PeerTls>>,
    /// Connect to peers with TLS (`sslQuorum=true`).
    pub tls_connect: bool,
    /// Accept plaintext links (`sslQuorum=false`, or `portUnification=true` during an upgrade).
    pub accept_plain: bool,
    /// The login before the hello (quorum SASL).
    pub auth: Option<Arc<dyn LinkAuth>>,
}

impl std::fmt::Debug for PeerSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerSecurity")
            .field("tls", &self.tls.is_some())
            .field("tls_connect", &self.tls_connect)
            .field("accept_plain", &self.accept_plain)
            .field("auth", &self.auth.is_some())
            .finish()
    }
}

impl PeerSecurity {
    /// Plaintext links, no login: what a node without security settings runs.
    pub fn open() -> PeerSecurity {
        PeerSecurity {
            tls: None,
            tls_connect: false,
            accept_plain: true,
            auth: None,
        }
    }

    /// True when no link that has not authenticated is accepted (see the module doc).
    pub fn closed(&self) -> bool {
        !self.accept_plain || self.auth.as_ref().is_some_and(|a| a.require_on_accept())
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.tls_connect && self.tls.is_none() {
            return Err("connecting with TLS needs TLS material".into());
        }
        if !self.accept_plain && self.tls.is_none() {
            return Err("refusing plaintext links needs TLS material to accept TLS ones".into());
        }
        Ok(())
    }
}

/// The magic that opens every login frame (a hello opens with "PDKN").
pub(crate) const AUTH_MAGIC: [u8; 4] = *b"PDKA";
/// Connector → acceptor: the mechanism's name.
const AUTH_START: u8 = 1;
/// Acceptor → connector: the challenge.
const AUTH_CHALLENGE: u8 = 2;
/// Connector → acceptor: the response.
const AUTH_RESPONSE: u8 = 3;
/// Acceptor → connector: refused (a reason for the connector's log, never a secret).
const AUTH_REFUSED: u8 = 4;
/// Acceptor → connector: this node runs no login; the connector may go on to the hello.
const AUTH_NOT_RUN: u8 = 5;
/// Acceptor → connector: logged in, with the acceptor's final token.
const AUTH_DONE: u8 = 6;

fn auth_frame(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(5 + body.len());
    f.extend_from_slice(&AUTH_MAGIC);
    f.push(tag);
    f.extend_from_slice(body);
    f
}

/// True if a first frame is a login frame rather than a hello.
pub(crate) fn is_auth_frame(frame: &[u8]) -> bool {
    frame.len() >= 5 && frame[..4] == AUTH_MAGIC
}

fn parse(frame: &[u8]) -> std::io::Result<(u8, &[u8])> {
    if !is_auth_frame(frame) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "expected a login frame",
        ));
    }
    Ok((frame[4], &frame[5..]))
}

fn refused(msg: String) -> std::io::Error {
    handshake::refused(msg)
}

async fn send(writer: &mut FrameWriter, tag: u8, body: &[u8]) -> std::io::Result<()> {
    writer.feed(&[&auth_frame(tag, body)]).await?;
    writer.flush().await
}

/// What a connector's login came to.
pub(crate) enum Login {
    /// Logged in: the acceptor proved it knew the secret too.
    Done,
    /// The acceptor runs no login, and this node does not insist.
    Skipped,
}

/// The connector's side: logs in to the acceptor with `client`. `must` (learnerRequireSasl) makes
/// an acceptor that runs no login a refusal.
pub(crate) async fn login(
    reader: &mut FrameReader,
    writer: &mut FrameWriter,
    mut client: Box<dyn AuthClient>,
    must: bool,
) -> std::io::Result<Login> {
    send(writer, AUTH_START, client.mechanism().as_bytes()).await?;
    let reply = handshake::read(reader).await?;
    let (tag, body) = parse(&reply)?;
    let challenge = match tag {
        AUTH_CHALLENGE => body,
        AUTH_NOT_RUN if !must => return Ok(Login::Skipped),
        AUTH_NOT_RUN => {
            return Err(refused(
                "the peer runs no quorum login, and this member requires one \
                 (quorum.auth.learnerRequireSasl=true)"
                    .into(),
            ))
        }
        AUTH_REFUSED => {
            return Err(refused(format!(
                "the peer refused the login: {}",
                String::from_utf8_lossy(body)
            )))
        }
        other => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("unexpected login frame {other}"),
            ))
        }
    };
    let mut challenge = challenge.to_vec();
    for _ in 0..MAX_ROUNDS {
        let blocks = client.blocks();
        let (c, response) = step(blocks, client, move |c| c.respond(&challenge)).await?;
        client = c;
        send(writer, AUTH_RESPONSE, &response.map_err(refused)?).await?;
        let verdict = handshake::read(reader).await?;
        let (tag, body) = parse(&verdict)?;
        match tag {
            AUTH_CHALLENGE => challenge = body.to_vec(),
            AUTH_DONE => {
                let token = body.to_vec();
                let (_, verified) = step(blocks, client, move |c| c.verify(&token)).await?;
                verified.map_err(|e| {
                    refused(format!(
                        "the peer accepted our login but could not prove it knows the secret: {e}"
                    ))
                })?;
                return Ok(Login::Done);
            }
            AUTH_REFUSED => {
                return Err(refused(format!(
                    "the peer refused the login: {}",
                    String::from_utf8_lossy(body)
                )))
            }
            other => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("unexpected login frame {other}"),
                ))
            }
        }
    }
    Err(refused(format!(
        "the login took more than {MAX_ROUNDS} rounds"
    )))
}

/// The acceptor's side, after reading the connector's first frame `start` (a login frame).
/// `Ok(Some(identity))` when the connector logged in; `Ok(None)` when this node runs no login and
/// told the connector so (it may go on to its hello). A failed login is an error naming why, for
/// our log; the connector is told only that it was refused.
pub(crate) async fn check_login(
    reader: &mut FrameReader,
    writer: &mut FrameWriter,
    auth: Option<&Arc<dyn LinkAuth>>,
    start: &[u8],
) -> std::io::Result<Option<String>> {
    let (tag, body) = parse(start)?;
    if tag != AUTH_START {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a login must start with frame {AUTH_START}, not {tag}"),
        ));
    }
    let Some(auth) = auth.filter(|a| a.can_check()) else {
        send(writer, AUTH_NOT_RUN, b"").await?;
        return Ok(None);
    };
    let mut server = match auth.server() {
        Ok(s) => s,
        Err(why) => {
            let _ = send(writer, AUTH_REFUSED, b"the acceptor cannot run its login").await;
            return Err(refused(format!("cannot check a login: {why}")));
        }
    };
    if body != server.mechanism().as_bytes() {
        let why = format!(
            "mechanism {:?} is not {}",
            String::from_utf8_lossy(body),
            server.mechanism()
        );
        let _ = send(writer, AUTH_REFUSED, why.as_bytes()).await;
        return Err(refused(why));
    }
    let blocks = server.blocks();
    let (s, challenge) = step(blocks, server, |s| s.challenge()).await?;
    server = s;
    send(writer, AUTH_CHALLENGE, &challenge).await?;
    for _ in 0..MAX_ROUNDS {
        let frame = handshake::read(reader).await?;
        let (tag, response) = parse(&frame)?;
        if tag != AUTH_RESPONSE {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("expected a login response, got frame {tag}"),
            ));
        }
        let response = response.to_vec();
        let (s, checked) = step(blocks, server, move |s| s.check(&response)).await?;
        server = s;
        match checked {
            Ok(Checked::Continue(challenge)) => send(writer, AUTH_CHALLENGE, &challenge).await?,
            Ok(Checked::Done { token, identity }) => {
                send(writer, AUTH_DONE, &token).await?;
                return Ok(Some(identity));
            }
            Err(why) => {
                let _ = send(writer, AUTH_REFUSED, b"authentication failed").await;
                return Err(refused(format!("login failed: {why}")));
            }
        }
    }
    let _ = send(writer, AUTH_REFUSED, b"authentication failed").await;
    Err(refused(format!(
        "the login took more than {MAX_ROUNDS} rounds"
    )))
}
