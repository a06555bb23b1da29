//! Finding the repository the way git does, and the few facts about it that reading objects needs.
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::fatal::Bytes;

/// The environment variables cat-blobd itself reads (gix-discover and gix-config read git's ceiling and
/// `GIT_CONFIG_COUNT` family themselves).
#[derive(Debug, Clone, Default)]
pub struct Environment {
    pub git_dir: Option<PathBuf>,
    pub object_directory: Option<PathBuf>,
    pub alternate_object_directories: Option<OsString>,
    pub no_replace_objects: bool,
    pub replace_ref_base: Option<OsString>,
    pub alloc_limit: Option<OsString>,
    /// Where git's configuration files are: `HOME`, `XDG_CONFIG_HOME`, `GIT_CONFIG_NOSYSTEM`,
    /// `GIT_CONFIG_SYSTEM`, `GIT_CONFIG_GLOBAL` (empty values count as unset, as in git).
    pub home: Option<PathBuf>,
    pub xdg_config_home: Option<PathBuf>,
    pub config_nosystem: Option<OsString>,
    pub config_system: Option<PathBuf>,
    pub config_global: Option<PathBuf>,
}

impl Environment {
    /// This process's environment.
    pub fn from_process() -> Environment {
        let var = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
        let path = |name: &str| var(name).map(PathBuf::from);
        Environment {
            // An empty GIT_DIR names no repository (an error), not the default.
            git_dir: std::env::var_os("GIT_DIR").map(PathBuf::from),
            object_directory: std::env::var_os("GIT_OBJECT_DIRECTORY").map(PathBuf::from),
            alternate_object_directories: std::env::var_os("GIT_ALTERNATE_OBJECT_DIRECTORIES"),
            no_replace_objects: std::env::var_os("GIT_NO_REPLACE_OBJECTS").is_some(),
            replace_ref_base: std::env::var_os("GIT_REPLACE_REF_BASE"),
            alloc_limit: std::env::var_os("GIT_ALLOC_LIMIT"),
            home: path("HOME"),
            xdg_config_home: path("XDG_CONFIG_HOME"),
            config_nosystem: var("GIT_CONFIG_NOSYSTEM"),
            config_system: path("GIT_CONFIG_SYSTEM"),
            config_global: path("GIT_CONFIG_GLOBAL"),
        }
    }
}

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
    /// `extensions.compatObjectFormat` is set: git also names objects by their ids in another hash, through
    /// a translation table cat-blobd does not read.
    pub compat_object_format: bool,
    pub config: Config,
}

/// The configuration values git fast-import's read side and cat-file honour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `core.quotePath` (default true): quote bytes ≥ 0x80 in printed paths.
    pub quote_path: bool,
    /// `core.ignoreCase` (default false).
    pub ignore_case: bool,
    /// `core.useReplaceRefs` (default true).
    pub use_replace_refs: bool,
    /// `core.bigFileThreshold` (default 512 MiB): blobs larger than this are streamed, not held whole.
    pub big_file_threshold: u64,
    /// Where `cat-file --use-mailmap` reads the mailmap from.
    pub mailmap: MailmapConfig,
}

/// `mailmap.file`, `mailmap.blob` and whether the repository is bare (then the blob defaults to
/// `HEAD:.mailmap`, and no `.mailmap` file is read from the current directory).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MailmapConfig {
    /// `mailmap.file`, with a leading `~/` expanded as git expands a pathname.
    pub file: Option<PathBuf>,
    /// `mailmap.blob`: an object name.
    pub blob: Option<Vec<u8>>,
    /// `core.bare`; unset: the git directory is not named `.git`.
    pub bare: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            quote_path: true,
            ignore_case: false,
            use_replace_refs: true,
            big_file_threshold: crate::store::DEFAULT_BIG_FILE_THRESHOLD,
            mailmap: MailmapConfig::default(),
        }
    }
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
    pub fn discover(git_dir: Option<&Path>, env: &Environment) -> Result<Repository, RepoError> {
        let explicit = git_dir.map(Path::to_path_buf).or_else(|| env.git_dir.clone());
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
        Repository::at(git_dir, env)
    }

    /// Opens a known git directory.
    pub fn at(git_dir: PathBuf, env: &Environment) -> Result<Repository, RepoError> {
        let common_dir = match std::fs::read(git_dir.join("commondir")) {
            Ok(content) => git_dir.join(OsStr::from_bytes(content.trim_ascii_end())),
            Err(_) => git_dir.clone(),
        };
        let objects_dir = env.object_directory.clone().unwrap_or_else(|| common_dir.join("objects"));
        let object_hash = read_object_format(&common_dir.join("config"))?;
        let compat_object_format = has_compat_object_format(&common_dir.join("config"));
        let config = read_config(&git_dir, &common_dir, env)?;
        Ok(Repository { git_dir, common_dir, objects_dir, object_hash, compat_object_format, config })
    }
}

/// `extensions.objectFormat` from the repository's own config (the only place git reads it from).
fn read_object_format(config_path: &Path) -> Result<gix_hash::Kind, RepoError> {
    if !config_path.is_file() {
        return Ok(gix_hash::Kind::Sha1);
    }
    let config = gix_config::File::from_path_no_includes(config_path.to_owned(), gix_config::Source::Local)
        .map_err(|err| RepoError::Config { path: config_path.to_owned(), message: err.to_string() })?;
    match config.string("extensions.objectFormat") {
        None => Ok(gix_hash::Kind::Sha1),
        Some(name) if name.eq_ignore_ascii_case(b"sha1") => Ok(gix_hash::Kind::Sha1),
        Some(name) if name.eq_ignore_ascii_case(b"sha256") => Ok(gix_hash::Kind::Sha256),
        Some(name) => Err(RepoError::UnknownObjectFormat(name.to_vec())),
    }
}

/// Is `extensions.compatObjectFormat` set in the repository's own config?
fn has_compat_object_format(config_path: &Path) -> bool {
    gix_config::File::from_path_no_includes(config_path.to_owned(), gix_config::Source::Local)
        .is_ok_and(|config| config.string("extensions.compatObjectFormat").is_some())
}

/// Reads the values in [`Config`] from git's configuration files, in git's order of precedence: system
/// (unless `GIT_CONFIG_NOSYSTEM`), global (`GIT_CONFIG_GLOBAL`, else XDG and `~/.gitconfig`), the repository,
/// its worktree file, then `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`.
///
/// The sources are listed here rather than with gix-config's `from_globals`, which runs `git` to find its
/// installation's config file: a process spawn on every start-up.
fn read_config(git_dir: &Path, common_dir: &Path, env: &Environment) -> Result<Config, RepoError> {
    use gix_config::Source;
    let home = env.home.clone();
    let nosystem = env.config_nosystem.clone().is_some_and(|v| gix_config::Boolean::try_from(v).is_ok_and(|b| b.0));
    let mut files: Vec<(Source, PathBuf)> = Vec::new();
    if !nosystem {
        files.push((Source::System, env.config_system.clone().unwrap_or_else(|| "/etc/gitconfig".into())));
    }
    match env.config_global.clone() {
        Some(global) => files.push((Source::User, global)),
        None => {
            let xdg = env.xdg_config_home.clone().or_else(|| home.as_ref().map(|h| h.join(".config")));
            files.extend(xdg.map(|dir| (Source::Git, dir.join("git/config"))));
            files.extend(home.as_ref().map(|h| (Source::User, h.join(".gitconfig"))));
        }
    }
    files.push((Source::Local, common_dir.join("config")));
    files.push((Source::Worktree, git_dir.join("config.worktree")));
    let options = gix_config::file::init::Options {
        includes: gix_config::file::includes::Options::follow_without_conditional(home.as_deref()),
        ..Default::default()
    };
    let error = |path: &Path, err: &dyn std::fmt::Display| RepoError::Config {
        path: path.to_owned(),
        message: err.to_string(),
    };
    let metas = files
        .into_iter()
        .filter(|(source, path)| path.is_file() && (*source != Source::Worktree || worktree_config_enabled(common_dir)))
        .map(|(source, path)| gix_config::file::Metadata::from(source).at(path));
    let mut config = gix_config::File::from_paths_metadata(metas, options)
        .map_err(|err| error(common_dir, &err))?
        .unwrap_or_default();
    if let Some(overrides) =
        gix_config::File::from_env(options).map_err(|err| error(Path::new("GIT_CONFIG_COUNT"), &err))?
    {
        config.append(overrides).map_err(|err| error(Path::new("GIT_CONFIG_COUNT"), &err))?;
    }
    let flag = |key: &str, default: bool| -> Result<bool, RepoError> {
        config.boolean(key).map(|v| v.unwrap_or(default)).map_err(|err| error(&common_dir.join("config"), &err))
    };
    Ok(Config {
        quote_path: flag("core.quotePath", true)?,
        ignore_case: flag("core.ignoreCase", false)?,
        use_replace_refs: flag("core.useReplaceRefs", true)?,
        big_file_threshold: match config.integer("core.bigFileThreshold") {
            Ok(Some(value)) => u64::try_from(value).unwrap_or(0),
            Ok(None) => crate::store::DEFAULT_BIG_FILE_THRESHOLD,
            Err(err) => return Err(error(&common_dir.join("config"), &err)),
        },
        mailmap: MailmapConfig {
            file: config.string("mailmap.file").map(|path| expand_home(&path, home.as_deref())),
            blob: config.string("mailmap.blob").map(|name| name.to_vec()),
            bare: flag("core.bare", git_dir.file_name() != Some(OsStr::new(".git")))?,
        },
    })
}

/// git's pathname config values: a leading `~/` is the home directory.
fn expand_home(path: &[u8], home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix(b"~/"), home) {
        (Some(rest), Some(home)) => home.join(OsStr::from_bytes(rest)),
        _ => PathBuf::from(OsStr::from_bytes(path)),
    }
}

/// `extensions.worktreeConfig` in the repository's own config turns on `config.worktree`.
fn worktree_config_enabled(common_dir: &Path) -> bool {
    gix_config::File::from_path_no_includes(common_dir.join("config"), gix_config::Source::Local)
        .ok()
        .and_then(|config| config.boolean("extensions.worktreeConfig").ok().flatten())
        .unwrap_or(false)
}
