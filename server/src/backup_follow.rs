//! `paddock backup --follow DIR`: keeps DIR a ZooKeeper data directory of the ensemble, from a
//! member's AdminServer `follow` stream (`http/admin_follow.rs`), until it is stopped.
//!
//! ```text
//! DIR/version-2/snapshot.<zxid>   each snapshot the stream sent (written whole: .tmp, synced,
//!                                 renamed)
//! DIR/version-2/log.<zxid>        the transactions after it, in ZooKeeper's log format, a new
//!                                 file after each snapshot, each reconnection and every 64 MiB
//! ```
//!
//! Each record is checked to follow the last one (the next zxid, or the first of a later
//! epoch); one that does not ends the stream and the next one starts with a snapshot. Records
//! are synced every 200 ms and at each heartbeat; started again (or after a lost connection,
//! against the next member) it drops a torn last record, then asks for the records after the
//! last one it holds: the member sends them if its follow log still has them, else a snapshot.
//! Members are tried followers first, so the leader does not do the encoding.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use zk_format::files::{self, FileKind};
use zk_format::txnlog;

use crate::backup_cmd::{auth_header, BackupArgs};

/// A log file is closed and the next one started past this size.
const LOG_ROLL: u64 = 64 << 20;
/// The largest frame taken (a snapshot; ZooKeeper's own limit on a record is far below).
const MAX_FRAME: u64 = 64 << 30;
/// How long the stream may stay silent (the member sends a heartbeat every 2 s).
const SILENCE: Duration = Duration::from_secs(15);
/// How often written records are synced.
const SYNC_EVERY: Duration = Duration::from_millis(200);

/// `paddock backup --follow DIR`; runs until killed, or exits 1 on a refusal no member would
/// change (authentication, permission, a DIR it cannot write).
pub fn run(args: &BackupArgs, dir: &Path) -> i32 {
    match follow(args, dir) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("paddock backup --follow: {e}");
            1
        }
    }
}

/// What DIR holds: the zxid of the last transaction (or snapshot) it ends at.
fn scan(v2: &Path) -> Result<Option<i64>, String> {
    std::fs::create_dir_all(v2).map_err(|e| format!("creating {}: {e}", v2.display()))?;
    let mut snaps = Vec::new();
    let mut logs = Vec::new();
    for e in std::fs::read_dir(v2).map_err(|e| format!("reading {}: {e}", v2.display()))? {
        let e = e.map_err(|e| format!("reading {}: {e}", v2.display()))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".tmp") {
            let _ = std::fs::remove_file(e.path());
            continue;
        }
        match files::parse_name(&name) {
            Some((FileKind::Snapshot, z)) => snaps.push(z),
            Some((FileKind::Log, z)) => logs.push((z, name)),
            None => {}
        }
    }
    let Some(&snap) = snaps.iter().max() else {
        return Ok(None);
    };
    logs.sort();
    // The newest log that starts after the newest snapshot holds the last transaction.
    while let Some((start, name)) = logs.pop() {
        if start <= snap {
            break;
        }
        let path = v2.join(&name);
        let bytes = std::fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        let file = txnlog::decode(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let good = match file.end {
            txnlog::LogEnd::Eof => bytes.len() as u64,
            txnlog::LogEnd::Padding { offset }
            | txnlog::LogEnd::Torn { offset }
            | txnlog::LogEnd::TornChecksum { offset } => offset,
        };
        if good < bytes.len() as u64 {
            println!(
                "follow: {} ends in a torn record at offset {good}: dropped",
                path.display()
            );
            let f = OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|e| format!("opening {}: {e}", path.display()))?;
            f.set_len(good)
                .and_then(|()| f.sync_all())
                .map_err(|e| format!("truncating {}: {e}", path.display()))?;
        }
        match file.records.last() {
            Some(r) => return Ok(Some(r.header.zxid)),
            None => {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    Ok(Some(snap))
}

/// The log being written.
struct Log {
    file: File,
    path: PathBuf,
    len: u64,
    dirty: bool,
    synced: Instant,
}

impl Log {
    fn sync(&mut self) -> Result<(), String> {
        if self.dirty {
            self.file
                .sync_data()
                .map_err(|e| format!("syncing {}: {e}", self.path.display()))?;
            self.dirty = false;
        }
        self.synced = Instant::now();
        Ok(())
    }
}

/// Why a stream ended.
enum End {
    /// Try again (another member, or the same later).
    Retry(String),
    /// Try again from a snapshot: the records did not follow.
    Resnapshot(String),
    /// Stop: no member would answer otherwise.
    Fatal(String),
}

fn follow(args: &BackupArgs, dir: &Path) -> Result<(), String> {
    let v2 = dir.join("version-2");
    let auth = auth_header(&args.auth);
    let mut fresh = false;
    let mut turn = 0usize;
    loop {
        let held = if fresh { None } else { scan(&v2)? };
        // Followers first: the leader's work is the ensemble's.
        let mut order = crate::backup_cmd::leader_first(&args.servers, &args.command_url);
        if order.len() > 1 {
            let leader = order.remove(0);
            order.push(leader);
        }
        let server = order[turn % order.len()].clone();
        match stream(&server, &args.command_url, auth.as_deref(), &v2, held) {
            End::Fatal(e) => return Err(e),
            End::Retry(e) => {
                eprintln!("follow: {server}: {e}; trying again");
                fresh = false;
                turn += 1;
                std::thread::sleep(Duration::from_secs(1));
            }
            End::Resnapshot(e) => {
                eprintln!("follow: {server}: {e}; starting again from a snapshot");
                fresh = true;
            }
        }
    }
}

fn stream(server: &str, url: &str, auth: Option<&str>, v2: &Path, held: Option<i64>) -> End {
    let retry = |e: String| End::Retry(e);
    let addr = match server.to_socket_addrs().map(|mut a| a.next()) {
        Ok(Some(a)) => a,
        Ok(None) => return retry("no address".into()),
        Err(e) => return retry(e.to_string()),
    };
    let mut s = match TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
        Ok(s) => s,
        Err(e) => return retry(e.to_string()),
    };
    let _ = s.set_read_timeout(Some(SILENCE));
    let query = held.map_or(String::new(), |z| format!("?after=0x{z:x}"));
    let mut head =
        format!("GET {url}/follow{query} HTTP/1.1\r\nHost: {server}\r\nConnection: close\r\n");
    if let Some(a) = auth {
        head.push_str(&format!("Authorization: {a}\r\n"));
    }
    head.push_str("\r\n");
    if let Err(e) = s.write_all(head.as_bytes()) {
        return retry(e.to_string());
    }
    let mut r = BufReader::with_capacity(1 << 20, s);
    // The response head, byte by byte up to the blank line (it is short).
    let mut resp = Vec::new();
    let mut b = [0u8; 1];
    while !resp.ends_with(b"\r\n\r\n") {
        match r.read(&mut b) {
            Ok(1) => resp.push(b[0]),
            Ok(_) => return retry("closed before answering".into()),
            Err(e) => return retry(e.to_string()),
        }
        if resp.len() > 16 << 10 {
            return retry("not an HTTP answer".into());
        }
    }
    let text = String::from_utf8_lossy(&resp).into_owned();
    let status: u16 = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    if status != 200
        || !text
            .to_ascii_lowercase()
            .contains("application/octet-stream")
    {
        let mut body = String::new();
        let _ = r.read_to_string(&mut body);
        let why = format!(
            "HTTP {status} {}",
            body.split_whitespace().collect::<Vec<_>>().join(" ")
        );
        return match status {
            401 | 403 => End::Fatal(format!("{server}: {why}")),
            _ => retry(why),
        };
    }
    println!(
        "follow: streaming from {server}{}",
        held.map_or(" (from a snapshot)".into(), |z| format!(
            " after {}",
            files::zxid_hex(z)
        ))
    );
    let mut last = held;
    let mut log: Option<Log> = None;
    let end = frames(&mut r, v2, &mut last, &mut log);
    if let Some(mut l) = log {
        if let Err(e) = l.sync() {
            return End::Fatal(e);
        }
    }
    end
}

fn frames(r: &mut impl Read, v2: &Path, last: &mut Option<i64>, log: &mut Option<Log>) -> End {
    loop {
        let mut head = [0u8; 17];
        if let Err(e) = r.read_exact(&mut head) {
            return End::Retry(format!("the stream ended: {e}"));
        }
        let kind = head[0];
        let zxid = i64::from_be_bytes(head[1..9].try_into().unwrap_or_default());
        let len = u64::from_be_bytes(head[9..17].try_into().unwrap_or_default());
        if len > MAX_FRAME {
            return End::Retry(format!("a frame of {len} bytes: not a follow stream"));
        }
        let mut body = vec![0u8; len as usize];
        if let Err(e) = r.read_exact(&mut body) {
            return End::Retry(format!("the stream ended inside a frame: {e}"));
        }
        let step = match kind {
            b'S' => snapshot(v2, zxid, &body, log),
            b'T' => record(v2, zxid, &body, last, log),
            b'H' => match log.as_mut() {
                Some(l) => l.sync().map_err(End::Fatal),
                None => Ok(()),
            },
            other => Err(End::Retry(format!(
                "a frame of kind {other}: not a follow stream"
            ))),
        };
        if let Err(end) = step {
            return end;
        }
        if kind == b'S' {
            *last = Some(zxid);
        }
        if let Some(l) = log.as_mut() {
            if l.dirty && l.synced.elapsed() >= SYNC_EVERY {
                if let Err(e) = l.sync() {
                    return End::Fatal(e);
                }
            }
        }
    }
}

fn snapshot(v2: &Path, zxid: i64, body: &[u8], log: &mut Option<Log>) -> Result<(), End> {
    let snap = zk_format::snapshot::decode(body).map_err(|e| {
        End::Retry(format!(
            "the snapshot at {} does not decode: {e}",
            files::zxid_hex(zxid)
        ))
    })?;
    if snap.last_processed_zxid.is_some_and(|l| l != zxid) {
        return Err(End::Retry("the snapshot's zxid is not its frame's".into()));
    }
    if let Some(mut l) = log.take() {
        l.sync().map_err(End::Fatal)?;
    }
    let path = v2.join(crate::zk_export::zk_name(zxid));
    crate::backup_cmd::write_whole(&path, body).map_err(End::Fatal)?;
    sync_dir(v2).map_err(End::Fatal)?;
    println!(
        "follow: {} ({} bytes, {} nodes)",
        path.display(),
        body.len(),
        snap.nodes.len()
    );
    Ok(())
}

fn record(
    v2: &Path,
    zxid: i64,
    body: &[u8],
    last: &mut Option<i64>,
    log: &mut Option<Log>,
) -> Result<(), End> {
    let Some(prev) = *last else {
        return Err(End::Resnapshot("a transaction before any snapshot".into()));
    };
    if zxid <= prev {
        return Ok(()); // already held (a member behind the one followed before)
    }
    if !crate::zk_import::follows(prev, zxid) {
        return Err(End::Resnapshot(format!(
            "transaction {} does not follow {}",
            files::zxid_hex(zxid),
            files::zxid_hex(prev)
        )));
    }
    let (h, _, _) = txnlog::decode_txn(body, 0).map_err(|e| {
        End::Resnapshot(format!(
            "transaction {} does not decode: {e}",
            files::zxid_hex(zxid)
        ))
    })?;
    if h.zxid != zxid {
        return Err(End::Resnapshot(
            "a transaction's zxid is not its frame's".into(),
        ));
    }
    if log.as_ref().is_some_and(|l| l.len >= LOG_ROLL) {
        if let Some(mut l) = log.take() {
            l.sync().map_err(End::Fatal)?;
        }
    }
    if log.is_none() {
        let path = v2.join(format!("log.{zxid:x}"));
        let mut file = File::create(&path)
            .map_err(|e| End::Fatal(format!("creating {}: {e}", path.display())))?;
        let header = txnlog::log_header();
        file.write_all(&header)
            .map_err(|e| End::Fatal(format!("writing {}: {e}", path.display())))?;
        sync_dir(v2).map_err(End::Fatal)?;
        *log = Some(Log {
            file,
            path,
            len: header.len() as u64,
            dirty: true,
            synced: Instant::now(),
        });
    }
    let Some(l) = log.as_mut() else {
        return Err(End::Fatal("no log open".into()));
    };
    let framed = txnlog::frame_record(body);
    l.file
        .write_all(&framed)
        .map_err(|e| End::Fatal(format!("writing {}: {e}", l.path.display())))?;
    l.len += framed.len() as u64;
    l.dirty = true;
    *last = Some(zxid);
    Ok(())
}

fn sync_dir(dir: &Path) -> Result<(), String> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| format!("syncing {}: {e}", dir.display()))
}
