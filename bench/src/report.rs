//! What a workload run measured, and how it is printed: one JSON object per run for scripts, and a
//! short text block on stderr for people.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use serde::Serialize;

/// Highest latency the histograms track, in microseconds. Anything slower is clamped here: a
/// 60 s operation has already failed the benchmark, its exact length no longer matters.
const MAX_TRACKED_US: u64 = 60_000_000;

/// Per-worker tally. Each worker owns one so the hot path takes no lock; the driver merges
/// them when the run is over.
pub struct Tally {
    pub latency: Histogram<u64>,
    pub ok: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    /// Operations at least `slow_us` long: when each ended (seconds since the Unix epoch) and how
    /// long it took (microseconds), so a script can tell which of them overlapped an event it
    /// knows the time of (a snapshot). Off (0) unless `--slow-us` asks.
    pub slow: Vec<(f64, u64)>,
    slow_us: u64,
}

/// Slow operations kept per run at most: a run that has more has no single stall to find.
const MAX_SLOW: usize = 100_000;

impl Tally {
    pub fn new() -> Self {
        Self {
            // Three significant figures keep the histogram at a few tens of KiB per worker.
            latency: Histogram::new_with_bounds(1, MAX_TRACKED_US, 3)
                .expect("static histogram bounds are valid"),
            ok: 0,
            errors: 0,
            first_error: None,
            slow: Vec::new(),
            slow_us: 0,
        }
    }

    /// A tally that also lists every operation of at least `slow_us` microseconds (0: none).
    pub fn recording_slow(slow_us: u64) -> Self {
        Self {
            slow_us,
            ..Self::new()
        }
    }

    pub fn record_ok(&mut self, elapsed: Duration) {
        self.ok += 1;
        let us = u64::try_from(elapsed.as_micros())
            .unwrap_or(u64::MAX)
            .clamp(1, MAX_TRACKED_US);
        self.latency.saturating_record(us);
        if self.slow_us > 0 && us >= self.slow_us && self.slow.len() < MAX_SLOW {
            let ended = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64());
            self.slow.push((ended, us));
        }
    }

    pub fn record_error(&mut self, what: impl std::fmt::Display) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(what.to_string());
        }
    }

    pub fn merge(&mut self, other: Tally) {
        // Both histograms share bounds, so `add` cannot fail for range reasons.
        let _ = self.latency.add(&other.latency);
        self.ok += other.ok;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        let room = MAX_SLOW.saturating_sub(self.slow.len());
        self.slow.extend(other.slow.into_iter().take(room));
    }
}

impl Default for Tally {
    fn default() -> Self {
        Self::new()
    }
}

/// Latency percentiles in microseconds, over successful operations only.
#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub mean: f64,
}

impl Latency {
    fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self {
                p50: 0,
                p90: 0,
                p99: 0,
                p999: 0,
                max: 0,
                mean: 0.0,
            };
        }
        Self {
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            mean: (h.mean() * 10.0).round() / 10.0,
        }
    }
}

/// Numbers only the lock workload has.
#[derive(Debug, Clone, Serialize)]
pub struct LockStats {
    pub contenders: usize,
    pub handoffs: u64,
    pub handoffs_per_sec: f64,
    /// Times a contender believed it held the lock while another did; must be zero.
    pub exclusion_violations: u64,
    /// Waits on a predecessor that outlived the safety timeout and were re-checked.
    pub watch_timeouts: u64,
}

/// Numbers only the fill workload has.
#[derive(Debug, Clone, Serialize)]
pub struct FillStats {
    pub znodes: u64,
    /// The znode created last in index order; the restart probe reads it to prove the whole
    /// tree is back.
    pub last_path: String,
}

/// Numbers only the failover workload has.
#[derive(Debug, Clone, Serialize)]
pub struct FailoverStats {
    /// KILL or STOP.
    pub signal: String,
    pub pid: u32,
    /// From just before the signal was sent until /proc showed it had taken effect.
    pub signal_effective_ms: f64,
    /// From just before the signal was sent to the first acknowledged write issued after it
    /// took effect; None when none was acknowledged within the run's time bound.
    pub failover_ms: Option<f64>,
    pub acked_before_signal: u64,
    pub reconnects: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub workload: String,
    pub label: String,
    pub hosts: String,
    pub clients: usize,
    pub inflight: usize,
    pub value_size: usize,
    pub elapsed_secs: f64,
    pub count: u64,
    pub errors: u64,
    pub ops_per_sec: f64,
    pub latency_us: Latency,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock: Option<LockStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fill: Option<FillStats>,
    /// Milliseconds until the probed znode was readable (probe workload only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failover: Option<FailoverStats>,
    /// With `--slow-us`: every operation at least that long, as [ended (Unix seconds), us],
    /// in the order they ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow_ops: Option<Vec<(f64, u64)>>,
    /// This load generator's own CPU seconds over the run (every thread; 10 ms resolution),
    /// where the system tells it (`driver::process_cpu`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_cpu_secs: Option<f64>,
}

/// The run-wide facts a report is built from besides the tally.
pub struct RunShape<'a> {
    pub workload: &'a str,
    pub label: &'a str,
    pub hosts: &'a str,
    pub clients: usize,
    pub inflight: usize,
    pub value_size: usize,
}

impl RunReport {
    pub fn new(shape: &RunShape<'_>, tally: &Tally, elapsed: Duration) -> Self {
        let secs = elapsed.as_secs_f64();
        let ops_per_sec = if secs > 0.0 {
            tally.ok as f64 / secs
        } else {
            0.0
        };
        Self {
            workload: shape.workload.to_string(),
            label: shape.label.to_string(),
            hosts: shape.hosts.to_string(),
            clients: shape.clients,
            inflight: shape.inflight,
            value_size: shape.value_size,
            elapsed_secs: (secs * 1000.0).round() / 1000.0,
            count: tally.ok,
            errors: tally.errors,
            ops_per_sec: ops_per_sec.round(),
            latency_us: Latency::from_histogram(&tally.latency),
            first_error: tally.first_error.clone(),
            lock: None,
            fill: None,
            ready_ms: None,
            failover: None,
            slow_ops: (tally.slow_us > 0).then(|| {
                let mut slow = tally.slow.clone();
                slow.sort_by(|a, b| a.0.total_cmp(&b.0));
                slow
            }),
            client_cpu_secs: None,
        }
    }

    /// With the generator's CPU over the run (`driver::process_cpu`).
    pub fn with_client_cpu(mut self, cpu: Option<Duration>) -> Self {
        self.client_cpu_secs = cpu.map(|d| (d.as_secs_f64() * 100.0).round() / 100.0);
        self
    }

    /// The correctness failures that must turn the run's exit code to 1.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.errors > 0 {
            out.push(format!(
                "{}: {} operations failed (first: {})",
                self.workload,
                self.errors,
                self.first_error.as_deref().unwrap_or("?")
            ));
        }
        if let Some(lock) = &self.lock {
            if lock.exclusion_violations > 0 {
                out.push(format!(
                    "lock: {} mutual-exclusion violations",
                    lock.exclusion_violations
                ));
            }
        }
        out
    }

    /// Human-readable summary for stderr.
    pub fn text(&self) -> String {
        let l = &self.latency_us;
        let mut s = format!(
            "[{}] {} on {}: {} ops in {:.2}s = {:.0} ops/s, {} errors\n  latency us: p50 {} p90 {} p99 {} p999 {} max {} mean {:.1}\n",
            self.label,
            self.workload,
            self.hosts,
            self.count,
            self.elapsed_secs,
            self.ops_per_sec,
            self.errors,
            l.p50,
            l.p90,
            l.p99,
            l.p999,
            l.max,
            l.mean
        );
        if let Some(lock) = &self.lock {
            s.push_str(&format!(
                "  lock: {} contenders, {} hand-offs = {:.0}/s, {} exclusion violations, {} watch timeouts\n",
                lock.contenders, lock.handoffs, lock.handoffs_per_sec, lock.exclusion_violations, lock.watch_timeouts
            ));
        }
        if let Some(fill) = &self.fill {
            s.push_str(&format!(
                "  fill: {} znodes, last {}\n",
                fill.znodes, fill.last_path
            ));
        }
        if let Some(ms) = self.ready_ms {
            s.push_str(&format!("  probe: readable after {ms} ms\n"));
        }
        if let Some(f) = &self.failover {
            let ms = f
                .failover_ms
                .map_or("none".to_string(), |ms| format!("{ms:.1} ms"));
            s.push_str(&format!(
                "  failover: SIG{} to pid {} (in effect after {:.1} ms), first acknowledged write after {ms}, {} reconnects\n",
                f.signal, f.pid, f.signal_effective_ms, f.reconnects
            ));
        }
        if let Some(e) = &self.first_error {
            s.push_str(&format!("  first error: {e}\n"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_tallies_add_counts_and_keep_the_first_error() {
        let mut a = Tally::new();
        a.record_ok(Duration::from_micros(100));
        let mut b = Tally::new();
        b.record_ok(Duration::from_micros(300));
        b.record_error("NoNode");
        b.record_error("BadVersion");
        a.merge(b);
        assert_eq!((a.ok, a.errors), (2, 2));
        assert_eq!(a.first_error.as_deref(), Some("NoNode"));
        assert_eq!(a.latency.len(), 2);
        assert_eq!(a.latency.max(), a.latency.highest_equivalent(300));
    }

    #[test]
    fn only_operations_at_the_threshold_or_longer_are_listed_in_end_order() {
        let shape = RunShape {
            workload: "get",
            label: "x",
            hosts: "h",
            clients: 1,
            inflight: 1,
            value_size: 0,
        };
        let mut a = Tally::recording_slow(1000);
        a.record_ok(Duration::from_micros(999));
        a.record_ok(Duration::from_micros(1000));
        let mut b = Tally::recording_slow(1000);
        b.record_ok(Duration::from_millis(12));
        b.record_ok(Duration::from_micros(10));
        // b's slow operation ended after a's; merging b's list first must not change the order.
        b.merge(a);
        assert_eq!(b.slow.len(), 2);
        let report = RunReport::new(&shape, &b, Duration::from_secs(1));
        let slow = report.slow_ops.expect("listed when asked for");
        assert_eq!(
            slow.iter().map(|s| s.1).collect::<Vec<_>>(),
            vec![1000, 12_000]
        );
        assert!(slow[0].0 <= slow[1].0 && slow[0].0 > 1.7e9);
        // Not asked for: no list at all in the JSON.
        let mut plain = Tally::new();
        plain.record_ok(Duration::from_secs(1));
        assert!(RunReport::new(&shape, &plain, Duration::from_secs(1))
            .slow_ops
            .is_none());
    }

    #[test]
    fn errors_and_exclusion_violations_are_failures() {
        let shape = RunShape {
            workload: "lock",
            label: "x",
            hosts: "h",
            clients: 1,
            inflight: 1,
            value_size: 0,
        };
        let mut tally = Tally::new();
        tally.record_ok(Duration::from_millis(1));
        let mut report = RunReport::new(&shape, &tally, Duration::from_secs(1));
        assert!(report.failures().is_empty());
        report.lock = Some(LockStats {
            contenders: 2,
            handoffs: 1,
            handoffs_per_sec: 1.0,
            exclusion_violations: 1,
            watch_timeouts: 0,
        });
        assert_eq!(
            report.failures(),
            vec!["lock: 1 mutual-exclusion violations".to_string()]
        );
    }

    #[test]
    fn sub_microsecond_latencies_count_as_one_microsecond() {
        let mut t = Tally::new();
        t.record_ok(Duration::from_nanos(10));
        assert_eq!(t.latency.min(), 1);
        let l = Latency::from_histogram(&t.latency);
        assert_eq!(l.p50, 1);
    }
}
