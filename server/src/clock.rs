//! The wall clock in milliseconds since the epoch: the time stamped into entries, session ids,
//! and the dates the four-letter words print. The one place the server reads it: the core
//! (`core/`) and the leader's forward-link task (`forward.rs`, which stamps forwarded entries
//! with it) both come here, so neither imports the other for it.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the epoch; 0 if the clock reads before it.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The wall clock the core reads: for the time it stamps into entries (which TTLs are measured
/// against), session ids and the dates the four-letter words print.
#[derive(Debug, Clone, Copy)]
pub enum WallClock {
    /// The system's clock (`now_ms`).
    System,
    /// Wall time that moves with the tokio runtime's clock from the moment it was made: a test
    /// that pauses and advances tokio's time moves this clock with it, so a TTL runs out on the
    /// same clock as a session (`Server::start_stepped`).
    #[cfg(feature = "testing")]
    FollowsRuntime {
        wall_ms: i64,
        at: tokio::time::Instant,
    },
}

impl WallClock {
    /// A clock that follows the runtime's (tokio's) from now on.
    #[cfg(feature = "testing")]
    pub fn following_runtime() -> WallClock {
        WallClock::FollowsRuntime {
            wall_ms: now_ms(),
            at: tokio::time::Instant::now(),
        }
    }

    /// Milliseconds since the epoch.
    pub fn now_ms(&self) -> i64 {
        match self {
            WallClock::System => now_ms(),
            #[cfg(feature = "testing")]
            WallClock::FollowsRuntime { wall_ms, at } => wall_ms + at.elapsed().as_millis() as i64,
        }
    }
}
