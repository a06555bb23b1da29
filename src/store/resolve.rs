//! Turning a pack entry into an object: walk the delta chain down to its base (iteratively, so any depth is
//! safe for the stack), then apply the deltas back up, keeping the chain's root in the delta-base cache for the
//! chains that start from it next, and the object asked for if deltas still wait for it. Intermediates are not
//! kept (git keeps them): rebuilding one costs a few copies, and keeping them all pushes out the roots.
use std::sync::Arc;

use gix_pack::data::entry::Header;

use super::pack::Pack;
use super::{Damage, Data, Location, Object, ReadError, Resolver, Store, delta, oid};

/// Longer chains than this are refused as damage (a REF_DELTA cycle never ends otherwise). git's
/// pack-objects caps `--depth` at 4095; this leaves room for any pack git writes.
pub const MAX_DELTA_CHAIN: usize = 8192;

/// A delta entry waiting for its base.
struct Link {
    pack: Arc<Pack>,
    offset: u64,
    entry: gix_pack::data::Entry,
}

impl Store {
    /// Reads the object whose entry starts at `offset` in `pack`.
    pub(super) fn read_packed(
        &self,
        id: &oid,
        pack: &Arc<Pack>,
        offset: u64,
        resolver: &mut Resolver,
    ) -> Result<Object, ReadError> {
        let limit = self.options.max_object_size;
        // Bytes this read has inflated and produced so far, against `max_chain_bytes` (never less than one
        // delta of the largest size on a base of the largest size needs).
        let chain_limit = self.options.max_chain_bytes.max(limit.saturating_mul(3));
        let mut produced = 0u64;
        let mut charge = |bytes: u64| -> Result<(), Damage> {
            if bytes > limit {
                return Ok(()); // refused as `TooLarge` by the step that would allocate it
            }
            produced = produced.saturating_add(bytes);
            if produced > chain_limit { Err(Damage::ChainTooLarge { limit: chain_limit }) } else { Ok(()) }
        };
        Pack::note_read(pack);
        let mut chain: Vec<Link> = Vec::new();
        let mut pack = Arc::clone(pack);
        let mut offset = offset;
        let damaged = |pack: &Pack, offset: u64, damage: Damage| ReadError {
            oid: id.to_owned(),
            location: Location::Pack { path: pack.pack_path.clone(), offset },
            damage,
        };

        // Down: follow bases until one is cached or stored whole.
        let (kind, mut data, cached) = loop {
            if let Some((kind, data)) = resolver.cache.get((pack.id, offset)) {
                break (kind, data, true);
            }
            let entry = pack.entry(offset).map_err(|d| damaged(&pack, offset, d))?;
            let base = match entry.header {
                Header::OfsDelta { base_distance } => {
                    let base = entry.checked_base_pack_offset(base_distance);
                    let base = base.ok_or_else(|| damaged(&pack, offset, Damage::BadBaseOffset))?;
                    (Arc::clone(&pack), base)
                }
                Header::RefDelta { base_id } => match pack.lookup(&base_id) {
                    Some(base) => (Arc::clone(&pack), base),
                    None => match self.find_packed(&base_id) {
                        Some(found) => found,
                        None => {
                            // The base may be loose; then the chain ends here with it as the base.
                            let loose = self.find_loose(&base_id);
                            let loose = loose.ok_or_else(|| damaged(&pack, offset, Damage::BaseMissing(base_id)))?;
                            let (kind, data) = loose.map_err(|d| damaged(&pack, offset, d))?;
                            chain.push(Link { pack: Arc::clone(&pack), offset, entry });
                            break (kind, Arc::new(data), true);
                        }
                    },
                },
                Header::Blob | Header::Tree | Header::Commit | Header::Tag => {
                    let kind = entry.header.as_kind().expect("a base entry has an object kind");
                    charge(entry.decompressed_size).map_err(|d| damaged(&pack, offset, d))?;
                    let data = pack.inflate(&entry, &mut resolver.inflater, limit);
                    let data = data.map_err(|d| damaged(&pack, offset, d))?;
                    resolver.cache.count_inflated(data.len());
                    break (kind, Arc::new(data), false);
                }
            };
            chain.push(Link { pack: Arc::clone(&pack), offset, entry });
            if chain.len() > MAX_DELTA_CHAIN {
                return Err(damaged(&pack, offset, Damage::ChainTooDeep));
            }
            (pack, offset) = base;
        };

        // The base is worth keeping only if deltas are built on it: the ones of this chain, or (once the pack
        // knows its bases) later ones.
        let wanted = pack.is_delta_base(offset);
        if !cached && (!chain.is_empty() || wanted) {
            resolver.cache.put((pack.id, offset), kind, Arc::clone(&data), wanted);
        }

        // Up: apply each delta to the result so far; return the last.
        let (mut base_pack, mut base_offset) = (pack, offset);
        while let Some(link) = chain.pop() {
            let at_link = |d: Damage| damaged(&link.pack, link.offset, d);
            charge(link.entry.decompressed_size).map_err(at_link)?;
            let key = (link.pack.id, link.offset);
            let delta = match resolver.cache.get_delta(key) {
                Some(delta) => delta,
                None => {
                    let delta = link.pack.inflate(&link.entry, &mut resolver.inflater, limit).map_err(at_link)?;
                    resolver.cache.count_inflated(delta.len());
                    let delta = Data::new(delta);
                    resolver.cache.put_delta(key, Arc::clone(&delta));
                    delta
                }
            };
            // Counted before the result is allocated.
            charge(delta::result_size(&delta).map_err(|d| at_link(d.into()))?).map_err(at_link)?;
            let result = delta::apply(&data, &delta, limit).map_err(|d| damaged(&link.pack, link.offset, d.into()))?;
            data = Data::new(result);
            // Once every delta of the pack built on a base has been served, the base has done its job. Only the
            // object asked for counts as served: walking through a delta to reach another one above it does not
            // serve it, and in random order such walks would spend a root's count long before its deltas are
            // asked for, and drop it from the cache.
            if chain.is_empty() && base_pack.delta_built_from(base_offset) {
                resolver.cache.remove((base_pack.id, base_offset));
            }
            // Keep the object asked for if deltas still wait for it, but not the intermediates of the walk: git
            // keeps them, and in random order they push the roots out of the cache for nothing (a root costs a
            // whole inflate, an intermediate a few copies). 100,000 random ids: 5.1 s instead of 6.8 s, pack and
            // history order unchanged (median of 3, alternating).
            let wanted = link.pack.is_delta_base(link.offset);
            if chain.is_empty() && wanted {
                resolver.cache.put((link.pack.id, link.offset), kind, Arc::clone(&data), wanted);
            }
            (base_pack, base_offset) = (Arc::clone(&link.pack), link.offset);
        }
        Ok(Object { kind, data })
    }
}
