//! The `git fast-import` child of a write-through stream: its input, the replies it writes for the reads
//! relayed to it, and its end.
//!
//! Its input is a socket rather than a pipe, written with `MSG_NOSIGNAL`: cat-blobd dies by SIGPIPE when its
//! frontend goes away (as git does), but git dying must not kill cat-blobd before it has written every earlier
//! response and passed git's exit status on. Its cat-blob fd is its stdout, a pipe only we read: relayed reads
//! are the only thing git writes there, since `progress` is answered by cat-blobd and never forwarded. Its
//! stderr is relayed to the stream's ([`super::stderr`]).
use std::ffi::OsStr;
use std::io::{self, BufRead, BufReader, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};

use rustix::net::{AddressFamily, SendFlags, SocketFlags, SocketType};

use super::stderr::{POISON, StderrRelay};

/// Bytes of git's input gathered before a `send`: large enough to make forwarding a stream of small commands
/// cheap, small enough to stay well under a socket buffer.
const INPUT_BUFFER: usize = 64 << 10;

#[derive(Debug, thiserror::Error)]
pub(crate) enum GitError {
    #[error("cannot start git fast-import: {0}")]
    Spawn(#[source] io::Error),
    #[error("cannot wait for git fast-import: {0}")]
    Wait(#[source] io::Error),
    /// git closed its input or its cat-blob fd: it has exited (or is about to), and its status says why.
    #[error("git fast-import has exited")]
    Gone,
}

/// The pid of the git child started last and not yet waited for (0: none), for a SIGPIPE handler that must
/// take it along: cat-blobd dying of its frontend's departure must not leave git to finish the stream.
static RUNNING: AtomicI32 = AtomicI32::new(0);

/// See [`RUNNING`]; async-signal-safe.
pub fn running_git_pid() -> i32 {
    RUNNING.load(Ordering::Relaxed)
}

/// What a relayed read's reply looks like, to know where it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reply {
    /// `<hex> blob <size>\n<bytes>\n` or `<hex> missing\n`.
    CatBlob,
    /// One line: `get-mark`'s id, `ls`'s entry or `missing <path>`.
    Line,
}

/// A running `git fast-import`.
pub(crate) struct Git {
    child: Child,
    /// Our end of git's stdin; `None` once closed.
    input: Option<OwnedFd>,
    buffer: Vec<u8>,
    replies: BufReader<ChildStdout>,
    /// Bytes were sent since git last showed that it had read everything before them (by replying to a read
    /// sent after them): git may have died of one of them.
    unconfirmed: bool,
    stderr: Option<StderrRelay>,
}

impl Git {
    /// Starts `git fast-import <args> --cat-blob-fd=1` (on `git_dir` if given), its stderr on `stderr` (or
    /// nowhere).
    /// A `--cat-blob-fd` among `args` is dropped: git's responses come to us.
    pub(crate) fn spawn(git_dir: Option<&Path>, args: &[Vec<u8>], stderr: Option<OwnedFd>) -> Result<Git, GitError> {
        let (ours, theirs) =
            rustix::net::socketpair(AddressFamily::UNIX, SocketType::STREAM, SocketFlags::CLOEXEC, None)
                .map_err(|err| GitError::Spawn(err.into()))?;
        let mut command = Command::new("git");
        command.arg("fast-import");
        command.args(args.iter().filter(|arg| !arg.starts_with(b"--cat-blob-fd=")).map(|arg| OsStr::from_bytes(arg)));
        // After the flags: git applies them in order, and this one must win.
        command.arg("--cat-blob-fd=1");
        if let Some(git_dir) = git_dir {
            command.env("GIT_DIR", git_dir);
        }
        command.stdin(Stdio::from(theirs)).stdout(Stdio::piped());
        command.stderr(if stderr.is_some() { Stdio::piped() } else { Stdio::null() });
        let mut child = command.spawn().map_err(GitError::Spawn)?;
        // The command holds git's end of the socket: drop it so git's exit closes the connection.
        drop(command);
        let stdout = child.stdout.take().expect("piped");
        RUNNING.store(i32::try_from(child.id()).unwrap_or(0), Ordering::Relaxed);
        let replies = BufReader::new(stdout);
        let buffer = Vec::with_capacity(INPUT_BUFFER);
        let mut git = Git { child, input: Some(ours), buffer, replies, unconfirmed: false, stderr: None };
        if let (Some(from), Some(to)) = (git.child.stderr.take(), stderr) {
            match StderrRelay::start(from, to) {
                Ok(relay) => git.stderr = Some(relay),
                Err(err) => {
                    let _ = git.kill();
                    return Err(GitError::Spawn(err));
                }
            }
        }
        Ok(git)
    }

    /// Queues bytes for git's input, sending when the buffer fills.
    pub(crate) fn send(&mut self, bytes: &[u8]) -> Result<(), GitError> {
        self.unconfirmed = true;
        if self.buffer.len() + bytes.len() > INPUT_BUFFER {
            self.flush()?;
            if bytes.len() > INPUT_BUFFER {
                return self.send_now(bytes);
            }
        }
        self.buffer.extend_from_slice(bytes);
        Ok(())
    }

    /// A line and its LF.
    pub(crate) fn send_line(&mut self, line: &[u8]) -> Result<(), GitError> {
        self.send(line)?;
        self.send(b"\n")
    }

    /// Sends everything queued.
    pub(crate) fn flush(&mut self) -> Result<(), GitError> {
        let pending = std::mem::take(&mut self.buffer);
        let sent = self.send_now(&pending);
        self.buffer = pending;
        self.buffer.clear();
        sent
    }

    fn send_now(&mut self, mut bytes: &[u8]) -> Result<(), GitError> {
        let input = self.input.as_ref().ok_or(GitError::Gone)?;
        while !bytes.is_empty() {
            match rustix::net::send(input.as_fd(), bytes, SendFlags::NOSIGNAL) {
                Ok(n) => bytes = &bytes[n..],
                Err(rustix::io::Errno::INTR) => {}
                // EPIPE or ECONNRESET: git has closed its input, which it only does by exiting.
                Err(_) => return Err(GitError::Gone),
            }
        }
        Ok(())
    }

    /// Sends `line` (a read command), then waits for git's one reply to it.
    pub(crate) fn relay(&mut self, line: &[u8], reply: Reply) -> Result<Vec<u8>, GitError> {
        self.send_line(line)?;
        self.flush()?;
        let answer = self.read_reply(reply)?;
        // git replies to a read only after reading every line before it, and dies at the first it refuses.
        self.unconfirmed = false;
        Ok(answer)
    }

    /// Makes sure git has read everything sent so far without dying of it: a read answered by cat-blobd after
    /// a line git dies on would never have been answered by git alone. A `cat-blob` of the null id (no object
    /// has it) is accepted wherever cat-blobd answers reads (the top level, a commit's file changes, before
    /// inline data: git 2.47's `parse_new_commit` and `file_change_m`) and changes nothing; git writes its
    /// `missing` reply after reading the lines before it.
    pub(crate) fn confirm(&mut self, null: &gix_hash::ObjectId) -> Result<(), GitError> {
        if self.unconfirmed {
            self.relay(format!("cat-blob {null}").as_bytes(), Reply::CatBlob)?;
        }
        Ok(())
    }

    fn read_reply(&mut self, reply: Reply) -> Result<Vec<u8>, GitError> {
        let mut bytes = Vec::new();
        let read = self.replies.read_until(b'\n', &mut bytes).map_err(|_| GitError::Gone)?;
        if read == 0 || !bytes.ends_with(b"\n") {
            return Err(GitError::Gone);
        }
        if reply == Reply::CatBlob
            && let Some(size) = blob_size(&bytes)
        {
            let header = bytes.len();
            let want = size.checked_add(1).ok_or(GitError::Gone)?;
            (&mut self.replies).take(want).read_to_end(&mut bytes).map_err(|_| GitError::Gone)?;
            if (bytes.len() - header) as u64 != want {
                return Err(GitError::Gone);
            }
        }
        Ok(bytes)
    }

    /// Ends git's input (git then finishes the stream as at the end of its stdin) and waits for its exit.
    pub(crate) fn finish(mut self) -> Result<ExitStatus, GitError> {
        // Whatever could not be sent, git is gone and its status says why.
        let _ = self.flush();
        self.input = None;
        self.wait()
    }

    /// Waits for git's exit, then for the rest of its stderr.
    fn wait(&mut self) -> Result<ExitStatus, GitError> {
        let status = self.child.wait().map_err(GitError::Wait);
        let _ = RUNNING.compare_exchange(self.child.id() as i32, 0, Ordering::Relaxed, Ordering::Relaxed);
        if let Some(relay) = self.stderr.take() {
            relay.finish();
        }
        status
    }

    /// cat-blobd failed first, with the `fatal:` line `fatal`: git dies where it stands, so it writes nothing
    /// more. Its input ends on [`POISON`], and `fatal` takes the place of git's line about it on stderr (or is
    /// printed after git's stderr, if git had died before; or nowhere, if the stream has no stderr).
    pub(crate) fn abort(mut self, fatal: Vec<u8>) -> Result<ExitStatus, GitError> {
        if let Some(relay) = &self.stderr {
            relay.replace_poison_line(fatal);
        }
        let _ = self.send(POISON);
        self.finish()
    }

    /// The frontend went away: git would have died of SIGPIPE writing to it. So does this git, without marks.
    pub(crate) fn kill(mut self) -> Result<ExitStatus, GitError> {
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::PIPE);
        self.input = None;
        self.wait()
    }
}

/// `<hex> blob <size>\n`'s size; `None` for `<hex> missing\n`.
fn blob_size(header: &[u8]) -> Option<u64> {
    let line = header.strip_suffix(b"\n")?;
    let at = memchr::memmem::find(line, b" blob ")?;
    std::str::from_utf8(&line[at + b" blob ".len()..]).ok()?.parse().ok()
}

/// A shell's view of how git ended: its exit code, or 128 + the signal that killed it.
pub(crate) fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(signal)) => 128u8.wrapping_add(signal as u8),
        (None, None) => 128,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_sizes_come_from_the_header() {
        assert_eq!(blob_size(b"ce013625030ba8dba906f756967f9e9ca394464a blob 6\n"), Some(6));
        assert_eq!(blob_size(b"ce013625030ba8dba906f756967f9e9ca394464a missing\n"), None);
    }
}
