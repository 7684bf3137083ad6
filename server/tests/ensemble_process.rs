//! Three `paddock serve --config` processes (the binary cargo built) from ordinary zoo.cfg files:
//! eight writers on the followers, `kill -9` of the leader under that load, the writers carry on
//! through the surviving members, the killed member restarts and catches up, and in the end every
//! acknowledged write is on every member with its acknowledged value, and every member reports
//! the same zxid.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zookeeper_client as zk;

use common::four_letter_try;
use common::process::{free_port, ChildGuard};

const MEMBERS: usize = 3;
const WRITERS: usize = 8;
/// Every operation of a writer is bounded: past this its outcome counts as unknown.
const OP_TIMEOUT: Duration = Duration::from_secs(15);

struct Member {
    id: usize,
    client_port: u16,
    cfg: PathBuf,
    log: PathBuf,
    child: Option<ChildGuard>,
}

impl Member {
    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.client_port))
    }

    /// Starts (or restarts) the member's process; its stderr is appended to its log.
    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_paddock"));
        cmd.args(["serve", "--config"])
            .arg(&self.cfg)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log);
        self.child = Some(ChildGuard::spawn(&mut cmd));
    }
}

/// Ordinary ZooKeeper zoo.cfg files, one per member, with myid in each dataDir.
fn write_configs(root: &Path) -> Vec<Member> {
    let ports: Vec<(u16, u16, u16)> = (0..MEMBERS)
        .map(|_| (free_port(), free_port(), free_port()))
        .collect();
    let servers: String = ports
        .iter()
        .enumerate()
        .map(|(i, (_, peer, election))| format!("server.{}=127.0.0.1:{peer}:{election}\n", i + 1))
        .collect();
    ports
        .iter()
        .enumerate()
        .map(|(i, (client, _, _))| {
            let id = i + 1;
            let dir = root.join(format!("m{id}"));
            let data = dir.join("data");
            std::fs::create_dir_all(&data).unwrap();
            std::fs::write(data.join("myid"), format!("{id}\n")).unwrap();
            let cfg = dir.join("zoo.cfg");
            std::fs::write(
                &cfg,
                format!(
                    "tickTime=2000\ninitLimit=5\nsyncLimit=2\ndataDir={}\nclientPort={client}\n\
                     clientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\n{servers}",
                    data.display()
                ),
            )
            .unwrap();
            Member {
                id,
                client_port: *client,
                cfg,
                log: dir.join("server.log"),
                child: None,
            }
        })
        .collect()
}

/// Writes the configs and starts every member.
fn spawn_all(root: &Path) -> Vec<Member> {
    let mut members = write_configs(root);
    for m in &mut members {
        m.spawn();
    }
    members
}

/// The `srvr` reply's `Mode:` and `Zxid:` lines (None while not answering or not serving).
async fn srvr(addr: SocketAddr) -> (Option<String>, Option<i64>) {
    let Ok(Some(reply)) =
        tokio::time::timeout(Duration::from_secs(3), four_letter_try(addr, "srvr")).await
    else {
        return (None, None);
    };
    let mode = reply
        .lines()
        .find_map(|l| l.strip_prefix("Mode: "))
        .map(str::to_string);
    let zxid = reply
        .lines()
        .find_map(|l| l.strip_prefix("Zxid: "))
        .and_then(|z| i64::from_str_radix(z.trim_start_matches("0x"), 16).ok());
    (mode, zxid)
}

/// Waits until every running member serves and exactly one leads; returns the leader's index.
async fn wait_for_leader(members: &[Member], limit: Duration) -> usize {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let mut modes = Vec::new();
        for m in members.iter().filter(|m| m.child.is_some()) {
            modes.push((m.id, srvr(m.addr()).await.0));
        }
        let leaders: Vec<usize> = modes
            .iter()
            .filter(|(_, m)| m.as_deref() == Some("leader"))
            .map(|(id, _)| *id)
            .collect();
        let all_serving = modes
            .iter()
            .all(|(_, m)| matches!(m.as_deref(), Some("leader" | "follower")));
        if leaders.len() == 1 && all_serving {
            return leaders[0] - 1;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no single leader within {limit:?}: {modes:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What a writer knows about one of its znodes.
#[derive(Debug, Clone, PartialEq)]
enum Known {
    /// Created and acknowledged with this value; no later write was tried.
    Created(Vec<u8>),
    /// Created, then set and acknowledged with this value at version 1.
    Set(Vec<u8>),
    /// Created (acknowledged); the set's outcome is unknown: the first or the second value.
    SetUnknown(Vec<u8>, Vec<u8>),
    /// The create's outcome is unknown (connection lost): absent, or present with this value.
    CreateUnknown(Vec<u8>),
}

#[derive(Default)]
struct WriterLog {
    znodes: BTreeMap<String, Known>,
    acked: u64,
    /// Acknowledged writes issued after the leader was killed.
    acked_after_kill: u64,
    /// Operations that failed (connection loss, timeout): their outcome is unknown.
    unknown: u64,
}

fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

/// Runs a bounded operation; `Err(None)` when it did not answer in time.
async fn bounded<T>(
    f: impl std::future::Future<Output = Result<T, zk::Error>>,
) -> Result<T, Option<zk::Error>> {
    match tokio::time::timeout(OP_TIMEOUT, f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(Some(e)),
        Err(_) => Err(None),
    }
}

/// Creates `/ens/w{w}/n{j}` then sets it, one request at a time, until told to stop. Any failure
/// abandons that znode (its outcome is recorded as unknown) and goes on with the next.
async fn writer(
    w: usize,
    hosts: String,
    stop: Arc<AtomicBool>,
    killed: Arc<AtomicBool>,
) -> WriterLog {
    let client = zk::Client::connector()
        .with_session_timeout(Duration::from_secs(30))
        .connect(&hosts)
        .await
        .unwrap_or_else(|e| panic!("writer {w} connects to {hosts}: {e}"));
    let mut log = WriterLog::default();
    let mut j = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let path = format!("/ens/w{w}/n{j:06}");
        let created = format!("c{w}-{j}").into_bytes();
        let set = format!("s{w}-{j}").into_bytes();
        j += 1;
        let after_kill = killed.load(Ordering::Relaxed);
        match bounded(client.create(&path, &created, &persistent())).await {
            Ok(_) => {
                log.acked += 1;
                log.acked_after_kill += u64::from(after_kill);
                log.znodes
                    .insert(path.clone(), Known::Created(created.clone()));
            }
            Err(e) => {
                assert!(
                    matches!(e, None | Some(zk::Error::ConnectionLoss)),
                    "writer {w}: create {path}: {e:?}"
                );
                log.unknown += 1;
                log.znodes.insert(path, Known::CreateUnknown(created));
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        }
        let after_kill = killed.load(Ordering::Relaxed);
        match bounded(client.set_data(&path, &set, Some(0))).await {
            Ok(stat) => {
                assert_eq!(stat.version, 1, "writer {w}: set {path}");
                log.acked += 1;
                log.acked_after_kill += u64::from(after_kill);
                log.znodes.insert(path, Known::Set(set));
            }
            Err(e) => {
                assert!(
                    matches!(e, None | Some(zk::Error::ConnectionLoss)),
                    "writer {w}: set {path}: {e:?}"
                );
                log.unknown += 1;
                log.znodes.insert(path, Known::SetUnknown(created, set));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    log
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_of_the_leader_under_load_through_followers_loses_no_acknowledged_write() {
    let root = tempfile::tempdir().unwrap();
    let mut members = spawn_all(root.path());
    let dump_logs = |members: &[Member]| {
        for m in members {
            let text = std::fs::read_to_string(&m.log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(30).collect();
            eprintln!("--- member {} log (last lines) ---", m.id);
            for l in tail.iter().rev() {
                eprintln!("{l}");
            }
        }
    };
    let leader = wait_for_leader(&members, Duration::from_secs(60)).await;
    let followers: Vec<usize> = (0..MEMBERS).filter(|&i| i != leader).collect();

    let setup = zk::Client::connector()
        .with_session_timeout(Duration::from_secs(30))
        .connect(&members[followers[0]].addr().to_string())
        .await
        .unwrap();
    setup.create("/ens", b"", &persistent()).await.unwrap();
    for w in 0..WRITERS {
        setup
            .create(&format!("/ens/w{w}"), b"", &persistent())
            .await
            .unwrap();
    }

    // Writers on the followers only: half list one follower first, half the other (the client
    // shuffles its list, and on a lost connection tries the other one).
    let stop = Arc::new(AtomicBool::new(false));
    let killed = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let (a, b) = (followers[w % 2], followers[(w + 1) % 2]);
        let hosts = format!("{},{}", members[a].addr(), members[b].addr());
        tasks.push(tokio::spawn(writer(w, hosts, stop.clone(), killed.clone())));
    }

    tokio::time::sleep(Duration::from_secs(3)).await;
    let before_kill = srvr(members[followers[0]].addr()).await.1.unwrap();
    killed.store(true, Ordering::Relaxed);
    members[leader].child.take().unwrap().kill_9();

    // The two survivors elect a leader and the writers go on through them.
    let new_leader = {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let a = srvr(members[followers[0]].addr()).await.0;
            let b = srvr(members[followers[1]].addr()).await.0;
            match (a.as_deref(), b.as_deref()) {
                (Some("leader"), Some("follower")) => break followers[0],
                (Some("follower"), Some("leader")) => break followers[1],
                _ => {}
            }
            if tokio::time::Instant::now() > deadline {
                dump_logs(&members);
                panic!("no new leader among the survivors: {a:?} {b:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    assert_ne!(new_leader, leader);
    tokio::time::sleep(Duration::from_secs(3)).await;

    // The killed member comes back with its data and catches up while the load goes on.
    members[leader].spawn();
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    let mut logs = Vec::new();
    for t in tasks {
        logs.push(t.await.expect("writer task"));
    }
    let acked: u64 = logs.iter().map(|l| l.acked).sum();
    let after: u64 = logs.iter().map(|l| l.acked_after_kill).sum();
    let unknown: u64 = logs.iter().map(|l| l.unknown).sum();
    eprintln!(
        "acknowledged writes: {acked} ({after} after the kill), unknown outcomes: {unknown}, \
         zxid before the kill {before_kill:#x}"
    );
    for (w, l) in logs.iter().enumerate() {
        assert!(
            l.acked_after_kill > 0,
            "writer {w} wrote nothing after the kill"
        );
    }

    if wait_for_leader_quietly(&members).await.is_none() {
        dump_logs(&members);
        panic!("the restarted member did not rejoin");
    }
    // Every member applies the same history: the same zxid once the load has stopped.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let zxids = loop {
        let mut zxids = Vec::new();
        for m in &members {
            zxids.push(srvr(m.addr()).await.1);
        }
        if zxids.iter().all(|z| z.is_some() && *z == zxids[0]) {
            break zxids;
        }
        if tokio::time::Instant::now() > deadline {
            dump_logs(&members);
            panic!("members' zxids never agreed: {zxids:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(zxids[0].unwrap() > before_kill);

    // Every member, read through its own client port after a sync.
    let mut present_on_first: Option<Vec<Vec<String>>> = None;
    for m in &members {
        let c = zk::Client::connector()
            .with_session_timeout(Duration::from_secs(30))
            .connect(&m.addr().to_string())
            .await
            .unwrap_or_else(|e| panic!("connect to member {}: {e}", m.id));
        c.sync("/ens").await.unwrap();
        let mut present = Vec::new();
        for (w, l) in logs.iter().enumerate() {
            let mut children = c.list_children(&format!("/ens/w{w}")).await.unwrap();
            children.sort();
            let mut checked = 0;
            for (path, known) in &l.znodes {
                let got = c.get_data(path).await;
                match (known, got) {
                    (Known::Created(v), Ok((data, stat))) => {
                        assert_eq!(&data, v, "member {} {path}", m.id);
                        assert_eq!(stat.version, 0, "member {} {path}", m.id);
                        checked += 1;
                    }
                    (Known::Set(v), Ok((data, stat))) => {
                        assert_eq!(&data, v, "member {} {path}", m.id);
                        assert_eq!(stat.version, 1, "member {} {path}", m.id);
                        checked += 1;
                    }
                    (Known::SetUnknown(c0, s1), Ok((data, stat))) => {
                        assert!(
                            (data == *c0 && stat.version == 0)
                                || (data == *s1 && stat.version == 1),
                            "member {} {path}: {data:?} v{}",
                            m.id,
                            stat.version
                        );
                        checked += 1;
                    }
                    (Known::CreateUnknown(v), Ok((data, _))) => {
                        assert_eq!(&data, v, "member {} {path}", m.id);
                        checked += 1;
                    }
                    (Known::CreateUnknown(_), Err(zk::Error::NoNode)) => {}
                    (known, got) => panic!(
                        "member {}: {path} was {known:?}, read {got:?} (acknowledged write lost)",
                        m.id
                    ),
                }
            }
            // Nothing else is there: exactly the znodes read above.
            assert_eq!(children.len(), checked, "member {} /ens/w{w}", m.id);
            present.push(children);
        }
        // Every member holds exactly the same znodes (the unknown creates resolved alike).
        match &present_on_first {
            None => present_on_first = Some(present),
            Some(first) => assert_eq!(first, &present, "member {} differs from member 1", m.id),
        }
    }
    let known_count: usize = logs
        .iter()
        .map(|l| {
            l.znodes
                .values()
                .filter(|k| !matches!(k, Known::CreateUnknown(_)))
                .count()
        })
        .sum();
    let present_count: usize = present_on_first.unwrap().iter().map(Vec::len).sum();
    let unknown_creates = present_count - known_count;
    eprintln!(
        "{present_count} znodes on every member: {known_count} acknowledged creates and \
         {unknown_creates} unacknowledged ones that committed"
    );
    assert!(unknown_creates as u64 <= unknown);
}

/// Like `wait_for_leader`, but returns None instead of panicking (so the logs can be shown).
async fn wait_for_leader_quietly(members: &[Member]) -> Option<usize> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let mut modes = Vec::new();
        for m in members {
            modes.push(srvr(m.addr()).await.0);
        }
        let leaders = modes
            .iter()
            .filter(|m| m.as_deref() == Some("leader"))
            .count();
        let followers = modes
            .iter()
            .filter(|m| m.as_deref() == Some("follower"))
            .count();
        if leaders == 1 && followers == MEMBERS - 1 {
            return modes.iter().position(|m| m.as_deref() == Some("leader"));
        }
        if tokio::time::Instant::now() > deadline {
            eprintln!("modes: {modes:?}");
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A member between leaders holds a new client's ConnectRequest rather than closing it at once
/// (`core::handshake`): with its two peers killed, member B holds one; a short session timeout's
/// hold runs out and is refused; a long one is still held when a peer comes back, and is answered
/// with a session once the two elect a leader.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_member_between_leaders_holds_a_new_client_until_it_serves_again() {
    let root = tempfile::tempdir().unwrap();
    let mut members = spawn_all(root.path());
    let leader = wait_for_leader(&members, Duration::from_secs(60)).await;
    let b = (leader + 1) % MEMBERS;
    let c = (leader + 2) % MEMBERS;
    members[leader].child.take().unwrap().kill_9();
    members[c].child.take().unwrap().kill_9();
    let addr = members[b].addr();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while four_letter_try(addr, "srvr").await.as_deref()
        != Some("This ZooKeeper instance is not currently serving requests\n")
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "member B still serves"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let connect = |timeout: i32| {
        common::RawClient::connect_with(
            addr,
            wire::ConnectRequest {
                timeout,
                passwd: Some(vec![0; 16]),
                ..Default::default()
            },
        )
    };

    // tickTime 2000: a 4 s session timeout (the least) is held for a third of it, then refused.
    let started = std::time::Instant::now();
    let (resp, client) = tokio::time::timeout(Duration::from_secs(15), connect(4_000))
        .await
        .expect("a held ConnectRequest is refused once its hold runs out");
    let held = started.elapsed();
    assert!(resp.is_none() && client.is_none());
    assert!(
        held >= Duration::from_millis(1_300),
        "refused after {held:?}"
    );

    // A 30 s session timeout is held for 10 s (two election rounds of 5 s at most with
    // syncLimit=2). Still held when C comes back; answered once B and C have a leader.
    let waiting = tokio::spawn(connect(30_000));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "refused while between leaders");
    members[c].spawn();
    let (resp, client) = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("no answer")
        .unwrap();
    let resp = resp.expect("refused: no leader within the hold");
    assert_eq!(resp.timeout, 30_000);
    assert_ne!(resp.session_id, 0);
    assert!(client.is_some());
    assert!(matches!(
        srvr(addr).await.0.as_deref(),
        Some("leader" | "follower")
    ));
}
