//! Turning a pack entry into an object, in named steps: [`Store::walk_to_base`] follows the delta chain down
//! (iteratively, so any depth is safe for the stack) to an object that is cached or stored whole, with
//! [`Store::find_ref_base`] finding REF_DELTA bases; [`Store::apply_chain`] applies the deltas back up. What the
//! delta-base cache keeps on the way is [`CachePolicy`]'s decision; [`ChainBudget`] caps the bytes one read may
//! inflate and produce.
use std::sync::Arc;

use gix_pack::data::Entry;
use gix_pack::data::entry::Header;

use super::cache::{CachePolicy, Keep};
use crate::store::locate::{EntryKey, Pack};
use crate::store::{Damage, Data, Location, Object, ReadError, Resolver, Store, StoreOptions, delta, oid};

/// Finds a delta chain that comes back to an entry it passed (Brent's algorithm): it remembers one entry of the
/// walk and compares each next one with it, moving the remembered entry forward at every power of two. A valid
/// chain never passes an entry twice, so no depth is refused (git reads chains of any depth, and older gits and
/// other tools wrote deeper ones than git's 4,095); a cycle is found within three times the links that lead into
/// it and go around it, so the walk of a damaged pack holds no more links than that.
pub(in crate::store) struct CycleCheck {
    remembered: EntryKey,
    power: usize,
    steps: usize,
}

impl CycleCheck {
    pub(in crate::store) fn new(start: EntryKey) -> Self {
        CycleCheck { remembered: start, power: 1, steps: 0 }
    }

    /// Notes the next entry of the walk; true if the walk has been there before.
    pub(in crate::store) fn comes_back(&mut self, next: EntryKey) -> bool {
        if next == self.remembered {
            return true;
        }
        self.steps += 1;
        if self.steps == self.power {
            (self.remembered, self.power, self.steps) = (next, self.power * 2, 0);
        }
        false
    }
}

/// Requests in a row, on one resolver, at increasing offsets of one pack that show a stream reading in pack order.
/// Random order gives such a run once in 16! streams; the engine hands a resolver 16 consecutive requests at a time,
/// so this is about the first batch.
const PACK_ORDER_RUN: u32 = 16;

/// Notices a stream that reads a pack in pack order (`git cat-file --batch-all-objects --unordered`, the mission's
/// pipeline): there every base comes before the deltas built on it, so the pack's delta bases are worth knowing at
/// once, as `index-pack` knows them, rather than after the warm-up that keeps short streams from paying for the
/// scan. Knowing them, a base is kept until its last delta is served, and each is resolved once for all its
/// children (small-A, every blob: 225k delta applications before, see benches/README.md).
#[derive(Debug, Default)]
pub(in crate::store) struct PackOrder {
    last: Option<EntryKey>,
    run: u32,
}

impl PackOrder {
    /// Notes a read of the entry `key`; true once, when the run of reads in pack order reaches [`PACK_ORDER_RUN`].
    pub(in crate::store) fn note(&mut self, key: EntryKey) -> bool {
        let onward = self.last.is_some_and(|last| last.pack == key.pack && last.offset < key.offset);
        self.run = if onward { self.run.saturating_add(1) } else { 1 };
        self.last = Some(key);
        self.run == PACK_ORDER_RUN
    }
}

/// A delta entry waiting for its base.
struct Link {
    /// Its pack, in [`Walk::packs`].
    pack: usize,
    offset: u64,
    entry: Entry,
}

/// The deltas a walk passed, the object asked for first, and the packs they are in (usually one). Links name
/// their pack by its place here rather than holding an `Arc` each: two resolver threads cloning and dropping the
/// same pack's `Arc` at every link of every chain fought over its counter's cache line.
struct Walk {
    packs: Vec<Arc<Pack>>,
    links: Vec<Link>,
}

impl Walk {
    /// The place of `pack` in `packs`, added if it is not the last one there.
    fn place(&mut self, pack: &Arc<Pack>) -> usize {
        if !self.packs.last().is_some_and(|last| Arc::ptr_eq(last, pack)) {
            self.packs.push(Arc::clone(pack));
        }
        self.packs.len() - 1
    }
}

/// The object a walk down a chain ended on.
struct Base {
    object: Object,
    /// Its pack entry (the pack by its place in [`Walk::packs`]); none for a loose object (a REF_DELTA base in no
    /// pack).
    entry: Option<(usize, u64)>,
    /// Found in the delta-base cache rather than inflated by this walk.
    cached: bool,
}

/// Where a REF_DELTA's base is.
enum RefBase {
    Packed(Arc<Pack>, u64),
    Loose(Object),
}

/// The bytes one read may inflate and produce along its chain ([`StoreOptions::max_chain_bytes`]), so that a
/// chain of small deltas that each declare a huge result cannot make one request copy terabytes.
struct ChainBudget {
    produced: u64,
    limit: u64,
    /// The largest object: a larger size is refused as `TooLarge` by the step that would allocate it.
    object_limit: u64,
}

impl ChainBudget {
    fn new(options: &StoreOptions) -> Self {
        let object_limit = options.max_object_size;
        // Never less than one delta of the largest size on a base of the largest size needs.
        let limit = options.max_chain_bytes.max(object_limit.saturating_mul(3));
        ChainBudget { produced: 0, limit, object_limit }
    }

    fn charge(&mut self, bytes: u64) -> Result<(), Damage> {
        if bytes > self.object_limit {
            return Ok(()); // refused as `TooLarge` by the step that would allocate it
        }
        self.produced = self.produced.saturating_add(bytes);
        if self.produced > self.limit { Err(Damage::ChainTooLarge { limit: self.limit }) } else { Ok(()) }
    }
}

/// Damage at the entry at `offset` of `pack`, reading `id`.
pub(in crate::store) fn damaged(id: &oid, pack: &Pack, offset: u64, damage: Damage) -> ReadError {
    ReadError { oid: id.to_owned(), location: Location::Pack { path: pack.pack_path.clone(), offset }, damage }
}

impl Store {
    /// Reads the object `id` whose entry starts at `offset` in `pack`.
    pub(in crate::store) fn read_packed(
        &self,
        id: &oid,
        pack: &Arc<Pack>,
        offset: u64,
        resolver: &mut Resolver,
    ) -> Result<Object, ReadError> {
        Pack::note_read(pack);
        if resolver.pack_order.note(pack.key(offset)) {
            Pack::start_base_scan(pack);
        }
        let mut budget = ChainBudget::new(&self.options);
        let (base, walk) = self.walk_to_base(id, pack, offset, resolver, &mut budget)?;
        if let (Some((at, offset)), false) = (base.entry, base.cached) {
            let pack = &walk.packs[at];
            let keep = CachePolicy::root(!walk.links.is_empty(), pack.is_delta_base(offset));
            resolver.cache.keep(pack.key(offset), &base.object, keep);
            if keep == Keep::No {
                resolver.hold_last_whole(pack.key(offset), &base.object);
            }
        }
        self.apply_chain(id, base, walk, resolver, &mut budget)
    }

    /// Follows bases down from the entry at `offset` until one is in the delta-base cache or is not a delta;
    /// returns it and the deltas above it, the object asked for first.
    fn walk_to_base(
        &self,
        id: &oid,
        pack: &Arc<Pack>,
        offset: u64,
        resolver: &mut Resolver,
        budget: &mut ChainBudget,
    ) -> Result<(Base, Walk), ReadError> {
        let mut walk = Walk { packs: vec![Arc::clone(pack)], links: Vec::new() };
        let (mut at, mut offset) = (0, offset);
        let mut cycle = CycleCheck::new(pack.key(offset));
        loop {
            let pack = &walk.packs[at];
            let here = Some((at, offset));
            if let Some(object) = resolver.cache.get(pack.key(offset)) {
                return Ok((Base { object, entry: here, cached: true }, walk));
            }
            // As if inflated now: kept in the cache as any root is.
            if let Some(object) = resolver.take_last_whole(pack.key(offset)) {
                return Ok((Base { object, entry: here, cached: false }, walk));
            }
            let entry = pack.entry(offset).map_err(|d| damaged(id, pack, offset, d))?;
            let base = match entry.header {
                Header::OfsDelta { base_distance } => match entry.checked_base_pack_offset(base_distance) {
                    Some(base) => (at, base),
                    None => return Err(damaged(id, pack, offset, Damage::BadBaseOffset)),
                },
                Header::RefDelta { base_id } => match self.find_ref_base(pack, &base_id) {
                    Ok(RefBase::Packed(base_pack, base)) => (walk.place(&base_pack), base),
                    Ok(RefBase::Loose(object)) => {
                        walk.links.push(Link { pack: at, offset, entry });
                        return Ok((Base { object, entry: None, cached: false }, walk));
                    }
                    Err(damage) => return Err(damaged(id, pack, offset, damage)),
                },
                Header::Blob | Header::Tree | Header::Commit | Header::Tag => {
                    let object = self.inflate_whole(pack, &entry, resolver, budget);
                    let object = object.map_err(|d| damaged(id, pack, offset, d))?;
                    return Ok((Base { object, entry: here, cached: false }, walk));
                }
            };
            if cycle.comes_back(walk.packs[base.0].key(base.1)) {
                return Err(damaged(id, &walk.packs[at], offset, Damage::DeltaCycle));
            }
            walk.links.push(Link { pack: at, offset, entry });
            (at, offset) = base;
        }
    }

    /// Finds a REF_DELTA's base: in a pack ([`Store::ref_base`]), else loose.
    fn find_ref_base(&self, pack: &Arc<Pack>, base_id: &oid) -> Result<RefBase, Damage> {
        if let Some((pack, offset)) = self.ref_base(pack, base_id)? {
            return Ok(RefBase::Packed(pack.into_owned(), offset));
        }
        match self.find_loose(base_id) {
            Some(Ok((kind, data))) => Ok(RefBase::Loose(Object { kind, data: Data::new(data) })),
            Some(Err(damage)) => Err(damage),
            None => Err(Damage::BaseMissing(base_id.to_owned())),
        }
    }

    /// Inflates an entry that is not a delta.
    fn inflate_whole(
        &self,
        pack: &Pack,
        entry: &Entry,
        resolver: &mut Resolver,
        budget: &mut ChainBudget,
    ) -> Result<Object, Damage> {
        let kind = entry.header.as_kind().expect("an entry that is not a delta has an object kind");
        budget.charge(entry.decompressed_size)?;
        let data = pack.inflate(entry, &mut resolver.inflater, budget.object_limit)?;
        resolver.cache.count_inflated(data.len());
        Ok(Object { kind, data: Data::new(data) })
    }

    /// Applies the deltas of `walk` on `base`, the deepest first, and returns the last result: the object asked
    /// for. Results on the way up are kept as [`CachePolicy::link`] says; once the object is built, the cache may
    /// let its base go and keep it ([`CachePolicy`]).
    fn apply_chain(
        &self,
        id: &oid,
        base: Base,
        walk: Walk,
        resolver: &mut Resolver,
        budget: &mut ChainBudget,
    ) -> Result<Object, ReadError> {
        let Base { object: Object { kind, data: base_data }, entry: mut below, cached } = base;
        let keep_deltas = CachePolicy::deltas(kind, cached);
        let mut served_from = None;
        // The result below the next link: shared `Data` (the base, or a kept result), or a plain buffer.
        let (mut shared, mut built): (Data, Option<Vec<u8>>) = (base_data, None);
        let mut spare = std::mem::take(&mut resolver.scratch.result);
        let last = walk.links.len();
        for (depth, link) in (1..).zip(walk.links.iter().rev()) {
            let pack = &walk.packs[link.pack];
            let keep = if depth < last { CachePolicy::link(kind, depth) } else { Keep::No };
            // A result that leaves the walk (kept, or the object asked for) gets an allocation of its own size;
            // the others reuse the buffer of the result before last.
            let mut out = if depth == last || keep != Keep::No { Vec::new() } else { std::mem::take(&mut spare) };
            let below_data = built.as_deref().unwrap_or(&shared);
            let applied = self.apply_link(pack, link, below_data, keep_deltas, &mut out, resolver, budget);
            applied.map_err(|d| damaged(id, pack, link.offset, d))?;
            served_from = Some(below.replace((link.pack, link.offset)));
            if let Some(previous) = built.take() {
                spare = previous;
            }
            if keep == Keep::No {
                built = Some(out);
            } else {
                shared = Data::new(out);
                resolver.cache.keep(pack.key(link.offset), &Object { kind, data: shared.clone() }, keep);
            }
        }
        resolver.scratch.put_result(spare);
        let object = Object { kind, data: built.map_or(shared, Data::new) };
        if let Some(base) = served_from {
            if let Some((at, offset)) = base
                && CachePolicy::release_base(!walk.packs[at].delta_built_from(offset))
            {
                resolver.cache.release(walk.packs[at].key(offset));
            }
            let (at, offset) = below.expect("the object asked for is a pack entry");
            let pack = &walk.packs[at];
            let keep = CachePolicy::served(pack.is_delta_base(offset)).max(CachePolicy::link(kind, last));
            resolver.cache.keep(pack.key(offset), &object, keep);
        }
        Ok(object)
    }

    /// Applies one delta entry to `base` into `out`, the delta inflated (into the resolver's scratch buffer,
    /// unless `keep_delta` puts it in the cache of inflated deltas) or taken from that cache.
    #[allow(clippy::too_many_arguments)]
    fn apply_link(
        &self,
        pack: &Pack,
        link: &Link,
        base: &[u8],
        keep_delta: bool,
        out: &mut Vec<u8>,
        resolver: &mut Resolver,
        budget: &mut ChainBudget,
    ) -> Result<(), Damage> {
        budget.charge(link.entry.decompressed_size)?;
        let key = pack.key(link.offset);
        let limit = budget.object_limit;
        let cached = resolver.cache.get_delta(key);
        let kept = match (&cached, keep_delta) {
            (Some(_), _) => None,
            (None, true) => Some(pack.inflate(&link.entry, &mut resolver.inflater, limit)?),
            (None, false) => {
                let scratch = &mut resolver.scratch.delta;
                pack.inflate_into(&link.entry, &mut resolver.inflater, limit, scratch)?;
                None
            }
        };
        let delta = match (&cached, &kept) {
            (Some(delta), _) => &delta[..],
            (None, Some(delta)) => &delta[..],
            (None, None) => &resolver.scratch.delta[..],
        };
        if cached.is_none() {
            resolver.cache.count_inflated(delta.len());
        }
        // Counted before the result is allocated.
        budget.charge(delta::result_size(delta)?)?;
        delta::apply_into(base, delta, limit, out)?;
        resolver.scratch.trim_delta();
        if let Some(delta) = kept {
            resolver.cache.put_delta(key, Data::new(delta));
        }
        Ok(())
    }
}

/// Buffers a resolver reuses from one walk up a chain to the next ([`Resolver`]'s `scratch`).
#[derive(Debug, Default)]
pub(in crate::store) struct Scratch {
    /// The inflated delta being applied, when the cache does not keep it.
    delta: Vec<u8>,
    /// The result before last, free for the next.
    result: Vec<u8>,
}

/// A scratch buffer larger than this is let go once used: one big blob's chain should not leave an idle
/// resolver holding its size.
const SCRATCH_KEPT: usize = 1 << 20;

impl Scratch {
    fn put_result(&mut self, buffer: Vec<u8>) {
        self.result = if buffer.capacity() > SCRATCH_KEPT { Vec::new() } else { buffer };
    }

    fn trim_delta(&mut self) {
        if self.delta.capacity() > SCRATCH_KEPT {
            self.delta = Vec::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testpack::{Objects, Stored, chain, chain_of, delta, object_id};
    use crate::store::{Kind, ObjectId};

    const SHA1: gix_hash::Kind = gix_hash::Kind::Sha1;

    fn open(objects: &Objects) -> Store {
        Store::open(objects.path(), SHA1, StoreOptions::default())
    }

    /// The store's packs, newest first.
    fn packs(store: &Store) -> Vec<Arc<Pack>> {
        store.snapshots().iter().flat_map(|set| set.all_packs(&store.opener).cloned().collect::<Vec<_>>()).collect()
    }

    fn read(store: &Store, id: &ObjectId, resolver: &mut Resolver) -> Vec<u8> {
        let object = store.read(id, resolver).expect("intact").expect("present");
        assert_eq!(object.kind, Kind::Blob);
        object.data.to_vec()
    }

    /// Versions of a file, each the one before plus a line.
    fn versions(label: &str, count: usize) -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u8>> = vec![format!("{label} 0\n").into_bytes()];
        for k in 1..count {
            out.push([&out[k - 1][..], format!("{label} {k}\n").as_bytes()].concat());
        }
        out
    }

    fn slices(versions: &[Vec<u8>]) -> Vec<&[u8]> {
        versions.iter().map(Vec::as_slice).collect()
    }

    #[test]
    fn reads_ofs_and_ref_chains_in_any_order() {
        let objects = Objects::new();
        let (ofs, refs) = (versions("ofs", 6), versions("ref", 6));
        let ofs_entries = chain(&slices(&ofs), true);
        let ref_entries = chain(&slices(&refs), false);
        objects.add_pack("ofs", &ofs_entries);
        objects.add_pack("ref", &ref_entries);
        let store = open(&objects);
        let mut resolver = Resolver::new(1 << 20);
        for k in [5, 0, 3, 4, 1, 2] {
            assert_eq!(read(&store, &ofs_entries[k].0, &mut resolver), ofs[k]);
            assert_eq!(read(&store, &ref_entries[k].0, &mut resolver), refs[k]);
        }
    }

    #[test]
    fn a_cold_read_keeps_the_chain_root_and_not_the_intermediates() {
        let objects = Objects::new();
        let contents = versions("v", 4);
        let entries = chain(&slices(&contents), true);
        let (_, offsets) = objects.add_pack("a", &entries);
        let store = open(&objects);
        let pack = &packs(&store)[0];
        let resolver = &mut Resolver::new(1 << 20);
        assert_eq!(read(&store, &entries[3].0, resolver), contents[3]);
        let cache = resolver.cache().clone();
        assert!(cache.get(pack.key(offsets[0])).is_some(), "the root");
        for offset in &offsets[1..] {
            assert!(cache.get(pack.key(*offset)).is_none(), "not the intermediates nor the object ({offset})");
        }
        // A cold walk keeps no inflated delta: walked again, from the cached root, its deltas are inflated again
        // and now kept (the chain is one that is walked again), so a third walk inflates nothing.
        let inflated = cache.inflated_bytes();
        assert_eq!(read(&store, &entries[3].0, resolver), contents[3]);
        let delta_bytes: usize = entries[1..]
            .iter()
            .map(|(_, stored)| match stored {
                Stored::Ofs(_, delta) => delta.len(),
                _ => panic!("a chain of OFS deltas"),
            })
            .sum();
        assert_eq!(cache.inflated_bytes() - inflated, delta_bytes as u64, "the deltas again, not the root");
        let inflated = cache.inflated_bytes();
        assert_eq!(read(&store, &entries[3].0, resolver), contents[3]);
        assert_eq!(cache.inflated_bytes(), inflated, "a walk from a cached root kept its deltas");
    }

    /// A chain of trees keeps every 4th result of a walk (counted from the root) besides the root, so that the
    /// next read of a neighbouring version applies at most 4 deltas; a chain of blobs keeps only its root.
    #[test]
    fn a_cold_read_of_a_tree_keeps_every_fourth_link_of_its_chain() {
        let contents = versions("v", 11);
        for (kind, expected) in [(Kind::Tree, &[0, 4, 8][..]), (Kind::Blob, &[0][..])] {
            let objects = Objects::new();
            let entries = chain_of(kind, &slices(&contents), true);
            let (_, offsets) = objects.add_pack("a", &entries);
            let store = open(&objects);
            let pack = &packs(&store)[0];
            let resolver = &mut Resolver::new(1 << 20);
            let cache = resolver.cache().clone();
            let object = store.read(&entries[10].0, resolver).expect("intact").expect("present");
            assert_eq!((object.kind, object.data.to_vec()), (kind, contents[10].clone()));
            let kept: Vec<usize> = (0..=10).filter(|&k| cache.get(pack.key(offsets[k])).is_some()).collect();
            assert_eq!(kept, expected, "{kind}");
            if kind == Kind::Tree {
                // The next read of a version above the last kept link applies only the deltas above it.
                let inflated = cache.inflated_bytes();
                let object = store.read(&entries[9].0, resolver).expect("intact").expect("present");
                assert_eq!(object.data.to_vec(), contents[9]);
                let Stored::Ofs(_, delta) = &entries[9].1 else { panic!("a delta") };
                assert_eq!(cache.inflated_bytes() - inflated, delta.len() as u64, "one delta, on the kept 8th");
            }
        }
    }

    /// Pack order: a whole object, then the delta built on it. The whole object asked for by itself is not kept
    /// in the cache (nothing was built on it yet); before, the next request inflated it again. Its resolver now
    /// holds on to it, unless it is larger than the cache.
    #[test]
    fn a_whole_object_read_by_itself_is_held_for_the_delta_that_follows() {
        let objects = Objects::new();
        let contents = versions("v", 2);
        let entries = chain(&slices(&contents), true);
        objects.add_pack("a", &entries);
        let store = open(&objects);
        let Stored::Ofs(_, delta) = &entries[1].1 else { panic!("the second entry is a delta") };
        for (capacity, base_inflated) in [(1 << 20, 1), (contents[0].len() - 1, 2)] {
            let resolver = &mut Resolver::new(capacity);
            let cache = resolver.cache().clone();
            assert_eq!(read(&store, &entries[0].0, resolver), contents[0]);
            assert_eq!(read(&store, &entries[1].0, resolver), contents[1]);
            let inflated = (base_inflated * contents[0].len() + delta.len()) as u64;
            assert_eq!(cache.inflated_bytes(), inflated, "the base inflated {base_inflated} times");
        }
    }

    #[test]
    fn known_bases_are_kept_until_their_last_delta_is_served_then_go_first() {
        let objects = Objects::new();
        let contents = versions("v", 4);
        let mut entries = chain(&slices(&contents), true);
        // A second delta on v1.
        let other = [&contents[1][..], b"another 2\n"].concat();
        let other_delta = delta(contents[1].len(), contents[1].len(), b"another 2\n");
        entries.push((object_id(Kind::Blob, &other), Stored::Ofs(1, other_delta)));
        let (_, offsets) = objects.add_pack("a", &entries);
        let store = open(&objects);
        let pack = &packs(&store)[0];
        pack.index_delta_bases();
        let resolver = &mut Resolver::new(1 << 20);
        let cache = resolver.cache().clone();
        let cached = |k: usize| cache.get(pack.key(offsets[k])).is_some();

        read(&store, &entries[0].0, resolver);
        assert!(cached(0), "a whole object its delta waits for");
        read(&store, &entries[1].0, resolver);
        assert_eq!(cache.first_to_go(), Some(pack.key(offsets[0])), "its only delta was served: let go first");
        assert!(cached(1), "served, and two deltas wait for it");
        assert_eq!(read(&store, &entries[4].0, resolver), other);
        assert!(cached(1), "one of its deltas was served, the other still waits");
        read(&store, &entries[3].0, resolver);
        assert!(cached(1), "walking through v2 does not serve it: v1 still waits for that");
        assert!(!cached(2) && !cached(3) && !cached(4), "an intermediate, and objects nothing is built on");
        read(&store, &entries[2].0, resolver);
        assert_eq!(cache.first_to_go(), Some(pack.key(offsets[1])), "now its last delta was served");
    }

    #[test]
    fn ref_bases_in_another_pack_or_loose() {
        let objects = Objects::new();
        let contents = versions("v", 3);
        let ids: Vec<ObjectId> = contents.iter().map(|c| object_id(Kind::Blob, c)).collect();
        // v0 is loose, v1 a delta on it in one pack, v2 a delta on v1 in another pack.
        assert_eq!(objects.add_loose(Kind::Blob, &contents[0]), ids[0]);
        let on = |k: usize| delta(contents[k - 1].len(), contents[k - 1].len(), &contents[k][contents[k - 1].len()..]);
        objects.add_pack("one", &[(ids[1], Stored::Ref(ids[0], on(1)))]);
        objects.add_pack("two", &[(ids[2], Stored::Ref(ids[1], on(2)))]);
        let store = open(&objects);
        let mut resolver = Resolver::new(1 << 20);
        for k in [2, 1, 0] {
            assert_eq!(read(&store, &ids[k], &mut resolver), contents[k]);
        }
    }

    /// A delta on a loose base, that another delta is built on: serving it does not spend its own count (it
    /// was counted as built from itself), so it stays in the cache for the delta that waits for it.
    #[test]
    fn a_delta_on_a_loose_base_is_kept_for_the_delta_that_waits_for_it() {
        let objects = Objects::new();
        let contents = versions("v", 3);
        let ids: Vec<ObjectId> = contents.iter().map(|c| object_id(Kind::Blob, c)).collect();
        objects.add_loose(Kind::Blob, &contents[0]);
        let on = |k: usize| delta(contents[k - 1].len(), contents[k - 1].len(), &contents[k][contents[k - 1].len()..]);
        let (_, offsets) =
            objects.add_pack("a", &[(ids[1], Stored::Ref(ids[0], on(1))), (ids[2], Stored::Ofs(0, on(2)))]);
        let store = open(&objects);
        let pack = &packs(&store)[0];
        pack.index_delta_bases();
        let resolver = &mut Resolver::new(1 << 20);
        assert_eq!(read(&store, &ids[1], resolver), contents[1]);
        assert!(resolver.cache().get(pack.key(offsets[0])).is_some(), "v2 waits for it");
        assert!(pack.is_delta_base(offsets[0]));
    }

    #[test]
    fn cycles_and_missing_bases_are_damage_at_the_entry() {
        let objects = Objects::new();
        let (me, one, two) =
            (object_id(Kind::Blob, b"me"), object_id(Kind::Blob, b"one"), object_id(Kind::Blob, b"two"));
        let nowhere = object_id(Kind::Blob, b"nowhere");
        let orphan = object_id(Kind::Blob, b"orphan");
        let small = || delta(2, 2, b"");
        let (path, offsets) = objects.add_pack(
            "bad",
            &[
                (me, Stored::Ref(me, small())),
                (one, Stored::Ref(two, small())),
                (two, Stored::Ref(one, small())),
                (orphan, Stored::Ref(nowhere, small())),
            ],
        );
        let store = open(&objects);
        let mut resolver = Resolver::new(1 << 20);
        for (id, cycle) in [(me, &offsets[..1]), (one, &offsets[1..3]), (two, &offsets[1..3])] {
            // Reading the object, and only its type and size (`--batch-check`), which walks the chain for the type.
            let errors =
                [store.read(&id, &mut resolver).expect_err("a cycle"), store.info(&id, false).expect_err("a cycle")];
            for err in errors {
                assert!(matches!(err.damage, Damage::DeltaCycle), "{err}");
                let Location::Pack { path: at_path, offset } = &err.location else { panic!("{err}") };
                assert!(at_path == &path && cycle.contains(offset), "an entry of the cycle: {err}");
            }
        }
        let err = store.read(&orphan, &mut resolver).expect_err("no base");
        assert!(matches!(err.damage, Damage::BaseMissing(id) if id == nowhere), "{err}");
        assert_eq!(err.location, Location::Pack { path, offset: offsets[3] });
    }

    #[test]
    fn a_run_of_reads_in_pack_order_is_noticed_once() {
        let key = |pack, offset| EntryKey { pack, offset };
        let mut order = PackOrder::default();
        let noticed: Vec<u64> = (1..=40).filter(|&offset| order.note(key(0, offset * 10))).collect();
        assert_eq!(noticed, [u64::from(PACK_ORDER_RUN)], "once, at the run's length");
        let mut order = PackOrder::default();
        for offset in 1..PACK_ORDER_RUN as u64 {
            assert!(!order.note(key(0, offset)));
        }
        assert!(!order.note(key(1, 100)), "another pack starts a new run");
        let mut order = PackOrder::default();
        for offset in (1..=u64::from(PACK_ORDER_RUN) * 2).rev() {
            assert!(!order.note(key(0, offset)), "backwards is not pack order");
        }
        let mut order = PackOrder::default();
        for _ in 0..PACK_ORDER_RUN * 2 {
            assert!(!order.note(key(0, 5)), "the same entry again is not pack order");
        }
    }

    /// A stream in pack order: its 16th read starts the base scan, long before the read count would.
    #[test]
    fn reads_in_pack_order_start_the_base_scan_at_once() {
        let objects = Objects::new();
        let contents: Vec<Vec<u8>> = (0..PACK_ORDER_RUN + 1).map(|k| format!("blob {k}\n").into_bytes()).collect();
        let mut entries = chain(&slices(&versions("v", 2)), true);
        entries.extend(contents.iter().map(|c| (object_id(Kind::Blob, c), Stored::Whole(Kind::Blob, c.clone()))));
        let (_, offsets) = objects.add_pack("a", &entries);
        let store = open(&objects);
        let resolver = &mut Resolver::new(1 << 20);
        for (id, _) in &entries[2..2 + PACK_ORDER_RUN as usize - 1] {
            read(&store, id, resolver);
        }
        let pack = &packs(&store)[0];
        assert!(!pack.scan_started_for_tests(), "not before the run is long enough");
        read(&store, &entries[2 + PACK_ORDER_RUN as usize - 1].0, resolver);
        for _ in 0..1000 {
            if pack.is_delta_base(offsets[0]) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("the scan did not run");
    }

    #[test]
    fn the_bytes_of_one_chain_are_capped() {
        let options = StoreOptions { max_object_size: 10, max_chain_bytes: 25, ..StoreOptions::default() };
        let mut budget = ChainBudget::new(&options);
        assert_eq!(budget.limit, 30, "never less than a delta and its base of the largest size need");
        assert!(budget.charge(11).is_ok(), "too large for one object: refused where it would be allocated");
        for _ in 0..3 {
            assert!(budget.charge(10).is_ok());
        }
        assert!(matches!(budget.charge(1), Err(Damage::ChainTooLarge { limit: 30 })));
    }

    /// Walks `next` from `start` until it leaves the entries (None) or `CycleCheck` stops it; the links taken.
    fn walk(start: u64, next: impl Fn(u64) -> Option<u64>) -> Result<usize, usize> {
        let mut cycle = CycleCheck::new(EntryKey { pack: 0, offset: start });
        let (mut at, mut links) = (start, 0);
        while let Some(base) = next(at) {
            if cycle.comes_back(EntryKey { pack: 0, offset: base }) {
                return Err(links);
            }
            (at, links) = (base, links + 1);
        }
        Ok(links)
    }

    #[test]
    fn valid_chains_of_any_depth_pass() {
        assert_eq!(walk(100_000, |at| at.checked_sub(1)), Ok(100_000));
        assert_eq!(walk(0, |_| None), Ok(0));
    }

    #[test]
    fn cycles_are_found_soon_after_they_close() {
        assert_eq!(walk(7, Some), Err(0), "an entry based on itself");
        assert_eq!(walk(1, |at| Some(3 - at)), Err(2), "two entries based on each other");
        // A tail of 1,000 links into a cycle of 5,001: found once the walk has gone round, within three times
        // the links that lead into the cycle and go around it.
        let next = |at: u64| Some(if at == 0 { 5_000 } else { at - 1 });
        let links = walk(6_000, next).expect_err("a cycle");
        assert!((6_001..3 * 6_001).contains(&links), "{links}");
    }
}
