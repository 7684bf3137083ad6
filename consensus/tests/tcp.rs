//! The TCP peer transport over real loopback sockets: three raft nodes replicating through
//! `PeerNet`, a killed and restarted node, a multi-MB chunked snapshot, refused handshakes,
//! hostile bytes on the listener, App links and probes.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod common;

use common::net::{
    append, bind, localhost, record_both, runtime, send_a_burst_over_the_socket_buffers,
    wait_until, Seen, WAIT,
};
use consensus::net::{LocalInfo, NetConfig, PeerInfo, PeerNet};
use consensus::{start_with_transport, CommittedEntry, Config, Event, Handle, Snapshot};

const CLUSTER: u64 = 7;

#[derive(Default)]
struct Applied {
    entries: Vec<CommittedEntry>,
    snapshots: Vec<Snapshot>,
    next: Option<u64>,
    gaps: Vec<String>,
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
    net: PeerNet,
    handle: Handle,
    applied: Arc<Mutex<Applied>>,
}

struct Cluster {
    rt: tokio::runtime::Runtime,
    dirs: HashMap<u64, tempfile::TempDir>,
    addrs: HashMap<u64, SocketAddr>,
    nodes: HashMap<u64, Node>,
    keep: u64,
    /// (cluster_id, fingerprint) per node.
    ident: HashMap<u64, (u64, u64)>,
}

impl Cluster {
    fn new(keep: u64) -> Cluster {
        Cluster::with_idents(keep, &[(1, CLUSTER, 0), (2, CLUSTER, 0), (3, CLUSTER, 0)])
    }

    fn with_idents(keep: u64, idents: &[(u64, u64, u64)]) -> Cluster {
        let mut c = Cluster {
            rt: runtime(),
            dirs: HashMap::new(),
            addrs: HashMap::new(),
            nodes: HashMap::new(),
            keep,
            ident: idents.iter().map(|&(id, c, f)| (id, (c, f))).collect(),
        };
        // Bind every listener first (port 0), then give each node the whole address book, and
        // only then start raft (a node not yet told of its peers would refuse them).
        let nets: Vec<(u64, PeerNet)> = idents
            .iter()
            .map(|&(id, _, _)| {
                let net = bind(&c.rt, c.net_config(id, localhost()));
                c.addrs.insert(id, net.local_addr());
                (id, net)
            })
            .collect();
        for (_, net) in &nets {
            net.set_peers(c.book());
        }
        for (id, net) in nets {
            c.dirs.insert(id, tempfile::tempdir().unwrap());
            c.start_on(id, net);
        }
        c
    }

    fn net_config(&self, id: u64, listen: SocketAddr) -> NetConfig {
        let (cluster_id, fingerprint) = self.ident[&id];
        let mut cfg = NetConfig::new(id, cluster_id, listen);
        cfg.fingerprint = fingerprint;
        cfg
    }

    fn book(&self) -> Vec<(u64, String)> {
        self.addrs
            .iter()
            .map(|(&id, a)| (id, a.to_string()))
            .collect()
    }

    fn dir(&self, id: u64) -> PathBuf {
        self.dirs[&id].path().to_path_buf()
    }

    /// Restarts a stopped node on its old directory and port.
    fn restart(&mut self, id: u64) {
        let net = bind(&self.rt, self.net_config(id, self.addrs[&id]));
        self.start_on(id, net);
    }

    fn start_on(&mut self, id: u64, net: PeerNet) {
        net.set_peers(self.book());
        let cfg = Config {
            id,
            dir: self.dir(id),
            voters: vec![1, 2, 3],
            // Elections after 0.5-1 s: the messages cross real sockets on a busy machine.
            tick: Duration::from_millis(50),
            election_tick: 10,
            heartbeat_tick: 2,
            snapshot_keep_entries: self.keep,
            ..Config::standalone(self.dir(id))
        };
        let started = start_with_transport(cfg, Box::new(net.transport())).unwrap();
        net.attach(Arc::new(started.handle.clone()));
        let applied = Arc::new(Mutex::new(Applied::default()));
        if let Some(s) = &started.snapshot {
            applied.lock().unwrap().state = decode_state(&s.read_data().unwrap()).unwrap();
        }
        let sink = applied.clone();
        let events = started.events;
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
                                a.state.push((e.index, e.data.to_vec()));
                            }
                        }
                        a.entries.extend(batch);
                    }
                    Event::InstallSnapshot(s) => {
                        a.next = Some(s.index + 1);
                        a.state = decode_state(&s.data).unwrap();
                        a.snapshots.push(s);
                    }
                    _ => {}
                }
            }
        });
        self.nodes.insert(
            id,
            Node {
                net,
                handle: started.handle,
                applied,
            },
        );
    }

    fn stop(&mut self, id: u64) {
        let n = self.nodes.remove(&id).unwrap();
        n.net.shutdown();
        n.handle.shutdown();
    }

    fn handle(&self, id: u64) -> &Handle {
        &self.nodes[&id].handle
    }

    fn net(&self, id: u64) -> &PeerNet {
        &self.nodes[&id].net
    }

    /// Waits until exactly one of `among` leads and all of them agree on it.
    fn leader_among(&self, among: &[u64]) -> u64 {
        let mut found = 0;
        wait_until("an agreed leader", || {
            let s: Vec<_> = among.iter().map(|id| self.handle(*id).status()).collect();
            let leaders: Vec<_> = s.iter().filter(|s| s.is_leader).collect();
            if leaders.len() == 1 && s.iter().all(|x| x.leader_id == leaders[0].id) {
                found = leaders[0].id;
                return true;
            }
            false
        });
        found
    }

    fn leader(&self) -> u64 {
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        self.leader_among(&ids)
    }

    fn state(&self, id: u64) -> Vec<(u64, Vec<u8>)> {
        let a = self.nodes[&id].applied.lock().unwrap();
        assert!(a.gaps.is_empty(), "node {id}: {:?}", a.gaps);
        a.state.clone()
    }

    fn applied_index(&self, id: u64) -> u64 {
        let a = self.nodes[&id].applied.lock().unwrap();
        a.next.map_or(0, |n| n - 1)
    }

    fn wait_applied(&self, id: u64, index: u64) {
        wait_until(&format!("node {id} to apply {index}"), || {
            self.applied_index(id) >= index
        });
    }

    /// Proposes every item on whoever leads, re-proposing what is still missing after a while
    /// (a leader change may drop proposals); returns the highest index of an item once all are
    /// applied on the leader.
    fn propose_all(&self, data: &[Vec<u8>]) -> u64 {
        let deadline = Instant::now() + WAIT;
        let mut sent: Option<Instant> = None;
        loop {
            let leader = self.leader();
            let got: HashMap<Vec<u8>, u64> = self
                .state(leader)
                .into_iter()
                .map(|(i, d)| (d, i))
                .collect();
            let missing: Vec<&Vec<u8>> = data.iter().filter(|d| !got.contains_key(*d)).collect();
            if missing.is_empty() {
                return data.iter().map(|d| got[d]).max().unwrap();
            }
            if !matches!(sent, Some(t) if t.elapsed() < Duration::from_secs(5)) {
                for d in missing {
                    let _ = self.handle(leader).propose(d.clone());
                }
                sent = Some(Instant::now());
            }
            assert!(Instant::now() < deadline, "proposals not committed");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until every node in `ids` has applied what `reference` has, then compares their
    /// states up to that index exactly (a long diff is summarised: the entries are large).
    fn assert_identical(&self, ids: &[u64], reference: u64) {
        let upto = self.applied_index(reference);
        for &id in ids {
            self.wait_applied(id, upto);
        }
        let cut = |id: u64| -> Vec<(u64, Vec<u8>)> {
            self.state(id)
                .into_iter()
                .filter(|(i, _)| *i <= upto)
                .collect()
        };
        let want = cut(reference);
        for &id in ids {
            let got = cut(id);
            if got != want {
                let first = got
                    .iter()
                    .zip(&want)
                    .position(|(g, w)| g != w)
                    .unwrap_or(got.len().min(want.len()));
                let brief = |v: &[(u64, Vec<u8>)]| -> Vec<(u64, usize)> {
                    v.iter()
                        .skip(first)
                        .take(5)
                        .map(|(i, d)| (*i, d.len()))
                        .collect()
                };
                panic!(
                    "node {id} applied a different history than node {reference} up to {upto}: \
                     {} vs {} entries, first difference at position {first}: {:?} vs {:?}",
                    got.len(),
                    want.len(),
                    brief(&got),
                    brief(&want)
                );
            }
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for n in self.nodes.values() {
            n.net.shutdown();
            n.handle.shutdown();
        }
    }
}

fn batch(prefix: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{prefix}{i}").into_bytes())
        .collect()
}

fn distinct(state: &[(u64, Vec<u8>)]) -> HashSet<Vec<u8>> {
    state.iter().map(|(_, d)| d.clone()).collect()
}

#[test]
fn three_nodes_replicate_a_thousand_proposals_in_one_order() {
    let c = Cluster::new(1000);
    let leader = c.leader();
    let data = batch("p", 1000);
    let last = c.propose_all(&data);
    for id in [1, 2, 3] {
        c.wait_applied(id, last);
    }
    c.assert_identical(&[1, 2, 3], leader);
    let want: HashSet<Vec<u8>> = data.into_iter().collect();
    assert_eq!(distinct(&c.state(leader)), want);

    let stats = c.net(leader).stats();
    assert_eq!(stats.iter().map(|s| s.id).collect::<Vec<_>>().len(), 2);
    for s in &stats {
        assert!(s.connected, "leader not connected to {}: {s:?}", s.id);
        assert!(s.msgs_sent > 0 && s.bytes_sent > 0, "{s:?}");
        assert!(s.msgs_received > 0, "{s:?}");
    }
    // The one refusal a healthy start may see: `set_peers` is called node by node, and a node's
    // writers dial at once, so a node not told of its peers yet may refuse one dial (retried).
    // Any other refusal, or more than one per link, is a failure.
    let ns = c.net(leader).net_stats();
    let at_start = ns
        .last_refusal
        .as_deref()
        .is_some_and(|r| r.contains("is not among"));
    assert!(ns.refused == 0 || (at_start && ns.refused <= 2), "{ns:?}");

    // A probe reports what the node was last told about its log.
    let status = c.handle(leader).status();
    c.net(leader)
        .set_local_info(LocalInfo::from_status(&status));
    let follower = [1, 2, 3].into_iter().find(|&i| i != leader).unwrap();
    let info = c.rt.block_on(c.net(follower).probe(leader)).unwrap();
    assert_eq!(
        info,
        PeerInfo {
            id: leader,
            cluster_id: CLUSTER,
            initialized: true,
            last_index: status.last_index
        }
    );
    assert!(status.last_index >= last);
}

#[test]
fn a_killed_node_restarts_on_its_port_and_catches_up() {
    let mut c = Cluster::new(1000);
    let first = c.leader();
    let before = c.propose_all(&batch("before", 100));
    for id in [1, 2, 3] {
        c.wait_applied(id, before);
    }
    c.stop(first);
    let rest: Vec<u64> = [1, 2, 3].into_iter().filter(|&i| i != first).collect();
    let second = c.leader_among(&rest);
    assert_ne!(second, first);
    let after = c.propose_all(&batch("after", 100));
    for &id in &rest {
        c.wait_applied(id, after);
    }
    // The survivors saw the dead node's links close.
    let s = c.net(second).stats();
    let to_first = s.iter().find(|s| s.id == first).unwrap();
    assert!(!to_first.connected, "{to_first:?}");

    c.restart(first);
    c.wait_applied(first, after);
    c.assert_identical(&[1, 2, 3], second);
    let state = c.state(first);
    assert_eq!(state.len(), 200);
    let mut want: HashSet<Vec<u8>> = batch("before", 100).into_iter().collect();
    want.extend(batch("after", 100));
    assert_eq!(distinct(&state), want);
}

#[test]
fn a_lagging_node_catches_up_by_a_chunked_multi_megabyte_snapshot() {
    let mut c = Cluster::new(0);
    let leader = c.leader();
    let lagging = [1, 2, 3].into_iter().find(|&i| i != leader).unwrap();
    let first = c.propose_all(&batch("a", 10));
    c.wait_applied(lagging, first);
    c.stop(lagging);

    // 48 entries of 100 KB: a snapshot of about 4.8 MB, which crosses in 1 MiB chunks.
    let running: Vec<u64> = c.nodes.keys().copied().collect();
    let mut last = first;
    for round in 0..2 {
        let big: Vec<Vec<u8>> = (0..24)
            .map(|i| {
                let mut d = format!("r{round}-{i}:").into_bytes();
                d.resize(100_000, b'a' + (i % 26) as u8);
                d
            })
            .collect();
        last = c.propose_all(&big);
        // Both running nodes snapshot and compact, so whichever leads must send a snapshot.
        for &id in &running {
            c.wait_applied(id, last);
            let (term, state) = {
                let a = c.nodes[&id].applied.lock().unwrap();
                let term = a.entries.iter().find(|e| e.index == last).unwrap().term;
                (term, encode_state(&a.state))
            };
            c.handle(id).save_snapshot(last, term, state).unwrap();
            wait_until("the snapshot to be recorded", || {
                c.handle(id).status().snapshot_index == last
            });
        }
    }
    for &id in &running {
        assert!(c.handle(id).status().first_index > first + 1);
        assert_eq!(c.handle(id).status().snapshot_index, last);
    }

    c.restart(lagging);
    let more = c.propose_all(&batch("b", 5));
    c.wait_applied(lagging, more);
    let leader = c.leader();
    c.assert_identical(&[1, 2, 3], leader);
    {
        let a = c.nodes[&lagging].applied.lock().unwrap();
        assert_eq!(a.snapshots.len(), 1, "caught up by exactly one snapshot");
        assert!(a.snapshots[0].data.len() > 4_000_000);
    }
    // Whoever led sent it in chunks (raft may send it more than once; the node installs one).
    let chunks = (4_000_000 / consensus::net::DEFAULT_SNAPSHOT_CHUNK) as u64;
    let sent: Vec<_> = running
        .iter()
        .flat_map(|&id| c.net(id).stats())
        .filter(|s| s.id == lagging)
        .collect();
    let snapshots_sent: u64 = sent.iter().map(|s| s.snapshots_sent).sum();
    let chunks_sent: u64 = sent.iter().map(|s| s.snapshot_chunks_sent).sum();
    assert!(snapshots_sent >= 1, "{sent:?}");
    assert!(chunks_sent >= chunks * snapshots_sent, "{sent:?}");
    let got = c.net(lagging).stats();
    let received: u64 = got.iter().map(|s| s.snapshots_received).sum();
    let chunks_received: u64 = got.iter().map(|s| s.snapshot_chunks_received).sum();
    assert!(received >= 1 && received <= snapshots_sent, "{got:?}");
    assert!(chunks_received >= chunks * received, "{got:?}");
}

/// Node 3 differs from nodes 1 and 2 in cluster id or fingerprint: it is refused both ways and
/// never applies the group's entries, while 1 and 2 commit.
fn refused_member(idents: &[(u64, u64, u64)], names: &[&str], probe_answers: bool) {
    let c = Cluster::with_idents(1000, idents);
    let leader = c.leader_among(&[1, 2]);
    let last = c.propose_all_among(&[1, 2], &batch("g", 20));
    c.wait_applied(1, last);
    c.wait_applied(2, last);
    wait_until("refusals on both sides", || {
        c.net(3).net_stats().refused >= 2 && c.net(leader).net_stats().refused >= 2
    });
    let probed = c.rt.block_on(c.net(1).probe(3));
    if probe_answers {
        // A probe is answered across clusters: it names node 3's own cluster.
        assert_eq!(probed.unwrap().cluster_id, idents[2].1);
    } else {
        let err = probed.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
        for n in names {
            assert!(err.to_string().contains(n), "probe error {err} lacks {n:?}");
        }
    }
    let last_refusal = c.net(1).net_stats().last_refusal.unwrap();
    for n in names {
        assert!(last_refusal.contains(n), "{last_refusal} lacks {n:?}");
    }
    assert!(
        c.state(3).is_empty(),
        "the refused node applied the group's entries"
    );
    let s = c.net(3).stats();
    assert!(
        s.iter().all(|s| s.msgs_received == 0 && !s.connected),
        "{s:?}"
    );
}

impl Cluster {
    fn propose_all_among(&self, among: &[u64], data: &[Vec<u8>]) -> u64 {
        let leader = self.leader_among(among);
        for d in data {
            self.handle(leader).propose(d.clone()).unwrap();
        }
        let mut last = 0;
        wait_until("proposals committed", || {
            let got: HashMap<Vec<u8>, u64> = self
                .state(leader)
                .into_iter()
                .map(|(i, d)| (d, i))
                .collect();
            if data.iter().all(|d| got.contains_key(d)) {
                last = data.iter().map(|d| got[d]).max().unwrap();
                return true;
            }
            false
        });
        last
    }
}

#[test]
fn a_node_of_another_cluster_is_refused() {
    refused_member(
        &[(1, CLUSTER, 0), (2, CLUSTER, 0), (3, 8, 0)],
        &["cluster_id differs", "node 1 has 7", "node 3 has 8"],
        true,
    );
}

#[test]
fn a_node_with_another_fingerprint_is_refused() {
    refused_member(
        &[
            (1, CLUSTER, 0xabc),
            (2, CLUSTER, 0xabc),
            (3, CLUSTER, 0xdef),
        ],
        &[
            "fingerprint differs",
            "node 1 has 0x0000000000000abc",
            "node 3 has 0x0000000000000def",
        ],
        false,
    );
}

fn hello(kind: u8, from: u64, to: u64, cluster_id: u64) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&48u32.to_be_bytes());
    b.extend_from_slice(b"PDKN");
    b.extend_from_slice(&1u16.to_be_bytes());
    b.push(kind);
    b.push(0);
    for v in [from, to, cluster_id, 0, 0] {
        b.extend_from_slice(&v.to_be_bytes());
    }
    b
}

fn read_frame(s: &mut TcpStream) -> Vec<u8> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut b = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut b).unwrap();
    b
}

/// True once the server closed the connection (EOF or reset), within the wait.
fn closed(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(WAIT)).unwrap();
    let mut b = [0u8; 64];
    loop {
        match s.read(&mut b) {
            Ok(0) | Err(_) => return true,
            Ok(_) => continue,
        }
    }
}

/// A raw Raft link to node 1 posing as node 2, past a well-formed handshake.
fn raw_raft_link(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&hello(1, 2, 1, CLUSTER)).unwrap();
    let reply = read_frame(&mut s);
    assert_eq!(reply[0], 0, "handshake refused: {reply:?}");
    assert_eq!(&reply[1..5], b"PDKN");
    assert_eq!(u64::from_be_bytes(reply[9..17].try_into().unwrap()), 1);
    s.write_all(&[0, 0, 0, 1, 0]).unwrap();
    s
}

#[test]
fn oversized_frames_and_garbage_close_the_link_and_the_group_keeps_working() {
    let c = Cluster::new(1000);
    c.leader();
    let first = c.propose_all(&batch("a", 10));
    let addr = c.addrs[&1];
    let bad_before = c.net(1).net_stats().bad_frames;

    // Garbage before any handshake: its first four bytes read as a huge length.
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert!(closed(&mut s));
    // A length far above any cap, before the handshake.
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&0xffff_fff0u32.to_be_bytes()).unwrap();
    assert!(closed(&mut s));
    // After a valid handshake: one byte over max_frame.
    let mut s = raw_raft_link(addr);
    let over = consensus::net::DEFAULT_MAX_FRAME as u32 + 1;
    s.write_all(&over.to_be_bytes()).unwrap();
    assert!(closed(&mut s));
    // After a valid handshake: a raft message frame that is not protobuf.
    let mut s = raw_raft_link(addr);
    let junk = [1u8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x07];
    s.write_all(&(junk.len() as u32).to_be_bytes()).unwrap();
    s.write_all(&junk).unwrap();
    assert!(closed(&mut s));
    // A handshake cut short.
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&hello(1, 2, 1, CLUSTER)[..20]).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(closed(&mut s));

    wait_until(
        &format!("the bad frames to be counted: {:?}", c.net(1).net_stats()),
        || c.net(1).net_stats().bad_frames >= bad_before + 4,
    );
    let last = c.propose_all(&batch("b", 20));
    assert!(last > first);
    for id in [1, 2, 3] {
        c.wait_applied(id, last);
    }
    c.assert_identical(&[1, 2, 3], 1);
    assert_eq!(c.state(1).len(), 30);
}

/// Two bare transports (no raft): node 1 and node 2 of `cluster`'s group.
fn pair(rt: &tokio::runtime::Runtime, cluster2: u64) -> (PeerNet, PeerNet) {
    let a = bind(rt, NetConfig::new(1, CLUSTER, localhost()));
    let b = bind(rt, NetConfig::new(2, cluster2, localhost()));
    a.set_peers(vec![(2, b.local_addr().to_string())]);
    b.set_peers(vec![(1, a.local_addr().to_string())]);
    (a, b)
}

#[test]
fn app_streams_deliver_frames_in_order_with_the_peer_id() {
    let rt = runtime();
    let (a, b) = pair(&rt, CLUSTER);
    let mut incoming = a.app_streams().unwrap();
    assert!(a.app_streams().is_none(), "taken once");
    rt.block_on(async {
        let mut out = b.connect_app(1).await.unwrap();
        assert_eq!(out.peer(), 1);
        for f in [&b"one"[..], b"two", b""] {
            out.send(f).await.unwrap();
        }
        let (peer, stream) = tokio::time::timeout(WAIT, incoming.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(peer, 2);
        assert_eq!(stream.peer(), 2);
        let (mut r, mut w) = stream.into_split();
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(r.recv().await.unwrap().unwrap().to_vec());
        }
        assert_eq!(got, vec![b"one".to_vec(), b"two".to_vec(), Vec::new()]);
        // Both ways, then a clean EOF.
        w.send(b"back").await.unwrap();
        assert_eq!(out.recv().await.unwrap().unwrap(), &b"back"[..]);
        drop(out);
        assert_eq!(r.recv().await.unwrap(), None);
        // A frame over the cap is refused by the sender, before anything is written.
        let big = vec![0u8; consensus::net::DEFAULT_MAX_FRAME + 1];
        let err = w.send(&big).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    });
    a.shutdown();
    b.shutdown();
}

#[test]
fn an_app_link_with_a_refused_handshake_is_an_error() {
    let rt = runtime();
    let (a, b) = pair(&rt, 9);
    let mut incoming = a.app_streams().unwrap();
    let err = rt.block_on(b.connect_app(1)).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    assert!(
        err.to_string()
            .contains("cluster_id differs: node 1 has 7, node 2 has 9"),
        "{err}"
    );
    // Unknown peers: no address, and an id not in the acceptor's book.
    let err = rt.block_on(b.connect_app(5)).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound, "{err}");
    let c = bind(&rt, NetConfig::new(3, CLUSTER, localhost()));
    c.set_peers(vec![(1, a.local_addr().to_string())]);
    let err = rt.block_on(c.connect_app(1)).unwrap_err();
    assert!(
        err.to_string()
            .contains("node 3 is not among node 1's peers"),
        "{err}"
    );
    // Dialling the right address under the wrong id.
    c.set_peers(vec![(2, a.local_addr().to_string())]);
    let err = rt.block_on(c.connect_app(2)).unwrap_err();
    assert!(
        err.to_string()
            .contains("this is node 1, node 3 dialled node 2"),
        "{err}"
    );
    assert!(incoming.try_recv().is_err(), "a refused link was delivered");
    // Three refusals above, and more of the Raft links b's writer keeps trying.
    assert!(a.net_stats().refused >= 3, "{:?}", a.net_stats());
    for n in [a, b, c] {
        n.shutdown();
    }
}

#[test]
fn probe_reports_the_peers_identity_and_log_position() {
    let rt = runtime();
    let (a, b) = pair(&rt, CLUSTER);
    let info = rt.block_on(b.probe(1)).unwrap();
    assert_eq!(
        info,
        PeerInfo {
            id: 1,
            cluster_id: CLUSTER,
            initialized: false,
            last_index: 0
        }
    );
    a.set_local_info(LocalInfo {
        initialized: true,
        last_index: 4242,
    });
    let info = rt.block_on(b.probe(1)).unwrap();
    assert_eq!(
        info,
        PeerInfo {
            id: 1,
            cluster_id: CLUSTER,
            initialized: true,
            last_index: 4242
        }
    );
    a.shutdown();
    wait_until("the listener to close", || rt.block_on(b.probe(1)).is_err());
    b.shutdown();
}

#[test]
fn messages_arrive_in_order_and_a_dead_peer_is_lost_once_per_link_then_unreachable() {
    let rt = runtime();
    let (a, b) = pair(&rt, CLUSTER);
    let (ra, rb) = record_both(&a, &b);

    let mut t = a.transport();
    let sent: Vec<_> = (1..=300).map(|i| append(1, 2, i)).collect();
    for chunk in sent.chunks(7) {
        consensus::Transport::send(&mut t, chunk.to_vec());
    }
    // A message for a node with no address is dropped and counted.
    consensus::Transport::send(&mut t, vec![append(1, 9, 1)]);
    wait_until("300 messages", || rb.steps().len() >= 300);
    assert_eq!(rb.steps(), sent);
    assert_eq!(a.net_stats().dropped_unknown_peer, 1);
    let s = &a.stats()[0];
    assert_eq!((s.msgs_sent, s.msgs_dropped), (300, 0), "{s:?}");
    // The link was up and idle: the raft thread's side wrote most of them itself.
    assert!(s.msgs_sent_direct > 0, "{s:?}");
    assert_eq!(b.stats()[0].msgs_received, 300);

    b.shutdown();
    wait_until("a failed reconnect", || {
        ra.count(&Seen::Unreachable(2)) >= 2
    });
    // Both links to b closed: a's outbound one and b's inbound one, each reported once.
    assert_eq!(ra.count(&Seen::PeerLost(2)), 2, "{:?}", ra.seen());
    assert!(!a.stats()[0].connected);
    // While b is down, messages are dropped and counted.
    consensus::Transport::send(&mut t, (1..=10).map(|i| append(1, 2, i)).collect());
    wait_until("drops counted", || a.stats()[0].msgs_dropped == 10);
    assert_eq!(a.stats()[0].msgs_sent, 300);
    a.shutdown();
}

#[test]
fn a_snapshot_crosses_in_chunks_and_arrives_whole_after_later_heartbeats() {
    let rt = runtime();
    let mut cfg = NetConfig::new(1, CLUSTER, localhost());
    cfg.snapshot_chunk = 64 * 1024;
    let a = bind(&rt, cfg);
    let b = bind(&rt, NetConfig::new(2, CLUSTER, localhost()));
    a.set_peers(vec![(2, b.local_addr().to_string())]);
    b.set_peers(vec![(1, a.local_addr().to_string())]);
    let (ra, rb) = record_both(&a, &b);

    let data: Vec<u8> = (0..3_500_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let mut snap = consensus::Message::default();
    snap.set_msg_type(consensus::MessageType::MsgSnapshot);
    snap.from = 1;
    snap.to = 2;
    snap.term = 4;
    snap.mut_snapshot().mut_metadata().index = 77;
    snap.mut_snapshot().mut_metadata().term = 4;
    snap.mut_snapshot()
        .set_data(bytes::Bytes::from(data.clone()));
    let mut heartbeat = consensus::Message::default();
    heartbeat.set_msg_type(consensus::MessageType::MsgHeartbeat);
    heartbeat.from = 1;
    heartbeat.to = 2;
    let mut t = a.transport();
    consensus::Transport::send(&mut t, vec![snap.clone(), heartbeat.clone()]);
    wait_until("the snapshot", || rb.steps().len() == 2);
    let steps = rb.steps();
    assert!(steps.contains(&heartbeat));
    let got = steps
        .iter()
        .find(|m| m.get_msg_type() == consensus::MessageType::MsgSnapshot)
        .unwrap();
    assert_eq!(got, &snap, "the snapshot arrived changed");
    wait_until("the report", || {
        ra.count(&Seen::SnapshotReport(2, true)) == 1
    });
    let chunks = 3_500_000u64.div_ceil(64 * 1024);
    let s = &a.stats()[0];
    assert_eq!(
        (s.snapshots_sent, s.snapshot_chunks_sent),
        (1, chunks),
        "{s:?}"
    );
    let r = &b.stats()[0];
    assert_eq!(
        (r.snapshots_received, r.snapshot_chunks_received),
        (1, chunks),
        "{r:?}"
    );
    a.shutdown();
    b.shutdown();
}

#[test]
fn a_snapshot_over_the_receivers_cap_is_refused_and_raft_traffic_goes_on() {
    let rt = runtime();
    let a = bind(&rt, NetConfig::new(1, CLUSTER, localhost()));
    let mut cfg = NetConfig::new(2, CLUSTER, localhost());
    cfg.max_snapshot = 1024 * 1024;
    let b = bind(&rt, cfg);
    a.set_peers(vec![(2, b.local_addr().to_string())]);
    b.set_peers(vec![(1, a.local_addr().to_string())]);
    let (_, rb) = record_both(&a, &b);

    let mut snap = consensus::Message::default();
    snap.set_msg_type(consensus::MessageType::MsgSnapshot);
    snap.from = 1;
    snap.to = 2;
    snap.mut_snapshot()
        .set_data(bytes::Bytes::from(vec![5u8; 2 * 1024 * 1024]));
    let mut t = a.transport();
    consensus::Transport::send(&mut t, vec![snap]);
    wait_until("the refusal", || b.net_stats().bad_frames == 1);
    consensus::Transport::send(&mut t, vec![append(1, 2, 1)]);
    wait_until("the next message", || rb.steps().len() == 1);
    assert_eq!(rb.steps(), vec![append(1, 2, 1)]);
    assert_eq!(b.stats()[0].snapshots_received, 0);
    a.shutdown();
    b.shutdown();
}

/// A snapshot the receiver's check refuses (data it could not restore) closes its link and never
/// reaches raft; one it accepts, and raft traffic, arrive as usual.
#[test]
fn a_snapshot_that_fails_the_receivers_check_is_never_stepped() {
    let rt = runtime();
    let a = bind(&rt, NetConfig::new(1, CLUSTER, localhost()));
    let mut cfg = NetConfig::new(2, CLUSTER, localhost());
    cfg.check_snapshot = Some(consensus::net::SnapshotCheck(Arc::new(|data: &[u8]| {
        if data.starts_with(b"good") {
            Ok(())
        } else {
            Err("not a snapshot".into())
        }
    })));
    let b = bind(&rt, cfg);
    a.set_peers(vec![(2, b.local_addr().to_string())]);
    b.set_peers(vec![(1, a.local_addr().to_string())]);
    let (_, rb) = record_both(&a, &b);
    let snapshot = |data: &'static [u8]| {
        let mut snap = consensus::Message::default();
        snap.set_msg_type(consensus::MessageType::MsgSnapshot);
        snap.from = 1;
        snap.to = 2;
        snap.mut_snapshot().mut_metadata().index = 9;
        snap.mut_snapshot()
            .set_data(bytes::Bytes::from_static(data));
        snap
    };
    let mut t = a.transport();
    consensus::Transport::send(&mut t, vec![snapshot(b"garbage")]);
    wait_until("the refusal", || b.net_stats().bad_frames == 1);
    assert_eq!(b.stats()[0].snapshots_received, 0);
    let good = snapshot(b"good snapshot");
    consensus::Transport::send(&mut t, vec![good.clone(), append(1, 2, 1)]);
    wait_until("the good snapshot and the append", || rb.steps().len() == 2);
    let steps = rb.steps();
    assert!(
        steps.contains(&good) && steps.contains(&append(1, 2, 1)),
        "{steps:?}"
    );
    assert_eq!(b.net_stats().bad_frames, 1);
    a.shutdown();
    b.shutdown();
}

/// More than the socket buffers hold, sent in one burst: the sender's side writes what fits at
/// once, the writer task finishes the rest, and everything sent meanwhile is queued behind it.
/// Every message arrives once, in order.
#[test]
fn a_burst_larger_than_the_socket_buffers_arrives_whole_and_in_order() {
    let rt = runtime();
    let (a, b) = pair(&rt, CLUSTER);
    let (_, rb) = record_both(&a, &b);

    let s = send_a_burst_over_the_socket_buffers(&a, &rb);
    assert!(
        s.msgs_sent_direct < 121,
        "30 MB fitted in the socket buffers: {s:?}"
    );
    a.shutdown();
    b.shutdown();
}
