//! The server end to end, in process on port 0, driven by the Rust `zookeeper-client` crate
//! and by a raw protocol client. Each test owns its data directory.

mod common;

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use common::{client, four_letter, four_letter_bytes, start, RawClient};
use wire::ops::create::{CreateRequest, CreateResponse};
use wire::ops::data::{GetDataRequest, GetDataResponse};
use wire::ops::delete::DeleteRequest;
use wire::ops::exists::ExistsRequest;
use wire::{Acl, ErrorCode, Record, Request, WatcherEvent};
use zookeeper_client::{Acls, AddWatchMode, CreateMode, EventType};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A raw create with the open ACL.
fn create_req(path: &str, data: Option<&[u8]>, flags: i32) -> Request {
    Request::Create(CreateRequest {
        path: path.into(),
        data: data.map(<[u8]>::to_vec),
        acl: Acl::open_unsafe(),
        flags,
    })
}

fn persistent() -> zookeeper_client::CreateOptions<'static> {
    CreateMode::Persistent.with_acls(Acls::anyone_all())
}

#[tokio::test]
async fn create_get_set_delete_report_zookeeper_stats() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let zk = client(server.local_addr()).await;

    let (stat, _) = zk.create("/a", b"hello", &persistent()).await.unwrap();
    assert_eq!(stat.version, 0);
    assert_eq!(stat.cversion, 0);
    assert_eq!(stat.aversion, 0);
    assert_eq!(stat.data_length, 5);
    assert_eq!(stat.num_children, 0);
    assert_eq!(stat.ephemeral_owner, 0);
    assert_eq!(stat.czxid, stat.mzxid);
    assert_eq!(stat.czxid, stat.pzxid);
    assert_eq!(stat.ctime, stat.mtime);

    let (data, got) = zk.get_data("/a").await.unwrap();
    assert_eq!(data, b"hello");
    assert_eq!(got, stat);

    let set = zk.set_data("/a", b"world!", Some(0)).await.unwrap();
    assert_eq!(set.version, 1);
    assert_eq!(set.data_length, 6);
    assert_eq!(set.czxid, stat.czxid);
    assert!(set.mzxid > stat.mzxid);
    assert_eq!(
        zk.set_data("/a", b"x", Some(0)).await.unwrap_err(),
        zookeeper_client::Error::BadVersion
    );

    zk.create("/a/b", b"", &persistent()).await.unwrap();
    let (_, parent) = zk.get_data("/a").await.unwrap();
    assert_eq!(parent.cversion, 1);
    assert_eq!(parent.num_children, 1);
    assert_eq!(
        zk.delete("/a", None).await.unwrap_err(),
        zookeeper_client::Error::NotEmpty
    );
    zk.delete("/a/b", Some(0)).await.unwrap();
    let (_, parent) = zk.get_data("/a").await.unwrap();
    // One create and one delete: the wire cversion counts both (docs/protocol.md §4.2).
    assert_eq!(parent.cversion, 2);
    assert_eq!(parent.num_children, 0);
    zk.delete("/a", Some(1)).await.unwrap();
    assert_eq!(
        zk.get_data("/a").await.unwrap_err(),
        zookeeper_client::Error::NoNode
    );
    assert_eq!(
        zk.create("/x/y", b"", &persistent()).await.unwrap_err(),
        zookeeper_client::Error::NoNode
    );
    server.shutdown().await;
}

#[tokio::test]
async fn sequential_children_are_numbered_by_the_parents_create_count() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let zk = client(server.local_addr()).await;
    zk.create("/q", b"", &persistent()).await.unwrap();
    zk.create("/q/plain", b"", &persistent()).await.unwrap();
    let seq = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
    let (_, n1) = zk.create("/q/item-", b"", &seq).await.unwrap();
    let (_, n2) = zk.create("/q/item-", b"", &seq).await.unwrap();
    assert_eq!(n1.to_string(), "0000000001");
    assert_eq!(n2.to_string(), "0000000002");
    let mut children = zk.list_children("/q").await.unwrap();
    children.sort();
    assert_eq!(
        children,
        vec!["item-0000000001", "item-0000000002", "plain"]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn closing_a_session_deletes_its_ephemerals_and_fires_watches_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let owner = client(server.local_addr()).await;
    let watcher = client(server.local_addr()).await;
    owner.create("/locks", b"", &persistent()).await.unwrap();
    let eph = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    let (stat, _) = owner.create("/locks/e", b"", &eph).await.unwrap();
    assert_eq!(stat.ephemeral_owner, owner.session_id().0);

    let (_, _, data_watch) = watcher.get_and_watch_data("/locks/e").await.unwrap();
    let (_, child_watch) = watcher.list_and_watch_children("/locks").await.unwrap();
    drop(owner); // the crate closes its session on drop
    let ev = tokio::time::timeout(Duration::from_secs(10), data_watch.changed())
        .await
        .unwrap();
    assert_eq!(ev.event_type, EventType::NodeDeleted);
    assert_eq!(ev.path, "/locks/e");
    let ev = tokio::time::timeout(Duration::from_secs(10), child_watch.changed())
        .await
        .unwrap();
    assert_eq!(ev.event_type, EventType::NodeChildrenChanged);
    assert_eq!(ev.path, "/locks");
    assert!(watcher.check_stat("/locks/e").await.unwrap().is_none());
    server.shutdown().await;
}

/// On paused time, with the server on the test's clock (`start_stepped`, `hold_clock`), the
/// expiry is timed exactly. ZooKeeper rounds deadlines up to the next tick (`docs/protocol.md`
/// §11.1): a 400 ms session last heard at the tick boundary expires 500 ms later.
#[tokio::test(start_paused = true)]
async fn an_expired_session_loses_its_ephemerals_and_cannot_reconnect() {
    let _clock = common::hold_clock();
    let dir = tempfile::tempdir().unwrap();
    let server = common::start_stepped(dir.path()).await;
    let addr = server.local_addr();
    let zk = client(addr).await;
    let mut raw = RawClient::connect(addr, 400).await;
    assert_eq!(raw.timeout, 400);
    raw.send(1, &create_req("/eph", Some(b"x"), 1)).await;
    let (h, body) = raw.recv().await.unwrap();
    assert_eq!((h.xid, h.err), (1, 0));
    assert_eq!(CreateResponse::from_bytes(&body).unwrap().path, "/eph");
    let (session_id, passwd) = (raw.session_id, raw.passwd.clone());
    drop(raw); // no closeSession: the session lives on until it times out

    let (stat, deleted) = zk.check_and_watch_stat("/eph").await.unwrap();
    assert!(stat.is_some());
    let silent = common::advance_until(ms(10), ms(2000), || async {
        zk.check_stat("/eph").await.unwrap().is_none()
    })
    .await;
    assert!(
        silent >= ms(500) && silent <= ms(510),
        "expired {silent:?} after the session's last frame"
    );
    let ev = deleted.changed().await;
    assert_eq!(
        (ev.event_type, ev.path.as_str()),
        (EventType::NodeDeleted, "/eph"),
        "the ephemeral of an expired session is deleted"
    );

    let (resp, client) = RawClient::connect_with(
        addr,
        wire::ConnectRequest {
            timeout: 400,
            session_id,
            passwd: Some(passwd),
            read_only: Some(false),
            ..Default::default()
        },
    )
    .await;
    let resp = resp.expect("the server answers an expired session");
    assert!(client.is_none());
    assert_eq!((resp.timeout, resp.session_id), (0, 0));
    assert_eq!(resp.passwd, Some(vec![0; 16]));
    server.shutdown().await;
}

#[tokio::test]
async fn a_wrong_password_is_answered_as_an_expired_session() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let raw = RawClient::connect(server.local_addr(), 10_000).await;
    let (resp, client) = RawClient::connect_with(
        server.local_addr(),
        wire::ConnectRequest {
            timeout: 10_000,
            session_id: raw.session_id,
            passwd: Some(vec![7; 16]),
            ..Default::default()
        },
    )
    .await;
    assert!(client.is_none());
    let resp = resp.unwrap();
    assert_eq!((resp.timeout, resp.session_id), (0, 0));
    // go-zookeeper sends no readOnly byte; the server leaves it out of its answer too.
    assert_eq!(resp.read_only, None);
    server.shutdown().await;
}

/// ZooKeeper refuses a client whose lastZxidSeen is ahead of the server's (it must try another
/// server, which has seen that much): the connection is closed without a ConnectResponse. The
/// refusal is told apart from a server that answers nobody by its boundary: the server's own last
/// zxid is accepted, one more is refused, and the server goes on accepting afterwards; the session
/// the refused client named is untouched.
#[tokio::test]
async fn a_client_ahead_of_the_server_is_refused_without_an_answer() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let addr = server.local_addr();
    let mut raw = RawClient::connect(addr, 10_000).await;
    raw.send(1, &create_req("/seen", None, 0)).await;
    let (h, _) = raw.recv().await.unwrap();
    assert_eq!((h.xid, h.err), (1, 0));
    let last = h.zxid;
    let (session, passwd) = (raw.session_id, raw.passwd.clone());
    let ask = |last_zxid_seen: i64, session_id: i64, passwd: Vec<u8>| {
        RawClient::connect_with(
            addr,
            wire::ConnectRequest {
                timeout: 10_000,
                last_zxid_seen,
                session_id,
                passwd: Some(passwd),
                ..Default::default()
            },
        )
    };

    // One zxid more than the server's last is refused: no ConnectResponse, the connection closed
    // (a refused handshake creates no session, so the server's last zxid stays `last`) ...
    let (resp, refused) = ask(last + 1, 0, vec![0; 16]).await;
    assert!(resp.is_none() && refused.is_none(), "{resp:?}");
    // ... the same for a reconnect of a live session, which is not touched ...
    let (resp, refused) = ask(last + 1, session, passwd.clone()).await;
    assert!(resp.is_none() && refused.is_none(), "{resp:?}");
    raw.send(
        2,
        &Request::Exists(ExistsRequest {
            path: "/seen".into(),
            watch: false,
        }),
    )
    .await;
    let (h, _) = raw
        .recv()
        .await
        .expect("the session's own connection still answers");
    assert_eq!((h.xid, h.err), (2, 0));
    assert_eq!(h.zxid, last, "a refused handshake spent a zxid");
    // ... while exactly the server's last zxid is accepted: it was the zxid that was refused.
    let (resp, fresh) = ask(last, 0, vec![0; 16]).await;
    assert!(resp.expect("an answer").timeout > 0 && fresh.is_some());
    let (resp, again) = ask(last, session, passwd).await;
    let resp = resp.expect("an answer");
    assert_eq!(resp.session_id, session);
    assert!(again.is_some());
    server.shutdown().await;
}

#[tokio::test]
async fn watch_events_precede_the_reply_that_shows_the_change() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let mut raw = RawClient::connect(server.local_addr(), 10_000).await;
    raw.send(
        1,
        &Request::Exists(ExistsRequest {
            path: "/w".into(),
            watch: true,
        }),
    )
    .await;
    let (h, _) = raw.recv().await.unwrap();
    assert_eq!((h.xid, h.err), (1, ErrorCode::NoNode.code()));
    raw.send(2, &create_req("/w", None, 0)).await;
    let (h, body) = raw.recv().await.unwrap();
    assert_eq!(
        h.xid, -1,
        "the NodeCreated event comes before the create's own reply"
    );
    let ev = WatcherEvent::from_bytes(&body).unwrap();
    assert_eq!((ev.event_type, ev.state, ev.path.as_str()), (1, 3, "/w"));
    let create_zxid = h.zxid;
    let (h, _) = raw.recv().await.unwrap();
    assert_eq!((h.xid, h.err, h.zxid), (2, 0, create_zxid));
    // A one-shot watch fires once.
    raw.send(
        3,
        &Request::Delete(DeleteRequest {
            path: "/w".into(),
            version: -1,
        }),
    )
    .await;
    let (h, _) = raw.recv().await.unwrap();
    assert_eq!((h.xid, h.err), (3, 0));
    server.shutdown().await;
}

#[tokio::test]
async fn replies_come_back_in_request_order_under_pipelining() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let mut raw = RawClient::connect(server.local_addr(), 10_000).await;
    // Interleave writes and reads without waiting: a read must see the write before it.
    for i in 0..50 {
        let path = format!("/p{i}");
        raw.send(2 * i + 1, &create_req(&path, Some(&[i as u8]), 0))
            .await;
        raw.send(
            2 * i + 2,
            &Request::GetData(GetDataRequest { path, watch: false }),
        )
        .await;
    }
    for i in 0..50 {
        let (h, _) = raw.recv().await.unwrap();
        assert_eq!((h.xid, h.err), (2 * i + 1, 0));
        let (h, body) = raw.recv().await.unwrap();
        assert_eq!((h.xid, h.err), (2 * i + 2, 0));
        assert_eq!(
            GetDataResponse::from_bytes(&body).unwrap().data,
            Some(vec![i as u8])
        );
    }
    server.shutdown().await;
}

#[tokio::test]
async fn kafka_broker_registration_multi_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let zk = client(server.local_addr()).await;
    zk.create("/brokers", b"", &persistent()).await.unwrap();
    let eph = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    let mut multi = zk.new_multi_writer();
    multi.add_create("/brokers/0", &[], &eph).unwrap();
    multi
        .add_set_data("/brokers/0", b"{\"host\":\"h\"}", Some(0))
        .unwrap();
    let results = multi.commit().await.unwrap();
    assert_eq!(results.len(), 2);
    let (data, stat) = zk.get_data("/brokers/0").await.unwrap();
    assert_eq!(data, b"{\"host\":\"h\"}");
    assert_eq!(stat.version, 1);
    assert_eq!(stat.ephemeral_owner, zk.session_id().0);
    // A failing multi changes nothing.
    let mut multi = zk.new_multi_writer();
    multi.add_create("/brokers/1", &[], &persistent()).unwrap();
    multi.add_check_version("/brokers/0", 7).unwrap();
    let err = multi.commit().await.unwrap_err();
    assert!(
        matches!(
            err,
            zookeeper_client::MultiWriteError::OperationFailed {
                index: 1,
                source: zookeeper_client::Error::BadVersion
            }
        ),
        "{err:?}"
    );
    assert!(zk.check_stat("/brokers/1").await.unwrap().is_none());
    server.shutdown().await;
}

#[tokio::test]
async fn digest_acls_admit_only_the_authenticated_user() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let owner = client(server.local_addr()).await;
    owner.auth("digest", b"alice:secret").await.unwrap();
    let creator = CreateMode::Persistent.with_acls(Acls::creator_all());
    owner.create("/private", b"s", &creator).await.unwrap();
    let (acl, _) = owner.get_acl("/private").await.unwrap();
    assert_eq!(acl.len(), 1);
    assert_eq!(acl[0].scheme(), "digest");
    assert_eq!(
        acl[0].id(),
        "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=" /* base64(sha1("alice:secret")), computed with openssl */
    );

    let stranger = client(server.local_addr()).await;
    assert_eq!(
        stranger.get_data("/private").await.unwrap_err(),
        zookeeper_client::Error::NoAuth
    );
    let friend = client(server.local_addr()).await;
    friend.auth("digest", b"alice:secret").await.unwrap();
    assert_eq!(friend.get_data("/private").await.unwrap().0, b"s");
    let users = friend.list_auth_users().await.unwrap();
    assert!(
        users
            .iter()
            .any(|u| u.scheme() == "digest" && u.user() == "alice"),
        "{users:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn persistent_recursive_watch_sees_every_descendant_change() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let zk = client(server.local_addr()).await;
    zk.create("/r", b"", &persistent()).await.unwrap();
    let mut watcher = zk
        .watch("/r", AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    zk.create("/r/a", b"", &persistent()).await.unwrap();
    zk.create("/r/a/b", b"", &persistent()).await.unwrap();
    zk.set_data("/r/a/b", b"1", None).await.unwrap();
    zk.delete("/r/a/b", None).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..4 {
        let ev = tokio::time::timeout(Duration::from_secs(10), watcher.changed())
            .await
            .unwrap();
        seen.push((ev.event_type, ev.path));
    }
    assert_eq!(
        seen,
        vec![
            (EventType::NodeCreated, "/r/a".to_string()),
            (EventType::NodeCreated, "/r/a/b".to_string()),
            (EventType::NodeDataChanged, "/r/a/b".to_string()),
            (EventType::NodeDeleted, "/r/a/b".to_string()),
        ]
    );
    server.shutdown().await;
}

/// On paused time (`start_stepped`, `hold_clock`), with the sweep every 200 ms (`test_config`):
/// an emptied container goes at the first sweep, a TTL node at the first sweep after its TTL
/// (300 ms) has passed since its last change: the second.
#[tokio::test(start_paused = true)]
async fn ttl_nodes_and_empty_containers_are_removed_by_the_server() {
    let _clock = common::hold_clock();
    let dir = tempfile::tempdir().unwrap();
    let server = common::start_stepped(dir.path()).await;
    let zk = client(server.local_addr()).await;
    let ttl = CreateMode::Persistent
        .with_acls(Acls::anyone_all())
        .with_ttl(Duration::from_millis(300));
    let (stat, _) = zk.create("/ttl", b"", &ttl).await.unwrap();
    assert_eq!(
        stat.ephemeral_owner, 0,
        "TTL nodes show no owner on the wire"
    );
    let container = CreateMode::Container.with_acls(Acls::anyone_all());
    zk.create("/c", b"", &container).await.unwrap();
    zk.create("/c/child", b"", &persistent()).await.unwrap();
    zk.delete("/c/child", None).await.unwrap();
    let (_, ttl_gone) = zk.check_and_watch_stat("/ttl").await.unwrap();
    let (_, container_gone) = zk.check_and_watch_stat("/c").await.unwrap();

    let emptied = common::advance_until(ms(10), ms(2000), || async {
        zk.check_stat("/c").await.unwrap().is_none()
    })
    .await;
    assert!(
        emptied >= ms(200) && emptied <= ms(210),
        "the empty container went {emptied:?} after its last child"
    );
    let ev = container_gone.changed().await;
    assert_eq!(
        (ev.event_type, ev.path.as_str()),
        (EventType::NodeDeleted, "/c")
    );
    let lived = emptied
        + common::advance_until(ms(10), ms(2000), || async {
            zk.check_stat("/ttl").await.unwrap().is_none()
        })
        .await;
    assert!(
        lived >= ms(400) && lived <= ms(420),
        "the TTL node went {lived:?} after its creation"
    );
    let ev = ttl_gone.changed().await;
    assert_eq!(
        (ev.event_type, ev.path.as_str()),
        (EventType::NodeDeleted, "/ttl")
    );
    server.shutdown().await;
}

#[tokio::test]
async fn restart_recovers_data_stats_and_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let addr = server.local_addr();
    let mut raw = RawClient::connect(addr, 30_000).await;
    raw.send(1, &create_req("/keep", Some(b"v"), 0)).await;
    assert_eq!(raw.recv().await.unwrap().0.err, 0);
    raw.send(2, &create_req("/mine", None, 1)).await;
    assert_eq!(raw.recv().await.unwrap().0.err, 0);
    raw.send(
        3,
        &Request::GetData(GetDataRequest {
            path: "/keep".into(),
            watch: false,
        }),
    )
    .await;
    let (h, body) = raw.recv().await.unwrap();
    let before = GetDataResponse::from_bytes(&body).unwrap();
    let last_zxid = h.zxid;
    let (session_id, passwd) = (raw.session_id, raw.passwd.clone());
    drop(raw);
    server.shutdown().await;

    let server = start(dir.path()).await;
    let addr = server.local_addr();
    let (resp, client) = RawClient::connect_with(
        addr,
        wire::ConnectRequest {
            timeout: 30_000,
            last_zxid_seen: last_zxid,
            session_id,
            passwd: Some(passwd),
            read_only: Some(false),
            ..Default::default()
        },
    )
    .await;
    let mut raw = client.expect("the session survives the restart");
    assert_eq!(resp.unwrap().session_id, session_id);
    raw.send(
        1,
        &Request::GetData(GetDataRequest {
            path: "/keep".into(),
            watch: false,
        }),
    )
    .await;
    let (_, body) = raw.recv().await.unwrap();
    assert_eq!(GetDataResponse::from_bytes(&body).unwrap(), before);
    raw.send(
        2,
        &Request::Exists(ExistsRequest {
            path: "/mine".into(),
            watch: false,
        }),
    )
    .await;
    let (h, body) = raw.recv().await.unwrap();
    assert_eq!(h.err, 0);
    let stat = wire::ops::exists::ExistsResponse::from_bytes(&body)
        .unwrap()
        .stat;
    assert_eq!(stat.ephemeral_owner, session_id);
    server.shutdown().await;
}

#[tokio::test]
async fn bad_input_ends_only_the_offending_connection() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let addr = server.local_addr();
    let zk = client(addr).await;
    zk.create("/safe", b"1", &persistent()).await.unwrap();

    // Unknown opcode: Unimplemented, then the connection closes.
    let mut raw = RawClient::connect(addr, 10_000).await;
    let mut frame = Vec::new();
    frame.extend_from_slice(&8i32.to_be_bytes());
    frame.extend_from_slice(&5i32.to_be_bytes());
    frame.extend_from_slice(&999i32.to_be_bytes());
    raw.send_raw(&frame).await;
    let (h, _) = raw.recv().await.unwrap();
    assert_eq!((h.xid, h.err), (5, ErrorCode::Unimplemented.code()));
    assert!(raw.closed_by_server().await);

    // A body that does not decode: MarshallingError, and the connection stays usable.
    let mut raw = RawClient::connect(addr, 10_000).await;
    let mut frame = Vec::new();
    frame.extend_from_slice(&12i32.to_be_bytes());
    frame.extend_from_slice(&6i32.to_be_bytes());
    frame.extend_from_slice(&4i32.to_be_bytes()); // getData
    frame.extend_from_slice(&1000i32.to_be_bytes()); // a path length past the frame's end
    raw.send_raw(&frame).await;
    let (h, _) = raw.recv().await.unwrap();
    assert_eq!((h.xid, h.err), (6, ErrorCode::MarshallingError.code()));
    raw.send(
        7,
        &Request::GetData(GetDataRequest {
            path: "/safe".into(),
            watch: false,
        }),
    )
    .await;
    assert_eq!(raw.recv().await.unwrap().0.err, 0);

    // An oversized frame length closes the connection before anything is read into memory.
    let mut raw = RawClient::connect(addr, 10_000).await;
    raw.send_raw(&(64 * 1024 * 1024i32).to_be_bytes()).await;
    assert!(raw.closed_by_server().await);

    // Garbage instead of a handshake.
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut s, &[0xff; 64])
        .await
        .unwrap();
    let mut b = Vec::new();
    let n = tokio::time::timeout(
        Duration::from_secs(10),
        tokio::io::AsyncReadExt::read_to_end(&mut s, &mut b),
    )
    .await
    .unwrap();
    assert!(n.is_err() || b.is_empty());

    // A path the server must refuse.
    assert!(matches!(
        zk.create("/bad//path", b"", &persistent()).await,
        Err(zookeeper_client::Error::BadArguments(_))
    ));

    // Everyone else carried on.
    assert_eq!(zk.get_data("/safe").await.unwrap().0, b"1");
    server.shutdown().await;
}

#[tokio::test]
async fn four_letter_words_answer_on_the_client_port() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let addr = server.local_addr();
    assert_eq!(four_letter(addr, "ruok").await, "imok");
    let srvr = four_letter(addr, "srvr").await;
    assert!(srvr.starts_with("Zookeeper version: 3.9."), "{srvr}");
    assert!(srvr.contains("Mode: standalone"), "{srvr}");
    // ZooKeeper counts the asking connection itself.
    assert!(srvr.contains("\nConnections: 1\n"), "{srvr}");
    let zk = client(addr).await;
    let stat = four_letter(addr, "stat").await;
    assert!(stat.contains("\nConnections: 2\n"), "{stat}");
    assert_eq!(stat.matches("](queued=").count(), 2, "{stat}");
    drop(zk);
    let envi = four_letter(addr, "envi").await;
    assert!(envi.contains("zookeeper.version=3.9."), "{envi}");
    server.shutdown().await;
}

/// ZooKeeper's `NopCommand` reply, for every word outside the whitelist; the connection answers
/// it without asking the core, so `srst` resets nothing and `stmk` sets nothing.
#[tokio::test]
async fn a_word_outside_the_whitelist_gets_zookeepers_refusal_and_does_nothing() {
    use paddock::config::FourLetterWhitelist;
    use wire::FourLetterWord as W;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::test_config(dir.path());
    cfg.four_letter_words = FourLetterWhitelist::only([W::Srvr, W::Gtmk]);
    let server = common::start_with(cfg).await;
    let addr = server.local_addr();
    let zk = client(addr).await;
    zk.create("/x", b"", &persistent()).await.unwrap();
    let received = |srvr: String| -> u64 {
        let line = srvr.lines().find(|l| l.starts_with("Received: ")).unwrap();
        line["Received: ".len()..].parse().unwrap()
    };
    let before = received(four_letter(addr, "srvr").await);
    assert!(before > 0);
    for w in W::ALL.iter().filter(|w| ![W::Srvr, W::Gtmk].contains(w)) {
        assert_eq!(
            four_letter(addr, w.as_str()).await,
            format!(
                "{} is not executed because it is not in the whitelist.\n",
                w.as_str()
            ),
            "{w:?}"
        );
    }
    let mut stmk = b"stmk".to_vec();
    stmk.extend_from_slice(&7i64.to_be_bytes());
    assert_eq!(
        four_letter_bytes(addr, &stmk).await,
        "stmk is not executed because it is not in the whitelist.\n"
    );
    assert_eq!(four_letter(addr, "gtmk").await, "306");
    assert!(
        received(four_letter(addr, "srvr").await) >= before,
        "srst reset nothing"
    );
    drop(zk);
    server.shutdown().await;
}

/// `paddock serve --bind 0.0.0.0` with no config and no whitelist answers srvr alone, and its
/// log says why (the real binary: the warning is on its stderr).
#[tokio::test]
async fn serve_beyond_loopback_without_config_answers_only_srvr_and_warns() {
    let dir = tempfile::tempdir().unwrap();
    let port = common::process::free_port();
    let mut child = common::process::paddock_command(dir.path(), port, &[])
        .args(["--bind", "0.0.0.0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut srvr = None;
    for _ in 0..200 {
        match common::four_letter_try(addr, "srvr").await {
            Some(s) if s.starts_with("Zookeeper version: ") => {
                srvr = Some(s);
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    let answered = srvr.is_some();
    let mntr = common::four_letter_try(addr, "mntr").await;
    let ruok = common::four_letter_try(addr, "ruok").await;
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(answered, "srvr answers: {stderr}");
    assert_eq!(
        mntr.as_deref(),
        Some("mntr is not executed because it is not in the whitelist.\n")
    );
    assert_eq!(
        ruok.as_deref(),
        Some("ruok is not executed because it is not in the whitelist.\n")
    );
    assert!(
        stderr.contains(
            "the client port is bound beyond loopback without --config: only the srvr four-letter \
             word is answered"
        ),
        "{stderr}"
    );
}

#[tokio::test]
async fn stmk_sets_the_mask_that_gtmk_reports() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let addr = server.local_addr();
    assert_eq!(four_letter(addr, "gtmk").await, "306");
    let mut stmk = b"stmk".to_vec();
    stmk.extend_from_slice(&0x1_0000_0001i64.to_be_bytes());
    assert_eq!(four_letter_bytes(addr, &stmk).await, "4294967297");
    assert_eq!(four_letter(addr, "gtmk").await, "4294967297");
    // Without its argument (the sender closes after the word) there is no reply and no change.
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"stmk").await.unwrap();
    s.shutdown().await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    assert_eq!(out, "");
    assert_eq!(four_letter(addr, "gtmk").await, "4294967297");
    server.shutdown().await;
}

#[tokio::test]
async fn a_pipelining_client_is_held_to_the_outstanding_limit_and_others_still_get_through() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::test_config(dir.path());
    cfg.global_outstanding_limit = 5;
    let server = common::start_with(cfg).await;
    let addr = server.local_addr();

    // 2000 creates in one burst, faster than the log commits them.
    let flood = RawClient::connect(addr, 10_000).await;
    let (mut rd, mut wr) = flood.stream.into_split();
    const N: i32 = 2000;
    let writer = tokio::spawn(async move {
        let mut w = wire::Writer::new();
        for xid in 1..=N {
            let at = w.begin_frame();
            let req = create_req(&format!("/flood-{xid}"), Some(&[7; 100]), 0);
            wire::RequestHeader {
                xid,
                op_type: req.opcode().code(),
            }
            .encode(&mut w);
            req.encode_body(&mut w);
            w.finish_frame(at);
        }
        wr.write_all(&w.buf).await.unwrap();
        wr
    });
    let reader = tokio::spawn(async move {
        for xid in 1..=N {
            let body = common::read_frame(&mut rd).await.expect("reply");
            let h = wire::ReplyHeader::from_bytes(&body[..16]).unwrap();
            assert_eq!((h.xid, h.err), (xid, 0), "replies in request order");
        }
    });

    // Meanwhile another client is served, and the server never holds more than the limit.
    let zk = client(addr).await;
    let mut most = 0;
    let mut samples = 0;
    while !reader.is_finished() {
        most = most.max(common::mntr_value(addr, "zk_outstanding_requests").await);
        samples += 1;
        assert!(zk.check_stat("/").await.unwrap().is_some());
    }
    reader.await.unwrap();
    let _wr = writer.await.unwrap();
    assert!(most <= 5, "{most} requests held with a limit of 5");
    assert!(samples > 0);
    assert_eq!(zk.list_children("/").await.unwrap().len(), N as usize + 1);
    server.shutdown().await;
}

/// (last, min, max) client response sizes from mntr.
async fn response_sizes(addr: std::net::SocketAddr) -> (i64, i64, i64) {
    (
        common::mntr_value(addr, "zk_last_client_response_size").await,
        common::mntr_value(addr, "zk_min_client_response_size").await,
        common::mntr_value(addr, "zk_max_client_response_size").await,
    )
}

#[tokio::test]
async fn mntr_reports_the_sizes_of_replies_sent_and_srst_clears_them() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let addr = server.local_addr();
    // The handshake reply does not count.
    let mut raw = RawClient::connect(addr, 10_000).await;
    assert_eq!(response_sizes(addr).await, (-1, -1, -1));
    // A 16-byte header, then the data (4-byte length, 5 bytes) and the 68-byte stat.
    raw.send(1, &create_req("/sized", Some(b"12345"), 0)).await;
    raw.recv().await.unwrap();
    raw.send(
        2,
        &Request::GetData(GetDataRequest {
            path: "/sized".into(),
            watch: false,
        }),
    )
    .await;
    assert_eq!(raw.recv().await.unwrap().1.len(), 4 + 5 + 68);
    assert_eq!(response_sizes(addr).await, (16 + 77, 16 + 10, 16 + 77));
    // An error reply is the header alone.
    raw.send(
        3,
        &Request::Exists(ExistsRequest {
            path: "/missing".into(),
            watch: false,
        }),
    )
    .await;
    assert_eq!(raw.recv().await.unwrap().0.err, ErrorCode::NoNode.code());
    assert_eq!(response_sizes(addr).await, (16, 16, 16 + 77));
    assert_eq!(four_letter(addr, "srst").await, "Server stats reset.\n");
    assert_eq!(response_sizes(addr).await, (-1, -1, -1));
    server.shutdown().await;
}

/// On paused time (`start_stepped`, `hold_clock`): the checkpoint written at shut-down carries the
/// time the session had left, and the restarted server resumes its clock from there, rounded up
/// to a tick like any deadline.
#[tokio::test(start_paused = true)]
async fn a_restart_resumes_each_sessions_remaining_time() {
    let _clock = common::hold_clock();
    let dir = tempfile::tempdir().unwrap();
    let server = common::start_stepped(dir.path()).await;
    let mut raw = RawClient::connect(server.local_addr(), 4000).await;
    assert_eq!(raw.timeout, 4000);
    raw.send(1, &create_req("/held", None, 1)).await;
    assert_eq!(raw.recv().await.unwrap().0.err, 0);
    drop(raw); // silent from now on: its deadline is 4.1 s away (4 s, rounded up to a tick)
    tokio::time::advance(ms(2500)).await;
    server.shutdown().await;
    tokio::time::advance(ms(1000)).await; // downtime does not count

    let server = common::start_stepped(dir.path()).await;
    let zk = client(server.local_addr()).await;
    let (stat, deleted) = zk.check_and_watch_stat("/held").await.unwrap();
    assert!(stat.is_some(), "the session outlives the restart");
    let took = common::advance_until(ms(10), ms(5000), || async {
        zk.check_stat("/held").await.unwrap().is_none()
    })
    .await;
    // 1.6 s were left, 1.7 s once rounded up to a tick; a fresh timeout would have taken 4 s.
    assert!(
        took >= ms(1700) && took <= ms(1710),
        "expired {took:?} after the restart, not 1.7 s"
    );
    let ev = deleted.changed().await;
    assert_eq!(
        (ev.event_type, ev.path.as_str()),
        (EventType::NodeDeleted, "/held")
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_client_that_stops_reading_is_disconnected_and_nobody_else_notices() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let addr = server.local_addr();
    let zk = client(addr).await;
    zk.create("/big", &vec![7u8; 900 * 1024], &persistent())
        .await
        .unwrap();

    // 200 reads of 900 KiB, never read back: far more than the 64 MiB the server will queue.
    let mut raw = RawClient::connect(addr, 30_000).await;
    for xid in 1..=200 {
        raw.send(
            xid,
            &Request::GetData(GetDataRequest {
                path: "/big".into(),
                watch: false,
            }),
        )
        .await;
    }
    // Meanwhile the server keeps serving others.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(zk.get_data("/big").await.unwrap().0.len(), 900 * 1024);

    // Reading now drains what was buffered, then finds the connection closed.
    let mut replies = 0;
    while let Some(body) =
        tokio::time::timeout(Duration::from_secs(20), common::read_frame(&mut raw.stream))
            .await
            .unwrap()
    {
        assert!(body.len() > 900 * 1024);
        replies += 1;
    }
    assert!(
        replies < 200,
        "the server closed the connection instead of buffering every reply ({replies} read)"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn ignore_peers_runs_a_multi_server_config_alone_on_its_own_data() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("myid"), "1").unwrap();
    let cfg_text = format!(
        "tickTime=2000\ndataDir={}\nclientPort=0\nstandaloneEnabled=false\n\
         server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889\nserver.3=127.0.0.1:2890:3890\n",
        dir.path().display()
    );
    let mut cfg = paddock::config::Config::parse_zoo_cfg(&cfg_text, dir.path()).unwrap();
    cfg.my_id = Some(1);
    // --ignore-peers (test harnesses) runs it alone, on its own data.
    cfg.ignore_peers = true;
    let server = paddock::startup::Server::start(cfg)
        .await
        .expect("runs alone");
    // A zoo.cfg without a whitelist allows only srvr, as ZooKeeper does.
    assert!(four_letter(server.local_addr(), "srvr")
        .await
        .starts_with("Zookeeper version: "));
    server.shutdown().await;
}

/// A member whose raft thread dies (here stopped from outside, standing in for a fatal storage
/// error such as the full disk a fault run hit) must not linger holding its port: the serve
/// loop stops the server and returns an error, so the process exits non-zero and a supervisor
/// restarts it. Before, `run_until_signal` waited for a signal only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_whose_raft_thread_stops_ends_its_serve_loop_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path()).await;
    let addr = server.local_addr();
    let zk = common::client(addr).await;
    zk.create("/before", b"x", &persistent()).await.unwrap();
    let raft = server.consensus().clone();
    let serving = tokio::spawn(server.run_until_signal());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!serving.is_finished(), "it serves until something happens");

    tokio::task::spawn_blocking(move || raft.shutdown())
        .await
        .unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(15), serving)
        .await
        .expect("the serve loop ends by itself")
        .unwrap();
    let err = ended.expect_err("and says why");
    assert_eq!(
        err.to_string(),
        "the raft thread stopped (its error is logged above)"
    );
    // The client port is closed: a client cannot reach a member that cannot serve.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}
