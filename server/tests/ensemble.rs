//! Three members in one process, over real loopback sockets: elections, writes through every
//! member, sessions that live on followers and expire at the leader, failover, and members that
//! stop serving when they lose their leader.

mod common;

use std::time::Duration;

use paddock::config::Config;
use paddock::startup::Server;
use zookeeper_client as zk;

use common::ensemble::*;
use common::four_letter;
use wire::Record;

/// `RUST_LOG=info cargo test --test ensemble` shows the members' logs (of a failing test).
fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_members_elect_one_leader_and_serve_writes_through_every_member() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let mut members = start_all(ensemble_configs(root.path(), 3, 0)).await;
    let leader = wait_for_leader(&members).await;

    let mut clients = Vec::new();
    for m in &members {
        clients.push(connect(m.addr(), Duration::from_secs(10)).await);
    }
    let leader_addr = members[(leader - 1) as usize].addr();
    let proposed_before = common::mntr_value(leader_addr, "zk_proposal_count").await;
    for (m, c) in members.iter().zip(&clients) {
        let path = format!("/via-{}", m.id);
        let (stat, _) = c
            .create(&path, format!("from {}", m.id).as_bytes(), &persistent())
            .await
            .unwrap_or_else(|e| panic!("create through member {}: {e}", m.id));
        assert_eq!(stat.czxid, stat.mzxid);
    }
    // Read-your-writes on each member, and after sync every member sees every write.
    for (m, c) in members.iter().zip(&clients) {
        c.sync("/").await.unwrap();
        for other in &members {
            let (data, stat) = c.get_data(&format!("/via-{}", other.id)).await.unwrap();
            assert_eq!(
                data,
                format!("from {}", other.id).into_bytes(),
                "on member {}",
                m.id
            );
            assert_eq!(stat.version, 0);
        }
        let mut children = c.list_children("/").await.unwrap();
        children.sort();
        assert_eq!(children, vec!["via-1", "via-2", "via-3", "zookeeper"]);
    }
    // Sequential nodes created through different members never collide.
    for c in &clients {
        c.create(
            "/seq-",
            b"",
            &zk::CreateMode::PersistentSequential.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();
    }
    clients[0].sync("/").await.unwrap();
    let mut seqs = clients[0].list_children("/").await.unwrap();
    seqs.retain(|s| s.starts_with("seq-"));
    seqs.sort();
    assert_eq!(
        seqs,
        vec!["seq-0000000003", "seq-0000000004", "seq-0000000005"]
    );

    let srvr = four_letter(members[(leader - 1) as usize].addr(), "srvr").await;
    assert!(srvr.contains("Mode: leader\n"), "{srvr}");
    let follower = members.iter().find(|m| m.id != leader).unwrap();
    let mntr = four_letter(follower.addr(), "mntr").await;
    assert!(mntr.contains("zk_server_state\tfollower\n"), "{mntr}");
    assert!(mntr.contains("zk_quorum_size\t3\n"), "{mntr}");
    wait_until(
        "the leader counts two synced followers",
        Duration::from_secs(10),
        || async {
            four_letter(leader_addr, "mntr")
                .await
                .contains("zk_synced_followers\t2\n")
        },
    )
    .await;
    // ZooKeeper's proposal_count and commit_count: the leader's alone (the followers forwarded
    // their writes to it), every one of its proposals committed once the writes are done.
    for m in members.iter().filter(|m| m.id != leader) {
        assert_eq!(common::mntr_value(m.addr(), "zk_proposal_count").await, 0);
        assert_eq!(common::mntr_value(m.addr(), "zk_commit_count").await, 0);
    }
    wait_until(
        "the leader commits all it proposed",
        Duration::from_secs(10),
        || async {
            common::mntr_value(leader_addr, "zk_commit_count").await
                == common::mntr_value(leader_addr, "zk_proposal_count").await
        },
    )
    .await;
    let proposed = common::mntr_value(leader_addr, "zk_proposal_count").await - proposed_before;
    assert!(proposed >= 6, "six writes, {proposed} proposals");
    // /zookeeper/config holds the membership, written through the log.
    let (config, cstat) = clients[1].get_data("/zookeeper/config").await.unwrap();
    let config = String::from_utf8(config).unwrap();
    let expected: String = members
        .iter()
        .map(|m| format!("server.{}={}\n", m.id, m.cfg.servers[(m.id - 1) as usize]))
        .collect();
    assert_eq!(config, format!("{expected}version={:x}", cstat.mzxid));
    drop(clients);
    shutdown(&mut members).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_standalone_data_dir_or_another_members_is_refused_by_an_ensemble_member() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let cfgs = ensemble_configs(root.path(), 3, 0);
    // Member 1's dir first served as a standalone server.
    let mut standalone = common::test_config(&cfgs[0].data_dir);
    standalone.client_port = 0;
    let server = Server::start(standalone).await.unwrap();
    server.shutdown().await;
    let err = Server::start(cfgs[0].clone()).await.err().expect("refused");
    assert!(
        err.to_string()
            .contains("was created by a standalone server"),
        "{err:#}"
    );
    // Member 2 started on member 1's dir.
    let mut wrong = cfgs[1].clone();
    wrong.data_dir = cfgs[0].data_dir.clone();
    let err = Server::start(wrong).await.err().expect("refused");
    assert!(
        err.to_string()
            .ends_with("this data directory belongs to member 1 (myid is 2); each member needs its own dataDir"),
        "{err:#}"
    );
}

fn member(members: &[Member], id: u64) -> &Member {
    members.iter().find(|m| m.id == id).unwrap()
}

async fn exists_after_sync(c: &zk::Client, path: &str) -> bool {
    c.sync("/").await.unwrap();
    c.check_stat(path).await.unwrap().is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_session_on_a_follower_lives_on_touches_and_survives_the_leader_stopping() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let mut members = start_all(ensemble_configs(root.path(), 3, 0)).await;
    let leader = wait_for_leader(&members).await;
    let f = members.iter().find(|m| m.id != leader).unwrap().id;
    let other = members
        .iter()
        .find(|m| m.id != leader && m.id != f)
        .unwrap()
        .id;

    // A 1 s session whose only member is a follower: the leader hears of it through touches.
    let c = connect(member(&members, f).addr(), Duration::from_millis(1000)).await;
    c.create("/lock", b"", &ephemeral()).await.unwrap();
    c.create("/p", b"", &persistent()).await.unwrap();
    let watcher = connect(member(&members, other).addr(), Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        exists_after_sync(&watcher, "/lock").await,
        "the leader expired a live session held on a follower"
    );

    // The leader stops (SIGTERM's path: it hands leadership over first).
    let old = members.iter_mut().find(|m| m.id == leader).unwrap();
    old.server.take().unwrap().shutdown().await;
    let new_leader = wait_for_leader(&members).await;
    assert_ne!(new_leader, leader);
    // The client's session goes on: it reconnects if it was dropped, and writes again.
    let mut wrote = false;
    for _ in 0..100 {
        if c.create("/after", b"", &persistent()).await.is_ok() {
            wrote = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        wrote,
        "the session could not write after the leader changed"
    );
    assert!(
        exists_after_sync(&watcher, "/lock").await,
        "the ephemeral went with the old leader"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        exists_after_sync(&watcher, "/lock").await,
        "the new leader expired a live session"
    );
    drop(c);
    drop(watcher);
    shutdown(&mut members).await;
}

/// A follower answers a reconnect only once a live leader has confirmed it (a ReadIndex), as a
/// ZooKeeper follower revalidates every reconnect with its leader. Here the leader's raft stops
/// while its links stay open, so the followers have not noticed when the session reconnects to
/// one of them: the follower must not hand the session back on its own say-so and drop it a
/// moment later (BUGS.md P6; go-zookeeper's TestIntegration_ClientClusterFailover).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_follower_answers_a_reconnect_only_once_a_live_leader_confirms_it() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let mut members = start_all(ensemble_configs(root.path(), 3, 0)).await;
    let leader = wait_for_leader(&members).await;
    let f = members.iter().find(|m| m.id != leader).unwrap().id;
    let c = common::RawClient::connect(member(&members, leader).addr(), 10_000).await;
    let (session_id, passwd) = (c.session_id, c.passwd.clone());

    member(&members, leader)
        .server
        .as_ref()
        .unwrap()
        .consensus()
        .shutdown();
    let faddr = member(&members, f).addr();
    let (resp, _) = tokio::time::timeout(
        Duration::from_secs(20),
        common::RawClient::connect_with(
            faddr,
            wire::ConnectRequest {
                timeout: 10_000,
                session_id,
                passwd: Some(passwd),
                read_only: Some(false),
                ..Default::default()
            },
        ),
    )
    .await
    .expect("the follower answers in time");
    // Held through the election, whether the follower had noticed the leader's end when the
    // reconnect came (a held ConnectRequest) or not (a revalidation kept through the gap).
    let r = resp.expect("the follower closed the reconnect instead of holding it");
    assert_eq!((r.session_id, r.timeout), (session_id, 10_000));
    // Handed back: only a follower that has a new, live leader may have done that.
    let mntr = four_letter(faddr, "mntr").await;
    let known = mntr
        .lines()
        .find_map(|l| l.strip_prefix("zk_paddock_raft_leader_id\t"))
        .and_then(|v| v.trim().parse::<u64>().ok());
    assert!(
        known.is_some_and(|l| l != 0 && l != leader),
        "the follower gave the session back while it still followed the stopped leader {leader} (it knows {known:?})"
    );
    drop(c);
    shutdown(&mut members).await;
}

/// The last zxid a member applied, from `srvr`'s `Zxid:` line (None while it does not serve).
async fn srvr_zxid(addr: std::net::SocketAddr) -> Option<i64> {
    let srvr = four_letter(addr, "srvr").await;
    srvr.lines()
        .find_map(|l| l.strip_prefix("Zxid: 0x"))
        .and_then(|z| i64::from_str_radix(z.trim(), 16).ok())
}

fn create_ephemeral(path: &str) -> wire::Request {
    wire::Request::Create(wire::ops::create::CreateRequest {
        path: path.into(),
        data: Some(vec![]),
        acl: wire::Acl::open_unsafe(),
        flags: 1,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_leader_expires_a_silent_session_of_a_follower_and_its_ephemerals_go_everywhere() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let mut members = start_all(ensemble_configs(root.path(), 3, 0)).await;
    let leader = wait_for_leader(&members).await;
    let f = members.iter().find(|m| m.id != leader).unwrap().id;
    let mut raw = common::RawClient::connect(member(&members, f).addr(), 500).await;
    raw.send(1, &create_ephemeral("/gone")).await;
    let (h, _) = raw.recv().await.unwrap();
    assert_eq!((h.xid, h.err), (1, 0));
    let session = raw.session_id;
    // The client vanishes without closing its session.
    drop(raw);
    let clients: Vec<zk::Client> = {
        let mut v = Vec::new();
        for m in &members {
            v.push(connect(m.addr(), Duration::from_secs(10)).await);
        }
        v
    };
    let started = std::time::Instant::now();
    for c in &clients {
        wait_until(
            "the ephemeral of the silent session is deleted",
            Duration::from_secs(10),
            || async { !exists_after_sync(c, "/gone").await },
        )
        .await;
    }
    // Expired by the leader's timer: a 500 ms timeout plus a tick bucket and the touch delay.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let dump = four_letter(member(&members, leader).addr(), "dump").await;
    assert!(!dump.contains(&format!("{session:#x}")), "{dump}");
    drop(clients);
    shutdown(&mut members).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_session_moves_to_another_member_with_its_ephemerals_and_watches() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let mut members = start_all(ensemble_configs(root.path(), 3, 0)).await;
    let leader = wait_for_leader(&members).await;
    let ids: Vec<u64> = members
        .iter()
        .map(|m| m.id)
        .filter(|id| *id != leader)
        .collect();
    let (a, b) = (ids[0], ids[1]);
    let writer = connect(member(&members, leader).addr(), Duration::from_secs(10)).await;
    writer.create("/w", b"v0", &persistent()).await.unwrap();

    let mut raw = common::RawClient::connect(member(&members, a).addr(), 10_000).await;
    raw.send(1, &create_ephemeral("/mine")).await;
    let (h, _) = raw.recv().await.unwrap();
    assert_eq!(h.err, 0);
    let last_zxid = h.zxid;
    let (session, passwd) = (raw.session_id, raw.passwd.clone());
    drop(raw);

    // Member b refuses a client that has seen a zxid it has not applied yet, as a ZooKeeper
    // follower does (the client tries another server): the create may still be on its way to b.
    // Wait for it there, as such a client would by retrying.
    let baddr = member(&members, b).addr();
    wait_until(
        "member b applied the client's last zxid",
        Duration::from_secs(10),
        || async { srvr_zxid(baddr).await.is_some_and(|z| z >= last_zxid) },
    )
    .await;
    // Reconnect to member b with the session; re-register the data watch the client had.
    let (resp, moved) = common::RawClient::connect_with(
        baddr,
        wire::ConnectRequest {
            last_zxid_seen: last_zxid,
            timeout: 10_000,
            session_id: session,
            passwd: Some(passwd),
            read_only: Some(false),
            ..Default::default()
        },
    )
    .await;
    let resp = resp.expect("a reply");
    assert_eq!((resp.session_id, resp.timeout), (session, 10_000));
    let mut moved = moved.expect("the session moved");
    moved
        .send(
            2,
            &wire::Request::SetWatches(wire::ops::watches::SetWatches {
                relative_zxid: last_zxid,
                data_watches: vec!["/w".into()],
                exist_watches: vec![],
                child_watches: vec![],
            }),
        )
        .await;
    let (h, _) = moved.recv().await.unwrap();
    assert_eq!((h.xid, h.err), (2, 0));
    writer.set_data("/w", b"v1", None).await.unwrap();
    let (h, body) = moved.recv().await.unwrap();
    assert_eq!(h.xid, wire::xid::NOTIFICATION);
    let event = wire::WatcherEvent::from_bytes(&body).unwrap();
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (wire::event_type::NODE_DATA_CHANGED, "/w")
    );
    assert!(exists_after_sync(&writer, "/mine").await);

    // A client that has seen more than a member has applied is held there, and refused when its
    // hold runs out: no member ever applies a zxid a million past the last write.
    let (resp, client) = common::RawClient::connect_with(
        member(&members, a).addr(),
        wire::ConnectRequest {
            last_zxid_seen: last_zxid + 1_000_000,
            timeout: 10_000,
            session_id: session,
            passwd: Some(moved.passwd.clone()),
            ..Default::default()
        },
    )
    .await;
    assert!(resp.is_none() && client.is_none(), "{resp:?}");
    drop(moved);
    drop(writer);
    shutdown(&mut members).await;
}

/// Reconnects `old`'s session to `to` (its connection to the old member stays open), once `to`
/// has applied what the client saw.
async fn move_session(
    old: &common::RawClient,
    last_zxid: i64,
    to: std::net::SocketAddr,
) -> common::RawClient {
    wait_until(
        "the new member applied the client's last zxid",
        Duration::from_secs(10),
        || async { srvr_zxid(to).await.is_some_and(|z| z >= last_zxid) },
    )
    .await;
    let (resp, moved) = common::RawClient::connect_with(
        to,
        wire::ConnectRequest {
            last_zxid_seen: last_zxid,
            timeout: old.timeout,
            session_id: old.session_id,
            passwd: Some(old.passwd.clone()),
            read_only: Some(false),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(resp.expect("a reply").session_id, old.session_id);
    moved.expect("the session moved")
}

fn set_data(path: &str, data: &[u8]) -> wire::Request {
    wire::Request::SetData(wire::ops::data::SetDataRequest {
        path: path.into(),
        data: Some(data.to_vec()),
        version: -1,
    })
}

fn get_data(path: &str) -> wire::Request {
    wire::Request::GetData(wire::ops::data::GetDataRequest {
        path: path.into(),
        watch: false,
    })
}

/// `(data, version)` of a getData reply body.
fn data_of(body: &[u8]) -> (Vec<u8>, i32) {
    let r = wire::ops::data::GetDataResponse::from_bytes(body).unwrap();
    (r.data.unwrap_or_default(), r.stat.version)
}

/// SessionMoved (issue 42, item 3), as Apache ZooKeeper 3.9.5 does it
/// (compat-tests/session-moved checks the same against it): once a session reconnected to
/// another member, a write on its old connection gets no reply, the connection is closed, and
/// the write does not commit, whichever member applies it; a multi likewise. A follower still
/// answers a read on the old connection (a ZooKeeper follower checks no read), the leader closes
/// the connection at any request (a ZooKeeper leader checks every one).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_on_a_moved_sessions_old_connection_is_not_answered_and_does_not_commit() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let mut members = start_all(ensemble_configs(root.path(), 3, 0)).await;
    let leader = wait_for_leader(&members).await;
    let mut followers = members.iter().filter(|m| m.id != leader).map(|m| m.id);
    let (a, b) = (followers.next().unwrap(), followers.next().unwrap());
    let (aaddr, baddr, laddr) = (
        member(&members, a).addr(),
        member(&members, b).addr(),
        member(&members, leader).addr(),
    );

    let mut old = common::RawClient::connect(aaddr, 20_000).await;
    old.send(
        1,
        &wire::Request::Create(wire::ops::create::CreateRequest {
            path: "/m".into(),
            data: Some(b"a".to_vec()),
            acl: wire::Acl::open_unsafe(),
            flags: 0,
        }),
    )
    .await;
    let (h, _) = old.recv().await.unwrap();
    assert_eq!(h.err, 0);
    let mut new = move_session(&old, h.zxid, baddr).await;
    new.send(1, &set_data("/m", b"b")).await;
    let (h, _) = new.recv().await.unwrap();
    assert_eq!((h.xid, h.err), (1, 0));

    // Member a (a follower) answers a read on the old connection, as a ZooKeeper follower does.
    old.send(2, &get_data("/m")).await;
    // (Maybe before it applied the new member's write: a follower's read may be stale.)
    let (h, body) = old.recv().await.expect("a follower answers the read");
    assert_eq!((h.xid, h.err), (2, 0));
    let seen = data_of(&body);
    assert!(
        seen == (b"a".to_vec(), 0) || seen == (b"b".to_vec(), 1),
        "{seen:?}"
    );
    // A write there: refused at apply on every member, and the old connection closed unanswered.
    old.send(3, &set_data("/m", b"old")).await;
    assert!(
        old.recv().await.is_none(),
        "the old connection got a reply to its write"
    );
    new.send(2, &get_data("/m")).await;
    let (h, body) = new.recv().await.unwrap();
    assert_eq!((h.xid, h.err, data_of(&body)), (2, 0, (b"b".to_vec(), 1)));
    let zxid = h.zxid;

    // Moved again, to the leader: a multi on the connection to b is closed unanswered too.
    let mut newer = move_session(&new, zxid, laddr).await;
    new.send(3, &wire::Request::Multi(vec![set_data("/m", b"multi")]))
        .await;
    assert!(
        new.recv().await.is_none(),
        "the old connection got a reply to its multi"
    );
    newer.send(1, &get_data("/m")).await;
    let (h, body) = newer.recv().await.unwrap();
    assert_eq!((h.xid, h.err, data_of(&body)), (1, 0, (b"b".to_vec(), 1)));

    // And away from the leader: the leader closes the old connection at a read.
    let mut newest = move_session(&newer, h.zxid, aaddr).await;
    newer.send(2, &get_data("/m")).await;
    assert!(
        newer.recv().await.is_none(),
        "the leader answered the old connection"
    );
    newest.send(1, &set_data("/m", b"c")).await;
    let (h, _) = newest.recv().await.unwrap();
    assert_eq!((h.xid, h.err), (1, 0));
    for m in &members {
        wait_until(
            "every member holds /m at version 2",
            Duration::from_secs(10),
            || async {
                let c = connect(m.addr(), Duration::from_secs(10)).await;
                let got = c.sync("/m").await.is_ok()
                    && c.get_data("/m").await.map(|(d, s)| (d, s.version)).ok()
                        == Some((b"c".to_vec(), 2));
                got
            },
        )
        .await;
    }
    shutdown(&mut members).await;
}

/// `paddock.sessionOwners=false` (a rolling upgrade from a release without session owners): no
/// member proposes an attach or names its member on a write, so the log holds nothing an older
/// member could not apply, and a write on a moved session's old connection is answered and
/// commits, as before SessionMoved.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_session_owners_off_the_old_connection_still_writes() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let cfgs = ensemble_configs_with(root.path(), 3, 0, "paddock.sessionOwners=false\n");
    assert!(cfgs.iter().all(|c| !c.session_owners));
    let mut members = start_all(cfgs).await;
    let leader = wait_for_leader(&members).await;
    let mut followers = members.iter().filter(|m| m.id != leader).map(|m| m.id);
    let (a, b) = (followers.next().unwrap(), followers.next().unwrap());
    let mut old = common::RawClient::connect(member(&members, a).addr(), 20_000).await;
    old.send(1, &set_data("/", b"a")).await;
    let (h, _) = old.recv().await.unwrap();
    assert_eq!((h.xid, h.err), (1, 0));
    let mut new = move_session(&old, h.zxid, member(&members, b).addr()).await;
    new.send(1, &set_data("/", b"b")).await;
    assert_eq!(new.recv().await.unwrap().0.err, 0);
    old.send(2, &set_data("/", b"old")).await;
    let (h, _) = old.recv().await.expect("the old connection is answered");
    assert_eq!((h.xid, h.err), (2, 0));
    // The write went through member a: member b reads it after a sync (a follower's plain read
    // may precede its applying that write).
    new.send(
        2,
        &wire::Request::Sync(wire::ops::sync::SyncRequest { path: "/".into() }),
    )
    .await;
    assert_eq!(new.recv().await.unwrap().0.err, 0);
    new.send(3, &get_data("/")).await;
    let (h, body) = new.recv().await.unwrap();
    assert_eq!((h.err, data_of(&body)), (0, (b"old".to_vec(), 3)));
    shutdown(&mut members).await;
}

/// A session that moved to another member is kept alive there: the new member's touches reach
/// the leader, so the session outlives its old connection's timeout many times over, while a
/// control session left silent on the old member expires within the same wait (which shows the
/// wait is long enough to matter).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_moved_session_lives_on_at_its_new_member_past_the_old_connections_timeout() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let mut members = start_all(ensemble_configs(root.path(), 3, 0)).await;
    let leader = wait_for_leader(&members).await;
    let mut followers = members.iter().filter(|m| m.id != leader).map(|m| m.id);
    let (a, b) = (followers.next().unwrap(), followers.next().unwrap());
    const T: i32 = 600;
    let mut old = common::RawClient::connect(member(&members, a).addr(), T).await;
    assert_eq!(old.timeout, T);
    old.send(1, &create_ephemeral("/moved")).await;
    let (h, _) = old.recv().await.unwrap();
    assert_eq!(h.err, 0);
    let mut control = common::RawClient::connect(member(&members, a).addr(), T).await;
    control.send(1, &create_ephemeral("/control")).await;
    let (h, _) = control.recv().await.unwrap();
    assert_eq!(h.err, 0);
    let last_zxid = h.zxid;
    let (session, passwd) = (old.session_id, old.passwd.clone());
    // The old connection goes silent (no CloseSession: a client that lost its link), and so does
    // the control's.
    drop(old);
    drop(control);
    let baddr = member(&members, b).addr();
    wait_until(
        "member b applied the client's last zxid",
        Duration::from_secs(10),
        || async { srvr_zxid(baddr).await.is_some_and(|z| z >= last_zxid) },
    )
    .await;
    let (resp, moved) = common::RawClient::connect_with(
        baddr,
        wire::ConnectRequest {
            last_zxid_seen: last_zxid,
            timeout: T,
            session_id: session,
            passwd: Some(passwd),
            read_only: Some(false),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(resp.expect("a reply").session_id, session);
    let mut moved = moved.expect("the session moved");
    // Heartbeats on member b only, for ten times the session timeout.
    let start = tokio::time::Instant::now();
    let mut xid = 10;
    while start.elapsed() < Duration::from_millis(10 * T as u64) {
        moved.send(-2, &wire::Request::Ping).await;
        let (h, _) = moved
            .recv()
            .await
            .expect("member b answers the moved session");
        assert_eq!((h.xid, h.err), (-2, 0), "ping {xid}");
        xid += 1;
        tokio::time::sleep(Duration::from_millis(T as u64 / 4)).await;
    }
    let writer = connect(member(&members, leader).addr(), Duration::from_secs(10)).await;
    assert!(
        !exists_after_sync(&writer, "/control").await,
        "the silent control session did not expire in ten timeouts"
    );
    assert!(
        exists_after_sync(&writer, "/moved").await,
        "the moved session expired although member b heard from it"
    );
    moved
        .send(
            xid,
            &wire::Request::Exists(wire::ops::exists::ExistsRequest {
                path: "/moved".into(),
                watch: false,
            }),
        )
        .await;
    let (h, _) = moved.recv().await.unwrap();
    assert_eq!((h.xid, h.err), (xid, 0));
    drop(moved);
    drop(writer);
    shutdown(&mut members).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_member_cut_off_from_its_quorum_closes_its_clients_and_stops_serving() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let mut members = start_all(ensemble_configs(root.path(), 3, 0)).await;
    let leader = wait_for_leader(&members).await;
    let last = members.iter().find(|m| m.id != leader).unwrap().id;
    let mut raw = common::RawClient::connect(member(&members, last).addr(), 10_000).await;
    for m in members.iter_mut().filter(|m| m.id != last) {
        m.server.take().unwrap().shutdown().await;
    }
    let started = std::time::Instant::now();
    assert!(
        raw.closed_by_server().await,
        "the cut-off member kept its client"
    );
    // Raft's election timeout here is 200-400 ms: well inside the 10 s session timeout.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let addr = member(&members, last).addr();
    // It may have been handed the leadership on the way: a leader alone steps down at its next
    // check-quorum, within two election timeouts.
    wait_until(
        "the cut-off member stops serving",
        Duration::from_secs(3),
        || async {
            four_letter(addr, "srvr").await
                == "This ZooKeeper instance is not currently serving requests\n"
        },
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(four_letter(addr, "ruok").await, "imok");
    // New connections are refused while it has no leader.
    let (resp, client) = common::RawClient::connect_with(
        addr,
        wire::ConnectRequest {
            timeout: 10_000,
            passwd: Some(vec![0; 16]),
            ..Default::default()
        },
    )
    .await;
    assert!(resp.is_none() && client.is_none());
    shutdown(&mut members).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_observer_serves_reads_and_forwards_writes_without_voting() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let mut members = start_all(ensemble_configs(root.path(), 3, 1)).await;
    wait_for_leader(&members).await;
    let obs = member(&members, 4).addr();
    wait_until("the observer serves", Duration::from_secs(10), || async {
        mode(obs).await.as_deref() == Some("observer")
    })
    .await;
    let c = connect(obs, Duration::from_secs(10)).await;
    c.create("/from-observer", b"x", &persistent())
        .await
        .unwrap();
    c.sync("/").await.unwrap();
    assert_eq!(c.get_data("/from-observer").await.unwrap().0, b"x".to_vec());
    let leader_mntr = {
        let mut out = String::new();
        for m in members.iter().filter(|m| m.id <= 3) {
            let t = four_letter(m.addr(), "mntr").await;
            if t.contains("zk_server_state\tleader") {
                out = t;
            }
        }
        out
    };
    // Three voters; the observer is counted among the leader's learners, not its voters.
    assert!(leader_mntr.contains("zk_quorum_size\t3\n"), "{leader_mntr}");
    wait_until(
        "the leader counts the observer",
        Duration::from_secs(10),
        || async {
            let mut found = false;
            for m in members.iter().filter(|m| m.id <= 3) {
                let t = four_letter(m.addr(), "mntr").await;
                found |= t.contains("zk_server_state\tleader")
                    && t.contains("zk_synced_observers\t1\n")
                    && t.contains("zk_synced_followers\t2\n");
            }
            found
        },
    )
    .await;
    drop(c);
    shutdown(&mut members).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn read_only_mode_serves_reads_without_a_quorum_and_ends_when_it_is_back() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let cfgs: Vec<Config> = ensemble_configs(root.path(), 3, 0)
        .into_iter()
        .map(|mut c| {
            c.read_only_mode = true;
            c.four_letter_words = paddock::config::FourLetterWhitelist::All;
            c
        })
        .collect();
    let mut members = start_all(cfgs).await;
    let leader = wait_for_leader(&members).await;
    let writer = connect(member(&members, leader).addr(), Duration::from_secs(10)).await;
    writer
        .create("/kept", b"before", &persistent())
        .await
        .unwrap();
    let last = members.iter().find(|m| m.id != leader).unwrap().id;
    // The write is on `last` before the others stop.
    let c = connect(member(&members, last).addr(), Duration::from_secs(10)).await;
    c.sync("/").await.unwrap();
    drop(c);
    drop(writer);
    for m in members.iter_mut().filter(|m| m.id != last) {
        m.server.take().unwrap().shutdown().await;
    }
    let addr = member(&members, last).addr();
    wait_until(
        "the member is read-only",
        Duration::from_secs(5),
        || async { four_letter(addr, "isro").await == "ro" },
    )
    .await;
    assert!(four_letter(addr, "srvr")
        .await
        .contains("Mode: read-only\n"));
    // A client that does not accept read-only servers is still refused.
    let (resp, _) = common::RawClient::connect_with(
        addr,
        wire::ConnectRequest {
            timeout: 10_000,
            passwd: Some(vec![0; 16]),
            read_only: Some(false),
            ..Default::default()
        },
    )
    .await;
    assert!(resp.is_none());
    let (resp, ro) = common::RawClient::connect_with(
        addr,
        wire::ConnectRequest {
            timeout: 10_000,
            passwd: Some(vec![0; 16]),
            read_only: Some(true),
            ..Default::default()
        },
    )
    .await;
    let resp = resp.expect("a read-only session");
    assert_eq!(resp.read_only, Some(true));
    assert_ne!(resp.session_id, 0);
    let mut ro = ro.unwrap();
    ro.send(
        1,
        &wire::Request::GetData(wire::ops::data::GetDataRequest {
            path: "/kept".into(),
            watch: false,
        }),
    )
    .await;
    let (h, body) = ro.recv().await.unwrap();
    assert_eq!((h.xid, h.err), (1, 0));
    let data = wire::ops::data::GetDataResponse::from_bytes(&body).unwrap();
    assert_eq!(data.data.as_deref(), Some(&b"before"[..]));
    ro.send(2, &create_ephemeral("/nope")).await;
    let (h, _) = ro.recv().await.unwrap();
    assert_eq!((h.xid, h.err), (2, wire::ErrorCode::NotReadOnly.code()));
    ro.send(
        3,
        &wire::Request::Sync(wire::ops::sync::SyncRequest { path: "/".into() }),
    )
    .await;
    let (h, _) = ro.recv().await.unwrap();
    assert_eq!((h.xid, h.err), (3, wire::ErrorCode::NotReadOnly.code()));

    // The quorum comes back: the read-only session ends, read-write service resumes.
    let restart: Vec<Config> = members
        .iter()
        .filter(|m| m.server.is_none())
        .map(|m| m.cfg.clone())
        .collect();
    let handles: Vec<_> = restart
        .into_iter()
        .map(|c| tokio::spawn(Server::start(c)))
        .collect();
    let mut servers = Vec::new();
    for h in handles {
        servers.push(h.await.unwrap().expect("member restarts"));
    }
    for s in servers {
        let m = members
            .iter_mut()
            .find(|m| m.server.is_none() && m.cfg.client_port == s.local_addr().port())
            .unwrap();
        m.server = Some(s);
    }
    assert!(
        ro.closed_by_server().await,
        "the read-only session outlived the quorum's return"
    );
    wait_for_leader(&members).await;
    assert_eq!(four_letter(addr, "isro").await, "rw");
    let c = connect(addr, Duration::from_secs(10)).await;
    c.create("/after", b"", &persistent()).await.unwrap();
    drop(c);
    shutdown(&mut members).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn linearizable_reads_on_a_follower_see_every_write_acknowledged_before_them() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let cfgs: Vec<Config> = ensemble_configs(root.path(), 3, 0)
        .into_iter()
        .map(|mut c| {
            c.linearizable_reads = true;
            c
        })
        .collect();
    let mut members = start_all(cfgs).await;
    let leader = wait_for_leader(&members).await;
    let f = members.iter().find(|m| m.id != leader).unwrap().id;
    let writer = connect(member(&members, leader).addr(), Duration::from_secs(10)).await;
    let reader = connect(member(&members, f).addr(), Duration::from_secs(10)).await;
    writer.create("/x", b"0", &persistent()).await.unwrap();
    for n in 1..=50 {
        writer
            .set_data("/x", n.to_string().as_bytes(), None)
            .await
            .unwrap();
        // No sync: the follower's read itself waits for a ReadIndex.
        let (data, stat) = reader.get_data("/x").await.unwrap();
        assert_eq!((data, stat.version), (n.to_string().into_bytes(), n));
    }
    drop(writer);
    drop(reader);
    shutdown(&mut members).await;
}

/// A TCP relay in front of a member's peer port that can hold what passes through it: while
/// paused, bytes are read but not forwarded (in either direction), so the member behind it stops
/// hearing from its leader without its connections breaking.
async fn pausable_relay(listen: u16, target: u16) -> tokio::sync::watch::Sender<bool> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // The port was a stopped member's: wait until its listener is gone.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let listener = loop {
        match tokio::net::TcpListener::bind(("127.0.0.1", listen)).await {
            Ok(l) => break l,
            Err(e) => {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "relay port {listen}: {e}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    let (paused_tx, paused_rx) = tokio::sync::watch::channel(false);
    async fn pump(
        mut from: tokio::net::tcp::OwnedReadHalf,
        mut to: tokio::net::tcp::OwnedWriteHalf,
        mut paused: tokio::sync::watch::Receiver<bool>,
    ) {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            while *paused.borrow_and_update() {
                if paused.changed().await.is_err() {
                    return;
                }
            }
            if to.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    }
    tokio::spawn(async move {
        while let Ok((inbound, _)) = listener.accept().await {
            let Ok(outbound) = tokio::net::TcpStream::connect(("127.0.0.1", target)).await else {
                continue;
            };
            let (ir, iw) = inbound.into_split();
            let (or, ow) = outbound.into_split();
            tokio::spawn(pump(ir, ow, paused_rx.clone()));
            tokio::spawn(pump(or, iw, paused_rx.clone()));
        }
    });
    paused_tx
}

/// `paddock.linearizableReads` beside its control. Member 3's peer port is reached through a relay
/// that the test pauses, so member 3 stays a follower that knows its leader (its own election
/// timeout is made long) but falls behind. (The relay takes member 3's listed port: member 3 is
/// restarted on another one, which it may, its data dir holding the cluster's identity, while the
/// others keep dialling the listed port.) A write acknowledged by the leader (members 1 and 2 are
/// a quorum) is then read on member 3: without linearizable reads the read is served from member
/// 3's tree and shows the old value, which is the stale read the setting exists to prevent; with
/// it, the read waits for a ReadIndex from the leader and shows the new value once the relay lets
/// member 3 catch up.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lagging_follower_serves_a_stale_read_unless_linearizable_reads_is_on() {
    logs();
    for linearizable in [false, true] {
        let root = tempfile::tempdir().unwrap();
        let mut cfgs = ensemble_configs(root.path(), 3, 0);
        for c in &mut cfgs {
            c.linearizable_reads = linearizable;
        }
        // Member 3 never campaigns while the relay holds its leader's messages (10 s here).
        cfgs[2].raft_election_ticks = Some(500);
        let mut members = start_all(cfgs).await;
        let leader = wait_for_leader(&members).await;
        assert_ne!(leader, 3, "member 3 has the long election timeout");
        let m3 = members.iter_mut().find(|m| m.id == 3).unwrap();
        m3.server.take().unwrap().shutdown().await;
        let listed = m3.cfg.servers.iter().find(|s| s.id == 3).unwrap().peer_port;
        let moved_to = free_port();
        m3.cfg
            .servers
            .iter_mut()
            .find(|s| s.id == 3)
            .unwrap()
            .peer_port = moved_to;
        let pause = pausable_relay(listed, moved_to).await;
        m3.server = Some(
            Server::start(m3.cfg.clone())
                .await
                .expect("member 3 restarts"),
        );
        let addr3 = m3.addr();
        wait_until(
            "member 3 follows again",
            Duration::from_secs(20),
            || async { mode(addr3).await.as_deref() == Some("follower") },
        )
        .await;
        let writer = connect(member(&members, leader).addr(), Duration::from_secs(10)).await;
        let reader = connect(member(&members, 3).addr(), Duration::from_secs(10)).await;
        writer.create("/x", b"old", &persistent()).await.unwrap();
        reader.sync("/x").await.unwrap();
        assert_eq!(reader.get_data("/x").await.unwrap().0, b"old");

        pause.send(true).unwrap();
        let written = writer.set_data("/x", b"new", None).await.unwrap();
        if linearizable {
            let read = tokio::spawn(async move {
                let got = reader.get_data("/x").await.unwrap().0;
                (got, reader)
            });
            tokio::time::sleep(Duration::from_millis(300)).await;
            pause.send(false).unwrap();
            let (got, reader) = tokio::time::timeout(Duration::from_secs(20), read)
                .await
                .expect("the linearizable read completes once member 3 hears its leader")
                .unwrap();
            assert_eq!(
                got, b"new",
                "a linearizable read on a lagging follower was stale"
            );
            drop(reader);
        } else {
            let (got, _) = reader.get_data("/x").await.unwrap();
            assert_eq!(
                got, b"old",
                "the control: member 3 should lag behind its leader here and serve the old value"
            );
            // A client that saw the write elsewhere is held by the lagging member until it has
            // applied that far, not refused (`core::handshake`).
            let ahead = tokio::spawn(common::RawClient::connect_with(
                addr3,
                wire::ConnectRequest {
                    timeout: 10_000,
                    last_zxid_seen: written.mzxid,
                    passwd: Some(vec![0; 16]),
                    ..Default::default()
                },
            ));
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert!(
                !ahead.is_finished(),
                "member 3 refused a client that had seen a later zxid instead of holding it"
            );
            pause.send(false).unwrap();
            let (resp, client) = tokio::time::timeout(Duration::from_secs(20), ahead)
                .await
                .expect("no answer to the held client")
                .unwrap();
            let resp = resp.expect("member 3 refused the held client once caught up");
            assert!(resp.session_id != 0 && resp.timeout == 10_000, "{resp:?}");
            assert!(client.is_some());
            reader.sync("/x").await.unwrap();
            assert_eq!(reader.get_data("/x").await.unwrap().0, b"new");
            drop(reader);
        }
        drop(writer);
        shutdown(&mut members).await;
    }
}

/// Found by the fault suite (compat-tests/faults/BUGS.md, P1): a wiped member joins as an empty
/// member and installs the leader's bootstrap snapshot (index 1, no data); it must restart from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wiped_member_rejoins_catches_up_and_restarts_again() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let mut members = start_all(ensemble_configs(root.path(), 3, 0)).await;
    let leader = wait_for_leader(&members).await;
    let c = connect(member(&members, leader).addr(), Duration::from_secs(10)).await;
    let mut last_write = 0;
    for i in 0..20 {
        let (stat, _) = c
            .create(&format!("/n{i}"), b"v", &persistent())
            .await
            .unwrap();
        last_write = stat.czxid;
    }
    let victim = members.iter().find(|m| m.id != leader).unwrap().id;
    let m = members.iter_mut().find(|m| m.id == victim).unwrap();
    m.server.take().unwrap().shutdown().await;
    std::fs::remove_dir_all(&m.cfg.data_dir).unwrap();
    std::fs::create_dir_all(&m.cfg.data_dir).unwrap();
    for round in 0..2 {
        let m = members.iter_mut().find(|m| m.id == victim).unwrap();
        m.server = Some(
            Server::start(m.cfg.clone())
                .await
                .unwrap_or_else(|e| panic!("restart {round} of the wiped member: {e:#}")),
        );
        let addr = m.addr();
        // BUGS.md P8: from the first moment it serves, the member holds every write acknowledged
        // before (it joined empty, so until the leader's entries arrive its tree is empty).
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        let first_served = loop {
            if let Some(zxid) = srvr_zxid(addr).await {
                break zxid;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "round {round}: never served"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        assert!(
            first_served >= last_write,
            "round {round}: served at zxid {first_served:#x}, before the writes up to {last_write:#x}"
        );
        wait_for_leader(&members).await;
        let v = connect(addr, Duration::from_secs(10)).await;
        v.sync("/").await.unwrap();
        let mut children = v.list_children("/").await.unwrap();
        children.retain(|n| n.starts_with('n'));
        assert_eq!(children.len(), 20, "round {round}");
        drop(v);
        let m = members.iter_mut().find(|m| m.id == victim).unwrap();
        m.server.take().unwrap().shutdown().await;
    }
    drop(c);
    shutdown(&mut members).await;
}
