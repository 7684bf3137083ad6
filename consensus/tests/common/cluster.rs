//! Nodes of one group in one process, over a `Router` that hands each message straight to the
//! addressee's `Handle::step` (no bytes on a wire). Faults: isolating a node (both directions),
//! losing the next N snapshot messages, and stopping a node (a graceful `shutdown`).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use consensus::{
    start_with_transport, CommittedEntry, Config, Event, Handle, Message, MessageType, Snapshot,
    Transport,
};

use super::wait_for;

/// Delivers messages straight into the addressee's handle; nodes not registered are unreachable.
#[derive(Clone, Default)]
pub struct Router {
    pub nodes: Arc<Mutex<HashMap<u64, Handle>>>,
    /// Nodes cut off from everyone: messages from or to them are dropped.
    pub isolated: Arc<Mutex<HashSet<u64>>>,
    /// Snapshot messages still to be lost on the way, and those lost so far.
    pub drop_snapshots: Arc<Mutex<(u32, u32)>>,
}

pub struct RouterTransport(pub Router);

impl Transport for RouterTransport {
    fn send(&mut self, msgs: Vec<Message>) {
        let nodes = self.0.nodes.lock().unwrap();
        let isolated = self.0.isolated.lock().unwrap();
        let mut drop_snapshots = self.0.drop_snapshots.lock().unwrap();
        for m in msgs {
            if isolated.contains(&m.from) || isolated.contains(&m.to) {
                continue;
            }
            if m.get_msg_type() == MessageType::MsgSnapshot && drop_snapshots.0 > 0 {
                drop_snapshots.0 -= 1;
                drop_snapshots.1 += 1;
                continue;
            }
            if let Some(h) = nodes.get(&m.to) {
                let _ = h.step(m);
            }
        }
    }
}

/// What the applier of one node has seen.
#[derive(Default)]
pub struct Applied {
    pub entries: Vec<CommittedEntry>,
    pub snapshots: Vec<Snapshot>,
    pub reads: Vec<(u64, u64)>,
    /// Every event other than `Committed`, in arrival order.
    pub others: Vec<Event>,
    /// Index the next committed entry must have; any skip or repeat is recorded in `gaps`.
    pub next: Option<u64>,
    pub gaps: Vec<String>,
    /// The replicated state machine: every payload with its index, rebuilt from snapshots.
    pub state: Vec<(u64, Vec<u8>)>,
    /// Index and term of the last entry (or snapshot) applied.
    pub last: (u64, u64),
}

pub fn encode_state(state: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, d) in state {
        out.extend_from_slice(&i.to_be_bytes());
        out.extend_from_slice(&(d.len() as u32).to_be_bytes());
        out.extend_from_slice(d);
    }
    out
}

pub fn decode_state(mut b: &[u8]) -> Option<Vec<(u64, Vec<u8>)>> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let i = u64::from_be_bytes(b.get(..8)?.try_into().ok()?);
        let n = u32::from_be_bytes(b.get(8..12)?.try_into().ok()?) as usize;
        out.push((i, b.get(12..12 + n)?.to_vec()));
        b = &b[12 + n..];
    }
    Some(out)
}

pub struct Node {
    pub handle: Handle,
    pub applied: Arc<Mutex<Applied>>,
    pub loaded: Option<Snapshot>,
}

pub struct Cluster {
    pub router: Router,
    pub dirs: HashMap<u64, tempfile::TempDir>,
    pub nodes: HashMap<u64, Node>,
    pub keep: u64,
    /// Appliers save a snapshot of their state at every index divisible by this (0 = never).
    pub snapshot_every: u64,
    /// The initial voters every node is configured with.
    pub voters: Vec<u64>,
    /// Settings applied to every node started after they are changed.
    pub tick: Duration,
    pub election_tick: usize,
}

/// Nodes stop before their directories go: fields drop in declaration order, so without this the
/// temporary directories would be removed under running RocksDB instances when a test panics, and
/// the next WAL write would fail (librocksdb's assertions then abort the whole test binary and hide
/// the panic that started it).
impl Drop for Cluster {
    fn drop(&mut self) {
        for (_, node) in self.nodes.drain() {
            node.handle.shutdown();
        }
    }
}

impl Cluster {
    pub fn new(ids: &[u64], keep: u64) -> Cluster {
        Cluster::with_snapshots(ids, keep, 0)
    }

    pub fn with_snapshots(ids: &[u64], keep: u64, snapshot_every: u64) -> Cluster {
        let mut c = Cluster::unstarted(ids, keep, snapshot_every);
        for &id in ids {
            c.start(id);
        }
        c
    }

    /// A cluster whose nodes are not started yet (so settings can be changed first).
    pub fn unstarted(ids: &[u64], keep: u64, snapshot_every: u64) -> Cluster {
        Cluster {
            router: Router::default(),
            dirs: ids
                .iter()
                .map(|&id| (id, tempfile::tempdir().unwrap()))
                .collect(),
            nodes: HashMap::new(),
            keep,
            snapshot_every,
            voters: ids.to_vec(),
            // Elections after 200-400 ms: short, but long enough not to fire spuriously when the
            // 2-core test machine is busy.
            tick: Duration::from_millis(20),
            election_tick: 10,
        }
    }

    pub fn dir(&self, id: u64) -> PathBuf {
        self.dirs[&id].path().to_path_buf()
    }

    /// The settings node `id` starts with (its directory is made on first use).
    pub fn config(&mut self, id: u64) -> Config {
        self.dirs
            .entry(id)
            .or_insert_with(|| tempfile::tempdir().unwrap());
        Config {
            id,
            voters: self.voters.clone(),
            tick: self.tick,
            election_tick: self.election_tick,
            heartbeat_tick: 3,
            snapshot_keep_entries: self.keep,
            ..Config::standalone(self.dir(id))
        }
    }

    pub fn start(&mut self, id: u64) {
        let cfg = self.config(id);
        self.start_with(cfg);
    }

    /// Starts a node with its own config. Its applier thread answers `SnapshotWanted` with a
    /// snapshot of its state at once, and otherwise snapshots every `snapshot_every` entries.
    pub fn start_with(&mut self, cfg: Config) {
        let id = cfg.id;
        let started =
            start_with_transport(cfg, Box::new(RouterTransport(self.router.clone()))).unwrap();
        let applied = Arc::new(Mutex::new(Applied::default()));
        if let Some(s) = &started.snapshot {
            let mut a = applied.lock().unwrap();
            a.state = decode_state(&s.read_data().unwrap()).unwrap_or_default();
            a.last = (s.index, s.term);
        }
        let sink = applied.clone();
        let events = started.events;
        let handle = started.handle.clone();
        let every = self.snapshot_every;
        std::thread::spawn(move || {
            for ev in events.iter() {
                let mut a = sink.lock().unwrap();
                match ev {
                    Event::Committed(batch) => {
                        for e in &batch {
                            if a.next.is_some_and(|n| n != e.index) {
                                let gap = format!("expected {:?}, got {}", a.next, e.index);
                                a.gaps.push(gap);
                            }
                            a.next = Some(e.index + 1);
                            a.last = (e.index, e.term);
                            if !e.data.is_empty() {
                                a.state.push((e.index, e.data.to_vec()));
                            }
                            if every > 0 && e.index % every == 0 {
                                let _ =
                                    handle.save_snapshot(e.index, e.term, encode_state(&a.state));
                            }
                        }
                        a.entries.extend(batch);
                    }
                    Event::InstallSnapshot(s) => {
                        a.next = Some(s.index + 1);
                        a.last = (s.index, s.term);
                        a.state = decode_state(&s.data).unwrap_or_default();
                        a.snapshots.push(s);
                    }
                    Event::ReadIndexReady { ctx, index } => a.reads.push((ctx, index)),
                    Event::SnapshotWanted { peer } => {
                        // What the server does: a snapshot at the last applied index, now.
                        let (index, term) = a.last;
                        let _ = handle.save_snapshot(index, term, encode_state(&a.state));
                        a.others.push(Event::SnapshotWanted { peer });
                    }
                    other => a.others.push(other),
                }
            }
        });
        self.router
            .nodes
            .lock()
            .unwrap()
            .insert(id, started.handle.clone());
        self.nodes.insert(
            id,
            Node {
                handle: started.handle,
                applied,
                loaded: super::loaded(started.snapshot),
            },
        );
    }

    pub fn stop(&mut self, id: u64) {
        self.router.nodes.lock().unwrap().remove(&id);
        let node = self.nodes.remove(&id).unwrap();
        node.handle.shutdown();
    }

    pub fn handle(&self, id: u64) -> &Handle {
        &self.nodes[&id].handle
    }

    /// Waits until exactly one reachable node leads and every reachable node agrees on it.
    pub fn leader(&self) -> u64 {
        let statuses = || {
            let isolated = self.router.isolated.lock().unwrap().clone();
            self.nodes
                .iter()
                .filter(|(id, _)| !isolated.contains(id))
                .map(|(_, n)| n.handle.status())
                .collect::<Vec<_>>()
        };
        wait_for(
            || format!("an agreed leader: {:?}", statuses()),
            || {
                let statuses = statuses();
                let leaders: Vec<_> = statuses.iter().filter(|s| s.is_leader).collect();
                let l = leaders.first().filter(|_| leaders.len() == 1)?;
                statuses
                    .iter()
                    .all(|s| s.leader_id == l.id && s.term == l.term)
                    .then_some(l.id)
            },
        )
    }

    /// Data entries applied by `id`, as (index, data).
    pub fn payloads(&self, id: u64) -> Vec<(u64, Vec<u8>)> {
        let a = self.nodes[&id].applied.lock().unwrap();
        assert!(
            a.gaps.is_empty(),
            "node {id} saw out-of-order delivery: {:?}",
            a.gaps
        );
        a.entries
            .iter()
            .filter(|e| !e.data.is_empty())
            .map(|e| (e.index, e.data.to_vec()))
            .collect()
    }

    /// The applier's state of `id` (payloads by index, rebuilt from snapshots).
    pub fn state(&self, id: u64) -> Vec<(u64, Vec<u8>)> {
        let a = self.nodes[&id].applied.lock().unwrap();
        assert!(
            a.gaps.is_empty(),
            "node {id} saw out-of-order delivery: {:?}",
            a.gaps
        );
        a.state.clone()
    }

    /// Waits until `id` has applied `index` (from an entry or an installed snapshot).
    pub fn wait_applied(&self, id: u64, index: u64) {
        wait_for(
            || format!("node {id} to apply {index}: {:?}", self.handle(id).status()),
            || (self.nodes[&id].applied.lock().unwrap().last.0 >= index).then_some(()),
        )
    }

    /// Proposes `data` on the leader and returns the highest index once all of it is committed
    /// on the leader.
    pub fn propose_all(&self, data: &[Vec<u8>]) -> u64 {
        let leader = self.leader();
        for d in data {
            self.handle(leader).propose(d.clone()).unwrap();
        }
        wait_for(
            || format!("proposals committed on {leader}"),
            || {
                let got = self.payloads(leader);
                data.iter()
                    .all(|d| got.iter().any(|(_, g)| g == d))
                    .then(|| {
                        got.iter()
                            .filter(|(_, g)| data.contains(g))
                            .map(|(i, _)| *i)
                            .max()
                            .unwrap()
                    })
            },
        )
    }
}

impl Cluster {
    /// Proposes `<name>-<attempt>` until one attempt commits on the leader (a leader change may
    /// drop a proposal; each attempt has its own payload, so none can commit twice); returns its
    /// index.
    pub fn propose_until_committed(&self, name: &str) -> u64 {
        for attempt in 0.. {
            let leader = self.leader();
            let data = format!("{name}-{attempt}").into_bytes();
            if self.handle(leader).propose(data.clone()).is_err() {
                continue;
            }
            let deadline = std::time::Instant::now() + Duration::from_secs(2);
            while std::time::Instant::now() < deadline {
                if let Some((i, _)) = self.payloads(leader).into_iter().find(|(_, d)| *d == data) {
                    return i;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            assert!(attempt < 10, "{name}: no attempt committed");
        }
        unreachable!()
    }
}

pub fn batch(prefix: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{prefix}{i}").into_bytes())
        .collect()
}
