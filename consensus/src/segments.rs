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
//! # The format (version 2)
//!
//! A segment is a file of whole 4 KB blocks, allocated in full when it is created (`fallocate`),
//! read and written as 512-byte sectors. Every sector is `body (500 bytes) | stamp u64 | crc32
//! u32`, little-endian, the checksum over the body and the stamp. The stamp is the sequence
//! number of the last record of the write that wrote the sector. Block 0 is the segment's header:
//! its first sector holds `"pdklog\0\x02" | version u32 (2) | segment number u64 | first record's
//! sequence number u64 | file length u64`, the other seven are blank. The bodies of the sectors
//! from block 1 on, one after the other, are the segment's records: `len u32 | seq u64 |
//! crc32(len, seq) u32 | crc32(payload) u32 | payload (len bytes)`, each record's `seq` one more
//! than the one before it, from the header's first; after the last record, a header's worth of
//! zeros at least. A blank sector has a body of zeros and stamp 0. An offset in the records (what
//! the store keeps per entry) is an offset into the bodies; `phys` maps it to the file.
//!
//! Every write of records covers whole blocks: the last block written before, rewritten with the
//! bytes it held (so a torn write cannot change them) plus the new records, then zeros to the end
//! of the block past the last record (one block more when fewer than 20 bytes are left). Records
//! appended unsynced (commit hints) are held in memory and go out with the next synced one.
//!
//! # The end of the log, and why a torn write can be told from damage
//!
//! **Invariant.** Before any write of records reaches a sector, that sector holds a stamped
//! sector of an earlier write: a new segment is written with blank sectors 1 MB ahead of the
//! records (synced before any record reaches them; at creation, the first megabyte before the
//! header), a spare (below) holds its old sectors, every one stamped, and the first block of each
//! write is the previous write's last. The stamps already there are all lower than the sequence
//! numbers the new records get (a blank's is 0; a spare's are records the store no longer needs,
//! all older than the segment's first).
//!
//! **What a power loss leaves.** The device writes a 512-byte sector whole or not at all. A write
//! that returned is on the device in full: all its sectors carry its stamp or a later one. A
//! write cut short leaves each of its sectors either new or as it was, and both check. So after a
//! power loss every sector written checks, and those of the write that was in flight carry its
//! stamp or an older one; never zeros (those are only past the blank sectors, where no write
//! reached) and never a failing checksum.
//!
//! **The rule.** Records are read while they are whole: header and payload checksums hold, the
//! sequence number is the next one, every sector under the record checks. At the first one that
//! is not (at `E`, after the last good record `P`):
//! - a header of zeros in sectors stamped no later than `P` ends the segment cleanly;
//! - otherwise every sector from `E` to the end of the file is read. A sector whose checksum
//!   fails, a sector of zeros under the record at `E` or before any sector stamped later than
//!   `P`, or sectors stamped by two different writes later than `P`, are damage: the start is
//!   refused. Sectors stamped by exactly one write later than `P` are that write, cut short: it
//!   never returned, so nothing in it was acknowledged (no reply, no vote, no ack to a leader
//!   follows an unreturned write). In the newest segment its records are dropped, logged with the
//!   file, the offset and the records, and its sectors are rewritten so the next start reads a
//!   clean end; in any other segment it is damage (a write is only in flight in the newest).
//!   With no such sector, the segment ends at `E` (only the zeros after `P` were torn).
//! - A segment shorter than its header says was cut: damage. So is one whose header names another
//!   segment, and a gap in the sequence numbers across segments (but a gap the store's checkpoint
//!   covers: `scan`).
//!
//! So a record whose write returned is never dropped without the start refusing: a persisted
//! vote or term cannot be lost silently. The assumptions: sectors are written whole; a device
//! flush is honoured (a device that acknowledges a write and later shows a sector's older content
//! makes it look torn); a damaged sector fails its CRC-32 (all but one in 2^32 do).
//!
//! Segments of version 1 (no header, no sector stamps: paddock before Dec 2026) are still read:
//! their records end at the first header of zeros; a failing checksum, a record cut short by the
//! end of the file or a gap refuses the start (version 1 cannot tell a torn write from damage;
//! `paddock repair` says what would be lost and drops it when told). New segments are always
//! version 2; version-1 spares are deleted rather than reused.
//!
//! # Writing
//!
//! - A new segment starts at every open and when the current one is full (`rotate`, which writes
//!   out every record held in memory first). Older ones are kept, open for reading, until the
//!   store says it needs nothing in them (`prune`).
//! - Pruned segments are written over (spares). Up to `MAX_SPARES` pruned segments are renamed
//!   `<number>.spare` instead of deleted, and the next new segment is a spare renamed, after its
//!   header block has been rewritten and synced. A spare's blocks are all written already, so
//!   appends into it need no blank sectors ahead (below): each 1 MB of zeros took 5.5 ms of the
//!   device at the median, on the reply path of whichever batch of writes passed it, about 15
//!   times a second under 8 x 32 sets in flight. Measured pinned, alternating builds, after 12 s
//!   of sets (segments filled, pruned, reused): sets 94.1k/s against 81.3k, p99 4.3 ms against 8.3
//!   (5 of 5 pairs). Only a segment whose blocks were all written (its last sector is not zeros)
//!   is kept as a spare.
//! - Blank sectors are written 1 MB ahead of the records. A segment is allocated whole when it is
//!   created (`fallocate`: a full disk shows then, at a rotation, not inside a later write); the
//!   file system marks such blocks unwritten and converts them at their first write, which makes
//!   that write's sync write the inode as well as the data: one more synchronous I/O (seen in
//!   `perf` on a sparse file, where the same happens at allocation: `ext4_write_inode` under
//!   `ext4_sync_file`). With sectors written ahead, only the write of the blank megabyte pays that.
//!   Measured on ext4 (no journal, a VM's virtio disk) from the core the server runs on: 7 KB
//!   appended and fdatasync'ed 327 us at the median into a sparse file, 218 into written zeros,
//!   30 KB 301 against 194. The server pinned to one core, 8 sessions x 32 in flight, 10 s runs
//!   alternating: 105-110k sets/s before, 123-124k after (p50 2.2-2.3 ms against 1.9, p99 5.3-6.2
//!   ms against 5.5-5.7); 90/10 mixed 189-193k against 201-211k; creates 73-75k against 77-81k.
//!   (A next segment zeroed ahead by a background thread was tried first: its own syncs, 64 of
//!   them per segment, competed with the log's and p99 doubled.)
//! - Writes bypass the page cache: the file is opened `O_DIRECT | O_DSYNC` (where the file system
//!   takes it; otherwise it is written through the page cache and fdatasync'ed). A synced append
//!   writes whole 4 KB blocks from an aligned buffer, and the one system call returns once the
//!   device has the data. Reads go through the page cache (a separate read-only descriptor; the
//!   kernel keeps it coherent with the direct writes), and what is still only in memory is read
//!   from there. Through the page cache, each append copied its bytes into a page and fdatasync
//!   wrote the page back: pinned to one core, 8 sessions x 32 sets in flight, 90.7k sets/s
//!   against 115.3k with `O_DIRECT` (server CPU 9.9 against 7.8 us per set, p99 9.2 against 6.9
//!   ms), lock hand-offs 1,036 against 1,184/s; a lone write the same (322 against 321 us).
//!   Alternating 3 s runs, 4 each, 3 Dec 2026.
//! - Any failed write or sync stops the segments for good (`failed`): nothing is written or
//!   synced again, so a failed fdatasync is never retried (a retry can report success for pages
//!   the kernel has already given up on). The member stops and a restart reads what the device
//!   holds.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::aligned::{AlignedBuf, ALIGN};
use crate::ConsensusError;

/// The size a segment is given when it is created (allocated in full). A start reads every
/// segment kept whole, and the first kept one holds entries older than the snapshot it falls back
/// to: after a 1M-znode fill and a SIGKILL, the segments out of the page cache, opening the log
/// took 76-88 ms with 16 MB segments against 148-193 with 64 MB (4 alternating restarts; 8 x 32
/// sets and creates after 12 s of warm-up were no worse: ops/s 1.08x and 1.03x, p99 0.95x and
/// 0.91x, 4 pairs each). Smaller ones cost a rotation (a spare's header synced, a rename, a synced
/// checkpoint) more often.
pub const SEGMENT_BYTES: u64 = 16 << 20;
/// A record's header: `len u32 | seq u64 | crc32(len, seq) u32 | crc32(payload) u32`.
const HEADER: usize = 20;
const SUFFIX: &str = "seg";
/// Blank sectors are written this far ahead of the records (file bytes; see `write_pending`).
const ZERO_AHEAD: u64 = 1 << 20;
/// Pruned segments kept as spares, to be written over by later segments (module docs).
const MAX_SPARES: usize = 2;
const SPARE_SUFFIX: &str = "spare";

/// The unit the format stamps and checks: the smallest a device writes whole.
pub const SECTOR: usize = 512;
/// The bytes of a sector that carry records; then the stamp (u64) and the checksum (u32).
const BODY: usize = 500;
const SECTORS_PER_BLOCK: u64 = (ALIGN / SECTOR) as u64;
/// The record bytes one 4 KB block holds.
const BLOCK_BODY: u64 = SECTORS_PER_BLOCK * BODY as u64;
/// Where the records start in the file: after the header block.
const RECORDS_AT: u64 = ALIGN as u64;
const MAGIC: [u8; 8] = *b"pdklog\0\x02";
const FORMAT_VERSION: u32 = 2;
/// The stamp of a blank sector (and of the header block): lower than any record's.
const BLANK_STAMP: u64 = 0;

/// How a segment's file is laid out (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Records straight in the file, no header, no sector stamps (paddock before Dec 2026).
    V1,
    /// A header block, then stamped and checked 512-byte sectors.
    V2,
}

/// A segment found at open: its number, the sequence number of its last record (`None`: it holds
/// none) and its format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    pub number: u64,
    pub last_seq: Option<u64>,
    pub format: Format,
}

/// Where a record read back sits: its segment, the offset of its payload (into the segment's
/// records, `Segments::read`), its sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    pub number: u64,
    pub offset: u64,
    pub seq: u64,
}

/// A write found cut short at the end of the newest segment (module docs, "the rule"): its
/// records were never acknowledged. `drop_torn_tail` rewrites its sectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Torn {
    pub path: PathBuf,
    pub number: u64,
    /// The file offset where its first record started.
    pub offset: u64,
    /// The sequence numbers of the records it held.
    pub first_seq: u64,
    pub last_seq: u64,
    /// The last good record before it (the stamp its sectors are rewritten with).
    prev: u64,
    /// The records' offset where it started.
    at: u64,
    /// The sectors to rewrite, first and last, numbered from the start of the file.
    sectors: (u64, u64),
}

/// How one segment's records end (`read_segment`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// At the first header of zeros, or full. `ragged`: what follows the last record is not a
    /// header of zeros, but nothing after it was written by a later write (version 2: the zeros
    /// after the last record were torn, or old bytes of a spare show through).
    Clean { offset: u64, ragged: bool },
    /// A write cut short (version 2 only): never acknowledged.
    Torn(Torn),
    /// Damage at file offset `offset`.
    Damaged { offset: u64, why: String },
}

/// What reading one segment found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentRead {
    pub number: u64,
    pub path: PathBuf,
    pub format: Format,
    pub records: u64,
    pub first_seq: Option<u64>,
    pub last_seq: Option<u64>,
    pub end: End,
    /// Where the good records end: a record offset (version 2) or a file offset (version 1).
    pub cut_at: u64,
    /// The stamp sectors past `cut_at` get if the segment is cut there (version 2: the last good
    /// record's sequence number).
    cut_stamp: u64,
    /// The length the segment was created with (version 2; version 1: the file's).
    pub size: u64,
}

/// What `scan` found: the segments, and a torn write at the end of the newest one, if any.
#[derive(Debug, Default)]
pub struct Scanned {
    pub found: Vec<Found>,
    pub torn: Option<Torn>,
}

/// A closed segment kept for the entries it holds (see `Segments::prune`).
struct Closed {
    file: File,
    last_seq: Option<u64>,
    format: Format,
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
    /// Where the next record starts (an offset into the records).
    offset: u64,
    /// The record bytes the current segment holds.
    capacity: u64,
    /// The current segment's length in the file.
    file_len: u64,
    /// The length new segments get.
    segment_bytes: u64,
    next_seq: u64,
    /// The sequence number of the current segment's first record.
    first_seq: u64,
    /// The record bytes from `base` (a multiple of `BLOCK_BODY`) to `offset`: the tail of the
    /// last block written, then every record appended since. A write rewrites them from `base`,
    /// whole blocks.
    pending: Vec<u8>,
    base: u64,
    /// The records are written up to here (those after it are held in `pending` only).
    written_to: u64,
    /// The file holds stamped sectors (header, records, blanks) up to here (a file offset).
    blank_to: u64,
    /// `pending` in sectors, stamped: what a write sends.
    framed: AlignedBuf,
    /// `ZERO_AHEAD` bytes of blank sectors, made at the first need.
    blanks: AlignedBuf,
    /// Older segments, by number.
    closed: BTreeMap<u64, Closed>,
    /// Pruned segments kept for reuse, by their old number (each `segment_bytes` long).
    spares: Vec<u64>,
    /// Set by the first failed write or sync: nothing is written again (module docs).
    failed: Option<String>,
}

/// Unsynced records are held in memory up to this many bytes, then written.
const PENDING_LIMIT: usize = 1 << 20;

fn segment_name(number: u64) -> String {
    format!("{number:020}.{SUFFIX}")
}

fn spare_name(number: u64) -> String {
    format!("{number:020}.{SPARE_SUFFIX}")
}

/// The file offset of record offset `l` (version 2).
pub fn phys(l: u64) -> u64 {
    RECORDS_AT + l / BODY as u64 * SECTOR as u64 + l % BODY as u64
}

/// The sector (numbered from the start of the file) holding record offset `l`.
fn sector_of(l: u64) -> u64 {
    RECORDS_AT / SECTOR as u64 + l / BODY as u64
}

fn block_down(l: u64) -> u64 {
    l / BLOCK_BODY * BLOCK_BODY
}

fn block_up(l: u64) -> u64 {
    l.div_ceil(BLOCK_BODY) * BLOCK_BODY
}

/// The file offset of the block starting at record offset `l` (a multiple of `BLOCK_BODY`).
fn block_phys(l: u64) -> u64 {
    RECORDS_AT + l / BLOCK_BODY * ALIGN as u64
}

/// The record bytes a version-2 file of `file_len` bytes holds.
fn capacity_of(file_len: u64) -> u64 {
    file_len.saturating_sub(RECORDS_AT) / SECTOR as u64 * BODY as u64
}

/// The length of a version-2 file holding at least `records` record bytes.
fn file_len_for(records: u64) -> u64 {
    block_phys(block_up(records))
}

fn sector_crc(sector: &[u8]) -> u32 {
    crc32fast::hash(&sector[..BODY + 8])
}

/// Stamps and checksums a sector whose body is filled in.
fn seal(sector: &mut [u8], stamp: u64) {
    sector[BODY..BODY + 8].copy_from_slice(&stamp.to_le_bytes());
    let crc = sector_crc(sector);
    sector[BODY + 8..SECTOR].copy_from_slice(&crc.to_le_bytes());
}

/// What a sector read back is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sector {
    /// All zeros: never written.
    Zero,
    /// Neither zeros nor a sector whose checksum holds: damage.
    Bad,
    /// Written by the write with this stamp.
    Stamped(u64),
}

fn classify(sector: &[u8]) -> Sector {
    let crc = u32::from_le_bytes(sector[BODY + 8..SECTOR].try_into().unwrap());
    if sector_crc(sector) == crc {
        Sector::Stamped(u64::from_le_bytes(
            sector[BODY..BODY + 8].try_into().unwrap(),
        ))
    } else if sector.iter().all(|&b| b == 0) {
        Sector::Zero
    } else {
        Sector::Bad
    }
}

/// A version-2 segment's header (its first sector).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SegHeader {
    number: u64,
    first_seq: u64,
    file_len: u64,
}

/// The header block of a new segment: the header sector and seven blank ones.
fn header_block(h: SegHeader) -> AlignedBuf {
    let mut block = AlignedBuf::new();
    let bytes = block.filled(ALIGN);
    bytes[..8].copy_from_slice(&MAGIC);
    bytes[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes[12..20].copy_from_slice(&h.number.to_le_bytes());
    bytes[20..28].copy_from_slice(&h.first_seq.to_le_bytes());
    bytes[28..36].copy_from_slice(&h.file_len.to_le_bytes());
    for sector in bytes.chunks_mut(SECTOR) {
        seal(sector, BLANK_STAMP);
    }
    block
}

/// Reads a segment's header: `Ok(None)` when the file is not version 2 (no magic), an error
/// naming the damage when it has the magic but does not check.
fn parse_header(sector: &[u8]) -> Result<Option<SegHeader>, String> {
    if sector.len() < SECTOR || sector[..8] != MAGIC {
        return Ok(None);
    }
    if classify(sector) != Sector::Stamped(BLANK_STAMP) {
        return Err("the segment's header fails its checksum".into());
    }
    let version = u32::from_le_bytes(sector[8..12].try_into().unwrap());
    if version != FORMAT_VERSION {
        return Err(format!(
            "the segment is of format version {version}, which this paddock does not read"
        ));
    }
    let u64_at = |at: usize| u64::from_le_bytes(sector[at..at + 8].try_into().unwrap());
    Ok(Some(SegHeader {
        number: u64_at(12),
        first_seq: u64_at(20),
        file_len: u64_at(28),
    }))
}

/// The segment files in `dir`, by number.
pub fn list(dir: &Path) -> Result<Vec<(u64, PathBuf)>, ConsensusError> {
    list_with(dir, SUFFIX)
}

/// The files in `dir` named `<number>.<suffix>`, by number.
fn list_with(dir: &Path, suffix: &str) -> Result<Vec<(u64, PathBuf)>, ConsensusError> {
    let mut out = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(io_context(format!("listing {}", dir.display()), e)),
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

/// An IO error with what was being done, its kind kept (a full disk is told apart upstream).
pub(crate) fn io_context(what: String, e: io::Error) -> ConsensusError {
    let advice = match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => {
            "; the file system is full: free space and restart (a start says how much it needs)"
        }
        Some(libc::EIO) => "; the device reported an I/O error: check it (dmesg) before a restart",
        _ => "",
    };
    ConsensusError::Io(io::Error::new(e.kind(), format!("{what}: {e}{advice}")))
}

fn header_crc(len: u32, seq: u64) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&len.to_le_bytes());
    h.update(&seq.to_le_bytes());
    h.finalize()
}

/// A record header's fields: (len, seq), if its checksum holds.
fn parse_record_header(header: &[u8]) -> Option<(u32, u64, u32)> {
    let len = u32::from_le_bytes(header[0..4].try_into().unwrap());
    let seq = u64::from_le_bytes(header[4..12].try_into().unwrap());
    let hcrc = u32::from_le_bytes(header[12..16].try_into().unwrap());
    let pcrc = u32::from_le_bytes(header[16..20].try_into().unwrap());
    (header_crc(len, seq) == hcrc).then_some((len, seq, pcrc))
}

/// What `read_segment` hands each record to: where it sits and its payload.
pub type EachRecord<'a> = &'a mut dyn FnMut(At, &[u8]) -> Result<(), ConsensusError>;

/// How the records of a segment must follow on from the ones before it: the sequence number of
/// the last record read before this segment (`None`: this is the first) and the last one the
/// store's checkpoint covers (a gap that ends at or before `covered + 1` is let pass, `scan`).
#[derive(Debug, Clone, Copy)]
pub struct Expect {
    pub prev: Option<u64>,
    pub covered: u64,
}

impl Expect {
    fn admits(&self, seq: u64) -> bool {
        match self.prev {
            None => true,
            Some(prev) => seq == prev + 1 || (seq > prev && seq <= self.covered + 1),
        }
    }
}

/// Reads one segment's records in order, handing each to `each`, and says how they end (module
/// docs, "the rule"). An error is an IO error reading the file, or one `each` returned.
pub fn read_segment(
    path: &Path,
    number: u64,
    expect: Expect,
    each: EachRecord<'_>,
) -> Result<SegmentRead, ConsensusError> {
    let file =
        File::open(path).map_err(|e| io_context(format!("opening {}", path.display()), e))?;
    let file_len = file
        .metadata()
        .map_err(|e| io_context(format!("reading {}", path.display()), e))?
        .len();
    let mut first = vec![0u8; SECTOR.min(file_len as usize)];
    file.read_exact_at(&mut first, 0)
        .map_err(|e| io_context(format!("reading {}", path.display()), e))?;
    let mut read = SegmentRead {
        number,
        path: path.to_path_buf(),
        format: Format::V1,
        records: 0,
        first_seq: None,
        last_seq: None,
        end: End::Clean {
            offset: 0,
            ragged: false,
        },
        cut_at: 0,
        cut_stamp: 0,
        size: file_len,
    };
    match parse_header(&first) {
        Ok(Some(h)) => {
            read.format = Format::V2;
            read_v2(file, file_len, h, expect, each, &mut read)?;
        }
        Ok(None) => read_v1(file, expect, each, &mut read)?,
        Err(why) => {
            read.format = Format::V2;
            read.end = End::Damaged { offset: 0, why };
        }
    }
    Ok(read)
}

/// A version-2 segment's sectors, read in order on demand: their bodies one after the other (the
/// records) and what each sector is.
struct SectorReader {
    file: File,
    /// Sectors in the records' part of the file.
    total: u64,
    bodies: Vec<u8>,
    kinds: Vec<Sector>,
    chunk: Vec<u8>,
}

impl SectorReader {
    /// Reads sectors until the record bytes up to `end` are in (or the file ends).
    fn ensure(&mut self, end: u64) -> io::Result<()> {
        let want = end.div_ceil(BODY as u64).min(self.total);
        while (self.kinds.len() as u64) < want {
            let from = self.kinds.len() as u64;
            // At least 1 MB at a time (or what is left): the end of a segment's records is
            // usually found a little past where the last read stopped.
            let n = (want - from).max(((1 << 20) / SECTOR as u64).min(self.total - from));
            self.chunk.resize(n as usize * SECTOR, 0);
            self.file
                .read_exact_at(&mut self.chunk, RECORDS_AT + from * SECTOR as u64)?;
            for sector in self.chunk.chunks(SECTOR) {
                self.kinds.push(classify(sector));
                self.bodies.extend_from_slice(&sector[..BODY]);
            }
        }
        Ok(())
    }

    /// What sector `s` (numbered from the start of the file) is; read already.
    fn kind(&self, s: u64) -> Sector {
        self.kinds[(s - RECORDS_AT / SECTOR as u64) as usize]
    }
}

fn read_v2(
    file: File,
    file_len: u64,
    h: SegHeader,
    expect: Expect,
    each: EachRecord<'_>,
    read: &mut SegmentRead,
) -> Result<(), ConsensusError> {
    let damaged = |offset: u64, why: String| End::Damaged { offset, why };
    if h.number != read.number {
        read.end = damaged(
            0,
            format!(
                "its header names segment {}: the file was renamed",
                h.number
            ),
        );
        return Ok(());
    }
    read.size = h.file_len;
    if h.file_len < 2 * RECORDS_AT || !h.file_len.is_multiple_of(ALIGN as u64) {
        read.end = damaged(
            0,
            format!("its header gives a length of {} bytes", h.file_len),
        );
        return Ok(());
    }
    // A file cut short: the whole records before the cut are read (for `paddock repair`), and
    // the cut is the damage.
    let cut = (file_len != h.file_len).then(|| {
        damaged(
            file_len.min(h.file_len),
            format!(
                "the file is {file_len} bytes long but was created {} long: it was cut short \
                 (or grown), and the records past the cut are lost",
                h.file_len
            ),
        )
    });
    let usable = file_len.min(h.file_len) / SECTOR as u64 * SECTOR as u64;
    let capacity = capacity_of(usable);
    let mut r = SectorReader {
        file,
        total: usable.saturating_sub(RECORDS_AT) / SECTOR as u64,
        bodies: Vec::new(),
        kinds: Vec::new(),
        chunk: Vec::new(),
    };
    let io = |e: io::Error| io_context(format!("reading {}", read.path.display()), e);
    let mut at = 0u64;
    let mut prev = h.first_seq.saturating_sub(1);
    loop {
        read.cut_at = at;
        read.cut_stamp = prev;
        if at + HEADER as u64 > capacity {
            read.end = cut.unwrap_or(End::Clean {
                offset: phys(at),
                ragged: false,
            });
            return Ok(());
        }
        r.ensure(at + HEADER as u64).map_err(io)?;
        let header_sectors = sector_of(at)..=sector_of(at + HEADER as u64 - 1);
        let header = &r.bodies[at as usize..at as usize + HEADER];
        if header.iter().all(|&b| b == 0)
            && header_sectors
                .clone()
                .all(|s| matches!(r.kind(s), Sector::Stamped(x) if x <= prev))
        {
            read.end = cut.unwrap_or(End::Clean {
                offset: phys(at),
                ragged: false,
            });
            return Ok(());
        }
        // The record here, if it is the next one: its length.
        let mut span = None;
        if let Some((len, seq, pcrc)) = parse_record_header(header) {
            if seq == prev + 1 && at + (HEADER as u64) + u64::from(len) <= capacity {
                let end = at + HEADER as u64 + u64::from(len);
                span = Some(end);
                r.ensure(end).map_err(io)?;
                let whole = (sector_of(at)..=sector_of(end - 1))
                    .all(|s| matches!(r.kind(s), Sector::Stamped(x) if x >= seq));
                let payload = &r.bodies[(at + HEADER as u64) as usize..end as usize];
                if whole && crc32fast::hash(payload) == pcrc {
                    if read.records == 0 && !expect.admits(seq) {
                        read.end = damaged(
                            phys(at),
                            format!(
                                "its first record is {seq} where {} was expected: records are \
                                 missing",
                                expect.prev.map_or(0, |p| p + 1)
                            ),
                        );
                        return Ok(());
                    }
                    each(
                        At {
                            number: read.number,
                            offset: at + HEADER as u64,
                            seq,
                        },
                        payload,
                    )?;
                    read.records += 1;
                    read.first_seq.get_or_insert(seq);
                    read.last_seq = Some(seq);
                    prev = seq;
                    at = end;
                    continue;
                }
            }
        }
        read.end = match cut {
            Some(cut) => cut,
            None => {
                r.ensure(capacity).map_err(io)?;
                judge_end(&r, &read.path, read.number, at, prev, span)
            }
        };
        return Ok(());
    }
}

/// The end of a version-2 segment's records at `at`, after record `prev`, where the record found
/// does not check (`span`: where it would end, if its header holds and it is the next one). Every
/// sector is read. Module docs, "the rule".
fn judge_end(
    r: &SectorReader,
    path: &Path,
    number: u64,
    at: u64,
    prev: u64,
    span: Option<u64>,
) -> End {
    let offset_of = |s: u64| s * SECTOR as u64;
    let first = sector_of(at);
    let under = match span {
        Some(end) => sector_of(end - 1),
        None => sector_of(at + HEADER as u64 - 1),
    };
    for s in first..=under {
        match r.kind(s) {
            Sector::Bad => {
                return End::Damaged {
                    offset: offset_of(s),
                    why: format!("sector {s} fails its checksum, under the record after {prev}"),
                }
            }
            Sector::Zero => {
                return End::Damaged {
                    offset: offset_of(s),
                    why: format!(
                        "sector {s} reads as zeros under the record after {prev}, where a \
                         stamped sector was written before"
                    ),
                }
            }
            Sector::Stamped(_) => {}
        }
    }
    let last = RECORDS_AT / SECTOR as u64 + r.total;
    let mut newer: Option<(u64, u64)> = None; // (stamp, last sector with it)
    let mut zeros_from: Option<u64> = None;
    for s in first..last {
        match r.kind(s) {
            Sector::Bad => {
                return End::Damaged {
                    offset: offset_of(s),
                    why: format!(
                        "sector {s}, after the last good record {prev}, fails its checksum"
                    ),
                }
            }
            Sector::Zero => {
                zeros_from.get_or_insert(s);
            }
            Sector::Stamped(x) if x > prev => {
                if let Some(z) = zeros_from {
                    return End::Damaged {
                        offset: offset_of(z),
                        why: format!(
                            "sector {z} reads as zeros, but sector {s} after it was written by \
                             the write that ended with record {x}"
                        ),
                    };
                }
                match newer {
                    Some((y, _)) if y != x => {
                        return End::Damaged {
                            offset: offset_of(s),
                            why: format!(
                                "the record after {prev} does not check, and the sectors after \
                                 it were written by two later writes (ending with records {y} \
                                 and {x}): records that were written are missing"
                            ),
                        }
                    }
                    _ => newer = Some((x, s)),
                }
            }
            Sector::Stamped(_) => {}
        }
    }
    match newer {
        None => End::Clean {
            offset: phys(at),
            ragged: true,
        },
        Some((stamp, last_sector)) => End::Torn(Torn {
            path: path.to_path_buf(),
            number,
            offset: phys(at),
            first_seq: prev + 1,
            last_seq: stamp,
            prev,
            at,
            sectors: (first, last_sector),
        }),
    }
}

/// Version 1: records from offset 0 to the first header of zeros. A record cut short by the end
/// of the file (the file is pre-sized, so that is a cut), a failing checksum or a gap is damage.
fn read_v1(
    file: File,
    expect: Expect,
    each: EachRecord<'_>,
    read: &mut SegmentRead,
) -> Result<(), ConsensusError> {
    let path = read.path.clone();
    let io = |e: io::Error| io_context(format!("reading {}", path.display()), e);
    let mut file = io::BufReader::with_capacity(1 << 20, file);
    let mut offset = 0u64;
    let mut payload = Vec::new();
    let mut prev = expect.prev;
    loop {
        read.cut_at = offset;
        let mut header = [0u8; HEADER];
        let got = read_full(&mut file, &mut header).map_err(io)?;
        if header[..got].iter().all(|&b| b == 0) {
            // A header of zeros, or the end of a segment filled to within a header of its end
            // (its sizes are whole blocks, and the zeros after the last record run to the end).
            read.end = End::Clean {
                offset,
                ragged: false,
            };
            return Ok(());
        }
        if got < HEADER {
            read.end = End::Damaged {
                offset,
                why: "the file ends inside a record's header: it was cut short".into(),
            };
            return Ok(());
        }
        let Some((len, seq, pcrc)) = parse_record_header(&header) else {
            read.end = End::Damaged {
                offset,
                why: "the record header's checksum fails".into(),
            };
            return Ok(());
        };
        payload.resize(len as usize, 0);
        if read_full(&mut file, &mut payload).map_err(io)? < payload.len() {
            read.end = End::Damaged {
                offset,
                why: "the file ends inside a record: it was cut short".into(),
            };
            return Ok(());
        }
        if crc32fast::hash(&payload) != pcrc {
            read.end = End::Damaged {
                offset,
                why: "the record's checksum fails".into(),
            };
            return Ok(());
        }
        let step = Expect {
            prev,
            covered: expect.covered,
        };
        if !step.admits(seq) {
            read.end = End::Damaged {
                offset,
                why: format!(
                    "record {seq} where {} was expected: writes are missing",
                    prev.map_or(0, |p| p + 1)
                ),
            };
            return Ok(());
        }
        each(
            At {
                number: read.number,
                offset: offset + HEADER as u64,
                seq,
            },
            &payload,
        )?;
        read.records += 1;
        read.first_seq.get_or_insert(seq);
        read.last_seq = Some(seq);
        prev = Some(seq);
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

/// The error a start refuses with for damage in a segment.
pub fn damage_error(path: &Path, offset: u64, why: &str) -> ConsensusError {
    ConsensusError::Corrupt(format!(
        "log segment {} at byte {offset}: {why}. The log may have lost a write it acknowledged, \
         so the member does not start; `paddock repair` says what is damaged, what would be lost \
         and what can be done",
        path.display()
    ))
}

/// Reads every record of every segment in `dir`, in order, handing each to `each` with where it
/// sits; the segments found, and a torn write at the end of the newest one (module docs, "the
/// rule"). The records must follow on one from the next without a gap across segments: a gap
/// means records are missing, and the open is refused. Only a gap that ends at or before
/// `covered + 1` is let pass: the records in it are ones whose effect the store holds elsewhere
/// (its checkpoint), lost with an unsynced write and skipped since.
pub fn scan(
    dir: &Path,
    covered: u64,
    mut each: impl FnMut(At, &[u8]) -> Result<(), ConsensusError>,
) -> Result<Scanned, ConsensusError> {
    let mut scanned = Scanned::default();
    let mut prev: Option<u64> = None;
    let files = list(dir)?;
    let newest = files.last().map(|(n, _)| *n);
    for (number, path) in files {
        let read = read_segment(&path, number, Expect { prev, covered }, &mut each)?;
        match read.end {
            End::Clean { offset, ragged } => {
                if ragged {
                    tracing::info!(
                        segment = %path.display(),
                        offset,
                        "the log segment's records end where a write's trailing zeros were cut \
                         short (nothing after them was written)"
                    );
                }
            }
            End::Torn(t) if Some(number) == newest => scanned.torn = Some(t),
            End::Torn(t) => {
                return Err(damage_error(
                    &path,
                    t.offset,
                    &format!(
                        "a write of records {}..={} was cut short, in a segment that is not the \
                         newest (a write is only in flight at the end of the log)",
                        t.first_seq, t.last_seq
                    ),
                ))
            }
            End::Damaged { offset, why } => return Err(damage_error(&path, offset, &why)),
        }
        if read.last_seq.is_some() {
            prev = read.last_seq;
        }
        scanned.found.push(Found {
            number,
            last_seq: read.last_seq,
            format: read.format,
        });
    }
    Ok(scanned)
}

/// Before a start reads the segments of a file system that refuses `O_DIRECT` (where they are
/// written through the page cache and fdatasync'ed): each is synced, then its cached pages are
/// dropped, so that what the start reads is what the device holds. After an fdatasync that
/// failed, the kernel may keep the pages it could not write, marked clean: read from the cache,
/// a record never on the device would be replayed and served. With
/// `O_DIRECT` the writes never went through the cache, and nothing is done.
pub fn settle(dir: &Path) -> Result<(), ConsensusError> {
    for (_, path) in list(dir)? {
        let direct = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(&path);
        match direct {
            Ok(_) => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
            Err(e) => return Err(io_context(format!("opening {}", path.display()), e)),
        }
        let ctx = |e: io::Error| io_context(format!("syncing {}", path.display()), e);
        let file = OpenOptions::new().write(true).open(&path).map_err(ctx)?;
        file.sync_data().map_err(ctx)?;
        rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed)
            .map_err(|e| ctx(e.into()))?;
    }
    Ok(())
}

/// Drops a torn write found by `scan` for good: its sectors are rewritten (blank after the last
/// good record, stamped with that record's sequence number) and synced, so the next start reads a
/// clean end there. Logged with the file, the offset and the records.
pub fn drop_torn_tail(torn: &Torn) -> Result<(), ConsensusError> {
    let ctx = |e: io::Error| {
        io_context(
            format!("dropping the torn write in {}", torn.path.display()),
            e,
        )
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&torn.path)
        .map_err(ctx)?;
    let (first, last) = torn.sectors;
    let mut bytes = vec![0u8; ((last - first + 1) as usize) * SECTOR];
    file.read_exact_at(&mut bytes, first * SECTOR as u64)
        .map_err(ctx)?;
    let keep = (torn.at % BODY as u64) as usize;
    for (i, sector) in bytes.chunks_mut(SECTOR).enumerate() {
        let from = if i == 0 { keep } else { 0 };
        sector[from..BODY].fill(0);
        seal(sector, torn.prev);
    }
    file.write_all_at(&bytes, first * SECTOR as u64)
        .map_err(ctx)?;
    file.sync_data().map_err(ctx)?;
    tracing::warn!(
        segment = %torn.path.display(),
        offset = torn.offset,
        records = format_args!("{}..={}", torn.first_seq, torn.last_seq),
        "dropped a write cut short at the end of the log: it never returned, so nothing in it \
         was acknowledged"
    );
    Ok(())
}

/// Cuts a segment's records after the last good one (`paddock repair`, told to): every sector
/// from there to the end of the file is rewritten blank, stamped with that record's sequence number
/// (version 2), or zeroed (version 1), and synced. The segment then ends cleanly there.
pub fn cut_after_good_records(read: &SegmentRead) -> Result<(), ConsensusError> {
    let path = &read.path;
    let ctx = |e: io::Error| io_context(format!("cutting {}", path.display()), e);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(ctx)?;
    let len = file.metadata().map_err(ctx)?.len();
    match read.format {
        Format::V1 => {
            let zeros = vec![0u8; (len.saturating_sub(read.cut_at)) as usize];
            file.write_all_at(&zeros, read.cut_at).map_err(ctx)?;
        }
        Format::V2 => {
            // A file cut short gets its length back first; the sectors past the cut are
            // rewritten with the rest.
            if len != read.size {
                file.set_len(read.size).map_err(ctx)?;
            }
            let first = sector_of(read.cut_at);
            let total = read.size / SECTOR as u64;
            if first < total {
                let mut bytes = vec![0u8; ((total - first) as usize) * SECTOR];
                file.read_exact_at(&mut bytes[..SECTOR], first * SECTOR as u64)
                    .map_err(ctx)?;
                let keep = (read.cut_at % BODY as u64) as usize;
                for (i, sector) in bytes.chunks_mut(SECTOR).enumerate() {
                    let from = if i == 0 { keep } else { 0 };
                    sector[from..BODY].fill(0);
                    seal(sector, read.cut_stamp);
                }
                file.write_all_at(&bytes, first * SECTOR as u64)
                    .map_err(ctx)?;
            }
        }
    }
    file.sync_data().map_err(ctx)
}

/// fsync of a directory, so that a file created or removed in it stays so after a power loss.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), ConsensusError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_context(format!("syncing the directory {}", dir.display()), e))
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
        crate::private_fs::create_dir_all(dir)
            .map_err(|e| io_context(format!("creating {}", dir.display()), e))?;
        let mut closed = BTreeMap::new();
        for f in found {
            let path = dir.join(segment_name(f.number));
            let file = File::open(&path)
                .map_err(|e| io_context(format!("opening {}", path.display()), e))?;
            closed.insert(
                f.number,
                Closed {
                    file,
                    last_seq: f.last_seq,
                    format: f.format,
                },
            );
        }
        let on_disk = list(dir)?.last().map_or(0, |(n, _)| *n);
        let number = on_disk.max(found.last().map_or(0, |f| f.number)) + 1;
        let segment_bytes = crate::aligned::round_up(segment_bytes).max(2 * ALIGN as u64);
        let mut spares = keep_spares(dir, segment_bytes)?;
        let fresh = new_segment(dir, spares.pop(), number, segment_bytes, next_seq)?;
        Ok(Segments {
            dir: dir.to_path_buf(),
            file: fresh.file,
            reader: fresh.reader,
            direct: fresh.direct,
            number,
            offset: 0,
            capacity: capacity_of(segment_bytes),
            file_len: segment_bytes,
            segment_bytes,
            next_seq,
            first_seq: next_seq,
            pending: Vec::new(),
            base: 0,
            written_to: 0,
            blank_to: fresh.blank_to,
            framed: AlignedBuf::new(),
            blanks: AlignedBuf::new(),
            closed,
            spares,
            failed: None,
        })
    }

    /// The sequence number the next record gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The offset (into the current segment's records) the next record's payload will start at.
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

    /// True once a write or sync has failed (module docs).
    pub fn has_failed(&self) -> bool {
        self.failed.is_some()
    }

    /// The error every call returns once a write or sync has failed (module docs).
    fn check_failed(&self) -> Result<(), ConsensusError> {
        match &self.failed {
            None => Ok(()),
            Some(why) => Err(ConsensusError::Io(io::Error::other(format!(
                "the log's writes stopped after an earlier failure ({why}); nothing is written \
                 or synced again until the member restarts"
            )))),
        }
    }

    /// Records a failed write or sync, so nothing is written or synced again.
    fn fail(&mut self, e: ConsensusError) -> ConsensusError {
        if self.failed.is_none() {
            self.failed = Some(e.to_string());
        }
        e
    }

    /// Moves on to a new segment (sized for a record of `len` bytes at least). The current one is
    /// closed with every record appended to it on disk (those held unsynced are written and
    /// synced first: a later segment's records must never follow a gap), and kept for reading.
    pub fn rotate(&mut self, len: usize) -> Result<(), ConsensusError> {
        self.flush()?;
        let number = self.number + 1;
        let file_len = file_len_for((HEADER + len) as u64).max(self.segment_bytes);
        let spare = if file_len == self.segment_bytes {
            self.spares.pop()
        } else {
            None
        };
        let fresh = match new_segment(&self.dir, spare, number, file_len, self.next_seq) {
            Ok(f) => f,
            Err(e) => return Err(self.fail(e)),
        };
        drop(std::mem::replace(&mut self.file, fresh.file));
        let old_reader = std::mem::replace(&mut self.reader, fresh.reader);
        let last_seq = (self.next_seq > self.first_seq).then(|| self.next_seq - 1);
        self.closed.insert(
            self.number,
            Closed {
                file: old_reader,
                last_seq,
                format: Format::V2,
            },
        );
        self.direct = fresh.direct;
        self.number = number;
        self.offset = 0;
        self.capacity = capacity_of(file_len);
        self.file_len = file_len;
        self.first_seq = self.next_seq;
        self.pending.clear();
        self.base = 0;
        self.written_to = 0;
        self.blank_to = fresh.blank_to;
        crate::crash_point!("rotate-new-segment");
        Ok(())
    }

    /// Writes and syncs the records held in memory (appended unsynced), if any.
    pub fn flush(&mut self) -> Result<(), ConsensusError> {
        self.check_failed()?;
        if self.written_to < self.offset {
            self.write_pending()?;
            if !self.direct {
                if let Err(e) = self.file.sync_data() {
                    let e = io_context(format!("syncing {}", self.current_path().display()), e);
                    return Err(self.fail(e));
                }
            }
        }
        Ok(())
    }

    /// Deletes, durably, the closed segments numbered below `below` whose records are all at or
    /// before `upto_seq` (the store holds their effect elsewhere); the count deleted. Up to
    /// `MAX_SPARES` of them are kept as spares instead, renamed, for later segments to be written
    /// over (module docs).
    pub fn prune(&mut self, below: u64, upto_seq: u64) -> Result<usize, ConsensusError> {
        self.check_failed()?;
        let doomed: Vec<u64> = self
            .closed
            .iter()
            .filter(|(n, c)| **n < below && c.last_seq.is_none_or(|s| s <= upto_seq))
            .map(|(n, _)| *n)
            .collect();
        for (i, n) in doomed.iter().enumerate() {
            let kept = self.closed.remove(n);
            let path = self.dir.join(segment_name(*n));
            let reusable = match kept {
                Some(c) => c.format == Format::V2 && fully_written(&c.file, self.segment_bytes),
                None => false,
            };
            let done = if reusable && self.spares.len() < MAX_SPARES {
                fs::rename(&path, self.dir.join(spare_name(*n))).map(|()| self.spares.push(*n))
            } else {
                match fs::remove_file(&path) {
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                    r => r,
                }
            };
            if let Err(e) = done {
                let e = io_context(format!("pruning {}", path.display()), e);
                return Err(self.fail(e));
            }
            if i == 0 {
                crate::crash_point!("prune-first-done");
            }
        }
        if !doomed.is_empty() {
            if let Err(e) = sync_dir(&self.dir) {
                return Err(self.fail(e));
            }
        }
        Ok(doomed.len())
    }

    /// Reads `len` bytes at record offset `offset` of segment `number` (the current one or a
    /// closed one).
    pub fn read(&self, number: u64, offset: u64, len: usize) -> Result<Vec<u8>, ConsensusError> {
        let mut out = vec![0u8; len];
        if number == self.number {
            // The bytes from `base` on are in `pending`: the last block written, which is kept
            // there to be rewritten, and the records appended unsynced since, not yet written.
            // The caller only reads synced records, but these can end in that block.
            let from_file = self.base.saturating_sub(offset).min(len as u64) as usize;
            if from_file > 0 {
                read_records(&self.reader, offset, &mut out[..from_file])?;
            }
            if from_file < len {
                let start = (offset + from_file as u64 - self.base) as usize;
                if start + (len - from_file) > self.pending.len() {
                    return Err(ConsensusError::Invalid(format!(
                        "read past the end of log segment {number}: {offset}+{len}"
                    )));
                }
                out[from_file..].copy_from_slice(&self.pending[start..start + len - from_file]);
            }
            return Ok(out);
        }
        let closed = self
            .closed
            .get(&number)
            .ok_or_else(|| ConsensusError::Corrupt(format!("log segment {number} is gone")))?;
        match closed.format {
            Format::V1 => closed.file.read_exact_at(&mut out, offset)?,
            Format::V2 => read_records(&closed.file, offset, &mut out)?,
        }
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
        self.check_failed()?;
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
        self.pending.extend_from_slice(&header);
        self.pending.extend_from_slice(payload);
        self.offset += (HEADER + payload.len()) as u64;
        self.next_seq += 1;
        if sync || self.pending.len() >= PENDING_LIMIT {
            self.write_pending()?;
        }
        // Opened O_DIRECT, the file is O_DSYNC too: the write returned once on the device.
        if sync && !self.direct {
            if let Err(e) = self.file.sync_data() {
                let e = io_context(format!("syncing {}", self.current_path().display()), e);
                return Err(self.fail(e));
            }
        }
        Ok(seq)
    }

    /// Writes the pending bytes from `base`, whole blocks of stamped sectors, the blank sectors
    /// ahead first where the records pass them; keeps the last, partly filled, block for the next
    /// write.
    fn write_pending(&mut self) -> Result<(), ConsensusError> {
        // Up to a header's worth of zeros past the last record, in the same write: what follows
        // the last record must read as a header of zeros, the end of the log (module docs).
        let end = block_up(self.offset + HEADER as u64).min(self.capacity);
        let end_phys = block_phys(end);
        // Blank sectors go ahead of the records, 1 MB at a time, from where the stamped sectors
        // end: the sectors this write covers must hold a stamped sector before it (module docs,
        // "invariant"), and an append then lands in blocks already written, so its sync writes
        // the data alone, not the inode too.
        if end_phys > self.blank_to {
            let to = (end_phys + ZERO_AHEAD).min(self.file_len);
            if let Err(e) = self.write_blanks(to) {
                return Err(self.fail(e));
            }
        }
        // The pending bytes in stamped sectors: the stamp is the last record's sequence number.
        let stamp = self.next_seq - 1;
        let sectors = ((end - self.base) / BODY as u64) as usize;
        let framed = self.framed.filled(sectors * SECTOR);
        for (i, sector) in framed.chunks_mut(SECTOR).enumerate() {
            let from = (i * BODY).min(self.pending.len());
            let to = ((i + 1) * BODY).min(self.pending.len());
            sector[..to - from].copy_from_slice(&self.pending[from..to]);
            sector[to - from..BODY].fill(0);
            seal(sector, stamp);
        }
        let at = block_phys(self.base);
        if let Err(e) = write_blocks(
            &mut self.file,
            &mut self.direct,
            &self.dir,
            self.number,
            self.framed.bytes(),
            at,
        ) {
            return Err(self.fail(e));
        }
        self.written_to = self.offset;
        let keep_from = block_down(self.offset);
        self.pending.drain(..(keep_from - self.base) as usize);
        self.base = keep_from;
        Ok(())
    }

    /// Writes blank sectors from `blank_to` up to `to` (whole blocks).
    fn write_blanks(&mut self, to: u64) -> Result<(), ConsensusError> {
        if self.blanks.len == 0 {
            let blanks = self.blanks.filled(ZERO_AHEAD as usize);
            for sector in blanks.chunks_mut(SECTOR) {
                seal(sector, BLANK_STAMP);
            }
        }
        while self.blank_to < to {
            let n = (to - self.blank_to).min(ZERO_AHEAD) as usize;
            write_blocks(
                &mut self.file,
                &mut self.direct,
                &self.dir,
                self.number,
                &self.blanks.bytes()[..n],
                self.blank_to,
            )?;
            self.blank_to += n as u64;
        }
        Ok(())
    }

    /// The file being appended to.
    pub fn current_path(&self) -> PathBuf {
        self.dir.join(segment_name(self.number))
    }
}

/// Reads `out.len()` record bytes at record offset `offset` of a version-2 segment.
fn read_records(file: &File, offset: u64, out: &mut [u8]) -> Result<(), ConsensusError> {
    if out.is_empty() {
        return Ok(());
    }
    let first = offset / BODY as u64;
    let last = (offset + out.len() as u64 - 1) / BODY as u64;
    let mut sectors = vec![0u8; ((last - first + 1) as usize) * SECTOR];
    file.read_exact_at(&mut sectors, RECORDS_AT + first * SECTOR as u64)?;
    let mut done = 0;
    let mut at = (offset % BODY as u64) as usize;
    for sector in sectors.chunks(SECTOR) {
        let n = (BODY - at).min(out.len() - done);
        out[done..done + n].copy_from_slice(&sector[at..at + n]);
        done += n;
        at = 0;
    }
    Ok(())
}

/// True if every block of a version-2 segment `len` bytes long holds stamped sectors: its last
/// sector is not zeros (blank sectors are written from the front, so that is the last written).
fn fully_written(file: &File, len: u64) -> bool {
    let Ok(meta) = file.metadata() else {
        return false;
    };
    if meta.len() != len || len < RECORDS_AT + SECTOR as u64 {
        return false;
    }
    let mut last = [0u8; SECTOR];
    file.read_exact_at(&mut last, len - SECTOR as u64).is_ok()
        && matches!(classify(&last), Sector::Stamped(_))
}

/// The spares in `dir` (pruned segments renamed, see `prune`), by number: those of version 2,
/// `segment_bytes` long and written whole, up to `MAX_SPARES`. Others (left by a build with
/// another segment size, or of version 1, whose old bytes carry no stamps) are deleted.
fn keep_spares(dir: &Path, segment_bytes: u64) -> Result<Vec<u64>, ConsensusError> {
    let mut spares = Vec::new();
    let mut deleted = false;
    for (number, path) in list_with(dir, SPARE_SUFFIX)? {
        let usable = spares.len() < MAX_SPARES
            && File::open(&path).is_ok_and(|f| {
                let mut first = [0u8; SECTOR];
                f.read_exact_at(&mut first, 0).is_ok()
                    && matches!(parse_header(&first), Ok(Some(_)))
                    && fully_written(&f, segment_bytes)
            });
        if usable {
            spares.push(number);
        } else {
            fs::remove_file(&path)
                .map_err(|e| io_context(format!("removing {}", path.display()), e))?;
            deleted = true;
        }
    }
    if deleted {
        sync_dir(dir)?;
    }
    Ok(spares)
}

/// A segment made ready for appends: its files and how far it holds stamped sectors.
struct Fresh {
    file: File,
    reader: File,
    direct: bool,
    blank_to: u64,
}

/// Segment `number`, `file_len` bytes long, its first record `first_seq`: `spare` written over if
/// there is one (`reuse`), else a new file (`create`).
fn new_segment(
    dir: &Path,
    spare: Option<u64>,
    number: u64,
    file_len: u64,
    first_seq: u64,
) -> Result<Fresh, ConsensusError> {
    let header = SegHeader {
        number,
        first_seq,
        file_len,
    };
    match spare {
        Some(spare) => reuse(dir, spare, header),
        None => create(dir, header),
    }
}

/// Makes segment `number` out of spare `spare`: the spare's header block is rewritten and synced
/// before it is renamed (a crash can then never show its old records as the new segment's: they
/// carry older stamps and sequence numbers than the header's first), then renamed, durably.
fn reuse(dir: &Path, spare: u64, h: SegHeader) -> Result<Fresh, ConsensusError> {
    let from = dir.join(spare_name(spare));
    let path = dir.join(segment_name(h.number));
    let ctx = |what: &str, e: io::Error| {
        io_context(
            format!("{what} {} as {}", from.display(), path.display()),
            e,
        )
    };
    let file = OpenOptions::new()
        .write(true)
        .open(&from)
        .map_err(|e| ctx("reusing", e))?;
    file.write_all_at(header_block(h).bytes(), 0)
        .map_err(|e| ctx("writing the header of", e))?;
    file.sync_data().map_err(|e| ctx("syncing", e))?;
    drop(file);
    crate::crash_point!("reuse-header-synced");
    fs::rename(&from, &path).map_err(|e| ctx("renaming", e))?;
    crate::crash_point!("reuse-renamed");
    sync_dir(dir)?;
    let (file, reader, direct) = open_segment(dir, &path)?;
    Ok(Fresh {
        file,
        reader,
        direct,
        blank_to: h.file_len,
    })
}

/// Creates segment `number`: allocated in full (`fallocate`, so a full disk shows here and not
/// inside a later append), its first megabyte of record sectors blank and synced before its header
/// (a header on disk means the blanks are too), then its name made durable. The files as
/// `open_segment` gives them.
fn create(dir: &Path, h: SegHeader) -> Result<Fresh, ConsensusError> {
    let path = dir.join(segment_name(h.number));
    let ctx = |what: &str, e: io::Error| io_context(format!("{what} {}", path.display()), e);
    let file = crate::private_fs::open_options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| ctx("creating", e))?;
    allocate(&file, h.file_len).map_err(|e| ctx("allocating", e))?;
    let blank_to = (RECORDS_AT + ZERO_AHEAD).min(h.file_len);
    let mut blanks = AlignedBuf::new();
    for sector in blanks
        .filled((blank_to - RECORDS_AT) as usize)
        .chunks_mut(SECTOR)
    {
        seal(sector, BLANK_STAMP);
    }
    file.write_all_at(blanks.bytes(), RECORDS_AT)
        .map_err(|e| ctx("writing", e))?;
    file.sync_data().map_err(|e| ctx("syncing", e))?;
    file.write_all_at(header_block(h).bytes(), 0)
        .map_err(|e| ctx("writing the header of", e))?;
    file.sync_all().map_err(|e| ctx("syncing", e))?;
    drop(file);
    sync_dir(dir)?;
    crate::crash_point!("create-synced");
    let (file, reader, direct) = open_segment(dir, &path)?;
    Ok(Fresh {
        file,
        reader,
        direct,
        blank_to,
    })
}

/// Gives `file` all its `len` bytes of blocks now. A file system without `fallocate` gets a file
/// of that size whose blocks come as they are written (and the blank sectors ahead of the records
/// allocate them before any record needs them).
fn allocate(file: &File, len: u64) -> io::Result<()> {
    match rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), 0, len) {
        Ok(()) => Ok(()),
        Err(e) if e == rustix::io::Errno::OPNOTSUPP || e == rustix::io::Errno::NOSYS => {
            file.set_len(len)
        }
        Err(e) => Err(e.into()),
    }
}

/// Segment `path`'s two files: for appending (`O_DIRECT | O_DSYNC` where the file system takes
/// it, and whether it did) and for reading.
fn open_segment(dir: &Path, path: &Path) -> Result<(File, File, bool), ConsensusError> {
    let ctx = |e: io::Error| io_context(format!("opening {}", path.display()), e);
    let reader = File::open(path).map_err(ctx)?;
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
            Ok((
                OpenOptions::new().write(true).open(path).map_err(ctx)?,
                reader,
                false,
            ))
        }
        Err(e) => Err(ctx(e)),
    }
}

/// Writes whole blocks at file offset `offset` of segment `number` in `dir`. A file system that
/// opened the file with `O_DIRECT` may still refuse the alignment (EINVAL): then the file is
/// opened again without it, for good, and the caller's fdatasync takes over from `O_DSYNC`. (The
/// path is only built then, or for an error: this runs on every synced append.)
fn write_blocks(
    file: &mut File,
    direct: &mut bool,
    dir: &Path,
    number: u64,
    blocks: &[u8],
    offset: u64,
) -> Result<(), ConsensusError> {
    let ctx = |e: io::Error| {
        io_context(
            format!(
                "writing log segment {} at byte {offset}",
                dir.join(segment_name(number)).display()
            ),
            e,
        )
    };
    match file.write_all_at(blocks, offset) {
        Err(e) if *direct && e.raw_os_error() == Some(libc::EINVAL) => {
            let path = dir.join(segment_name(number));
            tracing::warn!(
                path = %path.display(),
                "an O_DIRECT write was refused ({e}): log segments are written through the page \
                 cache from now on"
            );
            *file = OpenOptions::new().write(true).open(path).map_err(ctx)?;
            *direct = false;
            file.write_all_at(blocks, offset).map_err(ctx)
        }
        r => r.map_err(ctx),
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

    /// Records as the tests see them: sequence number and payload.
    type Records = Vec<(u64, Vec<u8>)>;

    /// Every record `scan` takes, and the torn write it finds; or its error.
    fn scanned(dir: &Path) -> Result<(Records, Option<Torn>), String> {
        let mut out = Vec::new();
        let s = scan(dir, 0, |at, payload| {
            out.push((at.seq, payload.to_vec()));
            Ok(())
        })
        .map_err(|e| e.to_string())?;
        Ok((out, s.torn))
    }

    fn start(dir: &Path, next_seq: u64) -> Segments {
        Segments::start(dir, next_seq, &[], SEGMENT_BYTES).unwrap()
    }

    fn found(dir: &Path) -> Vec<Found> {
        scan(dir, 0, |_, _| Ok(())).unwrap().found
    }

    /// A closed segment holding records 1 and 2, of 100 bytes each (120 with their headers); its
    /// path.
    fn two_records(dir: &Path) -> PathBuf {
        let mut s = start(dir, 1);
        s.append(&[1; 100], true).unwrap();
        s.append(&[2; 100], true).unwrap();
        s.current_path()
    }

    fn write_at(path: &Path, at: u64, bytes: &[u8]) {
        let f = OpenOptions::new().write(true).open(path).unwrap();
        f.write_all_at(bytes, at).unwrap();
    }

    fn cut(path: &Path, len: u64) {
        OpenOptions::new()
            .write(true)
            .open(path)
            .unwrap()
            .set_len(len)
            .unwrap();
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
        let mut s = Segments::start(dir.path(), 13, &found(dir.path()), SEGMENT_BYTES).unwrap();
        s.append(b"y", true).unwrap();
        drop(s);
        let err = scan(dir.path(), 0, |_, _| Ok(())).unwrap_err().to_string();
        assert!(
            err.contains("first record is 13 where 11 was expected"),
            "{err}"
        );
        assert!(scan(dir.path(), 11, |_, _| Ok(())).is_err());
        // Records 11 and 12 are covered: the scan goes on past them.
        let mut seqs = Vec::new();
        let got = scan(dir.path(), 12, |at, _| {
            seqs.push(at.seq);
            Ok(())
        })
        .unwrap();
        assert_eq!(seqs, [10, 13]);
        let v2 = |number, last| Found {
            number,
            last_seq: Some(last),
            format: Format::V2,
        };
        assert_eq!(got.found, [v2(1, 10), v2(2, 13)]);
        assert_eq!(got.torn, None);
    }

    /// A segment is sized when it is created, so a file shorter than that was cut, and the
    /// records past the cut (a vote among them, perhaps) are gone. It refuses, wherever the cut
    /// falls: inside a record, on a record's end, on a block's end, inside the header.
    #[test]
    fn a_segment_cut_short_refuses_wherever_the_cut_falls() {
        let dir = tempfile::tempdir().unwrap();
        let path = two_records(dir.path());
        let full = fs::read(&path).unwrap();
        let second_end = phys(240);
        for len in [
            second_end - 7,
            second_end,
            phys(120) + 5,
            RECORDS_AT + SECTOR as u64,
            RECORDS_AT + ALIGN as u64,
            RECORDS_AT,
            SEGMENT_BYTES - SECTOR as u64,
            100,
            5,
        ] {
            fs::write(&path, &full).unwrap();
            cut(&path, len);
            let err = scanned(dir.path()).expect_err(&format!("cut to {len}"));
            assert!(
                err.contains("cut short") || err.contains("checksum fails"),
                "{len}: {err}"
            );
            assert!(err.contains("paddock repair"), "{len}: {err}");
        }
        // Grown is no better: the size is not the one the segment was made with.
        fs::write(&path, &full).unwrap();
        cut(&path, SEGMENT_BYTES + ALIGN as u64);
        assert!(scanned(dir.path()).is_err());
        // A file of no bytes at all is a segment whose creation a crash cut short before its
        // blocks were allocated: it holds nothing (the store checks the segment its checkpoint
        // names is not one).
        cut(&path, 0);
        assert_eq!(scanned(dir.path()).unwrap(), (vec![], None));
    }

    #[test]
    fn a_damaged_record_refuses_whether_header_or_payload() {
        for at in [3u64, 14, 60, 119] {
            let dir = tempfile::tempdir().unwrap();
            let path = two_records(dir.path());
            let offset = phys(120 + at);
            let mut byte = [0u8];
            File::open(&path)
                .unwrap()
                .read_exact_at(&mut byte, offset)
                .unwrap();
            write_at(&path, offset, &[byte[0] ^ 0x10]);
            let err = scanned(dir.path()).unwrap_err();
            assert!(
                err.contains(&format!("at byte {}", RECORDS_AT)),
                "{at}: {err}"
            );
            assert!(err.contains("fails its checksum"), "{at}: {err}");
        }
    }

    #[test]
    fn a_header_naming_another_segment_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let path = two_records(dir.path());
        fs::rename(&path, dir.path().join(segment_name(7))).unwrap();
        let err = scanned(dir.path()).unwrap_err();
        assert!(err.contains("names segment 1"), "{err}");
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
        let mut s = Segments::start(dir.path(), 4, &found(dir.path()), SEGMENT_BYTES).unwrap();
        s.append(b"four", true).unwrap();
        let big = vec![9u8; SEGMENT_BYTES as usize];
        assert!(s.is_full_for(big.len()));
        assert!(s.append(&big, true).is_err());
        s.rotate(big.len()).unwrap();
        s.append(&big, true).unwrap();
        let at_big = HEADER as u64;
        assert_eq!(s.read(s.current(), at_big, big.len()).unwrap(), big);
        drop(s);
        let back = payloads(dir.path(), 4);
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].0, 5);
        assert_eq!(back[0].1, big);
    }

    /// Records of exactly one block's bytes each: every one ends on a block's end.
    fn block(b: u8) -> Vec<u8> {
        vec![b; BLOCK_BODY as usize - HEADER]
    }

    #[test]
    fn a_pruned_segment_is_written_over_and_its_old_records_are_never_read() {
        use std::os::unix::fs::MetadataExt;
        const SMALL: u64 = 64 << 10;
        let dir = tempfile::tempdir().unwrap();
        let mut s = Segments::start(dir.path(), 1, &[], SMALL).unwrap();
        for i in 0..15u8 {
            s.append(&block(i), true).unwrap();
        }
        let first_inode = fs::metadata(s.current_path()).unwrap().ino();
        s.rotate(0).unwrap();
        s.append(&block(15), true).unwrap();
        // Segment 1 is pruned: kept as a spare, not deleted, and no longer a segment.
        assert_eq!(s.prune(2, 15).unwrap(), 1);
        assert_eq!(list(dir.path()).unwrap().len(), 1);
        assert_eq!(list_with(dir.path(), SPARE_SUFFIX).unwrap().len(), 1);
        s.rotate(0).unwrap();
        assert_eq!(s.current(), 3);
        assert_eq!(fs::metadata(s.current_path()).unwrap().ino(), first_inode);
        assert!(list_with(dir.path(), SPARE_SUFFIX).unwrap().is_empty());
        // Before any record, the reused segment reads as empty, not as its old records.
        let (back, torn) = scanned(dir.path()).unwrap();
        assert_eq!(back.last().unwrap().0, 16);
        assert_eq!(torn, None);
        // Its blocks are all written already: no blank sectors are written ahead.
        assert_eq!(s.blank_to, SMALL);
        s.append(&block(17), true).unwrap();
        s.append(&block(18), true).unwrap();
        // The log ends on a block's end; the old record in the next block is not read.
        let seqs: Vec<u64> = payloads(dir.path(), 0)
            .iter()
            .map(|(seq, _)| *seq)
            .collect();
        assert_eq!(seqs, vec![16, 17, 18]);
        // A record that ends inside a block, and an unsynced one written with the next.
        s.append(b"hint", false).unwrap();
        s.append(&[19; 100], true).unwrap();
        drop(s);
        let back = payloads(dir.path(), 0);
        let seqs: Vec<u64> = back.iter().map(|(seq, _)| *seq).collect();
        assert_eq!(seqs, vec![16, 17, 18, 19, 20]);
        assert_eq!(back[1].1, block(17));
        assert_eq!(back[3].1, b"hint");
        assert_eq!(back[4].1, vec![19; 100]);
        // A new start takes the next spare for its first segment: segment 2 pruned after the
        // restart is reused by the start after that.
        let mut s = Segments::start(dir.path(), 21, &found(dir.path()), SMALL).unwrap();
        assert_eq!(s.prune(3, 20).unwrap(), 1);
        s.append(b"after", true).unwrap();
        drop(s);
        let s = Segments::start(dir.path(), 22, &found(dir.path()), SMALL).unwrap();
        assert_eq!(s.current(), 5);
        assert!(list_with(dir.path(), SPARE_SUFFIX).unwrap().is_empty());
        drop(s);
        let back = payloads(dir.path(), 0);
        let seqs: Vec<u64> = back.iter().map(|(seq, _)| *seq).collect();
        assert_eq!(seqs, vec![17, 18, 19, 20, 21]);
    }

    #[test]
    fn spares_are_bounded_whole_and_only_of_the_segment_size() {
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
        let s = Segments::start(dir.path(), seq + 1, &found(dir.path()), 2 * SMALL).unwrap();
        drop(s);
        assert!(list_with(dir.path(), SPARE_SUFFIX).unwrap().is_empty());
    }

    /// A segment whose blocks were not all written yet (a 2 MB one closed after its first
    /// megabyte of blank sectors) is deleted when pruned, not kept as a spare: a spare's old
    /// sectors must all be stamped (module docs, "invariant").
    #[test]
    fn only_a_segment_written_whole_becomes_a_spare() {
        const TWO_MB: u64 = 2 << 20;
        let dir = tempfile::tempdir().unwrap();
        let mut s = Segments::start(dir.path(), 1, &[], TWO_MB).unwrap();
        s.append(b"a", true).unwrap();
        assert!(s.blank_to < TWO_MB);
        s.rotate(0).unwrap();
        s.append(b"b", true).unwrap();
        assert_eq!(s.prune(2, 1).unwrap(), 1);
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
    fn blank_sectors_are_written_ahead_of_the_records() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = start(dir.path(), 1);
        let path = s.current_path();
        // Created: allocated whole, the header and the first megabyte of blank sectors written.
        use std::os::unix::fs::MetadataExt;
        assert!(fs::metadata(&path).unwrap().blocks() * 512 >= SEGMENT_BYTES);
        assert_eq!(s.blank_to, RECORDS_AT + ZERO_AHEAD);
        let bytes = fs::read(&path).unwrap();
        let kinds: Vec<Sector> = bytes.chunks(SECTOR).map(classify).collect();
        let stamped = (RECORDS_AT + ZERO_AHEAD) as usize / SECTOR;
        assert!(kinds[..stamped].iter().all(|k| *k == Sector::Stamped(0)));
        assert!(kinds[stamped..].iter().all(|k| *k == Sector::Zero));
        s.append(&[1; 100], true).unwrap();
        // Records within the blank megabyte write nothing ahead.
        for _ in 0..100 {
            s.append(&[2; 100], true).unwrap();
        }
        assert_eq!(s.blank_to, RECORDS_AT + ZERO_AHEAD);
        // Past it, the next megabyte, from where the blank sectors ended.
        s.append(&vec![3; ZERO_AHEAD as usize], true).unwrap();
        assert!(s.blank_to >= phys(s.offset) + ZERO_AHEAD);
        let bytes = fs::read(&path).unwrap();
        let to = s.blank_to as usize / SECTOR;
        assert!(bytes[..to * SECTOR]
            .chunks(SECTOR)
            .all(|c| matches!(classify(c), Sector::Stamped(_))));
        assert!(bytes[to * SECTOR..]
            .chunks(SECTOR)
            .all(|c| classify(c) == Sector::Zero));
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
        let sizes = [
            0,
            1,
            7,
            100,
            BODY - HEADER,
            BLOCK_BODY as usize - HEADER,
            ALIGN,
            3 * ALIGN + 5,
        ];
        for i in 0..600u64 {
            let len = sizes[(i % sizes.len() as u64) as usize];
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
        let s = Segments::start(dir.path(), 2, &found(dir.path()), SEGMENT_BYTES).unwrap();
        assert_eq!(
            s.current_path().file_name().unwrap().to_str().unwrap(),
            "00000000000000000002.seg"
        );
        assert_eq!(list(dir.path()).unwrap().len(), 2);
        assert_eq!(s.read(1, HEADER as u64, 1).unwrap(), b"a");
    }

    // ---- Version 1 (paddock before Dec 2026) ----

    /// Writes a version-1 segment: the records from offset 0, then zeros to `len`.
    fn write_v1(path: &Path, records: &[(u64, &[u8])], len: u64) {
        let mut bytes = Vec::new();
        for (seq, payload) in records {
            let l = payload.len() as u32;
            bytes.extend_from_slice(&l.to_le_bytes());
            bytes.extend_from_slice(&seq.to_le_bytes());
            bytes.extend_from_slice(&header_crc(l, *seq).to_le_bytes());
            bytes.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
            bytes.extend_from_slice(payload);
        }
        bytes.resize(len as usize, 0);
        fs::write(path, bytes).unwrap();
    }

    #[test]
    fn version_1_segments_are_read_and_followed_by_version_2_ones() {
        let dir = tempfile::tempdir().unwrap();
        write_v1(
            &dir.path().join(segment_name(1)),
            &[(1, b"one"), (2, b"two")],
            64 << 10,
        );
        write_v1(
            &dir.path().join(segment_name(2)),
            &[(3, b"three")],
            64 << 10,
        );
        // A spare left by version 1 carries no stamps: deleted, never written over.
        write_v1(&dir.path().join(spare_name(0)), &[], 64 << 10);
        let got = found(dir.path());
        assert_eq!(got[0].format, Format::V1);
        let mut s = Segments::start(dir.path(), 4, &got, 64 << 10).unwrap();
        assert!(list_with(dir.path(), SPARE_SUFFIX).unwrap().is_empty());
        assert_eq!(s.read(1, HEADER as u64 * 2 + 3, 3).unwrap(), b"two");
        s.append(b"four", true).unwrap();
        drop(s);
        assert_eq!(
            payloads(dir.path(), 0),
            vec![
                (1, b"one".to_vec()),
                (2, b"two".to_vec()),
                (3, b"three".to_vec()),
                (4, b"four".to_vec())
            ]
        );
        // Pruned, a version-1 segment is deleted, not kept as a spare.
        let mut s = Segments::start(dir.path(), 5, &found(dir.path()), 64 << 10).unwrap();
        assert_eq!(s.prune(4, 4).unwrap(), 3);
        assert_eq!(
            list_with(dir.path(), SPARE_SUFFIX).unwrap(),
            [(3, dir.path().join(spare_name(3)))]
        );
        drop(s);
        assert_eq!(payloads(dir.path(), 0), vec![]);
    }

    #[test]
    fn a_version_1_segment_cut_short_or_damaged_refuses() {
        for damage in ["cut-payload", "cut-header", "crc", "gap"] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(segment_name(1));
            let second: &[(u64, &[u8])] = if damage == "gap" {
                &[(1, b"one"), (3, b"three")]
            } else {
                &[(1, b"one"), (2, b"two")]
            };
            write_v1(&path, second, 64 << 10);
            match damage {
                "cut-payload" => cut(&path, 23 + 22),
                "cut-header" => cut(&path, 23 + 5),
                "crc" => write_at(&path, 23 + 21, b"T"),
                _ => {}
            }
            let err = scanned(dir.path()).unwrap_err();
            assert!(err.contains("at byte 23"), "{damage}: {err}");
        }
        // Filled to within a header of its end, a version-1 segment ends there cleanly.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(segment_name(1));
        write_v1(&path, &[(1, &[7; 4096 - 20 - 10])], 4096);
        assert_eq!(scanned(dir.path()).unwrap().0.len(), 1);
    }

    // ---- Torn writes: every way a write can be cut short at sector granularity ----

    /// A tiny deterministic generator for the matrix's random sector subsets.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
    }

    /// The subsets of `n` sectors a torn write is tried with: all of them for a few sectors;
    /// otherwise each sector alone missing and alone present, every prefix and suffix, and
    /// random subsets.
    fn subsets(n: usize, rng: &mut Lcg) -> Vec<Vec<bool>> {
        if n <= 10 {
            return (0..1u32 << n)
                .map(|m| (0..n).map(|i| m & (1 << i) != 0).collect())
                .collect();
        }
        let mut out = Vec::new();
        for i in 0..n {
            out.push((0..n).map(|j| j != i).collect());
            out.push((0..n).map(|j| j == i).collect());
            out.push((0..n).map(|j| j < i).collect());
            out.push((0..n).map(|j| j >= i).collect());
        }
        for _ in 0..300 {
            out.push((0..n).map(|_| rng.next().is_multiple_of(2)).collect());
        }
        out
    }

    /// One write cut short every way `subsets` gives, in the newest segment of `dir` (at
    /// `path`), whose file held `before` and holds `after` once the write returned. Every image
    /// opens with every record written before (`kept`) and a prefix of the write's (`new`),
    /// never a foreign one; a torn write is reported only with the write's own records, and
    /// once dropped the segment reads the same with a clean end. The complete image, damaged in
    /// any sector that holds records, refuses (or, past the last record, opens with all).
    fn torn_matrix(
        path: &Path,
        before: &[u8],
        after: &[u8],
        kept: &[(u64, Vec<u8>)],
        new: &[(u64, Vec<u8>)],
        rng: &mut Lcg,
    ) -> usize {
        let dir = path.parent().unwrap();
        let differ: Vec<usize> = (0..before.len() / SECTOR)
            .filter(|&i| {
                before[i * SECTOR..(i + 1) * SECTOR] != after[i * SECTOR..(i + 1) * SECTOR]
            })
            .collect();
        assert!(!differ.is_empty());
        let mut images = 0;
        for subset in subsets(differ.len(), rng) {
            let mut image = before.to_vec();
            for (k, &i) in differ.iter().enumerate() {
                if subset[k] {
                    image[i * SECTOR..(i + 1) * SECTOR]
                        .copy_from_slice(&after[i * SECTOR..(i + 1) * SECTOR]);
                }
            }
            fs::write(path, &image).unwrap();
            let (got, torn) = scanned(dir).unwrap_or_else(|e| panic!("{subset:?}: {e}"));
            assert!(got.len() >= kept.len(), "{subset:?}: fewer records");
            assert_eq!(&got[..kept.len()], kept, "{subset:?}");
            let taken = got.len() - kept.len();
            assert!(taken <= new.len(), "{subset:?}");
            assert_eq!(
                &got[kept.len()..],
                &new[..taken],
                "{subset:?}: a foreign record"
            );
            if subset.iter().all(|&b| b) {
                assert_eq!(torn, None);
                assert_eq!(taken, new.len());
            }
            if let Some(t) = &torn {
                assert_eq!(t.first_seq, new[taken].0, "{subset:?}");
                assert_eq!(t.last_seq, new.last().unwrap().0, "{subset:?}");
                drop_torn_tail(t).unwrap();
                assert_eq!(
                    scanned(dir).unwrap(),
                    (got, None),
                    "{subset:?}: after the drop"
                );
            }
            images += 1;
        }
        // Damage to the complete image: a flipped bit or a sector of zeros in any sector that
        // holds records, and in the zeros after them.
        let records_end =
            phys(scan_end(dir, path, after).expect("the complete image ends cleanly"));
        for i in (RECORDS_AT as usize / SECTOR)..(records_end as usize).div_ceil(SECTOR) + 1 {
            for zero in [false, true] {
                let mut image = after.to_vec();
                let sector = &mut image[i * SECTOR..(i + 1) * SECTOR];
                if zero {
                    sector.fill(0);
                } else {
                    sector[(i * 7) % SECTOR] ^= 0x04;
                }
                fs::write(path, &image).unwrap();
                match scanned(dir) {
                    Err(e) => assert!(e.contains("paddock repair"), "{e}"),
                    Ok((got, torn)) => {
                        assert_eq!(got.len(), kept.len() + new.len(), "sector {i} zero={zero}");
                        assert_eq!(torn, None);
                    }
                }
                images += 1;
            }
        }
        fs::write(path, after).unwrap();
        images
    }

    /// The record offset where `image`'s records end.
    fn scan_end(dir: &Path, path: &Path, image: &[u8]) -> Option<u64> {
        fs::write(path, image).unwrap();
        let number = path.file_stem().unwrap().to_str().unwrap().parse().unwrap();
        let _ = dir;
        let read = read_segment(
            path,
            number,
            Expect {
                prev: None,
                covered: 0,
            },
            &mut |_, _| Ok(()),
        )
        .unwrap();
        match read.end {
            End::Clean { offset, .. } => {
                let sector = offset / SECTOR as u64;
                Some((sector - RECORDS_AT / SECTOR as u64) * BODY as u64 + offset % SECTOR as u64)
            }
            _ => None,
        }
    }

    /// Writes of several shapes into `s` (records ending inside a block, on a block's end, across
    /// several blocks, an unsynced record written with the synced one), each cut short every
    /// way; the images tried.
    fn every_shape(s: &mut Segments, rng: &mut Lcg) -> usize {
        let path = s.current_path();
        let dir = path.parent().unwrap().to_path_buf();
        let mut kept: Vec<(u64, Vec<u8>)> = scanned(&dir).unwrap().0;
        let mut images = 0;
        let mut n = 0u8;
        let mut shapes: Vec<Vec<usize>> = vec![
            vec![100],
            vec![700, 300],
            vec![9000],
            vec![0],
            vec![BODY - HEADER],
            vec![300, 4500, 2000],
        ];
        // One that ends exactly on a block's end: its zeros go in the next block.
        shapes.push(vec![usize::MAX]);
        for shape in shapes {
            let before = fs::read(&path).unwrap();
            let mut new = Vec::new();
            for (k, &len) in shape.iter().enumerate() {
                let len = if len == usize::MAX {
                    let used = (s.offset % BLOCK_BODY) as usize;
                    (BLOCK_BODY as usize - used + BLOCK_BODY as usize - HEADER)
                        % BLOCK_BODY as usize
                } else {
                    len
                };
                n = n.wrapping_add(1);
                let payload: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(n) | 1).collect();
                let seq = s.append(&payload, k + 1 == shape.len()).unwrap();
                new.push((seq, payload));
            }
            let after = fs::read(&path).unwrap();
            images += torn_matrix(&path, &before, &after, &kept, &new, rng);
            kept.extend(new);
        }
        images
    }

    #[test]
    fn a_torn_write_in_a_new_segment_drops_only_its_own_records() {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Lcg(1);
        let mut s = Segments::start(dir.path(), 1, &[], 64 << 10).unwrap();
        // Cut short as the segment's first write, then after records.
        let images = every_shape(&mut s, &mut rng);
        eprintln!("{images} images of torn and damaged writes in a new segment");
        assert!(images > 2000, "{images}");
    }

    #[test]
    fn a_torn_write_over_a_spare_never_shows_its_old_records() {
        const SMALL: u64 = 64 << 10;
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Lcg(2);
        let mut s = Segments::start(dir.path(), 1, &[], SMALL).unwrap();
        // Fill the first segment with records whose bytes could pass for the new ones'.
        let mut seq = 0;
        while !s.is_full_for(1000) {
            seq = s.append(&[0x5a; 1000], seq % 3 == 0).unwrap();
        }
        s.rotate(0).unwrap();
        seq = s.append(b"second", true).unwrap();
        assert_eq!(s.prune(2, seq - 1).unwrap(), 1);
        s.rotate(0).unwrap();
        assert_eq!(s.blank_to, SMALL, "a spare written over");
        s.append(b"first over the spare", true).unwrap();
        let images = every_shape(&mut s, &mut rng);
        eprintln!("{images} images of torn and damaged writes over a spare");
        assert!(images > 2000, "{images}");
    }

    /// A crash while blank sectors were written ahead (before any record reached them): some of
    /// them stamped, some still zeros. The records end where they did.
    #[test]
    fn a_torn_write_of_blank_sectors_leaves_the_log_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Segments::start(dir.path(), 1, &[], 4 << 20).unwrap();
        s.append(&vec![1; 900_000], true).unwrap();
        let path = s.current_path();
        let blank_to = s.blank_to;
        drop(s);
        // Half the next megabyte's blocks, every other one.
        let blank = {
            let mut b = vec![0u8; ALIGN];
            for sector in b.chunks_mut(SECTOR) {
                seal(sector, BLANK_STAMP);
            }
            b
        };
        for k in (0..256u64).step_by(2) {
            write_at(&path, blank_to + k * ALIGN as u64, &blank);
        }
        let (got, torn) = scanned(dir.path()).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(torn, None);
    }

    /// Two writes lost after the end (the first one returned: its records were acknowledged)
    /// is damage, not a torn write.
    #[test]
    fn sectors_of_two_later_writes_after_the_end_refuse() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = start(dir.path(), 1);
        s.append(&[1; 100], true).unwrap();
        let path = s.current_path();
        let one = fs::read(&path).unwrap();
        // Record 2 in blocks 1 and 2, record 3 in blocks 2 and 3.
        s.append(&[2; 6000], true).unwrap();
        s.append(&[3; 3000], true).unwrap();
        drop(s);
        // Block 2 goes back to what it held after record 1 (blank sectors), while record 3's
        // last block stays: a device that lost part of writes that returned.
        let mut image = fs::read(&path).unwrap();
        let b = RECORDS_AT as usize + ALIGN;
        image[b..b + ALIGN].copy_from_slice(&one[b..b + ALIGN]);
        fs::write(&path, &image).unwrap();
        let err = match scanned(dir.path()) {
            Err(e) => e,
            Ok((got, torn)) => panic!("opened with {} records, torn {torn:?}", got.len()),
        };
        assert!(err.contains("two later writes"), "{err}");
    }

    /// A write cut short is only ever at the end of the newest segment.
    #[test]
    fn a_torn_write_in_an_older_segment_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = start(dir.path(), 1);
        s.append(&[1; 100], true).unwrap();
        let path = s.current_path();
        let before = fs::read(&path).unwrap();
        s.append(&[2; 9000], true).unwrap();
        let mut image = fs::read(&path).unwrap();
        // Its second block lost.
        let b = RECORDS_AT as usize + ALIGN;
        image[b..b + ALIGN].copy_from_slice(&before[b..b + ALIGN]);
        s.rotate(0).unwrap();
        s.append(b"later", true).unwrap();
        drop(s);
        fs::write(&path, &image).unwrap();
        let err = scanned(dir.path()).unwrap_err();
        assert!(err.contains("not the newest"), "{err}");
    }
}
