//! `blob` and `data`: the commands that bring bytes, kept as stream blobs and passed on to git while it runs.
use std::io::Read;

use super::command as request;
use super::dataref::parse_mark_line;
use super::{Session, SessionError, StreamEngine};
use crate::git_compat::strtoumax::strtoumax;
use crate::io::line_reader::LineReader;
use crate::store::ObjectId;

impl<'a> Session<'a> {
    /// `blob`, `mark :N`?, `original-oid <any>`?, `data …` (git's `parse_new_blob`).
    pub(super) fn blob<'e, R: Read>(
        &mut self,
        reader: &mut LineReader<R>,
        engine: &mut StreamEngine<'e, 'a>,
    ) -> Result<(), SessionError>
    where
        'a: 'e,
    {
        self.forward(b"blob")?;
        self.next_command(reader, engine)?;
        let mut mark = 0;
        if let Some(number) = parse_mark_line(request::c_string(reader.line())) {
            mark = number;
            self.forward(reader.line())?;
            self.next_command(reader, engine)?;
        }
        if request::c_string(reader.line()).starts_with(b"original-oid ") {
            self.forward(reader.line())?;
            self.next_command(reader, engine)?;
        }
        if self.writing() {
            let line = reader.line().to_vec();
            if !request::c_string(&line).starts_with(b"data ") {
                return self.refused(&line);
            }
            self.forward(&line)?;
        }
        let id = self.data(reader, true)?.expect("kept");
        // Checked once: a blob that reaches a pack later (git's, at a checkpoint) only keeps `ls` here longer.
        self.blobs_written |= !self.store.in_pack(&id);
        if mark != 0 && self.settings.export_marks.is_some() {
            // A response still in flight may yet fail, and git's die handler exports the marks as they were
            // then: define this mark only once everything before it has been written.
            engine.drain()?;
        }
        self.marks.insert(mark, id)?;
        Ok(())
    }

    /// `data <count>` or `data <<DELIM` and the body (git's `parse_data`), stored as a stream blob if `keep`
    /// (and then returned), and streamed on to git if it runs (the `data` line itself is the caller's to send).
    pub(super) fn data<R: Read>(
        &mut self,
        reader: &mut LineReader<R>,
        keep: bool,
    ) -> Result<Option<ObjectId>, SessionError> {
        let raw = reader.line().to_vec();
        let line = request::c_string(&raw);
        let spec = line.strip_prefix(b"data ").ok_or_else(|| SessionError::ExpectedData(line.to_vec()))?;
        let hash = self.store.object_hash();
        let delimited = spec.starts_with(b"<<");
        // `strtoumax` with no checks: `data abc` is 0 bytes, `data 3x` is 3.
        let len = if delimited { None } else { Some(strtoumax(spec, 10).map_or(0, |(len, _)| len)) };
        let mut body = if keep { Some(self.blobs.begin(hash, len)?) } else { None };
        let mut git = self.git.as_mut();
        let mut sink = |piece: &[u8]| -> Result<(), SessionError> {
            if let Some(body) = &mut body {
                body.write(piece)?;
            }
            if let Some(git) = &mut git {
                git.send(piece)?;
            }
            Ok(())
        };
        if let Some(len) = len {
            let arrived = reader.read_body::<SessionError>(len, &mut sink)?;
            if arrived < len {
                return Err(SessionError::EofInData(len - arrived));
            }
        } else {
            // git keeps the delimiter as a C string but its length from the whole line: a body line ends the
            // data when it is as long as everything after `<<` and equal to the delimiter up to its NUL.
            let full_delimiter = &raw[b"data <<".len()..];
            let delimiter = request::c_string(full_delimiter);
            loop {
                match reader.next_line()? {
                    None => return Err(SessionError::EofInDelimitedData(delimiter.to_vec())),
                    Some(body_line)
                        if body_line.len() == full_delimiter.len() && request::c_string(body_line) == delimiter =>
                    {
                        break;
                    }
                    Some(body_line) => {
                        sink(body_line)?;
                        sink(b"\n")?;
                    }
                }
            }
            if let Some(git) = &mut git {
                git.send_line(full_delimiter)?;
            }
        }
        let id = body.map(|body| body.finish()).transpose()?;
        reader.skip_optional_lf()?;
        Ok(id)
    }
}
