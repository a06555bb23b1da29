//! Listing objects: every object of every object directory (`cat-file --batch-all-objects`), and the objects
//! whose ids start with a given prefix (abbreviated names).
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::path::Path;
use std::sync::Arc;

use gix_hash::Prefix;

use crate::store::read::{Place, Where};
use crate::store::{Kind, ObjectId, Store};

/// What an abbreviated id names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrefixMatch {
    None,
    Unique(ObjectId),
    /// Every object that matches, sorted.
    Ambiguous(Vec<ObjectId>),
}

/// The order of `--batch-all-objects`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WalkOrder {
    /// Sorted by id, each object looked up as a name would be.
    Sorted,
    /// `--unordered`: as stored ([`Store::for_each_object_unordered`]).
    Unordered,
    /// `--unordered` with an objects filter ([`Store::for_each_object_bitmap_first`]).
    BitmapFirst,
}

/// Objects of a walk, with where each is stored when the walk found it (`None`: look it up).
pub(crate) type Run = Vec<(ObjectId, Option<Place>)>;

impl Store {
    /// Every object id, sorted and without duplicates (git's `oid_array_for_each_unique` over loose and
    /// packed objects).
    pub fn all_objects(&self) -> Vec<ObjectId> {
        let mut all = Vec::new();
        self.for_each_object(|id, _| all.push(id));
        all.sort_unstable();
        all.dedup();
        all
    }

    /// Every object once, in `order`, handed to `each` in runs of at most `len` (the last may be shorter) until
    /// it fails. With only packs and nothing loose, the indexes merged give the sorted ids and the reverse indexes
    /// the stored order, pack after pack, as they are: nothing is collected, sorted or deduplicated (2.75M objects
    /// in one pack took 0.4 s and 200 MB to list that way), and each object comes with its place.
    pub(crate) fn walk_all_objects<E>(
        &self,
        order: WalkOrder,
        len: usize,
        mut each: impl FnMut(Run) -> Result<(), E>,
    ) -> Result<(), E> {
        let len = len.max(1);
        let mut run = Vec::with_capacity(len);
        let mut push = |id, place| {
            run.push((id, place));
            match run.len() < len {
                true => Ok(()),
                false => each(std::mem::replace(&mut run, Vec::with_capacity(len))),
            }
        };
        let packs = self.packs_only();
        match (order, packs) {
            (WalkOrder::Sorted, Some(packs)) => {
                let mut recent = RecentlyUsed::new(&packs);
                let mut entries = merged(&packs.packs).peekable();
                let mut copies = Vec::new();
                while let Some((id, pack, position)) = entries.next() {
                    copies.clear();
                    copies.push((pack, position));
                    while let Some((_, pack, position)) = entries.next_if(|(next, ..)| *next == id) {
                        copies.push((pack, position));
                    }
                    // The empty tree is looked up: git answers it as the object it knows without storing it.
                    let read = recent.copy_git_reads(&copies).filter(|_| id != ObjectId::empty_tree(self.hash));
                    let place = read.and_then(|(pack, position)| {
                        let pack = &packs.packs[pack];
                        let at = pack.index.offset_at(position).ok()?;
                        Some(Place(Where::Packed(Arc::clone(pack), at)))
                    });
                    push(id, place)?;
                }
            }
            // With a bitmap, a filter's walk orders objects by type (git walks the bitmap). Each pack in turn, its
            // entries by offset, is git's order; with no object in two packs, nothing is skipped as seen.
            (WalkOrder::Unordered | WalkOrder::BitmapFirst, Some(PacksOnly { packs, .. }))
                if (order == WalkOrder::Unordered || !packs.iter().any(is_bitmapped)) && !in_two_packs(&packs) =>
            {
                for pack in &packs {
                    for (offset, position) in pack.rev_index().iter() {
                        push(
                            pack.index.oid_at(position).to_owned(),
                            Some(Place(Where::Packed(Arc::clone(pack), offset))),
                        )?;
                    }
                }
            }
            (WalkOrder::Sorted, None) => {
                for id in self.all_objects() {
                    push(id, None)?;
                }
            }
            (WalkOrder::Unordered | WalkOrder::BitmapFirst, _) => {
                let mut all = Vec::new();
                match order {
                    WalkOrder::BitmapFirst => self.for_each_object_bitmap_first(|id, place| all.push((id, place))),
                    _ => self.for_each_object_unordered(|id, place| all.push((id, place))),
                }
                for (id, place) in all {
                    push(id, Some(place))?;
                }
            }
        }
        match run.is_empty() {
            true => Ok(()),
            false => each(run),
        }
    }

    /// The packs of every object directory, in git's order, when no object is loose and each pack's index lists
    /// every id once (git lists each object once: a duplicate inside one index would need the seen-set).
    fn packs_only(&self) -> Option<PacksOnly> {
        if self.dirs.iter().any(|dir| has_loose(&dir.path, self.hash)) {
            return None;
        }
        let (mut packs, mut uncovered) = (Vec::new(), Vec::new());
        for set in self.snapshots() {
            let first_uncovered = set.layers().iter().map(|layer| layer.packs(&self.opener).count()).sum::<usize>();
            for (n, pack) in set.all_packs(&self.opener).enumerate() {
                packs.push(Arc::clone(pack));
                uncovered.push(n >= first_uncovered);
            }
        }
        let unique = |index: &super::pack_index::PackIndex| {
            (1..index.num_objects()).all(|position| index.oid_at(position - 1) != index.oid_at(position))
        };
        packs.iter().all(|pack| unique(&pack.index)).then_some(PacksOnly { packs, uncovered })
    }

    /// Every object once, in git's `--unordered` order: loose objects of each object directory (by
    /// subdirectory, then in directory order), then each pack in pack order, its entries by offset.
    pub(crate) fn for_each_object_unordered(&self, mut each: impl FnMut(ObjectId, Place)) {
        let mut seen = HashSet::new();
        self.for_each_object(|id, place| {
            if seen.insert(id) {
                each(id, place);
            }
        });
    }

    /// Every object once in the order git 2.55 lists them with an objects filter (`batch_each_object`): loose
    /// objects, then those of the first pack with a bitmap (commits, trees, blobs, tags, each by offset: the
    /// bitmap's walk), then the other packs as [`Self::for_each_object_unordered`] has them. Without a pack
    /// bitmap, that order. (A multi-pack-index bitmap, which git would walk instead, is not read.)
    pub(crate) fn for_each_object_bitmap_first(&self, mut each: impl FnMut(ObjectId, Place)) {
        let mut all = Vec::new();
        self.for_each_object(|id, place| all.push((id, place)));
        let bitmapped = all.iter().find_map(|(_, place)| match &place.0 {
            Where::Packed(pack, _) if is_bitmapped(pack) => Some(pack.id),
            _ => None,
        });
        if let Some(bitmapped) = bitmapped {
            let in_bitmap = |place: &Place| matches!(&place.0, Where::Packed(pack, _) if pack.id == bitmapped);
            let rank = |id: &ObjectId, place: &Place| {
                let kind = self.info_at(id, place, false).map(|info| info.kind);
                [Kind::Commit, Kind::Tree, Kind::Blob, Kind::Tag].iter().position(|k| kind.as_ref().ok() == Some(k))
            };
            let first_packed =
                all.iter().position(|(_, place)| matches!(place.0, Where::Packed(..))).unwrap_or(all.len());
            let (mut bitmap, others): (Vec<_>, Vec<_>) =
                all.split_off(first_packed).into_iter().partition(|(_, place)| in_bitmap(place));
            // A stable sort: within a type, the pack's order.
            bitmap.sort_by_cached_key(|(id, place)| rank(id, place));
            all.extend(bitmap);
            all.extend(others);
        }
        let mut seen = HashSet::new();
        for (id, place) in all {
            if seen.insert(id) {
                each(id, place);
            }
        }
    }

    fn for_each_object(&self, mut each: impl FnMut(ObjectId, Place)) {
        for dir in &self.dirs {
            for_each_loose(&dir.path, self.hash, |id, path| each(id, Place(Where::Loose(path))));
        }
        for set in self.snapshots() {
            for pack in set.all_packs(&self.opener) {
                for (offset, position) in pack.rev_index().iter() {
                    each(pack.index.oid_at(position).to_owned(), Place(Where::Packed(Arc::clone(pack), offset)));
                }
            }
        }
    }

    /// Objects in all packs, duplicates counted (git's `repo_approximate_object_count`).
    pub fn packed_object_count(&self) -> usize {
        self.snapshots().iter().map(|set| set.object_count(&self.opener)).sum()
    }

    /// The objects whose ids start with `prefix`, in packs and loose.
    pub fn find_prefix(&self, prefix: &Prefix) -> PrefixMatch {
        let mut found = Vec::new();
        for set in self.snapshots() {
            for pack in set.all_packs(&self.opener) {
                let range = pack.index.prefix_range(prefix);
                found.extend(range.map(|position| pack.index.oid_at(position).to_owned()));
            }
        }
        let hex = prefix.to_string();
        for dir in &self.dirs {
            let subdir = dir.path.join(&hex[..2]);
            for_each_loose_in(&subdir, &hex[..2], self.hash, |id, _| {
                if id.to_hex().to_string().starts_with(&hex) {
                    found.push(id);
                }
            });
        }
        found.sort_unstable();
        found.dedup();
        match found.len() {
            0 => PrefixMatch::None,
            1 => PrefixMatch::Unique(found[0]),
            _ => PrefixMatch::Ambiguous(found),
        }
    }
}

/// Has `pack` a bitmap (which git walks to filter)?
fn is_bitmapped(pack: &Arc<super::pack::Pack>) -> bool {
    pack.pack_path.with_extension("bitmap").is_file()
}

/// Every pack of a repository with nothing loose, in git's order: those a multi-pack-index covers first.
struct PacksOnly {
    packs: Vec<Arc<super::pack::Pack>>,
    /// Is `packs[n]` one that no multi-pack-index covers (looked up in git's most-recently-used order)?
    uncovered: Vec<bool>,
}

/// git's lookup order over the packs that no multi-pack-index covers (`find_pack_entry`): newest first at the
/// start, and each pack in which a lookup finds an object moves to the front. Sorted `--batch-all-objects` looks
/// every object up in turn, so which copy of an object stored in two packs it reads (its size on disk, its delta
/// base) depends on where the objects before it were found.
struct RecentlyUsed {
    order: Vec<usize>,
    uncovered: Vec<bool>,
}

impl RecentlyUsed {
    fn new(packs: &PacksOnly) -> RecentlyUsed {
        let order = (0..packs.packs.len()).filter(|&pack| packs.uncovered[pack]).collect();
        RecentlyUsed { order, uncovered: packs.uncovered.clone() }
    }

    /// The copy git's lookup reads of an object stored at `copies` (pack, position), with the lookup order moved
    /// as git moves it; `None` when a multi-pack-index chooses among several copies (the store's lookup asks it).
    fn copy_git_reads(&mut self, copies: &[(usize, u32)]) -> Option<(usize, u32)> {
        if let [(pack, position)] = copies
            && !self.uncovered[*pack]
        {
            return Some((*pack, *position));
        }
        if copies.iter().any(|&(pack, _)| !self.uncovered[pack]) {
            return None;
        }
        let at = self.order.iter().position(|pack| copies.iter().any(|copy| copy.0 == *pack))?;
        let pack = self.order.remove(at);
        self.order.insert(0, pack);
        copies.iter().find(|copy| copy.0 == pack).copied()
    }
}

/// Every entry of every pack's index, merged in id order (ids in two packs come once from each, in a row): the
/// index and the reverse index give what `--batch-all-objects` lists, with nothing collected or sorted.
fn merged(packs: &[Arc<super::pack::Pack>]) -> impl Iterator<Item = (ObjectId, usize, u32)> {
    let head = |pack: usize, position: u32| Reverse((packs[pack].index.oid_at(position).to_owned(), pack, position));
    let mut heads: BinaryHeap<_> =
        (0..packs.len()).filter(|&pack| packs[pack].index.num_objects() > 0).map(|pack| head(pack, 0)).collect();
    std::iter::from_fn(move || {
        let Reverse((id, pack, position)) = heads.pop()?;
        if position + 1 < packs[pack].index.num_objects() {
            heads.push(head(pack, position + 1));
        }
        Some((id, pack, position))
    })
}

/// Is any object stored in two of `packs`?
fn in_two_packs(packs: &[Arc<super::pack::Pack>]) -> bool {
    if packs.len() < 2 {
        return false;
    }
    let mut last = None;
    merged(packs).any(|(id, _, _)| last.replace(id) == Some(id))
}

/// Has `objects_dir` any loose object?
fn has_loose(objects_dir: &Path, hash: gix_hash::Kind) -> bool {
    (0..=255u8).any(|byte| {
        let name = format!("{byte:02x}");
        let mut found = false;
        for_each_loose_in(&objects_dir.join(&name), &name, hash, |_, _| found = true);
        found
    })
}

/// Loose objects of `objects_dir`, subdirectories `00` to `ff` in order, each in directory order.
fn for_each_loose(objects_dir: &Path, hash: gix_hash::Kind, mut each: impl FnMut(ObjectId, std::path::PathBuf)) {
    for byte in 0..=255u8 {
        let name = format!("{byte:02x}");
        for_each_loose_in(&objects_dir.join(&name), &name, hash, &mut each);
    }
}

/// The loose objects of one subdirectory; files whose names are not the rest of an id are skipped, as git
/// skips them.
fn for_each_loose_in(
    subdir: &Path,
    first: &str,
    hash: gix_hash::Kind,
    mut each: impl FnMut(ObjectId, std::path::PathBuf),
) {
    let Ok(entries) = std::fs::read_dir(subdir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let rest = name.as_encoded_bytes();
        if rest.len() + 2 != hash.len_in_hex() || !rest.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            continue;
        }
        let hex = [first.as_bytes(), rest].concat();
        if let Ok(id) = ObjectId::from_hex(&hex) {
            each(id, entry.path());
        }
    }
}
