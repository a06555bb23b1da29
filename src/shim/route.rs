//! Which command lines cat-blobd answers: `cat-file` and `fast-import` whose global options, configuration and
//! arguments it takes exactly as git does. Everything else, and anything its own parsers refuse, is the real
//! git's, so that a tool never fails because the shim is in front of git.
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use super::options::{self, Step};
use super::real_git::FileId;
use crate::cat_file::args::{self as cat_file_args, CmdMode};
use crate::config::{self, KeyUse, parameters};

/// A command line cat-blobd answers.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Plan {
    /// What the global options make git do, in order.
    pub(super) steps: Vec<Step>,
    /// `cat-file` or `fast-import`.
    pub(super) command: OsString,
    /// The command's arguments, after the command word.
    pub(super) args: Vec<OsString>,
    /// The environment already sets a key cat-blobd reads (`GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT`): a
    /// daemon, which reads its own configuration, cannot answer.
    pub(super) inherits_config: bool,
}

impl Plan {
    /// The command word and its arguments.
    pub(super) fn words(&self) -> Vec<OsString> {
        std::iter::once(self.command.clone()).chain(self.args.iter().cloned()).collect()
    }

    pub(super) fn is_cat_file(&self) -> bool {
        self.command == "cat-file"
    }
}

/// The plan for `args` (after the program name), or `None` when the real git must run them. `env` reads the
/// process's environment.
pub(super) fn plan(args: &[OsString], env: impl Fn(&OsStr) -> Option<OsString>) -> Option<Plan> {
    let global = options::parse(args, &env).ok()?;
    let at = global.command_at?;
    let command = args[at].clone();
    let rest = &args[at + 1..];
    let answers = match command.as_bytes() {
        b"cat-file" => cat_file_answers(rest),
        b"fast-import" => fast_import_answers(rest) && !started_by_cat_blobd(),
        _ => false,
    };
    if !answers || !global.steps.iter().all(step_config_answers) {
        return None;
    }
    let inherits_config = inherited_config(&env)?.contains(&KeyUse::Read);
    Some(Plan { steps: global.steps, command, args: rest.to_vec(), inherits_config })
}

/// A `-c`/`--config-env` setting git accepts and cat-blobd reads exactly as git does, or not at all.
fn step_config_answers(step: &Step) -> bool {
    match step {
        Step::Config(key, value) => {
            parameters::valid_key(key) && config::key_use(key, value.as_deref()) != KeyUse::GitOnly
        }
        _ => true,
    }
}

/// How cat-blobd takes each setting the environment holds (`GIT_CONFIG_COUNT` and its keys, then
/// `GIT_CONFIG_PARAMETERS`), or `None` when git must read them: one only git reads alike, or variables git would
/// refuse (it says why).
fn inherited_config(env: &impl Fn(&OsStr) -> Option<OsString>) -> Option<Vec<KeyUse>> {
    let mut uses = Vec::new();
    if let Some(count) = env(OsStr::new("GIT_CONFIG_COUNT")) {
        // git reads an empty count as 0, gix-config refuses it: only plain digits stay here.
        let count = count.to_str().filter(|count| !count.is_empty() && count.bytes().all(|b| b.is_ascii_digit()))?;
        let count: usize = count.parse().ok().filter(|&count| count <= 1000)?;
        for n in 0..count {
            let key = env(OsStr::new(&format!("GIT_CONFIG_KEY_{n}")))?;
            let value = env(OsStr::new(&format!("GIT_CONFIG_VALUE_{n}")))?;
            if !parameters::valid_key(key.as_bytes()) {
                return None;
            }
            uses.push(config::key_use(key.as_bytes(), Some(value.as_bytes())));
        }
    }
    if let Some(text) = env(OsStr::new("GIT_CONFIG_PARAMETERS")) {
        let settings = parameters::parse(text.as_bytes()).ok()?;
        uses.extend(settings.iter().map(|(key, value)| config::key_use(key, value.as_deref())));
    }
    (!uses.contains(&KeyUse::GitOnly)).then_some(uses)
}

/// cat-file's arguments as cat-blobd's parser reads them, without the options it refuses (`--textconv`,
/// `--filters`, `--path`) and, in the one-object modes, without a name of a form it does not
/// resolve. Names read from stdin in the batch modes cannot be looked at first: see README.
fn cat_file_answers(args: &[OsString]) -> bool {
    let Ok(parsed) = cat_file_args::parse(args.iter().cloned()) else { return false };
    let transform = matches!(parsed.mode, Some(CmdMode::Textconv | CmdMode::Filters));
    !transform
        && parsed.path.is_none()
        && (parsed.batch.is_some() || parsed.rest.iter().all(|name| !unresolved_name_form(name)))
}

/// A name of a form cat-blobd may refuse, as `cat_file::names` itself finds it without the repository.
fn unresolved_name_form(name: &[u8]) -> bool {
    crate::cat_file::names::refusable(name).is_some()
}

/// fast-import's arguments as cat-blobd takes them: each a `--` flag (git's `parse_argv` refuses anything else
/// with its usage), none of them cat-blobd's own (git refuses those as unknown options).
fn fast_import_answers(args: &[OsString]) -> bool {
    args.iter()
        .map(|arg| arg.as_bytes())
        .all(|arg| arg.starts_with(b"--") && arg != b"--" && arg != b"--cat-blob-fd" && !crate::cli::is_own_flag(arg))
}

/// This `git fast-import` was started by cat-blobd itself: it is a write-through child, which must be the real
/// git (answering it here would start another, and so on).
fn started_by_cat_blobd() -> bool {
    let parent = rustix::process::getppid().map(|pid| pid.as_raw_nonzero().get()).unwrap_or(0);
    let own = FileId::own();
    own.is_some() && FileId::of(std::path::Path::new(&format!("/proc/{parent}/exe"))) == own
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(words: &[&str]) -> Option<Plan> {
        let args: Vec<OsString> = words.iter().map(OsString::from).collect();
        plan(&args, |_| None)
    }

    #[test]
    fn cat_file_and_fast_import_are_answered_the_rest_goes_to_git() {
        assert!(plan_of(&["-C", "x", "cat-file", "--batch-check"]).is_some_and(|plan| plan.is_cat_file()));
        assert!(plan_of(&["cat-file", "-p", "HEAD:file"]).is_some());
        for answered in [
            "HEAD@{1}",
            "@{-1}",
            ":file",
            ":2:file",
            ":/message",
            "HEAD^{/message}",
            "@{u}",
            "main@{push}",
            "HEAD@{yesterday}",
            "main@{2 weeks ago}:file",
            "@{last friday}~1",
        ] {
            assert!(plan_of(&["cat-file", "-p", answered]).is_some(), "{answered}");
        }
        assert!(plan_of(&["--git-dir=g", "fast-import", "--quiet", "--cat-blob-fd=3"]).is_some());
        assert!(plan_of(&["-c", "user.name=x", "cat-file", "-t", "HEAD"]).is_some());
        assert!(plan_of(&["-c", "mailmap.file=m", "cat-file", "--batch", "--use-mailmap"]).is_some());
        for refused in [
            &["rev-parse", "HEAD"][..],
            &["--version"],
            &[],
            &["-p", "cat-file", "-p", "HEAD"],
            &["cat-file", "--textconv", "HEAD:f"],
            &["cat-file", "--frobnicate"],
            &["cat-file", "-p", "@{-1}@{upstream}"],
            &["-c", "branch.main.merge=refs/heads/x", "cat-file", "-p", "main@{u}"],
            &["cat-file", "-p", "HEAD:./file"],
            &["cat-file", "-p", ":../file"],
            &["fast-import", "--threads=2"],
            &["fast-import", "--git-dir=x"],
            &["fast-import", "--cat-blob-fd", "3"],
            &["fast-import", "-h"],
            &["fast-import", "--help"],
            &["-c", "core.quotePath=maybe", "cat-file", "--batch"],
            &["-c", "core.abbrev=12", "cat-file", "--batch"],
            &["--config-env=core.bare=SET", "cat-file", "--batch"],
            &["-c", "nosection", "cat-file", "--batch"],
        ] {
            assert_eq!(plan_of(refused), None, "{refused:?}");
        }
    }

    #[test]
    fn an_inherited_config_is_read_here_unless_only_git_reads_it_alike() {
        let args: Vec<OsString> = ["cat-file", "--batch"].iter().map(OsString::from).collect();
        let parameters =
            |value: &'static str| move |name: &OsStr| (name == "GIT_CONFIG_PARAMETERS").then(|| OsString::from(value));
        let inherits = |plan: Option<Plan>| plan.map(|plan| plan.inherits_config);
        assert_eq!(inherits(plan(&args, parameters("'user.name'='x'"))), Some(false));
        assert_eq!(inherits(plan(&args, parameters("'Core.QuotePath'='false'"))), Some(true));
        assert_eq!(inherits(plan(&args, parameters("'core.abbrev'='12'"))), None);
        assert_eq!(inherits(plan(&args, parameters("'core.quotepath'=false"))), None);
        let count = |count: &'static str| {
            move |name: &OsStr| match name.to_str() {
                Some("GIT_CONFIG_COUNT") => Some(OsString::from(count)),
                Some("GIT_CONFIG_KEY_0") => Some(OsString::from("core.ignoreCase")),
                Some("GIT_CONFIG_VALUE_0") => Some(OsString::from("true")),
                _ => None,
            }
        };
        assert_eq!(inherits(plan(&args, count("1"))), Some(true));
        assert_eq!(inherits(plan(&args, count("0"))), Some(false));
        assert_eq!(inherits(plan(&args, count(""))), None);
        assert_eq!(inherits(plan(&args, count("+1"))), None);
        assert_eq!(inherits(plan(&args, count("2"))), None);
        assert_eq!(inherits(plan(&args, count("1x"))), None);
    }
}
