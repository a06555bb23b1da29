//! Tree objects as git's `load_tree` reads them for `ls`, and the cache of parsed trees that the walks of one
//! stream share (on the front end's thread and on every resolver thread).
//!
//! Random `ls` requests over a few dozen commits read the same few root trees and big subtrees (`t/`,
//! `Documentation/`) again and again; inflating and delta-resolving one costs far more than the lookup that
//! follows. Once the trees are kept, inflating the commit (or tag) named by each request is most of what is
//! left, so the step each one peels to is kept too. Everything is keyed by object id, so what is kept is right
//! whatever the stream does later.
use std::sync::{Arc, Mutex, MutexGuard};

use lru::LruCache;

use crate::git_compat::tree_entry::Entries;

use crate::store::{Data, ObjectId, oid};

/// The bytes of parsed trees one stream keeps at most. git.git's largest tree (`t/`) is about 60 KiB, so this
/// holds every tree of a few dozen commits' paths; the daemon pays it only for streams that send `ls`.
pub(crate) const TREE_CACHE_BYTES: usize = 16 << 20;

/// Peeling steps (commit or tag to the id it names) kept at most: about 100 bytes each.
const PEEL_STEPS: usize = 16 << 10;

/// A tree object known to parse (git's `load_tree` parses a tree in full, so one bad entry anywhere fails it),
/// with where each entry is, so that a lookup compares names without parsing again.
pub(super) struct Tree {
    pub(super) id: ObjectId,
    data: Data,
    /// Exactly as long as the entries: the table is kept as long as the tree, and a walk over history keeps
    /// thousands (small-A's 10,000 `ls`: 8 MB of tables at 24 bytes an entry and a quarter of slack, now 16 and
    /// none; every byte kept is a byte of heap first touched).
    entries: Box<[At]>,
    hash_len: usize,
}

/// Where one entry of [`Tree::data`] is: 16 bytes.
#[derive(Debug, Clone, Copy)]
struct At {
    /// The name's first byte; the id follows the name's NUL.
    name: usize,
    /// The name's first 4 bytes, zero-padded ([`prefix`]): with the length, most names that differ differ here,
    /// and a name of at most 4 bytes is equal when these are.
    prefix: u32,
    /// The name's length, or [`LONG`] for a name of that many bytes or more, whose length is found by its NUL.
    /// (git's fast-import keeps 16 bits of a name's length and misparses the entries after one of 64 KiB.)
    name_len: u16,
    mode: u16,
}

/// [`At::name_len`] of a name of 65,535 bytes or more.
const LONG: u16 = u16::MAX;

/// How a name's length is kept in [`At::name_len`].
fn name_len_key(len: usize) -> u16 {
    u16::try_from(len).unwrap_or(LONG)
}

/// A tree whose bytes git cannot parse (`corrupt mode in <tree>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Corrupt;

/// The first 4 bytes of `name`, zero-padded, as one number.
fn prefix(name: &[u8]) -> u32 {
    match name.first_chunk::<4>() {
        Some(first) => u32::from_le_bytes(*first),
        // Byte by byte: a copy of a variable length is a call to memcpy.
        None => name.iter().rev().fold(0, |prefix, &byte| (prefix << 8) | u32::from(byte)),
    }
}

impl Tree {
    /// Parses every entry of `data`.
    pub(super) fn parse(id: ObjectId, data: Data, hash: gix_hash::Kind) -> Result<Tree, Corrupt> {
        // About one entry per 30 bytes in source trees: one allocation for most.
        let mut entries = Vec::with_capacity(data.len() / 30 + 1);
        for entry in Entries::new(&data, hash) {
            let entry = entry.map_err(|_| Corrupt)?;
            let name = entry.name.as_ptr() as usize - data.as_ptr() as usize;
            let name_len = name_len_key(entry.name.len());
            entries.push(At { name, prefix: prefix(entry.name), name_len, mode: entry.mode });
        }
        // Shrinking gives the slack back in place (glibc splits the block): no copy.
        Ok(Tree { id, data, entries: entries.into_boxed_slice(), hash_len: hash.len_in_bytes() })
    }

    /// The tree git's `load_tree` makes of the null id: empty.
    pub(super) fn null(id: ObjectId) -> Tree {
        Tree { id, data: Data::default(), entries: Box::default(), hash_len: 0 }
    }

    /// The first entry (in stored order) named `name`, as its raw mode and id: git compares with `fspathncmp`,
    /// which is `strncasecmp` (ASCII only) when `core.ignoreCase` is set, and only names of the same length.
    pub(super) fn find(&self, name: &[u8], ignore_case: bool) -> Option<(u16, &oid)> {
        let len = name_len_key(name.len());
        let first = prefix(name);
        let at = if ignore_case {
            self.entries.iter().find(|at| at.name_len == len && self.name(at).eq_ignore_ascii_case(name))
        } else {
            // Equal prefixes and lengths are equal names up to 4 bytes; only longer ones compare the rest (a long
            // name in full, its length included).
            self.entries.iter().find(|at| {
                at.prefix == first
                    && at.name_len == len
                    && match len {
                        LONG => self.name(at) == name,
                        _ => name.len() <= 4 || self.name(at)[4..] == name[4..],
                    }
            })
        }?;
        let id_at = at.name + self.name(at).len() + 1;
        Some((at.mode, oid::from_bytes_unchecked(&self.data[id_at..id_at + self.hash_len])))
    }

    fn name(&self, at: &At) -> &[u8] {
        let len = match at.name_len {
            // The entry parsed, so its name ends at a NUL.
            LONG => memchr::memchr(0, &self.data[at.name..]).expect("a parsed entry's name ends at a NUL"),
            len => usize::from(len),
        };
        &self.data[at.name..at.name + len]
    }

    /// What the cache counts this tree as.
    fn bytes(&self) -> usize {
        self.data.len() + self.entries.len() * std::mem::size_of::<At>() + std::mem::size_of::<Tree>()
    }
}

/// Parsed trees by id, least recently used dropped first once past a byte cap, and the peeling steps of
/// commits and tags. One per stream, shared by its threads: behind a mutex held only to look up or insert,
/// never while an object is read or parsed.
pub(crate) struct TreeCache {
    lru: Mutex<Lru>,
    steps: Mutex<LruCache<ObjectId, ObjectId>>,
}

struct Lru {
    trees: LruCache<ObjectId, Arc<Tree>>,
    bytes: usize,
    capacity: usize,
    hits: u64,
    misses: u64,
}

impl TreeCache {
    pub(crate) fn new(capacity: usize) -> TreeCache {
        let lru = Lru { trees: LruCache::unbounded(), bytes: 0, capacity, hits: 0, misses: 0 };
        // Unbounded (capped by hand in `put_peeled`): `LruCache::new` would allocate room for every step at once,
        // in every stream, `ls` or not.
        TreeCache { lru: Mutex::new(lru), steps: Mutex::new(LruCache::unbounded()) }
    }

    fn steps(&self) -> MutexGuard<'_, LruCache<ObjectId, ObjectId>> {
        self.steps.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The id the commit or tag `id` names (its `tree` or `object` line), if a walk peeled it before.
    pub(super) fn peeled(&self, id: &oid) -> Option<ObjectId> {
        self.steps().get(id).copied()
    }

    /// Keeps the id a commit or tag names, unless the cache keeps nothing at all.
    pub(super) fn put_peeled(&self, id: ObjectId, next: ObjectId) {
        if self.lock().capacity == 0 {
            return;
        }
        let mut steps = self.steps();
        steps.put(id, next);
        if steps.len() > PEEL_STEPS {
            steps.pop_lru();
        }
    }

    fn lock(&self) -> MutexGuard<'_, Lru> {
        self.lru.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn get(&self, id: &oid) -> Option<Arc<Tree>> {
        let mut lru = self.lock();
        let found = lru.trees.get(id).cloned();
        match found {
            Some(_) => lru.hits += 1,
            None => lru.misses += 1,
        }
        found
    }

    /// Keeps `tree` unless it alone is larger than the whole cache, dropping the least recently used trees to
    /// stay within the cap.
    pub(super) fn put(&self, tree: Arc<Tree>) {
        let bytes = tree.bytes();
        let mut lru = self.lock();
        if bytes > lru.capacity {
            return;
        }
        if let Some(old) = lru.trees.put(tree.id, tree) {
            lru.bytes -= old.bytes();
        }
        lru.bytes += bytes;
        while lru.bytes > lru.capacity {
            match lru.trees.pop_lru() {
                Some((_, dropped)) => lru.bytes -= dropped.bytes(),
                None => break,
            }
        }
    }

    /// (hits, misses) since creation.
    #[cfg(test)]
    pub(super) fn hit_counts(&self) -> (u64, u64) {
        let lru = self.lock();
        (lru.hits, lru.misses)
    }
}

impl Default for TreeCache {
    fn default() -> Self {
        TreeCache::new(TREE_CACHE_BYTES)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    pub(in crate::fast_import::ls) use crate::git_compat::tree_entry::tests::tree_bytes;
    use crate::store::ObjectId;

    const SHA1: gix_hash::Kind = gix_hash::Kind::Sha1;

    fn tree(entries: &[(&str, &[u8], ObjectId)]) -> Arc<Tree> {
        let data = tree_bytes(entries);
        let id = gix_object::compute_hash(SHA1, gix_object::Kind::Tree, &data).expect("hash");
        Arc::new(Tree::parse(id, Data::new(data), SHA1).expect("parses"))
    }

    fn blob(n: u8) -> ObjectId {
        ObjectId::from_bytes_or_panic(&[n; 20])
    }

    #[test]
    fn lookups_find_the_first_entry_of_that_name_in_stored_order() {
        let t = tree(&[("100644", b"b", blob(1)), ("40000", b"a", blob(2)), ("100755", b"a", blob(3))]);
        assert_eq!(t.find(b"a", false), Some((0o40000, blob(2).as_ref())));
        assert_eq!(t.find(b"b", false), Some((0o100644, blob(1).as_ref())));
        assert_eq!(t.find(b"A", false), None);
        assert_eq!(t.find(b"A", true), Some((0o40000, blob(2).as_ref())));
        assert_eq!(t.find(b"", false), None);
        assert_eq!(t.find(b"ab", false), None);
        assert_eq!(Tree::null(blob(0)).find(b"a", false), None);
    }

    #[test]
    fn prefixes_are_the_first_four_bytes_zero_padded() {
        assert_eq!(prefix(b"abcdefghij"), u32::from_le_bytes(*b"abcd"));
        assert_eq!(prefix(b"abc"), u32::from_le_bytes(*b"abc\0"));
        assert_eq!(prefix(b""), 0);
    }

    #[test]
    fn an_entry_takes_16_bytes() {
        assert_eq!(std::mem::size_of::<At>(), 16);
    }

    /// Names of 65,535 bytes and more do not fit the 16-bit length: they are found by their NUL, and compared in
    /// full.
    #[test]
    fn names_too_long_for_16_bits_compare_in_full() {
        let long = |len: usize, last: u8| [vec![b'n'; len - 1], vec![last]].concat();
        let (a, b, c) = (long(70_000, b'a'), long(70_000, b'b'), long(65_535, b'a'));
        let t = tree(&[
            ("100644", &a, blob(1)),
            ("100644", &b, blob(2)),
            ("100644", &c, blob(3)),
            ("100644", b"z", blob(4)),
        ]);
        assert_eq!(t.find(&b, false), Some((0o100644, blob(2).as_ref())));
        assert_eq!(t.find(&c, false), Some((0o100644, blob(3).as_ref())));
        assert_eq!(t.find(&long(70_001, b'a'), false), None);
        assert_eq!(t.find(&long(65_534, b'a'), false), None);
        assert_eq!(t.find(&b.to_ascii_uppercase(), true), Some((0o100644, blob(2).as_ref())));
        assert_eq!(t.find(b"z", false), Some((0o100644, blob(4).as_ref())), "entries after long names");
    }

    #[test]
    fn names_longer_than_the_prefix_compare_in_full() {
        let t = tree(&[("100644", b"prefix-same-1", blob(1)), ("100644", b"prefix-same-2", blob(2))]);
        let short = tree(&[("100644", b"abcdX", blob(1)), ("100644", b"abcdY", blob(2))]);
        assert_eq!(short.find(b"abcdY", false), Some((0o100644, blob(2).as_ref())));
        assert_eq!(short.find(b"abcdZ", false), None);
        assert_eq!(t.find(b"prefix-same-2", false), Some((0o100644, blob(2).as_ref())));
        assert_eq!(t.find(b"PREFIX-same-2", true), Some((0o100644, blob(2).as_ref())));
        assert_eq!(t.find(b"prefix-same-3", false), None);
        assert_eq!(t.find(b"prefix-s", false), None);
    }

    #[test]
    fn a_tree_that_does_not_parse_in_full_is_corrupt() {
        let mut data = tree_bytes(&[("100644", b"a", blob(1))]);
        data.extend_from_slice(b"100644 b\0short");
        assert_eq!(Tree::parse(blob(9), Data::new(data), SHA1).err(), Some(Corrupt));
    }

    #[test]
    fn the_cache_keeps_trees_by_id_until_they_are_least_recently_used() {
        let (a, b, c) = (
            tree(&[("100644", b"a", blob(1))]),
            tree(&[("100644", b"b", blob(1))]),
            tree(&[("100644", b"c", blob(1))]),
        );
        // Room for two of these trees, not three.
        let cache = TreeCache::new(a.bytes() * 2 + a.bytes() / 2);
        cache.put(Arc::clone(&a));
        cache.put(Arc::clone(&b));
        assert!(cache.get(&a.id).is_some(), "a is now the most recently used");
        cache.put(Arc::clone(&c));
        assert!(cache.get(&b.id).is_none(), "b was the least recently used: dropped");
        assert!(cache.get(&a.id).is_some() && cache.get(&c.id).is_some());
        assert_eq!(cache.hit_counts(), (3, 1));
        // Putting a tree again does not count it twice.
        cache.put(Arc::clone(&c));
        cache.put(Arc::clone(&a));
        assert!(cache.get(&a.id).is_some() && cache.get(&c.id).is_some());
    }

    #[test]
    fn peeling_steps_are_capped_by_count() {
        let cache = TreeCache::new(1 << 20);
        let id = |n: usize| ObjectId::from_bytes_or_panic(&[&(n as u64).to_be_bytes()[..], &[0; 12]].concat());
        for n in 0..=PEEL_STEPS {
            cache.put_peeled(id(n), id(n + 1));
        }
        assert_eq!(cache.peeled(&id(0)), None, "the oldest step went first");
        assert_eq!(cache.peeled(&id(1)), Some(id(2)));
        assert_eq!(cache.peeled(&id(PEEL_STEPS)), Some(id(PEEL_STEPS + 1)));
        assert_eq!(cache.steps().len(), PEEL_STEPS);
        let nothing = TreeCache::new(0);
        nothing.put_peeled(id(0), id(1));
        assert_eq!(nothing.peeled(&id(0)), None, "a cache that keeps nothing keeps no steps either");
    }

    #[test]
    fn a_tree_larger_than_the_cache_is_not_kept_and_drops_nothing() {
        let small = tree(&[("100644", b"a", blob(1))]);
        let names: Vec<Vec<u8>> = (0..50).map(|i| format!("name{i}").into_bytes()).collect();
        let entries: Vec<(&str, &[u8], ObjectId)> = names.iter().map(|n| ("100644", &n[..], blob(1))).collect();
        let big = tree(&entries);
        let cache = TreeCache::new(small.bytes() * 2);
        cache.put(Arc::clone(&small));
        cache.put(Arc::clone(&big));
        assert!(cache.get(&big.id).is_none());
        assert!(cache.get(&small.id).is_some());
        assert!(TreeCache::new(0).get(&small.id).is_none());
    }
}
