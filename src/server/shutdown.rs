//! Stopping, as mini-redis's `shutdown.rs` does it but with threads: a [`Shutdown`] request wakes the accept
//! loop through an eventfd; a [`Cancel`] ends one connection's input (the stream then dies with a `fatal:` line
//! after its earlier responses); the signal thread turns SIGTERM, SIGINT and SIGHUP into a shutdown request, and
//! SIGQUIT into one without a grace period.
use std::io::{self, Read};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, Ordering};

use rustix::event::{EventfdFlags, PollFd, PollFlags};
use rustix::io::Errno;

/// An eventfd that a thread polls to be woken by others.
#[derive(Debug)]
pub struct Notifier {
    fd: OwnedFd,
}

impl Notifier {
    pub fn new() -> io::Result<Notifier> {
        Ok(Notifier { fd: rustix::event::eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)? })
    }

    /// Makes the fd readable (until [`Notifier::drain`]).
    pub fn notify(&self) {
        // Only fails when the counter would overflow, which leaves it readable anyway.
        let _ = rustix::io::write(&self.fd, &1u64.to_ne_bytes());
    }

    /// Consumes the notifications so far.
    pub fn drain(&self) {
        let _ = rustix::io::read(&self.fd, &mut [0u8; 8]);
    }

    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }
}

/// A request to stop the server; counts how many came (a second one cuts the grace period short).
#[derive(Debug, Clone)]
pub struct Shutdown(Arc<ShutdownState>);

#[derive(Debug)]
struct ShutdownState {
    requests: AtomicU32,
    /// No grace period: cut open streams at once (SIGQUIT).
    immediate: AtomicBool,
    notifier: Notifier,
}

impl Shutdown {
    pub fn new() -> io::Result<Shutdown> {
        let (requests, immediate) = (AtomicU32::new(0), AtomicBool::new(false));
        Ok(Shutdown(Arc::new(ShutdownState { requests, immediate, notifier: Notifier::new()? })))
    }

    /// Asks the server to stop: it stops accepting, lets open streams finish within the grace period, cuts
    /// the rest, removes its socket and returns.
    pub fn request(&self) {
        self.0.requests.fetch_add(1, Ordering::SeqCst);
        self.0.notifier.notify();
    }

    /// Asks the server to stop without a grace period: open streams are cut at once (marks being exported are
    /// still written, and the socket is still removed).
    pub fn request_immediate(&self) {
        self.0.immediate.store(true, Ordering::SeqCst);
        self.request();
    }

    /// Whether the grace period is to be skipped.
    pub fn immediate(&self) -> bool {
        self.0.immediate.load(Ordering::SeqCst)
    }

    /// How many requests came.
    pub fn requests(&self) -> u32 {
        self.0.requests.load(Ordering::SeqCst)
    }

    pub(crate) fn notifier(&self) -> &Notifier {
        &self.0.notifier
    }
}

/// Why a connection's input was cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelReason {
    /// The `connect` client went away (its control connection closed).
    ClientGone = 1,
    /// The grace period after a shutdown request ran out.
    Shutdown = 2,
}

impl CancelReason {
    pub fn message(self) -> &'static str {
        match self {
            CancelReason::ClientGone => "the cat-blobd connect client went away",
            CancelReason::Shutdown => "the cat-blobd daemon is shutting down",
        }
    }
}

/// Cuts one connection's input: reads through [`CancellableInput`] fail from then on.
#[derive(Debug)]
pub struct Cancel {
    reason: AtomicU8,
    notifier: Notifier,
}

impl Cancel {
    pub fn new() -> io::Result<Cancel> {
        Ok(Cancel { reason: AtomicU8::new(0), notifier: Notifier::new()? })
    }

    /// Cuts the input (the first reason stays).
    pub fn cancel(&self, reason: CancelReason) {
        let _ = self.reason.compare_exchange(0, reason as u8, Ordering::SeqCst, Ordering::SeqCst);
        self.notifier.notify();
    }

    /// Readable once cancelled.
    pub fn fd(&self) -> &OwnedFd {
        self.notifier.fd()
    }

    pub fn reason(&self) -> Option<CancelReason> {
        match self.reason.load(Ordering::SeqCst) {
            1 => Some(CancelReason::ClientGone),
            2 => Some(CancelReason::Shutdown),
            _ => None,
        }
    }
}

/// A stream's input that a [`Cancel`] can interrupt even while a read is blocked: each read first polls the fd
/// together with the cancel eventfd. Reads are large (the session's reader buffers), so the extra `poll` is cheap.
pub struct CancellableInput<'a> {
    fd: BorrowedFd<'a>,
    cancel: &'a Cancel,
}

impl<'a> CancellableInput<'a> {
    pub fn new(fd: BorrowedFd<'a>, cancel: &'a Cancel) -> Self {
        CancellableInput { fd, cancel }
    }

    fn cancelled(&self) -> io::Result<()> {
        match self.cancel.reason() {
            Some(reason) => Err(io::Error::other(reason.message())),
            None => Ok(()),
        }
    }
}

impl Read for CancellableInput<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            self.cancelled()?;
            let mut fds = [PollFd::new(&self.fd, PollFlags::IN), PollFd::new(&self.cancel.notifier.fd, PollFlags::IN)];
            match rustix::event::poll(&mut fds, None) {
                Ok(_) => {}
                Err(Errno::INTR) => continue,
                Err(err) => return Err(err.into()),
            }
            self.cancelled()?;
            if fds[0].revents().is_empty() {
                continue;
            }
            // A frontend's pipe may be non-blocking (its file description is shared): EAGAIN polls again.
            match rustix::io::read(self.fd, &mut *buf) {
                Ok(n) => return Ok(n),
                Err(Errno::INTR | Errno::AGAIN) => continue,
                Err(err) => return Err(err.into()),
            }
        }
    }
}

/// The signals the daemon stops on, with their names for the log.
const SIGNALS: [(i32, &str); 4] =
    [(libc::SIGTERM, "SIGTERM"), (libc::SIGINT, "SIGINT"), (libc::SIGHUP, "SIGHUP"), (libc::SIGQUIT, "SIGQUIT")];

/// SIGTERM, SIGINT, SIGHUP (the terminal went away: stop as for SIGTERM, not die with the socket file left) and
/// SIGQUIT (stop now: no grace period, but the same cleanup).
fn termination_signals() -> libc::sigset_t {
    crate::git_compat::sigset::sigset(&SIGNALS.map(|(signal, _)| signal))
}

/// Blocks the termination signals in the calling thread and every thread it spawns later, so that only the signal
/// thread ([`spawn_signal_thread`]) receives them, with `sigwait`: no signal handler, nothing async-signal-unsafe.
/// Call it first thing, before any thread exists.
#[allow(unsafe_code)]
pub fn block_termination_signals() -> io::Result<()> {
    let set = termination_signals();
    // SAFETY: changes only the calling thread's signal mask; `set` is initialised and the old mask is not asked
    // for (null is allowed).
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// Waits for the next termination signal (which must be blocked).
#[allow(unsafe_code)]
fn wait_for_signal(set: &libc::sigset_t) -> io::Result<i32> {
    let mut signal = 0;
    // SAFETY: both pointers point to live, initialised locals of the types sigwait expects.
    let rc = unsafe { libc::sigwait(set, &mut signal) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(signal)
}

/// Starts the thread that turns each termination signal into a shutdown request (after
/// [`block_termination_signals`]); `on_signal`, which must not block, is told the signal's name first (for the
/// log).
pub fn spawn_signal_thread(shutdown: Shutdown, on_signal: impl Fn(&str) + Send + 'static) -> io::Result<()> {
    let set = termination_signals();
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        loop {
            match wait_for_signal(&set) {
                Ok(signal) => {
                    // `on_signal` must not block (the daemon's log only queues): the request follows at once, and
                    // the line comes before the stop's own lines.
                    on_signal(SIGNALS.iter().find(|(s, _)| *s == signal).map_or("signal", |(_, name)| name));
                    if signal == libc::SIGQUIT {
                        shutdown.request_immediate();
                    } else {
                        shutdown.request();
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return,
            }
        }
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_cancel_interrupts_a_blocked_read_and_keeps_its_first_reason() {
        let (read_end, _write_end) = rustix::pipe::pipe().unwrap();
        let cancel = Cancel::new().unwrap();
        std::thread::scope(|scope| {
            let reader = scope.spawn(|| {
                let mut input = CancellableInput::new(read_end.as_fd(), &cancel);
                input.read(&mut [0; 16])
            });
            cancel.cancel(CancelReason::Shutdown);
            cancel.cancel(CancelReason::ClientGone);
            let err = reader.join().unwrap().unwrap_err();
            assert_eq!(err.to_string(), "the cat-blobd daemon is shutting down");
        });
        assert_eq!(cancel.reason(), Some(CancelReason::Shutdown));
    }

    #[test]
    fn input_reads_through_until_cancelled() {
        let (read_end, write_end) = rustix::pipe::pipe().unwrap();
        rustix::io::write(&write_end, b"abc").unwrap();
        drop(write_end);
        let cancel = Cancel::new().unwrap();
        let mut input = CancellableInput::new(read_end.as_fd(), &cancel);
        let mut all = Vec::new();
        input.read_to_end(&mut all).unwrap();
        assert_eq!(all, b"abc");
    }

    #[test]
    fn shutdown_requests_are_counted_and_wake_the_notifier() {
        let shutdown = Shutdown::new().unwrap();
        shutdown.request();
        shutdown.request();
        assert_eq!(shutdown.requests(), 2);
        let mut fds = [PollFd::new(&shutdown.notifier().fd, PollFlags::IN)];
        let zero = rustix::event::Timespec { tv_sec: 0, tv_nsec: 0 };
        assert_eq!(rustix::event::poll(&mut fds, Some(&zero)).unwrap(), 1);
        shutdown.notifier().drain();
        assert_eq!(rustix::event::poll(&mut fds, Some(&zero)).unwrap(), 0);
    }
}
