//! `--batch`, `--batch-check`, `--batch-command` and `--batch-all-objects` (git's `batch_objects`): names are
//! resolved here, in order; the objects are looked up and answered by [`ObjectJob`]s on the engine, which
//! writes every answer in order as soon as it and those before it are ready. It never waits for more input, so
//! a client that sends one line and waits for its answer (without `--buffer`) is answered at once, and answers
//! that are ready together share one writev (what `--buffer` asks for).
use std::io::Read;
use std::sync::atomic::Ordering;

use super::args::{Args, BatchMode, CmdMode};
use super::die::Die;
use super::filter::FilterSpec;
use super::format::Format;
use super::job::{BatchJob, ObjectJob, RunJob, Settings, Worker};
use super::mailmap::{Mailmap, parse_maybe_bool};
use super::names::{NameError, Names};
use super::{CatFileError, Io, Outcome, Repo};
use crate::engine::{Engine, Target};
use crate::io::line_reader::LineReader;
use crate::repo::MailmapConfig;
use crate::response::encode::Response;
use crate::store::{ObjectId, Place, Prefetcher, Resolver, WalkOrder};

/// One batch run: `'s` is the store's lifetime, `'j` the jobs' (they borrow the run's [`Settings`]).
struct Batch<'b, 'scope, 's, 'j> {
    names: &'b mut Names<'s>,
    engine: &'b mut Engine<'scope, BatchJob<'j>>,
    /// For the jobs that run on this thread.
    worker: &'b mut Worker<'j>,
    settings: &'j Settings,
    io: &'b Io<'b>,
    /// Objects asked for so far.
    requests: u64,
    /// The mailmap is on (`--use-mailmap`, then each `mailmap <bool>`).
    mailmap: bool,
    mailmap_config: &'b MailmapConfig,
    mailmap_files: &'b dyn super::MailmapFiles,
}

/// A `--batch-command` command, queued until `flush` with `--buffer`.
enum Command {
    Object { contents: bool, name: Vec<u8> },
    Mailmap(Vec<u8>),
}

pub(crate) fn run(
    args: &Args,
    mut names: Names<'_>,
    repo: &Repo<'_>,
    io: &Io<'_>,
    stdin: impl Read,
    outcome: &mut Outcome,
) -> Result<u8, CatFileError> {
    let (mode, format) = args.batch.clone().expect("a batch mode");
    let format = match format {
        Some(text) => Format::parse(&text)?,
        None => Format::default_format(),
    };
    let all = args.mode == Some(CmdMode::AllObjects);
    let filter = match args.filter {
        FilterSpec::Run(filter) => Some(filter),
        _ => None,
    };
    let delimiter = if args.nul { 0 } else { b'\n' };
    let settings = Settings { format, delimiter, exact: all, filter, mailmap: Default::default() };
    if args.mailmap {
        _ = settings.mailmap.set(Mailmap::load(repo.mailmap, repo.mailmap_files, &mut names)?);
    }
    let settings = &settings;
    std::thread::scope(|scope| {
        let (store, messages) = (names.store, names.messages);
        let cache = names.resolver.cache().clone();
        let new_worker = {
            let cache = cache.clone();
            move || Worker {
                store,
                resolver: Resolver::sharing(cache.clone()),
                messages,
                prefetcher: Prefetcher::default(),
            }
        };
        let output = crate::engine::Output::new(io.stdout).count_bytes_into(io.live.clone());
        let mut engine = Engine::new(scope, output, repo.engine, new_worker);
        let mut worker =
            Worker { store, resolver: Resolver::sharing(cache), messages, prefetcher: Prefetcher::default() };
        let mut batch = Batch {
            names: &mut names,
            engine: &mut engine,
            worker: &mut worker,
            settings,
            io,
            requests: 0,
            mailmap: args.mailmap,
            mailmap_config: repo.mailmap,
            mailmap_files: repo.mailmap_files,
        };
        let result = if all {
            batch.all_objects(args.unordered, mode == BatchMode::Contents)
        } else {
            let input_delimiter = if args.nul || args.nul_input { 0 } else { b'\n' };
            let mut reader = LineReader::with_delimiter(stdin, input_delimiter);
            match mode {
                BatchMode::Command => batch.commands(&mut reader, args.buffer == Some(true)),
                _ => batch.lines(&mut reader, mode == BatchMode::Contents),
            }
        };
        outcome.requests = batch.requests;
        // Everything before a failure is written first; a failure of an earlier answer comes first.
        let (finished, written) = engine.finish();
        outcome.bytes = written.bytes;
        written_first(finished.map_err(CatFileError::from), io, outcome)?;
        written_first(result, io, outcome).map(|()| 0)
    })
}

/// A run of answers that failed part-way ([`CatFileError::AfterAnswers`]): the answers before the failure are
/// written now (the engine has written everything before the run), and the failure is returned.
fn written_first(result: Result<(), CatFileError>, io: &Io<'_>, outcome: &mut Outcome) -> Result<(), CatFileError> {
    let Err(CatFileError::AfterAnswers { answers, error }) = result else { return result };
    let mut out = super::output::Output::new(io.stdout);
    out.push(answers);
    let flushed = out.flush();
    outcome.bytes += out.written;
    if let Some(live) = &io.live {
        live.bytes.fetch_add(out.written, Ordering::Relaxed);
    }
    flushed?;
    Err(*error)
}

/// The next input record, into `record`, as git's `strbuf_getdelim_strip_crlf` leaves it: an LF and a CR before
/// it are dropped; a CR is kept on a last line without LF. A NUL delimiter is kept (git keeps it, and reads the
/// record as a C string, so `-Z` sees an empty record as a command that is not empty). False at the end of the
/// input. One buffer serves every record of a stream.
fn next_record<R: Read>(reader: &mut LineReader<R>, record: &mut Vec<u8>) -> Result<bool, CatFileError> {
    let delimiter = reader.delimiter();
    let Some(line) = reader.next_line()? else { return Ok(false) };
    record.clear();
    record.extend_from_slice(line);
    // After a line, the end of the input has been seen only if the line had no delimiter.
    if !reader.at_eof() {
        match delimiter {
            b'\n' if record.last() == Some(&b'\r') => drop(record.pop()),
            b'\n' => {}
            other => record.push(other),
        }
    }
    Ok(true)
}

/// An object asked for by name: the name as given and, for `<rev>:<path>`, the tree entry's mode.
#[derive(Clone, Copy)]
struct Named<'n> {
    name: &'n [u8],
    mode: Option<u32>,
}

/// Is `name` exactly the id's lowercase hex (what `<id> missing` would print anyway)?
fn is_lower_hex_of(name: &[u8], id: &ObjectId) -> bool {
    let mut hex = [0u8; 64];
    name.len() == id.kind().len_in_hex() && id.hex_to_buf(&mut hex[..name.len()]).as_bytes() == name
}

/// A record as the C string git sees: up to its first NUL.
fn c_str(record: &[u8]) -> &[u8] {
    memchr::memchr(0, record).map_or(record, |nul| &record[..nul])
}

impl Batch<'_, '_, '_, '_> {
    /// `--batch`/`--batch-check`: every record is an object name (and, with `%(rest)`, text after it).
    fn lines<R: Read>(&mut self, reader: &mut LineReader<R>, contents: bool) -> Result<(), CatFileError> {
        let mut record = Vec::new();
        while next_record(reader, &mut record)? {
            let line = c_str(&record);
            let (name, rest) = match memchr::memchr2(b' ', b'\t', line).filter(|_| self.settings.format.has_rest()) {
                Some(split) => {
                    let rest = &line[split..];
                    let skip = rest.iter().take_while(|b| matches!(b, b' ' | b'\t')).count();
                    (&line[..split], Some(&rest[skip..]))
                }
                None => (line, None),
            };
            let interactive = !reader.has_buffered_line();
            self.one(name, rest, contents, interactive)?;
        }
        Ok(())
    }

    /// `--batch-command`: `contents <name>`, `info <name>`, `mailmap <bool>` and `flush` (with `--buffer`, which
    /// queues the others until then: their names are resolved at the flush, as git does).
    fn commands<R: Read>(&mut self, reader: &mut LineReader<R>, buffer: bool) -> Result<(), CatFileError> {
        let mut queued: Vec<Command> = Vec::new();
        let mut record = Vec::new();
        while next_record(reader, &mut record)? {
            if record.is_empty() {
                return Err(CatFileError::Git(Die::EmptyCommand));
            }
            let line = c_str(&record);
            if line.first().is_some_and(|b| b.is_ascii_whitespace() || *b == 0x0b) {
                return Err(CatFileError::Git(Die::WhitespaceBeforeCommand(line.to_vec())));
            }
            let (command, argument) = parse_command(line)?;
            let interactive = !reader.has_buffered_line();
            let command = match command {
                "flush" if !buffer => return Err(CatFileError::Git(Die::FlushWithoutBuffer)),
                "flush" => {
                    self.dispatch(std::mem::take(&mut queued), interactive)?;
                    continue;
                }
                "mailmap" => Command::Mailmap(argument.to_vec()),
                _ => Command::Object { contents: command == "contents", name: argument.to_vec() },
            };
            match buffer {
                true => queued.push(command),
                false => self.run_command(command, interactive)?,
            }
        }
        if std::env::var_os("GIT_TEST_CAT_FILE_NO_FLUSH_ON_EXIT").is_none_or(|v| !git_env_bool(&v)) {
            self.dispatch(queued, false)?;
        }
        Ok(())
    }

    /// Runs queued `--batch-command` commands; only the last object may run on this thread.
    fn dispatch(&mut self, queued: Vec<Command>, interactive: bool) -> Result<(), CatFileError> {
        let last_object = queued.iter().rposition(|command| matches!(command, Command::Object { .. }));
        for (at, command) in queued.into_iter().enumerate() {
            self.run_command(command, interactive && Some(at) == last_object)?;
        }
        Ok(())
    }

    fn run_command(&mut self, command: Command, interactive: bool) -> Result<(), CatFileError> {
        match command {
            Command::Object { contents, name } => self.one(&name, None, contents, interactive),
            Command::Mailmap(value) => self.set_mailmap(&value),
        }
    }

    /// `mailmap <bool>` (git 2.55): turns the mailmap on or off for the requests after it; it is read the first
    /// time it is turned on.
    fn set_mailmap(&mut self, value: &[u8]) -> Result<(), CatFileError> {
        self.mailmap = parse_maybe_bool(value).ok_or_else(|| CatFileError::Git(Die::MailmapBoolean(value.to_vec())))?;
        if self.mailmap && self.settings.mailmap.get().is_none() {
            _ = self.settings.mailmap.set(Mailmap::load(self.mailmap_config, self.mailmap_files, self.names)?);
        }
        Ok(())
    }

    /// git's `batch_one_object`: resolve the name, then answer for the object, or say why there is none.
    fn one(&mut self, name: &[u8], rest: Option<&[u8]>, contents: bool, interactive: bool) -> Result<(), CatFileError> {
        self.count(1);
        let (id, mode) = match self.names.resolve(name) {
            Ok(resolved) => (resolved.id, resolved.mode),
            Err(
                NameError::Missing
                | NameError::PathMissing { .. }
                | NameError::InvalidRev(_)
                | NameError::NotInIndex(_)
                | NameError::NotAtStage { .. },
            ) => {
                return self.line(Response::Missing([name, b" missing", &[self.settings.delimiter]].concat()));
            }
            Err(NameError::Ambiguous(_)) => {
                return self.line(Response::Line([name, b" ambiguous", &[self.settings.delimiter]].concat()));
            }
            Err(NameError::Dangling) => return self.symlink_line(b"dangling", name),
            Err(NameError::Loop) => return self.symlink_line(b"loop", name),
            Err(NameError::NotDir) => return self.symlink_line(b"notdir", name),
            Err(NameError::OutOfTree(target)) => return self.symlink_line(b"symlink", &target),
            Err(err) => return Err(err.into()),
        };
        self.object(id, Some(Named { name, mode }), None, rest, contents, interactive)
    }

    /// `n` more objects asked for.
    fn count(&mut self, n: u64) {
        self.requests += n;
        if let Some(live) = &self.io.live {
            live.requests.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Ends `--batch-all-objects` early if the run is cut from outside.
    fn check_interrupted(&self) -> Result<(), CatFileError> {
        match self.io.interrupted.and_then(|interrupted| interrupted()) {
            Some(reason) => Err(CatFileError::Interrupted(reason)),
            None => Ok(()),
        }
    }

    /// An answer known without looking the object up, written after those before it.
    fn line(&mut self, response: Response) -> Result<(), CatFileError> {
        Ok(self.engine.ready(response, Target::Main)?)
    }

    /// `--follow-symlinks` answers: `<what> SP <length of text> <delimiter> <text> <delimiter>`.
    fn symlink_line(&mut self, what: &[u8], text: &[u8]) -> Result<(), CatFileError> {
        let length = text.len().to_string();
        let delimiter = [self.settings.delimiter];
        self.line(Response::Line([what, b" ", length.as_bytes(), &delimiter, text, &delimiter].concat()))
    }

    /// Hands the object's answer to the engine.
    fn object(
        &mut self,
        id: ObjectId,
        named: Option<Named<'_>>,
        place: Option<Place>,
        rest: Option<&[u8]>,
        contents: bool,
        interactive: bool,
    ) -> Result<(), CatFileError> {
        let job = ObjectJob {
            settings: self.settings,
            id,
            // Kept only when the answer for a missing object could not be made from the id itself.
            name: named.map(|n| n.name).filter(|name| !is_lower_hex_of(name, &id)).map(<[u8]>::to_vec),
            rest: rest.map(<[u8]>::to_vec),
            mode: named.and_then(|n| n.mode),
            contents,
            mailmap: self.mailmap,
            place,
            store: std::marker::PhantomData,
        };
        Ok(self.engine.job(BatchJob::One(job), self.worker, interactive)?)
    }

    /// `--batch-all-objects`: every object once, sorted by id, or in storage order with `--unordered`. Answers
    /// without contents go to the engine in runs of [`RUN_LEN`] objects.
    fn all_objects(&mut self, unordered: bool, contents: bool) -> Result<(), CatFileError> {
        let order = match (unordered, &self.settings.filter) {
            (false, _) => WalkOrder::Sorted,
            // git walks a pack bitmap to filter, which changes the order.
            (true, Some(_)) => WalkOrder::BitmapFirst,
            (true, None) => WalkOrder::Unordered,
        };
        let len = if contents { 1 } else { RUN_LEN };
        self.names.store.walk_all_objects(order, len, |objects| {
            self.check_interrupted()?;
            self.count(objects.len() as u64);
            if !contents {
                let job = RunJob { settings: self.settings, objects, mailmap: self.mailmap };
                return Ok(self.engine.job(BatchJob::Run(job), self.worker, false)?);
            }
            for (id, place) in objects {
                self.object(id, None, place, None, contents, false)?;
            }
            Ok(())
        })
    }
}

/// Objects of `--batch-all-objects --batch-check` per engine job: enough that a job's hand-off and allocation
/// are small next to its lookups, few enough that the engine's window still spreads them over the threads.
const RUN_LEN: usize = 256;

/// Splits a `--batch-command` line into its command and argument, with git's messages.
fn parse_command(line: &[u8]) -> Result<(&'static str, &[u8]), CatFileError> {
    for (command, takes_argument) in [("contents", true), ("info", true), ("flush", false), ("mailmap", true)] {
        let Some(after) = line.strip_prefix(command.as_bytes()) else { continue };
        if takes_argument {
            return match after.strip_prefix(b" ") {
                Some(argument) => Ok((command, argument)),
                None => Err(CatFileError::Git(Die::RequiresArguments(command))),
            };
        }
        if !after.is_empty() {
            return Err(CatFileError::Git(Die::TakesNoArguments(command)));
        }
        return Ok((command, b""));
    }
    Err(CatFileError::Git(Die::UnknownCommand(line.to_vec())))
}

/// git's `git_env_bool`, for the values a test sets.
fn git_env_bool(value: &std::ffi::OsStr) -> bool {
    gix_config::Boolean::try_from(value.to_owned()).is_ok_and(|b| b.0)
}
