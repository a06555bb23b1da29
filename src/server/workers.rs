//! Threads that run connections, kept for the next one. Starting a thread (clone, a fresh stack mapping, its
//! teardown at exit) is on every connection's path before its first byte is read: about 55 µs per spawn and join
//! on the 2-core machine the daemon benchmark runs on, where a whole `connect` stream takes 1–2 ms. A thread that
//! finished its connection waits [`IDLE_LIFETIME`] for another before it exits, so a busy daemon starts threads
//! only when more connections are open at once than ever before, and an idle one keeps none.
//!
//! A job must leave its thread as it found it: a connection thread does not change its working directory or
//! umask (the `connect` stream's own thread does, see `connection.rs`).
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

/// How long a thread without a connection waits for one before it exits.
pub(super) const IDLE_LIFETIME: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce() + Send>;

/// Runs each job on an idle thread, or on a new one when none is idle.
pub(super) struct Workers {
    jobs: Sender<Job>,
    waiting: Receiver<Job>,
    /// Threads waiting for a job, less the jobs sent to them and not yet taken: a job is sent only after it
    /// claimed one of these (so a sent job never waits for a thread), and a thread leaves only if it can take
    /// itself off this count (so it never leaves a claimed job behind).
    idle: Arc<AtomicUsize>,
    lifetime: Duration,
    name: &'static str,
}

impl Workers {
    pub(super) fn new(name: &'static str, lifetime: Duration) -> Workers {
        let (jobs, waiting) = crossbeam_channel::unbounded();
        Workers { jobs, waiting, idle: Arc::new(AtomicUsize::new(0)), lifetime, name }
    }

    /// Runs `job` on an idle thread, or starts one. An error is the thread's failure to start; `job` is then
    /// dropped without running.
    pub(super) fn run(&self, job: impl FnOnce() + Send + 'static) -> io::Result<()> {
        let job: Job = Box::new(job);
        if take_one(&self.idle) {
            // Cannot fail: `self` holds a receiver.
            let _ = self.jobs.send(job);
            return Ok(());
        }
        let (waiting, idle, lifetime) = (self.waiting.clone(), Arc::clone(&self.idle), self.lifetime);
        std::thread::Builder::new().name(self.name.to_owned()).spawn(move || {
            job();
            loop {
                idle.fetch_add(1, Ordering::AcqRel);
                let job = match waiting.recv_timeout(lifetime) {
                    Ok(job) => job,
                    Err(RecvTimeoutError::Timeout) if take_one(&idle) => return,
                    // A job claimed this thread (or another idle one) as the time ran out: it is on its way.
                    Err(RecvTimeoutError::Timeout) => match waiting.recv() {
                        Ok(job) => job,
                        Err(_) => return,
                    },
                    Err(RecvTimeoutError::Disconnected) => return,
                };
                job();
            }
        })?;
        Ok(())
    }
}

/// Takes one off `idle` unless it is 0.
fn take_one(idle: &AtomicUsize) -> bool {
    idle.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::thread::ThreadId;

    fn thread_of(workers: &Workers) -> ThreadId {
        let (tx, rx) = mpsc::channel();
        workers.run(move || tx.send(std::thread::current().id()).unwrap()).unwrap();
        rx.recv().unwrap()
    }

    fn wait_idle(workers: &Workers, n: usize) {
        while workers.idle.load(Ordering::Acquire) != n {
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_finished_thread_runs_the_next_job() {
        let workers = Workers::new("test", Duration::from_secs(60));
        let first = thread_of(&workers);
        wait_idle(&workers, 1);
        assert_eq!(thread_of(&workers), first);
        assert_ne!(first, std::thread::current().id());
    }

    #[test]
    fn jobs_at_once_get_threads_of_their_own() {
        let workers = Workers::new("test", Duration::from_secs(60));
        let barrier = Arc::new(std::sync::Barrier::new(4));
        let (tx, rx) = mpsc::channel();
        for _ in 0..3 {
            let (barrier, tx) = (Arc::clone(&barrier), tx.clone());
            // Each job waits for the others: they can only all finish on three threads.
            workers.run(move || tx.send(barrier.wait().is_leader()).unwrap()).unwrap();
        }
        // The leader may be this thread or any of the three jobs: exactly one of the four.
        let here = barrier.wait().is_leader();
        let leaders = rx.iter().take(3).filter(|leader| *leader).count() + usize::from(here);
        assert_eq!(leaders, 1, "one of the four waiters leads");
        wait_idle(&workers, 3);
    }

    #[test]
    fn an_idle_thread_leaves_after_its_lifetime() {
        let workers = Workers::new("test", Duration::from_millis(20));
        let first = thread_of(&workers);
        wait_idle(&workers, 1);
        wait_idle(&workers, 0);
        assert_ne!(thread_of(&workers), first, "a new thread, as the idle one left");
    }
}
