//! A thread's own file-system context (`unshare(CLONE_FS)`): its own working directory and umask, so that a
//! connection works in its client's directory with its client's umask, and the socket file is bound with umask 0,
//! without touching the process's (the other connections').
use std::cell::Cell;
#[cfg(test)]
use std::os::fd::AsFd;
use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

thread_local! {
    /// This thread has a file-system context of its own already.
    static UNSHARED: Cell<bool> = const { Cell::new(false) };
}

/// Gives the calling thread (and the threads it starts afterwards) its own working directory, root and umask, sets
/// the umask to `umask` and, given `dir`, makes it the working directory. The directory and umask it had come back
/// when the returned guard is dropped: a connection's thread that runs its client's stream in the client's
/// directory goes on to serve other connections from the daemon's.
#[allow(unsafe_code)]
pub(super) fn enter(umask: u32, dir: Option<BorrowedFd<'_>>) -> Result<Entered, Errno> {
    if !UNSHARED.get() {
        // SAFETY: with CLONE_FS only, unshare gives this thread its own working directory, root and umask. It does
        // not touch the fd table (CLONE_FILES is what `unshare_unsafe` is unsafe for), so every fd stays valid
        // everywhere.
        unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::FS)? };
        UNSHARED.set(true);
    }
    let dir = match dir {
        Some(dir) => {
            let here = rustix::fs::open(".", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
            rustix::process::fchdir(dir)?;
            Some(here)
        }
        None => None,
    };
    Ok(Entered { dir, umask: rustix::process::umask(Mode::from_raw_mode(umask & 0o777)) })
}

/// The working directory and umask a thread had before [`enter`], put back when dropped.
pub(super) struct Entered {
    dir: Option<OwnedFd>,
    umask: Mode,
}

impl Drop for Entered {
    fn drop(&mut self) {
        rustix::process::umask(self.umask);
        if let Some(dir) = &self.dir {
            // The directory the thread was in a moment ago: the fd keeps it reachable.
            let _ = rustix::process::fchdir(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection's thread serves its client's stream in the client's directory with its umask, then the
    /// next connection from where it was.
    #[test]
    fn the_directory_and_umask_come_back() {
        let client = tempfile::tempdir().unwrap();
        let dir = rustix::fs::open(client.path(), OFlags::PATH | OFlags::DIRECTORY, Mode::empty()).unwrap();
        std::thread::spawn(move || {
            // This thread's own umask from here on, 022; the process's is left alone.
            let _own = enter(0o022, None).unwrap();
            let before = std::env::current_dir().unwrap();
            let entered = enter(0o077, Some(dir.as_fd())).unwrap();
            assert_eq!(std::env::current_dir().unwrap(), client.path().canonicalize().unwrap());
            assert_eq!(rustix::process::umask(Mode::from_raw_mode(0o077)), Mode::from_raw_mode(0o077));
            drop(entered);
            assert_eq!(std::env::current_dir().unwrap(), before);
            assert_eq!(rustix::process::umask(Mode::from_raw_mode(0o022)), Mode::from_raw_mode(0o022));
        })
        .join()
        .unwrap();
    }
}
