//! `GET /metrics`: the Prometheus text format (0.0.4) with ZooKeeper 3.9's metric names and
//! types for what paddock has an equivalent of, plus paddock's own under `paddock_`.
//!
//! The families are built from a `ServerView` on each scrape and encoded by the `prometheus`
//! crate's `TextEncoder` (the crate's plain data model, not its registry: every value is read
//! from the core's view at scrape time, there is nothing to keep updated between scrapes).
//! `compat-tests/metrics/provided.txt` is the list of ZooKeeper names claimed here; the compat
//! suite checks them against a ZooKeeper 3.9 started with its Prometheus provider.

use prometheus::proto::{
    Counter, Gauge, LabelPair, Metric, MetricFamily, MetricType, Quantile, Summary,
};
use prometheus::{Encoder, TextEncoder};

use crate::fourlw::{Mode, Parts, ServerView};

/// The content type of the text exposition format.
pub const CONTENT_TYPE: &str = prometheus::TEXT_FORMAT;

/// What a scrape prints: `mntr`'s parts and the directory sizes (`paddock_*_dir_bytes`); no
/// connection, watch or session listing.
pub const PARTS: Parts = Parts {
    dir_sizes: true,
    ..Parts::MONITOR
};

fn family(name: &str, help: &str, kind: MetricType, metrics: Vec<Metric>) -> MetricFamily {
    let mut f = MetricFamily::default();
    f.set_name(name.to_string());
    // simpleclient's ZooKeeper families use the name as their help text.
    f.set_help(help.to_string());
    f.set_field_type(kind);
    f.set_metric(metrics);
    f
}

fn gauge_metric(v: f64) -> Metric {
    let mut g = Gauge::default();
    g.set_value(v);
    let mut m = Metric::default();
    m.set_gauge(g);
    m
}

struct Families(Vec<MetricFamily>);

impl Families {
    /// A ZooKeeper gauge: help = name, as ZooKeeper registers them.
    fn zk_gauge(&mut self, name: &str, v: f64) {
        self.0
            .push(family(name, name, MetricType::GAUGE, vec![gauge_metric(v)]));
    }

    fn gauge(&mut self, name: &str, help: &str, v: f64) {
        self.0
            .push(family(name, help, MetricType::GAUGE, vec![gauge_metric(v)]));
    }

    fn counter(&mut self, name: &str, help: &str, v: f64) {
        let mut c = Counter::default();
        c.set_value(v);
        let mut m = Metric::default();
        m.set_counter(c);
        self.0
            .push(family(name, help, MetricType::COUNTER, vec![m]));
    }

    /// A summary: its quantiles (NaN while empty, as simpleclient prints them), _count, _sum.
    fn summary(&mut self, s: &crate::latency::SummaryView) {
        let mut sum = Summary::default();
        sum.set_sample_count(s.count);
        sum.set_sample_sum(s.sum);
        sum.set_quantile(
            s.quantiles
                .iter()
                .map(|&(q, v)| {
                    let mut x = Quantile::default();
                    x.set_quantile(q);
                    x.set_value(v.unwrap_or(f64::NAN));
                    x
                })
                .collect(),
        );
        let mut m = Metric::default();
        m.set_summary(sum);
        self.0
            .push(family(&s.name, &s.help, MetricType::SUMMARY, vec![m]));
    }

    fn info(&mut self, name: &str, help: &str, labels: &[(&str, &str)]) {
        let mut m = gauge_metric(1.0);
        m.set_label(
            labels
                .iter()
                .map(|(k, v)| {
                    let mut l = LabelPair::default();
                    l.set_name(k.to_string());
                    l.set_value(v.to_string());
                    l
                })
                .collect(),
        );
        self.0.push(family(name, help, MetricType::GAUGE, vec![m]));
    }
}

/// The value of one of the view's `paddock_*` extras, if present and numeric.
fn extra(v: &ServerView, key: &str) -> Option<f64> {
    v.extra_metrics
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, val)| val.parse().ok())
}

/// The families of one scrape, ZooKeeper's first, then paddock's.
pub fn families(v: &ServerView) -> Vec<MetricFamily> {
    let mut f = Families(Vec::new());
    // ZooKeeper's gauges (ZooKeeperServer.registerMetrics and ServerMetrics), same names and types.
    f.zk_gauge("znode_count", v.node_count as f64);
    f.zk_gauge("watch_count", v.watch_count as f64);
    f.zk_gauge("ephemerals_count", v.ephemerals_count as f64);
    f.zk_gauge("approximate_data_size", v.approximate_data_size as f64);
    f.zk_gauge("global_sessions", v.global_sessions as f64);
    f.zk_gauge("local_sessions", v.local_sessions as f64);
    f.zk_gauge("num_alive_connections", v.connection_count as f64);
    f.zk_gauge("outstanding_requests", v.outstanding_requests as f64);
    f.zk_gauge("avg_latency", v.latency.avg());
    f.zk_gauge("min_latency", v.latency.min() as f64);
    f.zk_gauge("max_latency", v.latency.max() as f64);
    f.zk_gauge("packets_received", v.packets_received as f64);
    f.zk_gauge("packets_sent", v.packets_sent as f64);
    f.zk_gauge("uptime", v.uptime_ms as f64);
    f.zk_gauge("auth_failed_count", v.auth_failed_count as f64);
    f.zk_gauge(
        "last_client_response_size",
        v.last_client_response_size as f64,
    );
    f.zk_gauge(
        "min_client_response_size",
        v.min_client_response_size as f64,
    );
    f.zk_gauge(
        "max_client_response_size",
        v.max_client_response_size as f64,
    );
    // paddock never sheds connections nor throttles TLS handshakes (ZooKeeper's default).
    f.zk_gauge("connection_drop_probability", 0.0);
    f.zk_gauge("outstanding_tls_handshake", 0.0);
    f.zk_gauge(
        "non_mtls_local_conn_count",
        v.non_mtls_local_conn_count as f64,
    );
    f.zk_gauge(
        "non_mtls_remote_conn_count",
        v.non_mtls_remote_conn_count as f64,
    );
    if let Some(n) = v.open_file_descriptor_count {
        f.zk_gauge("open_file_descriptor_count", n as f64);
    }
    if let Some(n) = v.max_file_descriptor_count {
        f.zk_gauge("max_file_descriptor_count", n as f64);
    }
    if let Some(n) = v.quorum_size {
        f.zk_gauge("quorum_size", n as f64);
    }
    if let (Mode::Leader, Some(l)) = (v.mode, &v.leader) {
        f.zk_gauge("learners", l.learners as f64);
        f.zk_gauge("synced_followers", l.synced_followers as f64);
        f.zk_gauge(
            "synced_non_voting_followers",
            l.synced_non_voting_followers as f64,
        );
        f.zk_gauge("synced_observers", l.synced_observers as f64);
        f.zk_gauge("pending_syncs", l.pending_syncs as f64);
        f.zk_gauge("leader_uptime", l.leader_uptime_ms as f64);
    }
    // ZooKeeper's latency summaries (ServerMetrics), then paddock's write stages.
    for s in &v.summaries {
        f.summary(s);
    }
    // QuorumPeer counts each time it goes LOOKING (0 on a standalone server).
    // ServerMetrics' counters, never reset (ZooKeeper's Prometheus provider ignores srst). The
    // leader's proposal_count and commit_count count raft entries here (views.rs).
    for name in [
        "looking_count",
        "connection_request_count",
        "bytes_received_count",
        "proposal_count",
        "commit_count",
    ] {
        if let Some(n) = extra(v, name) {
            f.counter(name, name, n);
        }
    }
    // simpleclient_hotspot's process collector, same names.
    if let Some(n) = v.open_file_descriptor_count {
        f.gauge(
            "process_open_fds",
            "Number of open file descriptors.",
            n as f64,
        );
    }
    if let Some(n) = v.max_file_descriptor_count {
        f.gauge(
            "process_max_fds",
            "Maximum number of open file descriptors.",
            n as f64,
        );
    }

    // paddock's own.
    f.info(
        "paddock_info",
        "paddock's version and the ZooKeeper version it answers as.",
        &[
            ("version", env!("CARGO_PKG_VERSION")),
            ("zookeeper_version", crate::fourlw::ZK_COMPAT_VERSION),
            ("server_state", v.mode.as_str()),
        ],
    );
    f.gauge(
        "paddock_serving",
        "1 when this server answers client requests.",
        if v.is_serving { 1.0 } else { 0.0 },
    );
    f.gauge(
        "paddock_last_zxid",
        "The zxid (raft index) of the last entry applied to the tree.",
        v.zxid as f64,
    );
    let gauges = [
        ("paddock_raft_term", "The raft term this member is in."),
        (
            "paddock_raft_leader_id",
            "The member raft names as leader; 0 when none is known.",
        ),
        ("paddock_raft_commit_index", "The raft log's commit index."),
        (
            "paddock_applied_index",
            "The last raft index applied to the tree.",
        ),
        (
            "paddock_raft_first_index",
            "The first index still in the raft log.",
        ),
        (
            "paddock_raft_last_index",
            "The last index durable in the local raft log.",
        ),
        (
            "paddock_raft_snapshot_index",
            "The index of the newest durable raft snapshot.",
        ),
        (
            "paddock_last_snapshot_index",
            "The index of the last snapshot this server took or installed.",
        ),
        (
            "paddock_snapshots_encoding",
            "Snapshots being encoded now (at most one but for one a peer asked for).",
        ),
    ];
    for (name, help) in gauges {
        if let Some(x) = extra(v, name) {
            f.gauge(name, help, x);
        }
    }
    let counters = [
        (
            "paddock_raft_synced_writes",
            "paddock_raft_synced_writes_total",
            "Synced log records the raft thread wrote since start (one device write each).",
        ),
        (
            "paddock_raft_readies",
            "paddock_raft_readies_total",
            "raft Ready rounds processed since start.",
        ),
        (
            "paddock_raft_dropped_proposals",
            "paddock_raft_proposals_dropped_total",
            "Proposals the raft thread dropped since start (leadership lost, transfer, back-pressure).",
        ),
        (
            "paddock_raft_acks_skipped",
            "paddock_raft_acks_skipped_total",
            "Append acknowledgements not sent since start because they repeated the last one (commit-only appends).",
        ),
        (
            "paddock_client_accepted_tls",
            "paddock_client_accepted_tls_total",
            "Client connections whose TLS handshake completed since start (secure port and unified port).",
        ),
        (
            "paddock_client_accepted_plaintext",
            "paddock_client_accepted_plaintext_total",
            "Client connections served in plaintext since start, four-letter words included.",
        ),
        (
            "paddock_client_tls_refused",
            "paddock_client_tls_refused_total",
            "Client TLS handshakes that failed or timed out, or whose certificate was refused after them, since start.",
        ),
        (
            "paddock_peer_accepted_tls",
            "paddock_peer_accepted_tls_total",
            "Peer links this member accepted over TLS since start.",
        ),
        (
            "paddock_peer_accepted_plaintext",
            "paddock_peer_accepted_plaintext_total",
            "Peer links this member accepted in plaintext since start (none once the quorum is TLS-only).",
        ),
        (
            "paddock_peer_refused",
            "paddock_peer_refused_total",
            "Peer links refused since start, by either side: failed TLS or login, a certificate naming another member, a mismatched hello.",
        ),
        (
            "paddock_peer_login_failures",
            "paddock_peer_login_failures_total",
            "Quorum SASL logins that failed on links this member accepted.",
        ),
    ];
    for (key, name, help) in counters {
        if let Some(x) = extra(v, key) {
            f.counter(name, help, x);
        }
    }
    f.gauge(
        "paddock_data_dir_bytes",
        "Bytes in dataDir (snapshots, myid, session checkpoint).",
        v.data_dir_size as f64,
    );
    f.gauge(
        "paddock_log_dir_bytes",
        "Bytes in the raft directory (log segments, the RocksDB metadata checkpoint, snapshots).",
        v.log_dir_size as f64,
    );
    f.0
}

/// The scrape body.
pub fn render(v: &ServerView) -> String {
    let mut buf = Vec::new();
    // Only fails on a family without metrics or a bad name, which `families` never builds.
    if let Err(e) = TextEncoder::new().encode(&families(v), &mut buf) {
        return format!("# paddock: encoding the metrics failed: {e}\n");
    }
    String::from_utf8(buf).unwrap_or_default()
}
