//! cat-blobd run as `git` (a link `DIR/git` to the binary, first on `PATH`, the way ccache stands in for the
//! compiler): `git [global options] cat-file …` and `git [global options] fast-import …` are answered by cat-blobd
//! when it answers them exactly as git would; every other command line is handed to the real git with `exec`,
//! untouched.
//!
//! `options` reads git's global options as git.c does; `route` decides; `answer` applies the options as git
//! would (`chdir`, environment) and `exec`s this binary as plain `cat-blobd` (or hands the stream to a daemon);
//! `real_git` finds and runs the real git; `link` makes the link.
mod answer;
pub mod link;
mod options;
mod real_git;
mod route;

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::fatal::print_fatal;

/// The name under which the binary is the shim.
const GIT: &str = "git";

/// Whether `argv0` (the program name as run) makes this process the shim: its file name is `git`.
pub fn invoked_as_git(argv0: &OsStr) -> bool {
    Path::new(argv0).file_name().is_some_and(|name| name == GIT)
}

/// The shim: `argv0` and the arguments after it, as run. Returns the exit status when it does not `exec`.
pub fn main(argv0: &OsStr, args: &[OsString]) -> u8 {
    let env = |name: &OsStr| std::env::var_os(name);
    if let Some(plan) = route::plan(args, env) {
        match answer::answer(&plan) {
            answer::Answered::Status(code) => return code,
            answer::Answered::Failed(err) => {
                print_fatal(&err.to_string());
                return 128;
            }
            // Only when no step of the plan could be applied (a `-C` that fails): git says why.
            answer::Answered::ToGit => {}
        }
    }
    let git = match real_git::find(
        std::env::var_os("CAT_BLOBD_GIT").as_deref(),
        std::env::var_os("PATH").as_deref(),
        real_git::FileId::own(),
    ) {
        Ok(git) => git,
        Err(err) => {
            print_fatal(&err.to_string());
            return 128;
        }
    };
    log("git", args);
    print_fatal(&real_git::exec(&git, argv0, args).to_string());
    128
}

/// `CAT_BLOBD_SHIM_LOG=<file>`: one line per command line the shim sees, `<who> <arguments…>` (`who` is
/// `cat-blobd`, `daemon` or `git`; for cat-blobd and its daemon, from the command word on), so that a user (and the
/// tests) can see which commands cat-blobd answered. Errors are ignored: the log must never fail the command.
pub(crate) fn log(who: &str, words: &[OsString]) {
    let Some(path) = std::env::var_os("CAT_BLOBD_SHIM_LOG").filter(|path| !path.is_empty()) else { return };
    let mut line = who.as_bytes().to_vec();
    for word in words {
        line.push(b' ');
        line.extend_from_slice(word.as_bytes());
    }
    line.push(b'\n');
    if let Ok(mut file) = std::fs::OpenOptions::new().append(true).create(true).open(path) {
        let _ = file.write_all(&line);
    }
}
