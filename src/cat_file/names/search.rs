//! Commit message searches: `:/<text>` (from every reference and HEAD) and `<rev>^{/<text>}` (from one commit),
//! as git's `get_oid_oneline` does them: commits are visited newest first by committer date (ties in the order
//! they were queued), parents queued once each, and the first whose message matches the regular expression
//! (`!-<text>`: does not match) is the answer. The message is everything after the header's blank line; like
//! POSIX `regexec` without `REG_NEWLINE`, `.` matches a newline and `^`/`$` only the ends.
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

use gix_hash::ObjectId;
use gix_object::{CommitRef, Kind};

use super::error::NameError;
use crate::store::{Resolver, Store};

/// The youngest commit reachable from `starts` whose message matches `pattern` (or, `negated`, does not).
/// `None` when there is none, or when the pattern does not compile (git's `regcomp` failing).
pub(crate) fn youngest_matching(
    store: &Store,
    resolver: &mut Resolver,
    starts: &[ObjectId],
    pattern: &[u8],
    negated: bool,
) -> Result<Option<ObjectId>, NameError> {
    let Some(regex) = compile(pattern) else { return Ok(None) };
    let mut queue = Queue::default();
    let mut seen: HashSet<ObjectId> = HashSet::new();
    for id in starts {
        seen.insert(*id);
        let Some(commit) = read_commit(store, resolver, id)? else { continue };
        queue.put(commit.date, *id);
    }
    while let Some(id) = queue.pop() {
        let Some(commit) = read_commit(store, resolver, &id)? else { continue };
        for parent in &commit.parents {
            if seen.insert(*parent)
                && let Some(parsed) = read_commit(store, resolver, parent)?
            {
                queue.put(parsed.date, *parent);
            }
        }
        let matches = commit.message.as_deref().is_some_and(|message| regex.is_match(message));
        if matches != negated {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// The references `:/<text>` starts from, in the order git queues them (`handle_one_ref` over every reference,
/// then HEAD, each prepended): HEAD first, then the references in reverse name order.
pub(crate) fn ref_names(refs: &crate::refs::Refs<'_>) -> Vec<Vec<u8>> {
    let mut names: Vec<Vec<u8>> = refs.all().into_iter().map(|reference| reference.name.as_bstr().to_vec()).collect();
    names.sort();
    names.push(b"HEAD".to_vec());
    names.reverse();
    names
}

/// The commits of `tips` (tags followed to what they tag); tips that lead to no commit are left out.
pub(crate) fn commits_of(
    store: &Store,
    resolver: &mut Resolver,
    tips: &[ObjectId],
) -> Result<Vec<ObjectId>, NameError> {
    let mut starts = Vec::new();
    for id in tips {
        let Ok(peeled) = super::walk::peel_tags(store, resolver, *id) else { continue };
        if super::walk::kind_of(store, &peeled)? == Some(Kind::Commit) {
            starts.push(peeled);
        }
    }
    Ok(starts)
}

/// git's `prio_queue` ordered by commit date: the newest first, and among equal dates the one queued first.
#[derive(Default)]
struct Queue {
    heap: BinaryHeap<(i64, Reverse<u64>, ObjectId)>,
    queued: u64,
}

impl Queue {
    fn put(&mut self, date: i64, id: ObjectId) {
        self.heap.push((date, Reverse(self.queued), id));
        self.queued += 1;
    }

    fn pop(&mut self) -> Option<ObjectId> {
        self.heap.pop().map(|(_, _, id)| id)
    }
}

/// What the search needs of a commit.
struct Commit {
    date: i64,
    parents: Vec<ObjectId>,
    /// After the first blank line (git's `strstr(buf, "\n\n")`); `None` without one.
    message: Option<Vec<u8>>,
}

fn read_commit(store: &Store, resolver: &mut Resolver, id: &ObjectId) -> Result<Option<Commit>, NameError> {
    let Some(object) = store.read(id, resolver)? else { return Ok(None) };
    if object.kind != Kind::Commit {
        return Ok(None);
    }
    let data: &[u8] = &object.data;
    let Ok(commit) = CommitRef::from_bytes(data, store.object_hash()) else { return Ok(None) };
    let date = commit.committer().ok().and_then(|c| c.time().ok()).map_or(0, |time| time.seconds);
    let parents = commit.parents().collect();
    // regexec reads a C string: up to the first NUL.
    let message = memchr::memmem::find(data, b"\n\n").map(|at| {
        let rest = &data[at + 2..];
        rest[..memchr::memchr(0, rest).unwrap_or(rest.len())].to_vec()
    });
    Ok(Some(Commit { date, parents, message }))
}

/// The pattern as a byte regex: bytes past ASCII are matched as bytes (git's C locale), not as UTF-8.
fn compile(pattern: &[u8]) -> Option<regex::bytes::Regex> {
    let mut text = String::with_capacity(pattern.len());
    for &byte in pattern {
        match byte {
            0..=0x7f => text.push(char::from(byte)),
            _ => text.push_str(&format!("\\x{byte:02x}")),
        }
    }
    regex::bytes::RegexBuilder::new(&text).unicode(false).dot_matches_new_line(true).build().ok()
}

#[cfg(test)]
mod tests {
    use super::compile;

    #[test]
    fn patterns_match_bytes_across_lines() {
        let regex = compile(b"^first.*body$").unwrap();
        assert!(regex.is_match(b"first line\n\nbody"));
        assert!(compile(b"caf\xc3\xa9").unwrap().is_match(b"un caf\xc3\xa9\n"));
        assert!(compile(b"(").is_none());
    }
}
