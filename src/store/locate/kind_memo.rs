//! The type at the bottom of a delta chain, remembered per entry as walks find it, so that the next request in
//! the same chain stops at the first entry a walk has passed before instead of going on to the root.
//!
//! git walks a delta's chain to its root for every type it is asked (`packed_to_object_type`), one entry header
//! per link. On a pack written by `git repack -adf --depth=50` trees are chained 16 deep on average, and random
//! `--batch-check` requests fall into the same chains again and again (100,000 ids of small-A touch 25,585
//! chains). [`super::chain_kinds`] answers every entry at once, but only after one pass over the whole pack, which
//! pays off for a listing of most objects, not for a sample of them.
//!
//! The memo is a fixed table, direct-mapped by offset, of atomic words that each hold one offset and its type:
//! no lock and no allocation per request, and a slot that two offsets share keeps the last one written (a lost
//! entry only costs a walk). It never holds a wrong type: a type is written only once a walk has reached the
//! root, and every entry a walk passed has that root's type.
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::store::Kind;

/// Slots: a power of two near the pack's object count, within these bounds (8 bytes each: 8 MiB at most). Small
/// packs get small memos: a `--root` daemon keeps a memo for every pack of every open repository, and a forge's
/// many small repositories of a few packs each held 8 KiB a pack at 1,024 slots, part of which stays on the heap
/// through idle (a memo smaller than a page shares its pages with other allocations).
const MIN_SLOTS: usize = 1 << 6;
const MAX_SLOTS: usize = 1 << 20;

/// Types a memo is told after [`KindMemo::release_resident`] before it is used again (see `dormant`).
const PUTS_TO_WAKE: u32 = 1024;

pub(in crate::store) struct KindMemo {
    /// `offset << 3 | kind code` (codes 1..=4, so a written slot is never 0); 0: empty.
    slots: Box<[AtomicU64]>,
    /// `64 - log2(slots.len())`: the hash keeps the top bits of the product.
    shift: u32,
    /// Puts still to come before the memo is used again, after a release; 0: in use. An emptied memo answers
    /// nothing, and each slot a walk reads or writes in it faults in a page (a zero page, then a page of its own):
    /// two faults per link walked, for a memo whose entries serve only later walks of the same chains. A `--root`
    /// daemon empties a repository's memos each time its last client leaves, and most of its clients ask a few
    /// requests each (forge-node.py: 10), so until a stream has walked enough to come back to its chains, the
    /// memo stays out of the way: no page faults, no pages held.
    dormant: AtomicU32,
}

/// Slots of a memo for each chain link its pack's walks decode before the memo is made: one link for every 512
/// bytes of table. Making a memo zeroes its whole table (glibc clears a thread arena's memory for `calloc` too),
/// which a stream of a few requests never earns back: 10 `--batch-check` ids of git.git in 123 packs of 8 MiB
/// made 9 memos of 64 KiB each, 185 of the process's 732 page faults.
const SLOTS_PER_LINK_BEFORE_MADE: usize = 64;

/// Links a pack's walks decode before its memo of `objects` objects is made (see [`SLOTS_PER_LINK_BEFORE_MADE`]):
/// 1 for a pack of up to 64 objects, 128 for 8,192, 16,384 at the largest.
pub(in crate::store) fn links_before_made(objects: u32) -> u32 {
    (slots_for(objects) / SLOTS_PER_LINK_BEFORE_MADE) as u32
}

fn slots_for(objects: u32) -> usize {
    (objects as usize).next_power_of_two().clamp(MIN_SLOTS, MAX_SLOTS)
}

impl KindMemo {
    /// A memo for a pack of `objects` objects.
    pub(in crate::store) fn new(objects: u32) -> Self {
        let len = slots_for(objects);
        let slots = (0..len).map(|_| AtomicU64::new(0)).collect();
        KindMemo { slots, shift: 64 - len.trailing_zeros(), dormant: AtomicU32::new(0) }
    }

    fn slot(&self, offset: u64) -> &AtomicU64 {
        // Fibonacci hashing: offsets of neighbouring entries spread over the whole table.
        &self.slots[(offset.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize]
    }

    /// The type found at the bottom of the chain of the entry at `offset`, if a walk has passed it.
    pub(in crate::store) fn get(&self, offset: u64) -> Option<Kind> {
        if self.dormant.load(Ordering::Relaxed) != 0 {
            return None;
        }
        let word = self.slot(offset).load(Ordering::Relaxed);
        if word >> 3 != offset || word == 0 {
            return None;
        }
        kind_of_code((word & 7) as u8)
    }

    /// Starts fetching the slot of `offset`, for a [`Self::get`] a little later.
    pub(in crate::store) fn prefetch(&self, offset: u64) {
        if self.dormant.load(Ordering::Relaxed) == 0 {
            super::prefetch::prefetch(self.slot(offset));
        }
    }

    /// Forgets every type, and lets the memo's pages leave the resident set (see [`super::resident::empty`]): for a
    /// pack of a repository no client reads now. Every slot reads empty after, a lost entry only costing a walk;
    /// the memo is dormant for the next [`PUTS_TO_WAKE`] puts.
    pub(in crate::store) fn release_resident(&self) {
        self.dormant.store(PUTS_TO_WAKE, Ordering::Relaxed);
        super::resident::empty(&self.slots);
    }

    /// Remembers that the chain of the entry at `offset` ends in an object of type `kind`. An offset too large to
    /// share a word with its type (past 2^61 bytes) is not remembered.
    pub(in crate::store) fn put(&self, offset: u64, kind: Kind) {
        let dormant = self.dormant.load(Ordering::Relaxed);
        if dormant != 0 {
            // A count lost to another thread's only delays the waking.
            let _ = self.dormant.compare_exchange(dormant, dormant - 1, Ordering::Relaxed, Ordering::Relaxed);
            return;
        }
        if offset >> 61 == 0 {
            self.slot(offset).store(offset << 3 | u64::from(kind_code(kind)), Ordering::Relaxed);
        }
    }
}

/// Types as small nonzero codes (0 stands for "unknown" where codes are kept).
pub(in crate::store) fn kind_code(kind: Kind) -> u8 {
    match kind {
        Kind::Commit => 1,
        Kind::Tree => 2,
        Kind::Blob => 3,
        Kind::Tag => 4,
    }
}

pub(in crate::store) fn kind_of_code(code: u8) -> Option<Kind> {
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

    #[test]
    fn remembers_each_offset_with_its_type_and_nothing_else() {
        let memo = KindMemo::new(100);
        assert_eq!(memo.get(12), None, "empty");
        assert_eq!(memo.get(0), None, "an empty slot is not offset 0");
        memo.put(12, Kind::Tree);
        memo.put(0, Kind::Commit);
        memo.put(1 << 40, Kind::Tag);
        assert_eq!(memo.get(12), Some(Kind::Tree));
        assert_eq!(memo.get(0), Some(Kind::Commit));
        assert_eq!(memo.get(1 << 40), Some(Kind::Tag));
        memo.put(1 << 62, Kind::Blob);
        assert_eq!(memo.get(1 << 62), None, "too large to share a word with its type");
    }

    /// More offsets than slots: each lookup gives the offset's own type or nothing, never another offset's.
    #[test]
    fn a_shared_slot_keeps_the_last_offset_and_never_answers_for_another() {
        let memo = KindMemo::new(1);
        assert_eq!(memo.slots.len(), MIN_SLOTS);
        let kind = |offset: u64| [Kind::Commit, Kind::Tree, Kind::Blob, Kind::Tag][(offset % 4) as usize];
        let offsets: Vec<u64> = (0..(4 * MIN_SLOTS as u64)).map(|n| 12 + n * 37).collect();
        for &offset in &offsets {
            memo.put(offset, kind(offset));
        }
        let mut found = 0;
        for &offset in &offsets {
            if let Some(got) = memo.get(offset) {
                assert_eq!(got, kind(offset), "offset {offset}");
                found += 1;
            }
        }
        assert!(found > 0 && found <= MIN_SLOTS, "{found} remembered");
        assert_eq!(memo.get(*offsets.last().expect("offsets")), Some(kind(*offsets.last().expect("offsets"))));
    }

    /// A released memo answers nothing and keeps nothing until it was told [`PUTS_TO_WAKE`] types, then works
    /// as before.
    #[test]
    fn a_released_memo_sleeps_until_enough_types_come() {
        let memo = KindMemo::new(1 << 16);
        memo.put(12, Kind::Tree);
        memo.release_resident();
        assert_eq!(memo.get(12), None);
        let written = |memo: &KindMemo| memo.slots.iter().filter(|slot| slot.load(Ordering::Relaxed) != 0).count();
        // (12's slot may share a page with other memory, and keep its word.)
        assert!(written(&memo) <= 1);
        let before = written(&memo);
        for n in 0..u64::from(PUTS_TO_WAKE) {
            memo.put(100 + n, Kind::Blob);
        }
        assert_eq!(written(&memo), before, "nothing written while dormant");
        assert_eq!(memo.get(100), None);
        memo.put(12, Kind::Tree);
        assert_eq!(memo.get(12), Some(Kind::Tree));
    }

    #[test]
    fn slots_follow_the_object_count_within_bounds() {
        assert_eq!(KindMemo::new(3000).slots.len(), 4096);
        assert_eq!(KindMemo::new(u32::MAX).slots.len(), MAX_SLOTS);
        // A small repository's pack (forge-node's: 42 objects) holds half a KiB, not 8.
        assert_eq!(KindMemo::new(42).slots.len(), 64);
    }
}
