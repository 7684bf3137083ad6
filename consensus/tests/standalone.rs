//! A group of one: election at start, proposals, group commit, restart.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{committed_until, drain, payloads, wait_status};
use consensus::{start, CommittedEntry, Config, ConsensusError, Event};

#[test]
fn standalone_node_leads_at_once_and_commits_a_proposal() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let started = start(Config::standalone(dir.path())).unwrap();
    assert!(started.snapshot.is_none());
    started.handle.propose(b"hello".to_vec()).unwrap();
    let first = started.events.recv_timeout(common::WAIT).unwrap();
    assert_eq!(
        first,
        Event::RoleChanged {
            is_leader: true,
            leader_id: 1,
            term: 2
        }
    );
    let entries = committed_until(&started.events, 3);
    // Index 1 is the bootstrap snapshot; 2 is the new leader's no-op; 3 is ours.
    assert_eq!(
        entries,
        vec![
            CommittedEntry {
                index: 2,
                term: 2,
                data: Bytes::new()
            },
            CommittedEntry {
                index: 3,
                term: 2,
                data: Bytes::from_static(b"hello")
            },
        ]
    );
    assert!(
        t0.elapsed() < Duration::from_millis(1000),
        "took {:?}",
        t0.elapsed()
    );
    let s = wait_status(&started.handle, "applied 3", |s| s.applied == 3);
    assert_eq!((s.id, s.leader_id, s.term, s.is_leader), (1, 1, 2, true));
    assert_eq!(
        (
            s.commit,
            s.last_index,
            s.first_index,
            s.snapshot_index,
            s.applied
        ),
        (3, 3, 2, 1, 3)
    );
    started.handle.shutdown();
}

#[test]
fn first_proposal_commits_without_waiting_for_an_election_timeout() {
    let dir = tempfile::tempdir().unwrap();
    // Opening RocksDB itself (inside start) is not counted: it is 40-150 ms on a loaded 2-core box.
    let cfg = Config::standalone(dir.path());
    let election_timeout = cfg.tick * cfg.election_tick as u32;
    let started = start(cfg).unwrap();
    let t0 = Instant::now();
    started.handle.propose(b"x".to_vec()).unwrap();
    committed_until(&started.events, 3);
    // A sole voter campaigns at once; a few milliseconds on a quiet machine. The bound is half
    // an election timeout (500 ms), so a busy CI machine cannot fail it while a node that
    // waited for its election timer still does.
    assert!(
        t0.elapsed() < election_timeout / 2,
        "took {:?}",
        t0.elapsed()
    );
}

#[test]
fn thousand_concurrent_proposals_commit_in_order_exactly_once_with_few_fsyncs() {
    let dir = tempfile::tempdir().unwrap();
    let started = start(Config::standalone(dir.path())).unwrap();
    let handle = started.handle.clone();
    wait_status(&handle, "leadership", |s| s.is_leader);
    let syncs_before = handle.status().synced_writes;
    let barrier = Arc::new(std::sync::Barrier::new(4));
    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            let h = handle.clone();
            let b = barrier.clone();
            std::thread::spawn(move || {
                b.wait();
                for i in 0..250u32 {
                    h.propose(format!("{t}-{i}").into_bytes()).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // Leader no-op at 2, then 1000 proposals at 3..=1002.
    let entries = committed_until(&started.events, 1002);
    let indexes: Vec<u64> = entries.iter().map(|e| e.index).collect();
    assert_eq!(
        indexes,
        (2..=1002).collect::<Vec<_>>(),
        "every index once, in order"
    );
    let got = payloads(&entries);
    assert_eq!(got.len(), 1000);
    let distinct: HashSet<_> = got.iter().map(|(_, d)| d.clone()).collect();
    assert_eq!(distinct.len(), 1000, "no proposal committed twice");
    for t in 0..4u32 {
        // Per proposer, its proposals commit in the order it made them.
        let mine: Vec<_> = got
            .iter()
            .filter_map(|(_, d)| String::from_utf8(d.clone()).ok())
            .filter(|d| d.starts_with(&format!("{t}-")))
            .map(|d| d.split('-').nth(1).unwrap().parse::<u32>().unwrap())
            .collect();
        assert_eq!(mine, (0..250).collect::<Vec<_>>());
    }
    // Status is published after the loop iteration that delivered the entries.
    let s = wait_status(&handle, "applied 1002", |s| s.applied == 1002);
    let syncs = s.synced_writes - syncs_before;
    assert!(
        (1..200).contains(&syncs),
        "1000 proposals took {syncs} fsyncs"
    );
    eprintln!("1000 proposals: {syncs} fsyncs");
    // Nothing beyond what was proposed.
    assert!(drain(&started.events, Duration::from_millis(50))
        .iter()
        .all(|e| !matches!(e, Event::Committed(_))));
    handle.shutdown();
}

#[test]
fn restart_redelivers_the_log_and_continues_at_the_next_index() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let started = start(Config::standalone(dir.path())).unwrap();
        for i in 0..20u32 {
            started.handle.propose(i.to_be_bytes().to_vec()).unwrap();
        }
        let entries = committed_until(&started.events, 22);
        let s = wait_status(&started.handle, "applied 22", |s| s.applied == 22);
        started.handle.shutdown();
        assert_eq!((s.term, s.commit), (2, 22));
        entries
    };

    let started = start(Config::standalone(dir.path())).unwrap();
    assert!(started.snapshot.is_none());
    // Everything after the bootstrap snapshot comes back, then the new term's no-op.
    let again = committed_until(&started.events, 23);
    assert_eq!(&again[..before.len()], &before[..]);
    assert_eq!(
        again[before.len()..],
        [CommittedEntry {
            index: 23,
            term: 3,
            data: Bytes::new()
        }]
    );
    let s = wait_status(&started.handle, "applied 23", |s| s.applied == 23);
    assert_eq!((s.term, s.commit, s.is_leader), (3, 23, true));

    started.handle.propose(b"after restart".to_vec()).unwrap();
    let next = committed_until(&started.events, 24);
    assert_eq!(
        next,
        vec![CommittedEntry {
            index: 24,
            term: 3,
            data: Bytes::from_static(b"after restart")
        }]
    );
    started.handle.shutdown();
}

#[test]
fn a_restarted_sole_voter_leads_as_soon_as_start_returns() {
    // Its campaign waits until the committed log is delivered (raft-rs's campaign would read all
    // of it first), but not past `start`: a proposer that starts at once must find a leader.
    let dir = tempfile::tempdir().unwrap();
    {
        let started = start(Config::standalone(dir.path())).unwrap();
        for i in 0..20u32 {
            started.handle.propose(i.to_be_bytes().to_vec()).unwrap();
        }
        wait_status(&started.handle, "applied 22", |s| s.applied == 22);
        started.handle.shutdown();
    }
    let started = start(Config::standalone(dir.path())).unwrap();
    let s = started.handle.status();
    assert_eq!((s.is_leader, s.term), (true, 3));
    started.handle.propose(b"at once".to_vec()).unwrap();
    let entries = committed_until(&started.events, 24);
    assert_eq!(
        entries[entries.len() - 2..],
        [
            CommittedEntry {
                index: 23,
                term: 3,
                data: Bytes::new()
            },
            CommittedEntry {
                index: 24,
                term: 3,
                data: Bytes::from_static(b"at once")
            }
        ]
    );
    started.handle.shutdown();
}

#[test]
fn shutdown_is_idempotent_and_later_calls_report_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let started = start(Config::standalone(dir.path())).unwrap();
    let h2 = started.handle.clone();
    started.handle.shutdown();
    h2.shutdown();
    assert!(h2.is_stopped());
    assert!(matches!(
        h2.propose(b"x".to_vec()),
        Err(ConsensusError::Stopped)
    ));
    assert!(matches!(h2.read_index(1), Err(ConsensusError::Stopped)));
}

#[test]
fn read_index_on_the_leader_answers_with_the_commit_index() {
    let dir = tempfile::tempdir().unwrap();
    let started = start(Config::standalone(dir.path())).unwrap();
    started.handle.propose(b"a".to_vec()).unwrap();
    committed_until(&started.events, 3);
    started.handle.read_index(77).unwrap();
    let deadline = Instant::now() + common::WAIT;
    loop {
        match started
            .events
            .recv_timeout(deadline - Instant::now())
            .unwrap()
        {
            Event::ReadIndexReady { ctx, index } => {
                assert_eq!((ctx, index), (77, 3));
                break;
            }
            Event::Committed(c) => panic!("unexpected commit {c:?}"),
            _ => {}
        }
    }
}

#[test]
fn empty_proposal_is_rejected_because_empty_means_noop() {
    let dir = tempfile::tempdir().unwrap();
    let started = start(Config::standalone(dir.path())).unwrap();
    assert!(matches!(
        started.handle.propose(Vec::new()),
        Err(ConsensusError::Invalid(_))
    ));
}

#[test]
fn second_start_on_a_locked_dir_fails_with_a_storage_error() {
    let dir = tempfile::tempdir().unwrap();
    let _started = start(Config::standalone(dir.path())).unwrap();
    assert!(matches!(
        start(Config::standalone(dir.path())),
        Err(ConsensusError::Storage(_))
    ));
}
