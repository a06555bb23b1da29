//! The part of a batch answer that runs on the engine's resolver threads: looking the object up (type and size
//! from headers, or the whole object for `--batch` contents) and formatting its answer. Names are resolved
//! before, in order, on the front end's thread.
use std::sync::OnceLock;

use gix_object::Kind;

use super::CatFileError;
use super::die::Die;
use super::filter::Filter;
use super::format::{Fields, Format};
use super::mailmap::Mailmap;
use super::output::Messages;
use crate::engine::Job;
use crate::response::encode::Response;
use crate::store::{
    Answer, Damage, Data, Info, LookupHint, Object, ObjectId, Place, Prefetcher, ReadError, Resolver, Run, Store,
};

/// A resolver thread's scratch state.
pub(crate) struct Worker<'s> {
    pub(crate) store: &'s Store,
    pub(crate) resolver: Resolver,
    pub(crate) messages: Messages<'s>,
    /// Starts the next requests' index lookups (see [`BatchJob::prefetch`]).
    pub(crate) prefetcher: Prefetcher,
}

/// What every answer of one batch shares.
pub(crate) struct Settings {
    pub(crate) format: Format,
    pub(crate) delimiter: u8,
    /// `--batch-all-objects` reads objects as stored: replace refs are off, and filtered objects are left out
    /// rather than answered `excluded`.
    pub(crate) exact: bool,
    /// `--filter=<spec>`.
    pub(crate) filter: Option<Filter>,
    /// Loaded (on the front end's thread) the first time the mailmap is turned on.
    pub(crate) mailmap: OnceLock<Mailmap>,
}

impl Settings {
    /// Does every answer need the object's type and size, whatever the format shows?
    fn needs_info(&self, mailmap: bool) -> bool {
        self.format.needs_info() || self.filter.is_some() || mailmap
    }
}

/// One object to answer for (git's `batch_object_write`).
pub(crate) struct ObjectJob<'s> {
    pub(crate) settings: &'s Settings,
    pub(crate) id: ObjectId,
    /// The name as given (for `<name> missing`); `None` for `--batch-all-objects`.
    pub(crate) name: Option<Vec<u8>>,
    pub(crate) rest: Option<Vec<u8>>,
    /// The tree entry's mode, for a `<rev>:<path>` name (`%(objectmode)`, and `submodule` for a gitlink).
    pub(crate) mode: Option<u32>,
    pub(crate) contents: bool,
    /// `--use-mailmap`, or `mailmap true` before this request.
    pub(crate) mailmap: bool,
    /// Where `--batch-all-objects --unordered` found it.
    pub(crate) place: Option<Place>,
    pub(crate) store: std::marker::PhantomData<&'s Store>,
}

/// What the engine runs for a batch.
pub(crate) enum BatchJob<'s> {
    One(ObjectJob<'s>),
    /// Consecutive objects of `--batch-all-objects --batch-check`, answered as one response: a job per object
    /// cost more in hand-offs and allocations than its lookup (a few hundred instructions), and a run is what
    /// lets the resolver threads share the walk.
    Run(RunJob<'s>),
}

impl<'s> Job for BatchJob<'s> {
    type Worker = Worker<'s>;
    type Error = CatFileError;

    fn run(self, worker: &mut Worker<'s>) -> Result<Response, CatFileError> {
        match self {
            BatchJob::One(job) => job.answer(worker),
            BatchJob::Run(run) => run.answer(worker),
        }
    }

    /// Random ids are looked up in an index far bigger than the caches: the next one's first lines are fetched
    /// while this one is answered.
    const AHEAD: usize = LookupHint::AHEAD;

    fn prefetch(&self, worker: &mut Worker<'s>, ahead: usize) {
        let BatchJob::One(job) = self else { return };
        // One ahead the entry header is fetched: only worth it when the answer reads it.
        let reads_entry = job.contents || job.settings.needs_info(job.mailmap);
        if job.place.is_some() || (ahead == 1 && !reads_entry) {
            return;
        }
        worker.prefetcher.prefetch(worker.store, &job.id, ahead);
    }
}

/// Objects of `--batch-all-objects` whose answers need no contents.
pub(crate) struct RunJob<'s> {
    pub(crate) settings: &'s Settings,
    pub(crate) objects: Run,
    /// `--use-mailmap`: the size of a commit or tag is that of its mapped text.
    pub(crate) mailmap: bool,
}

impl RunJob<'_> {
    /// Every object's line, in order. A failure is returned with the lines before it, which are written first.
    fn answer(self, worker: &mut Worker<'_>) -> Result<Response, CatFileError> {
        let mut answers = Vec::with_capacity(self.objects.len() * 96);
        for (id, place) in self.objects {
            let job = ObjectJob {
                settings: self.settings,
                id,
                name: None,
                rest: None,
                mode: None,
                contents: false,
                mailmap: self.mailmap,
                place,
                store: std::marker::PhantomData,
            };
            if let Err(error) = job.check_into(worker, &mut answers) {
                return Err(CatFileError::AfterAnswers { answers, error: Box::new(error) });
            }
        }
        Ok(Response::Line(answers))
    }
}

impl ObjectJob<'_> {
    fn answer(self, worker: &mut Worker<'_>) -> Result<Response, CatFileError> {
        // `--batch` without disk atoms: the object itself gives its type and size, so it is read once, not
        // looked up first (git looks it up, then reads it: the same answer). Any error is left to the lookup
        // below, which answers it as git does.
        if self.contents && self.place.is_none() && !self.settings.format.needs_disk() && self.settings.filter.is_none()
        {
            let (store, settings) = (worker.store, self.settings);
            match store.read_for_answer(&self.id, &mut worker.resolver, settings.exact) {
                Ok(Some(Answer::Big(big))) => {
                    let info = Info { kind: Kind::Blob, size: big.size(), disk_size: 0, delta_base: None };
                    let line = self.header_line(Some(&info));
                    return Ok(Response::object_answer(&line, Answer::Big(big), settings.delimiter));
                }
                Ok(Some(Answer::Whole(object))) => {
                    let (kind, stored_size) = (object.kind, object.data.len() as u64);
                    let data = self.mapped(object);
                    // The mailmap's size is that of a commit or tag (git maps trees too, but keeps their size).
                    let size = if kind == Kind::Tree { stored_size } else { data.len() as u64 };
                    let info = Info { kind, size, disk_size: 0, delta_base: None };
                    let line = self.header_line(Some(&info));
                    return Ok(Response::object(&line, data, settings.delimiter));
                }
                Ok(None) => return Ok(missing(self.name, &self.id, self.mode, settings.delimiter)),
                Err(_) => {}
            }
        }
        self.look_up_then_read(worker)
    }
}

impl ObjectJob<'_> {
    /// The answer of `--batch-all-objects` without contents, appended to `out`: the line, nothing for an object
    /// the filter leaves out, `<id> missing` for one git takes for missing.
    fn check_into(self, worker: &mut Worker<'_>, out: &mut Vec<u8>) -> Result<(), CatFileError> {
        debug_assert!(self.settings.exact && !self.contents);
        if self.mailmap {
            match self.look_up_then_read(worker)? {
                Response::Line(line) | Response::Missing(line) => out.extend_from_slice(&line),
                _ => unreachable!("an answer without contents is a line"),
            }
            return Ok(());
        }
        let settings = self.settings;
        let info = match settings.needs_info(false) {
            true => match self.info(worker)? {
                Some(info) => Some(info),
                None => {
                    out.extend_from_slice(&missing_line(None, &self.id, None, settings.delimiter));
                    return Ok(());
                }
            },
            false => None,
        };
        if info.is_some_and(|info| settings.filter.is_some_and(|filter| filter.excludes(info.kind, info.size))) {
            return Ok(());
        }
        self.header_into(info.as_ref(), out);
        Ok(())
    }

    /// git's order: type and size from the headers (or only whether it exists), the filter, the size the
    /// mailmap gives, then the contents if asked.
    fn look_up_then_read(self, worker: &mut Worker<'_>) -> Result<Response, CatFileError> {
        let (store, settings) = (worker.store, self.settings);
        let mut info: Option<Info> = None;
        if !self.contents && !settings.needs_info(self.mailmap) {
            // A named object is looked up even when the format shows nothing of it (git's
            // `oid_object_info_extended` with an empty request); only --batch-all-objects skips that.
            if !settings.exact && !store.exists(&self.id)? {
                return Ok(missing(self.name, &self.id, self.mode, settings.delimiter));
            }
        } else {
            info = self.info(worker)?;
            let Some(found) = &info else { return Ok(missing(self.name, &self.id, self.mode, settings.delimiter)) };
            if settings.filter.is_some_and(|filter| filter.excludes(found.kind, found.size)) {
                return Ok(self.excluded());
            }
        }
        let mut object = None;
        if let Some(found) =
            info.as_mut().filter(|found| self.mailmap && matches!(found.kind, Kind::Commit | Kind::Tag))
        {
            // git reads the object to give the size of what --batch would print.
            let data = self.mapped(self.read(worker)?);
            found.size = data.len() as u64;
            object = Some(data);
        }
        let line = self.header_line(info.as_ref());
        if !self.contents {
            return Ok(Response::Line(line));
        }
        let data = match object {
            Some(data) => data,
            None => match self.read_answer(worker)? {
                Answer::Whole(object) => self.mapped(object),
                big => return Ok(Response::object_answer(&line, big, settings.delimiter)),
            },
        };
        Ok(Response::object(&line, data, settings.delimiter))
    }

    /// Type and size (and, as the format asks, size on disk and delta base) from the headers; `None`: missing.
    fn info(&self, worker: &mut Worker<'_>) -> Result<Option<Info>, CatFileError> {
        let (store, settings) = (worker.store, self.settings);
        let on_disk = settings.format.needs_disk();
        let found = match (&self.place, settings.exact) {
            (Some(place), _) => store.info_at(&self.id, place, on_disk).map(Some),
            (None, true) => store.info_exact(&self.id, on_disk),
            (None, false) => store.info(&self.id, on_disk),
        };
        match found {
            Err(ReadError { damage: Damage::UnknownType { header_too_long: true, .. }, .. }) => {
                // git reads 32 header bytes: past them it says so and takes the object for missing.
                let message = format!("error: header for {} too long, exceeds 32 bytes\n", self.id);
                worker.messages.write(message.as_bytes());
                Ok(None)
            }
            found => Ok(found?),
        }
    }

    /// The whole object, which the lookup found.
    fn read(&self, worker: &mut Worker<'_>) -> Result<Object, CatFileError> {
        let store = worker.store;
        let object = match self.settings.exact {
            true => store.read_exact(&self.id, &mut worker.resolver)?,
            false => store.read(&self.id, &mut worker.resolver)?,
        };
        object.ok_or_else(|| CatFileError::Git(Die::Disappeared(self.id)))
    }

    /// The object for `--batch` contents: whole, or a big blob to stream (see `store/big.rs`).
    fn read_answer(&self, worker: &mut Worker<'_>) -> Result<Answer, CatFileError> {
        let answer = worker.store.read_for_answer(&self.id, &mut worker.resolver, self.settings.exact)?;
        answer.ok_or_else(|| CatFileError::Git(Die::Disappeared(self.id)))
    }

    /// The object's bytes as the answer gives them: with the mailmap on, its idents mapped (git maps every kind it
    /// does not stream).
    fn mapped(&self, object: Object) -> Data {
        let mailmap = self.settings.mailmap.get().filter(|_| self.mailmap);
        match mailmap.and_then(|mailmap| mailmap.apply(object.kind, &object.data)) {
            Some(mapped) => Data::new(mapped),
            None => object.data,
        }
    }

    /// `<name> excluded`: a named object the filter leaves out; nothing for --batch-all-objects.
    fn excluded(self) -> Response {
        if self.settings.exact {
            return Response::Line(Vec::new());
        }
        let name = self.name.unwrap_or_else(|| self.id.to_hex().to_string().into_bytes());
        Response::Line([&name[..], b" excluded", &[self.settings.delimiter]].concat())
    }

    /// The answer's line: the format expanded, and the delimiter.
    fn header_line(&self, info: Option<&Info>) -> Vec<u8> {
        let mut line = Vec::with_capacity(128);
        self.header_into(info, &mut line);
        line
    }

    /// The answer's line, appended to `out`.
    fn header_into(&self, info: Option<&Info>, out: &mut Vec<u8>) {
        let fields = Fields { id: &self.id, info, rest: self.rest.as_deref(), mode: self.mode };
        self.settings.format.expand(&fields, out);
        out.push(self.settings.delimiter);
    }
}

/// `<name> missing`, or `<id> missing` for an object listed by id; `<id> submodule` for a gitlink entry whose
/// commit is not here (git 2.55's `batch_object_write`).
fn missing(name: Option<Vec<u8>>, id: &ObjectId, mode: Option<u32>, delimiter: u8) -> Response {
    Response::Missing(missing_line(name, id, mode, delimiter))
}

/// The line of [`missing`].
fn missing_line(name: Option<Vec<u8>>, id: &ObjectId, mode: Option<u32>, delimiter: u8) -> Vec<u8> {
    let hex = || id.to_hex().to_string().into_bytes();
    if mode == Some(GITLINK) {
        return [&hex()[..], b" submodule", &[delimiter]].concat();
    }
    let name = name.unwrap_or_else(hex);
    [&name[..], b" missing", &[delimiter]].concat()
}

/// git's `S_IFGITLINK`: the mode of a submodule's entry.
const GITLINK: u32 = 0o160000;
