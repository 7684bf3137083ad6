//! Operations, with the real binary: `--log-format json` (every line a JSON object, the startup
//! line's fields), RUST_LOG per-module filters, a clean exit 0 on SIGTERM within a bound, and
//! `paddock status`'s table against a live server and a dead port.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use paddock::status_cmd::{parse_servers, parse_srvr, render, Probe, Srvr};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn paddock() -> Command {
    Command::new(env!("CARGO_BIN_EXE_paddock"))
}

/// Starts `paddock [pre] serve --port P --data-dir D`; returns the child and its stderr lines.
fn spawn(
    pre: &[&str],
    dir: &std::path::Path,
    port: u16,
    rust_log: &str,
) -> (Child, mpsc::Receiver<String>) {
    let mut child = paddock()
        .args(pre)
        .args(["serve", "--port", &port.to_string(), "--data-dir"])
        .arg(dir)
        .env("RUST_LOG", rust_log)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("paddock starts");
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

fn four_letter(port: u16, word: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
    s.write_all(word.as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

fn wait_ready(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if four_letter(port, "ruok").as_deref() == Some("imok") {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("paddock did not answer ruok on {port}");
}

/// SIGTERM, then waits (at most `bound`) for the exit status.
fn terminate(child: &mut Child, bound: Duration) -> std::process::ExitStatus {
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let deadline = Instant::now() + bound;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("paddock did not exit within {bound:?} of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn drain(rx: &mpsc::Receiver<String>) -> Vec<String> {
    // The reader thread ends when the process closes stderr; collect what it read.
    let mut out = Vec::new();
    while let Ok(l) = rx.recv_timeout(Duration::from_secs(5)) {
        out.push(l);
    }
    out
}

#[test]
fn json_logs_parse_line_by_line_and_the_startup_line_names_version_id_ports_and_dirs() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let (mut child, rx) = spawn(&["--log-format", "json"], dir.path(), port, "info");
    wait_ready(port);
    let st = terminate(&mut child, Duration::from_secs(10));
    assert_eq!(st.code(), Some(0), "exit status after SIGTERM");
    let lines = drain(&rx);
    assert!(lines.len() >= 4, "too few log lines: {lines:?}");
    let objs: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    for o in &objs {
        for key in ["timestamp", "level", "target", "message"] {
            assert!(o.get(key).is_some(), "no {key} in {o}");
        }
    }
    let start = &objs[0];
    assert_eq!(start["message"], "paddock starting");
    assert_eq!(start["level"], "INFO");
    assert_eq!(start["target"], "paddock");
    assert_eq!(start["version"], paddock::fourlw::VERSION_REVISION);
    assert_eq!(start["my_id"], 1);
    assert_eq!(start["client_port"], port);
    assert_eq!(start["client_address"], "127.0.0.1");
    assert_eq!(start["servers"], 0);
    let d = dir.path().display().to_string();
    assert_eq!(start["data_dir"], d.as_str());
    assert_eq!(start["data_log_dir"], d.as_str());
    let messages: Vec<&str> = objs
        .iter()
        .map(|o| o["message"].as_str().unwrap())
        .collect();
    let serving = objs
        .iter()
        .find(|o| o["message"] == "serving ZooKeeper clients")
        .unwrap_or_else(|| panic!("no serving line in {messages:?}"));
    assert_eq!(serving["addr"], format!("127.0.0.1:{port}").as_str());
    assert!(messages.contains(&"terminated"), "{messages:?}");
    assert_eq!(messages.last(), Some(&"server stopped"));
}

#[test]
fn rust_log_filters_per_module_and_text_is_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    // Only paddock::startup at info: its "serving" line shows, main's startup line does not.
    let (mut child, rx) = spawn(&[], dir.path(), port, "warn,paddock::startup=info");
    wait_ready(port);
    assert_eq!(
        terminate(&mut child, Duration::from_secs(10)).code(),
        Some(0)
    );
    let lines = drain(&rx);
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" INFO paddock::startup: serving ZooKeeper clients")),
        "{lines:?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("paddock starting")),
        "{lines:?}"
    );
    assert!(!lines.iter().any(|l| l.starts_with('{')), "{lines:?}");
}

#[test]
fn sigint_also_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let (mut child, rx) = spawn(&[], dir.path(), port, "info");
    wait_ready(port);
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let st = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "no exit within 10 s of SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(st.code(), Some(0));
    let lines = drain(&rx);
    assert!(lines.iter().any(|l| l.contains("interrupted")), "{lines:?}");
    assert!(
        lines.last().unwrap().contains("server stopped"),
        "{lines:?}"
    );
}

fn run_status(servers: &str) -> (Option<i32>, String, String) {
    let out = paddock()
        .args(["status", "--servers", servers, "--timeout", "2"])
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn status_table_for_a_live_server_and_a_dead_port() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let (mut child, _rx) = spawn(&[], dir.path(), port, "warn");
    wait_ready(port);
    let live = format!("127.0.0.1:{port}");

    let (code, out, err) = run_status(&live);
    assert_eq!(code, Some(0), "stderr: {err}");
    // The srvr connection itself is the one connection; nothing has been asked yet.
    let zxid = parse_srvr(&four_letter(port, "srvr").unwrap())
        .unwrap()
        .zxid;
    let zxid = format!("0x{zxid:x}");
    let w = live.len().max("SERVER".len());
    let zw = zxid.len().max("ZXID".len());
    let expected = format!(
        "{:<w$}  MODE        {:<zw$}  LAG  CONNS  OUTSTANDING  SYNCED  SERVING  LATENCY\n\
         {:<w$}  standalone  {:<zw$}  0    1      0            -       yes      0/0.0/0\n",
        "SERVER", "ZXID", live, zxid
    );
    assert_eq!(out, expected);

    let dead_port = free_port();
    let dead = format!("127.0.0.1:{dead_port}");
    let (code, out, _) = run_status(&format!("{live},{dead}"));
    assert_eq!(code, Some(1), "a dead member fails the status");
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| {
            l.split("  ")
                .filter(|c| !c.is_empty())
                .map(str::trim)
                .collect()
        })
        .collect();
    assert_eq!(rows.len(), 3, "{out}");
    assert_eq!(rows[1][..3], [live.as_str(), "standalone", zxid.as_str()]);
    assert_eq!(
        rows[2],
        [
            dead.as_str(),
            "unreachable",
            "-",
            "-",
            "-",
            "-",
            "-",
            "no (Connection refused (os error 111))",
            "-"
        ],
        "{out}"
    );
    assert_eq!(
        terminate(&mut child, Duration::from_secs(10)).code(),
        Some(0)
    );

    // Bad input: a clear error and status 2, no panic.
    let (code, out, err) = run_status("127.0.0.1:notaport");
    assert_eq!(code, Some(2));
    assert_eq!(out, "");
    assert_eq!(
        err,
        "paddock status: bad port in '127.0.0.1:notaport' (expected host:port)\n"
    );
}

#[test]
fn status_lag_is_counted_from_the_leader_within_an_epoch() {
    let srvr = |mode: &str, zxid: u64| Srvr {
        mode: mode.into(),
        zxid,
        connections: "2".into(),
        outstanding: "0".into(),
        latency: "0/0.5/3".into(),
        synced_followers: (mode == "leader").then(|| "1".into()),
    };
    let rows = vec![
        (
            "zoo1:2181".to_string(),
            Probe::Serving(srvr("follower", 0x2_0000_0005)),
        ),
        (
            "zoo2:2181".to_string(),
            Probe::Serving(srvr("leader", 0x2_0000_0009)),
        ),
        (
            "zoo3:2181".to_string(),
            Probe::Serving(srvr("follower", 0x1_0000_0030)),
        ),
        ("zoo4:2181".to_string(), Probe::NotServing),
    ];
    assert_eq!(
        render(&rows),
        "SERVER     MODE      ZXID         LAG    CONNS  OUTSTANDING  SYNCED  SERVING                LATENCY\n\
         zoo1:2181  follower  0x200000005  4      2      0            -       yes                    0/0.5/3\n\
         zoo2:2181  leader    0x200000009  0      2      0            1       yes                    0/0.5/3\n\
         zoo3:2181  follower  0x100000030  epoch  2      0            -       yes                    0/0.5/3\n\
         zoo4:2181  -         -            -      -      -            -       not currently serving  -\n"
    );
    assert_eq!(
        parse_servers("zoo1,zoo2:2182, [::1]:2183").unwrap(),
        ["zoo1:2181", "zoo2:2182", "[::1]:2183"]
    );
    assert_eq!(
        parse_servers("zoo1,,zoo2").unwrap_err(),
        "empty server in 'zoo1,,zoo2'"
    );
}
