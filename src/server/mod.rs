//! Daemon mode (`cat-blobd serve`): one process serves many fast-import streams over a Unix socket, all of them
//! on one [`Store`] (packs mapped once, one rescan on new packs) and one delta-base cache.
//!
//! ```text
//! main thread     Server::run: the accept loop (poll on the listener, the shutdown eventfd and a "connection
//!                 finished" eventfd); stops polling the listener at --max-connections, so that further clients
//!                 wait in the backlog (or are refused with --refuse-when-full)
//! signal thread   SIGTERM/SIGINT (blocked everywhere else, taken with sigwait) -> Shutdown::request
//! one thread per  connection::Connection::run: peer uid check, handshake, then fast_import::run with its own
//! connection      resolver and writer threads; a stalled client only ever blocks its own threads
//! ```
//!
//! How the two kinds of clients talk to the server is in [`protocol`]. On a shutdown request the server stops
//! accepting and removes its socket file, lets open streams finish for the grace period (a second request ends
//! it early), then cuts the rest ([`connection::Handle::cut`]), waits briefly for them to log, and returns.
//!
//! SIGPIPE: the daemon keeps it ignored (the Rust runtime's default; `main` restores the default action only in
//! the other modes), so a client that goes away ends its own stream with EPIPE, never the daemon.
pub mod client;
mod connection;
pub mod listener;
pub mod log;
pub mod peer;
pub mod protocol;
pub mod shutdown;
mod stats;

use std::collections::HashMap;
use std::io;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;

use crate::fast_import::SessionConfig;
use crate::store::Store;
use crate::store::cache::SharedCache;
use connection::{Connection, Handle};
use listener::{ListenError, SocketFile};
use log::{LogFormat, Logger, Value};
use peer::{Access, Peer};
use protocol::Reply;
use shutdown::{Notifier, Shutdown};
use stats::{Counters, add};

/// After the grace period, how long cut connections get to end and log before `run` returns anyway.
const CUT_WAIT: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Listen(#[from] ListenError),
    #[error("cannot set up the server: {0}")]
    Setup(#[source] io::Error),
    #[error("the accept loop failed: {0}")]
    Poll(#[source] io::Error),
}

/// How the daemon runs.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub socket: PathBuf,
    /// Permissions of the socket file (0600 by default: only the daemon's uid can even connect).
    pub socket_mode: u32,
    /// Connections served at once; more wait in the accept backlog (or are refused, see `refuse_when_full`).
    pub max_connections: usize,
    /// Connections are refused when `max_connections` are open, instead of waiting.
    pub refuse_when_full: bool,
    /// Uids besides the daemon's own that may connect.
    pub allow_uids: Vec<u32>,
    /// How long open streams may go on after a shutdown request.
    pub grace: Duration,
    pub log_format: LogFormat,
    /// The settings of every stream. `shared_cache` is the delta-base cache all connections share (one of
    /// `delta_cache_size` bytes is made if it is `None`); `fast_import_args` are replaced by each client's flags.
    pub session: SessionConfig,
}

/// What every connection thread shares.
pub(crate) struct State {
    store: Arc<Store>,
    cache: SharedCache,
    session: SessionConfig,
    access: Access,
    counters: Counters,
    log: Logger,
    started: Instant,
    /// Open connections, for the limit and for cutting them at shutdown.
    registry: Mutex<HashMap<u64, Arc<Handle>>>,
    /// Wakes the accept loop when a connection ends.
    finished: Notifier,
}

impl State {
    fn registry(&self) -> MutexGuard<'_, HashMap<u64, Arc<Handle>>> {
        self.registry.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn open_connections(&self) -> usize {
        self.registry().len()
    }

    /// The settings for one stream of a client of `uid`, with the client's fast-import flags.
    fn session_config(&self, uid: u32, args: Vec<Vec<u8>>) -> SessionConfig {
        SessionConfig {
            fast_import_args: args,
            may_name_files: self.access.may_name_files(uid),
            live: Some(Arc::clone(&self.counters.work)),
            ..self.session.clone()
        }
    }
}

/// A bound daemon, ready to [`run`](Server::run).
pub struct Server {
    listener: UnixListener,
    socket: SocketFile,
    state: Arc<State>,
    shutdown: Shutdown,
    max_connections: usize,
    refuse_when_full: bool,
    grace: Duration,
}

impl Server {
    /// Binds the socket (see [`listener::bind`]); nothing is accepted before [`Server::run`].
    pub fn bind(config: ServerConfig, store: Arc<Store>) -> Result<Server, ServerError> {
        let cache = config.session.cache.clone();
        let (listener, socket) = listener::bind(&config.socket, config.socket_mode)?;
        let state = State {
            store,
            cache,
            session: config.session,
            access: Access::for_this_process(config.allow_uids),
            counters: Counters::default(),
            log: Logger { format: config.log_format },
            started: Instant::now(),
            registry: Mutex::default(),
            finished: Notifier::new().map_err(ServerError::Setup)?,
        };
        Ok(Server {
            listener,
            socket,
            state: Arc::new(state),
            shutdown: Shutdown::new().map_err(ServerError::Setup)?,
            max_connections: config.max_connections.max(1),
            refuse_when_full: config.refuse_when_full,
            grace: config.grace,
        })
    }

    /// Requests a graceful stop of [`Server::run`] (from another thread, or the signal thread).
    pub fn shutdown_handle(&self) -> Shutdown {
        self.shutdown.clone()
    }

    pub fn socket_path(&self) -> &Path {
        self.socket.path()
    }

    pub fn logger(&self) -> Logger {
        self.state.log
    }

    /// Serves until a shutdown request, then stops gracefully (see the module docs). Returns once the socket file
    /// is gone and every connection has ended, or `CUT_WAIT` after cutting those still open (their threads then
    /// end with the process).
    pub fn run(self) -> Result<(), ServerError> {
        let state = Arc::clone(&self.state);
        state.log.log(
            "listening",
            &[
                ("socket", Value::Str(&self.socket.path().display().to_string())),
                ("pid", Value::U64(u64::from(std::process::id()))),
                ("max_connections", Value::U64(self.max_connections as u64)),
                ("packs_mapped", Value::U64(state.store.pack_count() as u64)),
            ],
        );
        let mut next_id = 1;
        while self.shutdown.requests() == 0 {
            let accepting = self.refuse_when_full || state.open_connections() < self.max_connections;
            let mut fds = vec![
                PollFd::new(self.shutdown.notifier().fd(), PollFlags::IN),
                PollFd::new(state.finished.fd(), PollFlags::IN),
            ];
            if accepting {
                fds.push(PollFd::new(&self.listener, PollFlags::IN));
            }
            match rustix::event::poll(&mut fds, None) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(err) => return Err(ServerError::Poll(err.into())),
            }
            let listener_ready = accepting && !fds[2].revents().is_empty();
            drop(fds);
            state.finished.drain();
            if listener_ready && self.shutdown.requests() == 0 {
                self.accept_ready(&mut next_id);
            }
        }
        self.stop()
    }

    /// Accepts the connections waiting in the backlog, within the limit.
    fn accept_ready(&self, next_id: &mut u64) {
        loop {
            let full = self.state.open_connections() >= self.max_connections;
            if full && !self.refuse_when_full {
                return;
            }
            let stream = match self.listener.accept() {
                Ok((stream, _)) => stream,
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => return,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => {
                    self.state.log.log("accept-failed", &[("error", Value::Str(&err.to_string()))]);
                    // Out of fds, most likely: the client stays in the backlog; do not spin on it.
                    std::thread::sleep(Duration::from_millis(50));
                    return;
                }
            };
            let id = *next_id;
            *next_id += 1;
            self.admit(id, stream, full);
        }
    }

    /// Starts a connection's thread, or refuses it when full (with `--refuse-when-full`).
    fn admit(&self, id: u64, stream: UnixStream, full: bool) {
        let state = &self.state;
        add(&state.counters.total, 1);
        let peer = Peer::of(&stream).unwrap_or(Peer { uid: u32::MAX, gid: u32::MAX, pid: 0 });
        let refuse = |stream: &UnixStream, message: String| {
            // Never block the accept loop: the reply fits in the empty socket buffer, or is dropped.
            let _ = stream.set_nonblocking(true);
            let _ = io::Write::write_all(&mut &*stream, &Reply::Fatal(message.clone().into_bytes()).encode());
            let _ = stream.shutdown(std::net::Shutdown::Write);
            add(&state.counters.refused, 1);
            state.log.log(
                "connection",
                &[
                    ("conn", Value::U64(id)),
                    ("kind", Value::Str("unknown")),
                    ("uid", Value::U64(u64::from(peer.uid))),
                    ("pid", Value::I64(i64::from(peer.pid))),
                    ("outcome", Value::Str("refused")),
                    ("error", Value::Str(&message)),
                ],
            );
        };
        if full {
            let message = format!(
                "the cat-blobd daemon is busy: {} connections are open (--max-connections); try again later",
                self.max_connections
            );
            return refuse(&stream, message);
        }
        if let Err(err) = stream.set_nonblocking(false) {
            return refuse(&stream, format!("cannot serve the connection: {err}"));
        }
        let stream = Arc::new(stream);
        let handle = match Handle::new(Arc::clone(&stream), peer) {
            Ok(handle) => Arc::new(handle),
            Err(err) => return refuse(&stream, format!("cannot serve the connection: {err}")),
        };
        state.registry().insert(id, Arc::clone(&handle));
        add(&state.counters.open, 1);
        let connection = Connection { id, stream: Arc::clone(&stream), peer, handle, state: Arc::clone(state) };
        let spawned = std::thread::Builder::new().name(format!("conn-{id}")).spawn(move || {
            let state = Arc::clone(&connection.state);
            let _done = Finished { state, id };
            connection.run();
        });
        if let Err(err) = spawned {
            // The closure (and its `Finished` guard) never ran: undo the registration here.
            state.registry().remove(&id);
            state.counters.open.fetch_sub(1, Ordering::Relaxed);
            refuse(&stream, format!("cannot start a thread for the connection: {err}"));
        }
    }

    /// The graceful stop: no new connections, a grace period for open ones, then cut the rest.
    fn stop(self) -> Result<(), ServerError> {
        let Server { listener, mut socket, state, shutdown, grace, .. } = self;
        drop(listener);
        socket.remove();
        let open = state.open_connections();
        state.log.log("shutdown", &[("open", Value::U64(open as u64)), ("grace_s", Value::F64(grace.as_secs_f64()))]);
        let requests = shutdown.requests();
        // A further request (a second SIGTERM) ends the grace period early.
        wait_for_connections(&state, &shutdown, grace, || shutdown.requests() > requests);
        let cut: Vec<Arc<Handle>> = state.registry().values().cloned().collect();
        for handle in &cut {
            handle.cut();
        }
        if !cut.is_empty() {
            wait_for_connections(&state, &shutdown, CUT_WAIT, || false);
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
        let left = abandoned.len();
        state.log.log(
            "stopped",
            &[
                ("connections_total", Value::U64(state.counters.total.load(Ordering::Relaxed))),
                ("cut", Value::U64(cut.len() as u64)),
                ("abandoned", Value::U64(left as u64)),
            ],
        );
        Ok(())
    }
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
        let timeout =
            Timespec { tv_sec: left.as_secs().try_into().unwrap_or(i64::MAX), tv_nsec: left.subsec_nanos().into() };
        let mut fds =
            [PollFd::new(shutdown.notifier().fd(), PollFlags::IN), PollFd::new(state.finished.fd(), PollFlags::IN)];
        if rustix::event::poll(&mut fds, Some(&timeout)).is_err() {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Unregisters a connection when its thread ends (even by panic) and wakes the accept loop.
struct Finished {
    state: Arc<State>,
    id: u64,
}

impl Drop for Finished {
    fn drop(&mut self) {
        self.state.registry().remove(&self.id);
        self.state.counters.open.fetch_sub(1, Ordering::Relaxed);
        self.state.finished.notify();
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
