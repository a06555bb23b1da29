//! git's global options (`git [options] <command> …`), read as `handle_options` in git.c (v2.55.0) reads them:
//! in order, each turned into what git does with it (a `chdir`, an environment variable, a `-c` pushed onto
//! `GIT_CONFIG_PARAMETERS`). Options that print and exit, start a pager or that the shim does not know leave the
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

/// Appends `key` and `value` to `GIT_CONFIG_PARAMETERS` as `git_config_push_split_parameter` does: each
/// single-quoted (`sq_quote_buf`), separated by a space from what was there.
pub(super) fn push_config_parameter(old: Option<&[u8]>, key: &[u8], value: Option<&[u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(old) = old.filter(|old| !old.is_empty()) {
        out.extend_from_slice(old);
        out.push(b' ');
    }
    sq_quote(&mut out, key);
    out.push(b'=');
    if let Some(value) = value {
        sq_quote(&mut out, value);
    }
    out
}

/// git's `sq_quote_buf`: `'…'`, with `'` and `!` written as `'\''` and `'\!'`.
fn sq_quote(out: &mut Vec<u8>, text: &[u8]) {
    out.push(b'\'');
    for &byte in text {
        if byte == b'\'' || byte == b'!' {
            out.extend_from_slice(b"'\\");
            out.push(byte);
            out.push(b'\'');
        } else {
            out.push(byte);
        }
    }
    out.push(b'\'');
}

/// What cat-blobd makes of a `-c` key and value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyUse {
    /// A key cat-blobd does not read: `GIT_CONFIG_PARAMETERS` carries it to a write-through git.
    Ignored,
    /// One of the booleans cat-blobd reads, with a value both read alike: also given to cat-blobd as a
    /// `GIT_CONFIG_KEY_<n>` (it does not read `GIT_CONFIG_PARAMETERS`).
    Read,
    /// An include, or a value git might read differently from cat-blobd: git alone applies it.
    GitOnly,
}

/// How cat-blobd takes `-c key[=value]`.
pub(super) fn key_use(key: &[u8], value: Option<&[u8]>) -> KeyUse {
    let key = key.to_ascii_lowercase();
    let section = key.split(|&b| b == b'.').next().unwrap_or_default();
    if matches!(section, b"include" | b"includeif") {
        return KeyUse::GitOnly;
    }
    if !matches!(&key[..], b"core.quotepath" | b"core.ignorecase" | b"core.usereplacerefs") {
        return KeyUse::Ignored;
    }
    let plain_bool = |value: &[u8]| {
        let value = value.to_ascii_lowercase();
        matches!(&value[..], b"true" | b"false" | b"yes" | b"no" | b"on" | b"off" | b"1" | b"0")
    };
    match value {
        None => KeyUse::Read,
        Some(value) if plain_bool(value) => KeyUse::Read,
        Some(_) => KeyUse::GitOnly,
    }
}

/// A key git accepts on the command line (`git_config_parse_key`): `section[.subsection].name`, the section and
/// the name of letters, digits and `-`, the name starting with a letter. Any other key is git's error.
pub(super) fn valid_key(key: &[u8]) -> bool {
    let (Some(first_dot), Some(last_dot)) = (key.iter().position(|&b| b == b'.'), key.iter().rposition(|&b| b == b'.'))
    else {
        return false;
    };
    let (section, name) = (&key[..first_dot], &key[last_dot + 1..]);
    let keychars = |part: &[u8]| part.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-');
    !section.is_empty()
        && keychars(section)
        && name.first().is_some_and(u8::is_ascii_alphabetic)
        && keychars(name)
        && !key[first_dot..last_dot].contains(&b'\n')
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

    #[test]
    fn config_parameters_are_quoted_as_git_quotes_them() {
        assert_eq!(push_config_parameter(None, b"a.b", Some(b"it's!")), b"'a.b'='it'\\''s'\\!''".to_vec());
        assert_eq!(push_config_parameter(Some(b"'x.y'='1'"), b"a.b", None), b"'x.y'='1' 'a.b'=".to_vec());
    }

    #[test]
    fn keys_are_checked_as_git_checks_them() {
        assert!(valid_key(b"core.quotePath"));
        assert!(valid_key(b"remote.my.origin.url"));
        assert!(!valid_key(b"nosection"));
        assert!(!valid_key(b".name"));
        assert!(!valid_key(b"a.1name"));
        assert_eq!(key_use(b"Core.QuotePath", Some(b"Off")), KeyUse::Read);
        assert_eq!(key_use(b"core.ignorecase", None), KeyUse::Read);
        assert_eq!(key_use(b"core.ignorecase", Some(b"2")), KeyUse::GitOnly);
        assert_eq!(key_use(b"includeIf.gitdir:x.path", Some(b"f")), KeyUse::GitOnly);
        assert_eq!(key_use(b"user.name", Some(b"x")), KeyUse::Ignored);
        assert_eq!(key_use(b"core.x.quotepath", Some(b"x")), KeyUse::Ignored);
    }
}
