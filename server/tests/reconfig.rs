//! ZooKeeper's reconfig (opcode 16) on in-process ensembles over loopback: a fourth member joins
//! and becomes a voter that counts for quorum, members leave (incremental and whole-membership
//! changes), `/zookeeper/config` byte for byte on every member, and the refusals (BadVersion,
//! BadArguments, NoAuth, ReconfigDisabled, Unimplemented on a standalone server), and the
//! leader's own (NewConfigNoQuorum, ReconfigInProgress).

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::ensemble::*;
use common::{four_letter_try, RawClient};
use paddock::config::Config;
use wire::ops::auth::AuthPacket;
use wire::ops::data::{GetDataRequest, GetDataResponse};
use wire::ops::reconfig::ReconfigRequest;
use wire::{Record, Request};

/// `super:test`, as kazoo's and go-zookeeper's harnesses configure it.
const SUPER_DIGEST: &str = "super:D/InIHSb7yEEbrWz8b9l71RjZJU=";
const EXTRA: &str = "reconfigEnabled=true\n";

const NO_AUTH: i32 = -102;
const BAD_ARGUMENTS: i32 = -8;
const BAD_VERSION: i32 = -103;
const RECONFIG_DISABLED: i32 = -123;
const UNIMPLEMENTED: i32 = -6;
const NEW_CONFIG_NO_QUORUM: i32 = -13;
const RECONFIG_IN_PROGRESS: i32 = -14;

fn with_super(mut cfgs: Vec<Config>) -> Vec<Config> {
    for c in &mut cfgs {
        c.super_digest = Some(SUPER_DIGEST.into());
    }
    cfgs
}

/// `RUST_LOG=info cargo test --test reconfig` shows the members' logs.
fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

async fn raw(addr: SocketAddr, as_super: bool) -> RawClient {
    let mut c = RawClient::connect(addr, 30_000).await;
    if as_super {
        c.send(
            -4,
            &Request::Auth(AuthPacket {
                auth_type: 0,
                scheme: "digest".into(),
                auth: Some(b"super:test".to_vec()),
            }),
        )
        .await;
        let (h, _) = c.recv().await.expect("auth reply");
        assert_eq!((h.xid, h.err), (-4, 0));
    }
    c
}

/// Sends a reconfig; returns (error code, reply zxid, body).
async fn reconfig(
    c: &mut RawClient,
    xid: i32,
    joining: &str,
    leaving: &str,
    new_members: &str,
    version: i64,
) -> (i32, i64, Option<GetDataResponse>) {
    c.send(
        xid,
        &Request::Reconfig(ReconfigRequest {
            joining_servers: joining.into(),
            leaving_servers: leaving.into(),
            new_members: new_members.into(),
            cur_config_id: version,
        }),
    )
    .await;
    let (h, body) = c.recv().await.expect("reconfig reply");
    assert_eq!(h.xid, xid);
    let body = (h.err == 0).then(|| GetDataResponse::from_bytes(&body).unwrap());
    (h.err, h.zxid, body)
}

/// `/zookeeper/config` as the member serves it now (a standalone server's is empty).
async fn get_config_now(c: &mut RawClient, xid: i32) -> GetDataResponse {
    c.send(
        xid,
        &Request::GetData(GetDataRequest {
            path: "/zookeeper/config".into(),
            watch: false,
        }),
    )
    .await;
    let (h, body) = c.recv().await.expect("getData reply");
    assert_eq!((h.xid, h.err), (xid, 0));
    GetDataResponse::from_bytes(&body).unwrap()
}

/// `/zookeeper/config` as the member serves it, once written: a new leader writes it through the
/// log just after its election, so right after `wait_for_leader` a member may still show zoo.cfg's.
async fn get_config(c: &mut RawClient, xid: i32) -> GetDataResponse {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let got = get_config_now(c, xid).await;
        // Before that write the node shows zoo.cfg's membership with version 0.
        if got
            .data
            .as_ref()
            .is_some_and(|d| !d.is_empty() && !d.ends_with(b"version=0"))
        {
            return got;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "/zookeeper/config still empty after 10 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `/zookeeper/config` on `addr` after a sync, or None while the member does not serve.
async fn synced_config(addr: SocketAddr) -> Option<(String, wire::Stat)> {
    let req = wire::ConnectRequest {
        timeout: 30_000,
        passwd: Some(vec![0; 16]),
        read_only: Some(false),
        ..Default::default()
    };
    let mut c = RawClient::connect_with(addr, req).await.1?;
    c.send(
        1,
        &Request::Sync(wire::ops::sync::SyncRequest { path: "/".into() }),
    )
    .await;
    let (h, _) = c.recv().await?;
    if h.err != 0 {
        return None;
    }
    c.send(
        2,
        &Request::GetData(GetDataRequest {
            path: "/zookeeper/config".into(),
            watch: false,
        }),
    )
    .await;
    let (h, body) = c.recv().await?;
    if h.err != 0 {
        return None;
    }
    let r = GetDataResponse::from_bytes(&body).ok()?;
    Some((text(&r), r.stat))
}

fn text(r: &GetDataResponse) -> String {
    String::from_utf8(r.data.clone().unwrap()).unwrap()
}

fn version_of(config: &str) -> i64 {
    let v = config.rsplit_once("version=").expect("a version line").1;
    i64::from_str_radix(v, 16).unwrap()
}

/// A member's server line as paddock writes it into /zookeeper/config.
fn line(cfg: &Config, id: u64) -> String {
    let s = cfg.servers.iter().find(|s| s.id == id).unwrap();
    format!("server.{id}={s}\n")
}

/// A member's line as a reconfig `-add` names it (with its client port).
fn joiner(cfg: &Config) -> String {
    let s = cfg.my_server().unwrap();
    format!(
        "server.{}=127.0.0.1:{}:{}:participant;127.0.0.1:{}",
        s.id, s.peer_port, s.election_port, cfg.client_port
    )
}

async fn serving(addr: SocketAddr) -> bool {
    mode(addr).await.is_some()
}

/// A member a reconfig removed while it served goes on as a non-voting follower, as ZooKeeper
/// 3.9's does ("non-voting participant"): `srvr` says follower, and a leader counts it among its
/// synced non-voting followers once raft has made it a learner.
async fn wait_non_voting(members: &[Member], id: u64) {
    let addr = members.iter().find(|m| m.id == id).unwrap().addr();
    wait_until(
        &format!("member {id} follows without a vote"),
        Duration::from_secs(20),
        || async {
            if mode(addr).await.as_deref() != Some("follower") {
                return false;
            }
            for m in members.iter().filter(|m| m.server.is_some()) {
                let mntr = four_letter_try(m.addr(), "mntr").await.unwrap_or_default();
                if mntr.contains("zk_synced_non_voting_followers\t1\n") {
                    return true;
                }
            }
            false
        },
    )
    .await;
}

fn create(path: &str, data: &[u8]) -> Request {
    Request::Create(wire::ops::create::CreateRequest {
        path: path.into(),
        data: Some(data.to_vec()),
        acl: wire::Acl::open_unsafe(),
        flags: 0,
    })
}

/// `path`'s data through `c` after a sync, on the same connection.
async fn synced_data(c: &mut RawClient, xid: i32, path: &str) -> Vec<u8> {
    c.send(
        xid,
        &Request::Sync(wire::ops::sync::SyncRequest { path: "/".into() }),
    )
    .await;
    let (h, _) = c.recv().await.expect("sync reply");
    assert_eq!((h.xid, h.err), (xid, 0));
    c.send(
        xid + 1,
        &Request::GetData(GetDataRequest {
            path: path.into(),
            watch: false,
        }),
    )
    .await;
    let (h, body) = c.recv().await.expect("getData reply");
    assert_eq!((h.xid, h.err), (xid + 1, 0), "{path}");
    GetDataResponse::from_bytes(&body).unwrap().data.unwrap()
}

/// ZooKeeper 3.9.5 keeps a follower a reconfig removed following its leader as a non-voting
/// participant: it serves its clients (reads from its own state, writes forwarded) until it is
/// restarted. paddock's leader makes it a raft learner: the client connected to it keeps its
/// connection, its write commits and shows on the members, its reads see the members' writes,
/// and `/zookeeper/config` does not list it. Restarted, it no longer serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_removed_follower_goes_on_serving_its_clients_as_a_non_voting_member() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let mut members = start_all(with_super(ensemble_configs_with(root.path(), 3, 0, EXTRA))).await;
    let leader = wait_for_leader(&members).await;
    // Member 3, unless it leads (a removed leader hands over first: another test).
    let gone = if leader == 3 { 2 } else { 3 };
    let kept: Vec<u64> = (1..=3).filter(|id| *id != gone).collect();
    let at = |id: u64| (id - 1) as usize;
    let cfg = members[0].cfg.clone();

    let mut client = RawClient::connect(members[at(gone)].addr(), 30_000).await;
    client.send(1, &create("/before", b"b")).await;
    let (h, _) = client.recv().await.expect("create reply");
    assert_eq!((h.xid, h.err), (1, 0));

    let mut admin = raw(members[at(leader)].addr(), true).await;
    let (err, zxid, body) = reconfig(&mut admin, 1, "", &gone.to_string(), "", -1).await;
    assert_eq!(err, 0);
    let expected = format!(
        "{}{}version={zxid:x}",
        line(&cfg, kept[0]),
        line(&cfg, kept[1])
    );
    assert_eq!(text(&body.unwrap()), expected);
    wait_non_voting(&members, gone).await;

    // The same connection: a write (forwarded to the leader), then reads.
    client.send(2, &create("/from-removed", b"w")).await;
    let (h, _) = client
        .recv()
        .await
        .expect("the removed member answers the write");
    assert_eq!((h.xid, h.err), (2, 0));
    assert!(h.zxid > zxid);
    assert_eq!(synced_data(&mut client, 3, "/from-removed").await, b"w");
    assert_eq!(
        String::from_utf8(synced_data(&mut client, 5, "/zookeeper/config").await).unwrap(),
        expected
    );
    for id in &kept {
        let addr = members[at(*id)].addr();
        assert_eq!(
            synced_config(addr).await.map(|(t, _)| t),
            Some(expected.clone()),
            "member {id}"
        );
        let mut c = RawClient::connect(addr, 30_000).await;
        assert_eq!(
            synced_data(&mut c, 1, "/from-removed").await,
            b"w",
            "member {id}"
        );
    }
    // A write through a member shows on the removed member after a sync.
    let mut other = RawClient::connect(members[at(kept[0])].addr(), 30_000).await;
    other.send(1, &create("/from-kept", b"k")).await;
    let (h, _) = other.recv().await.unwrap();
    assert_eq!((h.xid, h.err), (1, 0));
    assert_eq!(synced_data(&mut client, 7, "/from-kept").await, b"k");
    assert_eq!(
        mode(members[at(gone)].addr()).await.as_deref(),
        Some("follower")
    );

    // Restarted, the removed member no longer serves (it is no member), and the ensemble goes on.
    drop(client);
    let cfg_gone = members[at(gone)].cfg.clone();
    members[at(gone)].server.take().unwrap().shutdown().await;
    members[at(gone)].server = Some(
        paddock::startup::Server::start(cfg_gone)
            .await
            .expect("the removed member restarts"),
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        four_letter_try(members[at(gone)].addr(), "srvr")
            .await
            .map(|s| s.contains("not currently serving")),
        Some(true)
    );
    other.send(2, &create("/after-restart", b"a")).await;
    let (h, _) = other.recv().await.unwrap();
    assert_eq!((h.xid, h.err), (2, 0));
    drop((admin, other));
    shutdown(&mut members).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fourth_member_joins_as_a_voter_and_a_removed_member_stops_counting() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let mut cfgs = with_super(ensemble_configs_with(root.path(), 4, 0, EXTRA));
    let fourth = cfgs.pop().unwrap();
    for c in &mut cfgs {
        c.servers.retain(|s| s.id != 4);
    }
    let mut members = start_all(cfgs).await;
    wait_for_leader(&members).await;
    let cfg3 = members[2].cfg.clone();

    let mut c = raw(members[2].addr(), true).await;
    let before = get_config(&mut c, 1).await;
    let initial: String = (1..=3).map(|id| line(&cfg3, id)).collect();
    assert_eq!(
        text(&before),
        format!("{initial}version={:x}", before.stat.mzxid)
    );
    let v0 = version_of(&text(&before));

    // The operator starts the new member with the current members plus itself: it finds an
    // ensemble with a log, takes its cluster id and waits, not serving, until a reconfig names it.
    let new = tokio::spawn(paddock::startup::Server::start(fourth.clone()));
    let new = new.await.unwrap().expect("the new member starts and joins");
    let new_addr = SocketAddr::from(([127, 0, 0, 1], fourth.client_port));
    assert_eq!(
        four_letter_try(new_addr, "srvr")
            .await
            .map(|s| s.contains("not currently serving")),
        Some(true)
    );
    members.push(Member {
        id: 4,
        cfg: fourth.clone(),
        server: Some(new),
    });

    // Incremental -add with the current version.
    let add = joiner(&fourth);
    let (err, zxid, body) = reconfig(&mut c, 2, &add, "", "", v0).await;
    assert_eq!(err, 0);
    let body = body.unwrap();
    let expected = format!(
        "{initial}server.4=127.0.0.1:{}:{}:participant;127.0.0.1:{}\nversion={zxid:x}",
        fourth.servers[3].peer_port, fourth.servers[3].election_port, fourth.client_port
    );
    assert_eq!(text(&body), expected);
    assert_eq!(body.stat.mzxid, zxid);
    // The same bytes and stat on every member once it applied that far (sync, then read).
    // Member 4 catches up from a snapshot (which drops its clients once): ask until it answers.
    for m in &members {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let got = synced_config(m.addr()).await;
            if let Some((t, stat)) = &got {
                if *t == expected {
                    assert_eq!(*stat, body.stat, "member {}", m.id);
                    break;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "member {}: {got:?}",
                m.id
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // The leader counts member 4 among its synced followers.
    wait_until(
        "the leader has three synced followers",
        Duration::from_secs(10),
        || async {
            let mut all = String::new();
            for m in &members[..3] {
                all += &four_letter_try(m.addr(), "mntr").await.unwrap_or_default();
            }
            all.contains("zk_synced_followers\t3\n")
        },
    )
    .await;

    // -v with the version before the add is stale now.
    let (err, _, _) = reconfig(&mut c, 5, "", "1", "", v0).await;
    assert_eq!(err, BAD_VERSION);

    // Incremental -remove of member 1 (whoever leads: a leader hands over first).
    let (err, zxid, body) = reconfig(&mut c, 6, "", "1", "", -1).await;
    assert_eq!(err, 0);
    let after_remove: String = (2..=3).map(|id| line(&cfg3, id)).collect::<String>()
        + &format!(
            "server.4=127.0.0.1:{}:{}:participant;127.0.0.1:{}\nversion={zxid:x}",
            fourth.servers[3].peer_port, fourth.servers[3].election_port, fourth.client_port
        );
    assert_eq!(text(&body.unwrap()), after_remove);
    // The removed member goes on serving, without a vote.
    wait_non_voting(&members, 1).await;

    // Stop the removed member and member 2: {3, 4} is a majority of {2, 3, 4}, so the new
    // member's vote is what lets this write commit.
    for i in [0, 1] {
        members[i].server.take().unwrap().shutdown().await;
    }
    let z = connect(members[2].addr(), Duration::from_secs(10)).await;
    let (stat, _) = tokio::time::timeout(
        Duration::from_secs(20),
        z.create("/after-reconfig", b"x", &persistent()),
    )
    .await
    .expect("a write commits with members 3 and 4")
    .unwrap();
    assert!(stat.czxid > zxid);
    drop(z);

    // Member 3 restarts from its zoo.cfg, which lists 1, 2 and 3 but not 4: its membership and
    // member 4's address come from the replicated state, so {3, 4} elect and commit again.
    let cfg3 = members[2].cfg.clone();
    members[2].server.take().unwrap().shutdown().await;
    members[2].server = Some(
        paddock::startup::Server::start(cfg3)
            .await
            .expect("member 3 restarts"),
    );
    wait_until("member 3 serves again", Duration::from_secs(20), || {
        serving(members[2].addr())
    })
    .await;
    let z = connect(members[2].addr(), Duration::from_secs(10)).await;
    let (data, _) = tokio::time::timeout(Duration::from_secs(20), z.get_data("/after-reconfig"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(data, b"x");
    tokio::time::timeout(
        Duration::from_secs(20),
        z.create("/after-restart", b"y", &persistent()),
    )
    .await
    .expect("a write commits after the restart")
    .unwrap();
    drop(z);
    drop(c);
    shutdown(&mut members).await;
}

/// One reconfig that adds member 4 and removes a follower at once: two voters change in one
/// ConfChangeV2, which raft-rs carries out through joint consensus (one change at a time would pass
/// through four voters or two). Afterwards every remaining member shows the new configuration byte
/// for byte, the removed member stops serving, and the new configuration is the one that counts:
/// with the removed member and the other follower stopped, the leader and member 4 commit a write
/// (a majority of the new voters, not of the old ones).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_reconfig_adds_a_member_and_removes_another_through_joint_consensus() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let mut cfgs = with_super(ensemble_configs_with(root.path(), 4, 0, EXTRA));
    let fourth = cfgs.pop().unwrap();
    for c in &mut cfgs {
        c.servers.retain(|s| s.id != 4);
    }
    let mut members = start_all(cfgs).await;
    let leader = wait_for_leader(&members).await;
    // The member removed is a follower: the leader then proposes both changes in one ConfChangeV2
    // (a leader's own removal waits for a hand-over and would make it two steps).
    let gone = (1..=3).find(|id| *id != leader).unwrap();
    let kept: Vec<u64> = (1..=3).filter(|id| *id != gone).collect();
    let at = |id: u64| (id - 1) as usize;
    let cfg = members[0].cfg.clone();
    let new = paddock::startup::Server::start(fourth.clone())
        .await
        .expect("the new member starts and waits");
    members.push(Member {
        id: 4,
        cfg: fourth.clone(),
        server: Some(new),
    });

    // A client on the member removed: it keeps its connection through the joint change (the
    // member is an outgoing voter and a learner-to-be until raft leaves it).
    let mut on_gone = RawClient::connect(members[at(gone)].addr(), 30_000).await;
    let mut c = raw(members[at(leader)].addr(), true).await;
    let v0 = version_of(&text(&get_config(&mut c, 1).await));
    let (err, zxid, body) = reconfig(&mut c, 2, &joiner(&fourth), &gone.to_string(), "", v0).await;
    assert_eq!(err, 0);
    let expected = format!(
        "{}{}server.4=127.0.0.1:{}:{}:participant;127.0.0.1:{}\nversion={zxid:x}",
        line(&cfg, kept[0]),
        line(&cfg, kept[1]),
        fourth.servers[3].peer_port,
        fourth.servers[3].election_port,
        fourth.client_port
    );
    assert_eq!(text(&body.unwrap()), expected);
    for id in [kept[0], kept[1], 4] {
        let addr = members[at(id)].addr();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let got = synced_config(addr).await;
            if got.as_ref().is_some_and(|(t, _)| *t == expected) {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "member {id}: {got:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    wait_non_voting(&members, gone).await;
    on_gone.send(1, &create("/via-removed", b"r")).await;
    let (h, _) = on_gone
        .recv()
        .await
        .expect("the removed member keeps its client");
    assert_eq!((h.xid, h.err), (1, 0));
    drop(on_gone);
    // Stop the removed member and the other follower: the leader and member 4 are a majority of
    // the new voters, not of the old ones.
    let other = *kept.iter().find(|id| **id != leader).unwrap();
    drop(c);
    for id in [gone, other] {
        members[at(id)].server.take().unwrap().shutdown().await;
    }
    let z = connect(members[at(leader)].addr(), Duration::from_secs(10)).await;
    let (stat, _) = tokio::time::timeout(
        Duration::from_secs(20),
        z.create("/after-joint", b"x", &persistent()),
    )
    .await
    .expect("a write commits with the leader and member 4 alone")
    .unwrap();
    assert!(stat.czxid > zxid);
    drop(z);
    shutdown(&mut members).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn refusals_and_whole_membership_changes() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let mut members = start_all(with_super(ensemble_configs_with(root.path(), 3, 0, EXTRA))).await;
    wait_for_leader(&members).await;
    let cfg = members[0].cfg.clone();
    let all: String = (1..=3).map(|id| line(&cfg, id)).collect();

    // Without the super user: NoAuth (ZooKeeper checks WRITE on /zookeeper/config last).
    let mut plain = raw(members[1].addr(), false).await;
    let observer = "server.100=0.0.0.0:1234:2345:observer;0.0.0.0:3456";
    assert_eq!(
        reconfig(&mut plain, 1, observer, "", "", -1).await.0,
        NO_AUTH
    );

    let mut c = raw(members[1].addr(), true).await;
    let v0 = version_of(&text(&get_config(&mut c, 1).await));
    for (xid, joining, leaving, new_members) in [
        (2, "some thing", "", ""),
        (3, "server.4=127.0.0.1:1:2", "", ""), // no client port
        (4, "", "1,2", ""),                    // leaves one voter
        (5, "", "", "garbage"),
    ] {
        let (err, _, _) = reconfig(&mut c, xid, joining, leaving, new_members, -1).await;
        assert_eq!(
            err, BAD_ARGUMENTS,
            "{joining:?} {leaving:?} {new_members:?}"
        );
    }
    assert_eq!(
        reconfig(&mut c, 6, observer, "", "", v0 + 1).await.0,
        BAD_VERSION
    );
    // Refusals change nothing.
    assert_eq!(version_of(&text(&get_config(&mut c, 7).await)), v0);

    // An observer that is not running can be added and removed (kazoo's test does this).
    let (err, zxid, body) = reconfig(&mut c, 8, observer, "", "", v0).await;
    assert_eq!(err, 0);
    assert_eq!(
        text(&body.unwrap()),
        format!("{all}{observer}\nversion={zxid:x}")
    );
    let (err, zxid, body) = reconfig(&mut c, 9, "", "100", "", -1).await;
    assert_eq!(err, 0);
    assert_eq!(text(&body.unwrap()), format!("{all}version={zxid:x}"));

    // Non-incremental: members 2 and 3 only (newline- and comma-separated, as go-zookeeper sends).
    let two_three = format!("{},{}", line(&cfg, 2), line(&cfg, 3));
    let (err, zxid, body) = reconfig(&mut c, 10, "", "", &two_three, -1).await;
    assert_eq!(err, 0);
    assert_eq!(
        text(&body.unwrap()),
        format!("{}{}version={zxid:x}", line(&cfg, 2), line(&cfg, 3))
    );
    wait_non_voting(&members, 1).await;
    // And back to all three: member 1, a learner since, becomes a voter again. (A new connection:
    // when member 1 led, its hand-over made member 2 a candidate, which closes its clients.)
    drop(c);
    let mut c = raw(members[1].addr(), true).await;
    let (err, zxid, body) = reconfig(&mut c, 11, "", "", &all, -1).await;
    assert_eq!(err, 0);
    assert_eq!(text(&body.unwrap()), format!("{all}version={zxid:x}"));
    wait_until("member 1 serves again", Duration::from_secs(20), || {
        serving(members[0].addr())
    })
    .await;
    let mut one = raw(members[0].addr(), false).await;
    one.send(
        12,
        &Request::Sync(wire::ops::sync::SyncRequest { path: "/".into() }),
    )
    .await;
    one.recv().await.unwrap();
    assert_eq!(
        text(&get_config(&mut one, 13).await),
        format!("{all}version={zxid:x}")
    );
    drop((c, plain, one));
    shutdown(&mut members).await;
}

/// A server line for a member that was never started (its ports reserved, nothing listening).
fn never_started(id: u64) -> String {
    let peer = common::reserve_ports(2);
    let client = free_port();
    format!(
        "server.{id}=127.0.0.1:{peer}:{}:participant;127.0.0.1:{client}",
        peer + 1
    )
}

/// The issue-42 typo: a whole-membership reconfig to member 1 and two servers that were never
/// started. Raft could never commit in the joint configuration it asks for, so the leader refuses
/// it before ordering it (NewConfigNoQuorum), on its own clients' connections and on a follower's,
/// and nothing changes: the config, who serves, writes. Then ReconfigInProgress: a reconfig that
/// reaches the leader while another is on its way is refused, whichever member forwards it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_reconfig_without_a_synced_majority_or_during_another_is_refused() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let mut members = start_all(with_super(ensemble_configs_with(root.path(), 3, 0, EXTRA))).await;
    let leader = wait_for_leader(&members).await;
    let follower = members.iter().find(|m| m.id != leader).unwrap().id;
    let cfg = members[0].cfg.clone();
    let all: String = (1..=3).map(|id| line(&cfg, id)).collect();
    let typo = format!(
        "{}{}\n{}",
        line(&cfg, 1),
        never_started(4),
        never_started(5)
    );
    let addr = |id: u64| members[id as usize - 1].addr();

    let mut on_follower = raw(addr(follower), true).await;
    let mut on_leader = raw(addr(leader), true).await;
    let before = text(&get_config(&mut on_follower, 1).await);
    assert_eq!(before, format!("{all}version={:x}", version_of(&before)));
    let mut last_zxid = 0;
    for (xid, c) in [(2, &mut on_follower), (3, &mut on_leader)] {
        let asked = std::time::Instant::now();
        let (err, zxid, body) = reconfig(c, xid, "", "", &typo, -1).await;
        eprintln!("NewConfigNoQuorum after {:?}", asked.elapsed());
        assert_eq!((err, body), (NEW_CONFIG_NO_QUORUM, None));
        // ZooKeeper's error transaction: the refusal is ordered, so it carries a new zxid.
        assert!(zxid > last_zxid && zxid > version_of(&before), "{zxid}");
        last_zxid = zxid;
    }
    for m in &members {
        let (config, _) = synced_config(m.addr()).await.expect("every member serves");
        assert_eq!(config, before, "member {}", m.id);
    }
    let client = connect(addr(follower), Duration::from_secs(10)).await;
    client
        .create("/after-the-typo", b"ok", &persistent())
        .await
        .expect("the ensemble still writes");

    // Two reconfigs sent back to back to the leader: the second is judged before the first can
    // have committed (the leader's core reads them in one turn), so it is in progress. (Through a
    // follower, the leader judges the second once the first went in, which on a fast disk may be
    // after it committed: then both pass, as they would with ZooKeeper.)
    let observer = never_started(100).replace(":participant;", ":observer;");
    for (c, xid) in [(&mut on_leader, 20)] {
        let add = ReconfigRequest {
            joining_servers: observer.clone(),
            leaving_servers: String::new(),
            new_members: String::new(),
            cur_config_id: -1,
        };
        let remove = ReconfigRequest {
            joining_servers: String::new(),
            leaving_servers: "100".into(),
            new_members: String::new(),
            cur_config_id: -1,
        };
        c.send_batch(&[
            (xid, &Request::Reconfig(add)),
            (xid + 1, &Request::Reconfig(remove)),
        ])
        .await;
        let (first, body) = c.recv().await.unwrap();
        let (second, _) = c.recv().await.unwrap();
        assert_eq!((first.xid, first.err), (xid, 0));
        let body = GetDataResponse::from_bytes(&body).unwrap();
        assert_eq!(
            text(&body),
            format!("{all}{observer}\nversion={:x}", first.zxid)
        );
        assert_eq!((second.xid, second.err), (xid + 1, RECONFIG_IN_PROGRESS));
        assert!(second.zxid > first.zxid);
        // Once the first is answered, the next one goes through (raft may still be moving to the
        // first: ZooKeeper's "in progress" ends when the config entry commits, and so does ours).
        let (err, zxid, body) = reconfig(c, xid + 2, "", "100", "", -1).await;
        assert_eq!(err, 0);
        assert_eq!(text(&body.unwrap()), format!("{all}version={zxid:x}"));
    }
    drop((on_follower, on_leader, client));
    shutdown(&mut members).await;
}

#[tokio::test]
async fn a_standalone_server_answers_reconfig_disabled_or_unimplemented() {
    for (enabled, want) in [(false, RECONFIG_DISABLED), (true, UNIMPLEMENTED)] {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = common::test_config(dir.path());
        cfg.reconfig_enabled = enabled;
        let server = common::start_with(cfg).await;
        let mut c = raw(server.local_addr(), false).await;
        let (err, _, _) = reconfig(&mut c, 1, "server.2=127.0.0.1:1:2;3", "", "", -1).await;
        assert_eq!(err, want, "reconfigEnabled={enabled}");
        // The connection goes on.
        assert_eq!(get_config_now(&mut c, 2).await.stat.version, 0);
        drop(c);
        server.shutdown().await;
    }
}

/// ZooKeeper's classic way to grow an ensemble, without reconfigEnabled: members 4 and 5 start
/// with five server lines while 1, 2 and 3 run with three, then 1, 2 and 3 restart one at a time
/// with the five lines. The new members join with the ensemble's cluster id (theirs would differ:
/// it comes from the server lines), the leader adds them as learners then voters, and the five
/// count for quorum: with two of the original three stopped, writes still commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_restart_with_a_longer_server_list_grows_three_members_to_five() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let five = ensemble_configs(root.path(), 5, 0);
    let three: Vec<Config> = five[..3]
        .iter()
        .cloned()
        .map(|mut c| {
            c.servers.retain(|s| s.id <= 3);
            c
        })
        .collect();
    let mut members = start_all(three).await;
    wait_for_leader(&members).await;
    let c = connect(members[0].addr(), Duration::from_secs(10)).await;
    c.create("/before", b"3", &persistent()).await.unwrap();
    drop(c);

    // The new members, with the new list.
    for cfg in &five[3..] {
        let server = paddock::startup::Server::start(cfg.clone())
            .await
            .expect("a new member starts and waits to be added");
        members.push(Member {
            id: cfg.my_id.unwrap(),
            cfg: cfg.clone(),
            server: Some(server),
        });
    }
    // The old members restart one at a time with it, each back in service before the next.
    for i in 0..3 {
        members[i].server.take().unwrap().shutdown().await;
        members[i].cfg = five[i].clone();
        members[i].server = Some(
            paddock::startup::Server::start(five[i].clone())
                .await
                .expect("an old member restarts with the new list"),
        );
        wait_until("the member serves again", Duration::from_secs(20), || {
            serving(members[i].addr())
        })
        .await;
    }
    let leader = wait_for_leader(&members).await;
    wait_until(
        "the leader counts four synced voting followers",
        Duration::from_secs(30),
        || async {
            let addr = members[leader as usize - 1].addr();
            four_letter_try(addr, "mntr")
                .await
                .is_some_and(|m| m.contains("zk_synced_followers\t4\n"))
        },
    )
    .await;
    // Two of the original three stop (the leader among them if it is one of them): the other
    // three of five still make a quorum, which three-of-three raft would not.
    let stop: Vec<usize> = [0usize, 1, 2]
        .into_iter()
        .filter(|i| members[*i].id == leader)
        .chain([0usize, 1, 2])
        .fold(Vec::new(), |mut v, i| {
            if !v.contains(&i) && v.len() < 2 {
                v.push(i);
            }
            v
        });
    for i in &stop {
        members[*i].server.take().unwrap().shutdown().await;
    }
    let c = connect(members[4].addr(), Duration::from_secs(10)).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        match c.create("/after", b"5", &persistent()).await {
            Ok(_) => break,
            Err(e) => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "no write commits with 3 of 5 members: {e}"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
    let (data, _) = c.get_data("/before").await.unwrap();
    assert_eq!(data, b"3");
    // /zookeeper/config lists the five.
    let (config, _) = c.get_data("/zookeeper/config").await.unwrap();
    let config = String::from_utf8(config).unwrap();
    let listed: Vec<&str> = config
        .lines()
        .filter(|l| l.starts_with("server."))
        .collect();
    assert_eq!(listed.len(), 5, "{config}");
    drop(c);
    shutdown(&mut members).await;
}
