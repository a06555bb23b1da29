//! git's `git_parse_ulong` (parse.c), which reads sizes: `--big-file-threshold`, `max-pack-size`,
//! `GIT_ALLOC_LIMIT`, and cat-blobd's own cache sizes.
use super::strtoumax::strtoumax_errno;

/// git's `git_parse_ulong`: C's `strtoumax(value, &end, 0)` (leading white space, an optional `+`, decimal,
/// `0x` hex or `0` octal), then nothing or exactly one unit `k`, `m`, `g` (any case, powers of 1024). A `-`
/// anywhere, no digits, another suffix or an overflow (before or after the unit) is an error.
pub(crate) fn git_parse_ulong(value: &[u8]) -> Option<u64> {
    if value.is_empty() || value.contains(&b'-') {
        return None;
    }
    let converted = strtoumax_errno(value, 0)?;
    if converted.overflowed {
        return None;
    }
    let factor: u64 = match value[converted.end..].to_ascii_lowercase().as_slice() {
        b"" => 1,
        b"k" => 1 << 10,
        b"m" => 1 << 20,
        b"g" => 1 << 30,
        _ => return None,
    };
    converted.value.checked_mul(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each accepted (with its value) or refused as `git fast-import --big-file-threshold=<value>` does.
    #[test]
    fn sizes_parse_like_git() {
        for (value, expected) in [
            (&b"1024"[..], 1024),
            (b"1k", 1 << 10),
            (b"3M", 3 << 20),
            (b"0x10", 16),
            (b"0X10m", 16 << 20),
            (b"0x1K", 1 << 10),
            (b" 0x1fK", 31 << 10),
            (b"010", 8),
            (b"0", 0),
            (b" +7k", 7 << 10),
            (b"16777215g", 16_777_215 << 30),
            (b"18446744073709551615", u64::MAX),
        ] {
            assert_eq!(git_parse_ulong(value), Some(expected), "{:?}", value.escape_ascii());
        }
        for bad in [
            &b""[..],
            b"-1",
            b"1-",
            b"k",
            b"1kb",
            b"1 k",
            b"0x",
            b"09",
            b"lots",
            b"99999999999999999999",
            b"17179869184g",
        ] {
            assert_eq!(git_parse_ulong(bad), None, "{:?}", bad.escape_ascii());
        }
    }
}
