//! The command line. cat-blobd's own flags go through clap; every other `--flag` is git fast-import's and is
//! kept, in order, for the session to apply lazily exactly as git's `parse_argv` does (after the stream's
//! leading `feature`/`option` lines), so cat-blobd can take `git fast-import`'s place in a pipeline.
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use clap::Parser;

/// Answers git fast-import read commands (cat-blob, get-mark, ls) from an existing repository.
///
/// Reads a fast-import command stream on stdin and writes each response to the cat-blob fd, byte for byte
/// like `git fast-import --cat-blob-fd=<fd>`.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "cat-blobd",
    version,
    after_help = "git fast-import's flags are accepted too and behave as in git: --cat-blob-fd=<fd> (also \
                  --cat-blob-fd <fd>), --done, --quiet, --stats, --import-marks=<f>, \
                  --import-marks-if-exists=<f>, --export-marks=<f>, --relative-marks, --no-relative-marks, \
                  --allow-unsafe-features, --force, --date-format=<f>, --max-pack-size=<n>, \
                  --big-file-threshold=<n>, --depth=<n>, --active-branches=<n>, --export-pack-edges=<f>, \
                  --signed-commits=<mode>, --signed-tags=<mode>, --rewrite-submodules-from=<name>:<f>, \
                  --rewrite-submodules-to=<name>:<f>. Options that only matter when writing a pack are \
                  validated and ignored."
)]
pub struct Cli {
    /// The repository's git directory (else GIT_DIR, else found by walking up from the current directory).
    #[arg(long, value_name = "DIR")]
    pub git_dir: Option<PathBuf>,

    /// Bytes of delta bases to keep (like core.deltaBaseCacheLimit), plus a quarter of that for inflated deltas.
    #[arg(long, value_name = "BYTES", default_value = "96m", value_parser = parse_size)]
    pub delta_cache_size: u64,

    /// Bytes of blobs defined in the stream (`blob` commands) to keep in memory; the rest goes to a
    /// temporary file.
    #[arg(long, value_name = "BYTES", default_value = "256m", value_parser = parse_size)]
    pub stream_blob_memory: u64,

    /// Distinct blobs a stream may define (`blob` commands; each takes about 100 bytes of memory to find it
    /// by); a stream that defines more dies with `fatal:`.
    #[arg(long, value_name = "N", default_value_t = 20_000_000)]
    pub max_stream_blobs: u64,

    /// Bytes of a stream's blobs that may go to its temporary file (past --stream-blob-memory); a stream that
    /// spills more dies with `fatal:`.
    #[arg(long, value_name = "BYTES", default_value = "1024g", value_parser = parse_size)]
    pub max_spill_bytes: u64,

    /// Threads that find, inflate and delta-resolve objects (default: the available cores).
    #[arg(long, value_name = "N", env = "CAT_BLOBD_THREADS")]
    pub threads: Option<usize>,

    /// Requests in flight at most; memory stays bounded by this and --window-bytes.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub window: usize,

    /// Bytes of resolved responses waiting to be written at most.
    #[arg(long, value_name = "BYTES", default_value = "64m", value_parser = parse_size)]
    pub window_bytes: u64,

    /// cat-blob requests of a stream answered one by one before its resolver threads start (default: 0, and 16
    /// for `serve`, whose streams are often short and whose memory is warm).
    #[arg(long, value_name = "N", env = "CAT_BLOBD_INLINE_REQUESTS")]
    pub inline_requests: Option<usize>,

    /// Largest object or delta result to read; a pack or loose object that declares more is damage, refused
    /// before allocating (GIT_ALLOC_LIMIT lowers it further, as in git).
    #[arg(long, value_name = "BYTES", default_value = "4g", value_parser = parse_size)]
    pub max_object_size: u64,

    /// Refuse commands that write history (commit, tag, reset, alias) instead of handing them to git
    /// fast-import, and never start git.
    #[arg(long)]
    pub read_only: bool,
}

/// The whole command line: cat-blobd's flags, and git fast-import's in their original order.
#[derive(Debug)]
pub struct Args {
    pub cli: Cli,
    pub fast_import: Vec<Vec<u8>>,
}

/// Flags that belong to cat-blobd itself (each takes a value, as `--flag=v` or `--flag v`).
const OWN_VALUE_FLAGS: [&str; 10] = [
    "--git-dir",
    "--delta-cache-size",
    "--stream-blob-memory",
    "--max-stream-blobs",
    "--max-spill-bytes",
    "--threads",
    "--window",
    "--window-bytes",
    "--inline-requests",
    "--max-object-size",
];

/// Whether `arg` is one of cat-blobd's own flags (or `--help`/`--version`), which git fast-import does not take:
/// the shim leaves a `git fast-import` that has one to git.
pub fn is_own_flag(arg: &[u8]) -> bool {
    let name = arg.split(|&b| b == b'=').next().unwrap_or_default();
    OWN_VALUE_FLAGS.iter().any(|flag| flag.as_bytes() == name)
        || matches!(arg, b"--read-only" | b"--help" | b"--version" | b"-V")
}

/// Splits `args` (without the program name) between clap and git's flag list.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Args, clap::Error> {
    let (own, fast_import) = split("cat-blobd", args, &OWN_VALUE_FLAGS, &["--read-only"]);
    Ok(Args { cli: Cli::try_parse_from(own)?, fast_import })
}

/// Splits `args` between `own_value_flags` and `own_switches` (plus `--help`, `--version`), which go to clap after
/// `program`, and git fast-import's flags, kept in order.
fn split(
    program: &str,
    args: impl IntoIterator<Item = OsString>,
    own_value_flags: &[&str],
    own_switches: &[&str],
) -> (Vec<OsString>, Vec<Vec<u8>>) {
    let mut own = vec![OsString::from(program)];
    let mut fast_import = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy();
        let name = text.split('=').next().unwrap_or_default();
        if own_value_flags.contains(&name) {
            let has_value = text.contains('=');
            own.push(arg);
            if !has_value && let Some(value) = args.next() {
                own.push(value);
            }
        } else if matches!(&*text, "--help" | "--version" | "-V") || own_switches.contains(&&*text) {
            own.push(arg);
        } else if text == "--cat-blob-fd"
            && let Some(value) = args.next()
        {
            // git only takes `--cat-blob-fd=<fd>`; the two-word form is a convenience.
            let mut joined = b"--cat-blob-fd=".to_vec();
            joined.extend_from_slice(&value.into_vec());
            fast_import.push(joined);
        } else {
            fast_import.push(arg.into_vec());
        }
    }
    (own, fast_import)
}

/// What the first argument selects. Without a subcommand word, cat-blobd runs one stream on stdin (git
/// fast-import's flags all start with `-`, so no word was ever valid there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Stream,
    /// `cat-blobd cat-file …`: git cat-file's flags and answers.
    CatFile,
    Serve,
    Connect,
    Stats,
    /// `cat-blobd shim <dir>`: makes the `git` link (see `crate::shim`).
    Shim,
}

impl Mode {
    pub fn of(first_arg: Option<&OsString>) -> Mode {
        match first_arg.and_then(|arg| arg.to_str()) {
            Some("serve") => Mode::Serve,
            Some("connect") => Mode::Connect,
            Some("stats") => Mode::Stats,
            Some("shim") => Mode::Shim,
            Some(CAT_FILE) => Mode::CatFile,
            _ => Mode::Stream,
        }
    }
}

/// Serves fast-import streams over a Unix socket, all on one repository, one pack mapping and one delta cache.
///
/// Clients are `cat-blobd connect` (a drop-in for `cat-blobd` in a pipeline) or any program that writes a
/// stream on the socket and reads the responses from it (e.g. `socat - UNIX-CONNECT:PATH`). SIGTERM or SIGINT
/// stop accepting, let open streams finish for --grace seconds, then close them and exit 0.
#[derive(Debug, Parser)]
#[command(
    name = "cat-blobd serve",
    version,
    after_help = "git fast-import's flags come with each stream (from `cat-blobd connect`), not here. Logs one \
                  line per connection on stderr; `cat-blobd stats --socket PATH` prints live counters."
)]
pub struct ServeCli {
    /// The Unix socket to listen on. A stale socket file is replaced; one a live daemon answers on is not.
    #[arg(long, value_name = "PATH")]
    pub socket: PathBuf,

    /// Permissions of the socket file, in octal.
    #[arg(long, value_name = "MODE", default_value = "0600", value_parser = parse_mode)]
    pub socket_mode: u32,

    /// Streams served at once; further streams wait for a slot (connections that have not said what they are, and
    /// `stats`, take none).
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub max_connections: usize,

    /// Refuse clients past --max-connections with a `fatal:` line instead of letting them wait.
    #[arg(long)]
    pub refuse_when_full: bool,

    /// Hand the writing commands of clients of the daemon's own uid to git fast-import (write-through), as
    /// `cat-blobd` alone does; without it, and for other uids, they are refused.
    #[arg(long)]
    pub allow_writes: bool,

    /// Also admit this uid (the daemon's own uid always is). Repeatable.
    #[arg(long = "allow-uid", value_name = "UID")]
    pub allow_uid: Vec<u32>,

    /// Seconds open streams may go on after SIGTERM/SIGINT before they are cut.
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_seconds)]
    pub grace: std::time::Duration,

    /// Seconds a client may take to say what it is (its first byte, or its whole `connect` hello); a client that
    /// says nothing in time gets a `fatal:` line and is closed.
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_seconds)]
    pub hello_timeout: std::time::Duration,

    /// Marks one stream may define (20 to 60 bytes each); a stream that defines more dies with `fatal:`.
    #[arg(long, value_name = "N", default_value_t = 10_000_000)]
    pub max_marks: u64,

    /// Marks all open streams together may hold; the stream that would pass it dies with `fatal:`.
    #[arg(long, value_name = "N", default_value_t = 20_000_000)]
    pub max_marks_total: u64,

    /// Blobs all open streams together may define (see --max-stream-blobs); the stream that would pass it dies
    /// with `fatal:`.
    #[arg(long, value_name = "N", default_value_t = 40_000_000)]
    pub max_stream_blobs_total: u64,

    /// Bytes of blobs all open streams together may spill to their temporary files (see --max-spill-bytes); the
    /// stream that would pass it dies with `fatal:`.
    #[arg(long, value_name = "BYTES", default_value = "2048g", value_parser = parse_size)]
    pub max_spill_bytes_total: u64,

    /// One line per connection on stderr: `text` (key=value) or `json`.
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub log_format: LogFormat,

    /// Serve every repository under DIR (bare ones, work trees' `.git`, linked worktrees, with alternates under
    /// DIR), each client's found as git finds it from the client, instead of one repository.
    #[arg(long, value_name = "DIR", conflicts_with = "git_dir")]
    pub root: Option<PathBuf>,

    /// With --root: bytes of delta-base caches over all open repositories and of the pack indexes mapped by those
    /// with clients; past it the repositories idle longest are closed.
    #[arg(long, value_name = "BYTES", default_value = "1g", value_parser = parse_size, requires = "root")]
    pub memory_budget: u64,

    /// Serve Prometheus metrics at http://ADDR/metrics (a loopback address, e.g. 127.0.0.1:9236).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,

    /// With --root: repositories open at once; past it the repositories idle longest are closed.
    #[arg(long, value_name = "N", default_value_t = 1000, requires = "root")]
    pub max_open_repositories: usize,

    #[command(flatten)]
    pub stream: Cli,
}

/// Runs one fast-import stream through a `cat-blobd serve` daemon, as a drop-in for `cat-blobd`; or, with `cat-file`
/// after connect's own flags, one `cat-blobd cat-file` run.
///
/// Hands this process's stdin, stdout, stderr (and the fd --cat-blob-fd names) and its working directory to the
/// daemon, which runs the stream straight on them; exits with the stream's status.
/// The repository, cat-blobd's own settings and the environment are the daemon's.
#[derive(Debug, Parser)]
#[command(
    name = "cat-blobd connect",
    version,
    after_help = "Every other flag is git fast-import's, passed to the daemon as `cat-blobd` would take it. \
                  `cat-file` after connect's own flags runs git cat-file's front end instead: everything after it \
                  is git cat-file's, as for `cat-blobd cat-file`."
)]
pub struct ConnectCli {
    /// The daemon's socket.
    #[arg(long, value_name = "PATH")]
    pub socket: PathBuf,

    /// Trust a daemon running as this uid (by default only this process's own uid and root are: the daemon gets
    /// this process's stdin, stdout, stderr and working directory).
    #[arg(long, value_name = "UID")]
    pub server_uid: Option<u32>,
}

/// `cat-blobd connect`'s command line: the socket, and the stream's command line as the daemon runs it.
#[derive(Debug)]
pub struct ConnectArgs {
    pub cli: ConnectCli,
    /// git fast-import's flags in order; or the word `cat-file` and git cat-file's arguments, as given.
    pub stream: Vec<Vec<u8>>,
}

/// The word that selects the cat-file front end, after `cat-blobd` or after `cat-blobd connect`'s own flags: the
/// word a hello's command line starts with for that front end.
/// The daemon's `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// `2026-01-02T03:04:05.678Z connection conn=1 kind=connect uid=1000 … outcome=ok`
    #[default]
    Text,
    /// `{"ts":"2026-01-02T03:04:05.678Z","event":"connection","conn":1,…}`
    Json,
}

/// A `--log-format` that is neither.
#[derive(Debug, thiserror::Error)]
#[error("invalid log format '{0}': expected text or json")]
pub struct LogFormatError(String);

impl std::str::FromStr for LogFormat {
    type Err = LogFormatError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err(LogFormatError(s.to_owned())),
        }
    }
}

pub use crate::wire::protocol::CAT_FILE;

/// Splits `cat-blobd connect`'s arguments (after the word `connect`). The usual command line (`--socket`, perhaps
/// `--server-uid`, and git's flags) is read by hand: building clap's parser is most of what `connect` itself costs
/// before its hello (see `benches/daemon.sh`). Anything else (`--help`, `--version`, one of the daemon's own flags,
/// a missing, repeated or empty value) goes through clap, for its messages. A first argument `cat-file` after
/// connect's own flags ends them: it and everything after it are the cat-file run's, untouched.
pub fn parse_connect(args: impl IntoIterator<Item = OsString>) -> Result<ConnectArgs, clap::Error> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    let cat_file = cat_file_at(&args).map(|at| args.split_off(at));
    let mut parsed = match parse_connect_by_hand(&args) {
        Some(parsed) => parsed,
        None => parse_connect_with_clap(args)?,
    };
    if let Some(cat_file) = cat_file {
        parsed.stream = cat_file.into_iter().map(OsString::into_vec).collect();
    }
    Ok(parsed)
}

/// Where `cat-file` is, if it is the first argument that is not one of connect's own flags (or their values).
fn cat_file_at(args: &[OsString]) -> Option<usize> {
    let mut at = 0;
    while let Some(arg) = args.get(at) {
        let bytes = arg.as_bytes();
        let name = bytes.split(|&b| b == b'=').next().unwrap_or_default();
        let takes_value = [b"--socket".as_slice(), b"--server-uid"].contains(&name)
            || OWN_VALUE_FLAGS.iter().any(|flag| flag.as_bytes() == name);
        if !takes_value && !matches!(bytes, b"--help" | b"--version" | b"-V") {
            return (bytes == CAT_FILE.as_bytes()).then_some(at);
        }
        at += if takes_value && name.len() == bytes.len() { 2 } else { 1 };
    }
    None
}

fn parse_connect_with_clap(args: Vec<OsString>) -> Result<ConnectArgs, clap::Error> {
    // cat-blobd's own flags go to clap too, which refuses them: they are the daemon's settings.
    let own_flags: Vec<&str> = OWN_VALUE_FLAGS.iter().copied().chain(["--socket", "--server-uid"]).collect();
    let (own, stream) = split("cat-blobd connect", args, &own_flags, &[]);
    Ok(ConnectArgs { cli: ConnectCli::try_parse_from(own)?, stream })
}

/// What [`parse_connect_with_clap`] gives for a command line it accepts, or `None` to let clap decide.
fn parse_connect_by_hand(args: &[OsString]) -> Option<ConnectArgs> {
    let (mut socket, mut server_uid, mut stream) = (None, None, Vec::new());
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let bytes = arg.as_bytes();
        let (name, inline) = match bytes.iter().position(|&b| b == b'=') {
            Some(at) => (&bytes[..at], Some(&bytes[at + 1..])),
            None => (bytes, None),
        };
        let mut value = || inline.or_else(|| args.next().map(|next| next.as_bytes())).filter(|v| !v.is_empty());
        match name {
            b"--socket" if socket.is_none() => socket = Some(PathBuf::from(OsStr::from_bytes(value()?))),
            b"--server-uid" if server_uid.is_none() => {
                let digits = value().filter(|v| v.iter().all(u8::is_ascii_digit))?;
                server_uid = Some(std::str::from_utf8(digits).ok()?.parse::<u32>().ok()?);
            }
            b"--socket" | b"--server-uid" | b"--help" | b"--version" | b"-V" => return None,
            _ if OWN_VALUE_FLAGS.iter().any(|flag| flag.as_bytes() == name) => return None,
            b"--cat-blob-fd" if inline.is_none() => {
                let mut joined = b"--cat-blob-fd=".to_vec();
                joined.extend_from_slice(args.next()?.as_bytes());
                stream.push(joined);
            }
            _ => stream.push(bytes.to_vec()),
        }
    }
    Some(ConnectArgs { cli: ConnectCli { socket: socket?, server_uid }, stream })
}

/// Makes DIR/git a link to this binary, which then answers as git: `git cat-file` and `git fast-import` by
/// cat-blobd, every other command by the real git (the first `git` on PATH that is not the link, or
/// CAT_BLOBD_GIT). Prints the PATH line that puts it in front.
#[derive(Debug, Parser)]
#[command(name = "cat-blobd shim", version)]
pub struct ShimCli {
    /// The directory for the link (created if missing).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// Prints a `cat-blobd serve` daemon's live counters, one `<name> <value>` per line.
#[derive(Debug, Parser)]
#[command(name = "cat-blobd stats", version)]
pub struct StatsCli {
    /// The daemon's socket.
    #[arg(long, value_name = "PATH")]
    pub socket: PathBuf,
}

/// A flag's value that does not parse (clap prints it after the flag's name).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum ValueError {
    #[error("invalid mode '{0}': expected octal permission bits such as 0600")]
    Mode(String),
    #[error("invalid duration '{0}': expected seconds, such as 10 or 0.5")]
    Seconds(String),
    #[error("invalid size '{0}': expected a number with an optional k, m or g suffix")]
    Size(String),
}

/// File permission bits in octal, at most 0777.
fn parse_mode(arg: &str) -> Result<u32, ValueError> {
    u32::from_str_radix(arg, 8).ok().filter(|mode| *mode <= 0o777).ok_or_else(|| ValueError::Mode(arg.to_owned()))
}

/// A non-negative number of seconds, fractions allowed.
fn parse_seconds(arg: &str) -> Result<std::time::Duration, ValueError> {
    arg.parse::<f64>()
        .ok()
        .and_then(|secs| std::time::Duration::try_from_secs_f64(secs).ok())
        .ok_or_else(|| ValueError::Seconds(arg.to_owned()))
}

/// A byte count as git reads sizes (`git_parse_ulong`): decimal, `0x` hex or `0` octal, with an optional unit
/// suffix `k`, `m`, `g` (powers of 1024).
fn parse_size(arg: &str) -> Result<u64, ValueError> {
    crate::git_compat::parse_ulong::git_parse_ulong(arg.as_bytes()).ok_or_else(|| ValueError::Size(arg.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(args: &[&str]) -> Args {
        parse(args.iter().map(OsString::from)).unwrap()
    }

    #[test]
    fn own_flags_go_to_clap_and_the_rest_stays_in_order() {
        let args = split(&["--quiet", "--git-dir", "/r", "--cat-blob-fd", "3", "--delta-cache-size=1m", "--done", "x"]);
        assert_eq!(args.cli.git_dir, Some(PathBuf::from("/r")));
        assert_eq!(args.cli.delta_cache_size, 1 << 20);
        let expected: Vec<&[u8]> = vec![b"--quiet", b"--cat-blob-fd=3", b"--done", b"x"];
        assert_eq!(args.fast_import, expected);
    }

    #[test]
    fn a_subcommand_word_selects_the_mode_and_flags_keep_the_stream_mode() {
        let mode = |arg: &str| Mode::of(Some(&OsString::from(arg)));
        assert_eq!(mode("serve"), Mode::Serve);
        assert_eq!(mode("connect"), Mode::Connect);
        assert_eq!(mode("stats"), Mode::Stats);
        assert_eq!(mode("cat-file"), Mode::CatFile);
        assert_eq!(mode("--quiet"), Mode::Stream);
        assert_eq!(mode("--cat-blob-fd=3"), Mode::Stream);
        assert_eq!(Mode::of(None), Mode::Stream);
    }

    #[test]
    fn connect_keeps_git_flags_in_order_and_takes_the_socket() {
        let args = parse_connect(
            ["--quiet", "--socket", "/s", "--cat-blob-fd", "3", "--export-marks=m"].into_iter().map(OsString::from),
        )
        .unwrap();
        assert_eq!(args.cli.socket, PathBuf::from("/s"));
        let expected: Vec<&[u8]> = vec![b"--quiet", b"--cat-blob-fd=3", b"--export-marks=m"];
        assert_eq!(args.stream, expected);
        assert!(parse_connect([OsString::from("--quiet")]).is_err(), "--socket is required");
        let daemon_setting = parse_connect(["--socket=/s", "--threads", "2"].into_iter().map(OsString::from));
        assert!(daemon_setting.is_err(), "--threads is the daemon's setting");
    }

    /// The hand-read command lines are read as clap reads them; the others are left to clap.
    #[test]
    fn connect_by_hand_agrees_with_clap() {
        // (command line, read by hand)
        let cases: &[(&[&str], bool)] = &[
            (&["--socket", "/s"], true),
            (&["--socket=/s", "--quiet", "--cat-blob-fd", "3", "--export-marks=m=x", "-h", "positional"], true),
            (&["--quiet", "--server-uid", "7", "--socket", "/s", "--done"], true),
            (&["--server-uid=0", "--socket=/s"], true),
            (&["--socket"], false),
            (&["--socket="], false),
            (&["--socket=/a", "--socket=/b"], false),
            (&["--server-uid=x", "--socket=/s"], false),
            (&["--server-uid=+1", "--socket=/s"], false),
            (&["--server-uid=99999999999", "--socket=/s"], false),
            (&["--socket=/s", "--threads=2"], false),
            (&["--socket=/s", "--help"], false),
            (&["--socket=/s", "--version"], false),
            (&["--quiet"], false),
            (&["--socket=/s", "--cat-blob-fd"], false),
        ];
        for (case, expect_by_hand) in cases {
            let args: Vec<OsString> = case.iter().map(OsString::from).collect();
            let by_hand = parse_connect_by_hand(&args);
            assert_eq!(by_hand.is_some(), *expect_by_hand, "{case:?}");
            if let Some(by_hand) = by_hand {
                let by_clap = parse_connect_with_clap(args).unwrap_or_else(|err| panic!("{case:?}: clap: {err}"));
                assert_eq!(by_hand.cli.socket, by_clap.cli.socket, "{case:?}");
                assert_eq!(by_hand.cli.server_uid, by_clap.cli.server_uid, "{case:?}");
                assert_eq!(by_hand.stream, by_clap.stream, "{case:?}");
            }
        }
    }

    /// `cat-file` as the first argument after connect's own flags selects cat-file, whose arguments are then all
    /// its own (connect's flags included); anywhere else it is a fast-import argument, as before.
    #[test]
    fn connect_cat_file_takes_everything_after_the_word() {
        let parse = |args: &[&str]| parse_connect(args.iter().map(OsString::from));
        let words = |args: &[&str]| args.iter().map(|arg| arg.as_bytes().to_vec()).collect::<Vec<_>>();
        let cases: &[(&[&str], &[&str])] = &[
            (&["--socket", "/s", "cat-file", "--batch"], &["cat-file", "--batch"]),
            (
                &["--socket=/s", "--server-uid", "7", "cat-file", "-p", "--socket", "x"],
                &["cat-file", "-p", "--socket", "x"],
            ),
            (
                &["--socket", "/s", "cat-file", "--cat-blob-fd", "3", "--threads=2"],
                &["cat-file", "--cat-blob-fd", "3", "--threads=2"],
            ),
            (&["--socket", "/s", "--quiet", "cat-file"], &["--quiet", "cat-file"]),
            (&["--socket", "cat-file", "x"], &["x"]),
        ];
        for (args, stream) in cases {
            assert_eq!(parse(args).unwrap().stream, words(stream), "{args:?}");
        }
        assert_eq!(
            parse(&["cat-file", "--socket", "/s"]).unwrap_err().kind(),
            clap::error::ErrorKind::MissingRequiredArgument
        );
        assert!(parse(&["--socket=/s", "--socket=/t", "cat-file"]).is_err(), "connect's own flags still go to clap");
    }

    #[test]
    fn serve_takes_the_stream_flags_too() {
        let serve = ServeCli::try_parse_from([
            "cat-blobd serve",
            "--socket=/s",
            "--socket-mode",
            "0660",
            "--allow-uid",
            "7",
            "--allow-uid=8",
            "--grace",
            "0.5",
            "--threads",
            "2",
            "--delta-cache-size",
            "1m",
            "--log-format",
            "json",
        ])
        .unwrap();
        assert_eq!(serve.socket_mode, 0o660);
        assert_eq!(serve.allow_uid, vec![7, 8]);
        assert_eq!(serve.grace, std::time::Duration::from_millis(500));
        assert_eq!(serve.stream.threads, Some(2));
        assert_eq!(serve.stream.delta_cache_size, 1 << 20);
        assert_eq!(serve.log_format, LogFormat::Json);
        assert!(ServeCli::try_parse_from(["cat-blobd serve", "--socket=/s", "--socket-mode=999"]).is_err());
        assert!(ServeCli::try_parse_from(["cat-blobd serve", "--socket=/s", "--quiet"]).is_err());
    }

    #[test]
    fn sizes_take_units() {
        assert_eq!(parse_size("96m"), Ok(96 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("0x10k"), Ok(16 << 10), "hex, as git_parse_ulong reads it");
        assert!(parse_size("lots").is_err());
    }
}
