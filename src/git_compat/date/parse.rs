//! git's `parse_date_basic` (date.c): a date in any of the forms git writes or that mail and ISO 8601 use
//! (`Thu, 1 Jan 2026 12:00:00 +0100`, `2026-01-01 12:00`, `@<seconds> <tz>`, `1767225600`), read word by word
//! into a `struct tm`. `approx` tries this first, and reuses its word matchers.
use libc::tm;

use super::tm::{gmtime, mktime, real_now, tm_to_time_t, zeroed};
use crate::git_compat::strtoumax::{strtol, strtoumax};

/// The byte at `i`, or C's terminating NUL past the end.
pub(super) fn at(s: &[u8], i: usize) -> u8 {
    s.get(i).copied().unwrap_or(0)
}

pub(super) const MONTH_NAMES: [&[u8]; 12] = [
    b"January",
    b"February",
    b"March",
    b"April",
    b"May",
    b"June",
    b"July",
    b"August",
    b"September",
    b"October",
    b"November",
    b"December",
];

pub(super) const WEEKDAY_NAMES: [&[u8]; 7] =
    [b"Sundays", b"Mondays", b"Tuesdays", b"Wednesdays", b"Thursdays", b"Fridays", b"Saturdays"];

/// git's `timezone_names`: name, hours east of UTC, and one more hour in summer ("we like summer").
const TIMEZONE_NAMES: &[(&[u8], i32, i32)] = &[
    (b"IDLW", -12, 0),
    (b"NT", -11, 0),
    (b"CAT", -10, 0),
    (b"HST", -10, 0),
    (b"HDT", -10, 1),
    (b"YST", -9, 0),
    (b"YDT", -9, 1),
    (b"PST", -8, 0),
    (b"PDT", -8, 1),
    (b"MST", -7, 0),
    (b"MDT", -7, 1),
    (b"CST", -6, 0),
    (b"CDT", -6, 1),
    (b"EST", -5, 0),
    (b"EDT", -5, 1),
    (b"AST", -3, 0),
    (b"ADT", -3, 1),
    (b"WAT", -1, 0),
    (b"GMT", 0, 0),
    (b"UTC", 0, 0),
    (b"Z", 0, 0),
    (b"WET", 0, 0),
    (b"BST", 0, 1),
    (b"CET", 1, 0),
    (b"MET", 1, 0),
    (b"MEWT", 1, 0),
    (b"MEST", 1, 1),
    (b"CEST", 1, 1),
    (b"MESZ", 1, 1),
    (b"FWT", 1, 0),
    (b"FST", 1, 1),
    (b"EET", 2, 0),
    (b"EEST", 2, 1),
    (b"WAST", 7, 0),
    (b"WADT", 7, 1),
    (b"CCT", 8, 0),
    (b"JST", 9, 0),
    (b"EAST", 10, 0),
    (b"EADT", 10, 1),
    (b"GST", 10, 0),
    (b"NZT", 12, 0),
    (b"NZST", 12, 0),
    (b"NZDT", 12, 1),
    (b"IDLE", 12, 0),
];

/// git's timestamp of 2099-12-31T23:59:59Z (32 leap days), the latest `parse_date_basic` gives.
const TIMESTAMP_MAX: u64 = ((2100 - 1970) * 365 + 32) * 24 * 60 * 60 - 1;

/// git's `match_string`: how many leading bytes of `date` spell `word` (ignoring ASCII case) before a byte
/// that is not a letter or digit; 0 when a letter or digit differs.
pub(super) fn match_string(date: &[u8], word: &[u8]) -> usize {
    let mut i = 0;
    loop {
        let d = at(date, i);
        if d == 0 {
            return i;
        }
        if d.eq_ignore_ascii_case(&at(word, i)) {
            i += 1;
            continue;
        }
        return if d.is_ascii_alphanumeric() { 0 } else { i };
    }
}

/// git's `skip_alpha`: the first byte and the letters after it.
fn skip_alpha(date: &[u8]) -> usize {
    1 + date[1..].iter().take_while(|b| b.is_ascii_alphabetic()).count()
}

/// A `struct tm` with nothing known yet (git's fields of `-1`).
pub(super) fn unknown_tm() -> tm {
    let mut tm = zeroed();
    (tm.tm_year, tm.tm_mon, tm.tm_mday, tm.tm_isdst, tm.tm_hour, tm.tm_min, tm.tm_sec) = (-1, -1, -1, -1, -1, -1, -1);
    tm
}

/// git's `match_alpha`: a month, weekday or time zone name, `AM`/`PM`, or ISO 8601's `T`.
fn match_alpha(date: &[u8], tm: &mut tm, offset: &mut i32) -> usize {
    for (i, name) in MONTH_NAMES.iter().enumerate() {
        let matched = match_string(date, name);
        if matched >= 3 {
            tm.tm_mon = i as i32;
            return matched;
        }
    }
    for (i, name) in WEEKDAY_NAMES.iter().enumerate() {
        let matched = match_string(date, name);
        if matched >= 3 {
            tm.tm_wday = i as i32;
            return matched;
        }
    }
    for (name, hours, dst) in TIMEZONE_NAMES {
        let matched = match_string(date, name);
        if matched >= 3 || matched == name.len() {
            if *offset == -1 {
                *offset = 60 * (hours + dst);
            }
            return matched;
        }
    }
    if match_string(date, b"PM") == 2 {
        tm.tm_hour = (tm.tm_hour % 12) + 12;
        return 2;
    }
    if match_string(date, b"AM") == 2 {
        tm.tm_hour %= 12;
        return 2;
    }
    if date[0] == b'T' && at(date, 1).is_ascii_digit() && tm.tm_hour == -1 {
        (tm.tm_min, tm.tm_sec) = (0, 0);
        return 1;
    }
    skip_alpha(date)
}

/// git's `set_date`: month and day, and the year in any of git's spellings. With `now_tm`, a date more than ten
/// days after `now` is refused, and `tm` changes only on success; without, `tm` takes the month and day even
/// when the year is refused (as in git, which writes through the same pointer).
pub(super) fn set_date(year: i32, month: i32, day: i32, now_tm: Option<&tm>, now: i64, tm: &mut tm) -> i32 {
    if !(month > 0 && month < 13 && day > 0 && day < 32) {
        return -1;
    }
    let mut r = *tm;
    (r.tm_mon, r.tm_mday) = (month - 1, day);
    let year_known = match (year, now_tm) {
        (-1, None) => {
            *tm = r;
            return 1;
        }
        (-1, Some(now_tm)) => Some(now_tm.tm_year),
        (1970..2100, _) => Some(year - 1900),
        (71..100, _) => Some(year),
        (..38, _) => Some(year + 100),
        _ => None,
    };
    if let Some(year) = year_known {
        r.tm_year = year;
    }
    let Some(_) = now_tm else {
        *tm = r;
        return if year_known.is_some() { 0 } else { -1 };
    };
    let specified = tm_to_time_t(&r);
    if year_known.is_none() || (specified != -1 && now.wrapping_add(10 * 24 * 3600) < specified) {
        return -1;
    }
    (tm.tm_mon, tm.tm_mday) = (r.tm_mon, r.tm_mday);
    if year != -1 {
        tm.tm_year = r.tm_year;
    }
    0
}

/// git's `set_time` (a 61st second is a leap second).
pub(super) fn set_time(hour: i64, minute: i64, second: i64, tm: &mut tm) -> i32 {
    if (0..=24).contains(&hour) && (0..60).contains(&minute) && (0..=60).contains(&second) {
        (tm.tm_hour, tm.tm_min, tm.tm_sec) = (hour as i32, minute as i32, second as i32);
        return 0;
    }
    -1
}

fn is_date_known(tm: &tm) -> bool {
    tm.tm_year != -1 && tm.tm_mon != -1 && tm.tm_mday != -1
}

/// `strtol(s + from, &end, 10)` as an index: C leaves `end` at `from` when there are no digits.
fn strtol_at(s: &[u8], from: usize) -> (i64, usize) {
    strtol(s.get(from..).unwrap_or_default()).map_or((0, from), |(value, used)| (value, from + used))
}

/// git's `match_multi_number`: `num` then `c` (`:`, `-`, `/` or `.`) at `end` and more numbers: a time, or a
/// date in one of git's orders. `now` 0: the clock. Returns the bytes used, 0 when it is neither.
pub(super) fn match_multi_number(num: u64, c: u8, date: &[u8], end: usize, tm: &mut tm, now: i64) -> usize {
    let (num2, mut end) = strtol_at(date, end + 1);
    let mut num3 = -1;
    if at(date, end) == c && at(date, end + 1).is_ascii_digit() {
        (num3, end) = strtol_at(date, end + 1);
    }
    if c == b':' {
        if set_time(num as i64, num2, num3.max(0), tm) != 0 {
            return 0;
        }
        if at(date, end) == b'.' && at(date, end + 1).is_ascii_digit() && is_date_known(tm) {
            end = strtol_at(date, end + 1).1;
        }
        return end;
    }
    let now = if now == 0 { real_now() } else { now };
    let mut now_tm = zeroed();
    let refuse_future = gmtime(now, &mut now_tm).then_some(&now_tm);
    let past_70 = num > 70;
    // git passes the `timestamp_t` and the `long`s to `int` parameters.
    let (num, num2, num3) = (num as i32, num2 as i32, num3 as i32);
    let found = past_70
        && (set_date(num, num2, num3, None, now, tm) == 0 || set_date(num, num3, num2, None, now, tm) == 0)
        || c != b'.' && set_date(num3, num, num2, refuse_future, now, tm) == 0
        || set_date(num3, num2, num, refuse_future, now, tm) == 0
        || c == b'.' && set_date(num3, num, num2, refuse_future, now, tm) == 0;
    if found { end } else { 0 }
}

/// git's `nodate`: nothing of the date or time is known yet.
fn nodate(tm: &tm) -> bool {
    (tm.tm_year & tm.tm_mon & tm.tm_mday & tm.tm_hour & tm.tm_min & tm.tm_sec) < 0
}

/// git's `maybeiso8601`: after `<date>T`, minutes and seconds are 0 and the hour is still to come.
fn maybeiso8601(tm: &tm) -> bool {
    tm.tm_hour == -1 && tm.tm_min == 0 && tm.tm_sec == 0
}

/// git's `match_digit`: seconds since 1970, a date or time with separators, `YYYYMMDD`, `HHMMSS`, a year, an
/// offset, a day, a month: guessed from the digits' count and what is known already.
fn match_digit(date: &[u8], tm: &mut tm, offset: &mut i32, tm_gmt: &mut bool) -> usize {
    let (num, mut end) = strtoumax(date, 10).unwrap_or((0, 0));
    if num >= 100_000_000 && nodate(tm) && gmtime(num as i64, tm) {
        *tm_gmt = true;
        return end;
    }
    if let c @ (b':' | b'.' | b'/' | b'-') = at(date, end)
        && at(date, end + 1).is_ascii_digit()
    {
        let matched = match_multi_number(num, c, date, end, tm, 0);
        if matched != 0 {
            return matched;
        }
    }
    let n = 1 + date[1..].iter().take_while(|b| b.is_ascii_digit()).count();
    if n == 8 || n == 6 {
        let (num1, num2, num3) = ((num / 10000) as u32, ((num % 10000) / 100) as u32, (num % 100) as u32);
        if n == 8 {
            set_date(num1 as i32, num2 as i32, num3 as i32, None, real_now(), tm);
        } else if set_time(num1.into(), num2.into(), num3.into(), tm) == 0
            && at(date, end) == b'.'
            && at(date, end + 1).is_ascii_digit()
        {
            end = strtoumax(&date[end + 1..], 10).map_or(end + 1, |(_, used)| end + 1 + used);
        }
        return end;
    }
    if maybeiso8601(tm) {
        let (num1, num2) = if n == 4 { ((num / 100) as u32, (num % 100) as u32) } else { (num as u32, 0) };
        if (n == 4 || n == 2) && !nodate(tm) && set_time(num1.into(), num2.into(), 0, tm) == 0 {
            return n;
        }
        (tm.tm_min, tm.tm_sec) = (-1, -1);
    }
    match_digit_guess(num, n, tm, offset)
}

/// The end of git's `match_digit`: a number without separators, by its count of digits `n`.
fn match_digit_guess(num: u64, n: usize, tm: &mut tm, offset: &mut i32) -> usize {
    if n == 4 {
        if num <= 1400 && *offset == -1 {
            *offset = ((num / 100) as u32 * 60 + (num % 100) as u32) as i32;
        } else if num > 1900 && num < 2100 {
            tm.tm_year = (num - 1900) as i32;
        }
        return n;
    }
    if n > 2 {
        return n;
    }
    if num > 0 && num < 32 && tm.tm_mday < 0 {
        tm.tm_mday = num as i32;
        return n;
    }
    if n == 2 && tm.tm_year < 0 {
        if num < 10 && tm.tm_mday >= 0 {
            tm.tm_year = num as i32 + 100;
            return n;
        }
        if num >= 70 {
            tm.tm_year = num as i32;
            return n;
        }
    }
    if num > 0 && num < 13 && tm.tm_mon < 0 {
        tm.tm_mon = num as i32 - 1;
    }
    n
}

/// git's `match_tz`: `+hhmm`, `-hh`, `+hh:mm`; anything else is used up but not taken.
fn match_tz(date: &[u8], offset: &mut i32) -> usize {
    let (hour, mut end) = strtoumax(&date[1..], 10).map_or((0, 1), |(value, used)| (value, 1 + used));
    let (mut hour, n) = (hour as i32, end - 1);
    let mut min = 0i32;
    if n == 4 {
        min = hour % 100;
        hour /= 100;
    } else if n != 2 {
        min = 99;
    } else if at(date, end) == b':' {
        let (value, used) = strtoumax(&date[end + 1..], 10).unwrap_or((0, 0));
        (min, end) = (value as i32, end + 1 + used);
        if end - 1 != 5 {
            min = 99;
        }
    }
    if min < 60 && hour < 24 {
        let minutes = hour.wrapping_mul(60).wrapping_add(min);
        *offset = if date[0] == b'-' { minutes.wrapping_neg() } else { minutes };
    }
    end
}

/// git's `match_object_header_date`: `<seconds> <+|-><hhmm>` and nothing after (what follows `@`).
fn match_object_header_date(date: &[u8]) -> Option<(u64, i32)> {
    if !at(date, 0).is_ascii_digit() {
        return None;
    }
    let (stamp, end) = strtoumax(date, 10)?;
    if at(date, end) != b' ' || stamp == u64::MAX || !matches!(at(date, end + 1), b'+' | b'-') {
        return None;
    }
    let (ofs, stop) = strtol_at(date, end + 2);
    if !matches!(at(date, stop), 0 | b'\n') || stop != end + 2 + 4 {
        return None;
    }
    let ofs = ofs as i32;
    let ofs = (ofs / 100) * 60 + ofs % 100;
    Some((stamp, if date[end + 1] == b'-' { -ofs } else { ofs }))
}

/// git's `parse_date_basic`: the time `date` names and its offset east of UTC in minutes; `None` where git
/// returns -1 (the year, month or time of day is missing or out of range).
pub(super) fn parse_date_basic(date: &[u8]) -> Option<(u64, i32)> {
    if at(date, 0) == b'@'
        && let Some(found) = match_object_header_date(&date[1..])
    {
        return Some(found);
    }
    let (mut tm, mut offset, mut tm_gmt) = (unknown_tm(), -1, false);
    let mut i = 0;
    while !matches!(at(date, i), 0 | b'\n') {
        let (c, rest) = (date[i], &date[i..]);
        let matched = if c.is_ascii_alphabetic() {
            match_alpha(rest, &mut tm, &mut offset)
        } else if c.is_ascii_digit() {
            match_digit(rest, &mut tm, &mut offset, &mut tm_gmt)
        } else if matches!(c, b'-' | b'+') && at(rest, 1).is_ascii_digit() {
            match_tz(rest, &mut offset)
        } else {
            0
        };
        i += matched.max(1);
    }
    let mut timestamp = tm_to_time_t(&tm) as u64;
    if timestamp == u64::MAX {
        return None;
    }
    if offset == -1 {
        // gmtime_r in match_digit may have set tm_isdst: mktime is to find it out.
        tm.tm_isdst = -1;
        let local = mktime(&mut tm);
        let utc = timestamp as i64;
        offset = if utc > local { ((utc - local) / 60) as i32 } else { -(((local - utc) / 60) as i32) };
    }
    if !tm_gmt {
        let shift = i64::from(offset.wrapping_mul(60)) as u64;
        if offset > 0 && shift > timestamp {
            return None;
        }
        if offset < 0
            && (i64::from(offset.wrapping_neg().wrapping_mul(60)) as u64) > TIMESTAMP_MAX.wrapping_sub(timestamp)
        {
            return None;
        }
        timestamp = timestamp.wrapping_sub(shift);
    }
    Some((timestamp, offset))
}
