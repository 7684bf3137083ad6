//! Quorum security end to end, in process: three members on 127.0.0.1-3 started from zoo.cfg
//! text with ZooKeeper's keys (`sslQuorum`, `ssl.quorum.*` PEM stores, `quorum.auth.*` with a
//! JAAS file), serving a real client; and the outsider that tries to join in member 3's place,
//! which never serves and whose data dir never holds the tree.
//!
//! The compat suite (compat-tests/security) does the same with separate processes, openssl-made
//! stores and ZooKeeper 3.9.5 beside it; these run in `cargo test`.

mod common;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::ensemble::{connect, mode, persistent, wait_for_leader, Member};
use common::process::ChildGuard;
use paddock::config::{Config, Entry, Origin};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

/// A CA that writes PEM stores.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, name);
        p.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().unwrap();
        let pem = p.self_signed(&key).unwrap().pem();
        Ca {
            pem,
            issuer: Issuer::new(p, key),
        }
    }

    /// A PEM key store (certificate, then PKCS#8 key) for `ip`, at `path`.
    fn key_store(&self, ip: &str, path: &Path) {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name
            .push(DnType::CommonName, format!("paddock {ip}"));
        p.subject_alt_names = vec![SanType::IpAddress(ip.parse::<IpAddr>().unwrap())];
        p.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let key = KeyPair::generate().unwrap();
        let cert = p.signed_by(&key, &self.issuer).unwrap();
        std::fs::write(path, format!("{}{}", cert.pem(), key.serialize_pem())).unwrap();
    }
}

fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_test_writer()
        .try_init();
}

/// Ports for members 1-3 (peer, election, client), the same on each member's address.
struct Layout {
    peer: u16,
    client: u16,
}

fn layout() -> Layout {
    Layout {
        peer: common::reserve_ports(2),
        client: common::reserve_ports(1),
    }
}

/// Member `id`'s zoo.cfg: it listens on 127.0.0.`id`; `security` holds its own lines.
fn member_cfg(root: &Path, id: u64, l: &Layout, security: &str, props: &[String]) -> Config {
    let dir = root.join(format!("m{id}"));
    std::fs::create_dir_all(&dir).unwrap();
    let servers: String = (1..=3)
        .map(|n| {
            format!(
                "server.{n}=127.0.0.{n}:{}:{};127.0.0.{n}:{}\n",
                l.peer,
                l.peer + 1,
                l.client
            )
        })
        .collect();
    let text = format!(
        "tickTime=100\ndataDir={}\nclientPort={}\nclientPortAddress=127.0.0.{id}\n\
         4lw.commands.whitelist=*\nminSessionTimeout=400\nmaxSessionTimeout=60000\n\
         paddock.raft.tickMs=20\n{security}{servers}",
        dir.display(),
        l.client
    );
    let path = dir.join("zoo.cfg");
    std::fs::write(&path, &text).unwrap();
    std::fs::write(dir.join("myid"), id.to_string()).unwrap();
    let overrides = props
        .iter()
        .map(|p| {
            let (key, value) = p.split_once('=').unwrap();
            Entry {
                key: key.to_string(),
                value: value.to_string(),
                origin: Origin::Flag(format!("-D {p}")),
            }
        })
        .collect();
    Config::from_zoo_cfg_with(&path, overrides).unwrap()
}

fn tls_lines(stores: &Path, id: u64) -> String {
    format!(
        "sslQuorum=true\nssl.quorum.keyStore.location={}\nssl.quorum.keyStore.type=PEM\n\
         ssl.quorum.trustStore.location={}\nssl.quorum.trustStore.type=PEM\n",
        stores.join(format!("m{id}.pem")).display(),
        stores.join("ca.pem").display()
    )
}

async fn start(cfgs: Vec<Config>) -> Vec<Member> {
    common::ensemble::start_all(cfgs).await
}

/// Whether any file under `dir` holds `needle` (the tree's bytes are stored uncompressed).
fn holds(dir: &Path, needle: &[u8]) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            holds(&p, needle)
        } else {
            std::fs::read(&p).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle))
        }
    })
}

/// What an outsider in member 3's place gets: no serving, and none of the tree on its disk, while
/// members 1 and 2 go on taking writes. It runs as its own process (`paddock serve --config` with
/// its zoo.cfg and `-D` flags), killed at the end: a member with no data that nobody answers waits
/// for its peers for as long as it runs.
async fn outsider_is_kept_out(members: &[Member], cfg: Config, props: &[String], marker: &[u8]) {
    let data: PathBuf = cfg.data_dir.clone();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_paddock"));
    cmd.arg("serve")
        .arg("--config")
        .arg(data.join("zoo.cfg"))
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(data.join("outsider.log")).unwrap());
    for p in props {
        cmd.args(["-D", p]);
    }
    let outsider = ChildGuard::spawn(&mut cmd);
    let addr = std::net::SocketAddr::new(cfg.client_port_address, cfg.client_port);
    // Members link up in a fraction of a second; give the outsider many times that.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(mode(addr).await, None, "the outsider serves clients");
    let c = connect(members[0].addr(), Duration::from_secs(10)).await;
    let path = format!("/after-{}", data.display())
        .replace("/tmp/", "")
        .replace('/', "-");
    c.create(&format!("/{path}"), b"still", &persistent())
        .await
        .expect("the ensemble takes writes");
    assert!(
        !holds(&data, marker),
        "the outsider's data dir holds the tree"
    );
    drop(outsider);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_quorum_serves_and_keeps_out_members_of_another_ca_and_plaintext_ones() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let stores = root.path().join("stores");
    std::fs::create_dir(&stores).unwrap();
    let ca = Ca::new("members");
    std::fs::write(stores.join("ca.pem"), &ca.pem).unwrap();
    for id in 1..=3 {
        ca.key_store(&format!("127.0.0.{id}"), &stores.join(format!("m{id}.pem")));
    }
    let l = layout();
    let cfgs: Vec<Config> = (1..=3)
        .map(|id| member_cfg(root.path(), id, &l, &tls_lines(&stores, id), &[]))
        .collect();
    let mut members = start(cfgs).await;
    wait_for_leader(&members).await;
    let marker = b"tls-quorum-marker-8d1f2";
    let c = connect(members[0].addr(), Duration::from_secs(10)).await;
    c.create("/secret", marker, &persistent()).await.unwrap();
    // Every member got it over TLS: the positive control for `holds` below.
    let c3 = connect(members[2].addr(), Duration::from_secs(10)).await;
    c3.sync("/secret").await.unwrap();
    assert_eq!(c3.get_data("/secret").await.unwrap().0, marker.to_vec());
    let m3 = members[2].cfg.data_dir.clone();

    // Member 3 stops; outsiders take its place, each with an empty data dir.
    let s3 = members[2].server.take().unwrap();
    s3.shutdown().await;
    assert!(
        holds(&m3, marker),
        "positive control: a member's disk holds the tree"
    );
    let other = Ca::new("someone else");
    let alien = root.path().join("alien");
    std::fs::create_dir(&alien).unwrap();
    std::fs::write(alien.join("ca.pem"), &other.pem).unwrap();
    other.key_store("127.0.0.3", &alien.join("m3.pem"));
    let outsider_root = root.path().join("outsider-ca");
    let cfg = member_cfg(&outsider_root, 3, &l, &tls_lines(&alien, 3), &[]);
    outsider_is_kept_out(&members, cfg, &[], marker).await;

    let outsider_root = root.path().join("outsider-plain");
    let cfg = member_cfg(&outsider_root, 3, &l, "", &[]);
    outsider_is_kept_out(&members, cfg, &[], marker).await;

    // The peer port's counters say what happened: TLS links from the members, none in plaintext,
    // and the outsiders refused.
    let mntr = common::four_letter_try(members[0].addr(), "mntr")
        .await
        .unwrap();
    let value = |key: &str| -> u64 {
        mntr.lines()
            .find_map(|l| l.strip_prefix(&format!("zk_{key}\t")))
            .unwrap_or_else(|| panic!("no {key} in mntr:\n{mntr}"))
            .parse()
            .unwrap()
    };
    assert!(value("paddock_peer_accepted_tls") >= 2, "{mntr}");
    assert_eq!(value("paddock_peer_accepted_plaintext"), 0, "{mntr}");
    assert!(value("paddock_peer_refused") >= 2, "{mntr}");

    for m in members.iter_mut() {
        if let Some(s) = m.server.take() {
            s.shutdown().await;
        }
    }
}

fn jaas(dir: &Path, learner_password: &str) -> PathBuf {
    let path = dir.join("jaas.conf");
    std::fs::write(
        &path,
        format!(
            "QuorumServer {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  \
             user_member=\"right-pw\";\n}};\nQuorumLearner {{\n  \
             org.apache.zookeeper.server.auth.DigestLoginModule required\n  username=\"member\"\n  \
             password=\"{learner_password}\";\n}};\n"
        ),
    )
    .unwrap();
    path
}

const SASL: &str = "quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true\n\
                    quorum.auth.serverRequireSasl=true\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quorum_sasl_admits_members_with_the_password_and_keeps_out_one_without() {
    logs();
    let root = tempfile::tempdir().unwrap();
    let good = jaas(root.path(), "right-pw");
    let l = layout();
    let props = vec![format!(
        "java.security.auth.login.config={}",
        good.display()
    )];
    let cfgs: Vec<Config> = (1..=3)
        .map(|id| member_cfg(root.path(), id, &l, SASL, &props))
        .collect();
    let mut members = start(cfgs).await;
    wait_for_leader(&members).await;
    let marker = b"sasl-quorum-marker-51c0";
    let c = connect(members[0].addr(), Duration::from_secs(10)).await;
    c.create("/secret", marker, &persistent()).await.unwrap();
    let s3 = members[2].server.take().unwrap();
    s3.shutdown().await;

    let bad_dir = root.path().join("outsider");
    std::fs::create_dir(&bad_dir).unwrap();
    let bad = jaas(&bad_dir, "a-guess");
    let props = vec![format!("java.security.auth.login.config={}", bad.display())];
    let cfg = member_cfg(&bad_dir, 3, &l, SASL, &props);
    outsider_is_kept_out(&members, cfg, &props, marker).await;

    for m in members.iter_mut() {
        if let Some(s) = m.server.take() {
            s.shutdown().await;
        }
    }
}

/// With quorum TLS the electionPort is bound (a health check's `nc -z` succeeds) but closes every
/// connection as it is accepted, reading nothing: ZooKeeper's quorum TLS covers that port too,
/// and paddock has nothing to say on it. Without TLS a silent connection would be held for the
/// read timeout (syncLimit 30 x tickTime 100 ms = 3 s, election_port.rs's test).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_quorum_closes_its_election_port_connections_at_once() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    logs();
    let root = tempfile::tempdir().unwrap();
    let stores = root.path().join("stores");
    std::fs::create_dir(&stores).unwrap();
    let ca = Ca::new("members");
    std::fs::write(stores.join("ca.pem"), &ca.pem).unwrap();
    for id in 1..=3 {
        ca.key_store(&format!("127.0.0.{id}"), &stores.join(format!("m{id}.pem")));
    }
    let l = layout();
    let cfgs: Vec<Config> = (1..=3)
        .map(|id| {
            let lines = format!("{}syncLimit=30\n", tls_lines(&stores, id));
            member_cfg(root.path(), id, &l, &lines, &[])
        })
        .collect();
    let mut members = start(cfgs).await;
    wait_for_leader(&members).await;
    for m in &members {
        let addr = m.server.as_ref().unwrap().election_addr().expect("bound");
        assert_eq!(addr.port(), l.peer + 1);
        // Silent, then a ZooKeeper election header: closed long before the 3 s read timeout, and
        // nothing comes back.
        for send in [&b""[..], &(-65536i64).to_be_bytes()[..]] {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            let _ = s.write_all(send).await;
            let mut buf = [0u8; 64];
            let r = tokio::time::timeout(Duration::from_millis(1500), s.read(&mut buf)).await;
            match r {
                Ok(Ok(0)) => {}
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
                other => panic!("member {}: expected a close, got {other:?}", m.id),
            }
        }
    }
    // The quorum serves.
    let c = connect(members[0].addr(), Duration::from_secs(10)).await;
    c.create("/tls-election-port", b"", &persistent())
        .await
        .unwrap();
    for m in members.iter_mut() {
        if let Some(s) = m.server.take() {
            s.shutdown().await;
        }
    }
}
