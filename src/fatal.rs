//! How a fatal error reaches stderr: `fatal: <message>` in git's format, with the stream's bytes as they were.
//!
//! git's `vreportf` (usage.c) formats into a 4096-byte buffer, so the line is cut at 4095 bytes including the
//! prefix, then replaces every control byte except HT and LF with `?`, and appends one LF. We do the same, so a
//! frontend that parses git's errors reads ours the same way.
//!
//! git prints the stream's bytes raw, valid UTF-8 or not, but a Rust error message is a `str`. So [`Bytes`]
//! carries each byte that is not valid UTF-8 inside the message as a char of a reserved private-use range, and
//! [`report_line`], which writes every `fatal:`, `error:` and `warning:` line, turns those chars back into the
//! bytes. A char of the reserved range that was in the stream itself is carried byte by byte the same way, so
//! the mapping loses nothing.
use std::fmt::{self, Write as _};
use std::io::Write;

/// git's `vreportf` buffer is 4096 bytes, one of them the terminating NUL.
const MAX_REPORT: usize = 4095;

/// Byte `b` (0x80..=0xFF; every byte of invalid UTF-8 is one) travels as the char `RAW_BASE + b`:
/// U+10FF80..=U+10FFFF, the end of Supplementary Private Use Area-B.
const RAW_BASE: u32 = 0x10_FF00;

/// The byte a char of the reserved range carries, or `None` for any other char.
fn carried_byte(c: char) -> Option<u8> {
    u32::from(c).checked_sub(RAW_BASE).and_then(|b| u8::try_from(b).ok()).filter(|b| *b >= 0x80)
}

fn carrier(byte: u8) -> char {
    debug_assert!(byte >= 0x80, "ASCII is always valid UTF-8");
    char::from_u32(RAW_BASE + u32::from(byte)).expect("U+10FF80..=U+10FFFF are chars")
}

/// The bytes `message` stands for: each char of the reserved range becomes the byte it carries (see [`Bytes`]).
pub(crate) fn message_bytes(message: &str) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(message.len());
    let mut utf8 = [0; 4];
    for c in message.chars() {
        match carried_byte(c) {
            Some(byte) => bytes.push(byte),
            None => bytes.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes()),
        }
    }
    bytes
}

/// The bytes of one `<prefix><message>` line as git's `vreportf` would print it (prefix `fatal: `, `error: `
/// or `warning: `), with the stream's bytes in `message` raw again.
pub(crate) fn report_line(prefix: &str, message: &str) -> Vec<u8> {
    let mut line = Vec::with_capacity(prefix.len() + 1 + message.len().min(MAX_REPORT));
    line.extend_from_slice(prefix.as_bytes());
    line.extend_from_slice(&message_bytes(message));
    line.truncate(MAX_REPORT);
    for byte in &mut line {
        if (byte.is_ascii_control() && *byte != b'\t' && *byte != b'\n') || *byte == 0x7f {
            *byte = b'?';
        }
    }
    line.push(b'\n');
    line
}

/// The bytes of one `fatal:` line, as git would print them for `message`.
pub(crate) fn fatal_line(message: &str) -> Vec<u8> {
    report_line("fatal: ", message)
}

/// Prints `fatal: <message>` on stderr. Errors writing stderr are ignored: there is nowhere left to report them.
pub fn print_fatal(message: &str) {
    let _ = std::io::stderr().write_all(&fatal_line(message));
}

/// Shows bytes from the stream in a message without losing any: valid UTF-8 as is, every other byte (and every
/// byte of a char in the reserved range) as the reserved char that [`report_line`] turns back into it.
pub(crate) struct Bytes<'a>(pub(crate) &'a [u8]);

impl fmt::Display for Bytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let carry = |f: &mut fmt::Formatter<'_>, bytes: &[u8]| bytes.iter().try_for_each(|b| f.write_char(carrier(*b)));
        for chunk in self.0.utf8_chunks() {
            let mut valid = chunk.valid();
            // Reserved chars are rare: write the runs between them at once.
            while let Some((at, c)) = valid.char_indices().find(|(_, c)| carried_byte(*c).is_some()) {
                f.write_str(&valid[..at])?;
                carry(f, &valid.as_bytes()[at..at + c.len_utf8()])?;
                valid = &valid[at + c.len_utf8()..];
            }
            f.write_str(valid)?;
            carry(f, chunk.invalid())?;
        }
        Ok(())
    }
}

impl fmt::Debug for Bytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", message_bytes(&self.to_string()).escape_ascii().to_string())
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
    fn any_bytes_reach_the_line_unchanged() {
        let reserved = "\u{10ff80}\u{10ffff}".as_bytes();
        for bytes in [
            &b"ok \xff\xfe \xc3\xbc"[..],
            b"\xc3",
            b"\xf4\x8f\xbe",
            reserved,
            &[b"a".as_slice(), reserved, b"\x80b\xf4\x8f\xbf\xbf"].concat(),
            "\u{10ff7f}\u{fffd}".as_bytes(),
            &(0x80..=0xff).collect::<Vec<u8>>(),
        ] {
            let message = format!("bad: {}", Bytes(bytes));
            assert_eq!(message_bytes(&message), [b"bad: ", bytes].concat(), "{:?}", bytes.escape_ascii());
        }
    }

    #[test]
    fn valid_utf8_outside_the_reserved_range_is_unchanged() {
        assert_eq!(Bytes("ok \u{fc} \u{10ff7f}".as_bytes()).to_string(), "ok \u{fc} \u{10ff7f}");
    }

    #[test]
    fn the_cut_counts_raw_bytes() {
        let line = fatal_line(&Bytes(&[0xff; 5000]).to_string());
        assert_eq!(line.len(), MAX_REPORT + 1);
        assert!(line[b"fatal: ".len()..MAX_REPORT].iter().all(|b| *b == 0xff));
    }
}
