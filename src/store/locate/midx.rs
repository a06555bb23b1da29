//! The multi-pack-index of an object directory: one sorted table of every object of many packs, so that a lookup
//! is one binary search instead of one per pack, and packs are opened only when an object is read from them.
//!
//! [`midx_file`](super::midx_file) reads one `.midx` file (versions 1 and 2). This module does what git's
//! `midx.c` does with them:
//! - find the file: `objects/pack/multi-pack-index`, else the incremental chain listed in
//!   `objects/pack/multi-pack-index.d/multi-pack-index-chain` (oldest layer first, each layer a
//!   `multi-pack-index-<hash>.midx` whose objects are not in the layers below it; a layer's pack numbers are its
//!   own, so each layer is looked up on its own);
//! - keep the layers that load, up to the first that does not (git warns and uses that much of the chain);
//! - open a layer's packs lazily, and treat an object whose pack cannot be opened (deleted since) as not found
//!   through the midx, as git's `fill_midx_entry` does.
//!
//! A midx that cannot be read at all (damaged, another hash, a version git does not know) is ignored: every pack
//! is then searched on its own, which finds the same objects.
use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

use gix_hash::oid;

use super::midx_file::MidxFile;
use super::pack::Pack;
use crate::store::{MidxError, PackError};

/// One loaded `.midx` file.
pub(in crate::store) struct MidxLayer {
    file: MidxFile,
    /// The packs it names, in its own numbering, opened on first use (`None`: cannot be opened).
    packs: Vec<OnceLock<Option<Arc<Pack>>>>,
    pack_dir: PathBuf,
}

/// Where a midx says an object is.
pub(in crate::store) enum Hit<'a> {
    At(&'a Arc<Pack>, u64),
    Damaged(MidxError),
}

/// What the store needs to open a pack: its hash and the counter that gives each pack its cache id.
#[derive(Clone)]
pub(in crate::store) struct PackOpener {
    pub hash: gix_hash::Kind,
    pub next_id: Arc<AtomicU32>,
}

impl PackOpener {
    pub(in crate::store) fn open(&self, idx_path: &Path) -> Result<Pack, PackError> {
        Pack::open(idx_path, self.next_id.fetch_add(1, Ordering::Relaxed), self.hash)
    }
}

impl MidxLayer {
    fn load(path: &Path, pack_dir: &Path, hash: gix_hash::Kind) -> Option<MidxLayer> {
        let file = MidxFile::open(path, hash).ok()?;
        let packs = file.pack_names().iter().map(|_| OnceLock::new()).collect();
        Some(MidxLayer { file, packs, pack_dir: pack_dir.to_owned() })
    }

    /// The `.idx` file names this layer covers.
    pub(in crate::store) fn index_names(&self) -> &[PathBuf] {
        self.file.pack_names()
    }

    /// The pack numbered `number` in this layer, opened now if it was not yet.
    pub(in crate::store) fn pack(&self, number: usize, opener: &PackOpener) -> Option<&Arc<Pack>> {
        let slot = self.packs.get(number)?;
        slot.get_or_init(|| {
            let idx = self.pack_dir.join(&self.file.pack_names()[number]);
            // A pack that is gone, or whose index cannot be read, is not used: its objects are not found
            // through this midx (git's `prepare_midx_pack` failing). A pack that is there but damaged is kept,
            // so that reading from it reports the damage.
            opener.open(&idx).ok().filter(|pack| !pack.is_gone()).map(Arc::new)
        })
        .as_ref()
    }

    /// Where this layer says `id` is.
    pub(in crate::store) fn find(&self, id: &oid, opener: &PackOpener) -> Option<Hit<'_>> {
        self.hit_at(self.file.lookup(id)?, opener)
    }

    /// The id at `position` of this layer's sorted table.
    pub(in crate::store) fn oid_at(&self, position: u32) -> &oid {
        self.file.oid_at(position)
    }

    /// Where the entry at `position` is: `None` if its pack cannot be opened (then the object is not found here).
    pub(in crate::store) fn hit_at(&self, position: u32, opener: &PackOpener) -> Option<Hit<'_>> {
        match self.file.entry_at(position) {
            Ok((number, offset)) => self.pack(number as usize, opener).map(|pack| Hit::At(pack, offset)),
            Err(source) => Some(Hit::Damaged(MidxError { path: self.file.path().to_owned(), source })),
        }
    }

    /// Every pack of this layer that can be opened.
    pub(in crate::store) fn packs<'a>(&'a self, opener: &'a PackOpener) -> impl Iterator<Item = &'a Arc<Pack>> + 'a {
        (0..self.packs.len()).filter_map(move |number| self.pack(number, opener))
    }

    pub(in crate::store) fn path(&self) -> &Path {
        self.file.path()
    }

    /// Whether `other` was loaded from the same file as this layer, unchanged.
    pub(in crate::store) fn same_file(&self, other: &MidxLayer) -> bool {
        self.file.path() == other.file.path() && self.file.checksum() == other.file.checksum()
    }

    pub(in crate::store) fn num_objects(&self) -> u32 {
        self.file.num_objects()
    }

    /// Lets the pages of its map and of its opened packs' maps leave the resident set (see [`super::resident`]).
    pub(in crate::store) fn release_resident(&self) {
        super::resident::release(self.file.mapped());
        self.packs.iter().filter_map(|slot| slot.get()?.as_ref()).for_each(|pack| pack.release_resident());
    }

    /// How many of its packs have been opened (and could be).
    pub(in crate::store) fn opened(&self) -> usize {
        self.packs.iter().filter(|slot| slot.get().is_some_and(Option::is_some)).count()
    }
}

/// The layers of `pack_dir`'s multi-pack-index, newest first (empty when there is none that loads).
pub(in crate::store) fn load(pack_dir: &Path, hash: gix_hash::Kind) -> Vec<MidxLayer> {
    if let Some(single) = MidxLayer::load(&pack_dir.join("multi-pack-index"), pack_dir, hash) {
        return vec![single];
    }
    let chain_dir = pack_dir.join("multi-pack-index.d");
    let Ok(chain) = std::fs::read(chain_dir.join("multi-pack-index-chain")) else { return Vec::new() };
    let mut layers = Vec::new();
    for line in chain.split(|&b| b == b'\n').filter(|line| !line.is_empty()) {
        let Ok(layer) = gix_hash::ObjectId::from_hex(line) else { break };
        if layer.kind() != hash {
            break;
        }
        let mut name = OsString::from("multi-pack-index-");
        name.push(layer.to_hex().to_string());
        name.push(".midx");
        match MidxLayer::load(&chain_dir.join(name), pack_dir, hash) {
            Some(loaded) => layers.push(loaded),
            None => break,
        }
    }
    layers.reverse();
    layers
}

/// The `.idx` file names that `layers` cover.
pub(in crate::store) fn covered(layers: &[Arc<MidxLayer>]) -> HashSet<PathBuf> {
    layers.iter().flat_map(|layer| layer.index_names().iter().cloned()).collect()
}
