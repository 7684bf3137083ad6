//! The AdminServer's `follow` stream (`paddock backup --follow`'s source), in process: its
//! auth, a snapshot first, then one ZooKeeper transaction per committed position as writes of
//! every kind apply (sequential, ephemeral, container, TTL, setData, setACL, delete, multi
//! that succeeds and one that fails, a failed write, a session's close, the server's own
//! container and TTL cleanup); the records written as a ZooKeeper data directory and
//! replayed by `paddock restore --to-zxid`'s reader equal the AdminServer's snapshots taken
//! at two points, node by node and stat by stat; a second stream with `after=` continues
//! without a snapshot, one from before the log starts gets a snapshot. The real-ZooKeeper
//! version (ZooKeeper loads the directory) is compat-tests/migration.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zookeeper_client::{Acls, CreateMode};

/// Opens a follow stream; the status and, for 200, the stream past the head.
async fn open(addr: SocketAddr, query: &str, auth: Option<&str>) -> (u16, TcpStream) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let auth = auth.map_or(String::new(), |a| format!("Authorization: {a}\r\n"));
    s.write_all(
        format!("GET /commands/follow{query} HTTP/1.1\r\nHost: x\r\n{auth}\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut b).await.unwrap(), 1, "an HTTP head");
        head.push(b[0]);
    }
    let head = String::from_utf8(head).unwrap();
    (head.split(' ').nth(1).unwrap().parse().unwrap(), s)
}

/// The next frame: kind, zxid, body.
async fn frame(s: &mut TcpStream) -> (u8, i64, Vec<u8>) {
    let mut h = [0u8; 17];
    tokio::time::timeout(Duration::from_secs(10), s.read_exact(&mut h))
        .await
        .expect("a frame in time")
        .unwrap();
    let zxid = i64::from_be_bytes(h[1..9].try_into().unwrap());
    let len = u64::from_be_bytes(h[9..17].try_into().unwrap());
    let mut body = vec![0u8; len as usize];
    s.read_exact(&mut body).await.unwrap();
    (h[0], zxid, body)
}

/// Reads frames until a transaction at `zxid` or later; the transactions (zxid, record).
async fn records_until(s: &mut TcpStream, zxid: i64) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    loop {
        let (kind, z, body) = frame(s).await;
        match kind {
            b'T' => {
                out.push((z, body));
                if z >= zxid {
                    return out;
                }
            }
            b'H' => {}
            k => panic!("unexpected frame {k} at {z:#x}"),
        }
    }
}

async fn admin_snapshot(admin: SocketAddr) -> (i64, Vec<u8>) {
    // One `snapshot` per 300 ms (the rate limiter).
    tokio::time::sleep(Duration::from_millis(350)).await;
    let mut s = TcpStream::connect(admin).await.unwrap();
    s.write_all(
        b"GET /commands/snapshot?streaming=true HTTP/1.1\r\nHost: x\r\nAuthorization: digest admin:pw\r\n\r\n",
    )
    .await
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let at = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(out[..at].to_vec()).unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let z = head
        .lines()
        .find_map(|l| l.strip_prefix("last_zxid: 0x"))
        .map(|h| i64::from_str_radix(h.trim(), 16).unwrap())
        .unwrap();
    (z, out[at + 4..].to_vec())
}

/// Path -> data, stat and ACL, of a ZooKeeper tree.
fn nodes(t: &zk_format::DataTree) -> BTreeMap<String, String> {
    t.depth_first()
        .unwrap()
        .into_iter()
        .map(|(p, n)| {
            (
                p.to_string(),
                format!("{:?} {:?} {:?}", n.data, n.stat, t.acl_of(n)),
            )
        })
        .collect()
}

fn tree_of_snapshot(bytes: &[u8]) -> BTreeMap<String, String> {
    let snap = zk_format::snapshot::decode(bytes).unwrap();
    nodes(&zk_format::DataTree::from_snapshot(&snap, zk_format::MissingAcl::Refuse).unwrap())
}

fn replay_to(dir: &Path, zxid: i64) -> BTreeMap<String, String> {
    let imp = paddock::zk_import::read_zookeeper_upto(
        dir,
        dir,
        zk_format::MissingAcl::Refuse,
        Some(zxid),
    )
    .unwrap_or_else(|e| panic!("replay to {zxid:#x}: {e}"));
    nodes(&imp.tree)
}

#[tokio::test]
async fn follow_stream_replays_to_the_live_tree() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::test_config(dir.path());
    cfg.super_digest = Some(znode_tree::acl::digest_id("admin:pw"));
    let server = common::start_with(cfg).await;
    let addr = server.local_addr();
    let admin = server.admin_addr().expect("admin server");
    let zk = common::client(addr).await;
    let open_acl = CreateMode::Persistent.with_acls(Acls::anyone_all());
    zk.create("/before", b"b", &open_acl).await.unwrap();

    // Auth as `snapshot`'s: the root only alice's (and the super user's).
    zk.auth("digest", b"alice:secret").await.unwrap();
    zk.create(
        "/mine",
        b"",
        &CreateMode::Persistent.with_acls(Acls::creator_all()),
    )
    .await
    .unwrap();
    zk.set_acl("/", &Acls::creator_all(), None).await.unwrap();
    assert_eq!(open(admin, "", None).await.0, 401);
    assert_eq!(open(admin, "", Some("x509")).await.0, 401);
    assert_eq!(open(admin, "", Some("digest admin:wrong")).await.0, 403);
    assert_eq!(
        open(admin, "?after=zz", Some("digest admin:pw")).await.0,
        400
    );

    let (status, mut s) = open(admin, "", Some("digest admin:pw")).await;
    assert_eq!(status, 200);
    let (kind, snap_zxid, snap) = frame(&mut s).await;
    assert_eq!(kind, b'S');
    let out = tempfile::tempdir().unwrap();
    let v2 = out.path().join("version-2");
    std::fs::create_dir_all(&v2).unwrap();
    std::fs::write(v2.join(format!("snapshot.{snap_zxid:x}")), &snap).unwrap();

    // Writes of every kind.
    let seq = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
    zk.create("/a", b"1", &open_acl).await.unwrap();
    for _ in 0..3 {
        zk.create("/a/s-", b"x", &seq).await.unwrap();
    }
    zk.create(
        "/a/e",
        b"",
        &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
    )
    .await
    .unwrap();
    let ttl = CreateMode::Persistent
        .with_acls(Acls::anyone_all())
        .with_ttl(Duration::from_millis(100));
    zk.create("/ttl", b"t", &ttl).await.unwrap();
    zk.create(
        "/c",
        b"",
        &CreateMode::Container.with_acls(Acls::anyone_all()),
    )
    .await
    .unwrap();
    zk.create("/c/child", b"", &open_acl).await.unwrap();
    zk.delete("/c/child", None).await.unwrap();
    zk.set_data("/a", b"2", None).await.unwrap();
    zk.set_acl("/a", &Acls::creator_all(), None).await.unwrap();
    assert!(zk.set_data("/a", b"3", Some(9)).await.is_err()); // an error txn
    let mut multi = zk.new_multi_writer();
    multi.add_create("/m", b"m", &open_acl).unwrap();
    multi.add_create("/m/k-", b"", &seq).unwrap();
    multi.add_create("/m/k-", b"", &seq).unwrap();
    multi.add_set_data("/m", b"mm", Some(0)).unwrap();
    multi.add_check_version("/m", 1).unwrap();
    multi.add_delete("/a/s-0000000000", None).unwrap();
    multi.commit().await.unwrap();
    let mut multi = zk.new_multi_writer();
    multi.add_create("/never", b"", &open_acl).unwrap();
    multi.add_check_version("/m", 7).unwrap();
    assert!(multi.commit().await.is_err()); // a failed multi
                                            // The server removes the empty container and the expired TTL node itself.
    for _ in 0..50 {
        if zk.check_stat("/c").await.unwrap().is_none()
            && zk.check_stat("/ttl").await.unwrap().is_none()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(zk.check_stat("/c").await.unwrap().is_none());
    assert!(zk.check_stat("/ttl").await.unwrap().is_none());
    let (mid_zxid, mid) = admin_snapshot(admin).await;

    // More: another session with an ephemeral, closed.
    let other = common::client(addr).await;
    other.auth("digest", b"alice:secret").await.unwrap();
    other
        .create(
            "/other",
            b"o",
            &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    zk.create("/after", b"", &open_acl).await.unwrap();
    drop(other);
    for _ in 0..50 {
        if zk.check_stat("/other").await.unwrap().is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(zk.check_stat("/other").await.unwrap().is_none());
    let (end_zxid, end) = admin_snapshot(admin).await;

    let recs = records_until(&mut s, end_zxid).await;
    // One record per position, consecutive.
    let zxids: Vec<i64> = recs.iter().map(|(z, _)| *z).collect();
    assert_eq!(zxids, ((snap_zxid + 1)..=end_zxid).collect::<Vec<_>>());
    let log =
        zk_format::txnlog::encode_log(&recs.iter().map(|(_, r)| r.clone()).collect::<Vec<_>>());
    std::fs::write(v2.join(format!("log.{:x}", snap_zxid + 1)), &log).unwrap();
    let kinds: Vec<i32> = zk_format::txnlog::decode(&log)
        .unwrap()
        .records
        .iter()
        .map(|r| r.header.kind)
        .collect();
    use zk_format::txnlog::op;
    for k in [
        op::CREATE2,
        op::CREATE_TTL,
        op::CREATE_CONTAINER,
        op::DELETE,
        op::DELETE_CONTAINER,
        op::SET_DATA,
        op::SET_ACL,
        op::MULTI,
        op::ERROR,
        op::CREATE_SESSION,
        op::CLOSE_SESSION,
    ] {
        assert!(kinds.contains(&k), "a transaction of type {k} in {kinds:?}");
    }

    // Replayed to each point: the live tree's snapshot at that point.
    assert_eq!(replay_to(out.path(), mid_zxid), tree_of_snapshot(&mid));
    assert_eq!(replay_to(out.path(), end_zxid), tree_of_snapshot(&end));
    assert_ne!(tree_of_snapshot(&mid), tree_of_snapshot(&end));
    drop(s);

    // A follower that holds up to `mid_zxid` continues without a snapshot.
    let (status, mut again) = open(
        admin,
        &format!("?after=0x{mid_zxid:x}"),
        Some("digest admin:pw"),
    )
    .await;
    assert_eq!(status, 200);
    let (kind, z, _) = frame(&mut again).await;
    assert_eq!((kind, z), (b'T', mid_zxid + 1));
    // One from before the follow log began gets a snapshot.
    let (_, mut old) = open(admin, "?after=0x1", Some("digest admin:pw")).await;
    let (kind, z, _) = frame(&mut old).await;
    assert_eq!(kind, b'S');
    assert!(z >= end_zxid);
}
