//! The way in and the way back, in process: a ZooKeeper-format snapshot from the AdminServer's
//! `snapshot` command (its auth, headers, switch and rate limit), decoded with zk-format and
//! checked node by node against the tree; `paddock import` of that snapshot into a new data
//! directory, served again with every node and stat the same; `paddock export` offline. The
//! real-ZooKeeper versions of these are compat-tests/migration.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zookeeper_client::{Acls, CreateMode};

async fn get(addr: SocketAddr, p: &str, auth: Option<&str>) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let auth = auth.map_or(String::new(), |a| format!("Authorization: {a}\r\n"));
    s.write_all(format!("GET {p} HTTP/1.1\r\nHost: x\r\n{auth}\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut out))
        .await
        .expect("reply in time")
        .unwrap();
    let at = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(out[..at].to_vec()).unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head, out[at + 4..].to_vec())
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
}

/// Path -> (data, stat fields, ACL) as a client reads them.
async fn dump(addr: SocketAddr) -> BTreeMap<String, String> {
    let zk = common::client(addr).await;
    zk.auth("digest", b"admin:pw").await.unwrap();
    let mut out = BTreeMap::new();
    let mut stack = vec!["/".to_string()];
    while let Some(p) = stack.pop() {
        let (data, stat) = zk.get_data(&p).await.unwrap();
        let (acl, _) = zk.get_acl(&p).await.unwrap();
        out.insert(p.clone(), format!("{data:?} {stat:?} {acl:?}"));
        for c in zk.list_children(&p).await.unwrap() {
            stack.push(if p == "/" {
                format!("/{c}")
            } else {
                format!("{p}/{c}")
            });
        }
    }
    out
}

#[tokio::test]
async fn admin_snapshot_import_and_export_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::test_config(dir.path());
    // admin:pw, the superDigest form: admin:base64(sha1("admin:pw")).
    cfg.super_digest = Some(znode_tree::acl::digest_id("admin:pw"));
    let tree_cfg = cfg.clone();
    let server = common::start_with(cfg).await;
    let addr = server.local_addr();
    let zk = common::client(addr).await;
    zk.auth("digest", b"alice:secret").await.unwrap();
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    zk.create("/a", b"1", &open).await.unwrap();
    for i in 0..5 {
        zk.create(
            "/a/s-",
            b"x",
            &CreateMode::PersistentSequential.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
        let _ = i;
    }
    zk.delete("/a/s-0000000001", None).await.unwrap();
    zk.create(
        "/private",
        b"p",
        &CreateMode::Persistent.with_acls(Acls::creator_all()),
    )
    .await
    .unwrap();
    zk.create(
        "/e",
        b"",
        &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
    )
    .await
    .unwrap();
    zk.set_data("/a", b"2", None).await.unwrap();
    // The root only alice's (and the super user's): others are not authorized.
    zk.set_acl("/", &Acls::creator_all(), None).await.unwrap();

    let admin = server.admin_addr().expect("admin server");
    let (status, _, body) = get(admin, "/commands/snapshot", None).await;
    assert_eq!(status, 401, "{}", String::from_utf8_lossy(&body));
    let (status, _, _) = get(admin, "/commands/snapshot", Some("digest admin:wrong")).await;
    assert_eq!(status, 403);
    let (status, _, _) = get(admin, "/commands/snapshot", Some("x509")).await;
    assert_eq!(status, 401);
    let (status, head, bytes) = get(
        admin,
        "/commands/snapshot?streaming=true",
        Some("digest alice:secret"),
    )
    .await;
    assert_eq!(status, 200, "{head}");
    assert!(head.contains("application/octet-stream"), "{head}");
    let size: usize = header(&head, "snapshot_size").unwrap().parse().unwrap();
    assert_eq!(size, bytes.len());
    let last_zxid = header(&head, "last_zxid").unwrap();
    // A second one at once is rate limited (one per 300 ms by default).
    let (status, _, _) = get(admin, "/commands/snapshot", Some("digest admin:pw")).await;
    assert_eq!(status, 429);

    // The snapshot is ZooKeeper's format, and holds the tree.
    let snap = zk_format::snapshot::decode(&bytes).expect("a ZooKeeper snapshot");
    assert_eq!(
        format!("0x{:x}", snap.last_processed_zxid.unwrap()),
        last_zxid
    );
    assert_eq!(snap.digest.unwrap().zxid, snap.last_processed_zxid.unwrap());
    assert_eq!(snap.sessions.len(), 1);
    let paths: Vec<&str> = snap.nodes.iter().map(|n| n.path.as_str()).collect();
    assert_eq!(paths[0], "");
    for p in [
        "/a",
        "/a/s-0000000004",
        "/private",
        "/e",
        "/zookeeper/config",
    ] {
        assert!(paths.contains(&p), "{p} in {paths:?}");
    }
    let a = snap.nodes.iter().find(|n| n.path == "/a").unwrap();
    assert_eq!(a.stat.cversion, 5, "the stored count of child creates");
    assert_eq!(a.stat.version, 1);
    let tree = zk_format::DataTree::from_snapshot(&snap, zk_format::MissingAcl::Refuse).unwrap();
    assert_eq!(
        tree.digest(),
        snap.digest.unwrap().digest,
        "ZooKeeper's digest"
    );
    let before = dump(addr).await;

    // The way in again: the snapshot, as a ZooKeeper data directory, imported.
    let zkdir = tempfile::tempdir().unwrap();
    let v2 = zkdir.path().join("version-2");
    std::fs::create_dir_all(&v2).unwrap();
    std::fs::write(
        v2.join(format!("snapshot.{}", last_zxid.trim_start_matches("0x"))),
        &bytes,
    )
    .unwrap();
    let imp = paddock::zk_import::read_zookeeper(
        zkdir.path(),
        zkdir.path(),
        zk_format::MissingAcl::Refuse,
    )
    .unwrap();
    assert!(imp.report.contains("nodes"), "{}", imp.report);
    let out = tempfile::tempdir().unwrap();
    let cfg2 = common::test_config(out.path());
    let index = paddock::zk_import::start_index(imp.max_zxid);
    assert!(index as i64 > imp.max_zxid);
    let (t, orphans) = paddock::zk_import::to_paddock(&imp, &cfg2, index).unwrap();
    assert_eq!(orphans, 0);
    paddock::zk_import::write_paddock(&cfg2, &t, index).unwrap();
    // A second import into the same directory is refused.
    assert!(paddock::zk_import::write_paddock(&cfg2, &t, index).is_err());
    let mut cfg2s = cfg2.clone();
    cfg2s.super_digest = tree_cfg.super_digest.clone();
    let server2 = common::start_with(cfg2s).await;
    let after = dump(server2.local_addr()).await;
    // Every node, stat and ACL as before; the session too (the ephemeral is still there).
    assert_eq!(before, after);
    // New writes continue above every imported zxid, and sequences continue.
    let zk2 = common::client(server2.local_addr()).await;
    let (stat, seq) = zk2
        .create(
            "/a/s-",
            b"y",
            &CreateMode::PersistentSequential.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    assert_eq!(seq.into_i64(), 5);
    assert!(stat.czxid > imp.max_zxid);
    drop(zk2);
    server2.shutdown().await;

    // export offline gives the same tree as the server had.
    let exported = paddock::zk_export::tree_of_data_dir(&cfg2).unwrap();
    let view = exported.snapshot_view();
    let again = zk_format::snapshot::decode(&paddock::zk_export::zk_snapshot(&view)).unwrap();
    assert_eq!(again.nodes.len(), snap.nodes.len() + 1);
    drop(zk);
    server.shutdown().await;
}

async fn post(addr: SocketAddr, p: &str, auth: Option<&str>, body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let auth = auth.map_or(String::new(), |a| format!("Authorization: {a}\r\n"));
    s.write_all(
        format!(
            "POST {p} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/octet-stream\r\n\
             Content-Length: {}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    s.write_all(body).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), s.read_to_end(&mut out))
        .await
        .expect("reply in time")
        .unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.split(' ').nth(1).unwrap().parse().unwrap();
    let body = text.split_once("\r\n\r\n").unwrap().1.to_string();
    (status, body)
}

fn connect_as(session_id: i64, passwd: Vec<u8>, last_zxid_seen: i64) -> wire::ConnectRequest {
    wire::ConnectRequest {
        timeout: 10_000,
        session_id,
        passwd: Some(passwd),
        last_zxid_seen,
        read_only: Some(false),
        ..Default::default()
    }
}

fn get_data(path: &str, watch: bool) -> wire::Request {
    wire::Request::GetData(wire::ops::data::GetDataRequest {
        path: path.into(),
        watch,
    })
}

/// POST /commands/restore on a standalone server: auth, the switch, a damaged body refused with
/// nothing changed; then the snapshot restored while clients are connected: every connection
/// closes, the zxid jumps to a new epoch above all a client saw, a session the snapshot holds
/// resumes with the password its client holds, one it does not hold is expired, a watch set
/// before fires on reconnect, and the tree is the snapshot's.
#[tokio::test]
async fn admin_restore_on_a_standalone_server() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::test_config(dir.path());
    cfg.super_digest = Some(znode_tree::acl::digest_id("admin:pw"));
    let server = common::start_with(cfg).await;
    let addr = server.local_addr();
    let admin = server.admin_addr().expect("admin server");
    let zk = common::client(addr).await;
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    zk.create("/a", b"1", &open).await.unwrap();
    zk.create("/a/b", b"2", &open).await.unwrap();
    // A session the snapshot will hold, with an ephemeral.
    let mut old = common::RawClient::connect(addr, 10_000).await;
    old.send(
        1,
        &wire::Request::Create(wire::ops::create::CreateRequest {
            path: "/eph".into(),
            data: Some(b"e".to_vec()),
            acl: wire::Acl::open_unsafe(),
            flags: 1,
        }),
    )
    .await;
    assert_eq!(old.recv().await.unwrap().0.err, 0);
    // The root only alice's (and the super user's): others are not authorized.
    zk.auth("digest", b"alice:secret").await.unwrap();
    zk.set_acl("/", &Acls::creator_all(), None).await.unwrap();
    let (status, _, snap) = get(
        admin,
        "/commands/snapshot?streaming=true",
        Some("digest admin:pw"),
    )
    .await;
    assert_eq!(status, 200);
    let at_snapshot = dump(addr).await;

    // After the snapshot: more writes, and a session the snapshot does not hold.
    zk.set_data("/a", b"changed", None).await.unwrap();
    zk.create("/later", b"", &open).await.unwrap();
    zk.delete("/a/b", None).await.unwrap();
    let mut new = common::RawClient::connect(addr, 10_000).await;
    // The old session watches /a (changed since the snapshot, and back by the restore).
    old.send(2, &get_data("/a", true)).await;
    let (h, _) = old.recv().await.unwrap();
    assert_eq!(h.err, 0);
    let seen = h.zxid;
    let after_writes = dump(addr).await;

    // Refusals change nothing.
    let (status, _) = post(admin, "/commands/restore", None, &snap).await;
    assert_eq!(status, 401);
    let (status, _) = post(
        admin,
        "/commands/restore",
        Some("digest admin:wrong"),
        &snap,
    )
    .await;
    assert_eq!(status, 403);
    let (status, body) = post(admin, "/commands/restore", Some("digest admin:pw"), b"").await;
    assert_eq!(status, 400, "{body}");
    let mut damaged = snap.clone();
    let mid = damaged.len() / 2;
    damaged[mid] ^= 0x55;
    tokio::time::sleep(Duration::from_millis(350)).await; // the rate limit
    let (status, body) = post(
        admin,
        "/commands/restore",
        Some("digest admin:pw"),
        &damaged,
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("nothing restored"), "{body}");
    tokio::time::sleep(Duration::from_millis(350)).await;
    let (status, body) = post(
        admin,
        "/commands/restore",
        Some("digest admin:pw"),
        &snap[..snap.len() - 10],
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        dump(addr).await,
        after_writes,
        "a refused restore changed the tree"
    );

    // The restore.
    tokio::time::sleep(Duration::from_millis(350)).await;
    let (status, body) = post(admin, "/commands/restore", Some("digest admin:pw"), &snap).await;
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["command"], "restore");
    assert_eq!(v["error"], serde_json::Value::Null);
    let restored_at = v["last_zxid"].as_i64().unwrap();
    // The first zxid of the next epoch: every zxid so far is in epoch 0.
    assert!(seen < 1 << 32);
    assert_eq!(restored_at, 1 << 32);

    // Every connection was closed.
    assert!(old.closed_by_server().await);
    assert!(new.closed_by_server().await);
    // The session the snapshot holds resumes, with the password its client holds; the watch
    // set before the restore fires at once.
    let (resp, back) =
        common::RawClient::connect_with(addr, connect_as(old.session_id, old.passwd.clone(), seen))
            .await;
    let mut back = back.unwrap_or_else(|| panic!("old session not resumed: {resp:?}"));
    assert_eq!(back.session_id, old.session_id);
    let watches = wire::ops::watches::SetWatches {
        relative_zxid: seen,
        data_watches: vec!["/a".into()],
        exist_watches: vec![],
        child_watches: vec![],
    };
    back.send(-8, &wire::Request::SetWatches(watches)).await;
    let mut fired = false;
    let mut set_reply = false;
    for _ in 0..2 {
        let (h, _) = back.recv().await.unwrap();
        if h.xid == -1 {
            fired = true;
        } else if h.xid == -8 {
            set_reply = true;
        }
    }
    assert!(fired && set_reply, "fired {fired}, replied {set_reply}");
    // The session the snapshot does not hold is expired.
    let (resp, none) =
        common::RawClient::connect_with(addr, connect_as(new.session_id, new.passwd.clone(), seen))
            .await;
    assert!(none.is_none(), "{resp:?}");
    assert_eq!(resp.unwrap().timeout, 0);

    // The tree is the snapshot's (the old session's ephemeral included), and new zxids
    // continue above the restore's.
    drop(zk);
    assert_eq!(dump(addr).await, at_snapshot);
    let zk = common::client(addr).await;
    zk.auth("digest", b"alice:secret").await.unwrap();
    let (stat, _) = zk.create("/after", b"", &open).await.unwrap();
    assert!(
        stat.czxid > restored_at,
        "{:#x} <= {restored_at:#x}",
        stat.czxid
    );
    assert_eq!(stat.czxid >> 32, restored_at >> 32);
    drop(zk);
    drop(back);
    server.shutdown().await;

    // The restart replays the restore entry (or a snapshot taken after it): the same tree and
    // zxids.
    let mut cfg = common::test_config(dir.path());
    cfg.super_digest = Some(znode_tree::acl::digest_id("admin:pw"));
    let server = common::start_with(cfg).await;
    let zk = common::client(server.local_addr()).await;
    zk.auth("digest", b"alice:secret").await.unwrap();
    let stat = zk.check_stat("/after").await.unwrap().unwrap();
    assert!(stat.czxid > restored_at);
    let (stat2, _) = zk.create("/after2", b"", &open).await.unwrap();
    assert!(stat2.czxid > stat.czxid);
    drop(zk);
    server.shutdown().await;

    // admin.restore.enabled=false answers 503 (after the auth, as ZooKeeper's).
    let dir2 = tempfile::tempdir().unwrap();
    let mut cfg = common::test_config(dir2.path());
    cfg.super_digest = Some(znode_tree::acl::digest_id("admin:pw"));
    cfg.admin.restore_enabled = false;
    let server = common::start_with(cfg).await;
    let admin = server.admin_addr().unwrap();
    let (status, _) = post(admin, "/commands/restore", Some("digest admin:pw"), &snap).await;
    assert_eq!(status, 503);
    let (status, _) = post(admin, "/commands/restore", None, &snap).await;
    assert_eq!(status, 401);
    server.shutdown().await;
}

/// An imported session's clock starts afresh when paddock starts, as ZooKeeper's leader restarts
/// every session's timeout on election: a cut-over longer than a session's time left at
/// ZooKeeper's stop must not expire it, as long as its client comes back within a full timeout.
/// And the clock does run: a session nobody resumes expires one timeout (plus a tick) after the
/// start, its ephemeral with it.
#[tokio::test]
async fn imported_sessions_get_a_full_timeout_from_the_start() {
    const TIMEOUT: Duration = Duration::from_millis(2000);
    let dir = tempfile::tempdir().unwrap();
    let server = common::start_with(common::test_config(dir.path())).await;
    let holder = zookeeper_client::Client::connector()
        .with_session_timeout(TIMEOUT)
        .connect(&server.local_addr().to_string())
        .await
        .unwrap();
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    holder.create("/held", b"", &ephemeral).await.unwrap();
    let session = holder.session_id().0;
    let (status, head, bytes) = get(
        server.admin_addr().unwrap(),
        "/commands/snapshot?streaming=true",
        Some("digest u:p"),
    )
    .await;
    assert_eq!(status, 200, "{head}");
    let last_zxid = header(&head, "last_zxid").unwrap().to_string();
    // The session is in the snapshot; ZooKeeper "stops" with its client silent.
    std::mem::forget(holder);
    server.shutdown().await;

    let zkdir = tempfile::tempdir().unwrap();
    let v2 = zkdir.path().join("version-2");
    std::fs::create_dir_all(&v2).unwrap();
    std::fs::write(
        v2.join(format!("snapshot.{}", last_zxid.trim_start_matches("0x"))),
        &bytes,
    )
    .unwrap();
    // More than the session's whole timeout passes between the stop and the start.
    tokio::time::sleep(TIMEOUT + Duration::from_millis(500)).await;
    let imp = paddock::zk_import::read_zookeeper(
        zkdir.path(),
        zkdir.path(),
        zk_format::MissingAcl::Refuse,
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let cfg = common::test_config(out.path());
    let index = paddock::zk_import::start_index(imp.max_zxid);
    let (t, orphans) = paddock::zk_import::to_paddock(&imp, &cfg, index).unwrap();
    assert_eq!(orphans, 0);
    assert_eq!(
        t.session(session).map(|s| s.timeout_ms),
        Some(TIMEOUT.as_millis() as i32)
    );
    paddock::zk_import::write_paddock(&cfg, &t, index).unwrap();

    let started = std::time::Instant::now();
    let server = common::start_with(cfg).await;
    let probe = common::client(server.local_addr()).await;
    // Three quarters of a timeout after the start the session still holds its ephemeral.
    tokio::time::sleep((TIMEOUT * 3 / 4).saturating_sub(started.elapsed())).await;
    let stat = probe.check_stat("/held").await.unwrap();
    assert_eq!(
        stat.map(|s| s.ephemeral_owner),
        Some(session),
        "the imported session expired {:?} after the start, before a full timeout",
        started.elapsed()
    );
    // Nobody resumes it: it expires a full timeout (plus up to a tick) after the start.
    let gone = loop {
        if probe.check_stat("/held").await.unwrap().is_none() {
            break started.elapsed();
        }
        assert!(
            started.elapsed() < TIMEOUT * 3,
            "the imported session never expired"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(gone >= TIMEOUT, "expired {gone:?} after the start");
    drop(probe);
    server.shutdown().await;
}
