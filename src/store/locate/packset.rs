//! The packs of one object directory as last scanned, and how an object is looked up in them: through the
//! multi-pack-index layers first, then in each pack that no layer covers, newest first (git's `find_pack_entry`).
//!
//! A scan lists the directory, reads each midx's header, and stats each `.pack` for the search order: nothing of
//! a pack is opened. As git does (`prepare_packed_git` lists, `find_pack_entry` opens an index when the search
//! reaches it), a pack's index is mapped when a lookup first reaches it, and its data when an object is first
//! read from it: with 123 packs and no midx, a process that asks nothing opens nothing, and the first lookups
//! open the indexes they search up to the pack that has the object. Packs a midx covers are opened when an object
//! is first read from them.
use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use gix_hash::oid;

use super::midx::{self, Hit, MidxLayer, PackOpener};
use super::pack::Pack;
use crate::store::{IndexError, PackError};

#[derive(Default)]
pub(in crate::store) struct PackSet {
    /// The multi-pack-index layers, newest first; then layers of earlier scans that a rewrite replaced, whose
    /// opened packs stay readable as any pack whose file is gone does.
    layers: Vec<Arc<MidxLayer>>,
    /// Packs that no layer covers, newest first; then packs of earlier scans, opened then, whose files are gone.
    packs: Vec<Arc<Listed>>,
}

/// A pack of the listing, opened when a lookup first reaches it.
struct Listed {
    idx_path: PathBuf,
    /// The `.pack` file's modification time at the scan, in whole seconds as git keeps it, which orders the
    /// search (the epoch if it has none).
    mtime: i64,
    /// The opened pack, or why its index cannot be used.
    opened: OnceLock<Result<Arc<Pack>, Arc<PackError>>>,
}

impl Listed {
    fn new(idx_path: PathBuf) -> Listed {
        let pack_path = idx_path.with_extension("pack");
        let mtime = std::fs::metadata(pack_path).map_or(0, |m| m.mtime());
        Listed { idx_path, mtime, opened: OnceLock::new() }
    }

    /// The pack, its index opened now if this is the first lookup to reach it.
    fn open(&self, opener: &PackOpener) -> Result<&Arc<Pack>, &Arc<PackError>> {
        self.opened.get_or_init(|| opener.open(&self.idx_path).map(Arc::new).map_err(Arc::new)).as_ref()
    }

    /// The pack, if a lookup opened it already.
    fn opened(&self) -> Option<&Arc<Pack>> {
        self.opened.get()?.as_ref().ok()
    }

    /// Whether its index was tried and could not be used, or its pack file was found gone: a rescan lists it
    /// afresh, as git's `is_pack_valid` tries a pack again at each lookup.
    fn failed(&self) -> bool {
        self.opened
            .get()
            .is_some_and(|opened| opened.as_ref().is_ok_and(|pack| pack.was_found_gone()) || opened.is_err())
    }

    /// Whether its index file was gone when a lookup reached it (deleted since the listing, by a `git repack`
    /// or with its repository): git's `open_pack_index` fails and the object is not found there, with no message.
    fn index_gone(&self) -> bool {
        matches!(self.opened.get(), Some(Err(why)) if matches!(&**why, PackError::Index(IndexError::Open { source, .. }) if source.kind() == std::io::ErrorKind::NotFound))
    }
}

/// One place where an object is, or why a place that lists it cannot say where.
pub(in crate::store) enum Copy<'a> {
    At(&'a Arc<Pack>, u64),
    /// The index (a pack's, or a midx) that lists the object, and what is wrong with its entry.
    Damaged(PathBuf, Arc<PackError>),
}

impl PackSet {
    /// Every copy of `id` in this set, in lookup order: one per midx layer that lists it (in a pack that can
    /// be opened), then one per pack no layer covers. Each pack's index is opened when the search reaches it.
    pub(in crate::store) fn copies<'a>(
        &'a self,
        id: &'a oid,
        opener: &'a PackOpener,
    ) -> impl Iterator<Item = Copy<'a>> + 'a {
        let through_midx = self.layers.iter().filter_map(move |layer| match layer.find(id, opener)? {
            Hit::At(pack, offset) => Some(Copy::At(pack, offset)),
            Hit::Damaged(err) => Some(Copy::Damaged(layer.path().to_owned(), Arc::new(PackError::Midx(err)))),
        });
        // A pack whose `.pack` file is gone while its `.idx` remains (removed mid-repack, or with its repository)
        // does not have the object: git's `fill_pack_entry` checks `is_pack_valid`, which opens the pack, and
        // looks on in the next pack.
        let in_packs = self.uncovered_packs(opener).filter_map(move |pack| match pack.lookup(id)? {
            Ok(_) if pack.is_gone() => None,
            Ok(offset) => Some(Copy::At(pack, offset)),
            Err(err) => Some(Copy::Damaged(pack.index_path(), Arc::new(PackError::Index(err)))),
        });
        through_midx.chain(in_packs)
    }

    /// The multi-pack-index layers, in lookup order.
    /// The first pack no multi-pack-index covers, if it is open.
    pub(in crate::store) fn first_open_pack(&self) -> Option<&Arc<Pack>> {
        self.packs.first()?.opened()
    }

    pub(in crate::store) fn layers(&self) -> &[Arc<MidxLayer>] {
        &self.layers
    }

    /// The packs that no layer covers whose index can be read, in lookup order, opened as the iteration reaches
    /// them.
    pub(in crate::store) fn uncovered_packs<'a>(
        &'a self,
        opener: &'a PackOpener,
    ) -> impl Iterator<Item = &'a Arc<Pack>> + 'a {
        self.packs.iter().filter_map(move |listed| listed.open(opener).ok())
    }

    /// The first intact place of `id`.
    pub(in crate::store) fn find<'a>(&'a self, id: &'a oid, opener: &'a PackOpener) -> Option<(&'a Arc<Pack>, u64)> {
        self.copies(id, opener).find_map(|copy| match copy {
            Copy::At(pack, offset) => Some((pack, offset)),
            Copy::Damaged(..) => None,
        })
    }

    /// Every pack, those the midx layers cover first (opening them all now).
    pub(in crate::store) fn all_packs<'a>(
        &'a self,
        opener: &'a PackOpener,
    ) -> impl Iterator<Item = &'a Arc<Pack>> + 'a {
        self.layers.iter().flat_map(move |layer| layer.packs(opener)).chain(self.uncovered_packs(opener))
    }

    /// Index files that cannot be read (opening every index not opened yet): an object missing elsewhere may be
    /// in them. A lookup that found nothing has opened them all already.
    pub(in crate::store) fn bad_indexes<'a>(
        &'a self,
        opener: &'a PackOpener,
    ) -> impl Iterator<Item = (PathBuf, Arc<PackError>)> + 'a {
        self.packs.iter().filter_map(move |listed| match listed.open(opener) {
            Ok(_) => None,
            Err(_) if listed.index_gone() => None,
            Err(why) => Some((listed.idx_path.clone(), Arc::clone(why))),
        })
    }

    /// Lets the pages of every map opened so far leave the resident set (see [`super::resident`]); opens nothing.
    pub(in crate::store) fn release_resident(&self) {
        self.layers.iter().for_each(|layer| layer.release_resident());
        self.packs.iter().filter_map(|listed| listed.opened()).for_each(|pack| pack.release_resident());
    }

    /// Packs opened so far.
    pub(in crate::store) fn opened_count(&self) -> usize {
        let uncovered = self.packs.iter().filter(|listed| listed.opened().is_some()).count();
        uncovered + self.layers.iter().map(|layer| layer.opened()).sum::<usize>()
    }

    /// Objects listed, duplicates counted (git's `repo_approximate_object_count`: a midx counts as its total, and
    /// every pack's index is opened to count its objects).
    pub(in crate::store) fn object_count(&self, opener: &PackOpener) -> usize {
        let in_layers = self.layers.iter().map(|layer| layer.num_objects() as usize);
        in_layers.chain(self.uncovered_packs(opener).map(|pack| pack.index.num_objects() as usize)).sum()
    }

    /// The set as `pack_dir` holds it now, keeping every pack (and midx layer) of `current` that is still there
    /// or was already opened; `None` if nothing changed. Nothing of a new pack is opened.
    pub(in crate::store) fn rescan(current: &PackSet, pack_dir: &Path, hash: gix_hash::Kind) -> Option<PackSet> {
        let mut next = PackSet::default();
        let mut changed = false;
        for layer in midx::load(pack_dir, hash) {
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
        let idx_paths: Vec<PathBuf> = std::fs::read_dir(pack_dir)
            .into_iter()
            .flatten()
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.extension() == Some(OsStr::new("idx")))
            .filter(|path| path.file_name().is_none_or(|name| !covered.contains(Path::new(name))))
            .collect();
        for idx_path in idx_paths {
            // A pack listed before is kept as it is (opened or not); one whose index could not be read is tried
            // afresh.
            match current.packs.iter().find(|known| known.idx_path == idx_path && !known.failed()) {
                Some(known) => next.packs.push(Arc::clone(known)),
                None => {
                    changed = true;
                    next.packs.push(Arc::new(Listed::new(idx_path)));
                }
            }
        }
        // Packs whose files are gone (or that a new midx covers) stay mapped and readable if they were opened;
        // one that was only listed, or whose pack file a read found gone, is dropped.
        for listed in &current.packs {
            if !next.packs.iter().any(|p| Arc::ptr_eq(p, listed)) {
                match listed.opened() {
                    Some(pack) if !pack.was_found_gone() => next.packs.push(Arc::clone(listed)),
                    _ => changed = true,
                }
            }
        }
        // Newest first, as git orders packs: recent objects are asked for most. Packs of the same second stay in
        // directory order, as git 2.55 adds them (2.47 added each before the others: the reverse).
        next.packs.sort_by_key(|listed| std::cmp::Reverse(listed.mtime));
        changed.then_some(next)
    }
}
