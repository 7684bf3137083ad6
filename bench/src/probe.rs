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
//! The cadence is the measurement's resolution: a server that refuses connections until it
//! is ready is found serving up to one [`ATTEMPT_EVERY`] late. It was 50 ms until 5 Dec 2026,
//! and paddock's restarts read as the next 50 ms step after its own "serving" log line (941 ms
//! serving read 959 ms, 953 read 1,008), 25 ms too slow on average at a 1 s target. At 10 ms
//! the probe costs a server that is still loading one refused (or closed) connection per
//! 10 ms.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::task::JoinSet;

use crate::driver;
use crate::report::{RunReport, RunShape, Tally};
use crate::Args;

const ATTEMPT_EVERY: Duration = Duration::from_millis(10);
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
    match tokio::time::timeout(ATTEMPT_TIMEOUT, work).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("{e:#}")),
        Err(_) => Err("attempt timed out".to_string()),
    }
}

pub async fn run_probe(args: &Args) -> anyhow::Result<RunReport> {
    let path: Arc<str> = args
        .path
        .as_deref()
        .context("--path is required for the probe workload")?
        .into();
    let hosts: Arc<str> = args.hosts.as_str().into();
    let started = Instant::now();
    let deadline =
        tokio::time::Instant::from_std(started + Duration::from_secs(args.duration_secs));
    let mut pending = JoinSet::new();
    let mut last_error = None;
    let mut ticker = tokio::time::interval(ATTEMPT_EVERY);
    let ready = loop {
        tokio::select! {
            _ = ticker.tick() => {
                if pending.len() < MAX_PENDING {
                    pending.spawn(attempt(hosts.clone(), args.session_timeout(), path.clone()));
                }
            }
            Some(done) = pending.join_next(), if !pending.is_empty() => match done {
                Ok(Ok(())) => break true,
                Ok(Err(e)) => last_error = Some(e),
                Err(e) => last_error = Some(format!("probe attempt panicked: {e}")),
            },
            _ = tokio::time::sleep_until(deadline) => break false,
        }
    };
    let elapsed = started.elapsed();
    pending.abort_all();
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
