//! A full disk, for real: the data directory on a small ext4 file system on a loop device, filled
//! by a file of zeros at a chosen point of a write load (ARCHITECTURE.md, "Every failed write
//! stops the member"). Each case expects the server to stop by itself with exit status 1 and a
//! message saying the disk is full (not an abort inside a C library), no acknowledged write lost
//! once space is freed, and a start on a full file system refused with what it needs.
//!
//! Needs root (mount, losetup); without it each test says so and passes. Every mount and loop
//! device made here is removed when the test ends, failing or not (`LoopMount`'s drop).

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zookeeper_client::{Acls, CreateMode};

use common::process::{free_port, wait_ready};

/// True when this process runs as root; otherwise says why the test does nothing.
fn root_or_skip(test: &str) -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1).map(str::to_string));
    if euid.as_deref() == Some("0") {
        return true;
    }
    eprintln!("{test}: skipped: it mounts a loop device, which needs root");
    false
}

fn sh(cmd: &str, args: &[&str]) -> std::process::Output {
    Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"))
}

/// An ext4 file system of `mb` MB in a file, mounted on a loop device under a temporary
/// directory; unmounted and its loop device detached when dropped.
struct LoopMount {
    _tmp: tempfile::TempDir,
    img: PathBuf,
    mnt: PathBuf,
}

impl LoopMount {
    fn new(mb: u64) -> LoopMount {
        let tmp = tempfile::tempdir().unwrap();
        let img = tmp.path().join("fs.img");
        let mnt = tmp.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        std::fs::File::create(&img)
            .unwrap()
            .set_len(mb << 20)
            .unwrap();
        let mkfs = sh("mkfs.ext4", &["-q", "-F", img.to_str().unwrap()]);
        assert!(mkfs.status.success(), "{mkfs:?}");
        let mount = sh(
            "mount",
            &["-o", "loop", img.to_str().unwrap(), mnt.to_str().unwrap()],
        );
        assert!(mount.status.success(), "{mount:?}");
        LoopMount {
            _tmp: tmp,
            img,
            mnt,
        }
    }

    fn free(&self) -> u64 {
        let out = sh("df", &["--output=avail", "-B1", self.mnt.to_str().unwrap()]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .nth(1)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// Fills the file system so that `left` bytes stay free (a file of allocated blocks).
    fn fill_leaving(&self, left: u64) {
        let free = self.free();
        if free > left {
            let filler = self.mnt.join(format!("filler-{}", free));
            let f = sh(
                "fallocate",
                &["-l", &(free - left).to_string(), filler.to_str().unwrap()],
            );
            assert!(f.status.success(), "{f:?}");
        }
    }

    /// Removes every filler.
    fn unfill(&self) {
        for e in std::fs::read_dir(&self.mnt).unwrap() {
            let p = e.unwrap().path();
            if p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("filler-")
            {
                std::fs::remove_file(p).unwrap();
            }
        }
    }
}

impl Drop for LoopMount {
    fn drop(&mut self) {
        let dev =
            String::from_utf8_lossy(&sh("losetup", &["-j", self.img.to_str().unwrap()]).stdout)
                .split(':')
                .next()
                .unwrap_or("")
                .to_string();
        for _ in 0..50 {
            if sh("umount", &[self.mnt.to_str().unwrap()]).status.success() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // `mount -o loop` detaches the device at the unmount; make sure.
        if dev.starts_with("/dev/loop") {
            for _ in 0..50 {
                let still = sh("losetup", &["-j", self.img.to_str().unwrap()]);
                if String::from_utf8_lossy(&still.stdout).trim().is_empty() {
                    break;
                }
                let _ = sh("losetup", &["-d", &dev]);
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// `paddock serve` on `data` at `port`, with its stderr kept for the test to read.
fn serve(data: &Path, port: u16, props: &[&str]) -> std::process::Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_paddock"));
    cmd.args(["serve", "--port", &port.to_string(), "--data-dir"])
        .arg(data)
        .args(["-D", "admin.enableServer=false"]);
    for p in props {
        cmd.args(["-D", p]);
    }
    cmd.env("RUST_LOG", "warn")
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits up to `limit` for the child to exit: its status and stderr.
fn wait_exit(
    mut child: std::process::Child,
    limit: Duration,
) -> (Option<i32>, Option<i32>, String) {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (
        status.and_then(|s| s.code()),
        status.and_then(|s| s.signal()),
        err,
    )
}

/// Writers creating nodes of `size` bytes until the server stops answering; every acknowledged
/// path with its data.
fn load(
    addr: SocketAddr,
    size: usize,
    acked: Arc<Mutex<BTreeMap<String, Vec<u8>>>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..4u8)
        .map(|w| {
            let acked = acked.clone();
            tokio::spawn(async move {
                let Ok(zk) = zookeeper_client::Client::connector()
                    .with_session_timeout(Duration::from_secs(10))
                    .connect(&addr.to_string())
                    .await
                else {
                    return;
                };
                let opts = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
                let prefix = format!("/load/w{w}-");
                for i in 0u32.. {
                    let mut data = format!("w{w}-{i}-").into_bytes();
                    data.resize(size, b'x');
                    let create = zk.create(&prefix, &data, &opts);
                    match tokio::time::timeout(Duration::from_secs(10), create).await {
                        Ok(Ok((_, seq))) => {
                            acked
                                .lock()
                                .unwrap()
                                .insert(format!("/load/w{w}-{seq:010}"), data);
                        }
                        _ => return,
                    }
                }
            })
        })
        .collect()
}

/// One full-disk case: a server under a write load of `size`-byte creates on a fresh 160 MB file
/// system; once `before` bytes were acknowledged the file system is filled, `left` bytes left
/// free. The server must stop by itself (exit 1, the disk named as full) within a minute, and
/// once the filler is gone, start again with every acknowledged create.
async fn full_disk_case(
    name: &str,
    size: usize,
    before: usize,
    left: u64,
    props: &[&str],
    site: Option<&[&str]>,
) {
    let fs = LoopMount::new(160);
    let data = fs.mnt.join("data");
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let child = serve(&data, port, props);
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
    let acked: Arc<Mutex<BTreeMap<String, Vec<u8>>>> = Arc::default();
    let writers = load(addr, size, acked.clone());
    let deadline = Instant::now() + Duration::from_secs(60);
    while acked.lock().unwrap().len() * size < before {
        assert!(Instant::now() < deadline, "{name}: the load did not run");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    fs.fill_leaving(left);
    let (code, signal, err) =
        tokio::task::spawn_blocking(move || wait_exit(child, Duration::from_secs(90)))
            .await
            .unwrap();
    for w in writers {
        let _ = tokio::time::timeout(Duration::from_secs(30), w).await;
    }
    assert_eq!(
        signal, None,
        "{name}: killed by a signal (an abort?): {err}"
    );
    assert_eq!(
        code,
        Some(1),
        "{name}: did not stop by itself with status 1: {err}"
    );
    assert!(
        err.contains("No space left") || err.contains("file system is full"),
        "{name}: the message does not say the disk is full: {err}"
    );
    // The same data, on a file system with room again.
    fs.unfill();
    let acked = acked.lock().unwrap().clone();
    assert!(!acked.is_empty(), "{name}: nothing acknowledged");
    let child = serve(&data, port, props);
    wait_ready(addr).await;
    let zk = common::client(addr).await;
    for (path, want) in &acked {
        let (got, _) = zk
            .get_data(path)
            .await
            .unwrap_or_else(|e| panic!("{name}: acknowledged {path} lost: {e}"));
        assert_eq!(&got, want, "{name}: {path}");
    }
    drop(zk);
    let _ = wait_exit_killed(child);
    let why = err
        .lines()
        .find(|l| l.contains("No space left"))
        .unwrap_or_default();
    eprintln!(
        "{name}: stopped with the disk full, {} acknowledged creates all there after a restart \
         ({})",
        acked.len(),
        why.trim()
    );
    if let Some(sites) = site {
        assert!(
            sites.iter().any(|s| why.contains(s)),
            "{name}: expected the failure in one of {sites:?}: {err}"
        );
    }
}

fn wait_exit_killed(mut child: std::process::Child) -> std::io::Result<()> {
    child.kill()?;
    child.wait().map(drop)
}

/// Appends: the log's next segment cannot be allocated (16 MB), at several amounts left free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_during_appends_stops_the_server_and_loses_no_acknowledged_write() {
    if !root_or_skip("full disk during appends") {
        return;
    }
    for (i, left) in [0u64, 3 << 20, 11 << 20].into_iter().enumerate() {
        full_disk_case(
            &format!("appends, {left} bytes left"),
            4000,
            (i + 1) << 20,
            left,
            &[],
            // The append itself, or the next segment's allocation when the append filled one.
            Some(&["writing log segment", ".seg: No space left"]),
        )
        .await;
    }
}

/// Snapshots: with a snapshot every 50 entries of 20 KB nodes, one of them is written when the
/// file system has less room than it needs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_during_a_snapshot_stops_the_server_and_loses_no_acknowledged_write() {
    if !root_or_skip("full disk during a snapshot") {
        return;
    }
    full_disk_case(
        "snapshot",
        20_000,
        3 << 20,
        1 << 20,
        &["snapCount=50"],
        Some(&["snapshot"]),
    )
    .await;
}

/// A start on a full file system says so and how much it needs, before RocksDB or a segment
/// meets ENOSPC.
#[test]
fn a_start_on_a_full_disk_says_what_it_needs() {
    if !root_or_skip("start on a full disk") {
        return;
    }
    let fs = LoopMount::new(64);
    fs.fill_leaving(5 << 20);
    let (code, signal, err) = wait_exit(
        serve(&fs.mnt.join("data"), free_port(), &[]),
        Duration::from_secs(30),
    );
    assert_eq!(signal, None, "{err}");
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("a start needs"), "{err}");
    assert!(err.contains("KB free"), "{err}");
}
