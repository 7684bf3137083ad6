//! Crash points (feature `crash-points`, tests only): `crash_point!("name")` aborts the process
//! when the environment variable `PADDOCK_CRASH_POINT` names that point, as `name` (the first time
//! it is reached) or `name:N` (the Nth time). The abort leaves the files as a process crash would
//! at that step: written data stays in the page cache, nothing after the point happens.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The environment variable naming the point.
pub const ENV: &str = "PADDOCK_CRASH_POINT";

/// Every crash point in the crate, for tests to go through.
pub const POINTS: &[&str] = &[
    "create-synced",
    "reuse-header-synced",
    "reuse-renamed",
    "rotate-new-segment",
    "rotate-record-written",
    "rotate-checkpointed",
    "prune-first-done",
    "checkpoint-written",
    "snapshot-file-renamed",
    "snapshot-recorded",
    "install-file-written",
    "install-recorded",
];

static HITS: AtomicU64 = AtomicU64::new(0);

fn wanted() -> &'static Option<(String, u64)> {
    static WANTED: OnceLock<Option<(String, u64)>> = OnceLock::new();
    WANTED.get_or_init(|| {
        let v = std::env::var(ENV).ok()?;
        Some(match v.rsplit_once(':') {
            Some((name, n)) => (name.to_string(), n.parse().unwrap_or(1)),
            None => (v, 1),
        })
    })
}

/// Aborts if `name` is the point asked for and this is the time.
pub fn hit(name: &str) {
    let Some((want, nth)) = wanted() else { return };
    if want == name && HITS.fetch_add(1, Ordering::SeqCst) + 1 == *nth {
        eprintln!("crash point {name}");
        std::process::abort();
    }
}
