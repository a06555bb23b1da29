//! Daemon mode (`cat-blobd serve`): one process serves many fast-import streams (and `cat-file` runs of `connect`
//! clients) over a Unix socket, all of them on one [`Store`] (packs mapped once, one rescan on new packs) and one
//! delta-base cache.
//!
//! ```text
//! main thread     Server::run: the accept loop (poll on the listener, the shutdown eventfd and a "connection
//!                 finished" eventfd). Checks each peer's uid as it accepts it: a refused peer gets its `fatal:`
//!                 line there and then, with no thread. Stops accepting at --max-connections + PENDING open
//!                 connections (the rest wait in the backlog), and backs off when out of fds.
//! signal thread   SIGTERM/SIGINT/SIGHUP, and SIGQUIT without grace (blocked everywhere else, taken with
//!                 sigwait) -> Shutdown
//! log thread      writes the log's bounded queue to stderr (see [`log`])
//! one thread per  connection::Connection::run: the hello (within --hello-timeout), then a stream slot
//! connection      ([`slots`]; `stats` takes none), then fast_import::run (or cat_file::run) with its own
//!                 resolver and writer threads; a stalled client only ever blocks its own threads
//! ```
//!
//! How the two kinds of clients talk to the server is in [`crate::wire::protocol`]. On a shutdown request the server stops
//! accepting, answers the clients still in the backlog and those without a stream yet `fatal: … shutting down`,
//! removes its socket file, lets open streams finish for the grace period (a second request ends it early), then
//! cuts the rest ([`connection::Handle::cut`]), waits briefly for them to log, waits for every marks export in
//! progress ([`crate::fast_import::marks::EXPORTS`]), and returns.
//!
//! SIGPIPE: `main` has the daemon ignore it (and restores the default action in the other modes), so a client that
//! goes away ends its own stream with EPIPE, never the daemon.
mod accept;
mod access;
mod cat_file;
mod connection;
pub(crate) mod listener;
pub mod log;
mod metrics;
mod relay;
mod repos;
mod root;
pub mod shutdown;
mod slots;
mod stats;
mod thread_fs;
mod workers;

use std::collections::HashMap;
use std::io;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;

use crate::fast_import::SessionConfig;
use crate::fast_import::marks::EXPORTS;
use crate::quota::Limit;
use crate::repo::Repository;
use crate::store::Store;
use accept::Acceptor;
use access::Access;
use connection::Handle;
use listener::{ListenError, SocketFile};
use log::{LogFormat, Logger, Value};
use repos::{OneRepo, Repos, Served};
use shutdown::{Notifier, Shutdown};
use slots::Slots;
use stats::Counters;
use workers::Workers;

/// After the grace period, how long cut connections get to end and log before `run` returns anyway.
const CUT_WAIT: Duration = Duration::from_secs(2);
/// Connections accepted beyond --max-connections: in their hello, waiting for a slot, or asking for `stats`.
const PENDING: usize = 1024;
/// How long the stop waits for the log to reach stderr.
const LOG_FLUSH_WAIT: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Listen(#[from] ListenError),
    #[error("cannot set up the server: {0}")]
    Setup(#[source] io::Error),
    #[error("the accept loop failed: {0}")]
    Poll(#[source] io::Error),
    #[error(transparent)]
    Metrics(#[from] metrics::MetricsError),
    #[error("cannot serve the root {}: {source}", path.display())]
    Root {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// How the daemon runs.
pub struct ServerConfig {
    pub socket: PathBuf,
    /// Permissions of the socket file (0600 by default: only the daemon's uid can even connect).
    pub socket_mode: u32,
    /// Streams served at once; more wait for a slot (or are refused, see `refuse_when_full`).
    pub max_connections: usize,
    /// Streams are refused when `max_connections` are open, instead of waiting.
    pub refuse_when_full: bool,
    /// Uids besides the daemon's own that may connect.
    pub allow_uids: Vec<u32>,
    /// How long open streams may go on after a shutdown request.
    pub grace: Duration,
    /// How long a client may take to say what it is (its first byte, or its whole `connect` hello).
    pub hello_timeout: Duration,
    /// Marks one stream may hold, and all streams together (each 20 to 60 bytes).
    pub max_marks: u64,
    pub max_marks_total: u64,
    /// Caps all streams together share on the blobs they define and the bytes of those they spill (each stream's
    /// own are in `session`).
    pub max_stream_blobs_total: u64,
    pub max_spill_bytes_total: u64,
    pub log_format: LogFormat,
    /// What is served: one repository, or every one under a root.
    pub serving: Serving,
    /// Where to serve Prometheus metrics (`/metrics`), a loopback address.
    pub metrics: Option<std::net::SocketAddr>,
}

/// What a daemon serves.
// Made once, when the daemon starts: the size of the larger variant costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Serving {
    /// `serve --git-dir` (or the repository found from the daemon's environment and directory).
    One {
        /// The repository, for the cat-file front end's references and settings.
        repo: Repository,
        store: Store,
        /// The settings of every stream, with the delta-base cache all connections share; `fast_import_args`
        /// are replaced by each client's flags.
        session: SessionConfig,
    },
    /// `serve --root DIR`: each client's repository under `DIR`.
    Root(RootConfig),
}

/// How a `--root` daemon serves its repositories.
#[derive(Debug)]
pub struct RootConfig {
    pub dir: PathBuf,
    /// cat-blobd's own settings, for every repository opened.
    pub cli: crate::cli::Cli,
    /// `--allow-writes`: write-through for clients of the daemon's uid.
    pub allow_writes: bool,
    pub memory_budget: u64,
    pub max_open_repositories: usize,
}

/// The shared caps every stream of the daemon counts against.
struct SharedLimits {
    marks: Limit,
    stream_blobs: Option<(Arc<AtomicU64>, u64)>,
    spill_bytes: Option<(Arc<AtomicU64>, u64)>,
}

/// What every connection thread shares.
pub(crate) struct State {
    repos: Repos,
    limits: SharedLimits,
    access: Access,
    counters: Counters,
    log: Logger,
    started: Instant,
    hello_timeout: Duration,
    slots: Slots,
    refuse_when_full: bool,
    /// Open connections, for the limit and for cutting them at shutdown.
    registry: Mutex<HashMap<u64, Arc<Handle>>>,
    /// Wakes the accept loop when a connection ends.
    finished: Notifier,
    /// The threads that relay `connect` streams' messages to their clients, kept for the next connection.
    relays: Workers,
}

impl State {
    fn registry(&self) -> MutexGuard<'_, HashMap<u64, Arc<Handle>>> {
        self.registry.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn open_connections(&self) -> usize {
        self.registry().len()
    }

    /// The settings for one stream from `served` of a client of `uid`, with the client's fast-import flags.
    fn session_config(&self, served: &Served, uid: u32, args: Vec<Vec<u8>>) -> SessionConfig {
        let base = served.session();
        let mut config = SessionConfig {
            fast_import_args: args,
            may_name_files: self.access.may_name_files(uid),
            // git would write with the daemon's rights: only for its own uid.
            write_through: base.write_through.clone().filter(|_| uid == self.access.server_uid),
            live: Some(Arc::clone(&self.counters.work)),
            mark_limits: self.limits.marks.clone(),
            ..base.clone()
        };
        config.stream_blob_limits.count.shared = self.limits.stream_blobs.clone();
        config.stream_blob_limits.spill_bytes.shared = self.limits.spill_bytes.clone();
        config
    }
}

/// A bound daemon, ready to [`run`](Server::run).
pub struct Server {
    listener: UnixListener,
    metrics: Option<std::net::TcpListener>,
    socket: SocketFile,
    state: Arc<State>,
    shutdown: Shutdown,
    max_connections: usize,
    grace: Duration,
}

impl Server {
    /// Binds the socket (see [`listener::bind`]); nothing is accepted before [`Server::run`].
    pub fn bind(config: ServerConfig) -> Result<Server, ServerError> {
        let counters = Counters::default();
        let shared = |held: &Arc<AtomicU64>, most: u64| Some((Arc::clone(held), most));
        let limits = SharedLimits {
            marks: Limit {
                per_stream: Some(config.max_marks),
                shared: shared(&counters.marks_held, config.max_marks_total),
            },
            stream_blobs: shared(&counters.stream_blobs_held, config.max_stream_blobs_total),
            spill_bytes: shared(&counters.spill_bytes_held, config.max_spill_bytes_total),
        };
        let max_connections = config.max_connections.max(1);
        let repos = match config.serving {
            Serving::One { repo, store, session } => Repos::One(Arc::new(OneRepo { repo, store, session })),
            Serving::Root(root) => {
                let dir = root::Root::open(&root.dir).map_err(|source| ServerError::Root { path: root.dir, source })?;
                let limits = root::PoolLimits {
                    memory_budget: root.memory_budget,
                    max_open: root.max_open_repositories.max(1),
                    max_connections,
                };
                Repos::Root(Box::new(root::Pool::new(dir, root.cli, root.allow_writes, limits)))
            }
        };
        let metrics = config.metrics.map(metrics::bind).transpose()?;
        let (listener, socket) = listener::bind(&config.socket, config.socket_mode)?;
        let state = State {
            repos,
            limits,
            access: Access::for_this_process(config.allow_uids),
            counters,
            log: Logger::new(config.log_format).map_err(ServerError::Setup)?,
            started: Instant::now(),
            hello_timeout: config.hello_timeout,
            slots: Slots::new(max_connections),
            refuse_when_full: config.refuse_when_full,
            registry: Mutex::default(),
            finished: Notifier::new().map_err(ServerError::Setup)?,
            relays: Workers::new("relay", workers::IDLE_LIFETIME),
        };
        Ok(Server {
            listener,
            metrics,
            socket,
            state: Arc::new(state),
            shutdown: Shutdown::new().map_err(ServerError::Setup)?,
            max_connections,
            grace: config.grace,
        })
    }

    /// Requests a graceful stop of [`Server::run`] (from another thread, or the signal thread).
    pub fn shutdown_handle(&self) -> Shutdown {
        self.shutdown.clone()
    }

    pub fn logger(&self) -> Logger {
        self.state.log.clone()
    }

    /// Serves until a shutdown request, then stops gracefully (see the module docs). Returns once the socket file
    /// is gone and every connection has ended, or `CUT_WAIT` after cutting those still open (their threads then
    /// end with the process), never while a marks file is being written.
    pub fn run(mut self) -> Result<(), ServerError> {
        let state = Arc::clone(&self.state);
        // Before `listening`: whoever waits for that finds the address here.
        if let Some(metrics) = self.metrics.take() {
            let addr = metrics.local_addr().map_err(ServerError::Setup)?.to_string();
            state.log.log("metrics", &[("address", Value::Str(&addr))]);
            metrics::spawn(metrics, Arc::clone(&state)).map_err(ServerError::Setup)?;
        }
        state.log.log(
            "listening",
            &[
                ("socket", Value::Str(&self.socket.path().display().to_string())),
                ("pid", Value::U64(u64::from(std::process::id()))),
                ("max_connections", Value::U64(self.max_connections as u64)),
                ("packs_mapped", Value::U64(state.repos.pack_count() as u64)),
            ],
        );
        let mut acceptor = Acceptor::new(&self.listener, Arc::clone(&state));
        while self.shutdown.requests() == 0 {
            let now = Instant::now();
            let accepting = state.open_connections() < self.max_connections + PENDING && acceptor.backoff_over(now);
            let mut fds = vec![
                PollFd::new(self.shutdown.notifier().fd(), PollFlags::IN),
                PollFd::new(state.finished.fd(), PollFlags::IN),
            ];
            if accepting {
                fds.push(PollFd::new(&self.listener, PollFlags::IN));
            }
            let timeout = acceptor.next_timer(now).map(timespec);
            match rustix::event::poll(&mut fds, timeout.as_ref()) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(err) => return Err(ServerError::Poll(err.into())),
            }
            let listener_ready = accepting && !fds[2].revents().is_empty();
            drop(fds);
            state.finished.drain();
            acceptor.tick(Instant::now());
            if accepting && self.shutdown.requests() == 0 {
                acceptor.accept_ready(self.max_connections + PENDING, listener_ready);
            }
        }
        // No new clients from here: those in the backlog and those without a stream are told why.
        self.socket.remove();
        acceptor.refuse_backlog();
        acceptor.finish();
        drop(acceptor);
        let Server { listener, shutdown, grace, .. } = self;
        drop(listener);
        stop(&state, &shutdown, grace)
    }
}

/// The graceful stop: clients without a stream are told, a grace period for open streams, then cut the rest.
fn stop(state: &State, shutdown: &Shutdown, grace: Duration) -> Result<(), ServerError> {
    state.slots.close();
    for handle in state.registry().values() {
        handle.cut_unless_streaming();
    }
    let open = state.slots.counts().0;
    state.log.log("shutdown", &[("open", Value::U64(open as u64)), ("grace_s", Value::F64(grace.as_secs_f64()))]);
    let requests = shutdown.requests();
    // A further request (a second SIGTERM) ends the grace period early; SIGQUIT skips it.
    wait_for_connections(state, shutdown, grace, || shutdown.requests() > requests || shutdown.immediate());
    let cut: Vec<Arc<Handle>> = state.registry().values().cloned().collect();
    for handle in &cut {
        handle.cut();
    }
    if !cut.is_empty() {
        wait_for_connections(state, shutdown, CUT_WAIT, || false);
    }
    // A marks file being written is finished, whatever the time: leaving its lock (or nothing) behind would lose
    // it. Streams that get to their export after this point do not write it, as if the process had died first.
    if EXPORTS.close_and_wait() {
        // The streams that were exporting still have to send their exit status: without it their `connect`
        // reports a daemon that closed the connection, though the marks file is there.
        wait_for_connections(state, shutdown, CUT_WAIT, || false);
    }
    // Connections still open now are stuck writing to a client that does not read; they end with the process.
    let abandoned: Vec<(u64, Arc<Handle>)> =
        state.registry().iter().map(|(id, handle)| (*id, Arc::clone(handle))).collect();
    for (id, handle) in &abandoned {
        state.log.log(
            "connection",
            &[
                ("conn", Value::U64(*id)),
                ("uid", Value::U64(u64::from(handle.peer.uid))),
                ("pid", Value::I64(i64::from(handle.peer.pid))),
                ("outcome", Value::Str("abandoned")),
            ],
        );
    }
    state.log.log(
        "stopped",
        &[
            ("connections_total", Value::U64(state.counters.total.load(Ordering::Relaxed))),
            ("cut", Value::U64(cut.len() as u64)),
            ("abandoned", Value::U64(abandoned.len() as u64)),
            ("log_dropped", Value::U64(state.log.dropped())),
        ],
    );
    state.log.flush(LOG_FLUSH_WAIT);
    Ok(())
}

fn timespec(duration: Duration) -> Timespec {
    Timespec { tv_sec: duration.as_secs().try_into().unwrap_or(i64::MAX), tv_nsec: duration.subsec_nanos().into() }
}

/// Waits until no connection is open, `limit` has passed, or `interrupt` says so.
fn wait_for_connections(state: &State, shutdown: &Shutdown, limit: Duration, interrupt: impl Fn() -> bool) {
    let deadline = Instant::now() + limit;
    loop {
        shutdown.notifier().drain();
        state.finished.drain();
        let left = deadline.saturating_duration_since(Instant::now());
        if state.open_connections() == 0 || left.is_zero() || interrupt() {
            return;
        }
        let mut fds =
            [PollFd::new(shutdown.notifier().fd(), PollFlags::IN), PollFd::new(state.finished.fd(), PollFlags::IN)];
        if rustix::event::poll(&mut fds, Some(&timespec(left))).is_err() {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Raises the soft limit on open fds to the hard limit: each connection holds a few (its socket, the fds a
/// `connect` client passed, an eventfd, a pipe).
pub fn raise_fd_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let _ = setrlimit(Resource::Nofile, rustix::process::Rlimit { current: limit.maximum, ..limit });
    }
}
