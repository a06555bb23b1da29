//! `<ref>@{<n>}` and `@{<n>}` (git's `get_oid_basic` with `repo_dwim_log` and `read_ref_at`): the value a
//! reference had `n` updates ago, read from its reflog (`logs/<ref>`, one `<old> <new> …` line per update,
//! newest last). `@{0}` is the reference's value even without a reflog (a bare repository keeps none), and a
//! reflog with too few entries is fatal with git's message.
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use gix_hash::ObjectId;

use super::error::NameError;

/// git's `ref_rev_parse_rules`, the order in which a short name is tried as a reference.
const RULES: [(&str, &str); 6] = [
    ("", ""),
    ("refs/", ""),
    ("refs/tags/", ""),
    ("refs/heads/", ""),
    ("refs/remotes/", ""),
    ("refs/remotes/", "/HEAD"),
];

/// A reference's reflog: its full name and what it names now.
pub(crate) struct Log {
    name: Vec<u8>,
    current: ObjectId,
}

/// git's `repo_dwim_log`: the first reference, by git's rules, that `name` names and that has a reflog (its
/// own, or that of the reference a symbolic one points at).
pub(crate) fn find(refs: &gix_ref::file::Store, name: &[u8]) -> Option<Log> {
    for (prefix, suffix) in RULES {
        let full = [prefix.as_bytes(), name, suffix.as_bytes()].concat();
        let Some((target, current)) = resolve(refs, &full) else { continue };
        for candidate in [&full, &target] {
            if log_path(refs, candidate).is_file() {
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

/// The id `log` had `nth` updates ago. `shown` is the name git's messages use (the name as given, or the
/// branch's short name for `@{<n>}`).
pub(crate) fn nth(refs: &gix_ref::file::Store, log: &Log, nth: usize, shown: &[u8]) -> Result<ObjectId, NameError> {
    let text = std::fs::read(log_path(refs, &log.name)).unwrap_or_default();
    // (old, new) per entry, newest first.
    let entries: Vec<(ObjectId, ObjectId)> = text
        .split(|&b| b == b'\n')
        .rev()
        .filter_map(|line| {
            let mut fields = line.splitn(3, |&b| b == b' ');
            let old = ObjectId::from_hex(fields.next()?).ok()?;
            let new = ObjectId::from_hex(fields.next()?).ok()?;
            Some((old, new))
        })
        .collect();
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
    let text = std::fs::read(log_path(refs, &log.name)).unwrap_or_default();
    let empty = !text.split(|&b| b == b'\n').any(|line| !line.is_empty());
    empty.then(|| NameError::Reflog(format!("log for {} is empty", crate::fatal::Bytes(&log.name))))
}

/// `@{-<n>}` (git's `interpret_nth_prior_checkout`): the branch (or id) HEAD was on before the `n`-th newest
/// `checkout: moving from <a> to <b>` in HEAD's reflog.
pub(crate) fn nth_prior_checkout(refs: &gix_ref::file::Store, n: usize) -> Option<Vec<u8>> {
    let text = std::fs::read(log_path(refs, b"HEAD")).ok()?;
    let mut moves = text.split(|&b| b == b'\n').rev().filter_map(|line| {
        let message = &line[memchr::memchr(b'\t', line)? + 1..];
        let from = message.strip_prefix(b"checkout: moving from ")?;
        let to = memchr::memmem::find(from, b" to ")?;
        Some(from[..to].to_vec())
    });
    moves.nth(n.checked_sub(1)?)
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

/// Where the reflog of `name` is: HEAD's with the repository (a worktree's own), the others with the refs.
fn log_path(refs: &gix_ref::file::Store, name: &[u8]) -> PathBuf {
    let base: &Path = match name {
        b"HEAD" => refs.git_dir(),
        _ => refs.common_dir().unwrap_or(refs.git_dir()),
    };
    let mut path = base.join("logs");
    for component in name.split(|&b| b == b'/') {
        path.push(std::ffi::OsStr::from_bytes(component));
    }
    path
}
