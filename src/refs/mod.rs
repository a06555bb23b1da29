//! A repository's references (`HEAD`, loose refs, `packed-refs`, reflogs) and the one seam that says how its
//! files are read ([`Files`]).
//!
//! ```text
//! Files     by path (a repository of its own: one-shot runs, `serve --git-dir`), or through a RepoFiles
//!           (a `--root` daemon's root: every path opened beneath it, one leading out refused, never opened)
//! Refs      by path: gix-ref's file store, as it always was;
//!           through RepoFiles: `beneath`, which reads the bytes there and parses them with gix-ref's parsers
//! rules     git's order for trying a short name as a reference
//! ```
//!
//! gix-ref's file store opens files by path and has no hook for how it opens them, so the lookups it does on top
//! of its parsers (which file a name is in, loose over packed, the reflog's place) are done again in `beneath`
//! for the daemon; the parsing, the part where git's rules are intricate, stays gix-ref's.
mod beneath;
pub use beneath::Beneath;
pub(crate) mod rules;

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use gix_hash::ObjectId;
use gix_ref::Reference;
use gix_ref::bstr::BStr;

/// Why a repository file was not read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// It may not be read at all (it lies, or leads, outside a `--root` daemon's root): the message says where,
    /// and the client's run dies with it.
    #[error("{0}")]
    Refused(String),
    #[error("cannot read '{}': {source}", crate::fatal::Bytes(.path.as_os_str().as_bytes()))]
    Io { path: PathBuf, source: std::io::Error },
}

/// What identifies a file's content for a cache: device, inode, size and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime: (i64, i64),
}

/// How a `--root` daemon reads a repository's files: every path beneath its root.
pub trait RepoFiles: Sync {
    /// The bytes of the file at `path`, following symlinks that stay where they may: `Ok(None)` when nothing,
    /// or a directory, is there.
    fn read(&self, path: &Path) -> Result<Option<Vec<u8>>, FileError>;
    /// The names in the directory at `path`, each with whether it is a directory (a symlink followed): empty
    /// when there is no directory there.
    fn list(&self, path: &Path) -> Result<Vec<(OsString, bool)>, FileError>;
    /// The stamp of the file at `path`, a symlink followed: `Ok(None)` when nothing is there.
    fn stamp(&self, path: &Path) -> Result<Option<Stamp>, FileError>;
    /// Is `path` itself a regular file (a symlink as its last component is not followed, as `lstat`)?
    fn is_plain_file(&self, path: &Path) -> Result<bool, FileError>;
    /// Is something at `path` (a relative one named from where git would work for the client), a symlink as its
    /// last component not followed, as `lstat`? A path that leads where files may not be read is not looked at,
    /// and so not there.
    fn on_disk(&self, path: &Path) -> bool;
}

/// How a repository's files are read.
#[derive(Clone, Copy)]
pub enum Files<'a> {
    /// By path, symlinks followed wherever they lead, as git reads them.
    ByPath,
    /// Through a `--root` daemon's root.
    Through(&'a dyn RepoFiles),
}

impl Files<'_> {
    /// Is something at `path` (git's `lstat` of a path named on the command line, from the working directory, to
    /// explain a name)?
    pub fn on_disk(&self, path: &Path) -> bool {
        match self {
            Files::ByPath => std::fs::symlink_metadata(path).is_ok(),
            Files::Through(files) => files.on_disk(path),
        }
    }
}

/// A repository's references.
pub enum Refs<'a> {
    ByPath(gix_ref::file::Store),
    Beneath(Beneath<'a>),
}

impl<'a> Refs<'a> {
    /// The references of the repository whose git directory is `git_dir` (its common one `common_dir`: they
    /// differ in a linked worktree), read as `files` says.
    pub fn open(git_dir: &Path, common_dir: &Path, hash: gix_hash::Kind, files: Files<'a>) -> Refs<'a> {
        match files {
            Files::ByPath if git_dir == common_dir => Refs::ByPath(gix_ref::file::Store::at(git_dir.to_owned(), hash)),
            Files::ByPath => {
                Refs::ByPath(gix_ref::file::Store::for_linked_worktree(git_dir.to_owned(), common_dir.to_owned(), hash))
            }
            Files::Through(files) => Refs::Beneath(Beneath::new(files, git_dir, common_dir, hash)),
        }
    }

    pub fn git_dir(&self) -> &Path {
        match self {
            Refs::ByPath(store) => store.git_dir(),
            Refs::Beneath(refs) => refs.git_dir(),
        }
    }

    /// The reference a (partial) name names, by git's rules: `None` when there is none or it does not read.
    pub fn find(&self, name: &[u8]) -> Option<Reference> {
        let partial: &gix_ref::PartialNameRef = BStr::new(name).try_into().ok()?;
        match self {
            Refs::ByPath(store) => store.try_find(partial).ok()?,
            Refs::Beneath(refs) => refs.find(name),
        }
    }

    /// The object `reference` leads to, through symbolic refs (loose or packed).
    pub fn to_object(&self, mut reference: Reference) -> Option<ObjectId> {
        match self {
            Refs::ByPath(store) => {
                use gix_ref::file::ReferenceExt;
                let packed = store.cached_packed_buffer().ok().flatten();
                reference.follow_to_object_packed(store, packed.as_ref().map(|buffer| &***buffer)).ok()
            }
            Refs::Beneath(refs) => refs.to_object(reference),
        }
    }

    /// Does the reference with the full name `name` have a reflog? git's `files_reflog_exists`: an `lstat` that
    /// finds a regular file, so a log that is a symlink is read (`@{1}` of HEAD's branch) but is none for git's
    /// rules (`<name>@{1}`). gix-ref's `reflog_exists` follows the link, so the path is looked at here.
    pub fn reflog_exists(&self, name: &[u8]) -> bool {
        let Ok(full) = <&gix_ref::FullNameRef>::try_from(BStr::new(name)) else { return false };
        match self {
            Refs::ByPath(store) => {
                let path = beneath::reflog_path(full, store.git_dir(), store.common_dir_resolved());
                path.and_then(|path| std::fs::symlink_metadata(path).ok()).is_some_and(|meta| meta.is_file())
            }
            Refs::Beneath(refs) => refs.reflog_exists(full),
        }
    }

    /// The bytes of the reflog of the reference with the full name `name`: `None` when there is none.
    pub fn reflog(&self, name: &[u8]) -> Result<Option<Vec<u8>>, Box<dyn std::error::Error + Send + Sync>> {
        let Ok(full) = <&gix_ref::FullNameRef>::try_from(BStr::new(name)) else { return Ok(None) };
        match self {
            Refs::ByPath(store) => {
                let mut buf = Vec::new();
                match store.reflog_iter(full, &mut buf) {
                    Ok(Some(_lines)) => Ok(Some(buf)),
                    Ok(None) => Ok(None),
                    Err(err) => Err(err.into()),
                }
            }
            Refs::Beneath(refs) => refs.reflog(full).map_err(Into::into),
        }
    }

    /// Every reference whose full name starts with `prefix` (which ends with `/`), loose over packed; those
    /// that do not read are left out.
    pub fn prefixed(&self, prefix: &str) -> Vec<Reference> {
        match self {
            Refs::ByPath(store) => {
                let Ok(platform) = store.iter() else { return Vec::new() };
                let Ok(prefix) = prefix.try_into() else { return Vec::new() };
                let Ok(listed) = platform.prefixed(prefix) else { return Vec::new() };
                listed.flatten().collect()
            }
            Refs::Beneath(refs) => refs.prefixed(prefix),
        }
    }

    /// Every reference, loose over packed; those that do not read are left out.
    pub fn all(&self) -> Vec<Reference> {
        match self {
            Refs::ByPath(store) => {
                let Ok(platform) = store.iter() else { return Vec::new() };
                let Ok(all) = platform.all() else { return Vec::new() };
                all.filter_map(Result::ok).collect()
            }
            Refs::Beneath(refs) => refs.prefixed("refs/"),
        }
    }

    /// The first file refused since the last call (a lookup that met one found nothing there): the caller's
    /// run dies with it.
    pub fn take_refused(&self) -> Option<FileError> {
        match self {
            Refs::ByPath(_) => None,
            Refs::Beneath(refs) => refs.take_refused(),
        }
    }
}
