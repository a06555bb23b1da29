//! The stream's read commands (`cat-blob`, `ls`, `get-mark`, `progress`): answered from the repository and the
//! stream's own blobs and marks, in order with everything else, or (for what git built in this stream) relayed
//! to git while write-through runs.
use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::dataref::Dataref;
use super::ls::{self, LsError, LsOptions, TreeCache};
use super::objects::{StoreObjects, written_blob};
use super::write_through::Reply;
use super::{Session, SessionError, StreamEngine, command as request};
use crate::engine::{Job, Target};
use crate::io::line_reader::LineReader;
use crate::response::encode::Response;
use crate::store::{Kind, LookupHint, ObjectId, Prefetcher, Resolver, Store};

/// The reads that run on the resolver threads: their answers depend on the repository alone.
pub(crate) enum ReadJob<'s> {
    CatBlob(CatBlob<'s>),
    Ls(Ls<'s>),
}

/// What each resolver thread (and the front end, for what it runs itself) reads with.
pub(crate) struct ReadWorker {
    pub(super) resolver: Resolver,
    /// Shared by every worker of the stream: random `ls` requests meet the same trees on any thread.
    pub(super) trees: Arc<TreeCache>,
    /// Starts the next `cat-blob`s' index lookups (see [`ReadJob::prefetch`]).
    pub(super) prefetcher: Prefetcher,
}

impl Job for ReadJob<'_> {
    type Worker = ReadWorker;
    type Error = SessionError;

    fn run(self, worker: &mut ReadWorker) -> Result<Response, SessionError> {
        match self {
            ReadJob::CatBlob(job) => job.run(&mut worker.resolver),
            ReadJob::Ls(job) => job.run(worker),
        }
    }

    /// As `cat-file --batch`'s jobs: ids are looked up in an index far bigger than the caches, so the next ones'
    /// first lines are fetched while this one is answered. Without it the index lookup took 4.8% of `cat-blob`'s
    /// samples over every blob of small-A against 3.3% of `--batch`'s (its prefetch included); with it, CPU −1 to
    /// −2% (benches/README.md). `ls` starts from a commit's root tree, which the tree cache mostly has.
    const AHEAD: usize = LookupHint::AHEAD;

    fn prefetch(&self, worker: &mut ReadWorker, ahead: usize) {
        if let ReadJob::CatBlob(job) = self {
            worker.prefetcher.prefetch(job.store, &job.oid, ahead);
        }
    }
}

/// `cat-blob` of an object in the repository (git's `cat_blob`): the blob, `missing`, or fatal for another type.
pub(crate) struct CatBlob<'s> {
    pub(super) store: &'s Store,
    pub(super) oid: ObjectId,
}

impl CatBlob<'_> {
    fn run(self, resolver: &mut Resolver) -> Result<Response, SessionError> {
        match self.store.read_for_answer(&self.oid, resolver, false)? {
            None => Ok(Response::missing(&self.oid)),
            Some(answer) if answer.kind() == Kind::Blob => Ok(Response::blob_answer(&self.oid, answer)),
            Some(answer) => Err(SessionError::NotABlob { oid: self.oid, kind: answer.kind() }),
        }
    }
}

/// `ls` of a tree-ish already resolved to `start`, in a stream whose own objects cannot be met on the way.
pub(crate) struct Ls<'s> {
    store: &'s Store,
    /// The command line, for messages.
    line: Vec<u8>,
    start: ObjectId,
    path_field: Vec<u8>,
    options: LsOptions,
}

impl Ls<'_> {
    fn run(self, worker: &mut ReadWorker) -> Result<Response, SessionError> {
        let mut objects = StoreObjects { store: self.store, resolver: &mut worker.resolver };
        match ls::answer(&self.line, self.start, &self.path_field, &mut objects, &worker.trees, &self.options) {
            Ok(line) => Ok(Response::Line(line)),
            Err(LsError::Read(err)) => Err(err.into()),
            Err(err) => Err(err.into()),
        }
    }
}

impl<'a> Session<'a> {
    pub(super) fn count_request(&mut self) {
        self.stats.requests += 1;
        if let Some(live) = &self.live {
            live.requests.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `cat-blob <dataref>` (git's `parse_cat_blob` + `cat_blob`): a blob the stream defined is answered here,
    /// anything else by the engine.
    pub(super) fn cat_blob<'e>(
        &mut self,
        dataref: Dataref,
        interactive: bool,
        line: &[u8],
        engine: &mut StreamEngine<'e, 'a>,
    ) -> Result<(), SessionError>
    where
        'a: 'e,
    {
        if self.cat_blob_relayed(dataref, line, engine)? {
            self.count_request();
            return Ok(());
        }
        let oid = match dataref {
            Dataref::Oid(oid) => oid,
            Dataref::Mark(mark) => self.marks.get(mark).ok_or(SessionError::MarkNotDeclared(mark))?,
        };
        self.confirm_git()?;
        self.count_request();
        if let Some(data) = written_blob(&self.blobs, self.store, &oid)? {
            return Ok(engine.ready(Response::blob(&oid, data), Target::Main)?);
        }
        Ok(engine.job(ReadJob::CatBlob(CatBlob { store: self.store, oid }), &mut self.worker, interactive)?)
    }

    /// `ls <dataref> <path>` (git's `parse_ls`). While git writes the stream, what cannot be answered from the
    /// repository and the stream's blobs (a tree git built, a commit mark) is git's to answer, or to die on.
    /// Otherwise, once the tree-ish is resolved here, the walk depends on the repository alone (unless a blob
    /// of the stream could be met on the way) and runs on the resolver threads.
    pub(super) fn ls<'e>(
        &mut self,
        raw: &[u8],
        arg: &[u8],
        interactive: bool,
        engine: &mut StreamEngine<'e, 'a>,
    ) -> Result<(), SessionError>
    where
        'a: 'e,
    {
        self.count_request();
        let line = request::c_string(raw).to_vec();
        let ls_options = self.ls;
        if !self.writing() && !self.blobs_written {
            let (start, path_field) = ls::parse(&line, arg, &self.objects())?;
            let path_field = path_field.to_vec();
            let job = Ls { store: self.store, line, start, path_field, options: ls_options };
            return Ok(engine.job(ReadJob::Ls(job), &mut self.worker, interactive)?);
        }
        let trees = Arc::clone(&self.worker.trees);
        match ls::ls(&line, arg, &mut self.objects(), &trees, &ls_options) {
            Ok(response) => {
                self.confirm_git()?;
                Ok(engine.ready(Response::Line(response), Target::Main)?)
            }
            // Damage is never git's to paper over (unless git died before it).
            Err(LsError::Read(err)) => {
                self.confirm_git()?;
                Err(err.into())
            }
            Err(_) if self.writing() => self.relay(raw, Reply::Line, engine),
            Err(err) => Err(err.into()),
        }
    }

    /// `get-mark :<idnum>`: the mark's id, from the marks cat-blobd holds or (for marks git made) from git.
    pub(super) fn get_mark<'e>(
        &mut self,
        mark: u64,
        raw: &[u8],
        engine: &mut StreamEngine<'e, 'a>,
    ) -> Result<(), SessionError>
    where
        'a: 'e,
    {
        self.count_request();
        match self.marks.get(mark) {
            Some(id) => {
                self.confirm_git()?;
                let mut line = id.to_hex().to_string().into_bytes();
                line.push(b'\n');
                engine.ready(Response::Line(line), Target::Main)?;
                Ok(())
            }
            None if self.writing() => self.relay(raw, Reply::Line, engine),
            None => Err(SessionError::MarkNotDeclared(mark)),
        }
    }

    /// `progress <text>`: the line, on stdout, in order with the responses.
    pub(super) fn progress<'e, R: Read>(
        &mut self,
        reader: &mut LineReader<R>,
        engine: &mut StreamEngine<'e, 'a>,
    ) -> Result<(), SessionError>
    where
        'a: 'e,
    {
        self.confirm_git()?;
        // The raw line, NUL and all: git writes `command_buf.len` bytes.
        let mut progress = reader.line().to_vec();
        progress.push(b'\n');
        engine.ready(Response::Line(progress), Target::Stdout)?;
        reader.skip_optional_lf()?;
        Ok(())
    }
}
