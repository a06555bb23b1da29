//! Building a `sigset_t`, for git's signal handling copied by cat-blobd (restoring SIGPIPE, waiting for
//! SIGTERM/SIGINT).

/// A signal set holding exactly `signals`.
#[allow(unsafe_code)]
pub fn sigset(signals: &[libc::c_int]) -> libc::sigset_t {
    // SAFETY: a zeroed sigset_t is a valid value to hand to sigemptyset, which initialises it; sigaddset then
    // only sets bits in this local set (and fails, changing nothing, for a number that is not a signal).
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &signal in signals {
            libc::sigaddset(&mut set, signal);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(unsafe_code)]
    fn member(set: &libc::sigset_t, signal: libc::c_int) -> bool {
        // SAFETY: sigismember only reads the initialised set.
        unsafe { libc::sigismember(set, signal) == 1 }
    }

    #[test]
    fn holds_exactly_the_signals_named() {
        let set = sigset(&[libc::SIGTERM, libc::SIGINT]);
        assert!(member(&set, libc::SIGTERM) && member(&set, libc::SIGINT));
        assert!(!member(&set, libc::SIGPIPE) && !member(&set, libc::SIGHUP));
        assert!((1..32).all(|signal| !member(&sigset(&[]), signal)));
    }
}
