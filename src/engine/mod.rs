//! The ordered-response engine. A front end hands it, in request order, responses that are already known and
//! jobs (work that produces a response, or fails); it writes every response in that order. Resolver threads run
//! the jobs; one writer thread puts the responses on their fd, gathering all that are ready into one writev and
//! writing as soon as the next one in order is ready: it never waits for more input.
//!
//! When nothing is in flight and the front end says the frontend is waiting for this reply (`interactive`), the
//! job runs and is written on the front end's own thread: no thread hand-off adds latency. The threads
//! themselves start only when a stream turns out to be long (more than [`EngineConfig::inline_requests`] jobs):
//! a short stream, the daemon's usual fare, would spend more on starting and joining them than they save.
//!
//! Jobs go to the resolver threads in batches of consecutive requests ([`EngineConfig::jobs_per_hand_off`]),
//! which often share a delta chain. The window of work in flight is bounded by count and by the bytes of
//! resolved, unwritten responses, so memory stays flat over millions of requests.
//!
//! The engine knows nothing of the protocols: a job is "bytes to write, or an error" ([`Job`]), and an error ends
//! the stream after everything before it is written.
mod output;
#[cfg(test)]
mod tests;
mod writer;

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{Scope, ScopedJoinHandle};

use crossbeam_channel::{Receiver, Sender};

use crate::io::writev::WriteError;
use crate::response::encode::Response;
pub(crate) use output::{LiveCounters, Output, OutputStats, PIPE_SIZE, Target};

/// Work that produces one response. Jobs run on resolver threads, each of which owns a `Worker` (scratch state
/// such as a store resolver), or on the front end's thread with the front end's own worker.
pub(crate) trait Job: Send {
    type Worker: Send;
    type Error: Send;
    fn run(self, worker: &mut Self::Worker) -> Result<Response, Self::Error>;

    /// Jobs after the current one that [`Self::prefetch`] is called for.
    const AHEAD: usize = 0;

    /// Called before a job runs for each of the next [`Self::AHEAD`] jobs of its batch, the farthest first, with
    /// how far ahead each is: a job may start fetching the memory it will read first, so that its misses overlap
    /// the work before it.
    fn prefetch(&self, _worker: &mut Self::Worker, _ahead: usize) {}
}

/// Why a stream's output stopped: a job failed, or the fd could not take the bytes.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EngineError<E> {
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    Job(E),
}

/// How wide the engine is.
#[derive(Debug, Clone, Copy)]
pub struct EngineConfig {
    /// Resolver threads.
    pub threads: usize,
    /// Requests in flight at most.
    pub window: usize,
    /// Bytes of resolved responses waiting to be written at most (one larger response is always let through).
    pub window_bytes: usize,
    /// Bytes gathered into one writev at most, unless a single response is larger. Matches the pipe buffer:
    /// a writev larger than the pipe only makes the writer sleep in the middle of it.
    pub batch_bytes: usize,
    /// Jobs run on the front end's thread before the resolver and writer threads start.
    pub inline_requests: usize,
    /// Consecutive jobs handed to one resolver thread together. Neighbouring requests often share a delta
    /// chain (in pack order a whole object is followed by the deltas built on it): on one thread, the second
    /// finds the first's base where the first left it, where two threads would each inflate it. Pending jobs go
    /// out early whenever the front end may wait: for input, for the window, or to drain.
    pub jobs_per_hand_off: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            threads: cores(),
            window: 256,
            window_bytes: 64 << 20,
            batch_bytes: PIPE_SIZE,
            inline_requests: 0,
            // git.git, pack order, 20k blobs, --batch --buffer: 183 -> 111 MB inflated, wall 494 -> 420 ms (1 job
            // at a time: 472 ms; 64: 455 ms); random and history order unchanged.
            jobs_per_hand_off: 16,
        }
    }
}

/// The cores this process may run on, asked once: the standard library reads `/proc/self/cgroup` and the cgroup's
/// CPU quota files each time (about ten system calls), and a `--root` daemon builds a configuration for every
/// repository it opens.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
}

/// [`EngineConfig::inline_requests`] in the daemon. Starting three threads and joining them costs more than
/// resolving a dozen small blobs from a warm cache (benches/daemon.sh: a 10-request stream through `connect`
/// took 0.3–0.5 ms less this way).
pub(crate) const DEFAULT_INLINE_REQUESTS: usize = 16;

/// What a sequence number resolves to.
enum Item<E> {
    Write(Response, Target),
    Failed(E),
}

struct Finished<E> {
    seq: u64,
    item: Item<E>,
}

#[derive(Default)]
struct Window {
    /// Sequence numbers handed out but not yet written (or discarded after a failure).
    in_flight: usize,
    /// Bytes of resolved responses not yet written.
    pending_bytes: usize,
    /// The next sequence number to write.
    next_write: u64,
    failed: bool,
    /// The front end sleeps on `changed` (for room, or for a drain): only then does the writer wake it.
    waiting: bool,
}

struct Shared<'fd> {
    window: Mutex<Window>,
    changed: Condvar,
    output: Mutex<Output<'fd>>,
}

impl Shared<'_> {
    fn window(&self) -> MutexGuard<'_, Window> {
        self.window.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The front end's wait for the writer to change the window.
    fn wait<'w>(&self, mut window: MutexGuard<'w, Window>) -> MutexGuard<'w, Window> {
        window.waiting = true;
        let mut window = self.changed.wait(window).unwrap_or_else(|poisoned| poisoned.into_inner());
        window.waiting = false;
        window
    }

    /// The writer's word that the window changed: a wake-up only if the front end waits for one (a futex call
    /// per write otherwise).
    fn notify(&self, window: &Window) {
        if window.waiting {
            self.changed.notify_all();
        }
    }
}

impl<'fd> Shared<'fd> {
    fn output(&self) -> MutexGuard<'_, Output<'fd>> {
        self.output.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The resolver and writer threads, once started.
struct Threads<'scope, J: Job> {
    jobs: Sender<Vec<(u64, J)>>,
    finished: Sender<Vec<Finished<J::Error>>>,
    writer: ScopedJoinHandle<'scope, Option<EngineError<J::Error>>>,
}

/// Starts [`Threads`] on first need.
type StartThreads<'scope, J> = Box<dyn FnOnce(&Arc<Shared<'scope>>) -> Threads<'scope, J> + 'scope>;

/// Where the engine's threads are in their life.
enum Workers<'scope, J: Job> {
    NotStarted(StartThreads<'scope, J>),
    Running(Threads<'scope, J>),
    /// Joined (or never started) at the end of the stream.
    Closed,
}

/// A front end's handle on the engine, for one stream.
pub(crate) struct Engine<'scope, J: Job> {
    shared: Arc<Shared<'scope>>,
    workers: Workers<'scope, J>,
    /// Jobs still to run on the front end's thread before the threads start.
    inline_left: usize,
    /// Jobs numbered but not yet handed to a resolver thread ([`EngineConfig::jobs_per_hand_off`]).
    pending: Vec<(u64, J)>,
    next_seq: u64,
    config: EngineConfig,
}

impl<'scope, J: Job + 'scope> Engine<'scope, J>
where
    J::Worker: 'scope,
    J::Error: 'scope,
{
    /// An engine writing to `output`, whose resolver and writer threads start in `scope` when the stream proves
    /// long; each resolver thread gets a worker from `new_worker`.
    pub(crate) fn new<'env>(
        scope: &'scope Scope<'scope, 'env>,
        output: Output<'scope>,
        config: EngineConfig,
        new_worker: impl Fn() -> J::Worker + 'scope,
    ) -> Self {
        let shared = Arc::new(Shared { window: Mutex::default(), changed: Condvar::new(), output: Mutex::new(output) });
        let start_threads: StartThreads<'scope, J> = Box::new(move |shared: &Arc<Shared<'scope>>| {
            // A one-shot process: its resolvers' arenas writable whole (see `heap`).
            crate::heap::before_resolvers();
            let (jobs, job_queue) = crossbeam_channel::unbounded::<Vec<(u64, J)>>();
            let (finished, results) = crossbeam_channel::unbounded::<Vec<Finished<J::Error>>>();
            for _ in 0..config.threads.max(1) {
                let (job_queue, finished, mut worker) = (job_queue.clone(), finished.clone(), new_worker());
                scope.spawn(move || run_jobs(&mut worker, job_queue, finished, config.batch_bytes));
            }
            let writer_shared = Arc::clone(shared);
            let writer = scope.spawn(move || writer::write_in_order(&writer_shared, results, config));
            Threads { jobs, finished, writer }
        });
        Engine {
            shared,
            workers: Workers::NotStarted(start_threads),
            inline_left: config.inline_requests,
            pending: Vec::new(),
            next_seq: 0,
            config,
        }
    }
}

impl<'scope, J: Job> Engine<'scope, J> {
    fn threads(&mut self) -> &Threads<'scope, J> {
        self.workers = match std::mem::replace(&mut self.workers, Workers::Closed) {
            Workers::NotStarted(start) => Workers::Running(start(&self.shared)),
            workers => workers,
        };
        match &self.workers {
            Workers::Running(threads) => threads,
            _ => panic!("no request is sent after the engine closed"),
        }
    }

    fn threads_running(&self) -> bool {
        matches!(self.workers, Workers::Running(_))
    }

    /// Replaces the output fds; only valid while nothing is in flight (fast-import applies `--cat-blob-fd` after
    /// the stream's leading feature lines, before any response exists).
    pub(crate) fn set_output(&mut self, output: Output<'scope>) {
        debug_assert!(self.idle(), "the output changes before any response");
        let mut current = self.shared.output();
        let old = std::mem::replace(&mut *current, output);
        current.carry_counters(old);
    }

    /// Has a response failed (so nothing after it will be written)? The front end stops reading then.
    pub(crate) fn failed(&self) -> bool {
        self.shared.window().failed
    }

    /// Runs `job` for the next response. With `interactive` (the frontend waits for this reply), or early in the
    /// stream, and nothing in flight, it runs and is written right here with `worker`.
    pub(crate) fn job(
        &mut self,
        job: J,
        worker: &mut J::Worker,
        interactive: bool,
    ) -> Result<(), EngineError<J::Error>> {
        let early = !self.threads_running() && self.inline_left > 0;
        if (interactive || early) && self.idle() {
            self.inline_left = self.inline_left.saturating_sub(1);
            let response = job.run(worker).map_err(EngineError::Job)?;
            return self.write_here(response, Target::Main);
        }
        let seq = self.reserve()?;
        self.threads(); // started now, they are ready when the first batch is
        self.pending.push((seq, job));
        if interactive || self.pending.len() >= self.config.jobs_per_hand_off {
            self.hand_off();
        }
        Ok(())
    }

    /// Sends the pending jobs to the resolver threads, as one batch. The engine does so itself before it waits;
    /// a front end does so before anything that may wait for its frontend.
    pub(crate) fn hand_off(&mut self) {
        if !self.pending.is_empty() {
            let jobs = std::mem::take(&mut self.pending);
            self.threads().jobs.send(jobs).expect("resolvers outlive the front end's handle");
        }
    }

    /// Queues a response that is already known, in order.
    pub(crate) fn ready(&mut self, response: Response, target: Target) -> Result<(), EngineError<J::Error>> {
        self.hand_off();
        if self.idle() {
            return self.write_here(response, target);
        }
        let seq = self.reserve()?;
        let finished = vec![Finished { seq, item: Item::Write(response, target) }];
        self.threads().finished.send(finished).expect("writer lives");
        Ok(())
    }

    /// Waits until every response handed out so far is written (for state that must not run ahead of the
    /// output, such as marks a fatal error would export).
    pub(crate) fn drain(&mut self) -> Result<(), EngineError<J::Error>> {
        self.hand_off();
        let mut window = self.shared.window();
        while window.in_flight > 0 && !window.failed {
            window = self.shared.wait(window);
        }
        if window.failed {
            drop(window);
            return Err(self.take_failure());
        }
        Ok(())
    }

    /// Ends the stream: waits until everything handed out is written, or until the first failure in request
    /// order (returned; nothing after it was written). Returns the output's counters too.
    pub(crate) fn finish(mut self) -> (Result<(), EngineError<J::Error>>, OutputStats) {
        let failure = self.close();
        let stats = self.shared.output().stats();
        (failure.map_or(Ok(()), Err), stats)
    }

    /// Nothing in flight: the writer thread is idle and the front end may write directly.
    fn idle(&self) -> bool {
        let window = self.shared.window();
        window.in_flight == 0 && !window.failed
    }

    fn write_here(&mut self, response: Response, target: Target) -> Result<(), EngineError<J::Error>> {
        let written = self.shared.output().write(&[(response, target)]);
        self.next_seq += 1;
        self.shared.window().next_write = self.next_seq;
        // A failed write ends the stream: the front end reports it and finishes.
        Ok(written?)
    }

    /// Takes the next sequence number, waiting while the window is full. Once full, it waits until there is
    /// room for a whole batch of jobs again ([`EngineConfig::jobs_per_hand_off`], at most half the window):
    /// woken at every write, the front end would hand off one job at a time and sleep again each time.
    fn reserve(&mut self) -> Result<u64, EngineError<J::Error>> {
        let config = self.config;
        let full = |window: &Window| window.in_flight >= config.window || window.pending_bytes >= config.window_bytes;
        let mut window = self.shared.window();
        if full(&window) {
            // Only this thread adds to the window: full now, it stays full until the pending jobs run.
            drop(window);
            self.hand_off();
            let room = config.jobs_per_hand_off.min(config.window / 2).max(1);
            let roomy = |window: &Window| {
                window.in_flight + room <= config.window && window.pending_bytes < config.window_bytes
            };
            window = self.shared.window();
            while !window.failed && !roomy(&window) {
                window = self.shared.wait(window);
            }
        }
        if window.failed {
            drop(window);
            return Err(self.take_failure());
        }
        window.in_flight += 1;
        let seq = self.next_seq;
        self.next_seq += 1;
        Ok(seq)
    }

    /// After a failure: shut down and return the failure the writer saw first.
    fn take_failure(&mut self) -> EngineError<J::Error> {
        // Only the writer thread marks the window failed, and it always records why.
        self.close().expect("the writer records the failure it reports")
    }

    /// Closes the queues and joins the writer (if the threads ever started); returns the first failure in
    /// request order.
    fn close(&mut self) -> Option<EngineError<J::Error>> {
        self.hand_off();
        let Workers::Running(Threads { jobs, finished, writer }) =
            std::mem::replace(&mut self.workers, Workers::Closed)
        else {
            return None;
        };
        drop((jobs, finished));
        writer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

/// A resolver thread: runs jobs until the queue closes. The results of one batch of jobs go to the writer
/// together (or as soon as they hold `batch_bytes`): one wake-up of the writer per batch rather than per
/// response. A wake-up (futex and context switch on both sides) costs more than resolving a small blob: sent one
/// by one, 20,000 random small blobs spent a quarter of their CPU time in hand-offs.
fn run_jobs<J: Job>(
    worker: &mut J::Worker,
    jobs: Receiver<Vec<(u64, J)>>,
    finished: Sender<Vec<Finished<J::Error>>>,
    batch_bytes: usize,
) {
    for batch in jobs {
        let mut done = Vec::with_capacity(batch.len());
        let mut bytes = 0;
        let mut batch = batch.into_iter();
        while let Some((seq, job)) = batch.next() {
            for ahead in (1..=J::AHEAD).rev() {
                if let Some((_, next)) = batch.as_slice().get(ahead - 1) {
                    next.prefetch(worker, ahead);
                }
            }
            let item = match job.run(worker) {
                Ok(response) => {
                    bytes += response.len();
                    Item::Write(response, Target::Main)
                }
                Err(error) => Item::Failed(error),
            };
            done.push(Finished { seq, item });
            if bytes >= batch_bytes {
                bytes = 0;
                if finished.send(std::mem::take(&mut done)).is_err() {
                    return;
                }
            }
        }
        if !done.is_empty() && finished.send(done).is_err() {
            return;
        }
    }
}
