//! Where a write's time goes, and ZooKeeper's latency summaries (issues #11 and #12).
//!
//! Every write this server answers is stamped at seven points with the monotonic clock:
//!
//! | point | where |
//! |---|---|
//! | received | the reader task, once the request's frame is read off the socket (`connection.rs`) |
//! | queued | the core takes the request off its inbox (`core/submit.rs`, `propose_write`) |
//! | proposed | the entry is stamped and about to be handed to raft (or the leader's forward link) |
//! | persisted | the raft thread's synced log-segment append of that entry returned (`consensus::timing`) |
//! | committed | the raft thread handed the entry to the applier as committed |
//! | applied | the core applied it to the tree, just before queueing its reply (`core/apply.rs`) |
//! | written | the writer task's `write_all` holding the reply returned (`connection.rs`) |
//!
//! and each stage (the time between two consecutive points) goes into a fixed log-bucket
//! [`Histogram`] in microseconds: `queue`, `propose`, `persist`, `commit`, `apply`, `reply`, and
//! `total` (received to written). Stamps ride in the structs that already carry the write
//! (`Pending::Write`, `Outbound::WriteReply`); nothing is allocated per write. On a follower or an
//! observer, `propose` ends when the entry is queued on the forward link, and `persist` runs
//! until this member's own raft thread made the entry durable as the leader replicated it: the
//! forward trip, the leader's append and the replication are all in it (ARCHITECTURE.md).
//!
//! The ZooKeeper 3.9 families (`ServerMetrics`) kept here, in ZooKeeper's unit (milliseconds):
//! `readlatency` and `updatelatency` (request received to answered, as `ServerStats.updateLatency`
//! splits them), `snapshottime`, `election_time`, `startup_snap_load_time`,
//! `startup_txns_load_time`, `startup_txns_loaded` (a count), `dbinittime` (snapshot load and
//! replay together, ZKDatabase.loadDataBase), and `looking_count` (times this
//! member lost its leader and looked for one). `fsynctime` is the raft thread's
//! (`consensus::timing::EntryTimes::fsync`, microseconds there, milliseconds on export).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use consensus::timing::Histogram;
use consensus::timing::{micros, millis};

/// The stages of a write, in order; `total` last.
pub const STAGES: [&str; 7] = [
    "queue", "propose", "persist", "commit", "apply", "reply", "total",
];
const QUEUE: usize = 0;
const PROPOSE: usize = 1;
const PERSIST: usize = 2;
const COMMIT: usize = 3;
const APPLY: usize = 4;
const REPLY: usize = 5;
const TOTAL: usize = 6;

/// The stamps a pending write carries from the reader to its apply.
#[derive(Debug, Clone, Copy)]
pub struct WriteStamps {
    pub received: Instant,
    pub queued: Instant,
    pub proposed: Instant,
}

/// The stamps a write's reply carries to the writer task.
#[derive(Debug, Clone, Copy)]
pub struct ReplyStamps {
    pub received: Instant,
    pub applied: Instant,
}

/// One summary as `/metrics` exports it (and `mntr` prints it).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SummaryView {
    pub name: String,
    pub help: String,
    /// (quantile, value); `None` (NaN on export) when nothing was recorded.
    pub quantiles: Vec<(f64, Option<f64>)>,
    pub count: u64,
    pub sum: f64,
}

pub struct Latency {
    /// `queue` to `apply` are written by the core alone (`applied`), `reply` and `total` by
    /// every connection's writer task (`written_all`).
    stages: [Histogram; 7],
    /// Written by the core alone (`read_answered`).
    pub read: Histogram,
    /// Written by the core alone (`applied`).
    pub update: Histogram,
    pub snapshot: Histogram,
    pub election: Histogram,
    pub startup_snap_load: Histogram,
    pub startup_txns_load: Histogram,
    pub startup_txns_loaded: Histogram,
    pub db_init: Histogram,
    looking_count: AtomicU64,
    /// Transactions applied since start (`startup_txns_loaded` counts those of the replay).
    applied_txns: AtomicU64,
    /// Since when this member knows no leader (an ensemble member only).
    looking_since: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for Latency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Latency").finish_non_exhaustive()
    }
}

impl Latency {
    /// `member`: an ensemble member, which starts looking for a leader (a standalone server
    /// never elects, as in ZooKeeper, where its `election_time` stays empty).
    pub fn new(member: bool) -> Latency {
        Latency {
            stages: Default::default(),
            read: Histogram::new(),
            update: Histogram::new(),
            snapshot: Histogram::new(),
            election: Histogram::new(),
            startup_snap_load: Histogram::new(),
            startup_txns_load: Histogram::new(),
            startup_txns_loaded: Histogram::new(),
            db_init: Histogram::new(),
            looking_count: AtomicU64::new(member as u64),
            applied_txns: AtomicU64::new(0),
            looking_since: Mutex::new(member.then(Instant::now)),
        }
    }

    pub fn stage(&self, name: &str) -> Option<&Histogram> {
        STAGES
            .iter()
            .position(|s| *s == name)
            .map(|i| &self.stages[i])
    }

    /// A write was applied at `applied`; `durable` is when raft persisted and committed its
    /// entry, if the raft thread still has the times. Records the stages up to `apply`, and
    /// `updatelatency`. Called by the core alone, so it records without locked instructions
    /// (`Histogram::record_sole_writer`).
    pub fn applied(
        &self,
        w: &WriteStamps,
        durable: Option<(Instant, Option<Instant>)>,
        applied: Instant,
    ) {
        let s = &self.stages;
        s[QUEUE].record_sole_writer(micros(w.queued.saturating_duration_since(w.received)));
        s[PROPOSE].record_sole_writer(micros(w.proposed.saturating_duration_since(w.queued)));
        if let Some((persisted, committed)) = durable {
            let committed = committed.unwrap_or(persisted);
            s[PERSIST].record_sole_writer(micros(persisted.saturating_duration_since(w.proposed)));
            s[COMMIT].record_sole_writer(micros(committed.saturating_duration_since(persisted)));
            s[APPLY].record_sole_writer(micros(applied.saturating_duration_since(committed)));
        }
        self.update
            .record_sole_writer(millis(applied.saturating_duration_since(w.received)));
    }

    /// A read was answered `took` after its request was read (the core only: `readlatency`).
    pub fn read_answered(&self, took: Duration) {
        self.read.record_sole_writer(millis(took));
    }

    /// The replies of one socket write, all on the socket at `written`: recorded together
    /// (`Histogram::record_all`), `scratch` reused by the caller for the values.
    pub fn written_all(&self, replies: &[ReplyStamps], written: Instant, scratch: &mut Vec<u64>) {
        type From = fn(&ReplyStamps) -> Instant;
        let since: [(usize, From); 2] = [(REPLY, |r| r.applied), (TOTAL, |r| r.received)];
        for (stage, from) in since {
            scratch.clear();
            scratch.extend(
                replies
                    .iter()
                    .map(|r| micros(written.saturating_duration_since(from(r)))),
            );
            self.stages[stage].record_all(scratch);
        }
    }

    /// The known leader changed to `leader_id` (0: none). Counts the times this member started
    /// looking and times each look (`election_time`).
    pub fn leader_changed(&self, leader_id: u64) {
        let mut since = self.looking_since.lock().unwrap_or_else(|p| p.into_inner());
        match (leader_id, *since) {
            (0, None) => {
                *since = Some(Instant::now());
                self.looking_count.fetch_add(1, Ordering::Relaxed);
            }
            (l, Some(at)) if l != 0 => {
                self.election.record_ms(at.elapsed());
                *since = None;
            }
            _ => {}
        }
    }

    /// One more log entry with a transaction applied to the tree.
    pub fn count_applied(&self) {
        self.applied_txns.fetch_add(1, Ordering::Relaxed);
    }

    pub fn applied_txns(&self) -> u64 {
        self.applied_txns.load(Ordering::Relaxed)
    }

    pub fn looking_count(&self) -> u64 {
        self.looking_count.load(Ordering::Relaxed)
    }

    /// `mntr` lines: every stage's count, sum, min, max, p50 and p99 in microseconds.
    pub fn mntr(&self) -> Vec<(String, String)> {
        let mut out = Vec::with_capacity(STAGES.len() * 6);
        for (name, h) in STAGES.iter().zip(&self.stages) {
            let key = |what: &str| format!("paddock_write_stage_{name}_{what}");
            out.push((key("count"), h.count().to_string()));
            out.push((key("sum_us"), h.sum().to_string()));
            out.push((key("min_us"), h.min().to_string()));
            out.push((key("max_us"), h.max().to_string()));
            for (q, label) in [(0.5, "p50_us"), (0.99, "p99_us")] {
                out.push((key(label), h.quantile(q).unwrap_or(0).to_string()));
            }
        }
        out
    }

    /// The summaries `/metrics` exports: ZooKeeper's (names, units and quantiles as its
    /// PrometheusMetricsProvider: 0.5/0.9/0.99 for the ADVANCED `readlatency` and
    /// `updatelatency`, 0.5 for the BASIC ones), then paddock's stages in seconds.
    pub fn summaries(&self, fsync_us: &Histogram) -> Vec<SummaryView> {
        const ADVANCED: &[f64] = &[0.5, 0.9, 0.99];
        const BASIC: &[f64] = &[0.5];
        let zk = |name: &str, h: &Histogram, qs: &[f64]| SummaryView {
            name: name.into(),
            help: name.into(),
            quantiles: qs
                .iter()
                .map(|&q| (q, h.quantile(q).map(|v| v as f64)))
                .collect(),
            count: h.count(),
            sum: h.sum() as f64,
        };
        let mut out = vec![
            zk("readlatency", &self.read, ADVANCED),
            zk("updatelatency", &self.update, ADVANCED),
            SummaryView {
                name: "fsynctime".into(),
                help: "fsynctime".into(),
                quantiles: vec![(0.5, fsync_us.quantile(0.5).map(|v| v as f64 / 1e3))],
                count: fsync_us.count(),
                sum: fsync_us.sum() as f64 / 1e3,
            },
            zk("snapshottime", &self.snapshot, BASIC),
            zk("election_time", &self.election, BASIC),
            zk("startup_snap_load_time", &self.startup_snap_load, BASIC),
            zk("startup_txns_load_time", &self.startup_txns_load, BASIC),
            zk("startup_txns_loaded", &self.startup_txns_loaded, BASIC),
            zk("dbinittime", &self.db_init, BASIC),
        ];
        for (name, h) in STAGES.iter().zip(&self.stages) {
            let secs = |v: u64| v as f64 / 1e6;
            out.push(SummaryView {
                name: format!("paddock_write_stage_{name}_seconds"),
                help: format!(
                    "Time of a write's {name} stage (ARCHITECTURE.md: where a write's time goes)."
                ),
                quantiles: [0.5, 0.9, 0.99]
                    .iter()
                    .map(|&q| (q, h.quantile(q).map(secs)))
                    .collect(),
                count: h.count(),
                sum: secs(h.sum()),
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_of_one_write() {
        let l = Latency::new(false);
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let w = WriteStamps {
            received: t0,
            queued: t0 + ms(1),
            proposed: t0 + ms(3),
        };
        l.applied(&w, Some((t0 + ms(6), Some(t0 + ms(10)))), t0 + ms(15));
        // Two replies left in one socket write: the first was applied 6 ms before it.
        let mut scratch = Vec::new();
        l.written_all(
            &[
                ReplyStamps {
                    received: t0,
                    applied: t0 + ms(15),
                },
                ReplyStamps {
                    received: t0 + ms(20),
                    applied: t0 + ms(20),
                },
            ],
            t0 + ms(21),
            &mut scratch,
        );
        let got: Vec<u64> = STAGES.iter().map(|s| l.stage(s).unwrap().max()).collect();
        assert_eq!(got, [1000, 2000, 3000, 4000, 5000, 6000, 21000]);
        assert_eq!(l.stage("reply").unwrap().min(), 1000);
        assert_eq!(l.stage("total").unwrap().count(), 2);
        assert_eq!(l.stage("total").unwrap().sum(), 22000);
        assert_eq!(l.update.max(), 15);
        // Raft no longer had the times: only the stages the core saw itself.
        l.applied(&w, None, t0 + ms(15));
        assert_eq!(l.stage("queue").unwrap().count(), 2);
        assert_eq!(l.stage("persist").unwrap().count(), 1);
    }

    #[test]
    fn looking_and_elections() {
        let l = Latency::new(true);
        assert_eq!(l.looking_count(), 1);
        l.leader_changed(2);
        assert_eq!(l.election.count(), 1);
        l.leader_changed(2);
        l.leader_changed(0);
        l.leader_changed(0);
        assert_eq!(l.looking_count(), 2);
        l.leader_changed(3);
        assert_eq!(l.election.count(), 2);
        let standalone = Latency::new(false);
        standalone.leader_changed(1);
        assert_eq!(
            (standalone.looking_count(), standalone.election.count()),
            (0, 0)
        );
    }
}
