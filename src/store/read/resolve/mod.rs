//! Turning a pack entry into an object, in named steps: [`Store::walk_to_base`] follows the delta chain down
//! (iteratively, so any depth is safe for the stack) to an object that is cached or stored whole, with
//! [`Store::find_ref_base`] finding REF_DELTA bases; [`Store::apply_chain`] applies the deltas back up. What the
//! delta-base cache keeps on the way is [`CachePolicy`]'s decision; [`ChainBudget`] caps the bytes one read may
//! inflate and produce.
use std::sync::Arc;

use gix_pack::data::Entry;
use gix_pack::data::entry::Header;

use super::cache::{CachePolicy, Keep};
use crate::store::decode::compose::Composed;
use crate::store::locate::{EntryKey, Pack};
use crate::store::{Damage, Data, Kind, Location, Object, ReadError, Resolver, Store, StoreOptions, delta, oid};

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
/// children (small-A, every blob: 225k delta applications before, see benches/README.md). Only reads of blobs
/// are noted ([`Store::read_packed`]): the trees of `ls` walks come in pack order too, a few at a time. Only a run
/// that reads most of the pack's entries starts the scan ([`Pack::reads_most_entries`]); a sample read in order
/// keeps its served blobs instead ([`CachePolicy::served`]).
#[derive(Debug, Default)]
pub(in crate::store) struct PackOrder {
    last: Option<EntryKey>,
    run: u32,
    /// The offset the current run began at.
    run_start: u64,
    /// Whether a run reached [`PACK_ORDER_RUN`] in this stream.
    seen: bool,
}

impl PackOrder {
    /// Notes a read of the entry `key`; true once, when the run of reads in pack order reaches [`PACK_ORDER_RUN`].
    pub(in crate::store) fn note(&mut self, key: EntryKey) -> bool {
        let onward = self.last.is_some_and(|last| last.pack == key.pack && last.offset < key.offset);
        if onward {
            self.run = self.run.saturating_add(1);
        } else {
            (self.run, self.run_start) = (1, key.offset);
        }
        self.last = Some(key);
        self.seen |= self.run == PACK_ORDER_RUN;
        self.run == PACK_ORDER_RUN
    }

    /// The bytes of the pack between one read of the current run and the next, on average.
    pub(in crate::store) fn spacing(&self) -> u64 {
        let last = self.last.map_or(self.run_start, |last| last.offset);
        (last - self.run_start) / u64::from(self.run.saturating_sub(1).max(1))
    }

    /// Whether the stream has read in pack order, [`PACK_ORDER_RUN`] reads in a row, at any time: a stream in pack
    /// order, or in history order (newest first), which a pack written by `pack-objects` mostly follows. Random
    /// order shows such a run once in 16! streams.
    pub(in crate::store) fn ordered(&self) -> bool {
        self.seen
    }

    /// Whether the stream is in a run of reads in pack order now. Reading the whole pack, each delta is applied
    /// about once (the bases are kept for their deltas), so the delta of a one-link walk is neither looked for
    /// nor kept in the cache of inflated deltas: its probes and insertions (a lock and up to four hash
    /// operations per link) bought nothing, and a kept delta cost an allocation where the scratch buffer costs
    /// none. Longer walks keep their deltas as in any order (`apply_chain`).
    pub(in crate::store) fn in_run(&self) -> bool {
        self.run >= PACK_ORDER_RUN
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
        let mut budget = ChainBudget::new(&self.options);
        let (base, walk) = self.walk_to_base(id, pack, offset, resolver, &mut budget)?;
        // Only blobs count towards a run in pack order: `ls` reads a path's trees root first, which in a pack
        // written by `pack-objects` (trees in traversal order) is 16 increasing offsets within a few requests,
        // and the scan that started then read every entry header of the pack beside the walks.
        if base.object.kind == Kind::Blob
            && resolver.pack_order.note(pack.key(offset))
            && pack.reads_most_entries(resolver.pack_order.spacing())
        {
            Pack::start_base_scan(pack);
        }
        if let (Some((at, offset)), false) = (base.entry, base.cached) {
            let pack = &walk.packs[at];
            let (kind, ordered) = (base.object.kind, resolver.pack_order.ordered());
            let keep = CachePolicy::root(kind, !walk.links.is_empty(), pack.deltas_waiting(offset), ordered);
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
            // An entry its pack knows is no delta base is not in the cache (only bases are kept, and served
            // objects that deltas wait for): the probe, a miss for most requests of a scan, is skipped.
            if !pack.known_not_base(offset)
                && let Some(object) = resolver.cache.get(pack.key(offset))
            {
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
        // A pack-order run over the whole pack applies each delta about once: a walk there is one link, from a
        // kept base, and its delta is neither looked for nor kept. A walk of several links is a stream that skips
        // most of the pack (a sample read in pack order): the links it passes are passed again by the next delta
        // read on them, as in any order (small-A, 20,000 blobs in pack order: 59 -> 49 MB inflated).
        let one_link_run = resolver.pack_order.in_run() && walk.links.len() == 1;
        let keep_deltas = if one_link_run { DeltaUse::Never } else { DeltaUse::of(kind, cached) };
        let mut served_from = None;
        // The result below the next link: shared `Data` (the base, or a kept result), or a plain buffer.
        let (mut shared, mut built): (Data, Option<Vec<u8>>) = (base_data, None);
        let mut spare = std::mem::take(&mut resolver.scratch.result);
        let last = walk.links.len();
        let compose = CachePolicy::compose(kind);
        resolver.scratch.composed.clear();
        for (depth, link) in (1..).zip(walk.links.iter().rev()) {
            let pack = &walk.packs[link.pack];
            let keep = if depth < last { CachePolicy::link(kind, depth) } else { Keep::No };
            let below_data = built.as_deref().unwrap_or(&shared);
            // A result nothing keeps is not built: its delta is composed with the next.
            if compose && depth < last && keep == Keep::No {
                let composed = Self::apply_link(pack, link, below_data, keep_deltas, None, resolver, budget);
                composed.map_err(|d| damaged(id, pack, link.offset, d))?;
                served_from = Some(below.replace((link.pack, link.offset)));
                if !resolver.scratch.composed.fragmented() {
                    continue;
                }
            }
            // A result that leaves the walk (kept, or the object asked for) gets an allocation of its own size;
            // the others reuse the buffer of the result before last.
            let mut out = if depth == last || keep != Keep::No { Vec::new() } else { std::mem::take(&mut spare) };
            if resolver.scratch.composed.fragmented() {
                let composed = &mut resolver.scratch.composed;
                composed.apply(below_data, &mut out).map_err(|d| damaged(id, pack, link.offset, d.into()))?;
                composed.clear();
            } else {
                let applied = Self::apply_link(pack, link, below_data, keep_deltas, Some(&mut out), resolver, budget);
                applied.map_err(|d| damaged(id, pack, link.offset, d))?;
                served_from = Some(below.replace((link.pack, link.offset)));
            }
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
            let waiting = pack.deltas_waiting(offset);
            let keep =
                CachePolicy::served(kind, waiting, resolver.pack_order.ordered()).max(CachePolicy::link(kind, last));
            resolver.cache.keep(pack.key(offset), &object, keep);
        }
        Ok(object)
    }

    /// Applies one delta entry to `base` into `out`, the delta inflated (into the resolver's scratch buffer,
    /// unless `keep_delta` puts it in the cache of inflated deltas) or taken from that cache. Without `out`, the
    /// delta is composed with those before it ([`Scratch::composed`]), which are applied with it once there is.
    #[inline(always)]
    fn apply_link(
        pack: &Pack,
        link: &Link,
        base: &[u8],
        keep_delta: DeltaUse,
        out: Option<&mut Vec<u8>>,
        resolver: &mut Resolver,
        budget: &mut ChainBudget,
    ) -> Result<(), Damage> {
        budget.charge(link.entry.decompressed_size)?;
        let key = pack.key(link.offset);
        let limit = budget.object_limit;
        let cached = if keep_delta == DeltaUse::Never { None } else { resolver.cache.get_delta(key) };
        let kept = match (&cached, keep_delta) {
            (Some(_), _) => None,
            (None, DeltaUse::Keep) => Some(pack.inflate(&link.entry, &mut resolver.inflater, limit)?),
            (None, DeltaUse::Never | DeltaUse::Probe) => {
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
        let composed = &mut resolver.scratch.composed;
        match out {
            None => composed.push(base.len(), delta, limit)?,
            Some(out) if !composed.is_empty() => {
                composed.push(base.len(), delta, limit)?;
                composed.apply(base, out)?;
                composed.clear();
            }
            Some(out) => delta::apply_into(base, delta, limit, out)?,
        }
        resolver.scratch.trim_delta();
        if let Some(delta) = kept {
            resolver.cache.put_delta(key, Data::new(delta));
        }
        Ok(())
    }
}

/// What a walk does with the inflated deltas of its links ([`CachePolicy::deltas`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeltaUse {
    /// Neither looked for nor kept: no delta of this kind is ever kept, so a lookup (a lock and a hash probe
    /// per link) could only miss.
    Never,
    /// Taken from the cache of inflated deltas if there, not kept.
    Probe,
    /// Taken from that cache, or kept there once inflated.
    Keep,
}

impl DeltaUse {
    fn of(kind: Kind, walk_began_cached: bool) -> DeltaUse {
        if !CachePolicy::deltas(kind, true) {
            DeltaUse::Never
        } else if CachePolicy::deltas(kind, walk_began_cached) {
            DeltaUse::Keep
        } else {
            DeltaUse::Probe
        }
    }
}

/// Buffers a resolver reuses from one walk up a chain to the next ([`Resolver`]'s `scratch`).
#[derive(Debug, Default)]
pub(in crate::store) struct Scratch {
    /// The inflated delta being applied, when the cache does not keep it.
    delta: Vec<u8>,
    /// The result before last, free for the next.
    result: Vec<u8>,
    /// The deltas of a walk whose results are not built ([`CachePolicy::compose`]).
    composed: Composed,
}

/// A scratch buffer larger than this is let go once used: one big blob's chain should not leave an idle
/// resolver holding its size.
const SCRATCH_KEPT: usize = 1 << 20;

impl Scratch {
    fn put_result(&mut self, buffer: Vec<u8>) {
        self.result = if buffer.capacity() > SCRATCH_KEPT { Vec::new() } else { buffer };
        if self.composed.capacity() > SCRATCH_KEPT {
            self.composed = Composed::default();
        }
    }

    fn trim_delta(&mut self) {
        if self.delta.capacity() > SCRATCH_KEPT {
            self.delta = Vec::new();
        }
    }
}

#[cfg(test)]
mod tests;
