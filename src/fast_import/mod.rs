//! One fast-import stream, in stream order: read a command, apply it to the stream's state (features, marks,
//! blobs), answer it, and write the answer in full before reading on. Writing each response before reading
//! the next command is what lets an interactive frontend send one request and wait for its reply.
pub mod command;
mod data;
pub(crate) mod dataref;
pub(crate) mod ls;
pub(crate) mod marks;
mod objects;
pub(crate) mod options;
mod outcome;
mod reads;
pub(crate) mod stream_blobs;
pub(crate) mod write_through;

pub use write_through::running_git_pid;

use std::collections::HashMap;
use std::io::{IoSlice, Read};
use std::os::fd::BorrowedFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use crate::engine::{Engine, EngineConfig, EngineError, LiveCounters, Output};
use crate::fast_import::command::{self as request, Command, Context, ParseError};
use crate::fatal::{Bytes, fatal_line, report_line};
use crate::io::line_reader::{self, LineReader};
use crate::io::writev::{FdSink, GatherWriter, OutFd, WriteError};
use crate::store::cache::SharedCache;
use crate::store::{Kind, ObjectId, Prefetcher, ReadError, Resolver, Store};
use ls::{LsError, LsOptions};
use marks::{Marks, MarksError};
pub(crate) use objects::ObjectSource;
use objects::Objects;
use options::{ImportMarks, OptionError, Settings};
pub use outcome::{Exit, Outcome, Stats};
use reads::{ReadJob, ReadWorker};
use stream_blobs::{StreamBlobError, StreamBlobLimits, StreamBlobs};
use write_through::{Git, GitEnd, GitError, WriteThrough};

/// What makes a stream end with `fatal:` (exit 128), or with usage (exit 129).
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    #[error(transparent)]
    Input(#[from] line_reader::ReadError),
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Option(#[from] OptionError),
    #[error(transparent)]
    Marks(#[from] MarksError),
    #[error("mark :{0} not declared")]
    MarkNotDeclared(u64),
    #[error("object {oid} is a {kind} but a blob was expected.")]
    NotABlob { oid: ObjectId, kind: Kind },
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    Ls(#[from] LsError),
    #[error(transparent)]
    StreamBlob(#[from] StreamBlobError),
    #[error("expected 'data n' command, found: {}", Bytes(.0))]
    ExpectedData(Vec<u8>),
    #[error("EOF in data ({0} bytes remaining)")]
    EofInData(u64),
    #[error("EOF in data (terminator '{}' not found)", Bytes(.0))]
    EofInDelimitedData(Vec<u8>),
    #[error("stream ends early")]
    StreamEndsEarly,
    #[error("missing to marks for submodule '{}'", Bytes(.0))]
    MissingToMarks(Vec<u8>),
    #[error(
        "'{0}' is not supported: cat-blobd only answers read commands (blob, cat-blob, get-mark, ls) here: it \
         runs with --read-only, or as a daemon without --allow-writes or for another uid; send streams that write \
         history to git fast-import, or to cat-blobd with writes allowed"
    )]
    WritesHistory(&'static str),
    #[error(transparent)]
    Git(GitError),
    /// git fast-import, writing this stream, has exited (on an error of its own: its stderr says which).
    #[error("git fast-import has exited")]
    GitExited,
}

/// Everything a stream needs besides its input.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// Bytes of stream-defined blobs kept in memory before spilling to a temporary file.
    pub stream_blob_memory: usize,
    /// How many blobs the stream may define, and spill (per stream in the one-shot binary; a server's shared
    /// caps too).
    pub stream_blob_limits: StreamBlobLimits,
    pub ls: LsOptions,
    /// git fast-import's flags, applied lazily as git's `parse_argv` does.
    pub fast_import_args: Vec<Vec<u8>>,
    /// `<git dir>/info/fast-import`, where relative marks paths go under `relative-marks`.
    pub relative_marks_dir: PathBuf,
    pub engine: EngineConfig,
    /// The delta-base cache, shared by every stream of the process (a server's connections).
    pub cache: SharedCache,
    /// See [`Settings::may_name_files`].
    pub may_name_files: bool,
    /// Counters to add this stream's requests and bytes to as they happen (a server's, for `stats`).
    pub live: Option<Arc<LiveCounters>>,
    /// How many marks the stream may hold (a server's caps; none in the one-shot binary, as in git).
    pub mark_limits: crate::quota::Limit,
    /// Where writing commands go; `None` refuses them (`--read-only`).
    pub write_through: Option<WriteThrough>,
    /// The process exits once this stream ends (the one-shot binary): the stream's parsed trees are left to
    /// the exit rather than freed one by one, as main leaves the store and the delta-base cache.
    pub process_exits_after: bool,
}

/// Where a stream's output goes: `progress` to `stdout`, messages to `stderr`, responses to the cat-blob fd
/// (a number from the stream's flags, 1 by default). `None` is an fd that is not open.
#[derive(Debug, Clone)]
pub struct StreamIo<'fd> {
    pub stdout: Option<BorrowedFd<'fd>>,
    /// `None`: messages are only returned in the [`Outcome`].
    pub stderr: Option<BorrowedFd<'fd>>,
    /// What `--cat-blob-fd=N` names. `None`: this process's fd N (a stream on the process's own stdin).
    /// `Some(fds)`: the frontend's fds as passed to a server, `(frontend's number, fd)`; 1 and 2 mean
    /// `stdout` and `stderr` unless listed, and any other number is not open (`EBADF`, as for git).
    pub passed_fds: Option<Vec<(i32, BorrowedFd<'fd>)>>,
}

impl StreamIo<'static> {
    /// The stdio of this process.
    pub fn process() -> StreamIo<'static> {
        StreamIo { stdout: Some(rustix::stdio::stdout()), stderr: Some(rustix::stdio::stderr()), passed_fds: None }
    }
}

impl<'fd> StreamIo<'fd> {
    /// The output for `--cat-blob-fd=<number>`.
    fn output(&self, cat_blob_fd: i32) -> Output<'fd> {
        if cat_blob_fd == 1 {
            return Output::new(self.stdout);
        }
        let fd = match &self.passed_fds {
            None => OutFd::dup_of_process_fd(cat_blob_fd),
            Some(passed) => match passed.iter().find(|(n, _)| *n == cat_blob_fd) {
                Some((_, fd)) => OutFd::Borrowed(*fd),
                None if cat_blob_fd == 2 => self.stderr.into(),
                None => OutFd::NotOpen,
            },
        };
        Output::split(fd, self.stdout)
    }
}

/// The engine as this front end uses it: `cat-blob` of repository objects and `ls` that the stream's state
/// cannot change run on the resolver threads; everything else is a ready response.
type StreamEngine<'e, 's> = Engine<'e, ReadJob<'s>>;

impl From<EngineError<SessionError>> for SessionError {
    fn from(error: EngineError<SessionError>) -> Self {
        match error {
            EngineError::Write(error) => SessionError::Write(error),
            EngineError::Job(error) => error,
        }
    }
}

/// Runs one stream from `input` against `store`, printing `fatal:`, `error:` and `warning:` lines on
/// `io.stderr` as git does. Every response before a fatal error has been written in full when it returns.
pub fn run<R: Read>(input: R, io: StreamIo<'_>, store: &Store, config: SessionConfig) -> Outcome {
    let started = Instant::now();
    let mut reader = LineReader::new(input);
    let cache = config.cache.clone();
    let (engine_config, live, exits_after) = (config.engine, config.live.clone(), config.process_exits_after);
    let mut session = Session::new(io, store, cache.clone(), config);
    let trees = Arc::clone(&session.worker.trees);
    let (result, written) = std::thread::scope(|scope| {
        let output = Output::new(session.io.stdout).count_bytes_into(live);
        let new_worker = || ReadWorker {
            resolver: Resolver::sharing(cache.clone()),
            trees: Arc::clone(&trees),
            prefetcher: Prefetcher::default(),
        };
        let mut engine = Engine::new(scope, output, engine_config, new_worker);
        let result = session.commands(&mut reader, &mut engine);
        let (written, stats) = engine.finish();
        // A response that failed before the front end's own error wins: git would have died there first.
        (written.map_err(SessionError::from).and(result), stats)
    });
    session.stats.bytes = written.bytes;
    session.stats.missing = written.missing;
    session.stats.writev_calls = written.writev_calls;
    if exits_after {
        // small-A, 10,000 `ls`: freeing the trees was 6.4M instructions (1.5%), touching every one again.
        std::mem::forget(trees);
    }
    session.end(result, started)
}

struct Session<'a> {
    io: StreamIo<'a>,
    store: &'a Store,
    /// What the front end reads with itself (requests it answers, and jobs run on its own thread).
    worker: ReadWorker,
    settings: Settings,
    args: Vec<Vec<u8>>,
    /// git's `seen_data_command`: set when the first line that is not `feature`/`option` arrives, at which
    /// point the command-line flags are applied.
    seen_data_command: bool,
    marks: Marks,
    blobs: StreamBlobs,
    /// A blob of the stream is not in a pack (so reads see the stream's copy, or only it): `ls` walks that
    /// could meet one stay on this thread.
    blobs_written: bool,
    rewrites: HashMap<ObjectId, ObjectId>,
    import_done: bool,
    ls: LsOptions,
    /// An `error:` was printed (the marks file could not be written): exit 1 at the end.
    failure: bool,
    stats: Stats,
    live: Option<Arc<LiveCounters>>,
    write_through: Option<WriteThrough>,
    /// The stream's leading `feature` and `option git` lines, for git when it starts.
    preamble: Vec<Vec<u8>>,
    /// The command-line flags, for git when it starts.
    git_args: Vec<Vec<u8>>,
    git: Option<Git>,
    /// How git ended, once it has.
    git_status: Option<std::process::ExitStatus>,
    /// The reader's line ended a writing command without belonging to it: it is the next command.
    unread: bool,
    /// git was started only to write the stream's blobs at its end.
    persist_only: bool,
}

impl<'a> Session<'a> {
    fn new(io: StreamIo<'a>, store: &'a Store, cache: SharedCache, config: SessionConfig) -> Self {
        let mut settings = Settings::new(config.relative_marks_dir);
        settings.may_name_files = config.may_name_files;
        // git scans for this one flag before anything else: it changes how feature lines are read.
        settings.allow_unsafe_features = config
            .fast_import_args
            .iter()
            .take_while(|arg| arg.starts_with(b"-") && *arg != b"--")
            .any(|arg| arg == b"--allow-unsafe-features");
        Session {
            io,
            store,
            worker: ReadWorker {
                resolver: Resolver::sharing(cache),
                trees: Arc::new(ls::TreeCache::default()),
                prefetcher: Prefetcher::default(),
            },
            settings,
            args: config.fast_import_args.clone(),
            seen_data_command: false,
            preamble: Vec::new(),
            git_args: config.fast_import_args,
            marks: Marks::with_limits(config.mark_limits.clone()),
            blobs: StreamBlobs::new(config.stream_blob_memory, config.stream_blob_limits),
            blobs_written: false,
            rewrites: HashMap::new(),
            import_done: false,
            ls: config.ls,
            failure: false,
            stats: Stats::default(),
            live: config.live,
            write_through: config.write_through,
            git: None,
            git_status: None,
            unread: false,
            persist_only: false,
        }
    }

    /// The main loop (git's `cmd_fast_import`): every command in order until `done`, the end of input, or a
    /// fatal error (returned; earlier responses may still be in flight).
    fn commands<'e, R: Read>(
        &mut self,
        reader: &mut LineReader<R>,
        engine: &mut StreamEngine<'e, 'a>,
    ) -> Result<(), SessionError>
    where
        'a: 'e,
    {
        while self.next_command(reader, engine)? {
            if engine.failed() {
                // An earlier response failed; `finish` reports it. git would not have read this far.
                return Ok(());
            }
            let raw = reader.line().to_vec();
            let cx = Context { hash: self.store.object_hash(), rewrites: &self.rewrites };
            let command = match request::parse_command(request::c_string(&raw), cx) {
                Err(_) if self.writing() => return self.refused(&raw),
                command => command?,
            };
            // A batch of jobs gathers consecutive reads only. Anything else may wait for the frontend (a blob's
            // data still being sent) or on git: what is pending goes out first.
            if !matches!(command, Command::CatBlob(_) | Command::Ls(_)) {
                engine.hand_off();
            }
            match command {
                Command::Blob => self.blob(reader, engine)?,
                Command::CatBlob(dataref) => {
                    let interactive = !reader.has_buffered_line();
                    self.cat_blob(dataref, interactive, &raw, engine)?;
                }
                Command::GetMark(mark) => self.get_mark(mark, &raw, engine)?,
                Command::Ls(arg) => {
                    let arg = arg.to_vec();
                    let interactive = !reader.has_buffered_line();
                    self.ls(&raw, &arg, interactive, engine)?;
                }
                Command::Checkpoint => {
                    reader.skip_optional_lf()?;
                    self.checkpoint()?;
                }
                Command::Done => {
                    self.done(&raw, reader.at_eof())?;
                    break;
                }
                Command::Progress => self.progress(reader, engine)?,
                // git runs only after a data command, and dies of these there with its own message.
                Command::Feature(_) | Command::OptionGit(_) if self.writing() => return self.refused(&raw),
                Command::Feature(feature) => {
                    let feature = feature.to_vec();
                    self.settings.stream_feature(&feature, self.seen_data_command)?;
                    self.print_warnings();
                    self.preamble.push(raw);
                }
                Command::OptionGit(option) => {
                    let option = option.to_vec();
                    self.settings.stream_option(&option, self.seen_data_command)?;
                    self.print_warnings();
                    self.preamble.push(raw);
                }
                Command::OptionOther => {}
                Command::Writes(command) if self.write_through.is_none() => {
                    return Err(SessionError::WritesHistory(command));
                }
                Command::Writes(_) => self.write_command(reader, engine)?,
            }
        }
        if !self.seen_data_command {
            self.apply_argv(engine)?;
        }
        // git checks `feof(stdin)`: a `done` without its LF at the very end still counts as ending early.
        if self.settings.require_done && reader.at_eof() {
            return Err(SessionError::StreamEndsEarly);
        }
        Ok(())
    }

    /// `done`: git, if it runs, gets it too.
    fn done(&mut self, raw: &[u8], at_eof: bool) -> Result<(), SessionError> {
        if let Some(git) = &mut self.git {
            // Without its LF at the very end, `done` still ends the stream early, for git too.
            git.send(raw)?;
            if !at_eof {
                git.send(b"\n")?;
            }
        }
        Ok(())
    }

    /// git's `read_next_command`: the next line that is not a comment, applying the command-line flags when
    /// the first line that is not `feature`/`option` arrives (comments included). False at the end of input;
    /// the reader's line then holds what git's `command_buf` would.
    fn next_command<'e, R: Read>(
        &mut self,
        reader: &mut LineReader<R>,
        engine: &mut StreamEngine<'e, 'a>,
    ) -> Result<bool, SessionError>
    where
        'a: 'e,
    {
        if std::mem::take(&mut self.unread) {
            return Ok(true);
        }
        loop {
            let Some(line) = reader.next_line()? else { return Ok(false) };
            if !self.seen_data_command && !line.starts_with(b"feature ") && !line.starts_with(b"option ") {
                self.apply_argv(engine)?;
            }
            if !request::is_comment(reader.line()) {
                return Ok(true);
            }
        }
    }

    /// git's `parse_argv`, plus what it triggers: reading the marks files and building the submodule map.
    fn apply_argv<'e>(&mut self, engine: &mut StreamEngine<'e, 'a>) -> Result<(), SessionError>
    where
        'a: 'e,
    {
        self.seen_data_command = true;
        let args = std::mem::take(&mut self.args);
        self.settings.apply_argv(&args)?;
        self.print_warnings();
        engine.set_output(self.io.output(self.settings.cat_blob_fd));
        for import in std::mem::take(&mut self.settings.imports_due) {
            self.import_marks(&import)?;
        }
        if let Some(import) = self.settings.import_marks.clone() {
            self.import_marks(&import)?;
            self.import_done = true;
        }
        self.build_rewrite_map()
    }

    fn import_marks(&mut self, import: &ImportMarks) -> Result<(), SessionError> {
        let mut objects = objects::MarkedObjects { store: self.store, blobs: &self.blobs };
        self.marks.import(&import.path, import.ignore_missing, &mut objects)?;
        Ok(())
    }

    /// `build_mark_map`: each `rewrite-submodules-from` marks file maps its ids to the ids its `-to`
    /// counterpart gives the same marks.
    fn build_rewrite_map(&mut self) -> Result<(), SessionError> {
        // Later options for the same submodule name replace earlier ones.
        let last_by_name = |list: &[options::SubmoduleRewrite]| {
            let mut by_name: Vec<&options::SubmoduleRewrite> = Vec::new();
            for rewrite in list {
                by_name.retain(|r| r.name != rewrite.name);
                by_name.push(rewrite);
            }
            by_name.into_iter().cloned().collect::<Vec<_>>()
        };
        for from in last_by_name(&self.settings.rewrite_from) {
            let to = last_by_name(&self.settings.rewrite_to).into_iter().find(|to| to.name == from.name);
            let to = to.ok_or_else(|| SessionError::MissingToMarks(from.name.clone()))?;
            // A later line of a file redefines its mark.
            let to_marks: HashMap<u64, ObjectId> = to.marks.into_iter().collect();
            let mut sorted: Vec<_> = from.marks.into_iter().collect::<HashMap<_, _>>().into_iter().collect();
            sorted.sort_unstable_by_key(|(mark, _)| *mark);
            for (mark, from_id) in sorted {
                let to_id = to_marks.get(&mark).ok_or(SessionError::MarkNotDeclared(mark))?;
                self.rewrites.entry(from_id).or_insert(*to_id);
            }
        }
        Ok(())
    }

    /// `checkpoint`: git's while it runs (and it starts if marks naming the stream's blobs are to be exported);
    /// otherwise the marks are exported here.
    fn checkpoint(&mut self) -> Result<(), SessionError> {
        if self.must_persist_blobs() {
            self.start_git()?;
        }
        if self.writing() {
            return self.git_checkpoint();
        }
        self.export_marks();
        Ok(())
    }

    fn objects(&mut self) -> Objects<'_> {
        Objects {
            store: self.store,
            resolver: &mut self.worker.resolver,
            blobs: &self.blobs,
            marks: &self.marks,
            rewrites: &self.rewrites,
        }
    }

    /// The stream's end after everything is written: messages, marks export and exit status as git's.
    fn end(mut self, result: Result<(), SessionError>, started: Instant) -> Outcome {
        let result = self.persist_blobs(result);
        let (mut fatal, mut broken_pipe, mut git_exit) = (None, false, None);
        let exit = match result {
            Ok(()) => match self.end_git(GitEnd::Finish) {
                Some(code) => {
                    git_exit = Some(code);
                    Exit::of_code(code)
                }
                None => {
                    self.export_marks();
                    if self.failure { Exit::Failure } else { Exit::Success }
                }
            },
            Err(SessionError::Option(err @ (OptionError::Usage | OptionError::SignMode { .. }))) => {
                self.message(format!("{err}\n").as_bytes());
                Exit::Usage
            }
            Err(err) => {
                broken_pipe = matches!(&err, SessionError::Write(write) if write.is_broken_pipe());
                if let Some(code) = self.git_reported(&err, broken_pipe) {
                    // git died on the same stream and said why on stderr.
                    git_exit = Some(code);
                    fatal = Some(format!("git fast-import exited with status {code}"));
                    Exit::of_code(code)
                } else {
                    let message = err.to_string();
                    let line = fatal_line(&message);
                    fatal = Some(message);
                    // git's die handler still writes the marks file; death by SIGPIPE does not.
                    let git = if broken_pipe {
                        self.message(&line);
                        self.end_git(GitEnd::Kill)
                    } else {
                        self.end_git(GitEnd::Abort(line))
                    };
                    if git.is_none() && !broken_pipe {
                        self.export_marks();
                    }
                    Exit::Fatal
                }
            }
        };
        let mut stats = self.stats();
        stats.elapsed = started.elapsed();
        if self.settings.stats && exit != Exit::Fatal {
            self.message(stats.to_string().as_bytes());
        }
        Outcome { exit, stats, fatal, broken_pipe, git_exit }
    }

    /// Writes the marks file if one is configured and the import (if any) was read (git's `dump_marks`).
    fn export_marks(&mut self) {
        let Some(path) = self.settings.export_marks.clone() else { return };
        if self.settings.import_marks.is_some() && !self.import_done {
            return;
        }
        if let Err(err) = self.marks.export(&path) {
            self.message(&report_line("error: ", &err.to_string()));
            self.failure = true;
        }
    }

    fn print_warnings(&mut self) {
        for warning in std::mem::take(&mut self.settings.warnings) {
            self.message(&report_line("warning: ", &warning));
        }
    }

    /// A line on stderr. Errors writing it are ignored: there is nowhere left to report them.
    fn message(&self, bytes: &[u8]) {
        let _ = GatherWriter::new(FdSink::new(self.io.stderr)).write_all(&mut [IoSlice::new(bytes)]);
    }

    fn stats(&self) -> Stats {
        let cache = self.worker.resolver.cache();
        let (cache_hits, cache_misses) = cache.hit_counts();
        Stats { inflated_bytes: cache.inflated_bytes(), cache_hits, cache_misses, ..self.stats.clone() }
    }
}
