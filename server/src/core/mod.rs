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
//!
//! The core is one struct split by role into rooms, each an `impl Core` block:
//! `handshake` (connect, reconnect, session ids), `requests` (the per-connection FIFO),
//! `auth` (auth packets, SASL, enforce.auth), `reads` (answering reads in FIFO order),
//! `submit` (the one place an entry is stamped and leaves for raft), `apply` (committed entries,
//! their events and replies, snapshots), `timers` (expiry, TTL/container sweeps, checkpoint),
//! `conns` (connection bookkeeping and sending) and `views` (what the four-letter words show).

mod apply;
mod auth;
mod conns;
mod ensemble;
mod export;
mod handshake;
mod reads;
mod reaper;
mod reconfig;
mod requests;
mod submit;
mod timers;
mod views;

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Duration, Instant};
use tracing::{info, warn};

use znode_tree::{Tree, WatchRegistry};

use crate::clock::now_ms;
use crate::config::Config;
use crate::msg::{ConnId, CoreMsg};
use crate::outbound::Outbound;
use crate::session::{checkpoint, SessionTracker};
use crate::stats::{ResponseSizes, ServerStats};

use conns::Conn;
pub(crate) use ensemble::Ensemble;
use timers::CHECKPOINT_EVERY;

/// The state the core task owns. Every field is touched only on the core task.
pub struct Core {
    /// The server's configuration, shared with start-up and the connection tasks.
    cfg: Arc<Config>,
    /// The znode tree: the replicated state, changed only by applying committed entries.
    tree: Tree,
    /// Which connection watches what; fired when an applied entry changes a node.
    watches: WatchRegistry,
    /// The raft thread: proposals and ReadIndex requests go there (see `submit`).
    raft: consensus::Handle,
    /// Every connection that finished its handshake read, by id.
    conns: FxHashMap<ConnId, Conn>,
    /// Which connection holds each established local session.
    by_session: FxHashMap<i64, ConnId>,
    /// New sessions whose CreateSession entry is in flight, by session id.
    connecting: FxHashMap<i64, ConnId>,
    /// Session deadlines and the sessions whose close is in flight.
    tracker: SessionTracker,
    /// The next session id to try (see `handshake::initial_session_id`).
    next_session_id: i64,
    /// The next ReadIndex context a sync waits on.
    next_read_ctx: u64,
    /// The raft index of the last entry applied to the tree (its zxid).
    applied_index: u64,
    /// The raft term of that entry.
    applied_term: u64,
    /// The index of the last snapshot taken or installed.
    last_snapshot_index: u64,
    /// Snapshot encoder threads running (`maybe_snapshot` waits for none).
    snapshot_encoding: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// Drops each snapshot view at normal priority once encoded (`reaper.rs`); spawned with the
    /// first snapshot.
    view_reaper: Option<reaper::Reaper<znode_tree::SnapshotView>>,
    /// Whether raft last said this server leads: only a leader expires sessions and nodes.
    is_leader: bool,
    /// The leader raft last named (0: none known) and its term.
    leader_id: u64,
    term: u64,
    /// When this member became leader (mntr's zk_leader_uptime).
    leader_since: Option<Instant>,
    /// The term in which this leader wrote (or found) the membership in /zookeeper/config.
    membership_published: Option<u64>,
    /// Membership of an ensemble: the forward link and what goes with it (`None`: standalone).
    ensemble: Option<Ensemble>,
    /// The membership `/zookeeper/config` holds and the reconfig work in flight (`reconfig`).
    membership: reconfig::Membership,
    /// Connections whose head sync has its ReadIndex but waits for this member to apply that far.
    sync_ready: std::collections::HashSet<ConnId>,
    /// Remaining session time read from the checkpoint, for sessions not yet replayed.
    resume_left: HashMap<i64, Duration>,
    /// Whether this process has followed another leader (see the RoleChanged handling).
    followed_another: bool,
    /// Server-wide counters for the four-letter words.
    stats: ServerStats,
    /// Filled in by the connection writers, which see the encoded replies.
    response_sizes: Arc<ResponseSizes>,
    /// Per-stage write latency and ZooKeeper's latency summaries (`latency.rs`), shared with
    /// the connection writers.
    latency: Arc<crate::latency::Latency>,
    /// Set by `stmk`, read by `gtmk`. paddock logs through `tracing` filters, not ZooKeeper's
    /// trace mask, so the mask is only kept and reported, as a tool that sets it expects.
    trace_mask: i64,
    /// When the core started, for the uptime the four-letter words report.
    started: Instant,
    /// Start-up's waits for the replay to reach an index (`CoreMsg::WaitApplied`).
    applied_waiters: Vec<(u64, oneshot::Sender<()>)>,
}

impl Core {
    pub fn new(
        cfg: Arc<Config>,
        tree: Tree,
        raft: consensus::Handle,
        applied_index: u64,
        applied_term: u64,
        ensemble: Option<Ensemble>,
    ) -> Core {
        let tick = Duration::from_millis(cfg.tick_time_ms as u64);
        let mut tracker = SessionTracker::new(tick);
        let now = Instant::now();
        // Recovered sessions resume with the time they had left at the last checkpoint;
        // one missing from it (created just before a crash) gets a full timeout.
        // Sessions created in the log after the snapshot get theirs when replay applies them.
        let mut resume_left = checkpoint::read(&cfg.raft_dir());
        for s in tree.sessions() {
            let full = Duration::from_millis(s.timeout_ms.max(0) as u64);
            tracker.resume(
                s.id,
                resume_left.remove(&s.id).unwrap_or(full).min(full),
                now,
            );
        }
        let server_id = cfg.my_id.unwrap_or(1).min(254);
        let ensemble_member = ensemble.is_some();
        let mut core = Core {
            next_session_id: handshake::initial_session_id(server_id, now_ms()),
            cfg,
            tree,
            watches: WatchRegistry::new(),
            raft,
            conns: FxHashMap::default(),
            by_session: FxHashMap::default(),
            connecting: FxHashMap::default(),
            tracker,
            next_read_ctx: 1,
            applied_index,
            applied_term,
            last_snapshot_index: applied_index,
            snapshot_encoding: Default::default(),
            view_reaper: None,
            is_leader: false,
            leader_id: 0,
            term: 0,
            leader_since: None,
            membership_published: None,
            ensemble,
            membership: Default::default(),
            sync_ready: Default::default(),
            followed_another: false,
            resume_left,
            stats: ServerStats::default(),
            response_sizes: Arc::default(),
            latency: Arc::new(crate::latency::Latency::new(ensemble_member)),
            trace_mask: crate::fourlw::DEFAULT_TRACE_MASK,
            started: now,
            applied_waiters: Vec::new(),
        };
        // The membership as of the restored snapshot; replaying the log updates it.
        core.membership_from_tree();
        core
    }

    /// Runs until `Shutdown` or until every sender is gone. `events` comes straight from the
    /// raft thread (`consensus::start_with_sink`); it is polled first, because applying a
    /// committed batch is what lets replies, and the requests queued behind them, go out.
    pub async fn run(
        mut self,
        mut rx: mpsc::Receiver<CoreMsg>,
        mut events: mpsc::UnboundedReceiver<consensus::Event>,
    ) {
        let tick = Duration::from_millis((self.cfg.tick_time_ms as u64 / 2).clamp(10, 500));
        let mut ticker = tokio::time::interval(tick);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let container_every = Duration::from_millis(self.cfg.container_check_interval_ms.max(100));
        let mut next_container_check = Instant::now() + container_every;
        let mut next_checkpoint = Instant::now() + CHECKPOINT_EVERY;
        loop {
            tokio::select! {
                biased;
                Some(ev) = events.recv() => {
                    if self.consensus_event(ev).is_break() {
                        break;
                    }
                    self.release_applied_waiters();
                }
                msg = rx.recv() => match msg {
                    None => break,
                    Some(msg) => {
                        if self.handle(msg).is_break() {
                            break;
                        }
                    }
                },
                _ = ticker.tick() => {
                    let now = Instant::now();
                    self.expire_sessions(now);
                    self.send_touches();
                    self.ensure_membership_published();
                    self.reconcile_membership();
                    self.finish_waiting_reconfigs();
                    self.retry_syncs(now);
                    self.retry_revalidations(now);
                    // A snapshot that waited for the previous one's encoding is due even if no
                    // write follows (the end of a fill).
                    self.maybe_snapshot();
                    if now >= next_container_check {
                        next_container_check = now + container_every;
                        self.propose_expired_nodes();
                    }
                    if now >= next_checkpoint {
                        next_checkpoint = now + CHECKPOINT_EVERY;
                        self.write_checkpoint(now);
                    }
                }
            }
        }
        for (_, conn) in self.conns.drain() {
            let _ = conn.out.try_send(Outbound::Close);
        }
        if let Err(e) = checkpoint::write(
            &self.cfg.raft_dir(),
            &self.tracker.remaining(Instant::now()),
        ) {
            warn!(error = %e, "session checkpoint not written at shut-down");
        }
        info!("core stopped");
    }

    /// Dispatches one message; `Break` means stop (`Shutdown`).
    fn handle(&mut self, msg: CoreMsg) -> ControlFlow<()> {
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
                // The in-memory part is gathered here; file-system reads and rendering run on a
                // blocking thread, off the task every client's reply waits for.
                let job = views::four_letter(self, word, mask, remote);
                tokio::task::spawn_blocking(move || {
                    let _ = reply.send(job.finish());
                });
            }
            CoreMsg::ZkSnapshot { auth, reply } => {
                let _ = reply.send(self.zk_snapshot_view(&auth));
            }
            CoreMsg::View {
                reset,
                parts,
                reply,
            } => {
                let job = views::http_view(self, reset, parts);
                tokio::task::spawn_blocking(move || {
                    let _ = reply.send(job.finish_view());
                });
            }
            CoreMsg::WaitApplied { index, reply } => {
                self.applied_waiters.push((index, reply));
                self.release_applied_waiters();
            }
            CoreMsg::ForwardLost { epoch } => self.forward_lost(epoch),
            CoreMsg::PeerTouch { sessions } => self.peer_touch(sessions),
            CoreMsg::Shutdown => return ControlFlow::Break(()),
        }
        ControlFlow::Continue(())
    }

    /// Handed to every connection's writer.
    pub(crate) fn response_sizes(&self) -> Arc<ResponseSizes> {
        self.response_sizes.clone()
    }

    /// Handed to every connection's writer, and to start-up for its own timings.
    pub(crate) fn latency(&self) -> Arc<crate::latency::Latency> {
        self.latency.clone()
    }
}
