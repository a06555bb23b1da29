//! `GIT_CONFIG_PARAMETERS`, the variable through which `git -c <key>=<value>` and `--config-env` hand settings
//! to the commands git runs: written as `git_config_push_split_parameter` writes it and read as
//! `git_config_from_parameters` reads it (config.c and quote.c, v2.55.0).

/// One setting: the key as given (git lowercases the section and the name when it reads it), and the value
/// (`None`: a bare key, a boolean true).
pub(crate) type Parameter = (Vec<u8>, Option<Vec<u8>>);

/// Why git would refuse the variable: it says `error: <this>`, then dies with `unable to parse command-line
/// config`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParametersError {
    #[error("bogus format in GIT_CONFIG_PARAMETERS")]
    BogusFormat,
    #[error("bogus config parameter: {}", crate::fatal::Bytes(.0))]
    BogusParameter(Vec<u8>),
    #[error("empty config key")]
    EmptyKey,
    #[error("invalid key: {}", crate::fatal::Bytes(.0))]
    InvalidKey(Vec<u8>),
}

/// The settings in `text`, in order, as git's `parse_config_env_list` reads them: `'key'='value'` (or `'key'=`,
/// a bare key), or the old `'key=value'`, single-quoted as `sq_quote_buf` quotes, separated by white space.
pub(crate) fn parse(text: &[u8]) -> Result<Vec<Parameter>, ParametersError> {
    let mut parameters = Vec::new();
    let mut rest = Some(text);
    while let Some(cur) = rest.filter(|cur| !cur.is_empty()) {
        let (key, after) = sq_dequote_step(cur).ok_or(ParametersError::BogusFormat)?;
        let after = match after {
            None => {
                parameters.push(old_form(key)?);
                None
            }
            Some(after) if is_space(after[0]) => {
                parameters.push(old_form(key)?);
                Some(after)
            }
            Some(after) if after[0] == b'=' => {
                let (value, after) = value_after_equals(&after[1..])?;
                parameters.push(checked(key, value)?);
                after
            }
            Some(_) => return Err(ParametersError::BogusFormat),
        };
        rest = after.map(|after| &after[after.iter().take_while(|&&b| is_space(b)).count()..]);
    }
    Ok(parameters)
}

/// The old form, `'key=value'` (`git_config_parse_parameter`): split at the first `=`; none is a bare key.
fn old_form(text: Vec<u8>) -> Result<Parameter, ParametersError> {
    let mut pair = text.splitn(2, |&b| b == b'=');
    let key = pair.next().unwrap_or_default();
    if key.is_empty() {
        return Err(ParametersError::BogusParameter(text));
    }
    checked(key.to_vec(), pair.next().map(<[u8]>::to_vec))
}

/// A value (`None`: a bare key), and the text after it (`None`: the end).
type ValueAndRest<'a> = (Option<Vec<u8>>, Option<&'a [u8]>);

/// After `'key'=`: a quoted value, or nothing (a bare key) before white space or the end.
fn value_after_equals(cur: &[u8]) -> Result<ValueAndRest<'_>, ParametersError> {
    match cur.first() {
        Some(b'\'') => match sq_dequote_step(cur).ok_or(ParametersError::BogusFormat)? {
            (value, None) => Ok((Some(value), None)),
            (value, Some(after)) if is_space(after[0]) => Ok((Some(value), Some(after))),
            _ => Err(ParametersError::BogusFormat),
        },
        None => Ok((None, None)),
        Some(&b) if is_space(b) => Ok((None, Some(cur))),
        Some(_) => Err(ParametersError::BogusFormat),
    }
}

/// `config_parse_pair`: the key must be one git accepts.
fn checked(key: Vec<u8>, value: Option<Vec<u8>>) -> Result<Parameter, ParametersError> {
    if key.is_empty() {
        return Err(ParametersError::EmptyKey);
    }
    if !valid_key(&key) {
        return Err(ParametersError::InvalidKey(key));
    }
    Ok((key, value))
}

/// git's `sq_dequote_step`: one single-quoted word at the start of `cur` (`'\''` and `'\!'` inside stand for
/// `'` and `!`), and what follows it (`None` at the end of the text). `None` if `cur` does not start with a
/// complete quoted word.
fn sq_dequote_step(cur: &[u8]) -> Option<(Vec<u8>, Option<&[u8]>)> {
    if cur.first() != Some(&b'\'') {
        return None;
    }
    let mut word = Vec::new();
    let mut at = 1;
    loop {
        match *cur.get(at)? {
            b'\'' => {}
            byte => {
                word.push(byte);
                at += 1;
                continue;
            }
        }
        // Out of the quotes: a backslashed `'` or `!` resumes them; anything else ends the word.
        match (cur.get(at + 1), cur.get(at + 2), cur.get(at + 3)) {
            (None, ..) => return Some((word, None)),
            (Some(b'\\'), Some(&escaped @ (b'\'' | b'!')), Some(b'\'')) => {
                word.push(escaped);
                at += 4;
            }
            _ => return Some((word, Some(&cur[at + 1..]))),
        }
    }
}

/// git's `isspace` (sane_ctype): space, tab, LF and CR only.
fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// Appends `key` and `value` to `old` (the current `GIT_CONFIG_PARAMETERS`) as `git_config_push_split_parameter`
/// does: each single-quoted (`sq_quote_buf`), separated by a space from what was there.
pub(crate) fn push(old: Option<&[u8]>, key: &[u8], value: Option<&[u8]>) -> Vec<u8> {
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

/// A key git accepts (`git_config_parse_key`): `section[.subsection].name`, the section and the name of letters,
/// digits and `-`, the name starting with a letter, no LF in the subsection.
pub(crate) fn valid_key(key: &[u8]) -> bool {
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

    fn pairs(text: &str) -> Result<Vec<(String, Option<String>)>, ParametersError> {
        let string = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
        parse(text.as_bytes()).map(|list| list.into_iter().map(|(k, v)| (string(k), v.map(string))).collect())
    }

    fn pair(key: &str, value: Option<&str>) -> (String, Option<String>) {
        (key.to_owned(), value.map(str::to_owned))
    }

    #[test]
    fn what_push_writes_parse_reads_back() {
        let mut text = push(None, b"a.b", Some(b"it's!"));
        assert_eq!(text, b"'a.b'='it'\\''s'\\!''".to_vec());
        text = push(Some(&text), b"Core.Bare", None);
        text = push(Some(&text), b"x.sub.y", Some(b""));
        assert_eq!(
            pairs(std::str::from_utf8(&text).unwrap()),
            Ok(vec![pair("a.b", Some("it's!")), pair("Core.Bare", None), pair("x.sub.y", Some(""))])
        );
    }

    #[test]
    fn the_old_form_and_white_space_are_read_as_git_reads_them() {
        assert_eq!(
            pairs("'a.b=1=2'\t\n'c.d' 'e.f'=\r'g.h'='' "),
            Ok(vec![pair("a.b", Some("1=2")), pair("c.d", None), pair("e.f", None), pair("g.h", Some(""))])
        );
        assert_eq!(pairs(""), Ok(vec![]));
    }

    #[test]
    fn what_git_refuses_is_refused_with_its_message() {
        assert_eq!(pairs("a.b=1"), Err(ParametersError::BogusFormat));
        assert_eq!(pairs(" 'a.b'"), Err(ParametersError::BogusFormat));
        assert_eq!(pairs("'a.b'x"), Err(ParametersError::BogusFormat));
        assert_eq!(pairs("'a.b'=x"), Err(ParametersError::BogusFormat));
        assert_eq!(pairs("'a.b'='x'y"), Err(ParametersError::BogusFormat));
        assert_eq!(pairs("'a.b"), Err(ParametersError::BogusFormat));
        assert_eq!(pairs("'=x'"), Err(ParametersError::BogusParameter(b"=x".to_vec())));
        assert_eq!(pairs("''='x'"), Err(ParametersError::EmptyKey));
        assert_eq!(pairs("'nodot'"), Err(ParametersError::InvalidKey(b"nodot".to_vec())));
    }

    #[test]
    fn keys_are_checked_as_git_checks_them() {
        assert!(valid_key(b"core.quotePath"));
        assert!(valid_key(b"remote.my.origin.url"));
        assert!(!valid_key(b"nosection"));
        assert!(!valid_key(b".name"));
        assert!(!valid_key(b"a.1name"));
        assert!(!valid_key(b"a.sub\nsection.name"));
    }
}
