//! Conformance suite for the log store: the contract raft-rs's `Storage` trait expects,
//! plus the write side the Ready loop uses, checked again after reopening the database.

use consensus::segments;
use consensus::storage::{LogStore, BOOTSTRAP_INDEX, BOOTSTRAP_TERM};
use consensus::ConsensusError;
use raft::eraftpb::{ConfState, Entry, HardState, SnapshotMetadata};
use raft::{GetEntriesContext, Storage, StorageError};

fn entry(index: u64, term: u64) -> Entry {
    Entry {
        index,
        term,
        data: format!("e{index}t{term}").into_bytes().into(),
        ..Default::default()
    }
}

fn entries(range: std::ops::RangeInclusive<u64>, term: u64) -> Vec<Entry> {
    range.map(|i| entry(i, term)).collect()
}

fn ctx() -> GetEntriesContext {
    GetEntriesContext::empty(false)
}

fn read(store: &LogStore, low: u64, high: u64) -> Result<Vec<Entry>, raft::Error> {
    store.entries(low, high, None, ctx())
}

fn is_compacted<T: std::fmt::Debug>(r: raft::Result<T>) -> bool {
    matches!(r, Err(raft::Error::Store(StorageError::Compacted)))
}

fn is_unavailable<T: std::fmt::Debug>(r: raft::Result<T>) -> bool {
    matches!(r, Err(raft::Error::Store(StorageError::Unavailable)))
}

/// A bootstrapped store with entries 2..=10 at term 2.
fn store_with_log(dir: &std::path::Path) -> LogStore {
    let mut s = LogStore::open(dir).unwrap();
    s.bootstrap(&[1, 2, 3], &[]).unwrap();
    s.write_ready(None, &entries(2..=10, 2), None).unwrap();
    s
}

#[test]
fn new_store_is_empty_and_uninitialized() {
    let dir = tempfile::tempdir().unwrap();
    let s = LogStore::open(dir.path()).unwrap();
    assert!(!s.is_initialized());
    assert_eq!((s.first_index().unwrap(), s.last_index().unwrap()), (1, 0));
    let rs = s.initial_state().unwrap();
    assert_eq!(rs.hard_state, HardState::default());
    assert_eq!(rs.conf_state, ConfState::default());
    assert_eq!(s.term(0).unwrap(), 0);
}

#[test]
fn bootstrap_records_a_committed_snapshot_at_index_one_with_the_voters() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = LogStore::open(dir.path()).unwrap();
    s.bootstrap(&[1, 2, 3], &[]).unwrap();
    assert!(s.is_initialized());
    let rs = s.initial_state().unwrap();
    assert_eq!(rs.conf_state.voters, vec![1, 2, 3]);
    assert_eq!(
        (rs.hard_state.term, rs.hard_state.vote, rs.hard_state.commit),
        (1, 0, 1)
    );
    assert_eq!((s.first_index().unwrap(), s.last_index().unwrap()), (2, 1));
    assert_eq!(s.term(BOOTSTRAP_INDEX).unwrap(), BOOTSTRAP_TERM);
    assert!(is_compacted(s.term(0)));
    assert!(is_unavailable(s.term(2)));
    let snap = s.snapshot(0, 2).unwrap();
    assert_eq!(
        (snap.get_metadata().index, snap.get_metadata().term),
        (1, 1)
    );
    assert_eq!(snap.get_metadata().get_conf_state().voters, vec![1, 2, 3]);
    assert!(snap.data.is_empty());
}

#[test]
fn bootstrap_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = LogStore::open(dir.path()).unwrap();
    s.bootstrap(&[1], &[]).unwrap();
    assert!(matches!(
        s.bootstrap(&[1], &[]),
        Err(ConsensusError::Invalid(_))
    ));
}

#[test]
fn bootstrap_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    LogStore::open(dir.path())
        .unwrap()
        .bootstrap(&[4, 5], &[6])
        .unwrap();
    let s = LogStore::open(dir.path()).unwrap();
    let cs = s.initial_state().unwrap().conf_state;
    assert_eq!((cs.voters, cs.learners), (vec![4, 5], vec![6]));
    assert_eq!(s.snapshot_meta().get_conf_state().learners, vec![6]);
    assert_eq!((s.first_index().unwrap(), s.last_index().unwrap()), (2, 1));
    assert_eq!(s.term(1).unwrap(), 1);
}

#[test]
fn appended_entries_read_back_by_range_and_term() {
    let dir = tempfile::tempdir().unwrap();
    let s = store_with_log(dir.path());
    assert_eq!((s.first_index().unwrap(), s.last_index().unwrap()), (2, 10));
    assert_eq!(read(&s, 2, 11).unwrap(), entries(2..=10, 2));
    assert_eq!(read(&s, 4, 6).unwrap(), entries(4..=5, 2));
    assert_eq!(read(&s, 5, 5).unwrap(), vec![]);
    assert_eq!(s.term(10).unwrap(), 2);
    assert!(is_compacted(read(&s, 1, 3)));
    // Asking past the end is an error value, never a panic.
    assert!(is_unavailable(read(&s, 2, 12)));
    assert!(is_unavailable(s.term(11)));
}

#[test]
fn max_size_limits_the_batch_but_returns_at_least_one_entry() {
    let dir = tempfile::tempdir().unwrap();
    let s = store_with_log(dir.path());
    let one = protobuf::Message::compute_size(&entry(2, 2)) as u64;
    assert_eq!(s.entries(2, 11, Some(0), ctx()).unwrap(), entries(2..=2, 2));
    assert_eq!(
        s.entries(2, 11, Some(one * 3), ctx()).unwrap(),
        entries(2..=4, 2)
    );
    assert_eq!(
        s.entries(2, 11, Some(raft::NO_LIMIT), ctx()).unwrap(),
        entries(2..=10, 2)
    );
}

#[test]
fn conflicting_append_truncates_the_old_tail() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store_with_log(dir.path());
    let hs = HardState {
        term: 3,
        vote: 2,
        commit: 5,
        ..Default::default()
    };
    s.write_ready(None, &entries(6..=7, 3), Some(&hs)).unwrap();
    let check = |s: &LogStore| {
        assert_eq!(s.last_index().unwrap(), 7);
        let mut want = entries(2..=5, 2);
        want.extend(entries(6..=7, 3));
        assert_eq!(read(s, 2, 8).unwrap(), want);
        assert!(is_unavailable(s.term(8)));
        assert_eq!(s.initial_state().unwrap().hard_state, hs);
    };
    check(&s);
    drop(s);
    check(&LogStore::open(dir.path()).unwrap());
}

#[test]
fn append_leaving_a_hole_or_before_the_log_start_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store_with_log(dir.path());
    assert!(matches!(
        s.write_ready(None, &entries(12..=12, 2), None),
        Err(ConsensusError::Invalid(_))
    ));
    assert!(matches!(
        s.write_ready(None, &entries(1..=2, 2), None),
        Err(ConsensusError::Invalid(_))
    ));
    let gap = vec![entry(11, 2), entry(13, 2)];
    assert!(matches!(
        s.write_ready(None, &gap, None),
        Err(ConsensusError::Invalid(_))
    ));
    // Refused writes change nothing.
    assert_eq!(s.last_index().unwrap(), 10);
    assert_eq!(read(&s, 2, 11).unwrap(), entries(2..=10, 2));
}

#[test]
fn hard_state_and_commit_round_trip_through_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store_with_log(dir.path());
    let hs = HardState {
        term: 7,
        vote: 3,
        commit: 4,
        ..Default::default()
    };
    s.write_ready(None, &[], Some(&hs)).unwrap();
    s.set_commit(9).unwrap();
    drop(s);
    let s = LogStore::open(dir.path()).unwrap();
    let want = HardState {
        term: 7,
        vote: 3,
        commit: 9,
        ..Default::default()
    };
    assert_eq!(s.initial_state().unwrap().hard_state, want);
}

/// A hard state that moved only its commit is noted in memory and written with the next batch
/// (raft-rs's `must_sync` is false for it); a new term or vote is synced.
#[test]
fn only_a_new_term_or_vote_makes_a_hard_state_worth_a_sync() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store_with_log(dir.path());
    let mut hs = HardState {
        term: 7,
        vote: 3,
        commit: 4,
        ..Default::default()
    };
    let synced = s.synced_writes();
    s.write_ready(None, &[], Some(&hs)).unwrap();
    assert_eq!(s.synced_writes(), synced + 1, "a new term and vote");
    hs.commit = 9;
    s.write_ready(None, &[], Some(&hs)).unwrap();
    assert_eq!(s.synced_writes(), synced + 1, "a commit alone");
    assert_eq!(s.hard_state(), &hs, "noted in memory");
    drop(s);
    let mut s = LogStore::open(dir.path()).unwrap();
    hs.commit = 4;
    assert_eq!(s.initial_state().unwrap().hard_state, hs, "not written");
    let synced = s.synced_writes();
    hs.commit = 9;
    s.write_ready(None, &[], Some(&hs)).unwrap();
    assert_eq!(s.synced_writes(), synced, "a commit alone, after a restart");
    hs.vote = 2;
    s.write_ready(None, &[], Some(&hs)).unwrap();
    assert_eq!(s.synced_writes(), synced + 1, "a new vote");
    hs.commit = 10;
    s.write_ready(None, &entries(11..=11, 7), Some(&hs))
        .unwrap();
    assert_eq!(s.synced_writes(), synced + 2, "entries");
    drop(s);
    let s = LogStore::open(dir.path()).unwrap();
    assert_eq!(s.initial_state().unwrap().hard_state, hs);
    assert_eq!(s.last_index().unwrap(), 11);
}

/// `note_commit` (what a group of one uses) writes nothing: the commit reaches the disk with the
/// next batch that `write_ready` writes, entries or not.
#[test]
fn a_noted_commit_is_written_with_the_next_batch_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store_with_log(dir.path());
    s.set_commit(5).unwrap();
    s.note_commit(8);
    assert_eq!(s.hard_state().commit, 8, "in memory at once");
    drop(s);
    let mut s = LogStore::open(dir.path()).unwrap();
    assert_eq!(
        s.initial_state().unwrap().hard_state.commit,
        5,
        "not written"
    );

    s.note_commit(9);
    s.write_ready(None, &entries(11..=11, 2), None).unwrap();
    drop(s);
    let s = LogStore::open(dir.path()).unwrap();
    assert_eq!(s.initial_state().unwrap().hard_state.commit, 9);
    assert_eq!(s.last_index().unwrap(), 11);

    // A Ready with nothing else to persist (a read barrier's) writes nothing for it, synced or
    // not; a new hard state from raft does carry it.
    let mut s = s;
    s.note_commit(11);
    let synced = s.synced_writes();
    s.write_ready(None, &[], None).unwrap();
    assert_eq!(s.synced_writes(), synced);
    assert_eq!(s.hard_state().commit, 11);
    drop(s);
    let mut s = LogStore::open(dir.path()).unwrap();
    assert_eq!(s.initial_state().unwrap().hard_state.commit, 9);
    s.note_commit(11);
    let mut hs = s.hard_state().clone();
    hs.term += 1;
    s.write_ready(None, &[], Some(&hs)).unwrap();
    drop(s);
    let s = LogStore::open(dir.path()).unwrap();
    assert_eq!(s.initial_state().unwrap().hard_state, hs);
    assert_eq!(hs.commit, 11);
}

#[test]
fn recording_a_snapshot_compacts_up_to_the_requested_index() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store_with_log(dir.path());
    s.set_commit(10).unwrap();
    let meta = SnapshotMetadata {
        index: 8,
        term: 2,
        conf_state: Some(ConfState {
            voters: vec![1, 2, 3],
            ..Default::default()
        })
        .into(),
        ..Default::default()
    };
    s.record_snapshot(&meta, 5).unwrap();
    let check = |s: &LogStore| {
        assert_eq!((s.first_index().unwrap(), s.last_index().unwrap()), (6, 10));
        assert_eq!(
            s.term(5).unwrap(),
            2,
            "the term before the first index is kept"
        );
        assert!(is_compacted(s.term(4)));
        assert!(is_compacted(read(s, 5, 7)));
        assert_eq!(read(s, 6, 11).unwrap(), entries(6..=10, 2));
        assert_eq!(s.snapshot_meta(), &meta);
    };
    check(&s);
    drop(s);
    check(&LogStore::open(dir.path()).unwrap());
}

#[test]
fn compaction_never_passes_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store_with_log(dir.path());
    s.set_commit(10).unwrap();
    let meta = SnapshotMetadata {
        index: 4,
        term: 2,
        ..Default::default()
    };
    // Asking for more than the snapshot covers is clamped to the snapshot index.
    s.record_snapshot(&meta, 9).unwrap();
    assert_eq!(s.first_index().unwrap(), 5);
    // Recording it again compacts nothing more.
    s.record_snapshot(&meta, 4).unwrap();
    assert_eq!(s.first_index().unwrap(), 5);
}

#[test]
fn snapshot_past_the_commit_index_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store_with_log(dir.path());
    s.set_commit(5).unwrap();
    let meta = SnapshotMetadata {
        index: 6,
        term: 2,
        ..Default::default()
    };
    assert!(matches!(
        s.record_snapshot(&meta, 6),
        Err(ConsensusError::Invalid(_))
    ));
    assert_eq!(s.first_index().unwrap(), 2);
}

#[test]
fn installing_a_leader_snapshot_replaces_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store_with_log(dir.path());
    let cs = ConfState {
        voters: vec![1, 2, 3],
        learners: vec![4],
        ..Default::default()
    };
    let meta = SnapshotMetadata {
        index: 50,
        term: 4,
        conf_state: Some(cs.clone()).into(),
        ..Default::default()
    };
    let hs = HardState {
        term: 4,
        vote: 0,
        commit: 50,
        ..Default::default()
    };
    s.write_ready(Some(&meta), &entries(51..=52, 4), Some(&hs))
        .unwrap();
    let check = |s: &LogStore| {
        assert_eq!(
            (s.first_index().unwrap(), s.last_index().unwrap()),
            (51, 52)
        );
        assert_eq!(s.term(50).unwrap(), 4);
        assert!(is_compacted(s.term(10)));
        assert_eq!(read(s, 51, 53).unwrap(), entries(51..=52, 4));
        let rs = s.initial_state().unwrap();
        assert_eq!((rs.conf_state, rs.hard_state), (cs.clone(), hs.clone()));
        assert_eq!(s.snapshot_meta(), &meta);
    };
    check(&s);
    drop(s);
    check(&LogStore::open(dir.path()).unwrap());
}

#[test]
fn long_logs_read_back_beyond_the_cache_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = LogStore::open(dir.path()).unwrap();
    s.bootstrap(&[1], &[]).unwrap();
    for chunk in (2..=10_001u64).collect::<Vec<_>>().chunks(1000) {
        s.write_ready(None, &entries(chunk[0]..=*chunk.last().unwrap(), 2), None)
            .unwrap();
    }
    let writes = s.synced_writes();
    drop(s);
    let s = LogStore::open(dir.path()).unwrap();
    assert_eq!(writes, 11, "bootstrap + one synced batch per write_ready");
    assert_eq!(
        (s.first_index().unwrap(), s.last_index().unwrap()),
        (2, 10_001)
    );
    assert_eq!(read(&s, 2, 10_002).unwrap(), entries(2..=10_001, 2));
    // Ranges from disk only, straddling disk and cache, and size-limited on disk.
    assert_eq!(read(&s, 100, 200).unwrap(), entries(100..=199, 2));
    assert_eq!(read(&s, 5000, 7000).unwrap(), entries(5000..=6999, 2));
    let one = protobuf::Message::compute_size(&entry(100, 2)) as u64;
    assert_eq!(
        s.entries(100, 200, Some(one * 10), ctx()).unwrap(),
        entries(100..=109, 2)
    );
    assert_eq!(s.term(3).unwrap(), 2);
}

/// A store whose last synced write (entry 11 and a vote) is the last record of its log segment,
/// closed; the segment's path.
fn closed_store_with_a_synced_tail(dir: &std::path::Path) -> std::path::PathBuf {
    let mut s = store_with_log(dir);
    s.write_ready(None, &entries(11..=11, 3), Some(&vote()))
        .unwrap();
    let segment = s.current_segment();
    drop(s);
    segment
}

/// The file offset where a segment's records end (after the last record: a header of zeros).
fn data_end(path: &std::path::Path) -> usize {
    let number = path.file_stem().unwrap().to_str().unwrap().parse().unwrap();
    let expect = segments::Expect {
        prev: None,
        covered: 0,
    };
    let read = segments::read_segment(path, number, expect, &mut |_, _| Ok(())).unwrap();
    match read.end {
        segments::End::Clean { offset, .. } => offset as usize,
        other => panic!("{other:?}"),
    }
}

/// Flips the 8 bytes that start 20 bytes before `end` in `path` (the fault suite's corrupt-log).
fn flip_8_bytes_20_before(path: &std::path::Path, end: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    for b in &mut bytes[end - 20..end - 12] {
        *b ^= 0xff;
    }
    std::fs::write(path, &bytes).unwrap();
}

/// Truncates `path` to `len` bytes.
fn cut_to(path: &std::path::Path, len: u64) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.set_len(len).unwrap();
}

/// The hard state written with entry 11: term 3, a vote for 2.
fn vote() -> HardState {
    HardState {
        term: 3,
        vote: 2,
        commit: 10,
        ..Default::default()
    }
}

/// compat-tests/faults/BUGS.md P4: RocksDB's default WAL recovery (point in time) stopped replay
/// at a record whose checksum failed and opened the store without it, so a member silently lost
/// an entry it had synced and acknowledged (and the vote in the same batch). The synced copy is
/// now the log segment: a record there whose checksum fails stops the start, with a clear error,
/// as ZooKeeper refuses a log whose CRC fails.
#[test]
fn a_corrupt_synced_record_at_the_log_tail_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let segment = closed_store_with_a_synced_tail(dir.path());
    let end = data_end(&segment);
    flip_8_bytes_20_before(&segment, end);
    let err = LogStore::open(dir.path())
        .err()
        .expect("a corrupt log does not open");
    let text = err.to_string();
    assert!(text.contains("checksum"), "{text}");
    assert!(text.contains(&segment.display().to_string()), "{text}");
    assert!(text.contains("paddock repair"), "{text}");
}

/// The checkpoint in RocksDB is written at open and when a segment fills: every synced write
/// after it comes back from the segments, in order (a conflicting append and a vote included), and
/// the next start finds the same.
#[test]
fn every_synced_write_after_the_checkpoint_comes_back_from_the_segments() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store_with_log(dir.path());
    for t in 3..=5u64 {
        let first = 11 + (t - 3) * 5;
        s.write_ready(None, &entries(first..=first + 4, t), None)
            .unwrap();
    }
    // A conflicting append (a new leader's) and a vote.
    let hs = HardState {
        term: 6,
        vote: 3,
        commit: 12,
        ..Default::default()
    };
    s.write_ready(None, &entries(20..=21, 6), Some(&hs))
        .unwrap();
    // Nothing is held in memory after a synced record: closing writes nothing more, as a crash.
    drop(s);
    for _ in 0..2 {
        let s = LogStore::open(dir.path()).unwrap();
        assert_eq!(s.last_index().unwrap(), 21);
        let mut want = entries(2..=10, 2);
        want.extend(entries(11..=15, 3));
        want.extend(entries(16..=19, 4));
        want.extend(entries(20..=21, 6));
        assert_eq!(read(&s, 2, 22).unwrap(), want);
        assert_eq!(s.hard_state(), &hs);
    }
}

/// A segment is sized when it is created, so one found shorter was cut,
/// and what was past the cut (here entry 11 and the vote written with it, acknowledged) is gone.
/// The start refuses, naming the file, rather than opening without the vote: a member that
/// forgot it could vote twice in term 3.
#[test]
fn a_segment_cut_short_refuses_to_open_rather_than_lose_the_vote() {
    let dir = tempfile::tempdir().unwrap();
    let segment = closed_store_with_a_synced_tail(dir.path());
    let end = data_end(&segment) as u64;
    for len in [end - 7, end - 512, end, end + 4096] {
        let full = std::fs::read(&segment).unwrap();
        cut_to(&segment, len);
        let text = LogStore::open(dir.path())
            .err()
            .unwrap_or_else(|| panic!("a segment cut to {len} bytes opened"))
            .to_string();
        assert!(text.contains("cut short"), "{text}");
        assert!(text.contains(&segment.display().to_string()), "{text}");
        std::fs::write(&segment, full).unwrap();
    }
    let s = LogStore::open(dir.path()).unwrap();
    assert_eq!(s.last_index().unwrap(), 11);
    assert_eq!(s.hard_state(), &vote());
}

/// The segment the checkpoint names as the one being written holds the newest records: gone, or
/// cut to nothing, the start refuses.
#[test]
fn the_newest_segment_gone_or_emptied_refuses_to_open() {
    for how in ["removed", "emptied"] {
        let dir = tempfile::tempdir().unwrap();
        let segment = closed_store_with_a_synced_tail(dir.path());
        // Reopened: the checkpoint now names the segment this open started, still empty; write
        // into it, so that it is the one holding the vote.
        let mut s = LogStore::open(dir.path()).unwrap();
        assert_ne!(s.current_segment(), segment);
        let hs = HardState {
            term: 4,
            vote: 3,
            commit: 10,
            ..Default::default()
        };
        s.write_ready(None, &[], Some(&hs)).unwrap();
        let newest = s.current_segment();
        drop(s);
        match how {
            "removed" => std::fs::remove_file(&newest).unwrap(),
            _ => cut_to(&newest, 0),
        }
        let text = LogStore::open(dir.path())
            .err()
            .unwrap_or_else(|| panic!("{how}: opened"))
            .to_string();
        assert!(
            text.contains("is gone") || text.contains("empty"),
            "{how}: {text}"
        );
    }
}

/// A write cut short by a power loss (a record whose sectors did not all reach the device, at
/// the end of the newest segment, with only that write's sectors after it) never returned, so
/// nothing in it was acknowledged: it is dropped, the store opens with everything before it (the
/// vote written before it included), and the next start reads a clean end.
#[test]
fn a_torn_last_write_is_dropped_and_every_write_before_it_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store_with_log(dir.path());
    s.write_ready(None, &entries(11..=11, 3), Some(&vote()))
        .unwrap();
    let segment = s.current_segment();
    let before = std::fs::read(&segment).unwrap();
    // The next write: entries with 2 KB each and a new vote, several sectors.
    let big: Vec<Entry> = (12..=14)
        .map(|index| Entry {
            index,
            term: 4,
            data: vec![index as u8; 2000].into(),
            ..Default::default()
        })
        .collect();
    let next = HardState {
        term: 4,
        vote: 3,
        commit: 11,
        ..Default::default()
    };
    s.write_ready(None, &big, Some(&next)).unwrap();
    let after = std::fs::read(&segment).unwrap();
    drop(s);
    let differ: Vec<usize> = (0..before.len() / 512)
        .filter(|&i| before[i * 512..(i + 1) * 512] != after[i * 512..(i + 1) * 512])
        .collect();
    assert!(differ.len() > 4, "{differ:?}");
    // Every sector of the write but one in its middle reached the device.
    let mut image = after.clone();
    let lost = differ[differ.len() / 2];
    image[lost * 512..(lost + 1) * 512].copy_from_slice(&before[lost * 512..(lost + 1) * 512]);
    std::fs::write(&segment, &image).unwrap();
    for _ in 0..2 {
        let s = LogStore::open(dir.path()).unwrap();
        assert_eq!(
            s.last_index().unwrap(),
            11,
            "entries 12..14 were the torn write"
        );
        assert_eq!(s.hard_state(), &vote());
        assert_eq!(read(&s, 2, 12).unwrap().len(), 10);
    }
    // The first sector lost instead: the log ends where it did, as cleanly.
    let dir = tempfile::tempdir().unwrap();
    let mut s = store_with_log(dir.path());
    s.write_ready(None, &entries(11..=11, 3), Some(&vote()))
        .unwrap();
    let segment = s.current_segment();
    let before = std::fs::read(&segment).unwrap();
    s.write_ready(None, &big, Some(&next)).unwrap();
    let mut image = std::fs::read(&segment).unwrap();
    drop(s);
    let first = (0..before.len() / 512)
        .find(|&i| before[i * 512..(i + 1) * 512] != image[i * 512..(i + 1) * 512])
        .unwrap();
    image[first * 512..(first + 1) * 512].copy_from_slice(&before[first * 512..(first + 1) * 512]);
    std::fs::write(&segment, &image).unwrap();
    let s = LogStore::open(dir.path()).unwrap();
    assert_eq!(s.last_index().unwrap(), 11);
    assert_eq!(s.hard_state(), &vote());
}

/// The log files in `dir` that end in `suffix`: segments ("seg", what a restart reads) or spares
/// (pruned segments kept to be written over, "spare").
fn log_files(dir: &std::path::Path, suffix: &str) -> usize {
    std::fs::read_dir(dir.join("log"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().unwrap() == suffix)
        .count()
}

#[test]
fn the_log_a_restart_reads_stays_bounded_as_snapshots_compact_it() {
    // 96 MB of entries in 4 MB segments, the commit index moving with every batch as in a
    // server, a snapshot every 2,000 entries compacting the log to 1,000 entries behind it.
    let dir = tempfile::tempdir().unwrap();
    let mut s = LogStore::open_with_segment_bytes(dir.path(), 4 << 20).unwrap();
    s.bootstrap(&[1], &[]).unwrap();
    let payload = vec![7u8; 4096];
    let mut index = 2;
    let mut most = 0;
    for batch in 0..240u64 {
        let es: Vec<Entry> = (0..100)
            .map(|i| Entry {
                index: index + i,
                term: 2,
                data: payload.clone().into(),
                ..Default::default()
            })
            .collect();
        let hs = HardState {
            term: 2,
            vote: 1,
            commit: index + 99,
            ..Default::default()
        };
        s.write_ready(None, &es, Some(&hs)).unwrap();
        s.set_commit(index + 99).unwrap();
        index += 100;
        if batch % 20 == 19 {
            let snap = SnapshotMetadata {
                index: index - 1,
                term: 2,
                ..Default::default()
            };
            s.record_snapshot(&snap, index - 1001).unwrap();
            assert_eq!(s.first(), index - 1000);
        }
        most = most.max(s.segment_count());
        assert_eq!(s.segment_count(), log_files(dir.path(), "seg"));
        assert!(log_files(dir.path(), "spare") <= 2);
    }
    assert_eq!(
        log_files(dir.path(), "spare"),
        2,
        "pruned segments kept to be reused"
    );
    // 3,000 entries at most (12 MB) live at once: 3 full segments, the one being filled and
    // the one the start opened.
    assert!(most <= 6, "{most} segments at once");
    drop(s);
    let s = LogStore::open_with_segment_bytes(dir.path(), 4 << 20).unwrap();
    assert_eq!(s.last(), index - 1);
    assert_eq!(read(&s, index - 1000, index).unwrap().len(), 1000);
    assert_eq!(read(&s, index - 1, index).unwrap()[0].data.len(), 4096);
}

/// RocksDB's files in `db` (its checkpoint), leaving `log/` alone: copied to `to`.
fn copy_checkpoint(db: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(db).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

/// Replaces RocksDB's files in `db` by those in `from` (none: the checkpoint is lost).
fn put_checkpoint(db: &std::path::Path, from: Option<&std::path::Path>) {
    for e in std::fs::read_dir(db).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::remove_file(&p).unwrap();
        }
    }
    if let Some(from) = from {
        copy_checkpoint(from, db);
    }
}

/// The RocksDB checkpoint lost, or rolled back to an older one: after segments were pruned, the
/// records it no longer covers are gone and the start refuses; without prunes, the log itself
/// holds everything and the store reads back the same.
#[test]
fn a_lost_or_rolled_back_checkpoint_refuses_or_reads_the_same_log() {
    const SMALL: u64 = 64 << 10;
    for pruned in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let old = tempfile::tempdir().unwrap();
        let mut s = LogStore::open_with_segment_bytes(dir.path(), SMALL).unwrap();
        s.bootstrap(&[1], &[]).unwrap();
        let write = |s: &mut LogStore, range: std::ops::RangeInclusive<u64>| {
            for i in range {
                let e = Entry {
                    index: i,
                    term: 2,
                    data: vec![i as u8; 2000].into(),
                    ..Default::default()
                };
                s.write_ready(None, &[e], None).unwrap();
            }
        };
        write(&mut s, 2..=40);
        drop(s);
        copy_checkpoint(dir.path(), old.path());
        let mut s = LogStore::open_with_segment_bytes(dir.path(), SMALL).unwrap();
        write(&mut s, 41..=120);
        let hs = HardState {
            term: 3,
            vote: 1,
            commit: 120,
            ..Default::default()
        };
        s.write_ready(None, &[], Some(&hs)).unwrap();
        if pruned {
            let snap = SnapshotMetadata {
                index: 110,
                term: 2,
                ..Default::default()
            };
            s.record_snapshot(&snap, 110).unwrap();
            write(&mut s, 121..=200);
        }
        let (first, last) = (s.first(), s.last());
        drop(s);
        let whole = tempfile::tempdir().unwrap();
        copy_checkpoint(dir.path(), whole.path());
        for (what, from) in [("rolled back", Some(old.path())), ("lost", None)] {
            put_checkpoint(dir.path(), from);
            match LogStore::open_with_segment_bytes(dir.path(), SMALL) {
                Ok(s) => {
                    assert!(
                        !pruned,
                        "{what}, pruned: opened at {}..{}",
                        s.first(),
                        s.last()
                    );
                    assert_eq!((s.first(), s.last()), (first, last), "{what}");
                    assert_eq!(s.hard_state().term, 3, "{what}");
                    assert_eq!(s.hard_state().vote, 1, "{what}");
                    assert_eq!(
                        read(&s, first, last + 1).unwrap().len() as u64,
                        last - first + 1
                    );
                }
                Err(e) => {
                    assert!(pruned, "{what}, not pruned: {e}");
                    let text = e.to_string();
                    assert!(
                        text.contains("missing") || text.contains("gone"),
                        "{what}: {text}"
                    );
                }
            }
            put_checkpoint(dir.path(), Some(whole.path()));
        }
        let s = LogStore::open_with_segment_bytes(dir.path(), SMALL).unwrap();
        assert_eq!(s.last(), last);
    }
}
