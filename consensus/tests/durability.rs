//! The raft-rs behaviour the loop's durability rule rests on: an entry is committed (handed out)
//! only once it is durable on this node. For a group of one this follows from raft-rs committing
//! up to min(commit, persisted). These tests drive a bare `RawNode` over our log store by hand,
//! Ready by Ready, with their own minimal persist step, so an upgrade of raft-rs that changed the
//! rule would show here. They do not exercise paddock's loop: `steps.rs` drives the real
//! `Driver`, whose `deliver` also checks the rule and stops the node if it is ever broken.

use consensus::storage::LogStore;
use raft::{RawNode, StateRole};

fn logger() -> slog::Logger {
    slog::Logger::root(slog::Discard, slog::o!())
}

fn sole_voter(dir: &std::path::Path) -> RawNode<LogStore> {
    let mut store = LogStore::open(dir).unwrap();
    store.bootstrap(&[1], &[]).unwrap();
    let cfg = raft::Config {
        id: 1,
        election_tick: 10,
        heartbeat_tick: 3,
        applied: 1,
        ..Default::default()
    };
    let mut raw = RawNode::new(&cfg, store, &logger()).unwrap();
    raw.campaign().unwrap();
    assert_eq!(raw.raft.state, StateRole::Leader);
    raw
}

/// Persists a Ready the way the node does and returns the committed indexes from the light ready.
fn persist_and_advance(raw: &mut RawNode<LogStore>, rd: raft::Ready) -> Vec<u64> {
    raw.mut_store()
        .write_ready(None, rd.entries(), rd.hs())
        .unwrap();
    let mut light = raw.advance(rd);
    let out = light
        .take_committed_entries()
        .iter()
        .map(|e| e.index)
        .collect();
    raw.advance_apply();
    out
}

#[test]
fn a_single_node_commits_an_entry_only_after_it_is_persisted() {
    let dir = tempfile::tempdir().unwrap();
    let mut raw = sole_voter(dir.path());

    // The leader's no-op at index 2 is in this Ready's entries but not yet committed.
    let mut rd = raw.ready();
    assert_eq!(
        rd.entries().iter().map(|e| e.index).collect::<Vec<_>>(),
        vec![2]
    );
    assert!(rd.take_committed_entries().is_empty());
    assert_eq!(raw.store().last(), 1, "nothing persisted yet");
    assert_eq!(persist_and_advance(&mut raw, rd), vec![2]);
    assert_eq!(raw.store().last(), 2);

    // A proposal: unpersisted in the Ready, committed only in the light ready after the write.
    raw.propose(vec![], b"a".to_vec()).unwrap();
    raw.propose(vec![], b"b".to_vec()).unwrap();
    let mut rd = raw.ready();
    assert_eq!(
        rd.entries().iter().map(|e| e.index).collect::<Vec<_>>(),
        vec![3, 4]
    );
    assert!(rd.take_committed_entries().is_empty());
    assert_eq!(persist_and_advance(&mut raw, rd), vec![3, 4]);
    assert!(!raw.has_ready());
}

#[test]
fn an_unpersisted_ready_never_yields_committed_entries() {
    let dir = tempfile::tempdir().unwrap();
    let mut raw = sole_voter(dir.path());
    let rd = raw.ready();
    persist_and_advance(&mut raw, rd);

    // Hold a Ready without persisting it: raft-rs must not commit its entries meanwhile, however
    // many times we ask for more work (async-append style).
    raw.propose(vec![], b"held".to_vec()).unwrap();
    let held = raw.ready();
    assert_eq!(held.entries().len(), 1);
    raw.advance_append_async(held);
    raw.propose(vec![], b"next".to_vec()).unwrap();
    let mut rd = raw.ready();
    assert!(rd.take_committed_entries().is_empty());
    assert_eq!(
        raw.raft.raft_log.committed, 2,
        "commit must not move past the durable log"
    );
}
