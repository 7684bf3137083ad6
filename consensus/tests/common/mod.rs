//! Helpers shared by the consensus integration tests.
#![allow(dead_code)]

pub mod cluster;
pub mod net;
pub mod pki;

use std::time::{Duration, Instant};

use consensus::{CommittedEntry, Event, Handle};
use crossbeam_channel::Receiver;

/// How long any wait in these tests may take before it counts as a failure: far above what a
/// healthy run needs, so a busy 2-core machine does not fail a correct node.
pub const WAIT: Duration = Duration::from_secs(15);

/// The one polling wait: calls `f` every few milliseconds until it returns `Some`, and fails the
/// test with `what()` (evaluated only then, so it can describe the state) after `WAIT`.
pub fn wait_for<T, D: std::fmt::Display>(
    what: impl Fn() -> D,
    mut f: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(t) = f() {
            return t;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {}",
            what()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Collects committed entries (no-ops included) until one with index >= `until` arrives.
pub fn committed_until(events: &Receiver<Event>, until: u64) -> Vec<CommittedEntry> {
    let deadline = Instant::now() + WAIT;
    let mut out: Vec<CommittedEntry> = Vec::new();
    while !matches!(out.last(), Some(e) if e.index >= until) {
        let left = deadline.saturating_duration_since(Instant::now());
        match events.recv_timeout(left) {
            Ok(Event::Committed(batch)) => out.extend(batch),
            Ok(_) => {}
            Err(_) => panic!(
                "timed out waiting for index {until}; got up to {:?}",
                out.last().map(|e| e.index)
            ),
        }
    }
    out
}

/// Entries carrying data (the applier's view: raft no-ops skipped).
pub fn payloads(entries: &[CommittedEntry]) -> Vec<(u64, Vec<u8>)> {
    entries
        .iter()
        .filter(|e| !e.data.is_empty())
        .map(|e| (e.index, e.data.to_vec()))
        .collect()
}

/// Waits until `f(status)` holds.
pub fn wait_status(
    handle: &Handle,
    what: &str,
    f: impl Fn(&consensus::Status) -> bool,
) -> consensus::Status {
    wait_for(
        || format!("{what}; status {:?}", handle.status()),
        || Some(handle.status()).filter(|s| f(s)),
    )
}

/// Drains whatever events arrive within `quiet` of each other.
pub fn drain(events: &Receiver<Event>, quiet: Duration) -> Vec<Event> {
    let mut out = Vec::new();
    while let Ok(e) = events.recv_timeout(quiet) {
        out.push(e);
    }
    out
}

/// The snapshot a start loaded, its data read whole (tests compare it as a value).
#[allow(dead_code)]
pub fn loaded(s: Option<consensus::ScannedSnapshot>) -> Option<consensus::Snapshot> {
    s.map(|s| consensus::Snapshot {
        index: s.index,
        term: s.term,
        data: s
            .read_data()
            .expect("the loaded snapshot's data reads back"),
    })
}
