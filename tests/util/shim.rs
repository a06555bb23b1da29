//! The `git` link that `cat-blobd shim <dir>` makes: cat-blobd answers `cat-file` and `fast-import` (itself or
//! through its daemon), the real git the rest. Its log (`CAT_BLOBD_SHIM_LOG`) says which ran each command.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{CAT_BLOBD, Run, TempDir, assert_bytes_eq, escape, test_git_path};

/// The `git` link, in its own directory, and the log of what it did.
pub struct Shim {
    dir: TempDir,
}

impl Shim {
    pub fn new() -> Shim {
        let dir = TempDir::new("shim");
        let out = Command::new(CAT_BLOBD).arg("shim").arg(dir.path().join("bin")).output().expect("cat-blobd shim");
        assert!(out.status.success(), "cat-blobd shim: {}", escape(&out.stderr));
        let expected = format!("export PATH={}:\"$PATH\"\n", dir.path().join("bin").display());
        assert_bytes_eq("the PATH line", expected.as_bytes(), &out.stdout);
        Shim { dir }
    }

    /// Its own directory (the link is in `bin`, the log beside it), where a test may put files of its own.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    /// The shim first, then the PATH the other tests use (with `CAT_BLOBD_TEST_GIT`'s git first when it is set),
    /// so that the shim's real git is the git under test.
    pub fn path(&self) -> String {
        let rest = test_git_path().map(|p| p.to_owned()).or_else(|| std::env::var_os("PATH"));
        format!("{}:{}", self.bin().display(), rest.unwrap_or_default().to_string_lossy())
    }

    pub fn log_file(&self) -> PathBuf {
        self.dir.path().join("log")
    }

    /// The command lines cat-blobd answered (`cat-blobd <command> <args>`) and those the real git ran
    /// (`git <args>`), one a line.
    pub fn calls(&self) -> String {
        std::fs::read_to_string(self.log_file()).unwrap_or_default()
    }

    /// The log's lines since the last `take_log`.
    pub fn take_log(&self) -> String {
        let log = std::fs::read_to_string(self.log_file()).unwrap_or_default();
        let _ = std::fs::remove_file(self.log_file());
        log
    }

    /// `git args` through the shim.
    pub fn git(&self, args: &[&str]) -> Run {
        args.iter()
            .fold(Run::new("git"), |run, arg| run.arg(arg))
            .env("PATH", self.path())
            .env("CAT_BLOBD_SHIM_LOG", self.log_file())
    }
}
