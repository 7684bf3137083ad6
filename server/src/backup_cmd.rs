//! `paddock backup` and `paddock restore`: an operator's wrappers around the AdminServer's
//! `snapshot` and `restore` (docs/operations.md, "Backup and restore").
//!
//! ```text
//! backup  --servers H:P,.. --auth digest:USER:PW --out FILE
//!         the leader's GET /commands/snapshot (the member with every committed write), written
//!         to FILE.tmp, synced, renamed: FILE is whole or absent
//! restore --servers H:P,.. --auth digest:USER:PW FILE
//!         POST /commands/restore to the leader (any member would forward it): every member
//!         restores, in a new epoch
//! restore --servers .. [--to-zxid Z | --to-time T] DIR
//!         DIR a ZooKeeper data directory (version-2/ snapshots and logs, ZooKeeper's own or a
//!         copy): replayed up to the last transaction at or before Z (or committed at or before
//!         T), encoded as a ZooKeeper snapshot, restored; --out FILE writes that snapshot instead
//! ```
//!
//! Nothing is restored unless the input reads whole: a damaged file or directory exits 1 with
//! why before any request is sent.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use zk_format::{files, MissingAcl};

#[derive(Debug, Clone, Args)]
pub struct BackupArgs {
    /// The members' AdminServers, `host:port` (admin.serverPort), comma separated.
    #[arg(
        long,
        value_name = "HOST:PORT,...",
        value_delimiter = ',',
        required = true
    )]
    pub servers: Vec<String>,
    /// `SCHEME:CREDENTIALS` for the `Authorization` header, e.g. `digest:admin:secret`; its ids
    /// need every permission on `/`.
    #[arg(long, value_name = "SCHEME:CREDENTIALS")]
    pub auth: Option<String>,
    /// The AdminServer's admin.commandURL.
    #[arg(long, default_value = "/commands")]
    pub command_url: String,
    /// Where the snapshot goes (written whole or not at all).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "follow",
        conflicts_with = "follow"
    )]
    pub out: Option<PathBuf>,
    /// Keep DIR a ZooKeeper data directory of the ensemble, until stopped: a snapshot, then
    /// every committed transaction as it applies on a member (a follower first) in
    /// version-2/log.<zxid> files, a new snapshot after a restore. `paddock restore --to-zxid`
    /// (or `--to-time`) restores from it, and ZooKeeper loads it. Restarted, it continues
    /// from the last transaction DIR holds.
    #[arg(long, value_name = "DIR")]
    pub follow: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct RestoreArgs {
    /// A ZooKeeper snapshot (from `paddock backup`, either AdminServer's `snapshot`, or a
    /// snapshot.<zxid> file), or a ZooKeeper data directory to replay (with --to-zxid/--to-time).
    pub input: PathBuf,
    /// The members' AdminServers, `host:port`, comma separated (not needed with --out).
    #[arg(
        long,
        value_name = "HOST:PORT,...",
        value_delimiter = ',',
        required_unless_present = "out"
    )]
    pub servers: Vec<String>,
    /// `SCHEME:CREDENTIALS` for the `Authorization` header, e.g. `digest:admin:secret`.
    #[arg(long, value_name = "SCHEME:CREDENTIALS")]
    pub auth: Option<String>,
    /// The AdminServer's admin.commandURL.
    #[arg(long, default_value = "/commands")]
    pub command_url: String,
    /// Restore the state right after the last transaction at or before this zxid (hex with
    /// 0x, or decimal); INPUT must be a data directory.
    #[arg(long, value_name = "ZXID", conflicts_with = "to_time")]
    pub to_zxid: Option<String>,
    /// Restore the state right after the last transaction committed at or before this time
    /// (milliseconds since the epoch, as the transactions record it); INPUT must be a data
    /// directory.
    #[arg(long, value_name = "MILLIS")]
    pub to_time: Option<i64>,
    /// Write the snapshot that would be restored to FILE instead of restoring it.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// One HTTP/1.1 exchange: (status, headers, body).
pub(crate) fn http(
    server: &str,
    method: &str,
    path: &str,
    auth: Option<&str>,
    body: &[u8],
) -> Result<(u16, String, Vec<u8>), String> {
    let addr = server
        .to_socket_addrs()
        .map_err(|e| format!("{server}: {e}"))?
        .next()
        .ok_or_else(|| format!("{server}: no address"))?;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| format!("{server}: {e}"))?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(120)));
    let _ = s.set_write_timeout(Some(Duration::from_secs(60)));
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {server}\r\nConnection: close\r\n");
    if let Some(a) = auth {
        head.push_str(&format!("Authorization: {a}\r\n"));
    }
    if method == "POST" {
        head.push_str(&format!(
            "Content-Type: application/octet-stream\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())
        .and_then(|()| s.write_all(body))
        .map_err(|e| format!("{server}: {e}"))?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)
        .map_err(|e| format!("{server}: {e}"))?;
    let at = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("{server}: not an HTTP answer"))?;
    let head = String::from_utf8_lossy(&out[..at]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("{server}: not an HTTP answer"))?;
    Ok((status, head, out[at + 4..].to_vec()))
}

/// `digest:admin:pw` as the header's `digest admin:pw`.
pub(crate) fn auth_header(auth: &Option<String>) -> Option<String> {
    auth.as_ref().map(|a| {
        a.split_once(':')
            .map_or(a.clone(), |(s, c)| format!("{s} {c}"))
    })
}

/// The servers, the leader first (asked through each one's `leader` command), the others in
/// the order given.
pub(crate) fn leader_first(servers: &[String], url: &str) -> Vec<String> {
    let mut out: Vec<String> = servers.to_vec();
    let leader = servers.iter().position(|s| {
        http(s, "GET", &format!("{url}/leader"), None, &[])
            .ok()
            .and_then(|(_, _, b)| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|v| v["is_leader"] == serde_json::Value::Bool(true))
    });
    if let Some(i) = leader {
        let l = out.remove(i);
        out.insert(0, l);
    }
    out
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
}

/// `paddock backup`; the exit status.
pub fn run_backup(args: &BackupArgs) -> i32 {
    if let Some(dir) = &args.follow {
        return crate::backup_follow::run(args, dir);
    }
    match backup(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("paddock backup: {e}");
            1
        }
    }
}

fn backup(args: &BackupArgs) -> Result<(), String> {
    let auth = auth_header(&args.auth);
    let mut why = Vec::new();
    for server in leader_first(&args.servers, &args.command_url) {
        let path = format!("{}/snapshot?streaming=true", args.command_url);
        match http(&server, "GET", &path, auth.as_deref(), &[]) {
            Ok((200, head, body)) => {
                let size: Option<usize> =
                    header(&head, "snapshot_size").and_then(|v| v.parse().ok());
                if size != Some(body.len()) {
                    why.push(format!(
                        "{server}: the snapshot was cut ({} of {size:?} bytes)",
                        body.len()
                    ));
                    continue;
                }
                zk_format::snapshot::decode(&body)
                    .map_err(|e| format!("{server}: the snapshot does not decode: {e}"))?;
                let out = args.out.as_deref().ok_or("--out FILE is needed")?;
                write_whole(out, &body)?;
                println!(
                    "backup: {} bytes from {server} at zxid {} written to {}",
                    body.len(),
                    header(&head, "last_zxid").unwrap_or("?"),
                    out.display()
                );
                return Ok(());
            }
            Ok((status, _, body)) => why.push(format!(
                "{server}: HTTP {status} {}",
                String::from_utf8_lossy(&body)
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            )),
            Err(e) => why.push(e),
        }
    }
    Err(format!("no server gave a snapshot: {}", why.join("; ")))
}

/// Writes `bytes` to `path` through `path.tmp`, synced, then renamed.
pub(crate) fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("writing {}: {e}", path.display())
    })
}

/// `paddock restore`; the exit status.
pub fn run_restore(args: &RestoreArgs) -> i32 {
    match restore(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("paddock restore: {e}");
            1
        }
    }
}

fn parse_zxid(s: &str) -> Result<i64, String> {
    let t = s.trim();
    let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => i64::from_str_radix(h, 16),
        None => t.parse(),
    };
    v.map_err(|_| format!("--to-zxid {s:?} is not a zxid (0x<hex> or decimal)"))
}

/// The snapshot to restore: the file as it is, or the directory replayed up to the point.
fn snapshot_of(args: &RestoreArgs) -> Result<Vec<u8>, String> {
    let input = &args.input;
    if !input.is_dir() {
        if args.to_zxid.is_some() || args.to_time.is_some() {
            return Err(format!(
                "{}: --to-zxid and --to-time replay a data directory (its snapshots and logs), \
                 not one snapshot file",
                input.display()
            ));
        }
        let bytes =
            std::fs::read(input).map_err(|e| format!("reading {}: {e}", input.display()))?;
        // Checked here too, so a damaged file sends nothing.
        let cfg = crate::config::Config::embedded_default();
        let p = crate::zk_restore::prepare(&bytes, &cfg)
            .map_err(|e| format!("{}: {e}; nothing restored", input.display()))?;
        print!("{}", p.report);
        return Ok(bytes);
    }
    let upto = match (&args.to_zxid, args.to_time) {
        (Some(z), _) => Some(parse_zxid(z)?),
        (None, Some(t)) => {
            let z = crate::zk_import::zxid_at_time(input, t)?.ok_or_else(|| {
                format!(
                    "{}: no transaction was committed at or before {t}; nothing restored",
                    input.display()
                )
            })?;
            println!(
                "--to-time {t}: the last transaction at or before it is {}",
                files::zxid_hex(z)
            );
            Some(z)
        }
        (None, None) => None,
    };
    let imp = crate::zk_import::read_zookeeper_upto(input, input, MissingAcl::Refuse, upto)
        .map_err(|e| format!("{e}\nnothing restored"))?;
    print!("{}", imp.report);
    let cfg = crate::config::Config::embedded_default();
    let (tree, _) = crate::zk_import::to_paddock(&imp, &cfg, imp.max_zxid.max(0) as u64)?;
    Ok(crate::zk_export::zk_snapshot(&tree.snapshot_view()))
}

fn restore(args: &RestoreArgs) -> Result<(), String> {
    let bytes = snapshot_of(args)?;
    if let Some(out) = &args.out {
        write_whole(out, &bytes)?;
        println!(
            "written: {} ({} bytes); nothing restored",
            out.display(),
            bytes.len()
        );
        return Ok(());
    }
    let auth = auth_header(&args.auth);
    let mut why = Vec::new();
    for server in leader_first(&args.servers, &args.command_url) {
        let path = format!("{}/restore", args.command_url);
        match http(&server, "POST", &path, auth.as_deref(), &bytes) {
            Ok((200, _, body)) => {
                let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                let Some(z) = v["last_zxid"].as_i64() else {
                    return Err(format!(
                        "{server}: {}",
                        String::from_utf8_lossy(&body).trim()
                    ));
                };
                println!(
                    "restored through {server}: every member is at zxid {}; new zxids continue \
                     from {}",
                    files::zxid_hex(z),
                    files::zxid_hex(z + 1)
                );
                return Ok(());
            }
            // Refusals that another member would repeat: stop at the first.
            Ok((status @ (400 | 401 | 403 | 413 | 503), _, body)) => {
                return Err(format!(
                    "{server}: HTTP {status} {}",
                    String::from_utf8_lossy(&body)
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ")
                ))
            }
            Ok((status, _, body)) => why.push(format!(
                "{server}: HTTP {status} {}",
                String::from_utf8_lossy(&body)
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            )),
            Err(e) => why.push(e),
        }
    }
    Err(format!("no server took the restore: {}", why.join("; ")))
}
