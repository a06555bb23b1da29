//! References read through [`RepoFiles`] (a `--root` daemon's root): the bytes of each loose ref, of
//! `packed-refs` and of each reflog are read there, and parsed by gix-ref (`loose::Reference::try_from_path`,
//! `packed::Buffer::from_bytes`). What gix-ref's file store does around its parsers is done here again, because
//! it reads by path with no hook: git's order of names (`rules`), a name's file (in the git directory or the
//! common one, as gix-ref's `to_base_dir_and_relative_name` places it), loose over packed, and listing.
//!
//! A file that leads outside the root is refused: the lookup finds nothing there and the refusal is kept for the
//! caller ([`Beneath::take_refused`]), whose run dies with it.
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use gix_hash::ObjectId;
use gix_ref::bstr::{BStr, ByteSlice};
use gix_ref::file::loose;
use gix_ref::{Category, FullNameRef, Reference, Target, packed};

use super::{FileError, RepoFiles, Stamp};

/// git's `SYMREF_MAXDEPTH`: a symbolic ref of a symbolic ref … at most this deep.
const MAX_SYMREF_DEPTH: usize = 5;

/// A lookup stopped by a file that does not read (gix-ref's store says why; here it names nothing).
struct Stop;

/// The references of one repository, read through `files`.
pub struct Beneath<'a> {
    files: &'a dyn RepoFiles,
    git_dir: PathBuf,
    common_dir: PathBuf,
    hash: gix_hash::Kind,
    /// `packed-refs` as last read, and its stamp then: read again when the stamp changes, as git does.
    packed: Mutex<Option<(Stamp, Arc<packed::Buffer>)>>,
    /// The first file refused since the caller last asked.
    refused: Mutex<Option<FileError>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<'a> Beneath<'a> {
    pub(super) fn new(files: &'a dyn RepoFiles, git_dir: &Path, common_dir: &Path, hash: gix_hash::Kind) -> Self {
        Beneath {
            files,
            git_dir: git_dir.to_owned(),
            common_dir: common_dir.to_owned(),
            hash,
            packed: Mutex::new(None),
            refused: Mutex::new(None),
        }
    }

    pub(super) fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    pub(super) fn take_refused(&self) -> Option<FileError> {
        lock(&self.refused).take()
    }

    /// `result`, an error kept if it is a refusal; `Stop` for any error.
    fn checked<T>(&self, result: Result<T, FileError>) -> Result<T, Stop> {
        result.map_err(|err| {
            if matches!(err, FileError::Refused(_)) {
                lock(&self.refused).get_or_insert(err);
            }
            Stop
        })
    }

    /// git's `repo_dwim_ref` for one name: the first of its expansions that is a reference. The name itself is
    /// tried only where it could be a full name (under `refs/`, a pseudo-ref such as `HEAD`, or another
    /// worktree's); any file that does not read ends the lookup, as in gix-ref.
    pub(super) fn find(&self, name: &[u8]) -> Option<Reference> {
        let as_is = looks_full(name) || is_pseudo_ref(name);
        for (i, full) in super::rules::expansions(name).enumerate() {
            if i == 0 && !as_is {
                continue;
            }
            match self.find_full(&full) {
                Ok(Some(found)) => return Some(found),
                Ok(None) => {}
                Err(Stop) => return None,
            }
        }
        None
    }

    /// The reference with the full name `full`: its loose file, else its line in `packed-refs`.
    fn find_full(&self, full: &[u8]) -> Result<Option<Reference>, Stop> {
        let Ok(name) = <&FullNameRef>::try_from(BStr::new(full)) else { return Ok(None) };
        let Some((base, relative)) = place(name, &self.git_dir, &self.common_dir, false) else { return Ok(None) };
        if let Some(bytes) = self.checked(self.files.read(&base.join(path_of(relative))))? {
            return loose::Reference::try_from_path(name.to_owned(), &bytes, self.hash)
                .map(Into::into)
                .map(Some)
                .map_err(|_| Stop);
        }
        // Names outside `refs/` (`HEAD`, pseudo-refs, another worktree's) are never packed.
        if !looks_full(full) {
            return Ok(None);
        }
        let Some(packed) = self.packed()? else { return Ok(None) };
        match packed.try_find(name.as_partial_name()) {
            Ok(found) => Ok(found.map(Into::into)),
            Err(_) => Err(Stop),
        }
    }

    /// `packed-refs`, read again if it changed since it was last read: `None` when there is none.
    fn packed(&self) -> Result<Option<Arc<packed::Buffer>>, Stop> {
        let path = self.common_dir.join("packed-refs");
        let Some(stamp) = self.checked(self.files.stamp(&path))? else { return Ok(None) };
        let mut cached = lock(&self.packed);
        if let Some((at, buffer)) = cached.as_ref()
            && *at == stamp
        {
            return Ok(Some(Arc::clone(buffer)));
        }
        let Some(bytes) = self.checked(self.files.read(&path))? else { return Ok(None) };
        let buffer = Arc::new(packed::Buffer::from_bytes(&bytes, self.hash).map_err(|_| Stop)?);
        *cached = Some((stamp, Arc::clone(&buffer)));
        Ok(Some(buffer))
    }

    /// The object `reference` leads to, through at most git's depth of symbolic refs.
    pub(super) fn to_object(&self, mut reference: Reference) -> Option<ObjectId> {
        for _ in 0..=MAX_SYMREF_DEPTH {
            match reference.target {
                Target::Object(id) => return Some(id),
                Target::Symbolic(target) => reference = self.find_full(target.as_bstr()).ok()??,
            }
        }
        None
    }

    /// Does `name` have a reflog? git's `files_reflog_exists`: an `lstat` that finds a regular file, so a log
    /// that is a symlink is read (`@{1}` of HEAD's branch) but is none for git's rules (`<name>@{1}`).
    pub(super) fn reflog_exists(&self, name: &FullNameRef) -> bool {
        let Some(path) = reflog_path(name, &self.git_dir, &self.common_dir) else { return false };
        self.checked(self.files.is_plain_file(&path)).unwrap_or(false)
    }

    /// The bytes of `name`'s reflog: `None` when there is none (or a directory is there).
    pub(super) fn reflog(&self, name: &FullNameRef) -> Result<Option<Vec<u8>>, FileError> {
        let Some(path) = reflog_path(name, &self.git_dir, &self.common_dir) else { return Ok(None) };
        match self.files.read(&path) {
            Err(refused @ FileError::Refused(_)) => {
                let message = refused.to_string();
                lock(&self.refused).get_or_insert(refused);
                Err(FileError::Refused(message))
            }
            read => read,
        }
    }

    /// Every reference under `prefix` (ending with `/`), loose over packed, sorted by name. A worktree's own
    /// references (`refs/bisect/`, `refs/worktree/`, `refs/rewritten/`) are listed from its git directory.
    pub(super) fn prefixed(&self, prefix: &str) -> Vec<Reference> {
        let mut found: BTreeMap<Vec<u8>, Reference> = BTreeMap::new();
        if let Ok(Some(packed)) = self.packed()
            && let Ok(lines) = packed.iter_prefixed(prefix.into())
        {
            for reference in lines.flatten() {
                found.insert(reference.name.as_bstr().to_vec(), reference.into());
            }
        }
        let mut loose = Vec::new();
        let dir = prefix.trim_end_matches('/');
        if self.list(&self.common_dir, dir.as_bytes(), &mut loose).is_err() {
            return Vec::new();
        }
        if self.git_dir != self.common_dir && self.list(&self.git_dir, dir.as_bytes(), &mut loose).is_err() {
            return Vec::new();
        }
        for name in loose {
            match self.find_full(&name) {
                // A loose file hides the packed line of the same name.
                Ok(Some(reference)) => _ = found.insert(name, reference),
                Ok(None) => {}
                // One leading out ends the listing (the caller dies); one that does not parse is left out.
                Err(Stop) if self.has_refused() => return Vec::new(),
                Err(Stop) => {}
            }
        }
        found.into_values().collect()
    }

    fn has_refused(&self) -> bool {
        lock(&self.refused).is_some()
    }

    /// Adds the full names of the loose files under `dir` (a ref name's directory, relative to `base`) to `out`:
    /// from the common directory those shared by every worktree, from a linked worktree's own its private ones.
    fn list(&self, base: &Path, dir: &[u8], out: &mut Vec<Vec<u8>>) -> Result<(), Stop> {
        let mut queue = vec![dir.to_vec()];
        while let Some(dir) = queue.pop() {
            for (entry, is_dir) in self.checked(self.files.list(&base.join(OsStr::from_bytes(&dir))))? {
                let name = [&dir[..], b"/", entry.as_bytes()].concat();
                if is_dir {
                    queue.push(name);
                    continue;
                }
                let Ok(full) = <&FullNameRef>::try_from(BStr::new(&name)) else { continue };
                let private = full.category().is_some_and(|category| category.is_worktree_private());
                let own = if base == self.common_dir { !private || self.git_dir == self.common_dir } else { private };
                if own {
                    out.push(name);
                }
            }
        }
        Ok(())
    }
}

/// A name under `refs/`, or another worktree's (`main-worktree/…`, `worktrees/<id>/…`): gix-ref's
/// `looks_like_full_name` without pseudo-refs, the names that may be packed.
fn looks_full(name: &[u8]) -> bool {
    name.starts_with(b"refs/") || name.starts_with(b"main-worktree/") || name.starts_with(b"worktrees/")
}

/// git's root refs, as gix-ref takes them: upper-case letters and `_` only (`HEAD`, `FETCH_HEAD`, …).
fn is_pseudo_ref(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&b| b.is_ascii_uppercase() || b == b'_')
}

fn path_of(name: &BStr) -> &Path {
    Path::new(OsStr::from_bytes(name.as_bytes()))
}

/// Where `name`'s reflog is, in a repository whose git directory is `git_dir` (its common one `common_dir`).
pub(super) fn reflog_path(name: &FullNameRef, git_dir: &Path, common_dir: &Path) -> Option<PathBuf> {
    let (base, relative) = place(name, git_dir, common_dir, true)?;
    Some(base.join("logs").join(path_of(relative)))
}

/// The directory `name`'s file (or, `reflog`, its log under `logs/`) is in and its name there: gix-ref's
/// `to_base_dir_and_relative_name`, whose store keeps it to itself. A worktree's own references (pseudo-refs
/// such as `HEAD`, `refs/bisect/`, `refs/worktree/`, `refs/rewritten/`) are in its git directory, the others in
/// the common one; `main-worktree/` and `worktrees/<id>/` name another worktree's.
fn place<'n>(name: &'n FullNameRef, git_dir: &Path, common_dir: &Path, reflog: bool) -> Option<(PathBuf, &'n BStr)> {
    let linked = |worktree: &BStr| common_dir.join("worktrees").join(path_of(worktree));
    let Some((category, short)) = name.category_and_short_name() else {
        return Some((common_dir.to_owned(), name.as_bstr()));
    };
    Some(match category {
        Category::LinkedPseudoRef { name: worktree } if reflog => (linked(worktree), short),
        Category::LinkedPseudoRef { .. } => (common_dir.to_owned(), name.as_bstr()),
        Category::Tag | Category::LocalBranch | Category::RemoteBranch | Category::Note => {
            (common_dir.to_owned(), name.as_bstr())
        }
        Category::MainRef | Category::MainPseudoRef => (common_dir.to_owned(), short),
        Category::LinkedRef { name: worktree } => {
            let private = <&FullNameRef>::try_from(short).ok()?.category().is_some_and(|c| c.is_worktree_private());
            match (private, reflog) {
                (true, true) => (linked(worktree), short),
                (true, false) => (common_dir.to_owned(), name.as_bstr()),
                (false, _) => (common_dir.to_owned(), short),
            }
        }
        Category::PseudoRef | Category::Bisect | Category::Rewritten | Category::WorktreePrivate => {
            (git_dir.to_owned(), name.as_bstr())
        }
    })
}
