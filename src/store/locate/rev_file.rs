//! git's reverse index on disk (`pack-<hash>.rev`, written beside each pack by default since git 2.41): the
//! pack's entries in offset order, as index positions, read in place.
//!
//! A request for one object's size on disk (`%(objectsize:disk)`, `%(deltabase)`) needs to know which entry
//! follows it in the pack. Building the whole reverse index in memory for that costs 12 bytes per object (10 MB for
//! git.git, and twice that while it is sorted): in a daemon that serves a thousand repositories, a few such
//! requests per repository added up to more than all the rest of its memory. git reads this file instead
//! (`load_pack_revindex`), with a binary search through the pack index's offsets per lookup; so does this.
use std::fs::File;
use std::path::Path;

use super::pack_index::PackIndex;
use super::skewed::SkewedMap;

const SIGNATURE: &[u8] = b"RIDX";
const VERSION: u32 = 1;
const HEADER: usize = 12;

/// A pack's `.rev` file, mapped.
pub(in crate::store) struct RevFile {
    map: SkewedMap,
    count: u32,
}

impl RevFile {
    /// The reverse index at `path`, if it is one for `index`'s pack: git's header (signature, version, hash),
    /// a size that fits the object count, and the pack's checksum in its trailer. Anything else (no file, another
    /// pack's, damage) is `None`, and the caller builds the reverse index from the pack index, as git does when a
    /// pack has no `.rev`.
    pub(in crate::store) fn open(path: &Path, index: &PackIndex, hash: gix_hash::Kind) -> Option<RevFile> {
        let file = File::open(path).ok()?;
        // SAFETY: git never rewrites a `.rev` in place (it writes a temporary file and renames it over the old
        // one), so the mapped bytes do not change under us; every read below is bounds-checked against the
        // mapping's length, which is checked here to fit the object count.
        #[allow(unsafe_code)]
        let map = unsafe { SkewedMap::map(&file) }.ok()?;
        let count = index.num_objects();
        let hash_len = hash.len_in_bytes();
        let hash_id = match hash {
            gix_hash::Kind::Sha1 => 1,
            gix_hash::Kind::Sha256 => 2,
            _ => return None,
        };
        let fits = map.len() as u64 == HEADER as u64 + 4 * u64::from(count) + 2 * hash_len as u64;
        if !fits || &map[..4] != SIGNATURE || be32(&map[4..8]) != VERSION || be32(&map[8..12]) != hash_id {
            return None;
        }
        let trailer = map.len() - 2 * hash_len;
        (map[trailer..trailer + hash_len] == *index.pack_checksum()).then_some(RevFile { map, count })
    }

    /// The mapped file, for [`super::resident`].
    pub(in crate::store) fn mapped(&self) -> &[u8] {
        &self.map
    }

    /// The index position of the `at`-th entry in offset order.
    fn index_position(&self, at: u32) -> u32 {
        let start = HEADER + at as usize * 4;
        be32(&self.map[start..start + 4])
    }

    /// The `at`-th entry in offset order: its offset (through `index`) and its position in the index.
    pub(in crate::store) fn get(&self, index: &PackIndex, at: usize) -> Option<(u64, u32)> {
        let at = u32::try_from(at).ok().filter(|&at| at < self.count)?;
        let position = self.index_position(at);
        if position >= index.num_objects() {
            return None;
        }
        Some((index.offset_at(position).ok()?, position))
    }

    /// Where the entry at `offset` is in offset order: a binary search that reads each probe's offset through
    /// `index` (git's `offset_to_pack_pos`).
    pub(in crate::store) fn position(&self, index: &PackIndex, offset: u64) -> Option<usize> {
        let (mut low, mut high) = (0usize, self.count as usize);
        while low < high {
            let middle = low + (high - low) / 2;
            let (found, _) = self.get(index, middle)?;
            match found.cmp(&offset) {
                std::cmp::Ordering::Equal => return Some(middle),
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
            }
        }
        None
    }
}

fn be32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes(bytes.try_into().expect("four bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testpack::Objects;

    const SHA1: gix_hash::Kind = gix_hash::Kind::Sha1;

    #[test]
    fn a_rev_file_of_another_pack_or_damaged_is_not_used() {
        let objects = Objects::new();
        let path = objects.pack_with_rev_file();
        let index = PackIndex::open(&path.with_extension("idx"), SHA1).expect("index");
        let rev = std::fs::read(path.with_extension("rev")).expect("read .rev");
        let damaged = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut bytes = rev.clone();
            edit(&mut bytes);
            std::fs::write(path.with_extension("rev"), &bytes).expect("write .rev");
            RevFile::open(&path.with_extension("rev"), &index, SHA1).is_none()
        };
        assert!(damaged(&|bytes| bytes[0] = b'X'), "signature");
        assert!(damaged(&|bytes| bytes[7] = 2), "version");
        assert!(damaged(&|bytes| bytes[11] = 2), "hash");
        assert!(damaged(&|bytes| bytes.truncate(bytes.len() - 1)), "size");
        let trailer = rev.len() - 40;
        assert!(damaged(&|bytes| bytes[trailer] ^= 1), "another pack's checksum");
        assert!(!damaged(&|_| {}), "the file as git wrote it");
    }
}
