//! A reflog's entries as git reads them (refs/files-backend.c `show_one_reflog_ent`): gix-ref finds the log
//! of a reference and reads it; the lines are taken apart here by git's rules, not by gix-ref's parser,
//! because the two disagree on damaged and odd lines, and git skips every line it cannot read:
//! - git skips a line without a final newline (the last line of a log cut short); gix-ref reads it;
//! - git skips a timestamp of 0 or without digits, reads it with `strtoumax` (spaces and a sign before it),
//!   and takes the offset as `strtol` reads `<sign><4 digits>…`; gix-ref's signature parser has other rules;
//! - git takes the message after the offset and one tab, or 6 bytes on without a tab; gix-ref wants the tab;
//! - git reads ids of the repository's hash only; bstr's line splitting (gix-ref's) also drops a `\r`.
//!
//! A log that does not exist has no entries; one that exists but cannot be read is an error (git would say
//! the log is empty: damage is not absence).
use gix_hash::ObjectId;

use super::error::ReflogError;
use crate::git_compat::strtoumax::{strtol, strtoumax};
use crate::refs::Refs;

/// One reflog line: `<old> <new> <name> <<email>> <time> <tz>\t<message>`.
pub(super) struct Entry<'a> {
    pub old: ObjectId,
    pub new: ObjectId,
    pub timestamp: u64,
    /// The offset as git's `strtol` reads `+hhmm` (`-0130` is -130).
    pub tz: i32,
    /// To the end of the line, its newline included (as git hands it on).
    pub message: &'a [u8],
}

/// The bytes of the reflog of the full reference name `name`; `None` when there is none.
pub(super) fn read(refs: &Refs<'_>, name: &[u8]) -> Result<Option<Vec<u8>>, ReflogError> {
    refs.reflog(name).map_err(|source| ReflogError::Read { name: name.to_vec(), source })
}

/// The entries of `log` that git reads, oldest first (the file's order).
pub(super) fn entries(log: &[u8], hash: gix_hash::Kind) -> Vec<Entry<'_>> {
    log.split_inclusive(|&b| b == b'\n').filter_map(|line| parse(line, hash)).collect()
}

/// git's `show_one_reflog_ent`: the entry `line` (with its newline) holds, or `None` where git skips it.
fn parse(line: &[u8], hash: gix_hash::Kind) -> Option<Entry<'_>> {
    if line.last() != Some(&b'\n') {
        return None;
    }
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let hex = hash.len_in_hex();
    let old = oid(line, 0, hex)?;
    let new = oid(line, hex + 1, hex)?;
    let p = 2 * hex + 2;
    if at(hex) != b' ' || at(p - 1) != b' ' {
        return None;
    }
    // `strchr(p, '>')`: the first `>` before any NUL.
    let rest = &line[p..];
    let rest = &rest[..memchr::memchr(0, rest).unwrap_or(rest.len())];
    let email_end = p + memchr::memchr(b'>', rest)?;
    if at(email_end + 1) != b' ' {
        return None;
    }
    let (timestamp, used) = strtoumax(&line[email_end + 2..], 10)?;
    let m = email_end + 2 + used;
    let digits = (2..6).all(|i| at(m + i).is_ascii_digit());
    if timestamp == 0 || at(m) != b' ' || !matches!(at(m + 1), b'+' | b'-') || !digits {
        return None;
    }
    let tz = strtol(&line[m + 1..]).map_or(0, |(tz, _)| tz as i32);
    let message = if at(m + 6) == b'\t' { &line[m + 7..] } else { &line[m + 6..] };
    Some(Entry { old, new, timestamp, tz, message })
}

/// git's `parse_oid_hex_algop`: exactly `hex` hex digits (either case) at `from`.
fn oid(line: &[u8], from: usize, hex: usize) -> Option<ObjectId> {
    let digits = line.get(from..from + hex)?;
    if !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    ObjectId::from_hex(&digits.to_ascii_lowercase()).ok()
}

/// git's `grab_nth_branch_switch` over HEAD's `entries`, newest first: what the `n`-th newest
/// `checkout: moving from <a> to <b>` moved from.
pub(super) fn nth_checkout_from<'a>(entries: &[Entry<'a>], n: usize) -> Option<&'a [u8]> {
    let moves = entries.iter().rev().filter_map(|entry| {
        let from = entry.message.strip_prefix(b"checkout: moving from ")?;
        // C's `strstr` stops at a NUL.
        let from_c = &from[..memchr::memchr(0, from).unwrap_or(from.len())];
        memchr::memmem::find(from_c, b" to ").map(|to| &from[..to])
    });
    moves.into_iter().nth(n.checked_sub(1)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "1111111111111111111111111111111111111111";
    const B: &str = "2222222222222222222222222222222222222222";

    fn one(line: &str) -> Option<(u64, i32, Vec<u8>)> {
        parse(line.as_bytes(), gix_hash::Kind::Sha1).map(|e| (e.timestamp, e.tz, e.message.to_vec()))
    }

    #[test]
    fn lines_are_read_and_skipped_as_git_reads_them() {
        assert_eq!(
            one(&format!("{A} {B} N <e> 1700000000 +0100\tmsg\n")),
            Some((1_700_000_000, 100, b"msg\n".to_vec()))
        );
        assert_eq!(
            one(&format!("{A} {B} N <e> 1700000000 -0130msg\n")),
            Some((1_700_000_000, -130, b"msg\n".to_vec()))
        );
        assert_eq!(one(&format!("{A} {B} N <e>  +5 +123456\n")), Some((5, 123_456, b"56\n".to_vec())));
        for skipped in [
            format!("{A} {B} N <e> 1700000000 +0100\tno newline"),
            format!("{A} {B} N <e> 0 +0100\tzero\n"),
            format!("{A} {B} N <e> x +0100\tno digits\n"),
            format!("{A} {B} N <e> 1700000000 0100\tno sign\n"),
            format!("{A} {B} N <e> 1700000000 +01\tshort offset\n"),
            format!("{A} {B} N e 1700000000 +0100\tno >\n"),
            format!("{A}  {B} N <e> 1700000000 +0100\ttwo spaces\n"),
            format!("{A} {} N <e> 1700000000 +0100\tshort id\n", &B[1..]),
        ] {
            assert_eq!(one(&skipped), None, "{skipped:?}");
        }
    }
}
