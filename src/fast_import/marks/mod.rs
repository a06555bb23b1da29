//! Marks: `:N` names for objects, defined by `blob` in the stream or imported from a marks file, and exported
//! to one (git's `insert_mark`, `read_mark_file`, `dump_marks`).
use std::collections::HashMap;
use std::io::{self, BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::fatal::Bytes;
use crate::git_compat::strerror::strerror;
use crate::git_compat::strtoumax::strtoumax;
use crate::quota::{Exceeded, Held, Limit};
use crate::store::ObjectId;

/// git reads marks files with `fgets` into a 512-byte buffer: a longer line arrives in pieces.
const MARK_LINE_BUFFER: usize = 512;

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

/// The marks of one stream.
#[derive(Debug, Default)]
pub(crate) struct Marks {
    table: HashMap<u64, ObjectId>,
    /// One per mark in the table, against a server's caps (none in the one-shot binary, as in git).
    held: Held,
}

impl Marks {
    pub(crate) fn with_limits(limit: Limit) -> Marks {
        Marks { table: HashMap::new(), held: Held::new(limit) }
    }

    /// Defines or redefines a mark. Mark 0 is never stored (git only inserts `if (mark)`). A new mark past the
    /// limits is refused (the table is what grows without bound: about 100 bytes a mark).
    pub(crate) fn insert(&mut self, mark: u64, id: ObjectId) -> Result<(), MarksError> {
        if mark == 0 {
            return Ok(());
        }
        if let Some(slot) = self.table.get_mut(&mark) {
            *slot = id;
            return Ok(());
        }
        self.held.take(1).map_err(|exceeded| match exceeded {
            Exceeded::PerStream(most) => MarksError::TooMany(most),
            Exceeded::Shared(most) => MarksError::TooManyInAll(most),
        })?;
        self.table.insert(mark, id);
        Ok(())
    }

    pub(crate) fn get(&self, mark: u64) -> Option<ObjectId> {
        self.table.get(&mark).copied()
    }

    /// Forgets a mark: something else (git) defines it now.
    pub(crate) fn remove(&mut self, mark: u64) {
        if self.table.remove(&mark).is_some() {
            self.held.give_back(1);
        }
    }

    /// Every mark and the object it names, in no order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, ObjectId)> + '_ {
        self.table.iter().map(|(mark, id)| (*mark, *id))
    }

    /// Reads a marks file (`read_marks`): `Ok(false)` if it is missing and `ignore_missing` is set. Each id
    /// must name an object for which `exists` says yes.
    pub(crate) fn import(
        &mut self,
        path: &Path,
        ignore_missing: bool,
        exists: &mut dyn FnMut(&ObjectId) -> bool,
    ) -> Result<bool, MarksError> {
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(err) if ignore_missing && err.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(err) => return Err(cannot_read(path, &err)),
        };
        read_marks(io::BufReader::new(file), path, |mark, id| {
            if !exists(&id) {
                return Err(MarksError::ObjectNotFound(id));
            }
            self.insert(mark, id)
        })?;
        Ok(true)
    }

    /// The marks file's bytes: `:<mark> <hex>\n` per mark, ascending.
    pub(crate) fn export_bytes(&self) -> Vec<u8> {
        let mut marks: Vec<_> = self.table.iter().collect();
        marks.sort_unstable_by_key(|(mark, _)| **mark);
        let mut out = Vec::with_capacity(marks.len() * 48);
        for (mark, id) in marks {
            out.push(b':');
            out.extend_from_slice(itoa::Buffer::new().format(*mark).as_bytes());
            out.push(b' ');
            out.extend_from_slice(id.to_hex().to_string().as_bytes());
            out.push(b'\n');
        }
        out
    }

    /// Writes the marks file as git's `dump_marks` does: leading directories created, written to
    /// `<file>.lock` and renamed into place. The error is git's `error:` text (exit status 1 at the end).
    ///
    /// Durable, unlike git: the lock file is synced before the rename and the directory after it, so that after a
    /// crash the old file or the new one is there, complete, never neither. The lock file never outlives a failed
    /// export, nor a process that stops through [`EXPORTS`].
    pub(crate) fn export(&self, path: &Path) -> Result<(), String> {
        let show = |p: &Path| Bytes(p.as_os_str().as_encoded_bytes()).to_string();
        let Some(_exporting) = EXPORTS.begin() else {
            return Err(format!("unable to write marks file {}: the process is exiting", show(path)));
        };
        create_leading_directories(path)
            .map_err(|err| format!("unable to create leading directories of {}: {}", show(path), strerror(&err)))?;
        let mut lock_name = path.as_os_str().to_owned();
        lock_name.push(".lock");
        let lock = PathBuf::from(lock_name);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&lock)
            .map_err(|err| format!("unable to write marks file {}: {}", show(path), strerror(&err)))?;
        let written = file.write_all(&self.export_bytes()).and_then(|()| file.sync_all());
        drop(file);
        if let Err(err) = written.and_then(|()| std::fs::rename(&lock, path)) {
            let _ = std::fs::remove_file(&lock);
            return Err(format!("unable to write file {}: {}", show(path), strerror(&err)));
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
/// (so a file without newlines, even an endless one, fails on its first piece): each line must start with `:`,
/// end with LF, hold a non-zero mark, exactly one SP, and a hex id of either hash. `each` sees every mark in
/// order and may stop the reading with an error, as git dies on the line it is reading.
pub(crate) fn read_marks(
    mut input: impl BufRead,
    path: &Path,
    mut each: impl FnMut(u64, ObjectId) -> Result<(), MarksError>,
) -> Result<(), MarksError> {
    let mut piece = Vec::with_capacity(MARK_LINE_BUFFER);
    loop {
        piece.clear();
        // What one fgets call returns: up to and including LF, at most 511 bytes.
        let read = input.by_ref().take(MARK_LINE_BUFFER as u64 - 1).read_until(b'\n', &mut piece);
        if read.map_err(|err| cannot_read(path, &err))? == 0 {
            return Ok(());
        }
        // The C code works on a C string: a NUL ends the line early, hiding its LF.
        let line = crate::fast_import::command::c_string(&piece);
        let Some(body) = line.strip_suffix(b"\n").filter(|_| line.first() == Some(&b':')) else {
            return Err(MarksError::CorruptLine(line.to_vec()));
        };
        let corrupt = || MarksError::CorruptLine(body.to_vec());
        let (mark, used) = strtoumax(&body[1..], 10).ok_or_else(corrupt)?;
        let after = &body[1 + used..];
        let hex = after.strip_prefix(b" ").ok_or_else(corrupt)?;
        if mark == 0 {
            return Err(corrupt());
        }
        each(mark, parse_hex_any(hex).ok_or_else(corrupt)?)?;
    }
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

/// git's `get_oid_hex_any`: the longest hash whose full hex length starts `hex` (trailing bytes ignored).
fn parse_hex_any(hex: &[u8]) -> Option<ObjectId> {
    [gix_hash::Kind::Sha256, gix_hash::Kind::Sha1].into_iter().find_map(|kind| {
        let digits = hex.get(..kind.len_in_hex())?;
        if !digits.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        ObjectId::from_hex(digits).ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
