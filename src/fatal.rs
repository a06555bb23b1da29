//! How a fatal error reaches stderr: `fatal: <message>` in git's format.
//!
//! git's `vreportf` (usage.c) formats into a 4096-byte buffer, so the line is cut at 4095 bytes including the
//! prefix, then replaces every control byte except HT and LF with `?`, and appends one LF. We do the same, so a
//! frontend that parses git's errors reads ours the same way.
use std::fmt;
use std::io::Write;

/// git's `vreportf` buffer is 4096 bytes, one of them the terminating NUL.
const MAX_REPORT: usize = 4095;

/// The bytes of one `fatal:` line, as git would print them for `message`.
pub fn fatal_line(message: &str) -> Vec<u8> {
    let mut line = Vec::with_capacity(8 + message.len().min(MAX_REPORT));
    line.extend_from_slice(b"fatal: ");
    line.extend_from_slice(message.as_bytes());
    line.truncate(MAX_REPORT);
    for byte in &mut line {
        if (byte.is_ascii_control() && *byte != b'\t' && *byte != b'\n') || *byte == 0x7f {
            *byte = b'?';
        }
    }
    line.push(b'\n');
    line
}

/// Prints `fatal: <message>` on stderr. Errors writing stderr are ignored: there is nowhere left to report them.
pub fn print_fatal(message: &str) {
    let _ = std::io::stderr().write_all(&fatal_line(message));
}

/// Shows bytes from the stream in a message without losing any: valid UTF-8 as is, other bytes as `\xNN`.
///
/// git prints such bytes raw; a Rust error message is a `str`, so we escape instead of replacing them.
pub struct Bytes<'a>(pub &'a [u8]);

impl fmt::Display for Bytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in self.0.utf8_chunks() {
            f.write_str(chunk.valid())?;
            for byte in chunk.invalid() {
                write!(f, "\\x{byte:02x}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Bytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_bytes_become_question_marks_but_tab_stays() {
        assert_eq!(fatal_line("garbage after SHA1: x\r\u{1b}\t\u{7f}"), b"fatal: garbage after SHA1: x??\t?\n");
    }

    #[test]
    fn long_messages_are_cut_like_git() {
        let line = fatal_line(&"a".repeat(10_000));
        assert_eq!(line.len(), MAX_REPORT + 1);
        assert_eq!(line.last(), Some(&b'\n'));
    }

    #[test]
    fn invalid_utf8_is_escaped_not_replaced() {
        assert_eq!(Bytes(b"ok \xff\xfe \xc3\xbc").to_string(), "ok \\xff\\xfe \u{fc}");
    }
}
