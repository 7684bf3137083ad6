//! The real binary under `kill -9`: every write a client saw acknowledged is there after a
//! restart, with the same data and stat.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zookeeper_client::{Acls, CreateMode};

use common::process::{free_port, paddock_command, wait_ready, ChildGuard};

fn spawn(dir: &std::path::Path, port: u16) -> ChildGuard {
    ChildGuard::spawn(paddock_command(dir, port, &[]).stderr(Stdio::inherit()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_write_load_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let child = spawn(dir.path(), port);
    wait_ready(addr).await;

    let setup = common::client(addr).await;
    setup
        .create(
            "/load",
            b"",
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    drop(setup);

    // Writers create sequential nodes and record each acknowledged path with its data.
    let acked: Arc<Mutex<BTreeMap<String, Vec<u8>>>> = Arc::default();
    let mut writers = Vec::new();
    for w in 0..8u8 {
        let acked = acked.clone();
        writers.push(tokio::spawn(async move {
            let zk = common::client(addr).await;
            let opts = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
            for i in 0..100_000u32 {
                let data = format!("w{w}-{i}").into_bytes();
                match zk.create("/load/n-", &data, &opts).await {
                    Ok((_, seq)) => {
                        acked.lock().unwrap().insert(format!("/load/n-{seq}"), data);
                    }
                    Err(_) => return, // the server died under us
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    child.kill_9();
    for w in writers {
        let _ = tokio::time::timeout(Duration::from_secs(30), w).await;
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() > 50,
        "the load ran before the kill ({} acknowledged)",
        acked.len()
    );

    let child = spawn(dir.path(), port);
    wait_ready(addr).await;
    let zk = common::client(addr).await;
    let children = zk.list_children("/load").await.unwrap();
    assert!(
        children.len() >= acked.len(),
        "{} on disk < {} acknowledged",
        children.len(),
        acked.len()
    );
    for (path, data) in &acked {
        let (got, _) = zk
            .get_data(path)
            .await
            .unwrap_or_else(|e| panic!("acknowledged {path} lost: {e}"));
        assert_eq!(&got, data, "{path}");
    }
    child.kill_9();
}
