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
        let is_bitmapped = |pack: &Arc<super::pack::Pack>| pack.pack_path.with_extension("bitmap").is_file();
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
                for (offset, position) in self.rev_index(pack).iter() {
                    each(pack.index.oid_at(*position).to_owned(), Place(Where::Packed(Arc::clone(pack), *offset)));
                }
            }
        }
    }

    /// Objects in all packs, duplicates counted (git's `repo_approximate_object_count`).
    pub fn packed_object_count(&self) -> usize {
        self.snapshots().iter().map(|set| set.object_count()).sum()
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
