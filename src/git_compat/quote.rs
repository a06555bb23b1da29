//! git's C-style path quoting (quote.c): `unquote_c_style` for quoted paths in the stream and in alternates
//! files, `quote_c_style` for paths printed in `ls` responses.

/// Why a quoted string could not be unquoted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnquoteError {
    /// Not starting with `"`, an unknown escape, a bad octal escape, or no closing quote.
    Invalid,
}

/// git's `unquote_c_style`: `input` starts with `"`; returns the unquoted bytes and what follows the closing
/// quote. Escapes: `\a \b \f \n \r \t \v \\ \"` and three octal digits whose first is 0–3.
pub(crate) fn unquote_c_style(input: &[u8]) -> Result<(Vec<u8>, &[u8]), UnquoteError> {
    let mut rest = input.strip_prefix(b"\"").ok_or(UnquoteError::Invalid)?;
    let mut out = Vec::with_capacity(rest.len());
    loop {
        let special = rest.iter().position(|&b| b == b'"' || b == b'\\').ok_or(UnquoteError::Invalid)?;
        out.extend_from_slice(&rest[..special]);
        let (&ch, after) = rest[special..].split_first().expect("position found a byte");
        if ch == b'"' {
            return Ok((out, after));
        }
        let (&escaped, after) = after.split_first().ok_or(UnquoteError::Invalid)?;
        rest = after;
        out.push(match escaped {
            b'a' => 0x07,
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'v' => 0x0b,
            b'\\' | b'"' => escaped,
            b'0'..=b'3' => {
                let digits = rest.get(..2).ok_or(UnquoteError::Invalid)?;
                if !digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                    return Err(UnquoteError::Invalid);
                }
                rest = &rest[2..];
                ((escaped - b'0') << 6) | ((digits[0] - b'0') << 3) | (digits[1] - b'0')
            }
            _ => return Err(UnquoteError::Invalid),
        });
    }
}

/// Does git's `quote_c_style` need to quote this byte? Controls, DEL, `"` and `\` always; bytes ≥ 0x80 only
/// when `core.quotePath` is true.
fn needs_quote(byte: u8, quote_path: bool) -> bool {
    byte < 0x20 || byte == 0x7f || byte == b'"' || byte == b'\\' || (byte >= 0x80 && quote_path)
}

/// git's `quote_c_style(name, out, NULL, 0)`: `name` as is when nothing needs quoting, else wrapped in `"…"`
/// with C escapes and three-digit octal for other bytes.
pub(crate) fn quote_c_style(name: &[u8], quote_path: bool, out: &mut Vec<u8>) {
    if !name.iter().any(|&b| needs_quote(b, quote_path)) {
        out.extend_from_slice(name);
        return;
    }
    out.push(b'"');
    for &byte in name {
        if !needs_quote(byte, quote_path) {
            out.push(byte);
            continue;
        }
        out.push(b'\\');
        match byte {
            0x07 => out.push(b'a'),
            0x08 => out.push(b'b'),
            b'\t' => out.push(b't'),
            b'\n' => out.push(b'n'),
            0x0b => out.push(b'v'),
            0x0c => out.push(b'f'),
            b'\r' => out.push(b'r'),
            b'"' | b'\\' => out.push(byte),
            _ => out.extend_from_slice(&[b'0' + (byte >> 6), b'0' + ((byte >> 3) & 7), b'0' + (byte & 7)]),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quoted(name: &[u8], quote_path: bool) -> Vec<u8> {
        let mut out = Vec::new();
        quote_c_style(name, quote_path, &mut out);
        out
    }

    #[test]
    fn quotes_like_git() {
        assert_eq!(quoted(b"with space", true), b"with space");
        assert_eq!(quoted(b"with\ttab", true), br#""with\ttab""#);
        assert_eq!(
            quoted(b"a\x01\x7f\x1b\x07\x08\x0c\x0b\r\\\"\xe9 z", true),
            br#""a\001\177\033\a\b\f\v\r\\\"\351 z""#
        );
        assert_eq!(quoted("ünï".as_bytes(), true), br#""\303\274n\303\257""#);
        assert_eq!(quoted("ünï".as_bytes(), false), "ünï".as_bytes());
    }

    #[test]
    fn unquote_round_trips_and_rejects_what_git_rejects() {
        for name in [&b"plain"[..], b"a\x01\x7f\"\\\n\xff", b""] {
            let q = quoted(name, true);
            let q = if q.first() == Some(&b'"') { q } else { [&b"\""[..], &q, b"\""].concat() };
            assert_eq!(unquote_c_style(&q), Ok((name.to_vec(), &b""[..])));
        }
        assert_eq!(unquote_c_style(br#""a" rest"#), Ok((b"a".to_vec(), &b" rest"[..])));
        for bad in [&br#""\x""#[..], br#""\8""#, br#""\400""#, br#""\01""#, br#""open"#, b"noquote", br#""\"#] {
            assert_eq!(unquote_c_style(bad), Err(UnquoteError::Invalid), "{:?}", bad.escape_ascii());
        }
    }
}
