//! The pipeline behind one stream: the session's thread parses and applies stream state in order; resolver
//! threads find, inflate and delta-resolve objects; one writer thread puts every response on its fd in request
//! order, gathering all that are ready into one writev and writing as soon as the next one in order is ready —
//! it never waits for more input.
//!
//! When nothing is in flight and no further command is already buffered (a frontend that sends one request and
//! waits for its reply), the session resolves and writes on its own thread: no thread hand-off adds latency.
//! The threads themselves start only when a stream turns out to be long (more than
//! [`PipelineConfig::inline_requests`] `cat-blob` requests): a short stream, the daemon's usual fare, would spend
//! more on starting and joining them than they save.
//!
//! The window of work in flight is bounded by count and by the bytes of resolved, unwritten responses, so
//! memory stays flat over millions of requests.
use std::collections::BTreeMap;
use std::io::IoSlice;
use std::os::fd::RawFd;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{Scope, ScopedJoinHandle};

use crossbeam_channel::{Receiver, Sender};

use crate::fast_import::{LiveCounters, SessionError};
use crate::response::encode::Response;
use crate::response::writev::{FdSink, GatherWriter, IOV_MAX, WriteError};
use crate::store::cache::SharedCache;
use crate::store::{Kind, ObjectId, Resolver, Store};

/// How wide the pipeline is.
#[derive(Debug, Clone, Copy)]
pub struct PipelineConfig {
    /// Resolver threads.
    pub threads: usize,
    /// Requests in flight at most.
    pub window: usize,
    /// Bytes of resolved responses waiting to be written at most (one larger response is always let through).
    pub window_bytes: usize,
    /// Bytes gathered into one writev at most, unless a single response is larger. Matches the pipe buffer:
    /// a writev larger than the pipe only makes the writer sleep in the middle of it.
    pub batch_bytes: usize,
    /// `cat-blob` requests the session answers on its own thread before the resolver and writer threads start.
    pub inline_requests: usize,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        PipelineConfig { threads, window: 256, window_bytes: 64 << 20, batch_bytes: PIPE_SIZE, inline_requests: 0 }
    }
}

/// [`PipelineConfig::inline_requests`] in the daemon. Starting three threads and joining them costs more than
/// resolving a dozen small blobs from a warm cache (benches/daemon.sh: a 10-request stream through `connect`
/// took 0.3–0.5 ms less this way).
pub const DEFAULT_INLINE_REQUESTS: usize = 16;

/// The pipe buffer we ask for on the output fds (Linux's default `pipe-max-size`).
pub const PIPE_SIZE: usize = 1 << 20;

/// Which fd a response goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    CatBlob,
    /// `progress` lines: fd 1 whatever the cat-blob fd is.
    Stdout,
}

/// The two output fds. When they are the same fd, one writer serves both so that order holds.
pub struct Output {
    cat_blob: GatherWriter<FdSink>,
    stdout: Option<GatherWriter<FdSink>>,
    /// Bytes written to the cat-blob fd.
    pub bytes: u64,
    /// `<oid> missing` answers written.
    pub missing: u64,
    /// Also counts the cat-blob fd's bytes here, as they are written.
    live: Option<Arc<LiveCounters>>,
}

impl Output {
    pub fn new(cat_blob_fd: RawFd, stdout_fd: RawFd) -> Output {
        let cat_blob = FdSink::new(cat_blob_fd);
        cat_blob.grow_pipe(PIPE_SIZE);
        let stdout = (stdout_fd != cat_blob_fd).then(|| GatherWriter::new(FdSink::new(stdout_fd)));
        Output { cat_blob: GatherWriter::new(cat_blob), stdout, bytes: 0, missing: 0, live: None }
    }

    /// Adds every byte written to the cat-blob fd to `live` too.
    pub fn count_bytes_into(&mut self, live: Option<Arc<LiveCounters>>) {
        self.live = live;
    }

    /// Points responses at another fd (git applies `--cat-blob-fd` after the leading feature lines, before any
    /// response exists).
    pub fn set_cat_blob_fd(&mut self, cat_blob_fd: RawFd, stdout_fd: RawFd) {
        let live = self.live.take();
        *self = Output { bytes: self.bytes, missing: self.missing, live, ..Output::new(cat_blob_fd, stdout_fd) };
    }

    fn writer(&mut self, target: Target) -> &mut GatherWriter<FdSink> {
        match (target, &mut self.stdout) {
            (Target::Stdout, Some(stdout)) => stdout,
            _ => &mut self.cat_blob,
        }
    }

    /// Writes `responses`: each run of consecutive responses to the same fd in one writev (the gather-writer
    /// splits only at IOV_MAX or MAX_IO_SIZE, or where the kernel takes less).
    fn write(&mut self, responses: &[(Response, Target)]) -> Result<(), WriteError> {
        let mut start = 0;
        while start < responses.len() {
            let target = responses[start].1;
            let end = responses[start..].iter().position(|(_, t)| *t != target).map_or(responses.len(), |n| start + n);
            let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity((end - start) * 3);
            for (response, _) in &responses[start..end] {
                response.push_slices(&mut slices);
            }
            self.writer(target).write_all(&mut slices)?;
            if target == Target::CatBlob {
                let before = self.bytes;
                for (response, _) in &responses[start..end] {
                    self.bytes += response.len() as u64;
                    self.missing += u64::from(response.is_missing());
                }
                if let Some(live) = &self.live {
                    live.bytes.fetch_add(self.bytes - before, std::sync::atomic::Ordering::Relaxed);
                }
            }
            start = end;
        }
        Ok(())
    }

    /// writev calls made on the cat-blob fd.
    pub fn syscalls(&self) -> u64 {
        self.cat_blob.syscalls()
    }
}

/// What the output did over a stream.
#[derive(Debug, Clone, Copy, Default)]
pub struct OutputStats {
    /// Bytes written to the cat-blob fd.
    pub bytes: u64,
    /// `<oid> missing` answers.
    pub missing: u64,
    /// writev calls on the cat-blob fd.
    pub writev_calls: u64,
}

/// What a sequence number resolves to.
enum Item {
    Write(Response, Target),
    Fatal(SessionError),
}

struct Finished {
    seq: u64,
    item: Item,
}

struct Job {
    seq: u64,
    oid: ObjectId,
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
}

struct Shared {
    window: Mutex<Window>,
    changed: Condvar,
    output: Mutex<Output>,
}

impl Shared {
    fn window(&self) -> MutexGuard<'_, Window> {
        self.window.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn output(&self) -> MutexGuard<'_, Output> {
        self.output.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The resolver and writer threads, once started.
struct Threads<'scope> {
    jobs: Sender<Job>,
    finished: Sender<Finished>,
    writer: ScopedJoinHandle<'scope, Option<SessionError>>,
}

/// Starts [`Threads`] on first need.
type StartThreads<'scope> = Box<dyn FnOnce(&Arc<Shared>) -> Threads<'scope> + 'scope>;

/// Where the pipeline's threads are in their life.
enum Workers<'scope> {
    NotStarted(StartThreads<'scope>),
    Running(Threads<'scope>),
    /// Joined (or never started) at the end of the stream.
    Closed,
}

/// The session's handle on the pipeline.
pub struct Pipeline<'scope> {
    shared: Arc<Shared>,
    workers: Workers<'scope>,
    /// `cat-blob` requests still to answer on the session's thread before the threads start.
    inline_left: usize,
    next_seq: u64,
    store: &'scope Store,
    config: PipelineConfig,
}

impl<'scope> Pipeline<'scope> {
    /// A pipeline whose resolver and writer threads start in `scope` when the stream proves long. All resolvers
    /// share `cache`.
    pub fn new<'env>(
        scope: &'scope Scope<'scope, 'env>,
        store: &'scope Store,
        cache: SharedCache,
        output: Output,
        config: PipelineConfig,
    ) -> Pipeline<'scope> {
        let shared = Arc::new(Shared { window: Mutex::default(), changed: Condvar::new(), output: Mutex::new(output) });
        let start_threads: StartThreads<'scope> = Box::new(move |shared: &Arc<Shared>| {
            let (jobs, job_queue) = crossbeam_channel::unbounded::<Job>();
            let (finished, results) = crossbeam_channel::unbounded::<Finished>();
            for _ in 0..config.threads.max(1) {
                let (job_queue, finished) = (job_queue.clone(), finished.clone());
                let mut resolver = Resolver::sharing(cache.clone());
                scope.spawn(move || resolve_jobs(store, &mut resolver, job_queue, finished));
            }
            let writer_shared = Arc::clone(shared);
            let writer = scope.spawn(move || write_in_order(&writer_shared, results, config));
            Threads { jobs, finished, writer }
        });
        Pipeline {
            shared,
            workers: Workers::NotStarted(start_threads),
            inline_left: config.inline_requests,
            next_seq: 0,
            store,
            config,
        }
    }

    fn threads(&mut self) -> &Threads<'scope> {
        self.workers = match std::mem::replace(&mut self.workers, Workers::Closed) {
            Workers::NotStarted(start) => Workers::Running(start(&self.shared)),
            workers => workers,
        };
        match &self.workers {
            Workers::Running(threads) => threads,
            _ => panic!("no request is sent after the pipeline closed"),
        }
    }

    fn threads_running(&self) -> bool {
        matches!(self.workers, Workers::Running(_))
    }

    /// See [`Output::set_cat_blob_fd`]; only valid while nothing is in flight.
    pub fn set_cat_blob_fd(&mut self, cat_blob_fd: RawFd, stdout_fd: RawFd) {
        debug_assert!(self.idle(), "the cat-blob fd changes before any response");
        self.shared.output().set_cat_blob_fd(cat_blob_fd, stdout_fd);
    }

    /// Has a response failed (so nothing after it will be written)? The session stops reading then.
    pub fn failed(&self) -> bool {
        self.shared.window().failed
    }

    /// Answers `cat-blob` for an object of the repository. With `interactive` (no further command is waiting
    /// in the input), or early in the stream, and nothing in flight, it is resolved and written right here.
    pub fn cat_blob(&mut self, oid: ObjectId, interactive: bool, resolver: &mut Resolver) -> Result<(), SessionError> {
        let early = !self.threads_running() && self.inline_left > 0;
        if (interactive || early) && self.idle() {
            self.inline_left = self.inline_left.saturating_sub(1);
            let response = resolve(self.store, resolver, oid)?;
            return self.write_here(response, Target::CatBlob);
        }
        let seq = self.reserve()?;
        let job = Job { seq, oid };
        self.threads().jobs.send(job).expect("resolvers outlive the session");
        Ok(())
    }

    /// Queues a response that is already known (get-mark, ls, progress, a stream blob), in order.
    pub fn respond(&mut self, response: Response, target: Target) -> Result<(), SessionError> {
        if self.idle() {
            return self.write_here(response, target);
        }
        let seq = self.reserve()?;
        self.send(seq, Item::Write(response, target));
        Ok(())
    }

    /// Ends the stream: waits until everything in flight is written, or, with `error`, until everything
    /// before it is. Returns the failure to report (the first in request order) and the output's counters.
    pub fn finish(mut self, error: Option<SessionError>) -> (Result<(), SessionError>, OutputStats) {
        let failure = match error {
            None => self.close(),
            // Responses still in flight: the error takes its place after them.
            Some(error) if !self.idle() && !self.failed() => match self.reserve() {
                Ok(seq) => {
                    self.send(seq, Item::Fatal(error));
                    self.close()
                }
                Err(earlier) => Some(earlier),
            },
            // An earlier response failed (that failure wins), or everything before `error` is written.
            Some(error) => Some(self.close().unwrap_or(error)),
        };
        let output = self.shared.output();
        let stats = OutputStats { bytes: output.bytes, missing: output.missing, writev_calls: output.syscalls() };
        (failure.map_or(Ok(()), Err), stats)
    }

    /// Waits until every response handed out so far is written (for state that must not run ahead of the
    /// output, such as marks a fatal error would export).
    pub fn drain(&mut self) -> Result<(), SessionError> {
        let mut window = self.shared.window();
        while window.in_flight > 0 && !window.failed {
            window = self.shared.changed.wait(window).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        if window.failed {
            drop(window);
            return Err(self.take_failure());
        }
        Ok(())
    }

    /// Nothing in flight: the writer thread is idle and the session may write directly.
    fn idle(&self) -> bool {
        let window = self.shared.window();
        window.in_flight == 0 && !window.failed
    }

    fn write_here(&mut self, response: Response, target: Target) -> Result<(), SessionError> {
        let written = self.shared.output().write(&[(response, target)]);
        self.next_seq += 1;
        self.shared.window().next_write = self.next_seq;
        // A failed write ends the stream: the session reports it through `finish`.
        written.map_err(SessionError::from)
    }

    /// Takes the next sequence number, waiting while the window is full.
    fn reserve(&mut self) -> Result<u64, SessionError> {
        let mut window = self.shared.window();
        while !window.failed
            && (window.in_flight >= self.config.window || window.pending_bytes >= self.config.window_bytes)
        {
            window = self.shared.changed.wait(window).unwrap_or_else(|poisoned| poisoned.into_inner());
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

    fn send(&mut self, seq: u64, item: Item) {
        self.threads().finished.send(Finished { seq, item }).expect("the writer outlives the session");
    }

    /// After a failure: shut down and return the failure the writer saw first.
    fn take_failure(&mut self) -> SessionError {
        // Only the writer thread marks the window failed, and it always records why.
        self.close().expect("the writer records the failure it reports")
    }

    /// Closes the queues and joins the writer (if the threads ever started); returns the first failure in
    /// request order.
    fn close(&mut self) -> Option<SessionError> {
        let Workers::Running(Threads { jobs, finished, writer }) =
            std::mem::replace(&mut self.workers, Workers::Closed)
        else {
            return None;
        };
        drop((jobs, finished));
        writer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

/// A resolver thread: reads objects for `cat-blob` jobs until the queue closes.
fn resolve_jobs(store: &Store, resolver: &mut Resolver, jobs: Receiver<Job>, finished: Sender<Finished>) {
    for job in jobs {
        let item = match resolve(store, resolver, job.oid) {
            Ok(response) => Item::Write(response, Target::CatBlob),
            Err(error) => Item::Fatal(error),
        };
        if finished.send(Finished { seq: job.seq, item }).is_err() {
            return;
        }
    }
}

/// `cat-blob` of an object in the repository (git's `cat_blob`).
fn resolve(store: &Store, resolver: &mut Resolver, oid: ObjectId) -> Result<Response, SessionError> {
    match store.read(&oid, resolver)? {
        None => Ok(Response::missing(&oid)),
        Some(object) if object.kind == Kind::Blob => Ok(Response::blob(&oid, object.data)),
        Some(object) => Err(SessionError::NotABlob { oid, kind: object.kind }),
    }
}

/// The writer thread: puts finished responses on their fds in sequence order, everything that is ready in one
/// go. Returns the first failure in sequence order.
fn write_in_order(shared: &Shared, results: Receiver<Finished>, config: PipelineConfig) -> Option<SessionError> {
    let mut ready: BTreeMap<u64, Item> = BTreeMap::new();
    let mut failure: Option<SessionError> = None;
    let mut batch: Vec<(Response, Target)> = Vec::new();
    loop {
        let next_is_ready = ready.contains_key(&shared.window().next_write);
        if !next_is_ready || failure.is_some() {
            match results.recv() {
                Ok(done) => accept(shared, &mut ready, done),
                Err(_) => return failure,
            }
            // Everything else that is already finished joins this round.
            for done in results.try_iter() {
                accept(shared, &mut ready, done);
            }
        }
        if failure.is_some() {
            // Nothing after a failure is written; release the window so the session can finish.
            let discarded = std::mem::take(&mut ready);
            let mut window = shared.window();
            window.in_flight -= discarded.len();
            window.pending_bytes = 0;
            shared.changed.notify_all();
            continue;
        }
        // Read only now: while nothing was in flight the session may have written on its own thread. From here
        // on `ready` is not empty, so it counts as in flight and the session leaves the output to us.
        let next = shared.window().next_write;
        // The longest run of ready responses from `next`, within the batch limits.
        let (mut seq, mut bytes) = (next, 0usize);
        while batch.len() * 3 < IOV_MAX - 3 {
            let Some(item) = ready.remove(&seq) else { break };
            match item {
                Item::Write(response, target) => {
                    bytes += response.len();
                    batch.push((response, target));
                    seq += 1;
                }
                Item::Fatal(error) => {
                    failure = Some(error);
                    seq += 1;
                    break;
                }
            }
            if bytes >= config.batch_bytes {
                break;
            }
        }
        if seq == next {
            // The next response in order is still being resolved.
            continue;
        }
        if let Err(error) = shared.output().write(&batch)
            && failure.is_none()
        {
            failure = Some(error.into());
        }
        let mut window = shared.window();
        window.next_write = seq;
        window.in_flight -= (seq - next) as usize;
        window.pending_bytes = window.pending_bytes.saturating_sub(bytes);
        window.failed |= failure.is_some();
        shared.changed.notify_all();
        drop(window);
        batch.clear();
    }
}

fn accept(shared: &Shared, ready: &mut BTreeMap<u64, Item>, done: Finished) {
    if let Item::Write(response, _) = &done.item {
        shared.window().pending_bytes += response.len();
    }
    ready.insert(done.seq, done.item);
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::os::fd::AsRawFd;

    use super::*;
    use crate::store::StoreOptions;

    /// Runs `requests` batch (not interactive) `cat-blob` requests for absent objects with `inline_requests`;
    /// returns the output and whether the threads were started.
    fn run(requests: usize, inline_requests: usize) -> (Vec<u8>, bool) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("pack")).unwrap();
        let store = Store::open(dir.path(), gix_hash::Kind::Sha1, StoreOptions::default());
        let (read_end, write_end) = rustix::pipe::pipe().unwrap();
        let config = PipelineConfig { threads: 2, inline_requests, ..PipelineConfig::default() };
        let reader = std::thread::spawn(move || {
            let mut out = Vec::new();
            std::fs::File::from(read_end).read_to_end(&mut out).unwrap();
            out
        });
        let cache = SharedCache::new(1 << 20);
        let started = std::thread::scope(|scope| {
            let output = Output::new(write_end.as_raw_fd(), write_end.as_raw_fd());
            let mut pipeline = Pipeline::new(scope, &store, cache.clone(), output, config);
            let mut resolver = Resolver::sharing(cache);
            for n in 0..requests {
                let oid = ObjectId::from_hex(format!("{n:040x}").as_bytes()).unwrap();
                pipeline.cat_blob(oid, false, &mut resolver).unwrap();
            }
            let started = pipeline.threads_running();
            let (result, stats) = pipeline.finish(None);
            result.unwrap();
            assert_eq!(stats.missing, requests as u64);
            started
        });
        drop(write_end);
        (reader.join().unwrap(), started)
    }

    fn expected(requests: usize) -> Vec<u8> {
        (0..requests).flat_map(|n| format!("{n:040x} missing\n").into_bytes()).collect()
    }

    #[test]
    fn a_short_stream_is_answered_without_threads() {
        assert_eq!(run(16, 16), (expected(16), false));
        assert_eq!(run(0, 0), (expected(0), false));
    }

    #[test]
    fn a_longer_stream_starts_the_threads_and_keeps_the_order() {
        assert_eq!(run(17, 16), (expected(17), true));
        assert_eq!(run(300, 0), (expected(300), true));
    }
}
