//! Object names and marks as git fast-import parses them: full hex ids of either hash, and `:<n>` marks with
//! C's `strtoumax` rules.
use std::collections::HashMap;

use gix_hash::ObjectId;

use crate::git_compat::strtoumax::strtoumax;

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
pub(crate) fn parse_oid_hex(input: &[u8], repo_hash: gix_hash::Kind) -> Option<(ObjectId, &[u8])> {
    let matched = hex_kind(input)?;
    if matched != repo_hash {
        return None;
    }
    let (hex, rest) = input.split_at(matched.len_in_hex());
    Some((decode_hex(hex), rest))
}

/// The longest hash whose full length of hex digits starts `input` (SHA-256 before SHA-1), counting the
/// digits once: every `ls` and `cat-blob` line starts with one (small-A, 10,000 `ls`: 974 instructions per id
/// through two checks and `ObjectId::from_hex`, about 400 now).
fn hex_kind(input: &[u8]) -> Option<gix_hash::Kind> {
    let sha256 = gix_hash::Kind::Sha256.len_in_hex();
    let digits = input.iter().take(sha256).take_while(|byte| byte.is_ascii_hexdigit()).count();
    [gix_hash::Kind::Sha256, gix_hash::Kind::Sha1].into_iter().find(|kind| digits >= kind.len_in_hex())
}

/// The id `hex` spells: hex digits that [`hex_kind`] counted, as many as a hash has.
fn decode_hex(hex: &[u8]) -> ObjectId {
    let value = |digit: u8| match digit {
        b'0'..=b'9' => digit - b'0',
        _ => (digit | 0x20) - b'a' + 10,
    };
    let mut bytes = [0u8; 32];
    for (byte, pair) in bytes.iter_mut().zip(hex.chunks_exact(2)) {
        *byte = (value(pair[0]) << 4) | value(pair[1]);
    }
    ObjectId::from_bytes_or_panic(&bytes[..hex.len() / 2])
}

/// git's `parse_mapped_oid_hex`: like [`parse_oid_hex`], but an id listed in the submodule rewrite map
/// (`rewrite-submodules-from/to`) is translated, and may then be of the other hash.
pub(crate) fn parse_mapped_oid_hex<'a>(
    input: &'a [u8],
    repo_hash: gix_hash::Kind,
    rewrites: &HashMap<ObjectId, ObjectId>,
) -> Option<(ObjectId, &'a [u8])> {
    if rewrites.is_empty() {
        return parse_oid_hex(input, repo_hash);
    }
    let kind = hex_kind(input)?;
    let (hex, rest) = input.split_at(kind.len_in_hex());
    let oid = decode_hex(hex);
    match rewrites.get(&oid) {
        Some(mapped) => Some((*mapped, rest)),
        None if kind == repo_hash => Some((oid, rest)),
        None => None,
    }
}

/// git's `parse_mark_ref`: `input` starts with `:`; returns the mark and what follows its digits, or `None`
/// when no digits follow (`No value after ':' in mark`).
pub(crate) fn parse_mark_ref(input: &[u8]) -> Option<(u64, &[u8])> {
    let after_colon = input.strip_prefix(b":")?;
    let (mark, consumed) = strtoumax(after_colon, 10)?;
    Some((mark, &after_colon[consumed..]))
}

/// A `mark :<n>` line as git's `parse_mark` reads it: the number as `strtoumax` reads it, with no checks (no
/// digits is mark 0, which defines no mark); `None` if the line is not a `mark :` line.
pub(crate) fn parse_mark_line(line: &[u8]) -> Option<u64> {
    let number = line.strip_prefix(b"mark :")?;
    Some(strtoumax(number, 10).map_or(0, |(mark, _)| mark))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA1: gix_hash::Kind = gix_hash::Kind::Sha1;
    const SHA256: gix_hash::Kind = gix_hash::Kind::Sha256;

    #[test]
    fn ids_are_the_longest_hash_of_hex_digits_in_either_case() {
        let lower = "0123456789abcdef0123456789abcdef01234567";
        let id = ObjectId::from_hex(lower.as_bytes()).expect("hex");
        let upper = lower.to_ascii_uppercase();
        assert_eq!(parse_oid_hex(format!("{lower} x").as_bytes(), SHA1), Some((id, &b" x"[..])));
        assert_eq!(parse_oid_hex(upper.as_bytes(), SHA1), Some((id, &b""[..])));
        // 63 digits are a SHA-1 id and 23 more; 64 are a SHA-256 id, of the wrong hash here.
        let more = format!("{lower}{}", &"f".repeat(23));
        assert_eq!(parse_oid_hex(more.as_bytes(), SHA1), Some((id, &more.as_bytes()[40..])));
        let sha256 = format!("{lower}{}", &"F".repeat(24));
        assert_eq!(parse_oid_hex(sha256.as_bytes(), SHA1), None);
        let long = ObjectId::from_hex(sha256.as_bytes()).expect("hex");
        assert_eq!(parse_oid_hex(sha256.as_bytes(), SHA256), Some((long, &b""[..])));
        assert_eq!(parse_oid_hex(&lower.as_bytes()[..39], SHA1), None);
        assert_eq!(parse_oid_hex(format!("{}g", &lower[..39]).as_bytes(), SHA1), None);
    }
}
