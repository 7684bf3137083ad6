//! Where a write's time goes (issue #12) and ZooKeeper's latency summaries (issue #11), read from
//! a real server through `mntr` and `/metrics` after real client writes.

mod common;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use paddock::config::MetricsConfig;
use zookeeper_client::{Acls, CreateMode};

const STAGES: [&str; 7] = [
    "queue", "propose", "persist", "commit", "apply", "reply", "total",
];

async fn mntr(addr: SocketAddr) -> HashMap<String, u64> {
    common::four_letter(addr, "mntr")
        .await
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('\t')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

fn stage(m: &HashMap<String, u64>, stage: &str, what: &str) -> u64 {
    let key = format!("zk_paddock_write_stage_{stage}_{what}");
    *m.get(&key)
        .unwrap_or_else(|| panic!("mntr has no {key}: {m:?}"))
}

async fn scrape(addr: SocketAddr) -> String {
    http_get(addr, "/metrics").await
}

async fn http_get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
        .await
        .expect("reply in time")
        .unwrap();
    let text = String::from_utf8(out).unwrap();
    text.split_once("\r\n\r\n").unwrap().1.to_string()
}

/// The value of the sample `name` (with its labels, if any, as written).
fn sample(body: &str, name: &str) -> f64 {
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {name} in\n{body}"))
        .parse()
        .unwrap()
}

fn config(dir: &std::path::Path) -> paddock::config::Config {
    let mut cfg = common::test_config(dir);
    cfg.metrics = Some(MetricsConfig {
        host: "127.0.0.1".parse().unwrap(),
        port: 0,
    });
    cfg.snapshot_every_entries = 10;
    cfg
}

/// Waits until mntr shows `k` writes put on the wire: the writer records a reply's stage just
/// after the write that the client already read the reply from returned.
async fn settled(addr: SocketAddr, k: u64) -> HashMap<String, u64> {
    for _ in 0..100 {
        let m = mntr(addr).await;
        if stage(&m, "total", "count") >= k {
            return m;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("mntr never showed {k} writes: {:?}", mntr(addr).await);
}

#[tokio::test]
async fn every_write_is_timed_stage_by_stage() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::start_with(config(dir.path())).await;
    let addr = server.local_addr();
    let before = mntr(addr).await;
    for s in STAGES {
        assert_eq!(stage(&before, s, "count"), 0, "{s} before any write");
    }

    let zk = common::client(addr).await;
    let k = 25;
    for i in 0..k {
        zk.create(
            &format!("/n{i}"),
            b"x",
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    }
    for i in 0..5 {
        zk.get_data(&format!("/n{i}")).await.unwrap();
    }
    let m = settled(addr, k).await;
    let mut medians = 0;
    for s in STAGES {
        assert_eq!(stage(&m, s, "count"), k, "{s}: {m:?}");
        let (min, p50, p99, max) = (
            stage(&m, s, "min_us"),
            stage(&m, s, "p50_us"),
            stage(&m, s, "p99_us"),
            stage(&m, s, "max_us"),
        );
        assert!(
            min <= p50 && p50 <= p99 && p99 <= max,
            "{s}: {min} {p50} {p99} {max}"
        );
        assert!(stage(&m, s, "sum_us") >= max, "{s}");
        if s != "total" {
            medians += p50;
        }
    }
    let total_max = stage(&m, "total", "max_us");
    assert!(
        medians <= total_max,
        "sum of stage medians {medians} us > slowest write {total_max} us: {m:?}"
    );
    // A write's persist stage includes the synced RocksDB append: never nothing.
    assert!(stage(&m, "persist", "min_us") > 0, "{m:?}");

    let body = scrape(server.metrics_addr().unwrap()).await;
    for (name, quantiles) in [
        ("readlatency", &["0.5", "0.9", "0.99"][..]),
        ("updatelatency", &["0.5", "0.9", "0.99"]),
        ("fsynctime", &["0.5"]),
        ("snapshottime", &["0.5"]),
        ("election_time", &["0.5"]),
        ("startup_snap_load_time", &["0.5"]),
        ("startup_txns_load_time", &["0.5"]),
        ("startup_txns_loaded", &["0.5"]),
        ("dbinittime", &["0.5"]),
        (
            "paddock_write_stage_persist_seconds",
            &["0.5", "0.9", "0.99"],
        ),
    ] {
        assert!(
            body.contains(&format!("# TYPE {name} summary\n")),
            "{name} in\n{body}"
        );
        for q in quantiles {
            assert!(
                body.contains(&format!("{name}{{quantile=\"{q}\"}} ")),
                "{name} quantile {q} in\n{body}"
            );
        }
    }
    assert!(body.contains("# TYPE looking_count counter\n"), "{body}");
    // Every create (the session's creation is answered by the handshake, not timed).
    assert_eq!(sample(&body, "updatelatency_count"), k as f64);
    assert_eq!(sample(&body, "readlatency_count"), 5.0);
    assert!(sample(&body, "fsynctime_count") >= k as f64, "{body}");
    assert_eq!(
        sample(&body, "paddock_write_stage_total_seconds_count"),
        k as f64
    );
    // A standalone server elects nobody, like ZooKeeper's.
    assert_eq!(sample(&body, "election_time_count"), 0.0);
    assert!(sample(&body, "election_time{quantile=\"0.5\"}").is_nan());
    assert_eq!(sample(&body, "looking_count"), 0.0);
    // Started on an empty directory: one (empty) snapshot load, no log replayed.
    assert_eq!(sample(&body, "startup_snap_load_time_count"), 1.0);
    assert_eq!(sample(&body, "dbinittime_count"), 1.0);
    assert_eq!(sample(&body, "startup_txns_loaded_count"), 0.0);
    // One snapshot every 10 entries: at least two by now (taken off the core task).
    for _ in 0..100 {
        if sample(
            &scrape(server.metrics_addr().unwrap()).await,
            "snapshottime_count",
        ) >= 2.0
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let body = scrape(server.metrics_addr().unwrap()).await;
    assert!(sample(&body, "snapshottime_count") >= 2.0, "{body}");
    // What a restart will replay: the log after the newest durable snapshot, once the snapshot
    // writer caught up with the core.
    let mut replay = None;
    for _ in 0..100 {
        let m = mntr(addr).await;
        if m["zk_paddock_raft_snapshot_index"] == m["zk_paddock_last_snapshot_index"] {
            replay = Some(m["zk_paddock_raft_last_index"] - m["zk_paddock_raft_snapshot_index"]);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let replay = replay.expect("the snapshot writer caught up");
    server.shutdown().await;
    drop(zk);

    // A restart replays the log after the newest snapshot: startup_txns_loaded counts it.
    let server = common::start_with(config(dir.path())).await;
    let body = scrape(server.metrics_addr().unwrap()).await;
    if replay == 0 {
        assert_eq!(sample(&body, "startup_txns_loaded_count"), 0.0, "{body}");
    } else {
        assert_eq!(sample(&body, "startup_txns_loaded_count"), 1.0, "{body}");
        assert_eq!(sample(&body, "startup_txns_loaded_sum"), replay as f64);
        assert_eq!(sample(&body, "startup_txns_load_time_count"), 1.0);
    }
    assert_eq!(sample(&body, "startup_snap_load_time_count"), 1.0);
    // Nothing written since this start.
    assert_eq!(sample(&body, "updatelatency_count"), 0.0);
    // The tree came back: the snapshot read from its file a piece at a time, then the log.
    let zk = common::client(server.local_addr()).await;
    for i in 0..k {
        let (data, stat) = zk.get_data(&format!("/n{i}")).await.unwrap();
        assert_eq!((data, stat.version), (b"x".to_vec(), 0), "/n{i}");
    }
    drop(zk);
    server.shutdown().await;
}

/// Three voters and an observer in this process, over loopback, each with its AdminServer and
/// `/metrics` on a free port; Raft ticks of 20 ms.
fn ensemble(root: &std::path::Path) -> Vec<paddock::config::Config> {
    let extra = "admin.serverAddress=127.0.0.1\nadmin.serverPort=0\n";
    common::ensemble::ensemble_configs_with(root, 3, 1, extra)
        .into_iter()
        .map(|mut cfg| {
            cfg.metrics = Some(MetricsConfig {
                host: "127.0.0.1".parse().unwrap(),
                port: 0,
            });
            cfg
        })
        .collect()
}

async fn admin(server: &paddock::startup::Server, command: &str) -> serde_json::Value {
    let body = http_get(
        server.admin_addr().unwrap(),
        &format!("/commands/{command}"),
    )
    .await;
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{command}: {e}: {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_through_an_observer_are_timed_there_and_the_leader_lists_its_observer() {
    let root = tempfile::tempdir().unwrap();
    let cfgs = ensemble(root.path());
    let starts: Vec<_> = cfgs
        .iter()
        .cloned()
        .map(|c| tokio::spawn(paddock::startup::Server::start(c)))
        .collect();
    let mut servers = Vec::new();
    for h in starts {
        servers.push(h.await.unwrap().expect("member starts"));
    }
    let observer = &servers[3];
    // The observer serves once it knows the leader.
    let mut zk = None;
    for _ in 0..200 {
        if common::four_letter_try(observer.local_addr(), "srvr")
            .await
            .is_some_and(|t| t.contains("Mode: observer"))
        {
            zk = Some(common::client(observer.local_addr()).await);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let zk = zk.expect("the observer serves");
    let k = 10;
    for i in 0..k {
        zk.create(
            &format!("/o{i}"),
            b"x",
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    }
    // Forwarded writes: every stage timed on the observer, which holds the session...
    let m = settled(observer.local_addr(), k).await;
    for s in STAGES {
        assert_eq!(stage(&m, s, "count"), k, "{s}: {m:?}");
    }
    // ...and none on the members that only applied them.
    for member in &servers[..3] {
        let m = mntr(member.local_addr()).await;
        assert_eq!(stage(&m, "total", "count"), 0, "{m:?}");
    }
    // Every member looked for a leader once at start and found one.
    for member in &servers {
        let body = scrape(member.metrics_addr().unwrap()).await;
        assert!(sample(&body, "looking_count") >= 1.0, "{body}");
        assert!(sample(&body, "election_time_count") >= 1.0, "{body}");
    }

    // The leader lists the observer, as ZooKeeper's leader does; followers list none.
    let mut leader = None;
    for (i, member) in servers[..3].iter().enumerate() {
        if admin(member, "leader").await["is_leader"] == true {
            leader = Some(i);
        }
    }
    let leader = &servers[leader.expect("a leader")];
    let peer_port = cfgs[3].servers[3].peer_port;
    let mut listed = serde_json::Value::Null;
    for _ in 0..100 {
        listed = admin(leader, "observers").await;
        if listed["observers"][0]["last_zxid"].as_i64().unwrap_or(0) >= 2 + k as i64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(listed["synced_observers"], 1, "{listed}");
    let o = &listed["observers"][0];
    assert_eq!(o["sid"], 4, "{listed}");
    assert_eq!(
        o["remote_socket_address"],
        format!("/127.0.0.1:{peer_port}"),
        "{listed}"
    );
    assert!(o["last_zxid"].as_i64().unwrap() >= 2 + k as i64, "{listed}");
    for member in &servers[..3] {
        if std::ptr::eq(member, leader) {
            continue;
        }
        let v = admin(member, "observers").await;
        assert_eq!(v["synced_observers"], 0, "{v}");
        assert_eq!(v["observers"], serde_json::json!([]), "{v}");
    }
    drop(zk);
    for s in servers {
        s.shutdown().await;
    }
}
