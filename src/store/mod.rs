//! The object database, read-only and shared by every thread: packs (gix-pack index + mapped data), loose
//! objects and alternates, with a per-thread [`Resolver`] holding the delta-base cache and inflater.
//!
//! Lookup order is git's: in each object directory, the multi-pack-index, then every pack it does not cover
//! (newest pack first); then loose objects. A miss rescans `objects/pack` once, since a `git repack` may have run
//! meanwhile; packs that were already mapped stay readable even after their files are deleted. Opening a
//! repository reads nothing of its packs, as git does: `objects/pack` is listed at the first lookup, a pack's index
//! is mapped (and checked as git checks it, reading no table whose length is the object count) when a lookup first
//! reaches it, and its data when an object is first read from it.

mod data;
mod decode;
mod error;
mod locate;
mod read;
#[cfg(test)]
mod testpack;

pub(crate) use decode::delta;
pub use error::{Damage, IndexError, Location, MidxError, PackError, ReadError};
pub(crate) use locate::alternates::entries as alternate_entries;
pub(crate) use locate::{PrefixMatch, Replacements, Run, WalkOrder};
pub(crate) use read::cache;
pub(crate) use read::{Info, Place};

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex, Once, RwLock};
use std::time::SystemTime;

pub use gix_hash::{ObjectId, oid};
pub use gix_object::Kind;

use cache::SharedCache;
use decode::Inflater;
use locate::{Copy, EntryKey, Pack, PackOpener, PackSet, alternates, loose};

pub use data::Data;
use read::Want;
pub use read::{Answer, BigBlob, DEFAULT_BIG_FILE_THRESHOLD, PieceError};

/// An object read from the store.
#[derive(Debug, Clone)]
pub struct Object {
    pub kind: Kind,
    pub data: Data,
}

#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Largest object (or delta result) we agree to allocate.
    pub max_object_size: u64,
    /// Most bytes that reading one object may inflate and produce along its delta chain (every delta and every
    /// intermediate result counted), so that a chain of small deltas that each declare a huge result cannot make
    /// one request copy terabytes. Results taken from the delta-base cache are not counted again.
    pub max_chain_bytes: u64,
    /// Replace refs to apply to every read (empty when they are turned off).
    pub replacements: Replacements,
    /// `GIT_ALTERNATE_OBJECT_DIRECTORIES`: more object directories, after those of `objects/info/alternates`.
    pub alternate_object_directories: Option<std::ffi::OsString>,
    /// `core.bigFileThreshold`: blobs stored whole in a pack and larger than this are answered in pieces
    /// ([`Store::read_for_answer`]).
    pub big_file_threshold: u64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            max_object_size: DEFAULT_MAX_OBJECT_SIZE,
            max_chain_bytes: DEFAULT_MAX_CHAIN_BYTES,
            replacements: Replacements::default(),
            alternate_object_directories: None,
            big_file_threshold: DEFAULT_BIG_FILE_THRESHOLD,
        }
    }
}

/// `--max-object-size` by default: larger than any object a real repository holds.
pub const DEFAULT_MAX_OBJECT_SIZE: u64 = 4 << 30;
/// [`StoreOptions::max_chain_bytes`] by default: a 4,095-deep chain (git's deepest) of 8 MiB objects, or 8 chains
/// of the largest object; a few seconds of copying at worst.
pub const DEFAULT_MAX_CHAIN_BYTES: u64 = 32 << 30;

/// Scratch state for reading objects on one thread: the inflater and a handle on the delta-base cache, which
/// resolvers of one stream share.
pub struct Resolver {
    cache: SharedCache,
    inflater: Inflater,
    /// The last whole object this resolver inflated for a request and did not keep in the cache (`Keep::No`):
    /// in pack order the delta built on it is usually one of the next requests, which the engine hands to the
    /// same thread.
    last_whole: Option<(EntryKey, Object)>,
    /// Whether this resolver's reads follow pack order.
    pack_order: read::PackOrder,
    /// Buffers reused by every walk up a chain: the inflated delta being applied (unless the cache keeps it),
    /// and the result before last. A tree read applies about six deltas; one allocation each was a tenth of
    /// `ls`'s time.
    scratch: read::Scratch,
}

impl Resolver {
    /// A resolver with a cache of its own, capped at `delta_cache_bytes`.
    pub fn new(delta_cache_bytes: usize) -> Self {
        Resolver::sharing(SharedCache::new(delta_cache_bytes))
    }

    /// A resolver that uses (and fills) `cache`.
    pub(crate) fn sharing(cache: SharedCache) -> Self {
        Resolver {
            cache,
            inflater: Inflater::default(),
            last_whole: None,
            pack_order: read::PackOrder::default(),
            scratch: read::Scratch::default(),
        }
    }

    /// Holds `object`, inflated whole from the entry at `key` for a request and not kept in the cache, instead of
    /// the one held before; not one larger than the cache would hold, so that a huge blob is not held on to.
    fn hold_last_whole(&mut self, key: EntryKey, object: &Object) {
        if object.data.len() <= self.cache.capacity() {
            self.last_whole = Some((key, object.clone()));
        }
    }

    /// The object at `key`, if it is the last whole object this resolver kept for itself.
    fn take_last_whole(&mut self, key: EntryKey) -> Option<Object> {
        match self.last_whole.take() {
            Some((kept, object)) if kept == key => Some(object),
            last => {
                self.last_whole = last;
                None
            }
        }
    }

    pub(crate) fn cache(&self) -> &SharedCache {
        &self.cache
    }
}

struct ObjectDir {
    path: PathBuf,
    hash: gix_hash::Kind,
    packs: RwLock<Arc<PackSet>>,
    /// Modification time of `objects/pack` at the last scan; a rescan is only needed when it changed.
    scanned: Mutex<Option<SystemTime>>,
    /// Done once the directory was first scanned, by the first lookup (see [`ObjectDir::snapshot`]).
    first_scan: Once,
}

impl ObjectDir {
    /// The pack set as last scanned. The first call scans: as git lists `objects/pack` at its first lookup, not
    /// when it starts, a process that asks nothing lists nothing (and a scan opens no pack: see `packset.rs`).
    fn snapshot(&self) -> Arc<PackSet> {
        self.first_scan.call_once(|| self.rescan());
        self.current()
    }

    /// The pack set as last scanned, empty before the first scan.
    fn current(&self) -> Arc<PackSet> {
        Arc::clone(&self.packs.read().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// Rescans `objects/pack` if the directory changed since the last scan, and publishes a new pack set if the
    /// packs changed.
    fn rescan(&self) {
        let pack_dir = self.path.join("pack");
        let mut scanned = self.scanned.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mtime = std::fs::metadata(&pack_dir).and_then(|m| m.modified()).ok();
        if scanned.is_some() && *scanned == mtime {
            return;
        }
        *scanned = mtime;
        if let Some(next) = PackSet::rescan(&self.current(), &pack_dir, self.hash) {
            *self.packs.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(next);
        }
    }
}

/// A pack (borrowed when it is the one asked about) and an entry's offset in it.
type PackedAt<'p> = (Cow<'p, Arc<Pack>>, u64);

pub struct Store {
    hash: gix_hash::Kind,
    dirs: Vec<ObjectDir>,
    opener: PackOpener,
    options: StoreOptions,
}

impl Store {
    /// Opens the object directory and its alternates. Their packs are listed at the first lookup, and each opened
    /// when a lookup first reaches it.
    pub fn open(objects_dir: &Path, hash: gix_hash::Kind, options: StoreOptions) -> Store {
        let dirs = alternates::object_dirs(objects_dir, options.alternate_object_directories.as_deref())
            .into_iter()
            .map(|path| ObjectDir {
                path,
                hash,
                packs: RwLock::default(),
                scanned: Mutex::new(None),
                first_scan: Once::new(),
            })
            .collect();
        let opener = PackOpener { hash, next_id: Arc::new(AtomicU32::new(0)) };
        Store { hash, dirs, opener, options }
    }

    pub fn object_hash(&self) -> gix_hash::Kind {
        self.hash
    }

    /// Lets the pages of every mapped index and pack leave this process's resident set; they stay in the page
    /// cache, and the next lookups fault them back in. For a repository no client reads now (`serve --root`).
    pub(crate) fn release_resident(&self) {
        self.dirs.iter().for_each(|dir| dir.current().release_resident());
    }

    /// Number of packs currently mapped, over all object directories.
    pub(crate) fn pack_count(&self) -> usize {
        self.dirs.iter().map(|dir| dir.current().opened_count()).sum()
    }

    /// Reads an object, or its replacement when a replace ref names one: `Ok(None)` if no object directory
    /// has it, an error if every copy found is damaged.
    pub fn read(&self, id: &oid, resolver: &mut Resolver) -> Result<Option<Object>, ReadError> {
        let target = self.replacement(id)?;
        if target == id {
            return self.read_exact(id, resolver);
        }
        match self.read_exact(&target, resolver)? {
            Some(object) => Ok(Some(object)),
            None => Err(replace_error(id, Damage::ReplacementMissing(target))),
        }
    }

    /// Does the object (or its replacement) exist? Looks at indexes and file names only: nothing is inflated.
    pub(crate) fn exists(&self, id: &oid) -> Result<bool, ReadError> {
        let target = self.replacement(id)?;
        let found = |store: &Store| {
            target == gix_hash::ObjectId::empty_tree(store.hash)
                || store.dirs.iter().any(|dir| {
                    dir.snapshot().copies(&target, &store.opener).next().is_some()
                        || loose::path(&dir.path, &target).is_file()
                })
        };
        let searched = self.snapshots();
        if found(self) {
            return Ok(true);
        }
        Ok(self.refreshed_since(&searched) && found(self))
    }

    /// The pack sets of every object directory as they are now.
    fn snapshots(&self) -> Vec<Arc<PackSet>> {
        self.dirs.iter().map(ObjectDir::snapshot).collect()
    }

    /// Rescans every object directory that changed; true if any pack set differs from `searched`, whether
    /// this call or another thread rescanned it (a reader that only looked at its own rescan would miss a
    /// pack another thread found first, while `git repack` deletes the loose copy).
    fn refreshed_since(&self, searched: &[Arc<PackSet>]) -> bool {
        for dir in &self.dirs {
            dir.rescan();
        }
        self.dirs.iter().zip(searched).any(|(dir, seen)| !Arc::ptr_eq(&dir.current(), seen))
    }

    /// Is `id` in any pack (not counting loose objects)?
    pub(crate) fn in_pack(&self, id: &oid) -> bool {
        self.dirs.iter().any(|dir| dir.snapshot().copies(id, &self.opener).next().is_some())
    }

    fn replacement(&self, id: &oid) -> Result<ObjectId, ReadError> {
        self.options.replacements.resolve(&id.to_owned()).map_err(|err| replace_error(id, err.into()))
    }

    /// Reads exactly `id`, without replace refs: from the packs, else loose, else (only if nothing was damaged and
    /// the packs changed since) from the packs once more, since a `git repack` may have moved it meanwhile from a
    /// loose file or an old pack into a new pack. Damage is reported only if no intact copy is found anywhere.
    pub fn read_exact(&self, id: &oid, resolver: &mut Resolver) -> Result<Option<Object>, ReadError> {
        let answer = self.read_exact_as(id, resolver, Want::Whole)?;
        Ok(answer.map(|answer| match answer {
            Answer::Whole(object) => object,
            Answer::Big(_) => unreachable!("only asked for whole objects"),
        }))
    }

    /// [`Store::read_exact`], or with [`Want::Answer`] a big blob as a [`BigBlob`] (see `big.rs`).
    fn read_exact_as(&self, id: &oid, resolver: &mut Resolver, want: Want) -> Result<Option<Answer>, ReadError> {
        if id == gix_hash::ObjectId::empty_tree(self.hash) {
            return Ok(Some(Answer::Whole(Object { kind: Kind::Tree, data: Data::default() })));
        }
        let mut first_error = None;
        let searched = self.snapshots();
        if let Some(answer) = self.read_from_packs(id, &searched, resolver, want, &mut first_error) {
            return Ok(Some(answer));
        }
        if let Some(object) = self.read_from_loose(id, &mut first_error) {
            return Ok(Some(Answer::Whole(object)));
        }
        if first_error.is_none() && self.refreshed_since(&searched) {
            let rescanned = self.snapshots();
            if let Some(answer) = self.read_from_packs(id, &rescanned, resolver, want, &mut first_error) {
                return Ok(Some(answer));
            }
        }
        if let Some(err) = first_error {
            return Err(err);
        }
        match self.dirs.iter().find_map(|dir| dir.snapshot().bad_indexes(&self.opener).next()) {
            // The object may be in the index that could not be read: not knowing is not absence.
            Some((path, why)) => {
                Err(ReadError { oid: id.to_owned(), location: Location::Index { path }, damage: Damage::Unusable(why) })
            }
            None => Ok(None),
        }
    }

    /// Reads `id` from the first pack of `sets` that has an intact copy; damage on the way is kept in
    /// `first_error` (if it is the first) and the search goes on.
    fn read_from_packs(
        &self,
        id: &oid,
        sets: &[Arc<PackSet>],
        resolver: &mut Resolver,
        want: Want,
        first_error: &mut Option<ReadError>,
    ) -> Option<Answer> {
        for copy in sets.iter().flat_map(|set| set.copies(id, &self.opener)) {
            let err = match copy {
                Copy::At(pack, offset) => match self.read_packed_as(id, pack, offset, resolver, want) {
                    Ok(answer) => return Some(answer),
                    Err(err) => err,
                },
                Copy::Damaged(path, why) => {
                    ReadError { oid: id.to_owned(), location: Location::Index { path }, damage: Damage::Unusable(why) }
                }
            };
            _ = first_error.get_or_insert(err);
        }
        None
    }

    /// Reads `id` as a loose object of the first object directory that has an intact copy; damage on the way is
    /// kept in `first_error` (if it is the first) and the search goes on.
    fn read_from_loose(&self, id: &oid, first_error: &mut Option<ReadError>) -> Option<Object> {
        for dir in &self.dirs {
            let path = loose::path(&dir.path, id);
            match loose::read(&path, self.options.max_object_size) {
                Ok(Some((kind, data))) => return Some(Object { kind, data: Data::new(data) }),
                Ok(None) => {}
                Err(damage) => {
                    _ = first_error.get_or_insert(ReadError {
                        oid: id.to_owned(),
                        location: Location::Loose { path },
                        damage,
                    })
                }
            }
        }
        None
    }

    /// Finds `id` in any pack, for REF_DELTA bases that live outside the delta's own pack.
    fn find_packed(&self, id: &oid) -> Option<(Arc<Pack>, u64)> {
        self.dirs.iter().find_map(|dir| {
            let set = dir.snapshot();
            set.find(id, &self.opener).map(|(pack, offset)| (Arc::clone(pack), offset))
        })
    }

    /// The first pack of the first object directory, if it is open, for [`Prefetcher`]: a resolver
    /// thread asks this for its next requests before it answers the current one. Scans and opens nothing.
    fn lookup_hint(&self) -> Option<LookupHint> {
        let dir = self.dirs.first()?;
        let set = dir.packs.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        set.first_open_pack().cloned().map(LookupHint)
    }

    /// Where the base of a REF_DELTA entry of `pack` is, in a pack: in `pack` first (git reads bases from the
    /// delta's own pack only; its index is small and, along a chain, hot), then in any pack.
    fn ref_base<'p>(&self, pack: &'p Arc<Pack>, base_id: &oid) -> Result<Option<PackedAt<'p>>, Damage> {
        if let Some(offset) = pack.lookup(base_id) {
            let offset = offset.map_err(|err| Damage::Unusable(Arc::new(err.into())))?;
            return Ok(Some((Cow::Borrowed(pack), offset)));
        }
        Ok(self.find_packed(base_id).map(|(base_pack, offset)| (Cow::Owned(base_pack), offset)))
    }

    /// Reads `id` as a loose object from any object directory (a REF_DELTA base may be loose).
    fn find_loose(&self, id: &oid) -> Option<Result<(Kind, Vec<u8>), Damage>> {
        self.dirs
            .iter()
            .find_map(|dir| loose::read(&loose::path(&dir.path, id), self.options.max_object_size).transpose())
    }
}

/// A pack whose index lookups may be started early: a hint only (a pack set rescanned since changes nothing but
/// which lines are fetched).
pub(crate) struct LookupHint(Arc<Pack>);

impl LookupHint {
    /// Starts fetching what the request for `id`, `ahead` requests after the current one (1 to [`Self::AHEAD`]),
    /// reads first; see [`locate::Pack::prefetch_lookup`].
    pub(crate) fn prefetch(&self, id: &oid, ahead: usize) {
        self.0.prefetch_lookup(id, ahead);
    }

    /// How many requests ahead [`Self::prefetch`] looks.
    pub(crate) const AHEAD: usize = 3;
}

/// A resolver thread's [`LookupHint`], taken at the first request it looks ahead for: the packs are listed and
/// opened by the stream's first lookup, not before.
#[derive(Default)]
pub(crate) struct Prefetcher(Option<LookupHint>);

impl Prefetcher {
    /// [`LookupHint::prefetch`] in `store`'s first pack, once it is open.
    pub(crate) fn prefetch(&mut self, store: &Store, id: &oid, ahead: usize) {
        if self.0.is_none() {
            self.0 = store.lookup_hint();
        }
        if let Some(hint) = &self.0 {
            hint.prefetch(id, ahead);
        }
    }
}

fn replace_error(id: &oid, damage: Damage) -> ReadError {
    ReadError { oid: id.to_owned(), location: Location::ReplaceRefs, damage }
}

/// The decoders behind the store, for the fuzz targets and their replay in tests (`cat_blobd::fuzzing`).
#[doc(hidden)]
pub(crate) mod fuzz_api {
    /// Decodes a whole loose object file (zlib of `<type> <size>\0<content>`), refusing sizes over `limit`.
    pub(crate) fn decode_loose(compressed: &[u8], limit: u64) -> Result<(super::Kind, Vec<u8>), super::Damage> {
        super::locate::loose::decode(compressed, limit)
    }

    /// Whether the prefix decoder answered for the zlib stream `input` (it panics when its answer for the
    /// first `max` bytes is not zlib's).
    pub(crate) fn inflate_prefix(input: &[u8], max: usize) -> bool {
        super::decode::inflate_prefix::check_against_zlib(input, max)
    }

    /// Every object's zlib stream: a pack entry's data up to the pack's end (as reads see it), a loose file.
    pub(crate) fn each_zlib_stream(store: &super::Store, mut each: impl FnMut(&[u8])) {
        store.for_each_object_unordered(|_, place| match place.0 {
            super::read::Where::Packed(pack, offset) => {
                if let Ok(data) = pack.entry(offset).and_then(|entry| pack.compressed(&entry)) {
                    each(data);
                }
            }
            super::read::Where::Loose(path) => each(&std::fs::read(path).expect("read a loose object")),
            super::read::Where::Virtual => {}
        });
    }
}

#[cfg(test)]
mod tests {
    use super::testpack::{Objects, Stored, chain, delta, object_id, set_mtime};
    use super::*;

    fn open(objects: &Objects) -> Store {
        Store::open(objects.path(), gix_hash::Kind::Sha1, StoreOptions::default())
    }

    #[test]
    fn a_pack_written_after_a_miss_is_found_by_the_rescan() {
        let objects = Objects::new();
        let store = open(&objects);
        let entries = chain(&[b"late\n"], true);
        let mut resolver = Resolver::new(1 << 20);
        assert!(store.read(&entries[0].0, &mut resolver).expect("no damage").is_none());
        objects.add_pack("late", &entries);
        let found = store.read(&entries[0].0, &mut resolver).expect("no damage").expect("found");
        assert_eq!(found.data.as_slice(), b"late\n");
        assert_eq!(store.pack_count(), 1);
    }

    #[test]
    fn damage_is_reported_only_when_no_intact_copy_exists() {
        let objects = Objects::new();
        let id = object_id(Kind::Blob, b"content\n");
        let nowhere = object_id(Kind::Blob, b"nowhere");
        let (path, offsets) = objects.add_pack("bad", &[(id, Stored::Ref(nowhere, delta(7, 7, b"\n")))]);
        let store = open(&objects);
        let mut resolver = Resolver::new(1 << 20);
        let err = store.read(&id, &mut resolver).expect_err("the only copy is damaged");
        assert_eq!(err.location, Location::Pack { path, offset: offsets[0] });
        objects.add_loose(Kind::Blob, b"content\n");
        let found = store.read(&id, &mut resolver).expect("an intact loose copy").expect("found");
        assert_eq!(found.data.as_slice(), b"content\n");
    }

    /// One pack per name, each holding one blob `in <name>\n`, the later ones newer.
    fn one_blob_packs(objects: &Objects, names: &[&str]) -> Vec<ObjectId> {
        let mut ids = Vec::new();
        for (n, name) in names.iter().enumerate() {
            let content = format!("in {name}\n");
            let entries = chain(&[content.as_bytes()], true);
            let (path, _) = objects.add_pack(name, &entries);
            set_mtime(&path, 1_700_000_000 + 60 * n as u64);
            ids.push(entries[0].0);
        }
        ids
    }

    fn read_blob(store: &Store, id: &ObjectId) -> Vec<u8> {
        let object = store.read(id, &mut Resolver::new(1 << 20)).expect("no damage").expect("found");
        object.data.to_vec()
    }

    /// Without a multi-pack-index, as git does: opening lists and opens nothing; a lookup opens the indexes it
    /// searches, newest pack first, up to the pack that has the object; a miss opens every one.
    #[test]
    fn a_lookup_opens_the_packs_it_searches_and_no_other() {
        let objects = Objects::new();
        let ids = one_blob_packs(&objects, &["old", "middle", "new"]);
        let store = open(&objects);
        assert_eq!(store.pack_count(), 0, "opening opens nothing");
        assert_eq!(read_blob(&store, &ids[2]), b"in new\n");
        assert_eq!(store.pack_count(), 1, "the newest pack is searched first");
        assert_eq!(read_blob(&store, &ids[1]), b"in middle\n");
        assert_eq!(store.pack_count(), 2);
        assert!(store.info(&object_id(Kind::Blob, b"nowhere"), false).expect("no damage").is_none());
        assert_eq!(store.pack_count(), 3, "a miss searched them all");
    }

    /// A multi-pack-index of version 2, whose pack names are in any order (what `git multi-pack-index compact`
    /// writes), is used as git 2.54 uses it: a miss is its answer alone, and an object opens only the pack that
    /// the midx names for it.
    #[test]
    fn a_version_2_multi_pack_index_is_used() {
        let objects = Objects::new();
        let names = ["a", "b", "c"];
        let ids = one_blob_packs(&objects, &names);
        objects.write_midx();
        objects.midx_to_version_2_reversed();
        let store = open(&objects);
        assert!(store.info(&object_id(Kind::Blob, b"nowhere"), false).expect("no damage").is_none());
        assert_eq!(store.pack_count(), 0, "the midx alone answered the miss");
        for (n, (id, name)) in ids.iter().zip(names).enumerate() {
            assert_eq!(read_blob(&store, id), format!("in {name}\n").as_bytes());
            assert_eq!(store.pack_count(), n + 1, "only the pack the midx names for {name}");
        }
    }

    /// Opening reads the midx, not the packs it covers: a pack is opened when an object is read from it.
    #[test]
    fn a_multi_pack_index_opens_only_the_packs_objects_are_read_from() {
        let objects = Objects::new();
        let (a, b) = (chain(&[b"in a\n"], true), chain(&[b"in b\n"], true));
        objects.add_pack("a", &a);
        objects.add_pack("b", &b);
        objects.write_midx();
        let store = open(&objects);
        assert_eq!(store.pack_count(), 0, "nothing opened yet");
        let mut resolver = Resolver::new(1 << 20);
        let found = store.read(&b[0].0, &mut resolver).expect("no damage").expect("found");
        assert_eq!(found.data.as_slice(), b"in b\n");
        assert_eq!(store.pack_count(), 1, "only the pack it was read from");
    }

    /// A pack under a midx that is there but damaged (its trailer no longer matches its index) is kept, so that a
    /// read reports the damage; only a pack that is gone counts as not found.
    #[test]
    fn a_damaged_pack_under_a_multi_pack_index_is_damage_not_absence() {
        let objects = Objects::new();
        let (a, b) = (chain(&[b"in a\n"], true), chain(&[b"in b\n"], true));
        let (path_a, _) = objects.add_pack("a", &a);
        objects.add_pack("b", &b);
        objects.write_midx();
        let mut bytes = std::fs::read(&path_a).expect("pack");
        *bytes.last_mut().expect("trailer") ^= 1;
        std::fs::write(&path_a, bytes).expect("write");
        let store = open(&objects);
        let mut resolver = Resolver::new(1 << 20);
        let err = store.read(&a[0].0, &mut resolver).expect_err("damaged, not missing");
        assert!(matches!(&err.damage, Damage::Unusable(why) if matches!(**why, PackError::ChecksumMismatch)), "{err}");
        std::fs::remove_file(&path_a).expect("remove");
        let store = open(&objects);
        assert!(store.read(&a[0].0, &mut resolver).expect("gone is not damage").is_none());
        assert!(store.read(&b[0].0, &mut resolver).expect("intact").is_some());
    }

    #[test]
    fn an_unreadable_index_makes_a_miss_an_error() {
        let objects = Objects::new();
        let idx = objects.path().join("pack/pack-broken.idx");
        std::fs::write(&idx, b"not an index").expect("write");
        let store = open(&objects);
        let err = store.read(&object_id(Kind::Blob, b"anything"), &mut Resolver::new(1 << 20)).expect_err("unsure");
        assert_eq!(err.location, Location::Index { path: idx });
        assert!(matches!(&err.damage, Damage::Unusable(why) if matches!(**why, PackError::Index(_))), "{err}");
    }
}
