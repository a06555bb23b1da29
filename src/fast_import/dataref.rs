//! Object names and marks as git fast-import parses them: full hex ids of either hash, and `:<n>` marks with
//! C's `strtoumax` rules.
use std::collections::HashMap;

use gix_hash::ObjectId;

/// What a read command refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dataref {
    /// `:<n>`, a mark defined earlier in the stream or imported.
    Mark(u64),
    /// A full object id.
    Oid(ObjectId),
}

/// git's `parse_oid_hex_any` followed by the algorithm check of `parse_mapped_oid_hex`: the longest hash
/// whose full length of hex digits starts `input` wins (SHA-256 before SHA-1), and it must be the
/// repository's hash. Upper- and lower-case digits are accepted. Returns the id and what follows it.
pub fn parse_oid_hex(input: &[u8], repo_hash: gix_hash::Kind) -> Option<(ObjectId, &[u8])> {
    let matched = [gix_hash::Kind::Sha256, gix_hash::Kind::Sha1]
        .into_iter()
        .find(|kind| input.get(..kind.len_in_hex()).is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit)))?;
    if matched != repo_hash {
        return None;
    }
    let (hex, rest) = input.split_at(matched.len_in_hex());
    let oid = ObjectId::from_hex(hex).ok()?;
    Some((oid, rest))
}

/// git's `parse_mapped_oid_hex`: like [`parse_oid_hex`], but an id listed in the submodule rewrite map
/// (`rewrite-submodules-from/to`) is translated, and may then be of the other hash.
pub fn parse_mapped_oid_hex<'a>(
    input: &'a [u8],
    repo_hash: gix_hash::Kind,
    rewrites: &HashMap<ObjectId, ObjectId>,
) -> Option<(ObjectId, &'a [u8])> {
    if rewrites.is_empty() {
        return parse_oid_hex(input, repo_hash);
    }
    let kind = [gix_hash::Kind::Sha256, gix_hash::Kind::Sha1]
        .into_iter()
        .find(|kind| input.get(..kind.len_in_hex()).is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit)))?;
    let (hex, rest) = input.split_at(kind.len_in_hex());
    let oid = ObjectId::from_hex(hex).ok()?;
    match rewrites.get(&oid) {
        Some(mapped) => Some((*mapped, rest)),
        None if kind == repo_hash => Some((oid, rest)),
        None => None,
    }
}

/// git's `parse_mark_ref`: `input` starts with `:`; returns the mark and what follows its digits, or `None`
/// when no digits follow (`No value after ':' in mark`).
pub fn parse_mark_ref(input: &[u8]) -> Option<(u64, &[u8])> {
    let after_colon = input.strip_prefix(b":")?;
    let (mark, consumed) = strtoumax(after_colon)?;
    Some((mark, &after_colon[consumed..]))
}

/// C's `strtoumax(s, &end, 10)`: optional leading white space, an optional sign, then decimal digits.
/// Overflow saturates at `u64::MAX`; a minus sign negates modulo 2^64. Returns the value and the number of
/// bytes consumed, or `None` when there are no digits (then C sets `end` back to `s`).
pub fn strtoumax(s: &[u8]) -> Option<(u64, usize)> {
    let mut i = s.iter().take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')).count();
    let negative = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let digits = s[i..].iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let value = s[i..i + digits].iter().try_fold(0u64, |acc, d| acc.checked_mul(10)?.checked_add(u64::from(d - b'0')));
    let value = match value {
        None => u64::MAX,
        Some(v) if negative => v.wrapping_neg(),
        Some(v) => v,
    };
    Some((value, i + digits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtoumax_matches_c() {
        assert_eq!(strtoumax(b"7x"), Some((7, 1)));
        assert_eq!(strtoumax(b" \t+01"), Some((1, 5)));
        assert_eq!(strtoumax(b"-1"), Some((u64::MAX, 2)));
        assert_eq!(strtoumax(b"-5"), Some((u64::MAX - 4, 2)));
        assert_eq!(strtoumax(b"99999999999999999999999"), Some((u64::MAX, 23)));
        assert_eq!(strtoumax(b"-99999999999999999999999"), Some((u64::MAX, 24)));
        assert_eq!(strtoumax(b"abc"), None);
        assert_eq!(strtoumax(b" "), None);
        assert_eq!(strtoumax(b"-"), None);
    }
}
