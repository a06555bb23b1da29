//! The `cat-blobd` binary: parse flags, find the repository, run one stream from stdin, exit with git's status
//! (0, 1 when the marks file could not be written, 128 fatal, 129 usage).
#![deny(unsafe_code)]

use std::os::fd::AsFd;
use std::process::ExitCode;

use clap::error::ErrorKind;

use cat_blobd::cli;
use cat_blobd::fatal::print_fatal;
use cat_blobd::pipeline::PipelineConfig;
use cat_blobd::repo::Repository;
use cat_blobd::session::{self, SessionConfig, StreamIo, ls::LsOptions};
use cat_blobd::store::{Replacements, Store, StoreOptions};

fn main() -> ExitCode {
    restore_sigpipe();
    let args = match cli::parse(std::env::args_os().skip(1)) {
        Ok(args) => args,
        Err(err) => return usage_error(err),
    };
    match run(args) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            print_fatal(&format!("{err:#}"));
            ExitCode::from(128)
        }
    }
}

fn run(args: cli::Args) -> anyhow::Result<u8> {
    let repo = Repository::discover(args.cli.git_dir.as_deref())?;
    let replace_refs = repo.config.use_replace_refs && std::env::var_os("GIT_NO_REPLACE_OBJECTS").is_none();
    let replacements = if replace_refs {
        let base = std::env::var("GIT_REPLACE_REF_BASE").unwrap_or_else(|_| "refs/replace/".into());
        Replacements::read(&repo.common_dir, &base, repo.object_hash)
    } else {
        Replacements::default()
    };
    let store = Store::open(&repo.objects_dir, repo.object_hash, StoreOptions { replacements, ..Default::default() });
    // Our own handle on fd 0, read unbuffered by std: the session's reader does the buffering.
    let stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
    let config = SessionConfig {
        delta_cache_size: usize::try_from(args.cli.delta_cache_size).unwrap_or(usize::MAX),
        stream_blob_memory: usize::try_from(args.cli.stream_blob_memory).unwrap_or(usize::MAX),
        ls: LsOptions { quote_path: repo.config.quote_path, ignore_case: repo.config.ignore_case },
        fast_import_args: args.fast_import,
        relative_marks_dir: repo.common_dir.join("info").join("fast-import"),
        pipeline: PipelineConfig {
            threads: args.cli.threads.unwrap_or(PipelineConfig::default().threads).max(1),
            window: args.cli.window.max(1),
            window_bytes: usize::try_from(args.cli.window_bytes).unwrap_or(usize::MAX),
            ..PipelineConfig::default()
        },
        shared_cache: None,
    };
    let outcome = session::run(stdin, StreamIo::process(), &store, config);
    Ok(outcome.exit as u8)
}

/// Errors in cat-blobd's own flags: `--help` and `--version` print and succeed; anything else is usage (129).
fn usage_error(err: clap::Error) -> ExitCode {
    let _ = err.print();
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => ExitCode::SUCCESS,
        _ => ExitCode::from(129),
    }
}

/// Like git (`restore_sigpipe_to_default`), die quietly by SIGPIPE when the frontend stops reading, even if
/// our parent ignored or blocked the signal: the Rust runtime ignores it at start-up.
#[allow(unsafe_code)]
fn restore_sigpipe() {
    // SAFETY: called first thing in main, before any thread exists; `signal` and `sigprocmask` only change
    // this process's signal disposition and mask, and the sigset is initialised by `sigemptyset` before use.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
}
