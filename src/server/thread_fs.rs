//! A thread's own file-system context (`unshare(CLONE_FS)`): its own working directory and umask, so that a
//! connection works in its client's directory with its client's umask, and the socket file is bound with umask 0,
//! without touching the process's (the other connections').
use std::os::fd::BorrowedFd;

use rustix::fs::Mode;
use rustix::io::Errno;

/// Gives the calling thread (and the threads it starts afterwards) its own working directory, root and umask, sets
/// the umask to `umask` and, given `dir`, makes it the working directory.
#[allow(unsafe_code)]
pub(super) fn enter(umask: u32, dir: Option<BorrowedFd<'_>>) -> Result<(), Errno> {
    // SAFETY: with CLONE_FS only, unshare gives this thread its own working directory, root and umask. It does not
    // touch the fd table (CLONE_FILES is what `unshare_unsafe` is unsafe for), so every fd stays valid everywhere.
    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::FS)? };
    rustix::process::umask(Mode::from_raw_mode(umask & 0o777));
    if let Some(dir) = dir {
        rustix::process::fchdir(dir)?;
    }
    Ok(())
}
