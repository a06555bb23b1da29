//! C's `strerror` text for an I/O error, which git prints after `: ` in its messages.
use std::io;

/// An I/O error's text the way C's `strerror` gives it (`Bad file descriptor`), without the
/// ` (os error 9)` that `io::Error`'s `Display` appends. Errors that did not come from the OS keep their message.
pub(crate) fn strerror(err: &io::Error) -> String {
    let text = err.to_string();
    match err.raw_os_error() {
        Some(code) => match text.strip_suffix(&format!(" (os error {code})")) {
            Some(message) => message.to_owned(),
            None => text,
        },
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_read_as_glibc_strerror() {
        // The texts glibc's strerror gives, which git prints in `cannot read '<file>': <strerror>`.
        assert_eq!(strerror(&io::Error::from_raw_os_error(libc::EBADF)), "Bad file descriptor");
        assert_eq!(strerror(&io::Error::from_raw_os_error(libc::ENOENT)), "No such file or directory");
        assert_eq!(strerror(&io::Error::from_raw_os_error(libc::EISDIR)), "Is a directory");
        assert_eq!(strerror(&io::Error::from_raw_os_error(libc::EACCES)), "Permission denied");
    }

    #[test]
    fn other_errors_keep_their_message() {
        assert_eq!(strerror(&io::Error::other("no OS here (os error 9)")), "no OS here (os error 9)");
    }
}
