//! Type, size, size on disk and delta base of an object without inflating it, as git's `packed_object_info`
//! and `loose_object_info` find them: the size of a base entry is in its header, the size of a delta in the
//! first bytes of the delta, and the type at the bottom of the delta chain; a loose object's header is the
//! first bytes of its zlib stream. Only those few bytes are inflated.
use std::borrow::Cow;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gix_pack::data::Entry;
use gix_pack::data::entry::Header;

use super::resolve::{CycleCheck, damaged};
use crate::store::decode::inflate_prefix::inflate_head;
use crate::store::locate::{Pack, loose};
use crate::store::{Damage, Kind, Location, ObjectId, ReadError, Store, delta, oid};

/// What `cat-file --batch-check` can tell about an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Info {
    pub kind: Kind,
    pub size: u64,
    /// Bytes the object takes in its pack (entry header included) or its loose file; 0 when not asked for.
    pub disk_size: u64,
    /// The object a packed delta is built on; `None` for whole objects, loose ones, and when not asked for.
    pub delta_base: Option<ObjectId>,
}

/// Where an object was found (opaque outside the store).
#[derive(Clone)]
pub(crate) struct Place(pub(in crate::store) Where);

#[derive(Clone)]
pub(in crate::store) enum Where {
    Packed(Arc<Pack>, u64),
    Loose(PathBuf),
    /// The empty tree, which git knows without storing it.
    Virtual,
}

/// A loose header is at most `<type> <20 digits>\0`.
const LOOSE_HEADER_MAX: usize = 32;
/// Longest header of an object of unknown type that is read to show it.
const UNKNOWN_HEADER_MAX: usize = 64 << 10;
/// A delta starts with two sizes of at most 10 bytes each.
const DELTA_HEADER_MAX: usize = 20;

impl Store {
    /// Info of the object (or its replacement when a replace ref names one); `Ok(None)` if no object
    /// directory has it. `on_disk`: also find [`Info::disk_size`] and [`Info::delta_base`].
    pub fn info(&self, id: &oid, on_disk: bool) -> Result<Option<Info>, ReadError> {
        let target = self.replacement(id)?;
        match self.info_exact(&target, on_disk)? {
            None if target != id => Err(crate::store::replace_error(id, Damage::ReplacementMissing(target))),
            found => Ok(found),
        }
    }

    /// Info of exactly `id`, without replace refs.
    pub fn info_exact(&self, id: &oid, on_disk: bool) -> Result<Option<Info>, ReadError> {
        match self.locate(id)? {
            Some(place) => self.info_at(id, &place, on_disk).map(Some),
            None => Ok(None),
        }
    }

    /// Where `id` is stored: the first pack that lists it, else a loose file (rescanning packs once on a miss,
    /// as reads do).
    pub(crate) fn locate(&self, id: &oid) -> Result<Option<Place>, ReadError> {
        if id == ObjectId::empty_tree(self.hash) {
            return Ok(Some(Place(Where::Virtual)));
        }
        // Most names are in a pack: found without the snapshots a miss needs (a `Vec` and a clone per directory,
        // atomic writes that every resolver thread makes to the same lines).
        if let Some((pack, offset)) = self.find_packed(id) {
            return Ok(Some(Place(Where::Packed(pack, offset))));
        }
        for attempt in 0..2 {
            let searched = self.snapshots();
            if let Some((pack, offset)) = self.find_packed(id) {
                return Ok(Some(Place(Where::Packed(pack, offset))));
            }
            if attempt == 0
                && let Some(path) = self.dirs.iter().map(|dir| loose::path(&dir.path, id)).find(|p| p.is_file())
            {
                return Ok(Some(Place(Where::Loose(path))));
            }
            if !self.refreshed_since(&searched) {
                break;
            }
        }
        Ok(None)
    }

    /// Info of `id` as stored at `place`.
    pub(crate) fn info_at(&self, id: &oid, place: &Place, on_disk: bool) -> Result<Info, ReadError> {
        match &place.0 {
            Where::Virtual => Ok(Info { kind: Kind::Tree, size: 0, disk_size: 0, delta_base: None }),
            Where::Loose(path) => loose_info(path).map_err(|damage| ReadError {
                oid: id.to_owned(),
                location: Location::Loose { path: path.clone() },
                damage,
            }),
            Where::Packed(pack, offset) => self.packed_info(id, pack, *offset, on_disk),
        }
    }

    fn packed_info(&self, id: &oid, pack: &Arc<Pack>, offset: u64, on_disk: bool) -> Result<Info, ReadError> {
        let at = |damage: Damage| damaged(id, pack, offset, damage);
        // The memo's slot is read after the delta's head is inflated: its miss overlaps the header's.
        if let Some(memo) = pack.kind_memo() {
            memo.prefetch(offset);
        }
        let entry = pack.entry(offset).map_err(at)?;
        let size = match entry.header.as_kind() {
            Some(_) => entry.decompressed_size,
            None => {
                let head = inflate_head(pack.compressed(&entry).map_err(at)?, DELTA_HEADER_MAX);
                delta::result_size(&head.map_err(at)?).map_err(|d| at(d.into()))?
            }
        };
        let kind = match entry.header.as_kind() {
            Some(kind) => kind,
            None => match pack.passed_chain_kind(offset) {
                Some(kind) => kind,
                None => self.chain_kind(id, pack, offset, entry.clone())?,
            },
        };
        // Where the entry is in offset order, for its size on disk and its base.
        let rev = on_disk.then(|| pack.offset_order(true)).flatten();
        let here = rev.and_then(|rev| rev.position(offset));
        let (mut disk_size, mut delta_base) = (0, None);
        if let Some(rev) = rev.filter(|_| on_disk) {
            let here = here.ok_or_else(|| at(Damage::Truncated))?;
            let next = match rev.get(here + 1) {
                Some((next, _)) => next,
                None => pack.data_end().map_err(at)?,
            };
            disk_size = next.saturating_sub(offset);
            delta_base = match entry.header {
                Header::RefDelta { base_id } => Some(base_id),
                Header::OfsDelta { base_distance } => {
                    let base = entry.checked_base_pack_offset(base_distance);
                    let base = base.and_then(|base| rev.position(base));
                    let position = base.and_then(|base| rev.get(base)).ok_or_else(|| at(Damage::BadBaseOffset))?;
                    Some(pack.index.oid_at(position.1).to_owned())
                }
                _ => None,
            };
        }
        Ok(Info { kind, size, disk_size, delta_base })
    }

    /// The type at the bottom of the delta chain that starts with `entry`, at `offset` (git's
    /// `packed_to_object_type`), remembered for every entry of this pack the walk passed.
    fn chain_kind(&self, id: &oid, pack: &Arc<Pack>, offset: u64, entry: Entry) -> Result<Kind, ReadError> {
        let mut passed = Passed { offsets: [0; PASSED_MAX], len: 0, decoded: 0 };
        let kind = self.walk_chain(id, pack, offset, entry, &mut passed)?;
        pack.walked(passed.decoded);
        if let Some(memo) = pack.kind_memo_to_fill() {
            passed.offsets[..passed.len].iter().for_each(|&offset| memo.put(offset, kind));
        }
        Ok(kind)
    }

    /// The walk of [`Self::chain_kind`]: link by link until an entry stored whole, or one of this pack that the
    /// memo knows.
    fn walk_chain(
        &self,
        id: &oid,
        start: &Arc<Pack>,
        offset: u64,
        entry: Entry,
        passed: &mut Passed,
    ) -> Result<Kind, ReadError> {
        let memo = start.kind_memo();
        // The pack is borrowed, not cloned, while the chain stays in it: an `Arc` clone per step is an atomic
        // write to a line every resolver thread writes too.
        let (mut pack, mut offset) = (Cow::Borrowed(start), offset);
        // A chain that comes back to an entry it passed is a cycle (damage), not a long chain. A hash set of the
        // entries passed was 4% of --batch-check's samples (100k ids, history order).
        let mut cycle = CycleCheck::new(pack.key(offset));
        let mut first = Some(entry);
        loop {
            if let Cow::Borrowed(_) = pack {
                if let Some(kind) = memo.and_then(|memo| memo.get(offset)) {
                    return Ok(kind);
                }
                passed.push(offset);
            }
            let entry = match first.take() {
                Some(entry) => entry,
                None => {
                    passed.decoded += 1;
                    pack.entry(offset).map_err(|d| damaged(id, &pack, offset, d))?
                }
            };
            match entry.header {
                Header::OfsDelta { base_distance } => match entry.checked_base_pack_offset(base_distance) {
                    Some(base) => {
                        offset = base;
                        pack.prefetch_entry(base);
                    }
                    None => return Err(damaged(id, &pack, offset, Damage::BadBaseOffset)),
                },
                Header::RefDelta { base_id } => {
                    let found = self.ref_base(&pack, &base_id).map_err(|d| damaged(id, &pack, offset, d))?;
                    // The same pack (borrowed back) keeps the walk's borrow; another pack replaces it.
                    let found = found.map(|(base_pack, base)| match base_pack {
                        Cow::Borrowed(_) => (None, base),
                        Cow::Owned(other) => (Some(other), base),
                    });
                    match found {
                        Some((None, base)) => offset = base,
                        Some((Some(base_pack), base)) => (pack, offset) = (Cow::Owned(base_pack), base),
                        None => {
                            let path =
                                self.dirs.iter().map(|dir| loose::path(&dir.path, &base_id)).find(|p| p.is_file());
                            let path = path.ok_or(Damage::BaseMissing(base_id));
                            let path = path.map_err(|d| damaged(id, &pack, offset, d))?;
                            return loose_info(&path).map(|info| info.kind).map_err(|d| damaged(id, &pack, offset, d));
                        }
                    }
                }
                _ => return Ok(entry.header.as_kind().expect("a base entry has an object kind")),
            }
            if cycle.comes_back(pack.key(offset)) {
                return Err(damaged(id, &pack, offset, Damage::DeltaCycle));
            }
        }
    }
}

/// Entries a walk passes that are remembered with the type it finds: a chain is at most 50 long as git packs
/// (`--depth`); the links past these are walked again by the next request.
const PASSED_MAX: usize = 64;

/// The entries of the starting pack that a chain walk passed, and how many entry headers it decoded.
struct Passed {
    offsets: [u64; PASSED_MAX],
    len: usize,
    decoded: u32,
}

impl Passed {
    fn push(&mut self, offset: u64) {
        if self.len < PASSED_MAX {
            self.offsets[self.len] = offset;
            self.len += 1;
        }
    }
}

/// Type and size from a loose object's header; its disk size is the file's length.
fn loose_info(path: &Path) -> Result<Info, Damage> {
    let mut file = std::fs::File::open(path).map_err(|err| Damage::Io(Arc::new(err)))?;
    let disk_size = file.metadata().map_err(|err| Damage::Io(Arc::new(err)))?.len();
    // Deflate never takes more than a few bytes per output byte of a header, plus the zlib header.
    let mut compressed = Vec::with_capacity(256);
    file.by_ref().take(256).read_to_end(&mut compressed).map_err(|err| Damage::Io(Arc::new(err)))?;
    let mut head = inflate_head(&compressed, LOOSE_HEADER_MAX).map_err(|damage| match damage {
        Damage::Zlib => loose::zlib_damage(&compressed),
        other => other,
    })?;
    let too_long = memchr::memchr(0, &head).is_none() && head.len() == LOOSE_HEADER_MAX;
    if too_long {
        // Only an unknown type can be this long: read on to its end, as git's --allow-unknown-type does.
        file.read_to_end(&mut compressed).map_err(|err| Damage::Io(Arc::new(err)))?;
        head = inflate_head(&compressed, UNKNOWN_HEADER_MAX)?;
    }
    let nul = memchr::memchr(0, &head).ok_or(Damage::LooseHeader)?;
    match gix_object::decode::loose_header(&head[..=nul]) {
        Ok((kind, size, _)) => Ok(Info { kind, size, disk_size, delta_base: None }),
        Err(_) => Err(unknown_type(&head[..nul], too_long)),
    }
}

/// `<type> <size>` with a type gix-object does not know is git's "invalid object type"; anything else is a
/// corrupt header.
fn unknown_type(header: &[u8], header_too_long: bool) -> Damage {
    let Some(space) = memchr::memrchr(b' ', header) else { return Damage::LooseHeader };
    let (type_name, digits) = (&header[..space], &header[space + 1..]);
    match std::str::from_utf8(digits).ok().and_then(|d| d.parse::<u64>().ok()) {
        Some(size) if !type_name.is_empty() && !digits.starts_with(b"+") => {
            Damage::UnknownType { type_name: type_name.to_vec(), size, header_too_long }
        }
        _ => Damage::LooseHeader,
    }
}

#[cfg(test)]
mod tests {
    use crate::store::testpack::{Objects, chain};
    use crate::store::{Kind, Store, StoreOptions};

    /// The first type asked walks the chain and remembers the type for every entry it passed; a request deeper in
    /// the same chain stops at the first of them (its walk decodes only the links above it), and gets the same
    /// answer a walk to the root gives.
    #[test]
    fn a_walk_remembers_the_chain_type_for_every_entry_it_passed() {
        let objects = Objects::new();
        let contents: Vec<Vec<u8>> = (0..8).map(|k| b"line\n".repeat(k + 1)).collect();
        let entries = chain(&contents.iter().map(Vec::as_slice).collect::<Vec<_>>(), true);
        let (_, offsets) = objects.add_pack("memo", &entries);
        let store = Store::open(objects.path(), gix_hash::Kind::Sha1, StoreOptions::default());
        let info = store.info(&entries[4].0, false).expect("intact").expect("present");
        assert_eq!((info.kind, info.size), (Kind::Blob, contents[4].len() as u64));
        let pack = store.find_packed(&entries[4].0).expect("packed").0;
        for (k, &offset) in offsets.iter().enumerate() {
            let expected = (k <= 4).then_some(Kind::Blob);
            assert_eq!(
                pack.kind_memo().and_then(|memo| memo.get(offset)),
                expected,
                "entry {k}: the walk passed 4 down to the root"
            );
        }
        assert_eq!(pack.walked_links.load(std::sync::atomic::Ordering::Relaxed), 4, "links 3, 2, 1, 0");
        let info = store.info(&entries[7].0, false).expect("intact").expect("present");
        assert_eq!((info.kind, info.size), (Kind::Blob, contents[7].len() as u64));
        assert_eq!(pack.walked_links.load(std::sync::atomic::Ordering::Relaxed), 6, "links 6 and 5, then 4 is known");
    }
}
