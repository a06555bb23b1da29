//! A pack's `.idx` file (versions 1 and 2), mapped and read in place.
//!
//! gix-pack's `index::File` is what this replaces, for one reason: opening it reads the whole 32-bit offset table
//! to count large offsets (a 40 MB read on a 10-million-object index, most of cat-blobd's start-up time and
//! resident memory on linux.git-sized repositories). git checks an index at open only as far as its size and
//! fan-out allow, and checks a large offset where it reads it; this does the same, with git's messages. The
//! lookup is the usual fan-out plus binary search; nothing else of gix-pack's index is used.
use std::cmp::Ordering;
use std::fs::File;
use std::ops::{Range, RangeInclusive};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering as Atomic};

use gix_hash::{Prefix, oid};

use super::skewed::SkewedMap;
use crate::store::IndexError;

const FAN_BYTES: usize = 256 * 4;
const V2_SIGNATURE: &[u8] = b"\xfftOc";
/// A version-2 offset with this bit set is a position in the table of 64-bit offsets.
const LARGE: u32 = 1 << 31;

pub(crate) struct PackIndex {
    map: SkewedMap,
    path: PathBuf,
    /// The 256 cumulative counts by first byte, read at open (1 KiB).
    fan: [u32; 256],
    hash_len: usize,
    version: u32,
    /// A fan-out by the first two bytes, built once the index has answered [`fine_after`] lookups.
    fine: OnceLock<Box<[u32]>>,
    /// Lookups answered before `fine` was built, and whether some thread is building it.
    lookups: AtomicU32,
    building: AtomicBool,
}

impl PackIndex {
    /// Maps the index at `path` and checks what git checks at open: its version, a fan-out that never goes
    /// down, and a size that fits the object count. Nothing whose length is the object count is read.
    pub(crate) fn open(path: &Path, hash: gix_hash::Kind) -> Result<PackIndex, IndexError> {
        let open_error = |source| IndexError::Open { path: path.to_owned(), source };
        let file = File::open(path).map_err(open_error)?;
        // SAFETY: git never rewrites an index in place (it writes a new file and renames it over the old one), so
        // the mapped bytes do not change under us; every read below is bounds-checked against the mapping's length.
        #[allow(unsafe_code)]
        let map = unsafe { SkewedMap::map(&file) }.map_err(open_error)?;
        Self::from_map(map, path.to_owned(), hash)
    }

    fn from_map(map: SkewedMap, path: PathBuf, hash: gix_hash::Kind) -> Result<PackIndex, IndexError> {
        let hash_len = hash.len_in_bytes();
        if map.len() < FAN_BYTES + 2 * hash_len {
            return Err(IndexError::TooSmall(path));
        }
        let version = if map.starts_with(V2_SIGNATURE) { be32(&map[4..8]) } else { 1 };
        if version != 1 && version != 2 {
            return Err(IndexError::Version { path, version });
        }
        let fan_start = if version == 2 { 8 } else { 0 };
        if map.len() < fan_start + FAN_BYTES {
            return Err(IndexError::TooSmall(path));
        }
        let mut fan = [0u32; 256];
        for (slot, bytes) in fan.iter_mut().zip(map[fan_start..fan_start + FAN_BYTES].chunks_exact(4)) {
            *slot = be32(bytes);
        }
        if fan.windows(2).any(|pair| pair[1] < pair[0]) {
            return Err(IndexError::NonMonotonic(path));
        }
        let objects = fan[255] as u64;
        let trailer = 2 * hash_len as u64;
        let fits = if version == 1 {
            map.len() as u64 == FAN_BYTES as u64 + trailer + objects * (hash_len as u64 + 4)
        } else {
            let min = 8 + FAN_BYTES as u64 + trailer + objects * (hash_len as u64 + 8);
            let max = min + objects.saturating_sub(1) * 8;
            (min..=max).contains(&(map.len() as u64))
        };
        if !fits {
            return Err(IndexError::WrongSize { path, version });
        }
        let (fine, lookups, building) = (OnceLock::new(), AtomicU32::new(0), AtomicBool::new(false));
        Ok(PackIndex { map, path, fan, hash_len, version, fine, lookups, building })
    }

    pub(crate) fn num_objects(&self) -> u32 {
        self.fan[255]
    }

    /// The mapped file, for [`super::resident`].
    pub(in crate::store) fn mapped(&self) -> &[u8] {
        &self.map
    }

    /// The id of the pack this index describes (the first of the two trailing checksums).
    pub(crate) fn pack_checksum(&self) -> &[u8] {
        let end = self.map.len() - self.hash_len;
        &self.map[end - self.hash_len..end]
    }

    /// Where `position`'s id starts in the map, and how far apart consecutive ids are.
    fn id_layout(&self) -> (usize, usize) {
        match self.version {
            1 => (FAN_BYTES + 4, self.hash_len + 4),
            _ => (8 + FAN_BYTES, self.hash_len),
        }
    }

    /// The id at `position` (sorted order).
    pub(crate) fn oid_at(&self, position: u32) -> &oid {
        let (start, stride) = self.id_layout();
        let at = start + position as usize * stride;
        oid::from_bytes_unchecked(&self.map[at..at + self.hash_len])
    }

    /// The positions whose ids start with `first`, the fan-out's range.
    fn fan_range(&self, first: u8) -> Range<u32> {
        let start = if first == 0 { 0 } else { self.fan[first as usize - 1] };
        start..self.fan[first as usize]
    }

    /// The position of `id`, if the index lists it.
    pub(crate) fn lookup(&self, id: &oid) -> Option<u32> {
        let bytes = id.as_bytes();
        if let Some(fine) = self.fine.get() {
            let at = usize::from(bytes[0]) << 8 | usize::from(bytes[1]);
            let low = (at as u64) << 48;
            return search(fine[at]..fine[at + 1], low..=low | (u64::MAX >> 16), id, |position| self.oid_at(position));
        }
        self.count_lookup();
        search(self.fan_range(bytes[0]), fan_keys(bytes[0]), id, |position| self.oid_at(position))
    }

    /// Starts fetching the lines where the two-byte fan-out says `id` would be, in the ids and in the offsets (its
    /// prefix holds a few ids: their lines are most often the lookup's and [`Self::offset_at`]'s only misses);
    /// with `far`, only the fan-out's slot, whose read would otherwise wait for it. Nothing before the fan-out is
    /// built.
    pub(crate) fn prefetch_lookup(&self, id: &oid, far: bool) {
        let Some(fine) = self.fine.get() else { return };
        let bytes = id.as_bytes();
        let at = usize::from(bytes[0]) << 8 | usize::from(bytes[1]);
        if far {
            super::prefetch::prefetch(&fine[at]);
            return;
        }
        let (start, end) = (fine[at], fine[at + 1]);
        if start == end || self.version != 2 {
            return;
        }
        let (ids, stride) = self.id_layout();
        let middle = (start + (end - start) / 2) as usize;
        let offsets = ids + self.num_objects() as usize * (self.hash_len + 4) + middle * 4;
        for at in [ids + middle * stride, offsets] {
            if let Some(byte) = self.map.get(at) {
                super::prefetch::prefetch(byte);
            }
        }
    }

    /// Has the index its two-byte fan-out yet?
    pub(crate) fn has_fine_fan(&self) -> bool {
        self.fine.get().is_some()
    }

    /// Counts a lookup made without the fine fan-out; the one that reaches [`fine_after`] builds it, on its
    /// thread (the others search as before meanwhile).
    fn count_lookup(&self) {
        let objects = self.num_objects();
        if objects < FINE_MIN_OBJECTS || self.lookups.fetch_add(1, Atomic::Relaxed) != fine_after(objects) {
            return;
        }
        if !self.building.swap(true, Atomic::Relaxed) {
            let _ = self.fine.set(self.fine_fan());
        }
    }

    /// Where the ids of each two-byte prefix start, and the end (65,537 positions, 256 KiB): one pass over the
    /// ids, in order.
    fn fine_fan(&self) -> Box<[u32]> {
        let mut fine = vec![0u32; (1 << 16) + 1];
        for position in 0..self.num_objects() {
            let bytes = self.oid_at(position).as_bytes();
            fine[(usize::from(bytes[0]) << 8 | usize::from(bytes[1])) + 1] += 1;
        }
        for at in 1..fine.len() {
            fine[at] += fine[at - 1];
        }
        fine.into_boxed_slice()
    }

    /// The positions of every id that starts with `prefix`.
    pub(crate) fn prefix_range(&self, prefix: &Prefix) -> Range<u32> {
        let range = self.fan_range(prefix.as_oid().as_bytes()[0]);
        let below = |position: u32| prefix.cmp_oid(self.oid_at(position)) == Ordering::Greater;
        let matches = |position: u32| prefix.cmp_oid(self.oid_at(position)) != Ordering::Less;
        let start = partition_point(range.clone(), below);
        let end = partition_point(start..range.end, matches);
        start..end
    }

    /// Where the object at `position` starts in the pack. A large offset whose slot is past the table is
    /// damage, found here as git finds it.
    pub(crate) fn offset_at(&self, position: u32) -> Result<u64, IndexError> {
        let objects = self.num_objects() as usize;
        if self.version == 1 {
            let at = FAN_BYTES + position as usize * (self.hash_len + 4);
            return Ok(be32(&self.map[at..at + 4]) as u64);
        }
        let table = 8 + FAN_BYTES + objects * (self.hash_len + 4);
        let at = table + position as usize * 4;
        let offset = be32(&self.map[at..at + 4]);
        if offset & LARGE == 0 {
            return Ok(offset as u64);
        }
        let large = table + objects * 4 + (offset & !LARGE) as usize * 8;
        match self.map.get(large..large + 8) {
            Some(bytes) if large + 8 <= self.map.len() - 2 * self.hash_len => {
                Ok(u64::from_be_bytes(bytes.try_into().expect("8 bytes")))
            }
            _ => Err(IndexError::LargeOffset(self.path.clone())),
        }
    }
}

/// Where `id` is among the sorted ids of `range` (`id_at` gives each), whose first 8 bytes, read as one number,
/// lie within `keys` (a fan-out bucket's, or all of them).
///
/// Object ids are uniformly spread, so the search first guesses where `id` should be from its value
/// (interpolation): a few probes where a binary search takes 15 or more over a 10-million-object index, each a
/// cache miss and, on an index not read yet, a page fault. After [`INTERPOLATIONS`] guesses (ids spread unevenly
/// on purpose cannot make it slow) or once the range is short, it bisects. Ids are compared by their first 8
/// bytes as one number, and byte by byte only when those are equal: a `memcmp` call per step was a quarter of
/// `--batch-check`'s CPU on a multi-pack-index of 849k objects (gix-pack's lookups compare slices).
pub(crate) fn search<'a>(
    range: Range<u32>,
    keys: RangeInclusive<u64>,
    id: &oid,
    id_at: impl Fn(u32) -> &'a oid,
) -> Option<u32> {
    let wanted = id.as_bytes();
    let key = prefix_number(wanted);
    let (mut low, mut high) = keys.into_inner();
    let Range { mut start, mut end } = range;
    let mut guesses = 0;
    while start < end {
        let middle = if guesses < INTERPOLATIONS && end - start > 16 && (low..=high).contains(&key) {
            guesses += 1;
            let spread = (high - low) as u128 + 1;
            let guess = start as u128 + (key - low) as u128 * (end - start) as u128 / spread;
            guess as u32
        } else {
            start + (end - start) / 2
        };
        let here = id_at(middle).as_bytes();
        let here_key = prefix_number(here);
        let order = match here_key.cmp(&key) {
            Ordering::Equal => here.cmp(wanted),
            unequal => unequal,
        };
        match order {
            Ordering::Less => (start, low) = (middle + 1, here_key),
            Ordering::Greater => (end, high) = (middle, here_key),
            Ordering::Equal => return Some(middle),
        }
    }
    None
}

/// Indexes smaller than this keep the one-byte fan-out: a lookup in them touches few lines anyway.
const FINE_MIN_OBJECTS: u32 = 1 << 14;

/// Lookups of an index of `objects` objects before it gets its two-byte fan-out. Building it reads every id
/// once (a few milliseconds for a million); each lookup after it takes a miss or two fewer in the ids (the
/// interpolation's first guesses within a one-byte bucket), and the table is small enough to stay cached. On
/// 100,000 random ids of a 395,508-object pack it is built after 12,359 of them.
fn fine_after(objects: u32) -> u32 {
    (objects / 32).max(4096)
}

/// Interpolation guesses before [`search`] bisects: uniformly spread ids need about log2(log2(n)), 4 for a
/// fan-out bucket of 10 million objects.
const INTERPOLATIONS: u32 = 6;

/// The prefix numbers of the ids a fan-out bucket holds: those whose first byte is `first`.
pub(crate) fn fan_keys(first: u8) -> RangeInclusive<u64> {
    let low = (first as u64) << 56;
    low..=low | (u64::MAX >> 8)
}

/// Ids in byte order, first by their first 8 bytes as one number (see [`search`] for why).
#[inline]
pub(in crate::store) fn compare_ids(a: &oid, b: &oid) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    prefix_number(a).cmp(&prefix_number(b)).then_with(|| a.cmp(b))
}

fn prefix_number(id: &[u8]) -> u64 {
    u64::from_be_bytes(id[..8].try_into().expect("ids are longer than 8 bytes"))
}

/// The first position of `range` for which `is_before` is false (it is true for a prefix of the range).
fn partition_point(range: Range<u32>, is_before: impl Fn(u32) -> bool) -> u32 {
    let (mut start, mut end) = (range.start, range.end);
    while start < end {
        let middle = start + (end - start) / 2;
        if is_before(middle) { start = middle + 1 } else { end = middle }
    }
    start
}

fn be32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes(bytes[..4].try_into().expect("4 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testpack::{Objects, chain};

    const SHA1: gix_hash::Kind = gix_hash::Kind::Sha1;

    /// A version-2 index of `count` made-up ids whose offsets are `offsets`, and `large` 64-bit offsets.
    fn index(offsets: &[u32], large: &[u64]) -> Vec<u8> {
        let mut idx = V2_SIGNATURE.to_vec();
        idx.extend_from_slice(&2u32.to_be_bytes());
        let ids: Vec<[u8; 20]> = (0..offsets.len()).map(|n| [n as u8 * 16; 20]).collect();
        for byte in 0..=255u8 {
            let count = ids.iter().filter(|id| id[0] <= byte).count() as u32;
            idx.extend_from_slice(&count.to_be_bytes());
        }
        ids.iter().for_each(|id| idx.extend_from_slice(id));
        ids.iter().for_each(|_| idx.extend_from_slice(&[0; 4]));
        offsets.iter().for_each(|offset| idx.extend_from_slice(&offset.to_be_bytes()));
        large.iter().for_each(|offset| idx.extend_from_slice(&offset.to_be_bytes()));
        idx.extend_from_slice(&[0xaa; 40]);
        idx
    }

    fn open(bytes: &[u8]) -> Result<PackIndex, IndexError> {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("pack-x.idx");
        std::fs::write(&path, bytes).expect("write");
        PackIndex::open(&path, SHA1)
    }

    #[test]
    fn offsets_past_2_and_4_gib_come_from_the_64_bit_table() {
        let idx = open(&index(&[12, LARGE, LARGE | 1], &[(2 << 30) + 5, (4 << 30) + 7])).expect("valid");
        assert_eq!(idx.num_objects(), 3);
        let offsets: Vec<u64> = (0..3).map(|p| idx.offset_at(p).expect("readable")).collect();
        assert_eq!(offsets, [12, (2 << 30) + 5, (4 << 30) + 7]);
        assert_eq!(idx.lookup(oid::from_bytes_unchecked(&[16; 20])), Some(1));
        assert_eq!(idx.lookup(oid::from_bytes_unchecked(&[17; 20])), None);
        assert_eq!(idx.pack_checksum(), &[0xaa; 20]);
    }

    /// git checks a 64-bit offset where it reads it; so does this, and open never reads the offset table.
    #[test]
    fn a_large_offset_past_its_table_is_damage_where_it_is_read() {
        let idx = open(&index(&[12, LARGE | 1], &[1 << 33])).expect("the size fits: nothing else is checked at open");
        assert_eq!(idx.offset_at(0).expect("an ordinary offset"), 12);
        let err = idx.offset_at(1).expect_err("slot 1 of a table of 1");
        assert!(err.to_string().starts_with("offset beyond end of pack index for "), "{err}");
    }

    /// A version-2 index of these ids (sorted, distinct), all at offset 12.
    fn index_of(ids: &[[u8; 20]]) -> Vec<u8> {
        let mut idx = V2_SIGNATURE.to_vec();
        idx.extend_from_slice(&2u32.to_be_bytes());
        for byte in 0..=255u8 {
            let count = ids.partition_point(|id| id[0] <= byte) as u32;
            idx.extend_from_slice(&count.to_be_bytes());
        }
        ids.iter().for_each(|id| idx.extend_from_slice(id));
        ids.iter().for_each(|_| idx.extend_from_slice(&[0; 4]));
        ids.iter().for_each(|_| idx.extend_from_slice(&12u32.to_be_bytes()));
        idx.extend_from_slice(&[0xaa; 40]);
        idx
    }

    /// Past [`fine_after`] lookups the index searches within two-byte prefixes: every id is still found at its
    /// place, those of the first and last prefixes too, and ids between them are not.
    #[test]
    fn lookups_find_the_same_positions_before_and_after_the_two_byte_fan_out() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut ids: Vec<[u8; 20]> = (0..FINE_MIN_OBJECTS as usize * 2)
            .map(|_| {
                let mut id = [0u8; 20];
                for chunk in id.chunks_mut(8) {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    chunk.copy_from_slice(&state.to_le_bytes()[..chunk.len()]);
                }
                id
            })
            .collect();
        let mut low = [0; 20];
        low[2] = 1;
        ids.extend([[0; 20], [0xff; 20], low]);
        ids.sort();
        ids.dedup();
        let idx = open(&index_of(&ids)).expect("valid");
        let absent = |id: &[u8; 20]| {
            let mut other = *id;
            other[19] ^= 1;
            other
        };
        let check = |idx: &PackIndex| {
            for (position, id) in ids.iter().enumerate() {
                assert_eq!(idx.lookup(oid::from_bytes_unchecked(id)), Some(position as u32));
                let other = absent(id);
                if ids.binary_search(&other).is_err() {
                    assert_eq!(idx.lookup(oid::from_bytes_unchecked(&other)), None);
                }
            }
        };
        check(&idx);
        assert!(idx.fine.get().is_some(), "{} lookups build it", 2 * ids.len());
        check(&idx);
    }

    #[test]
    fn what_git_checks_at_open_is_checked_with_gits_words() {
        let good = index(&[12, 40], &[]);
        let message = |bytes: &[u8]| open(bytes).err().map(|err| err.to_string()).unwrap_or_default();
        assert!(message(&good[..100]).starts_with("index file "), "too small");
        assert!(message(&good[..100]).ends_with(" is too small"));
        let mut version = good.clone();
        version[7] = 3;
        assert!(message(&version).contains("is version 3 and is not supported"), "{}", message(&version));
        let mut fan = good.clone();
        fan[8 + 4 * 10..8 + 4 * 11].copy_from_slice(&9u32.to_be_bytes());
        assert!(message(&fan).starts_with("non-monotonic index "), "{}", message(&fan));
        assert!(message(&good[..good.len() - 1]).starts_with("wrong index v2 file size in "));
        assert!(message(&[&good[..], &[0; 9]].concat()).starts_with("wrong index v2 file size in "));
    }

    #[test]
    fn prefixes_find_every_matching_id() {
        let objects = Objects::new();
        let entries = chain(&[b"one\n", b"two\n", b"three\n"], false);
        let (path, _) = objects.add_pack("p", &entries);
        let idx = PackIndex::open(&path.with_extension("idx"), SHA1).expect("valid");
        for (id, _) in &entries {
            let hex = id.to_hex().to_string();
            let prefix = Prefix::from_hex(&hex[..7]).expect("a prefix");
            let found: Vec<_> = idx.prefix_range(&prefix).map(|p| idx.oid_at(p).to_owned()).collect();
            assert_eq!(found, [*id]);
            assert!(idx.offset_at(idx.lookup(id).expect("listed")).is_ok());
        }
        let none = Prefix::from_hex("0000000").expect("a prefix");
        assert!(idx.prefix_range(&none).is_empty());
    }

    /// Sorted ids: uniformly spread (what hashes are), and crowded into a corner of the bucket (what a made-up
    /// set of ids could be): every id is found, at its position, and ids between them are not.
    #[test]
    fn search_finds_every_id_however_the_ids_are_spread() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let uniform: Vec<u64> = (0..5000).map(|_| next()).collect();
        let crowded: Vec<u64> = (0..5000).map(|n| if n % 50 == 0 { next() } else { next() >> 40 }).collect();
        for mut keys in [uniform, crowded] {
            keys.sort_unstable();
            keys.dedup();
            let ids: Vec<gix_hash::ObjectId> = keys
                .iter()
                .map(|key| {
                    let mut id = [0x11; 20];
                    id[..8].copy_from_slice(&key.to_be_bytes());
                    gix_hash::ObjectId::from_bytes_or_panic(&id)
                })
                .collect();
            let all = 0..ids.len() as u32;
            let at = |position: u32| ids[position as usize].as_ref();
            for (position, id) in ids.iter().enumerate() {
                assert_eq!(search(all.clone(), 0..=u64::MAX, id, at), Some(position as u32));
                let mut absent = id.as_bytes().to_vec();
                absent[19] = 0x12;
                let absent = gix_hash::ObjectId::from_bytes_or_panic(&absent);
                assert_eq!(search(all.clone(), 0..=u64::MAX, &absent, at), None);
            }
        }
        let first = fan_keys(0xab);
        assert_eq!((*first.start(), *first.end()), (0xab00_0000_0000_0000, 0xabff_ffff_ffff_ffff));
    }
}
