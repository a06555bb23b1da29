//! A `--root` daemon's client's mailmap, placed as git places it from that client and read beneath the root.
//!
//! git's set-up decides where it works before it reads `.mailmap` (and a relative `mailmap.file`): at the top of
//! the work tree when the client started inside it, else in the client's own directory. A daemon shares one open
//! repository between clients in different directories, so that is decided for each client here (not when the
//! repository was opened, in the daemon's directory), and every mailmap file is opened beneath the root: one that
//! leads out is refused, never read.
use std::path::{Path, PathBuf};

use super::confine::{ConfineError, Root};
use super::find::Found;
use crate::cat_file::{MailmapError, MailmapFiles};
use crate::repo::{MailmapConfig, work_tree};

/// Where one client's `--use-mailmap` reads.
pub(crate) struct ClientMailmap {
    /// The repository's settings, with the work tree's `.mailmap` named as git names it (relative).
    pub config: MailmapConfig,
    /// The directory git would work in: relative names are read there. `None`: the client passed none.
    base: Option<PathBuf>,
}

impl ClientMailmap {
    /// `found`'s client's mailmap, from its repository's `settings`, with the work tree git would place for that
    /// client ([`work_tree`]).
    pub(crate) fn new(root: &Root, found: &Found, settings: &MailmapConfig) -> ClientMailmap {
        let cwd = found.cwd.clone();
        let work_tree = work_tree(&found.git_dir, found.discovered.as_ref(), &settings.work_tree, &found.env);
        // The top of the work tree, where git works if the client is inside it (its real path, beneath the root).
        let top = work_tree.clone().flatten().and_then(|dir| root.resolve(&dir).ok().flatten()).map(|top| top.path);
        let base = match (top, &cwd) {
            (Some(top), Some(cwd)) if cwd.starts_with(&top) => Some(top),
            _ => cwd,
        };
        let config = MailmapConfig { work_tree_file: work_tree.map(|_| PathBuf::from(".mailmap")), ..settings.clone() };
        ClientMailmap { config, base }
    }

    /// The directory git would work in for this client: its relative names are read there.
    pub(crate) fn workdir(&self) -> Option<&Path> {
        self.base.as_deref()
    }

    /// Opens the mailmap's files for this client beneath `root`.
    pub(crate) fn files<'a>(&'a self, root: &'a Root) -> impl MailmapFiles + 'a {
        Beneath { root, base: self.base.as_deref() }
    }
}

/// Mailmap files opened beneath the root, relative names from the directory git would work in.
struct Beneath<'a> {
    root: &'a Root,
    base: Option<&'a Path>,
}

impl MailmapFiles for Beneath<'_> {
    fn open(&self, path: &Path, no_follow: bool) -> Result<std::fs::File, MailmapError> {
        let path = match self.base {
            Some(base) => base.join(path),
            None if path.is_absolute() => path.to_owned(),
            // No directory to read a relative name in: as if nothing were there.
            None => return Err(std::io::Error::from(std::io::ErrorKind::NotFound).into()),
        };
        self.root.open_file(&path, no_follow).map_err(|err| match err {
            ConfineError::Io { source, .. } => MailmapError::Io(source),
            outside @ ConfineError::Outside { .. } => MailmapError::Refused(outside.to_string()),
        })
    }
}
