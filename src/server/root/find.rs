//! Finding a client's repository under the root, as git would find it in the client: `GIT_DIR` (relative to the
//! client's working directory), else walking up from that directory to the root (`.git` directories, `.git`
//! files, bare repositories), stopping at the client's `GIT_CEILING_DIRECTORIES`. Every path read on the way,
//! and the repository's common directory, object directory and alternates, is resolved beneath the root
//! ([`Root::resolve`]): a repository that reaches outside it is refused before anything there is looked at. Its
//! configuration files and their includes are read beneath the root too, before the pool opens it
//! ([`confine_config`]).
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use super::confine::{Beneath, ConfineError, Root};
use crate::fatal::Bytes;
use crate::repo::{Environment, RepoError};
use crate::wire::protocol::Hello;

/// git stops following alternates deeper than this (`link_alt_odb_entries`).
const MAX_ALTERNATE_DEPTH: usize = 5;
/// git (and gix-config, which reads the configuration) stop following includes deeper than this.
const MAX_INCLUDE_DEPTH: usize = 10;

#[derive(Debug, thiserror::Error)]
pub(crate) enum FindError {
    #[error(transparent)]
    Confine(#[from] ConfineError),
    #[error("not a git repository (or any parent up to the root '{}'): '{}'", Bytes(.root.as_os_str().as_bytes()), Bytes(.path.as_os_str().as_bytes()))]
    NotFound { path: PathBuf, root: PathBuf },
    #[error("not a git repository: '{}'", Bytes(.0.as_os_str().as_bytes()))]
    NotARepository(PathBuf),
    /// A single-repository daemon's client names another repository.
    #[error("'{}' is not the repository this daemon serves", Bytes(.0.as_os_str().as_bytes()))]
    NotServed(PathBuf),
    #[error("the client passed no working directory, and no absolute GIT_DIR")]
    NoDirectory,
    #[error("'{}' is not readable by uid {uid}", Bytes(.path.as_os_str().as_bytes()))]
    Unreadable { path: PathBuf, uid: u32 },
    #[error(transparent)]
    Repository(#[from] RepoError),
}

/// A client's repository (where it is: its configuration is read only when the pool opens it), and the
/// environment it is read with.
pub(crate) struct Found {
    pub git_dir: PathBuf,
    pub common_dir: PathBuf,
    pub objects_dir: PathBuf,
    pub env: Environment,
    /// The client's working directory (its real path).
    pub cwd: Option<PathBuf>,
    /// Found walking up from it (not named by `GIT_DIR`): with the top of its work tree, `None` for a bare
    /// repository. Where git's set-up puts the work tree, whose `.mailmap` `--use-mailmap` reads.
    pub discovered: Option<Option<PathBuf>>,
}

/// Who asks: the client's working directory (its real path), its hello and its credentials.
pub(crate) struct Client<'a> {
    pub cwd: Option<PathBuf>,
    pub hello: &'a Hello,
    pub uid: u32,
    pub gid: u32,
    /// The uid the daemon runs as: its clients read what it may.
    pub server_uid: u32,
}

/// Finds `client`'s repository under `root`.
pub(crate) fn find(root: &Root, client: &Client<'_>) -> Result<Found, FindError> {
    let env = environment(client);
    let (git_dir, discovered) = match &env.git_dir {
        Some(dir) => {
            let dir = absolute(client, dir)?;
            let found = root.resolve(&dir)?.ok_or_else(|| FindError::NotARepository(dir.clone()))?;
            match follow_gitfile(root, found)? {
                Some(git_dir) => (git_repository(root, git_dir)?.ok_or(FindError::NotARepository(dir))?, None),
                None => return Err(FindError::NotARepository(dir)),
            }
        }
        None => {
            let (git_dir, top) = walk_up(root, client)?;
            (git_dir, Some(top))
        }
    };
    let (git_dir, common) = git_dir;
    let objects_dir = match &env.object_directory {
        Some(dir) => absolute(client, dir)?,
        None => common.as_ref().map_or(&git_dir.path, |common| &common.path).join("objects"),
    };
    let common_dir = common.as_ref().map_or(&git_dir.path, |common| &common.path).clone();
    let (git_dir_path, cwd) = (git_dir.path.clone(), client.cwd.clone());
    let found = Found { git_dir: git_dir_path, common_dir, objects_dir, env, cwd, discovered };
    confine_repository(root, &found, git_dir, common, client)?;
    Ok(found)
}

/// The environment the repository is read with: the client's variables that select it and its objects, the
/// daemon's for the rest (its configuration files, as for every client of a daemon).
fn environment(client: &Client<'_>) -> Environment {
    let var = |name: &str| client.hello.var(name).map(|value| OsStr::from_bytes(value).to_owned());
    Environment {
        git_dir: var("GIT_DIR").map(PathBuf::from),
        object_directory: var("GIT_OBJECT_DIRECTORY").map(PathBuf::from),
        alternate_object_directories: var("GIT_ALTERNATE_OBJECT_DIRECTORIES"),
        no_replace_objects: var("GIT_NO_REPLACE_OBJECTS").is_some(),
        replace_ref_base: var("GIT_REPLACE_REF_BASE"),
        // The client's work tree, never the daemon's (relative to the client's directory, as git reads it there).
        work_tree: var("GIT_WORK_TREE").filter(|dir| !dir.is_empty()).map(|dir| match &client.cwd {
            Some(cwd) => cwd.join(dir),
            None => PathBuf::from(dir),
        }),
        implicit_work_tree: var("GIT_IMPLICIT_WORK_TREE"),
        ..Environment::from_process()
    }
}

/// `path` made absolute against the client's working directory.
fn absolute(client: &Client<'_>, path: &Path) -> Result<PathBuf, FindError> {
    if path.is_absolute() {
        return Ok(path.to_owned());
    }
    Ok(client.cwd.as_ref().ok_or(FindError::NoDirectory)?.join(path))
}

/// A git directory and, for a linked worktree, its common directory: both beneath the root.
type GitDir = (Beneath, Option<Beneath>);

/// Walks up from the client's directory to the root (never above it), as git's discovery does: the git directory,
/// and the top of its work tree (`None`: a bare repository).
fn walk_up(root: &Root, client: &Client<'_>) -> Result<(GitDir, Option<PathBuf>), FindError> {
    let cwd = client.cwd.as_ref().ok_or(FindError::NoDirectory)?;
    let ceilings = ceilings(client);
    let start = root.resolve(cwd)?.ok_or_else(|| FindError::NotARepository(cwd.clone()))?;
    let mut dir = start.path.clone();
    // The client's own directory is resolved already: each step up resolves its parent once.
    let mut resolved = Some(start);
    loop {
        if let Some(dot_git) = root.resolve(&dir.join(".git"))?
            && let Some(git_dir) = follow_gitfile(root, dot_git)?
            && let Some(found) = git_repository(root, git_dir)?
        {
            return Ok((found, Some(dir)));
        }
        let here = match resolved.take() {
            Some(here) => Some(here),
            None => root.resolve(&dir)?,
        };
        if let Some(here) = here
            && let Some(found) = git_repository(root, here)?
        {
            return Ok((found, None));
        }
        match dir.parent() {
            Some(parent) if dir != root.path() && !ceilings.iter().any(|ceiling| ceiling == parent) => {
                dir = parent.to_owned();
            }
            _ => return Err(FindError::NotFound { path: cwd.clone(), root: root.path().to_owned() }),
        }
    }
}

/// The client's `GIT_CEILING_DIRECTORIES` (absolute entries; git ignores the others).
fn ceilings(client: &Client<'_>) -> Vec<PathBuf> {
    let Some(list) = client.hello.var("GIT_CEILING_DIRECTORIES") else { return Vec::new() };
    list.split(|&b| b == b':')
        .map(|entry| PathBuf::from(OsStr::from_bytes(entry)))
        .filter(|entry| entry.is_absolute())
        .collect()
}

/// A `.git` that is a file (`gitdir: <path>`, relative to the file's directory) leads to its target; a directory
/// is itself.
fn follow_gitfile(root: &Root, found: Beneath) -> Result<Option<Beneath>, FindError> {
    if found.is_dir() {
        return Ok(Some(found));
    }
    let Some(content) = root.read(&found.path)? else { return Ok(None) };
    let Some(target) = content.trim_ascii_end().strip_prefix(b"gitdir: ") else { return Ok(None) };
    let base = found.path.parent().unwrap_or(root.path());
    let target = base.join(OsStr::from_bytes(target));
    Ok(root.resolve(&target)?.filter(Beneath::is_dir))
}

/// git's `is_git_directory`: a `HEAD`, then `objects` and `refs` directories in the common directory (the one a
/// linked worktree's `commondir` file names, else `dir` itself), all beneath the root. `Ok(None)`: not a git
/// directory. One of those paths leading outside the root is refused: git would read it.
fn git_repository(root: &Root, dir: Beneath) -> Result<Option<GitDir>, FindError> {
    let exists = |path: PathBuf| match root.exists(&path) {
        Ok(exists) => Ok(exists),
        Err(err @ ConfineError::Outside { .. }) => Err(err),
        Err(ConfineError::Io { .. }) => Ok(false),
    };
    if !exists(dir.path.join("HEAD"))? {
        return Ok(None);
    }
    let common = match root.read(&dir.path.join("commondir")) {
        Ok(Some(content)) => {
            // git takes the path as written, relative to the git directory, and resolves it (`get_common_dir`).
            let named = dir.path.join(OsStr::from_bytes(content.trim_ascii_end()));
            let Some(common) = root.resolve(&named)? else { return Ok(None) };
            Some(common)
        }
        Ok(None) => None,
        Err(err @ ConfineError::Outside { .. }) => return Err(err.into()),
        Err(ConfineError::Io { .. }) => return Ok(None),
    };
    let common_path = common.as_ref().map_or(&dir.path, |common| &common.path);
    if !exists(common_path.join("objects"))? || !exists(common_path.join("refs"))? {
        return Ok(None);
    }
    Ok(Some((dir, common)))
}

/// Checks that every directory `repo` reads lies beneath the root (its common directory, its object directory,
/// every alternate, recursively), and that a client of another uid may read them.
fn confine_repository(
    root: &Root,
    repo: &Found,
    git_dir: Beneath,
    common: Option<Beneath>,
    client: &Client<'_>,
) -> Result<(), FindError> {
    let mut dirs: Vec<Beneath> = [Some(git_dir), common].into_iter().flatten().collect();
    let mut queue = vec![(repo.objects_dir.clone(), 0)];
    if let Some(list) = &repo.env.alternate_object_directories {
        for entry in list.as_bytes().split(|&b| b == b':').filter(|entry| !entry.is_empty()) {
            queue.push((absolute(client, Path::new(OsStr::from_bytes(entry)))?, 1));
        }
    }
    let mut seen: Vec<PathBuf> = Vec::new();
    while let Some((dir, depth)) = queue.pop() {
        let Some(found) = root.resolve(&dir)? else { continue };
        if seen.contains(&found.path) {
            continue;
        }
        seen.push(found.path.clone());
        if depth < MAX_ALTERNATE_DEPTH
            && let Some(list) = root.read(&found.path.join("info").join("alternates"))?
        {
            for entry in crate::store::alternate_entries(&list) {
                queue.push((found.path.join(OsString::from_vec(entry)), depth + 1));
            }
        }
        dirs.push(found);
    }
    if client.uid != client.server_uid
        && let Some(dir) = dirs.iter().find(|dir| !dir.readable_by(client.uid, client.gid))
    {
        return Err(FindError::Unreadable { path: dir.path.clone(), uid: client.uid });
    }
    Ok(())
}

/// Checks that the repository's own configuration files (`config`, and `config.worktree` where
/// `extensions.worktreeConfig` enables it) and every file they include lie beneath the root, reading each through
/// it, before the pool opens the repository (whose configuration gix-config then reads by path). Every
/// `includeIf` is followed whatever its condition: one leading outside is refused even where git would not take
/// it. The daemon's own system and global files are its configuration, not the repository's.
pub(crate) fn confine_config(root: &Root, repo: &Found) -> Result<(), FindError> {
    let local = repo.common_dir.join("config");
    let Some(bytes) = root.read(&local)? else { return Ok(()) };
    let mut queue = vec![(local, bytes, 0)];
    let mut first = true;
    while let Some((path, bytes, depth)) = queue.pop() {
        let meta = gix_config::file::Metadata::from(gix_config::Source::Local).at(&path);
        // A file gix-config cannot parse makes opening the repository fail, as it does in git.
        let Ok(config) = gix_config::File::from_bytes_no_includes(&bytes, meta, Default::default()) else { continue };
        if std::mem::take(&mut first)
            && config.boolean("extensions.worktreeConfig").ok().flatten().unwrap_or(false)
            && let Some(bytes) = root.read(&repo.git_dir.join("config.worktree"))?
        {
            queue.push((repo.git_dir.join("config.worktree"), bytes, 0));
        }
        if depth == MAX_INCLUDE_DEPTH {
            continue;
        }
        for included in includes(&config, &path, repo.env.home.as_deref()) {
            if let Some(bytes) = root.read(&included)? {
                queue.push((included, bytes, depth + 1));
            }
        }
    }
    Ok(())
}

/// The files `config` (read from `path`) includes, as gix-config resolves them: `~` and `%(prefix)`
/// interpolated (a path that cannot be is skipped), relative ones against the directory of `path`.
fn includes(config: &gix_config::File, path: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let context = gix_config::path::interpolate::Context {
        git_install_dir: None,
        home_dir: home,
        home_for_user: Some(gix_config::path::interpolate::home_for_user),
    };
    let base = path.parent().unwrap_or(Path::new("/"));
    config
        .sections()
        .filter(|section| {
            let header = section.header();
            let name = header.name();
            (name == "include" && header.subsection_name().is_none())
                || (name == "includeIf" && header.subsection_name().is_some())
        })
        .flat_map(|section| section.values("path"))
        .filter_map(|value| gix_config::Path::from(value).interpolate(context).ok().map(|p| base.join(p)))
        .collect()
}
