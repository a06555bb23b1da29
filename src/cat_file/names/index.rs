//! `:<path>` and `:<n>:<path>`: the entry of the index (`$GIT_INDEX_FILE`, else `<git-dir>/index`) at that
//! path and stage, as git's `get_oid_with_context` finds it. gix-index reads the file (versions 2 to 4, and a
//! split index with its shared part); like git, the checksum is not verified.
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
}

/// An index file that exists but does not read: git dies.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// Not `DIRC` (git says `error: bad signature 0x<4 bytes>` first).
    #[error("index file corrupt")]
    Signature(u32),
    #[error("{}: index file smaller than expected", .0.display())]
    Short(std::path::PathBuf),
    #[error("index file corrupt")]
    Corrupt(#[source] gix_error::Error),
    /// git's `xmmap` or `open` failing: `index file open failed`.
    #[error("{}: index file open failed: {}", .0.display(), crate::git_compat::strerror::strerror(.1))]
    Read(std::path::PathBuf, #[source] std::io::Error),
}

impl IndexError {
    /// What git says on stderr before it dies.
    pub(crate) fn complaint(&self) -> Option<String> {
        match self {
            IndexError::Signature(found) => Some(format!("error: bad signature 0x{found:08x}\n")),
            _ => None,
        }
    }
}

/// The entry at `path` and `stage` in the index file `index`.
pub(crate) fn lookup(index: &Path, hash: gix_hash::Kind, path: &[u8], stage: u8) -> Result<Entry, IndexError> {
    let head = match std::fs::read(index) {
        Ok(data) => data,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Entry::Absent),
        Err(err) => return Err(IndexError::Read(index.to_owned(), err)),
    };
    // git's own checks first, with its words (gix-index's errors say the same things otherwise).
    if head.len() < 12 + hash.len_in_bytes() {
        return Err(IndexError::Short(index.to_owned()));
    }
    if &head[..4] != b"DIRC" {
        return Err(IndexError::Signature(u32::from_be_bytes(head[..4].try_into().expect("four bytes"))));
    }
    drop(head);
    let options = gix_index::decode::Options::default();
    let file = gix_index::File::at(index, hash, true, options).map_err(IndexError::Corrupt)?;
    let path: &gix_object::bstr::BStr = path.into();
    let Some(range) = file.entry_range(path) else { return Ok(Entry::Absent) };
    let entries = &file.entries()[range];
    if let Some(entry) = entries.iter().find(|entry| entry.stage_raw() == u32::from(stage)) {
        return Ok(Entry::Found { id: entry.id, mode: entry.mode.bits() });
    }
    let lowest = entries.iter().map(|entry| entry.stage_raw()).min().unwrap_or(0);
    Ok(Entry::OtherStage(u8::try_from(lowest).unwrap_or(0)))
}
