//! C's `strtoumax` and `strtoul` (glibc, LP64: both are the same 64-bit conversion), which git uses for mark
//! numbers, `data` lengths, `--depth`/`--cat-blob-fd` arguments and size settings; and `strtol` (base 10),
//! which git's date parser uses.

/// What one conversion reports: the value, where parsing stopped, and whether C would set `errno` to `ERANGE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Converted {
    /// The value; `u64::MAX` on overflow, negated modulo 2^64 after a `-`.
    pub value: u64,
    /// Bytes consumed (C's `end - s`).
    pub end: usize,
    /// The digits did not fit in 64 bits (C sets `errno = ERANGE`).
    pub overflowed: bool,
}

/// C's `strtoumax(s, &end, base)` for base 0 (`0x` hex, `0` octal, else decimal) or 10: leading white space,
/// an optional sign, then digits. Returns `None` when there are no digits (C then sets `end` back to `s`).
pub(crate) fn strtoumax_errno(s: &[u8], base: u32) -> Option<Converted> {
    assert!(base == 0 || base == 10, "only the bases git uses");
    let mut i = s.iter().take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')).count();
    let negative = s.get(i) == Some(&b'-');
    if matches!(s.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    let is_hex = |b: Option<&u8>| b.is_some_and(u8::is_ascii_hexdigit);
    let (radix, start) = match (base, s.get(i), s.get(i + 1)) {
        // glibc takes `0x` as a prefix only when a hex digit follows; else the `0` alone is the number.
        (0, Some(b'0'), Some(b'x' | b'X')) if is_hex(s.get(i + 2)) => (16, i + 2),
        (0, Some(b'0'), _) => (8, i),
        _ => (10, i),
    };
    let digits = s[start..].iter().take_while(|b| char::from(**b).is_digit(radix)).count();
    if digits == 0 {
        return None;
    }
    let value = s[start..start + digits].iter().try_fold(0u64, |acc, &d| {
        acc.checked_mul(u64::from(radix))?.checked_add(u64::from(char::from(d).to_digit(radix)?))
    });
    let (value, overflowed) = match value {
        None => (u64::MAX, true),
        Some(v) if negative => (v.wrapping_neg(), false),
        Some(v) => (v, false),
    };
    Some(Converted { value, end: start + digits, overflowed })
}

/// [`strtoumax_errno`] without `errno`: the value and the bytes consumed, as most of git's callers use it.
pub(crate) fn strtoumax(s: &[u8], base: u32) -> Option<(u64, usize)> {
    strtoumax_errno(s, base).map(|c| (c.value, c.end))
}

/// C's `strtol(s, &end, 10)` (glibc, LP64): like [`strtoumax`] for base 10, but signed, saturating at
/// `i64::MAX` and `i64::MIN`. `None` when there are no digits.
pub(crate) fn strtol(s: &[u8]) -> Option<(i64, usize)> {
    let converted = strtoumax_errno(s, 10)?;
    let negative = s[..converted.end].contains(&b'-');
    let magnitude = if converted.overflowed {
        u64::MAX
    } else if negative {
        converted.value.wrapping_neg()
    } else {
        converted.value
    };
    let value = match negative {
        true if magnitude > 1 << 63 => i64::MIN,
        true => (magnitude as i64).wrapping_neg(),
        false => i64::try_from(magnitude).unwrap_or(i64::MAX),
    };
    Some((value, converted.end))
}

/// The check of git's `ulong_arg` (fast-import.c) around `strtoul(arg, &end, 0)`: the whole of `arg` is one
/// number, and there is no `-` anywhere. `None` where git dies `<option>: argument must be a non-negative integer`.
pub(crate) fn ulong_arg(arg: &[u8]) -> Option<u64> {
    let (value, used) = strtoumax(arg, 0)?;
    (used == arg.len() && !arg.contains(&b'-')).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (input, base, value, end, ERANGE), each printed by glibc 2.36's `strtoumax` (and `strtoul`, identical).
    const GLIBC: &[(&[u8], u32, u64, usize, bool)] = &[
        (b"7x", 10, 7, 1, false),
        (b" \t+01", 10, 1, 5, false),
        (b" \n\x0b\x0c\r 5", 0, 5, 7, false),
        (b"-1", 0, u64::MAX, 2, false),
        (b"-5", 10, u64::MAX - 4, 2, false),
        (b"  -0", 0, 0, 4, false),
        (b"99999999999999999999999", 10, u64::MAX, 23, true),
        (b"-99999999999999999999999", 0, u64::MAX, 24, true),
        (b"18446744073709551615", 0, u64::MAX, 20, false),
        (b"18446744073709551616", 10, u64::MAX, 20, true),
        (b"0x", 0, 0, 1, false),
        (b"0x-1", 0, 0, 1, false),
        (b"0x1g", 0, 1, 3, false),
        (b"0x1g", 10, 0, 1, false),
        (b"0X1F", 0, 31, 4, false),
        (b"+0x10", 0, 16, 5, false),
        (b"-0x10", 0, u64::MAX - 15, 5, false),
        (b"0xffffffffffffffff", 0, u64::MAX, 18, false),
        (b"0x10000000000000000", 0, u64::MAX, 19, true),
        (b"012", 0, 10, 3, false),
        (b"012", 10, 12, 3, false),
        (b"09", 0, 0, 1, false),
        (b"09", 10, 9, 2, false),
        (b"01777777777777777777777", 0, u64::MAX, 23, false),
        (b"02000000000000000000000", 0, u64::MAX, 23, true),
        (b"0b101", 0, 0, 1, false),
        (b"1e3", 0, 1, 1, false),
    ];

    #[test]
    fn conversions_match_glibc() {
        for &(input, base, value, end, overflowed) in GLIBC {
            let got = strtoumax_errno(input, base);
            assert_eq!(got, Some(Converted { value, end, overflowed }), "{:?} base {base}", input.escape_ascii());
        }
    }

    #[test]
    fn ulong_arg_takes_whole_non_negative_numbers() {
        assert_eq!(ulong_arg(b"0x10"), Some(16));
        assert_eq!(ulong_arg(b"010"), Some(8));
        assert_eq!(ulong_arg(b" +3"), Some(3));
        for bad in [&b""[..], b"-1", b"-0", b"1x", b"3 ", b"0x"] {
            assert_eq!(ulong_arg(bad), None, "{:?}", bad.escape_ascii());
        }
    }

    #[test]
    fn strtol_saturates_as_glibc() {
        assert_eq!(strtol(b" -12x"), Some((-12, 4)));
        assert_eq!(strtol(b"+7"), Some((7, 2)));
        assert_eq!(strtol(b"9223372036854775808"), Some((i64::MAX, 19)));
        assert_eq!(strtol(b"-9223372036854775808"), Some((i64::MIN, 20)));
        assert_eq!(strtol(b"-99999999999999999999"), Some((i64::MIN, 21)));
        assert_eq!(strtol(b"-"), None);
    }

    #[test]
    fn no_digits_is_none_as_c_resets_end() {
        for input in [&b"abc"[..], b" ", b"-", b"+", b"+-1", b""] {
            assert_eq!(strtoumax(input, 0), None, "{:?}", input.escape_ascii());
            assert_eq!(strtoumax(input, 10), None, "{:?}", input.escape_ascii());
        }
    }
}
