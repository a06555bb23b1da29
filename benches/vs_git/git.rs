//! Running git with a clean, pinned environment (no user or system config, fixed dates).

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// Environment every process of the benchmark gets, git or not: nobody's config tunes a run.
pub const ENV: &[(&str, &str)] = &[
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_CONFIG_GLOBAL", "/dev/null"),
    ("GIT_AUTHOR_DATE", "1112911993 +0000"),
    ("GIT_COMMITTER_DATE", "1112911993 +0000"),
    ("LC_ALL", "C"),
];

/// `git --git-dir=DIR …` with the pinned environment.
pub fn git(git_dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("--git-dir").arg(git_dir);
    pin_env(&mut cmd);
    cmd
}

pub fn pin_env(cmd: &mut Command) {
    for var in ["GIT_DIR", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES"] {
        cmd.env_remove(var);
    }
    for (key, value) in ENV {
        cmd.env(key, value);
    }
}

/// Runs to completion and returns stdout; a failure carries git's stderr.
pub fn output(cmd: &mut Command) -> Result<Vec<u8>> {
    output_from(cmd, Stdio::null())
}

/// [`output`], with `stdin` as its standard input.
pub fn output_from(cmd: &mut Command, stdin: Stdio) -> Result<Vec<u8>> {
    let out = cmd.stdin(stdin).output().with_context(|| format!("spawning {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?} failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(out.stdout)
}

/// The version `git --version` prints (`2.47.3` of `git version 2.47.3`).
pub fn version(git: &Path) -> Result<String> {
    let out = output(Command::new(git).arg("--version"))?;
    let text = String::from_utf8_lossy(&out);
    Ok(text.trim().trim_start_matches("git version ").to_string())
}
