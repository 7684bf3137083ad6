//! ZooKeeper's dynamic configuration files with the real binary (`paddock serve --config`):
//! `/zookeeper/config` shows zoo.cfg's membership before a leader writes it; with reconfigEnabled
//! each membership a member applies goes to `zoo.cfg.dynamic.<version hex>` and zoo.cfg is
//! rewritten to point at it (its original kept as zoo.cfg.bak), byte for byte as ZooKeeper 3.9.5
//! writes them; after a reconfig a restarted member reads the new membership from those files.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::process::{free_port, ChildGuard};
use common::{four_letter_try, RawClient};
use wire::ops::auth::AuthPacket;
use wire::ops::data::{GetDataRequest, GetDataResponse};
use wire::ops::reconfig::ReconfigRequest;
use wire::{ConnectRequest, Record, Request};

/// `super:test`.
const SUPER_DIGEST: &str = "super:D/InIHSb7yEEbrWz8b9l71RjZJU=";

struct Member {
    id: u64,
    client_port: u16,
    dir: PathBuf,
    child: Option<ChildGuard>,
}

impl Member {
    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.client_port))
    }

    fn cfg(&self) -> PathBuf {
        self.dir.join("zoo.cfg")
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("server.log"))
            .unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_paddock"));
        cmd.args(["serve", "--config"])
            .arg(self.cfg())
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log);
        self.child = Some(ChildGuard::spawn(&mut cmd));
    }
}

/// Three zoo.cfg files in ZooKeeper's backward-compatible form (server.N lines in zoo.cfg, each
/// naming its client address), with `extra` keys; returns the members and the server lines.
fn write_configs(root: &Path, extra: &str) -> (Vec<Member>, Vec<String>) {
    let ports: Vec<(u16, u16, u16)> = (0..3)
        .map(|_| (free_port(), free_port(), free_port()))
        .collect();
    let lines: Vec<String> = ports
        .iter()
        .enumerate()
        .map(|(i, (client, peer, election))| {
            format!(
                "server.{}=127.0.0.1:{peer}:{election}:participant;127.0.0.1:{client}",
                i + 1
            )
        })
        .collect();
    let members = ports
        .iter()
        .enumerate()
        .map(|(i, (client, _, _))| {
            let id = i as u64 + 1;
            let dir = root.join(format!("m{id}"));
            let data = dir.join("data");
            std::fs::create_dir_all(&data).unwrap();
            std::fs::write(data.join("myid"), format!("{id}\n")).unwrap();
            std::fs::write(
                dir.join("zoo.cfg"),
                format!(
                    "# member {id}\ntickTime=2000\ninitLimit=5\nsyncLimit=2\ndataDir={}\n\
                     clientPort={client}\nclientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\n\
                     admin.enableServer=false\n{extra}{}\n",
                    data.display(),
                    lines.join("\n")
                ),
            )
            .unwrap();
            Member {
                id,
                client_port: *client,
                dir,
                child: None,
            }
        })
        .collect();
    (members, lines)
}

async fn mode(addr: SocketAddr) -> Option<String> {
    let reply = tokio::time::timeout(Duration::from_secs(3), four_letter_try(addr, "srvr"))
        .await
        .ok()??;
    reply
        .lines()
        .find_map(|l| l.strip_prefix("Mode: "))
        .map(str::to_string)
}

async fn wait_serving(members: &[Member]) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    for m in members.iter().filter(|m| m.child.is_some()) {
        while !matches!(mode(m.addr()).await.as_deref(), Some("leader" | "follower")) {
            assert!(
                std::time::Instant::now() < deadline,
                "member {} does not serve",
                m.id
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

async fn get_config(c: &mut RawClient) -> String {
    c.send(
        1,
        &Request::GetData(GetDataRequest {
            path: "/zookeeper/config".into(),
            watch: false,
        }),
    )
    .await;
    let (h, body) = c.recv().await.expect("getData reply");
    assert_eq!((h.xid, h.err), (1, 0));
    let r = GetDataResponse::from_bytes(&body).unwrap();
    let data = r.data.unwrap_or_default();
    assert_eq!(r.stat.data_length as usize, data.len());
    String::from_utf8(data).unwrap()
}

/// `/zookeeper/config` once a leader wrote it (its version is then that write's zxid, not 0).
async fn written_config(addr: SocketAddr) -> String {
    let mut c = RawClient::connect(addr, 30_000).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = get_config(&mut c).await;
        if !text.ends_with("version=0") {
            return text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never written: {text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn version_of(config: &str) -> i64 {
    let v = config.rsplit_once("version=").expect("a version line").1;
    i64::from_str_radix(v.trim(), 16).unwrap()
}

/// Waits until `path` exists and returns its text.
async fn file_text(path: &Path) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            return text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} was not written",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The zoo.cfg ZooKeeper writes after a membership change: the static keys, without the
/// membership's and (this member's line naming its client address) the client port's.
fn rewritten(m: &Member, version: i64) -> String {
    format!(
        "tickTime=2000\ninitLimit=5\nsyncLimit=2\ndataDir={}\n4lw.commands.whitelist=*\n\
         admin.enableServer=false\nreconfigEnabled=true\nstandaloneEnabled=false\n\
         DigestAuthenticationProvider.superDigest={SUPER_DIGEST}\ndynamicConfigFile={}.dynamic.{version:x}\n",
        m.dir.join("data").display(),
        m.cfg().canonicalize().unwrap().display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconfig_is_written_to_the_dynamic_file_and_a_restarted_member_reads_it() {
    let root = tempfile::tempdir().unwrap();
    let extra = format!(
        "reconfigEnabled=true\nstandaloneEnabled=false\n\
         DigestAuthenticationProvider.superDigest={SUPER_DIGEST}\n"
    );
    let (mut members, lines) = write_configs(root.path(), &extra);
    let originals: Vec<String> = members
        .iter()
        .map(|m| std::fs::read_to_string(m.cfg()).unwrap())
        .collect();
    for m in &mut members {
        m.spawn();
    }
    wait_serving(&members).await;

    // The leader's first write of the membership: every member writes it out.
    let first = written_config(members[0].addr()).await;
    assert_eq!(
        first,
        format!("{}\nversion={:x}", lines.join("\n"), version_of(&first))
    );
    let v1 = version_of(&first);
    for (m, original) in members.iter().zip(&originals) {
        let dynamic = PathBuf::from(format!("{}.dynamic.{v1:x}", m.cfg().display()));
        assert_eq!(
            file_text(&dynamic).await,
            lines.join("\n"),
            "member {}",
            m.id
        );
        assert_eq!(std::fs::read_to_string(m.cfg()).unwrap(), rewritten(m, v1));
        let bak = std::fs::read_to_string(m.dir.join("zoo.cfg.bak")).unwrap();
        assert_eq!(&bak, original, "member {}", m.id);
    }

    // A reconfig removes member 3.
    let mut c = RawClient::connect(members[0].addr(), 30_000).await;
    c.send(
        -4,
        &Request::Auth(AuthPacket {
            auth_type: 0,
            scheme: "digest".into(),
            auth: Some(b"super:test".to_vec()),
        }),
    )
    .await;
    assert_eq!(c.recv().await.map(|(h, _)| (h.xid, h.err)), Some((-4, 0)));
    c.send(
        2,
        &Request::Reconfig(ReconfigRequest {
            joining_servers: String::new(),
            leaving_servers: "3".into(),
            new_members: String::new(),
            cur_config_id: v1,
        }),
    )
    .await;
    let (h, body) = c.recv().await.expect("reconfig reply");
    assert_eq!((h.xid, h.err), (2, 0));
    let second = String::from_utf8(
        GetDataResponse::from_bytes(&body)
            .unwrap()
            .data
            .unwrap_or_default(),
    )
    .unwrap();
    let v2 = version_of(&second);
    assert_eq!(second, format!("{}\nversion={v2:x}", lines[..2].join("\n")));
    // Every member writes the new membership, the removed one too (as ZooKeeper's does).
    for m in &members {
        let dynamic = PathBuf::from(format!("{}.dynamic.{v2:x}", m.cfg().display()));
        assert_eq!(
            file_text(&dynamic).await,
            lines[..2].join("\n"),
            "member {}",
            m.id
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::fs::read_to_string(m.cfg()).unwrap() != rewritten(m, v2) {
            assert!(
                std::time::Instant::now() < deadline,
                "member {}'s zoo.cfg: {}",
                m.id,
                std::fs::read_to_string(m.cfg()).unwrap()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    drop(c);

    // Member 1 restarts from its rewritten zoo.cfg: the two-member membership, its client port
    // from its line in the dynamic file.
    members[0].child.take().unwrap().kill_9();
    members[2].child.take();
    members[0].spawn();
    wait_serving(&members[..2]).await;
    let conf = four_letter_try(members[0].addr(), "conf").await.unwrap();
    let membership: Vec<&str> = conf
        .lines()
        .skip_while(|l| !l.starts_with("membership:"))
        .skip(1)
        .take_while(|l| l.starts_with("server."))
        .collect();
    assert_eq!(membership, [lines[0].as_str(), lines[1].as_str()], "{conf}");
    assert_eq!(written_config(members[0].addr()).await, second);
    // Nothing newer to write: zoo.cfg still points at the same file.
    assert_eq!(
        std::fs::read_to_string(members[0].cfg()).unwrap(),
        rewritten(&members[0], v2)
    );
}

/// From the first moment a member answers, `/zookeeper/config` shows a membership: zoo.cfg's
/// with `version=0` (as ZooKeeper's servers hold it from the start) until the leader's write
/// (the same lines, the write's version) has applied there, never an empty node. A fresh member
/// opens its client port only once a majority answered, so the first state is brief: each
/// member is read as soon as its port opens, and every answer must be one of the two. Without
/// reconfigEnabled nothing is written beside zoo.cfg.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_config_node_shows_zoo_cfg_from_the_start() {
    let root = tempfile::tempdir().unwrap();
    let (mut members, lines) = write_configs(root.path(), "");
    let before = format!("{}\nversion=0", lines.join("\n"));
    for m in &mut members {
        m.spawn();
    }
    let mut seen_before = 0;
    for m in &members {
        let addr = m.addr();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            assert!(
                std::time::Instant::now() < deadline,
                "member {} never showed the written config",
                m.id
            );
            if tokio::net::TcpStream::connect(addr).await.is_err() {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
            let req = ConnectRequest {
                timeout: 30_000,
                passwd: Some(vec![0; 16]),
                read_only: Some(true),
                ..Default::default()
            };
            let Ok((_, Some(mut c))) =
                tokio::time::timeout(Duration::from_secs(2), RawClient::connect_with(addr, req))
                    .await
            else {
                continue;
            };
            let text = get_config(&mut c).await;
            if text == before {
                seen_before += 1;
                continue;
            }
            assert_eq!(
                text,
                format!("{}\nversion={:x}", lines.join("\n"), version_of(&text))
            );
            assert_ne!(version_of(&text), 0);
            break;
        }
    }
    eprintln!("reads that saw zoo.cfg's membership before the leader's write: {seen_before}");
    for m in &members {
        let names: Vec<String> = std::fs::read_dir(&m.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("zoo.cfg"))
            .collect();
        assert_eq!(names, ["zoo.cfg"]);
    }
}
