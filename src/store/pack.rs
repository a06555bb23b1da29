//! One pack: its `.idx` (through gix-pack) and its `.pack` data, both memory-mapped.
//!
//! gix-pack does the index lookup and parses entry headers; the store owns inflating and delta resolution
//! (see `resolve.rs`) because it owns the base cache.
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use gix_hash::oid;
use gix_pack::data::Entry;

use super::Damage;
use super::inflate::Inflater;

pub struct Pack {
    /// Unique within the store for its whole life (cache keys), never reused after a rescan.
    pub id: u32,
    pub index: gix_pack::index::File,
    pub pack_path: PathBuf,
    pub mtime: SystemTime,
    /// The mapped pack, or why it cannot be used (missing, unreadable, or not the pack its index describes).
    /// An unusable pack still answers "is the object here?" so that damage is reported, not taken for absence.
    data: Result<gix_pack::data::File, String>,
}

impl Pack {
    /// Opens `<name>.idx` and maps `<name>.pack`. Fails only when the index itself is unusable.
    pub fn open(idx_path: &Path, id: u32, hash: gix_hash::Kind) -> Result<Pack, String> {
        let index = gix_pack::index::File::at(idx_path, hash).map_err(|err| format!("{err}"))?;
        let pack_path = idx_path.with_extension("pack");
        let mtime = std::fs::metadata(&pack_path).and_then(|m| m.modified()).unwrap_or(SystemTime::UNIX_EPOCH);
        let data = gix_pack::data::File::at(&pack_path, hash)
            .map_err(|err| format!("cannot open pack: {err}"))
            .and_then(|data| {
                if data.num_objects() != index.num_objects() {
                    Err(format!("pack has {} objects but its index lists {}", data.num_objects(), index.num_objects()))
                } else if data.checksum() != index.pack_checksum() {
                    Err("pack does not match its index (checksum differs: truncated or replaced?)".into())
                } else {
                    Ok(data)
                }
            });
        Ok(Pack { id, index, pack_path, mtime, data })
    }

    /// Where `id` starts in the pack, if the index lists it.
    pub fn lookup(&self, id: &oid) -> Option<u64> {
        let position = self.index.lookup(id)?;
        Some(self.index.pack_offset_at_index(position))
    }

    fn data(&self) -> Result<&gix_pack::data::File, Damage> {
        self.data.as_ref().map_err(|why| Damage::Unusable(why.clone()))
    }

    /// The entry header at `offset`.
    pub fn entry(&self, offset: u64) -> Result<Entry, Damage> {
        let data = self.data()?;
        if offset >= data.pack_end() as u64 {
            return Err(Damage::Truncated);
        }
        data.entry(offset).map_err(|err| Damage::Entry(err.to_string()))
    }

    /// Inflates the entry's stored bytes: the object itself, or a delta. Sizes over `limit` are refused
    /// before anything is allocated.
    pub fn inflate(&self, entry: &Entry, inflater: &mut Inflater, limit: u64) -> Result<Vec<u8>, Damage> {
        if entry.decompressed_size > limit {
            return Err(Damage::TooLarge { size: entry.decompressed_size, limit });
        }
        let data = self.data()?;
        let input = data.entry_slice(entry.data_offset..data.pack_end() as u64).ok_or(Damage::Truncated)?;
        inflater.zlib(input, entry.decompressed_size as usize)
    }
}
