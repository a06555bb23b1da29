//! The part of a batch answer that runs on the engine's resolver threads: looking the object up (type and size
//! from headers, or the whole object for `--batch` contents) and formatting its answer. Names are resolved
//! before, in order, on the front end's thread.
use super::CatFileError;
use super::format::{Fields, Format};
use super::output::Messages;
use crate::engine::Job;
use crate::response::encode::Response;
use crate::store::{Damage, Info, ObjectId, Place, ReadError, Resolver, Store};

/// A resolver thread's scratch state.
pub(crate) struct Worker<'s> {
    pub(crate) store: &'s Store,
    pub(crate) resolver: Resolver,
    pub(crate) messages: Messages<'s>,
}

/// What every answer of one batch shares.
pub(crate) struct Settings {
    pub(crate) format: Format,
    pub(crate) delimiter: u8,
    /// `--batch-all-objects` reads objects as stored: replace refs are off.
    pub(crate) exact: bool,
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
    /// Where `--batch-all-objects --unordered` found it.
    pub(crate) place: Option<Place>,
    pub(crate) store: std::marker::PhantomData<&'s Store>,
}

impl<'s> Job for ObjectJob<'s> {
    type Worker = Worker<'s>;
    type Error = CatFileError;

    fn run(self, worker: &mut Worker<'s>) -> Result<Response, CatFileError> {
        // `--batch` without disk atoms: the object itself gives its type and size, so it is read once, not
        // looked up first (git looks it up, then reads it: the same answer). Any error is left to the lookup
        // below, which answers it as git does.
        if self.contents && self.place.is_none() && !self.settings.format.needs_disk() {
            let (store, settings) = (worker.store, self.settings);
            let read = match settings.exact {
                true => store.read_exact(&self.id, &mut worker.resolver),
                false => store.read(&self.id, &mut worker.resolver),
            };
            match read {
                Ok(Some(object)) => {
                    let info =
                        Info { kind: object.kind, size: object.data.len() as u64, disk_size: 0, delta_base: None };
                    let line = self.header_line(Some(&info));
                    return Ok(Response::object(&line, object.data, settings.delimiter));
                }
                Ok(None) => return Ok(missing(self.name, &self.id, self.mode, settings.delimiter)),
                Err(_) => {}
            }
        }
        self.look_up_then_read(worker)
    }
}

impl ObjectJob<'_> {
    /// git's order: type and size from the headers (or only whether it exists), then the contents if asked.
    fn look_up_then_read(self, worker: &mut Worker<'_>) -> Result<Response, CatFileError> {
        let (store, settings) = (worker.store, self.settings);
        let mut info: Option<Info> = None;
        if !self.contents && !settings.format.needs_info() {
            // A named object is looked up even when the format shows nothing of it (git's
            // `oid_object_info_extended` with an empty request); only --batch-all-objects skips that.
            if !settings.exact && !store.exists(&self.id)? {
                return Ok(missing(self.name, &self.id, self.mode, settings.delimiter));
            }
        } else {
            let on_disk = settings.format.needs_disk();
            let found = match (&self.place, settings.exact) {
                (Some(place), _) => store.info_at(&self.id, place, on_disk).map(Some),
                (None, true) => store.info_exact(&self.id, on_disk),
                (None, false) => store.info(&self.id, on_disk),
            };
            info = match found {
                Err(ReadError { damage: Damage::UnknownType { header_too_long: true, .. }, .. }) => {
                    // git reads 32 header bytes: past them it says so and takes the object for missing.
                    let message = format!("error: header for {} too long, exceeds 32 bytes\n", self.id);
                    worker.messages.write(message.as_bytes());
                    None
                }
                found => found?,
            };
            if info.is_none() {
                return Ok(missing(self.name, &self.id, self.mode, settings.delimiter));
            }
        }
        let line = self.header_line(info.as_ref());
        if !self.contents {
            return Ok(Response::Line(line));
        }
        let object = match settings.exact {
            true => store.read_exact(&self.id, &mut worker.resolver)?,
            false => store.read(&self.id, &mut worker.resolver)?,
        };
        let object = object.ok_or_else(|| CatFileError::git(format!("object {} disappeared", self.id)))?;
        Ok(Response::object(&line, object.data, settings.delimiter))
    }

    /// The answer's line: the format expanded, and the delimiter.
    fn header_line(&self, info: Option<&Info>) -> Vec<u8> {
        let mut line = Vec::with_capacity(128);
        let fields = Fields { id: &self.id, info, rest: self.rest.as_deref(), mode: self.mode };
        self.settings.format.expand(&fields, &mut line);
        line.push(self.settings.delimiter);
        line
    }
}

/// `<name> missing`, or `<id> missing` for an object listed by id; `<id> submodule` for a gitlink entry whose
/// commit is not here (git 2.55's `batch_object_write`).
fn missing(name: Option<Vec<u8>>, id: &ObjectId, mode: Option<u32>, delimiter: u8) -> Response {
    let hex = || id.to_hex().to_string().into_bytes();
    if mode == Some(GITLINK) {
        return Response::Missing([&hex()[..], b" submodule", &[delimiter]].concat());
    }
    let name = name.unwrap_or_else(hex);
    Response::Missing([&name[..], b" missing", &[delimiter]].concat())
}

/// git's `S_IFGITLINK`: the mode of a submodule's entry.
const GITLINK: u32 = 0o160000;
