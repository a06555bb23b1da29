//! One connection on its own thread: check the peer's uid, tell from the first bytes what the connection is (see
//! [`protocol`](crate::wire::protocol)), run its stream on the shared store — a plain stream on the socket itself, a
//! `connect` client's stream straight on the fds it passed — and log one line when it ends.
//!
//! A `connect` stream's messages (`fatal:`, `error:`, `warning:`, `--stats`) reach the client's stderr through a
//! pipe that this thread relays ([`relay`](super::relay)), because one case must differ from a plain copy: when a
//! write to the frontend fails with EPIPE, `cat-blobd` run directly is killed by SIGPIPE and prints nothing, so the
//! relay drops the session's `fatal: write to frontend failed: Broken pipe` (and anything after it) and the client
//! is told to raise SIGPIPE.
use std::io::{self, IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::net::Shutdown as Direction;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags};

use super::State;
use super::log::Value;
use super::relay::StderrRelay;
use super::repos::{Refusal, Served};
use super::shutdown::{Cancel, CancelReason, CancellableInput};
use super::slots::NoSlot;
use super::stats::add;
use crate::fast_import::{self, Exit, Outcome, StreamIo};
use crate::fatal::Bytes;
use crate::wire::peer::Peer;
use crate::wire::protocol::{
    self, CONNECT_MAGIC, CWD_FD, Hello, HelloParser, Kind, MAX_FDS, ProtocolError, Reply, STATS_MAGIC,
};

/// How long closing a plain connection waits for the client to stop sending (so that it reads every response
/// and then a clean end of file, not a reset), and how long a reply may wait for room in the socket buffer.
const LINGER: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub(super) enum ConnectionError {
    #[error("cannot read the connection: {0}")]
    Io(#[from] io::Error),
    #[error("bad hello: {0}")]
    Protocol(#[from] ProtocolError),
    #[error("{}", .0.message())]
    Cut(CancelReason),
}

/// Why a client's stream could not start, once its repository was found.
#[derive(Debug, thiserror::Error)]
pub(super) enum StreamError {
    #[error("cannot enter the client's working directory: {0}")]
    EnterDirectory(io::Error),
}

/// What the accept loop and the shutdown keep of an open connection.
#[derive(Debug)]
pub(super) struct Handle {
    stream: Arc<UnixStream>,
    pub peer: Peer,
    pub cancel: Cancel,
    /// The connection is a plain stream: the socket is its output too.
    plain: AtomicBool,
    /// The connection has a stream slot: it is served through the grace period.
    streaming: AtomicBool,
}

impl Handle {
    pub(super) fn new(stream: Arc<UnixStream>, peer: Peer) -> io::Result<Handle> {
        let (plain, streaming) = (AtomicBool::new(false), AtomicBool::new(false));
        Ok(Handle { stream, peer, cancel: Cancel::new()?, plain, streaming })
    }

    /// Cuts the connection when the grace period is over: its input fails at once (the stream ends with a
    /// `fatal:` line after the responses already in flight). A plain connection is also shut down both ways, which
    /// ends a write blocked on a client that does not read; a `connect` client's socket only for reading, so that
    /// it still gets its exit status.
    pub(super) fn cut(&self) {
        self.cancel.cancel(CancelReason::Shutdown);
        let how = if self.plain.load(Ordering::SeqCst) { Direction::Both } else { Direction::Read };
        let _ = self.stream.shutdown(how);
    }

    /// At a shutdown request: a connection still in its hello is told the daemon is shutting down (one waiting
    /// for a slot is told so by [`Slots::close`](super::slots::Slots::close)).
    pub(super) fn cut_unless_streaming(&self) {
        if !self.streaming.load(Ordering::SeqCst) {
            self.cancel.cancel(CancelReason::Shutdown);
        }
    }
}

/// What a connection turned out to be, after its first bytes.
enum Opening {
    Stream(Stream),
    Stats,
}

/// A stream, ready to run once it has a slot.
enum Stream {
    /// A plain stream, with the bytes read while deciding.
    Plain(Vec<u8>),
    Connect(Hello, Vec<OwnedFd>),
}

/// What the log line says about a connection.
struct Record {
    kind: &'static str,
    outcome: &'static str,
    /// The status the stream ended with (for a `connect` client: what it exits with).
    exit: Option<u8>,
    requests: u64,
    bytes: u64,
    error: Option<String>,
    /// The repository a `--root` daemon served the stream from.
    repository: Option<String>,
    /// How long opening it took, when this stream opened it.
    open_ms: Option<f64>,
}

impl Record {
    fn refused(kind: &'static str, error: String) -> Record {
        Record {
            kind,
            outcome: "refused",
            exit: None,
            requests: 0,
            bytes: 0,
            error: Some(error),
            repository: None,
            open_ms: None,
        }
    }

    fn stream(kind: &'static str, outcome: &Outcome, cancel: Option<CancelReason>, broken_pipe: bool) -> Record {
        let name = match (outcome.exit, cancel) {
            _ if broken_pipe => "broken-pipe",
            (Exit::Success, _) => "ok",
            (_, Some(CancelReason::Shutdown)) => "cut",
            (_, Some(CancelReason::ClientGone)) => "client-gone",
            (Exit::Failure, None) => "error",
            (Exit::Fatal, None) => "fatal",
            (Exit::Usage, None) => "usage",
        };
        Record {
            kind,
            outcome: name,
            exit: Some(if broken_pipe { 128 + protocol::SIGPIPE as u8 } else { outcome.code() }),
            requests: outcome.stats.requests,
            bytes: outcome.stats.bytes,
            error: outcome.fatal.clone(),
            repository: None,
            open_ms: None,
        }
    }

    fn panicked(kind: &'static str) -> Record {
        let error = Some("internal error: the stream's thread panicked".to_owned());
        Record {
            kind,
            outcome: "panic",
            exit: Some(128),
            requests: 0,
            bytes: 0,
            error,
            repository: None,
            open_ms: None,
        }
    }
}

/// An accepted connection, run by [`Connection::run`] on its own thread.
pub(super) struct Connection {
    pub id: u64,
    pub stream: Arc<UnixStream>,
    pub peer: Peer,
    pub handle: Arc<Handle>,
    pub state: Arc<State>,
    /// When the connection was accepted: its hello is due `--hello-timeout` later.
    pub accepted: Instant,
}

impl Connection {
    /// Serves the connection to its end and logs it. (Its peer's uid was checked by the accept loop.)
    pub(super) fn run(self) {
        let started = Instant::now();
        let record = match self.open(self.accepted + self.state.hello_timeout) {
            Ok(Opening::Stats) => self.stats(),
            Ok(Opening::Stream(stream)) => self.stream_in_slot(stream),
            Err(err) => {
                let message = err.to_string();
                self.refuse(&message);
                Record::refused("unknown", message)
            }
        };
        self.account(&record, started.elapsed());
    }

    /// Runs a stream once a slot is free (or refuses it: full with --refuse-when-full, or shutting down).
    fn stream_in_slot(&self, stream: Stream) -> Record {
        let kind = if matches!(stream, Stream::Plain(_)) { "plain" } else { "connect" };
        let state = &self.state;
        let _slot = match state.slots.take(!state.refuse_when_full) {
            Ok(slot) => slot,
            Err(NoSlot::Full) => {
                let message = format!(
                    "the cat-blobd daemon is busy: {} streams are open (--max-connections); try again later",
                    state.slots.counts().0
                );
                self.refuse(&message);
                return Record::refused(kind, message);
            }
            Err(NoSlot::Closed) => {
                let message = CancelReason::Shutdown.message().to_owned();
                self.refuse(&message);
                return Record::refused(kind, message);
            }
        };
        self.handle.streaming.store(true, Ordering::SeqCst);
        match stream {
            Stream::Plain(prefix) => self.plain(prefix),
            Stream::Connect(hello, fds) => self.connect(hello, fds),
        }
    }

    fn account(&self, record: &Record, duration: Duration) {
        let counters = &self.state.counters;
        match (record.outcome, record.exit) {
            ("refused", _) => add(&counters.refused, 1),
            (_, Some(0)) => add(&counters.streams_ok, 1),
            (_, Some(_)) => add(&counters.streams_failed, 1),
            (_, None) => {}
        }
        let mut fields = vec![
            ("conn", Value::U64(self.id)),
            ("kind", Value::Str(record.kind)),
            ("uid", Value::U64(u64::from(self.peer.uid))),
            ("pid", Value::I64(i64::from(self.peer.pid))),
            ("requests", Value::U64(record.requests)),
            ("bytes", Value::U64(record.bytes)),
            ("duration_ms", Value::F64(duration.as_secs_f64() * 1e3)),
            ("outcome", Value::Str(record.outcome)),
        ];
        if let Some(exit) = record.exit {
            fields.push(("exit", Value::U64(u64::from(exit))));
        }
        if let Some(error) = &record.error {
            fields.push(("error", Value::Str(error)));
        }
        if let Some(open_ms) = record.open_ms {
            fields.push(("open_ms", Value::F64(open_ms)));
        }
        // Last: a log reader may take the rest of the line as the path.
        if let Some(repository) = &record.repository {
            fields.push(("repository", Value::Str(repository)));
        }
        self.state.log.log("connection", &fields);
    }

    /// Reads until the first bytes say what the connection is; a `connect` hello is read whole, with its fds,
    /// by `deadline`.
    fn open(&self, deadline: Instant) -> Result<Opening, ConnectionError> {
        let mut received = Vec::new();
        let mut fds = Vec::new();
        let mut chunk = vec![0u8; 64 << 10];
        let mut hello = HelloParser::default();
        loop {
            let n = self.receive(&mut chunk, &mut fds, deadline)?;
            received.extend_from_slice(&chunk[..n]);
            match protocol::classify(&received) {
                // Any fds a plain client sent are closed here, unused.
                Kind::Plain => return Ok(Opening::Stream(Stream::Plain(received))),
                Kind::Undecided if n == 0 => return Ok(Opening::Stream(Stream::Plain(received))),
                Kind::Undecided => {}
                Kind::Stats if received.len() == STATS_MAGIC.len() => return Ok(Opening::Stats),
                Kind::Stats => return Err(ProtocolError::TrailingBytes.into()),
                Kind::Connect => {
                    let body = &received[CONNECT_MAGIC.len()..];
                    match hello.advance(body)? {
                        Some(hello_done) => {
                            if hello.used() != body.len() {
                                return Err(ProtocolError::TrailingBytes.into());
                            }
                            if hello_done.fd_numbers.len() != fds.len() {
                                let (expected, received) = (hello_done.fd_numbers.len(), fds.len());
                                return Err(ProtocolError::FdCountMismatch { expected, received }.into());
                            }
                            return Ok(Opening::Stream(Stream::Connect(hello_done, fds)));
                        }
                        None if n == 0 => return Err(ProtocolError::Truncated.into()),
                        None => {}
                    }
                }
            }
        }
    }

    /// One `recvmsg` once the socket is readable: bytes into `chunk`, passed fds (close-on-exec) onto `fds`,
    /// refused as soon as their running total passes [`MAX_FDS`]. Fails at `deadline` or when the connection is
    /// cut.
    fn receive(&self, chunk: &mut [u8], fds: &mut Vec<OwnedFd>, deadline: Instant) -> Result<usize, ConnectionError> {
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let message = loop {
            self.wait_readable(deadline)?;
            let mut iov = [IoSliceMut::new(chunk)];
            let flags = RecvFlags::CMSG_CLOEXEC | RecvFlags::DONTWAIT;
            match rustix::net::recvmsg(&*self.stream, &mut iov, &mut control, flags) {
                Err(Errno::INTR | Errno::AGAIN) => continue,
                result => break result.map_err(io::Error::from)?,
            }
        };
        for message in control.drain() {
            if let RecvAncillaryMessage::ScmRights(passed) = message {
                fds.extend(passed);
            }
        }
        if message.flags.contains(ReturnFlags::CTRUNC) {
            return Err(ProtocolError::ControlTruncated.into());
        }
        if fds.len() > MAX_FDS {
            return Err(ProtocolError::FdsOverLimit.into());
        }
        Ok(message.bytes)
    }

    /// Waits until the socket is readable, the hello's deadline passes, or the connection is cut.
    fn wait_readable(&self, deadline: Instant) -> Result<(), ConnectionError> {
        loop {
            if let Some(reason) = self.handle.cancel.reason() {
                return Err(ConnectionError::Cut(reason));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ProtocolError::HelloTimeout(self.state.hello_timeout).into());
            }
            let timeout =
                Timespec { tv_sec: left.as_secs().try_into().unwrap_or(i64::MAX), tv_nsec: left.subsec_nanos().into() };
            let mut fds =
                [PollFd::new(&*self.stream, PollFlags::IN), PollFd::new(self.handle.cancel.fd(), PollFlags::IN)];
            match rustix::event::poll(&mut fds, Some(&timeout)) {
                Ok(_) if !fds[0].revents().is_empty() => return Ok(()),
                Ok(_) | Err(Errno::INTR) => {}
                Err(err) => return Err(io::Error::from(err).into()),
            }
        }
    }

    /// A plain stream: the socket is its input and its output; messages go nowhere but the log.
    fn plain(&self, prefix: Vec<u8>) -> Record {
        self.handle.plain.store(true, Ordering::SeqCst);
        if self.handle.cancel.reason().is_some() {
            // Cut before it was known to be plain: finish the cut.
            let _ = self.stream.shutdown(Direction::Both);
        }
        let state = &self.state;
        let Some(served) = state.repos.for_plain() else {
            let message = "a --root daemon serves `cat-blobd connect` clients only: a plain stream names no repository";
            self.refuse(message);
            return Record::refused("plain", message.to_owned());
        };
        let result = catch_unwind(AssertUnwindSafe(|| {
            let input = io::Cursor::new(prefix).chain(CancellableInput::new(self.stream.as_fd(), &self.handle.cancel));
            let io = StreamIo { stdout: Some(self.stream.as_fd()), stderr: None, passed_fds: Some(Vec::new()) };
            fast_import::run(input, io, served.store(), state.session_config(&served, self.peer.uid, Vec::new()))
        }));
        self.close_plain();
        match result {
            Ok(outcome) => {
                let broken_pipe = outcome.broken_pipe;
                Record::stream("plain", &outcome, self.handle.cancel.reason(), broken_pipe)
            }
            Err(_) => Record::panicked("plain"),
        }
    }

    /// Ends a plain connection after its last response: half-close, so the client reads every response and then
    /// end of file; then read what it still sends (for at most [`LINGER`]) so that closing with unread input does
    /// not turn that end of file into a reset.
    fn close_plain(&self) {
        let _ = self.stream.shutdown(Direction::Write);
        let deadline = Instant::now() + LINGER;
        let mut sink = [0u8; 16 << 10];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.stream.set_read_timeout(Some(left)).is_err() {
                return;
            }
            match (&*self.stream).read(&mut sink) {
                Ok(0) => return,
                Ok(_) => {}
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    /// A `connect` client: run its stream (fast-import, or cat-file) on the fds it passed, in its working directory,
    /// and send the status.
    fn connect(&self, mut hello: Hello, fds: Vec<OwnedFd>) -> Record {
        let state = &self.state;
        // cat-file's arguments name no files.
        let cat_file = protocol::is_cat_file(&hello.args).then(|| hello.args.split_off(1));
        let kind = if cat_file.is_some() { "cat-file" } else { "connect" };
        if let Some(flag) = state.access.refused_flag(self.peer.uid, &hello.args) {
            let message = format!(
                "{} is not allowed for uid {} over the cat-blobd daemon: it would use files with the daemon's rights",
                Bytes(flag),
                self.peer.uid
            );
            self.reply(&Reply::Fatal(crate::fatal::message_bytes(&message)));
            return Record::refused(kind, message);
        }
        let mut cwd = None;
        let mut passed = Vec::new();
        for (number, fd) in hello.fd_numbers.iter().zip(fds) {
            if *number == CWD_FD {
                cwd = Some(fd);
            } else {
                passed.push((*number, fd));
            }
        }
        let served = match state.repos.for_client(&hello, cwd.as_ref(), self.peer, state.access.server_uid) {
            Ok(served) => served,
            Err(refusal) => {
                let message = refusal.to_string();
                let bytes = crate::fatal::message_bytes(&message);
                self.reply(&match refusal {
                    Refusal::Elsewhere(_) => Reply::Elsewhere(bytes),
                    Refusal::Fatal(_) | Refusal::DirectoryGone => Reply::Fatal(bytes),
                });
                return Record::refused(kind, message);
            }
        };
        let served = &served;
        let find = |number: i32| passed.iter().find(|(n, _)| *n == number).map(|(_, fd)| fd.as_fd());
        let Some(stdin) = find(0) else {
            // What `cat-blobd` itself says when its stdin is not open.
            let message = io::Error::from(Errno::BADF).to_string();
            self.reply(&Reply::Fatal(message.clone().into_bytes()));
            return Record::refused(kind, message);
        };
        let (relay_read, relay_write) = match rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC) {
            Ok(pipe) => pipe,
            Err(err) => {
                let message = format!("cannot create a pipe: {}", io::Error::from(err));
                self.reply(&Reply::Fatal(message.clone().into_bytes()));
                return Record::refused(kind, message);
            }
        };
        let cancel = &self.handle.cancel;
        let client_stderr = find(2);
        let (stdout, passed_fds) = (find(1), passed.iter().map(|(n, fd)| (*n, fd.as_fd())).collect());
        // The stream runs on this thread, at once; the relay of its messages (and the watch on the control socket)
        // on a kept relay thread. A stream used to start on a thread of its own, and under load its first answer
        // waited for that thread to be scheduled; then the relay started one of its own for every connection.
        let relay = match self.start_relay(relay_read, client_stderr) {
            Ok(relay) => relay,
            Err(err) => {
                let message = format!("cannot start the relay of the stream's messages: {err}");
                self.reply(&Reply::Fatal(message.clone().into_bytes()));
                return Record::refused(kind, message);
            }
        };
        let result = catch_unwind(AssertUnwindSafe(move || {
            // The client's working directory and umask, so that relative marks paths mean what they mean in its
            // own directory and the files its stream writes get the modes they would get from `cat-blobd` run
            // there. This thread's own (and its helpers'), never the process's; put back for the connections
            // this thread serves next.
            let _entered = super::thread_fs::enter(hello.umask, cwd.as_ref().map(AsFd::as_fd))
                .map_err(|err| StreamError::EnterDirectory(io::Error::from(err)))?;
            let input = CancellableInput::new(stdin, cancel);
            let outcome = match cat_file {
                Some(args) => super::cat_file::run(state, served, args, input, stdout, relay_write.as_fd(), cancel),
                None => {
                    let io = StreamIo { stdout, stderr: Some(relay_write.as_fd()), passed_fds: Some(passed_fds) };
                    let config = state.session_config(served, self.peer.uid, hello.args);
                    fast_import::run(input, io, served.store(), config)
                }
            };
            served.count(outcome.stats.requests, outcome.stats.bytes);
            drop(relay_write);
            Ok::<_, StreamError>(outcome)
        }));
        // The session's end of the relay pipe is closed (or dropped as it unwound): the relay ends.
        let relay = relay.recv().unwrap_or_default();
        let outcome = match result {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(err)) => {
                let message = err.to_string();
                self.reply(&Reply::Fatal(message.clone().into_bytes()));
                return Record::refused(kind, message);
            }
            Err(_) => {
                relay.finish(true, client_stderr);
                self.reply(&Reply::Fatal(b"internal error: the stream's thread panicked".to_vec()));
                return Record::panicked(kind);
            }
        };
        let broken_pipe = outcome.broken_pipe || relay.stderr_broken;
        relay.finish(!broken_pipe, client_stderr);
        // Close every passed fd before the reply: the frontend sees end of file no later than `connect` exits.
        drop(passed);
        self.reply(&if broken_pipe { Reply::Signal(protocol::SIGPIPE) } else { Reply::Exit(outcome.code()) });
        let mut record = Record::stream(kind, &outcome, cancel.reason(), broken_pipe);
        if matches!(served, Served::Root(_)) {
            record.repository = Some(served.repo().git_dir.display().to_string());
            record.open_ms = served.opened_in().map(|took| took.as_secs_f64() * 1e3);
        }
        record
    }

    fn stats(&self) -> Record {
        let state = &self.state;
        let text = state.counters.render(&state.repos, state.started.elapsed(), state.log.dropped());
        let _ = self.stream.set_write_timeout(Some(LINGER));
        let _ = (&*self.stream).write_all(text.as_bytes());
        Record {
            kind: "stats",
            outcome: "ok",
            exit: None,
            requests: 0,
            bytes: 0,
            error: None,
            repository: None,
            open_ms: None,
        }
    }

    /// Tells the client why it is refused, then closes like a plain stream.
    fn refuse(&self, message: &str) {
        self.reply(&Reply::Fatal(message.as_bytes().to_vec()));
        self.close_plain();
    }

    /// Writes the one reply line; a client that does not read gets at most [`LINGER`].
    fn reply(&self, reply: &Reply) {
        let _ = self.stream.set_write_timeout(Some(LINGER));
        let _ = (&*self.stream).write_all(&reply.encode());
    }

    /// Starts relaying the session's messages from `relay` to the client's stderr on a kept relay thread; what
    /// the relay held back comes through the receiver once the session has closed its end of `relay`.
    fn start_relay(
        &self,
        relay: OwnedFd,
        client_stderr: Option<BorrowedFd<'_>>,
    ) -> io::Result<std::sync::mpsc::Receiver<StderrRelay>> {
        // The thread outlives this borrow of the client's stderr: a copy of the fd, closed before the relay
        // reports, so that every passed fd is closed before the client is told how the stream ended.
        let client_stderr = client_stderr.map(|fd| fd.try_clone_to_owned()).transpose()?;
        let (control, handle) = (Arc::clone(&self.stream), Arc::clone(&self.handle));
        let (done, relayed) = std::sync::mpsc::sync_channel(1);
        self.state.relays.run(move || {
            let mut state = StderrRelay::default();
            pump(relay, client_stderr.as_ref().map(AsFd::as_fd), &control, &handle.cancel, &mut state);
            drop((client_stderr, control, handle));
            let _ = done.send(state);
        })?;
        Ok(relayed)
    }
}

/// Relays the session's messages from `relay` to the client's stderr until the session closes its end, and
/// meanwhile watches the control socket: if the client goes away, the stream's input is cut.
fn pump(
    relay: OwnedFd,
    client_stderr: Option<BorrowedFd<'_>>,
    control: &UnixStream,
    cancel: &Cancel,
    state: &mut StderrRelay,
) {
    let mut buf = [0u8; 8 << 10];
    let mut watch_control = true;
    loop {
        let (mut relay_ready, mut control_ready) = (true, false);
        if watch_control {
            let mut fds = [PollFd::new(&relay, PollFlags::IN), PollFd::new(control, PollFlags::IN)];
            match rustix::event::poll(&mut fds, None) {
                Ok(_) => {
                    relay_ready = !fds[0].revents().is_empty();
                    control_ready = !fds[1].revents().is_empty();
                }
                Err(Errno::INTR) => continue,
                // Cannot poll: just relay, with blocking reads.
                Err(_) => watch_control = false,
            }
        }
        if control_ready {
            match rustix::io::read(control, &mut buf) {
                // The client sends nothing after its hello; end of file or an error means it is gone.
                Ok(0) | Err(Errno::CONNRESET | Errno::BADF | Errno::NOTCONN) => {
                    cancel.cancel(CancelReason::ClientGone);
                    watch_control = false;
                }
                Ok(_) | Err(_) => {}
            }
        }
        if relay_ready {
            match rustix::io::read(&relay, &mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    state.feed(&buf[..n], client_stderr);
                    if state.stderr_broken {
                        // `cat-blobd` run directly would have died by SIGPIPE writing this message: stop the stream.
                        cancel.cancel(CancelReason::ClientGone);
                    }
                }
                Err(Errno::INTR | Errno::AGAIN) => {}
                Err(_) => return,
            }
        }
    }
}
