//! `paddock repair --data-dir DIR [--truncate | --rejoin]`: what is damaged in a stopped
//! member's raft log, what dropping it would lose, and whether a majority may count on the member
//! afterwards; it changes something only when told (consensus's `repair` module does the reading
//! and the cutting, ARCHITECTURE.md "The end of the log" has the rule).
//!
//! - Without a flag it is a dry run: RocksDB is opened read-only, nothing is written. Exit 0 when
//!   a start would open the log (a write cut short at its end is dropped by the start itself),
//!   1 when it would refuse, 2 when the directory cannot be read or the command is refused.
//! - `--truncate` drops a write cut short at the end of the log, or, on a standalone server, the
//!   log from its first damage on (the damaged segment rewritten from there, the segments after
//!   it set aside as `<name>.damaged-<time>`). A member of an ensemble is not cut at damage: what
//!   it loses may include entries it acknowledged and a vote it cast, and a member that forgot
//!   them would still count towards majorities; it rejoins instead.
//! - `--rejoin` sets an ensemble member's raft directory aside (`paddock.damaged-<time>`, beside
//!   it) so that the next `paddock serve` starts it empty: it asks its peers, joins without
//!   bootstrapping and does not vote until it holds an entry of its leader's term
//!   (ARCHITECTURE.md, "A member that forgot does not vote"), then catches up from the leader.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;
use consensus::repair::{self, Cut, Damage, Inspection, Verdict};
use consensus::segments::{End, Format};

use crate::identity::{Identity, Mode};

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Example: paddock repair --data-dir /var/lib/zookeeper\n\n\
Run it on a stopped server whose start was refused for a damaged log. Without --truncate or \
--rejoin nothing is changed.\n\
Exit status: 0 if the log opens (or was repaired), 1 if it is damaged, 2 on errors or a refused \
repair."
)]
pub struct RepairArgs {
    /// The server's dataDir (as in zoo.cfg or `paddock serve --data-dir`).
    #[arg(long, value_name = "DIR")]
    pub data_dir: PathBuf,

    /// The server's dataLogDir, if zoo.cfg sets one (the raft log is kept there then).
    #[arg(long, value_name = "DIR")]
    pub data_log_dir: Option<PathBuf>,

    /// Drop a write cut short at the end of the log or, on a standalone server, the log from its
    /// first damage on; the report says what that loses.
    #[arg(long, conflicts_with = "rejoin")]
    pub truncate: bool,

    /// Set an ensemble member's raft data aside, so that it rejoins its ensemble empty and
    /// catches up from the leader.
    #[arg(long)]
    pub rejoin: bool,
}

/// The member's raft directory: `paddock/` in dataLogDir, else in dataDir (as
/// `Config::raft_dir`).
pub fn raft_dir(args: &RepairArgs) -> PathBuf {
    args.data_log_dir
        .as_ref()
        .unwrap_or(&args.data_dir)
        .join("paddock")
}

/// A start refused for a damaged log says which command to run: the damage itself (file, offset)
/// is in the error's causes.
pub fn with_advice(
    e: anyhow::Error,
    data_dir: &Path,
    data_log_dir: Option<&Path>,
) -> anyhow::Error {
    let damaged = e.chain().any(|c| {
        matches!(
            c.downcast_ref::<consensus::ConsensusError>(),
            Some(consensus::ConsensusError::Corrupt(_))
        )
    });
    if !damaged {
        return e;
    }
    let args = RepairArgs {
        data_dir: data_dir.to_path_buf(),
        data_log_dir: data_log_dir.map(Path::to_path_buf),
        truncate: false,
        rejoin: false,
    };
    e.context(format!(
        "the raft log is damaged (below: the file and the offset): run `{}` to see what is \
         damaged, what dropping it would lose and what can be done",
        command_line(&args)
    ))
}

/// Runs the command; the process's exit status.
pub fn run(args: &RepairArgs) -> i32 {
    let dir = raft_dir(args);
    let identity = match Identity::read(&dir) {
        Ok(id) => id,
        Err(e) => {
            eprintln!("paddock repair: {e}");
            return 2;
        }
    };
    let found = match repair::inspect(&dir) {
        Ok(Some(found)) => found,
        Ok(None) => {
            println!("{}: no raft log here: nothing to repair", dir.display());
            return 0;
        }
        Err(e) => {
            eprintln!("paddock repair: {}: {e}", dir.display());
            return 2;
        }
    };
    let member = is_member(identity.as_ref(), &found);
    print!(
        "{}",
        render(&dir, identity.as_ref(), &found, &command_line(args))
    );
    if args.rejoin {
        return rejoin(&dir, member);
    }
    if args.truncate {
        return truncate(&found, member);
    }
    match (&found.verdict, &found.damage) {
        (Verdict::Refuses(_), _) | (_, Some(_)) => 1,
        _ => 0,
    }
}

/// Whether the data belongs to an ensemble member: its identity file says so, or (a data dir from
/// before identities) its membership lists more than one server.
fn is_member(identity: Option<&Identity>, found: &Inspection) -> bool {
    match identity {
        Some(id) => id.mode == Mode::Ensemble,
        None => found.checkpoint.voters.len() + found.checkpoint.learners.len() > 1,
    }
}

/// The command as the operator would type it again, for the advice.
fn command_line(args: &RepairArgs) -> String {
    let mut c = format!("paddock repair --data-dir {}", args.data_dir.display());
    if let Some(l) = &args.data_log_dir {
        let _ = write!(c, " --data-log-dir {}", l.display());
    }
    c
}

fn truncate(found: &Inspection, member: bool) -> i32 {
    if member && found.damage.is_some() {
        eprintln!(
            "paddock repair: refused: this is a member of an ensemble, and cutting its log at the \
             damage could make it count towards a majority without entries it acknowledged or a \
             vote it cast. Use --rejoin."
        );
        return 2;
    }
    match repair::cut(found) {
        Ok(Cut::DroppedTorn(t)) => {
            println!(
                "dropped the write cut short in {} at byte {} (records {}..={}); the log opens",
                t.path.display(),
                t.offset,
                t.first_seq,
                t.last_seq
            );
            0
        }
        Ok(Cut::CutAtDamage {
            path,
            offset,
            set_aside,
        }) => {
            println!("cut {} at byte {offset}", path.display());
            for p in set_aside {
                println!(
                    "set aside {} (delete it once the server serves what you expect)",
                    p.display()
                );
            }
            0
        }
        Err(e) => {
            eprintln!("paddock repair: refused: {e}");
            2
        }
    }
}

fn rejoin(dir: &Path, member: bool) -> i32 {
    if !member {
        eprintln!(
            "paddock repair: refused: --rejoin is for a member of an ensemble, which catches up \
             from its peers; this data belongs to a standalone server, whose log is the only copy \
             (see --truncate)"
        );
        return 2;
    }
    if let Err(e) = repair::check_not_running(dir) {
        eprintln!("paddock repair: refused: {e}");
        return 2;
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".damaged-{stamp}"));
    let aside = dir.with_file_name(name);
    let parent = dir.parent().unwrap_or(Path::new("."));
    let moved = std::fs::rename(dir, &aside)
        .and_then(|()| std::fs::File::open(parent).and_then(|d| d.sync_all()));
    match moved {
        Ok(()) => {
            println!(
                "set {} aside as {}. Start the member as usual: it asks its peers, joins empty, \
                 does not vote until it holds an entry of its leader's term, and catches up \
                 from the leader. Delete {} once it serves.",
                dir.display(),
                aside.display(),
                aside.display()
            );
            0
        }
        Err(e) => {
            eprintln!("paddock repair: setting {} aside: {e}", dir.display());
            2
        }
    }
}

/// The report: the checkpoint, each segment, the snapshots, the verdict and what can be done.
pub fn render(dir: &Path, identity: Option<&Identity>, found: &Inspection, cmd: &str) -> String {
    let mut out = String::new();
    let member = is_member(identity, found);
    let who = match identity {
        Some(id) if id.mode == Mode::Ensemble => {
            format!("member {} of ensemble {:016x}", id.member_id, id.cluster_id)
        }
        Some(_) => "a standalone server".to_string(),
        None if member => "an ensemble member (no identity file)".to_string(),
        None => "a standalone server (no identity file)".to_string(),
    };
    let _ = writeln!(out, "raft data: {} ({who})", dir.display());
    let c = &found.checkpoint;
    let _ = writeln!(
        out,
        "checkpoint: records up to {}, term {} vote {} commit {}, log {}..={}, snapshot {}{}",
        c.seq,
        c.hard_state.term,
        c.hard_state.vote,
        c.hard_state.commit,
        c.first_index,
        c.last_index,
        c.snapshot_index,
        c.segment
            .map(|s| format!(", newest segment {s}"))
            .unwrap_or_default()
    );
    let _ = writeln!(out, "segments ({} spare):", found.spares);
    for s in &found.segments {
        let r = &s.read;
        let name = r
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let records = match (r.first_seq, r.last_seq) {
            (Some(f), Some(l)) => format!("records {f}..={l}"),
            _ => "no records".into(),
        };
        let entries = s
            .entries
            .map(|(f, l)| format!(", entries {f}..={l}"))
            .unwrap_or_default();
        let end = match &r.end {
            End::Clean {
                offset,
                ragged: false,
            } => format!("ends at byte {offset}"),
            End::Clean {
                offset,
                ragged: true,
            } => format!("ends at byte {offset} (the zeros after the last record were cut short)"),
            End::Torn(t) => format!(
                "a write of records {}..={} cut short at byte {} (never acknowledged)",
                t.first_seq, t.last_seq, t.offset
            ),
            End::Damaged { offset, why } => format!("DAMAGED at byte {offset}: {why}"),
        };
        let format = match r.format {
            Format::V1 => "format 1",
            Format::V2 => "format 2",
        };
        let _ = writeln!(out, "  {name}  {format}  {records}{entries}  {end}");
    }
    if found.snapshots.is_empty() {
        let _ = writeln!(out, "snapshots: none");
    }
    for (index, checked) in &found.snapshots {
        match checked {
            Ok(()) => {
                let _ = writeln!(out, "snapshot {index}: checks");
            }
            Err(why) => {
                let _ = writeln!(
                    out,
                    "snapshot {index}: DAMAGED ({why}); a start skips it and falls back to an \
                     older one if the log reaches back to it"
                );
            }
        }
    }
    match (&found.verdict, &found.damage) {
        (Verdict::Opens, None) => {
            let _ = writeln!(out, "verdict: the log is whole; a start opens it.");
        }
        (Verdict::OpensDroppingTorn(t), None) => {
            let _ = writeln!(
                out,
                "verdict: a start opens the log and drops the write cut short at the end of {} \
                 (byte {}, records {}..={}): it never returned, so nothing in it was \
                 acknowledged, and every write that returned is before it. Nothing to do; \
                 `{cmd} --truncate` drops it now.",
                t.path.display(),
                t.offset,
                t.first_seq,
                t.last_seq
            );
        }
        (_, Some(d)) => render_damage(&mut out, d, member, cmd, c.hard_state.term),
        (Verdict::Refuses(why), None) => {
            let _ = writeln!(out, "verdict: a start refuses: {why}");
            let _ = writeln!(
                out,
                "The segments themselves read whole, so there is nothing to cut: {}",
                if member {
                    format!(
                        "rejoin the ensemble with `{cmd} --rejoin` (the member starts empty and \
                         catches up from the leader)."
                    )
                } else {
                    "this standalone server's log cannot be repaired in place: restore the data \
                     directory from a backup."
                        .to_string()
                }
            );
        }
    }
    out
}

fn render_damage(out: &mut String, d: &Damage, member: bool, cmd: &str, term: u64) {
    let _ = writeln!(
        out,
        "verdict: DAMAGED: {} at byte {}: {}. A start refuses.",
        d.path.display(),
        d.offset,
        d.why
    );
    let mut lost = format!(
        "what a cut there loses: the rest of that segment from record {} on (unreadable)",
        d.first_lost_seq
    );
    if !d.later_segments.is_empty() {
        let _ = write!(
            lost,
            ", and {} later segment(s) with {} readable record(s)",
            d.later_segments.len(),
            d.lost_readable_records
        );
        if let Some((f, l)) = d.lost_entries {
            let _ = write!(lost, " (entries {f}..={l})");
        }
    }
    let votes: Vec<String> = d
        .lost_hard_states
        .iter()
        .filter(|hs| hs.vote != 0 || hs.term > term)
        .map(|hs| format!("term {} vote {}", hs.term, hs.vote))
        .collect();
    if !votes.is_empty() {
        let _ = write!(lost, "; hard states among them: {}", votes.join(", "));
    }
    let _ = writeln!(out, "{lost}.");
    if d.looks_torn {
        let _ = writeln!(
            out,
            "The damaged record is the last one written, with nothing after it: most likely a \
             write a power loss cut short, which was never acknowledged. This segment is of \
             format 1 (written before Dec 2026), which cannot prove it."
        );
    }
    if !d.after_checkpoint {
        let _ = writeln!(
            out,
            "The damage comes before the end of what the store's checkpoint covers: a cut would \
             leave the checkpoint naming entries that are gone, so `--truncate` refuses."
        );
    }
    if member {
        let _ = writeln!(
            out,
            "a majority: this member's acknowledgements count towards its ensemble's majorities, \
             and the damaged records may hold entries it acknowledged to a leader and a vote it \
             cast. Cut, it would count as a member that has them: it could help elect a leader \
             missing a committed entry, or vote twice in one term. Do not cut it; rejoin: \
             `{cmd} --rejoin` sets its raft data aside, and the member starts empty, does not \
             vote until it holds an entry of its leader's term, and catches up from the leader \
             (the ensemble needs a majority of the other members up meanwhile)."
        );
    } else {
        let _ = writeln!(
            out,
            "a majority: a standalone server is its own majority, and this log is the only copy: \
             any of the records lost may be a write a client was told had succeeded. {}",
            if d.after_checkpoint {
                format!(
                    "`{cmd} --truncate` keeps every record before the damage and loses those \
                     for good; or restore the data directory from a backup."
                )
            } else {
                "Restore the data directory from a backup.".to_string()
            }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use consensus::storage::LogStore;
    use raft::eraftpb::{Entry, HardState};

    fn identity(mode: Mode) -> Identity {
        Identity {
            cluster_id: 0xabc,
            member_id: 2,
            incarnation: 1,
            mode,
        }
    }

    /// A store in `dir/paddock/raftdb` with entries 2..=40 and a vote, closed; its newest segment
    /// then damaged in its last record.
    fn damaged_store(data: &Path) -> PathBuf {
        let db = data.join("paddock").join("raftdb");
        let mut s = LogStore::open(&db).unwrap();
        s.bootstrap(&[1, 2, 3], &[]).unwrap();
        for i in 2..=40u64 {
            let e = Entry {
                index: i,
                term: 2,
                data: vec![i as u8; 300].into(),
                ..Default::default()
            };
            s.write_ready(None, &[e], None).unwrap();
        }
        let hs = HardState {
            term: 3,
            vote: 2,
            commit: 40,
            ..Default::default()
        };
        s.write_ready(None, &[], Some(&hs)).unwrap();
        let segment = s.current_segment();
        drop(s);
        let number = segment
            .file_stem()
            .unwrap()
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let expect = consensus::segments::Expect {
            prev: None,
            covered: 0,
        };
        let read = consensus::segments::read_segment(&segment, number, expect, &mut |_, _| Ok(()))
            .unwrap();
        let End::Clean { offset, .. } = read.end else {
            panic!("{:?}", read.end)
        };
        let mut bytes = std::fs::read(&segment).unwrap();
        bytes[offset as usize - 30] ^= 0x20;
        std::fs::write(&segment, bytes).unwrap();
        segment
    }

    #[test]
    fn a_damaged_log_is_reported_and_cut_only_on_a_standalone_server() {
        let data = tempfile::tempdir().unwrap();
        let segment = damaged_store(data.path());
        let dir = data.path().join("paddock");
        let found = repair::inspect(&dir).unwrap().unwrap();
        assert!(matches!(found.verdict, Verdict::Refuses(_)));
        let d = found.damage.as_ref().expect("the damage");
        assert_eq!(d.path, segment);
        assert!(d.after_checkpoint);

        let member = render(&dir, Some(&identity(Mode::Ensemble)), &found, "CMD");
        assert!(member.contains("DAMAGED"), "{member}");
        assert!(member.contains(&segment.display().to_string()), "{member}");
        assert!(member.contains("CMD --rejoin"), "{member}");
        assert!(member.contains("vote twice"), "{member}");
        assert_eq!(truncate(&found, true), 2, "a member is not cut");

        let alone = render(&dir, Some(&identity(Mode::Standalone)), &found, "CMD");
        assert!(alone.contains("CMD --truncate"), "{alone}");
        assert!(alone.contains("only copy"), "{alone}");
        assert_eq!(rejoin(&dir, false), 2, "a standalone server has no peers");

        assert_eq!(truncate(&found, false), 0);
        let again = repair::inspect(&dir).unwrap().unwrap();
        assert!(
            matches!(again.verdict, Verdict::Opens),
            "{:?}",
            again.verdict
        );
        assert!(again.damage.is_none());
        let s = LogStore::open(&dir.join("raftdb")).unwrap();
        assert!(
            s.hard_state().term < 3,
            "the vote was in the damaged record, and is gone"
        );
        assert!(s.last() >= 39);
    }

    #[test]
    fn rejoin_sets_a_members_raft_data_aside_and_refuses_while_it_runs() {
        let data = tempfile::tempdir().unwrap();
        let dir = data.path().join("paddock");
        let running = LogStore::open(&dir.join("raftdb")).unwrap();
        assert_eq!(rejoin(&dir, true), 2, "refused while the store is open");
        drop(running);
        assert_eq!(rejoin(&dir, true), 0);
        assert!(!dir.exists());
        let aside: Vec<_> = std::fs::read_dir(data.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            aside.iter().any(|n| n.starts_with("paddock.damaged-")),
            "{aside:?}"
        );
    }

    #[test]
    fn a_start_refused_for_damage_names_the_repair_command() {
        let e = anyhow::Error::new(consensus::ConsensusError::Corrupt("log segment X".into()));
        let text = format!(
            "{:#}",
            with_advice(e, Path::new("/d"), Some(Path::new("/l")))
        );
        assert!(
            text.contains("paddock repair --data-dir /d --data-log-dir /l"),
            "{text}"
        );
        let full = anyhow::anyhow!("disk full");
        assert_eq!(
            format!("{:#}", with_advice(full, Path::new("/d"), None)),
            "disk full"
        );
    }
}
