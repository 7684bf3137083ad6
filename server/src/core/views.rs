//! Four-letter words on the client port: applies the side effects of `srst`/`crst`/`stmk` and
//! gathers the in-memory part of a `fourlw::ServerView` on the core task; `FourLetterJob::finish`
//! then adds what costs file-system calls (directory sizes, `/proc`) and renders the text with
//! the pure `fourlw::render`, on a blocking thread. The core task serves every client, so it
//! walks no directory: a `mntr` scrape every few seconds would otherwise delay every reply.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use tokio::time::{Duration, Instant};
use wire::{FourLetterWord, OpCode};
use znode_tree::{Tree, WatchRegistry};

use super::{now_ms, Core};
use crate::config::{Config, FourLetterWhitelist};
use crate::fourlw::{self, ConnView, ExpiryBucket, Mode, ServerView};
use crate::msg::{ConnId, ViewReset};
use crate::stats::{ConnStats, ServerStats};

/// One connection as the listings show it (`cons`, `crst`).
struct LiveConn<'a> {
    remote: SocketAddr,
    session_id: i64,
    /// The negotiated session timeout.
    timeout_ms: i32,
    /// Requests in the connection's FIFO.
    queued: usize,
    stats: &'a mut ConnStats,
}

/// A four-letter word's answer, half made on the core task.
pub(super) struct FourLetterJob {
    word: FourLetterWord,
    whitelist: FourLetterWhitelist,
    view: ServerView,
    /// dataDir and the raft directory, whose sizes `finish` adds; `None` when the word prints no
    /// file-system facts (`ruok`), so nothing is read for it.
    dirs: Option<(PathBuf, PathBuf)>,
}

impl FourLetterJob {
    /// Adds the file-system facts `finish` adds and returns the view (the HTTP endpoints render
    /// it themselves). Blocking IO: run it off the core task.
    pub(super) fn finish_view(mut self) -> ServerView {
        self.fill_files();
        self.view
    }

    fn fill_files(&mut self) {
        if let Some((data_dir, raft_dir)) = &self.dirs {
            self.view.data_dir_size = dir_size(data_dir);
            self.view.log_dir_size = dir_size(raft_dir);
            self.view.open_file_descriptor_count = open_fds();
            self.view.max_file_descriptor_count = max_fds();
            self.view.environment = environment();
        }
    }

    /// Adds the directory sizes, the descriptor counts and the environment, then renders. Does
    /// blocking IO: run it off the core task.
    pub(super) fn finish(mut self) -> String {
        self.fill_files();
        fourlw::render(self.word, &self.view, &self.whitelist)
    }
}

/// `remote` is the connection asking: ZooKeeper counts and lists it among the connections
/// (`Connections: 1` on an idle server), so paddock does too.
/// `mask` is `stmk`'s argument.
pub(super) fn four_letter(
    core: &mut Core,
    word: FourLetterWord,
    mask: Option<i64>,
    remote: SocketAddr,
) -> FourLetterJob {
    let whitelist = core.config().four_letter_words.clone();
    if whitelist.allows(word) {
        match word {
            FourLetterWord::Stmk => {
                if let Some(mask) = mask {
                    core.set_trace_mask(mask);
                }
            }
            FourLetterWord::Srst => core.reset_stats(),
            FourLetterWord::Crst => {
                for conn in core.conn_views() {
                    conn.stats.reset();
                }
            }
            _ => {}
        }
    }
    if word == FourLetterWord::Ruok {
        // "imok" (or the whitelist refusal) says nothing about the state.
        return FourLetterJob {
            word,
            whitelist,
            view: ServerView::default(),
            dirs: None,
        };
    }
    let mut view = server_view(core);
    view.connections.push(ConnView {
        remote,
        interest_ops: 0,
        queued: 0,
        recved: 1,
        sent: 0,
        session_id: 0,
        last_op: op_name(OpCode::Notification).to_string(),
        established_ms: now_ms(),
        timeout_ms: 0,
        last_cxid: 0,
        last_zxid: 0,
        last_response_ms: 0,
        last_latency_ms: 0,
        latency: Default::default(),
    });
    let cfg = core.config();
    FourLetterJob {
        word,
        whitelist,
        view,
        dirs: Some((cfg.data_dir.clone(), cfg.raft_dir())),
    }
}

/// The view the HTTP endpoints render (`CoreMsg::View`): every field, after `reset`. Unlike a
/// four-letter word it lists no connection of its own (the HTTP request is not a client).
pub(super) fn http_view(core: &mut Core, reset: ViewReset) -> FourLetterJob {
    match reset {
        ViewReset::Nothing => {}
        ViewReset::ServerStats => core.reset_stats(),
        ViewReset::ConnectionStats => {
            for conn in core.conn_views() {
                conn.stats.reset();
            }
        }
    }
    let view = server_view(core);
    let cfg = core.config();
    FourLetterJob {
        word: FourLetterWord::Mntr,
        whitelist: FourLetterWhitelist::All,
        view,
        dirs: Some((cfg.data_dir.clone(), cfg.raft_dir())),
    }
}

/// Converts a monotonic instant into wall-clock milliseconds, for the dates ZooKeeper prints.
fn wall_ms(at: Instant, now: Instant, now_ms: i64) -> i64 {
    if at >= now {
        now_ms + (at - now).as_millis() as i64
    } else {
        now_ms - (now - at).as_millis() as i64
    }
}

/// ZooKeeper's short op names (`Request.op2String`), as `cons` prints them.
fn op_name(op: OpCode) -> &'static str {
    match op {
        OpCode::Notification => "NA",
        OpCode::Create | OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl => "CREA",
        OpCode::Delete | OpCode::DeleteContainer => "DELE",
        OpCode::Exists => "EXIS",
        OpCode::GetData => "GETD",
        OpCode::SetData => "SETD",
        OpCode::GetAcl => "GETA",
        OpCode::SetAcl => "SETA",
        OpCode::GetChildren | OpCode::GetChildren2 => "GETC",
        OpCode::Sync => "SYNC",
        OpCode::Ping => "PING",
        OpCode::Check => "CHEC",
        OpCode::Multi => "MULT",
        OpCode::MultiRead => "MLTR",
        OpCode::Reconfig => "RECO",
        OpCode::CheckWatches => "CHKW",
        OpCode::RemoveWatches => "REMW",
        OpCode::Auth => "AUTH",
        OpCode::SetWatches | OpCode::SetWatches2 => "SETW",
        OpCode::Sasl => "SASL",
        OpCode::GetEphemerals => "GETE",
        OpCode::GetAllChildrenNumber => "GETACN",
        OpCode::AddWatch => "ADDW",
        OpCode::WhoAmI => "WHOAMI",
        OpCode::CreateSession => "SESS",
        OpCode::CloseSession => "CLOS",
        OpCode::Error => "ERR",
    }
}

fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

fn open_fds() -> Option<u64> {
    std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|d| d.count() as u64)
}

fn max_fds() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

fn environment() -> Vec<(String, String)> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let os_version = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let cwd = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    vec![
        ("host.name".into(), host),
        ("java.version".into(), "n/a (paddock is not a JVM)".into()),
        ("java.vendor".into(), "n/a".into()),
        ("java.home".into(), "n/a".into()),
        ("java.class.path".into(), "n/a".into()),
        ("java.library.path".into(), "n/a".into()),
        (
            "java.io.tmpdir".into(),
            std::env::temp_dir().display().to_string(),
        ),
        ("java.compiler".into(), "<NA>".into()),
        ("os.name".into(), std::env::consts::OS.into()),
        ("os.arch".into(), std::env::consts::ARCH.into()),
        ("os.version".into(), os_version),
        (
            "user.name".into(),
            std::env::var("USER").unwrap_or_default(),
        ),
        (
            "user.home".into(),
            std::env::var("HOME").unwrap_or_default(),
        ),
        ("user.dir".into(), cwd),
    ]
}

fn server_view(core: &mut Core) -> ServerView {
    let now = Instant::now();
    let now_ms = now_ms();
    let status = core.raft().status();
    let read_only = !core.leader_known() && core.config().read_only_mode;
    let mode = if !core.is_ensemble() {
        Mode::Standalone
    } else if read_only {
        Mode::ReadOnly
    } else if status.is_leader {
        Mode::Leader
    } else if status.is_learner {
        Mode::Observer
    } else {
        Mode::Follower
    };
    let zxid = core.tree().last_zxid();
    let node_count = core.tree().node_count() as u64;
    let outstanding = core.outstanding() as u64;

    let mut session_of = std::collections::HashMap::new();
    let mut connections = Vec::new();
    for LiveConn {
        remote,
        session_id,
        timeout_ms,
        queued,
        stats,
    } in core.conn_views()
    {
        connections.push(ConnView {
            remote,
            interest_ops: 1,
            queued: queued as u64,
            recved: stats.received,
            sent: stats.sent,
            session_id,
            last_op: op_name(stats.last_op).to_string(),
            established_ms: wall_ms(stats.established, now, now_ms),
            timeout_ms,
            last_cxid: stats.last_cxid as i64,
            last_zxid: stats.last_zxid,
            last_response_ms: stats
                .last_response
                .map(|t| wall_ms(t, now, now_ms))
                .unwrap_or(0),
            last_latency_ms: stats.last_latency_ms,
            latency: stats.latency,
        });
    }
    // Watchers are connections; ZooKeeper's listings name sessions.
    for (id, session) in core.conn_ids_and_sessions() {
        session_of.insert(id, session);
    }
    let ws = core.watches().stats();
    let watches_by_session = ws
        .data_by_watcher
        .iter()
        .map(|(w, paths)| (session_of.get(w).copied().unwrap_or(0), paths.clone()))
        .collect();
    let watches_by_path = ws
        .data_by_path
        .iter()
        .map(|(p, ws)| {
            (
                p.clone(),
                ws.iter()
                    .map(|w| session_of.get(w).copied().unwrap_or(0))
                    .collect(),
            )
        })
        .collect();

    let mut buckets: std::collections::BTreeMap<i64, Vec<i64>> = Default::default();
    let mut ephemerals_by_session = Vec::new();
    let sessions: Vec<i64> = core.tree().sessions().map(|s| s.id).collect();
    for id in &sessions {
        if let Some(deadline) = core.session_deadline(*id) {
            buckets
                .entry(wall_ms(deadline, now, now_ms))
                .or_default()
                .push(*id);
        }
        let eph = core.tree().ephemerals_of(*id);
        if !eph.is_empty() {
            ephemerals_by_session.push((*id, eph));
        }
    }
    let session_buckets = buckets
        .into_iter()
        .map(|(expire_at_ms, sessions)| ExpiryBucket {
            expire_at_ms,
            sessions,
        })
        .collect();

    // Nothing secret is printed today; masked all the same, so that no key added later can be.
    let conf_lines = crate::redact::pairs(core.config().as_conf_lines());
    let stats = core.stats().clone();
    let response_sizes = core.response_sizes.get();
    let (quorum_size, leader) = if core.is_ensemble() {
        let (voters, _) = core.raft().membership();
        let leader = (mode == Mode::Leader).then(|| {
            let me = status.id;
            let progress = core.raft().progress();
            let others = progress.iter().filter(|p| p.id != me);
            let active: Vec<_> = others.filter(|p| p.recent_active).collect();
            fourlw::LeaderView {
                learners: active.len() as u64,
                synced_followers: active.iter().filter(|p| !p.is_learner).count() as u64,
                synced_non_voting_followers: 0,
                synced_observers: active.iter().filter(|p| p.is_learner).count() as u64,
                pending_syncs: core.pending_syncs() as u64,
                leader_uptime_ms: core.leader_uptime().as_millis() as u64,
                last_proposal_size: -1,
                min_proposal_size: -1,
                max_proposal_size: -1,
                observers: active
                    .iter()
                    .filter(|p| p.is_learner)
                    .map(|p| fourlw::ObserverView {
                        sid: p.id,
                        last_zxid: p.matched as i64,
                        established_ms: now_ms - core.leader_uptime().as_millis() as i64,
                    })
                    .collect(),
            }
        });
        (Some(voters.len() as u64), leader)
    } else {
        (None, None)
    };

    ServerView {
        is_serving: core.serving() || read_only,
        mode,
        latency: stats.latency,
        packets_received: stats.packets_received,
        packets_sent: stats.packets_sent,
        connections,
        outstanding_requests: outstanding,
        zxid,
        node_count,
        conf_lines,
        // Read off the core task, by `FourLetterJob::finish`.
        environment: Vec::new(),
        watches_by_session,
        watches_by_path,
        watch_count: ws.total() as u64,
        session_buckets,
        ephemerals_by_session,
        ephemerals_count: core.tree().ephemerals_count() as u64,
        approximate_data_size: core.tree().approximate_data_size(),
        global_sessions: sessions.len() as u64,
        local_sessions: 0,
        data_dir_size: 0,
        log_dir_size: 0,
        uptime_ms: core.uptime().as_millis() as u64,
        open_file_descriptor_count: None,
        max_file_descriptor_count: None,
        last_client_response_size: response_sizes.0,
        min_client_response_size: response_sizes.1,
        max_client_response_size: response_sizes.2,
        auth_failed_count: stats.auth_failed,
        quorum_size,
        leader,
        extra_metrics: vec![
            ("paddock_raft_term".into(), status.term.to_string()),
            (
                "paddock_raft_commit_index".into(),
                status.commit.to_string(),
            ),
            (
                "paddock_raft_first_index".into(),
                status.first_index.to_string(),
            ),
            (
                "paddock_raft_snapshot_index".into(),
                status.snapshot_index.to_string(),
            ),
            (
                "paddock_raft_last_index".into(),
                status.last_index.to_string(),
            ),
            (
                "paddock_raft_synced_writes".into(),
                status.synced_writes.to_string(),
            ),
            ("paddock_raft_readies".into(), status.readies.to_string()),
            (
                "paddock_raft_dropped_proposals".into(),
                status.dropped_proposals.to_string(),
            ),
            (
                "paddock_raft_acks_skipped".into(),
                status.acks_skipped.to_string(),
            ),
            (
                "paddock_raft_leader_id".into(),
                status.leader_id.to_string(),
            ),
            (
                "paddock_applied_index".into(),
                core.applied_index.to_string(),
            ),
            (
                "paddock_last_snapshot_index".into(),
                core.last_snapshot_index.to_string(),
            ),
            (
                "paddock_snapshots_encoding".into(),
                core.snapshot_encoding
                    .load(std::sync::atomic::Ordering::Acquire)
                    .to_string(),
            ),
            (
                "looking_count".into(),
                core.latency.looking_count().to_string(),
            ),
        ]
        .into_iter()
        .chain(core.latency.mntr())
        .collect(),
        summaries: core.latency.summaries(&core.raft().entry_times().fsync),
        trace_mask: core.trace_mask(),
        digest_log: vec![(zxid, core.tree().digest() as i64)],
    }
}

/// What the four-letter words read of the core.
impl Core {
    fn tree(&self) -> &Tree {
        &self.tree
    }
    fn watches(&self) -> &WatchRegistry {
        &self.watches
    }
    fn config(&self) -> &Config {
        &self.cfg
    }
    fn trace_mask(&self) -> i64 {
        self.trace_mask
    }
    fn set_trace_mask(&mut self, mask: i64) {
        self.trace_mask = mask;
    }
    /// `srst`: the server-wide counters, reply sizes included (ZooKeeper's `ServerStats.reset`).
    fn reset_stats(&mut self) {
        self.stats.reset();
        self.response_sizes.reset();
    }
    fn stats(&self) -> &ServerStats {
        &self.stats
    }
    fn uptime(&self) -> Duration {
        self.started.elapsed()
    }
    fn raft(&self) -> &consensus::Handle {
        &self.raft
    }
    fn session_deadline(&self, session: i64) -> Option<Instant> {
        self.tracker.deadline(session)
    }
    fn conn_views(&mut self) -> impl Iterator<Item = LiveConn<'_>> {
        self.conns.values_mut().map(|c| LiveConn {
            remote: c.remote,
            session_id: c.session_id,
            timeout_ms: c.timeout_ms,
            queued: c.queue.len(),
            stats: &mut c.stats,
        })
    }
    fn conn_ids_and_sessions(&self) -> Vec<(ConnId, i64)> {
        self.conns
            .iter()
            .map(|(id, c)| (*id, c.session_id))
            .collect()
    }
    fn outstanding(&self) -> usize {
        self.conns.values().map(|c| c.queue.len()).sum()
    }
}
