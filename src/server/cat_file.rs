//! A `connect` client's `cat-file` run: git cat-file's front end on the fds the client passed, over the daemon's
//! store, delta-base cache and engine settings, ending as a fast-import stream ends (status, log line, stats).
//!
//! As for fast-import streams, the daemon's environment and configuration hold (`GIT_NO_REPLACE_OBJECTS`,
//! `GIT_REPLACE_REF_BASE`, `core.quotePath`, …) for a single-repository daemon: the store and its replace refs are
//! read once, when the daemon starts. A `--root` daemon opens each client's repository with the client's
//! variables that select it and its objects (see [`crate::wire::protocol::CLIENT_ENV`]).
use std::ffi::OsString;
use std::io::Read;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStringExt;
use std::sync::Arc;

use super::State;
use super::repos::{Repos, Served};
use super::root::ClientFiles;
use super::shutdown::{Cancel, CancelReason};
use crate::cat_file::{self, Io};
use crate::fast_import::{Exit, Outcome, Stats};

/// Runs `cat-file` with `args` (after the word `cat-file`) on `input`: answers to `stdout`, messages to `stderr`.
/// `--batch-all-objects`, which reads no input, stops when `cancel` says so, as reading the input would.
pub(super) fn run(
    state: &State,
    served: &Served,
    args: Vec<Vec<u8>>,
    input: impl Read,
    stdout: Option<BorrowedFd<'_>>,
    stderr: BorrowedFd<'_>,
    cancel: &Cancel,
) -> Outcome {
    let session = served.session();
    // A client's environment stays with it: the shim does not send a `GIT_INDEX_FILE` here.
    let mut repo = cat_file::Repo::new(served.repo(), served.store(), session.cache.clone(), session.engine);
    // A `--root` daemon's client reads the mailmap from where its git would, beneath the root.
    let files = match (served, &state.repos) {
        (Served::Root(lease), Repos::Root(pool)) => lease.mailmap().map(|mailmap| (mailmap, mailmap.files(&pool.root))),
        _ => None,
    };
    if let Some((mailmap, files)) = &files {
        repo.mailmap = &mailmap.config;
        repo.mailmap_files = files;
    }
    // … and its references and index, beneath the root too, and a path named on the command line is looked for
    // there from where git would work.
    let client_files = match (served, &state.repos) {
        (Served::Root(lease), Repos::Root(pool)) => {
            Some(ClientFiles { root: &pool.root, workdir: lease.mailmap().and_then(|mailmap| mailmap.workdir()) })
        }
        _ => None,
    };
    if let Some(files) = &client_files {
        repo.files = crate::refs::Files::Through(files);
    }
    let interrupted = || cancel.reason().map(CancelReason::message);
    let live = Some(Arc::clone(&state.counters.work));
    let io = Io { stdout, stderr: Some(stderr), live, interrupted: Some(&interrupted) };
    let ended = cat_file::run(args.into_iter().map(OsString::from_vec), &repo, io, input);
    Outcome {
        exit: Exit::of_code(ended.code),
        stats: Stats { requests: ended.requests, bytes: ended.bytes, ..Stats::default() },
        fatal: ended.fatal,
        broken_pipe: ended.broken_pipe,
        git_exit: None,
    }
}
