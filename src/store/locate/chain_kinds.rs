//! The type at the bottom of every entry's delta chain, for the passes that ask the type of most of a pack's
//! objects, found in one pass over the pack's headers in offset order.
//!
//! git finds an object's type by walking its delta chain down to the entry stored whole (`packed_to_object_type`),
//! one entry header per link. `--batch-all-objects --batch-check` asks that of every object: on a pack written by
//! `git repack -adf --depth=50`, where trees are chained 16 deep on average, those walks were two thirds of the
//! time (profile in benches/README.md). In offset order a delta's base comes before it (an OFS_DELTA base always
//! does), so one pass over the headers knows each base's type when it reaches the delta: one header per entry.
use gix_pack::data::Entry;
use gix_pack::data::entry::Header;

use super::pack::Pack;
use super::rev_index::RevIndex;
use crate::store::Kind;

/// Lookups of types a pack serves before its chain types are found in one pass, at the least ...
const TYPE_LOOKUPS_BEFORE_PASS: u32 = 64;
/// ... and one lookup for this many of its objects: the pass reads every header once, which pays off only when
/// the lookups would otherwise walk a good share of the pack's chains (a chain is several headers long).
const OBJECTS_PER_LOOKUP_BEFORE_PASS: u32 = 16;

impl Pack {
    /// The type at the bottom of the chain of the entry at `at` in offset order, if the one pass over the pack's
    /// headers found it. Counts the lookup: the one that reaches the pack's threshold makes that pass.
    pub(in crate::store) fn chain_kind(&self, at: usize) -> Option<Kind> {
        let rev = self.rev_index();
        let threshold = TYPE_LOOKUPS_BEFORE_PASS.max(self.index.num_objects() / OBJECTS_PER_LOOKUP_BEFORE_PASS);
        let kinds = rev.chain_kinds(threshold, || self.find_chain_kinds(rev))?;
        kind_of_code(*kinds.get(at)?)
    }

    /// One pass over the headers in offset order: an entry stored whole gives its type; a delta takes its base's,
    /// found earlier in the pass when the base comes before it in this pack. A pack file that cannot be opened
    /// again as the mapped pack leaves every type unknown.
    fn find_chain_kinds(&self, rev: &RevIndex) -> Vec<u8> {
        let mut kinds = vec![0; rev.len()];
        let Some(mut reader) = self.header_reader() else { return kinds };
        for (at, (offset, _)) in rev.iter().enumerate() {
            let base = match reader.entry(offset) {
                None => continue,
                Some(found @ Entry { header: Header::OfsDelta { base_distance }, .. }) => {
                    found.checked_base_pack_offset(base_distance)
                }
                Some(Entry { header: Header::RefDelta { base_id }, .. }) => self.lookup(&base_id).and_then(Result::ok),
                Some(Entry { header, .. }) => {
                    kinds[at] = header.as_kind().map_or(0, kind_code);
                    continue;
                }
            };
            // A base after its delta is left to the walk, which also finds a cycle.
            if let Some(base) = base.filter(|&base| base < offset)
                && let Some(base_at) = rev.position(base)
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
        let kinds = pack.find_chain_kinds(rev);
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
            assert_eq!(pack.chain_kind(last), None, "below the threshold");
        }
        assert_eq!(pack.chain_kind(last), Some(Kind::Blob), "the pass, made by the lookup that reaches it");
        assert_eq!(pack.chain_kind(last), Some(Kind::Blob));
    }
}
