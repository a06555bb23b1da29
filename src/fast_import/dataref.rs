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
pub(crate) fn parse_mapped_oid_hex<'a>(
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
