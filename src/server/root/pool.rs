//! The repositories a `--root` daemon has opened: each opened on its first client ([`Pool::lease`]), its store
//! (maps, indexes) and delta-base cache shared by all of its clients, and closed idle-longest first when the
//! memory budget or `--max-open-repositories` is exceeded; never one with clients. The pool's lock is held only to
//! look up, insert and pick what to close: a repository is opened, and a closed one freed, outside it, so a slow
//! disk or a stalled client never holds up another repository's clients.
use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::confine::Root;
use super::find::{self, FindError, Found};
use super::mailmap::ClientMailmap;
use crate::cli::Cli;
use crate::fast_import::SessionConfig;
use crate::refs::{Files, RepoFiles, Stamp};
use crate::repo::{ConfigStamp, RepoError, Repository};
use crate::settings::{self, Assembled, SettingsError, Use};
use crate::store::Store;

/// Why a repository could not be opened.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LeaseError {
    /// Its configuration cannot be read: the client may answer itself, and says why as git would.
    #[error(transparent)]
    Repository(RepoError),
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// Its configuration files, or one they include, lead outside the root.
    #[error(transparent)]
    Confined(FindError),
}

/// What bounds the pool.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PoolLimits {
    /// Bytes of delta-base caches and mapped indexes, over every open repository.
    pub memory_budget: u64,
    pub max_open: usize,
    /// Streams served at once (`--max-connections`): each repository's delta-base cache is sized so that this many
    /// busy repositories fit in the budget.
    pub max_connections: usize,
}

/// Per-repository counters for `cat-blobd stats`; they outlive the repository's closing.
#[derive(Debug, Default)]
pub(crate) struct RepoStats {
    pub clients: AtomicU64,
    pub requests: AtomicU64,
    pub bytes: AtomicU64,
    pub cache_hits: AtomicU64,
    pub cache_misses: AtomicU64,
    pub opens: AtomicU64,
    pub evictions: AtomicU64,
}

/// What makes two clients' repositories the same store: the repository and the variables that change what its
/// store holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    git_dir: PathBuf,
    objects_dir: PathBuf,
    alternates: Option<OsString>,
    no_replace: bool,
    replace_base: Option<OsString>,
    /// The work tree changes which `.mailmap` the repository's settings name.
    work_tree: Option<PathBuf>,
    implicit_work_tree: Option<OsString>,
}

/// The git directory's and object directory's inodes: a repository deleted, renamed over or re-created since it
/// was opened has others.
type Identity = [(u64, u64); 2];

/// An open repository.
pub(crate) struct Open {
    pub repo: Repository,
    pub store: Store,
    pub session: SessionConfig,
    identity: Identity,
    /// Its configuration files as they were when it was opened.
    config: ConfigStamp,
    clients: AtomicU64,
    last_used: Mutex<Instant>,
    /// Bytes of the index files mapped when it was opened.
    map_bytes: u64,
    pub stats: Arc<RepoStats>,
}

impl Open {
    fn idle_since(&self) -> Instant {
        *self.last_used.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// What it holds against the budget: its delta-base cache, and its indexes while it has clients. An idle
    /// repository's maps have left the daemon's resident set ([`Open::idle`]); counting them filled the default
    /// budget with about 45 idle copies of git.git (23.8 MB of indexes each), and the daemon closed and reopened
    /// repositories it held almost nothing for (benches/README.md, "branch fnclient").
    fn memory(&self) -> u64 {
        let maps = if self.clients.load(Ordering::SeqCst) > 0 { self.map_bytes } else { 0 };
        self.session.cache.bytes() as u64 + maps
    }

    /// Its last client left: an idle repository holds no memory of its own. Its delta-base cache goes (a
    /// forge's repositories are read in short bursts: the next burst rarely starts from this one's chain roots),
    /// and its maps' pages leave the daemon's resident set (they stay in the page cache for the next client).
    /// A client that arrives meanwhile only finds the cache emptier.
    fn idle(&self) {
        self.session.cache.clear();
        self.store.release_resident();
    }

    /// Keeps the cache's hit counts in the repository's counters before the cache goes.
    fn close(&self) {
        let (hits, misses) = self.session.cache.hit_counts();
        self.stats.cache_hits.fetch_add(hits, Ordering::Relaxed);
        self.stats.cache_misses.fetch_add(misses, Ordering::Relaxed);
        self.stats.evictions.fetch_add(1, Ordering::Relaxed);
    }
}

/// A client's hold on an open repository: while it lives, the repository is not closed.
pub(crate) struct Lease {
    open: Arc<Open>,
    /// How long opening the repository took, when this client's lease opened it.
    opened_in: Option<Duration>,
    /// Where this client's `--use-mailmap` reads.
    mailmap: Option<ClientMailmap>,
}

impl Lease {
    pub(crate) fn open(&self) -> &Open {
        &self.open
    }

    /// Where this client's `--use-mailmap` reads (the repository's settings placed for it).
    pub(crate) fn mailmap(&self) -> Option<&ClientMailmap> {
        self.mailmap.as_ref()
    }

    pub(crate) fn opened_in(&self) -> Option<Duration> {
        self.opened_in
    }

    /// Counts a stream's work.
    pub(crate) fn count(&self, requests: u64, bytes: u64) {
        self.open.stats.requests.fetch_add(requests, Ordering::Relaxed);
        self.open.stats.bytes.fetch_add(bytes, Ordering::Relaxed);
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        *self.open.last_used.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Instant::now();
        let last = self.open.clients.fetch_sub(1, Ordering::SeqCst) == 1;
        self.open.stats.clients.fetch_sub(1, Ordering::Relaxed);
        if last {
            self.open.idle();
        }
    }
}

#[derive(Default)]
struct Inner {
    open: HashMap<Key, Arc<Open>>,
    /// Counters by git directory, of open repositories and of closed ones (a bounded number of those).
    stats: HashMap<PathBuf, Arc<RepoStats>>,
}

/// Every repository a `--root` daemon has open.
pub(crate) struct Pool {
    pub root: Root,
    /// The daemon's settings, each repository's delta-base cache sized for the budget.
    cli: Cli,
    allow_writes: bool,
    limits: PoolLimits,
    inner: Mutex<Inner>,
    pub opened: AtomicU64,
    pub evicted: AtomicU64,
    /// Clients served from a repository already open.
    pub reused: AtomicU64,
}

/// What one repository's state is, as `cat-blobd stats` shows it.
pub(crate) struct RepoView {
    pub git_dir: PathBuf,
    pub open: bool,
    pub stats: Arc<RepoStats>,
    pub cache_hits: u64,
    pub cache_misses: u64,
}

impl Pool {
    pub(crate) fn new(root: Root, mut cli: Cli, allow_writes: bool, limits: PoolLimits) -> Pool {
        // Inflated deltas take a quarter of the cache's size on top of it.
        let per_busy_repository = limits.memory_budget / limits.max_connections.max(1) as u64 * 4 / 5;
        cli.delta_cache_size = cli.delta_cache_size.min(per_busy_repository);
        Pool {
            root,
            cli,
            allow_writes,
            limits,
            inner: Mutex::default(),
            opened: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
            reused: AtomicU64::new(0),
        }
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The open repository `found` names (opened now if it is not, or if it changed on disk since), held for a
    /// client.
    pub(crate) fn lease(&self, found: Found) -> Result<Lease, LeaseError> {
        let mut lease = self.lease_repository(&found)?;
        lease.mailmap = Some(ClientMailmap::new(&self.root, &found, &lease.open.repo.config.mailmap));
        Ok(lease)
    }

    fn lease_repository(&self, found: &Found) -> Result<Lease, LeaseError> {
        let key = Key {
            git_dir: found.git_dir.clone(),
            objects_dir: found.objects_dir.clone(),
            alternates: found.env.alternate_object_directories.clone(),
            no_replace: found.env.no_replace_objects,
            replace_base: found.env.replace_ref_base.clone(),
            work_tree: found.env.work_tree.clone(),
            implicit_work_tree: found.env.implicit_work_tree.clone(),
        };
        let identity = identity(&self.root, &found.git_dir, &found.objects_dir);
        if let Some(lease) = self.existing(&key, identity) {
            return Ok(lease);
        }
        let started = Instant::now();
        find::confine_config(&self.root, found).map_err(LeaseError::Confined)?;
        let (git_dir, common_dir) = (found.git_dir.clone(), found.common_dir.clone());
        let repo = Repository::at_layout(git_dir, common_dir, found.objects_dir.clone(), &found.env)
            .map_err(LeaseError::Repository)?;
        let config = self.stamp(&repo.config_files);
        let Assembled { repo, store, stream: mut session } =
            settings::assemble_for(repo, &self.cli, &found.env, Use::Daemon, Files::Through(&self.root))?;
        if !self.allow_writes {
            session.write_through = None;
        }
        let map_bytes = index_bytes(&self.root, &repo.objects_dir);
        let mut inner = self.inner();
        if let Some(open) = inner.open.get(&key).filter(|open| open.identity == identity) {
            // Another client opened it meanwhile: ours goes.
            self.reused.fetch_add(1, Ordering::Relaxed);
            return Ok(hold(open, None));
        }
        let stats = Arc::clone(inner.stats.entry(key.git_dir.clone()).or_default());
        stats.opens.fetch_add(1, Ordering::Relaxed);
        let open = Arc::new(Open {
            repo,
            store,
            session,
            identity,
            config,
            clients: AtomicU64::new(0),
            last_used: Mutex::new(Instant::now()),
            map_bytes,
            stats,
        });
        let lease = hold(&open, Some(started.elapsed()));
        inner.open.insert(key, open);
        self.opened.fetch_add(1, Ordering::Relaxed);
        let closed = self.evict(&mut inner);
        drop(inner);
        // Unmapped and freed outside the lock.
        drop(closed);
        Ok(lease)
    }

    /// The open repository at `key`, if it is still the one on disk with the configuration it was opened with.
    /// Its configuration files are looked at (a `stat` each) outside the pool's lock, not read.
    fn existing(&self, key: &Key, identity: Identity) -> Option<Lease> {
        let open = Arc::clone(self.inner().open.get(key)?);
        let current = open.identity == identity && self.stamp(&open.repo.config_files) == open.config;
        let mut inner = self.inner();
        // Held under the lock, as eviction looks for repositories without clients under it; if another client
        // replaced or closed it meanwhile, this one opens (or finds) the one there now.
        if !inner.open.get(key).is_some_and(|now| Arc::ptr_eq(now, &open)) {
            return None;
        }
        if current {
            self.reused.fetch_add(1, Ordering::Relaxed);
            return Some(hold(&open, None));
        }
        // Deleted, renamed over, re-created or reconfigured: its clients keep the one they have; the next opens
        // anew.
        let gone = inner.open.remove(key)?;
        gone.close();
        None
    }

    /// Stats `files` to see a change: the repository's own (its `config`, `config.worktree` and their includes,
    /// all beneath the root, as [`find::confine_config`] checked) through the root, so that one replaced by a
    /// symlink leading out counts as changed (and is refused when the repository reopens) without being looked at;
    /// the daemon's own system and global files by path.
    fn stamp(&self, files: &[PathBuf]) -> ConfigStamp {
        ConfigStamp::with(files, |path| {
            if path.starts_with(self.root.path()) {
                return RepoFiles::stamp(&self.root, path).ok()?;
            }
            let meta = std::fs::metadata(path).ok()?;
            Some(Stamp {
                dev: meta.dev(),
                ino: meta.ino(),
                size: meta.size(),
                mtime: (meta.mtime(), meta.mtime_nsec()),
            })
        })
    }

    /// Closes the repositories idle longest, with no clients, until the pool is within its limits.
    fn evict(&self, inner: &mut Inner) -> Vec<Arc<Open>> {
        let mut closed = Vec::new();
        loop {
            let memory: u64 = inner.open.values().map(|open| open.memory()).sum();
            if inner.open.len() <= self.limits.max_open && memory <= self.limits.memory_budget {
                break;
            }
            let idle = inner
                .open
                .iter()
                .filter(|(_, open)| open.clients.load(Ordering::SeqCst) == 0)
                .min_by_key(|(_, open)| open.idle_since())
                .map(|(key, _)| key.clone());
            // Every open repository has clients: over the limits until one is free.
            let Some(key) = idle else { break };
            let open = inner.open.remove(&key).expect("just found");
            open.close();
            self.evicted.fetch_add(1, Ordering::Relaxed);
            closed.push(open);
        }
        let keep = self.limits.max_open.saturating_mul(4).max(1024);
        if inner.stats.len() > keep {
            let open: Vec<PathBuf> = inner.open.keys().map(|key| key.git_dir.clone()).collect();
            inner.stats.retain(|dir, stats| open.contains(dir) || stats.clients.load(Ordering::Relaxed) > 0);
        }
        closed
    }

    /// Open repositories now, and the bytes they hold.
    pub(crate) fn usage(&self) -> (usize, u64) {
        let inner = self.inner();
        (inner.open.len(), inner.open.values().map(|open| open.memory()).sum())
    }

    pub(crate) fn limits(&self) -> PoolLimits {
        self.limits
    }

    /// Every repository with counters, sorted by git directory.
    pub(crate) fn views(&self) -> Vec<RepoView> {
        let inner = self.inner();
        let mut views: Vec<RepoView> = inner
            .stats
            .iter()
            .map(|(dir, stats)| {
                let open = inner.open.values().find(|open| &open.repo.git_dir == dir);
                let (hits, misses) = open.map_or((0, 0), |open| open.session.cache.hit_counts());
                RepoView {
                    git_dir: dir.clone(),
                    open: open.is_some(),
                    stats: Arc::clone(stats),
                    cache_hits: hits + stats.cache_hits.load(Ordering::Relaxed),
                    cache_misses: misses + stats.cache_misses.load(Ordering::Relaxed),
                }
            })
            .collect();
        views.sort_by(|a, b| a.git_dir.cmp(&b.git_dir));
        views
    }
}

fn hold(open: &Arc<Open>, opened_in: Option<Duration>) -> Lease {
    open.clients.fetch_add(1, Ordering::SeqCst);
    open.stats.clients.fetch_add(1, Ordering::Relaxed);
    Lease { open: Arc::clone(open), opened_in, mailmap: None }
}

/// The inodes of the git and object directories, looked at beneath the root: one that leads out since (or is
/// gone) has none, and the repository is found, and refused, anew.
fn identity(root: &Root, git_dir: &Path, objects_dir: &Path) -> Identity {
    let of = |path: &Path| root.stat(path).ok().flatten().map_or((0, 0), |stat| (stat.st_dev, stat.st_ino));
    [of(git_dir), of(objects_dir)]
}

/// Bytes of the pack indexes and multi-pack-index in `objects_dir` (listed beneath the root): what opening the
/// repository maps and what its lookups touch.
fn index_bytes(root: &Root, objects_dir: &Path) -> u64 {
    let pack = objects_dir.join("pack");
    let Ok(entries) = RepoFiles::list(root, &pack) else { return 0 };
    entries
        .into_iter()
        .filter(|(name, is_dir)| {
            let name = name.as_encoded_bytes();
            !is_dir && (name.ends_with(b".idx") || name == b"multi-pack-index")
        })
        .filter_map(|(name, _)| root.stamp(&pack.join(name)).ok().flatten())
        .map(|stamp| stamp.size)
        .sum()
}
