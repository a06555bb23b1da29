//! A pack's entries in offset order (git's reverse index), and, for the passes that ask the type of most of a
//! pack's objects, the type at the bottom of every entry's delta chain, found in one pass over the headers.
//!
//! git finds an object's type by walking its delta chain down to the entry stored whole (`packed_to_object_type`),
//! one entry header per link. `--batch-all-objects --batch-check` asks that of every object: on a pack written by
//! `git repack -adf --depth=50`, where trees are chained 16 deep on average, those walks were two thirds of the
//! time (profile in benches/README.md). In offset order a delta's base comes before it (an OFS_DELTA base always
//! does), so one pass over the headers knows each base's type when it reaches the delta: one header per entry.
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use gix_pack::data::Entry;
use gix_pack::data::entry::Header;

use super::pack::Pack;
use crate::store::Kind;

/// Lookups of types a pack serves before its chain types are found in one pass, at the least ...
const TYPE_LOOKUPS_BEFORE_PASS: u32 = 64;
/// ... and one lookup for this many of its objects: the pass reads every header once, which pays off only when
/// the lookups would otherwise walk a good share of the pack's chains (a chain is several headers long).
const OBJECTS_PER_LOOKUP_BEFORE_PASS: u32 = 16;

/// Offsets covered by one bucket of [`RevIndex::buckets`] are `1 << shift` bytes, with at most this many buckets.
const BUCKETS: u64 = 1 << 16;

/// A pack's entries in offset order: each one's offset and its position in the index.
pub(in crate::store) struct RevIndex {
    offsets: Vec<u64>,
    positions: Vec<u32>,
    /// `buckets[b]` is the first entry at an offset of at least `b << shift`: finding an offset is a binary search
    /// of the few entries of its bucket, not of all of them (a whole scan looks up every entry, at random).
    buckets: Vec<u32>,
    shift: u32,
    /// Per entry: the type at the bottom of its chain ([`kind_code`]), 0 where the pass could not tell (a base
    /// in another pack or loose, after its delta, or damage): such entries are walked as before.
    kinds: OnceLock<Vec<u8>>,
    type_lookups: AtomicU32,
}

impl RevIndex {
    /// The entries of `pack` in offset order. An entry whose offset the index cannot give is left out: reading
    /// it reports the damage.
    pub(in crate::store) fn build(pack: &Pack) -> RevIndex {
        let positions = 0..pack.index.num_objects();
        let mut entries: Vec<(u64, u32)> =
            positions.filter_map(|position| Some((pack.index.offset_at(position).ok()?, position))).collect();
        entries.sort_unstable();
        let (offsets, positions): (Vec<u64>, Vec<u32>) = entries.into_iter().unzip();
        let last = offsets.last().copied().unwrap_or(0);
        let shift = (0..64).find(|shift| last >> shift < BUCKETS).unwrap_or(64);
        let mut buckets = Vec::with_capacity(((last >> shift) + 2) as usize);
        for (at, offset) in offsets.iter().enumerate() {
            while (buckets.len() as u64) <= offset >> shift {
                buckets.push(at as u32);
            }
        }
        buckets.push(offsets.len() as u32);
        RevIndex { offsets, positions, buckets, shift, kinds: OnceLock::new(), type_lookups: AtomicU32::new(0) }
    }

    /// How many entries.
    pub(in crate::store) fn len(&self) -> usize {
        self.offsets.len()
    }

    /// The `at`-th entry: its offset and its position in the index.
    pub(in crate::store) fn get(&self, at: usize) -> Option<(u64, u32)> {
        Some((*self.offsets.get(at)?, self.positions[at]))
    }

    /// Every entry in offset order: its offset and its position in the index.
    pub(in crate::store) fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.offsets.iter().copied().zip(self.positions.iter().copied())
    }

    /// Where the entry at `offset` is in offset order.
    pub(in crate::store) fn position(&self, offset: u64) -> Option<usize> {
        let bucket = usize::try_from(offset >> self.shift).ok()?;
        let (start, end) = (*self.buckets.get(bucket)? as usize, self.buckets[bucket + 1] as usize);
        self.offsets[start..end].binary_search(&offset).ok().map(|found| start + found)
    }

    /// The type at the bottom of the chain of the `at`-th entry, if the one pass over the pack's headers
    /// found it. Counts the lookup: the one that reaches the pack's threshold makes that pass, on this thread
    /// (a scan of every object is the usual reason, and needs it at once).
    pub(in crate::store) fn chain_kind(&self, pack: &Pack, at: usize) -> Option<Kind> {
        let kinds = match self.kinds.get() {
            Some(kinds) => kinds,
            None => {
                let threshold = TYPE_LOOKUPS_BEFORE_PASS.max(pack.index.num_objects() / OBJECTS_PER_LOOKUP_BEFORE_PASS);
                if self.type_lookups.fetch_add(1, Ordering::Relaxed) + 1 < threshold {
                    return None;
                }
                self.kinds.get_or_init(|| self.find_chain_kinds(pack))
            }
        };
        kind_of_code(*kinds.get(at)?)
    }

    /// One pass over the headers in offset order: an entry stored whole gives its type; a delta takes its base's,
    /// found earlier in the pass when the base comes before it in this pack. A pack file that cannot be opened
    /// again as the mapped pack leaves every type unknown.
    pub(in crate::store) fn find_chain_kinds(&self, pack: &Pack) -> Vec<u8> {
        let mut kinds = vec![0; self.len()];
        let Some(mut reader) = pack.header_reader() else { return kinds };
        for (at, &offset) in self.offsets.iter().enumerate() {
            let base = match reader.entry(offset) {
                None => continue,
                Some(found @ Entry { header: Header::OfsDelta { base_distance }, .. }) => {
                    found.checked_base_pack_offset(base_distance)
                }
                Some(Entry { header: Header::RefDelta { base_id }, .. }) => pack.lookup(&base_id).and_then(Result::ok),
                Some(Entry { header, .. }) => {
                    kinds[at] = header.as_kind().map_or(0, kind_code);
                    continue;
                }
            };
            // A base after its delta is left to the walk, which also finds a cycle.
            if let Some(base) = base.filter(|&base| base < offset)
                && let Some(base_at) = self.position(base)
            {
                kinds[at] = kinds[base_at];
            }
        }
        kinds
    }
}

fn kind_code(kind: Kind) -> u8 {
    match kind {
        Kind::Commit => 1,
        Kind::Tree => 2,
        Kind::Blob => 3,
        Kind::Tag => 4,
    }
}

fn kind_of_code(code: u8) -> Option<Kind> {
    match code {
        1 => Some(Kind::Commit),
        2 => Some(Kind::Tree),
        3 => Some(Kind::Blob),
        4 => Some(Kind::Tag),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testpack::{Objects, Stored, delta, object_id};

    /// A tree chain (OFS_DELTA), a blob chain whose second link is a REF_DELTA on a base written before it, and a
    /// REF_DELTA on a base written after it, which the pass leaves to the walk.
    #[test]
    fn one_pass_finds_each_chain_type_where_the_base_comes_first() {
        let (tree, tree2) = (b"100644 a\0aaaaaaaaaaaaaaaaaaaa".to_vec(), b"100644 a\0aaaaaaaaaaaaaaaaaaaa!".to_vec());
        let (blob, blob2, blob3) = (b"blob\n".to_vec(), b"blob\nmore\n".to_vec(), b"blob\nmore\nyet\n".to_vec());
        let later = b"later\n".to_vec();
        let entries = vec![
            (object_id(Kind::Tree, &tree), Stored::Whole(Kind::Tree, tree.clone())),
            (object_id(Kind::Tree, &tree2), Stored::Ofs(0, delta(tree.len(), tree.len(), b"!"))),
            (object_id(Kind::Blob, &blob), Stored::Whole(Kind::Blob, blob.clone())),
            (object_id(Kind::Blob, &blob2), Stored::Ref(object_id(Kind::Blob, &blob), delta(5, 5, b"more\n"))),
            (object_id(Kind::Blob, &blob3), Stored::Ofs(3, delta(10, 10, b"yet\n"))),
            (object_id(Kind::Blob, b"later\nx"), Stored::Ref(object_id(Kind::Blob, &later), delta(6, 6, b"x"))),
            (object_id(Kind::Blob, &later), Stored::Whole(Kind::Blob, later.clone())),
        ];
        let objects = Objects::new();
        let (path, offsets) = objects.add_pack("kinds", &entries);
        let pack = Pack::open(&path.with_extension("idx"), 0, gix_hash::Kind::Sha1).expect("pack");
        let rev = pack.rev_index();
        let kinds = rev.find_chain_kinds(&pack);
        let expected = [Some(Kind::Tree), Some(Kind::Tree), Some(Kind::Blob), Some(Kind::Blob), Some(Kind::Blob)];
        for (offset, kind) in offsets.iter().zip(expected.iter().chain([&None, &Some(Kind::Blob)])) {
            let at = rev.position(*offset).expect("every entry is listed");
            assert_eq!(kind_of_code(kinds[at]), *kind, "entry at {offset}");
        }
        assert_eq!(rev.position(offsets[1] + 1), None, "not the start of an entry");
    }

    /// Lookups before the threshold walk (none is answered from the pass); the one that reaches it makes the
    /// pass, and later ones are answered from it.
    #[test]
    fn the_pass_is_made_once_enough_types_were_asked() {
        let contents: Vec<Vec<u8>> = (0..3).map(|k| b"line\n".repeat(k + 1)).collect();
        let objects = Objects::new();
        let entries: Vec<(gix_hash::ObjectId, Stored)> = contents
            .iter()
            .enumerate()
            .map(|(k, content)| {
                let stored = match k {
                    0 => Stored::Whole(Kind::Blob, content.clone()),
                    _ => Stored::Ofs(k - 1, delta(5 * k, 5 * k, b"line\n")),
                };
                (object_id(Kind::Blob, content), stored)
            })
            .collect();
        let (path, offsets) = objects.add_pack("threshold", &entries);
        let pack = Pack::open(&path.with_extension("idx"), 0, gix_hash::Kind::Sha1).expect("pack");
        let rev = pack.rev_index();
        let last = rev.position(offsets[2]).expect("listed");
        for _ in 1..TYPE_LOOKUPS_BEFORE_PASS {
            assert_eq!(rev.chain_kind(&pack, last), None, "below the threshold");
        }
        assert_eq!(rev.chain_kind(&pack, last), Some(Kind::Blob), "the pass, made by the lookup that reaches it");
        assert_eq!(rev.chain_kind(&pack, last), Some(Kind::Blob));
    }
}
