//! Power loss and I/O errors, with an LD_PRELOAD shim in C (tests/shim/powerloss.c, built here
//! with `cc`; the workspace forbids `unsafe` Rust). The shim keeps a copy of what a power loss
//! would leave of the data directory (bytes made durable by O_DSYNC writes and fsyncs, names by
//! directory fsyncs), cuts the power at a chosen durability event (a write in flight is applied
//! to a random half of its sectors, and never returns), or fails a chosen write, fsync or
//! directory fsync with EIO.
//!
//! Power loss: a write load runs until the cut; the copy is turned into a data directory and
//! paddock started on it (without the shim) must start, never refusing (only writes that never
//! returned tore), and hold every create it acknowledged. EIO: the server must stop by itself,
//! exit 1 with the error, never touch the failed file again (no retried fsync), and start again
//! on the real files with every acknowledged create.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zookeeper_client::{Acls, CreateMode};

use common::process::free_port;

/// The shim, built once per test binary into `dir`; `None` (with the reason printed) without a C
/// compiler.
fn build_shim(dir: &Path) -> Option<PathBuf> {
    let src = manifest_dir().join("tests/shim/powerloss.c");
    let out = dir.join("powerloss.so");
    let built = Command::new("cc")
        .args([
            "-shared",
            "-fPIC",
            "-O1",
            "-Wall",
            "-Wno-format-truncation",
            "-o",
        ])
        .arg(&out)
        .arg(&src)
        .args(["-ldl", "-lpthread"])
        .output();
    match built {
        Ok(o) if o.status.success() => Some(out),
        Ok(o) => panic!(
            "the shim does not build: {}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => {
            eprintln!("skipped: no C compiler to build the shim ({e})");
            None
        }
    }
}

/// How a run uses the shim.
#[derive(Clone, Default)]
struct Shim {
    cut_at: Option<u64>,
    seed: u64,
    eio: Option<String>,
    no_direct: bool,
}

/// `paddock serve` on `root/data`, under the shim when given.
fn serve(root: &Path, port: u16, shim: Option<(&Path, &Path, &Shim)>) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_paddock"));
    cmd.args(["serve", "--port", &port.to_string(), "--data-dir"])
        .arg(root.join("data"))
        .args(["-D", "admin.enableServer=false", "-D", "snapCount=300"])
        .env("RUST_LOG", "warn")
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some((so, shadow, s)) = shim {
        cmd.env("LD_PRELOAD", so)
            .env("SHIM_ROOT", root)
            .env("SHIM_SHADOW", shadow)
            .env("SHIM_SEED", s.seed.to_string());
        if let Some(n) = s.cut_at {
            cmd.env("SHIM_CUT_AT", n.to_string());
        }
        if let Some(e) = &s.eio {
            cmd.env("SHIM_EIO", e);
        }
        if s.no_direct {
            cmd.env("SHIM_NO_DIRECT", "1");
        }
    }
    cmd.spawn().unwrap()
}

/// Waits for `ruok` on `addr` while the child runs: false if it exited first.
async fn ready(addr: SocketAddr, child: &mut Child) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        let ruok = common::four_letter_try(addr, "ruok");
        if let Ok(Some(s)) = tokio::time::timeout(Duration::from_millis(500), ruok).await {
            if s == "imok" {
                return true;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("paddock neither served nor exited on {addr}");
}

/// Creates from 4 writers until the server stops answering (or `limit` passes); every
/// acknowledged path and data.
async fn load_until_gone(addr: SocketAddr, limit: Duration) -> BTreeMap<String, Vec<u8>> {
    let until = Instant::now() + limit;
    let acked: Arc<Mutex<BTreeMap<String, Vec<u8>>>> = Arc::default();
    if let Ok(zk) = connect(addr).await {
        let _ = zk
            .create(
                "/load",
                b"",
                &CreateMode::Persistent.with_acls(Acls::anyone_all()),
            )
            .await;
    }
    let writers: Vec<_> = (0..4u8)
        .map(|w| {
            let acked = acked.clone();
            tokio::spawn(async move {
                let Ok(zk) = connect(addr).await else { return };
                let opts = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
                let prefix = format!("/load/w{w}-");
                for i in 0u32.. {
                    if Instant::now() > until {
                        return;
                    }
                    let mut data = format!("w{w}-{i}-").into_bytes();
                    data.resize(100 + (i as usize * 37) % 3000, b'x');
                    let create = zk.create(&prefix, &data, &opts);
                    match tokio::time::timeout(Duration::from_secs(5), create).await {
                        Ok(Ok((_, seq))) => {
                            acked
                                .lock()
                                .unwrap()
                                .insert(format!("{prefix}{seq:010}"), data);
                        }
                        _ => return,
                    }
                }
            })
        })
        .collect();
    for w in writers {
        let _ = tokio::time::timeout(Duration::from_secs(60), w).await;
    }
    let acked = acked.lock().unwrap().clone();
    acked
}

async fn connect(addr: SocketAddr) -> Result<zookeeper_client::Client, zookeeper_client::Error> {
    zookeeper_client::Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(&addr.to_string())
        .await
}

/// The child's exit: its code, its signal, its stderr.
fn finish(mut child: Child, limit: Duration) -> (Option<i32>, Option<i32>, String) {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status.code(), status.signal(), err)
}

/// Builds the data directory a power loss would leave, from the shim's copy, under `dest`.
fn materialize(shadow: &Path, dest: &Path) {
    fn dir(shadow: &Path, ino: &str, dest: &Path) {
        std::fs::create_dir_all(dest).unwrap();
        let Ok(list) = std::fs::read_to_string(shadow.join("dirs").join(ino)) else {
            return;
        };
        for line in list.lines() {
            let mut f = line.split('\t');
            let (name, ino, kind) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
            let to = dest.join(name);
            if kind == "d" {
                dir(shadow, ino, &to);
            } else {
                match std::fs::copy(shadow.join("inodes").join(ino), &to) {
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        std::fs::File::create(&to).unwrap();
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        }
    }
    let root = std::fs::read_to_string(shadow.join("root")).unwrap();
    dir(shadow, root.trim(), dest);
}

/// Starts paddock (without the shim) on `root/data` and checks every acknowledged create; what
/// it logged.
async fn check_starts_with(root: &Path, acked: &BTreeMap<String, Vec<u8>>, what: &str) -> String {
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut child = serve(root, port, None);
    if !ready(addr, &mut child).await {
        let (code, _, err) = finish(child, Duration::from_secs(5));
        panic!("{what}: the start was refused ({code:?}): {err}");
    }
    let zk = connect(addr).await.unwrap();
    for (path, want) in acked {
        let (got, _) = zk
            .get_data(path)
            .await
            .unwrap_or_else(|e| panic!("{what}: acknowledged {path} lost: {e}"));
        assert_eq!(&got, want, "{what}: {path}");
    }
    drop(zk);
    let _ = child.kill();
    finish(child, Duration::from_secs(10)).2
}

/// One power loss at durability event `cut_at`; what was acknowledged, and whether the write in
/// flight tore.
async fn power_loss_at(so: &Path, cut_at: u64, seed: u64, no_direct: bool) -> (usize, bool) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let shadow = tmp.path().join("shadow");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&shadow).unwrap();
    let shim = Shim {
        cut_at: Some(cut_at),
        seed,
        no_direct,
        ..Shim::default()
    };
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut child = serve(&root, port, Some((so, &shadow, &shim)));
    let acked = if ready(addr, &mut child).await {
        load_until_gone(addr, Duration::from_secs(60)).await
    } else {
        BTreeMap::new()
    };
    let (code, _, err) = finish(child, Duration::from_secs(30));
    // 99: the shim cut the power; otherwise the load ended first and the server was killed,
    // which leaves the same copy (the power lost now).
    assert!(code == Some(99) || code.is_none(), "exit {code:?}: {err}");
    let image = tmp.path().join("image");
    materialize(&shadow, &image);
    let what = format!("power lost at event {cut_at} (seed {seed}, no O_DIRECT: {no_direct})");
    let log = check_starts_with(&image, &acked, &what).await;
    (acked.len(), log.contains("dropped a write cut short"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_lost_at_random_points_of_a_write_load_loses_no_acknowledged_write() {
    let bin = tempfile::tempdir().unwrap();
    let Some(so) = build_shim(bin.path()) else {
        return;
    };
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut cuts = Vec::new();
    for round in 0..24u64 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        // Events: a few dozen during the start, then one or two per group commit.
        let cut_at = 1 + rng % 400;
        let no_direct = round % 4 == 3;
        let (acked, torn) = power_loss_at(&so, cut_at, round, no_direct).await;
        cuts.push((cut_at, no_direct, acked, torn));
    }
    eprintln!(
        "power losses (event, no O_DIRECT, creates acknowledged, a torn write dropped): {cuts:?}"
    );
}

/// One EIO case: `kind:n` fails; the server must stop by itself (status 1, the error said),
/// touch the failed file no more, and start again on the real files with every acknowledged
/// create. An fsync RocksDB treats as optional (its OPTIONS file: it logs the failure and goes on)
/// leaves the server serving, which is reported.
async fn eio_case(so: &Path, eio: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let shadow = tmp.path().join("shadow");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&shadow).unwrap();
    let shim = Shim {
        eio: Some(eio.to_string()),
        ..Shim::default()
    };
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut child = serve(&root, port, Some((so, &shadow, &shim)));
    let acked = if ready(addr, &mut child).await {
        load_until_gone(addr, Duration::from_secs(8)).await
    } else {
        BTreeMap::new()
    };
    // A member stops within its stop bound (10 s) once it failed.
    let deadline = Instant::now() + Duration::from_secs(15);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let running = child.try_wait().unwrap().is_none();
    let (code, signal, err) = finish(child, Duration::from_secs(1));
    let failed = std::fs::read_to_string(shadow.join("eio")).unwrap_or_default();
    let failed = failed.trim().to_string();
    assert!(!failed.is_empty(), "{eio}: never reached");
    if running && failed.contains("/OPTIONS-") {
        let _ = check_starts_with(&root, &acked, eio).await;
        return format!("{eio}: {failed}: RocksDB logs it and goes on; the server served on");
    }
    assert!(!running, "{eio} ({failed}): the server did not stop");
    assert_eq!(signal, None, "{eio}: killed by a signal (an abort?): {err}");
    assert_eq!(
        code,
        Some(1),
        "{eio} ({failed}): not stopped with status 1: {err}"
    );
    assert!(
        err.contains("Input/output error"),
        "{eio} ({failed}): the error is not said: {err}"
    );
    let after = std::fs::read_to_string(shadow.join("after-eio")).unwrap_or_default();
    assert!(
        after.is_empty(),
        "{eio} ({failed}): the failed file was written or synced again: {after}"
    );
    let _ = check_starts_with(&root, &acked, eio).await;
    let root_s = root.display().to_string();
    format!(
        "{eio}: {} stopped it ({} creates acknowledged, all there after a restart)",
        failed.replace(&root_s, ""),
        acked.len()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_io_error_from_a_write_an_fsync_or_a_directory_fsync_stops_the_server() {
    let bin = tempfile::tempdir().unwrap();
    let Some(so) = build_shim(bin.path()) else {
        return;
    };
    let mut seen = Vec::new();
    // The order of a fresh start's syncs: file fsyncs 1 the identity, 2-7 RocksDB's manifest
    // and CURRENT, 8-9 its OPTIONS, 10-11 the first segment, 12 RocksDB's WAL (the
    // checkpoint), 13 the identity, then one per snapshot; directory fsyncs 1-5 the data
    // directories, 6-11 RocksDB's, 12 the log's, then the snapshots'.
    for eio in [
        "segwrite:1",
        "segwrite:30",
        "fsync:1",
        "fsync:5",
        "fsync:8",
        "fsync:10",
        "fsync:12",
        "fsync:14",
        "dirsync:1",
        "dirsync:6",
        "dirsync:12",
        "dirsync:17",
    ] {
        seen.push(eio_case(&so, eio).await);
    }
    eprintln!("{seen:#?}");
}

/// The package directory of the `cargo test` run, read at run time: a test binary that cargo reuses
/// from a build in another checkout (same target dir, same sources) still reads this checkout's files.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}
