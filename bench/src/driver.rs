//! Sessions and the closed loop every throughput workload runs in.
//!
//! Each client is its own ZooKeeper session; each session carries `inflight` worker tasks that
//! share it, so up to `clients * inflight` requests are outstanding at once and each session's
//! requests are pipelined on one connection, as a real application would use it. A worker
//! claims an operation index from the shared [`Budget`], runs it, and records its latency; the
//! run ends when the budget's count or deadline is spent, so it always stops by itself.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::Context;
use recipes::secure::Security;
use zookeeper_client::{Acls, Client, CreateMode, CreateOptions, Error as ZkError};

use crate::report::Tally;

pub const PERSISTENT: CreateOptions<'static> = CreateMode::Persistent.with_acls(Acls::anyone_all());

/// How many requests setup and cleanup keep outstanding on their one session.
const SETUP_WINDOW: usize = 512;

/// The TLS files of --tls-ca/--tls-cert/--tls-key, loaded once by `main` before any session;
/// without them every session is plaintext.
static SECURITY: OnceLock<Security> = OnceLock::new();

pub fn set_security(security: Security) {
    // main sets it once, before the first connect.
    let _ = SECURITY.set(security);
}

pub async fn connect(hosts: &str, session_timeout: Duration) -> anyhow::Result<Client> {
    let connector = Client::connector()
        .with_session_timeout(session_timeout)
        .with_fail_eagerly();
    match SECURITY.get() {
        Some(security) => security.connect(connector, hosts).await,
        None => connector.connect(hosts).await,
    }
    .with_context(|| format!("connecting to {hosts}"))
}

/// `n` sessions. With `spread`, session i connects to the i-th host of the list alone (round
/// robin), so the load is spread evenly over an ensemble's members; without it, every session
/// gets the whole list and the client library picks a host at random.
pub async fn connect_many(
    hosts: &str,
    n: usize,
    session_timeout: Duration,
    spread: bool,
) -> anyhow::Result<Vec<Client>> {
    let list: Vec<&str> = hosts.split(',').collect();
    let mut clients = Vec::with_capacity(n);
    for i in 0..n {
        let target = if spread { list[i % list.len()] } else { hosts };
        clients.push(connect(target, session_timeout).await?);
    }
    Ok(clients)
}

/// The shared allowance of operations: at most `limit` of them, none started after `deadline`.
pub struct Budget {
    issued: AtomicU64,
    limit: u64,
    deadline: Instant,
}

impl Budget {
    pub fn new(limit: u64, duration: Duration) -> Self {
        Self {
            issued: AtomicU64::new(0),
            limit,
            deadline: Instant::now() + duration,
        }
    }

    /// The next operation index, or `None` once the run is over.
    pub fn claim(&self) -> Option<u64> {
        if Instant::now() >= self.deadline {
            return None;
        }
        let i = self.issued.fetch_add(1, Ordering::Relaxed);
        (i < self.limit).then_some(i)
    }
}

/// One kind of request a worker repeats. `i` is the operation's index in the run, from which
/// the operation picks its path, so runs are repeatable and workers never collide.
pub trait Operation: Send + Sync + 'static {
    fn run<'a>(
        &'a self,
        client: &'a Client,
        i: u64,
    ) -> impl Future<Output = Result<(), String>> + Send + 'a;
}

/// This process's CPU time so far (user and system, every thread, the exited ones too), from
/// `/proc/self/stat`, in the kernel's 10 ms ticks; `None` where there is no such file.
///
/// Why: on two cores the load generator has one core of its own, and a workload the server
/// answers cheaply (gets) can saturate it, so that the generator, not the server, sets the
/// pace. Its CPU over a run, beside the server's, shows which one did (`compare.sh`'s "load
/// generator busy" rows).
pub fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name, in parentheses, may hold spaces: count the fields after its end.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // Fields 14 and 15 of proc(5) (utime, stime); the rest starts at field 3.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    // USER_HZ: 100 on every Linux architecture paddock builds for.
    Some(Duration::from_millis((utime + stime) * 10))
}

/// The CPU this process spent since `before` (`process_cpu`).
pub fn cpu_since(before: Option<Duration>) -> Option<Duration> {
    Some(process_cpu()?.saturating_sub(before?))
}

/// Runs `op` from every worker of every session until `budget` is spent. Returns the merged
/// tally, the wall time from the first claim to the last reply, and this process's CPU time
/// over it (`process_cpu`).
pub async fn closed_loop<O: Operation>(
    clients: &[Client],
    inflight: usize,
    slow_us: u64,
    budget: Arc<Budget>,
    op: Arc<O>,
) -> anyhow::Result<(Tally, Duration, Option<Duration>)> {
    let cpu_before = process_cpu();
    let started = Instant::now();
    let mut workers = Vec::with_capacity(clients.len() * inflight.max(1));
    for client in clients {
        for _ in 0..inflight.max(1) {
            let client = client.clone();
            let budget = budget.clone();
            let op = op.clone();
            workers.push(spawns::spawn(async move {
                let mut tally = Tally::recording_slow(slow_us);
                while let Some(i) = budget.claim() {
                    let t0 = Instant::now();
                    match op.run(&client, i).await {
                        Ok(()) => tally.record_ok(t0.elapsed()),
                        Err(e) => tally.record_error(e),
                    }
                }
                tally
            }));
        }
    }
    let mut total = Tally::recording_slow(slow_us);
    for worker in workers {
        total.merge(
            worker
                .await
                .map_err(|e| anyhow::anyhow!("benchmark worker failed: {e:?}"))?,
        );
    }
    Ok((total, started.elapsed(), cpu_since(cpu_before)))
}

/// Creates every path in order with pipelined requests; paths that already exist are fine, so
/// a rerun against a kept root does not fail.
pub async fn create_all(client: &Client, paths: &[String], data: &[u8]) -> anyhow::Result<()> {
    for window in paths.chunks(SETUP_WINDOW) {
        // The client sends a request when its future is made, so building the whole window
        // first and then awaiting in order keeps the window in flight.
        let pending: Vec<_> = window
            .iter()
            .map(|p| client.create(p, data, &PERSISTENT))
            .collect();
        for (path, reply) in window.iter().zip(pending) {
            match reply.await {
                Ok(_) | Err(ZkError::NodeExists) => {}
                Err(e) => anyhow::bail!("creating {path}: {e}"),
            }
        }
    }
    Ok(())
}

/// Brings every client's server up to date with the leader as of now (ZooKeeper's `sync`), so
/// a session on a follower sees what the set-up session just created. Without it, a read through
/// a lagging follower of an ensemble (`--spread`) may find a prepared key missing, which is
/// ZooKeeper's ordinary consistency for another session, not a server fault.
pub async fn sync_all(clients: &[Client], path: &str) -> anyhow::Result<()> {
    let pending: Vec<_> = clients.iter().map(|c| c.sync(path)).collect();
    for reply in pending {
        reply.await.with_context(|| format!("sync {path}"))?;
    }
    Ok(())
}

/// Creates `path` and its missing ancestors.
pub async fn ensure_path(client: &Client, path: &str) -> anyhow::Result<()> {
    match client.mkdir(path, &PERSISTENT).await {
        Ok(()) | Err(ZkError::NodeExists) => Ok(()),
        Err(e) => Err(e).with_context(|| format!("creating {path}")),
    }
}

/// Deletes `root` and everything under it; returns how many znodes went. Walks the tree level
/// by level, then deletes the deepest level first, each level with pipelined requests.
pub async fn delete_tree(client: &Client, root: &str) -> anyhow::Result<u64> {
    let mut levels: Vec<Vec<String>> = vec![vec![root.to_string()]];
    loop {
        let parents = levels.last().expect("levels starts non-empty");
        let mut next = Vec::new();
        for window in parents.chunks(SETUP_WINDOW) {
            let pending: Vec<_> = window.iter().map(|p| client.list_children(p)).collect();
            for (parent, reply) in window.iter().zip(pending) {
                match reply.await {
                    Ok(children) => {
                        let base = if parent == "/" { "" } else { parent.as_str() };
                        next.extend(children.into_iter().map(|c| format!("{base}/{c}")));
                    }
                    // Gone already (an ephemeral whose session closed): nothing below it either.
                    Err(ZkError::NoNode) => {}
                    Err(e) => anyhow::bail!("listing {parent}: {e}"),
                }
            }
        }
        if next.is_empty() {
            break;
        }
        levels.push(next);
    }
    let mut deleted = 0;
    for level in levels.iter().rev() {
        for window in level.chunks(SETUP_WINDOW) {
            let pending: Vec<_> = window.iter().map(|p| client.delete(p, None)).collect();
            for (path, reply) in window.iter().zip(pending) {
                match reply.await {
                    Ok(()) => deleted += 1,
                    Err(ZkError::NoNode) => {}
                    Err(e) => anyhow::bail!("deleting {path}: {e}"),
                }
            }
        }
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_hands_out_exactly_limit_indices_in_order() {
        let b = Budget::new(3, Duration::from_secs(60));
        let got: Vec<_> = std::iter::from_fn(|| b.claim()).collect();
        assert_eq!(got, vec![0, 1, 2]);
        assert_eq!(b.claim(), None);
    }

    #[test]
    fn budget_past_its_deadline_hands_out_nothing() {
        let b = Budget::new(u64::MAX, Duration::ZERO);
        assert_eq!(b.claim(), None);
    }

    /// This thread's own time on a CPU, from the scheduler (`/proc/thread-self/schedstat`, in ns):
    /// a second source to check `process_cpu` against.
    fn thread_on_cpu() -> Duration {
        let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
        Duration::from_nanos(s.split_whitespace().next().unwrap().parse().unwrap())
    }

    /// 150 ms of this thread on a CPU (by the scheduler's count, so a busy machine only makes it
    /// take longer) shows in `process_cpu` as at least 100 ms (10 ms ticks), and not as more than
    /// two CPUs for the whole wall time it took (seconds read as ticks would be ten times that).
    #[test]
    fn process_cpu_counts_this_process_spinning() {
        let before = process_cpu();
        assert!(before.is_some(), "/proc/self/stat reads on Linux");
        let started = Instant::now();
        let on_cpu = thread_on_cpu();
        let mut x = 0u64;
        while thread_on_cpu() - on_cpu < Duration::from_millis(150) {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        let wall = started.elapsed();
        let spent = cpu_since(before).unwrap();
        assert!(
            spent >= Duration::from_millis(100),
            "{spent:?} over {wall:?}"
        );
        assert!(
            spent <= wall * 2 + Duration::from_millis(100),
            "{spent:?} over {wall:?}"
        );
    }
}
