//! Tree entries as git reads them, for both front ends: one meaning of a mode (git's `parse_mode` of object.h,
//! which fast-import's `load_tree` and tree-walk's `decode_tree_entry` share), the two readers built on it, and
//! what a mode says (`object_type`, `canon_mode`).
//!
//! Hand-rolled rather than `gix_object::TreeRefIter` because gix-object reads modes differently from git, and
//! the mode is what `ls` and `cat-file -p` print and what a path walk descends by: gix takes an empty mode as 0
//! (git: malformed), refuses more than 7 digits (git reads any number, keeping the low 16 bits: `00000100644`
//! is `100644`), and reports `140000` as `040000` (git: a gitlink to tree-walk, `140000 blob` to fast-import).
//! See `gix_object_reads_modes_differently` below.
use gix_hash::oid;

/// `S_IFMT`, and the file types git keeps in tree modes.
pub(crate) const S_IFMT: u16 = 0o170000;
pub(crate) const S_IFREG: u16 = 0o100000;
pub(crate) const S_IFDIR: u16 = 0o040000;
pub(crate) const S_IFLNK: u16 = 0o120000;
pub(crate) const S_IFGITLINK: u16 = 0o160000;

/// One tree entry: the mode as read (raw for fast-import, canonical from [`TreeDesc`]), the name, the id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry<'a> {
    pub(crate) mode: u16,
    pub(crate) name: &'a [u8],
    pub(crate) id: &'a oid,
}

impl Entry<'_> {
    pub(crate) fn is_dir(&self) -> bool {
        self.mode & S_IFMT == S_IFDIR
    }
}

/// Why a tree's bytes do not parse, in tree-walk's words (`decode_tree_entry`, which dies with them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    #[error("too-short tree object")]
    TooShort,
    #[error("malformed mode in tree entry")]
    Mode,
    #[error("empty filename in tree entry")]
    EmptyName,
}

/// git's `parse_mode` (object.h): octal digits up to a space, at least one, kept in 16 bits (the bits shifted
/// out are dropped, like git's assignment to a `uint16_t`). The rest starts after the space.
///
/// One pass over the digits, stopping at the first byte that is not one: tree parsing for `ls` was an eighth of
/// its time when this searched for the space first and then checked and folded the digits in two more passes.
pub(crate) fn parse_mode(data: &[u8]) -> Option<(u16, &[u8])> {
    // The two modes of nearly every entry, recognized whole.
    if let Some(rest) = data.strip_prefix(b"100644 ") {
        return Some((0o100644, rest));
    }
    if let Some(rest) = data.strip_prefix(b"40000 ") {
        return Some((0o40000, rest));
    }
    let mut mode = 0u32;
    for (at, &byte) in data.iter().enumerate() {
        if byte == b' ' {
            return (at > 0).then(|| (mode as u16, &data[at + 1..]));
        }
        let digit = byte.wrapping_sub(b'0');
        if digit > 7 {
            return None;
        }
        mode = (mode << 3) | u32::from(digit);
    }
    None
}

/// git's `object_type(mode)`: the type an entry of this mode names.
pub(crate) fn object_type(mode: u16) -> &'static str {
    match mode & S_IFMT {
        S_IFDIR => "tree",
        S_IFGITLINK => "commit",
        _ => "blob",
    }
}

/// git's `canon_mode` (tree-walk's modes): a regular file is 644 or 755, and any mode that is not a file, a
/// symlink or a directory is a gitlink.
pub(crate) fn canon_mode(mode: u16) -> u16 {
    match mode & S_IFMT {
        S_IFREG => S_IFREG | if mode & 0o100 != 0 { 0o755 } else { 0o644 },
        S_IFLNK => S_IFLNK,
        S_IFDIR => S_IFDIR,
        _ => S_IFGITLINK,
    }
}

/// The entries of a tree as fast-import's `load_tree` reads them: raw modes, any name; any malformed entry
/// ends the walk with [`Malformed::Mode`] (git dies with `corrupt mode in <tree>`, or reads past a truncated
/// entry and, in practice, dies the same way).
pub(crate) struct Entries<'a> {
    data: &'a [u8],
    hash_len: usize,
}

impl<'a> Entries<'a> {
    pub(crate) fn new(data: &'a [u8], hash: gix_hash::Kind) -> Entries<'a> {
        Entries { data, hash_len: hash.len_in_bytes() }
    }

    fn parse(&self) -> Option<(Entry<'a>, &'a [u8])> {
        let (mode, rest) = parse_mode(self.data)?;
        let nul = memchr::memchr(0, rest)?;
        let (name, rest) = (&rest[..nul], &rest[nul + 1..]);
        if rest.len() < self.hash_len {
            return None;
        }
        let (raw, rest) = rest.split_at(self.hash_len);
        Some((Entry { mode, name, id: oid::try_from_bytes(raw).ok()? }, rest))
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<Entry<'a>, Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.data.is_empty() {
            return None;
        }
        let parsed = self.parse();
        self.data = parsed.map_or(&[], |(_, rest)| rest);
        Some(parsed.map(|(entry, _)| entry).ok_or(Malformed::Mode))
    }
}

/// A tree as tree-walk reads it (`init_tree_desc`, `tree_entry`): modes canonical, each entry decoded with
/// `decode_tree_entry`'s checks, and an entry given only once the one after it decodes too (git decodes the
/// next entry as it steps past one, and dies there), so that a walk stops where git's would die.
pub(crate) struct TreeDesc<'a> {
    data: &'a [u8],
    hash_len: usize,
    /// The entry decoded ahead, as git's `desc->entry`.
    ahead: Option<Result<(Entry<'a>, &'a [u8]), Malformed>>,
}

impl<'a> TreeDesc<'a> {
    pub(crate) fn new(data: &'a [u8], hash: gix_hash::Kind) -> TreeDesc<'a> {
        let hash_len = hash.len_in_bytes();
        TreeDesc { data, hash_len, ahead: (!data.is_empty()).then(|| decode(data, hash_len)) }
    }

    /// `init_tree_desc`: an error when the first entry does not decode.
    pub(crate) fn check_first(&self) -> Result<(), Malformed> {
        match &self.ahead {
            Some(Err(err)) => Err(*err),
            _ => Ok(()),
        }
    }
}

/// git's `decode_tree_entry`: the remaining bytes must end with a NUL and an id (so that the name's NUL is
/// found), then a mode, then a name of at least one byte.
fn decode(data: &[u8], hash_len: usize) -> Result<(Entry<'_>, &[u8]), Malformed> {
    if data.len() < hash_len + 3 || data[data.len() - (hash_len + 1)] != 0 {
        return Err(Malformed::TooShort);
    }
    let (mode, rest) = parse_mode(data).ok_or(Malformed::Mode)?;
    let nul = memchr::memchr(0, rest).ok_or(Malformed::TooShort)?;
    if nul == 0 {
        return Err(Malformed::EmptyName);
    }
    let (name, rest) = (&rest[..nul], &rest[nul + 1..]);
    let (raw, rest) = rest.split_at(hash_len);
    let id = oid::try_from_bytes(raw).map_err(|_| Malformed::TooShort)?;
    Ok((Entry { mode: canon_mode(mode), name, id }, rest))
}

impl<'a> Iterator for TreeDesc<'a> {
    type Item = Result<Entry<'a>, Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        let (entry, rest) = match self.ahead.take()? {
            Ok(decoded) => decoded,
            Err(err) => return Some(Err(err)),
        };
        self.data = rest;
        if !rest.is_empty() {
            let next = decode(rest, self.hash_len);
            if let Err(err) = next {
                return Some(Err(err));
            }
            self.ahead = Some(next);
        }
        Some(Ok(entry))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::store::ObjectId;

    const SHA1: gix_hash::Kind = gix_hash::Kind::Sha1;

    /// A tree's bytes from `(mode digits, name, id)` entries, in the order given (no sorting, no checks).
    pub(crate) fn tree_bytes(entries: &[(&str, &[u8], ObjectId)]) -> Vec<u8> {
        let mut data = Vec::new();
        for (mode, name, id) in entries {
            data.extend_from_slice(mode.as_bytes());
            data.push(b' ');
            data.extend_from_slice(name);
            data.push(0);
            data.extend_from_slice(id.as_bytes());
        }
        data
    }

    fn blob(n: u8) -> ObjectId {
        ObjectId::from_bytes_or_panic(&[n; 20])
    }

    fn walk(data: &[u8]) -> Vec<Result<(u16, Vec<u8>), Malformed>> {
        TreeDesc::new(data, SHA1).map(|entry| entry.map(|e| (e.mode, e.name.to_vec()))).collect()
    }

    #[test]
    fn tree_walk_gives_an_entry_only_once_the_next_one_decodes() {
        let mut data = tree_bytes(&[("100644", b"a", blob(1)), ("100664", b"b", blob(2))]);
        data.extend_from_slice(&tree_bytes(&[("10x644", b"c", blob(3)), ("100644", b"d", blob(4))]));
        assert_eq!(walk(&data), vec![Ok((0o100644, b"a".to_vec())), Err(Malformed::Mode)]);
        let bad_first = tree_bytes(&[("", b"a", blob(1))]);
        assert_eq!(TreeDesc::new(&bad_first, SHA1).check_first(), Err(Malformed::Mode));
        assert_eq!(walk(&tree_bytes(&[("100644", b"", blob(1))])), vec![Err(Malformed::EmptyName)]);
        let mut short = tree_bytes(&[("100644", b"a", blob(1))]);
        short.extend_from_slice(b"xyz");
        assert_eq!(walk(&short), vec![Err(Malformed::TooShort)]);
        assert!(walk(b"").is_empty());
    }

    #[test]
    fn tree_walk_modes_are_canonical_and_fast_import_modes_raw() {
        let data = tree_bytes(&[
            ("100664", b"a", blob(1)),
            ("140000", b"b", blob(2)),
            ("00000100755", b"c", blob(3)),
            ("40755", b"d", blob(4)),
        ]);
        let canon: Vec<u16> = TreeDesc::new(&data, SHA1).map(|e| e.unwrap().mode).collect();
        assert_eq!(canon, [0o100644, 0o160000, 0o100755, 0o040000]);
        let raw: Vec<u16> = Entries::new(&data, SHA1).map(|e| e.unwrap().mode).collect();
        assert_eq!(raw, [0o100664, 0o140000, 0o100755, 0o40755]);
        assert_eq!(object_type(0o140000), "blob");
        assert_eq!(object_type(canon_mode(0o140000)), "commit");
    }

    #[test]
    fn modes_are_octal_digits_up_to_a_space() {
        assert_eq!(parse_mode(b"100644 name"), Some((0o100644, &b"name"[..])));
        assert_eq!(parse_mode(b"0 "), Some((0, &b""[..])));
        // 16 bits kept of a longer mode, as git's `uint16_t`.
        assert_eq!(parse_mode(b"7100644 n"), Some((0o100644, &b"n"[..])));
        assert_eq!(parse_mode(b"77777777777777100644 n"), Some((0o100644, &b"n"[..])));
        for bad in [&b" name"[..], b"100644", b"10064x name", b"100648 name", b"", b"1\0 n", b"-1 n"] {
            assert_eq!(parse_mode(bad), None, "{bad:?}");
        }
    }

    /// Why neither reader uses `gix_object::TreeRefIter`: these are the cases where gix-object 0.66 reads a
    /// mode differently from git. If this test fails, gix changed, and switching to it may now be possible.
    #[test]
    fn gix_object_reads_modes_differently() {
        let blob = ObjectId::from_hex(b"45b983be36b73c0788dc9cbcb76cbb80fc7bb057").unwrap();
        let gix_mode = |mode: &str| {
            let data = tree_bytes(&[(mode, b"n", blob)]);
            let entry = gix_object::TreeRefIter::from_bytes(&data, SHA1).next().unwrap();
            entry.ok().map(|e| e.mode.value())
        };
        let git_mode = |mode: &str| {
            let data = tree_bytes(&[(mode, b"n", blob)]);
            Entries::new(&data, SHA1).next().unwrap().ok().map(|e| e.mode)
        };
        assert_eq!((gix_mode(""), git_mode("")), (Some(0), None));
        assert_eq!((gix_mode("140000"), git_mode("140000")), (Some(0o040000), Some(0o140000)));
        assert_eq!((gix_mode("00000100644"), git_mode("00000100644")), (None, Some(0o100644)));
        // Where they agree.
        for mode in ["100644", "40000", "040000", "100664", "644", "160000", "0"] {
            assert_eq!(gix_mode(mode), git_mode(mode), "{mode}");
        }
    }
}
