//! The `git cat-file` front end: the same flags, bytes and exit statuses as the installed git's.
//!
//! `args` parses the command line as git does; `single` answers `-t`, `-s`, `-e`, `-p` and `<type> <object>`;
//! `batch` answers `--batch`, `--batch-check`, `--batch-command` and `--batch-all-objects`; `names/` resolves
//! object names; `format` expands `%(atoms)`; `print_tree` prints trees for `-p`.
pub mod args;
mod batch;
mod die;
pub mod filter;
pub mod format;
mod job;
mod mailmap;
pub mod names;
mod output;
mod print_tree;
mod single;

use std::io::Read;
use std::os::fd::BorrowedFd;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::engine::{EngineConfig, EngineError, LiveCounters};
use crate::fatal::fatal_line;
use crate::repo::Repository;
use crate::store::cache::SharedCache;
use crate::store::{ReadError, Resolver, Store};
use args::{Args, CmdMode, Misuse, UsageError};
use filter::FilterSpec;
use output::{Messages, Output};

pub use mailmap::{ByPath, MailmapError, MailmapFiles};

/// What `cat-file` needs of the repository besides its objects.
pub struct Repo<'a> {
    pub store: &'a Store,
    /// The git directory and the common one (they differ in linked worktrees), for references.
    pub git_dir: &'a Path,
    pub common_dir: &'a Path,
    /// `$GIT_INDEX_FILE`, the index `:<path>` reads instead of `<git-dir>/index` (relative: to the top of the
    /// work tree, where git runs).
    pub index_file: Option<&'a Path>,
    /// `core.quotePath`, for `-p` of trees.
    pub quote_path: bool,
    /// Where `--use-mailmap` reads the mailmap, and how its files are opened.
    pub mailmap: &'a crate::repo::MailmapConfig,
    pub mailmap_files: &'a dyn MailmapFiles,
    /// How the references and the index are read (beneath the root, for a `--root` daemon's client).
    pub files: crate::refs::Files<'a>,
    /// The branches' upstreams and the remotes, for `@{upstream}` and `@{push}`.
    pub remotes: &'a crate::config::RemotesConfig,
    /// `extensions.compatObjectFormat` is set (ids in the other hash are refused by name).
    pub compat_object_format: bool,
    /// The delta-base cache (a daemon's is shared by all of its streams).
    pub cache: SharedCache,
    /// The engine that answers batches: resolver threads, window.
    pub engine: EngineConfig,
}

impl<'a> Repo<'a> {
    /// `repo`'s objects in `store`, read with `cache` by `engine`, with the default index file: the one place
    /// that says which of the repository's facts `cat-file` uses.
    pub fn new(repo: &'a Repository, store: &'a Store, cache: SharedCache, engine: EngineConfig) -> Repo<'a> {
        Repo {
            store,
            git_dir: &repo.git_dir,
            common_dir: &repo.common_dir,
            index_file: None,
            quote_path: repo.config.quote_path,
            mailmap: &repo.config.mailmap,
            mailmap_files: &mailmap::ByPath,
            files: crate::refs::Files::ByPath,
            remotes: &repo.config.remotes,
            compat_object_format: repo.compat_object_format,
            cache,
            engine,
        }
    }
}

/// Where one run of `cat-file` writes, and what it answers to besides its input: this process's stdout and stderr
/// ([`Io::process`]), or the fds a daemon's client passed, as fast-import's `StreamIo`.
pub struct Io<'fd> {
    /// The answers. `None`: not open (the first write fails with EBADF).
    pub stdout: Option<BorrowedFd<'fd>>,
    /// git's messages. `None`: not open (they are lost).
    pub stderr: Option<BorrowedFd<'fd>>,
    /// Counters to add objects asked for and bytes written to as they happen (a server's `stats`).
    pub live: Option<Arc<LiveCounters>>,
    /// Asked before each object of `--batch-all-objects`, which reads no input: `Some(reason)` ends the run with
    /// `fatal: <reason>` (a server cutting the stream; streams that read input are cut by their input failing).
    pub interrupted: Option<&'fd dyn Fn() -> Option<&'static str>>,
}

impl Io<'static> {
    /// This process's stdout and stderr.
    pub fn process() -> Io<'static> {
        Io {
            stdout: Some(rustix::stdio::stdout()),
            stderr: Some(rustix::stdio::stderr()),
            live: None,
            interrupted: None,
        }
    }
}

/// How a run ended.
#[derive(Debug, Default)]
pub struct Outcome {
    /// git's exit status: 0, 1 (`-e` of an object that is not there), 128 (fatal) or 129 (usage).
    pub code: u8,
    /// The message of the `fatal:` (or usage) line, if there was one: for logs where stderr goes elsewhere.
    pub fatal: Option<String>,
    /// It died writing to a stdout whose reader was gone (EPIPE), where git is killed by SIGPIPE.
    pub broken_pipe: bool,
    /// Objects asked for (names and `--batch-all-objects` entries).
    pub requests: u64,
    /// Bytes written to stdout.
    pub bytes: u64,
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
    Write(#[from] crate::io::writev::WriteError),
    #[error(transparent)]
    Input(#[from] crate::io::line_reader::ReadError),
    /// git's own `die()` messages, word for word.
    #[error(transparent)]
    Git(#[from] die::Die),
    /// A mailmap file that may not be opened (outside a `--root` daemon's root).
    #[error(transparent)]
    Mailmap(#[from] MailmapError),
    /// The run was cut from outside (see [`Io::interrupted`]).
    #[error("{0}")]
    Interrupted(&'static str),
    /// A run of `--batch-all-objects` answers failed part-way: the answers before the failure, to write before
    /// the `fatal:` line (see `batch::written_first`).
    #[error("{error}")]
    AfterAnswers { answers: Vec<u8>, error: Box<CatFileError> },
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
    /// The object whose zlib stream asks for a preset dictionary, if that is what failed.
    fn needs_dictionary(&self) -> Option<&crate::store::ObjectId> {
        match self {
            CatFileError::Read(err) | CatFileError::Name(names::NameError::Read(err)) => {
                matches!(err.damage, crate::store::Damage::ZlibDictionary).then_some(&err.oid)
            }
            _ => None,
        }
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

/// Runs `cat-file` with `args` (after the word `cat-file`) on `stdin`, writing to `io`.
pub fn run(
    args: impl IntoIterator<Item = std::ffi::OsString>,
    repo: &Repo<'_>,
    io: Io<'_>,
    stdin: impl Read,
) -> Outcome {
    let args = match args::parse(args).and_then(check) {
        Ok(args) => args,
        Err(err) => return usage(err, &io),
    };
    let hash = repo.store.object_hash();
    let refs = crate::refs::Refs::open(repo.git_dir, repo.common_dir, hash, repo.files);
    let mut resolver = Resolver::sharing(repo.cache.clone());
    let messages = Messages(io.stderr);
    let names = names::Names {
        store: repo.store,
        refs,
        files: repo.files,
        resolver: &mut resolver,
        index_file: index_file(repo),
        follow_symlinks: args.follow_symlinks,
        compat_object_format: repo.compat_object_format,
        remotes: repo.remotes,
        messages,
    };
    let mut outcome = Outcome::default();
    let result = match args.batch {
        Some(_) => batch::run(&args, names, repo, &io, stdin, &mut outcome),
        None => single_object(&args, names, repo, &io, &mut outcome),
    };
    match result {
        Ok(code) => outcome.code = code,
        Err(err) => {
            if let Some(id) = err.needs_dictionary() {
                // git's complaints before it gives up on the object.
                let unpack =
                    format!("error: inflate: needs dictionary (no message)\nerror: unable to unpack {id} header\n");
                messages.write(unpack.as_bytes());
            }
            let message = err.git_message();
            messages.write(&fatal_line(&message));
            outcome.broken_pipe = matches!(&err, CatFileError::Write(write) if write.is_broken_pipe());
            outcome.code = 128;
            outcome.fatal = Some(message);
        }
    }
    outcome
}

/// The index file of `repo`: `$GIT_INDEX_FILE` as git reads it, from the top of the work tree (the git
/// directory's parent when it is a `.git`; a bare repository's commands run where they were started), and shown
/// as given; else `<git-dir>/index`.
fn index_file(repo: &Repo<'_>) -> names::IndexFile {
    let shown = repo.index_file.map_or_else(|| repo.git_dir.join("index"), Path::to_owned);
    let top = repo.git_dir.parent().filter(|_| repo.git_dir.file_name().is_some_and(|name| name == ".git"));
    let path = match top {
        Some(top) if shown.is_relative() && repo.index_file.is_some() => top.join(&shown),
        _ => shown.clone(),
    };
    names::IndexFile { path, shown }
}

/// `-t`, `-s`, `-e`, `-p` and `<type> <object>`: one object, one write.
fn single_object(
    args: &Args,
    mut names: names::Names<'_>,
    repo: &Repo<'_>,
    io: &Io<'_>,
    outcome: &mut Outcome,
) -> Result<u8, CatFileError> {
    let mut out = Output::new(io.stdout);
    let mailmap = match args.mailmap {
        true => Some(mailmap::Mailmap::load(repo.mailmap, repo.mailmap_files, &mut names)?),
        false => None,
    };
    let result = single::run(args, names, repo.quote_path, mailmap.as_ref(), &mut out);
    // What was answered before a failure is written first, as git writes it before dying.
    let flushed = out.flush();
    (outcome.requests, outcome.bytes) = (1, out.written);
    if let Some(live) = &io.live {
        live.requests.fetch_add(1, Ordering::Relaxed);
        live.bytes.fetch_add(out.written, Ordering::Relaxed);
    }
    let status = result?;
    flushed?;
    Ok(status)
}

/// git's answer to a usage error: the message and the usage on stderr (`-h`: the usage on stdout).
fn usage(err: UsageError, io: &Io<'_>) -> Outcome {
    let (mut stdout, mut stderr) = (Output::new(io.stdout), Output::new(io.stderr));
    let (code, text) = match err {
        UsageError::Help => {
            stdout.message(args::help().as_bytes());
            return Outcome { code: 129, ..Outcome::default() };
        }
        UsageError::Unsupported(_) => (129, format!("{err}\n")),
        UsageError::Die(_) => (128, format!("{err}\n")),
        UsageError::Usage => (129, args::USAGE.to_owned()),
        UsageError::UnknownSwitch(_) | UsageError::UnknownOption(_) => (129, format!("{err}\n{}", args::help())),
        UsageError::Fatal(_) => (129, format!("{err}\n\n{}", args::USAGE)),
        _ => (129, format!("{err}\n")),
    };
    // The option names in the message are the bytes given, not UTF-8 alone.
    stderr.message(&crate::fatal::message_bytes(&text));
    let first_line = text.lines().next().unwrap_or_default();
    Outcome {
        code,
        fatal: Some(first_line.strip_prefix("fatal: ").unwrap_or(first_line).to_owned()),
        ..Outcome::default()
    }
}

/// git's option checks after parsing, in git's order, and the options cat-blobd refuses.
fn check(args: Args) -> Result<Args, UsageError> {
    let fatal = |misuse: Misuse| Err(UsageError::Fatal(misuse));
    match args.filter {
        FilterSpec::None => {}
        FilterSpec::Run(_) if args.batch.is_none() => return Err(UsageError::FilterNeedsBatch),
        FilterSpec::Run(_) => {}
        FilterSpec::Refused(name) => return Err(UsageError::FilterRefused(name)),
    }
    let transform = matches!(args.mode, Some(CmdMode::Textconv | CmdMode::Filters));
    if args.path.is_some() && !transform {
        return fatal(Misuse::PathNeedsTransform);
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
            return fatal(Misuse::RequiresBatch(flag));
        }
    }
    if args.batch.is_some() {
        let transform_or_all =
            |mode: &CmdMode| matches!(mode, CmdMode::AllObjects | CmdMode::Textconv | CmdMode::Filters);
        if let Some(mode) = args.mode.filter(|mode| !transform_or_all(mode)) {
            return fatal(Misuse::IncompatibleWithBatch(mode.flag()));
        }
        if !args.rest.is_empty() {
            return fatal(Misuse::BatchTakesNoArguments);
        }
        return refuse_transforms(args);
    }
    let args = match (args.mode, args.rest.len()) {
        (Some(mode @ (CmdMode::Textconv | CmdMode::Filters)), 0) => fatal(Misuse::RevRequired(mode.flag())),
        (Some(mode), 0) => fatal(Misuse::ObjectRequired(mode.flag())),
        (Some(_), 1) => Ok(args),
        (Some(_), _) => fatal(Misuse::TooMany),
        (None, 0) => Err(UsageError::Usage),
        (None, 2) => Ok(args),
        (None, n) => fatal(Misuse::OnlyTwo(n)),
    }?;
    refuse_transforms(args)
}

/// `--textconv` and `--filters` (with or without `--path`) need a work tree or attributes: once git's own
/// checks pass, cat-blobd refuses them by name.
fn refuse_transforms(args: Args) -> Result<Args, UsageError> {
    match args.mode {
        Some(mode @ (CmdMode::Textconv | CmdMode::Filters)) => Err(UsageError::Unsupported(mode.flag())),
        _ => Ok(args),
    }
}
