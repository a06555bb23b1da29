//! The marks of a stream, kept compactly. Frontends number marks 1, 2, 3, … (git fast-export does, and the marks
//! files git writes list them so), so most marks live in one array of raw ids indexed by mark: 20 bytes and a bit
//! a mark for SHA-1, where a `HashMap<u64, ObjectId>` took about 100 (ten million marks: 200 MB, not 1.4 GiB).
//! A mark far past the others waits in a sorted map until the array reaches it.
use std::collections::BTreeMap;
use std::iter::Peekable;

use gix_hash::{Kind, ObjectId, oid};

/// The array grows to take a mark past its end if it would then be at least half full, give or take this many
/// slots: a small stream's marks all go to the array, whatever their numbers.
const SLACK: u64 = 1024;

/// The map is first tried for marks the array could take when it holds this many (see [`Table::fold`]).
const FIRST_FOLD: usize = 4096;

/// Marks and the ids they name: an array for marks `1..=slots`, and a map for the rest.
#[derive(Debug, Default)]
pub(super) struct Table {
    /// The hash of every id in `dense`, set by the first one stored there; an id of another hash goes to `sparse`.
    kind: Option<Kind>,
    /// The ids of marks `1..=slots`, end to end; a slot means nothing unless its bit in `present` is set.
    dense: Vec<u8>,
    present: Vec<u64>,
    /// How many bits of `present` are set.
    in_dense: u64,
    /// Marks the array does not reach, and marks whose id is of another hash than the array's.
    sparse: BTreeMap<u64, ObjectId>,
    /// The size of `sparse` at which to try folding it into the array next.
    next_fold: usize,
}

impl Table {
    /// The table of marks `1..=n` where `ids` holds n ids of `kind` end to end (a marks file read whole).
    pub(super) fn from_dense(kind: Kind, mut ids: Vec<u8>) -> Table {
        ids.shrink_to_fit();
        let slots = ids.len() / kind.len_in_bytes();
        let mut present = vec![u64::MAX; slots / 64];
        if !slots.is_multiple_of(64) {
            present.push((1 << (slots % 64)) - 1);
        }
        let in_dense = slots as u64;
        Table { kind: Some(kind), dense: ids, present, in_dense, sparse: BTreeMap::new(), next_fold: FIRST_FOLD }
    }

    pub(super) fn len(&self) -> u64 {
        self.in_dense + self.sparse.len() as u64
    }

    pub(super) fn get(&self, mark: u64) -> Option<&oid> {
        match self.slot(mark) {
            Some(slot) if self.is_present(slot) => Some(self.id_at(slot)),
            _ => self.sparse.get(&mark).map(|id| id.as_ref()),
        }
    }

    /// Defines or redefines `mark` (not 0); true if it was not defined before.
    pub(super) fn set(&mut self, mark: u64, id: &oid) -> bool {
        debug_assert_ne!(mark, 0, "mark 0 is never stored");
        if self.array_takes(mark, id.kind()) {
            self.grow_to(mark, id.kind());
            return self.put(mark, id);
        }
        let was_in_array = self.slot(mark).is_some_and(|slot| self.clear(slot));
        let new = self.sparse.insert(mark, id.to_owned()).is_none() && !was_in_array;
        if self.sparse.len() >= self.next_fold.max(FIRST_FOLD) {
            self.fold();
        }
        new
    }

    /// Forgets `mark`; true if it was defined.
    pub(super) fn remove(&mut self, mark: u64) -> bool {
        self.slot(mark).is_some_and(|slot| self.clear(slot)) || self.sparse.remove(&mark).is_some()
    }

    /// Every mark and its id, by ascending mark.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, &oid)> + '_ {
        let dense =
            (0..self.slots()).filter(|&slot| self.is_present(slot)).map(|slot| (slot as u64 + 1, self.id_at(slot)));
        let sparse = self.sparse.iter().map(|(mark, id)| (*mark, id.as_ref()));
        ByMark { a: dense.peekable(), b: sparse.peekable() }
    }

    /// Whether the array takes `mark`, for an id of `kind`: a mark it reaches, or one that leaves it at least half
    /// full (give or take [`SLACK`]) once grown to it.
    fn array_takes(&self, mark: u64, kind: Kind) -> bool {
        self.kind.is_none_or(|own| own == kind)
            && (mark <= self.slots() as u64 || mark <= (self.in_dense + 1).saturating_mul(2).saturating_add(SLACK))
    }

    /// Grows the array to reach `mark`, moving into it the marks of the map it now reaches.
    fn grow_to(&mut self, mark: u64, kind: Kind) {
        let kind = *self.kind.get_or_insert(kind);
        let old = self.slots() as u64;
        if mark <= old {
            return;
        }
        // Amortised doubling, as for any Vec; a large array grows by `mremap`, without a copy.
        self.dense.resize(mark as usize * kind.len_in_bytes(), 0);
        self.present.resize((mark as usize).div_ceil(64), 0);
        let reached: Vec<(u64, ObjectId)> =
            self.sparse.range(old + 1..=mark).filter(|(_, id)| id.kind() == kind).map(|(m, id)| (*m, *id)).collect();
        for (mark, id) in reached {
            self.sparse.remove(&mark);
            self.put(mark, &id);
        }
    }

    /// When the map has grown (a frontend numbering marks downwards, or from far away): grows the array as far as
    /// it stays half full, taking in the marks of the map it then reaches. Tried each time the map doubles, so
    /// its cost is a constant per mark.
    fn fold(&mut self) {
        let kind = self.kind.or_else(|| self.sparse.values().next().map(|id| id.kind()));
        if let Some(kind) = kind {
            let slots = self.slots() as u64;
            let (mut count, mut reach) = (self.in_dense, slots);
            for (&mark, id) in self.sparse.range(slots + 1..) {
                if id.kind() == kind {
                    count += 1;
                    if mark <= count.saturating_mul(2).saturating_add(SLACK) {
                        reach = mark;
                    }
                }
            }
            if reach > slots {
                self.grow_to(reach, kind);
            }
        }
        self.next_fold = self.sparse.len().saturating_mul(2);
    }

    /// Stores `id` in the array at `mark`, which it reaches; true if the mark was not defined.
    fn put(&mut self, mark: u64, id: &oid) -> bool {
        let slot = (mark - 1) as usize;
        let len = id.as_bytes().len();
        self.dense[slot * len..(slot + 1) * len].copy_from_slice(id.as_bytes());
        if self.is_present(slot) {
            return false;
        }
        self.present[slot / 64] |= 1 << (slot % 64);
        self.in_dense += 1;
        // Where the array reaches, the map holds only ids of another hash.
        self.sparse.is_empty() || self.sparse.remove(&mark).is_none()
    }

    /// Clears the array's slot; true if it was set.
    fn clear(&mut self, slot: usize) -> bool {
        if !self.is_present(slot) {
            return false;
        }
        self.present[slot / 64] &= !(1 << (slot % 64));
        self.in_dense -= 1;
        true
    }

    fn slots(&self) -> usize {
        self.kind.map_or(0, |kind| self.dense.len() / kind.len_in_bytes())
    }

    /// The array's slot for `mark`, if it reaches it.
    fn slot(&self, mark: u64) -> Option<usize> {
        (mark != 0 && mark <= self.slots() as u64).then(|| (mark - 1) as usize)
    }

    fn is_present(&self, slot: usize) -> bool {
        self.present[slot / 64] & (1 << (slot % 64)) != 0
    }

    fn id_at(&self, slot: usize) -> &oid {
        let len = self.kind.map_or(0, |kind| kind.len_in_bytes());
        oid::from_bytes_unchecked(&self.dense[slot * len..(slot + 1) * len])
    }
}

/// Two iterators of marks, each by ascending mark and with no mark in both, merged.
struct ByMark<A: Iterator, B: Iterator> {
    a: Peekable<A>,
    b: Peekable<B>,
}

impl<'t, A, B> Iterator for ByMark<A, B>
where
    A: Iterator<Item = (u64, &'t oid)>,
    B: Iterator<Item = (u64, &'t oid)>,
{
    type Item = (u64, &'t oid);

    fn next(&mut self) -> Option<Self::Item> {
        match (self.a.peek(), self.b.peek()) {
            (Some((a, _)), Some((b, _))) if b < a => self.b.next(),
            (Some(_), _) => self.a.next(),
            (None, _) => self.b.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u64) -> ObjectId {
        let mut bytes = [0x5a; 20];
        bytes[..8].copy_from_slice(&n.to_be_bytes());
        ObjectId::from_bytes_or_panic(&bytes)
    }

    fn sha256(n: u64) -> ObjectId {
        let mut bytes = [0xa5; 32];
        bytes[..8].copy_from_slice(&n.to_be_bytes());
        ObjectId::from_bytes_or_panic(&bytes)
    }

    fn marks(table: &Table) -> Vec<(u64, ObjectId)> {
        table.iter().map(|(mark, id)| (mark, id.to_owned())).collect()
    }

    #[test]
    fn dense_marks_live_in_the_array() {
        let mut table = Table::default();
        for mark in 1..=10_000 {
            assert!(table.set(mark, &id(mark)));
        }
        assert_eq!((table.len(), table.sparse.len(), table.slots()), (10_000, 0, 10_000));
        assert_eq!(table.get(5_000), Some(id(5_000).as_ref()));
        assert_eq!(table.get(0), None);
        assert_eq!(table.get(10_001), None);
        assert_eq!(marks(&table), (1..=10_000).map(|mark| (mark, id(mark))).collect::<Vec<_>>());
    }

    #[test]
    fn far_marks_wait_in_the_map_until_the_array_reaches_them() {
        let mut table = Table::default();
        assert!(table.set(100_000, &id(0)));
        assert!(table.set(u64::MAX, &id(1)));
        assert_eq!(table.sparse.len(), 2, "far past an empty array");
        for mark in (1..=100_500).filter(|&mark| mark != 100_000) {
            assert!(table.set(mark, &id(mark)));
        }
        assert_eq!(table.sparse.len(), 1, "the array grew past 100,000 and took it in");
        assert_eq!(table.get(100_000), Some(id(0).as_ref()));
        assert_eq!(table.get(u64::MAX), Some(id(1).as_ref()));
        assert_eq!(table.len(), 100_501);
        let listed = marks(&table);
        assert!(listed.windows(2).all(|pair| pair[0].0 < pair[1].0), "ascending");
        assert_eq!(listed[99_999..100_000], [(100_000, id(0))]);
        assert_eq!(listed.last(), Some(&(u64::MAX, id(1))));
    }

    #[test]
    fn marks_numbered_downwards_are_folded_into_the_array() {
        let mut table = Table::default();
        for mark in (1..=100_000).rev() {
            assert!(table.set(mark, &id(mark)));
        }
        assert!(table.sparse.len() < 60_000, "folded once half of them were there: {}", table.sparse.len());
        assert_eq!(table.len(), 100_000);
        assert_eq!(marks(&table), (1..=100_000).map(|mark| (mark, id(mark))).collect::<Vec<_>>());
    }

    #[test]
    fn a_redefined_mark_names_the_later_id_and_counts_once() {
        let mut table = Table::default();
        assert!(table.set(3, &id(1)));
        assert!(!table.set(3, &id(2)));
        assert!(table.set(5_000_000, &id(3)));
        assert!(!table.set(5_000_000, &id(4)));
        assert_eq!(table.len(), 2);
        assert_eq!(marks(&table), [(3, id(2)), (5_000_000, id(4))]);
    }

    #[test]
    fn removed_marks_are_gone_from_both_parts() {
        let mut table = Table::default();
        for mark in [1, 2, 3, 9_000_000] {
            table.set(mark, &id(mark));
        }
        assert!(table.remove(2));
        assert!(!table.remove(2));
        assert!(table.remove(9_000_000));
        assert!(!table.remove(4));
        assert_eq!(marks(&table), [(1, id(1)), (3, id(3))]);
        assert_eq!(table.len(), 2);
        assert!(table.set(2, &id(20)), "defined again");
        assert_eq!(table.get(2), Some(id(20).as_ref()));
    }

    #[test]
    fn an_id_of_another_hash_goes_to_the_map_and_replaces_the_arrays_copy() {
        let mut table = Table::default();
        for mark in 1..=3 {
            table.set(mark, &id(mark));
        }
        assert!(!table.set(2, &sha256(2)));
        assert_eq!(table.get(2), Some(sha256(2).as_ref()));
        assert_eq!(table.len(), 3);
        assert!(!table.set(2, &id(22)), "back to the array, out of the map");
        assert_eq!(table.sparse.len(), 0);
        assert_eq!(marks(&table), [(1, id(1)), (2, id(22)), (3, id(3))]);
    }

    #[test]
    fn a_table_read_whole_holds_marks_one_to_n() {
        for n in [0, 1, 63, 64, 65, 1000] {
            let ids: Vec<u8> = (1..=n).flat_map(|mark| id(mark).as_bytes().to_vec()).collect();
            let mut table = Table::from_dense(Kind::Sha1, ids);
            assert_eq!(table.len(), n);
            assert_eq!(marks(&table), (1..=n).map(|mark| (mark, id(mark))).collect::<Vec<_>>(), "{n}");
            assert!(table.set(n + 1, &id(n + 1)), "one more, past the end");
            assert_eq!(table.get(n + 1), Some(id(n + 1).as_ref()));
        }
    }
}
