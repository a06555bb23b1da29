//! Finding the repository the way git does, and the few facts about it that reading objects needs.
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub(crate) use crate::config::{Config, MailmapConfig};
use crate::config::{ConfigError, ParametersError, WorkTreeConfig};
use crate::fatal::Bytes;
use crate::refs::Stamp;

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
    /// `GIT_CONFIG_PARAMETERS`: the `-c` settings of the git command that ran cat-blobd (or of the shim).
    pub config_parameters: Option<OsString>,
    /// `GIT_WORK_TREE`, and `GIT_IMPLICIT_WORK_TREE` (`git --bare` sets it to 0): where git's set-up puts the
    /// work tree, whose `.mailmap` `--use-mailmap` reads.
    pub work_tree: Option<PathBuf>,
    pub implicit_work_tree: Option<OsString>,
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
            config_parameters: std::env::var_os("GIT_CONFIG_PARAMETERS"),
            work_tree: path("GIT_WORK_TREE"),
            implicit_work_tree: std::env::var_os("GIT_IMPLICIT_WORK_TREE"),
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
    /// Every configuration file its settings were read from, or would be if it existed (includes followed):
    /// a daemon that keeps the repository open reads them again only when one of them changed.
    pub config_files: Vec<PathBuf>,
}

/// What the configuration files of a repository were when it was read: each file's identity, size and
/// modification time, `None` for one that does not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConfigStamp(Vec<Option<Stamp>>);

impl ConfigStamp {
    /// Stamps `files` with `stamp` (`None`: nothing there, or nothing that may be looked at).
    pub(crate) fn with(files: &[PathBuf], stamp: impl Fn(&Path) -> Option<Stamp>) -> ConfigStamp {
        ConfigStamp(files.iter().map(|path| stamp(path)).collect())
    }
}

/// Where a git directory's shared state and its objects are: its `commondir` (a linked worktree's), else
/// itself; `GIT_OBJECT_DIRECTORY`, else `<common dir>/objects`. Nothing else of the repository is read.
fn layout(git_dir: &Path, env: &Environment) -> (PathBuf, PathBuf) {
    let common_dir = match std::fs::read(git_dir.join("commondir")) {
        Ok(content) => git_dir.join(OsStr::from_bytes(content.trim_ascii_end())),
        Err(_) => git_dir.to_owned(),
    };
    let objects_dir = env.object_directory.clone().unwrap_or_else(|| common_dir.join("objects"));
    (common_dir, objects_dir)
}

#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    #[error("not a git repository (or any of the parent directories): .git")]
    NotFound,
    #[error("not a git repository: '{}'", Bytes(.0.as_os_str().as_bytes()))]
    NotARepository(PathBuf),
    /// git's set-up starts with `getcwd` and dies there (a directory deleted under the client), whatever names
    /// the repository.
    #[error("Unable to read current working directory: {}", crate::git_compat::strerror::strerror(.0))]
    CurrentDir(std::io::Error),
    #[error("invalid config file {}: {message}", Bytes(.path.as_os_str().as_bytes()))]
    Config { path: PathBuf, message: String },
    /// git says `error: <the reason>` first.
    #[error("unable to parse command-line config: {0}")]
    Parameters(#[from] ParametersError),
    #[error("unknown repository extension found: objectformat = {}", Bytes(.0))]
    UnknownObjectFormat(Vec<u8>),
}

impl Repository {
    /// Finds the repository: `git_dir` (from `--git-dir`), else `GIT_DIR`, else walking up from the current
    /// directory (work trees, `.git` files with `gitdir:`, bare repositories), honouring
    /// `GIT_CEILING_DIRECTORIES`.
    pub fn discover(git_dir: Option<&Path>, env: &Environment) -> Result<Repository, RepoError> {
        let explicit = git_dir.map(Path::to_path_buf).or_else(|| env.git_dir.clone());
        let cwd = std::env::current_dir().map_err(RepoError::CurrentDir)?;
        let (git_dir, found) = match explicit {
            Some(dir) => {
                if gix_discover::is_git(&dir).is_err() {
                    return Err(RepoError::NotARepository(dir));
                }
                (dir, Found::Explicit)
            }
            None => {
                let options = gix_discover::upwards::Options::default().apply_environment();
                let (path, _trust) = gix_discover::upwards_opts(&cwd, options).map_err(|_| RepoError::NotFound)?;
                let (git_dir, work_tree) = path.into_repository_and_work_tree_directories();
                (git_dir, Found::Discovered(work_tree.map(|dir| cwd.join(dir))))
            }
        };
        Repository::open(git_dir, found, env)
    }

    /// Opens a known git directory (as `GIT_DIR` names one).
    pub fn at(git_dir: PathBuf, env: &Environment) -> Result<Repository, RepoError> {
        Repository::open(git_dir, Found::Explicit, env)
    }

    /// Opens a git directory whose common and object directories are known already: a `--root` daemon found
    /// them beneath its root, and must not read `commondir` again where it could lead elsewhere.
    pub(crate) fn at_layout(
        git_dir: PathBuf,
        common_dir: PathBuf,
        objects_dir: PathBuf,
        env: &Environment,
    ) -> Result<Repository, RepoError> {
        Repository::open_layout(git_dir, common_dir, objects_dir, Found::Explicit, env)
    }

    fn open(git_dir: PathBuf, found: Found, env: &Environment) -> Result<Repository, RepoError> {
        let (common_dir, objects_dir) = layout(&git_dir, env);
        Repository::open_layout(git_dir, common_dir, objects_dir, found, env)
    }

    fn open_layout(
        git_dir: PathBuf,
        common_dir: PathBuf,
        objects_dir: PathBuf,
        found: Found,
        env: &Environment,
    ) -> Result<Repository, RepoError> {
        let object_hash = read_object_format(&common_dir.join("config"))?;
        let compat_object_format = has_compat_object_format(&common_dir.join("config"));
        let (config, config_files) = read_config(&git_dir, &common_dir, &found, env)?;
        Ok(Repository { git_dir, common_dir, objects_dir, object_hash, compat_object_format, config, config_files })
    }
}

/// How the git directory was found, which decides where git's set-up puts the work tree.
enum Found {
    /// Named by `--git-dir` or `GIT_DIR`.
    Explicit,
    /// Found walking up from the current directory, with the top of its work tree (none: a bare repository).
    Discovered(Option<PathBuf>),
}

/// Where git's `setup_explicit_git_dir` and `setup_discovered_git_dir` (setup.c) place the work tree:
/// `GIT_WORK_TREE`, else none if `core.bare`, else `core.worktree`, else the discovered one (`discovered`: `None`
/// for a git directory named by `--git-dir` or `GIT_DIR`, else the top found walking up, `None` in it for a bare
/// repository), else (a named git directory) the directory git starts in, unless `git --bare` leaves none and
/// `core.bare` is not `false`. `None`: git takes the repository as bare; `Some(None)`: the directory git starts in.
pub(crate) fn work_tree(
    git_dir: &Path,
    discovered: Option<&Option<PathBuf>>,
    config: &WorkTreeConfig,
    env: &Environment,
) -> Option<Option<PathBuf>> {
    match (&env.work_tree, config.bare, &config.worktree, discovered) {
        (Some(dir), ..) => Some(Some(dir.clone())),
        (None, Some(true), ..) => None,
        (None, _, Some(dir), _) => Some(Some(git_dir.join(dir))),
        (None, _, None, Some(top)) => top.clone().map(Some),
        (None, bare, None, None) => {
            let implicit = env
                .implicit_work_tree
                .as_ref()
                .is_none_or(|value| gix_config::Boolean::try_from(value.clone()).map_or(true, |value| value.0));
            // Without a work tree, git takes the repository as bare unless `core.bare` says otherwise.
            (implicit || bare == Some(false)).then_some(None)
        }
    }
}

/// The work tree's `.mailmap` where git reads it ([`work_tree`]): git works at the top of the work tree if it
/// started inside it, and where it started otherwise. `None`: git takes the repository as bare.
fn work_tree_mailmap(git_dir: &Path, found: &Found, config: WorkTreeConfig, env: &Environment) -> Option<PathBuf> {
    let here = PathBuf::from(".mailmap");
    let discovered = match found {
        Found::Explicit => None,
        Found::Discovered(top) => Some(top),
    };
    let Some(work_tree) = work_tree(git_dir, discovered, &config, env)? else {
        return Some(here);
    };
    let (Ok(top), Ok(cwd)) = (std::fs::canonicalize(&work_tree), std::env::current_dir()) else {
        return Some(work_tree.join(".mailmap"));
    };
    Some(if cwd.starts_with(&top) { top.join(".mailmap") } else { here })
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
/// its worktree file, then `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`, then
/// `GIT_CONFIG_PARAMETERS`.
///
/// The sources are listed here rather than with gix-config's `from_globals`, which runs `git` to find its
/// installation's config file: a process spawn on every start-up.
fn read_config(
    git_dir: &Path,
    common_dir: &Path,
    found: &Found,
    env: &Environment,
) -> Result<(Config, Vec<PathBuf>), RepoError> {
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
    let mut read_from: Vec<PathBuf> = files.iter().map(|(_, path)| path.clone()).collect();
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
    if let Some(text) = &env.config_parameters
        && let Some(parameters) = crate::config::from_parameters(text.as_bytes())?
    {
        config.append(parameters).map_err(|err| error(Path::new("GIT_CONFIG_PARAMETERS"), &err))?;
    }
    for included in config.sections().filter_map(|section| section.meta().path.clone()) {
        if !read_from.contains(&included) {
            read_from.push(included);
        }
    }
    let work_tree_mailmap = |work_tree| work_tree_mailmap(git_dir, found, work_tree, env);
    let config = Config::read(&config, work_tree_mailmap, home.as_deref(), &common_dir.join("config"))
        .map_err(|ConfigError { origin, message }| RepoError::Config { path: origin, message })?;
    Ok((config, read_from))
}

/// `extensions.worktreeConfig` in the repository's own config turns on `config.worktree`.
fn worktree_config_enabled(common_dir: &Path) -> bool {
    gix_config::File::from_path_no_includes(common_dir.join("config"), gix_config::Source::Local)
        .ok()
        .and_then(|config| config.boolean("extensions.worktreeConfig").ok().flatten())
        .unwrap_or(false)
}
