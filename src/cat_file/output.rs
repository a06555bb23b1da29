//! cat-file's stdout: each answer in one writev as soon as it is complete, or, with `--buffer`, answers
//! gathered until enough are pending (git's stdio buffer), a `flush` command, or the end.
use std::io::IoSlice;

use crate::response::writev::{FdSink, GatherWriter, OutFd, WriteError};
use crate::store::Data;

/// Bytes of `--buffer` output gathered before they are written.
const BUFFER_BYTES: usize = 1 << 20;
/// Pieces gathered at most (a writev takes 1,024 slices).
const BUFFER_PIECES: usize = 1000;

enum Piece {
    Owned(Vec<u8>),
    Shared(Data),
}

impl Piece {
    fn bytes(&self) -> &[u8] {
        match self {
            Piece::Owned(bytes) => bytes,
            Piece::Shared(data) => data,
        }
    }
}

pub struct Output {
    writer: GatherWriter<FdSink<'static>>,
    pieces: Vec<Piece>,
    pending: usize,
    buffered: bool,
}

impl Output {
    /// Fd 1; `buffered` is `--buffer`.
    pub fn stdout(buffered: bool) -> Output {
        Output {
            writer: GatherWriter::new(FdSink::new(OutFd::dup_of_process_fd(1))),
            pieces: Vec::new(),
            pending: 0,
            buffered,
        }
    }

    /// Fd 2, for messages.
    pub fn stderr() -> Output {
        Output {
            writer: GatherWriter::new(FdSink::new(OutFd::dup_of_process_fd(2))),
            pieces: Vec::new(),
            pending: 0,
            buffered: false,
        }
    }

    pub fn push(&mut self, bytes: Vec<u8>) {
        self.pending += bytes.len();
        self.pieces.push(Piece::Owned(bytes));
    }

    /// An object's content, written from the object's own buffer.
    pub fn push_shared(&mut self, data: Data) {
        self.pending += data.len();
        self.pieces.push(Piece::Shared(data));
    }

    /// One answer is complete: write it now, unless `--buffer` gathers more first.
    pub fn end_answer(&mut self) -> Result<(), WriteError> {
        if !self.buffered || self.pending >= BUFFER_BYTES || self.pieces.len() >= BUFFER_PIECES {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes everything pending.
    pub fn flush(&mut self) -> Result<(), WriteError> {
        if self.pieces.is_empty() {
            return Ok(());
        }
        let mut slices: Vec<IoSlice<'_>> = self.pieces.iter().map(|piece| IoSlice::new(piece.bytes())).collect();
        let result = self.writer.write_all(&mut slices);
        self.pieces.clear();
        self.pending = 0;
        result
    }

    /// Writes `bytes` at once, ignoring errors: for messages, which have nowhere else to go.
    pub fn message(&mut self, bytes: &[u8]) {
        let _ = self.writer.write_all(&mut [IoSlice::new(bytes)]);
    }
}
