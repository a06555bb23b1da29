//! git's report of an ambiguous abbreviation (`get_short_oid` without `GET_OID_QUIETLY`, and its
//! `show_ambiguous_object`): `error: short object ID <prefix> is ambiguous`, then one hint per candidate — tags,
//! then commits, trees and blobs, each by id — with its shortest unique abbreviation, its type, and for commits
//! the author date and subject, for tags the tag date and name. gix-object parses the objects; git's layout of
//! the lines is written here.
//!
//! Also how git picks one candidate by what follows the abbreviation (`get_short_oid`'s disambiguators): the
//! `^{commit}`, `~<n>` or `:<path>` after it needs a commit-ish or a tree-ish, and when exactly one candidate is
//! one, that is the object.
use gix_hash::{ObjectId, Prefix};
use gix_object::Kind;

use crate::cat_file::output::Messages;
use crate::fatal::Bytes;
use crate::store::{PrefixMatch, Resolver, Store};

/// git's `FALLBACK_DEFAULT_ABBREV`.
const MIN_ABBREV: usize = 7;

/// What the rest of a name needs of the abbreviated id it starts with (git's `GET_OID_*` disambiguators).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Needs {
    Anything,
    /// A describe name (`<tag>-g<abbrev>`): a commit, not a tag of one.
    Commit,
    /// A commit, or a tag leading to one: `~<n>`, `^<n>`, `^{commit}`, `^{/<text>}`.
    Committish,
    /// A tree, a commit, or a tag leading to either: `^{tree}`, `:<path>`.
    Treeish,
}

impl Needs {
    /// What `suffix`, the text right after an abbreviated id, needs of it. Only the first operator counts: git
    /// resolves `<abbrev>` with the flags of the one applied to it directly (`peel_onion`, `get_parent`,
    /// `get_nth_ancestor`, and the tree-ish before a `:`).
    pub(crate) fn after(suffix: &[u8]) -> Needs {
        match suffix {
            [b'^', b'{', rest @ ..] if rest.starts_with(b"commit}") || rest.starts_with(b"/") => Needs::Committish,
            [b'^', b'{', rest @ ..] if rest.starts_with(b"tree}") => Needs::Treeish,
            [b'^', b'{', ..] => Needs::Anything,
            [b'^' | b'~', ..] => Needs::Committish,
            [b':', ..] => Needs::Treeish,
            _ => Needs::Anything,
        }
    }

    /// Does `id` satisfy this need? (git's `disambiguate_*_only`; tags are followed to what they tag.)
    pub(crate) fn met_by(self, store: &Store, resolver: &mut Resolver, id: &ObjectId) -> bool {
        let kind = |id: &ObjectId| store.info(id, false).ok().flatten().map(|info| info.kind);
        let tagged = |resolver: &mut Resolver| {
            super::walk::peel_tags(store, resolver, *id).ok().and_then(|target| kind(&target))
        };
        match (self, kind(id)) {
            (Needs::Anything, _) => true,
            (Needs::Commit, found) => found == Some(Kind::Commit),
            (Needs::Committish, Some(Kind::Commit)) | (Needs::Treeish, Some(Kind::Commit | Kind::Tree)) => true,
            (Needs::Committish, Some(Kind::Tag)) => tagged(resolver) == Some(Kind::Commit),
            (Needs::Treeish, Some(Kind::Tag)) => matches!(tagged(resolver), Some(Kind::Commit | Kind::Tree)),
            _ => false,
        }
    }
}

/// Does git look the abbreviation before `suffix` up at all? Only when `get_oid_1` can take the rest apart:
/// `^{…}`, `^<n>` and `~<n>`, then perhaps `:<path>`. Before anything else (`^!`, `@{0}`, `..<rev>`) git
/// takes the whole name for a reference, finds none, and never lists the candidates.
pub(crate) fn looked_up(mut suffix: &[u8]) -> bool {
    loop {
        suffix = match suffix {
            [] | [b':', ..] => return true,
            [b'^', b'{', rest @ ..] => match memchr::memchr(b'}', rest) {
                Some(close) => &rest[close + 1..],
                None => return false,
            },
            [b'^' | b'~', rest @ ..] => &rest[rest.iter().take_while(|b| b.is_ascii_digit()).count()..],
            _ => return false,
        };
    }
}

/// Does git answer `ambiguous` (rather than `missing`) when the abbreviation before `suffix` is ambiguous? Only
/// `~<n>` and `^<n>` pass git's `SHORT_NAME_AMBIGUOUS` up; `^{…}` and `:<path>` turn it into a plain failure.
pub(crate) fn stays_ambiguous(mut suffix: &[u8]) -> bool {
    while let [b'^' | b'~', rest @ ..] = suffix {
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if suffix[0] == b'^' && rest.first() == Some(&b'{') {
            return false;
        }
        suffix = &rest[digits..];
    }
    suffix.is_empty()
}

/// Prints git's message for `prefix` and its `candidates` on stderr.
pub(crate) fn report(
    store: &Store,
    resolver: &mut Resolver,
    messages: Messages<'_>,
    prefix: &[u8],
    candidates: &[ObjectId],
) {
    let mut described: Vec<(u8, ObjectId, String)> = candidates
        .iter()
        .map(|id| {
            let object = store.read(id, resolver).ok().flatten();
            let kind = object.as_ref().map(|object| object.kind);
            // git sorts tags first, then commits, trees and blobs (its type numbers modulo 4).
            let order = match kind {
                Some(Kind::Tag) => 0,
                Some(Kind::Commit) => 1,
                Some(Kind::Tree) => 2,
                _ => 3,
            };
            let abbrev = unique_abbrev(store, id);
            let line = match object {
                None => format!("{abbrev} [bad object]"),
                Some(object) => describe(store, &abbrev, object.kind, &object.data),
            };
            (order, *id, line)
        })
        .collect();
    described.sort();
    let mut message = format!("error: short object ID {} is ambiguous\nhint: The candidates are:\n", Bytes(prefix));
    for (_, _, line) in described {
        message.push_str(&format!("hint:   {line}\n"));
    }
    messages.write(message.as_bytes());
}

fn describe(store: &Store, abbrev: &str, kind: Kind, data: &[u8]) -> String {
    let hash = store.object_hash();
    match kind {
        Kind::Commit => {
            let Ok(commit) = gix_object::CommitRef::from_bytes(data, hash) else {
                return format!("{abbrev} commit  - ");
            };
            // `%ad` with `--date=short`: the author's date in the author's zone.
            let date = commit
                .author()
                .ok()
                .and_then(|a| a.time().ok())
                .and_then(|t| t.format(gix_date::time::format::SHORT).ok());
            format!("{abbrev} commit {} - {}", date.unwrap_or_default(), Bytes(&subject(commit.message)))
        }
        Kind::Tag => match gix_object::TagRef::from_bytes(data, hash) {
            Ok(tag) => {
                // `show_date(tag->date, 0, DATE_SHORT)`: the tagger's time shown in UTC.
                let seconds = tag.tagger().ok().flatten().and_then(|t| t.time().ok()).map_or(0, |t| t.seconds);
                let date = gix_date::Time::new(seconds, 0).format(gix_date::time::format::SHORT).unwrap_or_default();
                format!("{abbrev} tag {date} - {}", Bytes(tag.name))
            }
            Err(_) => format!("{abbrev} [bad tag, could not parse it]"),
        },
        Kind::Tree => format!("{abbrev} tree"),
        Kind::Blob => format!("{abbrev} blob"),
    }
}

/// `%s`: the first paragraph of the message, its lines joined by spaces (git's `format_subject`).
fn subject(message: &[u8]) -> Vec<u8> {
    let mut lines = message.split(|&b| b == b'\n').skip_while(|line| line.trim_ascii().is_empty());
    let mut out = Vec::new();
    for line in lines.by_ref() {
        if line.trim_ascii().is_empty() {
            break;
        }
        if !out.is_empty() {
            out.push(b' ');
        }
        out.extend_from_slice(line.trim_ascii_end());
    }
    out
}

/// The shortest abbreviation of `id` that no other object shares, at least git's default length for a
/// repository of this size (`repo_find_unique_abbrev` with `DEFAULT_ABBREV`).
fn unique_abbrev(store: &Store, id: &ObjectId) -> String {
    let hex = id.to_hex().to_string();
    // git's estimate: 2^bits objects collide at about 2^(bits/2), at 4 bits per hex digit.
    let bits = (usize::BITS - store.packed_object_count().leading_zeros()) as usize;
    let mut len = bits.div_ceil(2).max(MIN_ABBREV);
    while len < hex.len() {
        match Prefix::new(id, len).map(|prefix| store.find_prefix(&prefix)) {
            Ok(PrefixMatch::Ambiguous(_)) => len += 1,
            _ => break,
        }
    }
    hex[..len.min(hex.len())].to_owned()
}

#[cfg(test)]
mod tests {
    use super::subject;

    #[test]
    fn the_subject_is_the_first_paragraph_on_one_line() {
        assert_eq!(subject(b"\nfirst line  \nsecond\n\nbody\n"), b"first line second");
        assert_eq!(subject(b"only"), b"only");
    }
}
