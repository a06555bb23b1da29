//! Configuration, assembled once: cat-blobd's flags, the environment and git's configuration go in; the store and
//! the settings of every stream come out (ripgrep's low-level to high-level args). Nothing else in the crate
//! reads the environment (`repo::Environment` is read once, by the binary), so a daemon serving many streams and a
//! one-shot run see the same values, and tests can pass any environment without touching the process's. Opening
//! the repository (`repo`) is a step of assembling, and knows nothing of it.
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::cli;
use crate::engine::{DEFAULT_INLINE_REQUESTS, EngineConfig};
use crate::fast_import::SessionConfig;
use crate::fast_import::ls::LsOptions;
use crate::fast_import::stream_blobs::StreamBlobLimits;
use crate::fast_import::write_through::WriteThrough;
use crate::git_compat::parse_ulong::git_parse_ulong;
use crate::quota::Limit;
use crate::refs::{Files, Refs};
pub use crate::repo::Environment;
use crate::repo::{RepoError, Repository};
use crate::store::cache::SharedCache;
use crate::store::{Replacements, Store, StoreOptions};

/// What went wrong assembling the settings.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error(transparent)]
    Repository(#[from] RepoError),
    /// git's `git_env_ulong` message.
    #[error("failed to parse GIT_ALLOC_LIMIT")]
    AllocLimit,
    #[error("cannot make {} absolute: {source}", .path.display())]
    Absolute { path: PathBuf, source: std::io::Error },
    /// A replace ref that may not be read (it leads outside a `--root` daemon's root).
    #[error(transparent)]
    Refused(#[from] crate::refs::FileError),
}

/// Where the settings are used: one stream in this process, or a daemon's many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    OneShot,
    /// Paths are made absolute (each `connect` stream runs in its client's directory) and the first requests
    /// of each stream are answered without starting threads (see [`DEFAULT_INLINE_REQUESTS`]).
    Daemon,
}

/// What the settings come to: the repository, its store, and the settings every fast-import stream starts from
/// (with the one delta-base cache that every stream of the process shares).
pub struct Assembled {
    pub repo: Repository,
    pub store: Store,
    pub stream: SessionConfig,
}

/// Assembles [`Assembled`] from cat-blobd's own flags and `env`.
pub fn assemble(cli: &cli::Cli, env: &Environment, usage: Use) -> Result<Assembled, SettingsError> {
    assemble_for(repository(cli, env, usage)?, cli, env, usage, Files::ByPath)
}

/// [`assemble`] for `repo`, found elsewhere (a `--root` daemon finds each client's), its references read as
/// `files` says.
pub fn assemble_for(
    repo: Repository,
    cli: &cli::Cli,
    env: &Environment,
    usage: Use,
    files: Files<'_>,
) -> Result<Assembled, SettingsError> {
    let replacements = if repo.config.use_replace_refs && !env.no_replace_objects {
        // Ref names are UTF-8 here: a base that is not names no ref, and git's default applies.
        let base = env.replace_ref_base.as_ref().and_then(|base| base.to_str()).unwrap_or("refs/replace/");
        let refs = Refs::open(&repo.common_dir, &repo.common_dir, repo.object_hash, files);
        Replacements::read(&refs, base, repo.object_hash)?
    } else {
        Replacements::default()
    };
    let mut options = StoreOptions {
        replacements,
        max_object_size: cli.max_object_size,
        alternate_object_directories: env.alternate_object_directories.clone(),
        big_file_threshold: repo.config.big_file_threshold,
        ..Default::default()
    };
    if let Some(limit) = alloc_limit(env)? {
        options.max_object_size = options.max_object_size.min(limit);
    }
    let store = Store::open(&repo.objects_dir, repo.object_hash, options);
    let stream = SessionConfig {
        cache: SharedCache::new(usize::try_from(cli.delta_cache_size).unwrap_or(usize::MAX)),
        stream_blob_memory: usize::try_from(cli.stream_blob_memory).unwrap_or(usize::MAX),
        stream_blob_limits: StreamBlobLimits {
            count: Limit { per_stream: Some(cli.max_stream_blobs), shared: None },
            spill_bytes: Limit { per_stream: Some(cli.max_spill_bytes), shared: None },
        },
        ls: LsOptions { quote_path: repo.config.quote_path, ignore_case: repo.config.ignore_case },
        fast_import_args: Vec::new(),
        relative_marks_dir: repo.common_dir.join("info").join("fast-import"),
        engine: engine_config(cli, usage),
        may_name_files: true,
        live: None,
        mark_limits: Default::default(),
        process_exits_after: usage == Use::OneShot,
        // A daemon hands it on only to clients of its own uid, and only with `serve --allow-writes`.
        write_through: (!cli.read_only).then(|| WriteThrough {
            // git finds the repository as cat-blobd did: from `--git-dir` as given, else from the same environment
            // and directory. It names paths as it found them (e.g. in `--export-pack-edges`). A daemon's clients
            // run elsewhere: theirs is the daemon's absolute one.
            git_dir: if usage == Use::OneShot { cli.git_dir.clone() } else { Some(repo.git_dir.clone()) },
        }),
    };
    Ok(Assembled { repo, store, stream })
}

fn repository(cli: &cli::Cli, env: &Environment, usage: Use) -> Result<Repository, SettingsError> {
    let git_dir = cli.git_dir.clone().or_else(|| env.git_dir.clone());
    if usage == Use::OneShot {
        return Ok(Repository::discover(git_dir.as_deref(), env)?);
    }
    let absolute =
        |path: PathBuf| std::path::absolute(&path).map_err(|source| SettingsError::Absolute { path, source });
    let mut repo = Repository::discover(git_dir.map(absolute).transpose()?.as_deref(), env)?;
    for path in [&mut repo.git_dir, &mut repo.common_dir, &mut repo.objects_dir] {
        *path = absolute(std::mem::take(path))?;
    }
    Ok(repo)
}

fn engine_config(cli: &cli::Cli, usage: Use) -> EngineConfig {
    EngineConfig {
        threads: cli.threads.unwrap_or(EngineConfig::default().threads).max(1),
        window: cli.window.max(1),
        window_bytes: usize::try_from(cli.window_bytes).unwrap_or(usize::MAX),
        // A fresh process pays a first-touch page fault on every buffer it fills, which two resolvers overlap;
        // the daemon's heap is warm, and there starting the threads costs more than a short stream saves.
        inline_requests: cli.inline_requests.unwrap_or(match usage {
            Use::OneShot => 0,
            Use::Daemon => DEFAULT_INLINE_REQUESTS,
        }),
        ..EngineConfig::default()
    }
}

/// `GIT_ALLOC_LIMIT`, read as git reads it: `None` when unset or 0 (no limit). git dies when any allocation
/// exceeds it (`memory_limit_check` in wrapper.c); here it lowers the largest object or delta result the store
/// agrees to allocate, so a pack that declares a huge size is refused before anything is allocated.
fn alloc_limit(env: &Environment) -> Result<Option<u64>, SettingsError> {
    let Some(value) = &env.alloc_limit else { return Ok(None) };
    let limit = git_parse_ulong(value.as_bytes()).ok_or(SettingsError::AllocLimit)?;
    Ok((limit != 0).then_some(limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_with_limit(value: &str) -> Environment {
        Environment { alloc_limit: Some(value.into()), ..Environment::default() }
    }

    #[test]
    fn the_alloc_limit_is_read_as_git_reads_it() {
        assert_eq!(alloc_limit(&Environment::default()).unwrap(), None);
        assert_eq!(alloc_limit(&env_with_limit("0")).unwrap(), None);
        assert_eq!(alloc_limit(&env_with_limit("1k")).unwrap(), Some(1024));
        assert_eq!(alloc_limit(&env_with_limit("0x10")).unwrap(), Some(16));
        assert!(matches!(alloc_limit(&env_with_limit("lots")), Err(SettingsError::AllocLimit)));
    }
}
