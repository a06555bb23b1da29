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
/// part of a split index only by path, next to the split part (its `Link::dissolve_into` is not public): both
/// parts, as read through `files`, are written to a private directory and gix-index reads them there, so what
/// it parses is what was read beneath the root, even if the files under it change meanwhile. Split indexes are
/// rare, and an index with no link is parsed from `bytes` directly.
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
    let shared_name = format!("sharedindex.{}", link.shared_index_checksum);
    let shared = index.with_file_name(&shared_name);
    let shared_bytes = match files.read(&shared) {
        Err(FileError::Refused(message)) => return Err(IndexError::Refused(message)),
        Err(FileError::Io { source, .. }) => return Err(IndexError::Read(shared, source)),
        Ok(shared_bytes) => shared_bytes,
    };
    let private = tempfile::tempdir().map_err(|err| IndexError::Read(index.to_owned(), err))?;
    let copy = private.path().join("index");
    std::fs::write(&copy, bytes).map_err(|err| IndexError::Read(index.to_owned(), err))?;
    // A missing shared part stays missing: gix-index fails as it does reading the repository by path.
    if let Some(shared_bytes) = shared_bytes {
        std::fs::write(private.path().join(shared_name), shared_bytes)
            .map_err(|err| IndexError::Read(index.to_owned(), err))?;
    }
    Ok(gix_index::File::at(copy, hash, true, options).map_err(IndexError::Corrupt)?.into())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::ffi::OsString;
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::refs::{RepoFiles, Stamp};

    /// A root's files as they were read beneath it, held in memory: what is on disk at those paths later does
    /// not count.
    struct Read(HashMap<PathBuf, Vec<u8>>);

    impl RepoFiles for Read {
        fn read(&self, path: &Path) -> Result<Option<Vec<u8>>, FileError> {
            Ok(self.0.get(path).cloned())
        }
        fn list(&self, _: &Path) -> Result<Vec<(OsString, bool)>, FileError> {
            Ok(Vec::new())
        }
        fn stamp(&self, _: &Path) -> Result<Option<Stamp>, FileError> {
            Ok(None)
        }
        fn is_plain_file(&self, path: &Path) -> Result<bool, FileError> {
            Ok(self.0.contains_key(path))
        }
        fn on_disk(&self, _: &Path) -> bool {
            false
        }
    }

    fn git(dir: &Path, args: &[&str], stdin: &[u8]) {
        use std::io::Write;
        let mut child = std::process::Command::new("git")
            .current_dir(dir)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("git");
        child.stdin.take().expect("stdin").write_all(stdin).expect("git's stdin");
        assert!(child.wait().expect("git").success(), "git {args:?}");
    }

    /// A split index is parsed from both its parts as read through the root's files, not read again by path:
    /// between the check and gix-index's read, either file could have been replaced (by a link out of the root).
    /// Before, gix-index read both again by path, and this index, gone from disk, did not parse.
    #[test]
    fn a_split_index_is_parsed_from_what_was_read_beneath_the_root() {
        let work = tempfile::tempdir().expect("temporary directory");
        git(work.path(), &["init", "-q"], b"");
        let blob = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";
        git(work.path(), &["update-index", "--index-info"], format!("100644 {blob}\tshared\n").as_bytes());
        git(work.path(), &["update-index", "--split-index"], b"");
        git(work.path(), &["update-index", "--index-info"], format!("100644 {blob}\tsplit\n").as_bytes());
        let git_dir = work.path().join(".git");
        let mut read = HashMap::new();
        for entry in std::fs::read_dir(&git_dir).expect("the git directory").flatten() {
            let name = entry.file_name();
            if name == "index" || name.as_encoded_bytes().starts_with(b"sharedindex.") {
                read.insert(entry.path(), std::fs::read(entry.path()).expect("an index part"));
            }
        }
        // The split index and its shared part (and the shared part it had before the last change).
        assert!(read.len() >= 2 && read.contains_key(&git_dir.join("index")), "a split index and its shared part");
        // What is on disk now is not what was read: nothing.
        drop(work);
        let file = IndexFile { path: git_dir.join("index"), shown: git_dir.join("index") };
        let files = Read(read);
        let id = ObjectId::from_hex(blob.as_bytes()).expect("an id");
        for path in [&b"shared"[..], b"split"] {
            let found = lookup(&file, gix_hash::Kind::Sha1, path, 0, Files::Through(&files)).expect("parses");
            assert_eq!(found, Entry::Found { id, mode: 0o100644 });
        }
        let absent = lookup(&file, gix_hash::Kind::Sha1, b"neither", 0, Files::Through(&files)).expect("parses");
        assert_eq!(absent, Entry::Absent);
    }
}
