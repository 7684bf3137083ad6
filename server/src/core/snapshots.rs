//! Snapshots of the tree: when one is due, taking its view on the core, and encoding it on a
//! thread of its own for raft to save. Installing a snapshot from the leader is `apply`'s.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tracing::{info, warn};

use super::reaper::Reaper;
use super::Core;

/// The snapshots this member took, and the one being encoded.
pub(super) struct Snapshots {
    /// The index of the last snapshot taken or installed.
    pub(super) last_index: u64,
    /// Snapshot encoder threads running (`maybe_snapshot` waits for none).
    encoding: Arc<AtomicUsize>,
    /// Drops each snapshot view at normal priority once encoded (`reaper.rs`); spawned with the
    /// first snapshot.
    reaper: Option<Reaper<znode_tree::SnapshotView>>,
}

impl Snapshots {
    /// `last_index`: the snapshot the tree was restored from (0: none).
    pub(super) fn new(last_index: u64) -> Snapshots {
        Snapshots {
            last_index,
            encoding: Arc::default(),
            reaper: None,
        }
    }

    /// Snapshots being encoded now (mntr's `zk_paddock_snapshots_encoding`).
    pub(super) fn encoding(&self) -> usize {
        self.encoding.load(Ordering::Acquire)
    }
}

impl Core {
    /// Takes a snapshot every `snapCount` applied entries, one at a time: while one is still
    /// being encoded the next waits for it (as ZooKeeper skips a snapshot while its snapshot
    /// thread runs), and is taken at the first commit or core tick after it. Encoding runs at background
    /// priority, so under a load that keeps the core busy (a fill of 1M znodes) it finishes late;
    /// without the wait a new one started every 100k entries, and at the end of the fill six
    /// encoded snapshots of 80-180 MB were in memory at once (763 MiB of RSS against 340 once
    /// they were written), four of them only to be discarded by the writer as outdated.
    pub(super) fn maybe_snapshot(&mut self) {
        let every = self.cfg.snapshot_every_entries.max(1);
        if self.applied.index >= self.snapshots.last_index + every && self.snapshots.encoding() == 0
        {
            self.take_snapshot();
        }
    }

    pub(super) fn take_snapshot(&mut self) {
        if self.applied.index <= 1 {
            return; // nothing beyond the bootstrap snapshot to save
        }
        {
            // Only the view is taken here, on the core task, where clients wait for it: it shares
            // the tree's root and copies the sessions and ACL tables (microseconds at 1M znodes).
            // Encoding runs on its own thread while writes go on; the first write below a node
            // the view still shares copies that node's path (tens of microseconds).
            let started = std::time::Instant::now();
            let view = self.tree.snapshot_view();
            let view_took = started.elapsed();
            let view_ms = view_took.as_millis() as u64;
            let (index, term) = (self.applied.index, self.applied.term);
            let raft = self.raft.clone();
            let latency = self.meters.latency.clone();
            let encoding = EncodingMark::set(&self.snapshots.encoding);
            if self.snapshots.reaper.is_none() {
                // Spawned here, on the core's worker, so that it runs at normal priority.
                match Reaper::spawn("snapshot-drop") {
                    Ok(r) => self.snapshots.reaper = Some(r),
                    Err(e) => {
                        warn!(error = %e, "no thread to drop snapshot views: the encoder will")
                    }
                }
            }
            let reaper = self.snapshots.reaper.clone();
            // A thread of its own at background priority (`consensus::background`): on a
            // server with one core the encoding would otherwise take turns with the core task
            // and every client would wait for its slices.
            let encoder = std::thread::Builder::new()
                .name("snapshot-encode".into())
                .spawn(move || {
                    let _encoding = encoding; // cleared when this thread ends, however it ends
                    consensus::background::lower_current_thread_priority();
                    let started = std::time::Instant::now();
                    let data = view.encode();
                    // Not dropped here: freeing nodes deleted meanwhile takes the core worker's
                    // allocator lock, which this SCHED_IDLE thread may then hold for as long as
                    // the core stays busy (reaper.rs, BUGS.md P10).
                    match &reaper {
                        Some(r) => r.reap(view),
                        None => drop(view),
                    }
                    latency.snapshot.record_ms(view_took + started.elapsed());
                    let ms = started.elapsed().as_millis() as u64;
                    info!(index, bytes = data.len(), view_ms, ms, "snapshot taken");
                    if let Err(e) = raft.save_snapshot(index, term, data) {
                        warn!(error = %e, "snapshot not saved");
                    }
                });
            if let Err(e) = encoder {
                warn!(error = %e, "snapshot not taken: no thread to encode it");
                return;
            }
            self.snapshots.last_index = index;
        }
    }
}

/// Counts a snapshot as being encoded for as long as it lives (the encoder thread owns it, so a
/// panic ends the count too).
struct EncodingMark(Arc<AtomicUsize>);

impl EncodingMark {
    fn set(count: &Arc<AtomicUsize>) -> EncodingMark {
        count.fetch_add(1, Ordering::AcqRel);
        EncodingMark(count.clone())
    }
}

impl Drop for EncodingMark {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
