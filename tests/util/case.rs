//! The one differential runner: a stream through `git fast-import --cat-blob-fd=3` and through cat-blobd, each
//! in its own throwaway bare repository that borrows a source's objects through alternates (git writes into its
//! repository, and marks files live in it). The cat-blob fd, stdout and the exit status must be identical, the
//! first stderr line equal ignoring ASCII case (with each repository's path shown as `<repo>`), and the files a
//! case names identical byte for byte. [`Case::expect`] also checks what git itself does, so a git that changed
//! cannot turn a case into a comparison of two no-ops.
//!
//! Templates: `{name}` in a stream, a file or an expected message is an object id of the `basic` fixture (see
//! [`fixture_ids`]), `{NAME}` the same in upper case, `{id:TEXT}` the SHA-1 blob id of `TEXT` (`{ID:TEXT}` in
//! upper case). `{repo}` in an argument or environment value is the repository the program runs in.

use std::collections::HashMap;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use super::{
    Fixture, Output, Run, TempDir, assert_bytes_eq, assert_same_as_git, clean_git_env, escape, git, rev_parse,
};

pub const MISSING_ONE: &str = "0000000000000000000000000000000000000001";
pub const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
pub const EMPTY_BLOB: &str = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";

// ---------------------------------------------------------------------------------------------------------------
// Templates

/// Object ids of the `basic` fixture, by template name.
pub fn fixture_ids() -> &'static HashMap<&'static str, String> {
    static IDS: OnceLock<HashMap<&'static str, String>> = OnceLock::new();
    IDS.get_or_init(|| {
        let revs = [
            ("blob", "HEAD:README.md"),
            ("blob2", "HEAD:no-newline.txt"),
            ("binary", "HEAD:binary-nul.bin"),
            ("tree", "HEAD^{tree}"),
            ("subtree", "HEAD:src"),
            ("commit", "HEAD"),
            ("old_commit", "HEAD~5"),
            ("tag", "refs/tags/v1.0"),
            ("tag_commit", "v1.0^{commit}"),
            ("tag_src", "v1.0^{commit}:src"),
            ("tag_docs", "v1.0^{commit}:docs"),
            ("lonely", "refs/tags/lonely-blob"),
        ];
        let mut ids: HashMap<&'static str, String> =
            revs.iter().map(|(name, rev)| (*name, rev_parse(Fixture::Basic, rev))).collect();
        ids.insert("missing", MISSING_ONE.to_owned());
        ids.insert("empty_blob", EMPTY_BLOB.to_owned());
        ids.insert("empty_tree", EMPTY_TREE.to_owned());
        ids
    })
}

/// The blob id of `payload` in the given hash (`blob <len>\0<payload>`).
pub fn blob_id(kind: gix_hash::Kind, payload: &[u8]) -> String {
    let mut hasher = gix_hash::hasher(kind);
    hasher.update(format!("blob {}\0", payload.len()).as_bytes());
    hasher.update(payload);
    hasher.try_finalize().expect("no collision").to_hex().to_string()
}

pub fn sha1_blob_id(payload: &[u8]) -> String {
    blob_id(gix_hash::Kind::Sha1, payload)
}

/// Expands `{name}`, `{NAME}` and `{id:TEXT}` (see the module documentation).
pub fn expand(template: &[u8]) -> Vec<u8> {
    expand_with(template, fixture_ids())
}

pub fn expand_with(template: &[u8], ids: &HashMap<&'static str, String>) -> Vec<u8> {
    let mut out = Vec::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.iter().position(|&b| b == b'{') {
        out.extend_from_slice(&rest[..open]);
        let close = open + rest[open..].iter().position(|&b| b == b'}').expect("unclosed { in template");
        let key = &rest[open + 1..close];
        if let Some(text) = key.strip_prefix(b"id:") {
            out.extend_from_slice(sha1_blob_id(text).as_bytes());
        } else if let Some(text) = key.strip_prefix(b"ID:") {
            out.extend_from_slice(sha1_blob_id(text).to_ascii_uppercase().as_bytes());
        } else {
            let name = std::str::from_utf8(key).expect("ASCII template name");
            let lower = name.to_ascii_lowercase();
            let id = ids.get(lower.as_str()).unwrap_or_else(|| panic!("unknown template name {{{name}}}"));
            if name == lower {
                out.extend_from_slice(id.as_bytes());
            } else {
                out.extend_from_slice(id.to_ascii_uppercase().as_bytes());
            }
        }
        rest = &rest[close + 1..];
    }
    out.extend_from_slice(rest);
    out
}

pub fn expand_str(template: &str) -> String {
    String::from_utf8(expand(template.as_bytes())).expect("UTF-8")
}

pub fn replace_bytes(haystack: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    if needle.is_empty() {
        return haystack.to_vec();
    }
    let mut out = Vec::with_capacity(haystack.len());
    let mut i = 0;
    while i < haystack.len() {
        if haystack[i..].starts_with(needle) {
            out.extend_from_slice(with);
            i += needle.len();
        } else {
            out.push(haystack[i]);
            i += 1;
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------------------------
// Repositories

/// Where a case's objects come from: a fixture, or a repository built by a test (kept alive by that test).
#[derive(Clone)]
pub enum Source {
    Fixture(Fixture),
    Extra { objects: Vec<PathBuf>, sha256: bool },
}

impl Source {
    pub fn objects(&self) -> Vec<PathBuf> {
        match self {
            Source::Fixture(fixture) => fixture.object_dirs(),
            Source::Extra { objects, .. } => objects.clone(),
        }
    }

    pub fn sha256(&self) -> bool {
        matches!(self, Source::Extra { sha256: true, .. })
    }
}

/// A new bare repository (branch `main`), SHA-1 or SHA-256.
pub fn git_init_bare(path: &Path, sha256: bool) {
    let mut cmd = Command::new("git");
    clean_git_env(&mut cmd);
    cmd.args(["init", "-q", "--bare", "-b", "main"]);
    if sha256 {
        cmd.arg("--object-format=sha256");
    }
    let out = cmd.arg(path).stdin(Stdio::null()).output().expect("git init");
    assert!(out.status.success(), "git init {}: {}", path.display(), escape(&out.stderr));
}

/// A throwaway bare repository borrowing `source`'s objects. Returns the scratch dir (keep it) and the git dir.
pub fn throwaway(source: &Source, label: &str) -> (TempDir, PathBuf) {
    let dir = TempDir::new(label);
    let repo = dir.path().join("repo.git");
    git_init_bare(&repo, source.sha256());
    let alternates: String = source.objects().iter().map(|d| format!("{}\n", d.display())).collect();
    fs::write(repo.join("objects/info/alternates"), alternates).expect("write alternates");
    (dir, repo)
}

// ---------------------------------------------------------------------------------------------------------------
// A differential case

pub type Prepare = Box<dyn Fn(&Path)>;

/// One stream, run through git fast-import and cat-blobd in two identical throwaway repositories.
pub struct Case {
    what: String,
    source: Source,
    stream: Vec<u8>,
    args: Vec<String>,
    /// cat-blobd's own flags (git does not know them).
    own_args: Vec<String>,
    envs: Vec<(String, String)>,
    fd3: bool,
    files: Vec<(String, Vec<u8>)>,
    prepare: Option<Prepare>,
    compare: Vec<String>,
    compare_stderr: bool,
    whole_stderr: Option<StderrMatch>,
    compare_repository: bool,
}

/// How [`Case::whole_stderr`] compares.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum StderrMatch {
    /// Byte for byte.
    Exact,
    /// Byte for byte but for ASCII case against a git before 2.52 (cat-blobd's own messages use the newest
    /// wording), byte for byte against a newer one.
    AnyCase,
}

/// A case on the `basic` fixture; the stream is a template.
pub fn case(what: &str, stream: impl AsRef<[u8]>) -> Case {
    Case::new(what, Source::Fixture(Fixture::Basic)).raw_stream(expand(stream.as_ref()))
}

impl Case {
    /// A case on `source` with an empty stream.
    pub fn new(what: &str, source: Source) -> Case {
        Case {
            what: what.to_owned(),
            source,
            stream: Vec::new(),
            args: Vec::new(),
            own_args: Vec::new(),
            envs: Vec::new(),
            fd3: true,
            files: Vec::new(),
            prepare: None,
            compare: Vec::new(),
            compare_stderr: true,
            whole_stderr: None,
            compare_repository: false,
        }
    }
}

impl Case {
    pub fn on(mut self, source: Source) -> Case {
        self.source = source;
        self
    }

    /// A stream that is not a template (used as is).
    pub fn raw_stream(mut self, stream: Vec<u8>) -> Case {
        self.stream = stream;
        self
    }

    /// git fast-import flags for both programs, after `--quiet --cat-blob-fd=3`.
    pub fn args(mut self, args: &[&str]) -> Case {
        self.args.extend(args.iter().map(|a| (*a).to_owned()));
        self
    }

    /// cat-blobd's own flags, given to cat-blobd only (before the git flags).
    pub fn own_args(mut self, args: &[&str]) -> Case {
        self.own_args.extend(args.iter().map(|a| (*a).to_owned()));
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Case {
        self.envs.push((key.to_owned(), value.to_owned()));
        self
    }

    /// No `--cat-blob-fd=3`: responses go to stdout, mixed with progress.
    pub fn responses_on_stdout(mut self) -> Case {
        self.fd3 = false;
        self
    }

    /// A file (path relative to the repository) written in both repositories before the run; a template.
    pub fn file(mut self, path: &str, contents: impl AsRef<[u8]>) -> Case {
        self.files.push((path.to_owned(), expand(contents.as_ref())));
        self
    }

    pub fn raw_file(mut self, path: &str, contents: Vec<u8>) -> Case {
        self.files.push((path.to_owned(), contents));
        self
    }

    /// Runs in both repositories (given their git dir) before the programs run.
    pub fn prepare(mut self, prepare: impl Fn(&Path) + 'static) -> Case {
        self.prepare = Some(Box::new(prepare));
        self
    }

    /// A file (relative to the repository) that must end up the same in both (existence and bytes), with its
    /// `.lock` file.
    pub fn compare(mut self, path: &str) -> Case {
        self.compare.push(path.to_owned());
        self
    }

    /// Compare all of stderr, not only its first line (git's own lines too, where a git runs behind
    /// cat-blobd: its crash report's name is shown without the pid).
    pub fn whole_stderr(mut self, how: StderrMatch) -> Case {
        self.whole_stderr = Some(how);
        self
    }

    /// Compare the repositories after the run too: refs and objects, and `git fsck` passes in both.
    pub fn compare_repository(mut self) -> Case {
        self.compare_repository = true;
        self
    }

    /// Compare the exit status and the output only (cat-blobd prints its own usage text).
    pub fn ignore_stderr(mut self) -> Case {
        self.compare_stderr = false;
        self
    }

    /// Runs the case, checks that git exits with `code` and that its first stderr line matches `message`, then
    /// compares cat-blobd with git. `message` is a template; one starting with `fatal:`, `error:` or `warning:`
    /// must be the whole line (ignoring ASCII case), anything else a part of it; `""` checks nothing.
    #[track_caller]
    pub fn expect(self, code: i32, message: &str) -> Output {
        self.run(Some((code, message)))
    }

    /// Runs the case and compares cat-blobd with git, whatever git does; returns git's output.
    #[track_caller]
    pub fn differential(self) -> Output {
        self.run(None)
    }

    #[track_caller]
    fn run(self, git_does: Option<(i32, &str)>) -> Output {
        let (_git_dir, git_repo) = throwaway(&self.source, "git");
        let (_ours_dir, ours_repo) = throwaway(&self.source, "ours");
        for repo in [&git_repo, &ours_repo] {
            for (path, contents) in &self.files {
                let path = repo.join(path);
                fs::create_dir_all(path.parent().expect("parent")).expect("create parent");
                fs::write(&path, contents).expect("write case file");
            }
            if let Some(prepare) = &self.prepare {
                prepare(repo);
            }
        }
        let git = normalise(self.run_in(Run::new("git").arg("fast-import").arg("--quiet"), &git_repo), &git_repo);
        let ours = self.own_args.iter().fold(Run::cat_blobd(), |run, arg| run.arg(arg));
        let ours = normalise(self.run_in(ours, &ours_repo), &ours_repo);
        let what = &self.what;
        if let Some((code, message)) = git_does {
            check_git(what, &git, code, message);
        }
        let (mut git, mut ours) = (git, ours);
        if let Some(how) = self.whole_stderr {
            let any_case = how == StderrMatch::AnyCase && crate::util::messages_differ_in_case();
            let fold = |bytes: &[u8]| if any_case { bytes.to_ascii_lowercase() } else { bytes.to_vec() };
            assert_bytes_eq(&format!("{what}: stderr"), &fold(&git.stderr), &fold(&ours.stderr));
            assert_eq!(ours.status.code(), git.status.code(), "{what}: exit status: {}", ours.describe());
        }
        if !self.compare_stderr || self.whole_stderr.is_some() {
            git.stderr.clear();
            ours.stderr.clear();
        }
        assert_same_as_git(what, &git, &ours);
        if self.compare_repository {
            assert_same_repository(what, &git_repo, &ours_repo);
        }
        for path in &self.compare {
            for path in [path.clone(), format!("{path}.lock")] {
                let (g, o) = (fs::read(git_repo.join(&path)).ok(), fs::read(ours_repo.join(&path)).ok());
                match (&g, &o) {
                    (Some(g), Some(o)) => assert_bytes_eq(&format!("{what}: file {path}"), g, o),
                    _ => assert_eq!(
                        g.is_some(),
                        o.is_some(),
                        "{what}: file {path}: git wrote it: {}, cat-blobd wrote it: {}",
                        g.is_some(),
                        o.is_some()
                    ),
                }
            }
        }
        git
    }

    pub fn run_in(&self, mut run: Run, repo: &Path) -> Output {
        let repo_text = repo.to_str().expect("UTF-8 path");
        if self.fd3 {
            run = run.capture_fd3();
        }
        for arg in &self.args {
            run = run.arg(arg.replace("{repo}", repo_text));
        }
        for (key, value) in &self.envs {
            run = run.env(key, value.replace("{repo}", repo_text));
        }
        run.env("GIT_DIR", repo).current_dir(repo).stdin(self.stream.clone()).run()
    }
}

/// Runs every sub-case of a test even when one fails, then fails naming the failed ones (each failure's message
/// is printed above by the panic hook).
#[derive(Default)]
pub struct Checks {
    failed: Vec<String>,
    total: usize,
}

impl Checks {
    /// Runs one sub-case, recording its failure instead of stopping the test.
    pub fn run(&mut self, what: &str, sub_case: impl FnOnce()) {
        self.total += 1;
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(sub_case)).is_err() {
            self.failed.push(what.to_owned());
        }
    }

    pub fn finish(self) {
        assert!(self.failed.is_empty(), "{} of {} sub-cases failed: {:?}", self.failed.len(), self.total, self.failed);
    }
}

impl Case {
    /// [`Case::expect`], recording a failure in `checks` instead of stopping the test.
    pub fn check(self, checks: &mut Checks, code: i32, message: &str) {
        let what = self.what.clone();
        checks.run(&what, || {
            self.expect(code, message);
        });
    }
}

/// Checks that git exits with `code` and that its first stderr line matches `message` (see [`Case::expect`]).
#[track_caller]
fn check_git(what: &str, git: &Output, code: i32, message: &str) {
    assert_eq!(git.status.code(), Some(code), "{what}: git did not do what this case is about: {}", git.describe());
    let want = expand(message.as_bytes()).to_ascii_lowercase();
    let first = git.first_stderr_line().to_ascii_lowercase();
    let whole_line = [&b"fatal:"[..], b"error:", b"warning:"].iter().any(|p| want.starts_with(p));
    let matches =
        if whole_line { first == want } else { want.is_empty() || first.windows(want.len()).any(|w| w == want) };
    assert!(
        matches,
        "{what}: git's first stderr line is not the expected one (whole line: {whole_line})\n  git:      {}\n  expected: {}",
        escape(&first),
        escape(&want)
    );
}

/// What the two repositories hold: the same refs and objects, and both pass `git fsck`.
#[track_caller]
pub fn assert_same_repository(what: &str, git_repo: &Path, ours_repo: &Path) {
    for query in [
        &["for-each-ref", "--format=%(objectname) %(refname)"][..],
        &["cat-file", "--batch-all-objects", "--batch-check"],
    ] {
        let (expected, actual) = (git(git_repo, query), git(ours_repo, query));
        assert_bytes_eq(&format!("{what}: git {}", query.join(" ")), &expected, &actual);
    }
    for repo in [git_repo, ours_repo] {
        git(repo, &["fsck", "--no-progress", "--no-dangling"]);
    }
}

/// Shows the repository's path as `<repo>` in stderr, so messages naming marks files compare equal, and the
/// pid in the name of git's crash report (`fast_import_crash_<pid>`) as `<pid>`.
pub fn normalise(out: Output, repo: &Path) -> Output {
    let mut stderr = replace_bytes(&out.stderr, repo.as_os_str().as_bytes(), b"<repo>");
    const CRASH: &[u8] = b"fast_import_crash_";
    if let Some(at) = stderr.windows(CRASH.len()).position(|w| w == CRASH) {
        let digits = stderr[at + CRASH.len()..].iter().take_while(|b| b.is_ascii_digit()).count();
        stderr.splice(at + CRASH.len()..at + CRASH.len() + digits, b"<pid>".iter().copied());
    }
    Output { stderr, ..out }
}

/// `name: stream => code, "message";` — a differential case on `basic` (see [`Case::expect`]).
macro_rules! cases {
    ($($name:ident: $stream:expr => $code:literal, $message:literal;)*) => {$(
        #[test]
        fn $name() {
            $crate::util::case::case(stringify!($name), $stream).expect($code, $message);
        }
    )*};
}
pub(crate) use cases;
