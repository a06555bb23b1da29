//! The single-object modes' stdout (one writev at the end, the object's bytes straight from its buffer), and
//! messages on stderr. Both are the fds [`Io`](super::Io) lends: this process's, or a daemon client's.
use std::io::IoSlice;
use std::os::fd::BorrowedFd;

use crate::io::writev::{FdSink, GatherWriter, WriteError};
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

pub(crate) struct Output<'fd> {
    writer: GatherWriter<FdSink<'fd>>,
    pieces: Vec<Piece>,
    /// Bytes written so far.
    pub(crate) written: u64,
}

impl<'fd> Output<'fd> {
    /// Writes to `fd`; `None` is an fd that is not open (the first write fails with EBADF).
    pub(crate) fn new(fd: Option<BorrowedFd<'fd>>) -> Output<'fd> {
        Output { writer: GatherWriter::new(FdSink::new(fd)), pieces: Vec::new(), written: 0 }
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
        if result.is_ok() {
            self.written += self.pieces.iter().map(|piece| piece.bytes().len() as u64).sum::<u64>();
        }
        self.pieces.clear();
        result
    }

    /// Writes `bytes` at once, ignoring errors: for messages, which have nowhere else to go.
    pub(crate) fn message(&mut self, bytes: &[u8]) {
        let _ = self.writer.write_all(&mut [IoSlice::new(bytes)]);
    }
}

/// Where `error:`, `warning:` and `fatal:` lines go (stderr), from any thread of the run.
#[derive(Debug, Clone, Copy)]
pub struct Messages<'fd>(pub(crate) Option<BorrowedFd<'fd>>);

impl Messages<'_> {
    /// Writes `bytes` at once, ignoring errors (as git does on stderr).
    pub(crate) fn write(self, bytes: &[u8]) {
        Output::new(self.0).message(bytes);
    }
}
