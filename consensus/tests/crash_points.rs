//! Crash points (feature `crash-points`, src/crash.rs): a child process (this test binary, re-run
//! with an environment variable) runs a standalone node with small log segments and frequent
//! snapshots, so that it creates, rotates, prunes and reuses segments and writes, records and
//! prunes snapshots, and aborts at one named step. The parent then opens what it left and checks
//! that every entry the child reported committed is there, unchanged, and that the term and the
//! vote the child reported never went back. `cargo test -p consensus --features crash-points
//! --test crash_points`.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::cluster::{batch, Cluster};
use consensus::{start, Config, Event};

const DIR_ENV: &str = "PADDOCK_CRASH_POINTS_CHILD_DIR";

fn config(dir: &std::path::Path) -> Config {
    Config {
        segment_bytes: 64 << 10,
        snapshot_keep_entries: 20,
        ..Config::standalone(dir)
    }
}

/// The state a snapshot holds: a digest of every data entry up to its index, in order (FNV-1a
/// over index and data), so the parent can check entries the log no longer holds.
#[derive(Clone, Copy)]
struct Digest(u64);

impl Digest {
    fn new() -> Digest {
        Digest(0xcbf2_9ce4_8422_2325)
    }

    fn add(&mut self, index: u64, data: &str) {
        for b in index.to_le_bytes().iter().chain(data.as_bytes()) {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// The digest a snapshot file holds.
fn snapshot_digest(s: &consensus::snapshot_file::ScannedSnapshot) -> Digest {
    let mut data = Vec::new();
    s.for_each_piece(1 << 20, |p| {
        data.extend_from_slice(p);
        Ok::<_, std::io::Error>(())
    })
    .unwrap();
    Digest(u64::from_le_bytes(data[..8].try_into().unwrap()))
}

/// Runs only inside the child: proposes 1 KB entries, saves a snapshot (the digest of every data
/// entry so far) every 40 committed entries, reports each commit ("C index data") and the term it
/// leads in ("T term").
#[test]
#[ignore = "the child process of every_crash_point_keeps_what_was_reported"]
fn crash_points_child() {
    let dir = std::env::var(DIR_ENV).expect("run by every_crash_point_keeps_what_was_reported");
    let started = start(config(std::path::Path::new(&dir))).unwrap();
    let mut digest = started
        .snapshot
        .as_ref()
        .map_or(Digest::new(), snapshot_digest);
    let handle = started.handle.clone();
    let mut out = std::io::stdout().lock();
    // A line of its own: the test harness has printed "test crash_points_child ... " before.
    writeln!(out, "\nT {}", handle.status().term).unwrap();
    out.flush().unwrap();
    let proposer = handle.clone();
    std::thread::spawn(move || {
        let pid = std::process::id();
        for i in 0u64.. {
            let mut data = format!("{pid}-{i}-").into_bytes();
            data.resize(1000, b'.');
            if proposer.propose(data).is_err() {
                return;
            }
            if i % 16 == 15 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    });
    let mut since_snapshot = 0;
    for event in started.events.iter() {
        if let Event::Committed(batch) = event {
            for e in batch.iter().filter(|e| !e.data.is_empty()) {
                let data = String::from_utf8_lossy(&e.data);
                let data = data.trim_end_matches('.');
                writeln!(out, "C {} {data}", e.index).unwrap();
                digest.add(e.index, data);
            }
            out.flush().unwrap();
            since_snapshot += batch.len();
            if since_snapshot >= 40 {
                since_snapshot = 0;
                let last = batch.last().unwrap();
                let mut state = digest.0.to_le_bytes().to_vec();
                state.resize(5000, 7);
                let _ = handle.save_snapshot(last.index, last.term, state);
            }
        }
    }
}

/// What one child reported before it died.
struct Reported {
    commits: Vec<(u64, String)>,
    term: u64,
    aborted: bool,
}

/// Runs the child until it exits (the crash point aborts it) or `limit` passes (then it is
/// killed).
fn run_child(dir: &std::path::Path, point: Option<&str>, limit: Duration) -> Reported {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "crash_points_child",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(DIR_ENV, dir)
    .env_remove(consensus::crash::ENV)
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    if let Some(p) = point {
        cmd.env(consensus::crash::ENV, p);
    }
    let mut child = cmd.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    let deadline = Instant::now() + limit;
    let mut reported = Reported {
        commits: Vec::new(),
        term: 0,
        aborted: false,
    };
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => {
                if let Some(rest) = line.strip_prefix("C ") {
                    let (idx, data) = rest.split_once(' ').unwrap();
                    reported
                        .commits
                        .push((idx.parse().unwrap(), data.to_string()));
                } else if let Some(t) = line.strip_prefix("T ") {
                    reported.term = reported.term.max(t.parse().unwrap());
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                break;
            }
        }
    }
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    reported.aborted = status.signal() == Some(libc::SIGABRT);
    reported
}

/// Opens what the child left (as the next start would), and checks it against what was
/// reported: every commit there unchanged, the term and the vote not gone back.
fn check(dir: &std::path::Path, point: &str, seen: &BTreeMap<u64, String>, term: u64) {
    let store =
        consensus::storage::LogStore::open_with_segment_bytes(&dir.join("raftdb"), 64 << 10)
            .unwrap_or_else(|e| panic!("{point}: the store does not open: {e}"));
    let hs = store.hard_state().clone();
    assert!(
        hs.term >= term,
        "{point}: term {} went back from {term}",
        hs.term
    );
    if hs.term == term {
        assert_eq!(hs.vote, 1, "{point}: the vote in term {term} went");
    }
    drop(store);
    let max = *seen.keys().last().unwrap();
    let started = start(config(dir)).unwrap_or_else(|e| panic!("{point}: no start: {e}"));
    // What the snapshot holds: every reported entry up to its index, in its digest.
    let from = match &started.snapshot {
        Some(s) => {
            let mut want = Digest::new();
            for (idx, data) in seen.range(..=s.index) {
                want.add(*idx, data);
            }
            assert_eq!(
                snapshot_digest(s).0,
                want.0,
                "{point}: the snapshot at {} does not hold what was reported",
                s.index
            );
            s.index + 1
        }
        None => 0,
    };
    let entries = if max >= from {
        common::committed_until(&started.events, max)
    } else {
        Vec::new()
    };
    let log: BTreeMap<u64, String> = entries
        .iter()
        .filter(|e| !e.data.is_empty())
        .map(|e| {
            let d = String::from_utf8_lossy(&e.data);
            (e.index, d.trim_end_matches('.').to_string())
        })
        .collect();
    for (idx, data) in seen.range(from..) {
        assert_eq!(
            log.get(idx),
            Some(data),
            "{point}: reported entry {idx} lost or changed"
        );
    }
    started.handle.shutdown();
}

#[test]
fn every_crash_point_keeps_what_was_reported() {
    let mut reached = Vec::new();
    for point in consensus::crash::POINTS {
        // Installs happen on a member that receives a leader's snapshot: not in this child.
        if point.starts_with("install-") {
            continue;
        }
        // The second time the step is reached: the log then holds records of earlier rounds.
        let nth = format!("{point}:2");
        let dir = tempfile::tempdir().unwrap();
        let mut seen: BTreeMap<u64, String> = BTreeMap::new();
        let mut term = 0;
        let mut aborted = false;
        for round in 0..2 {
            let r = run_child(dir.path(), Some(&nth), Duration::from_secs(60));
            for (idx, data) in r.commits {
                if let Some(prev) = seen.insert(idx, data.clone()) {
                    assert_eq!(prev, data, "{point}: index {idx} changed across a crash");
                }
            }
            assert!(
                r.term > 0,
                "{point} round {round}: the child reported no term"
            );
            term = term.max(r.term);
            aborted |= r.aborted;
            assert!(!seen.is_empty(), "{point} round {round}: nothing committed");
            check(dir.path(), point, &seen, term);
            if r.aborted {
                break;
            }
        }
        assert!(aborted, "{point}: the child never reached the crash point");
        reached.push(*point);
    }
    eprintln!("crash points reached and checked: {reached:?}");
}

const INSTALL_ENV: &str = "PADDOCK_CRASH_POINTS_INSTALL_DIR";

/// Three nodes of one group in this process, their directories under `base`.
fn three(base: &std::path::Path) -> Cluster {
    let mut c = Cluster::unstarted(&[1, 2, 3], 5, 20);
    for id in 1..=3 {
        let mut cfg = c.config(id);
        cfg.dir = base.join(id.to_string());
        cfg.segment_bytes = 64 << 10;
        c.start_with(cfg);
    }
    c
}

/// Runs only inside the child: one node of three is cut off while the others commit 200 entries
/// and snapshot past it, then let back: the leader sends it a snapshot, and it installs it (where
/// the crash point stops the process). Reports the node ("X id") and its term ("T term").
#[test]
#[ignore = "the child process of a_crash_while_a_leaders_snapshot_is_installed_loses_nothing"]
fn install_child() {
    let base = std::env::var(INSTALL_ENV).expect("run by the install test");
    let c = three(std::path::Path::new(&base));
    let leader = c.leader();
    let x = (1..=3).rev().find(|&i| i != leader).unwrap();
    let mut out = std::io::stdout().lock();
    writeln!(out, "\nX {x}\nT {}", c.handle(x).status().term).unwrap();
    out.flush().unwrap();
    c.router.isolated.lock().unwrap().insert(x);
    let behind = c.handle(x).status().last_index;
    let mut last = 0;
    // In rounds, so that several snapshots are written and the log compacts past node x's.
    for round in 0..4 {
        last = c.propose_all(&batch(&format!("a{round}-"), 50));
        std::thread::sleep(Duration::from_millis(200));
    }
    common::wait_for(
        || format!("the leader's log to compact past {behind}"),
        || (c.handle(leader).status().first_index > behind + 1).then_some(()),
    );
    writeln!(out, "C {last}").unwrap();
    out.flush().unwrap();
    c.router.isolated.lock().unwrap().remove(&x);
    std::thread::sleep(Duration::from_secs(20));
    writeln!(out, "no crash").unwrap();
}

#[test]
fn a_crash_while_a_leaders_snapshot_is_installed_loses_nothing() {
    for point in ["install-file-written", "install-recorded"] {
        let base = tempfile::tempdir().unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "install_child",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(INSTALL_ENV, base.path())
            .env(consensus::crash::ENV, point)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (mut x, mut term, mut committed) = (0, 0, 0);
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            if let Some(v) = line.strip_prefix("X ") {
                x = v.parse().unwrap();
            } else if let Some(v) = line.strip_prefix("T ") {
                term = v.parse().unwrap();
            } else if let Some(v) = line.strip_prefix("C ") {
                committed = v.parse().unwrap();
            }
        }
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGABRT), "{point}: not reached");
        assert!(
            x > 0 && committed > 0,
            "{point}: the child reported {x} {committed}"
        );
        let db = base.path().join(x.to_string()).join("raftdb");
        let store = consensus::storage::LogStore::open_with_segment_bytes(&db, 64 << 10)
            .unwrap_or_else(|e| panic!("{point}: node {x} does not open: {e}"));
        assert!(
            store.hard_state().term >= term,
            "{point}: node {x}'s term went back"
        );
        drop(store);
        // The group restarts from what the crash left, and node x catches up and agrees.
        let c = three(base.path());
        let after = c.propose_until_committed("after");
        for id in 1..=3 {
            c.wait_applied(id, after);
        }
        let leader = c.leader();
        let want = c.state(leader);
        assert_eq!(
            want.iter().filter(|(i, _)| *i <= committed).count(),
            200,
            "{point}: the 200 committed entries"
        );
        assert_eq!(c.state(x), want, "{point}: node {x} agrees with the leader");
    }
}
