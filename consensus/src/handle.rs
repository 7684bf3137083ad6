//! Starting a node, and the cloneable handle callers use to drive it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use raft::eraftpb::{ConfChangeV2, Message};

use crate::driver::{Command, Driver};
use crate::raft_loop::{self, Request};
use crate::status::{Shared, Status};
use crate::transport::{NoPeers, Transport};
use crate::{Config, ConsensusError, Event, Snapshot};

/// What `start` returns: the handle, the applier's event stream, and the snapshot to load first
/// (`None` = start from the empty state).
pub struct Started {
    pub handle: Handle,
    pub events: Receiver<Event>,
    pub snapshot: Option<Snapshot>,
}

struct Inner {
    tx: Sender<Request>,
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    db_dir: PathBuf,
    snapshot_dir: PathBuf,
}

impl Inner {
    fn shutdown(&self) {
        let _ = self.tx.send(Request::Shutdown);
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
        self.shutdown();
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
        self.inner
            .tx
            .send(Request::Command(cmd))
            .map_err(|_| ConsensusError::Stopped)
    }

    /// Queues `data` for replication; never blocks. The entry comes back through
    /// `Event::Committed` once committed. `Err(NotLeader)` when this node knows it is not the
    /// leader (leader_id 0 = none known); a proposal racing with a leadership loss is dropped by
    /// raft and surfaces only as `Event::RoleChanged`.
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
        self.send(Command::Propose(data))
    }

    /// Asks for a linearizable read point; answered by `Event::ReadIndexReady { ctx, .. }`. Use a
    /// fresh `ctx` for every attempt. Works on followers too (forwarded to the leader).
    /// `Err(NotLeader { leader_id: 0 })` while no leader is known.
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
    /// does itself; the applier sees the entry as a no-op. A new member starts with an id that is
    /// not in its `Config::voters` (so it does not bootstrap) and catches up from the first
    /// snapshot the applier saves after the change.
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

    pub fn status(&self) -> Status {
        self.inner.shared.status()
    }

    /// True once the raft thread has exited (shutdown or a fatal storage error).
    pub fn is_stopped(&self) -> bool {
        self.inner.shared.is_stopped()
    }

    /// Stops the loop after it has persisted and delivered what it holds, and joins its threads
    /// (pending snapshot writes finish first). Idempotent.
    pub fn shutdown(&self) {
        self.inner.shutdown();
    }

    /// The RocksDB directory holding the log.
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
    let (driver, snapshot) = Driver::open(&cfg)?;
    let (tx, rx) = crossbeam_channel::unbounded();
    let (events_tx, events) = crossbeam_channel::unbounded();
    let shared = Arc::new(Shared {
        status: Mutex::new(Status::default()),
        stopped: Default::default(),
    });
    let threads = raft_loop::spawn(driver, cfg.tick, rx, events_tx, transport, shared.clone())?;
    let handle = Handle {
        inner: Arc::new(Inner {
            tx,
            shared,
            threads: Mutex::new(threads),
            db_dir: cfg.db_dir(),
            snapshot_dir: cfg.snapshot_dir(),
        }),
    };
    Ok(Started {
        handle,
        events,
        snapshot,
    })
}
