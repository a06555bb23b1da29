//! The socket file: never take over a socket that a live daemon answers on, replace a stale one (left by a daemon
//! that was killed), create it with the requested mode from the start, and remove it on exit only if it is still
//! ours.
use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
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
pub struct SocketFile {
    path: PathBuf,
    id: Option<(u64, u64)>,
}

impl SocketFile {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the socket file if it is still the one we bound (same device and inode).
    pub fn remove(&mut self) {
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
pub fn bind(path: &Path, mode: u32) -> Result<(UnixListener, SocketFile), ListenError> {
    let io_error = |source: io::Error| ListenError::Io { path: path.to_owned(), source };
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
    // Linux creates the file with the socket inode's mode (less the umask): setting it before `bind` means the
    // file is never more open than asked, not even for a moment. The chmod below makes it exact.
    let _ = rustix::fs::fchmod(&socket, Mode::from_raw_mode(mode));
    rustix::net::bind(&socket, &address).map_err(|err| match err {
        // Another daemon bound it between our probe and now.
        Errno::ADDRINUSE => ListenError::Live(path.to_owned()),
        err => io_error(err.into()),
    })?;
    let mut file = SocketFile { path: path.to_owned(), id: None };
    let meta = fs::symlink_metadata(path).map_err(io_error)?;
    file.id = Some((meta.dev(), meta.ino()));
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(io_error)?;
    rustix::net::listen(&socket, BACKLOG).map_err(|err| io_error(err.into()))?;
    let listener = UnixListener::from(socket);
    listener.set_nonblocking(true).map_err(io_error)?;
    Ok((listener, file))
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
        let (live, _file) = bind(&path, 0o600).unwrap();
        assert!(matches!(bind(&path, 0o600), Err(ListenError::Live(_))));
        drop(live);
        // The file stays, nobody listens: stale.
        std::mem::forget(_file);
        assert_eq!(probe(&path).unwrap(), Existing::Stale);
        let (_listener, _file) = bind(&path, 0o600).unwrap();
        assert_eq!(probe(&path).unwrap(), Existing::Live);
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
