//! Starting in-process ensemble members over loopback, for server/tests/ensemble.rs and
//! server/tests/reconfig.rs.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use paddock::config::Config;
use paddock::startup::Server;
use zookeeper_client as zk;

use super::four_letter_try;

/// A port for a member to bind a moment later (see `reserve_ports`).
pub fn free_port() -> u16 {
    super::reserve_ports(1)
}

pub struct Member {
    pub id: u64,
    pub cfg: Config,
    pub server: Option<Server>,
}

impl Member {
    /// Its client address: the configured one, loopback when it listens on every interface.
    pub fn addr(&self) -> SocketAddr {
        let ip = self.cfg.client_port_address;
        let ip = if ip.is_unspecified() {
            std::net::IpAddr::from([127, 0, 0, 1])
        } else {
            ip
        };
        SocketAddr::new(ip, self.cfg.client_port)
    }
}

/// Configs of an ensemble of `n` members (plus `observers`), each with its own data dir under
/// `root`. Raft ticks are 20 ms so that elections take a fraction of a second.
pub fn ensemble_configs(root: &Path, n: u64, observers: u64) -> Vec<Config> {
    ensemble_configs_with(root, n, observers, "")
}

/// `ensemble_configs` with `extra` zoo.cfg lines (each ending in a newline) in every member's file.
pub fn ensemble_configs_with(root: &Path, n: u64, observers: u64, extra: &str) -> Vec<Config> {
    // The peer port and the one after it (the election port, which each member binds and
    // never speaks on), then the client port.
    let ids: Vec<(u64, u16, u16)> = (1..=n + observers)
        .map(|id| (id, super::reserve_ports(2), free_port()))
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
                 maxSessionTimeout=60000\npaddock.raft.tickMs=20\n{extra}{lines}",
                dir.display()
            );
            let mut cfg = Config::parse_zoo_cfg(&text, &dir.join("zoo.cfg")).unwrap();
            cfg.my_id = Some(*id);
            cfg
        })
        .collect()
}

pub async fn start_all(cfgs: Vec<Config>) -> Vec<Member> {
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
pub async fn mode(addr: SocketAddr) -> Option<String> {
    let srvr = four_letter_try(addr, "srvr").await?;
    srvr.lines()
        .find_map(|l| l.strip_prefix("Mode: "))
        .map(str::to_string)
}

/// Waits until every running member serves and exactly one leads; returns the leader's id.
pub async fn wait_for_leader(members: &[Member]) -> u64 {
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

pub async fn connect(addr: SocketAddr, timeout: Duration) -> zk::Client {
    zk::Client::connector()
        .with_session_timeout(timeout)
        .connect(&addr.to_string())
        .await
        .expect("client connects")
}

pub fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

pub fn ephemeral() -> zk::CreateOptions<'static> {
    zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all())
}

pub async fn wait_until<F, Fut>(what: &str, limit: Duration, mut f: F)
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

pub async fn shutdown(members: &mut [Member]) {
    for m in members.iter_mut() {
        if let Some(s) = m.server.take() {
            s.shutdown().await;
        }
    }
}
