//! The handshake: a ConnectRequest becomes a new session (proposed as CreateSession), a
//! reconnect to a live session, or a refusal; and where session passwords come from (ids come
//! from `sessions`).
//!
//! A member of an ensemble between leaders (its leader just died, or it is still catching up
//! with a new one), or one that has not yet applied the last zxid the client saw (a follower a
//! few entries behind the member the client came from), holds a new ConnectRequest where a
//! ZooKeeper member closes the connection at once: it answers once it serves and has applied
//! that far, or refuses when the hold runs out (a third of the session timeout, and no longer
//! than two election rounds). A client whose server just died would otherwise meet a closed
//! connection on every other member within milliseconds, all of them electing, and give up
//! (go-zookeeper fails the operations it queued with ErrNoServer once every host refused in a
//! row; the Java client sleeps up to a second between hosts). A client that gives up first
//! closes its socket and the hold is forgotten. A member that has known no leader for two
//! election rounds (cut off in a minority) refuses at once, so clients move on to the
//! majority; so does a standalone server, which has no leader to catch up with. Read-only
//! clients of a member in read-only mode are not held for a leader: they are served at once.

use std::net::SocketAddr;

use tokio::sync::oneshot;
use tokio::time::{Duration, Instant};
use tracing::{debug, info, warn};

use wire::{ConnectRequest, ConnectResponse};
use znode_tree::Txn;

use super::conns::Conn;
use super::submit::stamp;
use super::Core;
use crate::msg::{ConnId, Transport};
use crate::outbound::{Outbound, OutboundTx};
use crate::session::SessionId;

/// A ConnectRequest with the connection it came on: handled at once or held (see the top).
pub(super) struct Knock {
    pub(super) id: ConnId,
    pub(super) remote: SocketAddr,
    pub(super) req: ConnectRequest,
    pub(super) out: OutboundTx,
    pub(super) ready: oneshot::Sender<bool>,
    pub(super) transport: Transport,
}

/// A held ConnectRequest and when it is refused if this member does not serve by then.
pub(super) struct Held {
    until: Instant,
    knock: Knock,
}

impl Core {
    pub(super) fn connect(&mut self, knock: Knock) {
        self.meters.stats.packets_received += 1;
        self.admit(knock);
    }

    /// Handles a ConnectRequest, first come or released from the hold.
    fn admit(&mut self, knock: Knock) {
        let between = !self.serving() && !self.serves_read_only(&knock.req);
        let behind = knock.req.last_zxid_seen > self.tree.last_zxid();
        if between || behind {
            if let Some(until) = self.hold_until(knock.req.timeout) {
                debug!(
                    peer = %knock.remote,
                    ms = until.saturating_duration_since(Instant::now()).as_millis() as u64,
                    client_zxid = format_args!("{:#x}", knock.req.last_zxid_seen),
                    why = if between { "between leaders" } else { "behind the client" },
                    "holding a new connection"
                );
                if let Some(ens) = self.ensemble.as_mut() {
                    ens.held.push(Held { until, knock });
                }
                return;
            }
        }
        let Knock {
            id,
            remote,
            req,
            out,
            ready,
            transport,
        } = knock;
        let sent_read_only = req.read_only.is_some();
        // A member cut off from its quorum serves clients that accept a read-only server
        // (canBeReadOnly), when readonlymode.enabled is on, as ZooKeeper's ReadOnlyZooKeeperServer.
        let read_only = self.serves_read_only(&req);
        // Otherwise a member without a leader, or not yet caught up with it, does not serve (see
        // `ensemble`): the client tries another.
        if !self.serving() && !read_only {
            debug!(peer = %remote, "not serving (no leader known); closing a new connection");
            let _ = ready.send(false);
            let _ = out.try_send(Outbound::Close);
            return;
        }
        // A client that has seen a newer state than ours must try another server.
        if req.last_zxid_seen > self.tree.last_zxid() {
            warn!(
                peer = %remote,
                client_zxid = format_args!("{:#x}", req.last_zxid_seen),
                our_zxid = format_args!("{:#x}", self.tree.last_zxid()),
                "refusing a client that has seen a later zxid than this server"
            );
            let _ = ready.send(false);
            let _ = out.try_send(Outbound::Close);
            return;
        }
        let timeout_ms = self.cfg.negotiate_timeout(req.timeout);
        let conn = Conn::new(
            id,
            remote,
            out,
            timeout_ms,
            sent_read_only,
            read_only,
            ready,
            transport,
            self.cfg.client_tls.x509_super_user.as_deref(),
        );
        let _in_conn = conn.span.clone().entered();
        self.conns.insert(id, conn);

        if read_only {
            self.read_only_connect(id, SessionId(req.session_id), req.passwd);
            return;
        }

        if req.session_id == 0 {
            let session_id = self.sessions.allocate(&self.tree);
            let mut password = [0u8; 16];
            rand::Rng::fill(&mut rand::thread_rng(), &mut password[..]);
            self.conns.get_mut(&id).unwrap().set_session(session_id);
            self.sessions.connecting(session_id, id);
            let entry = stamp(
                session_id,
                0,
                self.wall.now_ms(),
                Vec::new(),
                Txn::CreateSession {
                    timeout_ms,
                    password,
                },
            );
            if self.submit(&entry).is_err() {
                self.sessions.not_connecting(session_id);
                self.refuse_connection(id);
            }
            return;
        }
        self.reconnect(id, SessionId(req.session_id), req.passwd, true);
    }

    /// Reconnect: the password must match a live session that is not closing. A follower first
    /// asks the leader for its commit index (`revalidate`, a ReadIndex, asked again until a live
    /// leader answers) and comes back here with `may_revalidate` false, as a ZooKeeper follower
    /// revalidates every reconnect with its leader: the session may have been created elsewhere a
    /// moment ago, and, for a session it knows, the answer proves a leader still leads. Without
    /// that, a client whose member had just died reconnected to a follower that had not yet
    /// noticed, got its session back, and lost it a moment later when the follower learned it had
    /// no leader and dropped its clients (go-zookeeper's TestIntegration_ClientClusterFailover,
    /// BUGS.md P6).
    pub(super) fn reconnect(
        &mut self,
        id: ConnId,
        session_id: SessionId,
        passwd: Option<Vec<u8>>,
        may_revalidate: bool,
    ) {
        let Some(conn) = self.conns.get(&id).filter(|c| !c.closed) else {
            return;
        };
        let (remote, timeout_ms, sent_read_only) =
            (conn.remote, conn.timeout_ms, conn.sent_read_only);
        let known = self.tree.session(session_id.0).map(|s| s.password);
        if may_revalidate && self.revalidate(id, session_id, passwd.clone()) {
            return;
        }
        let valid = match known {
            Some(password) => {
                passwd.as_deref() == Some(&password[..]) && !self.sessions.is_closing(session_id)
            }
            None => false,
        };
        if !valid {
            debug!(peer = %remote, session = %session_id, "session expired or password wrong");
            self.refuse_expired(id, sent_read_only);
            return;
        }
        // Only one connection holds a session: the older one goes.
        if let Some(old) = self.sessions.hold(session_id, id) {
            self.close_conn(old);
        }
        let password = self
            .tree
            .session(session_id.0)
            .map(|s| s.password)
            .unwrap_or_default();
        self.touch_session(session_id, timeout_ms, Instant::now());
        let conn = self.conns.get_mut(&id).unwrap();
        conn.set_session(session_id);
        if self.ensemble.is_some() && self.cfg.session_owners {
            // The session's owner becomes this member through the log (ZooKeeper's setOwner at
            // a revalidation through the leader): a write through its old member that applies
            // after the attach is refused with SessionMoved on every member. The client is
            // answered once the attach applies (`attached`).
            let entry = stamp(
                session_id,
                0,
                self.wall.now_ms(),
                Vec::new(),
                Txn::Attach {
                    member: self.cfg.my_id.unwrap_or(0),
                },
            );
            if self.submit(&entry).is_err() {
                self.refuse_connection(id);
                return;
            }
            self.sessions.attaching(session_id, id);
            debug!(peer = %remote, session = %session_id, "session attaching to this member");
            return;
        }
        info!(peer = %remote, session = %session_id, timeout_ms, "session reconnected");
        self.finish_handshake(id, password);
    }

    /// A reconnect's `Txn::Attach` to this member applied: the client is answered, or, if the
    /// session closed meanwhile (`ok` false), told its session expired.
    pub(super) fn attached(&mut self, session_id: SessionId, ok: bool) {
        let Some(id) = self.sessions.attached(session_id) else {
            return;
        };
        let Some(conn) = self.conns.get(&id).filter(|c| !c.closed) else {
            return;
        };
        let _in_conn = conn.span.clone().entered();
        let password = self.tree.session(session_id.0).map(|s| s.password);
        match password {
            Some(password) if ok => {
                info!(peer = %conn.remote, session = %session_id, timeout_ms = conn.timeout_ms, "session reconnected");
                self.finish_handshake(id, password);
            }
            _ => {
                debug!(session = %session_id, "session closed before its attach applied");
                let sent_read_only = conn.sent_read_only;
                self.refuse_expired(id, sent_read_only);
            }
        }
    }

    pub(super) fn finish_handshake(&mut self, id: ConnId, password: [u8; 16]) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        let resp = ConnectResponse {
            protocol_version: 0,
            timeout: conn.timeout_ms,
            session_id: conn.session_id.0,
            passwd: Some(password.to_vec()),
            read_only: conn.sent_read_only.then_some(conn.read_only),
        };
        if let Some(ready) = conn.ready.take() {
            let _ = ready.send(true);
        }
        self.send(id, Outbound::Connect(resp));
    }

    /// A read-only session: a new one gets a session id and password of this member's own, known
    /// to no log (ZooKeeper's read-only server also makes local sessions); an existing session
    /// this member knows reconnects read-only. Nothing is proposed: there is no leader.
    fn read_only_connect(&mut self, id: ConnId, session_id: SessionId, passwd: Option<Vec<u8>>) {
        let password = if session_id == SessionId::NONE {
            let session_id = self.sessions.allocate(&self.tree);
            let mut password = [0u8; 16];
            rand::Rng::fill(&mut rand::thread_rng(), &mut password[..]);
            self.conns.get_mut(&id).unwrap().set_session(session_id);
            password
        } else {
            match self.tree.session(session_id.0) {
                Some(s) if passwd.as_deref() == Some(&s.password[..]) => {
                    self.conns.get_mut(&id).unwrap().set_session(session_id);
                    s.password
                }
                _ => {
                    self.refuse_connection(id);
                    return;
                }
            }
        };
        let session_id = self.conns[&id].session_id;
        if let Some(old) = self.sessions.hold(session_id, id) {
            self.close_conn(old);
        }
        info!(session = %session_id, "read-only session (no quorum)");
        self.finish_handshake(id, password);
    }

    /// ZooKeeper's answer to a reconnect whose session is gone (expired, closed, or a wrong
    /// password): a ConnectResponse with session 0 and timeout 0, then the connection closes.
    fn refuse_expired(&mut self, id: ConnId, sent_read_only: bool) {
        self.send(
            id,
            Outbound::Connect(ConnectResponse {
                protocol_version: 0,
                timeout: 0,
                session_id: 0,
                passwd: Some(vec![0; 16]),
                read_only: sent_read_only.then_some(false),
            }),
        );
        self.refuse_connection(id);
    }

    /// Whether this member, cut off from its quorum, serves this client read-only.
    fn serves_read_only(&self, req: &ConnectRequest) -> bool {
        !self.leader_known() && self.cfg.read_only_mode && req.read_only == Some(true)
    }

    /// Until when a ConnectRequest that finds this member not serving may wait for it to serve
    /// again; `None`: refuse it now (see the top). Two election rounds bound both the hold and,
    /// for a member without a leader, how long after losing it this member still holds.
    fn hold_until(&self, requested_timeout: i32) -> Option<Instant> {
        let ens = self.ensemble.as_ref()?;
        if self.membership.removed && !self.membership.retained {
            return None;
        }
        let now = Instant::now();
        if self.role.leader_id == 0 && now.duration_since(ens.leaderless_since) >= self.rounds() {
            return None;
        }
        Some(now + self.hold_span(self.cfg.negotiate_timeout(requested_timeout)))
    }

    /// Two election rounds: the longest hold, and how long a member without a leader holds.
    fn rounds(&self) -> Duration {
        let (tick, _, _) = self.cfg.raft_timing();
        tick * self.cfg.raft_max_election_ticks() * 2
    }

    /// How long a handshake with this (negotiated) session timeout may wait for a leader: a
    /// third of the timeout, at most two election rounds.
    pub(super) fn hold_span(&self, timeout_ms: i32) -> Duration {
        let third = Duration::from_millis(timeout_ms.max(0) as u64 / 3);
        third.min(self.rounds())
    }

    /// Once this member serves, the held ConnectRequests whose client's last zxid it has applied
    /// are handled, in arrival order.
    /// Called after every consensus event (a leader known, an entry of its term applied).
    pub(super) fn release_held(&mut self) {
        if !self.serving() {
            return;
        }
        let last_zxid = self.tree.last_zxid();
        let Some(ens) = self.ensemble.as_mut().filter(|e| !e.held.is_empty()) else {
            return;
        };
        let ready: Vec<Held> = ens
            .held
            .extract_if(.., |h| h.knock.req.last_zxid_seen <= last_zxid)
            .collect();
        if ready.is_empty() {
            return;
        }
        debug!(
            connections = ready.len(),
            "serving and caught up; handling the held connections"
        );
        for h in ready {
            self.admit(h.knock);
        }
    }

    /// When the first held ConnectRequest runs out (the core's loop sleeps until then).
    pub(super) fn next_hold_deadline(&self) -> Option<Instant> {
        let ens = self.ensemble.as_ref()?;
        ens.held.iter().map(|h| h.until).min()
    }

    /// Refuses the held ConnectRequests whose time ran out: the client tries another server.
    pub(super) fn refuse_overdue(&mut self, now: Instant) {
        let Some(ens) = self.ensemble.as_mut() else {
            return;
        };
        for h in ens.held.extract_if(.., |h| h.until <= now) {
            debug!(peer = %h.knock.remote, "still not serving; closing a held connection");
            let _ = h.knock.ready.send(false);
            let _ = h.knock.out.try_send(Outbound::Close);
        }
    }

    /// A held ConnectRequest whose client left is forgotten.
    pub(super) fn forget_held(&mut self, id: ConnId) {
        if let Some(ens) = self.ensemble.as_mut() {
            ens.held.retain(|h| h.knock.id != id);
        }
    }

    pub(super) fn refuse_connection(&mut self, id: ConnId) {
        if let Some(conn) = self.conns.get_mut(&id) {
            if let Some(ready) = conn.ready.take() {
                let _ = ready.send(false);
            }
        }
        self.close_conn(id);
    }
}
