//! A committed log entry this server cannot decode stops it cleanly, naming the entry, instead of a
//! panic (the security review's F10). Every replica applies the same bytes, so one that cannot must
//! stop rather than diverge; how it stops is what is checked here.
//!
//! The bad entry is put where only a member (or a damaged binary) could put it: committed into the
//! data dir's own raft log through consensus, between two runs of the real binary.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::process::{free_port, paddock_command, wait_ready, ChildGuard};
use consensus::Event;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_committed_entry_stops_the_server_with_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));

    // A first run makes the data dir (identity, log, a session), then stops cleanly.
    let mut first = paddock_command(dir.path(), port, &[]);
    let child = ChildGuard::spawn(first.stderr(Stdio::null()));
    wait_ready(addr).await;
    drop(child);

    // A committed entry that is not a paddock entry, through the log's own API.
    let raft_dir = dir.path().join("paddock");
    let bad = tokio::task::spawn_blocking(move || {
        let started = consensus::start(consensus::Config::standalone(&raft_dir)).unwrap();
        started
            .handle
            .propose(b"\xff\xfe not an entry".to_vec())
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let index = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match started
                .events
                .recv_timeout(left)
                .expect("the entry commits")
            {
                Event::Committed(batch) => {
                    if let Some(e) = batch.iter().find(|e| e.data.starts_with(b"\xff\xfe")) {
                        break e.index;
                    }
                }
                _ => continue,
            }
        };
        started.handle.shutdown();
        index
    })
    .await
    .unwrap();

    // The second run replays it at start: exit 1, the entry named, no panic.
    let mut second = paddock_command(dir.path(), port, &[]);
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::task::spawn_blocking(move || second.stderr(Stdio::piped()).output().unwrap()),
    )
    .await
    .expect("the server stops by itself")
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("committed log entry {bad} (term")),
        "{stderr}"
    );
    assert!(stderr.contains("does not decode"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
