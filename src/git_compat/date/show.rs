//! git's `show_date` in the one mode name resolution prints (`DATE_RFC2822`, in reflog warnings): the time in
//! the offset it was recorded with, and git's three deaths on times the system cannot show.
use super::tm::{gmtime, zeroed};

/// Where git's `gm_time_t` dies.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DateError {
    #[error("Timestamp+tz too large: {time} +{tz:04}")]
    TooLargeWithTz { time: u64, tz: i32 },
    #[error("Timestamp before Unix epoch: {time} {tz:04}")]
    BeforeEpoch { time: u64, tz: i32 },
    #[error("Timestamp too large for this system: {0}")]
    TooLarge(u64),
}

const WEEKDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// git's `date_overflows`: past `timestamp_t`'s top value or `time_t`'s.
fn date_overflows(t: u64) -> bool {
    t == u64::MAX || i64::try_from(t).is_err()
}

/// git's `gm_time_t`: `time` moved by the offset `tz` (`+hhmm` read as a decimal number).
fn gm_time_t(time: u64, tz: i32) -> Result<i64, DateError> {
    let hhmm = tz.unsigned_abs();
    let minutes = ((hhmm / 100) * 60 + hhmm % 100) as i64;
    let minutes = if tz < 0 { -minutes } else { minutes };
    if minutes > 0 {
        if time.checked_add((minutes * 60) as u64).is_none() {
            return Err(DateError::TooLargeWithTz { time, tz });
        }
    } else if time < (-minutes * 60) as u64 {
        return Err(DateError::BeforeEpoch { time, tz });
    }
    let moved = time.wrapping_add((minutes * 60) as u64);
    if date_overflows(moved) {
        return Err(DateError::TooLarge(moved));
    }
    Ok(moved as i64)
}

/// `show_date(time, tz, DATE_MODE(RFC2822))`: `Thu, 1 Jan 2026 12:00:00 +0100`.
pub fn show_rfc2822(time: u64, tz: i32) -> Result<String, DateError> {
    let mut tm = zeroed();
    let mut tz = tz;
    if !gmtime(gm_time_t(time, tz)?, &mut tm) {
        gmtime(gm_time_t(0, 0)?, &mut tm);
        tz = 0;
    }
    Ok(format!(
        "{}, {} {} {} {:02}:{:02}:{:02} {}{:04}",
        WEEKDAYS[tm.tm_wday as usize % 7],
        tm.tm_mday,
        MONTHS[tm.tm_mon as usize % 12],
        i64::from(tm.tm_year) + 1900,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        if tz < 0 { '-' } else { '+' },
        tz.unsigned_abs()
    ))
}
