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
