//! Marks: `:N` names for objects, defined by `blob` in the stream or imported from a marks file, and exported
//! to one (git's `insert_mark`, `read_mark_file`, `dump_marks`). `table.rs` keeps them; `read.rs` reads a file.
mod read;
mod table;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};

use gix_hash::oid;

use crate::fatal::Bytes;
use crate::git_compat::strerror::strerror;
use crate::quota::{Exceeded, Held, Limit};
use crate::store::ObjectId;
use read::Lines;
use table::Table;

/// The reader's buffer for a marks file (git's `fgets` reads through stdio's 4 KiB).
const READ_BUFFER: usize = 1 << 20;
/// How much of a marks file is formatted before it is written.
const WRITE_CHUNK: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub(crate) enum MarksError {
    #[error("corrupt mark line: {}", Bytes(.0))]
    CorruptLine(Vec<u8>),
    #[error("cannot read '{}': {message}", Bytes(.path.as_os_str().as_encoded_bytes()))]
    CannotRead { path: PathBuf, message: String },
    #[error("object not found: {0}")]
    ObjectNotFound(ObjectId),
    #[error("too many marks: a stream may define at most {0} over the cat-blobd daemon (--max-marks)")]
    TooMany(u64),
    #[error("too many marks: the cat-blobd daemon holds {0} marks for all its streams (--max-marks-total)")]
    TooManyInAll(u64),
}

/// Why the marks file was not written, in git's words (`dump_marks` reports it with `error:`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExportError {
    #[error("unable to write marks file {}: the process is exiting", Bytes(.0.as_os_str().as_encoded_bytes()))]
    Exiting(PathBuf),
    #[error(
        "unable to create leading directories of {}: {}",
        Bytes(.path.as_os_str().as_encoded_bytes()),
        strerror(.source)
    )]
    LeadingDirectories { path: PathBuf, source: io::Error },
    #[error("unable to write marks file {}: {}", Bytes(.path.as_os_str().as_encoded_bytes()), strerror(.source))]
    Lock { path: PathBuf, source: io::Error },
    #[error("unable to write file {}: {}", Bytes(.path.as_os_str().as_encoded_bytes()), strerror(.source))]
    Write { path: PathBuf, source: io::Error },
}

/// What importing a marks file asks of the objects it names.
pub(crate) trait ObjectLookup {
    fn object_hash(&self) -> gix_hash::Kind;
    /// Of `count` ids in ascending order (`id_at(i)` is the `i`-th), the positions, ascending, of those that no
    /// pack index lists: every other one exists (`Store::unlisted_in_packs`).
    fn unlisted<'a>(&mut self, count: usize, id_at: &dyn Fn(usize) -> &'a oid) -> Vec<usize>;
    /// Whether an id that no pack index listed names an object all the same (loose, defined by the stream, …).
    fn exists(&mut self, id: &oid) -> bool;
}

/// The marks of one stream.
#[derive(Debug, Default)]
pub(crate) struct Marks {
    table: Table,
    /// One per mark in the table, against a server's caps (none in the one-shot binary, as in git).
    held: Held,
}

impl Marks {
    pub(crate) fn with_limits(limit: Limit) -> Marks {
        Marks { table: Table::default(), held: Held::new(limit) }
    }

    /// Defines or redefines a mark. Mark 0 is never stored (git only inserts `if (mark)`). A new mark past the
    /// limits is refused (the table is what grows without bound: 20 or 32 bytes a mark, more for scattered ones).
    pub(crate) fn insert(&mut self, mark: u64, id: ObjectId) -> Result<(), MarksError> {
        if mark == 0 {
            return Ok(());
        }
        if self.table.get(mark).is_none() {
            self.held.take(1).map_err(|exceeded| match exceeded {
                Exceeded::PerStream(most) => MarksError::TooMany(most),
                Exceeded::Shared(most) => MarksError::TooManyInAll(most),
            })?;
        }
        self.table.set(mark, &id);
        Ok(())
    }

    pub(crate) fn get(&self, mark: u64) -> Option<ObjectId> {
        self.table.get(mark).map(ToOwned::to_owned)
    }

    /// Forgets a mark: something else (git) defines it now.
    pub(crate) fn remove(&mut self, mark: u64) {
        if self.table.remove(mark) {
            self.held.give_back(1);
        }
    }

    /// Every mark and the object it names, by ascending mark.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, ObjectId)> + '_ {
        self.table.iter().map(|(mark, id)| (mark, id.to_owned()))
    }

    /// Reads a marks file (`read_marks`): `Ok(false)` if it is missing and `ignore_missing` is set. As git, fails
    /// on the first line that is corrupt or names an object that does not exist, having defined the marks of the
    /// lines before it.
    pub(crate) fn import(
        &mut self,
        path: &Path,
        ignore_missing: bool,
        objects: &mut dyn ObjectLookup,
    ) -> Result<bool, MarksError> {
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(err) if ignore_missing && err.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(err) => return Err(cannot_read(path, &err)),
        };
        let mut lines = Lines::read(io::BufReader::with_capacity(READ_BUFFER, file), path, objects.object_hash());
        let missing = lines.first_missing(objects);
        let stop = match missing {
            Some(line) => Some(MarksError::ObjectNotFound(lines.id(line).to_owned())),
            None => lines.stop.take(),
        };
        self.define(lines, missing)?;
        stop.map_or(Ok(true), Err)
    }

    /// Defines the marks of `lines` before `end` (all of them if `None`), in file order. A file of marks `1..=n`
    /// read into an empty table becomes its array as it is.
    fn define(&mut self, lines: Lines, end: Option<usize>) -> Result<(), MarksError> {
        let end = end.unwrap_or(lines.len());
        let whole = end == lines.len() && self.table.len() == 0 && lines.is_dense();
        if whole && self.held.take(end as u64).is_ok() {
            let (kind, ids) = lines.into_dense();
            self.table = Table::from_dense(kind, ids);
            return Ok(());
        }
        (0..end).try_for_each(|line| self.insert(lines.mark(line), lines.id(line).to_owned()))
    }

    /// Writes `:<mark> <hex>\n` per mark, ascending, a chunk at a time.
    fn write_to(&self, out: &mut impl Write) -> io::Result<()> {
        let mut chunk = Vec::with_capacity(WRITE_CHUNK + 128);
        let (mut number, mut hex) = (itoa::Buffer::new(), [0; 64]);
        for (mark, id) in self.table.iter() {
            chunk.push(b':');
            chunk.extend_from_slice(number.format(mark).as_bytes());
            chunk.push(b' ');
            chunk.extend_from_slice(id.hex_to_buf(&mut hex).as_bytes());
            chunk.push(b'\n');
            if chunk.len() >= WRITE_CHUNK {
                out.write_all(&chunk)?;
                chunk.clear();
            }
        }
        out.write_all(&chunk)
    }

    /// The marks file's bytes.
    #[cfg(test)]
    pub(crate) fn export_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_to(&mut out).expect("writing to memory");
        out
    }

    /// Writes the marks file as git's `dump_marks` does: leading directories created, written to
    /// `<file>.lock` and renamed into place. The error is git's `error:` text (exit status 1 at the end).
    ///
    /// Durable, unlike git: the lock file is synced before the rename and the directory after it, so that after a
    /// crash the old file or the new one is there, complete, never neither. The lock file never outlives a failed
    /// export, nor a process that stops through [`EXPORTS`].
    pub(crate) fn export(&self, path: &Path) -> Result<(), ExportError> {
        let Some(_exporting) = EXPORTS.begin() else {
            return Err(ExportError::Exiting(path.to_owned()));
        };
        create_leading_directories(path)
            .map_err(|source| ExportError::LeadingDirectories { path: path.to_owned(), source })?;
        let mut lock_name = path.as_os_str().to_owned();
        lock_name.push(".lock");
        let lock = PathBuf::from(lock_name);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&lock)
            .map_err(|source| ExportError::Lock { path: path.to_owned(), source })?;
        let written = self.write_to(&mut file).and_then(|()| file.sync_all());
        drop(file);
        if let Err(source) = written.and_then(|()| std::fs::rename(&lock, path)) {
            let _ = std::fs::remove_file(&lock);
            return Err(ExportError::Write { path: path.to_owned(), source });
        }
        // The rename is only durable once the directory is: a failure here leaves the new file in place, and is
        // as unreportable as git's missing fsync.
        let _ = sync_directory(path);
        Ok(())
    }
}

/// Syncs the directory that holds `path`.
fn sync_directory(path: &Path) -> io::Result<()> {
    let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::File::open(dir)?.sync_all()
}

/// Marks exports in progress in this process, so that a process that stops (the daemon) can wait for them
/// rather than leave a lock file, or nothing, where the marks file was.
pub(crate) static EXPORTS: ExportGate = ExportGate::new();

/// Counts exports in progress; once closed, lets none begin.
#[derive(Debug)]
pub(crate) struct ExportGate {
    state: Mutex<(bool, usize)>,
    idle: Condvar,
}

/// An export in progress; ends on drop.
#[derive(Debug)]
pub(crate) struct Exporting<'a>(&'a ExportGate);

impl Drop for Exporting<'_> {
    fn drop(&mut self) {
        self.0.lock().1 -= 1;
        self.0.idle.notify_all();
    }
}

impl ExportGate {
    pub(crate) const fn new() -> ExportGate {
        ExportGate { state: Mutex::new((false, 0)), idle: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, (bool, usize)> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// An export may begin, unless the gate is closed.
    pub(crate) fn begin(&self) -> Option<Exporting<'_>> {
        let mut state = self.lock();
        if state.0 {
            return None;
        }
        state.1 += 1;
        Some(Exporting(self))
    }

    /// Lets no export begin from now on, and waits for those in progress to end.
    /// Lets no export begin from now on and waits for those in progress; true if there were any.
    pub(crate) fn close_and_wait(&self) -> bool {
        let mut state = self.lock();
        state.0 = true;
        let waited = state.1 > 0;
        while state.1 > 0 {
            state = self.idle.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        waited
    }
}

impl Default for ExportGate {
    fn default() -> Self {
        ExportGate::new()
    }
}

/// git's `safe_create_leading_directories`: a component that exists but is not a directory is `ENOTDIR`
/// (where `mkdir` alone would say `EEXIST`).
fn create_leading_directories(path: &Path) -> io::Result<()> {
    let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) else { return Ok(()) };
    std::fs::create_dir_all(parent).map_err(|err| {
        let blocked = parent.ancestors().any(|dir| dir.symlink_metadata().is_ok_and(|m| !m.is_dir()));
        if blocked { io::Error::from_raw_os_error(libc::ENOTDIR) } else { err }
    })
}

/// Parses a marks file exactly as git's `read_mark_file` does, line by line with its 512-byte `fgets` buffer
/// (see [`read::parse_piece`]). `each` sees every mark in order and may stop the reading with an error, as git
/// dies on the line it is reading.
pub(crate) fn read_marks(
    input: impl io::BufRead,
    path: &Path,
    mut each: impl FnMut(u64, ObjectId) -> Result<(), MarksError>,
) -> Result<(), MarksError> {
    read::for_each_piece(input, path, |piece| {
        let (mark, id) = read::parse_piece(piece)?;
        each(mark, id)
    })
}

/// Opens and reads a whole marks file (see [`read_marks`]) into a list, for the submodule rewrite maps.
pub(crate) fn read_marks_file(path: &Path) -> Result<Vec<(u64, ObjectId)>, MarksError> {
    let file = std::fs::File::open(path).map_err(|err| cannot_read(path, &err))?;
    let mut marks = Vec::new();
    read_marks(io::BufReader::new(file), path, |mark, id| {
        marks.push((mark, id));
        Ok(())
    })?;
    Ok(marks)
}

fn cannot_read(path: &Path, err: &io::Error) -> MarksError {
    MarksError::CannotRead { path: path.to_owned(), message: strerror(err) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    const HEX: &str = "ce013625030ba8dba906f756967f9e9ca394464a";

    fn parse_marks_file(content: &[u8]) -> Result<Vec<(u64, ObjectId)>, MarksError> {
        let mut marks = Vec::new();
        read_marks(content, Path::new("test.marks"), |mark, id| {
            marks.push((mark, id));
            Ok(())
        })?;
        Ok(marks)
    }

    #[test]
    fn an_endless_file_without_newlines_fails_on_its_first_piece() {
        let endless = std::io::repeat(0).take(u64::MAX);
        let result = read_marks(io::BufReader::new(endless), Path::new("/dev/zero"), |_, _| Ok(()));
        assert_eq!(result.unwrap_err().to_string(), "corrupt mark line: ");
    }

    #[test]
    fn parses_what_git_accepts() {
        let id = ObjectId::from_hex(HEX.as_bytes()).unwrap();
        let file = format!(":1 {HEX}\n: 3 {HEX}\n:03 {HEX} trailing junk\n");
        assert_eq!(parse_marks_file(file.as_bytes()).unwrap(), vec![(1, id), (3, id), (3, id)]);
    }

    #[test]
    fn refuses_what_git_refuses_with_its_message() {
        let cases = [
            (format!(":0 {HEX}\n"), format!("corrupt mark line: :0 {HEX}")),
            (format!(":1  {HEX}\n"), format!("corrupt mark line: :1  {HEX}")),
            (format!(":1 {}\n", &HEX[..39]), format!("corrupt mark line: :1 {}", &HEX[..39])),
            (format!(":1 {HEX}"), format!("corrupt mark line: :1 {HEX}")),
            ("\n".to_string(), "corrupt mark line: \n".to_string()),
            ("xyz\n".to_string(), "corrupt mark line: xyz\n".to_string()),
            (format!(":x {HEX}\n"), format!("corrupt mark line: :x {HEX}")),
        ];
        for (file, message) in cases {
            assert_eq!(parse_marks_file(file.as_bytes()).unwrap_err().to_string(), message, "{file:?}");
        }
        let long = format!(":1 {HEX}{}\n", "x".repeat(600));
        assert!(parse_marks_file(long.as_bytes()).is_err(), "a line over 511 bytes is cut and corrupt");
    }

    #[test]
    fn closing_the_export_gate_waits_for_exports_in_progress_and_lets_none_begin() {
        let gate = ExportGate::new();
        let exporting = gate.begin().expect("open");
        let closed = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            let closer = scope.spawn(|| {
                gate.close_and_wait();
                closed.store(true, std::sync::atomic::Ordering::SeqCst);
            });
            while !gate.lock().0 {
                std::thread::yield_now();
            }
            assert!(!closed.load(std::sync::atomic::Ordering::SeqCst), "an export is still in progress");
            drop(exporting);
            closer.join().unwrap();
        });
        assert!(closed.load(std::sync::atomic::Ordering::SeqCst));
        assert!(gate.begin().is_none());
    }

    #[test]
    fn a_failed_export_leaves_no_lock_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("m");
        let id = ObjectId::from_hex(HEX.as_bytes()).unwrap();
        let mut marks = Marks::default();
        marks.insert(1, id).unwrap();
        marks.export(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), format!(":1 {HEX}\n").into_bytes());
        // The target is a non-empty directory: the rename fails, and the lock file goes.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir_all(path.join("x")).unwrap();
        assert!(marks.export(&path).is_err());
        assert!(!dir.path().join("sub").join("m.lock").exists());
    }

    #[test]
    fn marks_past_a_streams_cap_or_the_shared_cap_are_refused() {
        let id = ObjectId::from_hex(HEX.as_bytes()).unwrap();
        use std::sync::Arc;
        use std::sync::atomic::{AtomicU64, Ordering};
        let shared = Arc::new(AtomicU64::new(0));
        let limits = Limit { per_stream: Some(2), shared: Some((Arc::clone(&shared), 3)) };
        let mut first = Marks::with_limits(limits.clone());
        first.insert(1, id).unwrap();
        first.insert(2, id).unwrap();
        first.insert(2, id).unwrap();
        first.insert(0, id).unwrap();
        assert_eq!(first.insert(3, id).unwrap_err().to_string(), MarksError::TooMany(2).to_string());
        let mut second = Marks::with_limits(limits);
        second.insert(1, id).unwrap();
        assert!(matches!(second.insert(2, id), Err(MarksError::TooManyInAll(3))));
        assert_eq!(shared.load(Ordering::Relaxed), 3);
        drop(first);
        assert_eq!(shared.load(Ordering::Relaxed), 1, "a stream's marks are given back when it ends");
        second.insert(2, id).unwrap();
        second.remove(2);
        assert_eq!(shared.load(Ordering::Relaxed), 1, "a mark git defines now is given back");
    }

    #[test]
    fn export_is_sorted_and_round_trips() {
        let id = ObjectId::from_hex(HEX.as_bytes()).unwrap();
        let mut marks = Marks::default();
        for mark in [10, 2, 0, 1000000, 1] {
            marks.insert(mark, id).unwrap();
        }
        let bytes = marks.export_bytes();
        assert!(bytes.starts_with(format!(":1 {HEX}\n:2 {HEX}\n:10 {HEX}\n").as_bytes()));
        assert_eq!(parse_marks_file(&bytes).unwrap().len(), 4);
    }

    /// Objects for imports: `packed` ones are listed by an index, `loose` ones only `exists` finds.
    struct Fake {
        packed: Vec<ObjectId>,
        loose: Vec<ObjectId>,
        asked_one_by_one: usize,
    }

    impl ObjectLookup for Fake {
        fn object_hash(&self) -> gix_hash::Kind {
            gix_hash::Kind::Sha1
        }

        fn unlisted<'a>(&mut self, count: usize, id_at: &dyn Fn(usize) -> &'a oid) -> Vec<usize> {
            assert!((1..count).all(|at| id_at(at - 1) <= id_at(at)), "asked in ascending order");
            (0..count).filter(|&at| !self.packed.iter().any(|id| id.as_ref() == id_at(at))).collect()
        }

        fn exists(&mut self, id: &oid) -> bool {
            self.asked_one_by_one += 1;
            self.loose.iter().any(|loose| loose.as_ref() == id)
        }
    }

    fn id(n: u8) -> ObjectId {
        ObjectId::from_bytes_or_panic(&[n; 20])
    }

    /// Imports `file` into `marks` with objects 1 to 9 packed and 10 to 12 loose.
    fn import(marks: &mut Marks, file: &str) -> (Result<bool, MarksError>, usize) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m");
        std::fs::write(&path, file).unwrap();
        let mut objects =
            Fake { packed: (1..=9).map(id).collect(), loose: (10..=12).map(id).collect(), asked_one_by_one: 0 };
        (marks.import(&path, false, &mut objects), objects.asked_one_by_one)
    }

    #[test]
    fn an_import_defines_every_line_the_later_of_two_winning() {
        let mut marks = Marks::default();
        let file = format!(":3 {}\n:1 {}\n:2 {}\n:3 {}\n:900000 {}\n", id(1), id(2), id(10), id(4), id(5));
        let (result, one_by_one) = import(&mut marks, &file);
        assert!(result.unwrap());
        assert_eq!(one_by_one, 1, "only the loose object is looked up on its own");
        let defined: Vec<_> = marks.iter().collect();
        assert_eq!(defined, [(1, id(2)), (2, id(10)), (3, id(4)), (900000, id(5))]);
        // A second file redefines some and adds others.
        let (result, _) = import(&mut marks, &format!(":1 {}\n:4 {}\n", id(6), id(7)));
        assert!(result.unwrap());
        assert_eq!(
            marks.iter().collect::<Vec<_>>(),
            [(1, id(6)), (2, id(10)), (3, id(4)), (4, id(7)), (900000, id(5))]
        );
    }

    #[test]
    fn an_import_of_marks_one_to_n_is_taken_whole() {
        let mut marks = Marks::default();
        let file: String = (1..=9).map(|n| format!(":{n} {}\n", id(n))).collect();
        assert!(import(&mut marks, &file).0.unwrap());
        assert_eq!(marks.iter().collect::<Vec<_>>(), (1..=9).map(|n| (n as u64, id(n))).collect::<Vec<_>>());
        assert_eq!(marks.export_bytes(), file.as_bytes());
    }

    /// git dies on the first line, in file order, that is corrupt or names an object that does not exist, having
    /// defined the marks before it.
    #[test]
    fn an_import_fails_on_its_first_bad_line_whichever_kind() {
        let (missing, one) = (id(200), id(1));
        let cases = [
            (format!(":1 {one}\n:2 {missing}\n:3 xyz\n"), format!("object not found: {missing}"), 1),
            (format!(":1 {one}\n:3 xyz\n:2 {missing}\n"), "corrupt mark line: :3 xyz".into(), 1),
            (format!(":1 {missing}\n:1 {one}\n"), format!("object not found: {missing}"), 0),
            (
                format!(":1 {}\n:2 {}\n:3 {missing}\n:4 {}\n:5 {missing}\n", id(1), id(11), id(2)),
                format!("object not found: {missing}"),
                2,
            ),
            (format!(":1 {}\n:2 {}\n", id(1), id(13)), format!("object not found: {}", id(13)), 1),
        ];
        for (file, message, defined) in cases {
            let mut marks = Marks::default();
            let (result, _) = import(&mut marks, &file);
            assert_eq!(result.unwrap_err().to_string(), message, "{file}");
            assert_eq!(marks.iter().count(), defined, "{file}");
        }
    }

    #[test]
    fn an_import_past_a_cap_fails_on_the_line_that_passes_it_unless_an_earlier_one_is_bad() {
        let limits = Limit { per_stream: Some(2), shared: None };
        let mut marks = Marks::with_limits(limits.clone());
        let file: String = (1..=3).map(|n| format!(":{n} {}\n", id(n))).collect();
        assert!(matches!(import(&mut marks, &file).0, Err(MarksError::TooMany(2))));
        let mut marks = Marks::with_limits(limits);
        let file = format!(":1 {}\n:2 {}\n:3 {}\n", id(1), id(100), id(3));
        assert!(matches!(import(&mut marks, &file).0, Err(MarksError::ObjectNotFound(_))));
    }
}
