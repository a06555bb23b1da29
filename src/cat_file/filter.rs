//! `--filter=<spec>` (git 2.55): which objects a batch answers `<name> excluded` for, and leaves out of
//! `--batch-all-objects`. The spec is parsed as git's `list-objects-filter-options.c` parses it, so that every
//! spec git refuses is refused with git's message; of the filters it accepts, cat-file runs only `blob:none`,
//! `blob:limit=<n>` and `object:type=<type>`.
use gix_object::Kind;

use crate::fatal::Bytes;
use crate::git_compat::parse_ulong::git_parse_ulong;

/// A filter cat-file runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// `blob:none`: every blob.
    BlobNone,
    /// `blob:limit=<n>`: blobs of `n` bytes or more.
    BlobLimit(u64),
    /// `object:type=<type>`: every object of another type.
    ObjectType(Kind),
}

impl Filter {
    /// Does the filter leave out an object of this type and size?
    pub fn excludes(self, kind: Kind, size: u64) -> bool {
        match self {
            Filter::BlobNone => kind == Kind::Blob,
            Filter::BlobLimit(limit) => kind == Kind::Blob && size >= limit,
            Filter::ObjectType(wanted) => kind != wanted,
        }
    }

    /// Does it need the object's size (not only its type)?
    pub fn needs_size(self) -> bool {
        matches!(self, Filter::BlobLimit(_))
    }
}

/// What the `--filter` and `--no-filter` options given so far add up to (git's `objects_filter.choice`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FilterSpec {
    #[default]
    None,
    Run(Filter),
    /// A filter git parses but cat-file refuses, by git's name for it (`tree`, `sparse:oid`, `combine`).
    Refused(&'static str),
}

/// A spec git dies on while parsing the options: the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub String);

impl FilterSpec {
    /// One more `--filter=<spec>`: a second filter makes a `combine:` one (git's `parse_list_objects_filter`).
    pub fn with(self, spec: &[u8]) -> Result<FilterSpec, SpecError> {
        let parsed = parse(c_str(spec))?;
        Ok(match self {
            FilterSpec::None => parsed,
            _ => FilterSpec::Refused("combine"),
        })
    }
}

/// An argument as the C string git sees.
fn c_str(bytes: &[u8]) -> &[u8] {
    memchr::memchr(0, bytes).map_or(bytes, |nul| &bytes[..nul])
}

/// git's `gently_parse_list_objects_filter`, for a command that allows no `auto` filter.
fn parse(spec: &[u8]) -> Result<FilterSpec, SpecError> {
    let error = |message: String| Err(SpecError(message));
    if spec == b"auto" {
        return error("'auto' filter not supported by this command".into());
    }
    if spec == b"blob:none" {
        return Ok(FilterSpec::Run(Filter::BlobNone));
    }
    if let Some(limit) = spec.strip_prefix(b"blob:limit=").and_then(git_parse_ulong) {
        return Ok(FilterSpec::Run(Filter::BlobLimit(limit)));
    }
    if let Some(depth) = spec.strip_prefix(b"tree:") {
        return match git_parse_ulong(depth) {
            Some(_) => Ok(FilterSpec::Refused("tree")),
            None => error("expected 'tree:<depth>'".into()),
        };
    }
    if spec.starts_with(b"sparse:oid=") {
        return Ok(FilterSpec::Refused("sparse:oid"));
    }
    if spec.starts_with(b"sparse:path=") {
        return error("sparse:path filters support has been dropped".into());
    }
    if let Some(name) = spec.strip_prefix(b"object:type=") {
        return match Kind::from_bytes(name) {
            Ok(kind) => Ok(FilterSpec::Run(Filter::ObjectType(kind))),
            Err(_) => error(format!("'{}' for 'object:type=<type>' is not a valid object type", Bytes(name))),
        };
    }
    if let Some(subs) = spec.strip_prefix(b"combine:") {
        return parse_combine(subs);
    }
    error(format!("invalid filter-spec '{}'", Bytes(spec)))
}

/// git's `parse_combine_filter`: `+`-separated sub-specs, each URL-encoded, each checked as a spec of its own.
fn parse_combine(subs: &[u8]) -> Result<FilterSpec, SpecError> {
    if subs.is_empty() {
        return Err(SpecError("expected something after combine:".into()));
    }
    for sub in subs.split(|&b| b == b'+').filter(|sub| !sub.is_empty()) {
        // git's `char` is signed: every byte from 0x80 up counts as `<= ' '`.
        const RESERVED: &[u8] = b"~`!@#$^&*()[]{}\\;'\",<>?";
        if let Some(&reserved) = sub.iter().find(|&&b| b <= b' ' || b >= 0x80 || RESERVED.contains(&b)) {
            return Err(SpecError(format!("must escape char in sub-filter-spec: '{}'", Bytes(&[reserved]))));
        }
        parse(c_str(&percent_decode(sub)))?;
    }
    Ok(FilterSpec::Refused("combine"))
}

/// git's `url_percent_decode`: `%XX` is the byte; any other `%` stays.
fn percent_decode(text: &[u8]) -> Vec<u8> {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        let decoded = match text[at..] {
            [b'%', high, low, ..] => hex(high).zip(hex(low)).map(|(h, l)| h << 4 | l),
            _ => None,
        };
        match decoded {
            Some(byte) => {
                out.push(byte);
                at += 3;
            }
            None => {
                out.push(text[at]);
                at += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> Result<FilterSpec, String> {
        FilterSpec::None.with(text.as_bytes()).map_err(|err| err.0)
    }

    #[test]
    fn specs_parse_as_in_git() {
        assert_eq!(spec("blob:none"), Ok(FilterSpec::Run(Filter::BlobNone)));
        assert_eq!(spec("blob:limit=1k"), Ok(FilterSpec::Run(Filter::BlobLimit(1024))));
        assert_eq!(spec("object:type=tag"), Ok(FilterSpec::Run(Filter::ObjectType(Kind::Tag))));
        assert_eq!(spec("tree:0"), Ok(FilterSpec::Refused("tree")));
        assert_eq!(spec("combine:blob%3Anone+tree:1"), Ok(FilterSpec::Refused("combine")));
        assert_eq!(spec("blob:limit=x"), Err("invalid filter-spec 'blob:limit=x'".into()));
        assert_eq!(spec("object:type=Blob"), Err("'Blob' for 'object:type=<type>' is not a valid object type".into()));
        assert_eq!(spec("combine:a~b"), Err("must escape char in sub-filter-spec: '~'".into()));
        assert_eq!(spec("combine:blob%3Axyz"), Err("invalid filter-spec 'blob:xyz'".into()));
        let twice = FilterSpec::None.with(b"blob:none").and_then(|spec| spec.with(b"blob:none"));
        assert_eq!(twice, Ok(FilterSpec::Refused("combine")));
    }

    #[test]
    fn blob_limit_excludes_from_the_limit_up() {
        assert!(!Filter::BlobLimit(5).excludes(Kind::Blob, 4));
        assert!(Filter::BlobLimit(5).excludes(Kind::Blob, 5));
        assert!(!Filter::BlobLimit(0).excludes(Kind::Tree, 9));
    }
}
