//! The Raft log store, and raft-rs's `Storage` trait over it.
//!
//! The log lives in segment files (`segments.rs`, in `log/` inside the store's directory): every
//! change to the store is one record there (`record.rs`): the entries a Ready appends, with the
//! hard state, an installed snapshot, the newest snapshot's metadata, the membership, the log's
//! start. A record that raft needs durable (entries, term/vote, snapshots, membership) is synced
//! before the call returns; a commit index alone is appended unsynced (raft recomputes a lost
//! commit index from a quorum). One append, one device write: nothing else is written per Ready.
//!
//! The store keeps in memory its metadata, where each entry from the log's first index to its
//! last sits (segment, offset, length, term: 32 bytes an entry), and the newest entries
//! (`CACHE_ENTRIES`; a group of one lets go of each as soon as it is delivered, `uncache_through`,
//! so the applier's copy is the last and the buffer is freed by the thread that allocated it).
//! Older entries are read from the segment files (a follower catching up, a restart replaying the
//! log since its snapshot), adjacent ones in one read.
//!
//! RocksDB (family `raft_meta`) holds a checkpoint of the metadata: `hard_state`, `conf_state`
//! (the membership last persisted), `snapshot_meta` (the newest durable snapshot), `first_index`
//! (first index still in the log, then the term of the entry just before it), `last_index`,
//! `rejoining`, and `log_seq`, the last record the checkpoint covers. It is written, synced, at
//! every open and when a segment fills up; a start reads it, then every record of every segment
//! kept: the records after `log_seq` for the metadata, all of them for where the entries are.
//! So a segment can go once the checkpoint covers its records and the log no longer holds any of
//! its entries (the snapshot compacted past them): `prune`.
//!
//! Why not the entries in RocksDB, as before (DESIGN.md, "the log's entries in the segments
//! alone"): RocksDB was a second copy behind the synced segments, and its memtable insert, WAL
//! write, flush and compaction cost about a fifth of the server's CPU per set.
//!
//! Only the raft thread mutates the store, through `&mut self`; raft-rs reads it through `&self`,
//! so no locks are needed.

use std::cell::Cell;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use protobuf::Message as _;
use raft::eraftpb::{ConfState, Entry, HardState, Snapshot, SnapshotMetadata};
use raft::{GetEntriesContext, RaftState, StorageError};
use rocksdb::{ColumnFamilyDescriptor, DBRecoveryMode, Options, WriteBatch, WriteOptions, DB};

use crate::record::{self, Change, Span};
use crate::segments::{self, Segments, SEGMENT_BYTES};
use crate::snapshot_file;
use crate::ConsensusError;

const CF_META: &str = "raft_meta";
/// The family that held the log's entries when RocksDB held them (before 4 Dec 2026).
const CF_LEGACY_LOG: &str = "raft_log";
const KEY_HARD_STATE: &[u8] = b"hard_state";
const KEY_CONF_STATE: &[u8] = b"conf_state";
const KEY_SNAPSHOT_META: &[u8] = b"snapshot_meta";
const KEY_FIRST_INDEX: &[u8] = b"first_index";
const KEY_LAST_INDEX: &[u8] = b"last_index";
/// Present while a member that started empty and joined has not yet caught up (see `Driver`).
const KEY_REJOINING: &[u8] = b"rejoining";
/// The last log record whose effect the checkpoint holds (u64 BE).
const KEY_LOG_SEQ: &[u8] = b"log_seq";
/// The log segment being appended to when the checkpoint was written (u64 BE): a start refuses if
/// it is gone or empty (the newest records, a vote among them, would be lost without a trace).
/// Checkpoints written before Dec 2026 lack it.
const KEY_SEGMENT: &[u8] = b"segment";
/// The log segments' directory, inside the RocksDB directory (RocksDB leaves directories alone).
const LOG_DIR: &str = "log";
/// Where the segments were when they were only a redo log in front of RocksDB's copy.
const LEGACY_SEGMENTS_DIR: &str = "segments";

/// The memtable size of RocksDB's families (see `rocksdb_options`).
const META_MEMTABLE_BYTES: usize = 1 << 20;
/// Free space a start needs besides a new segment: RocksDB's new WAL, manifest and info log, the
/// snapshot files' own margin aside (`check_free_space`).
const ROCKSDB_START_BYTES: u64 = 8 << 20;

/// Recent entries kept in memory: followers being replicated to and the applier read the tail.
const CACHE_ENTRIES: usize = 4096;
/// Adjacent entries read from a segment in one read, up to this many bytes.
const READ_RUN_BYTES: u64 = 1 << 20;

/// Index and term of the bootstrap snapshot that carries the initial membership (etcd/TiKV style:
/// every node of the initial group starts from the same state, later nodes from a snapshot).
pub const BOOTSTRAP_INDEX: u64 = 1;
pub const BOOTSTRAP_TERM: u64 = 1;

/// Where an entry is: its segment, the file offset and length of its bytes, and its term.
#[derive(Debug, Clone, Copy)]
struct Loc {
    segment: u64,
    offset: u64,
    len: u32,
    term: u64,
}

/// What the records say: the metadata and where the entries are. A start rebuilds it from the
/// checkpoint and the records (`State::apply`), and every append changes it the same way.
#[derive(Default)]
struct State {
    hard_state: HardState,
    /// The hard state as last written (`hard_state` may be ahead of it in its commit index alone:
    /// `note_commit`).
    persisted_hs: HardState,
    conf_state: ConfState,
    /// The membership as last written (`conf_state` may differ after `restart_with_conf_state`).
    persisted_cs: ConfState,
    snapshot_meta: SnapshotMetadata,
    first_index: u64,
    /// Term of entry `first_index - 1`, kept after compaction so raft can still match it.
    truncated_term: u64,
    last_index: u64,
    /// Where entries `locs_base..` are; once open, `locs_base == first_index` and they run to
    /// `last_index`.
    locs: VecDeque<Loc>,
    locs_base: u64,
    rejoining: bool,
}

/// The Raft log store: segments, an in-memory index, a RocksDB checkpoint of the metadata.
pub struct LogStore {
    /// Taken (and leaked) once a write to it failed: see `Drop`.
    db: Option<DB>,
    /// RocksDB's directory (holding `log/`).
    dir: PathBuf,
    st: State,
    /// Contiguous entries ending at `last_index`.
    cache: VecDeque<Entry>,
    /// Where snapshot files live, for `Storage::snapshot` (a leader sending one to a follower).
    snapshot_dir: Option<PathBuf>,
    synced_writes: u64,
    segments: Segments,
    /// The last record the RocksDB checkpoint covers.
    checkpoint_seq: u64,
    /// Set by `Storage::snapshot` when raft wanted to send a snapshot to this peer and the stored
    /// one cannot serve it; the driver turns it into `Event::SnapshotWanted`.
    snapshot_wanted: Cell<Option<u64>>,
    /// Buffers for encoding a record, kept between appends.
    record: Vec<u8>,
    spans: Vec<Span>,
}

fn storage_err(e: impl std::fmt::Display) -> raft::Error {
    raft::Error::Store(StorageError::Other(e.to_string().into()))
}

fn cf<'a>(db: &'a DB, name: &str) -> &'a rocksdb::ColumnFamily {
    db.cf_handle(name)
        .expect("column families are created on open")
}

fn decode<M: protobuf::Message>(what: &str, bytes: &[u8]) -> Result<M, ConsensusError> {
    M::parse_from_bytes(bytes).map_err(|e| ConsensusError::Corrupt(format!("{what}: {e}")))
}

fn encode<M: protobuf::Message>(m: &M) -> Vec<u8> {
    // Encoding an in-memory message only fails on missing required fields; eraftpb has none.
    m.write_to_bytes().expect("eraftpb messages always encode")
}

fn be_u64(what: &str, b: &[u8]) -> Result<u64, ConsensusError> {
    let raw: [u8; 8] = b
        .try_into()
        .map_err(|_| ConsensusError::Corrupt(format!("{what} record has {} bytes", b.len())))?;
    Ok(u64::from_be_bytes(raw))
}

impl State {
    /// Reads the checkpoint; the last record it covers, and the segment then appended to.
    fn load_checkpoint(&mut self, db: &DB) -> Result<(u64, Option<u64>), ConsensusError> {
        let meta = cf(db, CF_META);
        self.first_index = 1;
        if let Some(b) = db.get_cf(meta, KEY_HARD_STATE)? {
            self.hard_state = decode("hard_state", &b)?;
            self.persisted_hs = self.hard_state.clone();
        }
        if let Some(b) = db.get_cf(meta, KEY_CONF_STATE)? {
            self.conf_state = decode("conf_state", &b)?;
            self.persisted_cs = self.conf_state.clone();
        }
        self.rejoining = db.get_cf(meta, KEY_REJOINING)?.is_some();
        if let Some(b) = db.get_cf(meta, KEY_SNAPSHOT_META)? {
            self.snapshot_meta = decode("snapshot_meta", &b)?;
        }
        if let Some(b) = db.get_cf(meta, KEY_FIRST_INDEX)? {
            if b.len() != 16 {
                return Err(ConsensusError::Corrupt(format!(
                    "first_index record has {} bytes",
                    b.len()
                )));
            }
            self.first_index = be_u64("first_index", &b[..8])?;
            self.truncated_term = be_u64("first_index", &b[8..])?;
        }
        self.last_index = match db.get_cf(meta, KEY_LAST_INDEX)? {
            Some(b) => be_u64("last_index", &b)?,
            None => self.first_index - 1,
        };
        self.locs_base = self.first_index;
        let seq = match db.get_cf(meta, KEY_LOG_SEQ)? {
            Some(b) => be_u64("log_seq", &b)?,
            None => 0,
        };
        let segment = match db.get_cf(meta, KEY_SEGMENT)? {
            Some(b) => Some(be_u64("segment", &b)?),
            None => None,
        };
        Ok((seq, segment))
    }

    /// Applies one record: where its entries are (`segment`, the file offset of its payload)
    /// always, and with `meta` what it says of the metadata too (a start takes the metadata of
    /// the records the checkpoint covers from the checkpoint instead).
    fn apply(
        &mut self,
        change: &Change,
        spans: &[Span],
        segment: u64,
        offset: u64,
        meta: bool,
    ) -> Result<(), ConsensusError> {
        if let Some(snap) = &change.install {
            self.locs.clear();
            self.locs_base = snap.index + 1;
            if meta {
                self.first_index = snap.index + 1;
                self.truncated_term = snap.term;
                self.last_index = snap.index;
                self.snapshot_meta = snap.clone();
                self.conf_state = snap.get_conf_state().clone();
                self.persisted_cs = self.conf_state.clone();
            }
        }
        if meta {
            if let Some(m) = &change.snapshot_meta {
                self.snapshot_meta = m.clone();
            }
            if let Some(cs) = &change.conf_state {
                self.conf_state = cs.clone();
                self.persisted_cs = cs.clone();
            }
            if let Some(r) = change.rejoining {
                self.rejoining = r;
            }
            if let Some(hs) = &change.hard_state {
                self.hard_state = hs.clone();
                self.persisted_hs = hs.clone();
            }
            if let Some((first, term)) = change.first_index {
                self.first_index = first;
                self.truncated_term = term;
                self.last_index = self.last_index.max(first - 1);
                self.trim_locs_before(first);
            }
        }
        if let Some(s) = spans.first() {
            let held = self.locs_base + self.locs.len() as u64;
            if self.locs.is_empty() || s.index < self.locs_base {
                self.locs.clear();
                self.locs_base = s.index;
            } else if s.index > held {
                return Err(ConsensusError::Corrupt(format!(
                    "log segment {segment}: entries from {} follow entries up to {}: the log \
                     has a hole",
                    s.index,
                    held - 1
                )));
            } else {
                self.locs.truncate((s.index - self.locs_base) as usize);
            }
            self.locs.extend(spans.iter().map(|s| Loc {
                segment,
                offset: offset + u64::from(s.offset),
                len: s.len,
                term: s.term,
            }));
            if meta {
                self.last_index = spans.last().unwrap().index;
            }
        }
        Ok(())
    }

    fn trim_locs_before(&mut self, first: u64) {
        while self.locs_base < first && !self.locs.is_empty() {
            self.locs.pop_front();
            self.locs_base += 1;
        }
        if self.locs.is_empty() {
            self.locs_base = self.locs_base.max(first);
        }
    }

    /// After a start's replay: the entries the metadata says the log holds must all be there.
    fn check_locs(&mut self, dir: &Path) -> Result<(), ConsensusError> {
        if self.last_index + 1 < self.first_index {
            return Err(ConsensusError::Corrupt(format!(
                "log ends at {} before its first index {}",
                self.last_index, self.first_index
            )));
        }
        self.trim_locs_before(self.first_index);
        let held_to = self.locs_base + self.locs.len() as u64; // exclusive
        if self.last_index >= self.first_index
            && (self.locs_base != self.first_index || held_to <= self.last_index)
        {
            return Err(ConsensusError::Corrupt(format!(
                "{}: the log holds entries {}..{held_to} but its metadata says {}..={}: entries \
                 are missing, so the member does not start (remove its data to rejoin empty)",
                dir.display(),
                self.locs_base,
                self.first_index,
                self.last_index
            )));
        }
        self.locs
            .truncate((self.last_index + 1 - self.first_index) as usize);
        self.locs_base = self.first_index;
        Ok(())
    }
}

impl LogStore {
    /// Opens (or creates) the store in `dir`. A new store is uninitialized: call `bootstrap` or
    /// wait for a snapshot from a leader.
    pub fn open(dir: &Path) -> Result<LogStore, ConsensusError> {
        LogStore::open_with_segment_bytes(dir, SEGMENT_BYTES)
    }

    /// `open`, with segments of `segment_bytes` (small ones let tests fill and prune several).
    #[doc(hidden)]
    pub fn open_with_segment_bytes(
        dir: &Path,
        segment_bytes: u64,
    ) -> Result<LogStore, ConsensusError> {
        let opts = rocksdb_options()?;
        let families = DB::list_cf(&opts, dir).unwrap_or_default();
        if families.iter().any(|f| f == CF_LEGACY_LOG) || dir.join(LEGACY_SEGMENTS_DIR).exists() {
            return Err(ConsensusError::Invalid(format!(
                "{}: this store keeps its raft log in RocksDB, as paddock did before 4 Dec 2026; \
                 this paddock keeps it in {LOG_DIR}/ and does not convert it. Run the older \
                 paddock, or remove the member's data so that it rejoins its ensemble empty",
                dir.display()
            )));
        }
        let log_dir = dir.join(LOG_DIR);
        check_free_space(dir, &log_dir, segment_bytes)?;
        let db = DB::open_cf_descriptors(&opts, dir, rocksdb_families())
            .map_err(|e| rocksdb_context(dir, "opening", e))?;
        let mut st = State::default();
        let (checkpoint_seq, checkpoint_segment) = st.load_checkpoint(&db)?;
        segments::settle(&log_dir)?;
        let (scanned, last_seq) = replay(&mut st, &log_dir, checkpoint_seq)?;
        st.check_locs(&log_dir)?;
        if let Some(named) = checkpoint_segment {
            check_named_segment(&log_dir, named)?;
        }
        // A write cut short at the end of the newest segment never returned: nothing in it was
        // acknowledged. It goes for good before anything new is written (segments.rs, "the
        // rule"), so that no later record can follow it.
        if let Some(torn) = &scanned.torn {
            segments::drop_torn_tail(torn)?;
        }
        let next_seq = last_seq.max(checkpoint_seq) + 1;
        let segments = Segments::start(&log_dir, next_seq, &scanned.found, segment_bytes)?;
        let mut store = LogStore {
            db: Some(db),
            dir: dir.to_path_buf(),
            st,
            cache: VecDeque::new(),
            snapshot_dir: None,
            synced_writes: 0,
            segments,
            checkpoint_seq,
            snapshot_wanted: Cell::new(None),
            record: Vec::new(),
            spans: Vec::new(),
        };
        store.warm_cache()?;
        store.checkpoint()?;
        store.prune()?;
        Ok(store)
    }

    /// Reads the log's tail into the cache.
    fn warm_cache(&mut self) -> Result<(), ConsensusError> {
        let end = self.st.last_index + 1;
        let from = self
            .st
            .first_index
            .max(end.saturating_sub(CACHE_ENTRIES as u64));
        let mut batch = SizedBatch {
            out: Vec::new(),
            size: 0,
            max: None,
        };
        if from < end {
            self.read_entries(from, end, &mut batch)
                .map_err(ConsensusError::Raft)?;
        }
        self.cache = batch.out.into();
        Ok(())
    }

    /// Writes the metadata to RocksDB, synced, as of the last record appended: afterwards a
    /// start needs no record up to it for the metadata.
    fn checkpoint(&mut self) -> Result<(), ConsensusError> {
        let st = &self.st;
        let seq = self.segments.next_seq() - 1;
        let Some(db) = &self.db else {
            return Err(ConsensusError::Storage(format!(
                "the log's metadata (RocksDB) in {} failed earlier; nothing is written to it \
                 again until the member restarts",
                self.dir.display()
            )));
        };
        let meta = cf(db, CF_META);
        let mut batch = WriteBatch::default();
        batch.put_cf(meta, KEY_HARD_STATE, encode(&st.hard_state));
        batch.put_cf(meta, KEY_CONF_STATE, encode(&st.persisted_cs));
        batch.put_cf(meta, KEY_SNAPSHOT_META, encode(&st.snapshot_meta));
        batch.put_cf(
            meta,
            KEY_FIRST_INDEX,
            first_index_record(st.first_index, st.truncated_term),
        );
        batch.put_cf(meta, KEY_LAST_INDEX, st.last_index.to_be_bytes());
        if st.rejoining {
            batch.put_cf(meta, KEY_REJOINING, b"1");
        } else {
            batch.delete_cf(meta, KEY_REJOINING);
        }
        batch.put_cf(meta, KEY_LOG_SEQ, seq.to_be_bytes());
        batch.put_cf(meta, KEY_SEGMENT, self.segments.current().to_be_bytes());
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        if let Err(e) = db.write_opt(batch, &wo) {
            // RocksDB keeps the failed WAL writer, and the assertions Debian's build keeps
            // abort the process when it is touched again (closing it included): it is never
            // touched again, and the raft thread stops on this error.
            std::mem::forget(self.db.take());
            return Err(rocksdb_context(&self.dir, "writing the checkpoint to", e));
        }
        crate::crash_point!("checkpoint-written");
        self.st.persisted_hs = self.st.hard_state.clone();
        self.checkpoint_seq = seq;
        Ok(())
    }

    /// Deletes the segments the store no longer needs: those the checkpoint covers and that hold
    /// no entry of the log.
    fn prune(&mut self) -> Result<(), ConsensusError> {
        let below = self
            .st
            .locs
            .front()
            .map_or(self.segments.current(), |l| l.segment);
        let n = self.segments.prune(below, self.checkpoint_seq)?;
        if n > 0 {
            tracing::debug!(
                deleted = n,
                kept = self.segments.count(),
                "log segments pruned"
            );
        }
        Ok(())
    }

    /// Appends one record (synced if `sync`) and applies it.
    fn append(
        &mut self,
        change: &Change,
        entries: &[Entry],
        sync: bool,
    ) -> Result<(), ConsensusError> {
        let mut record = std::mem::take(&mut self.record);
        let mut spans = std::mem::take(&mut self.spans);
        record::encode(change, entries, &mut record, &mut spans);
        let result = self.append_encoded(change, &record, &spans, sync);
        self.record = record;
        self.spans = spans;
        result
    }

    fn append_encoded(
        &mut self,
        change: &Change,
        record: &[u8],
        spans: &[Span],
        sync: bool,
    ) -> Result<(), ConsensusError> {
        let rotated = self.segments.is_full_for(record.len());
        if rotated {
            self.segments.rotate(record.len())?;
        }
        let segment = self.segments.current();
        let offset = self.segments.next_payload_offset();
        self.segments.append(record, sync)?;
        if sync {
            self.synced_writes += 1;
        }
        self.st.apply(change, spans, segment, offset, true)?;
        if rotated {
            crate::crash_point!("rotate-record-written");
            // The segment just closed is on disk; with a checkpoint covering it, it can go once
            // the log holds none of its entries.
            self.checkpoint()?;
            crate::crash_point!("rotate-checkpointed");
            self.prune()?;
        }
        Ok(())
    }

    /// The log segment being appended to (for tests and fault injection).
    pub fn current_segment(&self) -> PathBuf {
        self.segments.current_path()
    }

    /// How many log segment files the store keeps, the one appended to included.
    pub fn segment_count(&self) -> usize {
        self.segments.count()
    }

    /// True once the store holds a membership (bootstrapped, or a snapshot installed).
    pub fn is_initialized(&self) -> bool {
        !self.st.conf_state.voters.is_empty() || !self.st.conf_state.learners.is_empty()
    }

    /// Starts a new group: a snapshot at index 1 carrying `voters` and `learners`, committed,
    /// with an empty log after it. Every initial member must bootstrap with the same membership.
    pub fn bootstrap(&mut self, voters: &[u64], learners: &[u64]) -> Result<(), ConsensusError> {
        if self.is_initialized() || self.st.last_index > 0 {
            return Err(ConsensusError::Invalid(
                "log store is already initialized".into(),
            ));
        }
        let conf_state = ConfState {
            voters: voters.to_vec(),
            learners: learners.to_vec(),
            ..Default::default()
        };
        let meta = SnapshotMetadata {
            index: BOOTSTRAP_INDEX,
            term: BOOTSTRAP_TERM,
            conf_state: Some(conf_state).into(),
            ..Default::default()
        };
        let hs = HardState {
            term: BOOTSTRAP_TERM,
            commit: BOOTSTRAP_INDEX,
            ..Default::default()
        };
        self.write_ready(Some(&meta), &[], Some(&hs))
    }

    /// Persists one Ready as a single record: an installed snapshot (resets the log to start
    /// after it), appended entries (replacing a conflicting tail) and the hard state.
    ///
    /// The record is synced when raft needs it to be (raft-rs's `Ready::must_sync`, etcd's
    /// `MustSync`): it installs a snapshot, appends entries, or changes the term or the vote.
    ///
    /// A Ready whose only change is the hard state's commit index writes nothing: the commit is
    /// noted in memory (`note_commit`) and rides with the next record. A lost commit index is
    /// recomputed from the quorum, and every entry below it is already durable; a restart with an
    /// older one replays fewer entries and learns the rest from the leader. Such Readys are most
    /// of an ensemble's: a follower learns each commit in a message of its own, and a leader
    /// learns it from the acks, both outside any Ready that appends. Synced, they cost every
    /// member a second device write per replicated write.
    pub fn write_ready(
        &mut self,
        snapshot: Option<&SnapshotMetadata>,
        entries: &[Entry],
        hs: Option<&HardState>,
    ) -> Result<(), ConsensusError> {
        let st = &self.st;
        if let Some(hs) = hs {
            if snapshot.is_none()
                && entries.is_empty()
                && hs.term == st.hard_state.term
                && hs.vote == st.hard_state.vote
            {
                self.note_commit(hs.commit);
                return Ok(());
            }
        }
        let mut first_index = st.first_index;
        let mut last_index = st.last_index;
        let mut hard_state = st.hard_state.clone();
        if let Some(snap) = snapshot {
            if snap.index < st.first_index.saturating_sub(1) && self.is_initialized() {
                return Err(ConsensusError::Invalid(format!(
                    "snapshot {} is older than the log start {}",
                    snap.index, st.first_index
                )));
            }
            first_index = snap.index + 1;
            last_index = snap.index;
            hard_state.commit = hard_state.commit.max(snap.index);
            hard_state.term = hard_state.term.max(snap.term);
        }
        if let Some(first) = entries.first() {
            if first.index < first_index {
                return Err(ConsensusError::Invalid(format!(
                    "append at {} before the log start {first_index}",
                    first.index
                )));
            }
            if first.index > last_index + 1 {
                return Err(ConsensusError::Invalid(format!(
                    "append at {} leaves a hole after {last_index}",
                    first.index
                )));
            }
            for (i, e) in entries.iter().enumerate() {
                if e.index != first.index + i as u64 {
                    return Err(ConsensusError::Invalid(format!(
                        "entries not contiguous at {}",
                        e.index
                    )));
                }
            }
        }
        if let Some(hs) = hs {
            hard_state = hs.clone();
        }
        let mut change = Change {
            install: snapshot.cloned(),
            ..Default::default()
        };
        // A hard state raft hands over is written when it changed, as always. One that differs
        // from the disk only by a commit noted in memory (`note_commit`) is not worth a synced
        // write of its own: it rides with the next record that has something else in it.
        let something_else = snapshot.is_some() || !entries.is_empty();
        if hard_state != st.hard_state || (hard_state != st.persisted_hs && something_else) {
            change.hard_state = Some(hard_state);
        }
        if change.hard_state.is_none() && !something_else {
            return Ok(());
        }
        // Synced: a record that gets here installs a snapshot, appends entries or changes the
        // term or the vote (a commit alone returned above), all of which raft needs on disk.
        self.append(&change, entries, true)?;

        if snapshot.is_some() {
            self.cache.clear();
        }
        if let Some(first) = entries.first() {
            while self.cache.back().is_some_and(|e| e.index >= first.index) {
                self.cache.pop_back();
            }
            if self
                .cache
                .back()
                .is_some_and(|e| e.index + 1 != first.index)
            {
                self.cache.clear();
            }
            self.cache.extend(entries.iter().cloned());
            while self.cache.len() > CACHE_ENTRIES {
                self.cache.pop_front();
            }
        }
        Ok(())
    }

    /// Sets the membership raft starts with, in memory only: the one of the snapshot the node
    /// restarts from. The persisted `conf_state` (latest applied) is left alone; replaying the log
    /// brings raft back to it.
    pub(crate) fn restart_with_conf_state(&mut self, cs: ConfState) {
        self.st.conf_state = cs;
    }

    /// True while this member, which started empty and joined an existing group, has not caught
    /// up with a leader yet (it must not vote: see `Driver`). Survives restarts.
    pub fn is_rejoining(&self) -> bool {
        self.st.rejoining
    }

    /// Records (synced) that this member starts empty and joins, or that it has caught up.
    pub fn set_rejoining(&mut self, rejoining: bool) -> Result<(), ConsensusError> {
        let change = Change {
            rejoining: Some(rejoining),
            ..Default::default()
        };
        self.append(&change, &[], true)
    }

    /// Persists a membership applied from a committed conf-change entry.
    pub fn set_conf_state(&mut self, cs: ConfState) -> Result<(), ConsensusError> {
        let change = Change {
            conf_state: Some(cs),
            ..Default::default()
        };
        self.append(&change, &[], true)
    }

    /// Records a new commit index. Not synced: raft recomputes a lost commit from the quorum. The
    /// record waits in memory for the next synced one (or 1 MB of its kind).
    pub fn set_commit(&mut self, commit: u64) -> Result<(), ConsensusError> {
        if commit == self.st.hard_state.commit {
            return Ok(());
        }
        let mut hs = self.st.hard_state.clone();
        hs.commit = commit;
        let change = Change {
            hard_state: Some(hs),
            ..Default::default()
        };
        self.append(&change, &[], false)
    }

    /// Records a new commit index in memory only; the next record written carries it.
    /// `write_ready` does this for a Ready that changes nothing else. The driver calls it after
    /// `advance` for a group of one: its restart replays its whole log whatever the commit index
    /// says, and its own vote commits everything again at once, so the index on disk is never
    /// needed; not writing it saves a record per commit, which on a server with one core ran
    /// before the core could answer the commit's clients.
    pub fn note_commit(&mut self, commit: u64) {
        self.st.hard_state.commit = self.st.hard_state.commit.max(commit);
    }

    /// Records a durable snapshot and drops log entries up to `compact_to` (inclusive) in one
    /// synced record. `compact_to` is clamped to the snapshot index: the tree lives in memory, so
    /// entries after the snapshot are the only way to rebuild it. Segments left holding no entry
    /// of the log are deleted.
    pub fn record_snapshot(
        &mut self,
        snap: &SnapshotMetadata,
        compact_to: u64,
    ) -> Result<(), ConsensusError> {
        let st = &self.st;
        if snap.index > st.last_index || snap.index > st.hard_state.commit {
            return Err(ConsensusError::Invalid(format!(
                "snapshot at {} is past commit {} / last index {}",
                snap.index, st.hard_state.commit, st.last_index
            )));
        }
        let mut change = Change {
            snapshot_meta: Some(snap.clone()),
            ..Default::default()
        };
        let compact_to = compact_to.min(snap.index);
        if compact_to >= st.first_index {
            change.first_index = Some((compact_to + 1, self.term_of(compact_to)?));
        }
        self.append(&change, &[], true)?;
        let first = self.st.first_index;
        while self.cache.front().is_some_and(|e| e.index < first) {
            self.cache.pop_front();
        }
        self.prune()
    }

    pub fn hard_state(&self) -> &HardState {
        &self.st.hard_state
    }

    pub fn conf_state(&self) -> &ConfState {
        &self.st.conf_state
    }

    pub fn snapshot_meta(&self) -> &SnapshotMetadata {
        &self.st.snapshot_meta
    }

    pub fn first(&self) -> u64 {
        self.st.first_index
    }

    pub fn last(&self) -> u64 {
        self.st.last_index
    }

    /// Number of synced (fsync'ed) records written since open: the group-commit counter.
    pub fn synced_writes(&self) -> u64 {
        self.synced_writes
    }

    /// The store's directory (RocksDB's, holding `log/`).
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The peer for which raft last wanted a snapshot the store could not give (see
    /// `Storage::snapshot`), cleared by reading it.
    pub fn take_snapshot_wanted(&self) -> Option<u64> {
        self.snapshot_wanted.take()
    }

    pub(crate) fn set_snapshot_dir(&mut self, dir: PathBuf) {
        self.snapshot_dir = Some(dir);
    }

    /// Term of the entry at `idx`.
    pub fn term_of(&self, idx: u64) -> Result<u64, ConsensusError> {
        raft::Storage::term(self, idx).map_err(ConsensusError::Raft)
    }

    /// Drops the cached copies of entries up to `index` (a group of one, whose delivered
    /// entries no follower will ask for). Reads of them, if any, go to the segments.
    pub(crate) fn uncache_through(&mut self, index: u64) {
        while self.cache.front().is_some_and(|e| e.index <= index) {
            self.cache.pop_front();
        }
    }

    /// The first and last index of the entries held in memory, if any.
    pub fn cached_range(&self) -> Option<(u64, u64)> {
        Some((self.cache.front()?.index, self.cache.back()?.index))
    }

    /// Term of entry `idx` if it is in the in-memory cache.
    pub fn cached_term(&self, idx: u64) -> Option<u64> {
        self.cached(idx).map(|e| e.term)
    }

    fn cached(&self, idx: u64) -> Option<&Entry> {
        let front = self.cache.front()?.index;
        if idx < front {
            return None;
        }
        self.cache.get((idx - front) as usize)
    }

    fn loc(&self, idx: u64) -> raft::Result<Loc> {
        idx.checked_sub(self.st.locs_base)
            .and_then(|i| self.st.locs.get(i as usize))
            .copied()
            .ok_or_else(|| storage_err(format!("entry {idx} missing from the log")))
    }

    /// Entries `low..high` (all in the log) read from the segments into `batch`, adjacent ones
    /// in one read; false once the batch is full.
    fn read_entries(&self, low: u64, high: u64, batch: &mut SizedBatch) -> raft::Result<bool> {
        let mut idx = low;
        while idx < high {
            let first = self.loc(idx)?;
            let budget = batch
                .max
                .map_or(READ_RUN_BYTES, |m| m.saturating_sub(batch.size))
                .clamp(
                    u64::from(first.len),
                    READ_RUN_BYTES.max(u64::from(first.len)),
                );
            let mut end = idx + 1;
            let mut span_end = first.offset + u64::from(first.len);
            while end < high {
                let l = self.loc(end)?;
                let l_end = l.offset + u64::from(l.len);
                if l.segment != first.segment
                    || l.offset < span_end
                    || l_end - first.offset > budget
                {
                    break;
                }
                span_end = l_end;
                end += 1;
            }
            let bytes = self
                .segments
                .read(
                    first.segment,
                    first.offset,
                    (span_end - first.offset) as usize,
                )
                .map_err(storage_err)?;
            for i in idx..end {
                let l = self.loc(i)?;
                let at = (l.offset - first.offset) as usize;
                let e = record::entry(&bytes[at..at + l.len as usize], i, l.term)
                    .map_err(storage_err)?;
                if !batch.admit(e) {
                    return Ok(false);
                }
            }
            idx = end;
        }
        Ok(true)
    }
}

impl Drop for LogStore {
    /// A clean stop writes the records held in memory (commit hints; a crash loses them, as it
    /// may: raft recomputes the commit index from a quorum).
    ///
    /// RocksDB is closed only when no write of the store's failed: after a failed write of the
    /// segments (the disk is full or failing) or a background error inside RocksDB (a memtable
    /// flush or its manifest write that met the full disk), one of its file writers may hold a
    /// failed write, and Debian's build keeps the assertions that abort the process when closing
    /// touches that writer again (seen with a full disk, 7 Dec 2026). Its handle is leaked instead:
    /// every checkpoint it holds was written synced, a close adds nothing to them, and the member
    /// is stopping for the failure anyway.
    fn drop(&mut self) {
        if let Err(e) = self.segments.flush() {
            tracing::warn!("the log's last commit hint was not written ({e})");
        }
        let rocksdb_failed = self.db.as_ref().is_some_and(|db| {
            !matches!(
                db.property_int_value("rocksdb.background-errors"),
                Ok(Some(0))
            )
        });
        if self.segments.has_failed() || rocksdb_failed {
            std::mem::forget(self.db.take());
        }
    }
}

/// Collects entries up to a byte budget, always admitting the first (raft-rs requires at least
/// one entry when any exist).
struct SizedBatch {
    out: Vec<Entry>,
    size: u64,
    max: Option<u64>,
}

impl SizedBatch {
    fn admit(&mut self, e: Entry) -> bool {
        self.size += u64::from(e.compute_size());
        if !self.out.is_empty() && self.max.is_some_and(|m| self.size > m) {
            return false;
        }
        self.out.push(e);
        true
    }
}

/// Reads every record in `dir` into `st`: where the entries are, and the metadata of the records
/// after `checkpoint_seq`; what the scan found and the last record's sequence number. The
/// records after the checkpoint must all be there: the first record read must be at or before
/// the one after it.
fn replay(
    st: &mut State,
    dir: &Path,
    checkpoint_seq: u64,
) -> Result<(segments::Scanned, u64), ConsensusError> {
    let mut first_seq = None;
    let mut last_seq = 0;
    let mut replayed = 0u64;
    let mut spans = Vec::new();
    let scanned = segments::scan(dir, checkpoint_seq, |at, payload| {
        let first = *first_seq.get_or_insert(at.seq);
        if first > checkpoint_seq + 1 {
            return Err(ConsensusError::Corrupt(format!(
                "{}: the log starts at record {first} but the store's checkpoint covers only up \
                 to {checkpoint_seq}: records are missing, so the member does not start \
                 (`paddock repair` says what can be done)",
                dir.display()
            )));
        }
        let change = record::decode(payload, &mut spans).map_err(|e| {
            ConsensusError::Corrupt(format!("log segment {} record {}: {e}", at.number, at.seq))
        })?;
        let meta = at.seq > checkpoint_seq;
        replayed += u64::from(meta);
        st.apply(&change, &spans, at.number, at.offset, meta)?;
        last_seq = at.seq;
        Ok(())
    })?;
    if replayed > 0 {
        tracing::info!(
            records = replayed,
            from = checkpoint_seq + 1,
            "log records replayed after the checkpoint"
        );
    }
    Ok((scanned, last_seq))
}

/// What a start would find in the store at `dir`, found without writing anything (RocksDB opened
/// read-only, no segment created, a torn write not dropped): `paddock repair`'s verdict. The
/// error is the one the start would refuse with.
pub(crate) fn dry_open(dir: &Path) -> Result<DryOpen, ConsensusError> {
    let opts = rocksdb_options()?;
    let db = DB::open_cf_descriptors_read_only(&opts, dir, rocksdb_families(), false)
        .map_err(|e| rocksdb_context(dir, "opening (read-only)", e))?;
    let mut st = State::default();
    let (checkpoint_seq, checkpoint_segment) = st.load_checkpoint(&db)?;
    let checkpoint = DryOpen {
        checkpoint_seq,
        checkpoint_segment,
        hard_state: st.hard_state.clone(),
        first_index: st.first_index,
        last_index: st.last_index,
        snapshot_index: st.snapshot_meta.index,
        voters: st.conf_state.voters.clone(),
        learners: st.conf_state.learners.clone(),
        verdict: Ok(None),
    };
    let log_dir = dir.join(LOG_DIR);
    let verdict = (|| {
        let (scanned, _) = replay(&mut st, &log_dir, checkpoint_seq)?;
        st.check_locs(&log_dir)?;
        if let Some(named) = checkpoint_segment {
            check_named_segment(&log_dir, named)?;
        }
        Ok(scanned.torn)
    })();
    Ok(DryOpen {
        verdict,
        ..checkpoint
    })
}

/// `dry_open`'s findings: the checkpoint, and what the start would do with the log.
#[derive(Debug)]
pub(crate) struct DryOpen {
    pub checkpoint_seq: u64,
    pub checkpoint_segment: Option<u64>,
    pub hard_state: HardState,
    pub first_index: u64,
    pub last_index: u64,
    pub snapshot_index: u64,
    pub voters: Vec<u64>,
    pub learners: Vec<u64>,
    /// The start would open (dropping this torn write, if any) or refuse with this error.
    pub verdict: Result<Option<segments::Torn>, ConsensusError>,
}

/// Records, synced, that segment `number` is the newest the checkpoint relies on (`paddock
/// repair` after it set later segments aside). Fails if the store is open elsewhere (RocksDB's
/// lock): a running member is not repaired under its feet.
pub(crate) fn set_checkpoint_segment(db: &DB, number: u64) -> Result<(), ConsensusError> {
    let mut wo = WriteOptions::default();
    wo.set_sync(true);
    db.put_cf_opt(cf(db, CF_META), KEY_SEGMENT, number.to_be_bytes(), &wo)
        .map_err(|e| rocksdb_context(db.path(), "writing the checkpoint to", e))
}

/// Opens the store's RocksDB read-write, which takes its lock: an error if a member runs on it.
pub(crate) fn open_for_repair(dir: &Path) -> Result<DB, ConsensusError> {
    let mut opts = rocksdb_options()?;
    opts.create_if_missing(false);
    DB::open_cf_descriptors(&opts, dir, rocksdb_families()).map_err(|e| {
        let text = e.into_string();
        if text.contains("lock") {
            ConsensusError::Invalid(format!(
                "{}: the store is in use (RocksDB's lock is held): stop the member first",
                dir.display()
            ))
        } else {
            ConsensusError::Storage(format!(
                "opening the log's metadata (RocksDB) in {}: {text}",
                dir.display()
            ))
        }
    })
}

/// The segment the checkpoint says was being appended to must still be there, and not empty of
/// its header: it was created (and synced) before the checkpoint was written, and is pruned only
/// after a later checkpoint names a later one. Gone, the records after the checkpoint, a vote
/// among them, would be lost without a trace.
fn check_named_segment(log_dir: &Path, named: u64) -> Result<(), ConsensusError> {
    let listed = segments::list(log_dir)?;
    let Some((_, path)) = listed.iter().find(|(n, _)| *n == named) else {
        return Err(ConsensusError::Corrupt(format!(
            "{}: the log's checkpoint says segment {named} was being written, but it is gone (the \
             newest is {}): records written after the checkpoint are missing, so the member does \
             not start; `paddock repair` says what can be done",
            log_dir.display(),
            listed
                .last()
                .map_or("none".to_string(), |(n, _)| n.to_string())
        )));
    };
    let len = std::fs::metadata(path)
        .map_err(|e| segments::io_context(format!("reading {}", path.display()), e))?
        .len();
    if len == 0 {
        return Err(segments::damage_error(
            path,
            0,
            "the segment the log's checkpoint names as the one being written is empty: it was \
             cut to nothing",
        ));
    }
    Ok(())
}

/// RocksDB's options for the few kilobytes of metadata it holds: small memtables, so its write-
/// ahead log is not preallocated for 64 MB of them (RocksDB preallocates 1.1 times the largest,
/// which on a nearly full disk failed the start inside RocksDB), a small manifest preallocation,
/// and a bounded info log.
fn rocksdb_options() -> Result<Options, ConsensusError> {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    // Every write to RocksDB is a synced checkpoint. One that a crash cut short was never
    // relied on (segments are pruned only after it returns), so recovery stops before it and
    // the checkpoint before it serves. A checkpoint lost any other way leaves records it
    // covered missing from the segments, which refuses the open (`replay`): P4 does not
    // come back through here.
    opts.set_wal_recovery_mode(DBRecoveryMode::PointInTime);
    opts.set_env(&background_env()?);
    opts.set_write_buffer_size(META_MEMTABLE_BYTES);
    opts.set_db_write_buffer_size(4 * META_MEMTABLE_BYTES);
    opts.set_max_total_wal_size(4 * META_MEMTABLE_BYTES as u64);
    opts.set_manifest_preallocation_size(64 << 10);
    opts.set_max_log_file_size(1 << 20);
    opts.set_keep_log_file_num(4);
    Ok(opts)
}

/// The families, each with a small memtable. The default family is named too: left out, the
/// rocksdb crate adds it with default options (a 64 MB memtable), whose size the new WAL's
/// preallocation follows.
fn rocksdb_families() -> Vec<ColumnFamilyDescriptor> {
    let family = |name: &str| {
        let mut o = Options::default();
        o.set_write_buffer_size(META_MEMTABLE_BYTES);
        ColumnFamilyDescriptor::new(name, o)
    };
    vec![family(rocksdb::DEFAULT_COLUMN_FAMILY_NAME), family(CF_META)]
}

/// A RocksDB error with what was being done and where.
fn rocksdb_context(dir: &Path, what: &str, e: rocksdb::Error) -> ConsensusError {
    let text = e.into_string();
    let advice = if text.contains("No space left") {
        "; the file system is full: free space and restart"
    } else {
        ""
    };
    ConsensusError::Storage(format!(
        "{what} the log's metadata (RocksDB) in {}: {text}{advice}",
        dir.display()
    ))
}

/// Refuses a start on a file system without room for what a start writes: RocksDB's new files
/// and, unless a spare segment can be written over, a new segment. Said plainly here rather than
/// met as ENOSPC inside RocksDB or a segment's allocation.
fn check_free_space(dir: &Path, log_dir: &Path, segment_bytes: u64) -> Result<(), ConsensusError> {
    let probe = if dir.exists() {
        dir
    } else {
        match dir.ancestors().find(|a| a.exists()) {
            Some(a) => a,
            None => return Ok(()),
        }
    };
    let Ok(st) = rustix::fs::statvfs(probe) else {
        return Ok(());
    };
    let free = st.f_bavail.saturating_mul(st.f_frsize);
    let spares = std::fs::read_dir(log_dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .any(|e| e.path().extension().is_some_and(|x| x == "spare"))
        })
        .unwrap_or(false);
    let need = ROCKSDB_START_BYTES + if spares { 0 } else { segment_bytes };
    if free < need {
        return Err(ConsensusError::Io(std::io::Error::new(
            std::io::ErrorKind::StorageFull,
            format!(
                "the file system holding {} has {} KB free; a start needs {} KB (a new log \
                 segment of {} KB and RocksDB's files): free space and start again",
                dir.display(),
                free >> 10,
                need >> 10,
                segment_bytes >> 10
            ),
        )));
    }
    Ok(())
}

/// RocksDB's environment with its flush and compaction threads at nice 19.
///
/// They do bulk work that no reply waits for. Since the log's entries left RocksDB (4 Dec 2026)
/// that is only the metadata checkpoints, next to nothing; the priority was set when they flushed
/// and compacted a copy of the whole log. At normal priority, on a server with one core, the
/// kernel gave them the CPU in slices while the core task and the raft thread waited. Measured
/// with 8 sessions x 32 sets in flight, server pinned to one core (8 s runs, alternating, twice):
/// normal 92-95k sets/s, p99 7.2-7.6 ms; nice 5: 100-104k; nice 10: 105k; nice 19: 106-110k, p99
/// 5.1-5.9 ms; `SCHED_IDLE` (as the snapshot threads run, `background.rs`): 108-111k, p99
/// 4.7-5.2 ms. Not `SCHED_IDLE`: writes wait for a memtable flush once two memtables are full,
/// and under a load of reads that keeps the CPU busy an idle-class flush gets almost no CPU
/// (weight 3 against 1024), so the writes would wait seconds; at nice 19 it gets 1.5% at worst.
/// The 90/10 mixed load, which keeps the core busy, ran 40 s at either priority without a write
/// stall (RocksDB's own stall counter at zero).
///
/// The default environment is shared by every database in the process (here: the one log
/// store); the priority takes effect as each background thread picks up its next job.
fn background_env() -> Result<rocksdb::Env, ConsensusError> {
    let mut env = rocksdb::Env::new()?;
    env.lower_thread_pool_cpu_priority();
    env.lower_high_priority_thread_pool_cpu_priority();
    Ok(env)
}

fn first_index_record(first_index: u64, truncated_term: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(16);
    v.extend_from_slice(&first_index.to_be_bytes());
    v.extend_from_slice(&truncated_term.to_be_bytes());
    v
}

impl raft::Storage for LogStore {
    fn initial_state(&self) -> raft::Result<RaftState> {
        Ok(RaftState::new(
            self.st.hard_state.clone(),
            self.st.conf_state.clone(),
        ))
    }

    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        _context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        let max_size = max_size.into();
        let st = &self.st;
        if low < st.first_index {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if high > st.last_index + 1 || low > high {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        let mut batch = SizedBatch {
            out: Vec::with_capacity((high - low).min(1024) as usize),
            size: 0,
            max: max_size.filter(|&m| m != raft::NO_LIMIT),
        };
        // Older entries come from the segments (a restart replays the whole log this way), the
        // recent tail from the cache.
        let cache_front = self.cache.front().map_or(u64::MAX, |e| e.index);
        let disk_high = high.min(cache_front);
        if low < disk_high && !self.read_entries(low, disk_high, &mut batch)? {
            return Ok(batch.out);
        }
        for idx in low.max(disk_high)..high {
            let e = self
                .cached(idx)
                .ok_or_else(|| storage_err(format!("entry {idx} missing from the cache")))?;
            if !batch.admit(e.clone()) {
                break;
            }
        }
        Ok(batch.out)
    }

    fn term(&self, idx: u64) -> raft::Result<u64> {
        let st = &self.st;
        if idx + 1 == st.first_index {
            return Ok(st.truncated_term);
        }
        if idx < st.first_index {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if idx > st.last_index {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        Ok(self.loc(idx)?.term)
    }

    fn first_index(&self) -> raft::Result<u64> {
        Ok(self.st.first_index)
    }

    fn last_index(&self) -> raft::Result<u64> {
        Ok(self.st.last_index)
    }

    fn snapshot(&self, request_index: u64, to: u64) -> raft::Result<Snapshot> {
        let meta = &self.st.snapshot_meta;
        if meta.index < request_index {
            self.snapshot_wanted.set(Some(to));
            return Err(raft::Error::Store(
                StorageError::SnapshotTemporarilyUnavailable,
            ));
        }
        // raft-rs refuses (with only a log line) a snapshot whose membership lacks the receiver,
        // so a node added after the newest snapshot would never catch up (docs/consensus.md §2).
        // Ask for a fresh one (the driver tells the applier) and wait for it.
        let cs = meta.get_conf_state();
        let members = [
            &cs.voters,
            &cs.learners,
            &cs.voters_outgoing,
            &cs.learners_next,
        ];
        if !members.iter().any(|ids| ids.contains(&to)) {
            tracing::info!(
                to,
                index = meta.index,
                "newest snapshot predates this member; asking for a newer one"
            );
            self.snapshot_wanted.set(Some(to));
            return Err(raft::Error::Store(
                StorageError::SnapshotTemporarilyUnavailable,
            ));
        }
        let mut snap = Snapshot::default();
        snap.set_metadata(meta.clone());
        // The bootstrap snapshot has no file: its state machine is empty. Any other failure is
        // reported as "temporarily unavailable": raft-rs treats every other error as fatal and
        // would panic the leader, while this way it retries and the error is in the log.
        if let Some(dir) = &self.snapshot_dir {
            match snapshot_file::read(dir, meta.index) {
                Ok(Some(file)) => snap.data = file.data.into(),
                Ok(None) if meta.index <= BOOTSTRAP_INDEX => {}
                Ok(None) => {
                    tracing::error!(index = meta.index, "snapshot file to send is missing");
                    self.snapshot_wanted.set(Some(to));
                    return Err(raft::Error::Store(
                        StorageError::SnapshotTemporarilyUnavailable,
                    ));
                }
                Err(e) => {
                    tracing::error!(
                        index = meta.index,
                        "snapshot file to send is unreadable: {e}"
                    );
                    self.snapshot_wanted.set(Some(to));
                    return Err(raft::Error::Store(
                        StorageError::SnapshotTemporarilyUnavailable,
                    ));
                }
            }
        }
        Ok(snap)
    }
}

#[cfg(test)]
mod tests {
    use crate::background::stat_field;

    /// The nice value's field in `/proc/.../stat`.
    const NICE: usize = 19;

    /// (name, nice) of every thread of this process whose name starts with `prefix`.
    fn threads_named(prefix: &str) -> Vec<(String, i64)> {
        let mut out = Vec::new();
        for task in std::fs::read_dir("/proc/self/task").expect("procfs") {
            let path = task.unwrap().path();
            let Ok(stat) = std::fs::read_to_string(path.join("stat")) else {
                continue; // the thread ended meanwhile
            };
            let open = stat.find('(').expect("comm");
            let close = stat.rfind(')').expect("comm");
            let name = &stat[open + 1..close];
            if name.starts_with(prefix) {
                out.push((name.to_string(), stat_field(&stat, NICE)));
            }
        }
        out
    }

    fn read(store: &super::LogStore, low: u64, high: u64) -> Vec<raft::eraftpb::Entry> {
        raft::Storage::entries(
            store,
            low,
            high,
            None,
            raft::GetEntriesContext::empty(false),
        )
        .unwrap()
    }

    /// Entries `range` of term `term` with 1 KB of data each.
    fn big_entries(range: std::ops::RangeInclusive<u64>, term: u64) -> Vec<raft::eraftpb::Entry> {
        range
            .map(|index| raft::eraftpb::Entry {
                index,
                term,
                data: vec![(index % 251) as u8; 1000].into(),
                ..Default::default()
            })
            .collect()
    }

    const SMALL: u64 = 256 << 10;

    #[test]
    fn entries_past_the_cache_read_back_from_the_segments_before_and_after_a_restart() {
        use raft::Storage;
        let dir = tempfile::tempdir().unwrap();
        let mut store = super::LogStore::open(dir.path()).unwrap();
        store.bootstrap(&[1], &[]).unwrap();
        let n = 2 * super::CACHE_ENTRIES as u64;
        let all = big_entries(2..=n + 1, 2);
        for chunk in all.chunks(100) {
            store.write_ready(None, chunk, None).unwrap();
        }
        assert_eq!(
            store.cache.front().unwrap().index,
            n + 2 - super::CACHE_ENTRIES as u64
        );
        assert_eq!(read(&store, 2, n + 2), all);
        // A byte budget stops a read from the segments as it stops one from the cache.
        let some = store
            .entries(2, n + 2, Some(5000), raft::GetEntriesContext::empty(false))
            .unwrap();
        assert_eq!(some, all[..4]);
        drop(store);
        let store = super::LogStore::open(dir.path()).unwrap();
        assert_eq!(store.last_index().unwrap(), n + 1);
        assert_eq!(read(&store, 2, n + 2), all);
        assert_eq!(store.term(2).unwrap(), 2);
        assert_eq!(
            store.cache.len(),
            super::CACHE_ENTRIES,
            "the tail is cached again"
        );
    }

    #[test]
    fn segments_stay_while_they_hold_entries_and_go_once_a_snapshot_compacts_past_them() {
        use raft::Storage;
        let dir = tempfile::tempdir().unwrap();
        let mut store = super::LogStore::open_with_segment_bytes(dir.path(), SMALL).unwrap();
        store.bootstrap(&[1], &[]).unwrap();
        let all = big_entries(2..=2001, 2);
        for chunk in all.chunks(50) {
            store.write_ready(None, chunk, None).unwrap();
        }
        let kept = store.segment_count();
        assert!(kept >= 8, "2 MB of entries in 256 KB segments: {kept}");
        drop(store);
        let mut store = super::LogStore::open_with_segment_bytes(dir.path(), SMALL).unwrap();
        assert_eq!(read(&store, 2, 2002), all);
        assert_eq!(
            store.segment_count(),
            kept + 1,
            "a start opens a segment of its own"
        );
        let hs = raft::eraftpb::HardState {
            term: 2,
            commit: 2001,
            ..Default::default()
        };
        store.write_ready(None, &[], Some(&hs)).unwrap();
        let snap = raft::eraftpb::SnapshotMetadata {
            index: 1900,
            term: 2,
            ..Default::default()
        };
        store.record_snapshot(&snap, 1900).unwrap();
        assert_eq!(store.first_index().unwrap(), 1901);
        assert!(
            store.segment_count() <= 3,
            "only the segments holding 1901.. are left: {}",
            store.segment_count()
        );
        assert_eq!(read(&store, 1901, 2002), all[1899..]);
        assert!(matches!(
            store.entries(1900, 2002, None, raft::GetEntriesContext::empty(false)),
            Err(raft::Error::Store(raft::StorageError::Compacted))
        ));
        drop(store);
        let store = super::LogStore::open_with_segment_bytes(dir.path(), SMALL).unwrap();
        assert_eq!((store.first(), store.last()), (1901, 2001));
        assert_eq!(store.term(1900).unwrap(), 2);
        assert_eq!(read(&store, 1901, 2002), all[1899..]);
        assert_eq!(store.snapshot_meta().index, 1900);
    }

    #[test]
    fn a_conflicting_tail_and_an_installed_snapshot_come_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = super::LogStore::open_with_segment_bytes(dir.path(), SMALL).unwrap();
        store.bootstrap(&[1, 2, 3], &[]).unwrap();
        store
            .write_ready(None, &big_entries(2..=400, 2), None)
            .unwrap();
        // A new leader's entries replace 300.. (across a segment boundary).
        store
            .write_ready(None, &big_entries(300..=310, 3), None)
            .unwrap();
        let mut want = big_entries(2..=299, 2);
        want.extend(big_entries(300..=310, 3));
        assert_eq!(read(&store, 2, 311), want);
        drop(store);
        let mut store = super::LogStore::open_with_segment_bytes(dir.path(), SMALL).unwrap();
        assert_eq!(store.last(), 310);
        assert_eq!(read(&store, 2, 311), want);
        // A leader's snapshot replaces the whole log.
        let snap = raft::eraftpb::SnapshotMetadata {
            index: 500,
            term: 4,
            conf_state: Some(raft::eraftpb::ConfState {
                voters: vec![1, 2, 3],
                ..Default::default()
            })
            .into(),
            ..Default::default()
        };
        store
            .write_ready(Some(&snap), &big_entries(501..=502, 4), None)
            .unwrap();
        drop(store);
        let store = super::LogStore::open_with_segment_bytes(dir.path(), SMALL).unwrap();
        assert_eq!((store.first(), store.last()), (501, 502));
        assert_eq!(read(&store, 501, 503), big_entries(501..=502, 4));
        assert_eq!(store.hard_state().commit, 500);
        assert_eq!(store.hard_state().term, 4);
        assert_eq!(store.snapshot_meta().index, 500);
    }

    #[test]
    fn a_missing_segment_refuses_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = super::LogStore::open_with_segment_bytes(dir.path(), SMALL).unwrap();
        store.bootstrap(&[1], &[]).unwrap();
        for chunk in big_entries(2..=1001, 2).chunks(50) {
            store.write_ready(None, chunk, None).unwrap();
        }
        drop(store);
        let log = dir.path().join(super::LOG_DIR);
        let mut files: Vec<_> = std::fs::read_dir(&log)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        std::fs::remove_file(&files[0]).unwrap();
        let err = super::LogStore::open_with_segment_bytes(dir.path(), SMALL)
            .err()
            .expect("a log missing its first segment does not open")
            .to_string();
        assert!(err.contains("entries are missing"), "{err}");
    }

    #[test]
    fn a_store_written_with_the_log_in_rocksdb_is_refused_with_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(super::LEGACY_SEGMENTS_DIR)).unwrap();
        let err = super::LogStore::open(dir.path())
            .err()
            .expect("refused")
            .to_string();
        assert!(err.contains("as paddock did before 4 Dec 2026"), "{err}");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn rocksdb_flushes_and_compacts_at_nice_19() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::LogStore::open(dir.path()).unwrap();
        let db = store.db.as_ref().unwrap();
        let log = super::cf(db, super::CF_META);
        // A flush (the high-priority pool) and a manual compaction (the low one) give each pool's
        // thread a job, which is when RocksDB applies the pool's priority to it.
        for round in 0..2u64 {
            for i in 0..100u64 {
                db.put_cf(log, (round * 100 + i).to_be_bytes(), [7u8; 64])
                    .unwrap();
            }
            db.flush_cf(log).unwrap();
        }
        db.compact_range_cf(log, None::<&[u8]>, None::<&[u8]>);
        // The priority the test itself runs at (0 unless run under `nice`): threads that ran no
        // job keep it.
        let this_thread = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let base = stat_field(&this_thread, NICE);
        let high = threads_named("rocksdb:high");
        let low = threads_named("rocksdb:low");
        assert!(
            !high.is_empty() && !low.is_empty(),
            "threads: {high:?} {low:?}"
        );
        assert!(
            high.iter().any(|(_, nice)| *nice == 19) && low.iter().any(|(_, nice)| *nice == 19),
            "each pool's thread that ran a job runs at nice 19: {high:?} {low:?}"
        );
        assert!(
            high.iter()
                .chain(&low)
                .all(|(_, nice)| *nice == 19 || *nice == base),
            "{high:?} {low:?}"
        );
        let this_thread = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        assert_eq!(
            stat_field(&this_thread, NICE),
            base,
            "the opening thread keeps its priority"
        );
    }
}
