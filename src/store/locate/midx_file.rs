//! One `.midx` file, versions 1 and 2, mapped and read in place as git's `midx.c` reads it: the header, the
//! chunk table (through gix-chunk), the pack names, and per object its id, pack number and offset.
//!
//! gix-pack's `multi_index::File` is what this replaces, because it reads version 1 only: it refuses the version
//! byte 2, and pack names that are not in lexicographic order. Version 2, which git 2.54 and later write when
//! they compact layers of an incremental chain (`git multi-pack-index compact`, or any write with
//! `midx.version=2`), is version 1 with its pack names in any order (a compacted layer lists the packs of the
//! layers it replaces, oldest layer first). Nothing else of the format changed, so one reader serves both.
//! A file that git would refuse or warn about (wrong signature, version, hash, a chunk missing or of the wrong
//! size, version-1 names out of order) is not loaded; the caller then searches the packs one by one.
use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use gix_hash::oid;

use super::skewed::SkewedMap;
use crate::store::error::{MidxEntryError, MidxLoadError};

const SIGNATURE: &[u8] = b"MIDX";
/// Signature, version, hash version, chunk count, base count, pack count.
const HEADER_LEN: usize = 12;
/// Chunk offsets are multiples of this (git's `MIDX_CHUNK_ALIGNMENT`).
const ALIGNMENT: u64 = 4;
const PACK_NAMES: gix_chunk::Id = *b"PNAM";
const FANOUT: gix_chunk::Id = *b"OIDF";
const LOOKUP: gix_chunk::Id = *b"OIDL";
const OFFSETS: gix_chunk::Id = *b"OOFF";
const LARGE_OFFSETS: gix_chunk::Id = *b"LOFF";
/// An offset with this bit set is a row of the large-offset chunk (when there is one).
const LARGE: u32 = 1 << 31;

pub(in crate::store) struct MidxFile {
    map: SkewedMap,
    path: PathBuf,
    hash_len: usize,
    fan: [u32; 256],
    /// Index file names (`pack-<hash>.idx`), in the file's order: an entry's pack number is a position here.
    pack_names: Vec<PathBuf>,
    /// Where the sorted ids start.
    lookup: usize,
    /// Where the (pack number, offset) pairs start.
    offsets: usize,
    /// The large-offset chunk, if any.
    large_offsets: Option<std::ops::Range<usize>>,
}

impl MidxFile {
    /// Maps and checks the file at `path`, as git's `load_multi_pack_index_one` does. Nothing whose length is the
    /// object count is read: the fan-out (1 KiB) and the pack names are.
    pub(in crate::store) fn open(path: &Path, hash: gix_hash::Kind) -> Result<MidxFile, MidxLoadError> {
        let file = File::open(path)?;
        // SAFETY: git never rewrites a multi-pack-index in place (it writes a new file and renames it over the old
        // one), so the mapped bytes do not change under us; every read below is bounds-checked against the
        // mapping's length or against chunk sizes checked here.
        #[allow(unsafe_code)]
        let map = unsafe { SkewedMap::map(&file) }?;
        Self::from_map(map, path.to_owned(), hash)
    }

    fn from_map(map: SkewedMap, path: PathBuf, hash: gix_hash::Kind) -> Result<MidxFile, MidxLoadError> {
        let hash_len = hash.len_in_bytes();
        if map.len() < HEADER_LEN + hash_len {
            return Err(MidxLoadError::TooSmall);
        }
        if &map[..4] != SIGNATURE {
            return Err(MidxLoadError::Signature);
        }
        let version = map[4];
        if version != 1 && version != 2 {
            return Err(MidxLoadError::Version(version));
        }
        let hash_version = match hash {
            gix_hash::Kind::Sha1 => 1,
            gix_hash::Kind::Sha256 => 2,
            _ => 0,
        };
        if map[5] != hash_version {
            return Err(MidxLoadError::Hash(map[5]));
        }
        let num_packs = be32(&map[8..12]);
        let chunks =
            gix_chunk::file::Index::from_bytes(&map, HEADER_LEN, u32::from(map[6])).map_err(MidxLoadError::Chunks)?;
        // gix-chunk checks that the chunks lie in the file, in order; git also wants them aligned, and off the
        // trailing checksum.
        let table = map[HEADER_LEN..].chunks_exact(gix_chunk::file::Index::ENTRY_SIZE).take(usize::from(map[6]));
        if table.map(|entry| be64(&entry[4..])).any(|offset| offset % ALIGNMENT != 0)
            || chunks.highest_offset() > (map.len() - hash_len) as u64
        {
            return Err(MidxLoadError::ChunkPlacement);
        }
        let chunk = |id| chunks.usize_offset_by_id(id).map_err(|_| MidxLoadError::Chunk(id));
        let fan_range = chunk(FANOUT)?;
        if fan_range.len() != 256 * 4 {
            return Err(MidxLoadError::Chunk(FANOUT));
        }
        let mut fan = [0u32; 256];
        for (slot, bytes) in fan.iter_mut().zip(map[fan_range].chunks_exact(4)) {
            *slot = be32(bytes);
        }
        if fan.windows(2).any(|pair| pair[1] < pair[0]) {
            return Err(MidxLoadError::Fanout);
        }
        let objects = fan[255] as usize;
        let lookup = chunk(LOOKUP)?;
        if lookup.len() != objects * hash_len {
            return Err(MidxLoadError::Chunk(LOOKUP));
        }
        let offsets = chunk(OFFSETS)?;
        if offsets.len() != objects * 8 {
            return Err(MidxLoadError::Chunk(OFFSETS));
        }
        let large_offsets = chunks.usize_offset_by_id(LARGE_OFFSETS).ok();
        let pack_names = pack_names(&map[chunk(PACK_NAMES)?], num_packs, version)?;
        let (lookup, offsets) = (lookup.start, offsets.start);
        Ok(MidxFile { map, path, hash_len, fan, pack_names, lookup, offsets, large_offsets })
    }

    /// The mapped file, for [`super::resident`].
    pub(in crate::store) fn mapped(&self) -> &[u8] {
        &self.map
    }

    pub(in crate::store) fn path(&self) -> &Path {
        &self.path
    }

    /// The `.idx` file names of the packs it covers, in its own numbering.
    pub(in crate::store) fn pack_names(&self) -> &[PathBuf] {
        &self.pack_names
    }

    pub(in crate::store) fn num_objects(&self) -> u32 {
        self.fan[255]
    }

    /// The file's trailing checksum, which names its content.
    pub(in crate::store) fn checksum(&self) -> &[u8] {
        &self.map[self.map.len() - self.hash_len..]
    }

    /// The id at `position` of the sorted table.
    pub(in crate::store) fn oid_at(&self, position: u32) -> &oid {
        let start = self.lookup + position as usize * self.hash_len;
        oid::from_bytes_unchecked(&self.map[start..start + self.hash_len])
    }

    /// The position of `id` in the sorted table, if listed: its fan-out bucket, searched as a pack index is.
    pub(in crate::store) fn lookup(&self, id: &oid) -> Option<u32> {
        let first = id.as_bytes()[0];
        let start = if first == 0 { 0 } else { self.fan[first as usize - 1] };
        let bucket = start..self.fan[first as usize];
        super::pack_index::search(bucket, super::pack_index::fan_keys(first), id, |at| self.oid_at(at))
    }

    /// The pack number and offset of the object at `position`, as git's `nth_midxed_pack_int_id` and
    /// `nth_midxed_offset` decode them.
    pub(in crate::store) fn entry_at(&self, position: u32) -> Result<(u32, u64), MidxEntryError> {
        let at = self.offsets + position as usize * 8;
        let (pack, offset) = (be32(&self.map[at..at + 4]), be32(&self.map[at + 4..at + 8]));
        let packs = self.pack_names.len() as u32;
        if pack >= packs {
            return Err(MidxEntryError::PackNumber { pack, packs });
        }
        let offset = match &self.large_offsets {
            Some(large) if offset & LARGE != 0 => {
                let row = (offset ^ LARGE) as usize;
                if row >= large.len() / 8 {
                    return Err(MidxEntryError::LargeOffset);
                }
                be64(&self.map[large.start + row * 8..])
            }
            _ => u64::from(offset),
        };
        Ok((pack, offset))
    }
}

/// `count` NUL-terminated names from the start of the `PNAM` chunk (padding after them is ignored, as git
/// ignores it); in version 1, strictly ascending.
fn pack_names(chunk: &[u8], count: u32, version: u8) -> Result<Vec<PathBuf>, MidxLoadError> {
    let mut names: Vec<PathBuf> = Vec::new();
    let mut rest = chunk;
    for _ in 0..count {
        let end = rest.iter().position(|&b| b == 0).ok_or(MidxLoadError::PackNames)?;
        let name = PathBuf::from(OsStr::from_bytes(&rest[..end]));
        if version == 1 && names.last().is_some_and(|last| last.as_os_str().as_bytes() >= &rest[..end]) {
            return Err(MidxLoadError::PackNameOrder);
        }
        names.push(name);
        rest = &rest[end + 1..];
    }
    Ok(names)
}

fn be32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes(bytes[..4].try_into().expect("4 bytes"))
}

fn be64(bytes: &[u8]) -> u64 {
    u64::from_be_bytes(bytes[..8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testpack::{Objects, chain};

    const SHA1: gix_hash::Kind = gix_hash::Kind::Sha1;

    /// Objects in three packs under a midx of version 1 (git's), and the same rewritten as version 2 with its pack
    /// names reversed.
    fn midx_files() -> (Objects, Vec<u8>, Vec<u8>) {
        let objects = Objects::new();
        for name in ["a", "b", "c"] {
            objects.add_pack(name, &chain(&[format!("in {name}\n").as_bytes()], true));
        }
        objects.write_midx();
        let path = objects.path().join("pack/multi-pack-index");
        let v1 = std::fs::read(&path).expect("midx");
        objects.midx_to_version_2_reversed();
        let v2 = std::fs::read(&path).expect("midx");
        (objects, v1, v2)
    }

    /// Loads `bytes` from a file of their own (a mapped file rewritten in place would change under its reader).
    fn load(objects: &Objects, bytes: &[u8]) -> Result<MidxFile, MidxLoadError> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = objects.path().join(format!("pack/test-{n}.midx"));
        std::fs::write(&path, bytes).expect("write");
        MidxFile::open(&path, SHA1)
    }

    #[test]
    fn versions_1_and_2_are_read_with_their_pack_numbering() {
        let (objects, v1, v2) = midx_files();
        let (v1, v2) = (load(&objects, &v1).expect("v1"), load(&objects, &v2).expect("v2"));
        let names = |file: &MidxFile| file.pack_names().iter().map(|n| n.to_string_lossy().into_owned()).collect();
        let (names_1, mut names_2): (Vec<String>, Vec<String>) = (names(&v1), names(&v2));
        names_2.reverse();
        assert_eq!(names_1, names_2, "version 2 lists the same packs, in another order");
        assert_eq!(v1.num_objects(), 3);
        for position in 0..3 {
            let id = v1.oid_at(position);
            assert_eq!(v2.lookup(id), Some(position));
            let (pack_1, offset_1) = v1.entry_at(position).expect("entry");
            let (pack_2, offset_2) = v2.entry_at(position).expect("entry");
            assert_eq!(v1.pack_names()[pack_1 as usize], v2.pack_names()[pack_2 as usize], "the same pack");
            assert_eq!(offset_1, offset_2);
        }
    }

    /// What git refuses (or dies on) is not loaded: another version, another hash, version-1 names out of order,
    /// a file cut short.
    #[test]
    fn what_git_refuses_is_not_loaded() {
        let (objects, v1, v2) = midx_files();
        let with = |bytes: &[u8], at: usize, value: u8| {
            let mut changed = bytes.to_vec();
            changed[at] = value;
            load(&objects, &changed).err().map(|err| err.to_string())
        };
        assert_eq!(with(&v1, 4, 3).as_deref(), Some("version 3 not recognized"));
        assert_eq!(with(&v1, 5, 2).as_deref(), Some("hash version 2 does not match the repository's"));
        assert_eq!(with(&v2, 4, 1).as_deref(), Some("pack names out of order"), "version 1 needs sorted names");
        assert_eq!(with(&v1, 0, b'X').as_deref(), Some("bad signature"));
        assert!(load(&objects, &v1[..v1.len() / 2]).is_err(), "cut short");
        assert!(matches!(load(&objects, &v1[..20]), Err(MidxLoadError::TooSmall | MidxLoadError::Chunks(_))));
    }
}
