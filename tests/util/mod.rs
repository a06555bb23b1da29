//! Test harness (the one differential runner is in [`case`]): fixture repositories built once per run, running cat-blobd and the git oracle on the same
//! stream, byte-exact comparisons with a readable escaped diff, and a small seeded PRNG.

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::fs;
use std::io::{self, BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

pub mod case;
pub mod cat_file;
pub mod daemon;
pub mod shim;
pub mod skip;
mod test_git;

pub use test_git::{git_255, messages_differ_in_case, test_git_path, test_git_version};

/// The binary under test.
pub const CAT_BLOBD: &str = env!("CARGO_BIN_EXE_cat-blobd");
const MAKE_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/make-fixtures.sh");
/// Checked-in outputs (see fixtures/README.md).
pub const EXPECTED_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/expected");
/// A child that runs longer than this is killed and the test fails: a hang must never become a stuck CI.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------------------------------------------
// Fixtures

/// The repositories built by `fixtures/make-fixtures.sh` (described in fixtures/README.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fixture {
    Basic,
    Refdelta,
    Multipack,
    Alternates,
    Bare,
    Empty,
}

impl Fixture {
    pub fn name(self) -> &'static str {
        match self {
            Fixture::Basic => "basic",
            Fixture::Refdelta => "refdelta",
            Fixture::Multipack => "multipack",
            Fixture::Alternates => "alternates",
            Fixture::Bare => "bare",
            Fixture::Empty => "empty",
        }
    }

    /// The repository's top directory: the work tree, or the bare repository itself.
    pub fn dir(self) -> PathBuf {
        fixtures_root().join(self.name())
    }

    pub fn git_dir(self) -> PathBuf {
        match self {
            Fixture::Bare => self.dir(),
            _ => self.dir().join(".git"),
        }
    }

    /// Every objects directory the repository reaches, its own first (absolute paths).
    pub fn object_dirs(self) -> Vec<PathBuf> {
        let mut dirs = vec![self.git_dir().join("objects")];
        if self == Fixture::Alternates {
            let chain = fixtures_root().join("alternates-chain");
            dirs.push(chain.join("mid.git/objects"));
            dirs.push(chain.join("store.git/objects"));
        }
        dirs
    }
}

/// The directory holding all fixtures, built on first use.
pub fn fixtures_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| build_with_script(MAKE_FIXTURES, "fixtures"))
}

/// The output directory of a fixture script (`bash SCRIPT OUT`; the script creates `OUT/COMPLETE` last), built
/// once and cached under `CARGO_TARGET_TMPDIR` by a hash of the script, so an edited script builds anew. Tests
/// run in parallel threads (callers keep the result behind a `OnceLock`) and possibly in parallel processes
/// (each builds into its own staging directory and renames it into place; the loser of the race uses the
/// winner's and deletes its own).
pub fn build_with_script(script_path: &str, label: &str) -> PathBuf {
    let mut script = fs::read(script_path).unwrap_or_else(|err| panic!("read {script_path}: {err}"));
    // The scripts source the shared pinned environment: a change there is a change of fixture too.
    let shared = Path::new(script_path).with_file_name("pinned-env.sh");
    script.extend(fs::read(&shared).unwrap_or_else(|err| panic!("read {}: {err}", shared.display())));
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let name = format!("{label}-{:016x}", fnv1a(&script));
    let root = tmp.join(&name);
    if root.join("COMPLETE").exists() {
        return root;
    }
    fs::create_dir_all(tmp).expect("create CARGO_TARGET_TMPDIR");
    let staging = tmp.join(format!("{name}.staging-{}", unique_suffix()));
    let out = Command::new("bash").arg(script_path).arg(&staging).stdin(Stdio::null()).output().expect("run bash");
    if !out.status.success() {
        let _ = fs::remove_dir_all(&staging);
        panic!("{script_path} failed ({}):\n{}{}", out.status, escape(&out.stdout), escape(&out.stderr));
    }
    if let Err(err) = fs::rename(&staging, &root) {
        // Another process won the race: use its output, drop ours.
        let _ = fs::remove_dir_all(&staging);
        assert!(root.join("COMPLETE").exists(), "rename {} -> {}: {err}", staging.display(), root.display());
    }
    root
}

/// The 64-bit FNV-1a hash, to name a cached build by its inputs.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn unique_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{}-{}-{nanos}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// A scratch directory under `CARGO_TARGET_TMPDIR`, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scratch").join(format!("{label}-{}", unique_suffix()));
        fs::create_dir_all(&dir).expect("create scratch dir");
        TempDir(dir)
    }

    /// A scratch directory outside any git repository (under the system temp dir), for discovery tests.
    pub fn outside_any_repo(label: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("cat-blobd-test-{label}-{}", unique_suffix()));
        fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// git queries on fixtures

/// Runs git with a pinned configuration and returns its stdout; panics if it fails.
pub fn git(git_dir: &Path, args: &[&str]) -> Vec<u8> {
    git_in(git_dir, args, b"")
}

/// [`git`] with `stdin` as its input.
pub fn git_in(git_dir: &Path, args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let mut cmd = Command::new("git");
    clean_git_env(&mut cmd);
    cmd.env("GIT_DIR", git_dir).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn git");
    let writer = crate::util::feed_stdin(&mut child, stdin.to_vec());
    let out = child.wait_with_output().expect("wait for git");
    writer.join().expect("stdin writer");
    assert!(out.status.success(), "git {args:?} in {} failed: {}", git_dir.display(), escape(&out.stderr));
    out.stdout
}

/// `git rev-parse --verify <rev>` as a hex string.
pub fn rev_parse(fixture: Fixture, rev: &str) -> String {
    let out = git(&fixture.git_dir(), &["rev-parse", "--verify", rev]);
    String::from_utf8(out).expect("hex").trim_end().to_owned()
}

/// Every object the repository reaches (alternates included): (id, type), in pack order (`--unordered`).
pub fn all_objects(fixture: Fixture) -> Vec<(String, String)> {
    let out = git(
        &fixture.git_dir(),
        &["cat-file", "--batch-all-objects", "--unordered", "--batch-check=%(objectname) %(objecttype)"],
    );
    String::from_utf8(out)
        .expect("ascii")
        .lines()
        .map(|l| {
            let (id, ty) = l.split_once(' ').expect("id type");
            (id.to_owned(), ty.to_owned())
        })
        .collect()
}

/// Every blob the repository reaches, in pack order.
pub fn blobs(fixture: Fixture) -> Vec<String> {
    all_objects(fixture).into_iter().filter(|(_, ty)| ty == "blob").map(|(id, _)| id).collect()
}

/// Blobs of `fixture` stored as loose objects, sorted (at least three: the tests that damage them need some).
pub fn loose_blobs(fixture: Fixture) -> Vec<String> {
    let blobs: std::collections::HashSet<String> = blobs(fixture).into_iter().collect();
    let mut loose = Vec::new();
    for dir in fs::read_dir(fixture.git_dir().join("objects")).expect("objects") {
        let dir = dir.expect("entry").path();
        let name = dir.file_name().expect("name").to_string_lossy().into_owned();
        if name.len() != 2 || !name.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        for file in fs::read_dir(&dir).expect("fan-out dir") {
            let id = format!("{name}{}", file.expect("entry").file_name().to_string_lossy());
            if blobs.contains(&id) {
                loose.push(id);
            }
        }
    }
    loose.sort();
    assert!(loose.len() >= 3, "{} has loose blobs", fixture.name());
    loose
}

/// Removes every `GIT_*` variable the test process may have inherited and pins git's configuration. With
/// `CAT_BLOBD_TEST_GIT` set, `git` in the command's PATH is that git (see [`test_git_path`]).
pub fn clean_git_env(cmd: &mut Command) {
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("GIT_CONFIG_NOSYSTEM", "1").env("GIT_CONFIG_GLOBAL", "/dev/null").env("LC_ALL", "C").env("LANG", "C");
    if let Some(path) = test_git_path() {
        cmd.env("PATH", path);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Streams

/// `cat-blob <id>\n` for each id.
pub fn cat_blob_stream<S: AsRef<str>>(ids: &[S]) -> Vec<u8> {
    let mut stream = Vec::new();
    for id in ids {
        stream.extend_from_slice(b"cat-blob ");
        stream.extend_from_slice(id.as_ref().as_bytes());
        stream.push(b'\n');
    }
    stream
}

/// Reads one complete response: an object's answer (`<hex> <type> <size>\n` + size bytes + `\n`, from `cat-blob`
/// or `git cat-file --batch`), or any other line (`<hex> missing`, a `get-mark` id, an `ls` entry, a `progress` line). Returns its bytes. The one response
/// parser of the tests: over a pipe (an interactive frontend) or a buffer.
pub fn read_response(from: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut reply = Vec::new();
    if from.read_until(b'\n', &mut reply)? == 0 || !reply.ends_with(b"\n") {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, format!("EOF in header {:?}", escape(&reply))));
    }
    let fields: Vec<&[u8]> = reply[..reply.len() - 1].split(|&b| b == b' ').collect();
    match fields.as_slice() {
        // An `ls` entry (`<mode> blob <hex>\t<path>`) has a mode where an object's answer has its id.
        [id, b"blob" | b"tree" | b"commit" | b"tag", size] if id.len() >= 40 => {
            let size = std::str::from_utf8(size).ok().and_then(|size| size.parse::<usize>().ok());
            let size = size.ok_or_else(|| io::Error::other(format!("bad size in {}", escape(&reply))))?;
            let start = reply.len();
            reply.resize(start + size + 1, 0);
            from.read_exact(&mut reply[start..])?;
            if reply.last() != Some(&b'\n') {
                return Err(io::Error::other("an object's payload does not end in LF"));
            }
            Ok(reply)
        }
        _ => Ok(reply),
    }
}

/// Splits a sequence of responses (the oracle's output, trusted) into each response's bytes.
pub fn parse_responses(mut bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut responses = Vec::new();
    while !bytes.is_empty() {
        responses.push(read_response(&mut bytes).unwrap_or_else(|err| panic!("not a cat-blob response: {err}")));
    }
    responses
}

// ---------------------------------------------------------------------------------------------------------------
// Running cat-blobd and git

/// What a child wrote, and how it ended.
pub struct Output {
    /// What the child wrote on fd 3 (only captured with [`Run::capture_fd3`]).
    pub fd3: Vec<u8>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub status: ExitStatus,
}

impl Output {
    /// The first line of stderr, without its LF.
    pub fn first_stderr_line(&self) -> &[u8] {
        self.stderr.split(|&b| b == b'\n').next().unwrap_or(b"")
    }

    pub fn describe(&self) -> String {
        format!(
            "status {}, fd3 {} bytes, stdout {} bytes, stderr: {}",
            self.status,
            self.fd3.len(),
            self.stdout.len(),
            escape(&self.stderr[..self.stderr.len().min(2000)])
        )
    }
}

/// A child to run: program, arguments, environment, working directory, stdin bytes, and fd redirections.
/// It always runs through `sh -c 'exec "$0" "$@" <redirections>'` so fd 3 can be captured (or fd 9 closed)
/// without unsafe code. `GIT_*` variables of the test process are removed and git's configuration pinned.
pub struct Run {
    program: OsString,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    cwd: Option<PathBuf>,
    stdin: Vec<u8>,
    redirections: String,
    fd3: bool,
}

impl Run {
    pub fn new(program: impl AsRef<OsStr>) -> Run {
        Run {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            envs: Vec::new(),
            cwd: None,
            stdin: Vec::new(),
            redirections: String::new(),
            fd3: false,
        }
    }

    /// cat-blobd with `--quiet` (so nothing but a `fatal:` line may appear on stderr).
    pub fn cat_blobd() -> Run {
        Run::new(CAT_BLOBD).arg("--quiet")
    }

    /// cat-blobd on a fixture, found with `--git-dir`.
    pub fn cat_blobd_on(fixture: Fixture) -> Run {
        Run::cat_blobd().arg("--git-dir").arg(fixture.git_dir())
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Run {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Run {
        self.envs.push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Run {
        self.cwd = Some(dir.as_ref().to_owned());
        self
    }

    pub fn stdin(mut self, stdin: impl Into<Vec<u8>>) -> Run {
        self.stdin = stdin.into();
        self
    }

    /// Passes `--cat-blob-fd=3` and captures fd 3 (the child's fd 3 is our stdout pipe; its fd 1 goes to a file).
    pub fn capture_fd3(mut self) -> Run {
        self.fd3 = true;
        self.arg("--cat-blob-fd=3")
    }

    /// Adds a shell redirection, e.g. `9>&-` to make sure fd 9 is closed in the child.
    pub fn redirect(mut self, redirection: &str) -> Run {
        self.redirections.push(' ');
        self.redirections.push_str(redirection);
        self
    }

    pub fn run(self) -> Output {
        let scratch = TempDir::new("run");
        let stdout_file = scratch.path().join("stdout");
        let mut script = String::from(r#"exec "$0" "$@""#);
        if self.fd3 {
            script.push_str(r#" 3>&1 1>"$CATBLOBD_TEST_STDOUT""#);
        }
        script.push_str(&self.redirections);
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(&script).arg(&self.program).args(&self.args);
        clean_git_env(&mut cmd);
        cmd.env("CATBLOBD_TEST_STDOUT", &stdout_file);
        for (k, v) in &self.envs {
            cmd.env(k, v);
        }
        if let Some(cwd) = &self.cwd {
            cmd.current_dir(cwd);
        }
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn sh");
        let writer = feed_stdin(&mut child, self.stdin);
        let out_reader = read_all(child.stdout.take().expect("stdout"));
        let err_reader = read_all(child.stderr.take().expect("stderr"));
        let status = wait_with_timeout(&mut child, RUN_TIMEOUT, &self.program);
        writer.join().expect("stdin writer");
        let piped = out_reader.join().expect("stdout reader");
        let stderr = err_reader.join().expect("stderr reader");
        let (fd3, stdout) =
            if self.fd3 { (piped, fs::read(&stdout_file).unwrap_or_default()) } else { (Vec::new(), piped) };
        Output { fd3, stdout, stderr, status }
    }
}

/// Writes `data` to the child's stdin from its own thread (so a full pipe never deadlocks the test), then
/// closes it. Write errors (the child exited early, EPIPE) are expected and ignored.
pub fn feed_stdin(child: &mut Child, data: Vec<u8>) -> JoinHandle<()> {
    let mut stdin = child.stdin.take().expect("stdin");
    thread::spawn(move || {
        let _ = stdin.write_all(&data);
    })
}

pub fn read_all(mut from: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = from.read_to_end(&mut buf);
        buf
    })
}

/// A frontend that goes away: feeds `input` to the child, reads the first 100 bytes of its stdout, closes
/// stdout, and waits for the child (at most `timeout`). Returns its status and everything it wrote on stderr.
pub fn hang_up_after_first_bytes(
    child: &mut Child,
    input: Vec<u8>,
    timeout: Duration,
    what: &str,
) -> (ExitStatus, Vec<u8>) {
    hang_up_after_first_bytes_and(child, input, timeout, what, |_| {})
}

/// [`hang_up_after_first_bytes`], calling `after_first` with the child once its first bytes are read (to see
/// what it runs then), before closing its stdout.
pub fn hang_up_after_first_bytes_and(
    child: &mut Child,
    input: Vec<u8>,
    timeout: Duration,
    what: &str,
    after_first: impl FnOnce(&Child),
) -> (ExitStatus, Vec<u8>) {
    let feeder = feed_stdin(child, input);
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 100];
    stdout.read_exact(&mut first).unwrap_or_else(|err| panic!("{what}: the first bytes: {err}"));
    after_first(child);
    drop(stdout);
    let stderr = read_all(child.stderr.take().expect("stderr"));
    let status = wait_with_timeout(child, timeout, what.as_ref());
    feeder.join().unwrap();
    (status, stderr.join().unwrap())
}

/// Waits for the child; kills it and fails the test if it runs longer than `timeout`.
pub fn wait_with_timeout(child: &mut Child, timeout: Duration, what: &OsStr) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{} did not finish within {timeout:?}; killed", what.to_string_lossy());
        }
        thread::sleep(Duration::from_millis(2));
    }
}

/// Runs `git fast-import --quiet` on `stream` in a throwaway bare repository whose alternates point at every
/// objects directory the fixture reaches (git writes into its repository, so never into a fixture).
/// With `fd3`, responses go to fd 3 (`--cat-blob-fd=3`), otherwise to stdout.
pub fn git_fast_import(fixture: Fixture, stream: &[u8], fd3: bool) -> Output {
    let (_oracle, mut run) = oracle(fixture);
    run = run.stdin(stream);
    if fd3 {
        run = run.capture_fd3();
    }
    run.run()
}

/// The oracle, ready to run and still to be customised: `git fast-import --quiet` in a throwaway bare repository
/// whose alternates point at every objects directory the fixture reaches. Keep the `TempDir` until it has run.
pub fn oracle(fixture: Fixture) -> (TempDir, Run) {
    let (oracle, repo) = case::throwaway(&case::Source::Fixture(fixture), &format!("oracle-{}", fixture.name()));
    let run = Run::new("git").arg("fast-import").arg("--quiet").env("GIT_DIR", &repo).current_dir(&repo);
    (oracle, run)
}

/// A throwaway bare repository whose alternates reach `fixture`'s objects, for streams that write (git writes
/// into its repository, so never into a fixture). Keep the `TempDir` while the repository is used.
pub fn scratch_repo(fixture: Fixture) -> (TempDir, PathBuf) {
    case::throwaway(&case::Source::Fixture(fixture), &format!("scratch-{}", fixture.name()))
}

// ---------------------------------------------------------------------------------------------------------------
// Assertions

/// Escapes bytes for a message (`\n`, `\x00`, …); never lossy UTF-8 decoding.
pub fn escape(bytes: &[u8]) -> String {
    bytes.iter().flat_map(|&b| std::ascii::escape_default(b)).map(char::from).collect()
}

/// Asserts two byte strings are equal; on mismatch shows the lengths, where they first differ (offset and line),
/// and an escaped window around that point from both sides, never a multi-MiB dump.
#[track_caller]
pub fn assert_bytes_eq(what: &str, expected: &[u8], actual: &[u8]) {
    if expected == actual {
        return;
    }
    let at = expected.iter().zip(actual).position(|(a, b)| a != b).unwrap_or(expected.len().min(actual.len()));
    let line = expected[..at].iter().filter(|&&b| b == b'\n').count() + 1;
    let start = at.saturating_sub(100);
    let window = |bytes: &[u8]| {
        let end = bytes.len().min(at + 100);
        let (before, after) = (&bytes[start.min(bytes.len())..at.min(bytes.len())], &bytes[at.min(end)..end]);
        format!("{}⟦HERE⟧{}{}", escape(before), escape(after), if end < bytes.len() { "…" } else { "" })
    };
    // The last response header before the difference, to say which request it concerns.
    let header_start = expected[..at].windows(2).rposition(|w| w[0] == b'\n' && w[1].is_ascii_hexdigit());
    let header = header_start.map(|s| {
        let rest = &expected[s + 1..];
        escape(&rest[..rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len()).min(120)])
    });
    panic!(
        "{what}: bytes differ\n  expected {} bytes, actual {} bytes, first difference at offset {at} (line {line})\n  \
         nearest header line before it (expected side): {}\n  expected: {}\n  actual:   {}",
        expected.len(),
        actual.len(),
        header.unwrap_or_else(|| "(none)".into()),
        window(expected),
        window(actual)
    );
}

/// Exit 128, one `fatal:` line naming `id` and `place`, no panic, nothing on stdout.
#[track_caller]
pub fn assert_fatal_naming(what: &str, ours: &Output, id: &str, place: &str) {
    let stderr = escape(&ours.stderr);
    assert!(!stderr.contains("panicked"), "{what}: cat-blobd panicked: {stderr}");
    assert_eq!(ours.status.code(), Some(128), "{what}: {}", ours.describe());
    assert!(
        ours.stderr.starts_with(b"fatal: ")
            && ours.stderr.ends_with(b"\n")
            && ours.stderr.iter().filter(|&&b| b == b'\n').count() == 1,
        "{what}: expected exactly one `fatal:` line, got: {stderr}"
    );
    assert!(stderr.contains(id), "{what}: the message does not name object {id}: {stderr}");
    assert!(stderr.contains(place), "{what}: the message does not name {place}: {stderr}");
    assert!(ours.stdout.is_empty(), "{what}: stdout: {}", escape(&ours.stdout));
}

/// The differential check: same exit status, same fd-3 bytes, same stdout bytes, and the same first stderr line
/// (ignoring ASCII case against a git before 2.52, which capitalises its messages: cat-blobd uses the newest
/// wording, see [`messages_differ_in_case`]). When git wrote nothing on stderr, cat-blobd must not either; when
/// git died, cat-blobd prints exactly one `fatal:` line.
#[track_caller]
pub fn assert_same_as_git(what: &str, git: &Output, ours: &Output) {
    let ours_text = escape(&ours.stderr);
    assert!(!ours_text.contains("panicked at"), "{what}: cat-blobd panicked: {ours_text}");
    assert_eq!(
        ours.status.code(),
        git.status.code(),
        "{what}: exit status differs\n  git:       {}\n  cat-blobd: {}",
        git.describe(),
        ours.describe()
    );
    assert_bytes_eq(&format!("{what}: cat-blob fd"), &git.fd3, &ours.fd3);
    assert_bytes_eq(&format!("{what}: stdout"), &git.stdout, &ours.stdout);
    if git.stderr.is_empty() {
        assert!(ours.stderr.is_empty(), "{what}: git printed nothing on stderr, cat-blobd printed: {ours_text}");
    } else {
        let (git_line, our_line) = (git.first_stderr_line(), ours.first_stderr_line());
        let same =
            if messages_differ_in_case() { git_line.eq_ignore_ascii_case(our_line) } else { git_line == our_line };
        assert!(
            same,
            "{what}: first stderr line differs (ignoring ASCII case: {})\n  git:       {}\n  cat-blobd: {}",
            messages_differ_in_case(),
            escape(git.first_stderr_line()),
            escape(ours.first_stderr_line())
        );
        if !git.status.success() {
            let lines = ours.stderr.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count();
            assert!(
                lines == 1 && ours.stderr.ends_with(b"\n"),
                "{what}: cat-blobd must print exactly one fatal line, printed: {ours_text}"
            );
        }
    }
}

/// Runs the stream through git fast-import (oracle) and cat-blobd (`--git-dir`), both with `--cat-blob-fd=3`,
/// compares them, and returns git's output.
#[track_caller]
pub fn differential(what: &str, fixture: Fixture, stream: &[u8]) -> Output {
    let git = git_fast_import(fixture, stream, true);
    let ours = Run::cat_blobd_on(fixture).capture_fd3().stdin(stream).run();
    assert_same_as_git(what, &git, &ours);
    git
}

// ---------------------------------------------------------------------------------------------------------------
// Seeded PRNG (splitmix64), for shuffles and random ids

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }

    /// A random 40-hex id (lower case).
    pub fn hex_id(&mut self) -> String {
        let mut id = String::with_capacity(40);
        while id.len() < 40 {
            write!(id, "{:016x}", self.next_u64()).unwrap();
        }
        id.truncate(40);
        id
    }
}
