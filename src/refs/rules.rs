//! git's `ref_rev_parse_rules`: the order in which a short name is tried as a reference, for the lookups
//! that are not gix-ref's own (counting the rules a name matches, finding the reflog it names, and every lookup
//! of references read beneath a `--root` daemon's root).

/// `(prefix, suffix)` around the name, in git's order; the first rule is the name itself.
const RULES: [(&[u8], &[u8]); 6] = [
    (b"", b""),
    (b"refs/", b""),
    (b"refs/tags/", b""),
    (b"refs/heads/", b""),
    (b"refs/remotes/", b""),
    (b"refs/remotes/", b"/HEAD"),
];

/// The full names `name` stands for, one per rule, in git's order.
pub(crate) fn expansions(name: &[u8]) -> impl Iterator<Item = Vec<u8>> + '_ {
    RULES.iter().map(move |(prefix, suffix)| [prefix, name, suffix].concat())
}

/// The expansions after the first (the name as it is), which git counts apart.
pub(crate) fn prefixed(name: &[u8]) -> impl Iterator<Item = Vec<u8>> + '_ {
    expansions(name).skip(1)
}
