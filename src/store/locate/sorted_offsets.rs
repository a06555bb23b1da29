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

/// Bits of an offset sorted per pass of [`sort_offsets`] at most: 8,192 counters (32 KiB) stay in the L1 cache.
const RADIX_BITS: u32 = 13;
/// Below this many offsets a comparison sort is as quick as the counters' set-up.
const RADIX_MIN: usize = 1 << 10;

/// Sorts pack offsets: a least-significant-digit radix sort, each pass a count and a scatter, as few passes as
/// 13-bit digits allow for the largest offset (two on a pack under 64 MiB, three under 512 GiB), the bits spread
/// evenly over them. A pack's scan of its delta bases sorts every entry's offset and every delta's base offset:
/// `sort_unstable` of those was 111 M of the 1.98 G instructions of a 20,000-blob sample read in pack order
/// (small-A), a twentieth of its CPU spent on the side.
pub(in crate::store) fn sort_offsets(offsets: &mut Vec<u64>) {
    if offsets.len() < RADIX_MIN {
        offsets.sort_unstable();
        return;
    }
    let bits = u64::BITS - offsets.iter().copied().max().unwrap_or(0).leading_zeros();
    let passes = bits.div_ceil(RADIX_BITS);
    let Some(digit_bits) = bits.checked_div(passes) else { return }; // every offset is 0
    let digit_bits = digit_bits + u32::from(bits % passes != 0);
    let mask = (1u64 << digit_bits) - 1;
    let mut from = std::mem::take(offsets);
    let mut to = vec![0u64; from.len()];
    let mut starts = vec![0u32; 1 << digit_bits];
    for pass in 0..passes {
        let shift = pass * digit_bits;
        let digit = |offset: u64| ((offset >> shift) & mask) as usize;
        starts.fill(0);
        for &offset in &from {
            starts[digit(offset)] += 1;
        }
        let mut next = 0;
        for start in &mut starts {
            (*start, next) = (next, next + *start);
        }
        for &offset in &from {
            let slot = &mut starts[digit(offset)];
            to[*slot as usize] = offset;
            *slot += 1;
        }
        std::mem::swap(&mut from, &mut to);
    }
    *offsets = from;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_offsets_as_a_comparison_sort_does() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut random = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for (count, bits) in [(0, 8), (5, 8), (1500, 12), (5000, 26), (5000, 40), (3000, 64)] {
            let mut offsets: Vec<u64> = (0..count).map(|_| random() >> (64 - bits)).collect();
            offsets.extend_from_within(..offsets.len() / 3); // repeats, as bases of several deltas are
            let mut expected = offsets.clone();
            expected.sort_unstable();
            sort_offsets(&mut offsets);
            assert_eq!(offsets, expected, "{count} offsets of {bits} bits");
        }
    }

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
