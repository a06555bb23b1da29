//! The `cat-blobd` binary: parse flags, run one stream from stdin, map errors to exit codes
//! (128 fatal as git's `die`, 129 usage).
#![deny(unsafe_code)]

use std::os::fd::AsFd;
use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;

use cat_blobd::cli::Cli;
use cat_blobd::fatal::print_fatal;
use cat_blobd::repo::Repository;
use cat_blobd::response::writev::{FdSink, GatherWriter};
use cat_blobd::session::{self, SessionOptions};
use cat_blobd::store::{Store, StoreOptions};

fn main() -> ExitCode {
    restore_sigpipe();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return usage_error(err),
    };
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            print_fatal(&format!("{err:#}"));
            ExitCode::from(128)
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<()> {
    let repo = Repository::discover(cli.git_dir.as_deref())?;
    let store = Store::open(&repo.objects_dir, repo.object_hash, StoreOptions::default());
    // Our own handle on fd 0, read unbuffered by std: the session's reader does the buffering.
    let stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
    let mut writer = GatherWriter::new(FdSink::new(cli.cat_blob_fd));
    let options = SessionOptions {
        delta_cache_size: usize::try_from(cli.delta_cache_size).unwrap_or(usize::MAX),
    };
    let stats = session::run(stdin, &mut writer, &store, &options)?;
    if cli.stats {
        eprint!("{stats}");
    }
    Ok(())
}

/// Flag errors as git fast-import reports them: an unknown option or a bad value is `fatal:` (128), anything
/// else about the command line is usage (129). `--help` and `--version` print and succeed.
fn usage_error(err: clap::Error) -> ExitCode {
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = err.print();
            ExitCode::SUCCESS
        }
        ErrorKind::UnknownArgument => {
            let arg = err
                .get(clap::error::ContextKind::InvalidArg)
                .map(|v| v.to_string())
                .unwrap_or_default();
            print_fatal(&format!("unknown option {arg}"));
            ExitCode::from(128)
        }
        ErrorKind::ValueValidation | ErrorKind::InvalidValue => {
            let message = std::error::Error::source(&err)
                .map(|s| s.to_string())
                .unwrap_or_else(|| err.to_string());
            print_fatal(&message);
            ExitCode::from(128)
        }
        _ => {
            let _ = err.print();
            ExitCode::from(129)
        }
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
