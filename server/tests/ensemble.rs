//! Three members in one process, over real loopback sockets: elections, writes through every
//! member, sessions that live on followers and expire at the leader, failover, and members that
//! stop serving when they lose their leader.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use paddock::config::Config;
use paddock::startup::Server;
use zookeeper_client as zk;

use common::{four_letter, four_letter_try};

/// Ports for a member: client and peer, picked free now (the test binds them a moment later).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Member {
    id: u64,
    cfg: Config,
    server: Option<Server>,
}

impl Member {
    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.cfg.client_port))
    }
}

/// Configs of an ensemble of `n` members (plus `observers`), each with its own data dir under
/// `root`. Raft ticks are 20 ms so that elections take a fraction of a second.
fn ensemble_configs(root: &Path, n: u64, observers: u64) -> Vec<Config> {
    let ids: Vec<(u64, u16, u16)> = (1..=n + observers)
        .map(|id| (id, free_port(), free_port()))
        .collect();
    let mut lines = String::new();
    for (id, peer, _) in &ids {
        let role = if *id > n { ":observer" } else { "" };
        lines.push_str(&format!(
            "server.{id}=127.0.0.1:{peer}:{}{role}\n",
            peer + 1
        ));
    }
    ids.iter()
        .map(|(id, _, client)| {
            let dir = root.join(format!("m{id}"));
            std::fs::create_dir_all(&dir).unwrap();
            let text = format!(
                "tickTime=100\ndataDir={}\nclientPort={client}\nclientPortAddress=127.0.0.1\n\
                 4lw.commands.whitelist=*\nextendedTypesEnabled=true\nminSessionTimeout=400\n\
                 maxSessionTimeout=60000\npaddock.raft.tickMs=20\n{lines}",
                dir.display()
            );
            let mut cfg = Config::parse_zoo_cfg(&text, &dir.join("zoo.cfg")).unwrap();
            cfg.my_id = Some(*id);
            cfg
        })
        .collect()
}

async fn start_all(cfgs: Vec<Config>) -> Vec<Member> {
    let handles: Vec<_> = cfgs
        .iter()
        .cloned()
        .map(|c| tokio::spawn(Server::start(c)))
        .collect();
    let mut members = Vec::new();
    for (cfg, h) in cfgs.into_iter().zip(handles) {
        let server = h.await.unwrap().expect("member starts");
        members.push(Member {
            id: cfg.my_id.unwrap(),
            cfg,
            server: Some(server),
        });
    }
    members
}

/// The `Mode:` line of `srvr`, or None while not serving.
async fn mode(addr: SocketAddr) -> Option<String> {
    let srvr = four_letter_try(addr, "srvr").await?;
    srvr.lines()
        .find_map(|l| l.strip_prefix("Mode: "))
        .map(str::to_string)
}

/// Waits until every running member serves and exactly one leads; returns the leader's id.
async fn wait_for_leader(members: &[Member]) -> u64 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let mut modes = Vec::new();
        for m in members.iter().filter(|m| m.server.is_some()) {
            modes.push((m.id, mode(m.addr()).await));
        }
        let leaders: Vec<u64> = modes
            .iter()
            .filter(|(_, m)| m.as_deref() == Some("leader"))
            .map(|(id, _)| *id)
            .collect();
        if leaders.len() == 1 && modes.iter().all(|(_, m)| m.is_some()) {
            return leaders[0];
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no single leader: {modes:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn connect(addr: SocketAddr, timeout: Duration) -> zk::Client {
    zk::Client::connector()
        .with_session_timeout(timeout)
        .connect(&addr.to_string())
        .await
        .expect("client connects")
}

fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

fn ephemeral() -> zk::CreateOptions<'static> {
    zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all())
}

async fn wait_until<F, Fut>(what: &str, limit: Duration, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    while !f().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn shutdown(members: &mut [Member]) {
    for m in members.iter_mut() {
        if let Some(s) = m.server.take() {
            s.shutdown().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_members_elect_one_leader_and_serve_writes_through_every_member() {
    let root = tempfile::tempdir().unwrap();
    let mut members = start_all(ensemble_configs(root.path(), 3, 0)).await;
    let leader = wait_for_leader(&members).await;

    let mut clients = Vec::new();
    for m in &members {
        clients.push(connect(m.addr(), Duration::from_secs(10)).await);
    }
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
    let leader_addr = members[(leader - 1) as usize].addr();
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
