//! Counters behind `srvr`, `stat`, `cons` and `mntr`: request latency, packets, per
//! connection activity. Reset by `srst` and `crst`.

use tokio::time::Instant;
use wire::OpCode;

use crate::fourlw::LatencyStats;

#[derive(Debug, Clone)]
pub struct ServerStats {
    pub packets_received: u64,
    pub packets_sent: u64,
    pub latency: LatencyStats,
    pub auth_failed: u64,
    pub last_response_size: i64,
    pub min_response_size: i64,
    pub max_response_size: i64,
}

impl Default for ServerStats {
    fn default() -> Self {
        ServerStats {
            packets_received: 0,
            packets_sent: 0,
            latency: LatencyStats::default(),
            auth_failed: 0,
            last_response_size: -1,
            min_response_size: -1,
            max_response_size: -1,
        }
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

    pub fn record_latency(&mut self, ms: u64) {
        self.latency.add(ms);
        self.last_latency_ms = ms;
        self.last_response = Some(Instant::now());
    }

    pub fn reset(&mut self) {
        self.received = 0;
        self.sent = 0;
        self.latency = LatencyStats::default();
        self.last_response = None;
    }
}
