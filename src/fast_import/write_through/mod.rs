//! Write-through: a stream that writes history runs through a real `git fast-import`, started at the first
//! command that needs it, while cat-blobd keeps answering the reads it can answer.
//!
//! - git starts at the first `commit`, `tag`, `reset` or `alias`, or at a `checkpoint` or the end of a stream
//!   whose `blob`s must persist (there are some, and marks are exported or a checkpoint asks for them). It gets
//!   the same flags, the stream's leading `feature`/`option` lines and every blob the stream defined so far,
//!   then every writing command verbatim. Read-only streams never start it.
//! - Reads on objects that existed before the stream, on imported marks and on the stream's blobs are answered
//!   here; the rest (commit, tag and alias marks, `ls` in the commit being built, ids git created) is relayed:
//!   the responses before it are written, the read is sent to git, and git's one reply is written in its place.
//! - git owns the marks files once it runs, and its exit status is the stream's.
mod git;
mod grammar;
mod stderr;

use std::io::Read;
use std::path::PathBuf;

use super::{Session, SessionError, StreamEngine};
use crate::engine::Target;
use crate::fast_import::command::{self as request, Command, Context};
use crate::fast_import::dataref::Dataref;
use crate::fast_import::options::SignMode;
use crate::io::line_reader::LineReader;
use crate::response::encode::Response;
pub use git::running_git_pid;
pub(crate) use git::{Git, GitError, Reply, exit_code};
use grammar::{Step, WriteCommand};

/// Where writing commands go. Without it (`--read-only`, a daemon), they are refused.
#[derive(Debug, Clone)]
pub struct WriteThrough {
    /// `GIT_DIR` for git, if it must be told (else it finds the repository as cat-blobd did, from the same
    /// environment and directory): the repository cat-blobd reads.
    pub(crate) git_dir: Option<PathBuf>,
}

impl From<GitError> for SessionError {
    fn from(error: GitError) -> Self {
        match error {
            GitError::Gone => SessionError::GitExited,
            error => SessionError::Git(error),
        }
    }
}

impl<'a> Session<'a> {
    /// Is git running for this stream?
    pub(super) fn writing(&self) -> bool {
        self.git.is_some()
    }

    /// Starts git (once), replaying the stream's leading feature and option lines and its blobs so far.
    pub(super) fn start_git(&mut self) -> Result<(), SessionError> {
        if self.git.is_some() {
            return Ok(());
        }
        let config = self.write_through.as_ref().expect("writes are refused without write-through");
        let stderr = self.io.stderr.map(|fd| fd.try_clone_to_owned()).transpose().map_err(GitError::Spawn)?;
        let mut git = Git::spawn(config.git_dir.as_deref(), &self.git_args, stderr)?;
        for line in &self.preamble {
            git.send_line(line)?;
        }
        self.replay_blobs(&mut git)?;
        self.git = Some(git);
        Ok(())
    }

    /// Each blob the stream defined, with the marks that name it now (a mark redefined later names the later
    /// blob only), so git's objects and marks are those it would have had from the start.
    fn replay_blobs(&self, git: &mut Git) -> Result<(), SessionError> {
        let mut marks_of = std::collections::HashMap::<_, Vec<u64>>::new();
        for (mark, id) in self.marks.iter() {
            if self.blobs.contains(&id) {
                marks_of.entry(id).or_default().push(mark);
            }
        }
        for id in self.blobs.ids() {
            let data = self.blobs.get(id)?.expect("listed");
            let marks = marks_of.get(id).map_or(&[0][..], |marks| &marks[..]);
            for &mark in marks {
                git.send(b"blob\n")?;
                if mark != 0 {
                    git.send_line(format!("mark :{mark}").as_bytes())?;
                }
                git.send_line(format!("data {}", data.len()).as_bytes())?;
                git.send_line(&data)?;
            }
        }
        Ok(())
    }

    /// Forwards a `checkpoint` and waits until git has done it: git alone finishes a checkpoint (pack, refs,
    /// marks file) before it reads on, and a frontend may look at the repository after the next response.
    /// A `cat-blob` of the null id is the round trip: git answers `missing` only after the checkpoint.
    pub(super) fn git_checkpoint(&mut self) -> Result<(), SessionError> {
        self.forward(b"checkpoint")?;
        self.confirm_git()
    }

    /// Before a response cat-blobd makes itself (a read it answers, `progress`): git has read every line
    /// forwarded before it without dying (see [`Git::confirm`]), as git alone would have before answering.
    /// Free unless lines were forwarded since git last replied: reads in a row, or before any writing, cost
    /// no round trip.
    pub(super) fn confirm_git(&mut self) -> Result<(), SessionError> {
        if let Some(git) = &mut self.git {
            git.confirm(&gix_hash::ObjectId::null(self.store.object_hash()))?;
        }
        Ok(())
    }

    /// Sends a line to git if it runs.
    pub(super) fn forward(&mut self, line: &[u8]) -> Result<(), SessionError> {
        if let Some(git) = &mut self.git {
            git.send_line(line)?;
        }
        Ok(())
    }

    /// A `commit`, `tag`, `reset` or `alias` (its first line is the reader's): forwarded to git line by line,
    /// its data streamed, the reads inside it answered in order. A line that ends it without belonging to it
    /// is left for the top level.
    pub(super) fn write_command<'e, R: Read>(
        &mut self,
        reader: &mut LineReader<R>,
        engine: &mut StreamEngine<'e, 'a>,
    ) -> Result<(), SessionError>
    where
        'a: 'e,
    {
        self.start_git()?;
        // git must not run ahead of a read still in flight: if that read fails, git would have died before this.
        engine.drain()?;
        let abort_on_signature = self.settings.signed_commits == SignMode::Abort;
        let mut command =
            WriteCommand::start(request::c_string(reader.line()), abort_on_signature).expect("a writing command");
        self.forward(reader.line())?;
        while !command.done() {
            if reader.next_line()?.is_none() {
                command.at_eof();
                break;
            }
            let line = reader.line().to_vec();
            match command.step(&line) {
                Step::Forward | Step::ForwardAndEnd => self.forward(&line)?,
                Step::Mark(mark) => {
                    // From now on git knows what this mark names.
                    self.marks.remove(mark);
                    self.forward(&line)?;
                }
                Step::Data => {
                    self.forward(&line)?;
                    self.data(reader, false)?;
                }
                Step::Read => {
                    self.read_in_commit(&line, engine)?;
                    // Had git read it, it would have died on a failing read before the next line.
                    engine.drain()?;
                }
                Step::Ended => self.unread = true,
                Step::Refused => return self.refused(&line),
            }
        }
        Ok(())
    }

    /// `ls` or `cat-blob` inside a commit. `ls "<path>"` reads the commit being built: only git knows it.
    fn read_in_commit<'e>(&mut self, line: &[u8], engine: &mut StreamEngine<'e, 'a>) -> Result<(), SessionError>
    where
        'a: 'e,
    {
        let cx = Context { hash: self.store.object_hash(), rewrites: &self.rewrites };
        match request::parse_command(request::c_string(line), cx) {
            Ok(Command::CatBlob(dataref)) => self.cat_blob(dataref, false, line, engine),
            Ok(Command::Ls(arg)) if arg.first() == Some(&b'"') => self.relay(line, Reply::Line, engine),
            Ok(Command::Ls(arg)) => {
                let arg = arg.to_vec();
                self.ls(line, &arg, false, engine)
            }
            _ => self.refused(line),
        }
    }

    /// A line git must die on: send it, and wait for git to die (its status and stderr are the stream's).
    pub(super) fn refused(&mut self, line: &[u8]) -> Result<(), SessionError> {
        self.forward(line)?;
        if let Some(git) = self.git.take() {
            self.git_status = Some(git.finish()?);
        }
        Err(SessionError::GitExited)
    }

    /// Sends a read to git and writes its reply in the read's place, after every earlier response: the
    /// frontend may be waiting for those before it reads this one.
    pub(super) fn relay<'e>(
        &mut self,
        line: &[u8],
        reply: Reply,
        engine: &mut StreamEngine<'e, 'a>,
    ) -> Result<(), SessionError>
    where
        'a: 'e,
    {
        engine.drain()?;
        let git = self.git.as_mut().expect("relayed only while git runs");
        let answer = git.relay(line, reply)?;
        engine.ready(Response::Line(answer), Target::Main)?;
        Ok(())
    }

    /// `cat-blob` of an id nobody here has: git may have written it.
    pub(super) fn cat_blob_relayed<'e>(
        &mut self,
        dataref: Dataref,
        line: &[u8],
        engine: &mut StreamEngine<'e, 'a>,
    ) -> Result<bool, SessionError>
    where
        'a: 'e,
    {
        if !self.writing() {
            return Ok(false);
        }
        let known = match dataref {
            Dataref::Mark(mark) => self.marks.get(mark).is_some(),
            Dataref::Oid(id) => self.blobs.contains(&id) || self.store.exists(&id)?,
        };
        if known {
            return Ok(false);
        }
        self.relay(line, Reply::CatBlob, engine)?;
        Ok(true)
    }

    /// Does the stream hold blobs that must reach the repository because marks naming them are exported (at a
    /// checkpoint or the end)? git would have written them; a marks file naming objects that were never
    /// written fails the next run's `--import-marks`. Blobs nothing names are not worth starting git for.
    pub(super) fn must_persist_blobs(&self) -> bool {
        self.write_through.is_some()
            && self.git.is_none()
            && self.blobs.ids().next().is_some()
            && self.settings.export_marks.is_some()
    }
}

/// How git is to end with the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum GitEnd {
    /// The input ends: git finishes as at the end of its stdin (or has died already).
    Finish,
    /// cat-blobd failed first, with this `fatal:` line: git dies where it stands, as it would have on the
    /// same stream, and the line is printed where git alone would have printed its own.
    Abort(Vec<u8>),
    /// The frontend went away: git dies as by SIGPIPE, without marks.
    Kill,
}

impl Session<'_> {
    /// At the end of a stream that never started git but defined blobs that marks or a checkpoint must find in
    /// the repository: git writes them (and the marks), as it would have.
    pub(super) fn persist_blobs(&mut self, result: Result<(), SessionError>) -> Result<(), SessionError> {
        let wanted = match &result {
            Ok(()) => true,
            Err(SessionError::Write(write)) => !write.is_broken_pipe(),
            Err(SessionError::Option(_) | SessionError::GitExited) => false,
            Err(_) => true,
        };
        if !wanted || !self.must_persist_blobs() {
            return result;
        }
        self.persist_only = true;
        // `done` ends git's stream where this one ended, whatever `feature done` says.
        let started = self.start_git().and_then(|()| self.forward(b"done"));
        result.and(started)
    }

    /// Ends git if it ran; returns its exit status as a shell reports it.
    pub(super) fn end_git(&mut self, how: GitEnd) -> Option<u8> {
        let how = match how {
            // Nothing (more) of git's to print it in place of: it goes first.
            GitEnd::Abort(fatal) if self.git.is_none() || self.persist_only => {
                self.message(&fatal);
                GitEnd::Finish
            }
            how => how,
        };
        if let Some(git) = self.git.take() {
            let status = match how {
                GitEnd::Finish => git.finish(),
                GitEnd::Abort(fatal) => git.abort(fatal),
                GitEnd::Kill => git.kill(),
            };
            match status {
                Ok(status) => self.git_status = Some(status),
                Err(err) => {
                    self.message(format!("error: {err}\n").as_bytes());
                    return Some(128);
                }
            }
        }
        self.git_status.map(exit_code)
    }

    /// For an error git sees too (it died, or its input ends where the stream broke off): git's exit status,
    /// if git did die of it.
    pub(super) fn git_reported(&mut self, error: &SessionError, broken_pipe: bool) -> Option<u8> {
        let git_sees_it = match error {
            SessionError::GitExited
            | SessionError::EofInData(_)
            | SessionError::EofInDelimitedData(_)
            | SessionError::StreamEndsEarly => true,
            // Found by a resolver thread, after git was given everything before it: git dies on the same read.
            SessionError::NotABlob { oid, .. } => match &mut self.git {
                Some(git) => git.send_line(format!("cat-blob {oid}").as_bytes()).is_ok(),
                None => false,
            },
            _ => false,
        };
        if broken_pipe || !git_sees_it || (self.git.is_none() && self.git_status.is_none()) {
            return None;
        }
        self.end_git(GitEnd::Finish).filter(|&code| code != 0)
    }
}
