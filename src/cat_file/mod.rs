//! The `git cat-file` front end: the same flags, bytes and exit statuses as the installed git's.
//!
//! `args` parses the command line as git does; `single` answers `-t`, `-s`, `-e`, `-p` and `<type> <object>`;
//! `batch` answers `--batch`, `--batch-check`, `--batch-command` and `--batch-all-objects`; `names` resolves
//! object names; `format` expands `%(atoms)`; `tree` walks and prints trees.
mod ambiguous;
pub mod args;
mod batch;
pub mod format;
mod job;
pub mod names;
mod output;
mod single;
mod symlinks;
mod tree;

use std::io::Read;
use std::path::Path;

use crate::engine::{EngineConfig, EngineError};
use crate::fatal::fatal_line;
use crate::store::{ReadError, Resolver, Store};
use args::{Args, CmdMode, UsageError};
use output::Output;

/// What `cat-file` needs of the repository besides its objects.
pub struct Repo<'a> {
    pub store: &'a Store,
    /// The git directory and the common one (they differ in linked worktrees), for references.
    pub git_dir: &'a Path,
    pub common_dir: &'a Path,
    /// `core.quotePath`, for `-p` of trees.
    pub quote_path: bool,
    /// `extensions.compatObjectFormat` is set (ids in the other hash are refused by name).
    pub compat_object_format: bool,
    /// Bytes of delta bases to keep.
    pub delta_cache_size: usize,
    /// The engine that answers batches: resolver threads, window.
    pub engine: EngineConfig,
}

/// What ends `cat-file` with `fatal:`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CatFileError {
    #[error(transparent)]
    Format(#[from] format::FormatError),
    #[error(transparent)]
    Name(#[from] names::NameError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Write(#[from] crate::response::writev::WriteError),
    #[error(transparent)]
    Input(#[from] crate::line_reader::ReadError),
    /// git's own `die()` messages, word for word.
    #[error("{0}")]
    Git(String),
}

impl From<EngineError<CatFileError>> for CatFileError {
    fn from(err: EngineError<CatFileError>) -> CatFileError {
        match err {
            EngineError::Write(err) => CatFileError::Write(err),
            EngineError::Job(err) => err,
        }
    }
}

impl CatFileError {
    fn git(message: impl Into<String>) -> CatFileError {
        CatFileError::Git(message.into())
    }

    /// The message as git words it: an object of an unknown type is just "invalid object type" (git does not
    /// name the object); everything else as displayed.
    fn git_message(&self) -> String {
        let read = match self {
            CatFileError::Read(err) | CatFileError::Name(names::NameError::Read(err)) => Some(err),
            _ => None,
        };
        match read {
            Some(ReadError { damage: crate::store::Damage::UnknownType { .. }, .. }) => "invalid object type".into(),
            _ => self.to_string(),
        }
    }
}

/// Runs `cat-file` with `args` (after the word `cat-file`) on `stdin`, writing to fds 1 and 2; returns the
/// exit status.
pub fn run(args: impl IntoIterator<Item = std::ffi::OsString>, repo: &Repo<'_>, stdin: impl Read) -> u8 {
    let args = match args::parse(args).and_then(check) {
        Ok(args) => args,
        Err(UsageError::Help) => {
            Output::stdout().message(args::USAGE.as_bytes());
            return 129;
        }
        Err(err @ (UsageError::Unsupported(_) | UsageError::Die(_))) => {
            Output::stderr().message(format!("{err}\n").as_bytes());
            return if matches!(err, UsageError::Die(_)) { 128 } else { 129 };
        }
        Err(UsageError::Usage) => {
            Output::stderr().message(args::USAGE.as_bytes());
            return 129;
        }
        Err(err) => {
            let separator = if matches!(err, UsageError::Fatal(_)) { "\n\n" } else { "\n" };
            Output::stderr().message(format!("{err}{separator}{}", args::USAGE).as_bytes());
            return 129;
        }
    };
    let hash = repo.store.object_hash();
    let refs = if repo.git_dir == repo.common_dir {
        gix_ref::file::Store::at(repo.git_dir.to_owned(), hash)
    } else {
        gix_ref::file::Store::for_linked_worktree(repo.git_dir.to_owned(), repo.common_dir.to_owned(), hash)
    };
    let mut resolver = Resolver::new(repo.delta_cache_size);
    let mut out = Output::stdout();
    let names = names::Names {
        store: repo.store,
        refs,
        resolver: &mut resolver,
        follow_symlinks: args.follow_symlinks,
        compat_object_format: repo.compat_object_format,
    };
    let result = match args.batch {
        Some(_) => batch::run(&args, names, repo.engine, stdin),
        None => single::run(&args, names, repo.quote_path, &mut out),
    };
    let flushed = out.flush().map_err(CatFileError::from);
    match result.and_then(|status| flushed.map(|()| status)) {
        Ok(status) => status,
        Err(err) => {
            Output::stderr().message(&fatal_line(&err.git_message()));
            128
        }
    }
}

/// git's option checks after parsing, in git's order, and the options cat-blobd refuses.
fn check(args: Args) -> Result<Args, UsageError> {
    let fatal = |message: String| Err(UsageError::Fatal(message));
    let transform = matches!(args.mode, Some(CmdMode::Textconv | CmdMode::Filters));
    if args.path.is_some() && !transform {
        return fatal("'--path=<path|tree-ish>' needs '--filters' or '--textconv'".into());
    }
    if args.batch.is_none() {
        let needs_batch = [
            (args.follow_symlinks, "--follow-symlinks"),
            (args.buffer.is_some(), "--buffer"),
            (args.mode == Some(CmdMode::AllObjects), "--batch-all-objects"),
            (args.nul_input, "-z"),
            (args.nul, "-Z"),
        ];
        if let Some((_, flag)) = needs_batch.iter().find(|(set, _)| *set) {
            return fatal(format!("'{flag}' requires a batch mode"));
        }
    }
    if args.batch.is_some() {
        let transform_or_all =
            |mode: &CmdMode| matches!(mode, CmdMode::AllObjects | CmdMode::Textconv | CmdMode::Filters);
        if let Some(mode) = args.mode.filter(|mode| !transform_or_all(mode)) {
            return fatal(format!("'{}' is incompatible with batch mode", mode.flag()));
        }
        if !args.rest.is_empty() {
            return fatal("batch modes take no arguments".into());
        }
        return refuse_transforms(args);
    }
    let args = match (args.mode, args.rest.len()) {
        (Some(mode @ (CmdMode::Textconv | CmdMode::Filters)), 0) => {
            fatal(format!("<rev> required with '{}'", mode.flag()))
        }
        (Some(mode), 0) => fatal(format!("<object> required with '{}'", mode.flag())),
        (mode, 1) if args.allow_unknown_type && !matches!(mode, Some(CmdMode::Type | CmdMode::Size)) => {
            Err(UsageError::Die("git cat-file --allow-unknown-type: use with -s or -t".into()))
        }
        (Some(_), 1) => Ok(args),
        (Some(_), _) => fatal("too many arguments".into()),
        (None, 0) => Err(UsageError::Usage),
        (None, 2) if args.allow_unknown_type => {
            Err(UsageError::Die("git cat-file --allow-unknown-type: use with -s or -t".into()))
        }
        (None, 2) => Ok(args),
        (None, n) => fatal(format!("only two arguments allowed in <type> <object> mode, not {n}")),
    }?;
    refuse_transforms(args)
}

/// `--textconv`, `--filters` (with or without `--path`) and `--use-mailmap` need a work tree, attributes or a
/// mailmap: once git's own checks pass, cat-blobd refuses them by name.
fn refuse_transforms(args: Args) -> Result<Args, UsageError> {
    let flag = match args.mode {
        Some(CmdMode::Textconv) => "--textconv",
        Some(CmdMode::Filters) => "--filters",
        _ if args.mailmap => "--use-mailmap",
        _ => return Ok(args),
    };
    let why = "it needs a work tree, attributes or a mailmap";
    Err(UsageError::Unsupported(format!("cat-blobd cat-file does not support {flag}: {why}")))
}
