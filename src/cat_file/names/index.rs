//! `:<path>` and `:<n>:<path>`: the entry of the index (`$GIT_INDEX_FILE`, else `<git-dir>/index`) at that
//! path and stage, as git's `get_oid_with_context` finds it. gix-index reads the file (versions 2 to 4, and a
//! split index with its shared part); like git, the checksum is not verified. A `--root` daemon reads the file
//! beneath its root, and gix-index parses the bytes.
use gix_hash::ObjectId;

use crate::refs::{FileError, Files};

/// The index file `:<path>` reads, and the name git's messages give it (`$GIT_INDEX_FILE` as it was given).
#[derive(Debug, Clone)]
pub struct IndexFile {
    pub path: std::path::PathBuf,
    pub shown: std::path::PathBuf,
}

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
    /// Not `DIRC` (git says `error: bad signature 0x<the 4 bytes as a native u32>` first).
    #[error("index file corrupt")]
    Signature(u32),
    #[error("{}: index file smaller than expected", .0.display())]
    Short(std::path::PathBuf),
    #[error("index file corrupt")]
    Corrupt(#[source] gix_error::Error),
    /// git's `xmmap` or `open` failing: `index file open failed`.
    #[error("{}: index file open failed: {}", .0.display(), crate::git_compat::strerror::strerror(.1))]
    Read(std::path::PathBuf, #[source] std::io::Error),
    /// The file, or the shared index it links to, may not be read (it leads outside a `--root` daemon's root).
    #[error("{0}")]
    Refused(String),
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
pub(crate) fn lookup(
    file: &IndexFile,
    hash: gix_hash::Kind,
    path: &[u8],
    stage: u8,
    files: Files<'_>,
) -> Result<Entry, IndexError> {
    let index = file.path.as_path();
    let Some(head) = read(file, files)? else { return Ok(Entry::Absent) };
    // git's own checks first, with its words (gix-index's errors say the same things otherwise).
    if head.len() < 12 + hash.len_in_bytes() {
        return Err(IndexError::Short(file.shown.clone()));
    }
    if &head[..4] != b"DIRC" {
        return Err(IndexError::Signature(u32::from_ne_bytes(head[..4].try_into().expect("four bytes"))));
    }
    let options = gix_index::decode::Options::default();
    let file: gix_index::State = match files {
        Files::ByPath => {
            drop(head);
            gix_index::File::at(index, hash, true, options).map_err(IndexError::Corrupt)?.into()
        }
        Files::Through(files) => from_bytes(&head, index, hash, files)?,
    };
    let path: &gix_object::bstr::BStr = path.into();
    let Some(range) = file.entry_range(path) else { return Ok(Entry::Absent) };
    let entries = &file.entries()[range];
    if let Some(entry) = entries.iter().find(|entry| entry.stage_raw() == u32::from(stage)) {
        return Ok(Entry::Found { id: entry.id, mode: entry.mode.bits() });
    }
    let lowest = entries.iter().map(|entry| entry.stage_raw()).min().unwrap_or(0);
    Ok(Entry::OtherStage(u8::try_from(lowest).unwrap_or(0)))
}

/// The bytes of the index file: `None` when there is none.
fn read(file: &IndexFile, files: Files<'_>) -> Result<Option<Vec<u8>>, IndexError> {
    let read = match files {
        Files::ByPath => std::fs::read(&file.path).map(Some),
        Files::Through(files) => match files.read(&file.path) {
            Err(FileError::Refused(message)) => return Err(IndexError::Refused(message)),
            Err(FileError::Io { source, .. }) => Err(source),
            Ok(read) => Ok(read),
        },
    };
    match read {
        Ok(data) => Ok(data),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(IndexError::Read(file.shown.clone(), err)),
    }
}

/// The index in `bytes` (read from `index` through `files`), parsed by gix-index. gix-index reads the shared
/// part of a split index by path only: that file is read through `files` first, so one leading outside is
/// refused before gix-index opens it, and then gix-index reads the index again by path.
fn from_bytes(
    bytes: &[u8],
    index: &std::path::Path,
    hash: gix_hash::Kind,
    files: &dyn crate::refs::RepoFiles,
) -> Result<gix_index::State, IndexError> {
    let options = gix_index::decode::Options::default();
    let (state, _) =
        gix_index::State::from_bytes(bytes, filetime::FileTime::zero(), hash, options).map_err(IndexError::Corrupt)?;
    let Some(link) = state.link() else { return Ok(state) };
    let shared = index.with_file_name(format!("sharedindex.{}", link.shared_index_checksum));
    if let Err(FileError::Refused(message)) = files.read(&shared) {
        return Err(IndexError::Refused(message));
    }
    Ok(gix_index::File::at(index, hash, true, options).map_err(IndexError::Corrupt)?.into())
}
