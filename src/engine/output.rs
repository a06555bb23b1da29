//! The engine's two output fds and what it counts on them. Responses go to the "main" fd (cat-blob fd, or
//! cat-file's stdout); [`Target::Stdout`] lines (fast-import's `progress`) go to stdout, which may be the same fd.
use std::io::IoSlice;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::io::writev::{FdSink, GatherWriter, OutFd, WriteError};
use crate::response::encode::Response;
use crate::store::{BigBlob, PieceError};

/// The pipe buffer we ask for on the main fd (Linux's default `pipe-max-size`).
pub(crate) const PIPE_SIZE: usize = 1 << 20;

/// Which fd a response goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// The responses' fd (the cat-blob fd).
    Main,
    /// fd 1 whatever the main fd is (fast-import's `progress` lines).
    Stdout,
}

/// Counters that other threads read while a stream runs (a server's `stats`).
#[derive(Debug, Default)]
pub struct LiveCounters {
    pub requests: AtomicU64,
    pub bytes: AtomicU64,
}

/// What the output did over a stream.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct OutputStats {
    /// Bytes written to the main fd.
    pub bytes: u64,
    /// Answers for objects that do not exist.
    pub missing: u64,
    /// writev calls on the main fd.
    pub writev_calls: u64,
}

/// The two output fds, borrowed for `'fd` (or owned). When the main fd is stdout, one writer serves both.
pub(crate) struct Output<'fd> {
    main: GatherWriter<FdSink<'fd>>,
    /// `None`: stdout is the main fd.
    stdout: Option<GatherWriter<FdSink<'fd>>>,
    stats: OutputStats,
    /// Also counts the main fd's bytes here, as they are written.
    live: Option<Arc<LiveCounters>>,
}

impl<'fd> Output<'fd> {
    /// Responses and stdout lines both to `stdout`.
    pub(crate) fn new(stdout: impl Into<OutFd<'fd>>) -> Output<'fd> {
        let main = FdSink::new(stdout);
        main.grow_pipe(PIPE_SIZE);
        Output { main: GatherWriter::new(main), stdout: None, stats: OutputStats::default(), live: None }
    }

    /// Responses to `main`, stdout lines to `stdout`.
    pub(crate) fn split(main: impl Into<OutFd<'fd>>, stdout: impl Into<OutFd<'fd>>) -> Output<'fd> {
        let mut output = Output::new(main);
        output.stdout = Some(GatherWriter::new(FdSink::new(stdout)));
        output
    }

    /// Adds every byte written to the main fd to `live` too.
    pub(crate) fn count_bytes_into(mut self, live: Option<Arc<LiveCounters>>) -> Self {
        self.live = live;
        self
    }

    /// Takes over the counters of the output this one replaces.
    pub(super) fn carry_counters(&mut self, old: Output<'_>) {
        self.stats = old.stats;
        self.live = old.live;
    }

    fn writer(&mut self, target: Target) -> &mut GatherWriter<FdSink<'fd>> {
        match (target, &mut self.stdout) {
            (Target::Stdout, Some(stdout)) => stdout,
            _ => &mut self.main,
        }
    }

    /// Writes `responses`: each run of consecutive responses to the same fd in one writev (the gather-writer
    /// splits only at IOV_MAX or MAX_IO_SIZE, or where the kernel takes less); a streamed response on its own,
    /// piece by piece.
    pub(super) fn write(&mut self, responses: &[(Response, Target)]) -> Result<(), WriteError> {
        let mut start = 0;
        while start < responses.len() {
            let target = responses[start].1;
            if let Response::Streamed { header, body, terminator } = &responses[start].0 {
                self.write_streamed(target, header.as_bytes(), body, *terminator)?;
                if target == Target::Main {
                    self.count(std::iter::once(&responses[start].0));
                }
                start += 1;
                continue;
            }
            let end = responses[start..]
                .iter()
                .position(|(response, t)| *t != target || matches!(response, Response::Streamed { .. }))
                .map_or(responses.len(), |n| start + n);
            let run = &responses[start..end];
            let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(run.len() * 3);
            for (response, _) in run {
                response.push_slices(&mut slices);
            }
            self.writer(target).write_all(&mut slices)?;
            if target == Target::Main {
                self.count(run.iter().map(|(response, _)| response));
            }
            start = end;
        }
        Ok(())
    }

    /// A big blob's answer: the header with the first piece, the terminator with the last, one writev each.
    fn write_streamed(
        &mut self,
        target: Target,
        header: &[u8],
        body: &BigBlob,
        terminator: u8,
    ) -> Result<(), WriteError> {
        let writer = self.writer(target);
        let mut header = Some(header);
        let written = body.write_in_pieces(|piece, last| {
            let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(3);
            slices.extend(header.take().map(IoSlice::new));
            slices.push(IoSlice::new(piece));
            if last {
                slices.push(IoSlice::new(std::slice::from_ref(&terminator)));
            }
            writer.write_all(&mut slices)
        });
        written.map_err(|err| match err {
            PieceError::Write(err) => err,
            PieceError::Read(err) => WriteError::Source(Arc::new(err)),
        })
    }

    fn count<'r>(&mut self, written: impl Iterator<Item = &'r Response>) {
        let before = self.stats.bytes;
        for response in written {
            self.stats.bytes += response.len() as u64;
            self.stats.missing += u64::from(response.is_missing());
        }
        if let Some(live) = &self.live {
            live.bytes.fetch_add(self.stats.bytes - before, Ordering::Relaxed);
        }
    }

    pub(crate) fn stats(&self) -> OutputStats {
        OutputStats { writev_calls: self.main.syscalls(), ..self.stats }
    }
}
