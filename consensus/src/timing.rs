//! When the raft thread made each entry durable and handed it out committed, and how long its
//! synced writes took: what the applier needs for a per-stage latency breakdown of a write
//! (`Handle::entry_times`). The raft thread reads the clock around the `Driver` (which has no
//! clock: the driver only calls `Output::persisting`/`persisted`), never inside it.
//!
//! Nothing here allocates per entry: the times sit in a fixed ring indexed by the raft index,
//! written by the raft thread only and read by the applier once the entry reached it. An entry
//! the ring has already reused (the applier more than `RING` entries behind) simply has no times.
//! [`Histogram`] is a fixed-size, lock-free log-bucket histogram (count, sum, min, max and
//! quantiles within 1/8 of the true value) shared by the raft thread and the server.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Entries whose times are kept: far more than are ever persisted but not yet applied.
const RING: usize = 8192;

/// The process-wide origin of the nanosecond stamps kept in atomics.
fn base() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

/// `at` as nanoseconds after `base()`, plus one (0 means "not stamped").
fn stamp(at: Instant) -> u64 {
    at.saturating_duration_since(base()).as_nanos() as u64 + 1
}

fn unstamp(ns: u64) -> Option<Instant> {
    (ns != 0).then(|| base() + Duration::from_nanos(ns - 1))
}

#[derive(Default)]
struct Slot {
    index: AtomicU64,
    persisted: AtomicU64,
    committed: AtomicU64,
}

/// The times of recent entries, by raft index.
pub struct EntryTimes {
    slots: Box<[Slot]>,
    /// How long each synced write that appended entries took (fsync included), microseconds.
    pub fsync: Histogram,
}

impl Default for EntryTimes {
    fn default() -> Self {
        base();
        EntryTimes {
            slots: (0..RING).map(|_| Slot::default()).collect(),
            fsync: Histogram::new(),
        }
    }
}

impl std::fmt::Debug for EntryTimes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntryTimes").finish_non_exhaustive()
    }
}

impl EntryTimes {
    fn slot(&self, index: u64) -> &Slot {
        &self.slots[(index % RING as u64) as usize]
    }

    /// Entries `first..=last` are durable on this node as of `at` (raft thread only).
    pub fn persisted(&self, first: u64, last: u64, at: Instant) {
        let ns = stamp(at);
        // Only the newest RING entries of a large append can be kept.
        for index in first.max(last.saturating_sub(RING as u64 - 1))..=last {
            let s = self.slot(index);
            s.index.store(0, Ordering::Release);
            s.persisted.store(ns, Ordering::Relaxed);
            s.committed.store(0, Ordering::Relaxed);
            s.index.store(index, Ordering::Release);
        }
    }

    /// Entry `index` was handed to the applier as committed at `at` (raft thread only).
    pub fn committed(&self, index: u64, at: Instant) {
        let s = self.slot(index);
        if s.index.load(Ordering::Acquire) == index {
            s.committed.store(stamp(at), Ordering::Release);
        }
    }

    /// When entry `index` became durable here and when it was handed out committed, if the ring
    /// still holds it.
    pub fn get(&self, index: u64) -> Option<(Instant, Option<Instant>)> {
        let s = self.slot(index);
        if s.index.load(Ordering::Acquire) != index {
            return None;
        }
        let persisted = s.persisted.load(Ordering::Acquire);
        let committed = s.committed.load(Ordering::Acquire);
        if s.index.load(Ordering::Acquire) != index {
            return None;
        }
        Some((unstamp(persisted)?, unstamp(committed)))
    }
}

/// Sub-buckets per power of two: a bucket's width is 1/8 of its lower bound.
const SUB_BITS: u32 = 3;
const SUB: usize = 1 << SUB_BITS;
/// Values up to 2^41 (in the histogram's unit): 25 days in microseconds.
const BUCKETS: usize = (42 - SUB_BITS as usize) * SUB + SUB;

/// A lock-free histogram of non-negative integer values (microseconds, milliseconds, counts:
/// the caller's unit) in log-linear buckets, HDR-style: values below 8 exactly, above that eight
/// buckets per power of two. Recording is a few relaxed atomic adds; no allocation after `new`.
pub struct Histogram {
    buckets: Box<[AtomicU64]>,
    sum: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count())
            .field("sum", &self.sum())
            .finish_non_exhaustive()
    }
}

fn bucket_of(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros(); // >= SUB_BITS
    let sub = ((v >> (msb - SUB_BITS)) as usize) & (SUB - 1);
    let b = (msb - SUB_BITS + 1) as usize * SUB + sub;
    b.min(BUCKETS - 1)
}

/// `d` in whole microseconds, the value `Histogram::record_us` records.
pub fn micros(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

/// `d` in whole milliseconds, the value `Histogram::record_ms` records.
pub fn millis(d: Duration) -> u64 {
    d.as_millis().min(u64::MAX as u128) as u64
}

/// The smallest value that falls in bucket `b`.
fn lower_bound(b: usize) -> u64 {
    if b < SUB {
        return b as u64;
    }
    let exp = (b / SUB) as u32 - 1 + SUB_BITS;
    let sub = (b % SUB) as u64;
    (1u64 << exp) + (sub << (exp - SUB_BITS))
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
        }
    }

    /// Two atomic read-modify-writes in the common case (a write is recorded about nine times):
    /// the count is the buckets' sum, read when asked for, and min and max are only written when
    /// `v` passes them. The five read-modify-writes this did before were 1.9% of the server's
    /// CPU samples under 8 sessions x 32 sets in flight (perf, 3 Dec 2026).
    pub fn record(&self, v: u64) {
        self.buckets[bucket_of(v)].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(v, Ordering::Relaxed);
        if v < self.min.load(Ordering::Relaxed) {
            self.min.fetch_min(v, Ordering::Relaxed);
        }
        if v > self.max.load(Ordering::Relaxed) {
            self.max.fetch_max(v, Ordering::Relaxed);
        }
    }

    /// Records `v` as `record` does, for a histogram that has one writer (one thread, or one
    /// task, at a time): plain loads and stores instead of locked read-modify-writes, which are
    /// what recording costs. The core records six values for every write it applies; this, with
    /// one clock read per reply instead of three, gave 1.047x the sets/s under 8 x 32 sets
    /// (bench/ab.sh, 6 pairs, 5 Dec 2026). Two writers racing here would lose counts, never
    /// memory safety; readers may see a count and a sum from different instants, as they may
    /// with `record`.
    pub fn record_sole_writer(&self, v: u64) {
        let bucket = &self.buckets[bucket_of(v)];
        bucket.store(bucket.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        self.sum.store(
            self.sum.load(Ordering::Relaxed).wrapping_add(v),
            Ordering::Relaxed,
        );
        if v < self.min.load(Ordering::Relaxed) {
            self.min.store(v, Ordering::Relaxed);
        }
        if v > self.max.load(Ordering::Relaxed) {
            self.max.store(v, Ordering::Relaxed);
        }
    }

    /// Records every value in `values` (left sorted), as many calls to `record` would, with one
    /// atomic add per distinct bucket instead of two per value: a connection's writer records
    /// the replies of one socket write together, and their times fall in a few buckets.
    pub fn record_all(&self, values: &mut [u64]) {
        values.sort_unstable();
        let (Some(&lo), Some(&hi)) = (values.first(), values.last()) else {
            return;
        };
        let mut sum = 0u64;
        let mut run = (bucket_of(lo), 0u64);
        for &v in values.iter() {
            sum = sum.wrapping_add(v);
            let b = bucket_of(v);
            if b != run.0 {
                self.buckets[run.0].fetch_add(run.1, Ordering::Relaxed);
                run = (b, 0);
            }
            run.1 += 1;
        }
        self.buckets[run.0].fetch_add(run.1, Ordering::Relaxed);
        self.sum.fetch_add(sum, Ordering::Relaxed);
        if lo < self.min.load(Ordering::Relaxed) {
            self.min.fetch_min(lo, Ordering::Relaxed);
        }
        if hi > self.max.load(Ordering::Relaxed) {
            self.max.fetch_max(hi, Ordering::Relaxed);
        }
    }

    /// Records `d` in microseconds.
    pub fn record_us(&self, d: Duration) {
        self.record(micros(d));
    }

    /// Records `d` in milliseconds.
    pub fn record_ms(&self, d: Duration) {
        self.record(millis(d));
    }

    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).sum()
    }

    pub fn sum(&self) -> u64 {
        self.sum.load(Ordering::Relaxed)
    }

    /// The smallest value recorded; 0 when none was.
    pub fn min(&self) -> u64 {
        match self.min.load(Ordering::Relaxed) {
            u64::MAX => 0,
            v => v,
        }
    }

    pub fn max(&self) -> u64 {
        self.max.load(Ordering::Relaxed)
    }

    /// The `q` quantile (0..=1), `None` when nothing was recorded: the lower bound of the bucket
    /// holding it, clamped into `min..=max`, so it is never above the true value by more than
    /// nothing and never below it by more than 1/8, and `quantile(a) <= quantile(b)` for `a <= b`.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let total: u64 = self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).sum();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        let mut at = BUCKETS - 1;
        for (i, b) in self.buckets.iter().enumerate() {
            seen += b.load(Ordering::Relaxed);
            if seen >= rank {
                at = i;
                break;
            }
        }
        Some(lower_bound(at).clamp(self.min(), self.max().max(self.min())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ordered_and_tight() {
        for v in [0u64, 1, 7, 8, 9, 15, 16, 17, 100, 1000, 123_456, 1 << 40] {
            let b = bucket_of(v);
            assert!(lower_bound(b) <= v, "{v}: bound {}", lower_bound(b));
            assert!(v - lower_bound(b) <= v / 8, "{v}: bound {}", lower_bound(b));
            if b + 1 < BUCKETS {
                assert!(lower_bound(b + 1) > v, "{v}");
            }
        }
        for b in 1..BUCKETS {
            assert!(lower_bound(b) > lower_bound(b - 1));
            assert_eq!(bucket_of(lower_bound(b)), b);
        }
    }

    /// `record_all` leaves the histogram as one `record` per value does, whatever the order.
    #[test]
    fn record_all_matches_one_record_per_value() {
        let values: Vec<u64> = (0..200u64).map(|i| (i * 7919) % 5000).collect();
        let one = Histogram::new();
        for &v in &values {
            one.record(v);
        }
        let all = Histogram::new();
        let mut batch = values.clone();
        all.record_all(&mut batch[..150]);
        all.record_all(&mut batch[150..]);
        all.record_all(&mut []);
        assert_eq!(all.count(), 200);
        assert_eq!(
            (all.sum(), all.min(), all.max()),
            (one.sum(), one.min(), one.max())
        );
        for b in 0..BUCKETS {
            assert_eq!(
                all.buckets[b].load(Ordering::Relaxed),
                one.buckets[b].load(Ordering::Relaxed),
                "bucket {b}"
            );
        }
        let sole = Histogram::new();
        for &v in &values {
            sole.record_sole_writer(v);
        }
        assert_eq!(
            (sole.count(), sole.sum(), sole.min(), sole.max()),
            (200, one.sum(), one.min(), one.max())
        );
        assert_eq!(sole.quantile(0.99), one.quantile(0.99));
    }

    #[test]
    fn quantiles() {
        let h = Histogram::new();
        assert_eq!(h.quantile(0.5), None);
        for v in 1..=1000 {
            h.record(v);
        }
        assert_eq!(
            (h.count(), h.sum(), h.min(), h.max()),
            (1000, 500_500, 1, 1000)
        );
        let p50 = h.quantile(0.5).unwrap();
        let p99 = h.quantile(0.99).unwrap();
        assert!((448..=500).contains(&p50), "{p50}");
        assert!((866..=990).contains(&p99), "{p99}");
        assert_eq!(h.quantile(1.0), Some(960)); // 1000's bucket starts at 960
        assert_eq!(h.quantile(0.0), Some(1));
    }

    #[test]
    fn ring_keeps_recent_entries() {
        let t = EntryTimes::default();
        let now = Instant::now();
        t.persisted(5, 7, now);
        t.committed(6, now + Duration::from_millis(3));
        let (p, c) = t.get(6).unwrap();
        assert_eq!(c.unwrap() - p, Duration::from_millis(3));
        assert_eq!(t.get(5).unwrap().1, None);
        assert!(t.get(8).is_none());
        t.persisted(5 + RING as u64, 5 + RING as u64, now);
        assert!(t.get(5).is_none());
    }
}
