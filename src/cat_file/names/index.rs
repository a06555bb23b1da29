//! `:<path>` and `:<n>:<path>`: the entry of the index (`<git-dir>/index`) at that path and stage, as git's
//! `get_oid_with_context` finds it. Only the entries are read (versions 2 to 4: git's on-disk entry layout, the
//! path padded in 2 and 3, prefix-compressed in 4); a split index keeps its entries elsewhere and is refused.
use std::path::Path;

use gix_hash::ObjectId;

/// What the index says of a path at a stage.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    Found {
        id: ObjectId,
        mode: u32,
    },
    /// No entry at that path and stage (or no index at all).
    Absent,
    /// The path is there at another stage (the lowest one given).
    OtherStage(u8),
    /// An index cat-blobd does not read (a split index, an unknown version, a damaged file).
    Unreadable,
}

/// The entry at `path` and `stage` in the index of `git_dir`.
pub(crate) fn lookup(git_dir: &Path, hash: gix_hash::Kind, path: &[u8], stage: u8) -> Entry {
    let Ok(data) = std::fs::read(git_dir.join("index")) else { return Entry::Absent };
    find(&data, hash, path, stage).unwrap_or(Entry::Unreadable)
}

/// git's `CE_EXTENDED` flag and `CE_NAMEMASK`.
const EXTENDED: u16 = 0x4000;
const NAME_MASK: u16 = 0x0fff;

fn find(data: &[u8], hash: gix_hash::Kind, wanted: &[u8], stage: u8) -> Option<Entry> {
    if data.get(..4)? != b"DIRC" {
        return None;
    }
    let version = be32(data, 4)?;
    let count = be32(data, 8)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let hash_len = hash.len_in_bytes();
    let (mut at, mut name) = (12usize, Vec::new());
    let mut found = Entry::Absent;
    for _ in 0..count {
        let flags_at = at + 40 + hash_len;
        let flags = u16::from_be_bytes(data.get(flags_at..flags_at + 2)?.try_into().ok()?);
        let name_at = flags_at + 2 + if flags & EXTENDED != 0 { 2 } else { 0 };
        at = if version == 4 {
            let (strip, after) = varint(data, name_at)?;
            let end = after + memchr::memchr(0, data.get(after..)?)?;
            name.truncate(name.len().checked_sub(usize::try_from(strip).ok()?)?);
            name.extend_from_slice(&data[after..end]);
            end + 1
        } else {
            let len = match flags & NAME_MASK {
                NAME_MASK => memchr::memchr(0, data.get(name_at..)?)?,
                len => usize::from(len),
            };
            name.clear();
            name.extend_from_slice(data.get(name_at..name_at + len)?);
            // git's ondisk_ce_size: the path and at least one NUL, padded to 8 bytes.
            at + ((name_at - at + len + 8) & !7)
        };
        let entry_stage = u8::try_from((flags >> 12) & 3).ok()?;
        match found {
            _ if name != wanted => {}
            Entry::Found { .. } => {}
            _ if entry_stage == stage => {
                let id = ObjectId::from_bytes_or_panic(data.get(flags_at - hash_len..flags_at)?);
                found = Entry::Found { id, mode: be32(data, at_mode(flags_at, hash_len))? };
            }
            Entry::OtherStage(lowest) if lowest <= entry_stage => {}
            _ => found = Entry::OtherStage(entry_stage),
        }
    }
    // A split index ("link") keeps its entries in a shared file.
    if data.get(at..at + 4) == Some(b"link") {
        return None;
    }
    Some(found)
}

/// Where the mode of the entry whose flags are at `flags_at` is.
fn at_mode(flags_at: usize, hash_len: usize) -> usize {
    flags_at - hash_len - 40 + 24
}

fn be32(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

/// git's `decode_varint` (index version 4's path prefix lengths): the value and where it ends.
fn varint(data: &[u8], mut at: usize) -> Option<(u64, usize)> {
    let mut byte = *data.get(at)?;
    at += 1;
    let mut value = u64::from(byte & 127);
    while byte & 128 != 0 {
        value = value.checked_add(1)?.checked_mul(128)?;
        byte = *data.get(at)?;
        at += 1;
        value += u64::from(byte & 127);
    }
    Some((value, at))
}
