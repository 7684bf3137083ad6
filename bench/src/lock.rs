//! Lock hand-off: K contenders pass one lock around with ZooKeeper's ephemeral-sequential
//! recipe, and every hand-off proves exclusion twice.
//!
//! ```text
//!  contender: create  <dir>/c-<seq>  (EPHEMERAL_SEQUENTIAL)
//!        +--> getChildren <dir>; lowest is mine? --yes--> hold --> delete mine --> again
//!        |                          | no
//!        +---- deleted <---- exists-watch my predecessor
//! ```
//!
//! While holding, a contender (1) swaps an in-process "holder" slot from free to itself, which
//! fails if any other contender of this process believes it holds the lock, and (2) sets the
//! shared holder znode with the expected version, which is the number of hand-offs so far: an
//! overlapping holder would have bumped it, and the conditional set fails with BadVersion. Each
//! failure counts as an exclusion violation; the run fails if there is any.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zookeeper_client::{Acls, Client, CreateMode, CreateOptions, Error as ZkError};

use crate::driver::{self, Budget};
use crate::executor;
use crate::report::{LockStats, RunReport, RunShape, Tally};
use crate::Args;

const EPHEMERAL_SEQUENTIAL: CreateOptions<'static> =
    CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());

/// A waiter re-reads the queue if its predecessor's deletion has not been seen by then. It is a
/// safety net against a lost notification, not part of the recipe: a correct server never
/// needs it, and each use is counted in the report.
const WATCH_SAFETY: Duration = Duration::from_secs(5);

/// No contender id is zero, so zero marks the in-process holder slot as free.
const FREE: u64 = 0;

struct Shared {
    budget: Budget,
    dir: String,
    holder_path: String,
    holder: AtomicU64,
    handoffs: AtomicU64,
    violations: AtomicU64,
    watch_timeouts: AtomicU64,
}

/// The position of `me` in the queue, and the queue entry just before it. Names share the
/// `c-` prefix and a fixed-width sequence, so string order is sequence order.
fn predecessor<'a>(children: &'a mut [String], me: &str) -> Result<Option<&'a str>, String> {
    children.sort_unstable();
    match children.iter().position(|c| c == me) {
        None => Err(format!("own lock node {me} is missing from the queue")),
        Some(0) => Ok(None),
        Some(i) => Ok(Some(children[i - 1].as_str())),
    }
}

/// Joins the queue and returns once this contender holds the lock, with its node's path.
async fn acquire(client: &Client, shared: &Shared) -> Result<String, String> {
    let prefix = format!("{}/c-", shared.dir);
    let (_, seq) = client
        .create(&prefix, b"", &EPHEMERAL_SEQUENTIAL)
        .await
        .map_err(|e| format!("create {prefix}: {e}"))?;
    let me = format!("c-{seq}");
    loop {
        let mut children = client
            .list_children(&shared.dir)
            .await
            .map_err(|e| format!("getChildren: {e}"))?;
        let Some(pred) = predecessor(&mut children, &me)? else {
            return Ok(format!("{}/{me}", shared.dir));
        };
        let pred = format!("{}/{pred}", shared.dir);
        let (stat, watcher) = client
            .check_and_watch_stat(&pred)
            .await
            .map_err(|e| format!("exists {pred}: {e}"))?;
        if stat.is_some()
            && executor::timeout(WATCH_SAFETY, watcher.changed())
                .await
                .is_none()
        {
            shared.watch_timeouts.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The critical section: both exclusion checks, then release.
async fn hold_and_release(
    client: &Client,
    shared: &Shared,
    id: u64,
    mine: &str,
) -> Result<(), String> {
    if shared
        .holder
        .compare_exchange(FREE, id, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        shared.violations.fetch_add(1, Ordering::SeqCst);
    }
    // Every earlier holder bumped the holder znode's version once, so it equals the hand-off
    // count. (After a violation the two drift apart and later checks fail too; the run is
    // already failed by then.)
    let expected = shared.handoffs.load(Ordering::SeqCst) as i32;
    match client
        .set_data(&shared.holder_path, &id.to_be_bytes(), Some(expected))
        .await
    {
        Ok(stat) if stat.version == expected + 1 => {}
        Ok(_) | Err(ZkError::BadVersion) => {
            shared.violations.fetch_add(1, Ordering::SeqCst);
        }
        Err(e) => return Err(format!("set {}: {e}", shared.holder_path)),
    }
    shared.handoffs.fetch_add(1, Ordering::SeqCst);
    let _ = shared
        .holder
        .compare_exchange(id, FREE, Ordering::SeqCst, Ordering::SeqCst);
    client
        .delete(mine, None)
        .await
        .map_err(|e| format!("delete {mine}: {e}"))
}

async fn contender(client: Client, shared: Arc<Shared>, id: u64) -> Tally {
    let mut tally = Tally::new();
    while shared.budget.claim().is_some() {
        let t0 = Instant::now();
        let mine = match acquire(&client, &shared).await {
            Ok(mine) => mine,
            Err(e) => {
                // Stop here: dropping the session removes our queue node, so the others go on.
                tally.record_error(e);
                break;
            }
        };
        tally.record_ok(t0.elapsed());
        if let Err(e) = hold_and_release(&client, &shared, id, &mine).await {
            tally.record_error(e);
            break;
        }
    }
    tally
}

pub async fn run_lock(args: &Args, root: &str, setup: &Client) -> anyhow::Result<RunReport> {
    let dir = format!("{root}/lock");
    let holder_path = format!("{root}/lock-holder");
    driver::ensure_path(setup, &dir).await?;
    driver::ensure_path(setup, &holder_path).await?;
    // A kept root may hold an older run's holder version; start the count from it.
    let (_, stat) = setup.get_data(&holder_path).await?;
    let k = args.contenders.max(1);
    let clients = driver::connect_many(&args.hosts, k, args.session_timeout(), args.spread).await?;
    let limit = if args.ops == 0 { u64::MAX } else { args.ops };
    let shared = Arc::new(Shared {
        budget: Budget::new(limit, Duration::from_secs(args.duration_secs)),
        dir,
        holder_path,
        holder: AtomicU64::new(FREE),
        handoffs: AtomicU64::new(stat.version as u64),
        violations: AtomicU64::new(0),
        watch_timeouts: AtomicU64::new(0),
    });
    let cpu_before = driver::process_cpu();
    let started = Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, client)| spawns::spawn(contender(client, shared.clone(), i as u64 + 1)))
        .collect();
    let mut tally = Tally::new();
    for task in tasks {
        tally.merge(
            task.await
                .map_err(|e| anyhow::anyhow!("lock contender failed: {e:?}"))?,
        );
    }
    let elapsed = started.elapsed();
    let shape = RunShape {
        workload: "lock",
        label: &args.label,
        hosts: &args.hosts,
        clients: k,
        inflight: 1,
        value_size: 8,
    };
    let mut report =
        RunReport::new(&shape, &tally, elapsed).with_client_cpu(driver::cpu_since(cpu_before));
    let handoffs = shared.handoffs.load(Ordering::SeqCst) - stat.version as u64;
    report.lock = Some(LockStats {
        contenders: k,
        handoffs,
        handoffs_per_sec: (handoffs as f64 / elapsed.as_secs_f64()).round(),
        exclusion_violations: shared.violations.load(Ordering::SeqCst),
        watch_timeouts: shared.watch_timeouts.load(Ordering::SeqCst),
    });
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn lowest_sequence_holds_the_lock() {
        let mut c = names(&["c-0000000007", "c-0000000003", "c-0000000005"]);
        assert_eq!(predecessor(&mut c, "c-0000000003"), Ok(None));
    }

    #[test]
    fn a_waiter_watches_the_node_just_before_it() {
        let mut c = names(&["c-0000000007", "c-0000000003", "c-0000000005"]);
        assert_eq!(
            predecessor(&mut c, "c-0000000007"),
            Ok(Some("c-0000000005"))
        );
    }

    #[test]
    fn a_missing_own_node_is_an_error() {
        let mut c = names(&["c-0000000003"]);
        assert!(predecessor(&mut c, "c-0000000004").is_err());
    }
}
