//! The single-object modes' stdout (one writev at the end, the object's bytes straight from its buffer), and
//! messages on stderr.
use std::io::IoSlice;

use crate::response::writev::{FdSink, GatherWriter, OutFd, WriteError};
use crate::store::Data;

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

pub(crate) struct Output {
    writer: GatherWriter<FdSink<'static>>,
    pieces: Vec<Piece>,
}

impl Output {
    /// Fd 1.
    pub(crate) fn stdout() -> Output {
        Output { writer: GatherWriter::new(FdSink::new(OutFd::dup_of_process_fd(1))), pieces: Vec::new() }
    }

    /// Fd 2, for messages.
    pub(crate) fn stderr() -> Output {
        Output { writer: GatherWriter::new(FdSink::new(OutFd::dup_of_process_fd(2))), pieces: Vec::new() }
    }

    pub(crate) fn push(&mut self, bytes: Vec<u8>) {
        self.pieces.push(Piece::Owned(bytes));
    }

    /// An object's content, written from the object's own buffer.
    pub(crate) fn push_shared(&mut self, data: Data) {
        self.pieces.push(Piece::Shared(data));
    }

    /// Writes everything pending.
    pub(crate) fn flush(&mut self) -> Result<(), WriteError> {
        if self.pieces.is_empty() {
            return Ok(());
        }
        let mut slices: Vec<IoSlice<'_>> = self.pieces.iter().map(|piece| IoSlice::new(piece.bytes())).collect();
        let result = self.writer.write_all(&mut slices);
        self.pieces.clear();
        result
    }

    /// Writes `bytes` at once, ignoring errors: for messages, which have nowhere else to go.
    pub(crate) fn message(&mut self, bytes: &[u8]) {
        let _ = self.writer.write_all(&mut [IoSlice::new(bytes)]);
    }
}
