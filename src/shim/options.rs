//! git's global options (`git [options] <command> …`), read as `handle_options` in git.c (v2.55.0) reads them:
//! in order, each turned into what git does with it (a `chdir`, an environment variable, a `-c` pushed onto
//! `GIT_CONFIG_PARAMETERS`, see [`crate::config::parameters`]). Options that print and exit, start a pager or that the shim does not know leave the
//! whole command to the real git, which then reads them itself.
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// One thing a global option makes git do, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    /// `-C <dir>` (an empty `<dir>` is no step, as in git).
    Chdir(OsString),
    /// `setenv(name, value, 1)`.
    Set(&'static str, OsString),
    /// `--bare`: `GIT_DIR` becomes the current directory unless it is already set (`setenv(…, 0)`).
    GitDirFromCwd,
    /// `-c <key>[=<value>]`, `--config-env <key>=<env>`: `key`, and the value (`None`: a bare boolean key).
    Config(Vec<u8>, Option<Vec<u8>>),
}

/// The global options, read.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Global {
    pub(super) steps: Vec<Step>,
    /// Where the command word is in the arguments (after the program name), if there is one.
    pub(super) command_at: Option<usize>,
}

/// Why the real git must read the command line itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refused {
    /// `--help`, `-v`, `--exec-path`, `--list-cmds=…`: git prints something and exits.
    Query,
    /// `-p`/`--paginate`: git starts a pager.
    Pager,
    /// An option git reads in a way the shim does not copy (`--shallow-file`), or does not know.
    Other,
    /// A missing value, a bad `-c` or `--config-env`: git's own message.
    Malformed,
}

/// Reads the global options in `args` (after the program name). `env` looks up an environment variable as the
/// process has it (for `--config-env`).
pub(super) fn parse(args: &[OsString], env: impl Fn(&OsStr) -> Option<OsString>) -> Result<Global, Refused> {
    let mut global = Global::default();
    let mut at = 0;
    while let Some(arg) = args.get(at) {
        let arg = arg.as_bytes();
        if arg.first() != Some(&b'-') {
            global.command_at = Some(at);
            break;
        }
        let mut value = || {
            at += 1;
            args.get(at).cloned().ok_or(Refused::Malformed)
        };
        let step = match arg {
            b"--help" | b"-h" | b"--version" | b"-v" | b"--html-path" | b"--man-path" | b"--info-path" => {
                return Err(Refused::Query);
            }
            b"--exec-path" => return Err(Refused::Query),
            _ if arg.starts_with(b"--list-cmds=") => return Err(Refused::Query),
            b"-p" | b"--paginate" => return Err(Refused::Pager),
            b"-P" | b"--no-pager" => None,
            b"--no-lazy-fetch" => set("GIT_NO_LAZY_FETCH", b"1"),
            b"--no-replace-objects" => set("GIT_NO_REPLACE_OBJECTS", b"1"),
            b"--git-dir" => Some(Step::Set("GIT_DIR", value()?)),
            b"--namespace" => Some(Step::Set("GIT_NAMESPACE", value()?)),
            b"--work-tree" => Some(Step::Set("GIT_WORK_TREE", value()?)),
            b"--attr-source" => Some(Step::Set("GIT_ATTR_SOURCE", value()?)),
            b"--bare" => {
                global.steps.push(Step::GitDirFromCwd);
                set("GIT_IMPLICIT_WORK_TREE", b"0")
            }
            b"-c" => Some(config_parameter(value()?.as_bytes())),
            b"--config-env" => Some(config_env(value()?.as_bytes(), &env)?),
            b"--literal-pathspecs" => set("GIT_LITERAL_PATHSPECS", b"1"),
            b"--no-literal-pathspecs" => set("GIT_LITERAL_PATHSPECS", b"0"),
            b"--glob-pathspecs" => set("GIT_GLOB_PATHSPECS", b"1"),
            b"--noglob-pathspecs" => set("GIT_NOGLOB_PATHSPECS", b"1"),
            b"--icase-pathspecs" => set("GIT_ICASE_PATHSPECS", b"1"),
            b"--no-optional-locks" => set("GIT_OPTIONAL_LOCKS", b"0"),
            b"--no-advice" => set("GIT_ADVICE", b"0"),
            b"-C" => Some(value()?).filter(|dir| !dir.is_empty()).map(Step::Chdir),
            _ => with_inline_value(arg, &env)?,
        };
        global.steps.extend(step);
        at += 1;
    }
    Ok(global)
}

fn set(name: &'static str, value: &[u8]) -> Option<Step> {
    Some(Step::Set(name, OsString::from_vec(value.to_vec())))
}

/// The `--name=value` spellings.
fn with_inline_value(arg: &[u8], env: &impl Fn(&OsStr) -> Option<OsString>) -> Result<Option<Step>, Refused> {
    let (name, value) = match arg.iter().position(|&b| b == b'=') {
        Some(eq) => (&arg[..eq], &arg[eq + 1..]),
        None => return Err(Refused::Other),
    };
    let variable = match name {
        b"--exec-path" => "GIT_EXEC_PATH",
        b"--git-dir" => "GIT_DIR",
        b"--namespace" => "GIT_NAMESPACE",
        b"--work-tree" => "GIT_WORK_TREE",
        b"--attr-source" => "GIT_ATTR_SOURCE",
        b"--config-env" => return config_env(value, env).map(Some),
        _ => return Err(Refused::Other),
    };
    Ok(set(variable, value))
}

/// `-c <text>`: split at the first `=` (git prefers keeping the value intact); no `=` is a bare boolean.
fn config_parameter(text: &[u8]) -> Step {
    match text.iter().position(|&b| b == b'=') {
        Some(eq) => Step::Config(text[..eq].to_vec(), Some(text[eq + 1..].to_vec())),
        None => Step::Config(text.to_vec(), None),
    }
}

/// `--config-env <key>=<env>`: split at the last `=`; the variable must be set (git dies otherwise).
fn config_env(spec: &[u8], env: &impl Fn(&OsStr) -> Option<OsString>) -> Result<Step, Refused> {
    let eq = spec.iter().rposition(|&b| b == b'=').ok_or(Refused::Malformed)?;
    let name = &spec[eq + 1..];
    if name.is_empty() {
        return Err(Refused::Malformed);
    }
    let value = env(OsStr::from_bytes(name)).ok_or(Refused::Malformed)?;
    Ok(Step::Config(spec[..eq].to_vec(), Some(value.into_vec())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_words(words: &[&str]) -> Result<Global, Refused> {
        let args: Vec<OsString> = words.iter().map(OsString::from).collect();
        parse(&args, |name| (name == "SET").then(|| OsString::from("from-env")))
    }

    fn os(text: &str) -> OsString {
        OsString::from(text)
    }

    #[test]
    fn options_become_steps_in_order() {
        let global = parse_words(&[
            "-C",
            "a",
            "--git-dir",
            "g",
            "--work-tree=w",
            "-C",
            "",
            "--bare",
            "-c",
            "x.y=1=2",
            "--config-env=a.b=SET",
            "-P",
            "cat-file",
            "-p",
        ])
        .unwrap();
        assert_eq!(global.command_at, Some(12));
        assert_eq!(
            global.steps,
            vec![
                Step::Chdir(os("a")),
                Step::Set("GIT_DIR", os("g")),
                Step::Set("GIT_WORK_TREE", os("w")),
                Step::GitDirFromCwd,
                Step::Set("GIT_IMPLICIT_WORK_TREE", os("0")),
                Step::Config(b"x.y".to_vec(), Some(b"1=2".to_vec())),
                Step::Config(b"a.b".to_vec(), Some(b"from-env".to_vec())),
            ]
        );
    }

    #[test]
    fn git_reads_the_rest_itself() {
        assert_eq!(parse_words(&["--version"]), Err(Refused::Query));
        assert_eq!(parse_words(&["--exec-path"]), Err(Refused::Query));
        assert_eq!(parse_words(&["-p", "cat-file"]), Err(Refused::Pager));
        assert_eq!(parse_words(&["--frobnicate", "cat-file"]), Err(Refused::Other));
        assert_eq!(parse_words(&["--shallow-file", "x", "cat-file"]), Err(Refused::Other));
        assert_eq!(parse_words(&["--git-dir"]), Err(Refused::Malformed));
        assert_eq!(parse_words(&["--config-env=a.b=UNSET", "cat-file"]), Err(Refused::Malformed));
        assert_eq!(parse_words(&["--config-env=a.b=", "cat-file"]), Err(Refused::Malformed));
        assert_eq!(parse_words(&[]).unwrap().command_at, None);
    }
}
