//! The packs of one object directory as last scanned, and how an object is looked up in them: through the
//! multi-pack-index layers first, then in each pack that no layer covers, newest first (git's `find_pack_entry`).
//!
//! A scan reads the directory listing and each midx's and index's header: nothing whose length is the object
//! count. Packs a midx covers are opened when an object is first read from them.
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gix_hash::oid;

use super::midx::{self, Hit, MidxLayer, PackOpener};
use super::pack::Pack;
use crate::store::PackError;

#[derive(Default)]
pub(in crate::store) struct PackSet {
    /// The multi-pack-index layers, newest first; then layers of earlier scans that a rewrite replaced, whose
    /// opened packs stay readable as any pack whose file is gone does.
    layers: Vec<Arc<MidxLayer>>,
    /// Packs that no layer covers, newest first; then packs of earlier scans whose files are gone.
    packs: Vec<Arc<Pack>>,
    /// Index files that could not be read; an object missing elsewhere may be in them.
    pub(in crate::store) bad_indexes: Vec<(PathBuf, Arc<PackError>)>,
}

/// One place where an object is, or why a place that lists it cannot say where.
pub(in crate::store) enum Copy<'a> {
    At(&'a Arc<Pack>, u64),
    /// The index (a pack's, or a midx) that lists the object, and what is wrong with its entry.
    Damaged(PathBuf, Arc<PackError>),
}

impl PackSet {
    /// Every copy of `id` in this set, in lookup order: one per midx layer that lists it (in a pack that can
    /// be opened), then one per pack no layer covers.
    pub(in crate::store) fn copies<'a>(
        &'a self,
        id: &'a oid,
        opener: &'a PackOpener,
    ) -> impl Iterator<Item = Copy<'a>> + 'a {
        let through_midx = self.layers.iter().filter_map(move |layer| match layer.find(id, opener)? {
            Hit::At(pack, offset) => Some(Copy::At(pack, offset)),
            Hit::Damaged(err) => Some(Copy::Damaged(layer.path().to_owned(), Arc::new(PackError::Midx(err)))),
        });
        let in_packs = self.packs.iter().filter_map(move |pack| match pack.lookup(id)? {
            Ok(offset) => Some(Copy::At(pack, offset)),
            Err(err) => Some(Copy::Damaged(pack.index_path(), Arc::new(PackError::Index(err)))),
        });
        through_midx.chain(in_packs)
    }

    /// The multi-pack-index layers, in lookup order.
    pub(in crate::store) fn layers(&self) -> &[Arc<MidxLayer>] {
        &self.layers
    }

    /// The packs that no layer covers, in lookup order.
    pub(in crate::store) fn uncovered_packs(&self) -> &[Arc<Pack>] {
        &self.packs
    }

    /// The first intact place of `id`.
    pub(in crate::store) fn find<'a>(&'a self, id: &'a oid, opener: &'a PackOpener) -> Option<(&'a Arc<Pack>, u64)> {
        self.copies(id, opener).find_map(|copy| match copy {
            Copy::At(pack, offset) => Some((pack, offset)),
            Copy::Damaged(..) => None,
        })
    }

    /// Every pack, those the midx layers cover first (opening them now).
    pub(in crate::store) fn all_packs<'a>(
        &'a self,
        opener: &'a PackOpener,
    ) -> impl Iterator<Item = &'a Arc<Pack>> + 'a {
        self.layers.iter().flat_map(move |layer| layer.packs(opener)).chain(&self.packs)
    }

    /// Packs opened so far.
    pub(in crate::store) fn opened_count(&self) -> usize {
        self.packs.len() + self.layers.iter().map(|layer| layer.opened()).sum::<usize>()
    }

    /// Objects listed, duplicates counted (git's `repo_approximate_object_count`: a midx counts as its total).
    pub(in crate::store) fn object_count(&self) -> usize {
        let in_layers = self.layers.iter().map(|layer| layer.num_objects() as usize);
        in_layers.chain(self.packs.iter().map(|pack| pack.index.num_objects() as usize)).sum()
    }

    /// The set as `pack_dir` holds it now, keeping every pack (and midx layer) of `current` that is still there
    /// or was already opened; `None` if nothing changed.
    pub(in crate::store) fn rescan(current: &PackSet, pack_dir: &Path, opener: &PackOpener) -> Option<PackSet> {
        let mut next = PackSet::default();
        let mut changed = false;
        for layer in midx::load(pack_dir, opener.hash) {
            match current.layers.iter().find(|known| known.same_file(&layer)) {
                Some(known) => next.layers.push(Arc::clone(known)),
                None => {
                    changed = true;
                    next.layers.push(Arc::new(layer));
                }
            }
        }
        let covered = midx::covered(&next.layers);
        // Layers that a rewrite replaced stay, after the live ones.
        for layer in &current.layers {
            if !next.layers.iter().any(|l| Arc::ptr_eq(l, layer)) {
                changed = true;
                next.layers.push(Arc::clone(layer));
            }
        }
        let mut idx_paths: Vec<PathBuf> = std::fs::read_dir(pack_dir)
            .into_iter()
            .flatten()
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.extension() == Some(OsStr::new("idx")))
            .filter(|path| path.file_name().is_none_or(|name| !covered.contains(Path::new(name))))
            .collect();
        idx_paths.sort();
        for idx_path in idx_paths {
            let pack_path = idx_path.with_extension("pack");
            if let Some(known) = current.packs.iter().find(|p| p.pack_path == pack_path) {
                next.packs.push(Arc::clone(known));
                continue;
            }
            changed = true;
            match opener.open(&idx_path) {
                Ok(pack) => next.packs.push(Arc::new(pack)),
                Err(why) => next.bad_indexes.push((idx_path, Arc::new(why))),
            }
        }
        // Packs whose files are gone (or that a new midx covers) stay mapped and readable, after the live ones.
        for pack in &current.packs {
            if !next.packs.iter().any(|p| Arc::ptr_eq(p, pack)) {
                next.packs.push(Arc::clone(pack));
            }
        }
        changed |= next.bad_indexes.len() != current.bad_indexes.len() || next.packs.len() != current.packs.len();
        // Newest first, as git orders packs: recent objects are asked for most.
        next.packs.sort_by_key(|pack| std::cmp::Reverse(pack.mtime));
        changed.then_some(next)
    }
}
