//! The input side: a buffered reader of the command stream that splits lines on LF only.
//!
//! Input may be buffered freely (responses never are): git reads its stream through stdio too. A line is
//! capped in length so a stream without LFs cannot make us allocate without bound.
use std::io::{self, Read};

/// Longest command line accepted. git has no limit; real commands are an object id or a path, and a path is
/// at most a few KiB, so this only stops runaway input.
pub(crate) const MAX_LINE: usize = 64 << 20;

const BUFFER_SIZE: usize = 128 << 10;

#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("error reading the command stream: {0}")]
    Io(#[from] io::Error),
    #[error("command line longer than {MAX_LINE} bytes")]
    LineTooLong,
}

/// Reads LF-terminated lines (or lines ending in another byte) from `R` without any UTF-8 assumption.
pub(crate) struct LineReader<R> {
    inner: R,
    /// What ends a line: LF, or NUL for `cat-file -z`.
    delimiter: u8,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    line: Vec<u8>,
    at_eof: bool,
}

impl<R: Read> LineReader<R> {
    pub(crate) fn new(inner: R) -> Self {
        LineReader::with_delimiter(inner, b'\n')
    }

    /// A reader of lines that end in `delimiter`.
    pub(crate) fn with_delimiter(inner: R, delimiter: u8) -> Self {
        LineReader {
            inner,
            delimiter,
            buf: vec![0; BUFFER_SIZE].into_boxed_slice(),
            start: 0,
            end: 0,
            line: Vec::new(),
            at_eof: false,
        }
    }

    /// The next line without its LF, or `None` at the end of input. A last line without LF is still a line,
    /// but it leaves [`Self::at_eof`] set, like stdio's `feof` after `strbuf_getline`.
    ///
    /// At the end of input, [`Self::line`] keeps git's quirk (`strbuf_getwholeline`): if the end had already
    /// been seen before this call, the previous line stays; otherwise it is emptied. git's error messages
    /// quote that buffer.
    pub(crate) fn next_line(&mut self) -> Result<Option<&[u8]>, ReadError> {
        if self.at_eof && self.start == self.end {
            return Ok(None);
        }
        self.line.clear();
        loop {
            if self.start == self.end && !self.fill()? {
                return Ok(if self.line.is_empty() { None } else { Some(&self.line) });
            }
            let available = &self.buf[self.start..self.end];
            let (taken, done) = match memchr::memchr(self.delimiter, available) {
                Some(lf) => (lf, true),
                None => (available.len(), false),
            };
            if self.line.len() + taken > MAX_LINE {
                return Err(ReadError::LineTooLong);
            }
            self.line.extend_from_slice(&available[..taken]);
            if done {
                self.start += taken + 1;
                return Ok(Some(&self.line));
            }
            self.start = self.end;
        }
    }

    /// What ends a line.
    pub(crate) fn delimiter(&self) -> u8 {
        self.delimiter
    }

    /// The line most recently read (or left over at the end of input; see [`Self::next_line`]).
    pub(crate) fn line(&self) -> &[u8] {
        &self.line
    }

    /// Reads up to `len` bytes of a data body, handing them to `sink` as they arrive, without ever holding
    /// more than one buffer of them. Returns how many bytes came before the end of input.
    pub(crate) fn read_body<E: From<ReadError>>(
        &mut self,
        len: u64,
        mut sink: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<u64, E> {
        let mut remaining = len;
        while remaining > 0 {
            if self.start == self.end && !self.fill()? {
                break;
            }
            let take = (self.end - self.start).min(usize::try_from(remaining).unwrap_or(usize::MAX));
            sink(&self.buf[self.start..self.start + take])?;
            self.start += take;
            remaining -= take as u64;
        }
        Ok(len - remaining)
    }

    /// git's `skip_optional_lf`: consumes the next byte if it is LF. Like `fgetc`, looking at the end of
    /// input counts as reaching it.
    pub(crate) fn skip_optional_lf(&mut self) -> Result<(), ReadError> {
        if self.start == self.end && !self.fill()? {
            return Ok(());
        }
        if self.buf[self.start] == b'\n' {
            self.start += 1;
        }
        Ok(())
    }

    /// Is a whole line already buffered? If not, the next command may not have been sent yet, or only part of
    /// it: a frontend may be waiting for the last response before it sends (the rest of) another.
    pub(crate) fn has_buffered_line(&self) -> bool {
        memchr::memchr(self.delimiter, &self.buf[self.start..self.end]).is_some()
    }

    /// Has the input ended? True after a read returned nothing (so after a last line without LF, or after
    /// `next_line` returned `None`).
    pub(crate) fn at_eof(&self) -> bool {
        self.at_eof
    }

    /// Refills the buffer; false at the end of input.
    fn fill(&mut self) -> Result<bool, ReadError> {
        if self.at_eof {
            return Ok(false);
        }
        loop {
            match self.inner.read(&mut self.buf) {
                Ok(0) => {
                    self.at_eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.start = 0;
                    self.end = n;
                    return Ok(true);
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err.into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most `step` bytes per read, to cross buffer boundaries everywhere.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(out.len()).min(self.data.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn lines(input: &[u8], step: usize) -> (Vec<Vec<u8>>, bool) {
        let mut reader = LineReader::new(Trickle { data: input, step });
        let mut out = Vec::new();
        while let Some(line) = reader.next_line().unwrap() {
            out.push(line.to_vec());
        }
        (out, reader.at_eof())
    }

    #[test]
    fn splits_on_lf_only_and_keeps_cr_and_nul() {
        for step in [1, 3, 1 << 20] {
            let (got, eof) = lines(b"a\r\nb\0c\n\nlast", step);
            assert_eq!(got, vec![b"a\r".to_vec(), b"b\0c".to_vec(), b"".to_vec(), b"last".to_vec()]);
            assert!(eof);
        }
    }

    #[test]
    fn a_final_lf_does_not_set_eof_until_the_next_read() {
        let mut reader = LineReader::new(&b"done\n"[..]);
        assert_eq!(reader.next_line().unwrap(), Some(&b"done"[..]));
        assert!(!reader.at_eof());
        let mut reader = LineReader::new(&b"done"[..]);
        assert_eq!(reader.next_line().unwrap(), Some(&b"done"[..]));
        assert!(reader.at_eof());
    }

    #[test]
    fn at_the_end_the_buffer_is_stale_only_if_the_end_was_already_seen() {
        let mut reader = LineReader::new(&b"blob\nmark :1"[..]);
        assert_eq!(reader.next_line().unwrap(), Some(&b"blob"[..]));
        assert_eq!(reader.next_line().unwrap(), Some(&b"mark :1"[..]));
        assert_eq!(reader.next_line().unwrap(), None);
        assert_eq!(reader.line(), b"mark :1", "the end was already seen: the old line stays");
        let mut reader = LineReader::new(&b"blob\n"[..]);
        reader.next_line().unwrap();
        assert_eq!(reader.next_line().unwrap(), None);
        assert_eq!(reader.line(), b"", "the end was found by this call: the line is emptied");
    }

    #[test]
    fn bodies_come_in_pieces_and_stop_at_the_end() {
        let mut reader = LineReader::new(Trickle { data: b"data 5\nabcdefgh\nnext\n", step: 3 });
        reader.next_line().unwrap();
        let mut body = Vec::new();
        let got = reader
            .read_body::<ReadError>(5, |piece| {
                body.extend_from_slice(piece);
                Ok(())
            })
            .unwrap();
        assert_eq!((got, &body[..]), (5, &b"abcde"[..]));
        reader.skip_optional_lf().unwrap();
        assert_eq!(reader.next_line().unwrap(), Some(&b"fgh"[..]), "no LF to skip: nothing is consumed");
        reader.skip_optional_lf().unwrap();
        assert_eq!(reader.next_line().unwrap(), Some(&b"next"[..]));
        let got = reader.read_body::<ReadError>(10 << 30, |_| Ok(())).unwrap();
        assert_eq!(got, 0, "a huge announced size reads only what is there");
    }

    #[test]
    fn only_a_whole_line_counts_as_buffered() {
        let mut reader = LineReader::with_delimiter(&b"one\0two\0thr"[..], 0);
        assert_eq!(reader.next_line().unwrap(), Some(&b"one"[..]));
        assert!(reader.has_buffered_line(), "two");
        assert_eq!(reader.next_line().unwrap(), Some(&b"two"[..]));
        assert!(!reader.has_buffered_line(), "half a line is not a request yet");
    }

    #[test]
    fn lines_longer_than_a_buffer_survive() {
        let long = vec![b'x'; 3 * BUFFER_SIZE + 5];
        let input = [&long[..], b"\nnext\n"].concat();
        let (got, _) = lines(&input, 1 << 20);
        assert_eq!(got, vec![long, b"next".to_vec()]);
    }
}
