//! Four-letter words on the client port and the HTTP endpoints' views: applies the side effects
//! of `srst`/`crst`/`stmk` and gathers, on the core task, the in-memory parts of a
//! `fourlw::ServerView` that the reply prints (`fourlw::Parts`), one gatherer per part.
//! `FourLetterJob::finish` then adds what costs file-system calls (directory sizes, `/proc`) and
//! renders the text with the pure `fourlw::render`, on a blocking thread.
//!
//! The core task serves every client, so what it does here is bounded by what is printed: `srvr`
//! (every health check) reads counters and copies no watch or session, `wchs` counts the watch
//! table without copying it, and a word that is not whitelisted never reaches the core at all
//! (the connection answers it). It walks no directory: a `mntr` scrape every few seconds would
//! otherwise delay every reply.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::time::{Duration, Instant};
use wire::{FourLetterWord, OpCode};
use znode_tree::{Tree, WatchRegistry};

use super::Core;
use crate::config::{Config, FourLetterWhitelist};
use crate::fourlw::{self, ConnView, ExpiryBucket, Mode, Parts, ServerView, WatchSummary};
use crate::latency::Latency;
use crate::msg::{ConnId, ViewReset};
use crate::session::SessionId;
use crate::stats::{ClientPortCounters, ConnStats, ResponseSizes, ServerStats};

/// What the core measures for the views: the server's counters (every room counts into them),
/// reply sizes and write latencies (shared with the connection writers), the trace mask and the
/// core's start.
pub(super) struct Meters {
    /// Server-wide counters for the four-letter words.
    pub(super) stats: ServerStats,
    /// Filled in by the connection writers, which see the encoded replies.
    pub(super) response_sizes: Arc<ResponseSizes>,
    /// Per-stage write latency and ZooKeeper's latency summaries (`latency.rs`), shared with
    /// the connection writers.
    pub(super) latency: Arc<Latency>,
    /// Set by `stmk`, read by `gtmk`. paddock logs through `tracing` filters, not ZooKeeper's
    /// trace mask, so the mask is only kept and reported, as a tool that sets it expects.
    trace_mask: i64,
    /// When the core started, for the uptime the four-letter words report.
    started: Instant,
    /// The client ports' accept and TLS handshake counters, kept by the accept loops.
    pub(super) client_ports: Arc<ClientPortCounters>,
}

impl Meters {
    pub(super) fn new(ensemble_member: bool, now: Instant) -> Meters {
        Meters {
            stats: ServerStats::default(),
            response_sizes: Arc::default(),
            latency: Arc::new(Latency::new(ensemble_member)),
            trace_mask: fourlw::DEFAULT_TRACE_MASK,
            started: now,
            client_ports: Arc::default(),
        }
    }
}

/// One connection as the listings show it (`cons`, `crst`).
struct LiveConn<'a> {
    remote: SocketAddr,
    session_id: i64,
    /// The negotiated session timeout.
    timeout_ms: i32,
    /// Requests in the connection's FIFO.
    queued: usize,
    /// Came through the secure client port.
    secure: bool,
    stats: &'a mut ConnStats,
}

/// A four-letter word's answer, half made on the core task.
pub(super) struct FourLetterJob {
    word: FourLetterWord,
    whitelist: FourLetterWhitelist,
    view: ServerView,
    /// What `finish` reads from the file system: the parts that cost file-system calls.
    files: Parts,
    /// dataDir and the raft directory, whose sizes `finish` adds when `files.dir_sizes`.
    dirs: (PathBuf, PathBuf),
}

impl FourLetterJob {
    /// Adds the file-system facts `finish` adds and returns the view (the HTTP endpoints render
    /// it themselves). Blocking IO: run it off the core task.
    pub(super) fn finish_view(mut self) -> ServerView {
        self.fill_files();
        self.view
    }

    fn fill_files(&mut self) {
        let (data_dir, raft_dir) = &self.dirs;
        if self.files.dir_sizes {
            self.view.data_dir_size = dir_size(data_dir);
            self.view.log_dir_size = dir_size(raft_dir);
        }
        if self.files.fds {
            self.view.open_file_descriptor_count = open_fds();
            self.view.max_file_descriptor_count = max_fds();
        }
        if self.files.environment {
            self.view.environment = environment();
        }
        if let (true, Some(last)) = (self.files.last_snapshot, self.view.last_snapshot.as_mut()) {
            let file = consensus::snapshot_file::path_for(&raft_dir.join("snapshots"), last.index);
            if let Ok(t) = std::fs::metadata(file).and_then(|m| m.modified()) {
                last.timestamp_s = t
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(-1, |d| d.as_secs() as i64);
            }
        }
    }

    /// Adds the file-system facts the word prints, then renders. Blocking IO: run it off the
    /// core task.
    pub(super) fn finish(mut self) -> String {
        self.fill_files();
        fourlw::render(self.word, &self.view, &self.whitelist)
    }
}

/// `remote` is the connection asking: ZooKeeper counts and lists it among the connections
/// (`Connections: 1` on an idle server), so paddock does too. `cons` and `stat` list the
/// connections of the port asked (`secure_port`), as each of ZooKeeper's connection factories
/// lists its own; `srvr`'s count is of both. `mask` is `stmk`'s argument.
pub(super) fn four_letter(
    core: &mut Core,
    word: FourLetterWord,
    mask: Option<i64>,
    remote: SocketAddr,
    secure_port: bool,
) -> FourLetterJob {
    let whitelist = core.config().four_letter_words.clone();
    // The connection refuses such a word itself; should one arrive, it costs nothing here either.
    let parts = if whitelist.allows(word) {
        fourlw::parts_of(word)
    } else {
        Parts::NONE
    };
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
    let mut view = gather(core, parts);
    if parts.summary {
        view.connection_count += 1;
    }
    if parts.connections {
        view.connections.retain(|c| c.secure == secure_port);
        view.connections.push(ConnView {
            remote,
            secure: secure_port,
            interest_ops: 0,
            queued: 0,
            recved: 1,
            sent: 0,
            session_id: 0,
            last_op: op_name(OpCode::Notification).to_string(),
            established_ms: core.wall.now_ms(),
            timeout_ms: 0,
            last_cxid: 0,
            last_zxid: 0,
            last_response_ms: 0,
            last_latency_ms: 0,
            latency: Default::default(),
        });
    }
    job(core, word, whitelist, view, parts)
}

/// The view an HTTP endpoint renders (`CoreMsg::View`): `parts`, after `reset`. Unlike a
/// four-letter word it lists no connection of its own (the HTTP request is not a client).
pub(super) fn http_view(core: &mut Core, reset: ViewReset, parts: Parts) -> FourLetterJob {
    match reset {
        ViewReset::Nothing => {}
        ViewReset::TraceMask(mask) => core.set_trace_mask(mask),
        ViewReset::ServerStats => core.reset_stats(),
        ViewReset::ConnectionStats => {
            for conn in core.conn_views() {
                conn.stats.reset();
            }
        }
    }
    let view = gather(core, parts);
    job(
        core,
        FourLetterWord::Mntr,
        FourLetterWhitelist::All,
        view,
        parts,
    )
}

fn job(
    core: &Core,
    word: FourLetterWord,
    whitelist: FourLetterWhitelist,
    view: ServerView,
    parts: Parts,
) -> FourLetterJob {
    let cfg = core.config();
    FourLetterJob {
        word,
        whitelist,
        view,
        files: Parts {
            dir_sizes: parts.dir_sizes,
            fds: parts.fds,
            environment: parts.environment,
            last_snapshot: parts.last_snapshot,
            ..Parts::NONE
        },
        dirs: (cfg.data_dir.clone(), cfg.raft_dir()),
    }
}

/// The in-memory `parts` of the view, each from its own gatherer; the rest stays at its default.
fn gather(core: &mut Core, parts: Parts) -> ServerView {
    let mut v = base(core);
    if parts.summary {
        summary(core, &mut v);
    }
    if parts.counts {
        counts(core, &mut v);
    }
    if parts.extras {
        extras(core, &mut v);
    }
    if parts.connections {
        v.connections = connections(core);
    }
    if parts.conf_lines {
        // Nothing secret is printed today; masked all the same, so that no key added later can be.
        v.conf_lines = crate::redact::pairs(core.config().as_conf_lines());
    }
    if parts.watch_summary {
        let c = core.watches().counts();
        v.watch_summary = WatchSummary {
            connections: c.data_watchers as u64,
            paths: c.data_paths as u64,
            total: c.data_watches as u64,
        };
    }
    if parts.watches_by_session || parts.watches_by_path {
        // Watchers are connections; ZooKeeper's listings name sessions.
        let session_of: HashMap<ConnId, i64> = core.conn_ids_and_sessions().into_iter().collect();
        let session = |w: &ConnId| session_of.get(w).copied().unwrap_or(0);
        if parts.watches_by_session {
            v.watches_by_session = core
                .watches()
                .data_by_watcher()
                .into_iter()
                .map(|(w, paths)| (session(&w), paths))
                .collect();
        }
        if parts.watches_by_path {
            v.watches_by_path = core
                .watches()
                .data_by_path()
                .into_iter()
                .map(|(p, ws)| (p, ws.iter().map(session).collect()))
                .collect();
        }
    }
    if parts.sessions {
        sessions(core, &mut v);
    }
    if parts.digest_log {
        v.digest_log = vec![(core.tree().last_zxid(), core.tree().digest() as i64)];
    }
    if parts.last_snapshot {
        // Index 1 is the bootstrap snapshot of the empty tree, never a file of its own. One from
        // before the last restore had zxids the restore replaced (no offset maps them now): none
        // is named until the first snapshot after it.
        let index = core.raft().status().snapshot_index;
        let tree = core.tree();
        let restored_at = tree.restored_zxid().wrapping_sub(tree.zxid_offset());
        let after_restore = tree.restored_zxid() == 0 || index as i64 >= restored_at;
        v.last_snapshot = (index > 1 && after_restore).then(|| fourlw::LastSnapshot {
            index,
            zxid: core.tree().zxid_at(index),
            timestamp_s: -1,
        });
    }
    v
}

/// What every view holds: a few fields that cost nothing.
fn base(core: &Core) -> ServerView {
    let status = core.raft().status();
    let read_only = !core.leader_known() && core.config().read_only_mode;
    ServerView {
        is_serving: core.serving() || read_only,
        mode: mode(core, read_only, status.is_leader, status.is_learner),
        leader_id: status.leader_id,
        trace_mask: core.trace_mask(),
        ..ServerView::default()
    }
}

fn mode(core: &Core, read_only: bool, is_leader: bool, is_learner: bool) -> Mode {
    if !core.is_ensemble() {
        Mode::Standalone
    } else if read_only {
        Mode::ReadOnly
    } else if is_leader {
        Mode::Leader
    } else if core.is_observer(is_learner) {
        Mode::Observer
    } else {
        Mode::Follower
    }
}

/// `srvr`: counters, and the leader's gauges when this server leads.
fn summary(core: &Core, v: &mut ServerView) {
    let stats = core.stats();
    v.latency = stats.latency;
    v.packets_received = stats.packets_received;
    v.packets_sent = stats.packets_sent;
    v.connection_count = core.conn_count() as u64;
    v.outstanding_requests = core.outstanding() as u64;
    v.zxid = core.tree().last_zxid();
    v.node_count = core.tree().node_count() as u64;
    if v.mode == Mode::Leader {
        v.leader = Some(leader(core));
    }
}

fn leader(core: &Core) -> fourlw::LeaderView {
    let me = core.raft().status().id;
    let progress = core.raft().progress();
    let active: Vec<_> = progress
        .iter()
        .filter(|p| p.id != me && p.recent_active)
        .collect();
    let leader_uptime = core.leader_uptime();
    // A removed member raft still replicates to is a learner in raft but a follower to
    // ZooKeeper's leader: a synced follower, and a non-voting one.
    let non_voting = core.leftover_learners();
    let observer = |p: &&&consensus::PeerProgress| p.is_learner && !non_voting.contains(&p.id);
    fourlw::LeaderView {
        learners: active.len() as u64,
        synced_followers: active.iter().filter(|p| !observer(p)).count() as u64,
        synced_non_voting_followers: active.iter().filter(|p| non_voting.contains(&p.id)).count()
            as u64,
        synced_observers: active.iter().filter(|p| observer(p)).count() as u64,
        pending_syncs: core.pending_syncs() as u64,
        leader_uptime_ms: leader_uptime.as_millis() as u64,
        last_proposal_size: -1,
        min_proposal_size: -1,
        max_proposal_size: -1,
        observers: active
            .iter()
            .filter(|p| observer(p))
            .map(|p| fourlw::ObserverView {
                sid: p.id,
                last_zxid: core.tree().zxid_at(p.matched),
                established_ms: core.wall.now_ms() - leader_uptime.as_millis() as i64,
            })
            .collect(),
    }
}

/// `mntr`'s further counters: no table is copied (the watch count is one pass over its paths).
fn counts(core: &Core, v: &mut ServerView) {
    let tree = core.tree();
    v.uptime_ms = core.uptime().as_millis() as u64;
    v.watch_count = core.watches().counts().total() as u64;
    v.ephemerals_count = tree.ephemerals_count() as u64;
    v.approximate_data_size = tree.approximate_data_size();
    v.global_sessions = tree.sessions().count() as u64;
    v.local_sessions = 0;
    let (last, min, max) = core.meters.response_sizes.get();
    v.last_client_response_size = last;
    v.min_client_response_size = min;
    v.max_client_response_size = max;
    // ZooKeeper counts a failed TLS handshake as a failed authentication.
    let ports = &core.meters.client_ports;
    v.auth_failed_count = core.stats().auth_failed + ClientPortCounters::get(&ports.tls_refused);
    v.non_mtls_local_conn_count = ClientPortCounters::get(&ports.non_mtls_local);
    v.non_mtls_remote_conn_count = ClientPortCounters::get(&ports.non_mtls_remote);
    v.quorum_size = core
        .is_ensemble()
        .then(|| core.raft().membership().0.len() as u64);
}

/// paddock's own metrics (`mntr`'s `zk_paddock_*`, `/metrics`) and the latency summaries.
fn extras(core: &Core, v: &mut ServerView) {
    let status = core.raft().status();
    v.extra_metrics = vec![
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
            core.applied.index.to_string(),
        ),
        (
            "paddock_last_snapshot_index".into(),
            core.snapshots.last_index.to_string(),
        ),
        (
            "paddock_snapshots_encoding".into(),
            core.snapshots.encoding().to_string(),
        ),
        (
            "looking_count".into(),
            core.meters.latency.looking_count().to_string(),
        ),
        // ZooKeeper's leader counts its proposals and commits; a standalone server proposes to
        // no quorum, and its counts stay 0 as ZooKeeper's do.
        (
            "proposal_count".into(),
            if core.is_ensemble() {
                status.proposed
            } else {
                0
            }
            .to_string(),
        ),
        (
            "commit_count".into(),
            if core.is_ensemble() {
                status.committed_as_leader
            } else {
                0
            }
            .to_string(),
        ),
    ]
    .into_iter()
    .chain(client_ports(core))
    .chain(peer_links(core))
    .chain(core.meters.latency.mntr())
    .collect();
    v.summaries = core
        .meters
        .latency
        .summaries(&core.raft().entry_times().fsync);
}

/// The client ports' counters: connections served in plaintext and over TLS (the plaintext count
/// stays put once every client of a unified port speaks TLS), and TLS handshakes refused.
fn client_ports(core: &Core) -> Vec<(String, String)> {
    let c = &core.meters.client_ports;
    vec![
        (
            "paddock_client_accepted_tls".into(),
            ClientPortCounters::get(&c.accepted_tls).to_string(),
        ),
        (
            "paddock_client_accepted_plaintext".into(),
            ClientPortCounters::get(&c.accepted_plaintext).to_string(),
        ),
        (
            "paddock_client_tls_refused".into(),
            ClientPortCounters::get(&c.tls_refused).to_string(),
        ),
        (
            "connection_request_count".into(),
            ClientPortCounters::get(&c.connection_requests).to_string(),
        ),
        (
            "bytes_received_count".into(),
            ClientPortCounters::get(&c.bytes_received).to_string(),
        ),
    ]
}

/// The peer port's counters (an ensemble member only): links accepted over TLS and in plaintext
/// (the plaintext count stays put once a rolling upgrade to TLS is done), and refusals, failed
/// quorum logins among them.
fn peer_links(core: &Core) -> Vec<(String, String)> {
    let Some(ens) = core.ensemble.as_ref() else {
        return Vec::new();
    };
    let s = ens.net.net_stats();
    vec![
        (
            "paddock_peer_accepted_tls".into(),
            s.accepted_tls.to_string(),
        ),
        (
            "paddock_peer_accepted_plaintext".into(),
            s.accepted_plain.to_string(),
        ),
        ("paddock_peer_refused".into(), s.refused.to_string()),
        (
            "paddock_peer_login_failures".into(),
            s.login_failures.to_string(),
        ),
    ]
}

/// `cons`, `stat`: every client connection.
fn connections(core: &mut Core) -> Vec<ConnView> {
    let now = Instant::now();
    let now_ms = core.wall.now_ms();
    core.conn_views()
        .map(
            |LiveConn {
                 remote,
                 session_id,
                 timeout_ms,
                 queued,
                 secure,
                 stats,
             }| ConnView {
                remote,
                secure,
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
            },
        )
        .collect()
}

/// `dump`: sessions by expiry bucket, and each session's ephemerals.
fn sessions(core: &Core, v: &mut ServerView) {
    let now = Instant::now();
    let now_ms = core.wall.now_ms();
    let mut buckets: std::collections::BTreeMap<i64, Vec<i64>> = Default::default();
    for s in core.tree().sessions() {
        if let Some(deadline) = core.session_deadline(s.id) {
            buckets
                .entry(wall_ms(deadline, now, now_ms))
                .or_default()
                .push(s.id);
        }
        let eph = core.tree().ephemerals_of(s.id);
        if !eph.is_empty() {
            v.ephemerals_by_session.push((s.id, eph));
        }
    }
    v.session_buckets = buckets
        .into_iter()
        .map(|(expire_at_ms, sessions)| ExpiryBucket {
            expire_at_ms,
            sessions,
        })
        .collect();
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
        self.meters.trace_mask
    }
    fn set_trace_mask(&mut self, mask: i64) {
        self.meters.trace_mask = mask;
    }
    /// `srst`: the server-wide counters, reply sizes included (ZooKeeper's `ServerStats.reset`).
    fn reset_stats(&mut self) {
        self.meters.stats.reset();
        self.meters.response_sizes.reset();
    }
    fn stats(&self) -> &ServerStats {
        &self.meters.stats
    }
    fn uptime(&self) -> Duration {
        self.meters.started.elapsed()
    }
    fn raft(&self) -> &consensus::Handle {
        &self.raft
    }
    fn session_deadline(&self, session: i64) -> Option<Instant> {
        self.sessions.deadline(SessionId(session))
    }
    fn conn_views(&mut self) -> impl Iterator<Item = LiveConn<'_>> {
        self.conns.values_mut().map(|c| LiveConn {
            remote: c.remote,
            session_id: c.session_id.0,
            timeout_ms: c.timeout_ms,
            queued: c.queue.len(),
            secure: c.secure_port,
            stats: &mut c.stats,
        })
    }
    fn conn_ids_and_sessions(&self) -> Vec<(ConnId, i64)> {
        self.conns
            .iter()
            .map(|(id, c)| (*id, c.session_id.0))
            .collect()
    }
    fn conn_count(&self) -> usize {
        self.conns.len()
    }
    fn outstanding(&self) -> usize {
        self.conns.values().map(|c| c.queue.len()).sum()
    }
}
