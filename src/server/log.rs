//! The daemon's log on stderr: one line per connection (and one per start, shutdown and stop), as `key=value`
//! text or as one JSON object per line. Each line is written with a single `write`, so lines from concurrent
//! connections never interleave.
//!
//! Logging never blocks service: [`Logger::log`] only puts the line on a bounded queue, and one writer thread
//! writes the queue to stderr. When stderr does not drain (a log reader that stalled) and the queue is full,
//! lines are dropped and counted; the count is written as a `log-dropped` line once stderr drains again, and is
//! in `cat-blobd stats`.
use std::fmt::Write as _;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{Receiver, Sender, TrySendError};

/// Lines waiting for the writer thread at most.
const QUEUE_LINES: usize = 4096;

pub use crate::cli::LogFormat;

/// One value of a log line.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    Str(&'a str),
    U64(u64),
    I64(i64),
    /// Printed with three decimals.
    F64(f64),
}

/// What goes through the queue.
enum Entry {
    Line(String),
    /// Answered once every line before it is written.
    Flush(Sender<()>),
}

/// Where log lines go: a bounded queue to the writer thread.
#[derive(Debug, Clone)]
pub struct Logger {
    pub format: LogFormat,
    queue: Sender<Entry>,
    dropped: Arc<AtomicU64>,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Entry")
    }
}

impl Logger {
    /// A logger writing to stderr (a duplicate of it) from its own thread.
    pub fn new(format: LogFormat) -> std::io::Result<Logger> {
        Logger::to_fd(format, std::io::stderr().as_fd().try_clone_to_owned()?)
    }

    /// A logger writing to `fd` from its own thread.
    fn to_fd(format: LogFormat, fd: OwnedFd) -> std::io::Result<Logger> {
        let (queue, lines) = crossbeam_channel::bounded(QUEUE_LINES);
        let dropped = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&dropped);
        std::thread::Builder::new().name("log".into()).spawn(move || write_lines(lines, fd, format, &counted))?;
        Ok(Logger { format, queue, dropped })
    }

    /// Queues one line for `event`; when the queue is full (stderr does not drain), the line is dropped and
    /// counted instead. Never blocks.
    pub fn log(&self, event: &str, fields: &[(&str, Value<'_>)]) {
        let line = format_line(self.format, &timestamp(SystemTime::now()), event, fields);
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = self.queue.try_send(Entry::Line(line)) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Lines dropped so far because stderr did not drain.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Waits until the lines queued so far are written, for at most `limit` (stderr may never drain).
    pub fn flush(&self, limit: Duration) -> bool {
        let (done, written) = crossbeam_channel::bounded(1);
        let deadline = std::time::Instant::now() + limit;
        self.queue.send_deadline(Entry::Flush(done), deadline).is_ok() && written.recv_deadline(deadline).is_ok()
    }
}

/// One log line, LF included.
fn format_line(format: LogFormat, ts: &str, event: &str, fields: &[(&str, Value<'_>)]) -> String {
    let mut line = String::with_capacity(200);
    match format {
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

/// The writer thread: writes each queued line with one `write`; before a line, reports lines dropped since the
/// last report. Errors are ignored: there is nowhere else to report them.
fn write_lines(lines: Receiver<Entry>, fd: OwnedFd, format: LogFormat, dropped: &AtomicU64) {
    let mut reported = 0;
    let write = |line: &str| {
        let _ = crate::io::writev::GatherWriter::new(crate::io::writev::FdSink::new(fd.as_fd()))
            .write_all(&mut [std::io::IoSlice::new(line.as_bytes())]);
    };
    for entry in lines {
        let now = dropped.load(Ordering::Relaxed);
        if now > reported {
            let fields = [("lines", Value::U64(now - reported)), ("total", Value::U64(now))];
            write(&format_line(format, &timestamp(SystemTime::now()), "log-dropped", &fields));
            reported = now;
        }
        match entry {
            Entry::Line(line) => write(&line),
            Entry::Flush(done) => {
                let _ = done.send(());
            }
        }
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
        let text = format_line(LogFormat::Text, "T", "connection", &fields);
        assert_eq!(
            text,
            "T connection conn=7 kind=connect exit=-1 duration_ms=1.500 error=\"mark :5 not declared \\\"x\\\"\\n\"\n"
        );
        let json = format_line(LogFormat::Json, "T", "connection", &fields);
        assert_eq!(
            json,
            "{\"ts\":\"T\",\"event\":\"connection\",\"conn\":7,\"kind\":\"connect\",\"exit\":-1,\"duration_ms\":1.500,\
             \"error\":\"mark :5 not declared \\\"x\\\"\\n\"}\n"
        );
        assert!(serde_json_like_is_one_line(&json));
    }

    /// stderr full and never read: `log` does not block, the lines past the queue are counted, and once stderr
    /// drains the count is reported before the next line. The writer thread reports drops whenever it takes a
    /// line: on a loaded machine it may still be filling the pipe when the queue overflows, and report the first
    /// drops then, so the reports are checked as a running total (each `total` the sum of the `lines` so far),
    /// whose last total is every line dropped, written before the line logged after the drain.
    #[test]
    fn a_stalled_stderr_drops_and_counts_lines_instead_of_blocking() {
        let (read_end, write_end) = rustix::pipe::pipe().unwrap();
        rustix::pipe::fcntl_setpipe_size(&write_end, 4096).unwrap();
        let logger = Logger::to_fd(LogFormat::Text, write_end).unwrap();
        for n in 0..(QUEUE_LINES as u64 + 500) {
            logger.log("connection", &[("conn", Value::U64(n))]);
        }
        let dropped = logger.dropped();
        assert!(dropped >= 400, "{dropped} dropped");
        let reader = std::thread::spawn(move || {
            let mut text = Vec::new();
            let mut buf = [0u8; 4096];
            while !String::from_utf8_lossy(&text).contains("event-after-drain") {
                let n = rustix::io::read(&read_end, &mut buf).unwrap();
                text.extend_from_slice(&buf[..n]);
            }
            String::from_utf8(text).unwrap()
        });
        assert!(logger.flush(Duration::from_secs(60)));
        logger.log("event-after-drain", &[]);
        let text = reader.join().unwrap();
        let written = text.lines().filter(|line| line.contains(" connection ")).count() as u64;
        assert_eq!(written + dropped, QUEUE_LINES as u64 + 500);
        let mut reported = 0;
        for line in text.lines().take_while(|line| !line.contains("event-after-drain")) {
            if let Some((_, counts)) = line.split_once(" log-dropped ") {
                let lines = counts.strip_prefix("lines=").and_then(|rest| rest.split_once(" total="));
                let (lines, total) = lines.unwrap_or_else(|| panic!("not a drop report: {line}"));
                reported += lines.parse::<u64>().unwrap();
                assert_eq!(total.parse::<u64>().unwrap(), reported, "not a running total: {text}");
            }
        }
        assert_eq!(reported, dropped, "drops reported before the next line: {text}");
    }

    fn serde_json_like_is_one_line(line: &str) -> bool {
        line.matches('\n').count() == 1 && line.ends_with('\n')
    }
}
