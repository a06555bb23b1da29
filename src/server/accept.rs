//! The accept loop's work: check each peer as it is accepted (a refused uid costs no thread, no slot and no
//! linger, only a `fatal:` line written without blocking), start a thread for the others, back off when out of
//! fds, and answer the clients still in the backlog at shutdown. Lines a client can repeat at will (refusals,
//! accept failures) are rate-limited, with counts.
use std::collections::VecDeque;
use std::io;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::State;
use super::connection::{Connection, Handle};
use super::log::Value;
use super::stats::add;
use super::workers::{IDLE_LIFETIME, Workers};
use crate::wire::peer::Peer;
use crate::wire::protocol::Reply;

/// At most one line per period for each rate-limited event.
const LOG_PERIOD: Duration = Duration::from_secs(1);
/// The first pause after `accept` ran out of fds (or memory); each further failure doubles it, up to the most.
const BACKOFF_FIRST: Duration = Duration::from_millis(10);
const BACKOFF_MOST: Duration = Duration::from_secs(1);

/// What the accept loop keeps between polls.
pub(super) struct Acceptor<'a> {
    listener: &'a UnixListener,
    state: Arc<State>,
    next_id: u64,
    /// After `accept` failed for want of fds: no accepting before this instant, and the pause that led to it.
    backoff: Option<(Instant, Duration)>,
    refusals: Throttle,
    accept_failures: Throttle,
    /// Accepted connections whose thread could not start for want of fds: started after the backoff.
    deferred: VecDeque<(u64, Arc<UnixStream>, Peer)>,
    /// The threads connections run on.
    workers: Workers,
}

impl<'a> Acceptor<'a> {
    pub(super) fn new(listener: &'a UnixListener, state: Arc<State>) -> Acceptor<'a> {
        Acceptor {
            listener,
            state,
            next_id: 1,
            backoff: None,
            refusals: Throttle::default(),
            accept_failures: Throttle::default(),
            deferred: VecDeque::new(),
            workers: Workers::new("conn", IDLE_LIFETIME),
        }
    }

    /// False while backing off after running out of fds.
    pub(super) fn backoff_over(&self, now: Instant) -> bool {
        self.backoff.is_none_or(|(until, _)| now >= until)
    }

    /// How long the loop may sleep before [`Acceptor::tick`] has work: the end of a backoff, or a rate-limited
    /// count to log.
    pub(super) fn next_timer(&self, now: Instant) -> Option<Duration> {
        let backoff = self.backoff.map(|(until, _)| until).filter(|until| *until > now);
        [backoff, self.refusals.due_at(), self.accept_failures.due_at()]
            .into_iter()
            .flatten()
            .min()
            .map(|at| at.saturating_duration_since(now))
    }

    /// Logs the counts of rate-limited lines whose period is over.
    pub(super) fn tick(&mut self, now: Instant) {
        self.log_held(now, false);
    }

    /// Logs every count still held (at shutdown).
    pub(super) fn finish(&mut self) {
        self.log_held(Instant::now(), true);
    }

    fn log_held(&mut self, now: Instant, force: bool) {
        if let Some(count) = self.refusals.take_due(now, force) {
            self.state.log.log("refused-more", &[("count", Value::U64(count))]);
        }
        if let Some(count) = self.accept_failures.take_due(now, force) {
            self.state.log.log("accept-failed-more", &[("count", Value::U64(count))]);
        }
    }

    /// Starts the connections deferred for want of fds, then (if `listener_ready`) accepts those waiting in the
    /// backlog while fewer than `limit` are open.
    pub(super) fn accept_ready(&mut self, limit: usize, listener_ready: bool) {
        while let Some((id, stream, peer)) = self.deferred.pop_front() {
            if !self.start(id, stream, peer) {
                return;
            }
        }
        while listener_ready && self.state.open_connections() < limit {
            let stream = match self.listener.accept() {
                Ok((stream, _)) => stream,
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => return,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) if out_of_resources(&err) => return self.back_off(&err),
                // The client went away before we got to it (ECONNABORTED), or worse: next one.
                Err(err) => {
                    self.log_accept_failure(&err);
                    continue;
                }
            };
            self.backoff = None;
            let id = self.next_id;
            self.next_id += 1;
            self.admit(id, stream);
        }
    }

    /// Out of fds (or kernel memory): the clients stay in the backlog (or deferred) while open connections end;
    /// keep serving those, and try again after a pause that doubles while the failures go on.
    fn back_off(&mut self, err: &io::Error) {
        let pause = self.backoff.map_or(BACKOFF_FIRST, |(_, last)| (last * 2).min(BACKOFF_MOST));
        self.backoff = Some((Instant::now() + pause, pause));
        self.log_accept_failure(err);
    }

    fn log_accept_failure(&mut self, err: &io::Error) {
        if self.accept_failures.allow(Instant::now()) {
            self.state.log.log("accept-failed", &[("error", Value::Str(&err.to_string()))]);
        }
    }

    /// Refuses a peer whose uid may not connect, or starts the connection's thread.
    fn admit(&mut self, id: u64, stream: UnixStream) {
        let state = &self.state;
        add(&state.counters.total, 1);
        let peer = match Peer::of(&stream) {
            Ok(peer) if state.access.admits(peer.uid) => peer,
            Ok(peer) => {
                let message = format!(
                    "uid {} may not use this cat-blobd daemon (it admits uid {} and those given with --allow-uid)",
                    peer.uid, state.access.server_uid
                );
                return self.refuse(id, &stream, peer, &message);
            }
            Err(err) => {
                let unknown = Peer { uid: u32::MAX, gid: u32::MAX, pid: 0 };
                return self.refuse(id, &stream, unknown, &format!("cannot read the peer's credentials: {err}"));
            }
        };
        self.start(id, Arc::new(stream), peer);
    }

    /// Starts the connection's thread; out of fds, defers it and backs off (false), any other failure refuses it.
    fn start(&mut self, id: u64, stream: Arc<UnixStream>, peer: Peer) -> bool {
        match self.spawn(id, stream, peer) {
            Ok(()) => true,
            Err(err) if out_of_resources(&err.error) => {
                self.back_off(&err.error);
                self.deferred.push_front((id, err.stream, peer));
                false
            }
            Err(err) => {
                let message = format!("cannot serve the connection: {err}");
                self.refuse(id, &err.stream, peer, &message);
                true
            }
        }
    }

    /// Answers `message` without blocking (the line fits in the empty socket buffer, or is dropped) and closes.
    fn refuse(&mut self, id: u64, stream: &UnixStream, peer: Peer, message: &str) {
        reply_now(stream, message);
        add(&self.state.counters.refused, 1);
        if self.refusals.allow(Instant::now()) {
            self.state.log.log(
                "connection",
                &[
                    ("conn", Value::U64(id)),
                    ("kind", Value::Str("unknown")),
                    ("uid", Value::U64(u64::from(peer.uid))),
                    ("pid", Value::I64(i64::from(peer.pid))),
                    ("outcome", Value::Str("refused")),
                    ("error", Value::Str(message)),
                ],
            );
        }
    }

    /// Registers the connection and starts its thread.
    fn spawn(&self, id: u64, stream: Arc<UnixStream>, peer: Peer) -> Result<(), SpawnError> {
        let state = &self.state;
        if let Err(error) = stream.set_nonblocking(false) {
            return Err(SpawnError { stream, error });
        }
        let handle = match Handle::new(Arc::clone(&stream), peer) {
            Ok(handle) => Arc::new(handle),
            Err(error) => return Err(SpawnError { stream, error }),
        };
        state.registry().insert(id, Arc::clone(&handle));
        add(&state.counters.open, 1);
        let accepted = Instant::now();
        let connection =
            Connection { id, stream: Arc::clone(&stream), peer, handle, state: Arc::clone(state), accepted };
        let spawned = self.workers.run(move || {
            let _done = Finished { state: Arc::clone(&connection.state), id };
            connection.run();
        });
        if let Err(error) = spawned {
            // The closure (and its `Finished` guard) never ran: undo the registration here.
            state.registry().remove(&id);
            state.counters.open.fetch_sub(1, Ordering::Relaxed);
            return Err(SpawnError { stream, error });
        }
        Ok(())
    }

    /// At shutdown: every client still in the backlog is answered `fatal: … shutting down` (it would otherwise
    /// see a reset), and logged.
    pub(super) fn refuse_backlog(&mut self) {
        let message = "the cat-blobd daemon is shutting down";
        let mut count = 0u64;
        for (_, stream, _) in self.deferred.drain(..) {
            reply_now(&stream, message);
            count += 1;
        }
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    reply_now(&stream, message);
                    add(&self.state.counters.total, 1);
                    count += 1;
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if count > 0 {
            add(&self.state.counters.refused, count);
            self.state.log.log("backlog-refused", &[("count", Value::U64(count)), ("error", Value::Str(message))]);
        }
    }
}

/// A connection that could not be started, with its stream back for the refusal.
struct SpawnError {
    stream: Arc<UnixStream>,
    error: io::Error,
}

impl std::fmt::Display for SpawnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

/// Writes a `fatal:` reply without ever blocking, and closes the write side.
fn reply_now(stream: &UnixStream, message: &str) {
    let _ = stream.set_nonblocking(true);
    let _ = io::Write::write_all(&mut &*stream, &Reply::Fatal(message.as_bytes().to_vec()).encode());
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

/// `accept` failed for want of fds or memory, not because of the client.
fn out_of_resources(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM))
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

/// At most one line per [`LOG_PERIOD`]; the lines in between are only counted, and the count is logged once the
/// period is over.
#[derive(Debug, Default)]
struct Throttle {
    last: Option<Instant>,
    held: u64,
}

impl Throttle {
    /// May a line be written now? If not, it is counted.
    fn allow(&mut self, now: Instant) -> bool {
        if self.last.is_some_and(|last| now.saturating_duration_since(last) < LOG_PERIOD) {
            self.held += 1;
            return false;
        }
        self.last = Some(now);
        true
    }

    /// When the held count is due.
    fn due_at(&self) -> Option<Instant> {
        self.last.filter(|_| self.held > 0).map(|last| last + LOG_PERIOD)
    }

    /// The held count, once due (or at once with `force`).
    fn take_due(&mut self, now: Instant, force: bool) -> Option<u64> {
        let due = self.due_at()?;
        if !force && now < due {
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throttle_lets_one_line_a_period_through_and_counts_the_rest() {
        let start = Instant::now();
        let mut throttle = Throttle::default();
        assert!(throttle.allow(start));
        assert!(!throttle.allow(start));
        assert!(!throttle.allow(start + LOG_PERIOD / 2));
        assert_eq!(throttle.take_due(start + LOG_PERIOD / 2, false), None);
        assert_eq!(throttle.due_at(), Some(start + LOG_PERIOD));
        assert_eq!(throttle.take_due(start + LOG_PERIOD, false), Some(2));
        assert_eq!(throttle.due_at(), None);
        assert!(throttle.allow(start + LOG_PERIOD * 3));
        assert!(!throttle.allow(start + LOG_PERIOD * 3));
        assert_eq!(throttle.take_due(start + LOG_PERIOD * 3, true), Some(1));
    }
}
