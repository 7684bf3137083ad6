//! Starting a node, and the cloneable handle callers use to drive it.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use raft::eraftpb::{ConfChangeV2, Message};

use crate::driver::{Command, Driver};
use crate::raft_loop::{self, Request, RequestTx};
use crate::snapshot_file::ScannedSnapshot;
use crate::status::{PeerProgress, Shared, Status};
use crate::storage::LogStore;
use crate::transport::{EventSink, NoPeers, Transport};
use crate::{Config, ConsensusError, Event};

/// What `start` returns: the handle, the applier's event stream, and the snapshot to load first
/// (`None` = start from the empty state).
pub struct Started {
    pub handle: Handle,
    pub events: Receiver<Event>,
    pub snapshot: Option<ScannedSnapshot>,
    /// The membership as of that snapshot (or the bootstrap): (voters, learners). Later changes
    /// arrive as `Event::MembershipChanged`.
    pub membership: (Vec<u64>, Vec<u64>),
}

struct Inner {
    tx: RequestTx,
    shared: Arc<Shared>,
    max_uncommitted: u64,
    election_timeout: Duration,
    threads: Mutex<Vec<JoinHandle<()>>>,
    db_dir: PathBuf,
    snapshot_dir: PathBuf,
    /// A loop on the caller's task (`start_stepped`) has no thread to join: this disconnects when
    /// it has ended.
    stepper_done: Option<Receiver<()>>,
}

impl Inner {
    fn shutdown(&self) {
        self.stop();
        if let Some(done) = &self.stepper_done {
            // Returns once the stepper's task has ended (its sender dropped).
            let _ = done.recv();
        }
    }

    /// Asks the loop to stop and joins its threads. A stepped loop is not waited for: it runs on
    /// a task of the caller's runtime, which a drop may be blocking (see `Handle::shutdown`).
    fn stop(&self) {
        self.tx.send(Request::Shutdown);
        let threads: Vec<_> =
            std::mem::take(&mut *self.threads.lock().unwrap_or_else(|p| p.into_inner()));
        for t in threads {
            if t.thread().id() == std::thread::current().id() {
                continue;
            }
            if t.join().is_err() {
                tracing::error!("a consensus thread panicked");
            }
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Talks to the raft thread. Cloneable; `Send + Sync`.
#[derive(Clone)]
pub struct Handle {
    inner: Arc<Inner>,
}

impl Handle {
    fn send(&self, cmd: Command) -> Result<(), ConsensusError> {
        if self.inner.shared.is_stopped() {
            return Err(ConsensusError::Stopped);
        }
        if self.inner.tx.send(Request::Command(cmd)) {
            Ok(())
        } else {
            Err(ConsensusError::Stopped)
        }
    }

    /// Queues `data` for replication; never blocks. The entry comes back through
    /// `Event::Committed` once committed. `Err(NotLeader)` when this node knows it is not the
    /// leader (leader_id 0 = none known); `Err(Busy)` when the leader already holds
    /// `Config::max_uncommitted_bytes` of uncommitted proposals (back-pressure: nothing was
    /// queued). A proposal racing with a leadership loss or a leader transfer is dropped by raft
    /// and surfaces only as `Event::RoleChanged` (and `Status::dropped_proposals`): the applier
    /// must time it out or fail it on `RoleChanged`.
    pub fn propose(&self, data: Vec<u8>) -> Result<(), ConsensusError> {
        if self.inner.shared.is_stopped() {
            return Err(ConsensusError::Stopped);
        }
        let status = self.inner.shared.status();
        if !status.is_leader {
            return Err(ConsensusError::NotLeader {
                leader_id: status.leader_id,
            });
        }
        if data.is_empty() {
            // Empty data is how the applier recognises raft's own no-op entries.
            return Err(ConsensusError::Invalid(
                "empty proposals are reserved for raft no-ops".into(),
            ));
        }
        // Reserve first, then look at what raft holds: the raft thread publishes a proposal's
        // bytes before it releases their reservation, so this sum never under-counts. Like
        // raft-rs, admit one proposal of any size when nothing is pending.
        let shared = &self.inner.shared;
        let len = data.len() as u64;
        let pending = shared.queued.fetch_add(len, Ordering::SeqCst)
            + shared.uncommitted.load(Ordering::SeqCst);
        if pending > 0 && pending + len > self.inner.max_uncommitted {
            shared.queued.fetch_sub(len, Ordering::SeqCst);
            return Err(ConsensusError::Busy {
                pending,
                limit: self.inner.max_uncommitted,
            });
        }
        let sent = self.send(Command::Propose(data));
        if sent.is_err() {
            shared.queued.fetch_sub(len, Ordering::SeqCst);
        }
        sent
    }

    /// Asks for a linearizable read point; answered by `Event::ReadIndexReady { ctx, .. }`. Use a
    /// fresh `ctx` for every attempt. Works on followers and learners too (forwarded to the
    /// leader). `Err(NotLeader { leader_id: 0 })` while no leader is known. raft-rs may still
    /// drop the request without an answer (a leader that has not yet committed in its term, a
    /// leader lost on the way): the caller must time it out, and fail it on `RoleChanged`.
    pub fn read_index(&self, ctx: u64) -> Result<(), ConsensusError> {
        // raft-rs drops a read request silently when no leader is known; refuse it here instead so
        // the caller does not wait for an answer that never comes.
        let status = self.inner.shared.status();
        if status.leader_id == 0 && !self.inner.shared.is_stopped() {
            return Err(ConsensusError::NotLeader { leader_id: 0 });
        }
        self.send(Command::ReadIndex(ctx))
    }

    /// Hands over the applier's state exactly as of `index` (which must have been delivered).
    /// Written to disk off the raft thread; the log is compacted once the file is durable.
    pub fn save_snapshot(
        &self,
        index: u64,
        term: u64,
        data: Vec<u8>,
    ) -> Result<(), ConsensusError> {
        let status = self.inner.shared.status();
        // `applied` is published before entries are emitted, so it covers all the caller has seen.
        if index > status.applied {
            return Err(ConsensusError::Invalid(format!(
                "snapshot at {index} is past the last delivered index {}",
                status.applied
            )));
        }
        self.send(Command::SaveSnapshot { index, term, data })
    }

    /// Proposes a membership change (add/remove voters and learners; several changes at once use
    /// joint consensus). Leader only. It takes effect when the entry is applied, which this crate
    /// does itself; the applier sees the entry as a no-op followed by `Event::MembershipChanged`,
    /// which carries `cc.context` back: put there what the applier needs to know of the members
    /// (addresses, ZooKeeper `server.N` lines). A new member starts with an id that is in neither
    /// `Config::voters` nor `Config::learners` (so it does not bootstrap) and catches up from a
    /// snapshot saved after the change (`Event::SnapshotWanted` asks for one).
    pub fn propose_conf_change(&self, cc: ConfChangeV2) -> Result<(), ConsensusError> {
        let status = self.inner.shared.status();
        if !status.is_leader && !self.inner.shared.is_stopped() {
            return Err(ConsensusError::NotLeader {
                leader_id: status.leader_id,
            });
        }
        self.send(Command::ConfChange(cc))
    }

    /// Feeds a message received from a peer into raft.
    pub fn step(&self, msg: Message) -> Result<(), ConsensusError> {
        self.send(Command::Step(msg))
    }

    /// Tells raft that sending to `peer` failed, so it stops pipelining to it.
    pub fn report_unreachable(&self, peer: u64) -> Result<(), ConsensusError> {
        self.send(Command::Unreachable(peer))
    }

    /// Tells raft how sending a snapshot to `peer` ended (a transport that ships snapshots out of
    /// band calls this when the transfer finishes or fails).
    pub fn report_snapshot(&self, peer: u64, ok: bool) -> Result<(), ConsensusError> {
        self.send(Command::SnapshotReport { peer, ok })
    }

    /// The transport's link to `peer` closed (EOF or reset, e.g. its process was killed). On a
    /// follower whose leader that is, the node forgets the leader and campaigns within a few
    /// ticks instead of a whole election timeout; pre-vote still needs a majority, so a flapping
    /// link cannot depose a leader the others still hear. Elsewhere it only marks the peer
    /// unreachable.
    pub fn peer_lost(&self, peer: u64) -> Result<(), ConsensusError> {
        self.send(Command::PeerLost(peer))
    }

    /// Hands leadership to voter `to` (raft-rs `transfer_leader`): it campaigns as soon as its
    /// log matches; proposals are dropped meanwhile; raft gives up after an election timeout.
    /// Leader only.
    pub fn transfer_leader(&self, to: u64) -> Result<(), ConsensusError> {
        let status = self.inner.shared.status();
        if !status.is_leader && !self.inner.shared.is_stopped() {
            return Err(ConsensusError::NotLeader {
                leader_id: status.leader_id,
            });
        }
        self.send(Command::TransferLeader {
            to: Some(to),
            chosen: None,
        })
    }

    /// For a graceful stop (SIGTERM) of a leader: hands leadership to the most up-to-date voter
    /// that is reachable and recently heard from, and waits until another node leads, for at
    /// most `timeout` (retrying once per election timeout if raft gave up). Returns the new
    /// leader. `Err(NotLeader)` if this node is not the leader, `Err(Invalid)` if there is no
    /// other voter or none is reachable (the others stopped: nobody could take over, so the
    /// caller need not wait), `Err(Timeout)` if no one took over.
    /// Blocks the calling thread (it polls the status); call `shutdown` afterwards.
    pub fn transfer_leadership_and_wait(&self, timeout: Duration) -> Result<u64, ConsensusError> {
        let me = self.status();
        if !me.is_leader {
            return Err(ConsensusError::NotLeader {
                leader_id: me.leader_id,
            });
        }
        let (voters, _) = self.membership();
        if !voters.iter().any(|&v| v != me.id) {
            return Err(ConsensusError::Invalid(
                "no other voter to hand leadership to".into(),
            ));
        }
        let deadline = Instant::now() + timeout;
        let mut next_try = Instant::now();
        loop {
            let s = self.status();
            if s.leader_id != 0 && s.leader_id != me.id {
                return Ok(s.leader_id);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(ConsensusError::Timeout(format!(
                    "no other node took over within {timeout:?}"
                )));
            }
            if s.is_leader && now >= next_try {
                let (tx, rx) = crossbeam_channel::bounded(1);
                self.send(Command::TransferLeader {
                    to: None,
                    chosen: Some(tx),
                })?;
                match rx.recv_timeout(deadline.saturating_duration_since(now)) {
                    Ok(Some(_)) => {}
                    Ok(None) if self.status().is_leader => {
                        return Err(ConsensusError::Invalid(
                            "no other voter is reachable and recently heard from".into(),
                        ));
                    }
                    // No longer leader (someone took over, or it stepped down): the loop sees it.
                    Ok(None) => {}
                    Err(_) => continue,
                }
                next_try = now + self.inner.election_timeout;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    pub fn status(&self) -> Status {
        self.inner.shared.status()
    }

    /// When recent entries became durable and committed on this node, and how long the raft
    /// thread's synced appends took (see `timing`).
    pub fn entry_times(&self) -> &crate::timing::EntryTimes {
        &self.inner.shared.times
    }

    /// The current membership: (voters, learners), each ascending.
    pub fn membership(&self) -> (Vec<u64>, Vec<u64>) {
        let d = self.inner.shared.detail();
        (d.voters, d.learners)
    }

    /// The highest commit index this node knew before it last sent messages: on the leader, at
    /// least every index a follower can have applied. Fresher than `status().commit`.
    pub fn commit_known(&self) -> u64 {
        self.inner
            .shared
            .commit_known
            .load(std::sync::atomic::Ordering::SeqCst)
            .max(self.inner.shared.status().commit)
    }

    /// True while raft's membership is a joint configuration it has not left yet (the second
    /// half of a change of more than one member is still to commit).
    pub fn is_joint(&self) -> bool {
        self.inner.shared.detail().joint
    }

    /// The members raft counts only in its joint configuration: outgoing voters and
    /// learners-to-be, not in `membership()` (empty when not joint).
    pub fn joint_only(&self) -> Vec<u64> {
        self.inner.shared.detail().joint_only
    }

    /// On the leader, its view of every other member (for ZooKeeper's `zk_followers` and
    /// `zk_synced_followers`), by id; empty on other nodes. Refreshed by the raft thread after
    /// every loop iteration.
    pub fn progress(&self) -> Vec<PeerProgress> {
        self.inner.shared.detail().progress
    }

    /// True once the raft thread has exited (shutdown or a fatal storage error).
    pub fn is_stopped(&self) -> bool {
        self.inner.shared.is_stopped()
    }

    /// Stops the loop after it has persisted and delivered what it holds, and joins its threads
    /// (pending snapshot writes finish first). Idempotent. For a stepped node (`start_stepped`)
    /// it waits for the stepper's task to end: call it off that runtime's threads
    /// (`spawn_blocking`).
    pub fn shutdown(&self) {
        self.inner.shutdown();
    }

    /// The log store's directory (RocksDB's checkpoint and `log/`).
    pub fn data_dir(&self) -> &Path {
        &self.inner.db_dir
    }

    /// The directory holding snapshot files.
    pub fn snapshot_dir(&self) -> &Path {
        &self.inner.snapshot_dir
    }
}

/// Starts a standalone node (or any node with no peers to reach).
pub fn start(cfg: Config) -> Result<Started, ConsensusError> {
    start_with_transport(cfg, Box::new(NoPeers))
}

/// Starts a node whose outbound messages go to `transport`; inbound ones come in via `Handle::step`.
pub fn start_with_transport(
    cfg: Config,
    transport: Box<dyn Transport>,
) -> Result<Started, ConsensusError> {
    let (events_tx, events) = crossbeam_channel::unbounded();
    let mut started = start_with_sink(cfg, transport, Box::new(events_tx))?;
    started.events = events;
    Ok(started)
}

/// Starts a node that hands its events straight to `sink` on the raft thread, with no channel
/// of its own in between (`Started::events` then never yields anything). The server gives it
/// the core task's own queue, which saves a thread hop per committed batch.
pub fn start_with_sink(
    cfg: Config,
    transport: Box<dyn Transport>,
    sink: Box<dyn EventSink>,
) -> Result<Started, ConsensusError> {
    start_opened(cfg, None, transport, sink)
}

/// As `start_with_sink`, on a store the caller already opened from `cfg.db_dir()` (`None`: open
/// it here), so that a restart opens RocksDB once.
pub fn start_opened(
    cfg: Config,
    store: Option<LogStore>,
    transport: Box<dyn Transport>,
    sink: Box<dyn EventSink>,
) -> Result<Started, ConsensusError> {
    let (driver, snapshot) = Driver::open_with(&cfg, store)?;
    let membership = driver.membership();
    let (tx, rx) = raft_loop::requests(None);
    let shared = Arc::new(Shared::default());
    let threads = raft_loop::spawn(
        driver,
        cfg.tick,
        (tx.clone(), rx),
        sink,
        transport,
        shared.clone(),
    )?;
    Ok(Started {
        handle: Handle::new(&cfg, tx, shared, threads, None),
        events: crossbeam_channel::never(),
        snapshot,
        membership,
    })
}

/// As `start_opened`, but with no raft thread: the caller runs the returned
/// [`Stepper`](crate::Stepper) on a task of its tokio runtime, and raft's tick follows that
/// runtime's clock. For tests on paused time (`tokio::time::pause`): a node whose loop runs on
/// another thread, in real time, while the test's clock jumps, would see its applier's timers
/// fire around a write it is still persisting.
#[cfg(feature = "testing")]
pub fn start_stepped(
    cfg: Config,
    store: Option<LogStore>,
    transport: Box<dyn Transport>,
    sink: Box<dyn EventSink>,
) -> Result<(Started, raft_loop::Stepper), ConsensusError> {
    let (driver, snapshot) = Driver::open_with(&cfg, store)?;
    let membership = driver.membership();
    let wake = Arc::new(tokio::sync::Notify::new());
    let (tx, rx) = raft_loop::requests(Some(wake));
    let shared = Arc::new(Shared::default());
    let (done_tx, done_rx) = crossbeam_channel::bounded(0);
    let stepper = raft_loop::stepper(
        driver,
        cfg.tick,
        (tx.clone(), rx),
        sink,
        transport,
        shared.clone(),
        done_tx,
    )?;
    let started = Started {
        handle: Handle::new(&cfg, tx, shared, Vec::new(), Some(done_rx)),
        events: crossbeam_channel::never(),
        snapshot,
        membership,
    };
    Ok((started, stepper))
}

impl Handle {
    fn new(
        cfg: &Config,
        tx: RequestTx,
        shared: Arc<Shared>,
        threads: Vec<JoinHandle<()>>,
        stepper_done: Option<Receiver<()>>,
    ) -> Handle {
        Handle {
            inner: Arc::new(Inner {
                tx,
                shared,
                max_uncommitted: cfg.max_uncommitted_bytes,
                election_timeout: cfg.election_timeout(),
                threads: Mutex::new(threads),
                db_dir: cfg.db_dir(),
                snapshot_dir: cfg.snapshot_dir(),
                stepper_done,
            }),
        }
    }
}
