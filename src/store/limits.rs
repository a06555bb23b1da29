//! Allocation limits for untrusted repository data: `GIT_ALLOC_LIMIT`, read as git reads it.
//!
//! git dies when any allocation exceeds `GIT_ALLOC_LIMIT` (`memory_limit_check` in wrapper.c); here it lowers
//! the largest object or delta result the store agrees to allocate, so a pack that declares a huge size is
//! refused before anything is allocated.

/// A limit that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// git's `git_env_ulong` message.
    #[error("failed to parse {0}")]
    Parse(&'static str),
}

/// `GIT_ALLOC_LIMIT` from the environment: `None` when unset or 0 (no limit, as in git).
pub fn git_alloc_limit() -> Result<Option<u64>, LimitError> {
    use std::os::unix::ffi::OsStrExt;
    let Some(value) = std::env::var_os("GIT_ALLOC_LIMIT") else { return Ok(None) };
    let limit = parse_git_ulong(value.as_bytes()).ok_or(LimitError::Parse("GIT_ALLOC_LIMIT"))?;
    Ok((limit != 0).then_some(limit))
}

/// git's `git_parse_ulong`: C's `strtoumax(value, &end, 0)` (leading white space, an optional `+`, decimal,
/// `0x` hex or `0` octal), then nothing or exactly one unit `k`, `m`, `g` (any case, powers of 1024). A `-`
/// anywhere, no digits, another suffix or an overflow is an error.
pub fn parse_git_ulong(value: &[u8]) -> Option<u64> {
    if value.is_empty() || value.contains(&b'-') {
        return None;
    }
    let mut i = value.iter().take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')).count();
    if value.get(i) == Some(&b'+') {
        i += 1;
    }
    let hex_digit = |b: Option<&u8>| b.is_some_and(u8::is_ascii_hexdigit);
    let (radix, start) = match (value.get(i), value.get(i + 1)) {
        (Some(b'0'), Some(b'x' | b'X')) if hex_digit(value.get(i + 2)) => (16, i + 2),
        (Some(b'0'), _) => (8, i),
        _ => (10, i),
    };
    let digits = value[start..].iter().take_while(|b| char::from(**b).is_digit(radix)).count();
    if digits == 0 {
        return None;
    }
    let mut number: u64 = 0;
    for &b in &value[start..start + digits] {
        let digit = u64::from(char::from(b).to_digit(radix)?);
        number = number.checked_mul(u64::from(radix))?.checked_add(digit)?;
    }
    let factor: u64 = match &value[start + digits..] {
        b"" => 1,
        b"k" | b"K" => 1 << 10,
        b"m" | b"M" => 1 << 20,
        b"g" | b"G" => 1 << 30,
        _ => return None,
    };
    number.checked_mul(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_like_git() {
        assert_eq!(parse_git_ulong(b"1024"), Some(1024));
        assert_eq!(parse_git_ulong(b"1k"), Some(1024));
        assert_eq!(parse_git_ulong(b"3M"), Some(3 << 20));
        assert_eq!(parse_git_ulong(b"2g"), Some(2 << 30));
        assert_eq!(parse_git_ulong(b"0x10"), Some(16));
        assert_eq!(parse_git_ulong(b"010"), Some(8));
        assert_eq!(parse_git_ulong(b"0"), Some(0));
        assert_eq!(parse_git_ulong(b" +7k"), Some(7 << 10));
        for bad in [&b""[..], b"-1", b"1-", b"k", b"1kb", b"1 k", b"0x", b"09", b"lots", b"99999999999999999999"] {
            assert_eq!(parse_git_ulong(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(parse_git_ulong(b"17179869184g"), None, "overflows after the unit");
    }
}
