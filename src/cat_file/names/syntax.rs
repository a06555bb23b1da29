//! Where the parts of an object name are, read from its text alone as git's `get_oid_with_context_1` and
//! `peel_onion` find them: the `<rev>` before `:<path>`, the `^{…}` peels, describe output, and the chains of
//! `@{…}` that gix-revision does not parse.

/// The `<rev>` of `<rev>:<path>`: up to the first colon outside `^{…}` and `@{…}` (git's
/// `get_oid_with_context_1`).
pub(super) fn rev_before_path(name: &[u8]) -> &[u8] {
    let mut depth = 0usize;
    let mut at = 0;
    while at < name.len() {
        match name[at] {
            // Only `^{` and `@{` open a brace for git; a lone `{` is part of a name.
            b'^' | b'@' if name.get(at + 1) == Some(&b'{') => {
                depth += 1;
                at += 1;
            }
            b'}' if depth > 0 => depth -= 1,
            b':' if depth == 0 => return &name[..at],
            _ => {}
        }
        at += 1;
    }
    name
}

/// The name up to the end of its `n`-th `^{commit}`, `^{tag}`, `^{tree}`, `^{blob}` or `^{/<text>}` (or `^0`,
/// which gix-revision also reports as a peel to a commit).
pub(super) fn nth_onion(name: &[u8], n: usize) -> &[u8] {
    let mut seen = 0;
    for at in 0..name.len() {
        let rest = &name[at..];
        let len = [&b"^{commit}"[..], b"^{tag}", b"^{tree}", b"^{blob}"]
            .iter()
            .find(|onion| rest.starts_with(onion))
            .map(|onion| onion.len())
            .or_else(|| rest.starts_with(b"^{/").then(|| memchr::memchr(b'}', rest).map_or(rest.len(), |c| c + 1)))
            .or_else(|| (rest.starts_with(b"^0") && !rest.get(2).is_some_and(u8::is_ascii_digit)).then_some(2));
        if let Some(len) = len {
            seen += 1;
            if seen == n {
                return &name[..at + len];
            }
        }
    }
    name
}

/// git 2.55's test for describe output (`get_describe_name` and `ref_and_count_parts_valid`): `abbrev`, as it
/// appears after `-g` in `name`, follows `<ref>-<count>` where `<count>` is hex digits and `<ref>` a valid ref
/// name of one or more levels.
pub(super) fn describe_output(name: &[u8], abbrev: &[u8]) -> bool {
    let needle = [&b"-g"[..], abbrev].concat();
    let Some(at) = name.windows(needle.len()).rposition(|window| window.eq_ignore_ascii_case(&needle)) else {
        return true; // not a describe name of this form: gix-revision's reading stands
    };
    let before = &name[..at];
    let Some(dash) = before.iter().rposition(|&b| b == b'-') else { return false };
    let (ref_name, count) = (&before[..dash], &before[dash + 1..]);
    let ref_ok = <&gix_ref::PartialNameRef>::try_from(gix_object::bstr::BStr::new(ref_name)).is_ok();
    !count.is_empty() && count.iter().all(u8::is_ascii_hexdigit) && ref_ok
}

/// Does the `<rev>` of `name` chain one `@{…}` after another (`@{-1}@{upstream}`, `<branch>@{u}@{1}`)? git
/// reads these; gix-revision's parser stops after the first.
pub(super) fn chained_marks(name: &[u8]) -> bool {
    memchr::memmem::find(rev_before_path(name), b"}@{").is_some()
}

/// Where the `@{…}` of a reflog lookup is in `name`: the `@` and the closing `}`. git finds it at the end of
/// the reference part of the `<rev>` (before any `^` or `~`), as `get_oid_basic` does once `get_oid_1` has
/// taken the suffixes off.
pub(super) fn reflog_mark(name: &[u8]) -> Option<(usize, usize)> {
    let rev = rev_before_path(name);
    let at = memchr::memmem::find(rev, b"@{")?;
    if memchr::memchr2(b'^', b'~', &rev[..at]).is_some() {
        return None;
    }
    let close = at + 2 + memchr::memchr(b'}', &rev[at + 2..])?;
    Some((at, close))
}

/// `name` with the text of its reflog lookup replaced by `100000000`, when git reads that text itself (a
/// count, or a date by approxidate, not `@{-<n>}`, `@{upstream}` or `@{push}`). gix-revision reads a date
/// with gix-date, which knows few of approxidate's forms, and stops on the others; given this stand-in it
/// reports a lookup by date, and the resolver reads the original text as git does.
pub(super) fn with_reflog_stand_in(name: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let Some((at, close)) = reflog_mark(name) else { return name.into() };
    let text = &name[at + 2..close];
    let sibling =
        [&b"@{upstream}"[..], b"@{u}", b"@{push}"].iter().any(|mark| name[at..=close].eq_ignore_ascii_case(mark));
    if text.is_empty() || text[0] == b'-' || sibling {
        return name.into();
    }
    [&name[..at + 2], b"100000000", &name[close..]].concat().into()
}
