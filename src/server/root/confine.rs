//! The root a `--root` daemon serves, and the one way to look at a path under it: the kernel resolves the path
//! beneath the root's directory fd (`openat2` with `RESOLVE_BENEATH`), so that `..`, symlinks and absolute
//! symlink targets that would leave the root fail (`EXDEV`) before anything outside it is opened or even looked
//! at. A path that does not start with the root is refused without touching the file system at all.
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::fatal::Bytes;
use crate::refs::{FileError, RepoFiles, Stamp};

#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfineError {
    #[error("'{}' is outside the root '{}'", Bytes(.path.as_os_str().as_bytes()), Bytes(.root.as_os_str().as_bytes()))]
    Outside { path: PathBuf, root: PathBuf },
    #[error("cannot read '{}': {source}", Bytes(.path.as_os_str().as_bytes()))]
    Io { path: PathBuf, source: io::Error },
}

/// The directory a `--root` daemon serves, opened once.
#[derive(Debug)]
pub(crate) struct Root {
    /// The root's real path (symlinks resolved when the daemon started).
    path: PathBuf,
    dir: OwnedFd,
}

/// A path resolved beneath the root: its real path, and an `O_PATH` fd on what it names.
pub(crate) struct Beneath {
    pub path: PathBuf,
    pub fd: OwnedFd,
}

impl Beneath {
    pub(crate) fn metadata(&self) -> io::Result<std::fs::Metadata> {
        // fstat through /proc would follow; statx on the O_PATH fd itself reads the inode it names.
        std::fs::metadata(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }

    pub(crate) fn is_dir(&self) -> bool {
        self.metadata().is_ok_and(|meta| meta.is_dir())
    }

    /// May `uid` (in group `gid`) read and enter it, by its mode? (The daemon's own uid may read what it may.)
    pub(crate) fn readable_by(&self, uid: u32, gid: u32) -> bool {
        let Ok(meta) = self.metadata() else { return false };
        let bits = if meta.uid() == uid {
            meta.mode() >> 6
        } else if meta.gid() == gid {
            meta.mode() >> 3
        } else {
            meta.mode()
        };
        let wanted = if meta.is_dir() { 0o5 } else { 0o4 };
        bits & wanted == wanted
    }
}

impl Root {
    /// Opens the root `dir` (which must be a directory).
    pub(crate) fn open(dir: &Path) -> io::Result<Root> {
        let path = dir.canonicalize()?;
        let dir = rustix::fs::open(&path, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
        Ok(Root { path, dir })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn outside(&self, path: &Path) -> ConfineError {
        ConfineError::Outside { path: path.to_owned(), root: self.path.clone() }
    }

    /// Resolves the absolute `path` beneath the root: `Ok(None)` if nothing is there, an error if it is (or leads)
    /// outside the root.
    pub(crate) fn resolve(&self, path: &Path) -> Result<Option<Beneath>, ConfineError> {
        let Some(fd) = self.open_beneath(path, OFlags::PATH)? else { return Ok(None) };
        let real = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
            .map_err(|source| ConfineError::Io { path: path.to_owned(), source })?;
        // The kernel kept the walk beneath the root; its result lies there too, unless the root itself moved.
        if !real.starts_with(&self.path) {
            return Err(self.outside(&real));
        }
        Ok(Some(Beneath { path: real, fd }))
    }

    /// Opens `path` beneath the root with `flags`: `Ok(None)` if nothing is there, an error if it is (or leads)
    /// outside the root.
    fn open_beneath(&self, path: &Path, flags: OFlags) -> Result<Option<OwnedFd>, ConfineError> {
        let relative = path.strip_prefix(&self.path).map_err(|_| self.outside(path))?;
        let relative = if relative.as_os_str().is_empty() { Path::new(".") } else { relative };
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        match openat2_retried(&self.dir, relative, flags | OFlags::CLOEXEC, resolve) {
            Ok(fd) => Ok(Some(fd)),
            Err(Errno::XDEV) => Err(self.outside(path)),
            Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => Ok(None),
            Err(err) => Err(ConfineError::Io { path: path.to_owned(), source: err.into() }),
        }
    }

    /// Whether something is at `path` beneath the root (git's `is_git_directory` asks only that): the walk of
    /// [`Root::resolve`] without reading back the real path, a `readlink` of `/proc` per call that every
    /// connection would pay several times.
    pub(crate) fn exists(&self, path: &Path) -> Result<bool, ConfineError> {
        Ok(self.open_beneath(path, OFlags::PATH)?.is_some())
    }

    /// The identity of what `path` names beneath the root (following a symlink inside it, as `stat(2)` does):
    /// `Ok(None)` if nothing is there. An open repository's configuration files are looked at this way to see a
    /// change: one replaced by a symlink that leads out is refused, never looked at.
    pub(crate) fn stat(&self, path: &Path) -> Result<Option<rustix::fs::Stat>, ConfineError> {
        let Some(fd) = self.open_beneath(path, OFlags::PATH)? else { return Ok(None) };
        // fstat reads the inode an O_PATH fd names (Linux ≥ 3.6).
        rustix::fs::fstat(&fd).map(Some).map_err(|err| ConfineError::Io { path: path.to_owned(), source: err.into() })
    }

    /// Opens the file at `path` beneath the root for reading as `open(2)` would (`O_NOFOLLOW` with `no_follow`,
    /// as git opens the work tree's `.mailmap`): the error `open` gives, `EXDEV` (leaving the root) as
    /// [`ConfineError::Outside`].
    pub(crate) fn open_file(&self, path: &Path, no_follow: bool) -> Result<std::fs::File, ConfineError> {
        let relative = path.strip_prefix(&self.path).map_err(|_| self.outside(path))?;
        let relative = if relative.as_os_str().is_empty() { Path::new(".") } else { relative };
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let flags = if no_follow { flags | OFlags::NOFOLLOW } else { flags };
        match openat2_retried(&self.dir, relative, flags, resolve) {
            Ok(fd) => Ok(std::fs::File::from(fd)),
            Err(Errno::XDEV) => Err(self.outside(path)),
            Err(err) => Err(ConfineError::Io { path: path.to_owned(), source: err.into() }),
        }
    }

    /// Reads the small file at `path` (a `.git` file, `commondir`, `objects/info/alternates`) beneath the root:
    /// `Ok(None)` if there is none. Opened for reading in the same walk (not blocking on a FIFO someone put
    /// there).
    pub(crate) fn read(&self, path: &Path) -> Result<Option<Vec<u8>>, ConfineError> {
        let Some(fd) = self.open_beneath(path, OFlags::RDONLY | OFlags::NONBLOCK)? else { return Ok(None) };
        let mut bytes = Vec::new();
        match io::Read::read_to_end(&mut std::fs::File::from(fd), &mut bytes) {
            Ok(_) => Ok(Some(bytes)),
            Err(err) if err.kind() == io::ErrorKind::IsADirectory => Ok(None),
            Err(source) => Err(ConfineError::Io { path: path.to_owned(), source }),
        }
    }
}

/// How often a walk beneath the root is tried again when the kernel could not tell it stayed there.
const RETRIES: usize = 1000;

/// `openat2` beneath `dir`, tried again on `EAGAIN`: with `RESOLVE_BENEATH` the kernel fails a walk through `..`
/// whenever a rename or mount anywhere on the system happened during it (it cannot then rule out an escape), and
/// openat2(2) leaves the retry to the caller. On a forge node git renames lock files all the time, so without it a
/// file reached through `..` failed to read now and then. Bounded, so that a machine renaming without pause yields
/// an error rather than a spinning connection.
fn openat2_retried(dir: &OwnedFd, relative: &Path, flags: OFlags, resolve: ResolveFlags) -> Result<OwnedFd, Errno> {
    let mut tries = 0;
    loop {
        match rustix::fs::openat2(dir, relative, flags, Mode::empty(), resolve) {
            Err(Errno::AGAIN) if tries < RETRIES => tries += 1,
            opened => return opened,
        }
    }
}

/// A `--root` daemon's clients' references and index are read through its root: one leading out is refused.
impl RepoFiles for Root {
    fn read(&self, path: &Path) -> Result<Option<Vec<u8>>, FileError> {
        Root::read(self, path).map_err(FileError::from)
    }

    fn list(&self, path: &Path) -> Result<Vec<(OsString, bool)>, FileError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NONBLOCK;
        let Some(fd) = self.open_beneath(path, flags)? else { return Ok(Vec::new()) };
        let io = |source: Errno| FileError::Io { path: path.to_owned(), source: source.into() };
        let mut entries = Vec::new();
        for entry in rustix::fs::Dir::read_from(&fd).map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            let is_dir = match entry.file_type() {
                FileType::Directory => true,
                FileType::RegularFile => false,
                // A symlink (or a file system that does not say): what it leads to, beneath the root.
                _ => self.resolve(&path.join(name))?.is_some_and(|found| found.is_dir()),
            };
            entries.push((name.to_owned(), is_dir));
        }
        Ok(entries)
    }

    fn is_plain_file(&self, path: &Path) -> Result<bool, FileError> {
        let Some(fd) = self.open_beneath(path, OFlags::PATH | OFlags::NOFOLLOW)? else { return Ok(false) };
        let stat = rustix::fs::fstat(&fd).map_err(|err| FileError::Io { path: path.to_owned(), source: err.into() })?;
        Ok(FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile)
    }

    /// The root works in no client's directory: only an absolute path is looked for ([`ClientFiles`] places a
    /// relative one).
    fn on_disk(&self, path: &Path) -> bool {
        path.is_absolute() && matches!(self.open_beneath(path, OFlags::PATH | OFlags::NOFOLLOW), Ok(Some(_)))
    }

    fn stamp(&self, path: &Path) -> Result<Option<Stamp>, FileError> {
        Ok(self.stat(path)?.map(|stat| Stamp {
            dev: stat.st_dev,
            ino: stat.st_ino,
            size: stat.st_size as u64,
            mtime: (stat.st_mtime, stat.st_mtime_nsec as i64),
        }))
    }
}

/// One client's view of the root: its files, with relative paths named from the directory git would work in for
/// that client (the top of its work tree, or its own directory).
pub(crate) struct ClientFiles<'a> {
    pub root: &'a Root,
    pub workdir: Option<&'a Path>,
}

impl RepoFiles for ClientFiles<'_> {
    fn read(&self, path: &Path) -> Result<Option<Vec<u8>>, FileError> {
        RepoFiles::read(self.root, path)
    }

    fn list(&self, path: &Path) -> Result<Vec<(OsString, bool)>, FileError> {
        self.root.list(path)
    }

    fn stamp(&self, path: &Path) -> Result<Option<Stamp>, FileError> {
        self.root.stamp(path)
    }

    fn is_plain_file(&self, path: &Path) -> Result<bool, FileError> {
        self.root.is_plain_file(path)
    }

    fn on_disk(&self, path: &Path) -> bool {
        match self.workdir {
            Some(workdir) => self.root.on_disk(&workdir.join(path)),
            None => self.root.on_disk(path),
        }
    }
}

impl From<ConfineError> for FileError {
    fn from(err: ConfineError) -> FileError {
        match err {
            outside @ ConfineError::Outside { .. } => FileError::Refused(outside.to_string()),
            ConfineError::Io { path, source } => FileError::Io { path, source },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_leave_the_root_are_refused() {
        let top = tempfile::tempdir().unwrap();
        let root_dir = top.path().join("root");
        std::fs::create_dir_all(root_dir.join("a/b")).unwrap();
        std::fs::create_dir(top.path().join("secret")).unwrap();
        std::os::unix::fs::symlink(top.path().join("secret"), root_dir.join("out")).unwrap();
        std::os::unix::fs::symlink("../b", root_dir.join("a/b/up")).unwrap();
        let root = Root::open(&root_dir).unwrap();
        let real = root.path().to_owned();
        let inside = root.resolve(&real.join("a/b/up")).unwrap().unwrap();
        assert_eq!(inside.path, real.join("a/b"));
        assert!(inside.is_dir());
        assert!(root.resolve(&real.join("nothing")).unwrap().is_none());
        for escape in [real.join("out"), real.join("../secret"), real.join("a/../../secret"), top.path().join("secret")]
        {
            assert!(matches!(root.resolve(&escape), Err(ConfineError::Outside { .. })), "{}", escape.display());
        }
    }

    /// Regression: a walk beneath the root through `..` fails with `EAGAIN` when any rename on the system moves
    /// the kernel's rename sequence meanwhile (openat2(2): "the caller may choose to retry"). Files a link reached
    /// through `..` then failed to read now and then under a busy machine (a reflog linked inside the root read
    /// as an I/O error in a full `cargo test`).
    #[test]
    fn walks_through_dotdot_survive_renames_elsewhere() {
        let top = tempfile::tempdir().unwrap();
        let root_dir = top.path().join("root");
        std::fs::create_dir_all(root_dir.join("a/b")).unwrap();
        std::fs::write(root_dir.join("shared"), b"bytes").unwrap();
        std::os::unix::fs::symlink("../../shared", root_dir.join("a/b/link")).unwrap();
        let busy = top.path().join("busy");
        std::fs::create_dir_all(busy.join("one")).unwrap();
        std::fs::create_dir_all(busy.join("two")).unwrap();
        std::fs::write(busy.join("one/f"), b"").unwrap();
        let root = Root::open(&root_dir).unwrap();
        let path = root.path().join("a/b/../b/link");
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                // Renames across directories, each a write of the kernel's rename sequence.
                let (mut from, mut to) = (busy.join("one/f"), busy.join("two/f"));
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::fs::rename(&from, &to).unwrap();
                    std::mem::swap(&mut from, &mut to);
                }
            });
            let read = (0..20_000).map(|_| root.read(&path)).find(|read| !matches!(read, Ok(Some(_))));
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            assert!(read.is_none(), "{read:?}");
        });
    }
}
