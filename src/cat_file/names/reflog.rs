//! `<ref>@{<n>}`, `<ref>@{<date>}`, `@{…}` and `@{-<n>}`: git 2.55's reflog half of `get_oid_basic`
//! (object-name.c), its `read_ref_at` (refs.c, with the callbacks `read_ref_at_ent` and
//! `read_ref_at_ent_oldest`), `repo_dwim_log` and `interpret_nth_prior_checkout`. The entries are read as git
//! reads them (`reflog_entries`); the warnings git prints on the way are handed back to the caller to print.
use gix_hash::ObjectId;

use super::error::ReflogError;
use super::reflog_entries::{self, Entry};
use crate::git_compat::date::{approxidate_careful, show_rfc2822};
use crate::refs::Refs;
use crate::refs::rules as ref_rules;

/// A reference's reflog: its full name and what it names now.
pub(crate) struct Log {
    name: Vec<u8>,
    current: ObjectId,
}

/// git's `repo_dwim_log`: the first reference, by git's rules, that `name` names and that has a reflog (its
/// own, or that of the reference a symbolic one points at), and how many of the rules found one.
pub(crate) fn find(refs: &Refs<'_>, name: &[u8]) -> Option<(Log, usize)> {
    let mut found = None;
    let mut count = 0;
    for full in ref_rules::expansions(name) {
        let Some((target, current)) = resolve(refs, &full) else { continue };
        let Some(log) = [&full, &target].into_iter().find(|candidate| refs.reflog_exists(candidate)) else { continue };
        count += 1;
        found.get_or_insert(Log { name: log.clone(), current });
    }
    found.map(|log| (log, count))
}

/// `@{…}` without a name: the branch HEAD points at (git's `repo_dwim_ref("HEAD")`), reflog or not.
pub(crate) fn of_head(refs: &Refs<'_>) -> Option<Log> {
    let (name, current) = resolve(refs, b"HEAD")?;
    Some(Log { name, current })
}

/// What `@{<text>}` asks for: git reads digits as a count (from 100000000 on, as seconds since 1970), and
/// anything else as a date, by approxidate.
pub(crate) struct Query {
    at_time: u64,
    nth: i32,
}

/// git's reading of the text between the braces; `None` where approxidate finds no date in it (git's
/// `get_oid_basic` returns -1: the name names nothing).
pub(crate) fn query(text: &[u8]) -> Option<Query> {
    let mut nth = 0i32;
    for &ch in text {
        if nth < 0 {
            break;
        }
        // git's `int` arithmetic, which wraps on the machines it runs on.
        nth = if ch.is_ascii_digit() { nth.wrapping_mul(10).wrapping_add(i32::from(ch - b'0')) } else { -1 };
    }
    if nth >= 100_000_000 {
        return Some(Query { at_time: nth as u64, nth: -1 });
    }
    if nth >= 0 {
        return Some(Query { at_time: 0, nth });
    }
    let (at_time, errors) = approxidate_careful(text);
    (!errors).then_some(Query { at_time, nth })
}

/// The rest of git's `get_oid_basic` for a reflog: the id `query` names in `log`. `shown` is the name git's
/// messages use (as given, or the branch's short name for `@{…}`). Warnings go to `warnings`.
pub(crate) fn lookup(
    refs: &Refs<'_>,
    hash: gix_hash::Kind,
    log: &Log,
    query: &Query,
    shown: &[u8],
    warnings: &mut Vec<u8>,
) -> Result<ObjectId, ReflogError> {
    let bytes = reflog_entries::read(refs, &log.name)?.unwrap_or_default();
    let entries = reflog_entries::entries(&bytes, hash);
    let found = read_ref_at(&entries, &log.name, query, log.current, warnings)?;
    let Some(cutoff) = found.past_oldest else { return Ok(found.id) };
    if query.at_time != 0 {
        let date = show_rfc2822(cutoff.time, cutoff.tz)?;
        warnings.extend_from_slice(
            &[b"warning: log for '", shown, b"' only goes back to ", date.as_bytes(), b"\n"].concat(),
        );
        Ok(found.id)
    } else if query.nth == cutoff.count && !found.id.is_null() {
        // Asked for the n-th entry of n: the value before the oldest.
        Ok(found.id)
    } else {
        Err(ReflogError::TooFew { shown: shown.to_vec(), count: cutoff.count })
    }
}

/// git's `read_ref_at` cutoff: the oldest entry's time and offset, and how many entries there were.
struct Cutoff {
    time: u64,
    tz: i32,
    count: i32,
}

/// What `read_ref_at` found: the id, and `past_oldest` where it ran past the oldest entry (git returns 1).
struct Found {
    id: ObjectId,
    past_oldest: Option<Cutoff>,
}

/// git's `read_ref_at`: newest first, the first entry at or before `at_time`, or the `nth` (counted from 0);
/// failing that, the oldest entry's old value (its new one for a date, when it created the reference).
/// Warns as git does where the log has a gap or does not end on the reference's value.
fn read_ref_at(
    entries: &[Entry<'_>],
    refname: &[u8],
    query: &Query,
    current: ObjectId,
    warnings: &mut Vec<u8>,
) -> Result<Found, ReflogError> {
    let null = ObjectId::null(current.kind());
    let (mut cnt, mut previous_old, mut count) = (query.nth, null, 0i32);
    for entry in entries.iter().rev() {
        if entry.timestamp <= query.at_time || cnt == 0 {
            let date = || show_rfc2822(entry.timestamp, entry.tz);
            let mut id = current;
            if !previous_old.is_null() {
                id = entry.new;
                if previous_old != entry.new {
                    warn(warnings, b"has gap after", refname, &date()?);
                }
            } else if entry.timestamp == query.at_time {
                id = entry.new;
            } else if entry.new != current {
                warn(warnings, b"unexpectedly ended on", refname, &date()?);
            }
            return Ok(Found { id, past_oldest: None });
        }
        count += 1;
        previous_old = entry.old;
        if cnt > 0 {
            cnt -= 1;
        }
    }
    let Some(oldest) = entries.first() else {
        if query.nth == 0 {
            // `@{0}` of an empty log: the reference's value, as the caller prepared it.
            return Ok(Found { id: current, past_oldest: Some(Cutoff { time: 0, tz: 0, count: 0 }) });
        }
        return Err(ReflogError::Empty(refname.to_vec()));
    };
    let id = if query.at_time != 0 && oldest.old.is_null() { oldest.new } else { oldest.old };
    Ok(Found { id, past_oldest: Some(Cutoff { time: oldest.timestamp, tz: oldest.tz, count }) })
}

/// `warning: log for ref <refname> <what> <date>`.
fn warn(warnings: &mut Vec<u8>, what: &[u8], refname: &[u8], date: &str) {
    warnings.extend_from_slice(&[b"warning: log for ref ", refname, b" ", what, b" ", date.as_bytes(), b"\n"].concat());
}

/// `@{-<n>}` (git's `interpret_nth_prior_checkout`): the branch (or id) HEAD was on before the `n`-th newest
/// `checkout: moving from <a> to <b>` in HEAD's reflog.
pub(crate) fn nth_prior_checkout(
    refs: &Refs<'_>,
    hash: gix_hash::Kind,
    n: usize,
) -> Result<Option<Vec<u8>>, ReflogError> {
    let Some(bytes) = reflog_entries::read(refs, b"HEAD")? else { return Ok(None) };
    let entries = reflog_entries::entries(&bytes, hash);
    Ok(reflog_entries::nth_checkout_from(&entries, n).map(<[u8]>::to_vec))
}

/// The name of the log, as git's messages about `@{…}` give it: a branch by its short name, else `HEAD`.
pub(crate) fn short_name(log: &Log) -> Vec<u8> {
    log.name.strip_prefix(b"refs/heads/").map_or_else(|| b"HEAD".to_vec(), <[u8]>::to_vec)
}

/// The full name a reference resolves to (one symbolic level followed, as far as it leads) and its id.
fn resolve(refs: &Refs<'_>, full: &[u8]) -> Option<(Vec<u8>, ObjectId)> {
    let _: &gix_ref::FullNameRef = gix_object::bstr::BStr::new(full).try_into().ok()?;
    let mut reference = refs.find(full)?;
    if reference.name.as_bstr() != full {
        return None;
    }
    let mut name = full.to_vec();
    for _ in 0..5 {
        match reference.target {
            gix_ref::Target::Object(id) => return Some((name, id)),
            gix_ref::Target::Symbolic(target) => {
                name = target.as_bstr().to_vec();
                reference = refs.find(target.as_bstr())?;
            }
        }
    }
    None
}

/// A reflog lookup in `name`, as git's `get_oid_basic` answers it: `ref_name` is the reference before the
/// `@{…}` as gix-revision found it (`None`: the mark alone, HEAD's branch). `None`: the name names nothing
/// (no such reference or log, no date in the text, or a mark git never reads because something other than
/// `^…`, `~<n>` or `:<path>` follows it). git's warnings go to `warnings`.
pub(crate) fn at_mark(
    refs: &Refs<'_>,
    hash: gix_hash::Kind,
    name: &[u8],
    ref_name: Option<&[u8]>,
    warnings: &mut Vec<u8>,
) -> Result<Option<ObjectId>, ReflogError> {
    let Some((at, close)) = super::syntax::reflog_mark(name) else { return Ok(None) };
    // `@{-<n>}` is no reflog lookup, and git takes a name with it anywhere but at the start for nothing.
    if name[at + 2] == b'-' || !super::ambiguous::looked_up(&name[close + 1..]) {
        return Ok(None);
    }
    let (log, logs) = match ref_name {
        Some(ref_name) => find(refs, ref_name).unzip(),
        None => (of_head(refs), None),
    };
    let Some(log) = log else { return Ok(None) };
    if logs.is_some_and(|logs| logs > 1) {
        // git's `core.warnAmbiguousRefs` warning, for logs found by more than one rule. (git also warns when
        // the name is an abbreviated id; the store is not at hand here, and a ref named so has no log by default.)
        warnings.extend_from_slice(&[b"warning: refname '", &name[..at], b"' is ambiguous.\n"].concat());
    }
    let Some(query) = query(&name[at + 2..close]) else { return Ok(None) };
    let shown = if at == 0 { short_name(&log) } else { name[..at].to_vec() };
    lookup(refs, hash, &log, &query, &shown, warnings).map(Some)
}
