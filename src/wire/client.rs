//! The client side: `cat-blobd connect` hands this process's stdin, stdout, stderr, other low fds and working
//! directory to the daemon and waits for the stream's exit status; `cat-blobd stats` asks for the counters.
use std::ffi::OsString;
use std::io::{self, IoSlice, Read};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};

use crate::fatal::Bytes;
use crate::git_compat::strerror::strerror;
use crate::git_compat::strtoumax::ulong_arg;

use super::protocol::{CLIENT_ENV, CWD_FD, Hello, MAX_FDS, ProtocolError, Reply, SIGPIPE, STATS_MAGIC};

/// The fds `connect` passes when they are open: stdin, stdout and stderr, plus the one a `--cat-blob-fd=` flag
/// names (a stream cannot name another: git refuses `cat-blob-fd` in `option`/`feature` lines). No other fd of
/// this process reaches the daemon.
const STANDARD_FDS: std::ops::RangeInclusive<i32> = 0..=2;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot connect to the cat-blobd daemon at {}: {}", path.display(), strerror(source))]
    Connect {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot talk to the cat-blobd daemon at {}: {}", path.display(), strerror(source))]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the cat-blobd daemon at {} closed the connection without an exit status", .0.display())]
    NoReply(PathBuf),
    #[error(
        "the process listening on {} runs as uid {uid}, not as uid {own} or root: not handing it this process's \
         fds (--server-uid {uid} trusts it)",
        path.display()
    )]
    UntrustedServer { path: PathBuf, uid: u32, own: u32 },
    /// The daemon answered `fatal: <message>` where it would have sent its counters.
    #[error("cannot talk to the cat-blobd daemon at {}: {}", path.display(), Bytes(message))]
    Refused { path: PathBuf, message: Vec<u8> },
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
}

/// Runs one stream through the daemon at `socket` on this process's fds; returns the daemon's verdict. `args` is the
/// stream's command line (see [`Hello::args`]). The process listening there must run as this process's uid or
/// root, or `server_uid`: it gets this process's stdin, stdout, stderr and working directory.
pub fn connect(socket: &Path, server_uid: Option<u32>, args: Vec<Vec<u8>>) -> Result<Reply, ClientError> {
    connect_with_env(socket, server_uid, args, &|name| std::env::var_os(name))
}

/// [`connect`], with the client's [`CLIENT_ENV`] variables read through `var` (the shim's, after git's global
/// options such as `--git-dir` set them for the command it answers).
pub fn connect_with_env(
    socket: &Path,
    server_uid: Option<u32>,
    args: Vec<Vec<u8>>,
    var: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Reply, ClientError> {
    let io_error = |source: io::Error| ClientError::Io { path: socket.to_owned(), source };
    // Look at the inherited fds before this process opens any of its own (the socket would take the lowest free
    // number, and must not be mistaken for the frontend's fd).
    let mut numbers: Vec<i32> = STANDARD_FDS.collect();
    if !super::protocol::is_cat_file(&args) {
        numbers.extend(args.iter().filter_map(|arg| named_cat_blob_fd(arg)));
    }
    numbers.sort_unstable();
    numbers.dedup();
    // SAFETY: these fds were inherited: nothing in this short-lived process closes fds 0..=2 or the one
    // `--cat-blob-fd` names, so they stay open for as long as `connect` borrows them (one sendmsg).
    #[allow(unsafe_code)]
    let inherited = |n| unsafe { crate::io::fd::borrow_if_open(n) }.map(|fd| (n, fd));
    let (mut fd_numbers, mut fds): (Vec<i32>, Vec<BorrowedFd<'_>>) =
        numbers.into_iter().filter_map(inherited).take(MAX_FDS - 1).unzip();
    // The working directory, so that relative marks paths mean the same as for `cat-blobd` run here.
    let cwd: Option<OwnedFd> =
        rustix::fs::open(".", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).ok();
    if let Some(dir) = &cwd {
        fd_numbers.push(CWD_FD);
        fds.push(dir.as_fd());
    }
    let stream =
        UnixStream::connect(socket).map_err(|source| ClientError::Connect { path: socket.to_owned(), source })?;
    check_server(&stream, socket, server_uid)?;
    let hello = Hello { fd_numbers, umask: current_umask(), args, env: client_env(var) }.encode();
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let pushed = control.push(SendAncillaryMessage::ScmRights(&fds));
    debug_assert!(pushed, "room for MAX_FDS fds");
    // NOSIGNAL: a daemon that refused us may already have closed; its reply is still there to read.
    let sent = send_all(&stream, &hello, &mut control);
    drop(cwd);
    // Nothing more is sent (closing our side would tell the daemon we are gone). The reply comes at the end.
    let reply = read_reply(&stream).map_err(io_error)?;
    if reply.is_empty() {
        sent.map_err(io_error)?;
        return Err(ClientError::NoReply(socket.to_owned()));
    }
    Ok(Reply::decode(&reply)?)
}

/// The exit status `cat-blobd connect` gives for the daemon's `reply`: dies of SIGPIPE as the stream did (SIGPIPE's
/// default action must be in force), and prints the `fatal:` line of a refusal.
pub fn exit_status(reply: Reply) -> u8 {
    match reply {
        Reply::Exit(status) => status,
        Reply::Signal(signal) => {
            if signal == SIGPIPE {
                let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::PIPE);
            }
            128u8.saturating_add(u8::try_from(signal).unwrap_or(0))
        }
        Reply::Fatal(text) | Reply::Elsewhere(text) => {
            let mut line = b"fatal: ".to_vec();
            line.extend_from_slice(&text);
            line.push(b'\n');
            let _ = std::io::Write::write_all(&mut std::io::stderr(), &line);
            128
        }
    }
}

/// The client's [`CLIENT_ENV`] variables that are set, as a hello carries them.
fn client_env(var: &dyn Fn(&str) -> Option<OsString>) -> Vec<Vec<u8>> {
    CLIENT_ENV
        .iter()
        .filter_map(|name| {
            let value = var(name)?;
            Some([name.as_bytes(), b"=", value.as_bytes()].concat())
        })
        .collect()
}

/// Checks who listens on `socket` (SO_PEERCRED, recorded by the kernel at `listen`) before handing it anything:
/// in a shared directory, whoever created the socket first would otherwise get this process's fds.
fn check_server(stream: &UnixStream, socket: &Path, server_uid: Option<u32>) -> Result<(), ClientError> {
    let uid = super::peer::Peer::of(stream).map_err(|source| ClientError::Io { path: socket.to_owned(), source })?.uid;
    let own = rustix::process::geteuid().as_raw();
    if uid == own || uid == 0 || Some(uid) == server_uid {
        return Ok(());
    }
    Err(ClientError::UntrustedServer { path: socket.to_owned(), uid, own })
}

/// Sends the hello, its fds with the first piece.
fn send_all(stream: &UnixStream, bytes: &[u8], control: &mut SendAncillaryBuffer<'_, '_, '_>) -> io::Result<()> {
    let mut sent = 0;
    while sent < bytes.len() {
        let mut none = SendAncillaryBuffer::default();
        let control = if sent == 0 { &mut *control } else { &mut none };
        match rustix::net::sendmsg(stream, &[IoSlice::new(&bytes[sent..])], control, SendFlags::NOSIGNAL) {
            Ok(n) => sent += n,
            Err(Errno::INTR) => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(())
}

/// The daemon's counters, as `<name> <value>` lines.
pub fn stats(socket: &Path) -> Result<Vec<u8>, ClientError> {
    let io_error = |source: io::Error| ClientError::Io { path: socket.to_owned(), source };
    let stream =
        UnixStream::connect(socket).map_err(|source| ClientError::Connect { path: socket.to_owned(), source })?;
    let sent = send_all(&stream, STATS_MAGIC, &mut SendAncillaryBuffer::default());
    let answer = read_reply(&stream).map_err(io_error)?;
    if answer.is_empty() {
        sent.map_err(io_error)?;
    }
    if let Some(text) = answer.strip_prefix(b"fatal: ") {
        let message = text.strip_suffix(b"\n").unwrap_or(text).to_vec();
        return Err(ClientError::Refused { path: socket.to_owned(), message });
    }
    Ok(answer)
}

/// The daemon's one-line reply, or whatever it wrote before it closed. A reset after some bytes (the daemon closed
/// with our bytes unread) still leaves those bytes.
fn read_reply(mut stream: &UnixStream) -> io::Result<Vec<u8>> {
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Ok(reply),
            Ok(n) => {
                reply.extend_from_slice(&buf[..n]);
                // The reply is one line: done without waiting for the daemon to log and close.
                if reply.ends_with(b"\n") {
                    return Ok(reply);
                }
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(_) if !reply.is_empty() => return Ok(reply),
            Err(err) if err.kind() == io::ErrorKind::ConnectionReset => return Ok(reply),
            Err(err) => return Err(err),
        }
    }
}

/// This process's umask, for the files the daemon writes for it. Read by setting it and back, which is safe here:
/// `connect` has one thread.
fn current_umask() -> u32 {
    let old = rustix::process::umask(Mode::empty());
    rustix::process::umask(old);
    old.bits()
}

/// The number a `--cat-blob-fd=<n>` flag names, read as git's `ulong_arg` reads it (decimal, `0x` hex or
/// `0` octal); other flags and unreadable numbers name nothing (the session reports them as git does).
fn named_cat_blob_fd(arg: &[u8]) -> Option<i32> {
    i32::try_from(ulong_arg(arg.strip_prefix(b"--cat-blob-fd=")?)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cat_blob_fd_numbers_are_read_like_strtoul() {
        assert_eq!(named_cat_blob_fd(b"--cat-blob-fd=3"), Some(3));
        assert_eq!(named_cat_blob_fd(b"--cat-blob-fd=0x1f"), Some(31));
        assert_eq!(named_cat_blob_fd(b"--cat-blob-fd=012"), Some(10));
        assert_eq!(named_cat_blob_fd(b"--cat-blob-fd=0"), Some(0));
        assert_eq!(named_cat_blob_fd(b"--cat-blob-fd=x"), None);
        assert_eq!(named_cat_blob_fd(b"--cat-blob-fd=-1"), None);
        assert_eq!(named_cat_blob_fd(b"--quiet"), None);
    }
}
