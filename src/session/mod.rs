//! One fast-import stream, in stream order: read a command, resolve it, write its response in full, then read
//! the next. Writing each response before reading on is what lets an interactive frontend send one request
//! and wait for its reply.
use std::io::{IoSlice, Read};
use std::time::{Duration, Instant};

use crate::request::dataref::Dataref;
use crate::request::reader::{self, LineReader};
use crate::request::{self, Command, ParseError};
use crate::response::encode::Response;
use crate::response::writev::{GatherWriter, Sink, WriteError};
use crate::store::{Kind, ObjectId, ReadError, Resolver, Store};

/// What makes a stream end with `fatal:` (exit 128).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Input(#[from] reader::ReadError),
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error("mark :{0} not declared")]
    MarkNotDeclared(u64),
    #[error("object {oid} is a {kind} but a blob was expected.")]
    NotABlob { oid: ObjectId, kind: Kind },
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Write(#[from] WriteError),
}

#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// Byte cap of the delta-base cache.
    pub delta_cache_size: usize,
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
        writeln!(
            f,
            "  bytes written: {} ({:.1} MB) in {} writev calls",
            self.bytes, mb, self.writev_calls
        )?;
        writeln!(
            f,
            "  elapsed:       {:.3} s, {:.1} MB/s",
            secs,
            if secs > 0.0 { mb / secs } else { 0.0 }
        )?;
        writeln!(
            f,
            "  delta cache:   {:.1}% hits, {:.1} MB inflated",
            100.0 * self.cache_hits as f64 / lookups as f64,
            self.inflated_bytes as f64 / 1e6
        )
    }
}

/// Runs one stream from `input` to `writer` against `store`. Every response before a fatal error has been
/// written in full when this returns the error.
pub fn run<R: Read, S: Sink>(
    input: R,
    writer: &mut GatherWriter<S>,
    store: &Store,
    options: &SessionOptions,
) -> Result<Stats, SessionError> {
    let started = Instant::now();
    let mut stats = Stats::default();
    let mut resolver = Resolver::new(options.delta_cache_size);
    let mut reader = LineReader::new(input);
    let result = loop {
        let line = match reader.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => break Ok(()),
            Err(err) => break Err(err.into()),
        };
        if request::is_comment(line) {
            continue;
        }
        let response = match request::parse_command(request::c_string(line), store.object_hash()) {
            Ok(Command::CatBlob(dataref)) => match cat_blob(dataref, store, &mut resolver) {
                Ok(response) => response,
                Err(err) => break Err(err),
            },
            Ok(Command::Done) => break Ok(()),
            Err(err) => break Err(err.into()),
        };
        stats.requests += 1;
        stats.missing += u64::from(matches!(response, Response::Line(_)));
        stats.bytes += response.len() as u64;
        let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(3);
        response.push_slices(&mut slices);
        if let Err(err) = writer.write_all(&mut slices) {
            break Err(err.into());
        }
    };
    stats.writev_calls = writer.syscalls();
    stats.inflated_bytes = resolver.inflated_bytes;
    (stats.cache_hits, stats.cache_misses) = resolver.cache().hit_counts();
    stats.elapsed = started.elapsed();
    result.map(|()| stats)
}

/// `cat-blob <dataref>` (git's `parse_cat_blob` + `cat_blob`).
fn cat_blob(dataref: Dataref, store: &Store, resolver: &mut Resolver) -> Result<Response, SessionError> {
    let oid = match dataref {
        Dataref::Oid(oid) => oid,
        // No command defines marks yet, so every mark is undeclared (git dies in `find_mark`).
        Dataref::Mark(mark) => return Err(SessionError::MarkNotDeclared(mark)),
    };
    match store.read(&oid, resolver)? {
        None => Ok(Response::missing(&oid)),
        Some(object) if object.kind == Kind::Blob => Ok(Response::blob(&oid, object.data)),
        Some(object) => Err(SessionError::NotABlob { oid, kind: object.kind }),
    }
}
