//! `paddock status [--servers HOST:PORT,...]`: one table for an ensemble, for an operator at a
//! terminal. Each server is asked `srvr` (role, zxid, connections, outstanding, latency) and
//! `mntr` (ZooKeeper's default whitelist refuses it; then its columns stay `-`), all at once,
//! each with a timeout. Works against paddock and Apache ZooKeeper alike.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use clap::Args;

use crate::fourlw::NOT_SERVING;

const DEFAULT_PORT: u16 = 2181;

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Example: paddock status --servers zoo1:2181,zoo2:2181,zoo3:2181\n\n\
Columns: SERVER as given; MODE leader/follower/observer/standalone/read-only; ZXID in hex; LAG \
the leader's zxid minus this server's (transactions, same epoch; `epoch` if it is an epoch behind; \
`-` with no leader); CONNS and OUTSTANDING from srvr; SYNCED the leader's synced followers (mntr); \
SERVING yes or `not currently serving`; LATENCY min/avg/max ms.\n\
Exit status: 0 if every server serves, 1 otherwise, 2 on bad arguments."
)]
pub struct StatusArgs {
    /// The servers to ask, comma-separated host[:port] (port 2181 if left out).
    #[arg(long, value_name = "HOSTS", default_value = "127.0.0.1:2181")]
    pub servers: String,

    /// Seconds to wait for each server's answer.
    #[arg(long, value_name = "S", default_value_t = 3.0)]
    pub timeout: f64,
}

/// What one server said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// It answered `srvr` with its statistics.
    Serving(Srvr),
    /// It answered, but is not serving (no quorum, still syncing).
    NotServing,
    /// No answer: the error, as the operator should read it.
    Unreachable(String),
}

/// The fields of a `srvr` reply that the table shows, plus `mntr`'s synced followers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Srvr {
    pub mode: String,
    pub zxid: u64,
    pub connections: String,
    pub outstanding: String,
    pub latency: String,
    pub synced_followers: Option<String>,
}

/// Parses a `srvr` reply; None if it is not one.
pub fn parse_srvr(text: &str) -> Option<Srvr> {
    let mut s = Srvr::default();
    let mut zxid = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(": ") else {
            continue;
        };
        let value = value.trim().to_string();
        match key {
            "Mode" => s.mode = value,
            "Zxid" => {
                zxid = u64::from_str_radix(value.trim_start_matches("0x"), 16).ok();
            }
            "Connections" => s.connections = value,
            "Outstanding" => s.outstanding = value,
            "Latency min/avg/max" => s.latency = value,
            _ => {}
        }
    }
    s.zxid = zxid?;
    (!s.mode.is_empty()).then_some(s)
}

/// The value of one `mntr` key (tab-separated `zk_key\tvalue` lines).
pub fn mntr_value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .filter_map(|l| l.split_once('\t'))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.trim())
}

/// Sends one four-letter word and reads the reply until the server closes.
pub fn four_letter(addr: &str, word: &str, timeout: Duration) -> Result<String, String> {
    let sock = addr
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve: {e}"))?
        .next()
        .ok_or_else(|| "cannot resolve: no address".to_string())?;
    let mut stream = TcpStream::connect_timeout(&sock, timeout).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|_| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| e.to_string())?;
    stream
        .write_all(word.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    stream
        .read_to_end(&mut out)
        .map_err(|e| format!("no answer to {word}: {e}"))?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Asks one server `srvr`, then `mntr`.
pub fn probe(addr: &str, timeout: Duration) -> Probe {
    let text = match four_letter(addr, "srvr", timeout) {
        Ok(t) => t,
        Err(e) => return Probe::Unreachable(e),
    };
    if text.contains(NOT_SERVING) {
        return Probe::NotServing;
    }
    let Some(mut s) = parse_srvr(&text) else {
        let first = text.lines().next().unwrap_or("").trim();
        return Probe::Unreachable(if first.is_empty() {
            "empty answer to srvr".to_string()
        } else {
            format!("unexpected answer to srvr: {first}")
        });
    };
    if s.mode == "leader" {
        if let Ok(m) = four_letter(addr, "mntr", timeout) {
            s.synced_followers = mntr_value(&m, "zk_synced_followers").map(str::to_string);
        }
    }
    Probe::Serving(s)
}

/// `host[:port]` with the default port filled in; an error names the bad entry.
pub fn parse_servers(list: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(format!("empty server in '{list}'"));
        }
        // A bracketed IPv6 address keeps its colons; otherwise the last colon starts the port.
        let (host, port) = match item.rsplit_once(':') {
            Some((h, p)) if !h.is_empty() && (!h.contains(':') || h.ends_with(']')) => {
                let port: u16 = p
                    .parse()
                    .map_err(|_| format!("bad port in '{item}' (expected host:port)"))?;
                (h.to_string(), port)
            }
            _ => (item.to_string(), DEFAULT_PORT),
        };
        out.push(format!("{host}:{port}"));
    }
    Ok(out)
}

/// The table: a header and one row per server, columns padded to their widest cell.
pub fn render(rows: &[(String, Probe)]) -> String {
    let leader_zxid = rows.iter().find_map(|(_, p)| match p {
        Probe::Serving(s) if s.mode == "leader" || s.mode == "standalone" => Some(s.zxid),
        _ => None,
    });
    let mut cells: Vec<Vec<String>> = vec![[
        "SERVER",
        "MODE",
        "ZXID",
        "LAG",
        "CONNS",
        "OUTSTANDING",
        "SYNCED",
        "SERVING",
        "LATENCY",
    ]
    .map(String::from)
    .to_vec()];
    for (addr, probe) in rows {
        let row = match probe {
            Probe::Serving(s) => vec![
                addr.clone(),
                s.mode.clone(),
                format!("0x{:x}", s.zxid),
                lag(leader_zxid, s.zxid),
                s.connections.clone(),
                s.outstanding.clone(),
                s.synced_followers.clone().unwrap_or_else(|| "-".into()),
                "yes".into(),
                s.latency.clone(),
            ],
            Probe::NotServing => {
                let mut r = vec![addr.clone()];
                r.extend(["-"; 6].map(String::from));
                r.push("not currently serving".into());
                r.push("-".into());
                r
            }
            Probe::Unreachable(e) => {
                let mut r = vec![addr.clone(), "unreachable".into()];
                r.extend(["-"; 5].map(String::from));
                r.push(format!("no ({e})"));
                r.push("-".into());
                r
            }
        };
        cells.push(row);
    }
    let widths: Vec<usize> = (0..cells[0].len())
        .map(|c| cells.iter().map(|r| r[c].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &cells {
        let last = row.len() - 1;
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c == last {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn lag(leader: Option<u64>, zxid: u64) -> String {
    let Some(l) = leader else {
        return "-".into();
    };
    if l >> 32 != zxid >> 32 {
        return if zxid >> 32 < l >> 32 {
            "epoch".into()
        } else {
            "-".into()
        };
    }
    (l as i64 - zxid as i64).to_string()
}

/// Runs `paddock status`; returns the exit status.
pub fn run(args: &StatusArgs) -> i32 {
    let servers = match parse_servers(&args.servers) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("paddock status: {e}");
            return 2;
        }
    };
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        eprintln!("paddock status: --timeout must be a positive number of seconds");
        return 2;
    }
    let timeout = Duration::from_secs_f64(args.timeout);
    let handles: Vec<_> = servers
        .iter()
        .cloned()
        .map(|addr| std::thread::spawn(move || probe(&addr, timeout)))
        .collect();
    let rows: Vec<(String, Probe)> = servers
        .into_iter()
        .zip(handles)
        .map(|(addr, h)| {
            let p = h
                .join()
                .unwrap_or_else(|_| Probe::Unreachable("probe failed".into()));
            (addr, p)
        })
        .collect();
    print!("{}", render(&rows));
    if rows.iter().all(|(_, p)| matches!(p, Probe::Serving(_))) {
        0
    } else {
        1
    }
}
