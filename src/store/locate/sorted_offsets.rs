//! Pack offsets in rising order, found by a bucket table: the bucket of an offset (its high bits) gives the few
//! entries to search, instead of a binary search of all of them, whose first dozen steps miss the cache on a
//! large pack. Lookups here are at random: every entry of a whole scan, every link of every chain walked.

/// Offsets covered by one bucket are `1 << shift` bytes, with at most this many buckets.
const BUCKETS: u64 = 1 << 16;

/// Rising pack offsets and the bucket table over them.
#[derive(Default)]
pub(in crate::store) struct SortedOffsets {
    offsets: Vec<u64>,
    /// `buckets[b]` is the first entry at an offset of at least `b << shift`.
    buckets: Vec<u32>,
    shift: u32,
}

impl SortedOffsets {
    /// The table over `offsets`, which must rise.
    pub(in crate::store) fn new(offsets: Vec<u64>) -> Self {
        debug_assert!(offsets.windows(2).all(|w| w[0] < w[1]), "rising offsets");
        let last = offsets.last().copied().unwrap_or(0);
        let shift = (0..64).find(|shift| last >> shift < BUCKETS).unwrap_or(64);
        let mut buckets = Vec::with_capacity(((last >> shift) + 2) as usize);
        for (at, offset) in offsets.iter().enumerate() {
            while (buckets.len() as u64) <= offset >> shift {
                buckets.push(at as u32);
            }
        }
        buckets.push(offsets.len() as u32);
        SortedOffsets { offsets, buckets, shift }
    }

    pub(in crate::store) fn as_slice(&self) -> &[u64] {
        &self.offsets
    }

    /// Where `offset` is among the offsets, if it is one of them.
    pub(in crate::store) fn position(&self, offset: u64) -> Option<usize> {
        let bucket = usize::try_from(offset >> self.shift).ok()?;
        let (start, end) = (*self.buckets.get(bucket)? as usize, *self.buckets.get(bucket + 1)? as usize);
        self.offsets[start..end].binary_search(&offset).ok().map(|found| start + found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_offset_and_nothing_else() {
        let offsets: Vec<u64> = (0..5000u64).map(|n| 12 + n * n * 7).collect();
        let table = SortedOffsets::new(offsets.clone());
        for (at, &offset) in offsets.iter().enumerate() {
            assert_eq!(table.position(offset), Some(at));
            assert_eq!(table.position(offset + 1), None);
        }
        assert_eq!(table.position(0), None);
        assert_eq!(table.position(u64::MAX), None);
        assert_eq!(SortedOffsets::new(Vec::new()).position(12), None);
        assert_eq!(SortedOffsets::new(vec![0]).position(0), Some(0));
    }
}
