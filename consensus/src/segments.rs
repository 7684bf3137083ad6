//! The raft log's files: every change to the log store (`storage.rs`) is a record appended to a
//! pre-sized segment file, and a change raft needs durable is synced there (`O_DIRECT | O_DSYNC`).
//! The segments are the log: its entries are read back from them (`Segments::read`).
//!
//! Why files of our own: RocksDB's WAL grows with every append, so each synced write also commits
//! the file's new size through the file system's journal: 233-313 us per 600-byte append on the
//! disk this was measured on, against 141-157 us for the same append into a file whose size was
//! set beforehand (DESIGN.md, "the raft log's synced append"). ZooKeeper pads its log files for the
//! same reason. RocksDB's own remedy (recycled WAL files) is refused together with the recovery
//! mode that keeps a damaged synced record from being dropped silently (compat-tests/faults/BUGS.md
//! P4). The segments first fronted a copy of the log in RocksDB; that copy went on 4 Dec 2026
//! (`storage.rs`).
//!
//! The scheme:
//! - Each record carries a sequence number (`seq`, one more per record), and records follow on
//!   without a gap across segments: `scan` refuses a gap, but one the store's checkpoint covers
//!   (records whose effect the store holds elsewhere, lost from a damaged tail and skipped since).
//! - A new segment starts at every open and when the current one is full (`rotate`, which writes
//!   out every record held in memory first). Older ones are kept, open for reading, until the
//!   store says it needs nothing in them (`prune`).
//! - Pruned segments are written over (spares). Up to `MAX_SPARES` pruned segments are renamed
//!   `<number>.spare` instead of deleted, and the next new segment is a spare renamed, after its
//!   first block has been zeroed and synced (a crash can then never show the spare's old records
//!   as the new segment's). A spare's blocks are all written, so appends into it need no zeros
//!   ahead (below): each 1 MB of zeros took 5.5 ms of the device at the median, on the reply path
//!   of whichever batch of writes passed it, about 15 times a second under 8 x 32 sets in flight.
//!   Measured pinned, alternating builds, after 12 s of sets (segments filled, pruned, reused):
//!   sets 94.1k/s against 81.3k, p99 4.3 ms against 8.3 (5 of 5 pairs). The old records stay past
//!   the new ones, so every write of records also writes a header's worth of zeros after the last
//!   one (within its last block, or one block more): the end of the log is read as it always was,
//!   the first header of zeros. As before, a write torn by a power loss can leave a record whose
//!   checksum fails, which refuses the open; over a spare, old bytes can also stand in for the
//!   zeros after the last record if only those failed to reach the device.
//! - Zeros are written 1 MB ahead of the records. A segment is created sparse (its size set, no
//!   blocks), and an append into a hole allocates blocks, so its fdatasync writes the inode as well
//!   as the data: one more synchronous I/O (seen in `perf`: `ext4_write_inode` under
//!   `ext4_sync_file`). With zeros ahead, only the fdatasync after each 1 MB of zeros pays that.
//!   Measured on ext4 (no journal, a VM's virtio disk) from the core the server runs on: 7 KB
//!   appended and fdatasync'ed 327 us at the median into a sparse file, 218 into written zeros,
//!   30 KB 301 against 194. The server pinned to one core, 8 sessions x 32 in flight, 10 s runs
//!   alternating: 105-110k sets/s before, 123-124k after (p50 2.2-2.3 ms against 1.9, p99 5.3-6.2
//!   ms against 5.5-5.7); 90/10 mixed 189-193k against 201-211k; creates 73-75k against 77-81k.
//!   The zeros change no byte a reader sees: a sparse file reads as zeros too. (A next segment
//!   zeroed ahead by a background thread was tried first: its own syncs, 64 of them per segment,
//!   competed with the log's and p99 doubled.)
//!
//! - Writes bypass the page cache: the file is opened `O_DIRECT | O_DSYNC` (where the file system
//!   takes it; otherwise it is written through the page cache and fdatasync'ed). A synced append
//!   writes whole 4 KB blocks from an aligned buffer, the last, partly filled, block rewritten
//!   with the bytes it already held plus the new record (the bytes already there are rewritten
//!   unchanged, so a torn block write can only tear the new record), and the one system call
//!   returns once the device has the data. Unsynced records (commit-index hints) stay in that
//!   buffer and go out with the next synced one. Reads go through the page cache (a separate
//!   read-only descriptor; the kernel keeps it coherent with the direct writes), and what is
//!   still only in the buffer is read from it. Through the page cache, each append copied its
//!   bytes into a page and fdatasync wrote the page back: pinned to one core, 8 sessions x 32
//!   sets in flight, 90.7k sets/s against 115.3k with `O_DIRECT` (server CPU 9.9 against 7.8 us
//!   per set, p99 9.2 against 6.9 ms), lock hand-offs 1,036 against 1,184/s; a lone write the
//!   same (322 against 321 us). Alternating 3 s runs, 4 each, 3 Dec 2026.
//!
//! Record: `len u32 | seq u64 | crc32(len, seq) u32 | crc32(payload) u32 | payload (len bytes)`,
//! little-endian. A segment is a file of `SEGMENT_BYTES` holding records from offset 0, then at
//! least a header's worth of zeros (in a new file, zeros up to 1 MB past the last record and a
//! hole after that; in a spare, its old records after those zeros); its end is the first header of
//! zeros. Reading, as ZooKeeper reads its log: a record cut short by the end of the file is a write
//! the crash interrupted, and ends the log; a record whose checksum fails is damage to data that
//! may have been acknowledged, and refuses the open.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::aligned::{round_down, round_up, AlignedBuf, ALIGN};
use crate::ConsensusError;

/// The size a segment is given when it is created (sparse: blocks are allocated as written, the
/// zeros ahead of the records included). A start reads every segment kept whole, and the first
/// kept one holds entries older than the snapshot it falls back to: after a 1M-znode fill and a
/// SIGKILL, the segments out of the page cache, opening the log took 76-88 ms with 16 MB segments
/// against 148-193 with 64 MB (4 alternating restarts; 8 x 32 sets and creates after 12 s of
/// warm-up were no worse: ops/s 1.08x and 1.03x, p99 0.95x and 0.91x, 4 pairs each). Smaller
/// ones cost a rotation (a spare's first block synced, a rename, a synced checkpoint) more often.
pub const SEGMENT_BYTES: u64 = 16 << 20;
const HEADER: usize = 20;
const SUFFIX: &str = "seg";
/// Zeros are written this far ahead of the records (see `append`).
const ZERO_AHEAD: u64 = 1 << 20;
/// Pruned segments kept as spares, to be written over by later segments (module docs).
const MAX_SPARES: usize = 2;
const SPARE_SUFFIX: &str = "spare";

/// A segment found at open: its number and the sequence number of its last record (`None`: it
/// holds none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    pub number: u64,
    pub last_seq: Option<u64>,
}

/// Where a record read back sits: its segment, the file offset of its payload, its sequence
/// number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    pub number: u64,
    pub offset: u64,
    pub seq: u64,
}

/// A closed segment kept for the entries it holds (see `Segments::prune`).
struct Closed {
    file: File,
    last_seq: Option<u64>,
}

/// The segments: the one being appended to and the older ones still holding live entries.
pub struct Segments {
    dir: PathBuf,
    file: File,
    /// The current segment opened for reading (through the page cache).
    reader: File,
    /// The file was opened with `O_DIRECT | O_DSYNC`: a write returns once it is on the device.
    direct: bool,
    number: u64,
    /// Where the next record starts.
    offset: u64,
    capacity: u64,
    /// The size new segments get.
    segment_bytes: u64,
    next_seq: u64,
    /// The sequence number of the current segment's first record.
    first_seq: u64,
    /// The bytes from `base` (a multiple of `ALIGN`) to `offset`: the tail of the last block
    /// written, then every record appended since. A write rewrites them from `base`, whole blocks.
    pending: AlignedBuf,
    base: u64,
    /// The records are written up to here (those after it are held in `pending` only).
    written_to: u64,
    /// The segment holds written zeros (or records) up to here.
    zeroed_to: u64,
    /// Zeros to write ahead of the records, aligned.
    zeros: AlignedBuf,
    /// Older segments, by number.
    closed: BTreeMap<u64, Closed>,
    /// Pruned segments kept for reuse, by their old number (each `segment_bytes` long).
    spares: Vec<u64>,
}

/// Unsynced records are held in memory up to this many bytes, then written.
const PENDING_LIMIT: usize = 1 << 20;

fn segment_name(number: u64) -> String {
    format!("{number:020}.{SUFFIX}")
}

fn spare_name(number: u64) -> String {
    format!("{number:020}.{SPARE_SUFFIX}")
}

/// The segment files in `dir`, by number.
fn list(dir: &Path) -> Result<Vec<(u64, PathBuf)>, ConsensusError> {
    list_with(dir, SUFFIX)
}

/// The files in `dir` named `<number>.<suffix>`, by number.
fn list_with(dir: &Path, suffix: &str) -> Result<Vec<(u64, PathBuf)>, ConsensusError> {
    let mut out = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e.into()),
    };
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_some_and(|x| x == suffix) {
            let number = path
                .file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or_else(|| {
                    ConsensusError::Corrupt(format!("{}: not a log file name", path.display()))
                })?;
            out.push((number, path));
        }
    }
    out.sort();
    Ok(out)
}

fn header_crc(len: u32, seq: u64) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&len.to_le_bytes());
    h.update(&seq.to_le_bytes());
    h.finalize()
}

/// What `read_segment` hands each record to: the file offset of its payload, its sequence number
/// and its payload.
type EachRecord<'a> = &'a mut dyn FnMut(u64, u64, &[u8]) -> Result<(), ConsensusError>;

/// Reads one segment's records in order, up to its end (zeros) or a record cut short by the end
/// of the file, handing each to `each` with the file offset of its payload.
fn read_segment(path: &Path, each: EachRecord<'_>) -> Result<(), ConsensusError> {
    let corrupt = |offset: u64, what: &str| {
        ConsensusError::Corrupt(format!(
            "log segment {} at byte {offset}: {what}; the log may have lost an acknowledged \
             write, so the member does not start (remove its data to rejoin empty)",
            path.display()
        ))
    };
    let mut file = io::BufReader::with_capacity(1 << 20, File::open(path)?);
    let mut offset = 0u64;
    let mut payload = Vec::new();
    loop {
        let mut header = [0u8; HEADER];
        let got = read_full(&mut file, &mut header)?;
        if got < HEADER {
            // The file ends inside a header: a torn tail (or the end of a truncated file).
            return Ok(());
        }
        if header.iter().all(|&b| b == 0) {
            return Ok(());
        }
        let len = u32::from_le_bytes(header[0..4].try_into().unwrap());
        let seq = u64::from_le_bytes(header[4..12].try_into().unwrap());
        let hcrc = u32::from_le_bytes(header[12..16].try_into().unwrap());
        let pcrc = u32::from_le_bytes(header[16..20].try_into().unwrap());
        if header_crc(len, seq) != hcrc {
            return Err(corrupt(offset, "the record header's checksum fails"));
        }
        payload.resize(len as usize, 0);
        if read_full(&mut file, &mut payload)? < payload.len() {
            return Ok(());
        }
        if crc32fast::hash(&payload) != pcrc {
            return Err(corrupt(offset, "the record's checksum fails"));
        }
        each(offset + HEADER as u64, seq, &payload)?;
        offset += (HEADER + payload.len()) as u64;
    }
}

/// Reads until `buf` is full or the file ends; the count read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Reads every record of every segment in `dir`, in order, handing each to `each` with where it
/// sits; the segments found. The records must follow on one from the next without a gap across
/// segments: a gap means records are missing, and the open is refused. Only a gap that ends at or
/// before `covered + 1` is let pass: the records in it are ones whose effect the store holds
/// elsewhere (its checkpoint), lost from a damaged segment's tail and skipped since.
pub fn scan(
    dir: &Path,
    covered: u64,
    mut each: impl FnMut(At, &[u8]) -> Result<(), ConsensusError>,
) -> Result<Vec<Found>, ConsensusError> {
    let mut found = Vec::new();
    let mut last: Option<u64> = None;
    for (number, path) in list(dir)? {
        let mut segment_last = None;
        read_segment(&path, &mut |offset, seq, payload| {
            if let Some(prev) = last {
                if seq != prev + 1 && !(seq > prev && seq <= covered + 1) {
                    return Err(ConsensusError::Corrupt(format!(
                        "log segment {}: record {seq} where {} was expected: writes are \
                         missing, so the member does not start",
                        path.display(),
                        prev + 1
                    )));
                }
            }
            last = Some(seq);
            segment_last = Some(seq);
            each(
                At {
                    number,
                    offset,
                    seq,
                },
                payload,
            )
        })?;
        found.push(Found {
            number,
            last_seq: segment_last,
        });
    }
    Ok(found)
}

/// fsync of a directory, so that a file created or removed in it stays so after a power loss.
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

impl Segments {
    /// Starts a new segment in `dir` whose first record will be `next_seq`, after the segments
    /// `found` there (kept, for reading, until `prune` drops them).
    /// New segments are `segment_bytes` long (`SEGMENT_BYTES` but in tests).
    pub fn start(
        dir: &Path,
        next_seq: u64,
        found: &[Found],
        segment_bytes: u64,
    ) -> Result<Segments, ConsensusError> {
        crate::private_fs::create_dir_all(dir)?;
        let mut closed = BTreeMap::new();
        for f in found {
            let file = File::open(dir.join(segment_name(f.number)))?;
            closed.insert(
                f.number,
                Closed {
                    file,
                    last_seq: f.last_seq,
                },
            );
        }
        let on_disk = list(dir)?.last().map_or(0, |(n, _)| *n);
        let number = on_disk.max(found.last().map_or(0, |f| f.number)) + 1;
        let segment_bytes = round_up(segment_bytes.max(ALIGN as u64));
        let mut spares = keep_spares(dir, segment_bytes)?;
        let (file, reader, direct, zeroed_to) =
            new_segment(dir, spares.pop(), number, segment_bytes)?;
        Ok(Segments {
            dir: dir.to_path_buf(),
            file,
            reader,
            direct,
            number,
            offset: 0,
            capacity: segment_bytes,
            segment_bytes,
            next_seq,
            first_seq: next_seq,
            pending: AlignedBuf::new(),
            base: 0,
            written_to: 0,
            zeroed_to,
            zeros: AlignedBuf::new(),
            closed,
            spares,
        })
    }

    /// The sequence number the next record gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The file offset the next record's payload will start at in the current segment.
    pub fn next_payload_offset(&self) -> u64 {
        self.offset + HEADER as u64
    }

    /// The number of the segment being appended to.
    pub fn current(&self) -> u64 {
        self.number
    }

    /// How many segment files there are, the current one included.
    pub fn count(&self) -> usize {
        self.closed.len() + 1
    }

    /// True if a record of `len` payload bytes does not fit in the current segment: the caller
    /// calls `rotate` before appending it.
    pub fn is_full_for(&self, len: usize) -> bool {
        self.offset + (HEADER + len) as u64 > self.capacity
    }

    /// Moves on to a new segment (sized for a record of `len` bytes at least). The current one is
    /// closed with every record appended to it on disk (those held unsynced are written and
    /// synced first: a later segment's records must never follow a gap), and kept for reading.
    pub fn rotate(&mut self, len: usize) -> Result<(), ConsensusError> {
        self.flush()?;
        let number = self.number + 1;
        let capacity = round_up(self.segment_bytes.max((HEADER + len) as u64));
        let spare = if capacity == self.segment_bytes {
            self.spares.pop()
        } else {
            None
        };
        let (file, reader, direct, zeroed_to) = new_segment(&self.dir, spare, number, capacity)?;
        drop(std::mem::replace(&mut self.file, file));
        let old_reader = std::mem::replace(&mut self.reader, reader);
        let last_seq = (self.next_seq > self.first_seq).then(|| self.next_seq - 1);
        self.closed.insert(
            self.number,
            Closed {
                file: old_reader,
                last_seq,
            },
        );
        self.direct = direct;
        self.number = number;
        self.offset = 0;
        self.capacity = capacity;
        self.first_seq = self.next_seq;
        self.pending = AlignedBuf::new();
        self.base = 0;
        self.written_to = 0;
        self.zeroed_to = zeroed_to;
        Ok(())
    }

    /// Writes and syncs the records held in memory (appended unsynced), if any.
    pub fn flush(&mut self) -> Result<(), ConsensusError> {
        if self.written_to < self.offset {
            self.write_pending()?;
            if !self.direct {
                self.file.sync_data()?;
            }
        }
        Ok(())
    }

    /// Deletes, durably, the closed segments numbered below `below` whose records are all at or
    /// before `upto_seq` (the store holds their effect elsewhere); the count deleted. Up to
    /// `MAX_SPARES` of them are kept as spares instead, renamed, for later segments to be written
    /// over (module docs).
    pub fn prune(&mut self, below: u64, upto_seq: u64) -> Result<usize, ConsensusError> {
        let doomed: Vec<u64> = self
            .closed
            .iter()
            .filter(|(n, c)| **n < below && c.last_seq.is_none_or(|s| s <= upto_seq))
            .map(|(n, _)| *n)
            .collect();
        for n in &doomed {
            let kept = self.closed.remove(n);
            let path = self.dir.join(segment_name(*n));
            let same_size = match kept {
                Some(c) => c.file.metadata()?.len() == self.segment_bytes,
                None => false,
            };
            if same_size && self.spares.len() < MAX_SPARES {
                fs::rename(&path, self.dir.join(spare_name(*n)))?;
                self.spares.push(*n);
                continue;
            }
            match fs::remove_file(&path) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                r => r?,
            }
        }
        if !doomed.is_empty() {
            sync_dir(&self.dir)?;
        }
        Ok(doomed.len())
    }

    /// Reads `len` bytes at `offset` of segment `number` (the current one or a closed one).
    pub fn read(&self, number: u64, offset: u64, len: usize) -> Result<Vec<u8>, ConsensusError> {
        let file = if number == self.number {
            if offset + len as u64 > self.base {
                // The bytes from `base` on are in `pending`: the last block written, which is
                // kept there to be rewritten, and the records appended unsynced since, not yet
                // written. The caller only reads synced records, but these can end in that block.
                let mut out = vec![0u8; len];
                let from_file = self.base.saturating_sub(offset).min(len as u64) as usize;
                if from_file > 0 {
                    self.reader.read_exact_at(&mut out[..from_file], offset)?;
                }
                let start = (offset + from_file as u64 - self.base) as usize;
                let held = self.pending.bytes();
                if start + (len - from_file) > held.len() {
                    return Err(ConsensusError::Invalid(format!(
                        "read past the end of log segment {number}: {offset}+{len}"
                    )));
                }
                out[from_file..].copy_from_slice(&held[start..start + len - from_file]);
                return Ok(out);
            }
            &self.reader
        } else {
            &self
                .closed
                .get(&number)
                .ok_or_else(|| ConsensusError::Corrupt(format!("log segment {number} is gone")))?
                .file
        };
        let mut out = vec![0u8; len];
        file.read_exact_at(&mut out, offset)?;
        Ok(out)
    }

    /// Appends `payload` as record `next_seq` (which the caller has already put into it), and
    /// makes it durable if `sync`, together with every record appended before it. A record too
    /// big for what is left of the segment is refused: call `rotate` first (see `is_full_for`).
    ///
    /// A record appended unsynced is only kept in memory (up to `PENDING_LIMIT` bytes) and written
    /// with the next one: nobody waits for it, and the file is written in whole blocks, so a
    /// record sharing its last block with the next one would be written twice. A synced append
    /// rewrites the last, partly filled, block with the bytes it already held plus the new ones,
    /// with `O_DIRECT | O_DSYNC` where the file system allows it: straight from this buffer to
    /// the device, no page cache to fill and write back, and one system call that returns once
    /// the device has it (module docs).
    pub fn append(&mut self, payload: &[u8], sync: bool) -> Result<u64, ConsensusError> {
        if self.offset + (HEADER + payload.len()) as u64 > self.capacity {
            return Err(ConsensusError::Invalid(format!(
                "a record of {} bytes does not fit in segment {} at {}",
                payload.len(),
                self.number,
                self.offset
            )));
        }
        let len = u32::try_from(payload.len()).map_err(|_| {
            ConsensusError::Invalid(format!("a write batch of {} bytes", payload.len()))
        })?;
        let seq = self.next_seq;
        let mut header = [0u8; HEADER];
        header[0..4].copy_from_slice(&len.to_le_bytes());
        header[4..12].copy_from_slice(&seq.to_le_bytes());
        header[12..16].copy_from_slice(&header_crc(len, seq).to_le_bytes());
        header[16..20].copy_from_slice(&crc32fast::hash(payload).to_le_bytes());
        self.pending.extend(&header);
        self.pending.extend(payload);
        self.offset += (HEADER + payload.len()) as u64;
        self.next_seq += 1;
        if sync || self.pending.len >= PENDING_LIMIT {
            self.write_pending()?;
        }
        // Opened O_DIRECT, the file is O_DSYNC too: the write returned once on the device.
        if sync && !self.direct {
            self.file.sync_data()?;
        }
        Ok(seq)
    }

    /// Writes the pending bytes from `base`, whole blocks, the zeros ahead first where the
    /// records pass them; keeps the last, partly filled, block for the next write.
    fn write_pending(&mut self) -> Result<(), ConsensusError> {
        // Up to a header's worth of zeros past the last record, in the same write: a reused
        // segment holds its old records past the end, and the next header must read as zeros,
        // the end of the log (module docs). Mostly these zeros are in the last block anyway.
        let end = round_up(self.offset + HEADER as u64).min(self.capacity);
        // Zeros go ahead of the records, 1 MB at a time: an append then lands in blocks already
        // allocated, and its sync writes the data alone, not the inode too (module docs). `end`
        // and `ZERO_AHEAD` are whole blocks, so one write of at most `ZERO_AHEAD` does it.
        if end > self.zeroed_to {
            let to = (end + ZERO_AHEAD).min(self.capacity);
            if self.zeros.len == 0 {
                self.zeros = AlignedBuf::zeroed(ZERO_AHEAD as usize);
            }
            let zeros = &self.zeros.blocks()[..(to - end) as usize];
            write_blocks(
                &mut self.file,
                &mut self.direct,
                &self.dir,
                self.number,
                zeros,
                end,
            )?;
            self.zeroed_to = to;
        }
        let blocks = self.pending.padded((end - self.base) as usize);
        write_blocks(
            &mut self.file,
            &mut self.direct,
            &self.dir,
            self.number,
            blocks,
            self.base,
        )?;
        self.written_to = self.offset;
        let keep_from = round_down(self.offset);
        self.pending.consume((keep_from - self.base) as usize);
        self.base = keep_from;
        Ok(())
    }

    /// The file being appended to.
    pub fn current_path(&self) -> PathBuf {
        self.dir.join(segment_name(self.number))
    }
}

/// The spares in `dir` (pruned segments renamed, see `prune`), by number: those of `segment_bytes`,
/// up to `MAX_SPARES`. Others (left by a build with another segment size) are deleted.
fn keep_spares(dir: &Path, segment_bytes: u64) -> Result<Vec<u64>, ConsensusError> {
    let mut spares = Vec::new();
    let mut deleted = false;
    for (number, path) in list_with(dir, SPARE_SUFFIX)? {
        if spares.len() < MAX_SPARES && fs::metadata(&path)?.len() == segment_bytes {
            spares.push(number);
        } else {
            fs::remove_file(&path)?;
            deleted = true;
        }
    }
    if deleted {
        sync_dir(dir)?;
    }
    Ok(spares)
}

/// Segment `number`, `capacity` bytes long: `spare` written over if there is one (`reuse`), else
/// a new file (`create`). The files, and how far the file's blocks are already allocated.
fn new_segment(
    dir: &Path,
    spare: Option<u64>,
    number: u64,
    capacity: u64,
) -> Result<(File, File, bool, u64), ConsensusError> {
    match spare {
        Some(spare) => reuse(dir, spare, number, capacity),
        None => {
            let (file, reader, direct) = create(dir, number, capacity)?;
            Ok((file, reader, direct, 0))
        }
    }
}

/// Makes segment `number` out of spare `spare`: the spare's first block is zeroed and synced
/// before it is renamed (a crash can then never show its old records as the new segment's: the
/// segment reads as empty until a record is written), then renamed, durably. The files as `create`
/// gives them, and how far the file's blocks are allocated, which the zeros ahead need not cover
/// again (a segment is written from its start on, so that is a prefix).
fn reuse(
    dir: &Path,
    spare: u64,
    number: u64,
    capacity: u64,
) -> Result<(File, File, bool, u64), ConsensusError> {
    use std::os::unix::fs::MetadataExt;
    let from = dir.join(spare_name(spare));
    let file = OpenOptions::new().write(true).open(&from)?;
    file.write_all_at(&[0u8; ALIGN], 0)?;
    file.sync_data()?;
    let allocated = round_down(file.metadata()?.blocks() * 512).min(capacity);
    drop(file);
    let path = dir.join(segment_name(number));
    fs::rename(&from, &path)?;
    sync_dir(dir)?;
    let (file, reader, direct) = open_segment(dir, &path)?;
    Ok((file, reader, direct, allocated))
}

/// Creates segment `number`, sized to `capacity` (sparse), and makes its name durable; the file
/// to append to, opened with `O_DIRECT | O_DSYNC` if the file system takes it (and whether it did).
/// Also the file opened for reading.
fn create(dir: &Path, number: u64, capacity: u64) -> Result<(File, File, bool), ConsensusError> {
    let path = dir.join(segment_name(number));
    let file = crate::private_fs::open_options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    file.set_len(capacity)?;
    file.sync_all()?;
    sync_dir(dir)?;
    drop(file);
    open_segment(dir, &path)
}

/// Segment `path`'s two files: for appending (`O_DIRECT | O_DSYNC` where the file system takes
/// it, and whether it did) and for reading.
fn open_segment(dir: &Path, path: &Path) -> Result<(File, File, bool), ConsensusError> {
    let reader = File::open(path)?;
    match OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT | libc::O_DSYNC)
        .open(path)
    {
        Ok(file) => Ok((file, reader, true)),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            tracing::info!(
                dir = %dir.display(),
                "the file system refuses O_DIRECT: log segments are written through the page cache"
            );
            Ok((OpenOptions::new().write(true).open(path)?, reader, false))
        }
        Err(e) => Err(e.into()),
    }
}

/// Writes whole blocks at `offset` of segment `number` in `dir`. A file system that opened the
/// file with `O_DIRECT` may still refuse the alignment (EINVAL): then the file is opened again
/// without it, for good, and the caller's fdatasync takes over from `O_DSYNC`. (The path is only
/// built then: this runs on every synced append.)
fn write_blocks(
    file: &mut File,
    direct: &mut bool,
    dir: &Path,
    number: u64,
    blocks: &[u8],
    offset: u64,
) -> Result<(), ConsensusError> {
    match file.write_all_at(blocks, offset) {
        Err(e) if *direct && e.raw_os_error() == Some(libc::EINVAL) => {
            let path = dir.join(segment_name(number));
            tracing::warn!(
                path = %path.display(),
                "an O_DIRECT write was refused ({e}): log segments are written through the page \
                 cache from now on"
            );
            *file = OpenOptions::new().write(true).open(path)?;
            *direct = false;
            Ok(file.write_all_at(blocks, offset)?)
        }
        r => Ok(r?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    /// Every record in `dir` after `applied`: sequence number and payload.
    fn payloads(dir: &Path, applied: u64) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::new();
        scan(dir, 0, |at, payload| {
            if at.seq > applied {
                out.push((at.seq, payload.to_vec()));
            }
            Ok(())
        })
        .unwrap();
        out
    }

    fn start(dir: &Path, next_seq: u64) -> Segments {
        Segments::start(dir, next_seq, &[], SEGMENT_BYTES).unwrap()
    }

    /// A closed segment holding records 1 and 2, of 100 bytes each (120 with their headers); its
    /// path.
    fn two_records(dir: &Path) -> PathBuf {
        let mut s = start(dir, 1);
        s.append(&[1; 100], true).unwrap();
        s.append(&[2; 100], true).unwrap();
        s.current_path()
    }

    #[test]
    fn records_read_back_in_order_after_the_store_holds() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = start(dir.path(), 5);
        // Synced, unsynced, synced, unsynced: the last one is never written (nothing synced
        // after it), so a crash loses it, as it may.
        for i in 0..4u8 {
            assert_eq!(s.append(&[i; 10], i % 2 == 0).unwrap(), 5 + u64::from(i));
        }
        assert_eq!(s.next_seq(), 9);
        drop(s);
        assert_eq!(
            payloads(dir.path(), 5),
            vec![(6, vec![1; 10]), (7, vec![2; 10])]
        );
        assert_eq!(payloads(dir.path(), 7), vec![]);
        assert_eq!(payloads(dir.path(), 4).len(), 3);
    }

    #[test]
    fn a_gap_between_segments_refuses_unless_the_store_holds_what_it_skips() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = start(dir.path(), 10);
        s.append(b"x", true).unwrap();
        drop(s);
        let mut s = start(dir.path(), 13);
        s.append(b"y", true).unwrap();
        drop(s);
        let err = scan(dir.path(), 0, |_, _| Ok(())).unwrap_err().to_string();
        assert!(err.contains("record 13 where 11 was expected"), "{err}");
        assert!(scan(dir.path(), 11, |_, _| Ok(())).is_err());
        // Records 11 and 12 are covered: the scan goes on past them.
        let mut seqs = Vec::new();
        let found = scan(dir.path(), 12, |at, _| {
            seqs.push(at.seq);
            Ok(())
        })
        .unwrap();
        assert_eq!(seqs, [10, 13]);
        assert_eq!(
            found,
            [
                Found {
                    number: 1,
                    last_seq: Some(10)
                },
                Found {
                    number: 2,
                    last_seq: Some(13)
                }
            ]
        );
    }

    #[test]
    fn a_record_cut_short_by_the_end_of_the_file_ends_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = two_records(dir.path());
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(2 * 120 - 7).unwrap();
        drop(f);
        assert_eq!(payloads(dir.path(), 0), vec![(1, vec![1; 100])]);
        // Cut inside the second header too.
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(120 + 5).unwrap();
        drop(f);
        assert_eq!(payloads(dir.path(), 0), vec![(1, vec![1; 100])]);
    }

    #[test]
    fn a_damaged_record_refuses_whether_header_or_payload() {
        for at in [3usize, 14, 60] {
            let dir = tempfile::tempdir().unwrap();
            let path = two_records(dir.path());
            let f = OpenOptions::new().write(true).open(&path).unwrap();
            f.write_all_at(&[0xEE], 120 + at as u64).unwrap();
            drop(f);
            let err = scan(dir.path(), 0, |_, _| Ok(())).unwrap_err().to_string();
            assert!(err.contains("at byte 120"), "{at}: {err}");
            assert!(err.contains("checksum fails"), "{at}: {err}");
        }
    }

    #[test]
    fn rotation_keeps_the_old_segment_for_reading_until_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = start(dir.path(), 1);
        let at_one = s.next_payload_offset();
        s.append(b"one", true).unwrap();
        s.append(b"hint", false).unwrap();
        assert!(!s.is_full_for(10));
        assert!(s.is_full_for(SEGMENT_BYTES as usize));
        // Rotation writes the unsynced record out first: the next segment's must not follow a gap.
        s.rotate(10).unwrap();
        let at_two = s.next_payload_offset();
        s.append(b"two", true).unwrap();
        assert_eq!(list(dir.path()).unwrap().len(), 2);
        assert_eq!(s.count(), 2);
        assert_eq!(s.current(), 2);
        assert_eq!(s.read(1, at_one, 3).unwrap(), b"one");
        assert_eq!(s.read(2, at_two, 3).unwrap(), b"two");
        assert_eq!(
            payloads(dir.path(), 0),
            vec![
                (1, b"one".to_vec()),
                (2, b"hint".to_vec()),
                (3, b"two".to_vec())
            ]
        );
        // Not below the segment still needed, nor past what the store holds elsewhere.
        assert_eq!(s.prune(1, 5).unwrap(), 0);
        assert_eq!(s.prune(2, 1).unwrap(), 0);
        assert_eq!(s.prune(2, 2).unwrap(), 1);
        assert_eq!(list(dir.path()).unwrap().len(), 1);
        assert!(s.read(1, at_one, 3).is_err());
        drop(s);
        assert_eq!(payloads(dir.path(), 0), vec![(3, b"two".to_vec())]);
        // A record bigger than a segment gets a segment of its own size.
        let mut s = start(dir.path(), 4);
        s.append(b"four", true).unwrap();
        let big = vec![9u8; SEGMENT_BYTES as usize];
        assert!(s.is_full_for(big.len()));
        assert!(s.append(&big, true).is_err());
        s.rotate(big.len()).unwrap();
        s.append(&big, true).unwrap();
        drop(s);
        let back = payloads(dir.path(), 4);
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].0, 5);
        assert_eq!(back[0].1.len(), big.len());
    }

    #[test]
    fn a_pruned_segment_is_written_over_and_its_old_records_are_never_read() {
        use std::os::unix::fs::MetadataExt;
        const SMALL: u64 = 64 << 10;
        // Records of exactly one block each: every one ends on a block's end, where the next
        // header is the first byte of a block that, in a reused segment, holds an old record.
        let block = |b: u8| vec![b; ALIGN - HEADER];
        let dir = tempfile::tempdir().unwrap();
        let mut s = Segments::start(dir.path(), 1, &[], SMALL).unwrap();
        for i in 0..16u8 {
            s.append(&block(i), true).unwrap();
        }
        let first_inode = fs::metadata(s.current_path()).unwrap().ino();
        s.rotate(0).unwrap();
        s.append(&block(16), true).unwrap();
        // Segment 1 is pruned: kept as a spare, not deleted, and no longer a segment.
        assert_eq!(s.prune(2, 16).unwrap(), 1);
        assert_eq!(list(dir.path()).unwrap().len(), 1);
        assert_eq!(list_with(dir.path(), SPARE_SUFFIX).unwrap().len(), 1);
        s.rotate(0).unwrap();
        assert_eq!(s.current(), 3);
        assert_eq!(fs::metadata(s.current_path()).unwrap().ino(), first_inode);
        assert!(list_with(dir.path(), SPARE_SUFFIX).unwrap().is_empty());
        // Before any record, the reused segment reads as empty, not as its old records.
        let empty = scan(dir.path(), 0, |_, _| Ok(())).unwrap();
        assert_eq!(empty.last().unwrap().last_seq, None);
        // Its blocks are all written already: no zeros are written ahead of the records.
        assert_eq!(s.zeroed_to, SMALL);
        s.append(&block(17), true).unwrap();
        s.append(&block(18), true).unwrap();
        // The log ends on a block's end; the old record in the next block is not read.
        let seqs: Vec<u64> = payloads(dir.path(), 0)
            .iter()
            .map(|(seq, _)| *seq)
            .collect();
        assert_eq!(seqs, vec![17, 18, 19]);
        // A record that ends inside a block, and an unsynced one written with the next.
        s.append(b"hint", false).unwrap();
        s.append(&[19; 100], true).unwrap();
        drop(s);
        let back = payloads(dir.path(), 0);
        let seqs: Vec<u64> = back.iter().map(|(seq, _)| *seq).collect();
        assert_eq!(seqs, vec![17, 18, 19, 20, 21]);
        assert_eq!(back[1].1, block(17));
        assert_eq!(back[3].1, b"hint");
        assert_eq!(back[4].1, vec![19; 100]);
        // A new start takes the next spare for its first segment: segment 2 pruned after the
        // restart is reused by the start after that.
        let found = scan(dir.path(), 0, |_, _| Ok(())).unwrap();
        let mut s = Segments::start(dir.path(), 22, &found, SMALL).unwrap();
        assert_eq!(s.prune(3, 21).unwrap(), 1);
        s.append(b"after", true).unwrap();
        drop(s);
        let found = scan(dir.path(), 0, |_, _| Ok(())).unwrap();
        let s = Segments::start(dir.path(), 23, &found, SMALL).unwrap();
        assert_eq!(s.current(), 5);
        assert!(list_with(dir.path(), SPARE_SUFFIX).unwrap().is_empty());
        drop(s);
        let back = payloads(dir.path(), 0);
        let seqs: Vec<u64> = back.iter().map(|(seq, _)| *seq).collect();
        assert_eq!(seqs, vec![18, 19, 20, 21, 22]);
    }

    #[test]
    fn spares_are_bounded_and_only_of_the_segment_size() {
        const SMALL: u64 = 16 << 10;
        let dir = tempfile::tempdir().unwrap();
        let mut s = Segments::start(dir.path(), 1, &[], SMALL).unwrap();
        let mut seq = 0;
        for _ in 0..5 {
            s.append(&[1; 100], true).unwrap();
            seq += 1;
            s.rotate(0).unwrap();
        }
        // A record bigger than a segment: its own, larger, segment, never a spare.
        s.rotate(SMALL as usize).unwrap();
        s.append(&vec![2; SMALL as usize], true).unwrap();
        seq += 1;
        s.rotate(0).unwrap();
        assert_eq!(s.prune(s.current(), seq).unwrap(), 7);
        assert_eq!(
            list_with(dir.path(), SPARE_SUFFIX).unwrap().len(),
            MAX_SPARES
        );
        assert_eq!(list(dir.path()).unwrap().len(), 1);
        drop(s);
        // Spares of another size are deleted at the next start.
        let found = scan(dir.path(), 0, |_, _| Ok(())).unwrap();
        let s = Segments::start(dir.path(), seq + 1, &found, 2 * SMALL).unwrap();
        drop(s);
        assert!(list_with(dir.path(), SPARE_SUFFIX).unwrap().is_empty());
    }

    #[test]
    fn the_current_segment_reads_back_what_is_still_held_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = start(dir.path(), 1);
        let mut at = Vec::new();
        for i in 0..50u8 {
            at.push((s.next_payload_offset(), vec![i; 97 + usize::from(i)]));
            s.append(&at.last().unwrap().1, i % 5 == 0).unwrap();
        }
        for (offset, payload) in &at {
            assert_eq!(
                &s.read(s.current(), *offset, payload.len()).unwrap(),
                payload
            );
        }
        assert!(s.read(s.current(), at[49].0, 500).is_err());
    }

    #[test]
    fn zeros_are_written_ahead_of_the_records_and_read_as_the_end() {
        use std::os::unix::fs::MetadataExt;
        let allocated = |p: &Path| fs::metadata(p).unwrap().blocks() * 512;
        let dir = tempfile::tempdir().unwrap();
        let mut s = start(dir.path(), 1);
        assert!(
            allocated(&s.current_path()) < 64 << 10,
            "a new segment is sparse"
        );
        s.append(&[1; 100], true).unwrap();
        let after_one = allocated(&s.current_path());
        assert!(
            (ZERO_AHEAD..ZERO_AHEAD + (64 << 10)).contains(&after_one),
            "the record and 1 MB of zeros after it: {after_one}"
        );
        // Records within the zeroed stretch allocate nothing more.
        for _ in 0..100 {
            s.append(&[2; 100], true).unwrap();
        }
        assert_eq!(allocated(&s.current_path()), after_one);
        // Past it, the next megabyte.
        s.append(&vec![3; ZERO_AHEAD as usize], true).unwrap();
        assert!(allocated(&s.current_path()) >= 2 * ZERO_AHEAD);
        drop(s);
        let back = payloads(dir.path(), 0);
        assert_eq!(back.len(), 102);
        assert_eq!(back[0], (1, vec![1; 100]));
        assert_eq!(back[101].1.len(), ZERO_AHEAD as usize);
    }

    #[test]
    fn records_of_every_size_across_block_boundaries_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = start(dir.path(), 1);
        let mut want = Vec::new();
        // Sizes that end records inside a block, exactly on a block's end, and past several.
        for i in 0..600u64 {
            let len = [0, 1, 7, 100, ALIGN - HEADER, ALIGN, 3 * ALIGN + 5][(i % 7) as usize];
            let payload = vec![(i % 251) as u8; len];
            assert_eq!(s.append(&payload, i % 3 != 1).unwrap(), i + 1);
            want.push((i + 1, payload));
        }
        // The last one synced, so every record before it is on disk too.
        s.append(b"last", true).unwrap();
        want.push((601, b"last".to_vec()));
        drop(s);
        assert_eq!(payloads(dir.path(), 0), want);
    }

    #[test]
    fn unsynced_records_are_written_with_the_next_synced_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = start(dir.path(), 1);
        s.append(b"synced", true).unwrap();
        s.append(b"hint", false).unwrap();
        // Not written yet: the file ends after the synced record.
        assert_eq!(payloads(dir.path(), 0), vec![(1, b"synced".to_vec())]);
        s.append(b"vote", true).unwrap();
        assert_eq!(
            payloads(dir.path(), 0),
            vec![
                (1, b"synced".to_vec()),
                (2, b"hint".to_vec()),
                (3, b"vote".to_vec())
            ]
        );
        // Unsynced records past the limit are written without waiting for a synced one.
        let big = vec![5u8; PENDING_LIMIT];
        s.append(&big, false).unwrap();
        drop(s);
        let back = payloads(dir.path(), 3);
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].1, big);
    }

    #[test]
    fn synced_appends_bypass_the_page_cache_where_the_file_system_allows() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = start(dir.path(), 1);
        s.append(b"x", true).unwrap();
        let fdinfo =
            fs::read_to_string(format!("/proc/self/fdinfo/{}", s.file.as_raw_fd())).unwrap();
        let flags = fdinfo
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .map(|f| i64::from_str_radix(f.trim(), 8).unwrap())
            .unwrap();
        let want = i64::from(libc::O_DIRECT | libc::O_DSYNC);
        assert_eq!(
            flags & want == want,
            s.direct,
            "the flags and what the segment believes agree"
        );
        // ext4, xfs and btrfs take O_DIRECT; say so if this machine's temporary directory did not.
        if !s.direct {
            eprintln!("O_DIRECT not available under {}", dir.path().display());
        }
    }

    #[test]
    fn a_new_start_keeps_numbering_and_the_older_segments() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = start(dir.path(), 1);
        s.append(b"a", true).unwrap();
        drop(s);
        let found = scan(dir.path(), 0, |_, _| Ok(())).unwrap();
        let s = Segments::start(dir.path(), 2, &found, SEGMENT_BYTES).unwrap();
        assert_eq!(
            s.current_path().file_name().unwrap().to_str().unwrap(),
            "00000000000000000002.seg"
        );
        assert_eq!(list(dir.path()).unwrap().len(), 2);
        assert_eq!(s.read(1, HEADER as u64, 1).unwrap(), b"a");
    }
}
