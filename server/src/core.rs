//! The core: one task that owns the znode tree, the watch registry, the sessions and every
//! connection's pending-request queue.
//!
//! ```text
//!  connection tasks ──CoreMsg::Request──▶ ┌──────────── core task ─────────────┐
//!                                         │ read?  answer from the tree now    │
//!                                         │ write? Entry ─propose─▶ raft thread│
//!  raft thread ──Event::Committed──────▶  │ apply entry ─▶ changes ─▶ events   │──▶ per-connection
//!                                         │ then the writer's reply            │    outbound queues
//!                                         └────────────────────────────────────┘
//! ```
//!
//! Ordering rules that hold by construction, because this one task does everything in order:
//! - replies on a connection leave in request order: each connection has a FIFO of pending
//!   requests and a read waits behind an earlier write of the same connection until that
//!   write is applied (per-session FIFO);
//! - the events an entry fires are queued on every watcher's outbound queue before the
//!   entry's own reply, and before any reply to a later request on any connection;
//! - an entry is applied only after the raft thread has made it durable, so a reply is never
//!   sent for a write that a crash could lose.
//!
//! The core reads clocks and randomness (entry timestamps, session ids and passwords); the
//! tree it drives does not, so every replica computes the same state from the same log.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::{mpsc, oneshot};
use tokio::time::{Duration, Instant};
use tracing::{debug, info, warn};

use consensus::{CommittedEntry, Event};
use wire::ops::auth::SetSaslResponse;
use wire::ops::who_am_i::WhoAmIResponse;
use wire::{
    ConnectRequest, ConnectResponse, ErrorCode, FourLetterWord, Id, OpCode, ReplyHeader, Request,
    RequestHeader, Response,
};
use znode_tree::{acl, Entry, ReadCtx, Tree, Txn, WatchRegistry};

use crate::config::Config;
use crate::outbound::{Outbound, OutboundTx, Refused};
use crate::sasl::{DigestMd5Server, Step};
use crate::session::{checkpoint, SessionTracker};
use crate::stats::{ConnStats, ResponseSizes, ServerStats};
use crate::throttle::Slot;

pub type ConnId = u64;

/// How often the sessions' remaining time is saved for a restart (see `session::checkpoint`).
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// Messages into the core.
#[derive(Debug)]
pub enum CoreMsg {
    /// A new connection finished reading its ConnectRequest.
    Connect {
        conn: ConnId,
        remote: SocketAddr,
        req: ConnectRequest,
        out: OutboundTx,
        /// Answered `true` once the session is set up; `false` means close after flushing.
        ready: oneshot::Sender<bool>,
    },
    /// A request frame after the handshake. A body that did not decode is carried as the error.
    Request {
        conn: ConnId,
        header: RequestHeader,
        req: Result<Request, wire::DecodeError>,
        received: Instant,
        /// Counts the request against `globalOutstandingLimit` until it is answered or dropped.
        slot: Slot,
    },
    /// The connection's socket closed.
    Closed { conn: ConnId },
    /// A four-letter word on a fresh connection.
    FourLetter {
        word: FourLetterWord,
        /// `stmk`'s argument: the 8-byte trace mask that follows the word.
        mask: Option<i64>,
        remote: SocketAddr,
        reply: oneshot::Sender<String>,
    },
    /// From the raft thread.
    Consensus(Event),
    /// Answered once the applied index reaches `index` (start-up replay).
    WaitApplied {
        index: u64,
        reply: oneshot::Sender<()>,
    },
    /// Stop: flush nothing more, reply nothing more.
    Shutdown,
}

/// A request waiting in a connection's FIFO.
#[derive(Debug)]
enum Pending {
    /// A write proposed to the log; answered when its entry is applied.
    Write { xid: i32, received: Instant },
    /// A read (or an op answered like one) that waits behind earlier writes.
    Read {
        header: RequestHeader,
        req: Request,
        received: Instant,
    },
    /// A request answered with an error in its turn (a body that did not decode).
    Error {
        xid: i32,
        code: ErrorCode,
        received: Instant,
    },
    /// sync: answered once the local applied index reaches the ReadIndex.
    Sync {
        xid: i32,
        path: String,
        ctx: u64,
        index: Option<u64>,
        received: Instant,
    },
}

/// A pending request and its throttle slot, freed when it leaves the queue.
#[derive(Debug)]
struct Queued {
    pending: Pending,
    _slot: Slot,
}

#[derive(Debug)]
struct Conn {
    remote: SocketAddr,
    out: OutboundTx,
    session_id: i64,
    timeout_ms: i32,
    auth: Vec<Id>,
    /// The connection's SASL exchange, from its first token on (`ServerCnxn.zooKeeperSaslServer`).
    sasl: Option<DigestMd5Server>,
    queue: VecDeque<Queued>,
    /// Whether the client sent the optional readOnly byte: the server mirrors it.
    sent_read_only: bool,
    ready: Option<oneshot::Sender<bool>>,
    stats: ConnStats,
    closed: bool,
}

pub struct Core {
    cfg: Arc<Config>,
    tree: Tree,
    watches: WatchRegistry,
    raft: consensus::Handle,
    conns: HashMap<ConnId, Conn>,
    by_session: HashMap<i64, ConnId>,
    /// New sessions whose CreateSession entry is in flight, by session id.
    connecting: HashMap<i64, ConnId>,
    tracker: SessionTracker,
    next_session_id: i64,
    next_read_ctx: u64,
    applied_index: u64,
    applied_term: u64,
    last_snapshot_index: u64,
    is_leader: bool,
    /// Remaining session time read from the checkpoint, for sessions not yet replayed.
    resume_left: HashMap<i64, Duration>,
    /// Whether this process has followed another leader (see the RoleChanged handling).
    followed_another: bool,
    stats: ServerStats,
    /// Filled in by the connection writers, which see the encoded replies.
    response_sizes: Arc<ResponseSizes>,
    /// Set by `stmk`, read by `gtmk`. paddock logs through `tracing` filters, not ZooKeeper's
    /// trace mask, so the mask is only kept and reported, as a tool that sets it expects.
    trace_mask: i64,
    started: Instant,
    applied_waiters: Vec<(u64, oneshot::Sender<()>)>,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// ZooKeeper's first session id: the server id in the top byte, then milliseconds since
/// the epoch shifted into the middle (`SessionTrackerImpl.initializeNextSessionId`), so ids
/// stay unique across restarts without persisting a counter.
fn initial_session_id(server_id: u64, now_ms: i64) -> i64 {
    let time_part = ((now_ms as u64) << 24) >> 8;
    ((server_id << 56) | time_part) as i64
}

impl Core {
    pub fn new(
        cfg: Arc<Config>,
        tree: Tree,
        raft: consensus::Handle,
        applied_index: u64,
        applied_term: u64,
    ) -> Core {
        let tick = Duration::from_millis(cfg.tick_time_ms as u64);
        let mut tracker = SessionTracker::new(tick);
        let now = Instant::now();
        // Recovered sessions resume with the time they had left at the last checkpoint;
        // one missing from it (created just before a crash) gets a full timeout.
        // Sessions created in the log after the snapshot get theirs when replay applies them.
        let mut resume_left = checkpoint::read(&crate::node::raft_dir(&cfg));
        for s in tree.sessions() {
            let full = Duration::from_millis(s.timeout_ms.max(0) as u64);
            tracker.resume(
                s.id,
                resume_left.remove(&s.id).unwrap_or(full).min(full),
                now,
            );
        }
        let server_id = cfg.my_id.unwrap_or(1).min(254);
        Core {
            next_session_id: initial_session_id(server_id, now_ms()),
            cfg,
            tree,
            watches: WatchRegistry::new(),
            raft,
            conns: HashMap::new(),
            by_session: HashMap::new(),
            connecting: HashMap::new(),
            tracker,
            next_read_ctx: 1,
            applied_index,
            applied_term,
            last_snapshot_index: applied_index,
            is_leader: false,
            followed_another: false,
            resume_left,
            stats: ServerStats::default(),
            response_sizes: Arc::default(),
            trace_mask: crate::fourlw::DEFAULT_TRACE_MASK,
            started: now,
            applied_waiters: Vec::new(),
        }
    }

    /// Runs until `Shutdown` or until every sender is gone.
    pub async fn run(mut self, mut rx: mpsc::Receiver<CoreMsg>) {
        let tick = Duration::from_millis((self.cfg.tick_time_ms as u64 / 2).clamp(10, 500));
        let mut ticker = tokio::time::interval(tick);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let container_every = Duration::from_millis(self.cfg.container_check_interval_ms.max(100));
        let mut next_container_check = Instant::now() + container_every;
        let mut next_checkpoint = Instant::now() + CHECKPOINT_EVERY;
        loop {
            tokio::select! {
                msg = rx.recv() => match msg {
                    None | Some(CoreMsg::Shutdown) => break,
                    Some(msg) => self.handle(msg),
                },
                _ = ticker.tick() => {
                    let now = Instant::now();
                    self.expire_sessions(now);
                    if now >= next_container_check {
                        next_container_check = now + container_every;
                        self.propose_expired_nodes();
                    }
                    if now >= next_checkpoint {
                        next_checkpoint = now + CHECKPOINT_EVERY;
                        let dir = crate::node::raft_dir(&self.cfg);
                        let remaining = self.tracker.remaining(now);
                        tokio::task::spawn_blocking(move || {
                            if let Err(e) = checkpoint::write(&dir, &remaining) {
                                warn!(error = %e, "session checkpoint not written");
                            }
                        });
                    }
                }
            }
        }
        for (_, conn) in self.conns.drain() {
            let _ = conn.out.try_send(Outbound::Close);
        }
        if let Err(e) = checkpoint::write(
            &crate::node::raft_dir(&self.cfg),
            &self.tracker.remaining(Instant::now()),
        ) {
            warn!(error = %e, "session checkpoint not written at shut-down");
        }
        info!("core stopped");
    }

    fn handle(&mut self, msg: CoreMsg) {
        match msg {
            CoreMsg::Connect {
                conn,
                remote,
                req,
                out,
                ready,
            } => self.connect(conn, remote, req, out, ready),
            CoreMsg::Request {
                conn,
                header,
                req,
                received,
                slot,
            } => self.request(conn, header, req, received, slot),
            CoreMsg::Closed { conn } => self.closed(conn),
            CoreMsg::FourLetter {
                word,
                mask,
                remote,
                reply,
            } => {
                let _ = reply.send(crate::admin::four_letter(self, word, mask, remote));
            }
            CoreMsg::Consensus(ev) => {
                self.consensus_event(ev);
                self.release_applied_waiters();
            }
            CoreMsg::WaitApplied { index, reply } => {
                self.applied_waiters.push((index, reply));
                self.release_applied_waiters();
            }
            CoreMsg::Shutdown => {}
        }
    }

    // ----- handshake -----------------------------------------------------------------

    fn connect(
        &mut self,
        id: ConnId,
        remote: SocketAddr,
        req: ConnectRequest,
        out: OutboundTx,
        ready: oneshot::Sender<bool>,
    ) {
        self.stats.packets_received += 1;
        let sent_read_only = req.read_only.is_some();
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
        let conn = Conn {
            remote,
            out,
            session_id: 0,
            timeout_ms,
            auth: vec![Id::new("ip", &remote.ip().to_string())],
            sasl: None,
            queue: VecDeque::new(),
            sent_read_only,
            ready: Some(ready),
            stats: ConnStats::new(Instant::now()),
            closed: false,
        };
        self.conns.insert(id, conn);

        if req.session_id == 0 {
            let session_id = self.allocate_session_id();
            let mut password = [0u8; 16];
            rand::Rng::fill(&mut rand::thread_rng(), &mut password[..]);
            self.conns.get_mut(&id).unwrap().session_id = session_id;
            self.connecting.insert(session_id, id);
            let entry = Entry {
                session_id,
                xid: 0,
                time_ms: now_ms(),
                auth: Vec::new(),
                txn: Txn::CreateSession {
                    timeout_ms,
                    password,
                },
            };
            if !self.propose(&entry) {
                self.connecting.remove(&session_id);
                self.refuse_connection(id);
            }
            return;
        }

        // Reconnect: the password must match a live session that is not closing.
        let valid = match self.tree.session(req.session_id) {
            Some(s) => {
                req.passwd.as_deref() == Some(&s.password[..])
                    && !self.tracker.is_closing(req.session_id)
            }
            None => false,
        };
        if !valid {
            debug!(peer = %remote, session = format_args!("{:#x}", req.session_id), "session expired or password wrong");
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
            return;
        }
        // Only one connection holds a session: the older one goes.
        if let Some(old) = self.by_session.insert(req.session_id, id) {
            if old != id {
                self.close_conn(old);
            }
        }
        let password = self
            .tree
            .session(req.session_id)
            .map(|s| s.password)
            .unwrap_or_default();
        self.tracker
            .touch(req.session_id, timeout_ms, Instant::now());
        let conn = self.conns.get_mut(&id).unwrap();
        conn.session_id = req.session_id;
        info!(peer = %remote, session = format_args!("{:#x}", req.session_id), timeout_ms, "session reconnected");
        self.finish_handshake(id, password);
    }

    fn finish_handshake(&mut self, id: ConnId, password: [u8; 16]) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        let resp = ConnectResponse {
            protocol_version: 0,
            timeout: conn.timeout_ms,
            session_id: conn.session_id,
            passwd: Some(password.to_vec()),
            read_only: conn.sent_read_only.then_some(false),
        };
        if let Some(ready) = conn.ready.take() {
            let _ = ready.send(true);
        }
        self.send(id, Outbound::Connect(resp));
    }

    fn refuse_connection(&mut self, id: ConnId) {
        if let Some(conn) = self.conns.get_mut(&id) {
            if let Some(ready) = conn.ready.take() {
                let _ = ready.send(false);
            }
        }
        self.close_conn(id);
    }

    fn allocate_session_id(&mut self) -> i64 {
        loop {
            let id = self.next_session_id;
            self.next_session_id = self.next_session_id.wrapping_add(1);
            // i64::MIN marks containers' owner; 0 means "no session".
            if id != 0
                && id != i64::MIN
                && self.tree.session(id).is_none()
                && !self.connecting.contains_key(&id)
            {
                return id;
            }
        }
    }

    // ----- requests ------------------------------------------------------------------

    fn request(
        &mut self,
        id: ConnId,
        header: RequestHeader,
        req: Result<Request, wire::DecodeError>,
        received: Instant,
        slot: Slot,
    ) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.closed {
            return;
        }
        let (session_id, timeout_ms) = (conn.session_id, conn.timeout_ms);
        self.stats.packets_received += 1;
        conn.stats.received += 1;
        // ZooKeeper drops frames of a closing session without a reply (§5.2).
        if self.tracker.is_closing(session_id) {
            return;
        }
        if !self.authenticated_as_required(id, header.op_type) {
            // AuthenticationHelper.enforceAuthentication: -124 with zxid 0, then the
            // connection closes; the session lives on until it expires.
            warn!(
                peer = %self.conns[&id].remote,
                session = format_args!("{session_id:#x}"),
                "request before authenticating with a required scheme; closing the connection"
            );
            let code = ErrorCode::SessionClosedRequireSaslAuth.code();
            self.send_header(id, header.xid, 0, code);
            self.close_conn(id);
            return;
        }
        self.tracker.touch(session_id, timeout_ms, received);
        let conn = self.conns.get_mut(&id).expect("checked above");

        let req = match req {
            Ok(req) => req,
            Err(e) if e.reply_code() == ErrorCode::Unimplemented => {
                debug!(
                    op = header.op_type,
                    "opcode not accepted from clients: Unimplemented, then close"
                );
                self.reply_error_and_close(id, header.xid, ErrorCode::Unimplemented);
                return;
            }
            Err(e) => {
                debug!(error = %e, "undecodable request body");
                conn.queue.push_back(Queued {
                    pending: Pending::Error {
                        xid: header.xid,
                        code: ErrorCode::MarshallingError,
                        received,
                    },
                    _slot: slot,
                });
                self.drain(id);
                return;
            }
        };
        conn.stats.last_op = req.opcode();
        if header.xid > 0 {
            conn.stats.last_cxid = header.xid;
        }

        match req {
            // Auth is answered at once, outside the ordered pipeline, as ZooKeeper does.
            Request::Auth(packet) => self.auth(id, header.xid, packet),
            Request::Sasl(req) => self.sasl(id, header.xid, req.token.unwrap_or_default()),
            Request::Check(_) | Request::DeleteContainer(_) => {
                // Valid only inside multi / only from the server itself.
                self.reply_error_and_close(id, header.xid, ErrorCode::Unimplemented);
            }
            Request::Sync(sync) => {
                let ctx = self.next_read_ctx;
                self.next_read_ctx += 1;
                let conn = self.conns.get_mut(&id).unwrap();
                conn.queue.push_back(Queued {
                    pending: Pending::Sync {
                        xid: header.xid,
                        path: sync.path,
                        ctx,
                        index: None,
                        received,
                    },
                    _slot: slot,
                });
                if self.raft.read_index(ctx).is_err() {
                    self.close_conn(id);
                }
            }
            Request::CloseSession => {
                self.tracker.mark_closing(session_id);
                self.propose_write(id, header, Txn::CloseSession, received, slot);
            }
            req if req.is_write() && !matches!(req, Request::Reconfig(_)) => {
                self.propose_write(id, header, Txn::Write(req), received, slot);
            }
            req => {
                self.conns.get_mut(&id).unwrap().queue.push_back(Queued {
                    pending: Pending::Read {
                        header,
                        req,
                        received,
                    },
                    _slot: slot,
                });
                self.drain(id);
            }
        }
    }

    fn propose_write(
        &mut self,
        id: ConnId,
        header: RequestHeader,
        txn: Txn,
        received: Instant,
        slot: Slot,
    ) {
        let conn = self.conns.get_mut(&id).unwrap();
        let entry = Entry {
            session_id: conn.session_id,
            xid: header.xid,
            time_ms: now_ms(),
            auth: conn.auth.clone(),
            txn,
        };
        conn.queue.push_back(Queued {
            pending: Pending::Write {
                xid: header.xid,
                received,
            },
            _slot: slot,
        });
        if !self.propose(&entry) {
            // Not leader / stopped: the client reconnects elsewhere (or retries).
            self.close_conn(id);
        }
    }

    fn propose(&mut self, entry: &Entry) -> bool {
        match self.raft.propose(entry.encode()) {
            Ok(()) => true,
            Err(e) => {
                warn!(error = %e, "proposal refused");
                false
            }
        }
    }

    /// With `enforce.auth` on, only auth and SASL packets pass until the connection holds an id
    /// of a required scheme (ZooKeeper checks every other packet, pings included).
    fn authenticated_as_required(&self, id: ConnId, op_type: i32) -> bool {
        let Some(schemes) = &self.cfg.enforce_auth_schemes else {
            return true;
        };
        op_type == OpCode::Auth.code()
            || op_type == OpCode::Sasl.code()
            || self.conns[&id]
                .auth
                .iter()
                .any(|a| schemes.contains(&a.scheme))
    }

    fn auth(&mut self, id: ConnId, xid: i32, packet: wire::ops::auth::AuthPacket) {
        let conn = self.conns.get_mut(&id).unwrap();
        let result = if packet.scheme == "ip" {
            Ok(vec![Id::new("ip", &conn.remote.ip().to_string())])
        } else {
            acl::authenticate(
                &packet.scheme,
                packet.auth.as_deref().unwrap_or(&[]),
                self.cfg.super_digest.as_deref(),
            )
        };
        match result {
            Ok(ids) => {
                for new in ids {
                    if !conn.auth.contains(&new) {
                        conn.auth.push(new);
                    }
                }
                self.send_header(id, xid, 0, 0);
            }
            Err(code) => {
                self.stats.auth_failed += 1;
                self.send_header(id, xid, 0, code.code());
                self.close_conn(id);
            }
        }
    }

    /// `ZooKeeperServer.processSasl`: like auth, answered at once with zxid 0, outside the
    /// ordered pipeline. A failure answers AuthFailed (SessionClosedRequireSaslAuth when SASL is
    /// enforced) with an empty token and closes the connection; the session lives on until it
    /// expires, as in ZooKeeper.
    fn sasl(&mut self, id: ConnId, xid: i32, token: Vec<u8>) {
        let reply = |err: i32, token: Option<Vec<u8>>| Outbound::Reply {
            header: ReplyHeader { xid, zxid: 0, err },
            body: Some(Response::Sasl(SetSaslResponse { token })),
        };
        let cfg = Arc::clone(&self.cfg);
        let Some(sasl_cfg) = cfg.sasl.as_ref() else {
            // No JAAS Server section, so no SASL server for this connection. ZooKeeper then hits a
            // null saslServer, logs it, and answers OK with a null token (ZooKeeperServer.processSasl):
            // the connection stays, unauthenticated.
            self.send(id, reply(0, None));
            return;
        };
        let conn = self.conns.get_mut(&id).unwrap();
        let (remote, session_id) = (conn.remote, conn.session_id);
        let server = conn
            .sasl
            .get_or_insert_with(|| DigestMd5Server::new(DigestMd5Server::random_nonce()));
        match server.evaluate(&token, sasl_cfg) {
            Ok(Step::Challenge(challenge)) => self.send(id, reply(0, Some(challenge))),
            Ok(Step::Complete {
                token,
                authorization_id,
            }) => {
                info!(
                    peer = %remote,
                    session = format_args!("{session_id:#x}"),
                    authorization_id,
                    "SASL authentication succeeded"
                );
                let mut ids = vec![Id::new("sasl", &authorization_id)];
                if sasl_cfg.is_super_user(&authorization_id) {
                    ids.push(Id::new("super", ""));
                }
                for new in ids {
                    if !conn.auth.contains(&new) {
                        conn.auth.push(new);
                    }
                }
                self.send(id, reply(0, Some(token)));
            }
            Err(e) => {
                warn!(peer = %remote, session = format_args!("{session_id:#x}"), error = %e, "SASL authentication failed");
                let sasl_required = cfg
                    .enforce_auth_schemes
                    .as_ref()
                    .is_some_and(|s| s.iter().any(|s| s == "sasl"));
                if sasl_cfg.allow_failed_clients && !sasl_required {
                    // zookeeper.allowSaslFailedClients: the connection stays, unauthenticated.
                    self.send(id, reply(0, None));
                } else {
                    let code = if sasl_required {
                        ErrorCode::SessionClosedRequireSaslAuth
                    } else {
                        ErrorCode::AuthFailed
                    };
                    self.send(id, reply(code.code(), None));
                    self.close_conn(id);
                }
            }
        }
    }

    fn reply_error_and_close(&mut self, id: ConnId, xid: i32, code: ErrorCode) {
        let zxid = self.tree.last_zxid();
        self.send_header(id, xid, zxid, code.code());
        self.close_conn(id);
    }

    /// Answers queued reads (and ready syncs) at the head of a connection's FIFO, stopping at
    /// the first write that is not yet applied.
    fn drain(&mut self, id: ConnId) {
        loop {
            let Some(conn) = self.conns.get_mut(&id) else {
                return;
            };
            let ready = match conn.queue.front().map(|q| &q.pending) {
                None | Some(Pending::Write { .. }) => false,
                Some(Pending::Sync { index, .. }) => index.is_some_and(|i| i <= self.applied_index),
                Some(Pending::Read { .. } | Pending::Error { .. }) => true,
            };
            if !ready {
                return;
            }
            match conn.queue.pop_front().unwrap().pending {
                Pending::Read {
                    header,
                    req,
                    received,
                } => self.answer_read(id, header, req, received),
                Pending::Error {
                    xid,
                    code,
                    received,
                } => {
                    let zxid = self.tree.last_zxid();
                    self.record_latency(id, received);
                    self.send_header(id, xid, zxid, code.code());
                }
                Pending::Sync {
                    xid,
                    path,
                    received,
                    ..
                } => {
                    let zxid = self.tree.last_zxid();
                    self.record_latency(id, received);
                    self.send(
                        id,
                        Outbound::Reply {
                            header: ReplyHeader { xid, zxid, err: 0 },
                            body: Some(Response::Sync(wire::ops::sync::SyncResponse { path })),
                        },
                    );
                }
                Pending::Write { .. } => unreachable!("checked above"),
            }
        }
    }

    fn answer_read(&mut self, id: ConnId, header: RequestHeader, req: Request, received: Instant) {
        let zxid = self.tree.last_zxid();
        let conn = self.conns.get(&id).unwrap();
        let session_id = conn.session_id;
        let result: Result<Response, ErrorCode> = {
            match &req {
                Request::Ping => {
                    self.send_header(id, wire::xid::PING, zxid, 0);
                    return;
                }
                Request::WhoAmI => Ok(Response::WhoAmI(WhoAmIResponse {
                    client_info: acl::who_am_i(&conn.auth),
                })),
                Request::SetWatches(sw) => {
                    let sw2 = wire::ops::watches::SetWatches2 {
                        relative_zxid: sw.relative_zxid,
                        data_watches: sw.data_watches.clone(),
                        exist_watches: sw.exist_watches.clone(),
                        child_watches: sw.child_watches.clone(),
                        persistent_watches: Vec::new(),
                        persistent_recursive_watches: Vec::new(),
                    };
                    self.set_watches(id, &sw2);
                    Ok(Response::Empty)
                }
                Request::SetWatches2(sw2) => {
                    let sw2 = sw2.clone();
                    self.set_watches(id, &sw2);
                    Ok(Response::Empty)
                }
                Request::CheckWatches(w) => self
                    .watches
                    .check(id, &w.path, w.watcher_type)
                    .map(|_| Response::Empty),
                Request::RemoveWatches(w) => self
                    .watches
                    .remove(id, &w.path, w.watcher_type)
                    .map(|_| Response::Empty),
                Request::Reconfig(_) => Err(if self.cfg.reconfig_enabled {
                    ErrorCode::Unimplemented
                } else {
                    ErrorCode::ReconfigDisabled
                }),
                _ => {
                    let auth = conn.auth.clone();
                    let ctx = ReadCtx {
                        session_id,
                        auth: &auth,
                    };
                    znode_tree::read_with_watch(&self.tree, &mut self.watches, &ctx, id, &req)
                }
            }
        };
        self.record_latency(id, received);
        let (err, body) = match result {
            Ok(body) => (0, Some(body)),
            Err(code) => (code.code(), None),
        };
        let body = body.filter(|b| !matches!(b, Response::Empty));
        self.send(
            id,
            Outbound::Reply {
                header: ReplyHeader {
                    xid: header.xid,
                    zxid,
                    err,
                },
                body,
            },
        );
    }

    fn set_watches(&mut self, id: ConnId, sw2: &wire::ops::watches::SetWatches2) {
        let events = self.watches.set_watches(&self.tree, id, sw2);
        for event in events {
            self.send(id, Outbound::Event { zxid: -1, event });
        }
    }

    // ----- applying the log ----------------------------------------------------------

    fn consensus_event(&mut self, ev: Event) {
        match ev {
            Event::Committed(entries) => {
                for ce in entries {
                    self.apply(ce);
                }
                self.maybe_snapshot();
            }
            Event::RoleChanged {
                is_leader,
                leader_id,
                term,
            } => {
                info!(is_leader, leader_id, term, "raft role changed");
                if !is_leader && leader_id != 0 {
                    self.followed_another = true;
                }
                if is_leader && !self.is_leader && self.followed_another {
                    // A leader that took over from another server never saw the sessions'
                    // activity, so it restarts every timer (ZooKeeper does the same). A server
                    // that leads from its own start resumes the checkpointed clocks instead.
                    let now = Instant::now();
                    let sessions: Vec<(i64, i32)> =
                        self.tree.sessions().map(|s| (s.id, s.timeout_ms)).collect();
                    for (id, timeout) in sessions {
                        self.tracker.touch(id, timeout, now);
                    }
                }
                self.is_leader = is_leader;
            }
            Event::ReadIndexReady { ctx, index } => {
                let mut waiting = None;
                for (id, conn) in self.conns.iter_mut() {
                    for q in conn.queue.iter_mut() {
                        if let Pending::Sync {
                            ctx: c, index: i, ..
                        } = &mut q.pending
                        {
                            if *c == ctx {
                                *i = Some(index);
                                waiting = Some(*id);
                            }
                        }
                    }
                }
                if let Some(id) = waiting {
                    self.drain(id);
                }
            }
            Event::InstallSnapshot(snap) => {
                match Tree::restore(&snap.data, crate::node::tree_config(&self.cfg)) {
                    Ok(tree) => {
                        info!(index = snap.index, "installed a snapshot from the leader");
                        self.tree = tree;
                        self.applied_index = snap.index;
                        self.applied_term = snap.term;
                        self.last_snapshot_index = snap.index;
                    }
                    Err(e) => panic!(
                        "snapshot at index {} from the leader does not restore: {e}",
                        snap.index
                    ),
                }
            }
            // Minimal arms: membership and on-demand snapshots matter only in an ensemble.
            Event::MembershipChanged {
                index,
                voters,
                learners,
                ..
            } => info!(index, ?voters, ?learners, "raft membership changed"),
            Event::SnapshotWanted { peer } => {
                info!(peer, "the leader wants a fresh snapshot for a peer")
            }
        }
    }

    fn release_applied_waiters(&mut self) {
        let applied = self.applied_index;
        let (done, waiting): (Vec<_>, Vec<_>) = self
            .applied_waiters
            .drain(..)
            .partition(|(i, _)| *i <= applied);
        self.applied_waiters = waiting;
        for (_, reply) in done {
            let _ = reply.send(());
        }
    }

    fn apply(&mut self, ce: CommittedEntry) {
        if ce.index <= self.applied_index && self.applied_index != 0 {
            // Already in the state (replayed below a restored snapshot).
            return;
        }
        self.applied_index = ce.index;
        self.applied_term = ce.term;
        if ce.data.is_empty() {
            return; // the leader's no-op entry
        }
        let entry = match Entry::decode(&ce.data) {
            Ok(e) => e,
            // Every replica decodes the same bytes: one that cannot must stop, not diverge.
            Err(e) => panic!("log entry {} does not decode: {e}", ce.index),
        };
        let zxid = ce.index as i64;
        let applied = self.tree.apply(zxid, &entry);

        let conns = &self.conns;
        let tree_cfg = self.tree.config();
        // ZooKeeper 3.9 delivers an event only to watchers that may READ the node.
        let events = self.watches.trigger(&applied.changes, zxid, |w, node_acl| {
            conns
                .get(&w)
                .is_some_and(|c| acl::allowed(tree_cfg, node_acl, wire::perms::READ, &c.auth))
        });
        for (w, event) in events {
            self.send(w, Outbound::Event { zxid, event });
        }

        match &entry.txn {
            Txn::CreateSession {
                timeout_ms,
                password,
            } => {
                let full = Duration::from_millis((*timeout_ms).max(0) as u64);
                match self.resume_left.remove(&entry.session_id) {
                    // Replayed at start-up: the clock goes on from the checkpoint.
                    Some(left) => {
                        self.tracker
                            .resume(entry.session_id, left.min(full), Instant::now())
                    }
                    None => self
                        .tracker
                        .touch(entry.session_id, *timeout_ms, Instant::now()),
                }
                if let Some(id) = self.connecting.remove(&entry.session_id) {
                    self.by_session.insert(entry.session_id, id);
                    info!(
                        session = format_args!("{:#x}", entry.session_id),
                        timeout_ms, "session established"
                    );
                    self.finish_handshake(id, *password);
                }
            }
            Txn::CloseSession => {
                self.tracker.forget(entry.session_id);
                if let Some(id) = self.by_session.remove(&entry.session_id) {
                    if self.pop_write(id, entry.xid).is_some() {
                        self.send_header(id, entry.xid, zxid, 0);
                    }
                    self.close_conn(id);
                }
                // The expiry timer proposes with xid 0; a client's closeSession has its own
                // xid, even when its connection is gone by the time the entry applies (and at
                // a replay after a restart).
                let session = format_args!("{:#x}", entry.session_id);
                if entry.xid == 0 {
                    info!(session, "session expired");
                } else {
                    info!(session, "session closed");
                }
            }
            Txn::Write(_) => {
                if let Some(&id) = self.by_session.get(&entry.session_id) {
                    if let Some(received) = self.pop_write(id, entry.xid) {
                        self.record_latency(id, received);
                        let (err, body) = match applied.reply {
                            Ok(Response::Empty) => (0, None),
                            Ok(body) => (0, Some(body)),
                            Err(code) => (code.code(), None),
                        };
                        self.send(
                            id,
                            Outbound::Reply {
                                header: ReplyHeader {
                                    xid: entry.xid,
                                    zxid,
                                    err,
                                },
                                body,
                            },
                        );
                        self.drain(id);
                    }
                }
            }
            Txn::DeleteExpired { path } => {
                if let Err(code) = applied.reply {
                    debug!(path, ?code, "expired node was not deleted");
                }
            }
        }
    }

    /// Removes the head write of a connection if it is the one with `xid`.
    fn pop_write(&mut self, id: ConnId, xid: i32) -> Option<Instant> {
        let conn = self.conns.get_mut(&id)?;
        match conn.queue.front().map(|q| &q.pending) {
            Some(Pending::Write { xid: x, .. }) if *x == xid => match conn.queue.pop_front() {
                Some(Queued {
                    pending: Pending::Write { received, .. },
                    ..
                }) => Some(received),
                _ => None,
            },
            _ => None,
        }
    }

    fn maybe_snapshot(&mut self) {
        let every = self.cfg.snapshot_every_entries.max(1);
        if self.applied_index >= self.last_snapshot_index + every {
            // Only the view is taken here, on the core task, where clients wait for it: it copies
            // the node map's pointers (about 0.1 s at 500k znodes). Encoding, the longer part,
            // runs on a blocking thread while writes go on; they copy a node only if the view
            // still holds it.
            let started = std::time::Instant::now();
            let view = self.tree.snapshot_view();
            let view_ms = started.elapsed().as_millis() as u64;
            let (index, term) = (self.applied_index, self.applied_term);
            let raft = self.raft.clone();
            tokio::task::spawn_blocking(move || {
                let started = std::time::Instant::now();
                let data = view.encode();
                drop(view);
                let ms = started.elapsed().as_millis() as u64;
                info!(index, bytes = data.len(), view_ms, ms, "snapshot taken");
                if let Err(e) = raft.save_snapshot(index, term, data) {
                    warn!(error = %e, "snapshot not saved");
                }
            });
            self.last_snapshot_index = index;
        }
    }

    // ----- timers --------------------------------------------------------------------

    fn expire_sessions(&mut self, now: Instant) {
        if !self.is_leader {
            return;
        }
        for session_id in self.tracker.take_expired(now) {
            if self.tree.session(session_id).is_none() {
                self.tracker.forget(session_id);
                continue;
            }
            info!(
                session = format_args!("{:#x}", session_id),
                "session timed out; proposing its close"
            );
            let entry = Entry {
                session_id,
                xid: 0,
                time_ms: now_ms(),
                auth: Vec::new(),
                txn: Txn::CloseSession,
            };
            self.propose(&entry);
        }
    }

    /// The leader proposes the deletion of empty containers and TTL nodes that are due;
    /// the tree checks again at apply time, so a child created meanwhile keeps the node.
    fn propose_expired_nodes(&mut self) {
        if !self.is_leader {
            return;
        }
        let now = now_ms();
        for path in self.tree.expired_nodes(now) {
            let entry = Entry {
                session_id: 0,
                xid: 0,
                time_ms: now,
                auth: Vec::new(),
                txn: Txn::DeleteExpired { path },
            };
            self.propose(&entry);
        }
    }

    // ----- connections ---------------------------------------------------------------

    fn closed(&mut self, id: ConnId) {
        if let Some(conn) = self.conns.remove(&id) {
            self.detach(id, conn.session_id);
            if self.connecting.get(&conn.session_id) == Some(&id) {
                self.connecting.remove(&conn.session_id);
            }
            debug!(peer = %conn.remote, "connection closed");
        }
    }

    /// Asks the writer to flush and close; the entry goes when the connection task reports
    /// `Closed`, but the connection stops holding its session and its watches now.
    fn close_conn(&mut self, id: ConnId) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if !conn.closed {
            conn.closed = true;
            let _ = conn.out.try_send(Outbound::Close);
        }
        let session_id = conn.session_id;
        self.detach(id, session_id);
    }

    /// Watches belong to the connection (the client re-registers them with setWatches), and a
    /// session is held by one connection at a time.
    fn detach(&mut self, id: ConnId, session_id: i64) {
        self.watches.remove_watcher(id);
        if self.by_session.get(&session_id) == Some(&id) {
            self.by_session.remove(&session_id);
        }
    }

    /// A reply that is only a header: errors, and the ops whose answer has no body.
    fn send_header(&mut self, id: ConnId, xid: i32, zxid: i64, err: i32) {
        self.send(
            id,
            Outbound::Reply {
                header: ReplyHeader { xid, zxid, err },
                body: None,
            },
        );
    }

    fn send(&mut self, id: ConnId, msg: Outbound) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.closed {
            return;
        }
        if let Outbound::Reply { header, .. } = &msg {
            if header.zxid > 0 {
                conn.stats.last_zxid = header.zxid;
            }
        }
        match conn.out.try_send(msg) {
            Ok(()) => {
                conn.stats.sent += 1;
                self.stats.packets_sent += 1;
            }
            Err(Refused::Full) => {
                warn!(peer = %conn.remote, "client is not reading its replies; closing the connection");
                self.close_conn(id);
            }
            Err(Refused::Closed) => {
                conn.closed = true;
            }
        }
    }

    fn record_latency(&mut self, id: ConnId, received: Instant) {
        let ms = received.elapsed().as_millis() as u64;
        self.stats.record_latency(ms);
        if let Some(conn) = self.conns.get_mut(&id) {
            conn.stats.record_latency(ms);
        }
    }
}

/// Read-only views of the core for the four-letter words (see `admin.rs`).
impl Core {
    pub(crate) fn tree(&self) -> &Tree {
        &self.tree
    }
    pub(crate) fn watches(&self) -> &WatchRegistry {
        &self.watches
    }
    pub(crate) fn config(&self) -> &Config {
        &self.cfg
    }
    pub(crate) fn trace_mask(&self) -> i64 {
        self.trace_mask
    }
    pub(crate) fn set_trace_mask(&mut self, mask: i64) {
        self.trace_mask = mask;
    }
    /// `srst`: the server-wide counters, reply sizes included (ZooKeeper's `ServerStats.reset`).
    pub(crate) fn reset_stats(&mut self) {
        self.stats.reset();
        self.response_sizes.reset();
    }
    /// Handed to every connection's writer.
    pub(crate) fn response_sizes(&self) -> Arc<ResponseSizes> {
        self.response_sizes.clone()
    }
    pub(crate) fn stats(&self) -> &ServerStats {
        &self.stats
    }
    pub(crate) fn uptime(&self) -> Duration {
        self.started.elapsed()
    }
    pub(crate) fn raft(&self) -> &consensus::Handle {
        &self.raft
    }
    pub(crate) fn session_deadline(&self, session: i64) -> Option<Instant> {
        self.tracker.deadline(session)
    }
    pub(crate) fn conn_views(
        &mut self,
    ) -> impl Iterator<Item = (SocketAddr, i64, i32, usize, &mut ConnStats)> {
        self.conns.values_mut().map(|c| {
            (
                c.remote,
                c.session_id,
                c.timeout_ms,
                c.queue.len(),
                &mut c.stats,
            )
        })
    }
    pub(crate) fn conn_ids_and_sessions(&self) -> Vec<(ConnId, i64)> {
        self.conns
            .iter()
            .map(|(id, c)| (*id, c.session_id))
            .collect()
    }
    pub(crate) fn outstanding(&self) -> usize {
        self.conns.values().map(|c| c.queue.len()).sum()
    }
}
