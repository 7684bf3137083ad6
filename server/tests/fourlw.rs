//! Exact four-letter-word replies for a fixed `ServerView`, checked against ZooKeeper 3.9's
//! formats (`docs/protocol.md` §10.2) and the two client parsers that depend on them:
//! go-zookeeper's `srvr` regex and kazoo's `envi` version parsing (`docs/compat.md` §1, §5).

use std::net::SocketAddr;
use std::path::Path;

use paddock::config::{Config, FourLetterWhitelist};
use paddock::fourlw::{
    full_version, java_date, java_double, java_hex, java_socket_addr, parts_of, render, ConnView,
    ExpiryBucket, LatencyStats, LeaderView, Mode, ObserverView, Parts, ServerView, WatchSummary,
    NOT_SERVING, VERSION_REVISION, ZK_COMPAT_VERSION,
};
use wire::FourLetterWord as W;

const SID1: i64 = 0x100000a71bce0002;

fn version_line() -> String {
    format!(
        "Zookeeper version: 3.9.4-paddock-{}, built on 01/01/2025 00:00 GMT",
        env!("CARGO_PKG_VERSION")
    )
}

fn latency(samples: &[u64]) -> LatencyStats {
    let mut l = LatencyStats::default();
    for &s in samples {
        l.add(s);
    }
    l
}

fn view() -> ServerView {
    let conf = Config::parse_zoo_cfg(
        "dataDir=/var/zk\ndataLogDir=/var/zklog\nclientPort=2181\ntickTime=2000\n",
        Path::new("zoo.cfg"),
    )
    .unwrap();
    ServerView {
        is_serving: true,
        mode: Mode::Standalone,
        leader_id: 1,
        latency: latency(&[1, 2, 4]),
        packets_received: 20,
        packets_sent: 19,
        connection_count: 2,
        connections: vec![
            ConnView {
                remote: "127.0.0.1:50000".parse::<SocketAddr>().unwrap(),
                secure: false,
                interest_ops: 1,
                queued: 0,
                recved: 10,
                sent: 9,
                session_id: SID1,
                last_op: "GETD".into(),
                established_ms: 1_700_000_000_000,
                timeout_ms: 30000,
                last_cxid: 2,
                last_zxid: 0x7c,
                last_response_ms: 1_700_000_001_000,
                last_latency_ms: 1,
                latency: latency(&[0, 10, 5]),
            },
            ConnView {
                remote: "[::1]:50001".parse::<SocketAddr>().unwrap(),
                secure: false,
                interest_ops: 0,
                queued: 0,
                recved: 1,
                sent: 0,
                session_id: 0,
                last_op: "NA".into(),
                established_ms: 1_700_000_002_000,
                timeout_ms: 0,
                last_cxid: -1,
                last_zxid: -1,
                last_response_ms: 0,
                last_latency_ms: 0,
                latency: LatencyStats::default(),
            },
        ],
        outstanding_requests: 0,
        zxid: 0x1a2b,
        node_count: 7,
        conf_lines: conf.as_conf_lines(),
        environment: vec![
            ("host.name".into(), "zk1".into()),
            ("os.name".into(), "Linux".into()),
        ],
        watches_by_session: vec![
            (SID1, vec!["/a".into(), "/b".into()]),
            (2, vec!["/a".into()]),
        ],
        watches_by_path: vec![("/a".into(), vec![SID1, 2]), ("/b".into(), vec![SID1])],
        watch_summary: WatchSummary {
            connections: 2,
            paths: 2,
            total: 3,
        },
        watch_count: 5,
        session_buckets: vec![
            ExpiryBucket {
                expire_at_ms: 1_700_000_040_000,
                sessions: vec![SID1],
            },
            ExpiryBucket {
                expire_at_ms: 1_700_000_020_000,
                sessions: vec![2, 3],
            },
        ],
        ephemerals_by_session: vec![(SID1, vec!["/e1".into(), "/e2".into()])],
        ephemerals_count: 2,
        approximate_data_size: 345,
        global_sessions: 3,
        local_sessions: 0,
        data_dir_size: 4096,
        log_dir_size: 8192,
        uptime_ms: 123456,
        open_file_descriptor_count: Some(42),
        max_file_descriptor_count: Some(1024),
        last_client_response_size: 16,
        min_client_response_size: 16,
        max_client_response_size: 120,
        auth_failed_count: 1,
        non_mtls_local_conn_count: 3,
        non_mtls_remote_conn_count: 2,
        quorum_size: None,
        leader: None,
        extra_metrics: vec![],
        summaries: vec![],
        trace_mask: 306,
        digest_log: vec![(0x100000002, 1234567), (-1, -5)],
        last_snapshot: Some(paddock::fourlw::LastSnapshot {
            index: 0x64,
            zxid: 0x100000064,
            timestamp_s: 1_700_000_000,
        }),
    }
}

fn all() -> FourLetterWhitelist {
    FourLetterWhitelist::All
}

#[test]
fn srvr_prints_zookeeper_lines_in_order() {
    let expected = format!(
        "{}\nLatency min/avg/max: 1/2.3333/4\nReceived: 20\nSent: 19\nConnections: 2\nOutstanding: 0\n\
         Zxid: 0x1a2b\nMode: standalone\nNode count: 7\n",
        version_line()
    );
    assert_eq!(render(W::Srvr, &view(), &all()), expected);
}

#[test]
fn srvr_matches_go_zookeepers_health_check_regex() {
    // flw.go's FLWSrvr pattern, pieced together as go-zookeeper does.
    let ver = r"^Zookeeper version: ([A-Za-z0-9\.\-]+), built on (\d\d/\d\d/\d\d\d\d \d\d:\d\d [A-Za-z0-9:\+\-]+)";
    let lat = r"^Latency min/avg/max: (\d+)/([0-9.]+)/(\d+)";
    let net = r"^Received: (\d+).*\n^Sent: (\d+).*\n^Connections: (\d+).*\n^Outstanding: (\d+)";
    let state = r"^Zxid: (0x[A-Za-z0-9]+).*\n^Mode: (\w+).*\n^Node count: (\d+)";
    let re = regex::Regex::new(&format!(r"(?m:\A{ver}.*\n{lat}.*\n{net}.*\n{state})")).unwrap();

    // A fresh server too: no latency samples, zxid 0.
    let mut fresh = view();
    fresh.latency = LatencyStats::default();
    fresh.zxid = 0;
    for v in [view(), fresh] {
        let out = render(W::Srvr, &v, &FourLetterWhitelist::zookeeper_default());
        let caps = re
            .captures(&out)
            .unwrap_or_else(|| panic!("no match:\n{out}"));
        assert_eq!(&caps[1], VERSION_REVISION);
        // go parses the date with the layout "01/02/2006 15:04 MST".
        let date = &caps[2];
        let b = date.as_bytes();
        assert_eq!(date.len(), "01/02/2006 15:04 MST".len(), "{date}");
        assert!(b[2] == b'/' && b[5] == b'/' && b[10] == b' ' && b[13] == b':' && b[16] == b' ');
        let month: u32 = date[0..2].parse().unwrap();
        let day: u32 = date[3..5].parse().unwrap();
        assert!((1..=12).contains(&month) && (1..=31).contains(&day));
        assert!(date[17..].chars().all(|c| c.is_ascii_uppercase()));
        // go: strconv.ParseInt(zxid, 0, 64) and a known mode.
        assert!(i64::from_str_radix(caps[10].trim_start_matches("0x"), 16).is_ok());
        assert_eq!(&caps[11], "standalone");
    }
}

#[test]
fn envi_satisfies_kazoos_server_version_parsing() {
    let out = render(W::Envi, &view(), &all());
    assert_eq!(
        out,
        format!(
            "Environment:\nzookeeper.version={}\nhost.name=zk1\nos.name=Linux\n",
            version_line().trim_start_matches("Zookeeper version: ")
        )
    );
    // kazoo: split lines on '=', take zookeeper.version, the part before '-', split on '.', int().
    let value = out
        .lines()
        .filter_map(|l| l.split_once('='))
        .find(|(k, _)| *k == "zookeeper.version")
        .map(|(_, v)| v)
        .unwrap();
    let digits: Vec<u32> = value
        .split('-')
        .next()
        .unwrap()
        .split('.')
        .map(|d| d.parse().unwrap())
        .collect();
    assert_eq!(digits, vec![3, 9, 4]);
    assert_eq!(value.split('-').next().unwrap(), ZK_COMPAT_VERSION);
}

#[test]
fn full_version_has_revision_and_build_date() {
    assert_eq!(
        full_version(),
        format!(
            "3.9.4-paddock-{}, built on 01/01/2025 00:00 GMT",
            env!("CARGO_PKG_VERSION")
        )
    );
}

#[test]
fn stat_lists_clients_briefly_then_a_blank_line() {
    let expected = format!(
        "{}\nClients:\n /127.0.0.1:50000[1](queued=0,recved=10,sent=9)\n /0:0:0:0:0:0:0:1:50001[0](queued=0,recved=1,sent=0)\n\n\
         Latency min/avg/max: 1/2.3333/4\nReceived: 20\nSent: 19\nConnections: 2\nOutstanding: 0\n\
         Zxid: 0x1a2b\nMode: standalone\nNode count: 7\n",
        version_line()
    );
    assert_eq!(render(W::Stat, &view(), &all()), expected);
}

#[test]
fn stat_on_a_read_only_server_says_so_after_the_version() {
    let mut v = view();
    v.mode = Mode::ReadOnly;
    v.connections.clear();
    let out = render(W::Stat, &v, &all());
    assert!(
        out.starts_with(&format!(
            "{}\nREAD-ONLY mode; serving only read-only clients\nClients:\n\nLatency",
            version_line()
        )),
        "{out}"
    );
    assert!(out.contains("\nMode: read-only\n"));
    assert_eq!(render(W::Isro, &v, &all()), "ro");
}

#[test]
fn cons_prints_session_fields_only_for_established_sessions() {
    let expected = " /127.0.0.1:50000[1](queued=0,recved=10,sent=9,sid=0x100000a71bce0002,lop=GETD,\
                    est=1700000000000,to=30000,lcxid=0x2,lzxid=0x7c,lresp=1700000001000,llat=1,minlat=0,\
                    avglat=5,maxlat=10)\n /0:0:0:0:0:0:0:1:50001[0](queued=0,recved=1,sent=0)\n\n";
    assert_eq!(render(W::Cons, &view(), &all()), expected);
}

#[test]
fn cons_omits_lcxid_before_the_first_request() {
    let mut v = view();
    v.connections.truncate(1);
    v.connections[0].last_cxid = -1;
    let out = render(W::Cons, &v, &all());
    assert!(out.contains(",to=30000,lzxid=0x7c,"), "{out}");
}

#[test]
fn conf_inserts_measured_sizes_after_the_dirs() {
    let expected = "clientPort=2181\nsecureClientPort=-1\ndataDir=/var/zk\ndataDirSize=4096\n\
                    dataLogDir=/var/zklog\ndataLogSize=8192\ntickTime=2000\nmaxClientCnxns=60\n\
                    minSessionTimeout=4000\nmaxSessionTimeout=40000\nclientPortListenBacklog=-1\nserverId=0\n";
    assert_eq!(render(W::Conf, &view(), &all()), expected);
}

#[test]
fn mntr_prints_tab_separated_zk_keys() {
    let expected = format!(
        "zk_version\t{}\n\
         zk_server_state\tstandalone\n\
         zk_avg_latency\t2.3333\n\
         zk_max_latency\t4\n\
         zk_min_latency\t1\n\
         zk_packets_received\t20\n\
         zk_packets_sent\t19\n\
         zk_num_alive_connections\t2\n\
         zk_outstanding_requests\t0\n\
         zk_uptime\t123456\n\
         zk_znode_count\t7\n\
         zk_watch_count\t5\n\
         zk_ephemerals_count\t2\n\
         zk_approximate_data_size\t345\n\
         zk_global_sessions\t3\n\
         zk_local_sessions\t0\n\
         zk_open_file_descriptor_count\t42\n\
         zk_max_file_descriptor_count\t1024\n\
         zk_connection_drop_probability\t0.0\n\
         zk_last_client_response_size\t16\n\
         zk_max_client_response_size\t120\n\
         zk_min_client_response_size\t16\n\
         zk_outstanding_tls_handshake\t0\n\
         zk_auth_failed_count\t1\n\
         zk_non_mtls_remote_conn_count\t2\n\
         zk_non_mtls_local_conn_count\t3\n",
        version_line().trim_start_matches("Zookeeper version: ")
    );
    assert_eq!(render(W::Mntr, &view(), &all()), expected);
}

#[test]
fn mntr_on_a_leader_adds_leader_gauges_quorum_size_and_extras() {
    let mut v = view();
    v.mode = Mode::Leader;
    v.quorum_size = Some(3);
    v.leader = Some(LeaderView {
        learners: 2,
        synced_followers: 2,
        synced_non_voting_followers: 0,
        synced_observers: 0,
        pending_syncs: 0,
        leader_uptime_ms: 999,
        last_proposal_size: 80,
        min_proposal_size: 40,
        max_proposal_size: 200,
        observers: vec![],
    });
    v.extra_metrics = vec![("paddock_raft_term".into(), "4".into())];
    let out = render(W::Mntr, &v, &all());
    assert!(out.contains("zk_server_state\tleader\n"));
    assert!(out.ends_with(
        "zk_non_mtls_local_conn_count\t3\nzk_learners\t2\nzk_synced_followers\t2\nzk_synced_non_voting_followers\t0\n\
         zk_synced_observers\t0\nzk_pending_syncs\t0\nzk_leader_uptime\t999\nzk_last_proposal_size\t80\n\
         zk_min_proposal_size\t40\nzk_max_proposal_size\t200\nzk_quorum_size\t3\nzk_paddock_raft_term\t4\n"
    ));
    let srvr = render(W::Srvr, &v, &all());
    assert!(
        srvr.ends_with("Mode: leader\nNode count: 7\nProposal sizes last/min/max: 80/40/200\n"),
        "{srvr}"
    );
}

#[test]
fn wchs_counts_the_data_watch_table() {
    assert_eq!(
        render(W::Wchs, &view(), &all()),
        "2 connections watching 2 paths\nTotal watches:3\n"
    );
}

#[test]
fn wchc_lists_paths_under_each_session() {
    assert_eq!(
        render(W::Wchc, &view(), &all()),
        "0x100000a71bce0002\n\t/a\n\t/b\n0x2\n\t/a\n\n"
    );
}

#[test]
fn wchp_lists_sessions_under_each_path() {
    assert_eq!(
        render(W::Wchp, &view(), &all()),
        "/a\n\t0x100000a71bce0002\n\t0x2\n/b\n\t0x100000a71bce0002\n\n"
    );
}

#[test]
fn dump_prints_expiry_buckets_in_time_order_then_ephemerals() {
    let expected = "SessionTracker dump:\nSession Sets (2)/(3):\n2 expire at Tue Nov 14 22:13:40 UTC 2023:\n\
                    \t0x2\n\t0x3\n1 expire at Tue Nov 14 22:14:00 UTC 2023:\n\t0x100000a71bce0002\n\
                    ephemeral nodes dump:\nSessions with Ephemerals (1):\n0x100000a71bce0002:\n\t/e1\n\t/e2\n\
                    Connections dump:\n";
    assert_eq!(render(W::Dump, &view(), &all()), expected);
}

#[test]
fn dirs_prints_both_sizes() {
    assert_eq!(
        render(W::Dirs, &view(), &all()),
        "datadir_size: 4096\nlogdir_size: 8192\n"
    );
}

#[test]
fn short_replies_ruok_isro_srst_crst_gtmk_stmk_hash() {
    let v = view();
    assert_eq!(render(W::Ruok, &v, &all()), "imok");
    assert_eq!(render(W::Isro, &v, &all()), "rw");
    assert_eq!(render(W::Srst, &v, &all()), "Server stats reset.\n");
    assert_eq!(render(W::Crst, &v, &all()), "Connection stats reset.\n");
    assert_eq!(render(W::Gtmk, &v, &all()), "306");
    assert_eq!(render(W::Stmk, &v, &all()), "306");
    assert_eq!(
        render(W::Hash, &v, &all()),
        "100000002: 1234567\nffffffffffffffff: -5\n"
    );
}

#[test]
fn words_outside_the_whitelist_are_refused_by_name() {
    let only_srvr = FourLetterWhitelist::zookeeper_default();
    for w in [W::Ruok, W::Mntr, W::Stat, W::Envi, W::Isro, W::Stmk] {
        assert_eq!(
            render(w, &view(), &only_srvr),
            format!(
                "{} is not executed because it is not in the whitelist.\n",
                w.as_str()
            )
        );
    }
    assert!(render(W::Srvr, &view(), &only_srvr).starts_with("Zookeeper version: "));
    let some = FourLetterWhitelist::only([W::Ruok]);
    assert_eq!(render(W::Ruok, &view(), &some), "imok");
    assert_eq!(
        render(W::Cons, &view(), &some),
        "cons is not executed because it is not in the whitelist.\n"
    );
}

#[test]
fn a_server_not_serving_says_so_except_ruok_isro_envi_and_hash() {
    let mut v = view();
    v.is_serving = false;
    for w in [
        W::Srvr,
        W::Stat,
        W::Cons,
        W::Conf,
        W::Mntr,
        W::Wchs,
        W::Wchc,
        W::Wchp,
        W::Dump,
        W::Dirs,
        W::Srst,
        W::Crst,
    ] {
        assert_eq!(render(w, &v, &all()), format!("{NOT_SERVING}\n"), "{w:?}");
    }
    assert_eq!(render(W::Hash, &v, &all()), NOT_SERVING);
    assert_eq!(render(W::Ruok, &v, &all()), "imok");
    assert_eq!(render(W::Isro, &v, &all()), "null");
    assert!(render(W::Envi, &v, &all()).starts_with("Environment:\nzookeeper.version=3.9.4-"));
}

#[test]
fn latency_stats_follow_avg_min_max_counter() {
    let empty = LatencyStats::default();
    assert_eq!(
        (empty.min(), empty.avg(), empty.max(), empty.avg_whole()),
        (0, 0.0, 0, 0)
    );
    let l = latency(&[1, 1, 2]);
    assert_eq!(l.avg(), 1.3333);
    assert_eq!(latency(&[1, 2]).avg(), 1.5);
    // Half-up at the fifth decimal: 2/3 = 0.66666.. -> 0.6667.
    assert_eq!(latency(&[0, 0, 2]).avg(), 0.6667);
    assert_eq!(latency(&[0, 0, 2]).avg_whole(), 0);
    let mut r = latency(&[5]);
    r.reset();
    assert_eq!(r, LatencyStats::default());
}

#[test]
fn java_number_and_address_formats() {
    assert_eq!(java_double(0.0), "0.0");
    assert_eq!(java_double(2.0), "2.0");
    assert_eq!(java_double(2.3333), "2.3333");
    assert_eq!(java_double(1e7), "1.0E7");
    assert_eq!(java_double(0.0001), "1.0E-4");
    assert_eq!(java_hex(0), "0");
    assert_eq!(java_hex(-1), "ffffffffffffffff");
    assert_eq!(java_hex(0x100000002), "100000002");
    assert_eq!(
        java_socket_addr(&"10.0.0.5:2181".parse().unwrap()),
        "/10.0.0.5:2181"
    );
    assert_eq!(
        java_socket_addr(&"[fe80::1:ab]:7".parse().unwrap()),
        "/fe80:0:0:0:0:0:1:ab:7"
    );
}

#[test]
fn java_date_prints_utc_like_date_to_string() {
    assert_eq!(java_date(0), "Thu Jan 01 00:00:00 UTC 1970");
    assert_eq!(java_date(951_782_400_000), "Tue Feb 29 00:00:00 UTC 2000");
    assert_eq!(java_date(1_700_000_000_999), "Tue Nov 14 22:13:20 UTC 2023");
    assert_eq!(java_date(-1000), "Wed Dec 31 23:59:59 UTC 1969");
}

/// `v` reduced to `parts`, field by field as `fourlw::Parts` documents them (the destructuring
/// names every field, so a new one must be placed here too).
fn only(v: &ServerView, p: Parts) -> ServerView {
    let ServerView {
        is_serving,
        mode,
        leader_id,
        latency,
        packets_received,
        packets_sent,
        connection_count,
        connections,
        outstanding_requests,
        zxid,
        node_count,
        conf_lines,
        environment,
        watches_by_session,
        watches_by_path,
        watch_summary,
        watch_count,
        session_buckets,
        ephemerals_by_session,
        ephemerals_count,
        approximate_data_size,
        global_sessions,
        local_sessions,
        data_dir_size,
        log_dir_size,
        uptime_ms,
        open_file_descriptor_count,
        max_file_descriptor_count,
        last_client_response_size,
        min_client_response_size,
        max_client_response_size,
        auth_failed_count,
        non_mtls_local_conn_count,
        non_mtls_remote_conn_count,
        quorum_size,
        leader,
        extra_metrics,
        summaries,
        trace_mask,
        digest_log,
        last_snapshot,
    } = v.clone();
    let mut o = ServerView {
        is_serving,
        mode,
        leader_id,
        trace_mask,
        ..ServerView::default()
    };
    if p.summary {
        (o.latency, o.packets_received, o.packets_sent) = (latency, packets_received, packets_sent);
        (o.connection_count, o.outstanding_requests) = (connection_count, outstanding_requests);
        (o.zxid, o.node_count, o.leader) = (zxid, node_count, leader);
    }
    if p.counts {
        (o.uptime_ms, o.watch_count, o.ephemerals_count) =
            (uptime_ms, watch_count, ephemerals_count);
        o.approximate_data_size = approximate_data_size;
        (o.global_sessions, o.local_sessions) = (global_sessions, local_sessions);
        o.last_client_response_size = last_client_response_size;
        o.min_client_response_size = min_client_response_size;
        o.max_client_response_size = max_client_response_size;
        (o.auth_failed_count, o.quorum_size) = (auth_failed_count, quorum_size);
        o.non_mtls_local_conn_count = non_mtls_local_conn_count;
        o.non_mtls_remote_conn_count = non_mtls_remote_conn_count;
    }
    if p.extras {
        (o.extra_metrics, o.summaries) = (extra_metrics, summaries);
    }
    if p.connections {
        o.connections = connections;
    }
    if p.conf_lines {
        o.conf_lines = conf_lines;
    }
    if p.watch_summary {
        o.watch_summary = watch_summary;
    }
    if p.watches_by_session {
        o.watches_by_session = watches_by_session;
    }
    if p.watches_by_path {
        o.watches_by_path = watches_by_path;
    }
    if p.sessions {
        (o.session_buckets, o.ephemerals_by_session) = (session_buckets, ephemerals_by_session);
    }
    if p.digest_log {
        o.digest_log = digest_log;
    }
    if p.dir_sizes {
        (o.data_dir_size, o.log_dir_size) = (data_dir_size, log_dir_size);
    }
    if p.fds {
        o.open_file_descriptor_count = open_file_descriptor_count;
        o.max_file_descriptor_count = max_file_descriptor_count;
    }
    if p.environment {
        o.environment = environment;
    }
    if p.last_snapshot {
        o.last_snapshot = last_snapshot;
    }
    o
}

/// The fixture as a leader of three with one observer and paddock's extras: every field set.
fn leader_view() -> ServerView {
    let mut v = view();
    v.mode = Mode::Leader;
    v.quorum_size = Some(3);
    v.leader = Some(LeaderView {
        learners: 2,
        synced_followers: 1,
        synced_non_voting_followers: 0,
        synced_observers: 1,
        pending_syncs: 0,
        leader_uptime_ms: 999,
        last_proposal_size: -1,
        min_proposal_size: -1,
        max_proposal_size: -1,
        observers: vec![ObserverView {
            sid: 3,
            last_zxid: 0x1a2b,
            established_ms: 1_700_000_000_000,
        }],
    });
    v.extra_metrics = vec![("paddock_raft_term".into(), "4".into())];
    v
}

/// The core gathers for a word only `parts_of(word)` (`core::views`): each reply must come out
/// the same from those parts alone as from the whole view.
#[test]
fn each_word_prints_only_the_parts_it_gathers() {
    for v in [view(), leader_view()] {
        for w in &W::ALL {
            assert_eq!(
                render(*w, &only(&v, parts_of(*w)), &all()),
                render(*w, &v, &all()),
                "{w:?}"
            );
        }
    }
    // srvr, which every health check sends, reads counters: no watch, session or connection list.
    assert_eq!(
        parts_of(W::Srvr),
        Parts {
            summary: true,
            ..Parts::NONE
        }
    );
    assert_eq!(
        parts_of(W::Wchs),
        Parts {
            watch_summary: true,
            ..Parts::NONE
        }
    );
    assert_eq!(parts_of(W::Ruok), Parts::NONE);
}

/// The same for the AdminServer's commands and a /metrics scrape.
#[test]
fn each_admin_command_and_metrics_print_only_the_parts_they_gather() {
    use paddock::http::{admin, metrics};
    let cfg = std::sync::Arc::new(
        Config::parse_zoo_cfg(
            "dataDir=/var/zk\nclientPort=2181\nserver.1=10.0.0.1:2888:3888\n\
             server.2=10.0.0.2:2888:3888\nserver.3=10.0.0.3:2888:3888:observer\n",
            Path::new("zoo.cfg"),
        )
        .unwrap(),
    );
    for v in [view(), leader_view()] {
        for (command, _) in admin::COMMANDS {
            let from_parts = admin::parts_of(command).map(|p| only(&v, p));
            let full = admin::parts_of(command).map(|_| v.clone());
            assert_eq!(
                admin::answer(command, from_parts.as_ref(), &cfg),
                admin::answer(command, full.as_ref(), &cfg),
                "{command}"
            );
        }
        assert_eq!(
            metrics::render(&only(&v, metrics::PARTS)),
            metrics::render(&v)
        );
    }
    // Commands answered from the config ask the core nothing.
    for command in ["ruok", "initial_configuration", "voting_view", "snapshot"] {
        assert_eq!(admin::parts_of(command), None, "{command}");
    }
}
