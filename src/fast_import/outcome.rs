//! How a stream ended: git fast-import's exit status, and the counters `--stats` prints.
use std::time::Duration;

/// How a stream ended, as git fast-import's exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Success = 0,
    /// The marks file could not be written (`error:` was printed).
    Failure = 1,
    Fatal = 128,
    Usage = 129,
}

impl Exit {
    /// The kind of ending an exit status from git means.
    pub(crate) fn of_code(code: u8) -> Exit {
        match code {
            0 => Exit::Success,
            1 => Exit::Failure,
            129 => Exit::Usage,
            _ => Exit::Fatal,
        }
    }
}

#[derive(Debug)]
pub struct Outcome {
    pub exit: Exit,
    pub stats: Stats,
    /// The `fatal:` message (without prefix), if the stream died: for logs where stderr goes nowhere.
    pub fatal: Option<String>,
    /// The stream died writing to a frontend that had gone (EPIPE), where a process of its own would have been
    /// killed by SIGPIPE: no marks were exported, and a server tells its `connect` client to raise SIGPIPE.
    pub broken_pipe: bool,
    /// git fast-import wrote this stream and its exit status (or 128 + the signal that killed it) is the
    /// stream's.
    pub git_exit: Option<u8>,
}

impl Outcome {
    /// The process exit status the stream ends with.
    pub fn code(&self) -> u8 {
        self.git_exit.unwrap_or(self.exit as u8)
    }
}

/// Counters for `--stats`.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub requests: u64,
    pub missing: u64,
    /// Bytes written to the cat-blob fd.
    pub bytes: u64,
    pub writev_calls: u64,
    pub inflated_bytes: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub elapsed: Duration,
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = self.elapsed.as_secs_f64();
        let mb = self.bytes as f64 / 1e6;
        let lookups = (self.cache_hits + self.cache_misses).max(1);
        writeln!(f, "cat-blobd statistics:")?;
        writeln!(f, "  requests:      {} ({} missing)", self.requests, self.missing)?;
        writeln!(f, "  bytes written: {} ({:.1} MB) in {} writev calls", self.bytes, mb, self.writev_calls)?;
        writeln!(f, "  elapsed:       {:.3} s, {:.1} MB/s", secs, if secs > 0.0 { mb / secs } else { 0.0 })?;
        writeln!(
            f,
            "  delta cache:   {:.1}% hits, {:.1} MB inflated",
            100.0 * self.cache_hits as f64 / lookups as f64,
            self.inflated_bytes as f64 / 1e6
        )
    }
}
