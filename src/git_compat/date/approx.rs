//! git's `approxidate_careful` (date.c): a date as people say it (`yesterday`, `2.weeks.ago`, `noon
//! yesterday`, `last friday`, `1 month 2 days ago`, `Dec 6`), relative to now (`GIT_TEST_DATE_NOW` or the
//! clock) in the local time zone. `parse_date_basic` is tried first; what it cannot read is read here word by
//! word, numbers waiting for the word that says what they count.
use libc::tm;

use super::parse::{MONTH_NAMES, WEEKDAY_NAMES, at, match_multi_number, match_string, parse_date_basic, unknown_tm};
use super::tm::{localtime, mktime, now};
use crate::git_compat::strtoumax::strtoumax;

/// git's `approxidate_careful`: the time `date` names (seconds since 1970, as git's unsigned `timestamp_t`),
/// and whether git reports an error (no word or number in it meant anything).
pub fn approxidate_careful(date: &[u8]) -> (u64, bool) {
    if let Some((timestamp, _offset)) = parse_date_basic(date) {
        return (timestamp, false);
    }
    approxidate_str(date, now())
}

/// git's `approxidate_str`.
fn approxidate_str(date: &[u8], now_sec: i64) -> (u64, bool) {
    let (mut number, mut touched) = (0i32, false);
    let mut tm = unknown_tm();
    localtime(now_sec, &mut tm);
    let now = tm;
    (tm.tm_year, tm.tm_mon, tm.tm_mday) = (-1, -1, -1);
    let mut i = 0;
    while at(date, i) != 0 {
        let c = date[i];
        if c.is_ascii_digit() {
            pending_number(&mut tm, &mut number);
            i += approxidate_digit(&date[i..], &mut tm, &mut number, now_sec);
            touched = true;
        } else if c.is_ascii_alphabetic() {
            i += approxidate_alpha(&date[i..], &mut tm, &now, &mut number, &mut touched);
        } else {
            i += 1;
        }
    }
    pending_number(&mut tm, &mut number);
    (update_tm(&mut tm, &now, 0) as u64, !touched)
}

/// git's `update_tm`: fills in what is not known from `now`, goes back `sec` seconds (or the days a negative
/// `tm_mday` asks for), and normalises through the C library.
fn update_tm(tm: &mut tm, now: &tm, mut sec: i64) -> i64 {
    if tm.tm_mday < 0 {
        let offset = tm.tm_mday + 1;
        if sec == 0 && offset < 0 {
            sec = i64::from(offset.wrapping_neg().wrapping_mul(24 * 60 * 60));
        }
        tm.tm_mday = now.tm_mday;
    }
    if tm.tm_mon < 0 {
        tm.tm_mon = now.tm_mon;
    }
    if tm.tm_year < 0 {
        tm.tm_year = now.tm_year;
        if tm.tm_mon > now.tm_mon {
            tm.tm_year -= 1;
        }
    }
    let n = mktime(tm).wrapping_sub(sec);
    localtime(n, tm);
    n
}

/// git's `pending_number`: a number no word claimed is a day of the month, else a month, else a year.
fn pending_number(tm: &mut tm, num: &mut i32) {
    let number = std::mem::take(num);
    if number == 0 {
        return;
    }
    if tm.tm_mday < 0 && number < 32 {
        tm.tm_mday = number;
    } else if tm.tm_mon < 0 && number < 13 {
        tm.tm_mon = number - 1;
    } else if tm.tm_year < 0 {
        if number > 1969 && number < 2100 {
            tm.tm_year = number - 1900;
        } else if number > 69 && number < 100 {
            tm.tm_year = number;
        } else if number < 38 {
            tm.tm_year = 100 + number;
        }
    }
}

/// git's `date_time`: the most recent `hour` o'clock, which may be yesterday's.
fn date_time(tm: &mut tm, hour: i32) {
    if tm.tm_mday < 0 && tm.tm_hour < hour {
        tm.tm_mday = -2; // yesterday, once update_tm runs
    }
    (tm.tm_hour, tm.tm_min, tm.tm_sec) = (hour, 0, 0);
}

/// git's `date_am` and `date_pm`: a pending number is the hour.
fn half_day(tm: &mut tm, num: &mut i32, afternoon: bool) {
    let n = std::mem::take(num);
    let mut hour = tm.tm_hour;
    if n != 0 {
        (hour, tm.tm_min, tm.tm_sec) = (n, 0, 0);
    }
    tm.tm_hour = hour % 12 + if afternoon { 12 } else { 0 };
}

/// git's `special` words; `true` when `word` is one (and it has been applied).
fn special(word: &[u8], tm: &mut tm, now: &tm, num: &mut i32) -> bool {
    const SPECIAL: [&[u8]; 9] = [b"yesterday", b"noon", b"midnight", b"tea", b"PM", b"AM", b"never", b"now", b"today"];
    let Some(which) = SPECIAL.iter().position(|name| match_string(word, name) == name.len()) else { return false };
    match SPECIAL[which] {
        b"yesterday" => {
            *num = 0;
            tm.tm_mday = -1;
            update_tm(tm, now, 24 * 60 * 60);
        }
        b"noon" | b"midnight" | b"tea" => {
            pending_number(tm, num);
            date_time(tm, [12, 0, 17][which - 1]);
        }
        b"PM" | b"AM" => half_day(tm, num, which == 4),
        b"never" => {
            localtime(0, tm);
            *num = 0;
        }
        b"now" => {
            *num = 0;
            update_tm(tm, now, 0);
        }
        _ => {
            // today
            if (tm.tm_hour, tm.tm_min, tm.tm_sec) == (now.tm_hour, now.tm_min, now.tm_sec) {
                date_time(tm, 0);
            }
            *num = 0;
            tm.tm_mday = -1;
            update_tm(tm, now, 0);
        }
    }
    true
}

/// git's `approxidate_alpha`: one word; returns its length.
fn approxidate_alpha(date: &[u8], tm: &mut tm, now: &tm, num: &mut i32, touched: &mut bool) -> usize {
    let end = 1 + date[1..].iter().take_while(|b| b.is_ascii_alphabetic()).count();
    if let Some(month) = MONTH_NAMES.iter().position(|name| match_string(date, name) >= 3) {
        tm.tm_mon = month as i32;
        *touched = true;
        return end;
    }
    if special(date, tm, now, num) {
        *touched = true;
        return end;
    }
    if *num == 0 {
        const NUMBER_NAMES: [&[u8]; 11] =
            [b"zero", b"one", b"two", b"three", b"four", b"five", b"six", b"seven", b"eight", b"nine", b"ten"];
        if let Some(n) = (1..11).find(|&n| match_string(date, NUMBER_NAMES[n]) == NUMBER_NAMES[n].len()) {
            *num = n as i32;
            *touched = true;
        } else if match_string(date, b"last") == 4 {
            *num = 1;
            *touched = true;
        }
        return end;
    }
    if unit(date, tm, now, num) {
        *touched = true;
    }
    end
}

/// The words of git's `approxidate_alpha` that count back `num` units: seconds to weeks, a weekday, months,
/// years. `true` when `date` is one.
fn unit(date: &[u8], tm: &mut tm, now: &tm, num: &mut i32) -> bool {
    const TYPELEN: [(&[u8], i32); 5] =
        [(b"seconds", 1), (b"minutes", 60), (b"hours", 60 * 60), (b"days", 24 * 60 * 60), (b"weeks", 7 * 24 * 60 * 60)];
    if let Some((_, length)) = TYPELEN.iter().find(|(name, _)| match_string(date, name) >= name.len() - 1) {
        update_tm(tm, now, i64::from(length.wrapping_mul(*num)));
        *num = 0;
        return true;
    }
    if let Some(day) = WEEKDAY_NAMES.iter().position(|name| match_string(date, name) >= 3) {
        let mut n = std::mem::take(num).wrapping_sub(1);
        let mut diff = tm.tm_wday - day as i32;
        if diff <= 0 {
            n = n.wrapping_add(1);
        }
        diff = diff.wrapping_add(n.wrapping_mul(7));
        update_tm(tm, now, i64::from(diff.wrapping_mul(24 * 60 * 60)));
        return true;
    }
    if match_string(date, b"months") >= 5 {
        update_tm(tm, now, 0);
        let n = tm.tm_mon.wrapping_sub(std::mem::take(num));
        // git adds 12 and takes a year off until the month is not negative.
        let years_back = if n < 0 { (i64::from(n).unsigned_abs().div_ceil(12)) as i32 } else { 0 };
        tm.tm_mon = (i64::from(n) + i64::from(years_back) * 12) as i32;
        tm.tm_year = tm.tm_year.wrapping_sub(years_back);
        return true;
    }
    if match_string(date, b"years") >= 4 {
        update_tm(tm, now, 0);
        tm.tm_year = tm.tm_year.wrapping_sub(std::mem::take(num));
        return true;
    }
    false
}

/// git's `approxidate_digit`: a date or time with separators, else a number that waits for its word.
fn approxidate_digit(date: &[u8], tm: &mut tm, num: &mut i32, now: i64) -> usize {
    let (number, end) = strtoumax(date, 10).unwrap_or((0, 0));
    if let c @ (b':' | b'.' | b'/' | b'-') = at(date, end)
        && at(date, end + 1).is_ascii_digit()
    {
        let matched = match_multi_number(number, c, date, end, tm, now);
        if matched != 0 {
            return matched;
        }
    }
    // Zero-padding only for small numbers ("Dec 02", never "Dec 0002").
    if date[0] != b'0' || end <= 2 {
        *num = number as i32;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What git 2.55's `approxidate_careful` gives for these (checked with its date.c), chosen so that the local
    /// time zone changes nothing; the integration tests compare the rest with git under a pinned `TZ`.
    #[test]
    fn dates_that_name_one_instant_read_as_git_reads_them() {
        let now = 1_767_268_800; // 2026-01-01 12:00:00 UTC
        for (date, expected) in [
            (&b"1767268800"[..], (1_767_268_800, false)),
            (b"@1767268800 +0100", (1_767_268_800, false)),
            (b"Thu, 1 Jan 2026 12:00:00 +0100", (1_767_265_200, false)),
            (b"2026-01-01T12:00:00Z", (1_767_268_800, false)),
            (b"2026-01-01 12:00:00 -0530", (1_767_288_600, false)),
            (b"3.hours.ago", (now as u64 - 3 * 3600, false)),
            (b"90 seconds ago", (now as u64 - 90, false)),
            (b"never", (0, false)),
        ] {
            let got = match parse_date_basic(date) {
                Some((timestamp, _)) => (timestamp, false),
                None => approxidate_str(date, now),
            };
            assert_eq!(got, expected, "{}", date.escape_ascii());
        }
        assert!(approxidate_str(b"no date here", now).1, "nothing touched is an error");
    }

    #[test]
    fn match_string_stops_at_the_first_byte_that_is_not_a_letter_or_digit() {
        assert_eq!(match_string(b"Jan.", b"January"), 3);
        assert_eq!(match_string(b"jan5", b"January"), 0);
        assert_eq!(match_string(b"yesterdays", b"yesterday"), 0);
        assert_eq!(match_string(b"PM", b"PM"), 2);
    }
}
