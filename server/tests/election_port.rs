//! The electionPort of `server.N=host:peerPort:electionPort`: bound on every member (a health
//! check's `nc -z` succeeds), never answered, and every connection closed: garbage at once, a
//! connection that sends nothing after ZooKeeper's read timeout on that port (syncLimit x
//! tickTime), more than `MAX_OPEN` at a time as they arrive. The member keeps serving throughout.
//! With quorum TLS, every connection is closed as it is accepted (quorum_security.rs's test).

mod common;

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::ensemble::{
    connect, ensemble_configs_with, persistent, shutdown, start_all, wait_for_leader,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use paddock::election_port::MAX_OPEN;

/// The election port's read timeout in this ensemble: syncLimit 20 x tickTime 100 ms.
const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// Reads until the peer closes; the bytes it sent before closing, and how long that took.
/// Panics if it is still open after `limit`.
async fn closed_within(s: &mut TcpStream, limit: Duration) -> (Vec<u8>, Duration) {
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        match tokio::time::timeout_at((start + limit).into(), s.read(&mut buf)).await {
            Err(_) => panic!("still open after {limit:?}"),
            Ok(Ok(0)) => return (got, start.elapsed()),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Ok(Err(e)) if e.kind() == ErrorKind::ConnectionReset => return (got, start.elapsed()),
            Ok(Err(e)) => panic!("read: {e}"),
        }
    }
}

/// Whether the connection is still open after `wait` (nothing read, no close).
async fn still_open(s: &mut TcpStream, wait: Duration) -> bool {
    let mut buf = [0u8; 16];
    tokio::time::timeout(wait, s.read(&mut buf)).await.is_err()
}

/// ZooKeeper's election header, protocol version -65536: the sender's id and its address.
fn zookeeper_header(sid: i64, addr: &str) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&(-65536i64).to_be_bytes());
    b.extend_from_slice(&sid.to_be_bytes());
    b.extend_from_slice(&(addr.len() as i32).to_be_bytes());
    b.extend_from_slice(addr.as_bytes());
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_election_port_is_bound_answers_nothing_and_closes_what_arrives() {
    let root = tempfile::tempdir().unwrap();
    let cfgs = ensemble_configs_with(root.path(), 3, 0, "syncLimit=20\n");
    let mut members = start_all(cfgs).await;
    wait_for_leader(&members).await;

    // Bound on every member, on its server line's host and electionPort.
    let mut ports: Vec<SocketAddr> = Vec::new();
    for m in &members {
        let spec = &m.cfg.servers[(m.id - 1) as usize];
        let addr = m.server.as_ref().unwrap().election_addr().expect("bound");
        assert_eq!(addr, SocketAddr::from(([127, 0, 0, 1], spec.election_port)));
        assert_ne!(spec.election_port, spec.peer_port);
        // What `nc -z` does: the connection is accepted.
        TcpStream::connect(addr).await.expect("nc -z succeeds");
        ports.push(addr);
    }
    let target = ports[0];

    // Garbage of 8 bytes or more (what ZooKeeper's header starts with): closed at once, nothing
    // sent back. (Fewer bytes wait for the rest until the read timeout, as silence does below.)
    for garbage in [
        &b"GET / HTTP/1.0\r\n\r\n"[..],
        &b"ruok\nruok\n"[..],
        &[0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5][..], // a TLS record header
        &(-65536i64).to_be_bytes()[..], // ZooKeeper's version, then a length it cannot accept:
    ] {
        let mut s = TcpStream::connect(target).await.unwrap();
        s.write_all(garbage).await.unwrap();
        if garbage.len() == 8 {
            s.write_all(&2i64.to_be_bytes()).await.unwrap();
            s.write_all(&(-1i32).to_be_bytes()).await.unwrap();
        }
        let (got, took) = closed_within(&mut s, Duration::from_secs(1)).await;
        assert_eq!(got, b"", "nothing answered to {garbage:?}");
        assert!(took < Duration::from_secs(1), "{took:?}");
    }
    // A well-formed ZooKeeper election header from another member's id: closed too, unanswered.
    let mut s = TcpStream::connect(target).await.unwrap();
    s.write_all(&zookeeper_header(2, &ports[1].to_string()))
        .await
        .unwrap();
    let (got, _) = closed_within(&mut s, Duration::from_secs(1)).await;
    assert_eq!(got, b"");

    // Silence: held until the read timeout, then closed.
    let mut idle = TcpStream::connect(target).await.unwrap();
    assert!(still_open(&mut idle, Duration::from_millis(500)).await);
    let (got, took) = closed_within(&mut idle, READ_TIMEOUT + Duration::from_secs(2)).await;
    assert_eq!(got, b"");
    assert!(
        took + Duration::from_millis(500) >= READ_TIMEOUT - Duration::from_millis(100),
        "closed after {took:?} (+500 ms)"
    );

    // A flood: MAX_OPEN held, the rest closed as they arrive.
    let flood = MAX_OPEN + 24;
    let mut conns = Vec::new();
    for _ in 0..flood {
        conns.push(TcpStream::connect(target).await.unwrap());
    }
    // Time for the accept loop to take them all (the held ones stay open for READ_TIMEOUT).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut open = 0;
    for c in conns.iter_mut() {
        if still_open(c, Duration::from_millis(20)).await {
            open += 1;
        }
    }
    assert_eq!(open, MAX_OPEN, "connections held out of {flood}");
    // Once they time out, the port takes new ones again.
    tokio::time::sleep(READ_TIMEOUT + Duration::from_millis(500)).await;
    let mut again = TcpStream::connect(target).await.unwrap();
    assert!(still_open(&mut again, Duration::from_millis(300)).await);
    drop(again);
    drop(conns);

    // The member kept working: a write through it, read through the others.
    let c1 = connect(members[0].addr(), Duration::from_secs(10)).await;
    c1.create("/after-the-election-port", b"still here", &persistent())
        .await
        .unwrap();
    for m in &members[1..] {
        let c = connect(m.addr(), Duration::from_secs(10)).await;
        c.sync("/after-the-election-port").await.unwrap();
        assert_eq!(
            c.get_data("/after-the-election-port").await.unwrap().0,
            b"still here".to_vec()
        );
    }
    shutdown(&mut members).await;
}
