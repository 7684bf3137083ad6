//! The messages into the core: what connection tasks and start-up send
//! to the one task that owns the state (see `core`). Senders import only this module, so none
//! of them depends on the core itself.

use std::net::SocketAddr;

use tokio::sync::oneshot;
use tokio::time::Instant;

use wire::{ConnectRequest, FourLetterWord, Request, RequestHeader};

use crate::outbound::OutboundTx;
use crate::throttle::Slot;

/// Names a client connection for the core; unique for the life of the process.
pub type ConnId = u64;

/// How a client connection reached the server: through which listener, and what its TLS
/// handshake proved (`client_tls.rs`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transport {
    /// Accepted on `secureClientPort` (ZooKeeper's secure connection factory), not on
    /// `clientPort`: `cons` and `stat` list a port's connections only, the AdminServer lists them
    /// apart as `secure_connections`.
    pub secure_port: bool,
    /// The connection speaks TLS (on the secure port, or on a unified plaintext port).
    pub tls: bool,
    /// The client certificate's subject as Java's `X500Principal.getName()` writes it, when the
    /// client presented a verified certificate: the connection's `x509:` id.
    pub x509: Option<String>,
}

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
        transport: Transport,
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
        /// Asked on the secure client port: `cons` and `stat` list that port's connections.
        secure_port: bool,
        reply: oneshot::Sender<String>,
    },
    /// The HTTP endpoints (AdminServer, Prometheus): a `ServerView` holding `parts`, file-system
    /// facts included, after applying `reset`.
    View {
        reset: ViewReset,
        parts: crate::fourlw::Parts,
        reply: oneshot::Sender<crate::fourlw::ServerView>,
    },
    /// The AdminServer's `snapshot`: a view of the state as of now, for the ids `auth` if they
    /// hold every permission on `/` (ZooKeeper's `AuthRequest(ALL, "/")`); `None` if not.
    ZkSnapshot {
        auth: Vec<wire::Id>,
        reply: oneshot::Sender<Option<znode_tree::SnapshotView>>,
    },
    /// The AdminServer's `restore`, before the body is read: whether `auth` holds every
    /// permission on `/`.
    AdminAllowed {
        auth: Vec<wire::Id>,
        reply: oneshot::Sender<bool>,
    },
    /// The AdminServer's `shed_connections` (`http/admin_shed.rs`), its caller already
    /// authorised: close each client connection with probability `percentage`/100 (every one at
    /// 100); answered with how many were closed.
    Shed {
        percentage: u8,
        reply: oneshot::Sender<usize>,
    },
    /// The AdminServer's `restore` (`http/admin_restore.rs`): propose `Txn::Restore` with this
    /// tree snapshot (znode-tree's encoding) if `auth` holds every permission on `/`; answered
    /// with the zxid the ensemble is at once this member applied it, or why not.
    Restore {
        auth: Vec<wire::Id>,
        max_zxid: i64,
        snapshot: Vec<u8>,
        reply: oneshot::Sender<Result<i64, String>>,
    },
    /// The AdminServer's `follow` (`paddock backup --follow`): for the ids `auth` if they hold
    /// every permission on `/`, whether a follower at zxid `after` continues from the follow
    /// log, or else a view to send as a new snapshot first.
    Follow {
        auth: Vec<wire::Id>,
        after: Option<i64>,
        reply: oneshot::Sender<crate::core::follow::Start>,
    },
    /// Answered once the applied index reaches `index` (start-up replay).
    WaitApplied {
        index: u64,
        reply: oneshot::Sender<()>,
    },
    /// The forward link `epoch` to the leader broke or could not connect (see `forward`).
    ForwardLost { epoch: u64 },
    /// On the leader: another member's clients were heard from (session, timeout).
    PeerTouch { sessions: Vec<(i64, i32)> },
    /// On the leader: a reconfig another member forwarded, for the leader's checks before it is
    /// proposed; `done` says whether it was (the forward link waits, keeping its order).
    ForwardedReconfig {
        entry: znode_tree::Entry,
        done: oneshot::Sender<Result<(), String>>,
    },
    /// Stop: flush nothing more, reply nothing more.
    Shutdown,
}

/// What a `CoreMsg::View` resets or sets before the view is taken (the AdminServer's
/// `stat_reset`, `connection_stat_reset` and `set_trace_mask`, like `srst`, `crst` and `stmk`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewReset {
    Nothing,
    ServerStats,
    ConnectionStats,
    TraceMask(i64),
}
