//! Finding the real git behind the shim, and handing a command line to it with `exec` (no process stays in
//! between): `CAT_BLOBD_GIT` if set, else the first `git` on `PATH` that is not this binary.
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::fatal::Bytes;
use crate::git_compat::strerror::strerror;

#[derive(Debug, thiserror::Error)]
pub(super) enum RealGitError {
    #[error("CAT_BLOBD_GIT is '{}': {}", Bytes(.0.as_os_str().as_bytes()), strerror(.1))]
    Unusable(PathBuf, #[source] std::io::Error),
    #[error("CAT_BLOBD_GIT is '{}': not an executable file", Bytes(.0.as_os_str().as_bytes()))]
    NotExecutable(PathBuf),
    #[error(
        "CAT_BLOBD_GIT is '{}', which is a cat-blobd shim, not git: running it would loop",
        Bytes(.0.as_os_str().as_bytes())
    )]
    Loop(PathBuf),
    #[error("no git on PATH besides this cat-blobd shim: set CAT_BLOBD_GIT to the real git")]
    NotOnPath,
    #[error("cannot run the real git '{}': {}", Bytes(.0.as_os_str().as_bytes()), strerror(.1))]
    Exec(PathBuf, #[source] std::io::Error),
}

/// The identity of a file: device and inode, as `stat` follows links to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    pub(super) fn of(path: &Path) -> Option<FileId> {
        std::fs::metadata(path).ok().map(|meta| FileId { dev: meta.dev(), ino: meta.ino() })
    }

    /// This running binary.
    pub(super) fn own() -> Option<FileId> {
        FileId::of(Path::new("/proc/self/exe"))
    }
}

/// The real git: `cat_blobd_git` (the value of `CAT_BLOBD_GIT`) if given, else the first executable `git` on
/// `path` that is not `own` (a link to this binary, under any name or in any directory, is skipped).
pub(super) fn find(
    cat_blobd_git: Option<&OsStr>,
    path: Option<&OsStr>,
    own: Option<FileId>,
) -> Result<PathBuf, RealGitError> {
    if let Some(given) = cat_blobd_git.filter(|given| !given.is_empty()) {
        let given = PathBuf::from(given);
        let meta = std::fs::metadata(&given).map_err(|err| RealGitError::Unusable(given.clone(), err))?;
        if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
            return Err(RealGitError::NotExecutable(given));
        }
        if is_a_shim(&given, own) {
            return Err(RealGitError::Loop(given));
        }
        return Ok(given);
    }
    let path = path.map(OsStr::as_bytes).unwrap_or_default();
    path.split(|&b| b == b':')
        // An empty entry is the current directory, as for execvp.
        .map(
            |dir| {
                if dir.is_empty() { Path::new(".").join("git") } else { Path::new(OsStr::from_bytes(dir)).join("git") }
            },
        )
        .find(|candidate| is_executable_file(candidate) && !is_a_shim(candidate, own))
        .ok_or(RealGitError::NotOnPath)
}

/// `candidate` is this binary, or another cat-blobd (another build's shim further on `PATH`): running it would
/// hand the command back here, and the two would `exec` each other for ever. A cat-blobd is known by the name
/// of the file its links lead to.
fn is_a_shim(candidate: &Path, own: Option<FileId>) -> bool {
    if own.is_some() && FileId::of(candidate) == own {
        return true;
    }
    std::fs::canonicalize(candidate)
        .ok()
        .and_then(|target| target.file_name().map(|name| name.as_bytes().starts_with(b"cat-blobd")))
        .unwrap_or(false)
}

fn is_executable_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// Replaces this process with `git` run on `args` (after the program name), `argv[0]` kept as given; returns
/// only if that fails.
pub(super) fn exec(git: &Path, argv0: &OsStr, args: &[OsString]) -> RealGitError {
    let err = Command::new(git).arg0(argv0).args(args).exec();
    RealGitError::Exec(git.to_owned(), err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_skips_this_binary_and_what_is_not_executable() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("c"));
        for sub in [&a, &b, &c] {
            std::fs::create_dir(sub).unwrap();
        }
        std::fs::write(a.join("git"), "").unwrap();
        std::fs::write(b.join("git"), "").unwrap();
        std::fs::set_permissions(b.join("git"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::hard_link(b.join("git"), c.join("git")).unwrap();
        let path = OsString::from(format!("{}:{}:{}", a.display(), b.display(), c.display()));
        assert_eq!(find(None, Some(&path), None).unwrap(), b.join("git"));
        let own = FileId::of(&b.join("git"));
        assert!(matches!(find(None, Some(&path), own), Err(RealGitError::NotOnPath)), "c/git is b/git: itself");
        // Another cat-blobd's link (another build) is skipped too.
        let other_build = dir.path().join("cat-blobd-other");
        std::fs::copy(b.join("git"), &other_build).unwrap();
        std::fs::remove_file(b.join("git")).unwrap();
        std::os::unix::fs::symlink(&other_build, b.join("git")).unwrap();
        let path = OsString::from(format!("{}:{}", b.display(), a.display()));
        assert!(matches!(find(None, Some(&path), None), Err(RealGitError::NotOnPath)), "b/git is a cat-blobd");
        let given = b.join("git").into_os_string();
        assert!(matches!(find(Some(&given), None, own), Err(RealGitError::Loop(_))));
        let plain = a.join("git").into_os_string();
        assert!(matches!(find(Some(&plain), None, None), Err(RealGitError::NotExecutable(_))));
        let missing = dir.path().join("missing").into_os_string();
        assert!(matches!(find(Some(&missing), None, None), Err(RealGitError::Unusable(..))));
    }
}
