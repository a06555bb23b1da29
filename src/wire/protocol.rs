//! The wire format between the daemon (`cat-blobd serve`) and its clients on the Unix stream socket.
//!
//! A connection is one of three kinds, told apart by its first bytes. The magic lines start with a NUL byte,
//! which no fast-import stream can start with (git would die on the first command), so the server decides on
//! the first byte for every plain client and never waits for bytes a plain client has not sent:
//!
//! ```text
//! plain stream   anything else: the connection itself is the fast-import stream (its stdin) and receives the
//!                responses and `progress` lines (its stdout). No flags, no stderr, no exit status: a fatal error
//!                is logged by the server and closes the connection after every earlier response.
//! connect        CONNECT_MAGIC + the hello below (`cat-blobd connect`), with the fds attached (SCM_RIGHTS).
//! stats          STATS_MAGIC (`cat-blobd stats`): the server writes `<name> <value>\n` lines and closes.
//! ```
//!
//! The connect hello, all integers little-endian, its fds attached (SCM_RIGHTS) to its first piece:
//!
//! ```text
//! "\0cat-blobd connect 3\n"        magic and protocol version
//! u8   n                           fds in the SCM_RIGHTS message (n <= MAX_FDS)
//! n × i32                          what each fd is, in SCM_RIGHTS order: the client's fd number (0 stdin,
//!                                  1 stdout, 2 stderr, 3.. any other fd the stream may name with
//!                                  --cat-blob-fd), or -1 (CWD_FD) for the client's working directory
//! u32  umask                       the client's umask: files the stream writes get the modes they would get
//!                                  from `cat-blobd` run in the client
//! u32  argc                        the stream's command line (argc <= MAX_ARGS): git fast-import's flags, or
//!                                  the word `cat-file` and git cat-file's arguments (see below)
//! argc × (u32 len, len bytes)      each argument, raw bytes (MAX_ARG_BYTES in all)
//! u32  envc                        the client's environment variables that choose a repository and its objects
//! envc × (u32 len, len bytes)      (CLIENT_ENV, those set), each `NAME=value`, raw bytes (in MAX_ARG_BYTES too)
//! ```
//!
//! A `--root` daemon finds the client's repository from its working directory and that environment, as git would
//! find it in the client; a single-repository daemon reads its own repository and ignores them.
//!
//! The command line is what would follow `cat-blobd` run directly, without cat-blobd's own flags (the daemon's
//! hold). A first argument `cat-file` selects the cat-file front end; git fast-import refuses any argument that is
//! not a flag, so no fast-import stream's command line ever starts with it. A plain stream is always a fast-import
//! stream: it has no command line.
//!
//! The client sends nothing more: the stream travels on the passed stdin, and the server writes the responses,
//! `progress` lines and messages straight into the passed fds. When the stream has ended, the server closes every
//! passed fd, writes one reply line and closes the connection:
//!
//! ```text
//! "exit <status>\n"     exit with this status (0, 1, 128 or 129), as `cat-blobd` run directly would
//! "signal <n>\n"        die by signal n. Only 13 (SIGPIPE): a write to the frontend failed with EPIPE, where
//!                       `cat-blobd` run directly is killed by SIGPIPE. The daemon ignores SIGPIPE (a client that
//!                       goes away must not kill it), so the client raises it on itself: a shell sees 141.
//! "fatal: <text>\n"     the daemon refused the connection or could not run the stream (wrong uid, full with
//!                       --refuse-when-full, a bad hello, shutting down): print the line, exit 128
//! "elsewhere <text>\n"  a `--root` daemon does not serve the client's repository (outside its root, or not one
//!                       it may read), before touching any fd: `connect` prints `fatal: <text>` and exits 128;
//!                       the shim answers the command itself instead
//! ```
//!
//! A refused plain client gets the same `fatal:` line on its connection before it is closed.

use crate::fatal::Bytes;

/// First bytes of a `cat-blobd connect` client.
pub const CONNECT_MAGIC: &[u8] = b"\0cat-blobd connect 3\n";
/// First (and only) bytes of a `cat-blobd stats` client.
pub const STATS_MAGIC: &[u8] = b"\0cat-blobd stats 1\n";
/// Most fds one hello may pass: stdin, stdout, stderr, 3..=9, a few named by `--cat-blob-fd`, the cwd.
pub const MAX_FDS: usize = 32;
/// Most flags one hello may carry.
pub const MAX_ARGS: usize = 4096;
/// Most bytes of flags one hello may carry.
pub const MAX_ARG_BYTES: usize = 1 << 20;
/// The fd number that stands for the client's working directory (an `O_PATH` directory fd).
pub const CWD_FD: i32 = -1;
/// The client's environment variables a hello carries: those with which git finds a repository and its objects,
/// and its work tree (whose `.mailmap` `--use-mailmap` reads; `git --bare` sets `GIT_IMPLICIT_WORK_TREE`).
pub const CLIENT_ENV: [&str; 10] = [
    "GIT_DIR",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
];
/// SIGPIPE's number, the one signal a reply may name.
pub const SIGPIPE: i32 = 13;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    #[error("the hello passes {0} fds, at most {MAX_FDS} are allowed")]
    TooManyFds(usize),
    #[error("the hello passes more than {MAX_FDS} fds")]
    FdsOverLimit,
    #[error("the hello's fds were cut short (more than {MAX_FDS} in one message, or the daemon is out of fds)")]
    ControlTruncated,
    #[error("no hello within {0:?} (--hello-timeout)")]
    HelloTimeout(std::time::Duration),
    #[error("the hello names fd {0} twice or gives an invalid number")]
    BadFdNumber(i32),
    #[error("the hello announces {expected} fds but {received} arrived")]
    FdCountMismatch { expected: usize, received: usize },
    #[error("the hello carries {0} flags, at most {MAX_ARGS} are allowed")]
    TooManyArgs(u64),
    #[error("the hello carries {0} environment variables, at most {most} are allowed", most = CLIENT_ENV.len())]
    TooManyVars(u64),
    #[error("the hello's flags are longer than {MAX_ARG_BYTES} bytes")]
    ArgsTooLong,
    #[error("unexpected bytes after the hello")]
    TrailingBytes,
    #[error("the connection ended in the middle of the hello")]
    Truncated,
    #[error("the daemon's reply is not understood: {:?}", Bytes(.0))]
    BadReply(Vec<u8>),
}

/// What the first bytes of a connection say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Plain,
    Connect,
    Stats,
    /// A strict prefix of a magic line: read more before deciding.
    Undecided,
}

/// Classifies a connection by the bytes read so far (at least one, or none at end of input).
pub fn classify(prefix: &[u8]) -> Kind {
    if prefix.first() != Some(&0) {
        return Kind::Plain;
    }
    for (magic, kind) in [(CONNECT_MAGIC, Kind::Connect), (STATS_MAGIC, Kind::Stats)] {
        if prefix.starts_with(magic) {
            return kind;
        }
        if magic.starts_with(prefix) {
            return Kind::Undecided;
        }
    }
    Kind::Plain
}

/// The connect hello, after [`CONNECT_MAGIC`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// What each passed fd is, in SCM_RIGHTS order (see the module docs).
    pub fd_numbers: Vec<i32>,
    /// The client's umask, for the files its stream writes (marks).
    pub umask: u32,
    /// The stream's command line: git fast-import's flags in order, or `cat-file` and git cat-file's arguments.
    pub args: Vec<Vec<u8>>,
    /// The client's [`CLIENT_ENV`] variables that are set, each `NAME=value`.
    pub env: Vec<Vec<u8>>,
}

impl Hello {
    /// The value of the client's environment variable `name`, if the hello carries it.
    pub fn var(&self, name: &str) -> Option<&[u8]> {
        self.env.iter().find_map(|pair| pair.strip_prefix(name.as_bytes())?.strip_prefix(b"="))
    }
}

/// The first word of a command line that selects the cat-file front end (of `cat-blobd`, and of a hello).
pub const CAT_FILE: &str = "cat-file";

/// Whether a hello's command line asks for the cat-file front end.
pub fn is_cat_file(args: &[Vec<u8>]) -> bool {
    args.first().is_some_and(|word| word == CAT_FILE.as_bytes())
}

impl Hello {
    /// The hello's bytes, magic included.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = CONNECT_MAGIC.to_vec();
        out.push(u8::try_from(self.fd_numbers.len()).expect("at most MAX_FDS fds"));
        for number in &self.fd_numbers {
            out.extend_from_slice(&number.to_le_bytes());
        }
        out.extend_from_slice(&self.umask.to_le_bytes());
        for list in [&self.args, &self.env] {
            out.extend_from_slice(&u32::try_from(list.len()).expect("few flags").to_le_bytes());
            for arg in list {
                out.extend_from_slice(&u32::try_from(arg.len()).expect("short flag").to_le_bytes());
                out.extend_from_slice(arg);
            }
        }
        out
    }

    /// Parses the hello that follows [`CONNECT_MAGIC`] in `bytes`: `Ok(None)` while more bytes are needed,
    /// else the hello and the bytes it took.
    pub fn decode(bytes: &[u8]) -> Result<Option<(Hello, usize)>, ProtocolError> {
        let mut parser = HelloParser::default();
        Ok(parser.advance(bytes)?.map(|hello| (hello, parser.at)))
    }
}

/// Parses a hello as its bytes arrive: [`HelloParser::advance`] resumes where the last call stopped, so a hello
/// sent in many small pieces costs time linear in its length, never the square of its pieces.
#[derive(Debug, Default)]
pub struct HelloParser {
    /// Bytes of the body parsed so far.
    at: usize,
    step: Step,
    fd_numbers: Vec<i32>,
    umask: u32,
    args: Vec<Vec<u8>>,
    env: Vec<Vec<u8>>,
    /// Flag and variable bytes announced so far.
    arg_bytes: usize,
}

/// What the parser reads next.
#[derive(Debug, Default, Clone, Copy)]
enum Step {
    #[default]
    FdCount,
    FdNumbers(usize),
    Umask,
    Argc,
    /// The length of the next flag, with this many flags left (this one included).
    ArgLen(u32),
    /// A flag's bytes, with this many flags left (this one included).
    Arg(usize, u32),
    Envc,
    /// As `ArgLen` and `Arg`, for the environment variables.
    VarLen(u32),
    Var(usize, u32),
}

impl HelloParser {
    /// Parses on in `body` (the bytes after the magic received so far, which start with every byte passed
    /// before): the hello once it is complete, `Ok(None)` while bytes are missing.
    pub fn advance(&mut self, body: &[u8]) -> Result<Option<Hello>, ProtocolError> {
        loop {
            let mut cursor = Cursor { bytes: body, at: self.at };
            let next = match self.step {
                Step::FdCount => cursor.take(1).map(|count| usize::from(count[0])).map(|count| {
                    if count > MAX_FDS {
                        return Err(ProtocolError::TooManyFds(count));
                    }
                    Ok(Step::FdNumbers(count))
                }),
                Step::FdNumbers(0) => Some(Ok(Step::Umask)),
                Step::FdNumbers(left) => cursor.u32().map(|number| self.fd_number(number as i32, left)),
                Step::Umask => cursor.u32().map(|umask| {
                    self.umask = umask & 0o777;
                    Ok(Step::Argc)
                }),
                Step::Argc => cursor.u32().map(|argc| {
                    if argc as usize > MAX_ARGS {
                        return Err(ProtocolError::TooManyArgs(u64::from(argc)));
                    }
                    Ok(Step::ArgLen(argc))
                }),
                Step::ArgLen(0) => Some(Ok(Step::Envc)),
                Step::ArgLen(left) => cursor.u32().map(|len| self.announce(len).map(|len| Step::Arg(len, left))),
                Step::Arg(len, left) => cursor.take(len).map(|arg| {
                    self.args.push(arg.to_vec());
                    Ok(Step::ArgLen(left - 1))
                }),
                Step::Envc => cursor.u32().map(|envc| {
                    if envc as usize > CLIENT_ENV.len() {
                        return Err(ProtocolError::TooManyVars(u64::from(envc)));
                    }
                    Ok(Step::VarLen(envc))
                }),
                Step::VarLen(0) => return Ok(Some(self.finish())),
                Step::VarLen(left) => cursor.u32().map(|len| self.announce(len).map(|len| Step::Var(len, left))),
                Step::Var(len, left) => cursor.take(len).map(|var| {
                    self.env.push(var.to_vec());
                    Ok(Step::VarLen(left - 1))
                }),
            };
            let Some(next) = next else { return Ok(None) };
            self.step = next?;
            self.at = cursor.at;
        }
    }

    /// Counts a flag or variable of `len` bytes against [`MAX_ARG_BYTES`].
    fn announce(&mut self, len: u32) -> Result<usize, ProtocolError> {
        self.arg_bytes = self.arg_bytes.saturating_add(len as usize);
        if self.arg_bytes > MAX_ARG_BYTES {
            return Err(ProtocolError::ArgsTooLong);
        }
        Ok(len as usize)
    }

    fn fd_number(&mut self, number: i32, left: usize) -> Result<Step, ProtocolError> {
        if number < CWD_FD || self.fd_numbers.contains(&number) {
            return Err(ProtocolError::BadFdNumber(number));
        }
        self.fd_numbers.push(number);
        Ok(Step::FdNumbers(left - 1))
    }

    fn finish(&mut self) -> Hello {
        Hello {
            fd_numbers: std::mem::take(&mut self.fd_numbers),
            umask: self.umask,
            args: std::mem::take(&mut self.args),
            env: std::mem::take(&mut self.env),
        }
    }

    /// Bytes of the body the hello took (once complete).
    pub fn used(&self) -> usize {
        self.at
    }
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let piece = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(piece)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
}

/// The server's last word to a `connect` client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Exit(u8),
    Signal(i32),
    /// The text after `fatal: `, without the LF.
    Fatal(Vec<u8>),
    /// Not this daemon's repository (a `--root` daemon's answer before the stream starts): why, without the LF.
    Elsewhere(Vec<u8>),
}

impl Reply {
    pub fn encode(&self) -> Vec<u8> {
        let mut line = match self {
            Reply::Exit(status) => format!("exit {status}").into_bytes(),
            Reply::Signal(signal) => format!("signal {signal}").into_bytes(),
            Reply::Fatal(text) => one_line(b"fatal: ", text),
            Reply::Elsewhere(text) => one_line(b"elsewhere ", text),
        };
        line.push(b'\n');
        line
    }

    /// Parses everything the server wrote before closing: exactly one line.
    pub fn decode(bytes: &[u8]) -> Result<Reply, ProtocolError> {
        let bad = || ProtocolError::BadReply(bytes.to_vec());
        let line = bytes.strip_suffix(b"\n").filter(|line| !line.contains(&b'\n')).ok_or_else(bad)?;
        if let Some(text) = line.strip_prefix(b"fatal: ") {
            return Ok(Reply::Fatal(text.to_vec()));
        }
        if let Some(text) = line.strip_prefix(b"elsewhere ") {
            return Ok(Reply::Elsewhere(text.to_vec()));
        }
        let text = std::str::from_utf8(line).map_err(|_| bad())?;
        if let Some(status) = text.strip_prefix("exit ") {
            return status.parse().map(Reply::Exit).map_err(|_| bad());
        }
        if let Some(signal) = text.strip_prefix("signal ") {
            return signal.parse().map(Reply::Signal).map_err(|_| bad());
        }
        Err(bad())
    }
}

/// `prefix` and `text` as one line: a LF inside the text would end the reply early.
fn one_line(prefix: &[u8], text: &[u8]) -> Vec<u8> {
    let mut line = prefix.to_vec();
    line.extend(text.iter().map(|&b| if b == b'\n' { b' ' } else { b }));
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_streams_are_recognised_on_their_first_byte() {
        assert_eq!(classify(b"c"), Kind::Plain);
        assert_eq!(classify(b"cat-blob 0000"), Kind::Plain);
        assert_eq!(classify(b""), Kind::Plain);
        assert_eq!(classify(b"\0"), Kind::Undecided);
        assert_eq!(classify(b"\0cat-blobd "), Kind::Undecided);
        assert_eq!(classify(b"\0cat-blobd s"), Kind::Undecided);
        assert_eq!(classify(b"\0cat-blobd x"), Kind::Plain);
        assert_eq!(classify(b"\0\0"), Kind::Plain);
        assert_eq!(classify(CONNECT_MAGIC), Kind::Connect);
        assert_eq!(classify(&[CONNECT_MAGIC, b"\x03"].concat()), Kind::Connect);
        assert_eq!(classify(STATS_MAGIC), Kind::Stats);
    }

    #[test]
    fn hello_round_trips_and_waits_for_all_of_its_bytes() {
        let hello = Hello {
            fd_numbers: vec![0, 1, 2, 3, CWD_FD],
            umask: 0o077,
            args: vec![b"--cat-blob-fd=3".to_vec(), b"--export-marks=\xff".to_vec(), Vec::new()],
            env: vec![b"GIT_DIR=/srv/\xff.git".to_vec(), b"GIT_NO_REPLACE_OBJECTS=".to_vec()],
        };
        assert_eq!(hello.var("GIT_DIR"), Some(&b"/srv/\xff.git"[..]));
        assert_eq!(hello.var("GIT_NO_REPLACE_OBJECTS"), Some(&b""[..]));
        assert_eq!(hello.var("GIT_COMMON_DIR"), None);
        let bytes = hello.encode();
        assert!(bytes.starts_with(CONNECT_MAGIC));
        let body = &bytes[CONNECT_MAGIC.len()..];
        for cut in 0..body.len() {
            assert_eq!(Hello::decode(&body[..cut]), Ok(None), "cut at {cut}");
        }
        assert_eq!(Hello::decode(body), Ok(Some((hello.clone(), body.len()))));
        let longer = [body, b"x"].concat();
        assert_eq!(Hello::decode(&longer), Ok(Some((hello, body.len()))));
    }

    #[test]
    fn hostile_hellos_are_refused_before_allocating() {
        assert_eq!(Hello::decode(&[200]), Err(ProtocolError::TooManyFds(200)));
        let twice = [&[2u8][..], &0i32.to_le_bytes(), &0i32.to_le_bytes()].concat();
        assert_eq!(Hello::decode(&twice), Err(ProtocolError::BadFdNumber(0)));
        let negative = [&[1u8][..], &(-7i32).to_le_bytes()].concat();
        assert_eq!(Hello::decode(&negative), Err(ProtocolError::BadFdNumber(-7)));
        let many = [&[0u8][..], &0o22u32.to_le_bytes(), &u32::MAX.to_le_bytes()].concat();
        assert_eq!(Hello::decode(&many), Err(ProtocolError::TooManyArgs(u64::from(u32::MAX))));
        let long = [&[0u8][..], &0o22u32.to_le_bytes(), &1u32.to_le_bytes(), &u32::MAX.to_le_bytes()].concat();
        assert_eq!(Hello::decode(&long), Err(ProtocolError::ArgsTooLong));
        let over = CLIENT_ENV.len() as u32 + 1;
        let vars = [&[0u8][..], &0o22u32.to_le_bytes(), &0u32.to_le_bytes(), &over.to_le_bytes()].concat();
        assert_eq!(Hello::decode(&vars), Err(ProtocolError::TooManyVars(u64::from(over))));
    }

    /// A 1 MiB hello fed one byte at a time: each call parses only what is new. (Re-parsing from the start on
    /// every piece, as the server did, is 5 × 10^11 byte steps here: the test would not end.)
    #[test]
    fn a_hello_in_a_million_pieces_is_parsed_in_one_pass() {
        let args: Vec<Vec<u8>> = (0..4000).map(|i| format!("--flag-{i}={}", "x".repeat(240)).into_bytes()).collect();
        let hello = Hello { fd_numbers: vec![0, 1, 2], umask: 0o027, args, env: Vec::new() };
        let bytes = hello.encode();
        let body = &bytes[CONNECT_MAGIC.len()..];
        assert!(body.len() > 1_000_000);
        let mut parser = HelloParser::default();
        for end in 1..body.len() {
            assert_eq!(parser.advance(&body[..end]), Ok(None));
        }
        assert_eq!(parser.advance(body), Ok(Some(hello)));
        assert_eq!(parser.used(), body.len());
    }

    #[test]
    fn replies_round_trip() {
        for reply in [
            Reply::Exit(0),
            Reply::Exit(128),
            Reply::Signal(SIGPIPE),
            Reply::Fatal(b"no \xff".to_vec()),
            Reply::Elsewhere(b"'/x' is outside the root '/srv'".to_vec()),
        ] {
            assert_eq!(Reply::decode(&reply.encode()), Ok(reply));
        }
        assert_eq!(Reply::Fatal(b"a\nb".to_vec()).encode(), b"fatal: a b\n");
        assert!(Reply::decode(b"exit 0").is_err());
        assert!(Reply::decode(b"exit 0\nexit 1\n").is_err());
        assert!(Reply::decode(b"exit 300\n").is_err());
        assert!(Reply::decode(b"").is_err());
        // The reply's bytes are kept as they came, not made into UTF-8.
        assert_eq!(Reply::decode(b"exit \xff\n"), Err(ProtocolError::BadReply(b"exit \xff\n".to_vec())));
    }
}
