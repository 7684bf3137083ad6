//! `paddock status [--servers HOST:PORT,...]`: one table for an ensemble, for an operator at a
//! terminal. Each server is asked `srvr` (role, zxid, connections, outstanding, latency) and
//! `mntr` (ZooKeeper's default whitelist refuses it; then its columns stay `-`), all at once,
//! each with a timeout. Works against paddock and Apache ZooKeeper alike.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use rustls::{ClientConfig, RootCertStore};

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

    #[command(flatten)]
    pub tls: recipes::secure::TlsArgs,
}

/// The TLS client configuration --tls-ca, --tls-cert and --tls-key ask for; None without --tls-ca.
pub fn tls_config(args: &StatusArgs) -> Result<Option<Arc<ClientConfig>>, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let Some(ca) = &args.tls.tls_ca else {
        return Ok(None);
    };
    let mut roots = RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(ca)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("--tls-ca {}: {e}", ca.display()))?;
    for c in certs {
        roots
            .add(c)
            .map_err(|e| format!("--tls-ca {}: {e}", ca.display()))?;
    }
    if roots.is_empty() {
        return Err(format!("--tls-ca {}: no certificate in it", ca.display()));
    }
    let builder = ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots);
    let config = match (&args.tls.tls_cert, &args.tls.tls_key) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| format!("--tls-key {}: {e}", key.display()))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("--tls-cert / --tls-key: {e}"))?
        }
        _ => builder.with_no_client_auth(),
    };
    Ok(Some(Arc::new(config)))
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

/// Sends one four-letter word and reads the reply until the server closes; over TLS with `tls`.
pub fn four_letter(
    addr: &str,
    word: &str,
    timeout: Duration,
    tls: Option<&Arc<ClientConfig>>,
) -> Result<String, String> {
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
    let mut out = Vec::new();
    match tls {
        None => {
            stream
                .write_all(word.as_bytes())
                .map_err(|e| e.to_string())?;
            stream
                .read_to_end(&mut out)
                .map_err(|e| format!("no answer to {word}: {e}"))?;
        }
        Some(config) => {
            let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let name = rustls::pki_types::ServerName::try_from(host.to_string())
                .map_err(|e| format!("{host}: {e}"))?;
            let conn = rustls::ClientConnection::new(config.clone(), name)
                .map_err(|e| format!("TLS: {e}"))?;
            let mut tls = rustls::StreamOwned::new(conn, stream);
            tls.write_all(word.as_bytes())
                .and_then(|_| tls.flush())
                .map_err(|e| format!("TLS: {e}"))?;
            // The server closes after its answer, without a close_notify on every stack:
            // what arrived before the end counts.
            match tls.read_to_end(&mut out) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !out.is_empty() => {}
                Err(e) => return Err(format!("no answer to {word}: {e}")),
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Asks one server `srvr`, then `mntr`.
pub fn probe(addr: &str, timeout: Duration, tls: Option<&Arc<ClientConfig>>) -> Probe {
    let text = match four_letter(addr, "srvr", timeout, tls) {
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
        if let Ok(m) = four_letter(addr, "mntr", timeout, tls) {
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
    let tls = match tls_config(args) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("paddock status: {e}");
            return 2;
        }
    };
    let handles: Vec<_> = servers
        .iter()
        .cloned()
        .map(|addr| {
            let tls = tls.clone();
            std::thread::spawn(move || probe(&addr, timeout, tls.as_ref()))
        })
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
