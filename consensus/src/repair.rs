//! What `paddock repair` finds in a member's raft directory and what it may do there
//! (`server/src/repair_cmd.rs` prints it and takes the operator's word).
//!
//! `inspect` changes nothing: RocksDB is opened read-only, every segment is read (past damage too,
//! to say what a cut would lose), every snapshot file checked, and the start's own checks run
//! (`storage::dry_open`), so the verdict is the one a start would reach. `cut` is the one change
//! it makes on the log, and only when told: a write cut short at the end of the log is dropped
//! (as a start drops it), or the log is cut where the damage starts: the damaged segment
//! rewritten from there to its end (`segments::cut_after_good_records`), the segments after it set
//! aside under a `.damaged-<time>` name, and the checkpoint told which segment is now the newest.
//! A cut is refused when records the checkpoint already covers would go: the store's metadata
//! would then name entries that are gone.

use std::path::{Path, PathBuf};

use raft::eraftpb::HardState;

use crate::record;
use crate::segments::{self, End, Expect, Format, SegmentRead, Torn};
use crate::snapshot_file;
use crate::storage;
use crate::ConsensusError;

/// What the checkpoint in RocksDB says.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// The last log record it covers.
    pub seq: u64,
    /// The segment being written when it was taken (checkpoints from before Dec 2026: none).
    pub segment: Option<u64>,
    pub hard_state: HardState,
    pub first_index: u64,
    pub last_index: u64,
    pub snapshot_index: u64,
    pub voters: Vec<u64>,
    pub learners: Vec<u64>,
}

/// One segment as read, with what its records hold.
#[derive(Debug, Clone)]
pub struct SegmentReport {
    pub read: SegmentRead,
    /// The first and last entry index its readable records append.
    pub entries: Option<(u64, u64)>,
    /// The hard states its readable records set (term, vote, commit).
    pub hard_states: Vec<HardState>,
}

/// What a cut at the damage would drop.
#[derive(Debug, Clone)]
pub struct Damage {
    /// Index into `Inspection::segments` of the damaged one.
    pub segment: usize,
    pub path: PathBuf,
    pub offset: u64,
    pub why: String,
    /// The first record a cut drops (the one after the last good record).
    pub first_lost_seq: u64,
    /// The segment files after the damaged one (all dropped by a cut).
    pub later_segments: Vec<PathBuf>,
    /// Entries and hard states in the readable records a cut drops (those in the damaged part
    /// itself cannot be read).
    pub lost_entries: Option<(u64, u64)>,
    pub lost_hard_states: Vec<HardState>,
    /// Readable records a cut drops, besides the unreadable rest of the damaged segment.
    pub lost_readable_records: u64,
    /// Format 1: the damage is a failing last record of the newest segment with nothing after
    /// it, which is most likely a write a power loss cut short, but the format cannot prove it.
    pub looks_torn: bool,
    /// Every record a cut drops comes after the checkpoint: the store stays consistent.
    pub after_checkpoint: bool,
}

/// What a start would do.
#[derive(Debug)]
pub enum Verdict {
    /// It opens.
    Opens,
    /// It opens, dropping a write cut short (never acknowledged).
    OpensDroppingTorn(Torn),
    /// It refuses, with this error.
    Refuses(String),
}

/// Everything `inspect` found.
#[derive(Debug)]
pub struct Inspection {
    pub db_dir: PathBuf,
    pub checkpoint: Checkpoint,
    pub segments: Vec<SegmentReport>,
    pub spares: usize,
    /// Snapshot files, newest first: their index and whether they check.
    pub snapshots: Vec<(u64, Result<(), String>)>,
    pub verdict: Verdict,
    /// The first damage in the segments, and what a cut there drops.
    pub damage: Option<Damage>,
}

/// Reads a member's store (`raft_dir/raftdb`) and snapshots (`raft_dir/snapshots`) without
/// changing anything. `Ok(None)`: there is no store.
pub fn inspect(raft_dir: &Path) -> Result<Option<Inspection>, ConsensusError> {
    let db_dir = raft_dir.join("raftdb");
    if !db_dir.join("CURRENT").exists() {
        return Ok(None);
    }
    let dry = storage::dry_open(&db_dir)?;
    let checkpoint = Checkpoint {
        seq: dry.checkpoint_seq,
        segment: dry.checkpoint_segment,
        hard_state: dry.hard_state.clone(),
        first_index: dry.first_index,
        last_index: dry.last_index,
        snapshot_index: dry.snapshot_index,
        voters: dry.voters.clone(),
        learners: dry.learners.clone(),
    };
    let log_dir = db_dir.join("log");
    let mut segments_read = Vec::new();
    let mut prev = None;
    let mut damage_at = None;
    let files = segments::list(&log_dir)?;
    for (i, (number, path)) in files.iter().enumerate() {
        let mut entries: Option<(u64, u64)> = None;
        let mut hard_states = Vec::new();
        let mut spans = Vec::new();
        let expect = Expect {
            prev: if damage_at.is_some() { None } else { prev },
            covered: dry.checkpoint_seq,
        };
        let read = segments::read_segment(path, *number, expect, &mut |_, payload| {
            // A record that does not decode is the start's to refuse; here it only goes
            // uncounted.
            if let Ok(change) = record::decode(payload, &mut spans) {
                if let (Some(f), Some(l)) = (spans.first(), spans.last()) {
                    entries = Some((entries.map_or(f.index, |e| e.0), l.index));
                }
                if let Some(hs) = change.hard_state {
                    hard_states.push(hs);
                }
            }
            Ok(())
        })?;
        if damage_at.is_none() {
            if read.last_seq.is_some() {
                prev = read.last_seq;
            }
            if matches!(read.end, End::Damaged { .. })
                || (matches!(read.end, End::Torn(_)) && i + 1 < files.len())
            {
                damage_at = Some(i);
            }
        }
        segments_read.push(SegmentReport {
            read,
            entries,
            hard_states,
        });
    }
    let damage = damage_at.map(|d| damage_report(&segments_read, d, prev, dry.checkpoint_seq));
    let verdict = match dry.verdict {
        Ok(None) => Verdict::Opens,
        Ok(Some(torn)) => Verdict::OpensDroppingTorn(torn),
        Err(e) => Verdict::Refuses(e.to_string()),
    };
    let snap_dir = raft_dir.join("snapshots");
    let mut snapshots = Vec::new();
    for index in snapshot_file::list(&snap_dir)?.into_iter().rev() {
        let checked = match snapshot_file::scan(&snap_dir, index) {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err("gone while read".to_string()),
            Err(e) => Err(e.to_string()),
        };
        snapshots.push((index, checked));
    }
    let spares = std::fs::read_dir(&log_dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "spare"))
                .count()
        })
        .unwrap_or(0);
    Ok(Some(Inspection {
        db_dir,
        checkpoint,
        segments: segments_read,
        spares,
        snapshots,
        verdict,
        damage,
    }))
}

/// What a cut at segment `d`'s damage drops. `prev`: the last good record before the damage.
fn damage_report(segs: &[SegmentReport], d: usize, prev: Option<u64>, covered: u64) -> Damage {
    let read = &segs[d].read;
    let (offset, why) = match &read.end {
        End::Damaged { offset, why } => (*offset, why.clone()),
        End::Torn(t) => (
            t.offset,
            format!(
                "a write of records {}..={} cut short in a segment that is not the newest",
                t.first_seq, t.last_seq
            ),
        ),
        End::Clean { offset, .. } => (*offset, String::new()),
    };
    let first_lost_seq = prev.map_or(read.first_seq.unwrap_or(1), |p| p + 1);
    let later = &segs[d + 1..];
    let mut lost_entries: Option<(u64, u64)> = None;
    let mut lost_hard_states = Vec::new();
    let mut lost_readable_records = 0;
    for s in later {
        lost_readable_records += s.read.records;
        if let Some((f, l)) = s.entries {
            lost_entries = Some((lost_entries.map_or(f, |e| e.0), l));
        }
        lost_hard_states.extend(s.hard_states.iter().cloned());
    }
    let looks_torn = read.format == Format::V1
        && later.iter().all(|s| s.read.records == 0)
        && (why.contains("checksum fails") || why.contains("cut short"));
    Damage {
        segment: d,
        path: read.path.clone(),
        offset,
        why,
        first_lost_seq,
        later_segments: later.iter().map(|s| s.read.path.clone()).collect(),
        lost_entries,
        lost_hard_states,
        lost_readable_records,
        looks_torn,
        after_checkpoint: first_lost_seq > covered,
    }
}

/// What `cut` did.
#[derive(Debug)]
pub enum Cut {
    /// A write cut short was dropped, as a start drops it.
    DroppedTorn(Torn),
    /// The log was cut at the damage: the segment cut, and the later segments set aside here.
    CutAtDamage {
        path: PathBuf,
        offset: u64,
        set_aside: Vec<PathBuf>,
    },
}

/// Drops what `inspect` found: a torn write at the end of the log, or everything from the first
/// damage on (module docs). Refused when a cut would drop records the checkpoint covers, or when
/// the store is open elsewhere (a running member).
pub fn cut(found: &Inspection) -> Result<Cut, ConsensusError> {
    let db = storage::open_for_repair(&found.db_dir)?;
    if let Some(damage) = &found.damage {
        if !damage.after_checkpoint {
            return Err(ConsensusError::Invalid(format!(
                "the damage in {} comes before the end of what the store's checkpoint covers \
                 (record {}): cutting the log there would leave the store's metadata naming \
                 entries that are gone, so it is not cut",
                damage.path.display(),
                found.checkpoint.seq
            )));
        }
        let read = &found.segments[damage.segment].read;
        segments::cut_after_good_records(read)?;
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut set_aside = Vec::new();
        for path in &damage.later_segments {
            let mut name = path.file_name().unwrap_or_default().to_os_string();
            name.push(format!(".damaged-{stamp}"));
            let to = path.with_file_name(name);
            std::fs::rename(path, &to).map_err(|e| {
                segments::io_context(format!("setting {} aside", path.display()), e)
            })?;
            set_aside.push(to);
        }
        if let Some(dir) = damage.path.parent() {
            segments::sync_dir(dir)?;
        }
        if found
            .checkpoint
            .segment
            .is_some_and(|named| named > read.number)
        {
            storage::set_checkpoint_segment(&db, read.number)?;
        }
        return Ok(Cut::CutAtDamage {
            path: damage.path.clone(),
            offset: damage.offset,
            set_aside,
        });
    }
    if let Verdict::OpensDroppingTorn(torn) = &found.verdict {
        segments::drop_torn_tail(torn)?;
        return Ok(Cut::DroppedTorn(torn.clone()));
    }
    Err(ConsensusError::Invalid(
        "nothing in the log segments to cut".into(),
    ))
}

/// Checks the store is not open elsewhere (RocksDB's lock), for a change outside the log such
/// as setting the whole raft directory aside.
pub fn check_not_running(raft_dir: &Path) -> Result<(), ConsensusError> {
    let db_dir = raft_dir.join("raftdb");
    if db_dir.join("CURRENT").exists() {
        drop(storage::open_for_repair(&db_dir)?);
    }
    Ok(())
}
