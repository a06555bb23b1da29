//! Which of many ids, asked together, no pack index lists: one ordered pass over each index instead of a search
//! per id. A marks file of ten million marks asked ten million binary searches of a ten-million-object index, each
//! touching some twenty cache lines far apart (the whole import took as long as git's); sorted, the ids are merged
//! with each index in its own order, and consecutive ids land on neighbouring entries.
//!
//! gix-pack answers one id at a time (`multi_index::File::lookup`, `index::File::lookup`: a binary search each) and
//! has no ordered walk, so the walk is ours; it reads a multi-pack-index's ids through gix-pack's
//! `multi_index::File::oid_at_index`, and a pack's through our own `.idx` reader (see `pack_index.rs` for why).
//! What no index lists (loose objects, the empty tree, a pack written since, replaced objects) is left to
//! [`Store::exists`], id by id: in a repository that is packed those are few.
use std::cmp::Ordering;

use gix_hash::{ObjectId, oid};

use super::pack_index::compare_ids as compare;
use crate::store::Store;

/// Ids gathered before they are searched for (see [`Ids::merge`]).
const BATCH: usize = 4096;

impl Store {
    /// Of `count` ids in ascending order (`id_at(i)` is the `i`-th; equal ids may repeat), the positions, ascending,
    /// of those that no pack index of any object directory lists as [`Store::exists`] would find them. Every other
    /// id exists; one given back may exist all the same (loose, the empty tree, in a pack written since, or through
    /// a replace ref, which this does not follow): ask [`Store::exists`] about it.
    pub(crate) fn unlisted_in_packs<'a>(&self, count: usize, id_at: impl Fn(usize) -> &'a oid) -> Vec<usize> {
        let mut found = vec![false; count];
        // A replaced id exists if its replacement does: only `exists` follows the chain, so it is given back.
        let replacements = &self.options.replacements;
        let replaced: Vec<usize> = match replacements.is_empty() {
            true => Vec::new(),
            false => (0..count)
                .filter(|&at| matches!(replacements.resolve(&id_at(at).to_owned()), Ok(target) if target != id_at(at)))
                .collect(),
        };
        replaced.iter().for_each(|&at| found[at] = true);
        let mut left = count - replaced.len();
        let ids = Ids { count, id_at: &id_at };
        for dir in &self.dirs {
            let set = crate::store::snapshot(dir);
            for layer in set.layers() {
                if left > 0 {
                    let entries = Entries { len: layer.num_objects(), id_at: |at| layer.oid_at(at) };
                    left -= ids.merge(&entries, &mut found, |at| layer.hit_at(at, &self.opener).is_some());
                }
            }
            for pack in set.uncovered_packs() {
                if left > 0 {
                    let entries = Entries { len: pack.index.num_objects(), id_at: |at| pack.index.oid_at(at) };
                    left -= ids.merge(&entries, &mut found, |_| true);
                }
            }
        }
        let mut unlisted: Vec<usize> = (0..count).filter(|&at| !found[at]).chain(replaced).collect();
        unlisted.sort_unstable();
        unlisted
    }
}

/// The ids asked about, ascending.
struct Ids<'f, F> {
    count: usize,
    id_at: &'f F,
}

/// One index's sorted table of ids.
struct Entries<G> {
    len: u32,
    id_at: G,
}

impl<'a, F: Fn(usize) -> &'a oid> Ids<'_, F> {
    /// Sets `found` for each id not found yet that `entries` lists at a position `usable` accepts; returns how many.
    /// Each search starts where the last one ended and gallops (1, 2, 4, … entries ahead) before it bisects: a few
    /// ids in a big index cost a few short searches, as many ids as entries cost about one scan of the table.
    fn merge<'e, G: Fn(u32) -> &'e oid>(
        &self,
        entries: &Entries<G>,
        found: &mut [bool],
        usable: impl Fn(u32) -> bool,
    ) -> usize {
        let (mut newly, mut cursor, mut next) = (0, 0, 0);
        let mut batch: Vec<(usize, ObjectId)> = Vec::with_capacity(BATCH);
        while next < self.count && cursor < entries.len {
            // The ids are gathered first, a batch at a time: `id_at` may read them from all over a large table
            // (a marks file's lines, in the order of their ids), and in a loop of independent loads the CPU
            // overlaps the cache misses that the searches would wait for one by one (a third of a 10M-mark import).
            batch.clear();
            while next < self.count && batch.len() < BATCH {
                if !found[next] {
                    batch.push((next, (self.id_at)(next).to_owned()));
                }
                next += 1;
            }
            for (position, id) in &batch {
                cursor = entries.lower_bound(cursor, id);
                if cursor == entries.len {
                    break;
                }
                if compare((entries.id_at)(cursor), id) == Ordering::Equal && usable(cursor) {
                    found[*position] = true;
                    newly += 1;
                }
            }
        }
        newly
    }
}

impl<'e, G: Fn(u32) -> &'e oid> Entries<G> {
    /// The first position at or after `from` whose id is not below `id` (`len` if none), given that every id
    /// before `from` is below it.
    fn lower_bound(&self, from: u32, id: &oid) -> u32 {
        let below = |at: u32| compare((self.id_at)(at), id) == Ordering::Less;
        // Gallop: `start` is past every entry known to be below; `end` is `len` or an entry known not to be.
        let (mut start, mut end, mut step) = (from, from, 1u32);
        while end < self.len && below(end) {
            start = end + 1;
            end = end.saturating_add(step).min(self.len);
            step = step.saturating_mul(2);
        }
        while start < end {
            let middle = start + (end - start) / 2;
            if below(middle) { start = middle + 1 } else { end = middle }
        }
        start
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testpack::{Objects, chain, object_id};
    use crate::store::{Kind, StoreOptions};

    fn open(objects: &Objects) -> Store {
        Store::open(objects.path(), gix_hash::Kind::Sha1, StoreOptions::default())
    }

    /// The positions `unlisted_in_packs` gives back for `ids` (sorted here), as ids.
    fn unlisted(store: &Store, ids: &[ObjectId]) -> Vec<ObjectId> {
        let mut sorted = ids.to_vec();
        sorted.sort();
        let positions = store.unlisted_in_packs(sorted.len(), |at| &sorted[at]);
        positions.into_iter().map(|at| sorted[at]).collect()
    }

    #[test]
    fn ids_in_any_pack_are_listed_and_the_rest_given_back_in_order() {
        let objects = Objects::new();
        let in_a: Vec<&[u8]> = vec![b"a1\n", b"a2\n", b"a3\n", b"a4\n", b"a5\n"];
        let (a, b) = (chain(&in_a, true), chain(&[b"b1\n", b"b2\n"], false));
        objects.add_pack("a", &a);
        objects.add_pack("b", &b);
        let loose = objects.add_loose(Kind::Blob, b"loose\n");
        let store = open(&objects);
        let nowhere: Vec<ObjectId> = (0..50).map(|n| object_id(Kind::Blob, format!("{n}").as_bytes())).collect();
        let packed: Vec<ObjectId> = a.iter().chain(&b).map(|(id, _)| *id).collect();
        let mut asked = [&packed[..], &packed[..2], &nowhere[..], &[loose]].concat();
        asked.sort();
        let mut expected = [&nowhere[..], &[loose]].concat();
        expected.sort();
        assert_eq!(unlisted(&store, &asked), expected);
        for id in &asked {
            assert_eq!(expected.contains(id), !store.in_pack(id), "as one lookup says");
        }
        assert!(unlisted(&store, &packed).is_empty());
        assert!(unlisted(&store, &[]).is_empty());
    }

    #[test]
    fn ids_through_a_multi_pack_index_are_listed_while_their_pack_can_be_opened() {
        let objects = Objects::new();
        let (a, b) = (chain(&[b"in a\n", b"a again\n"], true), chain(&[b"in b\n"], true));
        let (pack_a, _) = objects.add_pack("a", &a);
        objects.add_pack("b", &b);
        objects.write_midx();
        let ids: Vec<ObjectId> = a.iter().chain(&b).map(|(id, _)| *id).collect();
        assert!(unlisted(&open(&objects), &ids).is_empty());
        std::fs::remove_file(&pack_a).expect("remove");
        let mut gone: Vec<ObjectId> = a.iter().map(|(id, _)| *id).collect();
        gone.sort();
        assert_eq!(unlisted(&open(&objects), &ids), gone, "a pack that is gone lists nothing, as for `exists`");
    }

    #[test]
    fn a_galloping_search_finds_the_first_entry_not_below() {
        let table: Vec<ObjectId> = (0u8..=200).step_by(2).map(|n| ObjectId::from_bytes_or_panic(&[n; 20])).collect();
        let entries = Entries { len: table.len() as u32, id_at: |at: u32| &*table[at as usize] };
        let id = |n: u8| ObjectId::from_bytes_or_panic(&[n; 20]);
        for n in 0..=255u8 {
            let first_not_below = table.partition_point(|entry| entry < &id(n));
            // Any start before which every entry is below the id gives the same answer.
            for from in 0..=first_not_below {
                assert_eq!(entries.lower_bound(from as u32, &id(n)), first_not_below as u32, "from {from}, id {n}");
            }
        }
    }
}
