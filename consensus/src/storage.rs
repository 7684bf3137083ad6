//! The Raft log in RocksDB, and raft-rs's `Storage` trait over it.
//!
//! Layout (one DB, two column families):
//! - `raft_log`: key = entry index as u64 big-endian (so RocksDB order is log order) -> `Entry`
//!   protobuf bytes.
//! - `raft_meta`: `hard_state` (HardState), `conf_state` (ConfState), `snapshot_meta`
//!   (SnapshotMetadata of the newest durable snapshot), `first_index` (first index still in the
//!   log, then the term of the entry just before it: two u64 BE).
//!
//! Every mutation is one `WriteBatch`, so a crash leaves either the old or the new state. Each
//! batch is first appended to the log segments (`segments.rs`, in `segments/` inside the RocksDB
//! directory), which is where a write raft needs durable (entries, term/vote, snapshots) is
//! fdatasync'ed; RocksDB itself is written unsynced after it, and a start replays into RocksDB the
//! records it lost. The commit index alone is not synced, because raft recomputes a lost commit
//! index from a quorum.
//!
//! Only the raft thread mutates the store, through `&mut self`; raft-rs reads it through `&self`,
//! so no locks are needed.

use std::cell::Cell;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use protobuf::Message as _;
use raft::eraftpb::{ConfState, Entry, HardState, Snapshot, SnapshotMetadata};
use raft::{GetEntriesContext, RaftState, StorageError};
use rocksdb::{
    ColumnFamilyDescriptor, DBRecoveryMode, Direction, IteratorMode, Options, WriteBatch,
    WriteOptions, DB,
};

use crate::segments::{self, Segments};
use crate::snapshot_file;
use crate::ConsensusError;

const CF_LOG: &str = "raft_log";
const CF_META: &str = "raft_meta";
const KEY_HARD_STATE: &[u8] = b"hard_state";
const KEY_CONF_STATE: &[u8] = b"conf_state";
const KEY_SNAPSHOT_META: &[u8] = b"snapshot_meta";
const KEY_FIRST_INDEX: &[u8] = b"first_index";
/// Present while a member that started empty and joined has not yet caught up (see `Driver`).
const KEY_REJOINING: &[u8] = b"rejoining";
/// The sequence number of the last log-segment record this batch's writes came with (u64 BE):
/// which records RocksDB holds (see `segments.rs`).
const KEY_LOG_SEQ: &[u8] = b"log_seq";
/// The log segments' directory, inside the RocksDB directory (RocksDB leaves directories alone).
const SEGMENTS_DIR: &str = "segments";

/// Recent entries kept in memory: followers being replicated to and the applier read the tail.
const CACHE_ENTRIES: usize = 4096;

/// Index and term of the bootstrap snapshot that carries the initial membership (etcd/TiKV style:
/// every node of the initial group starts from the same state, later nodes from a snapshot).
pub const BOOTSTRAP_INDEX: u64 = 1;
pub const BOOTSTRAP_TERM: u64 = 1;

/// RocksDB-backed Raft log store.
pub struct LogStore {
    db: DB,
    hard_state: HardState,
    /// The hard state as last written (`hard_state` may be ahead of it in its commit index alone:
    /// `note_commit`).
    persisted_hs: HardState,
    conf_state: ConfState,
    snapshot_meta: SnapshotMetadata,
    first_index: u64,
    /// Term of entry `first_index - 1`, kept after compaction so raft can still match it.
    truncated_term: u64,
    last_index: u64,
    /// Contiguous entries ending at `last_index`.
    cache: VecDeque<Entry>,
    /// Where snapshot files live, for `Storage::snapshot` (a leader sending one to a follower).
    snapshot_dir: Option<PathBuf>,
    synced_writes: u64,
    segments: Segments,
    /// The last Ready's batch: durable in the segments, not yet written to RocksDB (see
    /// `write_ready`). Written before any other batch, and by `write_deferred`.
    deferred: Option<WriteBatch>,
    /// Set by `Storage::snapshot` when raft wanted to send a snapshot to this peer and the stored
    /// one cannot serve it; the driver turns it into `Event::SnapshotWanted`.
    snapshot_wanted: Cell<Option<u64>>,
    rejoining: bool,
}

/// RocksDB's `max_total_wal_size` (see `LogStore::open`).
const WAL_TOTAL_BOUND: u64 = 32 << 20;
/// The log family's memtable size (RocksDB's default is 64 MB).
const LOG_MEMTABLE_BYTES: usize = 16 << 20;

fn storage_err(e: impl std::fmt::Display) -> raft::Error {
    raft::Error::Store(StorageError::Other(e.to_string().into()))
}

fn cf<'a>(db: &'a DB, name: &str) -> &'a rocksdb::ColumnFamily {
    db.cf_handle(name)
        .expect("column families are created on open")
}

fn key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

fn decode<M: protobuf::Message>(what: &str, bytes: &[u8]) -> Result<M, ConsensusError> {
    M::parse_from_bytes(bytes).map_err(|e| ConsensusError::Corrupt(format!("{what}: {e}")))
}

fn encode<M: protobuf::Message>(m: &M) -> Vec<u8> {
    // Encoding an in-memory message only fails on missing required fields; eraftpb has none.
    m.write_to_bytes().expect("eraftpb messages always encode")
}

impl LogStore {
    /// Opens (or creates) the store in `dir`. A new store is uninitialized: call `bootstrap` or
    /// wait for a snapshot from a leader.
    pub fn open(dir: &Path) -> Result<LogStore, ConsensusError> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        // RocksDB is written unsynced: what is durable is the log segments. So RocksDB's WAL
        // may end anywhere after a power loss, and any prefix of its writes will do: the records
        // after it are replayed from the segments, and if the segments no longer hold them the
        // open is refused (a gap). A damaged synced record cannot be dropped silently this way
        // (BUGS.md P4): the segments refuse a record whose checksum fails, as ZooKeeper refuses
        // its log.
        opts.set_wal_recovery_mode(DBRecoveryMode::PointInTime);
        // What a restart after a crash replays is RocksDB's WAL since the oldest unflushed
        // memtable of any column family. The meta family (hard state, a few bytes per Ready)
        // would never fill a memtable of its own, so it kept every WAL file alive and a restart
        // replayed the whole history (60 MB after 300k creates, growing with the log). A bound on
        // the WAL total makes RocksDB flush the family holding the oldest file; smaller log
        // memtables bound what is left to replay. Together: at most a few tens of MB to replay.
        opts.set_max_total_wal_size(WAL_TOTAL_BOUND);
        opts.set_env(&background_env()?);
        let mut log_opts = Options::default();
        log_opts.set_write_buffer_size(LOG_MEMTABLE_BYTES);
        let cfs = [
            ColumnFamilyDescriptor::new(CF_LOG, log_opts),
            ColumnFamilyDescriptor::new(CF_META, Options::default()),
        ];
        let db = DB::open_cf_descriptors(&opts, dir, cfs)?;
        let segments = replay_segments(&db, &dir.join(SEGMENTS_DIR))?;
        let mut store = LogStore {
            db,
            hard_state: HardState::default(),
            persisted_hs: HardState::default(),
            conf_state: ConfState::default(),
            snapshot_meta: SnapshotMetadata::default(),
            first_index: 1,
            truncated_term: 0,
            last_index: 0,
            cache: VecDeque::new(),
            snapshot_dir: None,
            synced_writes: 0,
            segments,
            deferred: None,
            snapshot_wanted: Cell::new(None),
            rejoining: false,
        };
        store.load()?;
        Ok(store)
    }

    fn load(&mut self) -> Result<(), ConsensusError> {
        let meta = cf(&self.db, CF_META);
        if let Some(b) = self.db.get_cf(meta, KEY_HARD_STATE)? {
            self.hard_state = decode("hard_state", &b)?;
            self.persisted_hs = self.hard_state.clone();
        }
        if let Some(b) = self.db.get_cf(meta, KEY_CONF_STATE)? {
            self.conf_state = decode("conf_state", &b)?;
        }
        self.rejoining = self.db.get_cf(meta, KEY_REJOINING)?.is_some();
        if let Some(b) = self.db.get_cf(meta, KEY_SNAPSHOT_META)? {
            self.snapshot_meta = decode("snapshot_meta", &b)?;
        }
        if let Some(b) = self.db.get_cf(meta, KEY_FIRST_INDEX)? {
            let raw: [u8; 16] = b.as_slice().try_into().map_err(|_| {
                ConsensusError::Corrupt(format!("first_index record has {} bytes", b.len()))
            })?;
            self.first_index = u64::from_be_bytes(raw[..8].try_into().unwrap());
            self.truncated_term = u64::from_be_bytes(raw[8..].try_into().unwrap());
        }
        self.last_index = self.first_index - 1;
        let log = cf(&self.db, CF_LOG);
        if let Some(item) = self.db.iterator_cf(log, IteratorMode::End).next() {
            let (k, _) = item?;
            let raw: [u8; 8] = k
                .as_ref()
                .try_into()
                .map_err(|_| ConsensusError::Corrupt("raft_log key is not 8 bytes".into()))?;
            self.last_index = u64::from_be_bytes(raw);
        }
        if self.last_index + 1 < self.first_index {
            return Err(ConsensusError::Corrupt(format!(
                "log ends at {} before its first index {}",
                self.last_index, self.first_index
            )));
        }
        // Warm the cache with the tail and check that the log has no holes there.
        let from = self
            .first_index
            .max(self.last_index.saturating_sub(CACHE_ENTRIES as u64 - 1));
        let tail = self
            .db
            .iterator_cf(log, IteratorMode::From(&key(from), Direction::Forward));
        for (expect, item) in (from..).zip(tail) {
            let (_, v) = item?;
            let e: Entry = decode("entry", &v)?;
            if e.index != expect {
                return Err(ConsensusError::Corrupt(format!(
                    "log hole: expected {expect}, found {}",
                    e.index
                )));
            }
            self.cache.push_back(e);
        }
        Ok(())
    }

    /// Appends `batch` to the log segments (fdatasync'ed if `sync`), then writes it to RocksDB,
    /// unsynced. The order matters: RocksDB never holds a durable write the segments lack.
    fn write(&mut self, batch: WriteBatch, sync: bool) -> Result<(), ConsensusError> {
        self.write_logged(batch, sync, false)
    }

    /// `write`, but with `defer` the RocksDB write waits for `write_deferred` (or the next
    /// write): the caller only defers a batch whose entries all stay in the cache, so no read
    /// goes to RocksDB for what it lacks meanwhile.
    fn write_logged(
        &mut self,
        mut batch: WriteBatch,
        sync: bool,
        defer: bool,
    ) -> Result<(), ConsensusError> {
        self.write_deferred()?;
        let seq = self.segments.next_seq();
        batch.put_cf(cf(&self.db, CF_META), KEY_LOG_SEQ, seq.to_be_bytes());
        if self.segments.is_full_for(batch.data().len()) {
            // Every record so far is in RocksDB; syncing its WAL makes them durable there, so
            // the older segments can go.
            self.db.flush_wal(true)?;
            self.segments.rotate(batch.data().len())?;
        }
        self.segments.append(batch.data(), sync)?;
        if sync {
            self.synced_writes += 1;
        }
        self.deferred = Some(batch);
        if defer {
            return Ok(());
        }
        self.write_deferred()
    }

    /// Writes to RocksDB (unsynced) the batch `write_ready` left for later, if any. The driver
    /// calls it once the Ready's committed entries are handed out: a reply waited for that
    /// RocksDB write (memtable and WAL, 10-40 us) although the segments already held the batch
    /// durably. A crash before it loses nothing: the start replays the segments' records.
    pub fn write_deferred(&mut self) -> Result<(), ConsensusError> {
        if let Some(batch) = self.deferred.take() {
            let mut wo = WriteOptions::default();
            wo.set_sync(false);
            self.db.write_opt(batch, &wo)?;
        }
        Ok(())
    }

    /// The log segment being appended to (for tests and fault injection).
    pub fn current_segment(&self) -> PathBuf {
        self.segments.current_path()
    }

    /// True once the store holds a membership (bootstrapped, or a snapshot installed).
    pub fn is_initialized(&self) -> bool {
        !self.conf_state.voters.is_empty() || !self.conf_state.learners.is_empty()
    }

    /// Starts a new group: a snapshot at index 1 carrying `voters` and `learners`, committed,
    /// with an empty log after it. Every initial member must bootstrap with the same membership.
    pub fn bootstrap(&mut self, voters: &[u64], learners: &[u64]) -> Result<(), ConsensusError> {
        if self.is_initialized() || self.last_index > 0 {
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

    /// Persists one Ready as a single batch: an installed snapshot (resets the log to start after
    /// it), appended entries (a conflicting tail is deleted first) and the hard state.
    ///
    /// The batch is synced when raft needs it to be (raft-rs's `Ready::must_sync`, etcd's
    /// `MustSync`): it installs a snapshot, appends entries, or changes the term or the vote.
    ///
    /// A Ready whose only change is the hard state's commit index writes nothing: the commit is
    /// noted in memory (`note_commit`) and rides with the next batch. A lost commit index is
    /// recomputed from the quorum, and every entry below it is already durable; a restart with an
    /// older one replays fewer entries and learns the rest from the leader. Such Readys are most
    /// of an ensemble's: a follower learns each commit in a message of its own, and a leader
    /// learns it from the acks, both outside any Ready that appends. Synced, they cost every
    /// member a second device write and flush per replicated write; written unsynced, a second
    /// RocksDB write.
    pub fn write_ready(
        &mut self,
        snapshot: Option<&SnapshotMetadata>,
        entries: &[Entry],
        hs: Option<&HardState>,
    ) -> Result<(), ConsensusError> {
        if let Some(hs) = hs {
            if snapshot.is_none()
                && entries.is_empty()
                && hs.term == self.hard_state.term
                && hs.vote == self.hard_state.vote
            {
                self.note_commit(hs.commit);
                return Ok(());
            }
        }
        let mut batch = WriteBatch::default();
        let log = cf(&self.db, CF_LOG);
        let meta = cf(&self.db, CF_META);
        let mut first_index = self.first_index;
        let mut truncated_term = self.truncated_term;
        let mut last_index = self.last_index;
        let mut hard_state = self.hard_state.clone();
        let mut conf_state = None;
        let mut drop_cache = false;

        if let Some(snap) = snapshot {
            if snap.index < self.first_index.saturating_sub(1) && self.is_initialized() {
                return Err(ConsensusError::Invalid(format!(
                    "snapshot {} is older than the log start {}",
                    snap.index, self.first_index
                )));
            }
            batch.delete_range_cf(log, key(0), key(u64::MAX));
            first_index = snap.index + 1;
            truncated_term = snap.term;
            last_index = snap.index;
            hard_state.commit = hard_state.commit.max(snap.index);
            hard_state.term = hard_state.term.max(snap.term);
            batch.put_cf(meta, KEY_SNAPSHOT_META, encode(snap));
            batch.put_cf(meta, KEY_CONF_STATE, encode(snap.get_conf_state()));
            conf_state = Some(snap.get_conf_state().clone());
            drop_cache = true;
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
            if first.index <= last_index {
                // Conflicting suffix from an old leader: drop it in the same batch as the new entries.
                batch.delete_range_cf(log, key(first.index), key(last_index + 1));
            }
            for (i, e) in entries.iter().enumerate() {
                if e.index != first.index + i as u64 {
                    return Err(ConsensusError::Invalid(format!(
                        "entries not contiguous at {}",
                        e.index
                    )));
                }
                batch.put_cf(log, key(e.index), encode(e));
            }
            last_index = entries.last().unwrap().index;
        }

        if let Some(hs) = hs {
            hard_state = hs.clone();
        }
        if first_index != self.first_index || truncated_term != self.truncated_term {
            batch.put_cf(
                meta,
                KEY_FIRST_INDEX,
                first_index_record(first_index, truncated_term),
            );
        }
        // A hard state raft hands over is written when it changed, as always. One that differs
        // from the disk only by a commit noted in memory (`note_commit`) is not worth a synced
        // write of its own: it rides with the next batch that has something else in it.
        let batch_has_hard_state =
            hard_state != self.hard_state || (hard_state != self.persisted_hs && !batch.is_empty());
        if batch_has_hard_state {
            batch.put_cf(meta, KEY_HARD_STATE, encode(&hard_state));
        }
        if batch.is_empty() {
            return Ok(());
        }
        // Deferred (`write_deferred`) when every entry it appends stays in the cache below and it
        // installs no snapshot: then no read goes to RocksDB for anything the batch changes.
        let defer = snapshot.is_none() && entries.len() <= CACHE_ENTRIES / 2;
        // Synced: a batch that gets here installs a snapshot, appends entries or changes the term
        // or the vote (a commit alone returned above), all of which raft needs on disk.
        self.write_logged(batch, true, defer)?;

        self.first_index = first_index;
        self.truncated_term = truncated_term;
        self.last_index = last_index;
        if batch_has_hard_state {
            self.persisted_hs = hard_state.clone();
        }
        self.hard_state = hard_state;
        if let Some(cs) = conf_state {
            self.conf_state = cs;
            self.snapshot_meta = snapshot.unwrap().clone();
        }
        if drop_cache {
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
        self.conf_state = cs;
    }

    /// True while this member, which started empty and joined an existing group, has not caught
    /// up with a leader yet (it must not vote: see `Driver`). Survives restarts.
    pub fn is_rejoining(&self) -> bool {
        self.rejoining
    }

    /// Records (synced) that this member starts empty and joins, or that it has caught up.
    pub fn set_rejoining(&mut self, rejoining: bool) -> Result<(), ConsensusError> {
        let mut batch = WriteBatch::default();
        let meta = cf(&self.db, CF_META);
        if rejoining {
            batch.put_cf(meta, KEY_REJOINING, b"1");
        } else {
            batch.delete_cf(meta, KEY_REJOINING);
        }
        self.write(batch, true)?;
        self.rejoining = rejoining;
        Ok(())
    }

    /// Persists a membership applied from a committed conf-change entry.
    pub fn set_conf_state(&mut self, cs: ConfState) -> Result<(), ConsensusError> {
        let mut batch = WriteBatch::default();
        batch.put_cf(cf(&self.db, CF_META), KEY_CONF_STATE, encode(&cs));
        self.write(batch, true)?;
        self.conf_state = cs;
        Ok(())
    }

    /// Records a new commit index. Not synced: raft recomputes a lost commit from the quorum, and a
    /// process crash (as opposed to power loss) keeps it anyway through RocksDB's WAL.
    pub fn set_commit(&mut self, commit: u64) -> Result<(), ConsensusError> {
        if commit == self.hard_state.commit {
            return Ok(());
        }
        let mut hs = self.hard_state.clone();
        hs.commit = commit;
        let mut batch = WriteBatch::default();
        batch.put_cf(cf(&self.db, CF_META), KEY_HARD_STATE, encode(&hs));
        self.write(batch, false)?;
        self.persisted_hs = hs.clone();
        self.hard_state = hs;
        Ok(())
    }

    /// Records a new commit index in memory only; the next batch `write_ready` writes carries it.
    /// `write_ready` does this for a Ready that changes nothing else. The driver calls it after
    /// `advance` for a group of one: its restart replays its whole log whatever the commit index
    /// says, and its own vote commits everything again at once, so the index on disk is never
    /// needed; not writing it saves a record and a RocksDB write per commit, which on a server
    /// with one core ran before the core could answer the commit's clients.
    pub fn note_commit(&mut self, commit: u64) {
        self.hard_state.commit = self.hard_state.commit.max(commit);
    }

    /// Records a durable snapshot and drops log entries up to `compact_to` (inclusive) in one synced
    /// batch. `compact_to` is clamped to the snapshot index: the tree lives in memory, so entries
    /// after the snapshot are the only way to rebuild it.
    pub fn record_snapshot(
        &mut self,
        snap: &SnapshotMetadata,
        compact_to: u64,
    ) -> Result<(), ConsensusError> {
        if snap.index > self.last_index || snap.index > self.hard_state.commit {
            return Err(ConsensusError::Invalid(format!(
                "snapshot at {} is past commit {} / last index {}",
                snap.index, self.hard_state.commit, self.last_index
            )));
        }
        let mut batch = WriteBatch::default();
        batch.put_cf(cf(&self.db, CF_META), KEY_SNAPSHOT_META, encode(snap));
        let compact_to = compact_to.min(snap.index);
        let mut new_first = self.first_index;
        let mut new_truncated_term = self.truncated_term;
        if compact_to >= self.first_index {
            new_truncated_term = self.term_of(compact_to)?;
            new_first = compact_to + 1;
            batch.delete_range_cf(cf(&self.db, CF_LOG), key(self.first_index), key(new_first));
            batch.put_cf(
                cf(&self.db, CF_META),
                KEY_FIRST_INDEX,
                first_index_record(new_first, new_truncated_term),
            );
        }
        self.write(batch, true)?;
        self.snapshot_meta = snap.clone();
        self.first_index = new_first;
        self.truncated_term = new_truncated_term;
        while self.cache.front().is_some_and(|e| e.index < new_first) {
            self.cache.pop_front();
        }
        Ok(())
    }

    pub fn hard_state(&self) -> &HardState {
        &self.hard_state
    }

    pub fn conf_state(&self) -> &ConfState {
        &self.conf_state
    }

    pub fn snapshot_meta(&self) -> &SnapshotMetadata {
        &self.snapshot_meta
    }

    pub fn first(&self) -> u64 {
        self.first_index
    }

    pub fn last(&self) -> u64 {
        self.last_index
    }

    /// Number of synced (fsync'ed) batches written since open: the group-commit counter.
    pub fn synced_writes(&self) -> u64 {
        self.synced_writes
    }

    /// The RocksDB directory.
    pub fn path(&self) -> &Path {
        self.db.path()
    }

    /// The peer for which raft last wanted a snapshot the store could not give (see
    /// `Storage::snapshot`), cleared by reading it.
    pub fn take_snapshot_wanted(&self) -> Option<u64> {
        self.snapshot_wanted.take()
    }

    pub(crate) fn set_snapshot_dir(&mut self, dir: PathBuf) {
        self.snapshot_dir = Some(dir);
    }

    /// Term of the entry at `idx`, reading through the cache.
    pub fn term_of(&self, idx: u64) -> Result<u64, ConsensusError> {
        raft::Storage::term(self, idx).map_err(ConsensusError::Raft)
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

    fn read_entry(&self, idx: u64) -> raft::Result<Entry> {
        if let Some(e) = self.cached(idx) {
            return Ok(e.clone());
        }
        let bytes = self
            .db
            .get_cf(cf(&self.db, CF_LOG), key(idx))
            .map_err(storage_err)?
            .ok_or_else(|| storage_err(format!("entry {idx} missing from the log")))?;
        decode::<Entry>("entry", &bytes).map_err(storage_err)
    }
}

impl Drop for LogStore {
    /// A clean stop leaves RocksDB holding every batch (a crash leaves the last one to replay).
    fn drop(&mut self) {
        if let Err(e) = self.write_deferred() {
            tracing::warn!(
                "the last log batch was not written to RocksDB ({e}); the next start replays it"
            );
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

/// Replays into RocksDB the segment records it does not hold (it keeps the sequence number of the
/// last one it has), makes RocksDB durable, and starts a new segment.
fn replay_segments(db: &DB, dir: &Path) -> Result<Segments, ConsensusError> {
    let applied = match db.get_cf(cf(db, CF_META), KEY_LOG_SEQ)? {
        None => 0,
        Some(b) => u64::from_be_bytes(b.as_slice().try_into().map_err(|_| {
            ConsensusError::Corrupt(format!("log_seq record has {} bytes", b.len()))
        })?),
    };
    let records = segments::recover(dir, applied)?;
    let mut last = applied;
    if !records.is_empty() {
        tracing::info!(
            records = records.len(),
            from = applied + 1,
            "replaying log segment records the store lost"
        );
    }
    let mut wo = WriteOptions::default();
    wo.set_sync(false);
    for r in &records {
        db.write_opt(WriteBatch::from_data(&r.payload), &wo)?;
        last = r.seq;
    }
    db.flush_wal(true)?;
    Segments::start(dir, last + 1)
}

/// RocksDB's environment with its flush and compaction threads at nice 19.
///
/// They do bulk work that no reply waits for: the unsynced copy of the log is flushed to tables
/// and compacted behind the synced segments. At normal priority, on a server with one core, the
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
            self.hard_state.clone(),
            self.conf_state.clone(),
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
        if low < self.first_index {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if high > self.last_index + 1 || low > high {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        let mut batch = SizedBatch {
            out: Vec::with_capacity((high - low).min(1024) as usize),
            size: 0,
            max: max_size.filter(|&m| m != raft::NO_LIMIT),
        };
        // Older entries come from RocksDB with one iterator (a restart replays the whole log
        // this way), the recent tail from the cache.
        let cache_front = self.cache.front().map_or(u64::MAX, |e| e.index);
        let db_high = high.min(cache_front);
        if low < db_high {
            let from = key(low);
            let iter = self.db.iterator_cf(
                cf(&self.db, CF_LOG),
                IteratorMode::From(&from, Direction::Forward),
            );
            let mut expect = low;
            for item in iter {
                if expect >= db_high {
                    break;
                }
                let (_, v) = item.map_err(storage_err)?;
                let e: Entry = decode("entry", &v).map_err(storage_err)?;
                if e.index != expect {
                    return Err(storage_err(format!(
                        "log hole: expected {expect}, found {}",
                        e.index
                    )));
                }
                expect += 1;
                if !batch.admit(e) {
                    return Ok(batch.out);
                }
            }
            if expect < db_high {
                return Err(storage_err(format!("entry {expect} missing from the log")));
            }
        }
        for idx in low.max(db_high)..high {
            if !batch.admit(self.read_entry(idx)?) {
                break;
            }
        }
        Ok(batch.out)
    }

    fn term(&self, idx: u64) -> raft::Result<u64> {
        if idx + 1 == self.first_index {
            return Ok(self.truncated_term);
        }
        if idx < self.first_index {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if idx > self.last_index {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        Ok(self.read_entry(idx)?.term)
    }

    fn first_index(&self) -> raft::Result<u64> {
        Ok(self.first_index)
    }

    fn last_index(&self) -> raft::Result<u64> {
        Ok(self.last_index)
    }

    fn snapshot(&self, request_index: u64, to: u64) -> raft::Result<Snapshot> {
        let meta = &self.snapshot_meta;
        if meta.index < request_index {
            self.snapshot_wanted.set(Some(to));
            return Err(raft::Error::Store(
                StorageError::SnapshotTemporarilyUnavailable,
            ));
        }
        // raft-rs refuses (with only a log line) a snapshot whose membership lacks the receiver,
        // so a node added after the newest snapshot would never catch up (consensus-notes §2).
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

    fn entries(range: std::ops::RangeInclusive<u64>) -> Vec<raft::eraftpb::Entry> {
        range
            .map(|index| raft::eraftpb::Entry {
                index,
                term: 2,
                data: vec![index as u8; 10].into(),
                ..Default::default()
            })
            .collect()
    }

    fn in_rocksdb(store: &super::LogStore, index: u64) -> bool {
        let log = super::cf(&store.db, super::CF_LOG);
        store.db.get_cf(log, super::key(index)).unwrap().is_some()
    }

    /// A group of one that has just written a Ready appending entries 2..=5.
    fn store_after_a_ready(dir: &std::path::Path) -> super::LogStore {
        let mut store = super::LogStore::open(dir).unwrap();
        store.bootstrap(&[1], &[]).unwrap();
        store.write_ready(None, &entries(2..=5), None).unwrap();
        store
    }

    #[test]
    fn a_readys_rocksdb_write_waits_for_write_deferred_and_its_entries_read_meanwhile() {
        use raft::{GetEntriesContext, Storage};
        let dir = tempfile::tempdir().unwrap();
        let mut store = store_after_a_ready(dir.path());
        assert!(!in_rocksdb(&store, 5), "deferred");
        let read = store
            .entries(2, 6, None, GetEntriesContext::empty(false))
            .unwrap();
        assert_eq!(read, entries(2..=5), "served from the cache meanwhile");
        assert_eq!(store.last_index().unwrap(), 5);
        store.write_deferred().unwrap();
        assert!(in_rocksdb(&store, 5));
        // The next batch writes a deferred one first, so RocksDB's batches stay in order.
        store.write_ready(None, &entries(6..=6), None).unwrap();
        store.write_ready(None, &entries(7..=7), None).unwrap();
        assert!(in_rocksdb(&store, 6) && !in_rocksdb(&store, 7));
        // A batch whose entries would not all stay in the cache is written at once.
        let big = entries(8..=8 + super::CACHE_ENTRIES as u64 / 2);
        store.write_ready(None, &big, None).unwrap();
        assert!(in_rocksdb(&store, 7) && in_rocksdb(&store, big.last().unwrap().index));
    }

    #[test]
    fn a_crash_before_the_deferred_rocksdb_write_loses_nothing() {
        use raft::{GetEntriesContext, Storage};
        let dir = tempfile::tempdir().unwrap();
        let mut store = store_after_a_ready(dir.path());
        // The process dies between the segment's synced append and the RocksDB write.
        store.deferred = None;
        assert!(!in_rocksdb(&store, 2));
        drop(store);
        let store = super::LogStore::open(dir.path()).unwrap();
        assert_eq!(store.last_index().unwrap(), 5, "replayed from the segment");
        assert!(in_rocksdb(&store, 5));
        let read = store
            .entries(2, 6, None, GetEntriesContext::empty(false))
            .unwrap();
        assert_eq!(read, entries(2..=5));
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn rocksdb_flushes_and_compacts_at_nice_19() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::LogStore::open(dir.path()).unwrap();
        let log = super::cf(&store.db, super::CF_LOG);
        // A flush (the high-priority pool) and a manual compaction (the low one) give each pool's
        // thread a job, which is when RocksDB applies the pool's priority to it.
        for round in 0..2u64 {
            for i in 0..100u64 {
                store
                    .db
                    .put_cf(log, super::key(round * 100 + i), [7u8; 64])
                    .unwrap();
            }
            store.db.flush_cf(log).unwrap();
        }
        store.db.compact_range_cf(log, None::<&[u8]>, None::<&[u8]>);
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
                .all(|(_, nice)| *nice == 19 || *nice == 0),
            "{high:?} {low:?}"
        );
        let this_thread = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        assert_eq!(
            stat_field(&this_thread, NICE),
            0,
            "the opening thread keeps its priority"
        );
    }
}
