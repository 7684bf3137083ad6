//! Failover timing: how long after the leader is killed (or stopped) a write is acknowledged
//! again through the surviving members.
//!
//! `--hosts` lists the survivors only. Each of `--clients` writers sets its own znode, one request
//! at a time. After `--warmup-secs` the run sends `--signal` to `--kill-pid` (the leader's process),
//! waits until the signal has taken effect (the process is gone or a zombie for `kill`, stopped for
//! `stop`), and from then on counts writes: the time reported is from just before the signal was
//! sent to the first acknowledgement of a write that was issued after it took effect, so no write
//! the old leader could still have committed is counted.
//!
//! A writer whose request fails or does not answer within [`OP_TIMEOUT`] drops its connection and
//! reconnects at once (every [`RETRY_EVERY`]) with the same session, to the survivors in turn. The
//! client library's own reconnect back-off (up to seconds) would otherwise be measured instead of
//! the servers.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use zookeeper_client::{Client, Error as ZkError, SessionInfo};

use crate::driver::{self, PERSISTENT};
use crate::executor;
use crate::report::{FailoverStats, RunReport, RunShape, Tally};
use crate::Args;

const OP_TIMEOUT: Duration = Duration::from_secs(2);
const RETRY_EVERY: Duration = Duration::from_millis(10);

struct Shared {
    started: Instant,
    stop: AtomicBool,
    /// Set once the signal has taken effect: writes issued from then on count.
    dead: AtomicBool,
    /// Nanoseconds after `started` of the first counted acknowledgement (u64::MAX: none yet).
    first_ack_ns: AtomicU64,
    acked: AtomicU64,
    reconnects: AtomicU64,
}

async fn connect(
    hosts: &str,
    timeout: Duration,
    session: Option<&SessionInfo>,
) -> Result<Client, ZkError> {
    let mut c = Client::connector()
        .with_session_timeout(timeout)
        .with_connection_timeout(OP_TIMEOUT)
        .with_fail_eagerly()
        .with_detached();
    if let Some(s) = session {
        c = c.with_session(s.clone());
    }
    executor::timeout(OP_TIMEOUT, c.connect(hosts))
        .await
        .unwrap_or(Err(ZkError::Timeout))
}

async fn writer(hosts: Arc<str>, path: String, timeout: Duration, s: Arc<Shared>) -> Tally {
    let mut tally = Tally::new();
    let mut session: Option<SessionInfo> = None;
    let data = vec![b'x'; 16];
    while !s.stop.load(Ordering::Relaxed) {
        let client = match connect(&hosts, timeout, session.as_ref()).await {
            Ok(c) => c,
            Err(ZkError::SessionExpired) => {
                session = None;
                continue;
            }
            Err(_) => {
                executor::sleep(RETRY_EVERY).await;
                continue;
            }
        };
        session = Some(client.session().clone());
        while !s.stop.load(Ordering::Relaxed) {
            let counts = s.dead.load(Ordering::SeqCst);
            let t = Instant::now();
            match executor::timeout(OP_TIMEOUT, client.set_data(&path, &data, None)).await {
                Some(Ok(_)) => {
                    let now = Instant::now();
                    tally.record_ok(now - t);
                    s.acked.fetch_add(1, Ordering::Relaxed);
                    if counts {
                        let ns = u64::try_from((now - s.started).as_nanos()).unwrap_or(u64::MAX);
                        s.first_ack_ns.fetch_min(ns, Ordering::SeqCst);
                    }
                }
                // Lost connection, a member that refuses, or no answer: reconnect.
                _ => {
                    s.reconnects.fetch_add(1, Ordering::Relaxed);
                    break;
                }
            }
        }
    }
    tally
}

/// The process's state letter from /proc (None once it is gone).
fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

pub async fn run_failover(args: &Args, root: &str, setup: &Client) -> anyhow::Result<RunReport> {
    let pid = args
        .kill_pid
        .context("--kill-pid (the leader's process) is required for the failover workload")?;
    let signal = args.signal.to_ascii_uppercase();
    if signal != "KILL" && signal != "STOP" {
        bail!("--signal must be kill or stop, got {}", args.signal);
    }
    match proc_state(pid) {
        Some('Z' | 'X' | 'T') | None => bail!("process {pid} is not running"),
        Some(_) => {}
    }
    let dir = format!("{root}/failover");
    driver::ensure_path(setup, &dir).await?;
    let clients = args.clients.max(1);
    for i in 0..clients {
        match setup.create(&format!("{dir}/k{i}"), b"", &PERSISTENT).await {
            Ok(_) | Err(ZkError::NodeExists) => {}
            Err(e) => return Err(e).context("creating the writers' znodes"),
        }
    }
    let shared = Arc::new(Shared {
        started: Instant::now(),
        stop: AtomicBool::new(false),
        dead: AtomicBool::new(false),
        first_ack_ns: AtomicU64::new(u64::MAX),
        acked: AtomicU64::new(0),
        reconnects: AtomicU64::new(0),
    });
    // Writer i lists the survivors starting at i (the client shuffles the list anyway).
    let hosts: Vec<&str> = args.hosts.split(',').collect();
    let mut writers = Vec::with_capacity(clients);
    for i in 0..clients {
        let mut list: Vec<&str> = hosts.clone();
        list.rotate_left(i % hosts.len());
        writers.push(spawns::spawn(writer(
            list.join(",").into(),
            format!("{dir}/k{i}"),
            args.session_timeout(),
            shared.clone(),
        )));
    }
    executor::sleep(Duration::from_secs(args.warmup_secs)).await;
    let before = shared.acked.load(Ordering::Relaxed);
    if before == 0 {
        shared.stop.store(true, Ordering::Relaxed);
        writers.iter().for_each(|w| w.cancel());
        bail!(
            "no write was acknowledged during the {}s warm-up",
            args.warmup_secs
        );
    }

    let sent_at = Instant::now();
    let status = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .context("running kill")?;
    if !status.success() {
        bail!("kill -{signal} {pid} failed");
    }
    let effective = loop {
        let done = match proc_state(pid) {
            None | Some('Z' | 'X') => true,
            Some('T' | 't') => signal == "STOP",
            Some(_) => false,
        };
        if done {
            break Instant::now();
        }
        if sent_at.elapsed() > Duration::from_secs(5) {
            bail!("process {pid} did not take SIG{signal} within 5 s");
        }
        executor::sleep(Duration::from_millis(1)).await;
    };
    shared.dead.store(true, Ordering::SeqCst);
    let deadline = sent_at + Duration::from_secs(args.duration_secs);
    while shared.first_ack_ns.load(Ordering::SeqCst) == u64::MAX && Instant::now() < deadline {
        executor::sleep(Duration::from_millis(1)).await;
    }
    shared.stop.store(true, Ordering::Relaxed);
    let elapsed = shared.started.elapsed();
    // Writers stuck in a request give up within OP_TIMEOUT; waiting for them is not needed.
    let mut tally = Tally::new();
    let cancel: Vec<_> = writers.iter().map(|w| w.cancel_handle()).collect();
    let collect = async {
        for writer in writers {
            if let Ok(t) = writer.await {
                tally.merge(t);
            }
        }
    };
    let _ = executor::timeout(OP_TIMEOUT * 2, collect).await;
    cancel.iter().for_each(|c| c.cancel());
    let first = shared.first_ack_ns.load(Ordering::SeqCst);
    let failover_ms = (first != u64::MAX).then(|| {
        let at = shared.started + Duration::from_nanos(first);
        (at - sent_at).as_secs_f64() * 1000.0
    });
    if failover_ms.is_none() {
        tally.record_error(format!(
            "no write acknowledged within {}s of SIG{signal}",
            args.duration_secs
        ));
    }
    let shape = RunShape {
        workload: "failover",
        label: &args.label,
        hosts: &args.hosts,
        clients,
        inflight: 1,
        value_size: 16,
    };
    let mut report = RunReport::new(&shape, &tally, elapsed);
    report.failover = Some(FailoverStats {
        signal,
        pid,
        signal_effective_ms: (effective - sent_at).as_secs_f64() * 1000.0,
        failover_ms,
        acked_before_signal: before,
        reconnects: shared.reconnects.load(Ordering::Relaxed),
    });
    Ok(report)
}
