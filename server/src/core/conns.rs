//! Connection bookkeeping: what the core keeps per connection, how a connection closes or lets
//! go of its session and watches, and sending to a connection's outbound queue.

use std::collections::VecDeque;
use std::net::SocketAddr;

use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::{debug, warn};

use wire::{Id, ReplyHeader};

use super::requests::Queued;
use super::Core;
use crate::msg::ConnId;
use crate::outbound::{Outbound, OutboundTx, Refused};
use crate::sasl::DigestMd5Server;
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
    /// The connection's SASL exchange, from its first token on (`ServerCnxn.zooKeeperSaslServer`).
    pub(super) sasl: Option<DigestMd5Server>,
    pub(super) queue: VecDeque<Queued>,
    /// Whether the client sent the optional readOnly byte: the server mirrors it.
    pub(super) sent_read_only: bool,
    /// A read-only session on a member cut off from its quorum (`readonlymode.enabled`): reads are
    /// served, writes answered NotReadOnly; closed when a leader is known again.
    pub(super) read_only: bool,
    pub(super) ready: Option<oneshot::Sender<bool>>,
    pub(super) stats: ConnStats,
    pub(super) closed: bool,
}

impl Core {
    pub(super) fn closed(&mut self, id: ConnId) {
        if let Some(conn) = self.conns.remove(&id) {
            self.watches.remove_watcher(id);
            self.sessions.conn_closed(conn.session_id, id);
            debug!(peer = %conn.remote, "connection closed");
        }
    }

    /// Asks the writer to flush and close; the entry goes when the connection task reports
    /// `Closed`, but the connection stops holding its session and its watches now.
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

    /// Records a reply's latency in the server's and the connection's statistics, and returns
    /// the time it read, so a caller with more to stamp reads the clock once (a clock read is
    /// about 25 ns, and a write used to pay six).
    pub(super) fn record_latency(&mut self, id: ConnId, received: Instant) -> Instant {
        let now = Instant::now();
        let ms = now.saturating_duration_since(received).as_millis() as u64;
        self.stats.record_latency(ms);
        if let Some(conn) = self.conns.get_mut(&id) {
            conn.stats.record_latency(ms, now);
        }
        now
    }
}
