//! The daemon's log on stderr: one line per connection (and one per start, shutdown and stop), as `key=value`
//! text or as one JSON object per line. Each line is written with a single `write`, so lines from concurrent
//! connections never interleave.
use std::fmt::Write as _;
use std::io::Write as _;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// `2026-01-02T03:04:05.678Z connection conn=1 kind=connect uid=1000 … outcome=ok`
    #[default]
    Text,
    /// `{"ts":"2026-01-02T03:04:05.678Z","event":"connection","conn":1,…}`
    Json,
}

impl FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err(format!("invalid log format '{s}': expected text or json")),
        }
    }
}

/// One value of a log line.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    Str(&'a str),
    U64(u64),
    I64(i64),
    /// Printed with three decimals.
    F64(f64),
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Logger {
    pub format: LogFormat,
}

impl Logger {
    /// Writes one line for `event` on stderr. Errors are ignored: there is nowhere else to report them.
    pub fn log(&self, event: &str, fields: &[(&str, Value<'_>)]) {
        let line = self.format_line(&timestamp(SystemTime::now()), event, fields);
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    fn format_line(&self, ts: &str, event: &str, fields: &[(&str, Value<'_>)]) -> String {
        let mut line = String::with_capacity(200);
        match self.format {
            LogFormat::Text => {
                let _ = write!(line, "{ts} {event}");
                for (key, value) in fields {
                    let _ = write!(line, " {key}=");
                    match value {
                        Value::Str(s) if needs_quotes(s) => json_string(&mut line, s),
                        Value::Str(s) => line.push_str(s),
                        value => number(&mut line, *value),
                    }
                }
            }
            LogFormat::Json => {
                line.push_str("{\"ts\":");
                json_string(&mut line, ts);
                line.push_str(",\"event\":");
                json_string(&mut line, event);
                for (key, value) in fields {
                    line.push(',');
                    json_string(&mut line, key);
                    line.push(':');
                    match value {
                        Value::Str(s) => json_string(&mut line, s),
                        value => number(&mut line, *value),
                    }
                }
                line.push('}');
            }
        }
        line.push('\n');
        line
    }
}

fn needs_quotes(s: &str) -> bool {
    s.is_empty() || s.chars().any(|c| c == ' ' || c == '"' || c == '=' || c == '\\' || c.is_control())
}

fn number(out: &mut String, value: Value<'_>) {
    let _ = match value {
        Value::U64(n) => write!(out, "{n}"),
        Value::I64(n) => write!(out, "{n}"),
        Value::F64(x) if x.is_finite() => write!(out, "{x:.3}"),
        Value::F64(_) => write!(out, "0"),
        Value::Str(s) => write!(out, "{s}"),
    };
}

/// A JSON string literal (also used for quoted text values).
fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// RFC 3339 in UTC with milliseconds.
fn timestamp(now: SystemTime) -> String {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60,
        since.subsec_millis()
    )
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(951_782_400_123); // 2000-02-29
        assert_eq!(timestamp(t), "2000-02-29T00:00:00.123Z");
        assert_eq!(timestamp(UNIX_EPOCH + Duration::from_secs(1_767_225_599)), "2025-12-31T23:59:59.000Z");
    }

    #[test]
    fn text_and_json_lines() {
        let fields = [
            ("conn", Value::U64(7)),
            ("kind", Value::Str("connect")),
            ("exit", Value::I64(-1)),
            ("duration_ms", Value::F64(1.5)),
            ("error", Value::Str("mark :5 not declared \"x\"\n")),
        ];
        let text = Logger { format: LogFormat::Text }.format_line("T", "connection", &fields);
        assert_eq!(
            text,
            "T connection conn=7 kind=connect exit=-1 duration_ms=1.500 error=\"mark :5 not declared \\\"x\\\"\\n\"\n"
        );
        let json = Logger { format: LogFormat::Json }.format_line("T", "connection", &fields);
        assert_eq!(
            json,
            "{\"ts\":\"T\",\"event\":\"connection\",\"conn\":7,\"kind\":\"connect\",\"exit\":-1,\"duration_ms\":1.500,\
             \"error\":\"mark :5 not declared \\\"x\\\"\\n\"}\n"
        );
        assert!(serde_json_like_is_one_line(&json));
    }

    fn serde_json_like_is_one_line(line: &str) -> bool {
        line.matches('\n').count() == 1 && line.ends_with('\n')
    }
}
