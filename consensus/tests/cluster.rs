//! Three nodes in one process over a channel transport: election, replication, leader failure,
//! re-election, a restarted node catching up from the log, and a lagging node catching up from a
//! snapshot after the leader compacted its log.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use consensus::{
    start_with_transport, CommittedEntry, ConfChangeSingle, ConfChangeType, ConfChangeV2, Config,
    ConsensusError, Event, Handle, Message, MessageType, Snapshot, Transport,
};

const WAIT: Duration = Duration::from_secs(15);

/// Delivers messages straight into the addressee's handle; nodes not registered are unreachable.
#[derive(Clone, Default)]
struct Router {
    nodes: Arc<Mutex<HashMap<u64, Handle>>>,
    /// Nodes cut off from everyone: messages from or to them are dropped.
    isolated: Arc<Mutex<HashSet<u64>>>,
    /// Snapshot messages still to be lost on the way, and those lost so far.
    drop_snapshots: Arc<Mutex<(u32, u32)>>,
}

struct RouterTransport(Router);

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
struct Applied {
    entries: Vec<CommittedEntry>,
    snapshots: Vec<Snapshot>,
    reads: Vec<(u64, u64)>,
    /// Index the next committed entry must have; any skip or repeat is recorded in `gaps`.
    next: Option<u64>,
    gaps: Vec<String>,
    /// The replicated state machine: every payload with its index, rebuilt from snapshots.
    state: Vec<(u64, Vec<u8>)>,
}

fn encode_state(state: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, d) in state {
        out.extend_from_slice(&i.to_be_bytes());
        out.extend_from_slice(&(d.len() as u32).to_be_bytes());
        out.extend_from_slice(d);
    }
    out
}

fn decode_state(mut b: &[u8]) -> Option<Vec<(u64, Vec<u8>)>> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let i = u64::from_be_bytes(b.get(..8)?.try_into().ok()?);
        let n = u32::from_be_bytes(b.get(8..12)?.try_into().ok()?) as usize;
        out.push((i, b.get(12..12 + n)?.to_vec()));
        b = &b[12 + n..];
    }
    Some(out)
}

struct Node {
    handle: Handle,
    applied: Arc<Mutex<Applied>>,
    loaded: Option<Snapshot>,
}

struct Cluster {
    router: Router,
    dirs: HashMap<u64, tempfile::TempDir>,
    nodes: HashMap<u64, Node>,
    keep: u64,
    /// Appliers save a snapshot of their state at every index divisible by this (0 = never).
    snapshot_every: u64,
}

impl Cluster {
    fn new(ids: &[u64], keep: u64) -> Cluster {
        Cluster::with_snapshots(ids, keep, 0)
    }

    fn with_snapshots(ids: &[u64], keep: u64, snapshot_every: u64) -> Cluster {
        let mut c = Cluster {
            router: Router::default(),
            dirs: ids
                .iter()
                .map(|&id| (id, tempfile::tempdir().unwrap()))
                .collect(),
            nodes: HashMap::new(),
            keep,
            snapshot_every,
        };
        for &id in ids {
            c.start(id);
        }
        c
    }

    fn dir(&self, id: u64) -> PathBuf {
        self.dirs[&id].path().to_path_buf()
    }

    fn start(&mut self, id: u64) {
        let cfg = Config {
            id,
            dir: self.dir(id),
            voters: vec![1, 2, 3],
            // Elections after 200-400 ms: short, but long enough not to fire spuriously when the
            // 2-core test machine is busy.
            tick: Duration::from_millis(20),
            election_tick: 10,
            heartbeat_tick: 3,
            snapshot_keep_entries: self.keep,
        };
        let started =
            start_with_transport(cfg, Box::new(RouterTransport(self.router.clone()))).unwrap();
        let applied = Arc::new(Mutex::new(Applied::default()));
        if let Some(s) = &started.snapshot {
            applied.lock().unwrap().state = decode_state(&s.data).unwrap_or_default();
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
                            if !e.data.is_empty() {
                                a.state.push((e.index, e.data.clone()));
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
                        a.state = decode_state(&s.data).unwrap_or_default();
                        a.snapshots.push(s);
                    }
                    Event::ReadIndexReady { ctx, index } => a.reads.push((ctx, index)),
                    _ => {}
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
                loaded: started.snapshot,
            },
        );
    }

    fn stop(&mut self, id: u64) {
        self.router.nodes.lock().unwrap().remove(&id);
        let node = self.nodes.remove(&id).unwrap();
        node.handle.shutdown();
    }

    fn handle(&self, id: u64) -> &Handle {
        &self.nodes[&id].handle
    }

    /// Waits until exactly one reachable node leads and every reachable node agrees on it.
    fn leader(&self) -> u64 {
        let deadline = Instant::now() + WAIT;
        loop {
            let isolated = self.router.isolated.lock().unwrap().clone();
            let statuses: Vec<_> = self
                .nodes
                .iter()
                .filter(|(id, _)| !isolated.contains(id))
                .map(|(_, n)| n.handle.status())
                .collect();
            let leaders: Vec<_> = statuses.iter().filter(|s| s.is_leader).collect();
            if leaders.len() == 1 {
                let l = leaders[0];
                if statuses
                    .iter()
                    .all(|s| s.leader_id == l.id && s.term == l.term)
                {
                    return l.id;
                }
            }
            assert!(Instant::now() < deadline, "no agreed leader: {statuses:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Data entries applied by `id`, as (index, data).
    fn payloads(&self, id: u64) -> Vec<(u64, Vec<u8>)> {
        let a = self.nodes[&id].applied.lock().unwrap();
        assert!(
            a.gaps.is_empty(),
            "node {id} saw out-of-order delivery: {:?}",
            a.gaps
        );
        a.entries
            .iter()
            .filter(|e| !e.data.is_empty())
            .map(|e| (e.index, e.data.clone()))
            .collect()
    }

    fn wait_applied(&self, id: u64, index: u64) {
        let deadline = Instant::now() + WAIT;
        while self.nodes[&id]
            .applied
            .lock()
            .unwrap()
            .entries
            .last()
            .map_or(0, |e| e.index)
            < index
        {
            assert!(
                Instant::now() < deadline,
                "node {id} did not apply {index}: {:?}",
                self.handle(id).status()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Proposes `data` on the leader, retrying through leader changes, until `count` payloads have
    /// been proposed; returns the highest index once committed on the leader.
    fn propose_all(&self, data: &[Vec<u8>]) -> u64 {
        let leader = self.leader();
        for d in data {
            self.handle(leader).propose(d.clone()).unwrap();
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let got = self.payloads(leader);
            if data.iter().all(|d| got.iter().any(|(_, g)| g == d)) {
                return got
                    .iter()
                    .filter(|(_, g)| data.contains(g))
                    .map(|(i, _)| *i)
                    .max()
                    .unwrap();
            }
            assert!(
                Instant::now() < deadline,
                "proposals not committed on {leader}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn batch(prefix: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{prefix}{i}").into_bytes())
        .collect()
}

#[test]
fn three_nodes_elect_one_leader_and_replicate_in_the_same_order() {
    let c = Cluster::new(&[1, 2, 3], 1000);
    let leader = c.leader();
    let follower = [1, 2, 3].into_iter().find(|&i| i != leader).unwrap();
    match c.handle(follower).propose(b"x".to_vec()) {
        Err(ConsensusError::NotLeader { leader_id }) => assert_eq!(leader_id, leader),
        other => panic!("follower accepted a proposal: {other:?}"),
    }
    let last = c.propose_all(&batch("a", 200));
    for id in [1, 2, 3] {
        c.wait_applied(id, last);
    }
    let reference = c.payloads(leader);
    assert_eq!(reference.len(), 200);
    for id in [1, 2, 3] {
        assert_eq!(
            c.payloads(id),
            reference,
            "node {id} applied a different log"
        );
    }
    // A follower's read barrier is answered through the leader, at an index covering every
    // write committed before it was asked.
    c.handle(follower).read_index(5).unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        let reads = c.nodes[&follower].applied.lock().unwrap().reads.clone();
        if let Some(&(ctx, index)) = reads.first() {
            assert_eq!(ctx, 5);
            assert!(index >= last, "read index {index} behind commit {last}");
            break;
        }
        assert!(Instant::now() < deadline, "no read index answer");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn killing_the_leader_elects_another_and_the_old_one_catches_up_on_restart() {
    let mut c = Cluster::new(&[1, 2, 3], 1000);
    let first = c.leader();
    let term1 = c.handle(first).status().term;
    let last = c.propose_all(&batch("before", 50));
    for id in [1, 2, 3] {
        c.wait_applied(id, last);
    }

    c.stop(first);
    let second = c.leader();
    assert_ne!(second, first);
    assert!(c.handle(second).status().term > term1);
    let last = c.propose_all(&batch("after", 50));
    for id in c.nodes.keys().copied().collect::<Vec<_>>() {
        c.wait_applied(id, last);
    }

    c.start(first);
    c.wait_applied(first, last);
    let reference = c.payloads(second);
    assert_eq!(reference.len(), 100);
    assert_eq!(c.payloads(first), reference);
    assert_eq!(
        c.leader(),
        second,
        "a rejoining node must not disrupt the leader (pre-vote)"
    );
}

#[test]
fn lagging_follower_catches_up_from_a_snapshot_after_compaction() {
    lagging_follower_catches_up(0);
}

#[test]
fn a_lost_snapshot_message_is_sent_again() {
    // raft-rs pauses replication to a follower until its snapshot is acknowledged; the channel
    // transport never reports a loss, so only the node's own timeout can resend it.
    lagging_follower_catches_up(2);
}

/// A follower stopped while the others snapshot and compact past its log comes back and catches
/// up from the leader's snapshot; the first `lose` snapshot messages are lost on the way.
fn lagging_follower_catches_up(lose: u32) {
    let mut c = Cluster::new(&[1, 2, 3], 0);
    let leader = c.leader();
    let lagging = [1, 2, 3].into_iter().find(|&i| i != leader).unwrap();
    let first = c.propose_all(&batch("a", 20));
    c.wait_applied(lagging, first);
    c.stop(lagging);

    // Two snapshots on both running nodes, so whichever leads has compacted past everything the
    // lagging node has (leadership may move on a loaded machine).
    let mut last = first;
    let running: Vec<u64> = c.nodes.keys().copied().collect();
    for round in 0..2 {
        last = c.propose_all(&batch(&format!("r{round}-"), 20));
        for &id in &running {
            c.wait_applied(id, last);
            let term = c.nodes[&id]
                .applied
                .lock()
                .unwrap()
                .entries
                .iter()
                .find(|e| e.index == last)
                .unwrap()
                .term;
            let state = format!("state@{last}").into_bytes();
            c.handle(id).save_snapshot(last, term, state).unwrap();
            let deadline = Instant::now() + WAIT;
            while c.handle(id).status().snapshot_index != last {
                assert!(
                    Instant::now() < deadline,
                    "node {id} did not record snapshot {last}"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
    for &id in &running {
        assert!(c.handle(id).status().first_index > first + 1);
    }

    *c.router.drop_snapshots.lock().unwrap() = (lose, 0);
    c.start(lagging);
    assert_eq!(
        c.nodes[&lagging].loaded, None,
        "it had no snapshot of its own"
    );
    let more = c.propose_all(&batch("b", 5));
    c.wait_applied(lagging, more);
    assert_eq!(*c.router.drop_snapshots.lock().unwrap(), (0, lose));
    let a = c.nodes[&lagging].applied.lock().unwrap();
    assert_eq!(a.snapshots.len(), 1);
    let snap = &a.snapshots[0];
    assert_eq!(snap.data, format!("state@{}", snap.index).into_bytes());
    assert!(
        snap.index >= last - 20 && snap.index <= last,
        "snapshot at {}",
        snap.index
    );
    // After the snapshot the entries continue from the next index.
    let after: Vec<u64> = a
        .entries
        .iter()
        .map(|e| e.index)
        .filter(|&i| i > snap.index)
        .collect();
    assert_eq!(after, (snap.index + 1..=more).collect::<Vec<_>>());
}

#[test]
fn isolated_leader_steps_down_and_its_uncommitted_entries_are_discarded_on_heal() {
    let c = Cluster::new(&[1, 2, 3], 1000);
    let old = c.leader();
    let last = c.propose_all(&batch("a", 20));
    for id in [1, 2, 3] {
        c.wait_applied(id, last);
    }

    c.router.isolated.lock().unwrap().insert(old);
    // Accepted locally while it still believes it leads, but never committed.
    for d in batch("lost", 5) {
        let _ = c.handle(old).propose(d);
    }
    let new = c.leader();
    assert_ne!(new, old);
    // check_quorum: a leader that cannot hear a majority steps down.
    let deadline = Instant::now() + WAIT;
    while c.handle(old).status().is_leader {
        assert!(Instant::now() < deadline, "isolated leader kept leading");
        std::thread::sleep(Duration::from_millis(10));
    }
    let last = c.propose_all(&batch("b", 20));

    c.router.isolated.lock().unwrap().clear();
    c.wait_applied(old, last);
    assert_eq!(c.leader(), new);
    let reference = c.payloads(new);
    assert_eq!(reference.len(), 40);
    for id in [1, 2, 3] {
        let got = c.payloads(id);
        assert_eq!(got, reference, "node {id} diverged");
        assert!(got.iter().all(|(_, d)| !d.starts_with(b"lost")));
    }
}

#[test]
fn a_node_without_quorum_refuses_proposals_and_reads_instead_of_hanging() {
    // Node 1 of a three-voter group whose peers never start: it can never elect a leader.
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config {
        id: 1,
        dir: dir.path().to_path_buf(),
        voters: vec![1, 2, 3],
        tick: Duration::from_millis(10),
        election_tick: 10,
        heartbeat_tick: 3,
        snapshot_keep_entries: 1000,
    };
    let started = start_with_transport(cfg, Box::new(RouterTransport(Router::default()))).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let s = started.handle.status();
    assert_eq!((s.is_leader, s.leader_id), (false, 0));
    assert!(matches!(
        started.handle.propose(b"x".to_vec()),
        Err(ConsensusError::NotLeader { leader_id: 0 })
    ));
    assert!(matches!(
        started.handle.read_index(1),
        Err(ConsensusError::NotLeader { leader_id: 0 })
    ));
    started.handle.shutdown();
}

/// xorshift64*: reproducible fault choices without a dependency (thread timing still varies, so
/// a seed narrows a failure down rather than replaying it exactly).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

fn state(c: &Cluster, id: u64) -> Vec<(u64, Vec<u8>)> {
    let a = c.nodes[&id].applied.lock().unwrap();
    assert!(
        a.gaps.is_empty(),
        "node {id} saw out-of-order delivery: {:?}",
        a.gaps
    );
    a.state.clone()
}

/// Three nodes take writes for 3 s while a seeded nemesis stops/restarts one node or
/// isolates/heals one. Afterwards every node's state must be identical, everything any applier
/// (of any incarnation) ever held must be in it at the same index, and nothing may commit twice.
fn nemesis(keep: u64, snapshot_every: u64) {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("nemesis seed {seed}");
    let mut rng = Rng(seed);
    let mut c = Cluster::with_snapshots(&[1, 2, 3], keep, snapshot_every);
    c.leader();
    let mut appliers: Vec<Arc<Mutex<Applied>>> =
        c.nodes.values().map(|n| n.applied.clone()).collect();
    let mut down: Option<u64> = None;
    let mut next = 0u64;
    let end = Instant::now() + Duration::from_secs(3);
    while Instant::now() < end {
        // Write to whoever thinks it leads; failures are expected during faults.
        for n in c.nodes.values() {
            if n.handle.status().is_leader {
                for _ in 0..20 {
                    let _ = n.handle.propose(format!("w{next}").into_bytes());
                    next += 1;
                }
            }
        }
        match rng.below(10) {
            0 => {
                if let Some(id) = down.take() {
                    c.start(id);
                    appliers.push(c.nodes[&id].applied.clone());
                } else {
                    let id = 1 + rng.below(3);
                    c.stop(id);
                    down = Some(id);
                }
            }
            1 => {
                let mut iso = c.router.isolated.lock().unwrap();
                if iso.is_empty() {
                    iso.insert(1 + rng.below(3));
                } else {
                    iso.clear();
                }
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    c.router.isolated.lock().unwrap().clear();
    if let Some(id) = down {
        c.start(id);
        appliers.push(c.nodes[&id].applied.clone());
    }
    // One more write through a settled leader, so every node's log ends at a known index.
    let last = c.propose_all(&[b"final".to_vec()]);
    for id in [1, 2, 3] {
        c.wait_applied(id, last);
    }

    let reference = state(&c, c.leader());
    for id in [1, 2, 3] {
        assert_eq!(state(&c, id), reference, "seed {seed}: node {id} diverged");
    }
    let final_state: HashMap<u64, Vec<u8>> = reference.iter().cloned().collect();
    for a in &appliers {
        let a = a.lock().unwrap();
        assert!(
            a.gaps.is_empty(),
            "seed {seed}: out-of-order delivery {:?}",
            a.gaps
        );
        for (index, data) in &a.state {
            assert_eq!(
                final_state.get(index),
                Some(data),
                "seed {seed}: applied entry {index} lost or changed"
            );
        }
    }
    let installs: usize = appliers
        .iter()
        .map(|a| a.lock().unwrap().snapshots.len())
        .sum();
    eprintln!(
        "seed {seed}: {} entries, {} incarnations, {installs} snapshot installs",
        reference.len(),
        appliers.len()
    );
    let distinct: HashSet<&Vec<u8>> = reference.iter().map(|(_, d)| d).collect();
    assert_eq!(
        distinct.len(),
        reference.len(),
        "seed {seed}: an entry committed twice"
    );
    assert!(
        reference.len() > 100,
        "seed {seed}: too little progress ({})",
        reference.len()
    );
    if snapshot_every > 0 {
        let snapshots: Vec<u64> = [1, 2, 3]
            .iter()
            .map(|&id| c.handle(id).status().snapshot_index)
            .collect();
        assert!(
            snapshots.iter().all(|&i| i > 1),
            "seed {seed}: snapshots {snapshots:?}"
        );
    }
}

#[test]
fn random_kills_restarts_and_partitions_keep_every_applied_entry_and_one_history() {
    nemesis(1000, 0);
}

#[test]
fn nemesis_with_frequent_snapshots_and_aggressive_compaction_keeps_one_history() {
    nemesis(5, 40);
}

fn conf_change(changes: &[(ConfChangeType, u64)]) -> ConfChangeV2 {
    ConfChangeV2 {
        changes: changes
            .iter()
            .map(|&(change_type, node_id)| ConfChangeSingle {
                change_type,
                node_id,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

#[test]
fn a_new_member_joins_as_learner_catches_up_by_snapshot_and_replaces_a_voter() {
    // Appliers snapshot every 20 entries and keep 10: node 4 can only catch up by snapshot.
    let mut c = Cluster::with_snapshots(&[1, 2, 3], 10, 20);
    let leader = c.leader();
    let others: Vec<u64> = [1, 2, 3].into_iter().filter(|&i| i != leader).collect();
    let (x, y) = (others[0], others[1]);
    c.propose_all(&batch("a", 30));

    c.handle(leader)
        .propose_conf_change(conf_change(&[(ConfChangeType::AddLearnerNode, 4)]))
        .unwrap();
    c.dirs.insert(4, tempfile::tempdir().unwrap());
    c.start(4);
    assert_eq!(
        c.handle(4).status().last_index,
        0,
        "a new member does not bootstrap"
    );
    // Crosses index 60 or so: a snapshot taken after the change, which includes node 4.
    let last = c.propose_all(&batch("b", 30));
    c.wait_applied(4, last);
    assert_eq!(state(&c, 4), state(&c, leader));
    assert!(!c.nodes[&4].applied.lock().unwrap().snapshots.is_empty());

    // Promote 4, then remove x: the voters become {leader, y, 4}.
    c.handle(leader)
        .propose_conf_change(conf_change(&[(ConfChangeType::AddNode, 4)]))
        .unwrap();
    c.propose_all(&batch("c", 5));
    c.handle(leader)
        .propose_conf_change(conf_change(&[(ConfChangeType::RemoveNode, x)]))
        .unwrap();
    c.propose_all(&batch("d", 5));
    c.stop(x);

    // Node 4 restarts from its own snapshot and log, membership included.
    c.stop(4);
    c.start(4);
    let last = c.propose_all(&batch("e", 5));
    c.wait_applied(4, last);

    // Without y, only the leader and node 4 remain: a quorum only if 4 is really a voter.
    c.stop(y);
    let last = c.propose_all(&batch("f", 5));
    c.wait_applied(4, last);
    assert_eq!(state(&c, 4), state(&c, leader));
    assert_eq!(state(&c, 4).len(), 80);
}

#[test]
fn a_snapshot_records_the_membership_as_of_its_own_index() {
    let c = Cluster::new(&[1, 2, 3], 1000);
    let leader = c.leader();
    let before = c.propose_all(&batch("a", 5));
    c.handle(leader)
        .propose_conf_change(conf_change(&[(ConfChangeType::AddLearnerNode, 4)]))
        .unwrap();
    let after = c.propose_all(&batch("b", 5));
    let entries = c.nodes[&leader].applied.lock().unwrap().entries.clone();
    let change = entries
        .iter()
        .find(|e| e.index > before && e.data.is_empty())
        .expect("the membership change reaches the applier as a no-op");
    assert!(change.index < after);

    // Both snapshots are taken after the change was applied; only the later one includes it.
    let dir = c.handle(leader).snapshot_dir().to_path_buf();
    for (index, learners) in [(change.index - 1, vec![]), (change.index + 1, vec![4])] {
        let term = entries.iter().find(|e| e.index == index).unwrap().term;
        c.handle(leader)
            .save_snapshot(index, term, b"s".to_vec())
            .unwrap();
        let deadline = Instant::now() + WAIT;
        while c.handle(leader).status().snapshot_index != index {
            assert!(Instant::now() < deadline, "snapshot {index} not recorded");
            std::thread::sleep(Duration::from_millis(10));
        }
        let file = consensus::snapshot_file::read(&dir, index)
            .unwrap()
            .unwrap();
        assert_eq!(file.conf_state.voters, vec![1, 2, 3]);
        assert_eq!(file.conf_state.learners, learners, "snapshot at {index}");
    }
}
