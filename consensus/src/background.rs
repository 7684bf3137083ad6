//! Background threads: writing snapshot files here, encoding snapshots in the server. They
//! run at the lowest CPU priority (nice 19) so that, on a server with one core, the threads
//! every client's reply waits for (the core task's worker, the raft thread) take the CPU
//! from them at once when they wake: a snapshot of a large tree then slows down instead of
//! stalling clients. Under a load that keeps the CPU busy the background work still gets a
//! small share (nice 19 is weight 15 against 1024), so a snapshot is late, never lost.

/// Lowers the calling thread to nice 19. Failing (a platform without per-thread niceness) only
/// logs: the work still runs, at normal priority.
pub fn lower_current_thread_priority() {
    if let Err(e) =
        thread_priority::set_current_thread_priority(thread_priority::ThreadPriority::Min)
    {
        tracing::debug!(error = ?e, "background thread keeps its priority");
    }
}

#[cfg(test)]
mod tests {
    /// The nice value of the calling thread, from /proc (field 19 of `stat`).
    fn own_nice() -> i64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("procfs");
        // The command name may hold spaces; fields start after its closing parenthesis.
        let rest = &stat[stat.rfind(')').expect("comm") + 2..];
        rest.split(' ')
            .nth(16)
            .expect("nice field")
            .parse()
            .expect("number")
    }

    #[test]
    fn a_background_thread_runs_at_nice_19_and_leaves_others_alone() {
        let before = own_nice();
        let lowered = std::thread::spawn(|| {
            super::lower_current_thread_priority();
            own_nice()
        })
        .join()
        .unwrap();
        assert_eq!(lowered, 19);
        assert_eq!(own_nice(), before, "only the calling thread changes");
    }
}
