//! Which git the tests compare with: `git` on PATH, or the one `CAT_BLOBD_TEST_GIT` names, and what its
//! version changes in the comparison (cat-blobd answers as the newest git release).

use std::ffi::{OsStr, OsString};
use std::fs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// `CAT_BLOBD_TEST_GIT=<path to a git binary>`: the git every test runs in place of `git` on PATH, as the oracle
/// and as cat-blobd's write-through child alike (both find `git` on the PATH `clean_git_env` sets). Fixture
/// scripts keep the installed git. Returns that PATH: a directory whose `git` is the chosen binary, first.
pub fn test_git_path() -> Option<&'static OsStr> {
    static PATH: OnceLock<Option<OsString>> = OnceLock::new();
    PATH.get_or_init(|| {
        let git = fs::canonicalize(std::env::var_os("CAT_BLOBD_TEST_GIT")?)
            .unwrap_or_else(|err| panic!("CAT_BLOBD_TEST_GIT: {err}"));
        let mut hasher = DefaultHasher::new();
        git.hash(&mut hasher);
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("test-git-{:016x}", hasher.finish()));
        fs::create_dir_all(&dir).expect("create the test git's directory");
        match std::os::unix::fs::symlink(&git, dir.join("git")) {
            Err(err) if err.kind() != io::ErrorKind::AlreadyExists => panic!("link {}: {err}", git.display()),
            _ => {}
        }
        let mut path = dir.into_os_string();
        if let Some(inherited) = std::env::var_os("PATH") {
            path.push(":");
            path.push(inherited);
        }
        Some(path)
    })
    .as_deref()
}

/// The git to compare with when it is 2.55 or newer (`CAT_BLOBD_TEST_GIT`): the release cat-blobd answers as.
pub fn git_255() -> Option<std::path::PathBuf> {
    let git = std::env::var_os("CAT_BLOBD_TEST_GIT")?;
    (test_git_version() >= (2, 55)).then(|| std::path::PathBuf::from(git))
}

/// git 2.52 wrote its fast-import messages with a lower-case first letter, as cat-blobd does (it answers as the
/// newest git); against an older git, messages are compared ignoring ASCII case, and exactly otherwise.
pub fn messages_differ_in_case() -> bool {
    test_git_version() < (2, 52)
}

/// The (major, minor) version of the git the tests compare with (`git version`, found on [`test_git_path`]).
pub fn test_git_version() -> (u32, u32) {
    static VERSION: OnceLock<(u32, u32)> = OnceLock::new();
    *VERSION.get_or_init(|| {
        let mut cmd = Command::new("git");
        if let Some(path) = test_git_path() {
            cmd.env("PATH", path);
        }
        let out = cmd.arg("version").stdin(Stdio::null()).output().expect("git version");
        let text = String::from_utf8(out.stdout).expect("ASCII");
        let mut numbers = text.trim_start_matches("git version ").split('.').map(|n| n.trim().parse().unwrap_or(0));
        (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0))
    })
}
