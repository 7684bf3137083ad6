//! Counters behind `srvr`, `stat`, `cons` and `mntr`: request latency, packets, per
//! connection activity. Reset by `srst` and `crst`.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use tokio::time::Instant;
use wire::OpCode;

use crate::fourlw::LatencyStats;

#[derive(Debug, Clone, Default)]
pub struct ServerStats {
    pub packets_received: u64,
    pub packets_sent: u64,
    pub latency: LatencyStats,
    pub auth_failed: u64,
}

/// The client ports' accept counters, kept by the accept loops and the TLS handshakes
/// (`client_tls.rs`) and read by the views. Never reset, as ZooKeeper's are not by `srst`.
#[derive(Debug, Default)]
pub struct ClientPortCounters {
    /// Connections served in plaintext (four-letter words included), on either kind of port.
    pub accepted_plaintext: AtomicU64,
    /// TLS handshakes completed.
    pub accepted_tls: AtomicU64,
    /// TLS handshakes that failed, timed out or whose client certificate was refused after
    /// them; ZooKeeper counts these in `auth_failed_count`.
    pub tls_refused: AtomicU64,
    /// ZooKeeper's `non_mtls_local_conn_count` and `non_mtls_remote_conn_count`: connections
    /// accepted on the plaintext client port by the Netty factory (before a unified port knows
    /// whether they speak TLS, as ZooKeeper counts them), from a loopback address or not.
    pub non_mtls_local: AtomicU64,
    pub non_mtls_remote: AtomicU64,
    /// ZooKeeper's `bytes_received_count`: four bytes of length and the frame, for every frame
    /// read from a client (the ConnectRequest included), and four for a four-letter word.
    pub bytes_received: AtomicU64,
    /// ZooKeeper's `connection_request_count`: ConnectRequests read whole, whether the core then
    /// opens a session for them or refuses them (no leader, a later zxid than this server's).
    pub connection_requests: AtomicU64,
}

impl ClientPortCounters {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// Sizes of the replies and notifications sent to clients (the frame without its length
/// prefix), as ZooKeeper's `BufferStats` keeps them for mntr: -1 until the first one and after
/// `srst`. Shared by the connection writers, which know the encoded size, and the core.
#[derive(Debug)]
pub struct ResponseSizes {
    last: AtomicI64,
    min: AtomicI64,
    max: AtomicI64,
}

impl Default for ResponseSizes {
    fn default() -> Self {
        ResponseSizes {
            last: AtomicI64::new(-1),
            min: AtomicI64::new(-1),
            max: AtomicI64::new(-1),
        }
    }
}

impl ResponseSizes {
    pub fn record(&self, size: i64) {
        self.last.store(size, Ordering::Relaxed);
        let _ = self
            .min
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |m| {
                (m == -1 || size < m).then_some(size)
            });
        // A locked instruction only when the maximum moves (once per reply before).
        if size > self.max.load(Ordering::Relaxed) {
            self.max.fetch_max(size, Ordering::Relaxed);
        }
    }

    pub fn reset(&self) {
        for v in [&self.last, &self.min, &self.max] {
            v.store(-1, Ordering::Relaxed);
        }
    }

    /// (last, min, max)
    pub fn get(&self) -> (i64, i64, i64) {
        (
            self.last.load(Ordering::Relaxed),
            self.min.load(Ordering::Relaxed),
            self.max.load(Ordering::Relaxed),
        )
    }
}

impl ServerStats {
    pub fn record_latency(&mut self, ms: u64) {
        self.latency.add(ms);
    }

    pub fn reset(&mut self) {
        *self = ServerStats::default();
    }
}

#[derive(Debug, Clone)]
pub struct ConnStats {
    pub established: Instant,
    pub received: u64,
    pub sent: u64,
    pub last_op: OpCode,
    pub last_cxid: i32,
    pub last_zxid: i64,
    pub last_response: Option<Instant>,
    pub last_latency_ms: u64,
    pub latency: LatencyStats,
}

impl ConnStats {
    pub fn new(now: Instant) -> ConnStats {
        ConnStats {
            established: now,
            received: 0,
            sent: 0,
            last_op: OpCode::Notification,
            last_cxid: 0,
            last_zxid: 0,
            last_response: None,
            last_latency_ms: 0,
            latency: LatencyStats::default(),
        }
    }

    /// A reply answered at `at`, `ms` after its request was read.
    pub fn record_latency(&mut self, ms: u64, at: Instant) {
        self.latency.add(ms);
        self.last_latency_ms = ms;
        self.last_response = Some(at);
    }

    pub fn reset(&mut self) {
        self.received = 0;
        self.sent = 0;
        self.latency = LatencyStats::default();
        self.last_response = None;
    }
}
