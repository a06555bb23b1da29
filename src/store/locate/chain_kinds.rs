//! The type at the bottom of every entry's delta chain, for the passes that ask the type of most of a pack's
//! objects, found in one pass over the pack's headers in offset order.
//!
//! git finds an object's type by walking its delta chain down to the entry stored whole (`packed_to_object_type`),
//! one entry header per link. `--batch-all-objects --batch-check` asks that of every object: on a pack written by
//! `git repack -adf --depth=50`, where trees are chained 16 deep on average, those walks were two thirds of the
//! time (profile in benches/README.md). In offset order a delta's base comes before it (an OFS_DELTA base always
//! does), so one pass over the headers knows each base's type when it reaches the delta: one header per entry.
use std::sync::atomic::Ordering;

use gix_pack::data::Entry;
use gix_pack::data::entry::Header;

use super::kind_memo::{kind_code, kind_of_code};
use super::pack::Pack;
use super::rev_index::RevIndex;
use crate::store::Kind;

/// Chain links a pack's walks decode (entries passed that [`super::kind_memo`] did not know) before its chain types
/// are found in one pass, at the least ...
const WALKED_LINKS_BEFORE_PASS: u32 = 1024;
/// ... and one link for this many of its objects: the pass reads every header once, in offset order, which pays
/// off only when the walks would otherwise decode a good share of them at random places (a listing of most
/// objects; not a sample, whose walks stop at the first entry the memo knows).
const OBJECTS_PER_WALKED_LINK_BEFORE_PASS: u32 = 2;

impl Pack {
    /// The type at the bottom of the chain of the entry at `offset`, if the one pass over the pack's headers has
    /// been made and found it. Never makes the pass.
    pub(in crate::store) fn passed_chain_kind(&self, offset: u64) -> Option<Kind> {
        let rev = self.built_rev_index()?;
        kind_of_code(*rev.found_kinds()?.get(rev.position(offset)?)?)
    }

    /// Counts `links` entries that a chain walk decoded: the walk that reaches the pack's threshold makes the pass
    /// (on its thread: the other resolvers walk on meanwhile).
    pub(in crate::store) fn walked(&self, links: u32) {
        let threshold = WALKED_LINKS_BEFORE_PASS.max(self.index.num_objects() / OBJECTS_PER_WALKED_LINK_BEFORE_PASS);
        let before = self.walked_links.fetch_add(links, Ordering::Relaxed);
        if before < threshold && before.saturating_add(links) >= threshold {
            let rev = self.rev_index();
            rev.find_kinds(|| self.find_chain_kinds(rev));
        }
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

    /// Walks that decoded fewer links than the threshold leave the types to the walks; the walk that reaches it
    /// makes the pass, and later types are answered from it.
    #[test]
    fn the_pass_is_made_once_walks_decoded_enough_links() {
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
        pack.walked(WALKED_LINKS_BEFORE_PASS - 1);
        assert_eq!(pack.passed_chain_kind(offsets[2]), None, "below the threshold");
        pack.walked(2);
        assert_eq!(pack.passed_chain_kind(offsets[2]), Some(Kind::Blob), "the pass, made by the walk that reaches it");
        assert_eq!(pack.passed_chain_kind(offsets[1]), Some(Kind::Blob));
        assert_eq!(pack.passed_chain_kind(offsets[1] + 1), None, "not the start of an entry");
    }
}
