//! Restart-to-serving probe: how long until a given znode can be read again.
//!
//! The comparison script starts a server and this probe at once; the probe keeps opening a
//! fresh session and reading the path until a read succeeds, so the time it reports covers
//! process start, state recovery and the first served request.
//!
//! Attempts overlap: a new one starts every [`ATTEMPT_EVERY`] while older ones are still
//! waiting. A server that accepts connections before it can answer would otherwise hold a
//! lone attempt until its timeout and add that timeout to the measurement; a server that is
//! ready but slow to answer the first request still gets the whole [`ATTEMPT_TIMEOUT`].
//!
//! Until the server's port accepts a TCP connection, the probe only knocks: a bare connect
//! every [`KNOCK_EVERY`], which a server that is not listening refuses in the kernel at no cost
//! to it. Session attempts start once the port accepts. paddock listens only once it serves,
//! so the knock is the measurement's resolution for it; ZooKeeper listens while it loads and
//! closes each session attempt until it serves, logging each one, so it gets them at the old
//! cadence. Until 5 Dec 2026 attempts simply came every 50 ms: paddock's restarts read as the
//! next 50 ms step after its own "serving" log line (941 ms serving read 959 ms, 953 read
//! 1,008), 25 ms too slow on average at a 1 s target. Session attempts every 10 ms instead
//! (111f09f) cost ZooKeeper's restart 7-23% (300k znodes: 6.9 s against 7.4-8.5 s, 754
//! logged refusals), so that was replaced by the knock.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures_lite::{FutureExt, StreamExt};

use crate::driver;
use crate::executor;
use crate::report::{RunReport, RunShape, Tally};
use crate::Args;

const ATTEMPT_EVERY: Duration = Duration::from_millis(50);
/// The bare connect's cadence while nothing listens, and its timeout.
const KNOCK_EVERY: Duration = Duration::from_millis(10);
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bounds the sessions a probe can have half-open against a server that is not answering.
const MAX_PENDING: usize = 64;

async fn attempt(hosts: Arc<str>, session_timeout: Duration, path: Arc<str>) -> Result<(), String> {
    let work = async {
        let client = driver::connect(&hosts, session_timeout).await?;
        client
            .get_data(&path)
            .await
            .with_context(|| format!("get {path}"))?;
        anyhow::Ok(())
    };
    match executor::timeout(ATTEMPT_TIMEOUT, work).await {
        Some(Ok(())) => Ok(()),
        Some(Err(e)) => Err(format!("{e:#}")),
        None => Err("attempt timed out".to_string()),
    }
}

/// Whether any of `hosts` accepts a TCP connection now (the connection is closed at once).
async fn any_listens(hosts: &str) -> bool {
    for host in hosts.split(',') {
        let host = host.trim();
        // A chroot suffix is the client's business; the address is what comes before it.
        let addr = host.split('/').next().unwrap_or(host);
        if let Some(Ok(_)) =
            executor::timeout(KNOCK_EVERY, async_net::TcpStream::connect(addr)).await
        {
            return true;
        }
    }
    false
}

type Attempt = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

enum Step {
    Tick,
    Done(Result<(), String>),
    Deadline,
}

/// The result of the first of `pending` to finish, which is taken out; never resolves while none
/// has (nor when there are none). Every attempt is polled on each wake-up: there are at most
/// [`MAX_PENDING`].
async fn first_done(pending: &mut Vec<Attempt>) -> Result<(), String> {
    futures_lite::future::poll_fn(|cx| {
        for i in 0..pending.len() {
            if let Poll::Ready(result) = pending[i].as_mut().poll(cx) {
                drop(pending.swap_remove(i));
                return Poll::Ready(result);
            }
        }
        Poll::Pending
    })
    .await
}

pub async fn run_probe(args: &Args) -> anyhow::Result<RunReport> {
    let path: Arc<str> = args
        .path
        .as_deref()
        .context("--path is required for the probe workload")?
        .into();
    let hosts: Arc<str> = args.hosts.as_str().into();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.duration_secs);
    let mut pending: Vec<Attempt> = Vec::new();
    let mut last_error = None;
    // Ticks at once, then every KNOCK_EVERY.
    let mut ticker = async_io::Timer::interval_at(started, KNOCK_EVERY);
    let mut listening = false;
    let mut last_attempt: Option<Instant> = None;
    let ready = loop {
        let step = async {
            ticker.next().await;
            Step::Tick
        }
        .or(async { Step::Done(first_done(&mut pending).await) })
        .or(async {
            async_io::Timer::at(deadline).await;
            Step::Deadline
        })
        .await;
        match step {
            Step::Tick => {
                if !listening {
                    listening = any_listens(&hosts).await;
                }
                let due = last_attempt.is_none_or(|t| t.elapsed() >= ATTEMPT_EVERY);
                if listening && due && pending.len() < MAX_PENDING {
                    pending.push(Box::pin(attempt(
                        hosts.clone(),
                        args.session_timeout(),
                        path.clone(),
                    )));
                    last_attempt = Some(Instant::now());
                }
            }
            Step::Done(Ok(())) => break true,
            Step::Done(Err(e)) => last_error = Some(e),
            Step::Deadline => break false,
        }
    };
    let elapsed = started.elapsed();
    // Attempts still waiting are dropped with `pending`.
    drop(pending);
    let mut tally = Tally::new();
    if ready {
        tally.record_ok(elapsed);
    } else {
        tally.record_error(format!(
            "{path} not readable within {}s (last: {})",
            args.duration_secs,
            last_error.unwrap_or_default()
        ));
    }
    let shape = RunShape {
        workload: "probe",
        label: &args.label,
        hosts: &args.hosts,
        clients: 1,
        inflight: 1,
        value_size: 0,
    };
    let mut report = RunReport::new(&shape, &tally, elapsed);
    if ready {
        report.ready_ms = Some(elapsed.as_millis() as u64);
    }
    Ok(report)
}
