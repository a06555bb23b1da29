//! Answering a [`Plan`]: the global options applied as git applies them (`-C` is a `chdir`, the others set
//! environment variables that cat-blobd, and a write-through `git fast-import` child, then read), then either
//! a `cat-blobd serve` daemon (`CAT_BLOBD_SOCKET`) runs the command on this process's fds, or this binary is
//! `exec`ed as plain `cat-blobd` with the same fds.
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

use super::options::Step;
use super::route::Plan;
use crate::config::parameters;
use crate::git_compat::strerror::strerror;
use crate::wire::client::{self, ClientError};
use crate::wire::protocol::{CLIENT_ENV, Reply};

#[derive(Debug, thiserror::Error)]
pub(super) enum AnswerError {
    #[error("cannot run cat-blobd from /proc/self/exe: {}", strerror(.0))]
    Exec(#[source] std::io::Error),
    #[error(transparent)]
    Daemon(#[from] ClientError),
    #[error("cannot return to the starting directory: {}", strerror(.0))]
    Return(#[source] std::io::Error),
}

/// Environment variables set by the global options, over the process's.
type Env = BTreeMap<OsString, OsString>;

/// How an answer ended, when this process is still there to say.
pub(super) enum Answered {
    /// The daemon ran the command; its exit status.
    Status(u8),
    Failed(AnswerError),
    /// Nothing was answered and the working directory is as it was: the real git must run the command.
    ToGit,
}

/// Answers `plan`; returns only when no `exec` happened.
pub(super) fn answer(plan: &Plan) -> Answered {
    let env = match apply_steps(&plan.steps) {
        Ok(Some(env)) => env,
        Ok(None) => return Answered::ToGit,
        Err(err) => return Answered::Failed(err),
    };
    let mut stream_args: Vec<Vec<u8>> = plan.args.iter().map(|arg| arg.as_bytes().to_vec()).collect();
    if plan.is_cat_file() {
        stream_args.insert(0, plan.command.as_bytes().to_vec());
    }
    // A daemon reads its own settings: only a command line whose global options change none of them goes there.
    // Those that say which repository and work tree (`-C`, `--git-dir`, `--bare`, `--work-tree`,
    // `--no-replace-objects`) go with the stream, so that the daemon finds the repository git would.
    let daemon_can_answer = !plan.inherits_config
        && plan.steps.iter().all(goes_to_the_daemon)
        && std::env::var_os("GIT_INDEX_FILE").is_none_or(|file| file.is_empty());
    if let Some(socket) = std::env::var_os("CAT_BLOBD_SOCKET").filter(|socket| !socket.is_empty() && daemon_can_answer)
    {
        let var = |name: &str| env.get(OsStr::new(name)).cloned().or_else(|| std::env::var_os(name));
        match client::connect_with_env(&PathBuf::from(socket), None, stream_args.clone(), &var) {
            // Not a repository this daemon serves (a `--root` daemon, a repository outside its root): nothing was
            // touched, the command is answered here.
            Ok(Reply::Elsewhere(_)) => {}
            Ok(reply) => {
                super::log("daemon", &plan.words());
                return Answered::Status(client::exit_status(reply));
            }
            // No daemon there (or not a socket, or not one this process trusts), and nothing was sent: answer here.
            Err(ClientError::Connect { .. } | ClientError::UntrustedServer { .. }) => {}
            Err(err) => return Answered::Failed(err.into()),
        }
    }
    super::log("cat-blobd", &plan.words());
    let err = Command::new("/proc/self/exe")
        .arg0("cat-blobd")
        .args(stream_args.into_iter().map(OsString::from_vec))
        .envs(env)
        .exec();
    Answered::Failed(AnswerError::Exec(err))
}

/// Whether a daemon answers as git would after `step`: it changes only the directory and the variables that a
/// connect hello carries ([`CLIENT_ENV`]).
fn goes_to_the_daemon(step: &Step) -> bool {
    match step {
        Step::Chdir(_) | Step::GitDirFromCwd => true,
        Step::Set(name, _) => CLIENT_ENV.contains(name),
        Step::Config(..) => false,
    }
}

/// Applies `steps` in order: `chdir`s now, and the environment variables they set, returned. `None` (with the
/// working directory put back) when one cannot be applied: git dies there with its own message.
fn apply_steps(steps: &[Step]) -> Result<Option<Env>, AnswerError> {
    let start = match steps.iter().any(|step| matches!(step, Step::Chdir(_))) {
        // Without a way back, git could not be run where it was asked to: leave it all to git.
        true => match std::fs::File::open(".") {
            Ok(start) => Some(start),
            Err(_) => return Ok(None),
        },
        false => None,
    };
    let applied = env_of(steps);
    if applied.is_none()
        && let Some(start) = &start
    {
        // Nothing may run if this fails too: the real git would run in the wrong directory.
        rustix::process::fchdir(start).map_err(|err| AnswerError::Return(err.into()))?;
    }
    Ok(applied)
}

fn env_of(steps: &[Step]) -> Option<Env> {
    let mut env = Env::new();
    let current = |env: &Env, name: &'static str| env.get(OsStr::new(name)).cloned().or_else(|| std::env::var_os(name));
    for step in steps {
        match step {
            Step::Chdir(dir) => std::env::set_current_dir(dir).ok()?,
            Step::Set(name, value) => {
                env.insert(name.into(), value.clone());
            }
            Step::GitDirFromCwd => {
                if current(&env, "GIT_DIR").is_none() {
                    env.insert("GIT_DIR".into(), std::env::current_dir().ok()?.into_os_string());
                }
            }
            Step::Config(key, value) => {
                let old = current(&env, "GIT_CONFIG_PARAMETERS");
                let pushed = parameters::push(old.as_deref().map(OsStr::as_bytes), key, value.as_deref());
                env.insert("GIT_CONFIG_PARAMETERS".into(), OsString::from_vec(pushed));
            }
        }
    }
    Some(env)
}
