//! What a daemon serves (one repository, or each client's under a root), and which repository one client's
//! stream is served from.
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

use super::root::{self, FindError, LeaseError};
use crate::fast_import::SessionConfig;
use crate::repo::Repository;
use crate::settings::SettingsError;
use crate::store::Store;
use crate::wire::peer::Peer;
use crate::wire::protocol::Hello;

/// The repositories a daemon serves.
pub(crate) enum Repos {
    One(Arc<OneRepo>),
    Root(Box<root::Pool>),
}

/// The repository of a single-repository daemon, and its streams' settings.
pub(crate) struct OneRepo {
    pub(super) repo: Repository,
    pub(super) store: Store,
    pub(super) session: SessionConfig,
}

/// The repository one stream is served from, and the settings its streams start from.
pub(crate) enum Served {
    One(Arc<OneRepo>),
    Root(root::Lease),
}

impl Served {
    pub(crate) fn repo(&self) -> &Repository {
        match self {
            Served::One(one) => &one.repo,
            Served::Root(lease) => &lease.open().repo,
        }
    }

    pub(crate) fn store(&self) -> &Store {
        match self {
            Served::One(one) => &one.store,
            Served::Root(lease) => &lease.open().store,
        }
    }

    pub(crate) fn session(&self) -> &SessionConfig {
        match self {
            Served::One(one) => &one.session,
            Served::Root(lease) => &lease.open().session,
        }
    }

    /// How long opening its repository took, when this stream's lease opened it (a `--root` daemon's).
    pub(crate) fn opened_in(&self) -> Option<std::time::Duration> {
        match self {
            Served::One(_) => None,
            Served::Root(lease) => lease.opened_in(),
        }
    }

    /// Counts a stream's work for its repository (a `--root` daemon's `stats`).
    pub(crate) fn count(&self, requests: u64, bytes: u64) {
        if let Served::Root(lease) = self {
            lease.count(requests, bytes);
        }
    }
}

impl Repos {
    /// Packs mapped by a single-repository daemon (a `--root` daemon maps them per repository).
    pub(crate) fn pack_count(&self) -> usize {
        match self {
            Repos::One(one) => one.store.pack_count(),
            Repos::Root(_) => 0,
        }
    }

    /// The repository a plain stream (no hello, so no directory) is served from: only a single one's.
    pub(crate) fn for_plain(&self) -> Option<Served> {
        match self {
            Repos::One(one) => Some(Served::One(Arc::clone(one))),
            Repos::Root(_) => None,
        }
    }

    /// The repository a `connect` client's stream is served from: for a `--root` daemon, the one git would find in
    /// the client (its directory `cwd` and the variables its hello carries), confined to the root.
    pub(crate) fn for_client(
        &self,
        hello: &Hello,
        cwd: Option<&OwnedFd>,
        peer: Peer,
        server_uid: u32,
    ) -> Result<Served, Refusal> {
        let pool = match self {
            Repos::One(one) => return one.for_client(hello, cwd),
            Repos::Root(pool) => pool,
        };
        // git's set-up starts with `getcwd`, which fails in a directory deleted since (its repository removed
        // under the client): it dies there, whatever names the repository.
        if cwd.is_some_and(|fd| rustix::fs::fstat(fd).is_ok_and(|stat| stat.st_nlink == 0)) {
            return Err(Refusal::DirectoryGone);
        }
        let cwd = cwd.and_then(|fd| std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok());
        let client = root::Client { cwd, hello, uid: peer.uid, gid: peer.gid, server_uid };
        let found = root::find(&pool.root, &client).map_err(Refusal::Elsewhere)?;
        match pool.lease(found) {
            Ok(lease) => Ok(Served::Root(lease)),
            Err(LeaseError::Repository(err)) => Err(Refusal::Elsewhere(FindError::Repository(err))),
            Err(LeaseError::Settings(err)) => Err(Refusal::Fatal(err)),
            Err(LeaseError::Confined(err)) => Err(Refusal::Elsewhere(err)),
        }
    }
}

impl OneRepo {
    /// Every client of a single-repository daemon reads its repository, except one whose `GIT_DIR` names another
    /// (the shim carries `git --git-dir=<dir>`): that one is answered elsewhere, not from the wrong repository.
    fn for_client(self: &Arc<Self>, hello: &Hello, cwd: Option<&OwnedFd>) -> Result<Served, Refusal> {
        if let Some(dir) = hello.var("GIT_DIR") {
            let dir = std::path::Path::new(std::ffi::OsStr::from_bytes(dir));
            let cwd = cwd.and_then(|fd| std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok());
            let named = cwd.map_or_else(|| dir.to_owned(), |cwd| cwd.join(dir));
            let same = |a: &std::path::Path, b: &std::path::Path| a.canonicalize().ok() == b.canonicalize().ok();
            if !same(&named, &self.repo.git_dir) {
                return Err(Refusal::Elsewhere(FindError::NotServed(named)));
            }
        }
        Ok(Served::One(Arc::clone(self)))
    }
}

/// Why a client's stream is not served.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refusal {
    /// Not a repository this daemon serves: the client may answer itself.
    #[error(transparent)]
    Elsewhere(FindError),
    /// The repository is there but cannot be opened.
    #[error(transparent)]
    Fatal(SettingsError),
    /// The client's working directory was deleted: git's own message (`strerror(ENOENT)`).
    #[error("Unable to read current working directory: No such file or directory")]
    DirectoryGone,
}
