//! `cat-file`'s command line, parsed as git's parse-options parses it (bundled short flags, `--opt=value`,
//! `--no-opt`, `--` ending options, options after arguments), with git's messages and status 129 for
//! usage errors. clap is not used here because the messages and the exit statuses are git's.
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use super::filter::{FilterSpec, SpecError};
use crate::fatal::Bytes;

/// `-e`, `-p`, `-t`, `-s`, `--batch-all-objects`, `--textconv`, `--filters`: git's `OPT_CMDMODE`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmdMode {
    Exists,
    Print,
    Type,
    Size,
    AllObjects,
    Textconv,
    Filters,
}

impl CmdMode {
    /// The flag as git names it in messages.
    pub fn flag(self) -> &'static str {
        match self {
            CmdMode::Exists => "-e",
            CmdMode::Print => "-p",
            CmdMode::Type => "-t",
            CmdMode::Size => "-s",
            CmdMode::AllObjects => "--batch-all-objects",
            CmdMode::Textconv => "--textconv",
            CmdMode::Filters => "--filters",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchMode {
    Contents,
    Info,
    Command,
}

#[derive(Debug, Clone, Default)]
pub struct Args {
    pub mode: Option<CmdMode>,
    pub batch: Option<(BatchMode, Option<Vec<u8>>)>,
    pub mailmap: bool,
    /// `--filter=<spec>`, `--no-filter`.
    pub filter: FilterSpec,
    /// `-z`: NUL-terminated input.
    pub nul_input: bool,
    /// `-Z`: NUL-terminated input and output.
    pub nul: bool,
    pub buffer: Option<bool>,
    pub follow_symlinks: bool,
    pub unordered: bool,
    pub path: Option<Vec<u8>>,
    pub rest: Vec<Vec<u8>>,
}

/// A usage error, exit 129: parse-options' own `error: <message>` (alone, or with the usage after an unknown
/// option), or `fatal: <message>` (`usage_msg_opt`) and the usage. Each says what git says, word for word.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsageError {
    #[error("error: option `{}' requires a value", Bytes(.0))]
    RequiresValue(Vec<u8>),
    #[error("error: option `{}' takes no value", Bytes(.0))]
    TakesNoValue(Vec<u8>),
    #[error("error: options '{0}' and '{1}' cannot be used together")]
    Together(&'static str, &'static str),
    #[error("error: only one batch option may be specified")]
    OneBatch,
    /// An unknown switch: the message and the usage.
    #[error("error: unknown switch `{}'", char::from(*.0))]
    UnknownSwitch(u8),
    /// An unknown option: the message and the usage.
    #[error("error: unknown option `{}'", Bytes(.0))]
    UnknownOption(Vec<u8>),
    /// git's checks after parsing (`usage_msg_opt`): the message and the usage.
    #[error("fatal: {0}")]
    Fatal(Misuse),
    /// `-h`: the usage on stdout.
    #[error("help")]
    Help,
    /// An option cat-blobd does not implement (`--textconv`, `--filters`): the message alone.
    #[error("fatal: cat-blobd cat-file does not support {0}: it needs a work tree or attributes")]
    Unsupported(&'static str),
    /// git's `die()` on a filter spec during the option checks: the message alone, exit 128.
    #[error("fatal: {}", .0.0)]
    Die(SpecError),
    /// No arguments at all: the usage alone on stderr.
    #[error("usage")]
    Usage,
    /// git's `usage()`: `usage: <message>` alone, exit 129.
    #[error("usage: objects filter only supported in batch mode")]
    FilterNeedsBatch,
    #[error("usage: objects filter not supported: '{0}'")]
    FilterRefused(&'static str),
}

/// The option combinations git's checks after parsing refuse, in its words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Misuse {
    #[error("'--path=<path|tree-ish>' needs '--filters' or '--textconv'")]
    PathNeedsTransform,
    #[error("'{0}' requires a batch mode")]
    RequiresBatch(&'static str),
    #[error("'{0}' is incompatible with batch mode")]
    IncompatibleWithBatch(&'static str),
    #[error("batch modes take no arguments")]
    BatchTakesNoArguments,
    #[error("<rev> required with '{0}'")]
    RevRequired(&'static str),
    #[error("<object> required with '{0}'")]
    ObjectRequired(&'static str),
    #[error("too many arguments")]
    TooMany,
    #[error("only two arguments allowed in <type> <object> mode, not {0}")]
    OnlyTwo(usize),
}

/// git 2.55's usage and options, as every usage error prints them after its message.
pub const USAGE: &str = "usage: git cat-file <type> <object>
   or: git cat-file (-e | -p | -t | -s) <object>
   or: git cat-file (--textconv | --filters)
                    [<rev>:<path|tree-ish> | --path=<path|tree-ish> <rev>]
   or: git cat-file (--batch | --batch-check | --batch-command) [--batch-all-objects]
                    [--buffer] [--follow-symlinks] [--unordered]
                    [--textconv | --filters] [-Z]

Check object existence or emit object contents
    -e                    check if <object> exists
    -p                    pretty-print <object> content

Emit [broken] object attributes
    -t                    show object type (one of 'blob', 'tree', 'commit', 'tag', ...)
    -s                    show object size
    --[no-]use-mailmap    use mail map file
    --[no-]mailmap ...    alias of --use-mailmap

Batch objects requested on stdin (or --batch-all-objects)
    --batch[=<format>]    show full <object> or <rev> contents
    --batch-check[=<format>]
                          like --batch, but don't emit <contents>
    -Z                    stdin and stdout is NUL-terminated
    --batch-command[=<format>]
                          read commands from stdin
    --batch-all-objects   with --batch[-check]: ignores stdin, batches all known objects

Change or optimize batch output
    --[no-]buffer         buffer --batch output
    --[no-]follow-symlinks
                          follow in-tree symlinks
    --[no-]unordered      do not order objects before emitting them

Emit object (blob or tree) with conversion or filter (stand-alone, or with batch)
    --textconv            run textconv on object's content
    --filters             run filters on object's content
    --[no-]path blob|tree use a <path> for (--textconv | --filters); Not with 'batch'
    --[no-]filter <args>  object filtering

";

/// What `-h` and an unknown option print: the same, but for one line (git shows the alias's argument only once
/// parsing is over).
pub fn help() -> String {
    USAGE.replacen("--[no-]mailmap ...    ", "--[no-]mailmap        ", 1)
}

/// Parses the arguments after `cat-file`.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Args, UsageError> {
    let mut parsed = Args::default();
    let mut args = args.into_iter().map(OsString::into_vec);
    while let Some(arg) = args.next() {
        if arg == b"--" {
            parsed.rest.extend(args.by_ref());
            break;
        }
        if let Some(long) = arg.strip_prefix(b"--") {
            let (name, value) = match memchr::memchr(b'=', long) {
                Some(eq) => (&long[..eq], Some(long[eq + 1..].to_vec())),
                None => (long, None),
            };
            let value = match (name, value) {
                (b"path" | b"filter", None) => {
                    Some(args.next().ok_or_else(|| UsageError::RequiresValue(name.to_vec()))?)
                }
                (_, value) => value,
            };
            parsed.long(name, value)?;
        } else if arg.len() > 1 && arg[0] == b'-' {
            for &flag in &arg[1..] {
                parsed.short(flag)?;
            }
        } else {
            parsed.rest.push(arg);
        }
    }
    Ok(parsed)
}

impl Args {
    fn short(&mut self, flag: u8) -> Result<(), UsageError> {
        match flag {
            b'e' => self.cmdmode(CmdMode::Exists)?,
            b'p' => self.cmdmode(CmdMode::Print)?,
            b't' => self.cmdmode(CmdMode::Type)?,
            b's' => self.cmdmode(CmdMode::Size)?,
            b'z' => self.nul_input = true,
            b'Z' => self.nul = true,
            b'h' => return Err(UsageError::Help),
            other => return Err(UsageError::UnknownSwitch(other)),
        }
        Ok(())
    }

    fn long(&mut self, name: &[u8], value: Option<Vec<u8>>) -> Result<(), UsageError> {
        let flag = |value: &Option<Vec<u8>>| -> Result<bool, UsageError> {
            match value {
                None => Ok(true),
                Some(_) => Err(UsageError::TakesNoValue(name.to_vec())),
            }
        };
        match name {
            b"batch" => self.batch_mode(BatchMode::Contents, value),
            b"batch-check" => self.batch_mode(BatchMode::Info, value),
            b"batch-command" => self.batch_mode(BatchMode::Command, value),
            b"batch-all-objects" => flag(&value).and_then(|_| self.cmdmode(CmdMode::AllObjects)),
            b"textconv" => flag(&value).and_then(|_| self.cmdmode(CmdMode::Textconv)),
            b"filters" => flag(&value).and_then(|_| self.cmdmode(CmdMode::Filters)),
            b"path" | b"no-path" => {
                self.path = value.filter(|_| name == b"path");
                Ok(())
            }
            b"filter" => {
                let spec = value.expect("parse gives `--filter` its value");
                self.filter = self.filter.with(&spec).map_err(UsageError::Die)?;
                Ok(())
            }
            b"no-filter" => flag(&value).map(|_| self.filter = FilterSpec::None),
            b"help-all" => Err(UsageError::Help),
            _ => {
                let (negated, base) = match name.strip_prefix(b"no-") {
                    Some(base) => (true, base),
                    None => (false, name),
                };
                let target = match base {
                    b"buffer" => {
                        self.buffer = Some(!negated && flag(&value)?);
                        return Ok(());
                    }
                    // A no-op since git 2.50, hidden from the usage.
                    b"allow-unknown-type" => &mut false,
                    b"use-mailmap" | b"mailmap" => &mut self.mailmap,
                    b"follow-symlinks" => &mut self.follow_symlinks,
                    b"unordered" => &mut self.unordered,
                    _ => return Err(UsageError::UnknownOption(name.to_vec())),
                };
                *target = !negated && flag(&value)?;
                Ok(())
            }
        }
    }

    fn cmdmode(&mut self, mode: CmdMode) -> Result<(), UsageError> {
        match self.mode {
            Some(previous) if previous != mode => Err(UsageError::Together(mode.flag(), previous.flag())),
            _ => {
                self.mode = Some(mode);
                Ok(())
            }
        }
    }

    fn batch_mode(&mut self, mode: BatchMode, format: Option<Vec<u8>>) -> Result<(), UsageError> {
        if self.batch.is_some() {
            return Err(UsageError::OneBatch);
        }
        self.batch = Some((mode, format));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(args: &[&str]) -> Result<Args, UsageError> {
        parse(args.iter().map(OsString::from))
    }

    #[test]
    fn git_style_flags() {
        let args = parse_str(&["--batch=%(objectname)", "-Z", "--buffer", "--no-buffer", "x"]).unwrap();
        assert_eq!(args.batch, Some((BatchMode::Contents, Some(b"%(objectname)".to_vec()))));
        assert!(args.nul);
        assert_eq!(args.buffer, Some(false));
        assert_eq!(args.rest, vec![b"x".to_vec()]);
        let message = |args: &[&str]| parse_str(args).unwrap_err().to_string();
        assert_eq!(message(&["-t", "-p"]), "error: options '-p' and '-t' cannot be used together");
        assert_eq!(message(&["-q"]), "error: unknown switch `q'");
        assert_eq!(message(&["--bogus"]), "error: unknown option `bogus'");
        // Not UTF-8: the option's bytes come back as they were given.
        let bogus = parse(vec![OsString::from_vec(b"--bogus\xff".to_vec())]).unwrap_err().to_string();
        assert_eq!(crate::fatal::message_bytes(&bogus), b"error: unknown option `bogus\xff'");
        assert_eq!(message(&["--buffer=1"]), "error: option `buffer' takes no value");
        assert_eq!(message(&["--path"]), "error: option `path' requires a value");
        assert_eq!(parse_str(&["--", "-p"]).unwrap().rest, vec![b"-p".to_vec()]);
    }
}
