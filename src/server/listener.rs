//! The socket file: never take over a socket that a live daemon answers on, replace a stale one (left by a daemon
//! that was killed), create it with the requested mode from the start, and remove it on exit only if it is still
//! ours.
//!
//! Two daemons starting at once on one path could each find the other's socket stale (bound, not yet listening)
//! and remove it: a start-up lock, `flock` on `<socket>.lock`, held for the daemon's life, makes one of them wait
//! its turn and fail. The lock file stays (removing it would let a third daemon lock a new file while the second
//! holds the old one). No chmod by path (it would follow a symlink put there after `bind`): the socket inode gets
//! its mode before `bind`, and `bind` runs on a thread of its own umask 0, so the file is created with exactly
//! that mode.
use std::fs;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use rustix::fs::Mode;

use crate::git_compat::strerror::strerror;
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};

/// The accept backlog: connections past `--max-connections` wait here.
const BACKLOG: i32 = 1024;

#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("another cat-blobd daemon is listening on {}; stop it first or pick another --socket", .0.display())]
    Live(PathBuf),
    #[error("{} exists and is not a socket; refusing to replace it", .0.display())]
    NotASocket(PathBuf),
    #[error("another cat-blobd daemon is starting or listening on {} (it holds {}.lock)", .0.display(), .0.display())]
    Locked(PathBuf),
    #[error("cannot use socket path {}: {}", path.display(), strerror(source))]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// What is at the socket path now.
#[derive(Debug, PartialEq, Eq)]
enum Existing {
    Nothing,
    /// A socket nobody listens on.
    Stale,
    /// A socket a process accepts on (or whose backlog is full, which is as live).
    Live,
    NotASocket,
}

/// The bound socket file; removed by [`SocketFile::remove`] or on drop, unless another file replaced it.
#[derive(Debug)]
pub(crate) struct SocketFile {
    path: PathBuf,
    id: Option<(u64, u64)>,
    /// The start-up lock, held while the daemon lives.
    _lock: fs::File,
}

impl SocketFile {
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the socket file if it is still the one we bound (same device and inode).
    pub(crate) fn remove(&mut self) {
        let Some(id) = self.id.take() else { return };
        if fs::symlink_metadata(&self.path).is_ok_and(|meta| (meta.dev(), meta.ino()) == id) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Binds a listening socket at `path` with permissions `mode`, replacing a stale socket file.
pub(crate) fn bind(path: &Path, mode: u32) -> Result<(UnixListener, SocketFile), ListenError> {
    let io_error = |source: io::Error| ListenError::Io { path: path.to_owned(), source };
    let lock = lock(path)?;
    match probe(path).map_err(io_error)? {
        Existing::Live => return Err(ListenError::Live(path.to_owned())),
        Existing::NotASocket => return Err(ListenError::NotASocket(path.to_owned())),
        Existing::Stale => match fs::remove_file(path) {
            Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(io_error(err)),
            _ => {}
        },
        Existing::Nothing => {}
    }
    let address = SocketAddrUnix::new(path).map_err(|err| io_error(err.into()))?;
    let socket = rustix::net::socket_with(AddressFamily::UNIX, SocketType::STREAM, SocketFlags::CLOEXEC, None)
        .map_err(|err| io_error(err.into()))?;
    // Linux creates the file with the socket inode's mode less the umask: setting it before `bind`, with no umask,
    // makes the file exactly `mode` from its first moment.
    rustix::fs::fchmod(&socket, Mode::from_raw_mode(mode)).map_err(|err| io_error(err.into()))?;
    bind_without_umask(&socket, &address).map_err(|err| match err {
        // Another daemon bound it between our probe and now.
        Errno::ADDRINUSE => ListenError::Live(path.to_owned()),
        err => io_error(err.into()),
    })?;
    let mut file = SocketFile { path: path.to_owned(), id: None, _lock: lock };
    let meta = fs::symlink_metadata(path).map_err(io_error)?;
    file.id = Some((meta.dev(), meta.ino()));
    rustix::net::listen(&socket, BACKLOG).map_err(|err| io_error(err.into()))?;
    let listener = UnixListener::from(socket);
    listener.set_nonblocking(true).map_err(io_error)?;
    Ok((listener, file))
}

/// Takes the start-up lock of the socket at `path`.
fn lock(path: &Path) -> Result<fs::File, ListenError> {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let io_error = |source: io::Error| ListenError::Io { path: PathBuf::from(&name), source };
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&name)
        .map_err(io_error)?;
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(file),
        Err(Errno::WOULDBLOCK) => Err(ListenError::Locked(path.to_owned())),
        Err(err) => Err(io_error(err.into())),
    }
}

/// `bind` on a thread whose umask is 0 (its own, see [`thread_fs`](super::thread_fs)), so that the socket file gets
/// exactly the mode of the socket inode; the process's umask is left alone.
fn bind_without_umask(socket: &OwnedFd, address: &SocketAddrUnix) -> Result<(), Errno> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let _umask = super::thread_fs::enter(0, None)?;
                rustix::net::bind(socket, address)
            })
            .join()
            .unwrap_or(Err(Errno::AGAIN))
    })
}

/// Looks at what is at `path`: a non-blocking connect tells a live daemon (accepted, or `EAGAIN` when its backlog
/// is full) from a stale socket file (`ECONNREFUSED`).
fn probe(path: &Path) -> io::Result<Existing> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Existing::Nothing),
        Err(err) => return Err(err),
    };
    if !meta.file_type().is_socket() {
        return Ok(Existing::NotASocket);
    }
    let socket = rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
        None,
    )?;
    match rustix::net::connect(&socket, &SocketAddrUnix::new(path)?) {
        Ok(()) | Err(Errno::AGAIN | Errno::INPROGRESS) => Ok(Existing::Live),
        Err(Errno::CONNREFUSED) => Ok(Existing::Stale),
        Err(Errno::NOENT) => Ok(Existing::Nothing),
        Err(err) => Err(err.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(label: &str) -> tempfile::TempDir {
        tempfile::Builder::new().prefix(label).tempdir().unwrap()
    }

    #[test]
    fn binds_with_the_mode_and_removes_only_its_own_file() {
        let dir = scratch("bind");
        let path = dir.path().join("s");
        let (_listener, mut file) = bind(&path, 0o600).unwrap();
        let meta = fs::symlink_metadata(&path).unwrap();
        assert!(meta.file_type().is_socket());
        assert_eq!(meta.mode() & 0o777, 0o600);
        file.remove();
        assert!(!path.exists());
        drop(file);

        let (_listener, file) = bind(&path, 0o660).unwrap();
        assert_eq!(fs::symlink_metadata(&path).unwrap().mode() & 0o777, 0o660);
        // Someone replaced the file: it is not ours to remove.
        fs::remove_file(&path).unwrap();
        fs::write(&path, b"not ours").unwrap();
        drop(file);
        assert_eq!(fs::read(&path).unwrap(), b"not ours");
    }

    #[test]
    fn a_live_socket_is_not_stolen_and_a_stale_one_is_replaced() {
        let dir = scratch("probe");
        let path = dir.path().join("s");
        let (live, mut file) = bind(&path, 0o600).unwrap();
        // As a daemon without the start-up lock would find it.
        file.id = None;
        drop(file);
        assert!(matches!(bind(&path, 0o600), Err(ListenError::Live(_))));
        drop(live);
        // The file stays, nobody listens: stale.
        assert_eq!(probe(&path).unwrap(), Existing::Stale);
        let (_listener, _file) = bind(&path, 0o600).unwrap();
        assert_eq!(probe(&path).unwrap(), Existing::Live);
    }

    #[test]
    fn a_second_daemon_starting_at_once_waits_for_the_lock_and_fails() {
        let dir = scratch("lock");
        let path = dir.path().join("s");
        let (_listener, _file) = bind(&path, 0o600).unwrap();
        assert!(matches!(bind(&path, 0o600), Err(ListenError::Locked(_))));
        assert!(path.exists(), "the live socket was not touched");
    }

    #[test]
    fn a_file_that_is_not_a_socket_is_left_alone() {
        let dir = scratch("notsock");
        let path = dir.path().join("s");
        fs::write(&path, b"data").unwrap();
        assert!(matches!(bind(&path, 0o600), Err(ListenError::NotASocket(_))));
        assert_eq!(fs::read(&path).unwrap(), b"data");
    }
}
