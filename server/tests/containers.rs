//! ZooKeeper's ContainerManager settings with the real binary (`paddock serve -D ...`):
//! `znode.container.maxNeverUsedIntervalMs` deletes a container that never had a child once it is
//! older than the interval (and 0, the default, never does); `znode.container.maxPerMinute`
//! spaces deletions a minute / maxPerMinute apart (the default, 10000, 6 ms apart).

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use common::process::{free_port, paddock_command, wait_ready, ChildGuard};
use zookeeper_client::{Acls, CreateMode};

fn start(dir: &Path, props: &[&str]) -> (ChildGuard, SocketAddr) {
    let port = free_port();
    let mut props: Vec<String> = props.iter().map(|p| p.to_string()).collect();
    props.push("znode.container.checkIntervalMs=50".into());
    let child = ChildGuard::spawn(&mut paddock_command(dir, port, &props));
    (child, SocketAddr::from(([127, 0, 0, 1], port)))
}

fn container() -> zookeeper_client::CreateOptions<'static> {
    CreateMode::Container.with_acls(Acls::anyone_all())
}

fn persistent() -> zookeeper_client::CreateOptions<'static> {
    CreateMode::Persistent.with_acls(Acls::anyone_all())
}

/// Polls every 10 ms until `path` is gone; how long that took from `since`.
async fn gone_after(zk: &zookeeper_client::Client, path: &str, since: Instant) -> Duration {
    loop {
        if zk.check_stat(path).await.unwrap().is_none() {
            return since.elapsed();
        }
        assert!(
            since.elapsed() < Duration::from_secs(10),
            "{path} still there after 10 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_that_never_had_a_child_goes_after_max_never_used_interval() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, addr) = start(dir.path(), &["znode.container.maxNeverUsedIntervalMs=600"]);
    wait_ready(addr).await;
    let zk = common::client(addr).await;
    let created = Instant::now();
    zk.create("/never", b"", &container()).await.unwrap();
    // A container with a child stays whatever its age.
    zk.create("/used", b"", &container()).await.unwrap();
    zk.create("/used/child", b"", &persistent()).await.unwrap();
    let lived = gone_after(&zk, "/never", created).await;
    // Deleted once now - mtime > 600 ms, found by a sweep every 50 ms.
    assert!(
        lived >= Duration::from_millis(600) && lived < Duration::from_millis(2000),
        "the never-used container lived {lived:?}"
    );
    assert!(zk.check_stat("/used").await.unwrap().is_some());

    // The default, 0: a never-used container stays.
    let dir = tempfile::tempdir().unwrap();
    let (_server, addr) = start(dir.path(), &[]);
    wait_ready(addr).await;
    let zk = common::client(addr).await;
    zk.create("/never", b"", &container()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(zk.check_stat("/never").await.unwrap().is_some());
}

/// Four containers emptied at once go one by one: with maxPerMinute=120, 500 ms apart; with the
/// default, all within a few sweeps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletions_are_spaced_by_max_per_minute() {
    for (props, spaced) in [
        (&["znode.container.maxPerMinute=120"][..], true),
        (&[][..], false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (_server, addr) = start(dir.path(), props);
        wait_ready(addr).await;
        let zk = common::client(addr).await;
        let paths: Vec<String> = (0..4).map(|i| format!("/c{i}")).collect();
        for p in &paths {
            zk.create(p, b"", &container()).await.unwrap();
            zk.create(&format!("{p}/x"), b"", &persistent())
                .await
                .unwrap();
        }
        for p in &paths {
            zk.delete(&format!("{p}/x"), None).await.unwrap();
        }
        let emptied = Instant::now();
        let mut gone: Vec<Duration> = Vec::new();
        while gone.len() < paths.len() {
            let mut now_gone = 0;
            for p in &paths {
                if zk.check_stat(p).await.unwrap().is_none() {
                    now_gone += 1;
                }
            }
            while gone.len() < now_gone {
                gone.push(emptied.elapsed());
            }
            assert!(
                emptied.elapsed() < Duration::from_secs(10),
                "{props:?}: {gone:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if spaced {
            for pair in gone.windows(2) {
                // 500 ms between proposals; a poll round of four reads blurs it by some ms.
                assert!(
                    pair[1] - pair[0] >= Duration::from_millis(400),
                    "deletions closer than maxPerMinute allows: {gone:?}"
                );
            }
            assert!(gone[3] >= Duration::from_millis(1500), "{gone:?}");
        } else {
            assert!(
                gone[3] < Duration::from_millis(1000),
                "default spacing: {gone:?}"
            );
        }
    }
}
