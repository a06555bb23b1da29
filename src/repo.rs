//! Finding the repository the way git does, and the few facts about it that reading objects needs.
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::fatal::Bytes;

/// A repository as far as cat-blobd cares: where its objects live and which hash names them.
#[derive(Debug, Clone)]
pub struct Repository {
    /// The git directory (`.git`, a bare repository, or a linked worktree's `.git/worktrees/<name>`).
    pub git_dir: PathBuf,
    /// Where shared state lives: the same as `git_dir` except in linked worktrees (`commondir`).
    pub common_dir: PathBuf,
    /// `GIT_OBJECT_DIRECTORY`, else `<common_dir>/objects`.
    pub objects_dir: PathBuf,
    pub object_hash: gix_hash::Kind,
}

#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    #[error("not a git repository (or any of the parent directories): .git")]
    NotFound,
    #[error("not a git repository: '{}'", Bytes(.0.as_os_str().as_bytes()))]
    NotARepository(PathBuf),
    #[error("cannot read the current directory: {0}")]
    CurrentDir(#[source] std::io::Error),
    #[error("invalid config file {}: {message}", Bytes(.path.as_os_str().as_bytes()))]
    Config { path: PathBuf, message: String },
    #[error("unknown repository extension found: objectformat = {}", Bytes(.0))]
    UnknownObjectFormat(Vec<u8>),
}

impl Repository {
    /// Finds the repository: `git_dir` (from `--git-dir`), else `GIT_DIR`, else walking up from the current
    /// directory (work trees, `.git` files with `gitdir:`, bare repositories), honouring
    /// `GIT_CEILING_DIRECTORIES`.
    pub fn discover(git_dir: Option<&Path>) -> Result<Repository, RepoError> {
        let explicit = git_dir
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os("GIT_DIR").map(PathBuf::from));
        let git_dir = match explicit {
            Some(dir) => {
                if gix_discover::is_git(&dir).is_err() {
                    return Err(RepoError::NotARepository(dir));
                }
                dir
            }
            None => {
                let cwd = std::env::current_dir().map_err(RepoError::CurrentDir)?;
                let options = gix_discover::upwards::Options::default().apply_environment();
                let (path, _trust) = gix_discover::upwards_opts(&cwd, options).map_err(|_| RepoError::NotFound)?;
                path.into_repository_and_work_tree_directories().0
            }
        };
        Repository::at(git_dir)
    }

    /// Opens a known git directory.
    pub fn at(git_dir: PathBuf) -> Result<Repository, RepoError> {
        let common_dir = match std::fs::read(git_dir.join("commondir")) {
            Ok(content) => git_dir.join(OsStr::from_bytes(content.trim_ascii_end())),
            Err(_) => git_dir.clone(),
        };
        let objects_dir = std::env::var_os("GIT_OBJECT_DIRECTORY")
            .map(PathBuf::from)
            .unwrap_or_else(|| common_dir.join("objects"));
        let object_hash = read_object_format(&common_dir.join("config"))?;
        Ok(Repository {
            git_dir,
            common_dir,
            objects_dir,
            object_hash,
        })
    }
}

/// `extensions.objectFormat` from the repository's own config (the only place git reads it from).
fn read_object_format(config_path: &Path) -> Result<gix_hash::Kind, RepoError> {
    if !config_path.is_file() {
        return Ok(gix_hash::Kind::Sha1);
    }
    let config =
        gix_config::File::from_path_no_includes(config_path.to_owned(), gix_config::Source::Local).map_err(|err| {
            RepoError::Config {
                path: config_path.to_owned(),
                message: err.to_string(),
            }
        })?;
    match config.string("extensions.objectFormat") {
        None => Ok(gix_hash::Kind::Sha1),
        Some(name) if name.eq_ignore_ascii_case(b"sha1") => Ok(gix_hash::Kind::Sha1),
        Some(name) if name.eq_ignore_ascii_case(b"sha256") => Ok(gix_hash::Kind::Sha256),
        Some(name) => Err(RepoError::UnknownObjectFormat(name.to_vec())),
    }
}
