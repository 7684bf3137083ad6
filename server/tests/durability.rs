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

/// Snapshots are encoded one at a time (`core/apply.rs`, `maybe_snapshot`): with a tree of 100 MB
/// and snapCount 100, writes reach the next snapCount long before an encoding ends, and a new
/// encoder thread used to start at each one (at 1M znodes six encoded snapshots were in memory
/// at once at the end of a fill). (Counting the encoder threads instead proved flaky: a finished
/// encoder, at background priority, can take a while to exit on a busy machine.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_waits_for_the_one_still_being_encoded() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::test_config(dir.path());
    cfg.snapshot_every_entries = 100;
    let server = common::start_with(cfg).await;
    let addr = server.local_addr();
    let zk = common::client(addr).await;
    let opts = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let big = vec![7u8; 50 << 10];
    for chunk in 0..20 {
        // Sent at once, answered in order: the client's futures own their requests.
        let paths: Vec<String> = (0..100).map(|i| format!("/big-{chunk}-{i}")).collect();
        let creates: Vec<_> = paths.iter().map(|p| zk.create(p, &big, &opts)).collect();
        for created in creates {
            created.await.unwrap();
        }
    }
    zk.create("/counter", b"", &opts).await.unwrap();

    // Writes go on for 3 s while mntr counts the snapshots being encoded.
    let writer = zk.clone();
    let writes = tokio::spawn(async move {
        let mut version = 0;
        let until = tokio::time::Instant::now() + Duration::from_secs(3);
        while tokio::time::Instant::now() < until {
            let sets: Vec<_> = (0..20)
                .map(|_| writer.set_data("/counter", b"x", None))
                .collect();
            for set in sets {
                version = version.max(set.await.unwrap().version);
            }
        }
        version
    });
    let (mut most, mut seen) = (0, 0);
    while !writes.is_finished() {
        let n = common::mntr_value(addr, "zk_paddock_snapshots_encoding").await;
        most = most.max(n);
        seen += i64::from(n > 0);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let version = writes.await.unwrap();
    assert!(
        version > 300,
        "enough writes for several snapCounts: {version}"
    );
    assert!(seen > 0, "an encoding was under way at some point");
    assert_eq!(most, 1, "at most one snapshot is encoded at a time");
    server.shutdown().await;
}

/// A bit flipped inside a znode's data in the newest snapshot still decodes as a tree, and the
/// restore does not compute the tree format's own checksum (`Restore::of_checked_bytes`): only
/// the file's checksum, checked when consensus picks the snapshot, can catch it. The start must
/// then fall back to the previous snapshot and the log, and serve every znode as written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_newest_snapshot_falls_back_and_serves_what_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let value = |i: usize| format!("value-{i:04}").into_bytes();
    let mut cfg = common::test_config(dir.path());
    cfg.snapshot_every_entries = 40;
    let server = common::start_with(cfg.clone()).await;
    let snapshots = server.consensus().snapshot_dir().to_path_buf();
    // The complete snapshot files, oldest first.
    let snap_files = || consensus::snapshot_file::list(&snapshots).unwrap();
    let zk = common::client(server.local_addr()).await;
    let opts = CreateMode::Persistent.with_acls(Acls::anyone_all());
    for i in 0..200 {
        zk.create(&format!("/n{i}"), &value(i), &opts)
            .await
            .unwrap();
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while snap_files().len() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "{:?}", snap_files());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(zk);
    server.shutdown().await;

    // Flip one letter of the last value the newest snapshot holds.
    let newest = consensus::snapshot_file::path_for(&snapshots, snap_files().pop().unwrap());
    let mut bytes = std::fs::read(&newest).unwrap();
    let at = bytes
        .windows(6)
        .rposition(|w| w == b"value-")
        .expect("the snapshot holds znode data");
    assert_eq!(bytes[at], b'v');
    bytes[at] = b'V';
    std::fs::write(&newest, bytes).unwrap();

    let server = common::start_with(cfg).await;
    let zk = common::client(server.local_addr()).await;
    for i in 0..200 {
        let (data, stat) = zk.get_data(&format!("/n{i}")).await.unwrap();
        assert_eq!(data, value(i), "/n{i}");
        assert_eq!(stat.version, 0, "/n{i}");
    }
    let children = zk.list_children("/").await.unwrap();
    assert_eq!(children.len(), 201, "/n0../n199 and /zookeeper");
    server.shutdown().await;
}

/// The process umask, from `/proc/self/status` (Linux 4.7 and later).
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(line["Umask:".len()..].trim(), 8).unwrap()
}

/// Every directory and file under `root` with its permission bits, by path relative to `root`.
fn modes(root: &std::path::Path) -> BTreeMap<String, (bool, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            out.insert(rel, (meta.is_dir(), meta.permissions().mode() & 0o7777));
            if meta.is_dir() {
                stack.push(path);
            }
        }
    }
    out
}

/// Session passwords (in the log and in snapshots) and digest hashes are at rest in the data
/// directory: paddock creates it, and everything in it, for its owner only, whatever the umask.
/// RocksDB's files are RocksDB's (0644 less the umask); the 0700 directories above keep them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_data_dir_holds_only_owner_only_dirs_and_files() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let mut cfg = common::test_config(&data);
    cfg.snapshot_every_entries = 20;
    let server = common::start_with(cfg).await;
    let snapshots = server.consensus().snapshot_dir().to_path_buf();
    let zk = common::client(server.local_addr()).await;
    let opts = CreateMode::Persistent.with_acls(Acls::anyone_all());
    for i in 0..50 {
        zk.create(&format!("/n{i}"), b"x", &opts).await.unwrap();
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while consensus::snapshot_file::list(&snapshots)
        .unwrap()
        .is_empty()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no snapshot written"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(zk);
    // Shut-down writes the session checkpoint.
    server.shutdown().await;

    use std::os::unix::fs::PermissionsExt;
    let top = std::fs::metadata(&data).unwrap().permissions().mode() & 0o7777;
    assert_eq!(top, 0o700, "dataDir, created by paddock");
    let all = modes(&data);
    let dirs: Vec<(&str, u32)> = all
        .iter()
        .filter(|(_, (is_dir, _))| *is_dir)
        .map(|(p, (_, m))| (p.as_str(), *m))
        .collect();
    assert_eq!(
        dirs,
        [
            ("paddock", 0o700),
            ("paddock/raftdb", 0o700),
            ("paddock/raftdb/log", 0o700),
            ("paddock/snapshots", 0o700),
        ]
    );
    let rocksdb_mode = 0o644 & !umask();
    let mut paddock_files = Vec::new();
    for (path, (is_dir, mode)) in &all {
        if *is_dir {
            continue;
        }
        let rocksdb =
            path.starts_with("paddock/raftdb/") && !path.starts_with("paddock/raftdb/log/");
        if rocksdb {
            assert_eq!(*mode, rocksdb_mode, "{path}: RocksDB's own file");
        } else {
            assert_eq!(*mode, 0o600, "{path}");
            paddock_files.push(path.as_str());
        }
    }
    // Each kind of file paddock writes is there and was checked above.
    let kinds = [
        |p: &str| p == "paddock/cluster",
        |p: &str| p == "paddock/sessions.remaining",
        |p: &str| p.starts_with("paddock/snapshots/snap-") && p.ends_with(".snap"),
        |p: &str| p.starts_with("paddock/raftdb/log/"),
    ];
    for (i, kind) in kinds.iter().enumerate() {
        assert!(
            paddock_files.iter().any(|p| kind(p)),
            "kind {i} missing from {paddock_files:?}"
        );
    }
    assert!(
        all.keys().any(|p| p == "paddock/raftdb/CURRENT"),
        "RocksDB's files were checked too: {all:?}"
    );
}

/// The newest log segment under `data`, and where its last record starts (a file offset).
fn newest_segment_and_last_record(data: &std::path::Path) -> (std::path::PathBuf, u64) {
    use consensus::segments;
    let log = data.join("paddock/raftdb/log");
    let (number, path) = segments::list(&log).unwrap().pop().unwrap();
    let mut last = None;
    let expect = segments::Expect {
        prev: None,
        covered: u64::MAX - 1,
    };
    segments::read_segment(&path, number, expect, &mut |at, _| {
        last = Some(at.offset - 20);
        Ok(())
    })
    .unwrap();
    (
        path,
        segments::phys(last.expect("the segment holds records")),
    )
}

/// A log cut short, as it was found: 300 acknowledged creates, `kill -9`, the
/// newest segment cut 8 bytes into its last record. The start used to serve with one create
/// gone and say nothing; now it refuses, naming the file, the offset and the command to run,
/// and `paddock repair` says what is damaged and, told to, cuts the log there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_cut_short_refuses_the_start_and_repair_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let child = spawn(dir.path(), port);
    wait_ready(addr).await;
    let zk = common::client(addr).await;
    let opts = CreateMode::Persistent.with_acls(Acls::anyone_all());
    for i in 0..300 {
        zk.create(&format!("/n{i}"), b"x", &opts).await.unwrap();
    }
    drop(zk);
    child.kill_9();

    let (segment, last) = newest_segment_and_last_record(dir.path());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .unwrap()
        .set_len(last + 8)
        .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_paddock"))
        .args(["serve", "--port", &port.to_string(), "--data-dir"])
        .arg(dir.path())
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    assert!(!out.status.success(), "the start is refused");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&segment.display().to_string()), "{err}");
    assert!(err.contains(&format!("at byte {}", last + 8)), "{err}");
    let repair = format!("paddock repair --data-dir {}", dir.path().display());
    assert!(err.contains(&repair), "{err}");

    let run = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_paddock"))
            .args(["repair", "--data-dir"])
            .arg(dir.path())
            .args(extra)
            .output()
            .unwrap()
    };
    let dry = run(&[]);
    let report = String::from_utf8_lossy(&dry.stdout);
    assert_eq!(dry.status.code(), Some(1), "{report}");
    assert!(report.contains("DAMAGED"), "{report}");
    assert!(report.contains("cut short"), "{report}");
    assert!(report.contains("--truncate"), "{report}");
    let cut = run(&["--truncate"]);
    assert_eq!(
        cut.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&cut.stderr)
    );
    assert_eq!(run(&[]).status.code(), Some(0));

    // It starts, with the creates before the cut (all but the last, whose record was cut).
    let child = spawn(dir.path(), port);
    wait_ready(addr).await;
    let zk = common::client(addr).await;
    let children = zk.list_children("/").await.unwrap();
    let created = children.iter().filter(|c| c.starts_with('n')).count();
    assert!((1..300).contains(&created), "{created} of 300 creates");
    child.kill_9();
}

/// Every znode under `path` whose name starts with `n` (the bench's creates), counted.
async fn count_creates(zk: &zookeeper_client::Client, path: &str) -> usize {
    let mut n = 0;
    let mut stack = vec![path.to_string()];
    while let Some(p) = stack.pop() {
        for child in zk.list_children(&p).await.unwrap() {
            if child.starts_with('n') {
                n += 1;
            } else {
                stack.push(format!("{p}/{child}"));
            }
        }
    }
    n
}

/// A data directory written before the log's sector stamps (format 1; tests/fixtures/README.md)
/// opens: every acknowledged create is there, new writes go to a format-2 segment after the old
/// ones, and the mixed log opens again after a `kill -9`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_dir_written_by_the_previous_log_format_opens_and_keeps_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = manifest_dir().join("tests/fixtures/format1-data.tar.gz");
    let untar = std::process::Command::new("tar")
        .arg("-xzf")
        .arg(&fixture)
        .arg("-C")
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(untar.success());
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let child = spawn(dir.path(), port);
    wait_ready(addr).await;
    let zk = common::client(addr).await;
    assert_eq!(count_creates(&zk, "/a").await, 150);
    assert_eq!(count_creates(&zk, "/b").await, 70);
    let opts = CreateMode::Persistent.with_acls(Acls::anyone_all());
    for i in 0..50 {
        zk.create(&format!("/c{i}"), b"new", &opts).await.unwrap();
    }
    drop(zk);
    child.kill_9();
    let log = dir.path().join("paddock/raftdb/log");
    let formats: Vec<_> = consensus::segments::scan(&log, 0, |_, _| Ok(()))
        .unwrap()
        .found
        .iter()
        .map(|f| f.format)
        .collect();
    use consensus::segments::Format;
    assert_eq!(formats[..2], [Format::V1, Format::V1]);
    assert_eq!(formats.last(), Some(&Format::V2));

    let child = spawn(dir.path(), port);
    wait_ready(addr).await;
    let zk = common::client(addr).await;
    assert_eq!(count_creates(&zk, "/a").await, 150);
    assert_eq!(count_creates(&zk, "/b").await, 70);
    let children = zk.list_children("/").await.unwrap();
    assert_eq!(children.iter().filter(|c| c.starts_with('c')).count(), 50);
    child.kill_9();
}

/// The identity file was written after the log's first record, so a
/// crash in between left a log without one (refused, for an ensemble member, as a standalone
/// server's). Now `cluster.creating` is written first and renamed once the log is written: a
/// start that finds it beside a log resumes that log with it, and one that finds it alone starts
/// afresh.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_between_the_identity_and_the_first_record_leaves_a_data_dir_that_starts() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::test_config(dir.path());
    let raft = cfg.raft_dir();
    // First start: both files appear in turn; a clean stop leaves the final one only.
    let server = common::start_with(cfg.clone()).await;
    let first = paddock::identity::Identity::read(&raft).unwrap().unwrap();
    assert!(!raft.join(paddock::identity::CREATING_FILE_NAME).exists());
    let zk = common::client(server.local_addr()).await;
    let opts = CreateMode::Persistent.with_acls(Acls::anyone_all());
    zk.create("/kept", b"x", &opts).await.unwrap();
    drop(zk);
    server.shutdown().await;
    // As a crash after the log's first record and before the rename would leave it.
    std::fs::rename(
        raft.join(paddock::identity::FILE_NAME),
        raft.join(paddock::identity::CREATING_FILE_NAME),
    )
    .unwrap();
    let server = common::start_with(cfg.clone()).await;
    let zk = common::client(server.local_addr()).await;
    assert!(zk.check_stat("/kept").await.unwrap().is_some());
    drop(zk);
    server.shutdown().await;
    assert_eq!(
        paddock::identity::Identity::read(&raft).unwrap(),
        Some(first),
        "the same identity, finished"
    );
    assert!(!raft.join(paddock::identity::CREATING_FILE_NAME).exists());
    // As a crash before the log's first record: the identity alone, no log.
    let fresh = tempfile::tempdir().unwrap();
    let cfg = common::test_config(fresh.path());
    let raft = cfg.raft_dir();
    std::fs::create_dir_all(&raft).unwrap();
    paddock::identity::Identity::new_for(&cfg)
        .write_creating(&raft)
        .unwrap();
    let server = common::start_with(cfg).await;
    assert!(paddock::identity::Identity::read(&raft).unwrap().is_some());
    server.shutdown().await;
}

/// The package directory of the `cargo test` run, read at run time: a test binary that cargo reuses
/// from a build in another checkout (same target dir, same sources) still reads this checkout's files.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}
