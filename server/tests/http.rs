//! The AdminServer and the Prometheus endpoint over real HTTP requests to a real server:
//! exact metric names and types, exact JSON fields and types, and the answers for unknown and
//! unhonoured commands.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use paddock::config::{MetricsConfig, PROMETHEUS_PROVIDER};
use zookeeper_client::{Acls, CreateMode};

/// One request; returns (status, headers, body).
async fn get(addr: SocketAddr, request: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
        .await
        .expect("reply in time")
        .unwrap();
    let text = String::from_utf8(out).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a head");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_string(), body.to_string())
}

async fn path(addr: SocketAddr, p: &str) -> (u16, String, String) {
    get(addr, &format!("GET {p} HTTP/1.1\r\nHost: x\r\n\r\n")).await
}

async fn json(addr: SocketAddr, p: &str) -> Value {
    let (status, head, body) = path(addr, p).await;
    assert_eq!(status, 200, "{p}: {body}");
    assert!(head.contains("Content-Type: application/json"), "{head}");
    serde_json::from_str(&body).unwrap()
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

fn sorted(list: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

async fn server() -> (tempfile::TempDir, paddock::startup::Server) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::test_config(dir.path());
    cfg.metrics = Some(MetricsConfig {
        host: "127.0.0.1".parse().unwrap(),
        port: 0,
    });
    let server = common::start_with(cfg).await;
    (dir, server)
}

#[tokio::test]
async fn metrics_have_zookeeper_names_and_types() {
    let (_dir, server) = server().await;
    let zk = common::client(server.local_addr()).await;
    zk.create(
        "/m",
        b"abc",
        &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
    )
    .await
    .unwrap();
    let (_, _, watcher) = zk.get_and_watch_data("/m").await.unwrap();
    let addr = server.metrics_addr().expect("metrics endpoint");
    let (status, head, body) = path(addr, "/metrics").await;
    assert_eq!(status, 200);
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4"),
        "{head}"
    );
    let line = |name: &str| -> String {
        body.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no sample {name} in\n{body}"))
            .to_string()
    };
    for (name, kind) in [
        ("znode_count", "gauge"),
        ("watch_count", "gauge"),
        ("ephemerals_count", "gauge"),
        ("approximate_data_size", "gauge"),
        ("num_alive_connections", "gauge"),
        ("outstanding_requests", "gauge"),
        ("avg_latency", "gauge"),
        ("uptime", "gauge"),
        ("open_file_descriptor_count", "gauge"),
        ("process_open_fds", "gauge"),
        ("paddock_raft_term", "gauge"),
        ("paddock_applied_index", "gauge"),
        ("paddock_raft_synced_writes_total", "counter"),
        ("paddock_raft_proposals_dropped_total", "counter"),
        ("paddock_raft_acks_skipped_total", "counter"),
    ] {
        assert!(
            body.contains(&format!("# TYPE {name} {kind}\n")),
            "{name} {kind} in\n{body}"
        );
    }
    // The tree's five built-in nodes plus /m; the one data watch; the one ephemeral.
    assert_eq!(line("znode_count"), "znode_count 6");
    assert_eq!(line("watch_count"), "watch_count 1");
    assert_eq!(line("ephemerals_count"), "ephemerals_count 1");
    assert_eq!(line("num_alive_connections"), "num_alive_connections 1");
    assert_eq!(line("global_sessions"), "global_sessions 1");
    // Standalone: no quorum gauges.
    assert!(!body.contains("quorum_size"), "{body}");
    assert!(body.contains("paddock_info{"), "{body}");
    drop(watcher);

    let (status, _, _) = path(addr, "/nope").await;
    assert_eq!(status, 404);
    let (status, head, _) = get(addr, "POST /metrics HTTP/1.1\r\n\r\n").await;
    assert_eq!(status, 405, "{head}");
    let (status, _, _) = get(addr, "garbage\r\n\r\n").await;
    assert_eq!(status, 400);
    server.shutdown().await;
}

#[tokio::test]
async fn admin_commands_answer_with_zookeeper_fields() {
    let (_dir, server) = server().await;
    let addr = server.admin_addr().expect("admin server");
    let zk = common::client(server.local_addr()).await;
    zk.create(
        "/a",
        b"x",
        &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
    )
    .await
    .unwrap();
    let (_, _, _w) = zk.get_and_watch_data("/a").await.unwrap();
    let sid = zk.session_id().0;

    // The list page: one link per command, ZooKeeper's names.
    let (status, _, page) = path(addr, "/commands").await;
    assert_eq!(status, 200);
    assert!(
        page.contains("<a href=\"/commands/monitor\">monitor</a>"),
        "{page}"
    );
    // ZooKeeper 3.9.5's 28 and 3.10's shed_connections.
    assert_eq!(page.matches("<a href=").count(), 29);

    let ruok = json(addr, "/commands/ruok").await;
    assert_eq!(ruok, serde_json::json!({"command": "ruok", "error": null}));

    let stats = json(addr, "/commands/stats").await;
    assert_eq!(
        keys(&stats),
        sorted(&[
            "version",
            "read_only",
            "server_stats",
            "client_response",
            "node_count",
            "connections",
            "secure_connections",
            "command",
            "error"
        ])
    );
    assert_eq!(stats["node_count"], 6);
    assert_eq!(stats["read_only"], false);
    assert_eq!(
        keys(&stats["server_stats"]),
        sorted(&[
            "packets_sent",
            "packets_received",
            "fsync_threshold_exceed_count",
            "client_response_stats",
            "uptime",
            "data_dir_size",
            "log_dir_size",
            "provider_null",
            "last_processed_zxid",
            "outstanding_requests",
            "server_state",
            "avg_latency",
            "max_latency",
            "min_latency",
            "num_alive_client_connections",
            "auth_failed_count",
            "non_mtlsremote_conn_count",
            "non_mtlslocal_conn_count"
        ])
    );
    assert_eq!(stats["server_stats"]["server_state"], "standalone");
    assert!(stats["server_stats"]["avg_latency"].is_f64());
    assert!(stats["server_stats"]["max_latency"].is_u64());
    assert_eq!(stats["server_stats"]["num_alive_client_connections"], 1);
    assert_eq!(
        keys(&stats["connections"][0]),
        sorted(&[
            "remote_socket_address",
            "interest_ops",
            "outstanding_requests",
            "packets_received",
            "packets_sent"
        ])
    );

    let cons = json(addr, "/commands/connections").await;
    let c = &cons["connections"][0];
    assert_eq!(c["session_id"], sid);
    assert_eq!(c["last_operation"], "GETD");
    for k in [
        "remote_socket_address",
        "interest_ops",
        "outstanding_requests",
        "packets_received",
        "packets_sent",
        "session_id",
        "last_operation",
        "established",
        "session_timeout",
        "last_cxid",
        "last_zxid",
        "last_response_time",
        "last_latency",
        "min_latency",
        "avg_latency",
        "max_latency",
    ] {
        assert!(c.get(k).is_some(), "{k} missing in {c}");
    }
    assert!(c["remote_socket_address"]
        .as_str()
        .unwrap()
        .starts_with("127.0.0.1:"));

    let watches = json(addr, "/commands/watches").await;
    assert_eq!(
        watches["session_id_to_watched_paths"],
        serde_json::json!({ sid.to_string(): ["/a"] })
    );
    let by_path = json(addr, "/commands/watches_by_path").await;
    assert_eq!(
        by_path["path_to_session_ids"],
        serde_json::json!({ "/a": [sid] })
    );
    let summary = json(addr, "/commands/watch_summary").await;
    assert_eq!(summary["num_connections"], 1);
    assert_eq!(summary["num_paths"], 1);
    assert_eq!(summary["num_total_watches"], 1);
    let dump = json(addr, "/commands/dump").await;
    assert_eq!(
        dump["session_id_to_ephemeral_paths"],
        serde_json::json!({ sid.to_string(): ["/a"] })
    );
    assert_eq!(
        dump["expiry_time_to_session_ids"]
            .as_object()
            .unwrap()
            .len(),
        1
    );

    let dirs = json(addr, "/commands/dirs").await;
    assert!(dirs["datadir_size"].as_u64().unwrap() > 0);
    assert!(dirs["logdir_size"].is_u64());
    let conf = json(addr, "/commands/configuration").await;
    assert_eq!(conf["tick_time"], 100);
    assert_eq!(conf["server_id"], 0);
    assert_eq!(conf["client_port_listen_backlog"], -1);
    let monitor = json(addr, "/commands/mntr").await;
    assert_eq!(monitor["command"], "monitor");
    assert_eq!(monitor["znode_count"], 6);
    assert_eq!(monitor["server_state"], "standalone");
    assert!(monitor["avg_latency"].is_f64());
    assert_eq!(
        json(addr, "/commands/is_read_only").await["read_only"],
        false
    );
    assert_eq!(
        json(addr, "/commands/get_trace_mask").await["tracemask"],
        306
    );
    assert_eq!(
        json(addr, "/commands/zabstate").await,
        serde_json::json!({"voting": false, "zabstate": "", "command": "zabstate", "error": null})
    );
    assert_eq!(
        json(addr, "/commands/leader").await,
        serde_json::json!({"command": "leader", "error": "server is not initialized"})
    );
    let env = json(addr, "/commands/environment").await;
    assert!(env["zookeeper.version"]
        .as_str()
        .unwrap()
        .starts_with("3.9.4-paddock-"));
    assert!(env.get("os.name").is_some());

    // stat_reset clears the packet counters.
    assert_eq!(json(addr, "/commands/srst").await["error"], Value::Null);
    let after = json(addr, "/commands/server_stats").await;
    assert_eq!(after["server_stats"]["packets_received"], 0);

    // Unknown and unhonoured commands: 200 with an error, as ZooKeeper answers.
    assert_eq!(
        json(addr, "/commands/nosuch").await,
        serde_json::json!({"command": "nosuch", "error": "Unknown command: nosuch"})
    );
    let sysp = json(addr, "/commands/system_properties").await;
    assert_eq!(sysp["command"], "system_properties");
    assert!(sysp["error"]
        .as_str()
        .unwrap()
        .starts_with("not provided by paddock"));
    // No snapshot yet: ZooKeeper's answer without a SnapshotInfo.
    assert_eq!(
        json(addr, "/commands/lsnp").await,
        serde_json::json!({"zxid": "ffffffffffffffff", "timestamp": -1, "command": "last_snapshot", "error": null})
    );
    // snapshot needs credentials, as ZooKeeper's (tests/zk_snapshot.rs has the rest).
    let (status, _, body) = path(addr, "/commands/snapshot").await;
    assert_eq!(status, 401);
    assert!(
        body.contains("Auth info is missing for the command"),
        "{body}"
    );
    let (status, _, _) = path(addr, "/elsewhere").await;
    assert_eq!(status, 404);
    server.shutdown().await;
}

#[test]
fn config_keys() {
    let cfg = paddock::config::Config::parse_zoo_cfg(
        &format!(
            "dataDir=/tmp/x\nclientPort=2181\nmetricsProvider.className={PROMETHEUS_PROVIDER}\nmetricsProvider.httpPort=7001\nmetricsProvider.exportJvmInfo=true\nadmin.serverPort=9090\nadmin.commandURL=/cmd/\n"
        ),
        std::path::Path::new("zoo.cfg"),
    )
    .unwrap();
    assert_eq!(
        cfg.metrics,
        Some(MetricsConfig {
            host: "0.0.0.0".parse().unwrap(),
            port: 7001
        })
    );
    assert!(cfg.admin.enabled);
    assert_eq!(cfg.admin.port, 9090);
    assert_eq!(cfg.admin.address.to_string(), "0.0.0.0");
    assert_eq!(cfg.admin.command_url, "/cmd");
    let off = paddock::config::Config::parse_zoo_cfg(
        "dataDir=/tmp/x\nclientPort=2181\nadmin.enableServer=false\n",
        std::path::Path::new("zoo.cfg"),
    )
    .unwrap();
    assert!(!off.admin.enabled);
    assert_eq!(off.metrics, None);
    let err = paddock::config::Config::parse_zoo_cfg(
        "dataDir=/tmp/x\nclientPort=2181\nmetricsProvider.className=com.example.Nope\n",
        std::path::Path::new("zoo.cfg"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("zoo.cfg:3: metricsProvider.className:"),
        "{err}"
    );
    let embedded = paddock::config::Config::embedded_default();
    assert_eq!(embedded.admin.address.to_string(), "127.0.0.1");
    assert_eq!(embedded.admin.port, 8080);
}

/// ZooKeeper's `initial_configuration` is the zoo.cfg text as read; paddock's is the same text
/// with each secret value masked, and nothing else changed. The four-letter `conf` and the
/// `configuration` command print no secret either.
#[tokio::test]
async fn initial_configuration_masks_secret_values_only() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let cfg_path = dir.path().join("zoo.cfg");
    let text = format!(
        "# secrets below\n\
         dataDir={}\n\
         clientPort=2181\n\
         DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=\n\
         SASLAuthenticationProvider.superPassword = hunter2\n\
         ssl.keyStore.password=storepass\n\
         ssl.keyStore.passwordPath=/etc/zk/keystore.pw\n\
         4lw.commands.whitelist=conf\n",
        data.display()
    );
    std::fs::write(&cfg_path, &text).unwrap();
    let mut cfg = paddock::config::Config::from_zoo_cfg(&cfg_path).unwrap();
    cfg.client_port = 0;
    cfg.client_port_address = "127.0.0.1".parse().unwrap();
    cfg.admin.address = "127.0.0.1".parse().unwrap();
    cfg.admin.port = 0;
    let server = common::start_with(cfg).await;
    let addr = server.admin_addr().expect("admin server");

    let want = format!(
        "# secrets below\n\
         dataDir={}\n\
         clientPort=2181\n\
         DigestAuthenticationProvider.superDigest=******\n\
         SASLAuthenticationProvider.superPassword = ******\n\
         ssl.keyStore.password=******\n\
         ssl.keyStore.passwordPath=/etc/zk/keystore.pw\n\
         4lw.commands.whitelist=conf\n",
        data.display()
    );
    for name in ["initial_configuration", "icfg"] {
        assert_eq!(
            json(addr, &format!("/commands/{name}")).await,
            serde_json::json!({
                "initial_configuration": want,
                "command": "initial_configuration",
                "error": null,
            })
        );
    }
    let conf = common::four_letter(server.local_addr(), "conf").await;
    let (_, _, configuration) = path(addr, "/commands/configuration").await;
    for secret in ["D/InIHSb7yEEbrWz8b9l71RjZJU=", "hunter2", "storepass"] {
        assert!(!conf.contains(secret), "{conf}");
        assert!(!configuration.contains(secret), "{configuration}");
    }
    server.shutdown().await;
}

/// Whether the server closes `s` within `within`, without a byte of reply.
async fn closed_at_once(s: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 64];
    matches!(
        tokio::time::timeout(within, s.read(&mut buf)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

/// Each endpoint serves 64 connections at once: the 65th is closed as soon as it is accepted
/// (a client that does not finish its request would otherwise be held for the 10 s read
/// timeout), and the 64 are served as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_endpoint_closes_the_65th_concurrent_connection_at_once() {
    let (_dir, server) = server().await;
    for (addr, path) in [
        (server.admin_addr().unwrap(), "/commands/ruok"),
        (server.metrics_addr().unwrap(), "/metrics"),
    ] {
        let mut held = Vec::new();
        for _ in 0..64 {
            let mut s = TcpStream::connect(addr).await.unwrap();
            // A request line, not yet the blank line that ends the head.
            s.write_all(format!("GET {path} HTTP/1.1\r\n").as_bytes())
                .await
                .unwrap();
            held.push(s);
        }
        let mut extra = TcpStream::connect(addr).await.unwrap();
        assert!(
            closed_at_once(&mut extra, Duration::from_secs(3)).await,
            "{path}: the 65th is closed"
        );
        // The 64 were being served: one finishes its request and gets its reply.
        let mut first = held.remove(0);
        first.write_all(b"\r\n").await.unwrap();
        let mut reply = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), first.read_to_end(&mut reply))
            .await
            .unwrap()
            .unwrap();
        assert!(reply.starts_with(b"HTTP/1.1 200 OK\r\n"), "{path}");
        // Its slot is free again once the reply is sent.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(format!("GET {path} HTTP/1.1\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut out = Vec::new();
            let _ = s.read_to_end(&mut out).await;
            if out.starts_with(b"HTTP/1.1 200 OK\r\n") {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{path}: a freed slot serves"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    server.shutdown().await;
}

/// A client that sends its request and never reads the reply holds its connection until the
/// write timeout, not for ever: with one slot, a second client is refused while the first holds
/// it, and a third is served once the timeout has passed. The reply (64 MiB) is larger than
/// both sockets' buffers, so the server's write really waits on the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_its_reply_is_dropped_after_the_write_timeout() {
    use paddock::http::admin_tls::Transport;
    use paddock::http::{serve, Limits, Response};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let limits = Limits {
        max_connections: 1,
        read_timeout: Duration::from_secs(10),
        write_timeout: Duration::from_secs(2),
        max_body: 0,
    };
    let task = tokio::spawn(serve(
        listener,
        limits,
        Transport::Plain,
        |req| async move {
            let body = if req.path == "/big" {
                vec![b'x'; 64 << 20]
            } else {
                b"small\n".to_vec()
            };
            Response::new(200, "text/plain", body)
        },
    ));

    let mut stuck = TcpStream::connect(addr).await.unwrap();
    stuck.write_all(b"GET /big HTTP/1.1\r\n\r\n").await.unwrap();
    let started = tokio::time::Instant::now();
    // The reply's status line shows the server holds the slot and writes: reading it frees a few
    // bytes of the 64 MB, and the server stays blocked.
    let mut status = [0u8; 17];
    stuck.read_exact(&mut status).await.unwrap();
    assert_eq!(&status, b"HTTP/1.1 200 OK\r\n");
    let mut second = TcpStream::connect(addr).await.unwrap();
    assert!(closed_at_once(&mut second, Duration::from_secs(1)).await);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the refusal was checked while the first client held the slot"
    );

    let deadline = started + Duration::from_secs(10);
    let served_at = loop {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let _ = s.write_all(b"GET /small HTTP/1.1\r\n\r\n").await;
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out).await;
        if !out.is_empty() {
            let text = String::from_utf8(out).unwrap();
            assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
            assert!(text.ends_with("\r\n\r\nsmall\n"), "{text}");
            break started.elapsed();
        }
        assert!(tokio::time::Instant::now() < deadline, "never served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        served_at >= Duration::from_secs(2),
        "served only after the write timeout: {served_at:?}"
    );
    drop(stuck);
    task.abort();
}

/// The value of the sample `name` in a scrape.
fn sample(body: &str, name: &str) -> f64 {
    body.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no sample {name} in\n{body}"))
        .parse()
        .unwrap()
}

/// The frame a raw client writes for `req` (length prefix included).
fn frame_len(xid: i32, req: &wire::Request) -> u64 {
    use wire::Record;
    let mut w = wire::Writer::new();
    let at = w.begin_frame();
    wire::RequestHeader {
        xid,
        op_type: req.opcode().code(),
    }
    .encode(&mut w);
    req.encode_body(&mut w);
    w.finish_frame(at);
    w.buf.len() as u64
}

#[tokio::test]
async fn byte_connection_proposal_and_commit_counters_count_what_zookeeper_counts() {
    use wire::Record;
    let (_dir, server) = server().await;
    let addr = server.metrics_addr().expect("metrics endpoint");
    let scrape = || async move { path(addr, "/metrics").await.2 };
    let body = scrape().await;
    for name in [
        "connection_request_count",
        "bytes_received_count",
        "proposal_count",
        "commit_count",
    ] {
        assert!(
            body.contains(&format!("# TYPE {name} counter\n")),
            "{name} counter in\n{body}"
        );
        assert_eq!(sample(&body, name), 0.0, "{name}");
    }

    // One ConnectRequest, one request, one four-letter word: 4 bytes of length and the frame
    // each, 4 for the word.
    let connect = wire::ConnectRequest {
        timeout: 30_000,
        passwd: Some(vec![0; 16]),
        read_only: Some(false),
        ..Default::default()
    };
    let mut w = wire::Writer::new();
    let at = w.begin_frame();
    connect.encode(&mut w);
    w.finish_frame(at);
    let connect_len = w.buf.len() as u64;
    let mut raw = common::RawClient::connect(server.local_addr(), 30_000).await;
    let create = wire::Request::Create(wire::ops::create::CreateRequest {
        path: "/counted".into(),
        data: Some(b"12345".to_vec()),
        acl: wire::Acl::open_unsafe(),
        flags: 0,
    });
    raw.send(1, &create).await;
    assert_eq!(raw.recv().await.unwrap().0.err, 0);
    assert_eq!(
        common::four_letter(server.local_addr(), "ruok").await,
        "imok"
    );

    let body = scrape().await;
    assert_eq!(sample(&body, "connection_request_count"), 1.0);
    assert_eq!(
        sample(&body, "bytes_received_count"),
        (connect_len + frame_len(1, &create) + 4) as f64
    );
    // A standalone server proposes to no quorum: 0, as ZooKeeper's.
    assert_eq!(sample(&body, "proposal_count"), 0.0);
    assert_eq!(sample(&body, "commit_count"), 0.0);
    // mntr prints them too, as ZooKeeper's with its metrics provider.
    assert_eq!(
        common::mntr_value(server.local_addr(), "zk_connection_request_count").await,
        1
    );
    // srst does not reset them (ZooKeeper's Prometheus provider cannot).
    let admin = server.admin_addr().unwrap();
    assert_eq!(json(admin, "/commands/srst").await["error"], Value::Null);
    let after = scrape().await;
    assert_eq!(sample(&after, "connection_request_count"), 1.0);
    drop(raw);
    server.shutdown().await;
}

async fn post(addr: SocketAddr, p: &str, auth: Option<&str>, body: &str) -> (u16, Value) {
    let auth = auth.map_or(String::new(), |a| format!("Authorization: {a}\r\n"));
    let (status, _, text) = get(
        addr,
        &format!(
            "POST {p} HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    )
    .await;
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[tokio::test]
async fn shed_connections_closes_the_share_asked_and_the_sessions_live_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::test_config(dir.path());
    cfg.super_digest = Some(znode_tree::acl::digest_id("admin:pw"));
    let server = common::start_with(cfg).await;
    let admin = server.admin_addr().expect("admin server");
    let cmd = "/commands/shed_connections";
    let auth = Some("digest admin:pw");

    let mut a = common::RawClient::connect(server.local_addr(), 30_000).await;
    let mut b = common::RawClient::connect(server.local_addr(), 30_000).await;
    let zk = common::client(server.local_addr()).await;
    zk.create(
        "/s",
        b"",
        &CreateMode::Persistent.with_acls(Acls::anyone_all()),
    )
    .await
    .unwrap();
    let sid = zk.session_id();
    // The root only alice's (and the super user's), so that a caller can fall short of it.
    zk.auth("digest", b"alice:secret").await.unwrap();
    zk.set_acl("/", &Acls::creator_all(), None).await.unwrap();

    // Refusals, each before anything is closed.
    assert_eq!(
        post(admin, cmd, None, r#"{"percentage": 100}"#).await,
        (
            401,
            serde_json::json!({"command": "shed_connections", "error": "Auth info is missing for the command"})
        )
    );
    assert_eq!(
        post(
            admin,
            cmd,
            Some("digest admin:wrong"),
            r#"{"percentage": 100}"#
        )
        .await,
        (
            403,
            serde_json::json!({"command": "shed_connections", "error": "Not authorized"})
        )
    );
    assert_eq!(
        post(admin, cmd, auth, r#"{"percentage": 101}"#).await,
        (
            400,
            serde_json::json!({"command": "shed_connections", "error": "Percentage must be between 0 and 100"})
        )
    );
    assert_eq!(
        post(admin, cmd, auth, r#"{"share": 5}"#).await,
        (
            400,
            serde_json::json!({"command": "shed_connections", "error": "Missing required field: percentage"})
        )
    );
    let (status, bad) = post(admin, cmd, auth, "{").await;
    assert_eq!(status, 400);
    assert!(bad["error"]
        .as_str()
        .unwrap()
        .starts_with("Invalid JSON or failed to read request body: "));
    let (status, _, _) = path(admin, cmd).await;
    assert_eq!(status, 405);
    assert_eq!(
        post(admin, "/commands/shed", auth, r#"{"percentage": 0}"#).await,
        (
            200,
            serde_json::json!({"command": "shed_connections", "error": null, "connections_shed": 0, "percentage_requested": 0})
        )
    );

    // 100%: all three, deterministically.
    assert_eq!(
        post(admin, cmd, auth, r#"{"percentage": 100}"#).await,
        (
            200,
            serde_json::json!({"command": "shed_connections", "error": null, "connections_shed": 3, "percentage_requested": 100})
        )
    );
    assert!(a.closed_by_server().await);
    assert!(b.closed_by_server().await);
    // The session lives on: the library reconnects with it and goes on (a request sent before it
    // saw the close fails with ConnectionLoss and is sent again).
    let mut tries = 0;
    while let Err(e) = zk.set_data("/s", b"after", None).await {
        assert_eq!(e, zookeeper_client::Error::ConnectionLoss);
        tries += 1;
        assert!(tries < 50, "no reconnection");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(zk.session_id(), sid);
    assert_eq!(zk.get_data("/s").await.unwrap().0, b"after");
    server.shutdown().await;
}

#[tokio::test]
async fn set_trace_mask_and_last_snapshot_answer_as_zookeeper() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::test_config(dir.path());
    cfg.snapshot_every_entries = 5;
    let server = common::start_with(cfg).await;
    let admin = server.admin_addr().expect("admin server");

    assert_eq!(
        json(admin, "/commands/set_trace_mask?traceMask=0").await,
        serde_json::json!({"tracemask": 0, "command": "set_trace_mask", "error": null})
    );
    assert_eq!(json(admin, "/commands/gtmk").await["tracemask"], 0);
    assert_eq!(
        json(admin, "/commands/stmk").await,
        serde_json::json!({"command": "set_trace_mask", "error": "setTraceMask requires long traceMask argument"})
    );
    assert_eq!(
        json(admin, "/commands/stmk?traceMask=x1").await,
        serde_json::json!({"command": "set_trace_mask", "error": "setTraceMask requires long traceMask argument, got x1"})
    );
    assert_eq!(json(admin, "/commands/gtmk").await["tracemask"], 0);
    assert_eq!(
        json(admin, "/commands/stmk?x=1&traceMask=-2").await["tracemask"],
        -2
    );
    assert_eq!(common::four_letter(server.local_addr(), "gtmk").await, "-2");

    // Snapshots every 5 entries: the last one saved names its zxid (hex, no 0x) and its file's
    // time in seconds.
    let zk = common::client(server.local_addr()).await;
    for i in 0..12 {
        zk.create(
            &format!("/n{i}"),
            b"",
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    // Snapshots are taken in the background, so one may land between the two reads: read the
    // snapshot index on both sides of last_snapshot and compare only when it held still.
    let mut lsnp = Value::Null;
    let mut index = 0;
    for _ in 0..100 {
        let before =
            common::mntr_value(server.local_addr(), "zk_paddock_raft_snapshot_index").await;
        lsnp = json(admin, "/commands/last_snapshot").await;
        index = common::mntr_value(server.local_addr(), "zk_paddock_raft_snapshot_index").await;
        if lsnp["zxid"] != "ffffffffffffffff" && before == index {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(index > 1, "{lsnp}");
    // No restore: a log position is its zxid.
    assert_eq!(lsnp["zxid"], format!("{index:x}"), "{lsnp}");
    let ts = lsnp["timestamp"].as_i64().unwrap();
    assert!((now - 60..=now + 1).contains(&ts), "{ts} against {now}");
    assert_eq!(
        keys(&lsnp),
        sorted(&["zxid", "timestamp", "command", "error"])
    );
    server.shutdown().await;
}
