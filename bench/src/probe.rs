//! Restart-to-serving probe: how long until a given znode can be read again.
//!
//! The comparison script starts a server and this probe at once; the probe keeps opening a
//! fresh session and reading the path until the read succeeds, so the time it reports covers
//! process start, state recovery and the first served request.

use std::time::{Duration, Instant};

use anyhow::Context;

use crate::driver;
use crate::report::{RunReport, RunShape, Tally};
use crate::Args;

/// One attempt may not take longer than this; a server that accepts but does not answer yet
/// must not stall the probe past the moment it starts answering.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);
const RETRY_PAUSE: Duration = Duration::from_millis(20);

async fn attempt(args: &Args, path: &str) -> anyhow::Result<()> {
    let client = driver::connect(&args.hosts, args.session_timeout()).await?;
    client
        .get_data(path)
        .await
        .with_context(|| format!("get {path}"))?;
    Ok(())
}

pub async fn run_probe(args: &Args) -> anyhow::Result<RunReport> {
    let path = args
        .path
        .as_deref()
        .context("--path is required for the probe workload")?;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.duration_secs);
    let mut tally = Tally::new();
    let mut last_error = None;
    let ready = loop {
        let t0 = Instant::now();
        match tokio::time::timeout(ATTEMPT_TIMEOUT, attempt(args, path)).await {
            Ok(Ok(())) => {
                tally.record_ok(t0.elapsed());
                break true;
            }
            Ok(Err(e)) => last_error = Some(format!("{e:#}")),
            Err(_) => last_error = Some("attempt timed out".to_string()),
        }
        if Instant::now() >= deadline {
            break false;
        }
        tokio::time::sleep(RETRY_PAUSE).await;
    };
    let elapsed = started.elapsed();
    if !ready {
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
