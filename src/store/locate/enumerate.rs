//! Listing objects: every object of every object directory (`cat-file --batch-all-objects`), and the objects
//! whose ids start with a given prefix (abbreviated names).
use std::collections::HashSet;
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
    /// it fails. With one pack and nothing loose, the pack's index gives the sorted ids and its reverse index the
    /// stored order as they are: nothing is collected, sorted or deduplicated (2.75M objects took 0.4 s and
    /// 200 MB to list that way), and each object comes with its place.
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
        match (order, self.lone_pack()) {
            (WalkOrder::Sorted, Some(pack)) => {
                // The empty tree is looked up (git answers it as the object it knows without storing it).
                let (index, empty_tree) = (&pack.index, ObjectId::empty_tree(self.hash));
                for position in 0..index.num_objects() {
                    let id = index.oid_at(position);
                    let place = index.offset_at(position).ok().filter(|_| id != empty_tree);
                    push(id.to_owned(), place.map(|at| Place(Where::Packed(Arc::clone(&pack), at))))?;
                }
            }
            // With a bitmap, a filter's walk orders objects by type (git walks the bitmap).
            (WalkOrder::Unordered | WalkOrder::BitmapFirst, Some(pack))
                if order == WalkOrder::Unordered || !is_bitmapped(&pack) =>
            {
                for (offset, position) in pack.rev_index().iter() {
                    push(
                        pack.index.oid_at(position).to_owned(),
                        Some(Place(Where::Packed(Arc::clone(&pack), offset))),
                    )?;
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

    /// The only pack of every object directory, when there is one and no loose object, and its index lists every
    /// id once (git lists each object once: a duplicate would need the seen-set).
    fn lone_pack(&self) -> Option<Arc<super::pack::Pack>> {
        let mut packs =
            self.snapshots().into_iter().flat_map(|set| set.all_packs(&self.opener).cloned().collect::<Vec<_>>());
        let pack = packs.next()?;
        if packs.next().is_some() || self.dirs.iter().any(|dir| has_loose(&dir.path, self.hash)) {
            return None;
        }
        let index = &pack.index;
        let unique = (1..index.num_objects()).all(|position| index.oid_at(position - 1) != index.oid_at(position));
        unique.then_some(pack)
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
