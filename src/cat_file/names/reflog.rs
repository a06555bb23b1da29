//! `<ref>@{<n>}` and `@{<n>}` (git's `get_oid_basic` with `repo_dwim_log` and `read_ref_at`): the value a
//! reference had `n` updates ago, read from its reflog (`logs/<ref>`, one `<old> <new> …` line per update,
//! newest last). `@{0}` is the reference's value even without a reflog (a bare repository keeps none), and a
//! reflog with too few entries is fatal with git's message.
use gix_hash::ObjectId;

use super::error::NameError;
use super::ref_rules;

/// A reference's reflog: its full name and what it names now.
pub(crate) struct Log {
    name: Vec<u8>,
    current: ObjectId,
}

/// git's `repo_dwim_log`: the first reference, by git's rules, that `name` names and that has a reflog (its
/// own, or that of the reference a symbolic one points at).
pub(crate) fn find(refs: &gix_ref::file::Store, name: &[u8]) -> Option<Log> {
    for full in ref_rules::expansions(name) {
        let Some((target, current)) = resolve(refs, &full) else { continue };
        for candidate in [&full, &target] {
            if exists(refs, candidate) {
                return Some(Log { name: candidate.clone(), current });
            }
        }
    }
    None
}

/// `@{<n>}` without a name: the branch HEAD points at (git's `repo_dwim_ref("HEAD")`), reflog or not.
pub(crate) fn of_head(refs: &gix_ref::file::Store) -> Option<Log> {
    let (name, current) = resolve(refs, b"HEAD")?;
    Some(Log { name, current })
}

/// The `(old, new)` ids of each entry of the reflog of `name`, newest first, read by gix-ref. Like git's
/// `for_each_reflog_ent`, a line that does not parse is skipped, and a log that cannot be opened or read has
/// no entries (git's `read_ref_at` then says the log is empty).
fn entries(refs: &gix_ref::file::Store, name: &[u8]) -> Vec<(ObjectId, ObjectId)> {
    let mut buf = Vec::new();
    let Some(full) = full_name(name) else { return Vec::new() };
    let Ok(Some(lines)) = refs.reflog_iter(full, &mut buf) else { return Vec::new() };
    let mut entries: Vec<(ObjectId, ObjectId)> =
        lines.filter_map(Result::ok).map(|line| (line.previous_oid(), line.new_oid())).collect();
    entries.reverse();
    entries
}

/// Does `name` have a reflog (a file; git's `files_reflog_exists`)?
fn exists(refs: &gix_ref::file::Store, name: &[u8]) -> bool {
    full_name(name).is_some_and(|full| refs.reflog_exists(full).unwrap_or(false))
}

fn full_name(name: &[u8]) -> Option<&gix_ref::FullNameRef> {
    <&gix_ref::FullNameRef>::try_from(gix_object::bstr::BStr::new(name)).ok()
}

/// The id `log` had `nth` updates ago. `shown` is the name git's messages use (the name as given, or the
/// branch's short name for `@{<n>}`).
pub(crate) fn nth(refs: &gix_ref::file::Store, log: &Log, nth: usize, shown: &[u8]) -> Result<ObjectId, NameError> {
    let entries = entries(refs, &log.name);
    let fatal = |message: String| NameError::Reflog(message);
    if entries.is_empty() {
        return match nth {
            // git's read_ref_at: no entries and `@{0}`: the reference's value.
            0 => Ok(log.current),
            _ => Err(fatal(format!("log for {} is empty", crate::fatal::Bytes(&log.name)))),
        };
    }
    match nth {
        0 => Ok(log.current),
        n if n < entries.len() => Ok(entries[n].1),
        // One past the oldest entry: the value before it (unless it was created there).
        n if n == entries.len() && !entries[n - 1].0.is_null() => Ok(entries[n - 1].0),
        _ => Err(fatal(format!("log for '{}' only has {} entries", crate::fatal::Bytes(shown), entries.len()))),
    }
}

/// A lookup by date in a reflog without entries: git's `read_ref_at` dies saying so. `None` when there are
/// entries (cat-blobd does not look them up by date).
pub(crate) fn by_date_if_empty(refs: &gix_ref::file::Store, log: &Log) -> Option<NameError> {
    let empty = entries(refs, &log.name).is_empty();
    empty.then(|| NameError::Reflog(format!("log for {} is empty", crate::fatal::Bytes(&log.name))))
}

/// `@{-<n>}` (git's `interpret_nth_prior_checkout`): the branch (or id) HEAD was on before the `n`-th newest
/// `checkout: moving from <a> to <b>` in HEAD's reflog.
pub(crate) fn nth_prior_checkout(refs: &gix_ref::file::Store, n: usize) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let lines = refs.reflog_iter(full_name(b"HEAD")?, &mut buf).ok()??;
    let moves: Vec<Vec<u8>> = lines
        .filter_map(Result::ok)
        .filter_map(|line| {
            let from = line.message.strip_prefix(b"checkout: moving from ")?;
            let to = memchr::memmem::find(from, b" to ")?;
            Some(from[..to].to_vec())
        })
        .collect();
    moves.into_iter().rev().nth(n.checked_sub(1)?)
}

/// The name of the log, as git's messages about `@{<n>}` give it: a branch by its short name, else `HEAD`.
pub(crate) fn short_name(log: &Log) -> Vec<u8> {
    log.name.strip_prefix(b"refs/heads/").map_or_else(|| b"HEAD".to_vec(), <[u8]>::to_vec)
}

/// The full name a reference resolves to (one symbolic level followed, as far as it leads) and its id.
fn resolve(refs: &gix_ref::file::Store, full: &[u8]) -> Option<(Vec<u8>, ObjectId)> {
    let full_bstr: &gix_object::bstr::BStr = full.into();
    let full_name = <&gix_ref::FullNameRef>::try_from(full_bstr).ok()?;
    let mut reference = refs.try_find(full_name.as_partial_name()).ok()??;
    if reference.name.as_bstr() != full {
        return None;
    }
    let mut name = full.to_vec();
    for _ in 0..5 {
        match reference.target {
            gix_ref::Target::Object(id) => return Some((name, id)),
            gix_ref::Target::Symbolic(target) => {
                name = target.as_bstr().to_vec();
                reference = refs.try_find(target.as_ref().as_partial_name()).ok()??;
            }
        }
    }
    None
}
