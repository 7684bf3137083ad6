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
