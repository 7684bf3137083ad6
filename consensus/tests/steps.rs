//! Deterministic tests of paddock's rules on top of raft-rs: several real `Driver`s (real RocksDB
//! log, real snapshot files) stepped by hand. Messages move only when the test says so, time moves
//! only by counted ticks, nothing sleeps. raft-rs randomises election timeouts, so elections are
//! started with an explicit `campaign()`.

use std::collections::{BTreeMap, HashSet};

use consensus::driver::{
    Command, Driver, Output, SnapshotJob, REJOIN_PATIENCE_ELECTIONS, SNAPSHOT_ACK_ELECTIONS,
};
use consensus::storage::LogStore;
use consensus::{
    snapshot_file, ConfChangeSingle, ConfChangeType, ConfChangeV2, ConfState, Config, Event,
    Message, MessageType, IMPORT_TERM,
};
use raft::eraftpb::{HardState, SnapshotMetadata};
use raft::ProgressState;

const ELECTION_TICK: usize = 10;
const HEARTBEAT_TICK: usize = 3;

/// A role as `Handle` callers see it: (is_leader, leader_id, term).
type Role = (bool, u64, u64);

/// Everything one driver produced, kept until the test moves it.
#[derive(Default)]
struct Collect {
    msgs: Vec<Message>,
    events: Vec<Event>,
    jobs: Vec<SnapshotJob>,
    /// The role (is_leader, leader_id, term) last published, as `Handle` callers would see it.
    published: Option<Role>,
    /// Each RoleChanged's role, with the role published when it was emitted.
    roles_told: Vec<(Role, Option<Role>)>,
    /// Each message sent (type, term), with the role published when it went out.
    sent: Vec<(MessageType, u64, Option<Role>)>,
}

impl Output for Collect {
    fn send(&mut self, msgs: Vec<Message>) {
        for m in &msgs {
            self.sent.push((m.get_msg_type(), m.term, self.published));
        }
        self.msgs.extend(msgs);
    }
    fn event(&mut self, event: Event) {
        if let Event::RoleChanged {
            is_leader,
            leader_id,
            term,
        } = &event
        {
            self.roles_told
                .push(((*is_leader, *leader_id, *term), self.published));
        }
        self.events.push(event);
    }
    fn write_snapshot(&mut self, job: SnapshotJob) {
        self.jobs.push(job);
    }
    fn publish(&mut self, driver: &Driver) {
        let s = driver.status();
        self.published = Some((s.is_leader, s.leader_id, s.term));
    }
}

struct Node {
    driver: Driver,
    out: Collect,
    _dir: tempfile::TempDir,
}

/// A group of drivers and the messages between them.
struct Net {
    nodes: BTreeMap<u64, Node>,
    /// Nodes that neither send nor receive (stopped or cut off).
    down: HashSet<u64>,
    /// Messages matching this are held back instead of delivered.
    hold: Box<dyn Fn(&Message) -> bool>,
    held: Vec<Message>,
    /// Every message delivered or held so far, for assertions.
    log: Vec<Message>,
}

fn config(id: u64, dir: &std::path::Path, voters: &[u64], keep: u64) -> Config {
    Config {
        id,
        voters: voters.to_vec(),
        election_tick: ELECTION_TICK,
        heartbeat_tick: HEARTBEAT_TICK,
        snapshot_keep_entries: keep,
        ..Config::standalone(dir)
    }
}

impl Net {
    fn new(voters: &[u64], keep: u64) -> Net {
        Net::with_learners(voters, &[], keep)
    }

    /// A group bootstrapped by every initial member, learners included.
    fn with_learners(voters: &[u64], learners: &[u64], keep: u64) -> Net {
        let mut net = Net {
            nodes: BTreeMap::new(),
            down: HashSet::new(),
            hold: Box::new(|_| false),
            held: Vec::new(),
            log: Vec::new(),
        };
        for &id in voters.iter().chain(learners) {
            net.add(Config {
                learners: learners.to_vec(),
                ..config(id, std::path::Path::new(""), voters, keep)
            });
        }
        net
    }

    /// Opens a node with `cfg` (its dir is replaced by a fresh temporary one).
    fn add(&mut self, mut cfg: Config) {
        let dir = tempfile::tempdir().unwrap();
        cfg.dir = dir.path().to_path_buf();
        let (driver, snapshot) = Driver::open(&cfg).unwrap();
        assert!(snapshot.is_none());
        self.nodes.insert(
            cfg.id,
            Node {
                driver,
                out: Collect::default(),
                _dir: dir,
            },
        );
    }

    /// Member `id` as `paddock import` leaves it: a store holding only a snapshot of the imported
    /// state at `index`, term `IMPORT_TERM`, with every voter in its membership (and no voters of
    /// its own to bootstrap, as the server opens a resumed member).
    fn add_imported(&mut self, id: u64, voters: &[u64], index: u64) {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Config {
            voters: Vec::new(),
            ..config(id, dir.path(), voters, 1000)
        };
        let conf = ConfState {
            voters: voters.to_vec(),
            ..Default::default()
        };
        let snapshots = dir.path().join("snapshots");
        snapshot_file::write(&snapshots, index, IMPORT_TERM, &conf, b"imported").unwrap();
        let mut store = LogStore::open(&dir.path().join("raftdb")).unwrap();
        let meta = SnapshotMetadata {
            index,
            term: IMPORT_TERM,
            conf_state: Some(conf).into(),
            ..Default::default()
        };
        let hs = HardState {
            term: IMPORT_TERM,
            commit: index,
            ..Default::default()
        };
        store.write_ready(Some(&meta), &[], Some(&hs)).unwrap();
        drop(store);
        let (driver, snapshot) = Driver::open(&cfg).unwrap();
        assert_eq!(snapshot.map(|s| s.index), Some(index));
        self.nodes.insert(
            id,
            Node {
                driver,
                out: Collect::default(),
                _dir: dir,
            },
        );
    }

    /// Member 3 of the group of 1, 2, 3 (keep 1000) loses its disk and comes back with an empty
    /// store under its old id: not an initial member any more, so it does not bootstrap.
    fn wipe_and_rejoin_member_3_of_3(&mut self) {
        self.nodes.remove(&3);
        self.add(Config {
            voters: Vec::new(),
            ..config(3, std::path::Path::new(""), &[1, 2, 3], 1000)
        });
    }

    fn driver(&self, id: u64) -> &Driver {
        &self.nodes[&id].driver
    }

    fn command(&mut self, id: u64, cmd: Command) {
        let n = self.nodes.get_mut(&id).unwrap();
        n.driver.command(cmd, &mut n.out).unwrap();
    }

    /// Runs every node's Readys, writes requested snapshot files and delivers messages, until
    /// nothing moves.
    fn settle(&mut self) {
        loop {
            let mut moved = false;
            for n in self.nodes.values_mut() {
                n.driver.ready(&mut n.out).unwrap();
                for job in std::mem::take(&mut n.out.jobs) {
                    let saved = job.write(n.driver.snapshot_dir()).unwrap();
                    if let Some(floor) = n.driver.snapshot_saved(saved).unwrap() {
                        snapshot_file::prune_before(n.driver.snapshot_dir(), floor).unwrap();
                    }
                    moved = true;
                }
            }
            let msgs: Vec<Message> = self
                .nodes
                .values_mut()
                .flat_map(|n| std::mem::take(&mut n.out.msgs))
                .collect();
            for m in msgs {
                let unknown = !self.nodes.contains_key(&m.to);
                if unknown || self.down.contains(&m.from) || self.down.contains(&m.to) {
                    continue;
                }
                self.log.push(m.clone());
                if (self.hold)(&m) {
                    self.held.push(m);
                    continue;
                }
                moved = true;
                self.command(m.to, Command::Step(m));
            }
            if !moved {
                return;
            }
        }
    }

    /// One tick on every running node, then settle.
    fn tick(&mut self) {
        for (id, n) in self.nodes.iter_mut() {
            if !self.down.contains(id) {
                n.driver.tick();
            }
        }
        self.settle();
    }

    fn elect(&mut self, id: u64) {
        self.nodes.get_mut(&id).unwrap().driver.campaign().unwrap();
        self.settle();
        assert!(self.driver(id).status().is_leader, "{id} did not win");
    }

    /// Proposes `n` payloads on `leader`; returns the last index once committed there.
    fn propose(&mut self, leader: u64, prefix: &str, n: usize) -> u64 {
        for i in 0..n {
            self.command(
                leader,
                Command::Propose(format!("{prefix}{i}").into_bytes()),
            );
        }
        self.settle();
        let s = self.driver(leader).status();
        assert_eq!(s.commit, s.last_index, "not all committed");
        s.commit
    }

    /// The applier saves a snapshot of `id` at its last delivered index.
    fn save_snapshot(&mut self, id: u64, index: u64) {
        let term = self.driver(id).raw().store().term_of(index).unwrap();
        let data = format!("state@{index}").into_bytes();
        self.command(id, Command::SaveSnapshot { index, term, data });
        self.settle();
        assert_eq!(self.driver(id).status().snapshot_index, index);
    }

    /// Payloads delivered to `id`'s applier, by index.
    fn payloads(&self, id: u64) -> Vec<(u64, Vec<u8>)> {
        self.events(id)
            .iter()
            .flat_map(|e| match e {
                Event::Committed(b) => b.clone(),
                _ => Vec::new(),
            })
            .filter(|e| !e.data.is_empty())
            .map(|e| (e.index, e.data.to_vec()))
            .collect()
    }

    fn role_changes(&self, id: u64) -> Vec<(bool, u64, u64)> {
        self.events(id)
            .iter()
            .filter_map(|e| match e {
                Event::RoleChanged {
                    is_leader,
                    leader_id,
                    term,
                } => Some((*is_leader, *leader_id, *term)),
                _ => None,
            })
            .collect()
    }

    fn leaders(&self) -> Vec<u64> {
        self.nodes
            .iter()
            .filter(|(id, n)| !self.down.contains(id) && n.driver.status().is_leader)
            .map(|(id, _)| *id)
            .collect()
    }

    fn events(&self, id: u64) -> &[Event] {
        &self.nodes[&id].out.events
    }

    /// Indexes delivered to `id`'s applier, in order (entries and installed snapshots).
    fn delivered(&self, id: u64) -> Vec<u64> {
        let mut out = Vec::new();
        for e in self.events(id) {
            match e {
                Event::Committed(b) => out.extend(b.iter().map(|e| e.index)),
                Event::InstallSnapshot(s) => out.push(s.index),
                _ => {}
            }
        }
        out
    }

    fn installs(&self, id: u64) -> Vec<u64> {
        self.events(id)
            .iter()
            .filter_map(|e| match e {
                Event::InstallSnapshot(s) => Some(s.index),
                _ => None,
            })
            .collect()
    }

    fn snapshots_sent_to(&self, to: u64) -> Vec<&Message> {
        self.log
            .iter()
            .filter(|m| m.to == to && m.get_msg_type() == MessageType::MsgSnapshot)
            .collect()
    }

    fn progress_state(&self, leader: u64, of: u64) -> ProgressState {
        self.driver(leader).raw().raft.prs().get(of).unwrap().state
    }
}

fn is_snapshot(m: &Message) -> bool {
    m.get_msg_type() == MessageType::MsgSnapshot
}

/// Node 3 misses everything, the others compact past its log: it can only catch up by snapshot.
fn lagging_third(keep: u64) -> (Net, u64) {
    let mut net = Net::new(&[1, 2, 3], keep);
    net.down.insert(3);
    net.elect(1);
    let a = net.propose(1, "a", 10);
    net.save_snapshot(1, a);
    let b = net.propose(1, "b", 10);
    net.save_snapshot(1, b);
    // The floor is the previous snapshot: the log now starts after `a`.
    assert_eq!(net.driver(1).status().first_index, a + 1);
    (net, b)
}

#[test]
fn an_unacknowledged_snapshot_is_reported_lost_after_five_election_timeouts_and_sent_again() {
    let (mut net, last) = lagging_third(0);
    net.hold = Box::new(is_snapshot);
    net.down.remove(&3);

    // Heartbeats reach node 3, it answers, the leader probes and must send a snapshot.
    let mut ticks = 0;
    while net.held.is_empty() {
        net.tick();
        ticks += 1;
        assert!(ticks <= HEARTBEAT_TICK * 2, "no snapshot sent");
    }
    let first = net.held.remove(0);
    assert_eq!(first.get_snapshot().get_metadata().index, last);
    assert_eq!(net.progress_state(1, 3), ProgressState::Snapshot);

    // Exactly SNAPSHOT_ACK_ELECTIONS election timeouts later (in ticks) it counts as lost.
    let limit = ELECTION_TICK * SNAPSHOT_ACK_ELECTIONS;
    for _ in 1..limit {
        net.tick();
    }
    assert_eq!(net.progress_state(1, 3), ProgressState::Snapshot);
    assert!(net.held.is_empty(), "resent early");
    net.tick();
    assert_eq!(net.progress_state(1, 3), ProgressState::Probe);

    // The next heartbeat round sends it again; this copy arrives.
    let mut ticks = 0;
    while net.held.is_empty() {
        net.tick();
        ticks += 1;
        assert!(ticks <= HEARTBEAT_TICK, "snapshot not resent");
    }
    assert_eq!(net.snapshots_sent_to(3).len(), 2);
    net.hold = Box::new(|_| false);
    let second = net.held.remove(0);
    net.command(3, Command::Step(second));
    net.settle();
    assert_eq!(net.installs(3), vec![last]);

    // The first copy turns up late: harmless, nothing installed twice, replication goes on.
    net.command(3, Command::Step(first));
    net.settle();
    let more = net.propose(1, "c", 3);
    assert_eq!(net.installs(3), vec![last]);
    assert_eq!(
        net.delivered(3),
        (last..=more).collect::<Vec<_>>(),
        "node 3 continues from the snapshot"
    );
    assert_eq!(net.driver(1).status().leader_id, 1);
    assert_eq!(net.progress_state(1, 3), ProgressState::Replicate);
}

#[test]
fn the_log_keeps_the_previous_snapshot_and_snapshot_keep_entries() {
    let mut net = Net::new(&[1], 5);
    net.settle();
    assert!(
        net.driver(1).status().is_leader,
        "a sole voter elects itself"
    );
    let dir = net.driver(1).snapshot_dir().to_path_buf();
    let mut first = Vec::new();
    let mut last = net.propose(1, "a", 20);
    assert_eq!(last, 22, "the leader no-op at 2, then 3..=22");
    for index in [10, 20] {
        net.save_snapshot(1, index);
        first.push(net.driver(1).status().first_index);
    }
    last = net.propose(1, "b", 5);
    net.save_snapshot(1, 22);
    first.push(net.driver(1).status().first_index);
    // 10: the only snapshot, nothing to fall back to, no compaction. 20: min(20 - 5, previous
    // 10) = 10. 22: min(22 - 5, previous 20) = 17.
    assert_eq!(first, vec![2, 11, 18]);
    assert_eq!(snapshot_file::list(&dir).unwrap(), vec![20, 22]);
    assert_eq!(net.driver(1).status().last_index, last);
}

const CONTEXT: &[u8] = b"server.4=10.0.0.4:2888:3888:observer;2181";

fn add_learner(id: u64) -> ConfChangeV2 {
    ConfChangeV2 {
        context: CONTEXT.to_vec().into(),
        changes: vec![ConfChangeSingle {
            change_type: ConfChangeType::AddLearnerNode,
            node_id: id,
            ..Default::default()
        }]
        .into(),
        ..Default::default()
    }
}

#[test]
fn a_learner_is_sent_only_a_snapshot_that_includes_it() {
    let mut net = Net::new(&[1, 2, 3], 1000);
    net.elect(1);
    net.propose(1, "a", 5);
    net.command(1, Command::ConfChange(add_learner(4)));
    net.settle();
    let change = net.driver(1).status().commit;
    let last = net.propose(1, "b", 2);
    net.add(config(4, std::path::Path::new(""), &[1, 2, 3], 1000));
    assert_eq!(net.driver(4).status().last_index, 0, "4 does not bootstrap");

    // A snapshot as of just before the change records the old membership, and is never sent.
    net.save_snapshot(1, change - 1);
    let dir = net.driver(1).snapshot_dir().to_path_buf();
    let file = snapshot_file::read(&dir, change - 1).unwrap().unwrap();
    assert_eq!(
        (file.conf_state.voters.clone(), file.conf_state.learners),
        (vec![1, 2, 3], vec![])
    );
    for _ in 0..3 * ELECTION_TICK {
        net.tick();
    }
    assert!(net.snapshots_sent_to(4).is_empty());
    assert_eq!(net.driver(4).status().last_index, 0);

    // One as of after the change includes node 4, is sent, and node 4 catches up from it.
    net.save_snapshot(1, change + 1);
    let file = snapshot_file::read(&dir, change + 1).unwrap().unwrap();
    assert_eq!(
        (file.conf_state.voters, file.conf_state.learners),
        (vec![1, 2, 3], vec![4])
    );
    for _ in 0..HEARTBEAT_TICK {
        net.tick();
    }
    let sent = net.snapshots_sent_to(4);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].get_snapshot().get_metadata().index, change + 1);
    assert_eq!(net.installs(4), vec![change + 1]);
    assert_eq!(net.delivered(4), (change + 1..=last).collect::<Vec<_>>());

    // The leader asked its applier once for a fresh snapshot, however many heartbeats it took.
    let wanted: Vec<&Event> = net
        .events(1)
        .iter()
        .filter(|e| matches!(e, Event::SnapshotWanted { .. }))
        .collect();
    assert_eq!(wanted, vec![&Event::SnapshotWanted { peer: 4 }]);
    assert!(net
        .events(2)
        .iter()
        .all(|e| !matches!(e, Event::SnapshotWanted { .. })));
    // Every member heard of the change right after the batch ending with it, context included;
    // node 4 heard of the membership with its snapshot.
    for id in [1, 2, 3] {
        let events = net.events(id);
        let at = events
            .iter()
            .position(|e| matches!(e, Event::MembershipChanged { .. }))
            .unwrap();
        assert_eq!(
            events[at],
            Event::MembershipChanged {
                index: change,
                voters: vec![1, 2, 3],
                learners: vec![4],
                context: CONTEXT.to_vec(),
            }
        );
        match &events[at - 1] {
            Event::Committed(b) => {
                let e = b.last().unwrap();
                assert_eq!((e.index, e.data.is_empty()), (change, true));
            }
            other => panic!("before the change: {other:?}"),
        }
        assert_eq!(net.driver(id).membership(), (vec![1, 2, 3], vec![4]));
    }
    assert!(net.events(4).contains(&Event::MembershipChanged {
        index: change + 1,
        voters: vec![1, 2, 3],
        learners: vec![4],
        context: Vec::new(),
    }));
    assert!(net.driver(4).status().is_learner);
}

#[test]
fn learners_listed_at_bootstrap_replicate_without_voting() {
    let mut net = Net::with_learners(&[1, 2, 3], &[4], 1000);
    for id in [1, 2, 3, 4] {
        assert_eq!(net.driver(id).membership(), (vec![1, 2, 3], vec![4]));
        assert_eq!(net.driver(id).status().is_learner, id == 4);
    }
    // A learner does not campaign.
    net.nodes.get_mut(&4).unwrap().driver.campaign().unwrap();
    net.settle();
    assert!(net.leaders().is_empty());
    assert_eq!(net.driver(4).status().term, 1);

    net.elect(1);
    let last = net.propose(1, "a", 5);
    assert_eq!(net.payloads(4), net.payloads(1));
    assert_eq!(net.payloads(4).len(), 5);
    assert_eq!(net.driver(4).status().leader_id, 1);
    let progress = net.driver(1).progress();
    assert_eq!(
        progress
            .iter()
            .map(|p| (p.id, p.matched, p.is_learner))
            .collect::<Vec<_>>(),
        vec![(2, last, false), (3, last, false), (4, last, true)]
    );
    assert!(net.driver(2).progress().is_empty(), "followers report none");

    // Without node 4 the voters still have their quorum; without 2 and 3 they do not, whatever
    // the learner says.
    net.down.insert(4);
    net.propose(1, "b", 1);
    net.down.remove(&4);
    net.down.extend([2, 3]);
    net.command(1, Command::Propose(b"stuck".to_vec()));
    net.settle();
    let s = net.driver(1).status();
    assert_eq!(
        s.commit + 1,
        s.last_index,
        "a learner's ack does not commit"
    );
}

#[test]
fn a_term_change_alone_is_reported_as_a_role_change() {
    let mut net = Net::new(&[1, 2, 3], 1000);
    net.elect(1);
    let term = net.driver(2).status().term;
    assert_eq!(net.role_changes(2).last(), Some(&(false, 1, term)));
    // Node 1 was re-elected at a later term while node 2 was cut off: the first it hears is a
    // heartbeat of the new term, from the same leader.
    let heartbeat = Message {
        msg_type: MessageType::MsgHeartbeat,
        from: 1,
        to: 2,
        term: term + 1,
        commit: net.driver(2).status().commit,
        ..Default::default()
    };
    let before = net.role_changes(2).len();
    net.command(2, Command::Step(heartbeat));
    net.settle();
    assert_eq!(net.role_changes(2)[before..], [(false, 1, term + 1)]);
}

#[test]
fn a_lost_leader_link_elects_a_new_leader_within_a_few_ticks() {
    let mut net = Net::new(&[1, 2, 3], 1000);
    net.elect(1);
    let before = net.propose(1, "a", 5);
    let term = net.driver(1).status().term;
    net.down.insert(1); // kill -9: its links close.
    net.command(2, Command::PeerLost(1));
    net.command(3, Command::PeerLost(1));
    net.settle();
    for id in [2, 3] {
        assert_eq!(
            net.driver(id).status().leader_id,
            0,
            "{id} forgot the leader"
        );
        assert_eq!(net.role_changes(id).last(), Some(&(false, 0, term)));
    }
    // Node 2 ranks first among the survivors: it campaigns after one tick and wins.
    net.tick();
    assert_eq!(net.leaders(), vec![2]);
    assert_eq!(net.driver(2).status().term, term + 1);
    assert_eq!(net.driver(3).status().leader_id, 2);
    // Nothing committed before is lost.
    let after = net.propose(2, "b", 3);
    assert_eq!(net.payloads(3), net.payloads(2));
    assert_eq!(
        net.payloads(3).iter().filter(|(i, _)| *i <= before).count(),
        5
    );
    assert!(after > before);
}

#[test]
fn without_peer_lost_followers_wait_for_an_election_timeout() {
    let mut net = Net::new(&[1, 2, 3], 1000);
    net.elect(1);
    net.down.insert(1);
    for _ in 0..ELECTION_TICK - 1 {
        net.tick();
    }
    assert!(net.leaders().is_empty());
    assert_eq!(net.driver(2).status().leader_id, 1);
    assert_eq!(net.driver(3).status().leader_id, 1);
}

#[test]
fn a_lost_link_on_one_follower_cannot_depose_a_leader_the_others_hear() {
    let mut net = Net::new(&[1, 2, 3], 1000);
    net.elect(1);
    net.propose(1, "a", 3);
    let term = net.driver(1).status().term;
    let roles_before = net.role_changes(1);
    // Only node 2's link flapped; node 3 still hears the leader.
    net.command(2, Command::PeerLost(1));
    net.settle();
    assert_eq!(net.driver(2).status().leader_id, 0);
    net.tick();
    // Node 2 asked for pre-votes; the leader and node 3 (within its lease) ignored them.
    assert_eq!(
        net.driver(2).raw().raft.state,
        raft::StateRole::PreCandidate
    );
    assert!(net
        .log
        .iter()
        .any(|m| m.from == 2 && m.get_msg_type() == MessageType::MsgRequestPreVote));
    for _ in 0..HEARTBEAT_TICK {
        net.tick();
    }
    assert_eq!(net.leaders(), vec![1]);
    for id in [1, 2, 3] {
        let s = net.driver(id).status();
        assert_eq!((s.leader_id, s.term), (1, term), "node {id}");
    }
    assert_eq!(
        net.role_changes(1),
        roles_before,
        "the leader never wavered"
    );
    net.propose(1, "b", 1);
}

#[test]
fn leadership_goes_to_the_most_up_to_date_voter_without_losing_an_entry() {
    let mut net = Net::new(&[1, 2, 3], 1000);
    net.elect(1);
    net.propose(1, "a", 5);
    net.down.insert(3);
    let last = net.propose(1, "b", 5);
    net.down.remove(&3); // back, but not caught up until the next heartbeat
    assert!(net.driver(3).status().last_index < last);
    let term = net.driver(1).status().term;

    net.command(
        1,
        Command::TransferLeader {
            to: None,
            chosen: None,
        },
    );
    net.settle();
    assert_eq!(
        net.leaders(),
        vec![2],
        "node 2 has the whole log, node 3 not"
    );
    assert_eq!(net.driver(2).status().term, term + 1);
    assert_eq!(net.driver(1).status().leader_id, 2);
    let more = net.propose(2, "c", 2);
    for _ in 0..HEARTBEAT_TICK {
        net.tick();
    }
    for id in [1, 3] {
        assert_eq!(net.payloads(id), net.payloads(2), "node {id}");
    }
    assert_eq!(net.payloads(2).len(), 12);
    assert_eq!(net.driver(3).status().commit, more);
}

/// compat-tests/faults/BUGS.md P2: a member whose data was wiped rejoins empty (not an initial
/// member any more, so it does not bootstrap) while the leader still believes it holds its old
/// log; the leader's heartbeat then names a commit past the end of the empty log, which raft-rs
/// would panic on. The driver clamps it, and the member catches up.
#[test]
fn a_wiped_member_survives_the_leaders_stale_heartbeat_and_catches_up() {
    let mut net = Net::new(&[1, 2, 3], 1000);
    net.elect(1);
    let before = net.propose(1, "a", 20);
    // Member 3 loses its disk and comes back with an empty store under its old id.
    net.wipe_and_rejoin_member_3_of_3();
    assert_eq!(net.driver(3).status().last_index, 0);
    // Heartbeats come before any append: without the clamp this panics ("to_commit out of range").
    for _ in 0..HEARTBEAT_TICK * 3 {
        net.tick();
    }
    assert!(
        net.log
            .iter()
            .any(|m| m.to == 3 && m.get_msg_type() == MessageType::MsgHeartbeat && m.commit > 0),
        "no stale heartbeat was sent"
    );
    let after = net.propose(1, "b", 5);
    for _ in 0..ELECTION_TICK * (SNAPSHOT_ACK_ELECTIONS + 1) {
        net.tick();
    }
    let s = net.driver(3).status();
    assert_eq!((s.last_index, s.commit), (after, after));
    assert!(after > before);
    // It holds every entry the leader holds (it started from the bootstrap snapshot).
    assert_eq!(net.payloads(3), net.payloads(1));
}

/// A member cut off for many election timeouts keeps campaigning, but only with pre-votes, so its
/// term stays put; when it is heard again the leader neither steps down nor changes term, and the
/// member catches up (the wall-clock twin is cluster.rs's leader-kill test).
#[test]
fn a_member_cut_off_for_many_election_timeouts_rejoins_without_deposing_the_leader() {
    let mut net = Net::new(&[1, 2, 3], 1000);
    net.elect(1);
    net.propose(1, "a", 3);
    let term = net.driver(1).status().term;
    let roles_before = net.role_changes(1);
    net.down.insert(3);
    let last = net.propose(1, "b", 4);
    // Node 3 keeps its clock running while nobody hears it.
    for _ in 0..ELECTION_TICK * 5 {
        net.nodes.get_mut(&3).unwrap().driver.tick();
        net.tick();
    }
    assert_eq!(net.driver(3).status().term, term, "pre-vote keeps the term");
    assert!(net
        .log
        .iter()
        .all(|m| m.from != 3 || m.get_msg_type() != MessageType::MsgRequestVote));
    net.down.remove(&3);
    for _ in 0..ELECTION_TICK * 2 {
        net.tick();
    }
    assert_eq!(net.leaders(), vec![1]);
    assert_eq!(
        net.role_changes(1),
        roles_before,
        "the leader never wavered"
    );
    for id in [1, 2, 3] {
        let s = net.driver(id).status();
        assert_eq!((s.leader_id, s.term), (1, term), "node {id}");
    }
    assert_eq!(net.driver(3).status().commit, last);
    assert_eq!(net.payloads(3), net.payloads(1));
}

/// compat-tests/faults/BUGS.md P4: an entry committed by {1, 3} while 2 lagged; then 3 loses its
/// data and rejoins empty and 1 dies. Were 3 to vote, 2 (without the entry) would win with its
/// vote and the committed entry would be overwritten when 1 returns. A member that joined empty
/// votes only once it has caught up with a leader, so 2 cannot be elected; when 1 returns it
/// leads, nothing is lost, and 3 votes again once it holds an entry of 1's term.
#[test]
fn a_wiped_member_does_not_vote_until_caught_up_so_a_committed_entry_survives() {
    let mut net = Net::new(&[1, 2, 3], 1000);
    net.elect(1);
    net.propose(1, "a", 3);
    net.down.insert(2);
    let committed = net.propose(1, "e", 2); // on 1 and 3 only
    assert!(net.driver(2).status().last_index < committed);
    // 3's disk is wiped; it comes back empty (not an initial member any more, like the server's
    // join path), and 1 dies.
    net.wipe_and_rejoin_member_3_of_3();
    assert!(net.driver(3).is_rejoining());
    net.down.insert(1);
    net.down.remove(&2);

    let seen = net.log.len();
    net.nodes.get_mut(&2).unwrap().driver.campaign().unwrap();
    for _ in 0..ELECTION_TICK * 4 {
        net.tick();
    }
    assert_eq!(
        net.leaders(),
        Vec::<u64>::new(),
        "2 lacks the entry; 3 abstains"
    );
    let answers_of_3 = net.log[seen..]
        .iter()
        .filter(|m| m.from == 3)
        .map(|m| m.get_msg_type())
        .collect::<Vec<_>>();
    assert!(
        !answers_of_3.iter().any(|t| matches!(
            t,
            MessageType::MsgRequestVoteResponse | MessageType::MsgRequestPreVoteResponse
        )),
        "3 answered a vote: {answers_of_3:?}"
    );
    assert!(
        net.log[seen..].iter().any(|m| m.from == 2
            && m.to == 3
            && m.get_msg_type() == MessageType::MsgRequestPreVote),
        "2 asked 3"
    );

    net.down.remove(&1);
    for _ in 0..ELECTION_TICK * 4 {
        net.tick();
        if !net.leaders().is_empty() {
            break;
        }
    }
    assert_eq!(net.leaders(), vec![1], "only 1 holds every committed entry");
    net.propose(1, "f", 1);
    for _ in 0..ELECTION_TICK * (SNAPSHOT_ACK_ELECTIONS + 1) {
        net.tick();
    }
    let kept = |id| {
        net.payloads(id)
            .into_iter()
            .filter(|(_, d)| d.starts_with(b"e"))
            .count()
    };
    assert_eq!((kept(1), kept(2)), (2, 2), "the committed entries survived");
    assert!(!net.driver(3).is_rejoining(), "3 caught up and votes again");
    assert_eq!(net.driver(3).status().commit, net.driver(1).status().commit);
}

/// Members started together race to bootstrap; a loser joins empty. If it is needed for a
/// majority (here the second of two voters), abstaining forever would leave the ensemble without
/// a leader: after `REJOIN_PATIENCE_ELECTIONS` election timeouts without any leader it votes.
#[test]
fn a_member_that_joined_empty_votes_after_its_patience_when_no_leader_can_be_elected_without_it() {
    let mut net = Net::new(&[1, 2], 1000);
    net.nodes.remove(&2);
    net.add(Config {
        voters: Vec::new(),
        ..config(2, std::path::Path::new(""), &[1, 2], 1000)
    });
    assert!(net.driver(2).is_rejoining());
    let patience = REJOIN_PATIENCE_ELECTIONS * ELECTION_TICK;
    for _ in 0..patience - ELECTION_TICK {
        net.tick();
    }
    assert_eq!(net.leaders(), Vec::<u64>::new(), "2 abstains while patient");
    assert!(net.driver(2).is_rejoining());
    for _ in 0..ELECTION_TICK * 4 {
        net.tick();
    }
    assert_eq!(net.leaders(), vec![1]);
    assert!(!net.driver(2).is_rejoining());
    net.propose(1, "a", 2);
    assert_eq!(net.payloads(2), net.payloads(1));
}

/// BUGS.md P7: a new leader's status (what `Handle::propose` checks) said "not leader" until the
/// end of its first Ready, after that Ready's fsync, while its first appends had already told the
/// followers it leads and its core had already heard RoleChanged. A follower's client creating a
/// session in that window had its CreateSession forwarded, refused by the leader's
/// `Handle::propose` as NotLeader, its forward link closed, and the new session refused.
#[test]
fn a_new_role_is_published_before_the_applier_or_the_peers_hear_of_it() {
    let mut net = Net::new(&[1, 2, 3], 100);
    net.elect(1);
    let term = net.driver(1).status().term;
    for id in [1, 2, 3] {
        let told = &net.nodes[&id].out.roles_told;
        assert!(
            told.iter().any(|(role, _)| role.1 == 1),
            "member {id} never heard of the leader: {told:?}"
        );
        for (role, published) in told {
            assert_eq!(
                Some(*role),
                *published,
                "member {id}: RoleChanged emitted before its status said so"
            );
        }
    }
    let appends: Vec<_> = net.nodes[&1]
        .out
        .sent
        .iter()
        .filter(|(t, m_term, _)| *t == MessageType::MsgAppend && *m_term == term)
        .collect();
    assert!(!appends.is_empty(), "the leader sent no append");
    for (_, _, published) in appends {
        assert_eq!(
            *published,
            Some((true, 1, term)),
            "the leader's append went out before its status said it leads"
        );
    }
}

/// BUGS.md P8: a member wiped and rejoined while the ensemble is idle must catch up without
/// waiting for a write. The leader's heartbeats carry what it believes the member holds, which
/// the member clamps (P2); raft-rs's heartbeat answer carries no index, so only an append (a new
/// write) used to show the leader the member's real position.
#[test]
fn a_wiped_member_of_an_idle_ensemble_catches_up_without_a_new_write() {
    let mut net = Net::new(&[1, 2, 3], 1000);
    net.elect(1);
    let before = net.propose(1, "a", 20);
    net.wipe_and_rejoin_member_3_of_3();
    // No proposal from here on: only ticks (heartbeats) and what they cause.
    for _ in 0..ELECTION_TICK * (SNAPSHOT_ACK_ELECTIONS + 1) {
        net.tick();
    }
    let s = net.driver(3).status();
    assert_eq!(
        (s.last_index, s.commit),
        (before, before),
        "member 3 did not catch up"
    );
    assert_eq!(net.payloads(3), net.payloads(1));
}

/// Acknowledgements a follower sent (not rejections), from `from` on in the log: their indexes.
fn acks_from(net: &Net, from: u64, since: usize) -> Vec<u64> {
    net.log[since..]
        .iter()
        .filter(|m| {
            m.from == from && m.get_msg_type() == MessageType::MsgAppendResponse && !m.reject
        })
        .map(|m| m.index)
        .collect()
}

/// Once a write commits, the leader sends each follower the new commit index in an append without
/// entries, and raft-rs has the follower answer it with the index it had just acknowledged. The
/// leader learns nothing from that answer, so it is not sent: each follower acknowledges the
/// write once, and still learns the commit and applies the write.
#[test]
fn a_follower_acknowledges_a_write_once_and_not_again_for_its_commit() {
    let mut net = Net::new(&[1, 2, 3], 1000);
    net.elect(1);
    net.propose(1, "warm", 1);
    let since = net.log.len();
    let skipped_before = [2, 3].map(|f| net.driver(f).status().acks_skipped);
    let index = net.propose(1, "w", 1);
    for (i, f) in [2, 3].into_iter().enumerate() {
        assert!(
            net.log[since..].iter().any(|m| m.from == 1
                && m.to == f
                && m.get_msg_type() == MessageType::MsgAppend
                && m.entries.is_empty()
                && m.commit == index),
            "the leader sent {f} no commit-only append"
        );
        assert_eq!(acks_from(&net, f, since), vec![index], "follower {f}");
        let s = net.driver(f).status();
        assert_eq!(s.acks_skipped - skipped_before[i], 1, "follower {f}");
        assert_eq!(s.commit, index, "follower {f}");
        assert_eq!(net.payloads(f).last().map(|p| p.0), Some(index));
    }
}

/// A repeat is skipped only within the tick of the acknowledgement it repeats. When that one was
/// lost, the leader probes again after its next heartbeat, the answer (a tick or more later) goes
/// out, and the write commits. Were every repeat skipped, it would never commit.
#[test]
fn a_lost_acknowledgement_is_sent_again_after_a_heartbeat() {
    let mut net = Net::new(&[1, 2, 3], 1000);
    net.elect(1);
    let before = net.propose(1, "a", 1);
    let index = before + 1;
    // Both followers' acknowledgements of the next entry are lost.
    net.hold = Box::new(move |m| {
        m.get_msg_type() == MessageType::MsgAppendResponse && !m.reject && m.index == index
    });
    net.command(1, Command::Propose(b"b".to_vec()));
    net.settle();
    assert_eq!(net.held.len(), 2, "{:?}", net.held);
    net.held.clear();
    net.hold = Box::new(|_| false);
    assert_eq!(net.driver(1).status().commit, before);
    let since = net.log.len();
    let mut ticks = 0;
    while net.driver(1).status().commit < index {
        assert!(
            ticks < HEARTBEAT_TICK + 1,
            "not committed after {ticks} ticks"
        );
        net.tick();
        ticks += 1;
    }
    assert_eq!(acks_from(&net, 2, since), vec![index]);
    assert_eq!(acks_from(&net, 3, since), vec![index]);
    net.tick();
    for f in [2, 3] {
        assert_eq!(net.driver(f).status().commit, index, "follower {f}");
    }
}

/// After a rejection the leader probes from the hint and waits for the answer before it sends
/// more: that answer goes out even when it names the index acknowledged just before.
#[test]
fn the_acknowledgement_after_a_rejection_is_sent_even_if_it_repeats() {
    let mut net = Net::new(&[1, 2, 3], 1000);
    net.elect(1);
    let last = net.propose(1, "a", 1);
    let term = net.driver(1).status().term;
    let log_term = net.driver(2).raw().store().term_of(last).unwrap();
    let append = |index: u64, log_term: u64| {
        let mut m = Message::default();
        m.set_msg_type(MessageType::MsgAppend);
        m.from = 1;
        m.to = 2;
        m.term = term;
        m.index = index;
        m.log_term = log_term;
        m.commit = last;
        m
    };
    // Follower 2 acknowledged `last`; an append past its log's end is rejected, then the probe at
    // `last` is acknowledged again, all within one tick.
    net.command(2, Command::Step(append(last + 5, log_term)));
    net.command(2, Command::Step(append(last, log_term)));
    let n = net.nodes.get_mut(&2).unwrap();
    n.driver.ready(&mut n.out).unwrap();
    let answers: Vec<(bool, u64)> = net.nodes[&2]
        .out
        .msgs
        .iter()
        .filter(|m| m.get_msg_type() == MessageType::MsgAppendResponse)
        .map(|m| (m.reject, m.index))
        .collect();
    assert_eq!(answers, vec![(true, last + 5), (false, last)]);
}

#[test]
fn a_group_of_one_keeps_no_delivered_entry_in_memory_and_a_leader_of_three_keeps_them() {
    use raft::{GetEntriesContext, Storage};
    let texts = |prefix: &str| -> Vec<Vec<u8>> {
        (0..50)
            .map(|i| format!("{prefix}{i}").into_bytes())
            .collect()
    };
    let mut one = Net::new(&[1], 1000);
    one.elect(1);
    let last = one.propose(1, "solo", 50);
    let got: Vec<Vec<u8>> = one.payloads(1).into_iter().map(|(_, d)| d).collect();
    assert_eq!(got, texts("solo"));
    // Nothing delivered stays cached (the applier's copy is the last), and every entry still
    // reads back, from the segments.
    let store = one.driver(1).raw().store();
    assert_eq!(store.cached_range(), None);
    let read = store
        .entries(last - 49, last + 1, None, GetEntriesContext::empty(false))
        .unwrap();
    let read: Vec<Vec<u8>> = read.into_iter().map(|e| e.data.to_vec()).collect();
    assert_eq!(read, texts("solo"));

    // A leader of three keeps its recent entries for the followers.
    let mut three = Net::new(&[1, 2, 3], 1000);
    three.elect(1);
    let last = three.propose(1, "trio", 50);
    let (first, end) = three.driver(1).raw().store().cached_range().unwrap();
    assert!(
        first <= last - 49 && end == last,
        "cached {first}..={end}, last {last}"
    );
}

/// A cut-over from ZooKeeper: member 1 imported (a snapshot at the import's index and term, and
/// nothing else), 2 and 3 were prepared by `import --join`. They answer the importer's vote at
/// once instead of abstaining for `REJOIN_PATIENCE_ELECTIONS` (10 s at tickTime 2000, during
/// which no client could write), then catch up from it by snapshot.
#[test]
fn members_prepared_by_import_join_elect_the_importer_at_once() {
    let import = 2u64 << 32;
    let mut net = Net::new(&[], 1000);
    net.add_imported(1, &[1, 2, 3], import);
    for id in [2, 3] {
        net.add(Config {
            voters: Vec::new(),
            import_join: true,
            ..config(id, std::path::Path::new(""), &[1, 2, 3], 1000)
        });
        assert!(net.driver(id).is_rejoining());
    }
    for _ in 0..ELECTION_TICK * 3 {
        net.tick();
        if !net.leaders().is_empty() {
            break;
        }
    }
    assert_eq!(
        net.leaders(),
        vec![1],
        "elected within three election timeouts"
    );
    let last = net.propose(1, "a", 2);
    for _ in 0..ELECTION_TICK * 2 {
        net.tick();
    }
    for id in [2, 3] {
        assert_eq!(net.installs(id), vec![import], "member {id} got the import");
        assert_eq!(net.driver(id).status().commit, last);
        assert!(!net.driver(id).is_rejoining(), "member {id} caught up");
    }
    assert_eq!(net.payloads(2), net.payloads(1));
}

/// Without the mark of `import --join` (members that joined empty, or lost their data) the
/// importer waits: they abstain for their patience.
#[test]
fn members_that_joined_empty_without_the_import_mark_abstain_from_the_importers_vote() {
    let mut net = Net::new(&[], 1000);
    net.add_imported(1, &[1, 2, 3], 2 << 32);
    for id in [2, 3] {
        net.add(Config {
            voters: Vec::new(),
            ..config(id, std::path::Path::new(""), &[1, 2, 3], 1000)
        });
    }
    for _ in 0..ELECTION_TICK * 3 {
        net.tick();
    }
    assert_eq!(net.leaders(), Vec::<u64>::new());
}

/// BUGS.md P4 with the import mark: a member prepared by `import --join` into a group that has
/// gone past the import (entries of a leader's term committed by {1, 3}) gives no vote to 2,
/// which lacks them, so the committed entries survive.
#[test]
fn an_import_join_member_gives_no_vote_to_a_candidate_past_the_import() {
    let mut net = Net::new(&[1, 2, 3], 1000);
    net.elect(1);
    net.propose(1, "a", 3);
    net.down.insert(2);
    net.propose(1, "e", 2); // on 1 and 3 only
    net.nodes.remove(&3);
    net.add(Config {
        voters: Vec::new(),
        import_join: true,
        ..config(3, std::path::Path::new(""), &[1, 2, 3], 1000)
    });
    net.down.insert(1);
    net.down.remove(&2);
    let seen = net.log.len();
    net.nodes.get_mut(&2).unwrap().driver.campaign().unwrap();
    for _ in 0..ELECTION_TICK * 4 {
        net.tick();
    }
    assert_eq!(
        net.leaders(),
        Vec::<u64>::new(),
        "3 abstains: 2's log is past the import's term"
    );
    assert!(
        !net.log[seen..].iter().any(|m| m.from == 3
            && matches!(
                m.get_msg_type(),
                MessageType::MsgRequestVoteResponse | MessageType::MsgRequestPreVoteResponse
            )),
        "3 answered a vote"
    );
}
