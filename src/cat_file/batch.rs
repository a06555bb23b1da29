//! `--batch`, `--batch-check`, `--batch-command` and `--batch-all-objects` (git's `batch_objects`): one
//! answer per input line, in order, each written before the next line is read unless `--buffer` is given.
use std::io::Read;

use super::CatFileError;
use super::args::{Args, BatchMode, CmdMode};
use super::format::{Fields, Format};
use super::names::{NameError, Names};
use super::output::Output;
use crate::fatal::Bytes;
use crate::line_reader::LineReader;
use crate::store::{Info, ObjectId, Place};

struct Batch<'n, 'a> {
    names: &'n mut Names<'a>,
    /// `None`: git's default format, which needs type and size.
    format: Format,
    delimiter: u8,
    /// `--batch-all-objects` reads objects as stored: replace refs are off.
    exact: bool,
}

pub fn run(args: &Args, mut names: Names<'_>, out: &mut Output, stdin: impl Read) -> Result<u8, CatFileError> {
    let (mode, format) = args.batch.clone().expect("a batch mode");
    let format = match format {
        Some(text) => Format::parse(&text)?,
        None => Format::default_format(),
    };
    let delimiter = if args.nul { 0 } else { b'\n' };
    let all = args.mode == Some(CmdMode::AllObjects);
    let mut batch = Batch { names: &mut names, format, delimiter, exact: all };
    if all {
        batch.all_objects(args.unordered, mode == BatchMode::Contents, out)?;
        return Ok(0);
    }
    let input_delimiter = if args.nul || args.nul_input { 0 } else { b'\n' };
    let mut reader = LineReader::with_delimiter(stdin, input_delimiter);
    match mode {
        BatchMode::Command => batch.commands(&mut reader, args.buffer == Some(true), out)?,
        _ => batch.lines(&mut reader, mode == BatchMode::Contents, out)?,
    }
    Ok(0)
}

/// The next input record without its delimiter and a trailing CR (git's `strbuf_getdelim_strip_crlf`).
fn next_record<R: Read>(reader: &mut LineReader<R>) -> Result<Option<Vec<u8>>, CatFileError> {
    let Some(line) = reader.next_line()? else { return Ok(None) };
    Ok(Some(line.strip_suffix(b"\r").unwrap_or(line).to_vec()))
}

/// A record as the C string git sees: up to its first NUL.
fn c_str(record: &[u8]) -> &[u8] {
    memchr::memchr(0, record).map_or(record, |nul| &record[..nul])
}

impl Batch<'_, '_> {
    /// `--batch`/`--batch-check`: every record is an object name (and, with `%(rest)`, text after it).
    fn lines<R: Read>(
        &mut self,
        reader: &mut LineReader<R>,
        contents: bool,
        out: &mut Output,
    ) -> Result<(), CatFileError> {
        while let Some(record) = next_record(reader)? {
            let line = c_str(&record);
            let (name, rest) = match memchr::memchr2(b' ', b'\t', line).filter(|_| self.format.has_rest()) {
                Some(split) => {
                    let rest = &line[split..];
                    let skip = rest.iter().take_while(|b| matches!(b, b' ' | b'\t')).count();
                    (&line[..split], Some(&rest[skip..]))
                }
                None => (line, None),
            };
            self.one(name, rest, contents, out)?;
        }
        Ok(())
    }

    /// `--batch-command`: `contents <name>`, `info <name>`, and `flush` (with `--buffer`, which queues the
    /// others until then).
    fn commands<R: Read>(
        &mut self,
        reader: &mut LineReader<R>,
        buffer: bool,
        out: &mut Output,
    ) -> Result<(), CatFileError> {
        let mut queued: Vec<(bool, Vec<u8>)> = Vec::new();
        while let Some(record) = next_record(reader)? {
            if record.is_empty() {
                return Err(CatFileError::git("empty command in input"));
            }
            let line = c_str(&record);
            if line.first().is_some_and(|b| b.is_ascii_whitespace() || *b == 0x0b) {
                return Err(CatFileError::git(format!("whitespace before command: '{}'", Bytes(line))));
            }
            let (command, argument) = parse_command(line)?;
            match command {
                "flush" => {
                    if !buffer {
                        return Err(CatFileError::git("flush is only for --buffer mode"));
                    }
                    for (contents, name) in queued.drain(..) {
                        self.one(&name, None, contents, out)?;
                    }
                    out.flush()?;
                }
                _ if !buffer => self.one(argument, None, command == "contents", out)?,
                _ => queued.push((command == "contents", argument.to_vec())),
            }
        }
        if std::env::var_os("GIT_TEST_CAT_FILE_NO_FLUSH_ON_EXIT").is_none_or(|v| !git_env_bool(&v)) {
            for (contents, name) in queued {
                self.one(&name, None, contents, out)?;
            }
        }
        Ok(())
    }

    /// git's `batch_one_object`: resolve the name, then answer for the object, or say why there is none.
    fn one(&mut self, name: &[u8], rest: Option<&[u8]>, contents: bool, out: &mut Output) -> Result<(), CatFileError> {
        let id = match self.names.resolve(name) {
            Ok(resolved) => resolved.id,
            Err(NameError::Missing | NameError::PathMissing { .. } | NameError::InvalidRev(_)) => {
                return self.line(name, b" missing", out);
            }
            Err(NameError::Ambiguous(_)) => return self.line(name, b" ambiguous", out),
            Err(NameError::Dangling) => return self.symlink_line(b"dangling", name, out),
            Err(NameError::Loop) => return self.symlink_line(b"loop", name, out),
            Err(NameError::NotDir) => return self.symlink_line(b"notdir", name, out),
            Err(NameError::OutOfTree(target)) => return self.symlink_line(b"symlink", &target, out),
            Err(err) => return Err(err.into()),
        };
        self.object(&id, Some(name), None, rest, contents, out)
    }

    /// `<name><what><delimiter>`, written at once (git flushes these even with `--buffer`).
    fn line(&mut self, name: &[u8], what: &[u8], out: &mut Output) -> Result<(), CatFileError> {
        out.push([name, what, &[self.delimiter]].concat());
        out.end_answer()?;
        Ok(())
    }

    /// `--follow-symlinks` answers: `<what> SP <length of text> <delimiter> <text> <delimiter>`.
    fn symlink_line(&mut self, what: &[u8], text: &[u8], out: &mut Output) -> Result<(), CatFileError> {
        let length = text.len().to_string();
        let delimiter = [self.delimiter];
        out.push([what, b" ", length.as_bytes(), &delimiter, text, &delimiter].concat());
        out.end_answer()?;
        Ok(())
    }

    /// git's `batch_object_write`: the formatted line and, for contents, the object and a delimiter.
    fn object(
        &mut self,
        id: &ObjectId,
        name: Option<&[u8]>,
        place: Option<Place>,
        rest: Option<&[u8]>,
        contents: bool,
        out: &mut Output,
    ) -> Result<(), CatFileError> {
        let store = self.names.store;
        let mut info: Option<Info> = None;
        if contents || self.format.needs_info() {
            let on_disk = self.format.needs_disk();
            info = match (&place, self.exact) {
                (Some(place), _) => Some(store.info_at(id, place, on_disk)?),
                (None, true) => store.info_exact(id, on_disk)?,
                (None, false) => store.info(id, on_disk)?,
            };
            if info.is_none() {
                let hex = id.to_hex().to_string().into_bytes();
                return self.line(name.unwrap_or(&hex), b" missing", out);
            }
        }
        let mut line = Vec::with_capacity(128);
        self.format.expand(&Fields { id, info: info.as_ref(), rest }, &mut line);
        line.push(self.delimiter);
        out.push(line);
        if contents {
            let object = if self.exact {
                store.read_exact(id, self.names.resolver)?
            } else {
                store.read(id, self.names.resolver)?
            };
            let object = object.ok_or_else(|| CatFileError::git(format!("object {id} disappeared")))?;
            out.push_shared(object.data);
            out.push(vec![self.delimiter]);
        }
        out.end_answer()?;
        Ok(())
    }

    /// `--batch-all-objects`: every object once, sorted by id, or in storage order with `--unordered`.
    fn all_objects(&mut self, unordered: bool, contents: bool, out: &mut Output) -> Result<(), CatFileError> {
        let store = self.names.store;
        if unordered {
            let mut objects = Vec::new();
            store.for_each_object_unordered(|id, place| objects.push((id, place)));
            for (id, place) in objects {
                self.object(&id, None, Some(place), None, contents, out)?;
            }
        } else {
            for id in store.all_objects() {
                self.object(&id, None, None, None, contents, out)?;
            }
        }
        Ok(())
    }
}

/// Splits a `--batch-command` line into its command and argument, with git's messages.
fn parse_command(line: &[u8]) -> Result<(&'static str, &[u8]), CatFileError> {
    for (command, takes_argument) in [("contents", true), ("info", true), ("flush", false)] {
        let Some(after) = line.strip_prefix(command.as_bytes()) else { continue };
        if takes_argument {
            return match after.strip_prefix(b" ") {
                Some(argument) => Ok((command, argument)),
                None => Err(CatFileError::git(format!("{command} requires arguments"))),
            };
        }
        if !after.is_empty() {
            return Err(CatFileError::git(format!("{command} takes no arguments")));
        }
        return Ok((command, b""));
    }
    Err(CatFileError::git(format!("unknown command: '{}'", Bytes(line))))
}

/// git's `git_env_bool`, for the values a test sets.
fn git_env_bool(value: &std::ffi::OsStr) -> bool {
    gix_config::Boolean::try_from(value.to_owned()).is_ok_and(|b| b.0)
}
