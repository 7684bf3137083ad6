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
//! The core is one struct split by role into rooms, each an `impl Core` block; a room's state is
//! a field of `Core` of its own type, which the room changes and the others read or call:
//!
//! | room | owns | does |
//! |---|---|---|
//! | `sessions` | `Sessions` | the sessions' clocks, which connection holds each, ids, expiry |
//! | `conns` | `Conns` | connections by id, ReadIndex contexts to their syncs; close, send |
//! | `apply` | `Applied` | committed entries, their events and replies; installed snapshots |
//! | `snapshots` | `Snapshots` | when a snapshot is due, its view, its encoder thread |
//! | `ensemble` | `Role`, `Ensemble` | who leads, serving or not, the forward link, revalidation |
//! | `reconfig` | `Membership` | `/zookeeper/config`, reconfig, raft's membership following it |
//! | `views` | `Meters` | counters and latencies; what the four-letter words show |
//! | `handshake` | | connect, reconnect, refusal |
//! | `requests` | | classification and the per-connection FIFO |
//! | `auth` | | auth packets, SASL, enforce.auth |
//! | `reads` | | answering reads and syncs in FIFO order; a sync's ReadIndex |
//! | `submit` | | the one place an entry is stamped and leaves for raft |
//! | `timers` | | the ticker: what runs on it, TTL/container sweeps |

mod apply;
mod auth;
mod conns;
mod ensemble;
mod export;
pub mod follow;
mod handshake;
mod reads;
mod reaper;
mod reconfig;
mod requests;
mod sessions;
mod snapshots;
mod submit;
mod timers;
mod views;

use std::ops::ControlFlow;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::{info, warn};

use znode_tree::{Tree, WatchRegistry};

use crate::clock::WallClock;
use crate::config::Config;
use crate::msg::CoreMsg;
use crate::outbound::Outbound;
use crate::session::checkpoint;
use crate::stats::ResponseSizes;

use apply::Applied;
use conns::Conns;
pub(crate) use ensemble::Ensemble;
use ensemble::Role;
use sessions::Sessions;
use snapshots::Snapshots;
use timers::Schedule;
use views::Meters;

/// The state the core task owns, every field touched only on the core task. Each group of state
/// belongs to the room named beside it, which is the one that changes it; the others read it or go
/// through the room's methods.
pub struct Core {
    /// The server's configuration, shared with start-up and the connection tasks.
    cfg: Arc<Config>,
    /// The wall clock: entries' time stamps, session ids, the views' dates.
    wall: WallClock,
    /// The raft thread: proposals and ReadIndex requests go there (`submit`).
    raft: consensus::Handle,
    /// The znode tree: the replicated state, changed only by applying committed entries (`apply`).
    tree: Tree,
    /// Which connection watches what; fired when an applied entry changes a node.
    watches: WatchRegistry,
    /// How far the tree is applied, and who waits for it to get further (`apply`).
    applied: Applied,
    /// The sessions: their clocks, which connection holds each, the ones being created
    /// (`sessions`).
    sessions: Sessions,
    /// Every connection that finished its handshake read, and the ReadIndex answers their syncs
    /// wait for (`conns`).
    conns: Conns,
    /// Who leads, as raft last said (`ensemble`).
    role: Role,
    /// Membership of an ensemble: the forward link and what goes with it (`None`: standalone;
    /// `ensemble`).
    ensemble: Option<Ensemble>,
    /// The membership `/zookeeper/config` holds and the reconfig work in flight (`reconfig`).
    membership: reconfig::Membership,
    /// The snapshots taken and the one being encoded (`snapshots`).
    snapshots: Snapshots,
    /// Counters, reply sizes, latencies and the trace mask the four-letter words report (`views`).
    meters: Meters,
    /// The AdminServer's restores this member proposed, by the xid of their entry, waiting for
    /// it to apply (`export`, `apply`).
    restores: Vec<(i32, tokio::sync::oneshot::Sender<Result<i64, String>>)>,
    /// The applied transactions in ZooKeeper's log format, once `backup --follow` asked
    /// (`follow`, `apply`).
    follow: Arc<follow::FollowLog>,
}

impl Core {
    pub fn new(
        cfg: Arc<Config>,
        tree: Tree,
        raft: consensus::Handle,
        applied_index: u64,
        applied_term: u64,
        ensemble: Option<Ensemble>,
        wall: WallClock,
    ) -> Core {
        let now = Instant::now();
        let ensemble_member = ensemble.is_some();
        let mut core = Core {
            sessions: Sessions::recover(&cfg, &tree, wall.now_ms(), now),
            cfg,
            wall,
            raft,
            tree,
            watches: WatchRegistry::new(),
            applied: Applied::new(applied_index, applied_term),
            conns: Conns::new(),
            role: Role::default(),
            ensemble,
            membership: Default::default(),
            snapshots: Snapshots::new(applied_index),
            meters: Meters::new(ensemble_member, now),
            restores: Vec::new(),
            follow: Arc::default(),
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
        let mut ticker = tokio::time::interval(self.tick_every());
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut schedule = Schedule::new(Instant::now());
        let mut sweeper = tokio::time::interval(self.sweep_every());
        sweeper.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let hold_deadline = self.next_hold_deadline();
            tokio::select! {
                biased;
                Some(ev) = events.recv() => {
                    if self.consensus_event(ev).is_break() {
                        break;
                    }
                    self.applied.release();
                    self.release_held();
                }
                msg = rx.recv() => match msg {
                    None => break,
                    Some(msg) => {
                        if self.handle(msg).is_break() {
                            break;
                        }
                    }
                },
                _ = ticker.tick() => self.on_tick(Instant::now(), &mut schedule),
                _ = sweeper.tick() => self.propose_expired_nodes(Instant::now(), &mut schedule),
                // Candidates a sweep held back for `znode.container.maxPerMinute`'s spacing.
                _ = tokio::time::sleep_until(schedule.next_deletion.unwrap_or_else(Instant::now)),
                    if schedule.held => self.propose_expired_nodes(Instant::now(), &mut schedule),
                // ConnectRequests held while this member is between leaders (`handshake`).
                _ = tokio::time::sleep_until(hold_deadline.unwrap_or_else(Instant::now)),
                    if hold_deadline.is_some() => self.refuse_overdue(Instant::now()),
            }
        }
        for conn in self.conns.drain() {
            let _ = conn.out.try_send(Outbound::Close);
        }
        if let Err(e) = checkpoint::write(
            &self.cfg.raft_dir(),
            &self.sessions.remaining(Instant::now()),
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
                transport,
            } => self.connect(handshake::Knock {
                id: conn,
                remote,
                req,
                out,
                ready,
                transport,
            }),
            CoreMsg::Request {
                conn,
                header,
                req,
                received,
                slot,
            } => {
                let _in_conn = self.conns.span(conn).entered();
                self.request(conn, header, req, received, slot);
            }
            CoreMsg::Closed { conn } => self.closed(conn),
            CoreMsg::FourLetter {
                word,
                mask,
                remote,
                secure_port,
                reply,
            } => {
                // The in-memory part is gathered here; file-system reads and rendering run on a
                // blocking thread, off the task every client's reply waits for.
                let job = views::four_letter(self, word, mask, remote, secure_port);
                tokio::task::spawn_blocking(move || {
                    let _ = reply.send(job.finish());
                });
            }
            CoreMsg::ZkSnapshot { auth, reply } => {
                let _ = reply.send(self.zk_snapshot_view(&auth));
            }
            CoreMsg::AdminAllowed { auth, reply } => {
                let _ = reply.send(self.holds_all_on_root(&auth));
            }
            CoreMsg::Shed { percentage, reply } => {
                let _ = reply.send(self.shed_connections(percentage));
            }
            CoreMsg::Restore {
                auth,
                max_zxid,
                snapshot,
                reply,
            } => self.propose_restore(&auth, max_zxid, snapshot, reply),
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
            CoreMsg::Follow { auth, after, reply } => {
                let _ = reply.send(self.follow_start(&auth, after));
            }
            CoreMsg::WaitApplied { index, reply } => {
                self.membership.replay_to = self.membership.replay_to.max(index);
                self.applied.wait_for(index, reply);
            }
            CoreMsg::ForwardLost { epoch } => self.forward_lost(epoch),
            CoreMsg::PeerTouch { sessions } => self.peer_touch(sessions),
            CoreMsg::ForwardedReconfig { entry, done } => self.forwarded_reconfig(entry, done),
            CoreMsg::Shutdown => return ControlFlow::Break(()),
        }
        ControlFlow::Continue(())
    }

    /// Handed to every connection's writer.
    pub(crate) fn response_sizes(&self) -> Arc<ResponseSizes> {
        self.meters.response_sizes.clone()
    }

    /// Counted by the accept loops and TLS handshakes, read by the views.
    pub(crate) fn client_port_counters(&self) -> Arc<crate::stats::ClientPortCounters> {
        self.meters.client_ports.clone()
    }

    /// Handed to every connection's writer, and to start-up for its own timings.
    pub(crate) fn latency(&self) -> Arc<crate::latency::Latency> {
        self.meters.latency.clone()
    }
}
