//! The `connect` stream's messages on their way to the client's stderr: forwarded as they come, except that a
//! `fatal: ` line and everything after it wait for the stream's outcome. When a write to the frontend fails with
//! EPIPE, `cat-blobd` run directly is killed by SIGPIPE and prints nothing, so that held part is then dropped.
use std::io::IoSlice;
use std::os::fd::BorrowedFd;

use crate::io::writev::{FdSink, GatherWriter};

/// Forwards the session's messages to the client's stderr as they come, except that a line starting with
/// `fatal: ` and everything after it are held until the stream's outcome is known.
#[derive(Debug, Default)]
pub(super) struct StderrRelay {
    /// Bytes of the current line while it may still turn out to be `fatal: `.
    undecided: Vec<u8>,
    /// Mid-line: the rest of the line is forwarded without looking.
    mid_line: bool,
    /// From the `fatal: ` line on.
    held: Option<Vec<u8>>,
    /// A write to the client's stderr failed with EPIPE.
    pub(super) stderr_broken: bool,
}

const FATAL_PREFIX: &[u8] = b"fatal: ";

impl StderrRelay {
    pub(super) fn feed(&mut self, data: &[u8], out: Option<BorrowedFd<'_>>) {
        let mut broken = false;
        self.feed_to(data, &mut |bytes| broken |= write_message(out, bytes));
        self.stderr_broken |= broken;
    }

    fn feed_to(&mut self, mut data: &[u8], out: &mut dyn FnMut(&[u8])) {
        while !data.is_empty() {
            if let Some(held) = &mut self.held {
                held.extend_from_slice(data);
                return;
            }
            if self.mid_line {
                match memchr::memchr(b'\n', data) {
                    Some(at) => {
                        out(&data[..=at]);
                        data = &data[at + 1..];
                        self.mid_line = false;
                    }
                    None => {
                        out(data);
                        return;
                    }
                }
                continue;
            }
            let byte = data[0];
            data = &data[1..];
            self.undecided.push(byte);
            if self.undecided == FATAL_PREFIX {
                self.held = Some(std::mem::take(&mut self.undecided));
            } else if !FATAL_PREFIX.starts_with(&self.undecided) || byte == b'\n' {
                out(&self.undecided);
                self.mid_line = byte != b'\n';
                self.undecided.clear();
            }
        }
    }

    /// The stream has ended: write what is left, the held `fatal:` part only if `keep_held`.
    pub(super) fn finish(self, keep_held: bool, out: Option<BorrowedFd<'_>>) {
        self.finish_to(keep_held, &mut |bytes| _ = write_message(out, bytes));
    }

    fn finish_to(self, keep_held: bool, out: &mut dyn FnMut(&[u8])) {
        if !self.undecided.is_empty() {
            out(&self.undecided);
        }
        if let Some(held) = self.held.filter(|_| keep_held) {
            out(&held);
        }
    }
}

/// Writes to the client's stderr, if it passed one. Errors are ignored, as `cat-blobd` ignores them on stderr,
/// except that EPIPE is reported (true): there `cat-blobd` would have been killed by SIGPIPE.
fn write_message(out: Option<BorrowedFd<'_>>, bytes: &[u8]) -> bool {
    let Some(fd) = out else { return false };
    match GatherWriter::new(FdSink::new(fd)).write_all(&mut [IoSlice::new(bytes)]) {
        Ok(()) => false,
        Err(err) => err.is_broken_pipe(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relay(pieces: &[&[u8]], keep_held: bool) -> (Vec<u8>, Vec<u8>) {
        let mut relay = StderrRelay::default();
        let mut live = Vec::new();
        for piece in pieces {
            relay.feed_to(piece, &mut |b| live.extend_from_slice(b));
        }
        let mut all = live.clone();
        relay.finish_to(keep_held, &mut |b| all.extend_from_slice(b));
        (live, all)
    }

    #[test]
    fn messages_pass_at_once_and_a_fatal_line_waits_for_the_outcome() {
        let (live, all) =
            relay(&[b"warning: a\nwar", b"ning: fatal: b\nfat", b"al: write to frontend\n", b"error: c\n"], true);
        assert_eq!(live, b"warning: a\nwarning: fatal: b\n");
        assert_eq!(all, b"warning: a\nwarning: fatal: b\nfatal: write to frontend\nerror: c\n");
        let (_, dropped) = relay(&[b"warning: a\n", b"fatal: write to frontend failed: Broken pipe\n"], false);
        assert_eq!(dropped, b"warning: a\n");
    }

    #[test]
    fn short_and_unterminated_lines_are_not_lost() {
        assert_eq!(relay(&[b"f", b"\n", b"fa"], true).1, b"f\nfa");
        assert_eq!(relay(&[b"fatal:", b"x\n"], false).1, b"fatal:x\n");
        assert_eq!(
            relay(&[b"cat-blobd statistics:\n  requests: 1\n"], true).0,
            b"cat-blobd statistics:\n  requests: 1\n"
        );
    }
}
