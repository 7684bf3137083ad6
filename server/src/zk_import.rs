//! `paddock import --zookeeper DIR [--zookeeper-log DIR] (--data-dir OUT | --config zoo.cfg)`:
//! a ZooKeeper 3.5-3.9 data directory becomes a paddock data directory (DESIGN.md, "Importing
//! a ZooKeeper data directory").
//!
//! ```text
//!  version-2/snapshot.<zxid>[.gz|.snappy]  newest that reads, as ZooKeeper picks it
//!  version-2/log.<zxid>                    the log holding snapshot+1 and every later one
//!        │ zk_format: decompress, check the seals, decode, replay (DataTree.processTxn's rules),
//!        │ every zxid continuous, the tree digest compared where the files carry one
//!        ▼
//!  znode_tree::Listing ─▶ Tree ─▶ consensus snapshot file at index (epoch+1)<<32, installed into
//!  a new raft log store (LogStore::write_ready, as a member installs a leader's snapshot),
//!  and the data directory's identity file
//! ```
//!
//! Everything is read, replayed and checked before anything is written: a damaged input (a
//! checksum failing before a log's tail, a log missing between the snapshot and the tail, a
//! snapshot of another dbid, an ACL index its cache lacks, a digest that differs) writes
//! nothing and exits 1 naming the file and the offset. Sessions keep their ids and timeouts and
//! the password ZooKeeper gave them (`zk_format::password`), so their clients resume them.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use zk_format::files::{self, FileKind};
use zk_format::{compress, snapshot, txnlog, DataTree, LogEnd, MissingAcl};

use crate::config::Config;

#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// ZooKeeper's dataDir: the directory holding version-2/ with its snapshots (and its logs,
    /// unless --zookeeper-log names its dataLogDir).
    #[arg(
        long = "zookeeper",
        value_name = "DIR",
        required_unless_present = "join"
    )]
    pub zookeeper: Option<PathBuf>,

    /// ZooKeeper's dataLogDir, when its logs are kept apart from its snapshots.
    #[arg(long = "zookeeper-log", value_name = "DIR")]
    pub zookeeper_log: Option<PathBuf>,

    /// The paddock data directory to create (empty or absent).
    #[arg(long, value_name = "OUT", conflicts_with = "config")]
    pub data_dir: Option<PathBuf>,

    /// A zoo.cfg for paddock: its dataDir (and dataLogDir) receive the import, its server.N
    /// lines are the ensemble's membership (this member imports, the others start empty and
    /// join).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Give nodes whose ACL index the snapshot's ACL cache lacks OPEN_ACL_UNSAFE instead of
    /// refusing the import (ZooKeeper itself fails on them later, "Failed to fetch acls").
    #[arg(long)]
    pub missing_acl_open: bool,

    /// Read, replay and check everything, print what was read, write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// For the other members of an ensemble one member imported into: prepare this member's
    /// empty data directory (--config) to join the ensemble, never to start a group of its own.
    /// Without it, two empty members started while the importing one is not yet reachable are
    /// a majority of empty voters and would bootstrap an empty ensemble.
    #[arg(long, requires = "config", conflicts_with_all = ["zookeeper", "zookeeper_log", "dry_run"])]
    pub join: bool,
}

/// What the replay of a ZooKeeper directory produced, before anything is written.
pub struct Imported {
    pub tree: DataTree,
    /// The snapshot's name zxid.
    pub snapshot_zxid: i64,
    /// The largest zxid anywhere in the input (stats, transactions, trailers).
    pub max_zxid: i64,
    /// The lines `paddock import` prints.
    pub report: String,
    /// Whether a digest was compared and matched (`None`: the files carry none to compare).
    pub digest_matched: Option<bool>,
}

/// The largest decompressed snapshot accepted (a compressed file can claim any size).
const MAX_SNAPSHOT_BYTES: usize = 64 << 30;
/// How many snapshots ZooKeeper tries, newest first (`FileSnap.deserialize`).
const SNAPSHOTS_TRIED: usize = 100;

fn version2(dir: &Path) -> PathBuf {
    let v2 = dir.join("version-2");
    if v2.is_dir() {
        v2
    } else {
        dir.to_path_buf()
    }
}

fn list(dir: &Path) -> Result<Vec<(FileKind, i64, String)>, String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    let mut out = Vec::new();
    for e in rd {
        let e = e.map_err(|e| format!("reading {}: {e}", dir.display()))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some((kind, zxid)) = files::parse_name(&name) {
            out.push((kind, zxid, name));
        }
    }
    Ok(out)
}

fn mb(n: usize) -> String {
    format!("{:.1} MB", n as f64 / 1e6)
}

/// Reads and replays a ZooKeeper data directory; nothing is written.
pub fn read_zookeeper(
    snap_dir: &Path,
    log_dir: &Path,
    missing_acl: MissingAcl,
) -> Result<Imported, String> {
    read_zookeeper_upto(snap_dir, log_dir, missing_acl, None)
}

/// The zxid of the last transaction the logs in `log_dir` committed at or before `time_ms`
/// (the transaction header's time, the leader's clock), for a restore `--to-time`.
pub fn zxid_at_time(log_dir: &Path, time_ms: i64) -> Result<Option<i64>, String> {
    let log_dir = version2(log_dir);
    let mut logs: Vec<(i64, String)> = list(&log_dir)?
        .into_iter()
        .filter(|(k, _, _)| *k == FileKind::Log)
        .map(|(_, z, n)| (z, n))
        .collect();
    logs.sort();
    let mut found = None;
    for (_, name) in &logs {
        let path = log_dir.join(name);
        let bytes = std::fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        if bytes.is_empty() {
            continue;
        }
        txnlog::decode_with(&bytes, |rec| {
            if rec.header.time <= time_ms {
                found = Some(found.map_or(rec.header.zxid, |f: i64| f.max(rec.header.zxid)));
            }
            false
        })
        .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(found)
}

/// `read_zookeeper`, stopping right after the transaction `upto` (the state a point-in-time
/// restore wants): the snapshot is the newest whose every transaction is at or before it (its
/// last-processed zxid, or its name's zxid when it has no such trailer), and the replay
/// ignores every later transaction. The logs must reach `upto`.
pub fn read_zookeeper_upto(
    snap_dir: &Path,
    log_dir: &Path,
    missing_acl: MissingAcl,
    upto: Option<i64>,
) -> Result<Imported, String> {
    let started = Instant::now();
    let snap_dir = version2(snap_dir);
    let log_dir = version2(log_dir);
    let mut report = String::new();
    let mut snaps: Vec<(i64, String)> = list(&snap_dir)?
        .into_iter()
        .filter(|(k, _, _)| *k == FileKind::Snapshot)
        .map(|(_, z, n)| (z, n))
        .collect();
    snaps.sort_by(|a, b| b.cmp(a));
    if snaps.is_empty() {
        return Err(format!(
            "{}: no snapshot.<zxid> file: not a ZooKeeper data directory (ZooKeeper 3.5+ writes \
             snapshot.0 at its first start)",
            snap_dir.display()
        ));
    }
    let logs: Vec<(i64, String)> = list(&log_dir)?
        .into_iter()
        .filter(|(k, _, _)| *k == FileKind::Log)
        .map(|(_, z, n)| (z, n))
        .collect();

    // The newest snapshot that reads, as ZooKeeper picks it; a damaged one is reported and
    // skipped (a crash while one was written leaves it incomplete), and the logs must then
    // cover the gap from the older one, which the replay checks.
    let mut chosen = None;
    let mut input_bytes = 0usize;
    for (zxid, name) in snaps
        .iter()
        .filter(|(z, _)| upto.is_none_or(|u| *z <= u))
        .take(SNAPSHOTS_TRIED)
    {
        let path = snap_dir.join(name);
        let raw = std::fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        let codec = compress::Codec::of_name(name);
        let decoded = compress::decompress(codec, &raw, MAX_SNAPSHOT_BYTES)
            .and_then(|bytes| snapshot::decode(&bytes).map(|s| (s, bytes.len())));
        match decoded {
            Ok((snap, _))
                if upto.is_some_and(|u| snap.last_processed_zxid.is_some_and(|l| l > u)) =>
            {
                let _ = writeln!(
                    report,
                    "snapshot: {} skipped: it holds transactions up to {}, past {}",
                    path.display(),
                    snap.last_processed_zxid.map_or("?".into(), files::zxid_hex),
                    files::zxid_hex(upto.unwrap_or(0))
                );
            }
            Ok((snap, len)) => {
                if snap.dbid != snapshot::SNAP_DBID {
                    return Err(format!(
                        "{}: a snapshot of another database: dbid {:#x} (ZooKeeper writes {})",
                        path.display(),
                        snap.dbid,
                        snapshot::SNAP_DBID
                    ));
                }
                let _ = writeln!(
                    report,
                    "snapshot: {} ({:?}, {} on disk, {} decoded, {} nodes, {} sessions, {} ACL lists, digest {}, last processed zxid {})",
                    path.display(),
                    codec,
                    mb(raw.len()),
                    mb(len),
                    snap.nodes.len(),
                    snap.sessions.len(),
                    snap.acls.len(),
                    snap.digest.map_or("none".into(), |d| format!("at {}", files::zxid_hex(d.zxid))),
                    snap.last_processed_zxid.map_or("none".into(), files::zxid_hex),
                );
                input_bytes += raw.len();
                chosen = Some((*zxid, name.clone(), snap));
                break;
            }
            Err(e) => {
                let _ = writeln!(
                    report,
                    "snapshot: {} skipped, as ZooKeeper skips it: {e}",
                    path.display()
                );
            }
        }
    }
    let Some((snap_zxid, snap_name, snap)) = chosen else {
        return Err(format!(
            "{}: no snapshot reads{}",
            snap_dir.display(),
            report
                .lines()
                .map(|l| format!("\n  {l}"))
                .collect::<String>()
        ));
    };
    let mut max_zxid = snap_zxid
        .max(snap.last_processed_zxid.unwrap_or(0))
        .max(snap.digest.map_or(0, |d| d.zxid));
    for n in &snap.nodes {
        max_zxid = max_zxid
            .max(n.stat.czxid)
            .max(n.stat.mzxid)
            .max(n.stat.pzxid);
    }
    let mut tree = DataTree::from_snapshot(&snap, missing_acl)
        .map_err(|e| format!("{}: {e}", snap_dir.join(&snap_name).display()))?;
    // A digest taken at the snapshot's own zxid is compared now, as ZooKeeper compares it on
    // load; one taken later (a fuzzy snapshot) when the replay reaches its zxid.
    tree.check_snapshot_digest(snap_zxid);
    drop(snap);

    // The logs: the newest starting at or below snapshot+1, and every later one.
    let to_read = files::logs_to_replay(&logs, snap_zxid);
    let mut last = snap_zxid;
    let mut replayed = 0u64;
    let mut big = 0u64;
    let mut last_digest: Option<(i64, i64)> = None;
    let mut past_upto = false;
    let n_logs = to_read.len();
    for (i, (_, name)) in to_read.iter().enumerate() {
        let path = log_dir.join(name);
        let bytes = std::fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        input_bytes += bytes.len();
        if bytes.is_empty() && i + 1 == n_logs {
            // ZooKeeper deletes an empty tail log (ZOOKEEPER-2332) and starts without it.
            let _ = writeln!(
                report,
                "log: {} is empty: ignored, as ZooKeeper does",
                path.display()
            );
            continue;
        }
        let mut err = None;
        let mut count = 0u64;
        let file = txnlog::decode_with(&bytes, |rec| {
            if err.is_some() || rec.header.zxid <= snap_zxid {
                return false;
            }
            if upto.is_some_and(|u| rec.header.zxid > u) {
                past_upto = true;
                return false;
            }
            let z = rec.header.zxid;
            if !follows(last, z) {
                err = Some(format!(
                    "{}: transaction {} at offset {} does not follow {}: a log is missing \
                     between the snapshot and the tail, or the logs belong to another ensemble",
                    path.display(),
                    files::zxid_hex(z),
                    rec.offset,
                    files::zxid_hex(last)
                ));
                return false;
            }
            last = z;
            max_zxid = max_zxid.max(z);
            let digest = rec.digest.map(|d| d.digest);
            tree.apply(&rec.header, &rec.txn, digest);
            if let Some(d) = digest {
                last_digest = Some((z, d));
            }
            count += 1;
            if rec.len > 1 << 20 {
                big += 1;
            }
            false
        })
        .map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some(e) = err {
            return Err(e);
        }
        replayed += count;
        let end = match file.end {
            LogEnd::Eof => "end of file".to_string(),
            LogEnd::Padding { offset } => format!("preallocated zeros at offset {offset}"),
            LogEnd::Torn { offset } => {
                format!("a torn record at offset {offset} (never acknowledged)")
            }
            LogEnd::TornChecksum { offset } => {
                if i + 1 != n_logs {
                    return Err(format!(
                        "{}: the record at offset {offset} fails its checksum, and later logs \
                         follow: the log is damaged before its tail",
                        path.display()
                    ));
                }
                format!(
                    "a last record at offset {offset} whose checksum fails, followed by zeros: a \
                     torn write, dropped (ZooKeeper would refuse to start; zkTxnLogToolkit.sh -r \
                     would drop it too)"
                )
            }
        };
        let _ = writeln!(
            report,
            "log: {} ({}, {count} transactions replayed, ended at {end})",
            path.display(),
            mb(bytes.len()),
        );
    }
    if let Some(u) = upto {
        if last < u && !past_upto {
            return Err(format!(
                "{report}the files end at {}, before {}: the state at {} cannot be known from \
                 them; nothing written",
                files::zxid_hex(last),
                files::zxid_hex(u),
                files::zxid_hex(u)
            ));
        }
        let _ = writeln!(
            report,
            "stopped: after {}, the last transaction at or before {}",
            files::zxid_hex(last),
            files::zxid_hex(u)
        );
    }
    let stats = tree.stats.clone();
    let digest_matched = if stats.digests_compared == 0 {
        stats.snapshot_digest_matched.filter(|m| *m)
    } else {
        Some(stats.digest_mismatches == 0)
    };
    // The final state against the last digest the files carry, when the replay is past the
    // snapshot's fuzzy range.
    let final_ok = match last_digest {
        Some((z, d)) if z == last && tree.digest_settled() => Some(d == tree.digest()),
        _ => None,
    };
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let nodes = tree.len();
    let ephemerals = tree_ephemerals(&tree);
    let _ = writeln!(
        report,
        "transactions: {replayed} replayed up to {} ({} applied, {} refused as ZooKeeper's replay \
         refuses them over a fuzzy snapshot, {} multis with an error applying nothing, {big} \
         records above 1 MiB)",
        files::zxid_hex(last),
        stats.applied,
        stats.failed,
        stats.failed_multis,
    );
    let _ = writeln!(
        report,
        "tree: {nodes} nodes, {} sessions, {ephemerals} ephemerals",
        tree.sessions.len()
    );
    let _ = writeln!(
        report,
        "digest: {}",
        match (digest_matched, final_ok) {
            (_, Some(false)) | (Some(false), _) => format!(
                "MISMATCH ({} of {} compared, first at {})",
                stats.digest_mismatches,
                stats.digests_compared,
                stats.first_mismatch.map_or("?".into(), files::zxid_hex)
            ),
            (Some(true), _) => format!(
                "match ({} compared, the last at {})",
                stats.digests_compared,
                files::zxid_hex(last_digest.map_or(snap_zxid, |(z, _)| z))
            ),
            (None, _) => "none in the files to compare".into(),
        }
    );
    if stats.snapshot_digest_matched == Some(false) {
        let _ = writeln!(
            report,
            "digest: the snapshot's own digest differs at load, as ZooKeeper's load would report: \
             it was written after a transaction the tree already held{}",
            if replayed > 0 {
                "; the transactions' digests after it decide"
            } else {
                " (no transaction follows to decide)"
            }
        );
    }
    let _ = writeln!(
        report,
        "read: {} in {:.2} s ({:.0} znodes/s, {:.1} MB/s)",
        mb(input_bytes),
        secs,
        nodes as f64 / secs,
        input_bytes as f64 / 1e6 / secs
    );
    if digest_matched == Some(false) || final_ok == Some(false) {
        return Err(format!(
            "{report}the replayed tree's digest differs from ZooKeeper's: the files are damaged \
             or inconsistent; nothing written"
        ));
    }
    Ok(Imported {
        tree,
        snapshot_zxid: snap_zxid,
        max_zxid,
        report,
        digest_matched: digest_matched.or(final_ok),
    })
}

/// Whether zxid `next` may follow `prev` in a log: the next counter of the same epoch, or the
/// first transaction of a later epoch (a new leader's counter restarts at 1).
pub fn follows(prev: i64, next: i64) -> bool {
    let (pe, ne) = (prev >> 32, next >> 32);
    next == prev + 1 || (ne > pe && next & 0xFFFF_FFFF == 1)
}

fn tree_ephemerals(t: &DataTree) -> usize {
    t.depth_first().map_or(0, |all| {
        all.iter()
            .filter(|(_, n)| zk_format::datatree::is_session_owner(n.stat.ephemeral_owner))
            .count()
    })
}

/// The raft index (and so the first zxid) paddock's state starts at: the first zxid of the
/// epoch after the largest one imported, as a new ZooKeeper leader would start.
pub fn start_index(max_zxid: i64) -> u64 {
    (((max_zxid.max(0) >> 32) + 1) << 32) as u64
}

/// The paddock tree of an import, at raft index `index`.
pub fn to_paddock(
    imp: &Imported,
    cfg: &Config,
    index: u64,
) -> Result<(znode_tree::Tree, usize), String> {
    let t = &imp.tree;
    let all = t.depth_first().map_err(|e| e.to_string())?;
    let mut listing = znode_tree::Listing::new(cfg.tree_config(), index as i64);
    let mut sessions: BTreeMap<i64, i32> = t.sessions.clone();
    // An ephemeral whose session is not among the live ones: ZooKeeper's start closes such
    // sessions at once (ZooKeeperServer.loadData, "dead sessions"); here they get the shortest
    // timeout a client may negotiate, so paddock closes them as soon as it starts.
    let min_timeout = (cfg.tick_time_ms * 2) as i32;
    let mut orphans = 0;
    for (p, n) in &all {
        let owner = n.stat.ephemeral_owner;
        if zk_format::datatree::is_session_owner(owner) && !sessions.contains_key(&owner) {
            sessions.insert(owner, min_timeout);
            orphans += 1;
        }
        let s = n.stat;
        let stat = znode_tree::StoredStat {
            czxid: s.czxid,
            mzxid: s.mzxid,
            pzxid: s.pzxid,
            ctime: s.ctime,
            mtime: s.mtime,
            ephemeral_owner: s.ephemeral_owner,
            version: s.version,
            cversion: s.cversion,
            aversion: s.aversion,
        };
        let acl = t.acl_of(n);
        listing
            .node(p, n.data.as_deref().map(Box::from), &acl, stat)
            .map_err(|e| format!("node {p:?}: {e}"))?;
    }
    for (id, timeout) in sessions {
        listing.session(znode_tree::Session {
            id,
            timeout_ms: timeout,
            password: zk_format::password::session_password(id),
            owner: None,
        });
    }
    let tree = listing.finish().map_err(|e| e.to_string())?;
    Ok((tree, orphans))
}

/// Whether `dir` holds anything (a missing directory holds nothing).
fn has_entries(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut rd| rd.next().is_some())
}

/// Writes the paddock data directory for `cfg`: the snapshot file, the raft log store with the
/// snapshot installed, the identity file. Refuses a raft directory that holds anything.
pub fn write_paddock(cfg: &Config, tree: &znode_tree::Tree, index: u64) -> Result<PathBuf, String> {
    let raft_dir = cfg.raft_dir();
    if has_entries(&raft_dir) {
        return Err(format!(
            "{} is not empty: import only into a new data directory (paddock never merges trees)",
            raft_dir.display()
        ));
    }
    crate::data_dir::prepare(cfg).map_err(|e| e.to_string())?;
    let voters = if cfg.is_distributed() {
        cfg.voters()
    } else {
        vec![cfg.my_id.unwrap_or(1)]
    };
    let learners = if cfg.is_distributed() {
        cfg.observers()
    } else {
        Vec::new()
    };
    let conf = consensus::ConfState {
        voters,
        learners,
        ..Default::default()
    };
    const TERM: u64 = 1;
    let data = tree.snapshot();
    let snap_dir = raft_dir.join("snapshots");
    consensus::snapshot_file::write(&snap_dir, index, TERM, &conf, &data)
        .map_err(|e| format!("writing the snapshot into {}: {e}", snap_dir.display()))?;
    let db = raft_dir.join("raftdb");
    let mut store = consensus::storage::LogStore::open(&db)
        .map_err(|e| format!("creating the raft log in {}: {e}", db.display()))?;
    let meta = raft_proto::eraftpb::SnapshotMetadata {
        index,
        term: TERM,
        conf_state: Some(conf).into(),
        ..Default::default()
    };
    let hs = raft_proto::eraftpb::HardState {
        term: TERM,
        commit: index,
        ..Default::default()
    };
    store
        .write_ready(Some(&meta), &[], Some(&hs))
        .map_err(|e| format!("recording the snapshot in {}: {e}", db.display()))?;
    drop(store);
    crate::identity::Identity::new_for(cfg)
        .write(&raft_dir)
        .map_err(|e| format!("writing the identity in {}: {e}", raft_dir.display()))?;
    Ok(raft_dir)
}

/// The file beside the raft store of a member prepared by `import --join`: start-up reads it into
/// `consensus::Config::import_join`, so the member votes for the importer at once instead of
/// abstaining for its rejoin patience (10 election timeouts) as a member that lost its data does.
pub const IMPORT_JOIN_MARKER: &str = "import-join";

/// The data directory of an ensemble member that joins the member that imported: its identity
/// and an empty raft store that records it joins (`LogStore::set_rejoining`), as a member that
/// joined empty and has not caught up yet, and the `IMPORT_JOIN_MARKER`. Start-up then resumes it
/// as such (identity.rs): it waits for the leader's snapshot, votes only for the importer (a
/// candidate holding nothing past the import) until it holds its leader's entries.
pub fn write_joiner(cfg: &Config) -> Result<PathBuf, String> {
    if !cfg.is_distributed() {
        return Err("--join is for a member of an ensemble: its zoo.cfg lists the servers".into());
    }
    let raft_dir = cfg.raft_dir();
    if has_entries(&raft_dir) {
        return Err(format!("{} is not empty", raft_dir.display()));
    }
    crate::data_dir::prepare(cfg).map_err(|e| e.to_string())?;
    let db = raft_dir.join("raftdb");
    let mut store = consensus::storage::LogStore::open(&db)
        .map_err(|e| format!("creating the raft log in {}: {e}", db.display()))?;
    store
        .set_rejoining(true)
        .map_err(|e| format!("recording the join in {}: {e}", db.display()))?;
    drop(store);
    let marker = raft_dir.join(IMPORT_JOIN_MARKER);
    std::fs::write(&marker, "prepared by paddock import --join\n")
        .map_err(|e| format!("writing {}: {e}", marker.display()))?;
    crate::identity::Identity::new_for(cfg)
        .write(&raft_dir)
        .map_err(|e| format!("writing the identity in {}: {e}", raft_dir.display()))?;
    Ok(raft_dir)
}

fn config_of(args: &ImportArgs) -> Result<Config, String> {
    match (&args.config, &args.data_dir) {
        (Some(cfg), _) => Config::from_zoo_cfg(cfg).map_err(|e| e.to_string()),
        (None, Some(dir)) => crate::cli::ServeArgs {
            data_dir: Some(dir.clone()),
            ..Default::default()
        }
        .into_config()
        .map_err(|e| e.to_string()),
        (None, None) => Err("give --data-dir OUT or --config zoo.cfg".into()),
    }
}

/// `paddock import`; the process's exit status.
pub fn run(args: &ImportArgs) -> i32 {
    match run_inner(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("paddock import: {e}");
            1
        }
    }
}

fn run_inner(args: &ImportArgs) -> Result<(), String> {
    let cfg = config_of(args)?;
    if args.join {
        let dir = write_joiner(&cfg)?;
        println!(
            "written: {} (member {}, empty: it joins the ensemble and catches up from the member \
             that imported; it never starts a group of its own)",
            dir.display(),
            cfg.my_id.unwrap_or(1)
        );
        return Ok(());
    }
    let zookeeper = args
        .zookeeper
        .as_deref()
        .ok_or("give --zookeeper DIR (or --join)")?;
    // Refused before the reading, which can take minutes for a large tree.
    if !args.dry_run && has_entries(&cfg.raft_dir()) {
        return Err(format!(
            "{} is not empty: import only into a new data directory",
            cfg.raft_dir().display()
        ));
    }
    let missing = if args.missing_acl_open {
        MissingAcl::Open
    } else {
        MissingAcl::Refuse
    };
    let log_dir = args.zookeeper_log.as_deref().unwrap_or(zookeeper);
    let imp = read_zookeeper(zookeeper, log_dir, missing)?;
    print!("{}", imp.report);
    let index = start_index(imp.max_zxid);
    let (tree, orphans) = to_paddock(&imp, &cfg, index)?;
    if orphans > 0 {
        println!(
            "sessions: {orphans} ephemeral owners not among the live sessions get the shortest \
             timeout, so paddock closes them at start as ZooKeeper's start closes them"
        );
    }
    println!(
        "paddock: state at zxid {} (raft index {index}), above every imported zxid (the largest {}); new zxids continue from {}",
        files::zxid_hex(index as i64),
        files::zxid_hex(imp.max_zxid),
        files::zxid_hex(index as i64 + 1),
    );
    if args.dry_run {
        println!("dry run: nothing written");
        return Ok(());
    }
    let dir = write_paddock(&cfg, &tree, index)?;
    let members = if cfg.is_distributed() {
        format!(
            "member {} of {} voters; prepare each other member with `paddock import --join \
             --config <its zoo.cfg>` and start them in any order: they join and catch up from \
             this one",
            cfg.my_id.unwrap_or(1),
            cfg.voters().len()
        )
    } else {
        "standalone".to_string()
    };
    println!(
        "written: {} ({} nodes, {} sessions; {members})",
        dir.display(),
        tree.node_count() - 1,
        tree.sessions().count()
    );
    Ok(())
}
