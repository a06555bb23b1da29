//! The cat-file runner: `git cat-file` or `cat-blobd cat-file` with the same arguments, input and environment in
//! a repository of fixtures/make-cat-file-fixtures.sh, and the comparison of the two by stdout, stderr and exit
//! status.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::{Output, Run, assert_bytes_eq, build_with_script, escape};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/make-cat-file-fixtures.sh");

fn root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| build_with_script(SCRIPT, "cat-file-fixtures"))
}

/// A repository the script made (`names.git`, …).
pub fn repo(name: &str) -> PathBuf {
    root().join(name)
}

/// How much of stderr must match.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Stderr {
    Exact,
    /// Usage errors: git's usage text follows the first line.
    FirstLine,
}

/// `program cat-file <args>` in `dir` on `stdin`, with `env` added.
pub fn run(program: &str, dir: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Output {
    run_as(Run::new(program), dir, args, stdin, env)
}

/// `run` with `cat-file <args>` after whatever `run` already has (`cat-blobd connect --socket S`, say).
pub fn run_as(run: Run, dir: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Output {
    let mut run = run.arg("cat-file");
    for arg in args {
        run = run.arg(arg);
    }
    for (key, value) in env {
        run = run.env(key, value);
    }
    run.current_dir(dir).stdin(stdin.to_vec()).run()
}

/// Asserts that `ours` ended as `git` did, with the same stdout and (as much as `stderr` says) stderr.
#[track_caller]
pub fn assert_same(what: &str, git: &Output, ours: &Output, stderr: Stderr) {
    assert!(!escape(&ours.stderr).contains("panicked at"), "{what}: panic: {}", escape(&ours.stderr));
    assert_eq!(
        ours.status.code(),
        git.status.code(),
        "{what}: status\n git: {}\n ours: {}",
        git.describe(),
        ours.describe()
    );
    assert_bytes_eq(&format!("{what}: stdout"), &git.stdout, &ours.stdout);
    match stderr {
        Stderr::Exact => assert_bytes_eq(&format!("{what}: stderr"), &git.stderr, &ours.stderr),
        Stderr::FirstLine => {
            assert_bytes_eq(&format!("{what}: stderr"), git.first_stderr_line(), ours.first_stderr_line())
        }
    }
}

/// The word a fixture script wrote into `file` (an ambiguous prefix, an id).
pub fn fixture_word(file: &str) -> String {
    std::fs::read_to_string(root().join(file)).expect("fixture file").trim().to_owned()
}

/// 400 names of `names.git` from a seeded generator: every base form (refs, tags, full and short ids, an
/// ambiguous prefix, `@`) joined to a random chain of suffixes and path forms (`^`, `^N`, `~N`, `^{}`,
/// `^{<type>}`, `:<path>` with `.`, `..`, doubled, leading and trailing `/`), with odd bytes (CR, a tab, a space)
/// where a line can carry them. `newest`: the git compared with is at least 2.55, so names whose messages 2.47
/// words otherwise are drawn too.
pub fn generated_names(seed: u64, newest: bool) -> Vec<String> {
    let mut rng = super::Rng::new(seed);
    let head = String::from_utf8(super::git(&repo("names.git"), &["rev-parse", "HEAD"])).expect("hex");
    let head = head.trim();
    let ambiguous = fixture_word("ambiguous");
    let mut bases = vec![
        "HEAD",
        "main",
        "side",
        "dup",
        "v1",
        "light",
        "refs/heads/main",
        "origin/main",
        "@",
        head,
        &head[..7],
        &head[..4],
        &ambiguous,
        "4163036e",
        "nosuch",
    ];
    if newest {
        // 2.47 names a tag's peeled object in "is a tree, not a commit"; 2.55 names the object as given.
        bases.extend(["tree-tag", "blob-tag"]);
    }
    let suffixes =
        ["", "^", "^0", "^1", "^2", "~", "~0", "~1", "~3", "^{}", "^{tree}", "^{commit}", "^{blob}", "^{tag}"];
    let paths = [
        "hello.txt",
        "dir/sub/file",
        "dir//sub/file",
        "/hello.txt",
        "dir/",
        "dir/sub/",
        "./hello.txt",
        ".",
        "..",
        "dir/../hello.txt",
        "link",
        "dirlink",
        "",
        "nosuch",
        "dir/long.txt",
    ];
    let odd = ["", "", "", " ", "\t", "\r", " rest"];
    let mut names = Vec::new();
    for _ in 0..400 {
        let mut name = bases[rng.below(bases.len())].to_owned();
        for _ in 0..rng.below(3) {
            name.push_str(suffixes[rng.below(suffixes.len())]);
        }
        if rng.below(2) == 0 {
            name.push(':');
            name.push_str(paths[rng.below(paths.len())]);
        }
        name.push_str(odd[rng.below(odd.len())]);
        names.push(name);
    }
    names
}
