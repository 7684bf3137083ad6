//! The raft thread: pumps commands, saved snapshots and the tick clock into a [`Driver`], and the
//! snapshot writer thread it hands files to. Everything raft-specific lives in the driver; this
//! file owns only threads, channels and time.
//!
//! With the `testing` feature the same loop can run on a task of the caller's tokio runtime
//! instead of a thread of its own ([`Stepper`]), its tick on tokio's clock: a test that pauses
//! that clock then drives raft's time too, and nothing in the node runs on a clock it does not
//! control.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use raft::eraftpb::Message;

use crate::driver::{Command, Driver, Output, SnapshotJob, SnapshotSaved};
use crate::snapshot_file;
use crate::status::{Detail, Shared};
use crate::transport::{EventSink, Transport};
use crate::{ConsensusError, Event};

/// Commands taken from the channel before handling a Ready: enough to amortise an fsync over a
/// large burst, small enough to keep one iteration's latency and memory bounded.
const MAX_COMMANDS_PER_READY: usize = 4096;

/// What handles (and the snapshot writer) send to the raft thread. One channel for all of it:
/// the raft thread waits on it alone (`recv_timeout`), not in a `select!` over two. After a
/// `select!` wakes, it unregisters from every channel it waited on, taking each one's waker
/// lock; with the server on one core, the woken raft thread ran while the sender still held
/// that lock, waited for it, and cost every write two more context switches (a lone set's
/// profile: `SyncWaker::unregister` -> `Mutex::lock_contended`, 2.2% of its samples).
pub(crate) enum Request {
    Command(Command),
    /// The snapshot writer thread has written a file.
    SnapshotSaved(SnapshotSaved),
    /// The snapshot writer thread failed to write or delete a file: the node stops (a full disk
    /// or a failing device, which the log's next write would meet too; nothing retries a failed
    /// sync).
    WriterFailed(String),
    Shutdown,
}

/// Where requests to the raft loop go: its channel, and, for a loop that runs on a task
/// ([`Stepper`]), the notice that wakes it (a thread waits on the channel itself).
#[derive(Clone)]
pub(crate) struct RequestTx {
    tx: Sender<Request>,
    wake: Option<Arc<tokio::sync::Notify>>,
}

impl RequestTx {
    /// `false` when the loop is gone.
    pub(crate) fn send(&self, req: Request) -> bool {
        let sent = self.tx.send(req).is_ok();
        if let Some(wake) = &self.wake {
            wake.notify_one();
        }
        sent
    }
}

/// The driver's output on the raft thread: the transport, the applier's channel, the writer
/// thread and the status handles read.
struct ThreadOutput {
    transport: Box<dyn Transport>,
    events: Box<dyn EventSink>,
    writer: Option<Sender<WriterJob>>,
    shared: Arc<Shared>,
    /// When the current Ready's synced write started.
    sync_started: Option<std::time::Instant>,
    /// The group is this node alone (as of the last `publish`, which precedes every batch of
    /// committed entries).
    alone: bool,
}

impl ThreadOutput {
    fn send_to_writer(&mut self, job: WriterJob) {
        if let Some(w) = &self.writer {
            if w.send(job).is_err() {
                tracing::error!("snapshot writer is gone");
                self.writer = None;
            }
        }
    }
}

/// Work for the snapshot writer thread.
enum WriterJob {
    /// Write this snapshot's file.
    Write(SnapshotJob),
    /// Delete the snapshot files older than this index (recorded as no longer needed).
    Prune(u64),
}

impl Output for ThreadOutput {
    fn send(&mut self, msgs: Vec<Message>) {
        self.transport.send(msgs);
    }

    fn event(&mut self, event: Event) {
        if let Event::Committed(batch) = &event {
            let now = std::time::Instant::now();
            for ce in batch {
                self.shared.times.committed(ce.index, now);
            }
        }
        let committed = matches!(event, Event::Committed(_));
        if !self.events.deliver(event) {
            tracing::debug!("event dropped: the applier is gone");
        }
        if committed && self.alone {
            // The applier was just woken to apply and answer; on a server with one core it would
            // otherwise wait for the rest of this Ready (the commit hint, the next Ready's work).
            // Alone only: in an ensemble whose members share a core, the yield handed the CPU to
            // the other members' threads as often as to our applier. Three members on one core,
            // 7 alternating runs each (3 Dec 2026): a lone write on the leader 999 -> 889 us at
            // the median, 5 runs of 7 faster without it.
            std::thread::yield_now();
        }
    }

    fn write_snapshot(&mut self, job: SnapshotJob) {
        self.send_to_writer(WriterJob::Write(job));
    }

    fn publish(&mut self, driver: &Driver) {
        self.alone = driver.is_alone();
        self.shared.set_status(driver.status());
        let (voters, learners) = driver.membership();
        self.shared.set_detail(Detail {
            voters,
            learners,
            joint: driver.is_joint(),
            joint_only: driver.joint_only(),
            progress: driver.progress(),
        });
        self.shared
            .uncommitted
            .store(driver.uncommitted_bytes(), Ordering::SeqCst);
    }

    fn commit_known(&mut self, commit: u64) {
        self.shared.commit_known.fetch_max(commit, Ordering::SeqCst);
    }

    fn persisting(&mut self) {
        self.sync_started = Some(std::time::Instant::now());
    }

    fn persisted(&mut self, entries: Option<(u64, u64)>) {
        let (Some(started), Some((first, last))) = (self.sync_started.take(), entries) else {
            return;
        };
        let now = std::time::Instant::now();
        self.shared.times.fsync.record_us(now - started);
        self.shared.times.persisted(first, last, now);
    }
}

/// The requests' channel, and the `RequestTx` handles send on.
pub(crate) fn requests(wake: Option<Arc<tokio::sync::Notify>>) -> (RequestTx, Receiver<Request>) {
    let (tx, rx) = crossbeam_channel::unbounded();
    (RequestTx { tx, wake }, rx)
}

/// Starts the snapshot writer thread and readies the loop: a sole voter with committed entries
/// to deliver first campaigns here (see below).
fn prepare(
    mut driver: Driver,
    tick: Duration,
    requests: (RequestTx, Receiver<Request>),
    events: Box<dyn EventSink>,
    transport: Box<dyn Transport>,
    shared: Arc<Shared>,
) -> Result<(RaftLoop, JoinHandle<()>), ConsensusError> {
    let (requests_tx, requests) = requests;
    let (job_tx, job_rx) = crossbeam_channel::unbounded();
    let writer_dir = driver.snapshot_dir().to_path_buf();
    let id = driver.id();
    let writer = std::thread::Builder::new()
        .name(format!("snapshot-writer-{id}"))
        .spawn(move || write_snapshots(writer_dir, job_rx, requests_tx))?;

    let mut out = ThreadOutput {
        transport,
        events,
        writer: Some(job_tx),
        shared,
        sync_started: None,
        alone: false,
    };
    if driver.campaign_pending() {
        // A sole voter restarted with committed entries not yet applied campaigns only once they
        // are delivered (`Driver::open_with`). Deliver them and campaign here, before `start`
        // returns, so that it still returns with the node leading and proposals accepted, as it
        // did when the campaign came first (a proposer that started at once found no leader).
        driver.ready(&mut out)?;
    }
    out.publish(&driver);
    let raft_loop = RaftLoop {
        driver,
        out,
        requests,
        tick,
        shutting_down: false,
    };
    Ok((raft_loop, writer))
}

/// Starts the raft thread (and the snapshot writer thread); returns both to be joined.
pub(crate) fn spawn(
    driver: Driver,
    tick: Duration,
    requests: (RequestTx, Receiver<Request>),
    events: Box<dyn EventSink>,
    transport: Box<dyn Transport>,
    shared: Arc<Shared>,
) -> Result<Vec<JoinHandle<()>>, ConsensusError> {
    let id = driver.id();
    let (mut raft_loop, writer) = prepare(driver, tick, requests, events, transport, shared)?;
    let raft = std::thread::Builder::new()
        .name(format!("raft-{id}"))
        .spawn(move || {
            let span = tracing::info_span!("raft", node = id);
            let _enter = span.enter();
            // Marks the node stopped however the loop ends, panics (broken invariants) included,
            // so handles answer Stopped instead of queueing into a dead channel.
            let _stopped = StopOnExit(raft_loop.out.shared.clone());
            if let Err(e) = raft_loop.run() {
                tracing::error!("raft loop stopped: {e}");
            }
        })?;
    Ok(vec![raft, writer])
}

struct StopOnExit(Arc<Shared>);

impl Drop for StopOnExit {
    fn drop(&mut self) {
        self.0.stopped.store(true, Ordering::Release);
        let mut status = self.0.status();
        status.is_leader = false;
        self.0.set_status(status);
    }
}

/// The most ticks one wake-up of the raft thread catches up on.
pub(crate) const MAX_CATCH_UP_TICKS: u32 = 10;

/// How many ticks are due at `now` (the next was due at `next_tick`), and when the one after them
/// is. Ticks keep a fixed rate: a thread that wakes late (a loaded machine's scheduling delay)
/// catches up on the ticks it missed, so timeouts counted in ticks (elections, a leader's check
/// of its quorum) last as long in wall time as they say, instead of stretching by the delay of
/// every wake-up. At most `MAX_CATCH_UP_TICKS` at once: when the thread itself stalled (a long
/// synced write), the messages it then reads waited for it, not for their senders, and a burst
/// of ticks counting the stall against the peers would depose a healthy leader. The rest of a
/// longer delay is dropped.
pub(crate) fn ticks_due(now: Instant, next_tick: Instant, tick: Duration) -> (u32, Instant) {
    if now < next_tick {
        return (0, next_tick);
    }
    let late = now - next_tick;
    let missed = 1 + (late.as_nanos() / tick.as_nanos().max(1)).min(u128::from(u32::MAX)) as u32;
    let fired = missed.min(MAX_CATCH_UP_TICKS);
    let next = if missed > MAX_CATCH_UP_TICKS {
        // Dropped ticks are not owed: the next is one tick from now.
        now + tick
    } else {
        next_tick + tick * missed
    };
    (fired, next)
}

struct RaftLoop {
    driver: Driver,
    out: ThreadOutput,
    requests: Receiver<Request>,
    tick: Duration,
    shutting_down: bool,
}

impl RaftLoop {
    fn run(&mut self) -> Result<(), ConsensusError> {
        let mut next_tick = Instant::now() + self.tick;
        loop {
            // Ready first: work queued before the loop started (the campaign at start) or by the
            // previous iteration must not wait for the next tick.
            self.driver.ready(&mut self.out)?;
            if self.shutting_down {
                break;
            }
            let timeout = next_tick.saturating_duration_since(Instant::now());
            match self.requests.recv_timeout(timeout) {
                Ok(req) => self.request(req)?,
                Err(RecvTimeoutError::Timeout) => {}
                // Every sender is gone: nobody can use what we would produce. (Handles send
                // `Shutdown` when the last one drops; the writer's sender outlives this loop.)
                Err(RecvTimeoutError::Disconnected) => self.shutting_down = true,
            }
            // Drain what is queued so one Ready (one fsync) carries the whole burst; bounded, so
            // producers faster than us cannot hold the Ready (and every commit) back forever.
            for _ in 0..MAX_COMMANDS_PER_READY {
                match self.requests.try_recv() {
                    Ok(req) => self.request(req)?,
                    Err(_) => break,
                }
            }
            let (due, next) = ticks_due(Instant::now(), next_tick, self.tick);
            for _ in 0..due {
                self.driver.tick();
            }
            next_tick = next;
        }
        Ok(())
    }

    fn request(&mut self, req: Request) -> Result<(), ConsensusError> {
        match req {
            Request::Command(Command::Propose(data)) => {
                let len = data.len() as u64;
                let done = self.driver.command(Command::Propose(data), &mut self.out);
                // Publish what raft now holds before releasing the handle's reservation, so the
                // handle's sum of the two never under-counts (see `Handle::propose`).
                let shared = &self.out.shared;
                shared
                    .uncommitted
                    .store(self.driver.uncommitted_bytes(), Ordering::SeqCst);
                shared.queued.fetch_sub(len, Ordering::SeqCst);
                done
            }
            Request::Command(cmd) => self.driver.command(cmd, &mut self.out),
            Request::SnapshotSaved(saved) => {
                if let Some(floor) = self.driver.snapshot_saved(saved)? {
                    self.out.send_to_writer(WriterJob::Prune(floor));
                }
                Ok(())
            }
            Request::WriterFailed(why) => Err(ConsensusError::Io(std::io::Error::other(why))),
            Request::Shutdown => {
                self.shutting_down = true;
                Ok(())
            }
        }
    }
}

/// The raft loop without a thread of its own, for a caller that runs it on a task of its tokio
/// runtime (`start_stepped`): its tick is on tokio's clock, so a test that pauses and advances
/// that clock drives raft's time as well as its own. The loop is the thread's: handle what the
/// handles sent, then a Ready, and tick when a tick is due; it waits for a request or the next
/// tick, not on the channel. Its Readies write the log on the runtime's thread, synchronously.
/// The snapshot writer keeps its thread: nothing waits on its clock.
#[cfg(feature = "testing")]
pub struct Stepper {
    raft_loop: RaftLoop,
    wake: Arc<tokio::sync::Notify>,
    writer: JoinHandle<()>,
    /// Dropped when the loop has ended and the writer is joined: `Handle::shutdown` waits for it.
    done: Sender<()>,
}

#[cfg(feature = "testing")]
impl Stepper {
    /// Runs the loop until `Handle::shutdown` (or the last handle's drop), then stops the writer
    /// thread. Spawn it on the runtime whose clock is to drive raft.
    pub async fn run(mut self) {
        let id = self.raft_loop.driver.id();
        let span = tracing::info_span!("raft", node = id);
        let _stopped = StopOnExit(self.raft_loop.out.shared.clone());
        let result =
            tracing::Instrument::instrument(self.raft_loop.run_on_task(&self.wake), span).await;
        if let Err(e) = result {
            tracing::error!("raft loop stopped: {e}");
        }
        // Dropping the loop drops the writer's queue: it finishes what it holds and ends.
        let Stepper {
            raft_loop,
            writer,
            done,
            ..
        } = self;
        drop(raft_loop);
        let _ = tokio::task::spawn_blocking(move || writer.join()).await;
        drop(done);
    }
}

/// Prepares the loop for a task of the caller's (see [`Stepper`]); `requests` must wake it
/// (`requests(Some(..))`), and `done` is dropped when it ends.
#[cfg(feature = "testing")]
pub(crate) fn stepper(
    driver: Driver,
    tick: Duration,
    requests: (RequestTx, Receiver<Request>),
    events: Box<dyn EventSink>,
    transport: Box<dyn Transport>,
    shared: Arc<Shared>,
    done: Sender<()>,
) -> Result<Stepper, ConsensusError> {
    let wake = requests
        .0
        .wake
        .clone()
        .expect("a stepped loop's requests wake it");
    let (raft_loop, writer) = prepare(driver, tick, requests, events, transport, shared)?;
    Ok(Stepper {
        raft_loop,
        wake,
        writer,
        done,
    })
}

#[cfg(feature = "testing")]
impl RaftLoop {
    /// `run`, on a task: waits for a request's notice or the next tick on tokio's clock.
    async fn run_on_task(&mut self, wake: &tokio::sync::Notify) -> Result<(), ConsensusError> {
        let mut next_tick = tokio::time::Instant::now() + self.tick;
        loop {
            self.driver.ready(&mut self.out)?;
            if self.shutting_down {
                break;
            }
            if self.requests.is_empty() {
                tokio::select! {
                    _ = wake.notified() => {}
                    _ = tokio::time::sleep_until(next_tick) => {}
                }
            }
            for _ in 0..MAX_COMMANDS_PER_READY {
                match self.requests.try_recv() {
                    Ok(req) => self.request(req)?,
                    Err(crossbeam_channel::TryRecvError::Empty) => break,
                    Err(crossbeam_channel::TryRecvError::Disconnected) => {
                        self.shutting_down = true;
                        break;
                    }
                }
            }
            let (due, next) = ticks_due(
                tokio::time::Instant::now().into_std(),
                next_tick.into_std(),
                self.tick,
            );
            for _ in 0..due {
                self.driver.tick();
            }
            next_tick = next.into();
        }
        Ok(())
    }
}

/// The snapshot writer thread: file IO and fsyncs stay off the raft thread, at background
/// priority (`background`). It also deletes the files the raft thread no longer needs, which on a
/// file system that trims freed blocks holds the caller for as long as the device takes.
fn write_snapshots(dir: PathBuf, jobs: Receiver<WriterJob>, saved: RequestTx) {
    crate::background::lower_current_thread_priority();
    while let Ok(first) = jobs.recv() {
        let mut write: Option<SnapshotJob> = None;
        let mut floor = None;
        for job in std::iter::once(first).chain(jobs.try_iter()) {
            match job {
                // If the applier got ahead of the disk, only the newest state is worth writing.
                WriterJob::Write(newer) => {
                    if let Some(skipped) = write.replace(newer) {
                        tracing::debug!(
                            skipped = skipped.index,
                            "snapshot superseded before it was written"
                        );
                    }
                }
                WriterJob::Prune(below) => floor = floor.max(Some(below)),
            }
        }
        if let Some(below) = floor {
            if let Err(e) = snapshot_file::prune_before(&dir, below) {
                tracing::error!(below, "old snapshot files not deleted: {e}");
                let _ = saved.send(Request::WriterFailed(format!(
                    "deleting snapshot files older than {below} in {}: {e}",
                    dir.display()
                )));
                return;
            }
        }
        let Some(job) = write else { continue };
        let started = Instant::now();
        match job.write(&dir) {
            Ok(done) => {
                tracing::info!(
                    index = job.index,
                    bytes = job.data.len(),
                    ms = started.elapsed().as_millis() as u64,
                    "snapshot written"
                );
                saved.send(Request::SnapshotSaved(done));
            }
            Err(e) => {
                tracing::error!(index = job.index, "snapshot write failed: {e}");
                let _ = saved.send(Request::WriterFailed(format!(
                    "writing the snapshot at {} in {}: {e}",
                    job.index,
                    dir.display()
                )));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_keep_a_fixed_rate_and_catch_up_a_few_at_most() {
        let t0 = Instant::now();
        let tick = Duration::from_millis(50);
        let ms = |n: u64| Duration::from_millis(n);
        // Not due yet.
        assert_eq!(ticks_due(t0, t0 + ms(10), tick), (0, t0 + ms(10)));
        // Due on time: one, the next a tick after the one due (not after now).
        assert_eq!(ticks_due(t0 + ms(5), t0, tick), (1, t0 + ms(50)));
        // Woken 70 ms late: the missed tick too, and the rate holds.
        assert_eq!(ticks_due(t0 + ms(70), t0, tick), (2, t0 + ms(100)));
        // Exactly the cap.
        assert_eq!(
            ticks_due(t0 + ms(499), t0, tick),
            (MAX_CATCH_UP_TICKS, t0 + ms(500))
        );
        // A 2 s stall: ten ticks, the rest dropped, the next a tick from now.
        assert_eq!(
            ticks_due(t0 + ms(2000), t0, tick),
            (MAX_CATCH_UP_TICKS, t0 + ms(2050))
        );
        // Forty wake-ups each 70 ms late of 50 ms ticks: 2 s of wall time is 40 ticks, not 17.
        let mut next = t0 + tick;
        let mut now = t0;
        let mut fired = 0;
        while now < t0 + ms(2000) {
            now = next + ms(70);
            let (n, nx) = ticks_due(now, next, tick);
            fired += n;
            next = nx;
        }
        let wall = (now - t0).as_millis() as u32;
        assert!(fired.abs_diff(wall / 50) <= 1, "{fired} ticks in {wall} ms");
    }
}
