//! What the scheduler and the memory manager did to a benchmark while it
//! was timed, read from procfs outside the timing: on a machine shared
//! with other load, a slow sample is told apart from slow code by whether
//! its thread waited on a run queue or faulted pages in during it.

/// A thread's counters so far: from `/proc/thread-self/schedstat`
/// (nanoseconds spent waiting on a run queue, times scheduled in) and
/// `/proc/thread-self/stat` (minor and major page faults).
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadCounters {
    /// Nanoseconds spent runnable but waiting for a core.
    pub waited_ns: u64,
    /// Times the thread was scheduled in.
    pub slices: u64,
    /// Minor and major page faults.
    pub faults: u64,
}

impl ThreadCounters {
    /// The calling thread's counters; `None` where those files are not.
    pub fn now() -> Option<ThreadCounters> {
        let sched = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
        let (waited_ns, slices) = schedstat(&sched)?;
        let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
        // Fields after the command name (which may hold spaces) start at ')'.
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let minor: u64 = fields.get(7)?.parse().ok()?;
        let major: u64 = fields.get(9)?.parse().ok()?;
        Some(ThreadCounters {
            waited_ns,
            slices,
            faults: minor + major,
        })
    }

    /// The counters' growth from `before` to `self`.
    pub fn since(&self, before: &ThreadCounters) -> ThreadCounters {
        ThreadCounters {
            waited_ns: self.waited_ns - before.waited_ns,
            slices: self.slices - before.slices,
            faults: self.faults - before.faults,
        }
    }

    /// Descheduled or waiting on a run queue during the interval.
    pub fn preempted(&self) -> bool {
        self.slices > 0 || self.waited_ns > 0
    }
}

/// The run-queue wait (nanoseconds) of every thread of this process so
/// far, summed: from `/proc/self/task/*/schedstat`. Threads that ended
/// are not counted, so take differences over intervals in which none
/// ends. `None` where there is no procfs.
pub fn process_waited_ns() -> Option<u64> {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let path = task.ok()?.path().join("schedstat");
        // A thread may end between the listing and the read.
        if let Ok(text) = std::fs::read_to_string(path) {
            total += schedstat(&text)?.0;
        }
    }
    Some(total)
}

/// The run-queue wait and the times scheduled in, from a `schedstat` line
/// (on-CPU nanoseconds, waiting nanoseconds, slices).
fn schedstat(text: &str) -> Option<(u64, u64)> {
    let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().ok());
    let _on_cpu = fields.next()??;
    let waited_ns = fields.next()??;
    let slices = fields.next()??;
    Some((waited_ns, slices))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_fields() {
        assert_eq!(schedstat("123 456 7\n"), Some((456, 7)));
        assert_eq!(schedstat("123 x 7"), None);
        assert_eq!(schedstat("123"), None);
    }
}
