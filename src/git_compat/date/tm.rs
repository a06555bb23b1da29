//! The C library's calendar, as git's date.c uses it: `struct tm`, `localtime_r`, `gmtime_r` and `mktime` (the
//! local time zone is the process's `TZ`, as for git), git's own `tm_to_time_t`, and its clock (`get_time`,
//! which `GIT_TEST_DATE_NOW` replaces). Fields keep C's `int`s and `-1` for "not known yet": git's parsers
//! lean on `mktime`'s normalisation of fields out of range, which only the C library does exactly alike.
use libc::{c_int, time_t, tm};

/// A `struct tm` of zeros (C's `memset(&tm, 0, sizeof(tm))`).
pub(super) fn zeroed() -> tm {
    tm {
        tm_sec: 0,
        tm_min: 0,
        tm_hour: 0,
        tm_mday: 0,
        tm_mon: 0,
        tm_year: 0,
        tm_wday: 0,
        tm_yday: 0,
        tm_isdst: 0,
        tm_gmtoff: 0,
        tm_zone: std::ptr::null(),
    }
}

/// `localtime_r(&t, out)`: false where the C library cannot represent `t` (`out` may then be partly written,
/// as git's callers see it too).
#[allow(unsafe_code)]
pub(super) fn localtime(t: i64, out: &mut tm) -> bool {
    let t: time_t = t;
    // SAFETY: both pointers come from references, valid for the call; localtime_r writes only `*out` and keeps
    // no pointer to either (tm_zone points into the C library's static zone names, never freed).
    !unsafe { libc::localtime_r(&t, out) }.is_null()
}

/// `gmtime_r(&t, out)`: false where the C library cannot represent `t` (`out` may then be partly written, as
/// git's `match_digit` sees it too).
#[allow(unsafe_code)]
pub(super) fn gmtime(t: i64, out: &mut tm) -> bool {
    let t: time_t = t;
    // SAFETY: as in `localtime`: two valid references, only `*out` written, nothing kept.
    !unsafe { libc::gmtime_r(&t, out) }.is_null()
}

/// `mktime(tm)`: the local time `tm` names, `tm` normalised in place; `-1` where it cannot.
#[allow(unsafe_code)]
pub(super) fn mktime(tm: &mut tm) -> i64 {
    // SAFETY: `tm` is a valid, exclusive reference for the call; mktime reads and normalises only `*tm`.
    unsafe { libc::mktime(tm) }
}

/// git's `tm_to_time_t`: like `mktime` in UTC, without normalising, for 1970 to 2099 only (`-1` otherwise).
pub(super) fn tm_to_time_t(tm: &tm) -> i64 {
    const MDAYS: [i64; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let year = i64::from(tm.tm_year) - 70;
    let month = tm.tm_mon;
    let mut day = i64::from(tm.tm_mday);
    if !(0..=129).contains(&year) || !(0..=11).contains(&month) {
        return -1;
    }
    if month < 2 || (year + 2) % 4 != 0 {
        day -= 1;
    }
    if tm.tm_hour < 0 || tm.tm_min < 0 || tm.tm_sec < 0 {
        return -1;
    }
    // git computes in `unsigned long` and returns a `time_t`: the same 64 bits.
    let days = year * 365 + (year + 1) / 4 + MDAYS[month as usize] + day;
    (days as u64)
        .wrapping_mul(24 * 60 * 60)
        .wrapping_add((i64::from(tm.tm_hour) * 3600 + i64::from(tm.tm_min) * 60 + i64::from(tm.tm_sec)) as u64)
        as i64
}

/// `time(NULL)`: the clock, which git's `match_multi_number` reads directly (not through `GIT_TEST_DATE_NOW`).
pub(super) fn real_now() -> i64 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(since) => since.as_secs() as i64,
        Err(before) => -(before.duration().as_secs() as i64),
    }
}

/// git's `get_time`: `GIT_TEST_DATE_NOW` read as C's `atoi` reads it, else the clock.
pub(super) fn now() -> i64 {
    match std::env::var_os("GIT_TEST_DATE_NOW") {
        Some(value) => i64::from(atoi(std::os::unix::ffi::OsStrExt::as_bytes(value.as_os_str()))),
        None => real_now(),
    }
}

/// C's `atoi` (glibc: `(int) strtol(s, NULL, 10)`).
fn atoi(s: &[u8]) -> c_int {
    crate::git_compat::strtoumax::strtol(s).map_or(0, |(value, _)| value as c_int)
}
