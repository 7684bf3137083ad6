//! Background threads: writing snapshot files here, encoding snapshots in the server. They run
//! under Linux's `SCHED_IDLE` policy so that, on a server with one core, the threads every
//! client's reply waits for (the core task's worker, the raft thread) take the CPU from them the
//! moment they wake: a snapshot of a large tree then slows down instead of stalling clients.
//!
//! Why not nice 19 (what this did until 2 Dec 2026): the kernel's fair scheduler (EEVDF, Linux
//! 6.6 and later) lets a task it has picked run out its slice before a waking task of any nice
//! value preempts it (`RUN_TO_PARITY`). At nice 19 the snapshot writer, copying 200 MB into the
//! page cache, ran 5-7 ms at a stretch while the core task waited to answer a get (measured with
//! `perf sched timehist` during the snapshot-stall benchmark: the core's scheduling delay 6.9 ms,
//! several in a row, the get's longest latency 11-23 ms). A waking normal task always preempts a
//! `SCHED_IDLE` one at once.
//!
//! The cost: under a load that keeps the CPU busy a `SCHED_IDLE` thread gets almost nothing
//! (weight 3 against 1024), so a snapshot is late, never lost; it runs whenever the CPU would
//! otherwise idle. Where the policy cannot be set (not Linux), the thread falls back to nice 19.

/// Moves the calling thread to `SCHED_IDLE` (Linux), or to nice 19 where that policy does not
/// exist. Failing both only logs: the work still runs, at normal priority.
pub fn lower_current_thread_priority() {
    use thread_priority::{set_current_thread_priority, ThreadPriority};
    #[cfg(target_os = "linux")]
    {
        use thread_priority::{
            set_thread_priority_and_policy, thread_native_id, NormalThreadSchedulePolicy,
            ThreadSchedulePolicy,
        };
        let idle = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle);
        match set_thread_priority_and_policy(thread_native_id(), ThreadPriority::Min, idle) {
            Ok(()) => return,
            Err(e) => tracing::debug!(error = ?e, "no SCHED_IDLE for a background thread"),
        }
    }
    if let Err(e) = set_current_thread_priority(ThreadPriority::Min) {
        tracing::debug!(error = ?e, "background thread keeps its priority");
    }
}

/// Field `field` (numbered from 1, as in proc(5)) of a thread's `/proc/.../stat` text, as a number.
/// The command name (field 2) may hold spaces; the fields after it start after its closing
/// parenthesis.
#[cfg(test)]
pub(crate) fn stat_field(stat: &str, field: usize) -> i64 {
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    rest.split(' ')
        .nth(field - 3)
        .expect("stat field")
        .parse()
        .expect("number")
}

#[cfg(test)]
mod tests {
    /// The scheduling policy of the calling thread, from /proc (field 41 of `stat`).
    fn own_policy() -> i64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("procfs");
        super::stat_field(&stat, 41)
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_background_thread_runs_under_sched_idle_and_leaves_others_alone() {
        const SCHED_OTHER: i64 = 0;
        const SCHED_IDLE: i64 = 5;
        let before = own_policy();
        assert_eq!(
            before, SCHED_OTHER,
            "the test thread starts as a normal thread"
        );
        let lowered = std::thread::spawn(|| {
            super::lower_current_thread_priority();
            own_policy()
        })
        .join()
        .unwrap();
        assert_eq!(lowered, SCHED_IDLE);
        assert_eq!(own_policy(), before, "only the calling thread changes");
    }
}
