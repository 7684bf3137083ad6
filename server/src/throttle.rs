//! `globalOutstandingLimit`: how many client requests the server holds at once.
//!
//! Without a bound, one client pipelining large writes faster than the disk commits them would
//! grow the server's memory without limit, at every other client's expense. ZooKeeper's rule
//! (`ZooKeeperServer.shouldThrottle`): while the server holds more requests than the limit, a
//! connection that already has a request outstanding is not read from; one with none still is,
//! so an idle client's ping or first request always gets through. TCP then pushes back on the
//! flooding client alone.
//!
//! Each admitted request carries a [`Slot`] until it is answered or dropped (a closed
//! connection, a closing session); dropping the slot frees it, whatever path the request took.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// The server-wide count, shared by every connection.
#[derive(Debug)]
pub struct Throttle {
    limit: usize,
    held: AtomicUsize,
    freed: Notify,
}

impl Throttle {
    pub fn new(limit: usize) -> Arc<Throttle> {
        Arc::new(Throttle {
            limit,
            held: AtomicUsize::new(0),
            freed: Notify::new(),
        })
    }

    /// Requests admitted and not yet answered, server-wide.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// One connection's view: its own count beside the shared one.
    pub fn for_connection(self: &Arc<Self>) -> ConnThrottle {
        ConnThrottle(Arc::new(Counts {
            shared: self.clone(),
            mine: AtomicUsize::new(0),
        }))
    }
}

/// A connection's count and the server's, behind the one `Arc` its slots share.
#[derive(Debug)]
struct Counts {
    shared: Arc<Throttle>,
    mine: AtomicUsize,
}

impl Counts {
    /// ZooKeeper's rule: below the limit, or nothing of this connection's outstanding.
    fn may_admit(&self) -> bool {
        self.mine.load(Ordering::Acquire) == 0 || self.shared.held() < self.shared.limit
    }
}

#[derive(Debug)]
pub struct ConnThrottle(Arc<Counts>);

impl ConnThrottle {
    /// Waits until this connection may hand the core another request, and counts it. The
    /// common case (below the limit) reads two counters and registers no waiter: registering
    /// takes the `Notify`'s lock, once to enable and once to drop, for every request.
    pub async fn admit(&self) -> Slot {
        let counts = &self.0;
        while !counts.may_admit() {
            // Registered before the second check, so a slot freed in between still wakes us.
            let freed = counts.shared.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if counts.may_admit() {
                break;
            }
            freed.await;
        }
        counts.mine.fetch_add(1, Ordering::AcqRel);
        counts.shared.held.fetch_add(1, Ordering::AcqRel);
        Slot(counts.clone())
    }
}

/// One admitted request; freed when dropped.
#[derive(Debug)]
pub struct Slot(Arc<Counts>);

impl Drop for Slot {
    fn drop(&mut self) {
        let counts = &self.0;
        counts.mine.fetch_sub(1, Ordering::AcqRel);
        let before = counts.shared.held.fetch_sub(1, Ordering::AcqRel);
        // Readers wait only while the count is at the limit or above, so only a slot freed
        // from there can be the one they wait for.
        if before >= counts.shared.limit {
            counts.shared.freed.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_connection_with_requests_out_waits_at_the_limit_and_an_idle_one_does_not() {
        let t = Throttle::new(2);
        let (a, b) = (t.for_connection(), t.for_connection());
        let a1 = a.admit().await;
        let a2 = a.admit().await;
        assert_eq!(t.held(), 2);
        // a has requests out and the server is full: a waits.
        let waiting = tokio::time::timeout(Duration::from_millis(50), a.admit()).await;
        assert!(waiting.is_err(), "admitted past the limit");
        // b has none: its one request goes through, over the limit.
        let b1 = b.admit().await;
        assert_eq!(t.held(), 3);
        let blocked = tokio::spawn(async move { a.admit().await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!blocked.is_finished());
        drop(b1);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!blocked.is_finished(), "still at the limit (a holds 2)");
        drop(a1);
        let a3 = tokio::time::timeout(Duration::from_secs(5), blocked)
            .await
            .expect("woken when a slot was freed")
            .unwrap();
        assert_eq!(t.held(), 2);
        drop((a2, a3));
        assert_eq!(t.held(), 0);
    }

    #[tokio::test]
    async fn a_zero_limit_admits_one_request_per_connection_at_a_time() {
        let t = Throttle::new(0);
        let a = t.for_connection();
        let a1 = a.admit().await;
        assert!(tokio::time::timeout(Duration::from_millis(50), a.admit())
            .await
            .is_err());
        drop(a1);
        let _a2 = a.admit().await;
        assert_eq!(t.held(), 1);
    }
}
