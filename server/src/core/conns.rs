//! Connection bookkeeping: what the core keeps per connection (`Conn`), the connections by id
//! (`Conns`) with the index from a ReadIndex context to the connection whose sync waits on it,
//! how a connection closes or lets go of its session and watches, and sending to a connection's
//! outbound queue.

use std::collections::{HashSet, VecDeque};
use std::net::SocketAddr;

use rustc_hash::FxHashMap;
use tokio::sync::oneshot;
use tokio::time::{Duration, Instant};
use tracing::{debug, info, warn, Span};

use wire::{Id, ReplyHeader};

use super::requests::{Pending, Queued};
use super::Core;
use crate::msg::{ConnId, Transport};
use crate::outbound::{Outbound, OutboundTx, Refused};
use crate::sasl::SaslServer;
use crate::session::SessionId;
use crate::stats::ConnStats;

/// One client connection as the core sees it.
#[derive(Debug)]
pub(super) struct Conn {
    pub(super) remote: SocketAddr,
    pub(super) out: OutboundTx,
    pub(super) session_id: SessionId,
    pub(super) timeout_ms: i32,
    pub(super) auth: Vec<Id>,
    /// Came through `secureClientPort` (listed apart by `cons`, `stat` and the AdminServer).
    pub(super) secure_port: bool,
    /// The connection's SASL exchange, from its first token on (`ServerCnxn.zooKeeperSaslServer`).
    pub(super) sasl: Option<SaslServer>,
    pub(super) queue: VecDeque<Queued>,
    /// Whether the client sent the optional readOnly byte: the server mirrors it.
    pub(super) sent_read_only: bool,
    /// A read-only session on a member cut off from its quorum (`readonlymode.enabled`): reads are
    /// served, writes answered NotReadOnly; closed when a leader is known again.
    pub(super) read_only: bool,
    pub(super) ready: Option<oneshot::Sender<bool>>,
    pub(super) stats: ConnStats,
    pub(super) closed: bool,
    /// What the core logs about this connection goes in this span: `conn{id peer session}`, the
    /// session recorded once the handshake knows it (`set_session`).
    pub(super) span: Span,
}

impl Conn {
    /// A connection that finished reading its ConnectRequest, before it holds a session.
    ///
    /// Its ids are ZooKeeper's, in the order it adds them: `ip:<address>` (the ServerCnxn's
    /// constructor), then for a client that presented a verified certificate
    /// (X509AuthenticationProvider, right after the TLS handshake) `super:<subject>` when the
    /// subject is `X509AuthenticationProvider.superUser`, and `x509:<subject>`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        id: ConnId,
        remote: SocketAddr,
        out: OutboundTx,
        timeout_ms: i32,
        sent_read_only: bool,
        read_only: bool,
        ready: oneshot::Sender<bool>,
        transport: Transport,
        x509_super_user: Option<&str>,
    ) -> Conn {
        let mut auth = vec![Id::new("ip", &remote.ip().to_string())];
        if let Some(subject) = &transport.x509 {
            if x509_super_user == Some(subject.as_str()) {
                auth.push(Id::new("super", subject));
            }
            auth.push(Id::new("x509", subject));
        }
        Conn {
            remote,
            out,
            session_id: SessionId::NONE,
            timeout_ms,
            auth,
            secure_port: transport.secure_port,
            sasl: None,
            queue: VecDeque::new(),
            sent_read_only,
            read_only,
            ready: Some(ready),
            stats: ConnStats::new(Instant::now()),
            closed: false,
            span: tracing::info_span!(
                "conn",
                id,
                peer = %remote,
                session = tracing::field::Empty
            ),
        }
    }

    /// The connection holds `session` from now on.
    pub(super) fn set_session(&mut self, session: SessionId) {
        self.session_id = session;
        self.span
            .record("session", tracing::field::display(session));
    }
}

/// Every connection that finished its handshake read, and which of them waits for which
/// ReadIndex answer.
#[derive(Default)]
pub(super) struct Conns {
    by_id: FxHashMap<ConnId, Conn>,
    /// The connection whose sync (or `linearizableReads` barrier) waits for the ReadIndex answer
    /// with this context, until it comes: an answer finds its sync without looking at every
    /// queued request.
    read_waits: FxHashMap<u64, ConnId>,
    /// Connections whose head sync has its ReadIndex but waits for this member to apply that far.
    sync_ready: HashSet<ConnId>,
    /// The next ReadIndex context. Syncs, barriers and a follower's revalidations draw from it,
    /// so no two requests in flight share one.
    next_read_ctx: u64,
}

impl Conns {
    pub(super) fn new() -> Conns {
        Conns {
            next_read_ctx: 1,
            ..Conns::default()
        }
    }

    pub(super) fn get(&self, id: &ConnId) -> Option<&Conn> {
        self.by_id.get(id)
    }

    pub(super) fn get_mut(&mut self, id: &ConnId) -> Option<&mut Conn> {
        self.by_id.get_mut(id)
    }

    pub(super) fn insert(&mut self, id: ConnId, conn: Conn) {
        self.by_id.insert(id, conn);
    }

    /// Forgets a connection, and the ReadIndex answers its syncs still waited for.
    pub(super) fn remove(&mut self, id: &ConnId) -> Option<Conn> {
        let conn = self.by_id.remove(id)?;
        for q in &conn.queue {
            if let Pending::Sync { ctx, .. } = q.pending {
                self.read_waits.remove(&ctx);
            }
        }
        self.sync_ready.remove(id);
        Some(conn)
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&ConnId, &Conn)> {
        self.by_id.iter()
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &Conn> {
        self.by_id.values()
    }

    pub(super) fn values_mut(&mut self) -> impl Iterator<Item = &mut Conn> {
        self.by_id.values_mut()
    }

    pub(super) fn ids(&self) -> Vec<ConnId> {
        self.by_id.keys().copied().collect()
    }

    pub(super) fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Every connection, gone from here (shut-down).
    pub(super) fn drain(&mut self) -> impl Iterator<Item = Conn> + '_ {
        self.read_waits.clear();
        self.sync_ready.clear();
        self.by_id.drain().map(|(_, c)| c)
    }

    /// The span `id`'s events go in (none for an unknown connection).
    pub(super) fn span(&self, id: ConnId) -> Span {
        self.by_id
            .get(&id)
            .map_or_else(Span::none, |c| c.span.clone())
    }

    /// A fresh ReadIndex context.
    pub(super) fn next_read_ctx(&mut self) -> u64 {
        let ctx = self.next_read_ctx;
        self.next_read_ctx += 1;
        ctx
    }

    /// Queues a sync (or, with `reply` false, a read barrier) on `id` under a fresh context, and
    /// returns the context to ask raft for. `None`: no such connection.
    pub(super) fn queue_sync(
        &mut self,
        id: ConnId,
        xid: i32,
        path: String,
        received: Instant,
        reply: bool,
        slot: Option<crate::throttle::Slot>,
    ) -> Option<u64> {
        let ctx = self.next_read_ctx();
        let conn = self.by_id.get_mut(&id)?;
        conn.queue.push_back(Queued {
            pending: Pending::Sync {
                xid,
                path,
                ctx,
                index: None,
                received,
                asked: Instant::now(),
                reply,
            },
            _slot: slot,
        });
        self.read_waits.insert(ctx, id);
        Some(ctx)
    }

    /// The ReadIndex answer for `ctx`: the sync waiting on it learns its index. Returns its
    /// connection (`None`: no sync waits on it, e.g. a context already asked again).
    pub(super) fn read_ready(&mut self, ctx: u64, index: u64) -> Option<ConnId> {
        let id = self.read_waits.remove(&ctx)?;
        let conn = self.by_id.get_mut(&id)?;
        for q in conn.queue.iter_mut() {
            if let Pending::Sync {
                ctx: c, index: i, ..
            } = &mut q.pending
            {
                if *c == ctx {
                    *i = Some(index);
                }
            }
        }
        Some(id)
    }

    /// The syncs whose ReadIndex has gone unanswered for `patience`: (connection, context).
    pub(super) fn unanswered_reads(&self, now: Instant, patience: Duration) -> Vec<(ConnId, u64)> {
        let mut stale = Vec::new();
        for (&ctx, &id) in &self.read_waits {
            let Some(conn) = self.by_id.get(&id) else {
                continue;
            };
            let overdue = conn.queue.iter().any(|q| {
                matches!(q.pending, Pending::Sync { ctx: c, index: None, asked, .. }
                    if c == ctx && now.saturating_duration_since(asked) >= patience)
            });
            if overdue {
                stale.push((id, ctx));
            }
        }
        stale
    }

    /// Moves `id`'s sync waiting on `old` to a fresh context, asked `now`; returns the context.
    pub(super) fn ask_read_again(&mut self, id: ConnId, old: u64, now: Instant) -> u64 {
        let ctx = self.next_read_ctx();
        self.read_waits.remove(&old);
        if let Some(conn) = self.by_id.get_mut(&id) {
            for q in conn.queue.iter_mut() {
                if let Pending::Sync { ctx: c, asked, .. } = &mut q.pending {
                    if *c == old {
                        *c = ctx;
                        *asked = now;
                    }
                }
            }
            self.read_waits.insert(ctx, id);
        }
        ctx
    }

    /// Whether the request at the head of `id`'s FIFO is a sync.
    pub(super) fn head_is_sync(&self, id: ConnId) -> bool {
        self.by_id
            .get(&id)
            .and_then(|c| c.queue.front())
            .is_some_and(|q| matches!(q.pending, Pending::Sync { .. }))
    }

    /// `id`'s head sync has its index but waits for this member to apply that far.
    pub(super) fn sync_waits_for_apply(&mut self, id: ConnId) {
        self.sync_ready.insert(id);
    }

    /// The connections whose head sync waited for this member to apply; none are kept.
    pub(super) fn take_syncs_waiting_for_apply(&mut self) -> Vec<ConnId> {
        self.sync_ready.drain().collect()
    }

    /// Syncs waiting on this member, answered by raft or not (mntr's zk_pending_syncs).
    pub(super) fn pending_syncs(&self) -> usize {
        self.by_id
            .values()
            .flat_map(|c| c.queue.iter())
            .filter(|q| matches!(q.pending, Pending::Sync { .. }))
            .count()
    }
}

impl std::ops::Index<&ConnId> for Conns {
    type Output = Conn;

    fn index(&self, id: &ConnId) -> &Conn {
        &self.by_id[id]
    }
}

impl Core {
    pub(super) fn closed(&mut self, id: ConnId) {
        self.forget_held(id);
        if let Some(conn) = self.conns.remove(&id) {
            self.watches.remove_watcher(id);
            self.sessions.conn_closed(conn.session_id, id);
            conn.span
                .in_scope(|| debug!(peer = %conn.remote, "connection closed"));
        }
    }

    /// Asks the writer to flush and close; the entry goes when the connection task reports
    /// `Closed`, but the connection stops holding its session and its watches now.
    /// The AdminServer's `shed_connections`, as ZooKeeper 3.10's `ServerCnxnFactory
    /// .shedConnections`: every client connection at 100, each with probability
    /// `percentage`/100 otherwise. The sessions live on; their clients reconnect, to this
    /// member or another. Returns how many were closed.
    pub(super) fn shed_connections(&mut self, percentage: u8) -> usize {
        let open: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| !c.closed)
            .map(|(id, _)| *id)
            .collect();
        let total = open.len();
        let p = f64::from(percentage.min(100)) / 100.0;
        let mut shed = 0;
        for id in open {
            if percentage >= 100 || (percentage > 0 && rand::random::<f64>() < p) {
                self.close_conn(id);
                shed += 1;
            }
        }
        info!(shed, total, percentage, "shed client connections");
        shed
    }

    pub(super) fn close_conn(&mut self, id: ConnId) {
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
    pub(super) fn detach(&mut self, id: ConnId, session_id: SessionId) {
        self.watches.remove_watcher(id);
        self.sessions.release(session_id, id);
    }

    /// A reply that is only a header: errors, and the ops whose answer has no body.
    pub(super) fn send_header(&mut self, id: ConnId, xid: i32, zxid: i64, err: i32) {
        self.send(
            id,
            Outbound::Reply {
                header: ReplyHeader { xid, zxid, err },
                body: None,
            },
        );
    }

    pub(super) fn send(&mut self, id: ConnId, msg: Outbound) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.closed {
            return;
        }
        if let Outbound::Reply { header, .. } | Outbound::WriteReply { header, .. } = &msg {
            if header.zxid > 0 {
                conn.stats.last_zxid = header.zxid;
            }
        }
        match conn.out.try_send(msg) {
            Ok(()) => {
                conn.stats.sent += 1;
                self.meters.stats.packets_sent += 1;
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

    /// Records a reply's latency in the server's and the connection's statistics, and returns
    /// the time it read, so a caller with more to stamp reads the clock once (a clock read is
    /// about 25 ns, and a write used to pay six).
    pub(super) fn record_latency(&mut self, id: ConnId, received: Instant) -> Instant {
        let now = Instant::now();
        let ms = now.saturating_duration_since(received).as_millis() as u64;
        self.meters.stats.record_latency(ms);
        if let Some(conn) = self.conns.get_mut(&id) {
            conn.stats.record_latency(ms, now);
        }
        now
    }
}
