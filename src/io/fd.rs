//! Borrowing an fd by its number: the one place that turns a raw number into a [`BorrowedFd`], and only after
//! checking that the number names an open fd.
use std::os::fd::{BorrowedFd, RawFd};

/// Fd `number` of this process, borrowed, or `None` if no such fd is open (or the number is negative).
///
/// # Safety
///
/// If the fd is open, it must stay open for all of `'fd`: nothing may close it while the borrow lives (an fd this
/// process inherited and never closes, or one borrowed only for a call that cannot close it).
#[allow(unsafe_code)]
pub unsafe fn borrow_if_open<'fd>(number: RawFd) -> Option<BorrowedFd<'fd>> {
    // `BorrowedFd` reserves -1 as a niche (borrow_raw panics on it); no negative number names an fd anyway.
    if number < 0 {
        return None;
    }
    // SAFETY: F_GETFD reads the fd's flags and nothing else; on a number that is not open it fails with EBADF.
    if unsafe { libc::fcntl(number, libc::F_GETFD) } == -1 {
        return None;
    }
    // SAFETY: the fd is open (just checked), and the caller keeps it open for `'fd`.
    Some(unsafe { BorrowedFd::borrow_raw(number) })
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    use super::*;

    #[allow(unsafe_code)]
    #[test]
    fn only_an_open_number_is_borrowed() {
        let (_read_end, write_end) = rustix::pipe::pipe().unwrap();
        let number = write_end.as_raw_fd();
        // SAFETY: `write_end` outlives the borrow, which is only read.
        let borrowed = unsafe { borrow_if_open(number) }.map(|fd| fd.as_raw_fd());
        assert_eq!(borrowed, Some(number));
        // A number closed here could be reopened at once by another test's thread: only numbers that cannot be
        // open (above any fd limit, or negative) test the other side.
        for number in [-1, RawFd::MIN, RawFd::MAX] {
            // SAFETY: none of these numbers is open, so nothing is borrowed.
            assert!(unsafe { borrow_if_open(number) }.is_none());
        }
    }
}
