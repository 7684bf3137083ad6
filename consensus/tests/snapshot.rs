//! Snapshots: the file format's checks, saving through the handle, compaction, and loading the
//! newest intact snapshot on restart.

mod common;

use std::time::Duration;

use common::{committed_until, drain, payloads, wait_status};
use consensus::snapshot_file::{self, SnapshotFile};
use consensus::{start, CommittedEntry, Config, ConsensusError, Event, Snapshot};
use raft::eraftpb::ConfState;

fn conf(voters: &[u64]) -> ConfState {
    ConfState {
        voters: voters.to_vec(),
        ..Default::default()
    }
}

fn flip_byte(path: &std::path::Path, from_end: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = bytes.len() - from_end;
    bytes[at] ^= 0x40;
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn snapshot_file_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let path = snapshot_file::write(dir.path(), 42, 3, &conf(&[1, 2]), b"tree bytes").unwrap();
    assert!(path.ends_with("snap-00000000000000000042.snap"));
    let got = snapshot_file::read(dir.path(), 42).unwrap().unwrap();
    assert_eq!(
        got,
        SnapshotFile {
            index: 42,
            term: 3,
            conf_state: conf(&[1, 2]),
            data: b"tree bytes".to_vec()
        }
    );
    assert_eq!(snapshot_file::read(dir.path(), 41).unwrap(), None);
    // No temporary left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1);
}

#[test]
fn snapshot_files_of_several_write_pieces_round_trip_at_their_exact_length() {
    // Written 1 MB per call and synced every 8 MB: sizes around the pieces' edges.
    let dir = tempfile::tempdir().unwrap();
    let conf_len = protobuf::Message::write_to_bytes(&conf(&[1, 2]))
        .unwrap()
        .len() as u64;
    for (i, len) in [(1usize << 20) - 51, 1 << 20, (1 << 20) + 1, (17 << 20) + 7]
        .into_iter()
        .enumerate()
    {
        let data: Vec<u8> = (0..len).map(|b| (b % 251) as u8).collect();
        let index = 10 + i as u64;
        let path = snapshot_file::write(dir.path(), index, 2, &conf(&[1, 2]), &data).unwrap();
        let file_len = std::fs::metadata(&path).unwrap().len();
        assert_eq!(
            file_len,
            40 + conf_len + len as u64 + 12,
            "{len} bytes of data"
        );
        let got = snapshot_file::read(dir.path(), index).unwrap().unwrap();
        assert_eq!(got.data, data, "{len} bytes of data");
        assert_eq!(got.conf_state, conf(&[1, 2]));
        let scanned = snapshot_file::scan(dir.path(), index).unwrap().unwrap();
        assert_eq!(
            (scanned.index, scanned.term, scanned.data_len),
            (index, 2, len as u64)
        );
        assert_eq!(scanned.conf_state, conf(&[1, 2]));
        assert_eq!(scanned.read_data().unwrap(), data, "{len} bytes, scanned");
    }
}

#[test]
fn files_before_the_floor_are_deleted_whatever_their_size() {
    // The larger ones are cut from their end a few megabytes at a time before they go.
    let dir = tempfile::tempdir().unwrap();
    for (index, len) in [
        (10u64, 3usize),
        (11, (4 << 20) + 5),
        (12, 9 << 20),
        (13, 100),
    ] {
        snapshot_file::write(dir.path(), index, 2, &conf(&[1]), &vec![7u8; len]).unwrap();
    }
    snapshot_file::prune_before(dir.path(), 13).unwrap();
    assert_eq!(snapshot_file::list(dir.path()).unwrap(), vec![13]);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    let kept = snapshot_file::read(dir.path(), 13).unwrap().unwrap();
    assert_eq!(kept.data, vec![7u8; 100]);
    // Nothing older: nothing to do.
    snapshot_file::prune_before(dir.path(), 13).unwrap();
    assert_eq!(snapshot_file::list(dir.path()).unwrap(), vec![13]);
}

#[test]
fn damaged_snapshot_files_are_reported_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let data = vec![7u8; 1000];
    let path = snapshot_file::write(dir.path(), 5, 1, &conf(&[1]), &data).unwrap();
    let clean = std::fs::read(&path).unwrap();

    // A flipped bit in the data, in the header, and a truncated file.
    flip_byte(&path, 100);
    assert!(matches!(
        snapshot_file::read(dir.path(), 5),
        Err(ConsensusError::Corrupt(_))
    ));
    assert!(matches!(
        snapshot_file::scan(dir.path(), 5),
        Err(ConsensusError::Corrupt(_))
    ));
    std::fs::write(&path, &clean).unwrap();
    flip_byte(&path, clean.len() - 10);
    assert!(matches!(
        snapshot_file::read(dir.path(), 5),
        Err(ConsensusError::Corrupt(_))
    ));
    assert!(matches!(
        snapshot_file::scan(dir.path(), 5),
        Err(ConsensusError::Corrupt(_))
    ));
    std::fs::write(&path, &clean[..clean.len() - 3]).unwrap();
    assert!(matches!(
        snapshot_file::read(dir.path(), 5),
        Err(ConsensusError::Corrupt(_))
    ));
    assert!(matches!(
        snapshot_file::scan(dir.path(), 5),
        Err(ConsensusError::Corrupt(_))
    ));
    std::fs::write(&path, b"").unwrap();
    assert!(matches!(
        snapshot_file::read(dir.path(), 5),
        Err(ConsensusError::Corrupt(_))
    ));
    assert!(matches!(
        snapshot_file::scan(dir.path(), 5),
        Err(ConsensusError::Corrupt(_))
    ));
    std::fs::write(&path, &clean).unwrap();
    assert_eq!(
        snapshot_file::read(dir.path(), 5).unwrap().unwrap().data,
        data
    );
    // A scanned file stays readable after its name is pruned: it is held open.
    let scanned = snapshot_file::scan(dir.path(), 5).unwrap().unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(scanned.read_data().unwrap(), data);
    assert_eq!(
        snapshot_file::scan(dir.path(), 5).unwrap().map(|s| s.index),
        None
    );
}

#[test]
fn load_newest_falls_back_past_a_damaged_file() {
    let dir = tempfile::tempdir().unwrap();
    snapshot_file::write(dir.path(), 10, 1, &conf(&[1]), b"ten").unwrap();
    let newest = snapshot_file::write(dir.path(), 20, 1, &conf(&[1]), b"twenty").unwrap();
    assert_eq!(
        snapshot_file::load_newest(dir.path(), u64::MAX)
            .unwrap()
            .unwrap()
            .read_data()
            .unwrap(),
        b"twenty"
    );
    assert_eq!(
        snapshot_file::load_newest(dir.path(), 19)
            .unwrap()
            .unwrap()
            .read_data()
            .unwrap(),
        b"ten"
    );
    flip_byte(&newest, 14);
    assert_eq!(
        snapshot_file::load_newest(dir.path(), u64::MAX)
            .unwrap()
            .unwrap()
            .index,
        10
    );
}

/// Proposes `n` entries "p<i>" and waits until they are committed; returns the last index.
fn propose_n(started: &consensus::Started, from: u32, n: u32, last_index: u64) -> u64 {
    for i in from..from + n {
        started
            .handle
            .propose(format!("p{i}").into_bytes())
            .unwrap();
    }
    let until = last_index + u64::from(n);
    committed_until(&started.events, until);
    wait_status(&started.handle, "applied", |s| s.applied == until);
    until
}

fn config(dir: &std::path::Path, keep: u64) -> Config {
    Config {
        snapshot_keep_entries: keep,
        ..Config::standalone(dir)
    }
}

#[test]
fn restart_loads_the_saved_snapshot_and_redelivers_only_later_entries() {
    let dir = tempfile::tempdir().unwrap();
    let started = start(config(dir.path(), 1000)).unwrap();
    committed_until(&started.events, 2);
    let last = propose_n(&started, 0, 10, 2); // indexes 3..=12
    started
        .handle
        .save_snapshot(12, 2, b"state@12".to_vec())
        .unwrap();
    wait_status(&started.handle, "snapshot 12", |s| s.snapshot_index == 12);
    let last = propose_n(&started, 10, 5, last); // 13..=17
    started.handle.shutdown();

    let started = start(config(dir.path(), 1000)).unwrap();
    assert_eq!(
        common::loaded(started.snapshot),
        Some(Snapshot {
            index: 12,
            term: 2,
            data: b"state@12".to_vec()
        })
    );
    let entries = committed_until(&started.events, last + 1);
    let indexes: Vec<u64> = entries.iter().map(|e| e.index).collect();
    assert_eq!(indexes, (13..=18).collect::<Vec<_>>());
    assert_eq!(&entries[0].data[..], b"p10");
    assert_eq!(
        entries[5],
        CommittedEntry {
            index: 18,
            term: 3,
            data: bytes::Bytes::new()
        }
    );
    started.handle.shutdown();
}

#[test]
fn log_is_compacted_to_the_previous_snapshot_and_old_files_are_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let started = start(config(dir.path(), 3)).unwrap();
    committed_until(&started.events, 2);
    let mut last = propose_n(&started, 0, 10, 2); // 3..=12
    started
        .handle
        .save_snapshot(10, 2, b"s10".to_vec())
        .unwrap();
    wait_status(&started.handle, "snapshot 10", |s| s.snapshot_index == 10);
    // The only snapshot: nothing to fall back to, so nothing is compacted yet.
    assert_eq!(started.handle.status().first_index, 2);

    last = propose_n(&started, 10, 10, last); // 13..=22
    started
        .handle
        .save_snapshot(20, 2, b"s20".to_vec())
        .unwrap();
    let s = wait_status(&started.handle, "snapshot 20", |s| s.snapshot_index == 20);
    // min(20 - keep 3, previous snapshot 10) = 10: entries from 11 remain.
    assert_eq!(s.first_index, 11);

    last = propose_n(&started, 20, 10, last); // 23..=32
    started
        .handle
        .save_snapshot(30, 2, b"s30".to_vec())
        .unwrap();
    let s = wait_status(&started.handle, "snapshot 30", |s| s.snapshot_index == 30);
    assert_eq!(s.first_index, 21);
    // The writer thread deletes the file of 10 once 30 is recorded.
    let files = || snapshot_file::list(started.handle.snapshot_dir()).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while files() != vec![20, 30] {
        assert!(std::time::Instant::now() < deadline, "{:?}", files());
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(last, 32);
    started.handle.shutdown();

    let started = start(config(dir.path(), 3)).unwrap();
    assert_eq!(started.snapshot.as_ref().map(|s| s.index), Some(30));
    assert_eq!(started.handle.status().first_index, 21);
    let entries = committed_until(&started.events, 33);
    assert_eq!(
        entries.iter().map(|e| e.index).collect::<Vec<_>>(),
        vec![31, 32, 33]
    );
}

#[test]
fn damaged_newest_snapshot_falls_back_to_the_previous_and_replays_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let started = start(config(dir.path(), 0)).unwrap();
    committed_until(&started.events, 2);
    let last = propose_n(&started, 0, 10, 2);
    started.handle.save_snapshot(6, 2, b"s6".to_vec()).unwrap();
    wait_status(&started.handle, "snapshot 6", |s| s.snapshot_index == 6);
    started
        .handle
        .save_snapshot(12, 2, b"s12".to_vec())
        .unwrap();
    let s = wait_status(&started.handle, "snapshot 12", |s| s.snapshot_index == 12);
    assert_eq!(s.first_index, 7);
    let snapdir = started.handle.snapshot_dir().to_path_buf();
    started.handle.shutdown();

    flip_byte(&snapshot_file::path_for(&snapdir, 12), 20);
    let started = start(config(dir.path(), 0)).unwrap();
    assert_eq!(
        common::loaded(started.snapshot),
        Some(Snapshot {
            index: 6,
            term: 2,
            data: b"s6".to_vec()
        })
    );
    let entries = committed_until(&started.events, last + 1);
    let got = payloads(&entries);
    assert_eq!(got.first(), Some(&(7, b"p4".to_vec())));
    assert_eq!(got.last(), Some(&(12, b"p9".to_vec())));
    assert_eq!(entries.len(), 7, "7..=12 and the new term's no-op");
}

#[test]
fn damaged_only_snapshot_falls_back_to_replaying_the_whole_log() {
    let dir = tempfile::tempdir().unwrap();
    let started = start(config(dir.path(), 0)).unwrap();
    committed_until(&started.events, 2);
    propose_n(&started, 0, 5, 2);
    started.handle.save_snapshot(5, 2, b"s5".to_vec()).unwrap();
    wait_status(&started.handle, "snapshot 5", |s| s.snapshot_index == 5);
    let snapdir = started.handle.snapshot_dir().to_path_buf();
    started.handle.shutdown();

    flip_byte(&snapshot_file::path_for(&snapdir, 5), 5);
    let started = start(config(dir.path(), 0)).unwrap();
    assert!(started.snapshot.is_none());
    let entries = committed_until(&started.events, 8);
    assert_eq!(
        entries.iter().map(|e| e.index).collect::<Vec<_>>(),
        (2..=8).collect::<Vec<_>>()
    );
}

#[test]
fn start_fails_when_no_intact_snapshot_covers_the_compacted_log() {
    let dir = tempfile::tempdir().unwrap();
    let started = start(config(dir.path(), 0)).unwrap();
    committed_until(&started.events, 2);
    propose_n(&started, 0, 10, 2);
    for idx in [6, 12] {
        started.handle.save_snapshot(idx, 2, vec![1]).unwrap();
        wait_status(&started.handle, "snapshot", |s| s.snapshot_index == idx);
    }
    let snapdir = started.handle.snapshot_dir().to_path_buf();
    started.handle.shutdown();
    for idx in [6, 12] {
        flip_byte(&snapshot_file::path_for(&snapdir, idx), 20);
    }
    match start(config(dir.path(), 0)) {
        Err(ConsensusError::Corrupt(why)) => assert!(why.contains("log starts at 7"), "{why}"),
        Err(e) => panic!("expected Corrupt, got {e}"),
        Ok(_) => panic!("expected Corrupt, started"),
    }
}

#[test]
fn save_snapshot_past_commit_is_refused_and_bad_terms_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let started = start(config(dir.path(), 0)).unwrap();
    committed_until(&started.events, 2);
    propose_n(&started, 0, 3, 2);
    assert!(matches!(
        started.handle.save_snapshot(99, 2, vec![1]),
        Err(ConsensusError::Invalid(_))
    ));
    // Wrong term for index 4: logged and ignored, no file written.
    started.handle.save_snapshot(4, 9, vec![1]).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(started.handle.status().snapshot_index, 1);
    assert!(snapshot_file::list(started.handle.snapshot_dir())
        .unwrap()
        .is_empty());
    // No stray events either.
    assert!(drain(&started.events, Duration::from_millis(20))
        .iter()
        .all(|e| !matches!(e, Event::Committed(_))));
}
