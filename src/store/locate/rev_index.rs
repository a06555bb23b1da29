//! A pack's entries in offset order (git's reverse index): built in memory from the pack index (in the `.rev`
//! file's order when there is one), or read from the `.rev` file in place ([`OffsetOrder`] is either); and the
//! place where the types at the bottom of their delta chains are kept once [`super::chain_kinds`] has found them.
use std::sync::OnceLock;

use super::pack_index::PackIndex;
use super::rev_file::RevFile;
use super::sorted_offsets::SortedOffsets;

/// A pack's entries in offset order: each one's offset and its position in the index.
pub(in crate::store) struct RevIndex {
    /// A whole scan looks up every entry, at random.
    offsets: SortedOffsets,
    positions: Vec<u32>,
    /// Per entry: the type at the bottom of its chain (a code of [`super::chain_kinds`]), 0 where the pass could
    /// not tell (a base in another pack or loose, after its delta, or damage): such entries are walked as before.
    kinds: OnceLock<Vec<u8>>,
}

impl RevIndex {
    /// The entries `index` lists, in offset order: as the pack's `.rev` file lists them when it has one that
    /// agrees with the index, else sorted here. An entry whose offset the index cannot give is left out: reading
    /// it reports the damage.
    pub(in crate::store) fn build(index: &PackIndex, rev_file: Option<&RevFile>) -> RevIndex {
        let (offsets, positions) = rev_file.and_then(|rev_file| in_file_order(rev_file, index)).unwrap_or_else(|| {
            let positions = 0..index.num_objects();
            let mut entries: Vec<(u64, u32)> =
                positions.filter_map(|position| Some((index.offset_at(position).ok()?, position))).collect();
            entries.sort_unstable();
            entries.into_iter().unzip()
        });
        RevIndex { offsets: SortedOffsets::new(offsets), positions, kinds: OnceLock::new() }
    }

    /// How many entries.
    pub(in crate::store) fn len(&self) -> usize {
        self.positions.len()
    }

    /// The `at`-th entry: its offset and its position in the index.
    pub(in crate::store) fn get(&self, at: usize) -> Option<(u64, u32)> {
        Some((*self.offsets.as_slice().get(at)?, self.positions[at]))
    }

    /// Every entry in offset order: its offset and its position in the index.
    pub(in crate::store) fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.offsets.as_slice().iter().copied().zip(self.positions.iter().copied())
    }

    /// Where the entry at `offset` is in offset order.
    pub(in crate::store) fn position(&self, offset: u64) -> Option<usize> {
        self.offsets.position(offset)
    }

    /// The chain types of every entry, if the pass has found them.
    pub(in crate::store) fn found_kinds(&self) -> Option<&[u8]> {
        self.kinds.get().map(Vec::as_slice)
    }

    /// The chain types of every entry: found now by `pass` on the calling thread unless they were.
    pub(in crate::store) fn find_kinds(&self, pass: impl FnOnce() -> Vec<u8>) -> &[u8] {
        self.kinds.get_or_init(pass)
    }
}

/// The entries in the order of the pack's `.rev` file (git's `pack.writeReverseIndex`, on by default since 2.41),
/// which spares sorting every offset (a third of `--batch-all-objects --unordered`'s start on 2.75M objects).
/// `None` unless its offsets strictly rise (so its positions are each entry once): anything else is left to the
/// sort, which gives the same answer.
fn in_file_order(rev_file: &RevFile, index: &PackIndex) -> Option<(Vec<u64>, Vec<u32>)> {
    let count = index.num_objects() as usize;
    let (mut offsets, mut positions) = (Vec::with_capacity(count), Vec::with_capacity(count));
    for at in 0..count {
        let (offset, position) = rev_file.get(index, at)?;
        if offsets.last().is_some_and(|&last| last >= offset) {
            return None;
        }
        offsets.push(offset);
        positions.push(position);
    }
    Some((offsets, positions))
}

/// A pack's entries in offset order, from whichever it has: the reverse index built in memory, or its `.rev` file.
#[derive(Clone, Copy)]
pub(in crate::store) enum OffsetOrder<'a> {
    Built(&'a RevIndex),
    File(&'a RevFile, &'a PackIndex),
}

impl<'a> OffsetOrder<'a> {
    /// Where the entry at `offset` is in offset order.
    pub(in crate::store) fn position(self, offset: u64) -> Option<usize> {
        match self {
            OffsetOrder::Built(rev) => rev.position(offset),
            OffsetOrder::File(rev, index) => rev.position(index, offset),
        }
    }

    /// The `at`-th entry in offset order: its offset and its position in the index.
    pub(in crate::store) fn get(self, at: usize) -> Option<(u64, u32)> {
        match self {
            OffsetOrder::Built(rev) => rev.get(at),
            OffsetOrder::File(rev, index) => rev.get(index, at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::locate::Pack;
    use crate::store::testpack::Objects;

    const SHA1: gix_hash::Kind = gix_hash::Kind::Sha1;

    #[test]
    fn a_rev_file_gives_the_order_the_built_index_gives() {
        let objects = Objects::new();
        let path = objects.pack_with_rev_file();
        let index = PackIndex::open(&path.with_extension("idx"), SHA1).expect("index");
        let file = RevFile::open(&path.with_extension("rev"), &index, SHA1).expect("a usable .rev");
        let built = RevIndex::build(&index, None);
        assert_eq!(built.len(), 11);
        for at in 0..built.len() {
            let (offset, position) = built.get(at).expect("entry");
            assert_eq!(file.get(&index, at), Some((offset, position)));
            assert_eq!(file.position(&index, offset), Some(at));
            assert_eq!(file.position(&index, offset + 1), built.position(offset + 1));
        }
        assert_eq!(file.get(&index, built.len()), None);
    }

    #[test]
    fn single_requests_read_the_rev_file_and_build_nothing_until_many_ask() {
        let objects = Objects::new();
        let path = objects.pack_with_rev_file();
        let pack = Pack::open(&path.with_extension("idx"), 1, SHA1).expect("pack");
        // A type: nothing to read until the reverse index is built.
        assert!(pack.offset_order(false).is_none());
        // A size on disk: the `.rev` file.
        assert!(matches!(pack.offset_order(true), Some(OffsetOrder::File(..))));
        for _ in 2..63 {
            assert!(pack.offset_order(false).is_none());
        }
        // The 64th ask builds it.
        assert!(matches!(pack.offset_order(false), Some(OffsetOrder::Built(_))));
        assert!(matches!(pack.offset_order(true), Some(OffsetOrder::Built(_))));
    }

    #[test]
    fn without_a_rev_file_a_size_on_disk_builds_the_index_as_git_does() {
        let objects = Objects::new();
        let path = objects.pack_with_rev_file();
        std::fs::remove_file(path.with_extension("rev")).expect("remove .rev");
        let pack = Pack::open(&path.with_extension("idx"), 1, SHA1).expect("pack");
        assert!(pack.offset_order(false).is_none());
        assert!(matches!(pack.offset_order(true), Some(OffsetOrder::Built(_))));
    }
}
