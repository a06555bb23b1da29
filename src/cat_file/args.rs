//! `cat-file`'s command line, parsed as git's parse-options parses it (bundled short flags, `--opt=value`,
//! `--no-opt`, `--` ending options, options after arguments), with git's messages and status 129 for
//! usage errors. clap is not used here because the messages and the exit statuses are git's.
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use super::filter::FilterSpec;

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
/// option), or `fatal: <message>` (`usage_msg_opt`) and the usage.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsageError {
    #[error("error: {0}")]
    Error(String),
    /// An unknown option or switch: the message and the usage.
    #[error("error: {0}")]
    Unknown(String),
    #[error("fatal: {0}")]
    Fatal(String),
    /// `-h`: the usage on stdout.
    #[error("help")]
    Help,
    /// An option cat-blobd does not implement: the message alone.
    #[error("fatal: {0}")]
    Unsupported(String),
    /// git's `die()` during the option checks: the message alone, exit 128.
    #[error("fatal: {0}")]
    Die(String),
    /// No arguments at all: the usage alone on stderr.
    #[error("usage")]
    Usage,
    /// git's `usage()`/`usagef()`: `usage: <message>` alone, exit 129.
    #[error("usage: {0}")]
    Short(String),
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
            let name = String::from_utf8_lossy(name).into_owned();
            let value = match (name.as_str(), value) {
                ("path" | "filter", None) => {
                    Some(args.next().ok_or_else(|| error(format!("option `{name}' requires a value")))?)
                }
                (_, value) => value,
            };
            parsed.long(&name, value)?;
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

fn error(message: impl Into<String>) -> UsageError {
    UsageError::Error(message.into())
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
            other => return Err(UsageError::Unknown(format!("unknown switch `{}'", other as char))),
        }
        Ok(())
    }

    fn long(&mut self, name: &str, value: Option<Vec<u8>>) -> Result<(), UsageError> {
        let flag = |value: &Option<Vec<u8>>| -> Result<bool, UsageError> {
            match value {
                None => Ok(true),
                Some(_) => Err(error(format!("option `{name}' takes no value"))),
            }
        };
        match name {
            "batch" => self.batch_mode(BatchMode::Contents, value),
            "batch-check" => self.batch_mode(BatchMode::Info, value),
            "batch-command" => self.batch_mode(BatchMode::Command, value),
            "batch-all-objects" => flag(&value).and_then(|_| self.cmdmode(CmdMode::AllObjects)),
            "textconv" => flag(&value).and_then(|_| self.cmdmode(CmdMode::Textconv)),
            "filters" => flag(&value).and_then(|_| self.cmdmode(CmdMode::Filters)),
            "path" | "no-path" => {
                self.path = value.filter(|_| name == "path");
                Ok(())
            }
            "filter" => {
                let spec = value.expect("parse gives `--filter` its value");
                self.filter = self.filter.with(&spec).map_err(|err| UsageError::Die(err.0))?;
                Ok(())
            }
            "no-filter" => flag(&value).map(|_| self.filter = FilterSpec::None),
            "help-all" => Err(UsageError::Help),
            _ => {
                let (negated, base) = match name.strip_prefix("no-") {
                    Some(base) => (true, base),
                    None => (false, name),
                };
                let target = match base {
                    "buffer" => {
                        self.buffer = Some(!negated && flag(&value)?);
                        return Ok(());
                    }
                    // A no-op since git 2.50, hidden from the usage.
                    "allow-unknown-type" => &mut false,
                    "use-mailmap" | "mailmap" => &mut self.mailmap,
                    "follow-symlinks" => &mut self.follow_symlinks,
                    "unordered" => &mut self.unordered,
                    _ => return Err(UsageError::Unknown(format!("unknown option `{name}'"))),
                };
                *target = !negated && flag(&value)?;
                Ok(())
            }
        }
    }

    fn cmdmode(&mut self, mode: CmdMode) -> Result<(), UsageError> {
        match self.mode {
            Some(previous) if previous != mode => {
                Err(error(format!("options '{}' and '{}' cannot be used together", mode.flag(), previous.flag())))
            }
            _ => {
                self.mode = Some(mode);
                Ok(())
            }
        }
    }

    fn batch_mode(&mut self, mode: BatchMode, format: Option<Vec<u8>>) -> Result<(), UsageError> {
        if self.batch.is_some() {
            return Err(error("only one batch option may be specified"));
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
        assert_eq!(
            parse_str(&["-t", "-p"]).unwrap_err(),
            UsageError::Error("options '-p' and '-t' cannot be used together".into())
        );
        assert_eq!(parse_str(&["-q"]).unwrap_err(), UsageError::Unknown("unknown switch `q'".into()));
        assert_eq!(parse_str(&["--bogus"]).unwrap_err(), UsageError::Unknown("unknown option `bogus'".into()));
        assert_eq!(parse_str(&["--", "-p"]).unwrap().rest, vec![b"-p".to_vec()]);
    }
}
