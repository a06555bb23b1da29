//! A `connect` client's `cat-file` run: git cat-file's front end on the fds the client passed, over the daemon's
//! store, delta-base cache and engine settings, ending as a fast-import stream ends (status, log line, stats).
//!
//! As for fast-import streams, the daemon's environment and configuration hold (`GIT_NO_REPLACE_OBJECTS`,
//! `GIT_REPLACE_REF_BASE`, `core.quotePath`, …): the store and its replace refs are read once, when the daemon
//! starts, and a client's environment never reaches the daemon.
use std::ffi::OsString;
use std::io::Read;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStringExt;
use std::sync::Arc;

use super::State;
use super::shutdown::{Cancel, CancelReason};
use crate::cat_file::{self, Io};
use crate::fast_import::{Exit, Outcome, Stats};

/// Runs `cat-file` with `args` (after the word `cat-file`) on `input`: answers to `stdout`, messages to `stderr`.
/// `--batch-all-objects`, which reads no input, stops when `cancel` says so, as reading the input would.
pub(super) fn run(
    state: &State,
    args: Vec<Vec<u8>>,
    input: impl Read,
    stdout: Option<BorrowedFd<'_>>,
    stderr: BorrowedFd<'_>,
    cancel: &Cancel,
) -> Outcome {
    let repo = cat_file::Repo {
        store: &state.store,
        git_dir: &state.repo.git_dir,
        common_dir: &state.repo.common_dir,
        // A client's environment stays with it: the shim does not send a `GIT_INDEX_FILE` here.
        index_file: None,
        quote_path: state.repo.config.quote_path,
        mailmap: &state.repo.config.mailmap,
        remotes: &state.repo.config.remotes,
        compat_object_format: state.repo.compat_object_format,
        cache: state.cache.clone(),
        engine: state.session.engine,
    };
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
