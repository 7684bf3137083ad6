//! The throughput workloads: create, set, get, mixed (90% get / 10% set) and fill.
//!
//! Every workload works below its own directory of the run's root, prepares what it reads
//! before the clock starts, and checks what it can of each reply (a get must return the bytes
//! written), so a server that answers fast but wrong fails the run instead of winning it.

use std::sync::Arc;
use std::time::Duration;

use zookeeper_client::Client;

use crate::driver::{self, Budget, Operation, PERSISTENT};
use crate::report::{FillStats, RunReport, RunShape};
use crate::Args;

/// Children per parent in the fill tree: ZooKeeper's own guidance keeps child lists in the
/// thousands, and it bounds the size of each getChildren reply.
pub const FILL_FANOUT: u64 = 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyMix {
    Set,
    Get,
    /// Every tenth operation is a set, the rest are gets.
    Mixed,
}

/// Operations on a fixed, pre-created key set.
struct KeyOp {
    keys: Vec<String>,
    value: Vec<u8>,
    mix: KeyMix,
}

/// Spreads consecutive operation indices over the key set (splitmix64's finaliser), so
/// concurrent workers rarely hit the same key back to back.
fn spread(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl KeyOp {
    fn is_set(&self, i: u64) -> bool {
        match self.mix {
            KeyMix::Set => true,
            KeyMix::Get => false,
            KeyMix::Mixed => i % 10 == 9,
        }
    }
}

impl Operation for KeyOp {
    async fn run(&self, client: &Client, i: u64) -> Result<(), String> {
        let path = &self.keys[(spread(i) % self.keys.len() as u64) as usize];
        if self.is_set(i) {
            client
                .set_data(path, &self.value, None)
                .await
                .map(|_| ())
                .map_err(|e| format!("set {path}: {e}"))
        } else {
            let (data, _) = client
                .get_data(path)
                .await
                .map_err(|e| format!("get {path}: {e}"))?;
            if data.len() != self.value.len() {
                return Err(format!(
                    "get {path}: {} bytes, expected {}",
                    data.len(),
                    self.value.len()
                ));
            }
            Ok(())
        }
    }
}

/// Creates fresh znodes, one per operation index, flat under one parent.
struct CreateOp {
    dir: String,
    value: Vec<u8>,
}

impl Operation for CreateOp {
    async fn run(&self, client: &Client, i: u64) -> Result<(), String> {
        let path = format!("{}/n{i:010}", self.dir);
        client
            .create(&path, &self.value, &PERSISTENT)
            .await
            .map(|_| ())
            .map_err(|e| format!("create {path}: {e}"))
    }
}

/// The fill tree's path for index `i`: `FILL_FANOUT` leaves per parent.
pub fn fill_path(dir: &str, i: u64) -> String {
    format!("{dir}/p{:05}/n{:03}", i / FILL_FANOUT, i % FILL_FANOUT)
}

struct FillOp {
    dir: String,
    value: Vec<u8>,
}

impl Operation for FillOp {
    async fn run(&self, client: &Client, i: u64) -> Result<(), String> {
        let path = fill_path(&self.dir, i);
        client
            .create(&path, &self.value, &PERSISTENT)
            .await
            .map(|_| ())
            .map_err(|e| format!("create {path}: {e}"))
    }
}

fn value(args: &Args) -> Vec<u8> {
    // Printable and non-constant, so no layer can get away with storing a run-length.
    (0..args.value_size)
        .map(|i| b'a' + (i % 26) as u8)
        .collect()
}

fn shape<'a>(args: &'a Args, workload: &'a str) -> RunShape<'a> {
    RunShape {
        workload,
        label: &args.label,
        hosts: &args.hosts,
        clients: args.clients,
        inflight: args.inflight,
        value_size: args.value_size,
    }
}

fn op_limit(args: &Args) -> u64 {
    if args.ops == 0 {
        u64::MAX
    } else {
        args.ops
    }
}

pub async fn run_create(
    args: &Args,
    root: &str,
    setup: &Client,
    clients: &[Client],
) -> anyhow::Result<RunReport> {
    let dir = format!("{root}/create");
    driver::ensure_path(setup, &dir).await?;
    let op = Arc::new(CreateOp {
        dir,
        value: value(args),
    });
    let budget = Arc::new(Budget::new(
        op_limit(args),
        Duration::from_secs(args.duration_secs),
    ));
    let (tally, elapsed, cpu) =
        driver::closed_loop(clients, args.inflight, args.slow_us, budget, op).await?;
    Ok(RunReport::new(&shape(args, "create"), &tally, elapsed).with_client_cpu(cpu))
}

pub async fn run_keys(
    args: &Args,
    root: &str,
    setup: &Client,
    clients: &[Client],
    mix: KeyMix,
) -> anyhow::Result<RunReport> {
    let dir = format!("{root}/keys");
    driver::ensure_path(setup, &dir).await?;
    let value = value(args);
    let keys: Vec<String> = (0..args.keys.max(1))
        .map(|k| format!("{dir}/k{k:07}"))
        .collect();
    driver::create_all(setup, &keys, &value).await?;
    driver::sync_all(clients, &dir).await?;
    let name = match mix {
        KeyMix::Set => "set",
        KeyMix::Get => "get",
        KeyMix::Mixed => "mixed",
    };
    let op = Arc::new(KeyOp { keys, value, mix });
    let budget = Arc::new(Budget::new(
        op_limit(args),
        Duration::from_secs(args.duration_secs),
    ));
    let (tally, elapsed, cpu) =
        driver::closed_loop(clients, args.inflight, args.slow_us, budget, op).await?;
    Ok(RunReport::new(&shape(args, name), &tally, elapsed).with_client_cpu(cpu))
}

/// A session opened (TCP connect, the TLS handshake with --tls-ca, ConnectRequest and its reply)
/// and dropped, which closes it; the session of the worker is not used.
struct ConnectOp {
    hosts: String,
    session_timeout: Duration,
}

impl Operation for ConnectOp {
    async fn run(&self, _client: &Client, _i: u64) -> Result<(), String> {
        let session = driver::connect(&self.hosts, self.session_timeout)
            .await
            .map_err(|e| format!("{e:#}"))?;
        drop(session);
        Ok(())
    }
}

/// Connects per second: `--clients` x `--inflight` workers each open a session, drop it (the
/// client library then sends closeSession) and open the next, for `--duration-secs`.
pub async fn run_connect(args: &Args, clients: &[Client]) -> anyhow::Result<RunReport> {
    let op = Arc::new(ConnectOp {
        hosts: args.hosts.clone(),
        session_timeout: args.session_timeout(),
    });
    let budget = Arc::new(Budget::new(
        op_limit(args),
        Duration::from_secs(args.duration_secs),
    ));
    let (tally, elapsed, cpu) =
        driver::closed_loop(clients, args.inflight, args.slow_us, budget, op).await?;
    Ok(RunReport::new(&shape(args, "connect"), &tally, elapsed).with_client_cpu(cpu))
}

/// Creates exactly `--znodes` znodes. Bounded by `--fill-timeout-secs` rather than the run
/// duration, since the point is the end state, not the rate; a fill that does not finish is
/// reported through its missing count and fails the run.
pub async fn run_fill(
    args: &Args,
    root: &str,
    setup: &Client,
    clients: &[Client],
) -> anyhow::Result<RunReport> {
    let dir = format!("{root}/fill");
    driver::ensure_path(setup, &dir).await?;
    let n = args.znodes.max(1);
    let parents: Vec<String> = (0..n.div_ceil(FILL_FANOUT))
        .map(|p| format!("{dir}/p{p:05}"))
        .collect();
    driver::create_all(setup, &parents, b"").await?;
    let op = Arc::new(FillOp {
        dir: dir.clone(),
        value: value(args),
    });
    let budget = Arc::new(Budget::new(n, Duration::from_secs(args.fill_timeout_secs)));
    let (mut tally, elapsed, cpu) =
        driver::closed_loop(clients, args.inflight, args.slow_us, budget, op).await?;
    let done = tally.ok + tally.errors;
    if done < n {
        tally.errors += n - done;
        tally
            .first_error
            .get_or_insert_with(|| format!("fill timed out after {done} of {n} znodes"));
    }
    let mut report = RunReport::new(&shape(args, "fill"), &tally, elapsed).with_client_cpu(cpu);
    report.fill = Some(FillStats {
        znodes: tally.ok,
        last_path: fill_path(&dir, n - 1),
    });
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_paths_put_a_thousand_leaves_under_each_parent() {
        assert_eq!(fill_path("/r/fill", 0), "/r/fill/p00000/n000");
        assert_eq!(fill_path("/r/fill", 999), "/r/fill/p00000/n999");
        assert_eq!(fill_path("/r/fill", 1000), "/r/fill/p00001/n000");
        assert_eq!(fill_path("/r/fill", 499_999), "/r/fill/p00499/n999");
    }

    #[test]
    fn mixed_sets_exactly_one_operation_in_ten() {
        let op = KeyOp {
            keys: vec!["/k".into()],
            value: vec![],
            mix: KeyMix::Mixed,
        };
        let sets = (0..1000).filter(|&i| op.is_set(i)).count();
        assert_eq!(sets, 100);
    }

    #[test]
    fn spread_reaches_every_key_of_a_small_set() {
        let mut seen = [false; 16];
        for i in 0..1000 {
            seen[(spread(i) % 16) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
