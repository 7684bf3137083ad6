//! Drops what a `SCHED_IDLE` thread must not: the snapshot view, once the encoder is done with it.
//!
//! The view shares the tree's nodes, which the core allocated on its own tokio worker. Nodes deleted
//! while the view was being encoded are freed when the view drops, and glibc's `free` takes the lock
//! of the arena a chunk came from: the core worker's. A `SCHED_IDLE` thread gets the CPU only when
//! nothing else wants it, so an encoder preempted inside `free` (or in `malloc_consolidate`, which
//! walks the whole arena) kept that lock while the core was busy, and the worker's next allocation
//! waited for it. In a 3-member ensemble on one core this held a leader's raft transport (reading a
//! follower's answer, `calloc` in `consensus::net::accept::read_frames`) for seconds, behind its
//! encoder freeing 190k deleted nodes, and the leader stepped down for want of a quorum (BUGS.md
//! P10, caught with gdb). The reaper is an ordinary thread, spawned by the core (so it does not
//! inherit `SCHED_IDLE`): preempted while holding an arena lock, it gets the CPU back within its
//! fair share, milliseconds, not whenever the core happens to idle.

use std::sync::mpsc;

/// A thread of normal priority that drops what it is sent, in order.
pub(crate) struct Reaper<T: Send + 'static> {
    tx: mpsc::Sender<T>,
}

impl<T: Send + 'static> Clone for Reaper<T> {
    fn clone(&self) -> Self {
        Reaper {
            tx: self.tx.clone(),
        }
    }
}

impl<T: Send + 'static> Reaper<T> {
    /// Spawns the thread (it ends when every `Reaper` handle is gone). Call it from a thread of
    /// normal priority: a new thread inherits its creator's scheduling policy.
    pub(crate) fn spawn(name: &str) -> std::io::Result<Reaper<T>> {
        let (tx, rx) = mpsc::channel::<T>();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                for item in rx {
                    drop(item);
                }
            })?;
        Ok(Reaper { tx })
    }

    /// Hands `item` to the reaper; if its thread is gone, drops it here.
    pub(crate) fn reap(&self, item: T) {
        if let Err(mpsc::SendError(item)) = self.tx.send(item) {
            drop(item);
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The calling thread's scheduling policy, from /proc (field 41 of `stat`).
    fn own_policy() -> i64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("procfs");
        let rest = &stat[stat.rfind(')').expect("comm") + 2..];
        rest.split(' ')
            .nth(41 - 3)
            .expect("field 41")
            .parse()
            .expect("number")
    }

    /// Records, when dropped, the scheduling policy of the thread that dropped it.
    struct Witness(mpsc::Sender<i64>);

    impl Drop for Witness {
        fn drop(&mut self) {
            let _ = self.0.send(own_policy());
        }
    }

    #[test]
    fn what_a_sched_idle_thread_hands_over_is_dropped_at_normal_priority() {
        const SCHED_OTHER: i64 = 0;
        const SCHED_IDLE: i64 = 5;
        let reaper = Reaper::<Witness>::spawn("test-reaper").unwrap();
        let (seen_tx, seen) = mpsc::channel();
        let (idle_tx, idle) = mpsc::channel();
        let background = std::thread::spawn(move || {
            consensus::background::lower_current_thread_priority();
            idle_tx.send(own_policy()).unwrap();
            // What the encoder does with the view once it is encoded.
            reaper.reap(Witness(seen_tx.clone()));
            // And what it used to do: drop it itself.
            drop(Witness(seen_tx));
        });
        background.join().unwrap();
        assert_eq!(
            idle.recv().unwrap(),
            SCHED_IDLE,
            "the sender runs under SCHED_IDLE"
        );
        let mut policies: Vec<i64> = seen.iter().take(2).collect();
        policies.sort_unstable();
        assert_eq!(
            policies,
            vec![SCHED_OTHER, SCHED_IDLE],
            "the reaped one was dropped at normal priority, the other on the idle thread"
        );
    }
}
