//! The delta-base cache: chain roots and served objects that deltas still wait for, keyed by where they live
//! in a pack, capped in bytes (like git's `core.deltaBaseCacheLimit`).
//!
//! gix-pack's own cache only keeps the final object a call returned, so chain roots were inflated again for
//! every object built on them; this one keeps what later chains start from. Values are shared (`Arc`), never
//! copied.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use lru::LruCache;

use crate::store::locate::EntryKey;
use crate::store::{Data, Kind, Object};

/// What a byte-capped list holds, weighed by its bytes.
pub(crate) trait Weighed: Clone {
    fn bytes(&self) -> usize;
}

impl Weighed for Object {
    fn bytes(&self) -> usize {
        self.data.len()
    }
}

/// An inflated delta entry.
impl Weighed for Data {
    fn bytes(&self) -> usize {
        self.len()
    }
}

/// Three LRU lists under one byte cap: `wanted` holds bases that deltas of their pack still wait for, `other`
/// chain roots and bases whose deltas were all served, `spare` what is kept on the chance that a later read
/// builds on it ([`Keep::Spare`]), in at most a [`SPARE_SHARE`]th of the cap. Eviction takes from `spare`
/// first, then `other`, so a pass that walks old chains cannot push out the bases that deltas further on in
/// the stream will need; when nothing is known to be wanted and nothing is spare, it is plain LRU, as git's.
pub(crate) struct DeltaCache<V> {
    wanted: LruCache<EntryKey, V>,
    other: LruCache<EntryKey, V>,
    spare: LruCache<EntryKey, V>,
    /// The bytes of `spare` (counted in `bytes` too).
    spare_bytes: usize,
    bytes: usize,
    capacity: usize,
    hits: u64,
    misses: u64,
}

impl<V: Weighed> DeltaCache<V> {
    pub(crate) fn new(capacity: usize) -> Self {
        DeltaCache {
            wanted: LruCache::unbounded(),
            other: LruCache::unbounded(),
            spare: LruCache::unbounded(),
            spare_bytes: 0,
            bytes: 0,
            capacity,
            hits: 0,
            misses: 0,
        }
    }

    pub(crate) fn get(&mut self, key: EntryKey) -> Option<V> {
        let found = self.wanted.get(&key).or_else(|| self.other.get(&key)).or_else(|| self.spare.get(&key)).cloned();
        match found {
            Some(_) => self.hits += 1,
            None => self.misses += 1,
        }
        found
    }

    /// Keeps `value` (in the `wanted` list if deltas still wait for it) unless it alone is larger than the whole
    /// cache; evicts least recently used entries, others before wanted ones, to stay within the byte cap.
    pub(crate) fn put(&mut self, key: EntryKey, value: V, wanted: bool) {
        if value.bytes() > self.capacity {
            return;
        }
        self.remove(key);
        self.bytes += value.bytes();
        let list = if wanted { &mut self.wanted } else { &mut self.other };
        list.put(key, value);
        self.evict_spare(self.capacity);
        self.put_within_cap();
    }

    /// Keeps `value` in the `spare` list, evicting its least recently used entries to stay within its share of
    /// the cap, then others as [`Self::put`] does.
    pub(crate) fn put_spare(&mut self, key: EntryKey, value: V) {
        if value.bytes() > self.capacity / SPARE_SHARE {
            return;
        }
        self.remove(key);
        (self.bytes, self.spare_bytes) = (self.bytes + value.bytes(), self.spare_bytes + value.bytes());
        self.spare.put(key, value);
        self.evict_spare(self.capacity / SPARE_SHARE);
        self.put_within_cap();
    }

    /// Evicts the least recently used spare entries while they hold more than `limit` bytes or the cache more
    /// than its cap.
    fn evict_spare(&mut self, limit: usize) {
        while self.spare_bytes > limit || (self.bytes > self.capacity && self.spare_bytes > 0) {
            let Some((_, evicted)) = self.spare.pop_lru() else { break };
            self.spare_gone(evicted.bytes());
        }
    }

    /// Evicts others, then wanted entries, while the cache holds more than its cap.
    fn put_within_cap(&mut self) {
        while self.bytes > self.capacity {
            match self.other.pop_lru().or_else(|| self.wanted.pop_lru()) {
                Some((_, evicted)) => self.bytes -= evicted.bytes(),
                None => break,
            }
        }
    }

    pub(crate) fn remove(&mut self, key: EntryKey) {
        if let Some(value) = self.wanted.pop(&key).or_else(|| self.other.pop(&key)) {
            self.bytes -= value.bytes();
        } else if let Some(value) = self.spare.pop(&key) {
            self.spare_gone(value.bytes());
        }
    }

    /// Counts out `bytes` of a spare entry that left the cache.
    fn spare_gone(&mut self, bytes: usize) {
        (self.bytes, self.spare_bytes) = (self.bytes - bytes, self.spare_bytes - bytes);
    }

    /// Lets `key` go first: it becomes the least recently used entry of the `other` list. While the cache has
    /// room it stays, for whoever walks the same chain again (a daemon's next stream); the first entry a `put`
    /// needs room for evicts it, as if it had been removed.
    pub(crate) fn release(&mut self, key: EntryKey) {
        if let Some(value) = self.wanted.pop(&key) {
            self.other.put(key, value);
        }
        self.other.demote(&key);
        self.spare.demote(&key);
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Lets everything go, with the lists' tables (a cleared `LruCache` keeps its table's capacity); keeps the
    /// byte cap and the hit counts.
    pub(crate) fn clear(&mut self) {
        let (hits, misses) = (self.hits, self.misses);
        *self = DeltaCache { hits, misses, ..DeltaCache::new(self.capacity) };
    }

    /// (hits, misses) since creation.
    pub(crate) fn hit_counts(&self) -> (u64, u64) {
        (self.hits, self.misses)
    }
}

/// Whether a read leaves an object in the delta-base cache, and in which list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Keep {
    No,
    /// Kept on the chance that a later read builds on it: in a list of its own, capped at a [`SPARE_SHARE`]th of
    /// the cache and evicted before the others.
    Spare,
    /// In the list evicted before wanted entries.
    Other,
    /// In the list of bases that deltas of their pack still wait for.
    Wanted,
}

/// The share of the cache's cap that [`Keep::Spare`] entries may hold: a third. Served blobs of a sample read in
/// pack or history order, kept as spare, filled the whole cap and pushed chain roots out, so that 1,006 of 8,113
/// root inflates were roots inflated again (small-A, 20,000 blobs in pack order), and the cache's 96 MiB were
/// all first touches of the heap (30k page faults). A simulation of that sample from `git verify-pack -v`:
/// spare in a third of the cap, every root inflated once and 59.9k delta applications against 58.3k, 62 MiB
/// held at most instead of 96.
pub(crate) const SPARE_SHARE: usize = 3;

/// The spacing of the links [`CachePolicy::link`] keeps: a read of a tree then applies at most this many deltas
/// above the point where its chain meets one read before, at a quarter of the memory of keeping every link.
pub(crate) const KEEP_EVERY: usize = 4;

/// What one read keeps in the delta-base cache, and why. The reasons are measurements (README, Performance:
/// 100,000 random ids of the benchmark corpus, direct runs).
pub(crate) struct CachePolicy;

impl CachePolicy {
    /// The base a walk ended on, when the walk inflated it: kept if deltas are built on it. The deltas of this
    /// walk make it a chain root, which the next walks over the same chain start from (`Other`); deltas of its
    /// pack not served yet, once the pack knows its bases, make it wanted. In pack order a base comes thousands
    /// of requests before its deltas: knowing that took the first 30,000 blobs from 375 to 258 MB inflated.
    /// A whole object asked for by itself is not kept here (keeping every one cost history order 20% more CPU,
    /// in page faults, for nothing): its resolver holds on to the last one (`Resolver::last_whole`). Except a
    /// blob of a stream read in pack or history order (`ordered`) while the bases are unknown: there it is
    /// usually the root of a chain that later requests walk down to, and a root goes only after the spare
    /// entries ([`Keep::Spare`]). Not kept, 715 of small-A's 7,107 roots were inflated twice by a sample of
    /// 20,000 blobs in pack order (3.3% of the instructions); kept, each once.
    pub(crate) fn root(kind: Kind, deltas_above: bool, deltas_waiting: Option<bool>, ordered: bool) -> Keep {
        match (deltas_above, deltas_waiting) {
            (_, Some(true)) => Keep::Wanted,
            (true, _) => Keep::Other,
            (false, None) if ordered && kind == Kind::Blob => Keep::Other,
            (false, _) => Keep::No,
        }
    }

    /// The object asked for, when deltas built it: kept as wanted while deltas of its pack wait for it, not kept
    /// once none does (`deltas_waiting`; `None` while the pack's bases are not known). A blob of a stream that
    /// reads in pack or history order (`ordered`) is kept as spare before the bases are known ([`Keep::Spare`],
    /// in a third of the cap, so that it cannot push the chain roots out): in a
    /// server-packed history nearly every version is the base of the one before it, and the next read on its
    /// chain starts from it instead of applying every delta from the root again. Such a sample no longer pays
    /// for the scan of the bases to learn that (small-A, 20,000 blobs in pack or history order: 6% fewer
    /// instructions than with the scan; see benches/README.md). Not in random order: there the kept blobs filled
    /// the cache with fresh pages (12.8k → 30.7k page faults, 4% more CPU for 14% fewer instructions).
    /// The intermediates of a walk are never kept (git keeps them): in random order they push the roots out of
    /// the cache for nothing, since a root costs a whole inflate and an intermediate a few copies (6.8 → 5.1 s).
    pub(crate) fn served(kind: Kind, deltas_waiting: Option<bool>, ordered: bool) -> Keep {
        match deltas_waiting {
            Some(true) => Keep::Wanted,
            None if ordered && kind == Kind::Blob => Keep::Spare,
            Some(false) | None => Keep::No,
        }
    }

    /// A result on the way up a walk, `depth` links above the walk's base: kept at every
    /// [`KEEP_EVERY`]th link of a chain of trees (or commits, tags), so that the next read of a neighbouring
    /// version of the same tree starts at most a few links away instead of at the chain root. A server-packed
    /// history stores ~95% of its trees as deltas in chains up to 50 deep, and `ls` over a few dozen commits
    /// reads one version after another of the same directories: keeping only the roots, each tree read applied
    /// 12 deltas on average (small-A, 10,000 `ls`). Blobs keep the rule of [`CachePolicy::served`]: a blob
    /// is rarely read twice, and in random order kept intermediates push the roots out (6.8 → 5.1 s).
    pub(crate) fn link(kind: Kind, depth: usize) -> Keep {
        if kind != Kind::Blob && depth.is_multiple_of(KEEP_EVERY) { Keep::Other } else { Keep::No }
    }

    /// Whether the results a walk does not keep are left unbuilt, their deltas composed with the next
    /// ([`Composed`](crate::store::decode::compose::Composed)): for trees (commits, tags), whose deltas are a
    /// few copies and inserted entries, so that a read of a large directory copies it once rather than at every
    /// link (small-A, 10,000 `ls`: see benches/README.md). Blobs keep building each result: not measured.
    pub(crate) fn compose(kind: Kind) -> bool {
        kind != Kind::Blob
    }

    /// The inflated deltas of a walk: kept only when the walk started from a base found in the cache, that is
    /// on a chain walked before. A chain walked once is likely walked again in random order over git.git, where
    /// re-inflating the deltas above a cached root was a fifth of the time; over 10 million small blobs at random
    /// a chain is rarely walked twice, and keeping every delta made the cache's hash tables and heap grow to
    /// hundreds of thousands of entries for 0.2% hits: 20,000 random blobs took 1.43× the CPU of a 1 MiB cache.
    /// Not for trees (commits, tags): with every [`KEEP_EVERY`]th link kept nearly every walk begins cached, and
    /// the few deltas above that link are rarely walked again; keeping them cost 44,000 insertions for 10,000
    /// `ls` and saved 7% of their inflates, for 5% more instructions in all (small-A).
    pub(crate) fn deltas(kind: Kind, walk_began_cached: bool) -> bool {
        kind == Kind::Blob && walk_began_cached
    }

    /// The base of the object asked for, once that delta was served: let go when no delta of its pack waits for
    /// it any more. Only the object asked for counts as served: walking through a delta to reach another does
    /// not serve it, and in random order such walks would spend a root's count long before its deltas are asked
    /// for, and drop it (→ 4.2 s).
    pub(crate) fn release_base(deltas_waiting_after: bool) -> bool {
        !deltas_waiting_after
    }
}

/// One cache shared by several resolver threads: a chain root inflated by one thread serves the others.
/// Each operation holds the lock only to look up or insert an `Arc`.
///
/// Beside it, a smaller cache of inflated delta entries (a quarter of the byte cap, on top of it): a walk from
/// a cached root re-applies the deltas above it, and inflating a delta of a few hundred bytes is mostly
/// building Huffman tables. In random order that was a fifth of the time.
#[derive(Clone)]
pub struct SharedCache {
    objects: Arc<Mutex<DeltaCache<Object>>>,
    deltas: Arc<Mutex<DeltaCache<Data>>>,
    /// Bytes inflated by every resolver using this cache (objects and deltas): what the cache did not save.
    inflated: Arc<AtomicU64>,
    /// The byte cap of objects, fixed: read without the lock.
    capacity: usize,
}

impl SharedCache {
    pub fn new(capacity: usize) -> Self {
        SharedCache {
            objects: Arc::new(Mutex::new(DeltaCache::new(capacity))),
            deltas: Arc::new(Mutex::new(DeltaCache::new(capacity / 4))),
            inflated: Arc::default(),
            capacity,
        }
    }

    fn lock(&self) -> MutexGuard<'_, DeltaCache<Object>> {
        // A panic elsewhere cannot leave the cache inconsistent: every operation completes under the lock.
        self.objects.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lock_deltas(&self) -> MutexGuard<'_, DeltaCache<Data>> {
        self.deltas.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The inflated delta entry at `key`, if kept.
    pub(in crate::store) fn get_delta(&self, key: EntryKey) -> Option<Data> {
        self.lock_deltas().get(key)
    }

    /// Keeps an inflated delta entry.
    pub(in crate::store) fn put_delta(&self, key: EntryKey, delta: Data) {
        self.lock_deltas().put(key, delta, false)
    }

    pub(in crate::store) fn count_inflated(&self, bytes: usize) {
        self.inflated.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    pub fn inflated_bytes(&self) -> u64 {
        self.inflated.load(Ordering::Relaxed)
    }

    /// Bytes held now (objects and inflated deltas).
    pub fn bytes(&self) -> usize {
        self.lock().bytes() + self.lock_deltas().bytes()
    }

    pub(in crate::store) fn get(&self, key: EntryKey) -> Option<Object> {
        self.lock().get(key)
    }

    /// The byte cap of objects (inflated deltas have a quarter of it on top).
    pub(in crate::store) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Keeps `object` as `keep` says.
    pub(in crate::store) fn keep(&self, key: EntryKey, object: &Object, keep: Keep) {
        match keep {
            Keep::No => {}
            Keep::Spare => self.lock().put_spare(key, object.clone()),
            Keep::Other => self.lock().put(key, object.clone(), false),
            Keep::Wanted => self.lock().put(key, object.clone(), true),
        }
    }

    /// See [`DeltaCache::release`].
    pub(in crate::store) fn release(&self, key: EntryKey) {
        self.lock().release(key)
    }

    /// (hits, misses) since creation.
    pub fn hit_counts(&self) -> (u64, u64) {
        self.lock().hit_counts()
    }

    /// Lets every kept object and inflated delta go: for a repository no client reads now (`serve --root`).
    pub fn clear(&self) {
        self.lock().clear();
        self.lock_deltas().clear();
    }

    /// The object entry the next eviction takes.
    #[cfg(test)]
    pub(in crate::store) fn first_to_go(&self) -> Option<EntryKey> {
        let cache = self.lock();
        cache
            .spare
            .peek_lru()
            .or_else(|| cache.other.peek_lru())
            .or_else(|| cache.wanted.peek_lru())
            .map(|(key, _)| *key)
    }
}

impl std::fmt::Debug for SharedCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cache = self.lock();
        f.debug_struct("SharedCache").field("bytes", &cache.bytes).field("capacity", &cache.capacity).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(offset: u64) -> EntryKey {
        EntryKey { pack: 0, offset }
    }

    fn blob(len: usize) -> Object {
        Object { kind: Kind::Blob, data: Data::new(vec![0; len]) }
    }

    #[test]
    fn stays_within_its_byte_cap_and_evicts_least_recently_used() {
        let mut cache = DeltaCache::new(10);
        cache.put(key(1), blob(4), false);
        cache.put(key(2), blob(4), false);
        assert!(cache.get(key(1)).is_some());
        cache.put(key(3), blob(4), false);
        assert_eq!(cache.bytes(), 8);
        assert!(cache.get(key(2)).is_none(), "the least recently used entry goes first");
        assert!(cache.get(key(1)).is_some());
        cache.put(key(4), blob(11), false);
        assert!(cache.get(key(4)).is_none(), "larger than the whole cache: not kept");
        cache.put(key(1), blob(2), false);
        assert_eq!(cache.bytes(), 6, "replacing an entry releases the old bytes");
        assert_eq!(cache.hit_counts(), (2, 2));
    }

    #[test]
    fn a_cleared_cache_holds_nothing_and_keeps_its_cap_and_counts() {
        let cache = SharedCache::new(10);
        cache.keep(key(1), &blob(4), Keep::Wanted);
        cache.keep(key(2), &blob(4), Keep::Other);
        cache.put_delta(key(3), Data::new(vec![0; 2]));
        assert!(cache.get(key(1)).is_some());
        assert_eq!(cache.bytes(), 10);
        cache.clear();
        assert_eq!(cache.bytes(), 0);
        assert!(cache.get(key(1)).is_none() && cache.get(key(2)).is_none() && cache.get_delta(key(3)).is_none());
        assert_eq!(cache.hit_counts(), (1, 2), "counts since creation, across the clear");
        cache.keep(key(4), &blob(8), Keep::Other);
        assert_eq!(cache.bytes(), 8, "the same cap as before");
    }

    #[test]
    fn wanted_bases_outlive_other_entries() {
        let mut cache = DeltaCache::new(10);
        cache.put(key(1), blob(4), true);
        cache.put(key(2), blob(4), false);
        cache.put(key(3), blob(4), false);
        assert!(cache.get(key(1)).is_some(), "the older wanted entry stays");
        assert!(cache.get(key(2)).is_none(), "the least recently used other entry went first");
        cache.put(key(4), blob(4), true);
        cache.put(key(5), blob(4), true);
        assert!(cache.get(key(3)).is_none() && cache.get(key(1)).is_none(), "others first, then the oldest wanted");
        assert_eq!(cache.bytes(), 8);
    }

    #[test]
    fn entries_of_other_packs_at_the_same_offset_are_other_entries() {
        let mut cache = DeltaCache::new(100);
        cache.put(EntryKey { pack: 1, offset: 12 }, blob(1), false);
        cache.put(EntryKey { pack: 2, offset: 12 }, blob(2), false);
        assert_eq!(cache.get(EntryKey { pack: 1, offset: 12 }).map(|o| o.data.len()), Some(1));
        assert_eq!(cache.get(EntryKey { pack: 2, offset: 12 }).map(|o| o.data.len()), Some(2));
    }

    #[test]
    fn inflated_deltas_have_their_own_quarter() {
        let cache = SharedCache::new(40);
        cache.keep(key(1), &blob(30), Keep::Other);
        cache.put_delta(key(2), Data::new(vec![1; 8]));
        assert_eq!(cache.get_delta(key(2)).as_deref(), Some(&[1u8; 8][..]));
        assert!(cache.get(key(1)).is_some(), "a delta does not evict objects");
        assert_eq!(cache.bytes(), 38);
        cache.put_delta(key(3), Data::new(vec![2; 8]));
        assert!(cache.get_delta(key(2)).is_none(), "deltas are capped at a quarter (10 bytes)");
        assert!(cache.get_delta(key(3)).is_some());
    }

    #[test]
    fn keep_says_which_list() {
        let cache = SharedCache::new(8);
        cache.keep(key(1), &blob(4), Keep::Wanted);
        cache.keep(key(2), &blob(4), Keep::No);
        assert!(cache.get(key(2)).is_none(), "Keep::No keeps nothing");
        cache.keep(key(3), &blob(4), Keep::Other);
        cache.keep(key(4), &blob(4), Keep::Other);
        assert!(cache.get(key(1)).is_some(), "a wanted base outlives newer other entries");
        assert!(cache.get(key(3)).is_none() && cache.get(key(4)).is_some());
        cache.release(key(1));
        cache.keep(key(5), &blob(4), Keep::Other);
        assert!(cache.get(key(1)).is_none(), "a released base is the first to go");
        assert!(cache.get(key(4)).is_some() && cache.get(key(5)).is_some());
    }

    /// Spare entries (served blobs of a sample read in order) hold at most a third of the cap and go before the
    /// chain roots: kept with the others, they filled the cache and pushed the roots out.
    #[test]
    fn spare_entries_keep_to_their_share_and_go_first() {
        let mut cache = DeltaCache::new(30);
        cache.put(key(1), blob(8), false);
        cache.put_spare(key(2), blob(4));
        cache.put_spare(key(3), blob(4));
        cache.put_spare(key(4), blob(4));
        assert!(cache.get(key(2)).is_none(), "12 spare bytes are more than a third of 30: the oldest went");
        assert!(cache.get(key(3)).is_some() && cache.get(key(4)).is_some());
        cache.put(key(5), blob(8), false);
        cache.put(key(6), blob(8), false);
        assert!(cache.get(key(1)).is_some(), "over the cap, spare entries go before an older root");
        assert!(cache.get(key(3)).is_none(), "the least recently used spare entry went");
        assert_eq!(cache.bytes(), 28);
        cache.put_spare(key(7), blob(11));
        assert!(cache.get(key(7)).is_none(), "larger than the spare share: not kept");
        cache.remove(key(4));
        assert_eq!(cache.bytes(), 24, "removing a spare entry releases its bytes");
        let shared = SharedCache::new(30);
        shared.keep(key(8), &blob(4), Keep::Spare);
        shared.keep(key(9), &blob(4), Keep::Other);
        assert_eq!(shared.first_to_go(), Some(key(8)), "Keep::Spare keeps in the spare list");
    }

    /// A base whose deltas were all served stays while there is room: a daemon's next stream may ask for the same
    /// deltas, and before this each of them inflated the base again.
    #[test]
    fn a_released_base_stays_while_there_is_room() {
        let mut cache = DeltaCache::new(12);
        cache.put(key(1), blob(4), false);
        cache.put(key(2), blob(4), true);
        cache.release(key(2));
        assert!(cache.get(key(2)).is_some(), "room enough: still there");
        cache.release(key(2));
        cache.put(key(3), blob(4), false);
        assert_eq!(cache.bytes(), 12);
        cache.put(key(4), blob(4), false);
        assert!(cache.get(key(2)).is_none(), "released: evicted before the older entry 1");
        assert!(cache.get(key(1)).is_some());
    }

    /// The policy's decisions, one by one: a change to any of them is a change to what the cache holds, which
    /// otherwise shows only in benchmarks.
    #[test]
    fn policy_keeps_roots_waited_for_bases_and_every_fourth_tree() {
        let blob = Kind::Blob;
        assert_eq!(CachePolicy::root(blob, true, None, false), Keep::Other, "a chain root: the next walks start here");
        assert_eq!(CachePolicy::root(blob, true, Some(false), false), Keep::Other, "a root of the last delta");
        assert_eq!(CachePolicy::root(blob, true, Some(true), false), Keep::Wanted, "a root deltas still wait for");
        assert_eq!(CachePolicy::root(blob, false, Some(true), false), Keep::Wanted, "a whole object deltas wait for");
        assert_eq!(CachePolicy::root(blob, false, Some(false), true), Keep::No, "a whole object nothing is built on");
        assert_eq!(CachePolicy::root(blob, false, None, false), Keep::No, "a whole blob asked for, random order");
        assert_eq!(CachePolicy::root(blob, false, None, true), Keep::Other, "a whole blob asked for, in order");
        assert_eq!(CachePolicy::root(Kind::Tree, false, None, true), Keep::No, "trees keep every 4th link instead");
        assert_eq!(CachePolicy::served(Kind::Blob, Some(true), false), Keep::Wanted, "a served delta deltas wait for");
        assert_eq!(CachePolicy::served(Kind::Blob, Some(false), true), Keep::No, "a served delta nothing waits for");
        assert_eq!(CachePolicy::served(Kind::Blob, None, true), Keep::Spare, "bases not known, a stream in order");
        assert_eq!(CachePolicy::served(Kind::Blob, None, false), Keep::No, "bases not known, random order");
        assert_eq!(CachePolicy::served(Kind::Tree, None, true), Keep::No, "trees keep every 4th link instead");
        assert!(CachePolicy::deltas(Kind::Blob, true), "the deltas of a walk from a cached base: walked again");
        assert!(!CachePolicy::deltas(Kind::Blob, false), "the deltas of a cold walk");
        assert!(!CachePolicy::deltas(Kind::Tree, true), "a tree's walk begins at a kept link: short, and done");
        assert_eq!(CachePolicy::link(Kind::Tree, 8), Keep::Other, "every 4th link of a chain of trees");
        assert_eq!(CachePolicy::link(Kind::Commit, 4), Keep::Other);
        assert_eq!(CachePolicy::link(Kind::Tree, 6), Keep::No);
        assert_eq!(CachePolicy::link(Kind::Blob, 4), Keep::No, "blobs: only roots and waited-for bases");
        assert!(CachePolicy::release_base(false), "the last delta waiting for a base was served");
        assert!(!CachePolicy::release_base(true), "deltas still wait for the base");
    }
}
