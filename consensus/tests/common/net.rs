//! Helpers for the peer-transport tests (`tcp.rs`, `tls.rs`): a runtime, binding with retries, a
//! recorder of what a transport delivers, raft messages to send.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use consensus::net::{NetConfig, PeerNet, PeerStats};

/// Generous: the 2-core test machine is shared with other builds.
pub const WAIT: Duration = Duration::from_secs(40);
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

pub fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Binds, retrying while a previous incarnation's listener is still closing.
pub fn bind(rt: &tokio::runtime::Runtime, cfg: NetConfig) -> PeerNet {
    let deadline = Instant::now() + WAIT;
    loop {
        match rt.block_on(PeerNet::bind(cfg.clone())) {
            Ok(n) => return n,
            Err(e) => {
                assert!(Instant::now() < deadline, "bind {}: {e}", cfg.listen);
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

pub fn localhost() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// What a transport told its owner, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    Step(consensus::Message),
    Unreachable(u64),
    SnapshotReport(u64, bool),
    PeerLost(u64),
}

#[derive(Default)]
pub struct Recorder(pub Mutex<Vec<Seen>>);

impl consensus::Inbound for Recorder {
    fn step(&self, msg: consensus::Message) {
        self.0.lock().unwrap().push(Seen::Step(msg));
    }
    fn unreachable(&self, peer: u64) {
        self.0.lock().unwrap().push(Seen::Unreachable(peer));
    }
    fn snapshot_report(&self, peer: u64, ok: bool) {
        self.0.lock().unwrap().push(Seen::SnapshotReport(peer, ok));
    }
    fn peer_lost(&self, peer: u64) {
        self.0.lock().unwrap().push(Seen::PeerLost(peer));
    }
}

impl Recorder {
    pub fn seen(&self) -> Vec<Seen> {
        self.0.lock().unwrap().clone()
    }
    pub fn steps(&self) -> Vec<consensus::Message> {
        self.seen()
            .into_iter()
            .filter_map(|s| match s {
                Seen::Step(m) => Some(m),
                _ => None,
            })
            .collect()
    }
    pub fn count(&self, want: &Seen) -> usize {
        self.seen().iter().filter(|s| *s == want).count()
    }
}

pub fn append(from: u64, to: u64, index: u64) -> consensus::Message {
    let mut m = consensus::Message::default();
    m.set_msg_type(consensus::MessageType::MsgAppend);
    m.from = from;
    m.to = to;
    m.term = 3;
    m.index = index;
    m
}

pub fn connected(n: &PeerNet, peer: u64) -> bool {
    n.stats()
        .iter()
        .any(|s| s.id == peer && s.connected && s.inbound_links == 1)
}

/// Attaches a recorder to each of nodes 1 (`a`) and 2 (`b`) and waits until the Raft links are up
/// both ways.
pub fn record_both(a: &PeerNet, b: &PeerNet) -> (Arc<Recorder>, Arc<Recorder>) {
    let (ra, rb) = (Arc::new(Recorder::default()), Arc::new(Recorder::default()));
    a.attach(ra.clone());
    b.attach(rb.clone());
    wait_until("links both ways", || connected(a, 2) && connected(b, 1));
    (ra, rb)
}

/// Sends node 2 a first message, then 120 appends of 256 KB each (30 MB, more than the socket
/// buffers hold) while its recorder is held, so the buffers fill whatever the host's speed: the
/// sender's side writes what fits at once, the writer task finishes the rest, and what is sent
/// meanwhile queues behind it. Asserts that all 121 arrive once, in order, none dropped; returns
/// the sender's counters for the caller's own checks.
pub fn send_a_burst_over_the_socket_buffers(a: &PeerNet, rb: &Recorder) -> PeerStats {
    let mut t = a.transport();
    // A first message, so the link is known writable and idle before the burst.
    consensus::Transport::send(&mut t, vec![append(1, 2, 1)]);
    wait_until("the first message", || rb.steps().len() == 1);
    let sent: Vec<_> = (2..=121)
        .map(|i| {
            let mut m = append(1, 2, i);
            let e = raft::eraftpb::Entry {
                index: i,
                data: vec![i as u8; 256 * 1024].into(),
                ..Default::default()
            };
            m.set_entries(vec![e].into());
            m
        })
        .collect();
    {
        // The receiver stalls in its first step while the burst is sent (its recorder is held):
        // on a fast host a receiver reading as fast as the sender wrote had taken all 30 MB on
        // the direct path (1 run in about 7).
        let _stalled = rb.0.lock().unwrap();
        for chunk in sent.chunks(12) {
            consensus::Transport::send(&mut t, chunk.to_vec());
        }
    }
    wait_until("the burst", || rb.steps().len() >= 121);
    let got = rb.steps();
    assert_eq!(got.len(), 121);
    assert_eq!(
        &got[1..],
        &sent[..],
        "the burst arrived out of order or changed"
    );
    let s = a.stats()[0].clone();
    assert_eq!((s.msgs_sent, s.msgs_dropped), (121, 0), "{s:?}");
    s
}
