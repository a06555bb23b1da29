//! Reading a marks file as git's `read_mark_file` does, but all of it before any object is looked up. git looks up
//! each line's object as it reads the line (a binary search of the pack indexes per mark); read whole, the ids are
//! looked up sorted, in one pass over each index (`store/exists_sorted.rs`), and the line git dies on is found
//! after: the first one, in file order, that is corrupt or names an object that does not exist.
use std::io::{self, BufRead};
use std::path::Path;

use gix_hash::{Kind, ObjectId, oid};

use super::{MarksError, ObjectLookup, cannot_read};
use crate::git_compat::strtoumax::strtoumax;

/// git reads marks files with `fgets` into a 512-byte buffer: a longer line arrives in pieces.
const MARK_LINE_BUFFER: usize = 512;

/// Calls `each` with what each of git's `fgets` calls would return, in order, until it fails: bytes up to and
/// including LF, at most 511 of them (so a file without newlines, even an endless one, fails on its first piece).
/// A piece that is whole in the reader's buffer is passed from there, without a copy.
pub(super) fn for_each_piece(
    mut input: impl BufRead,
    path: &Path,
    mut each: impl FnMut(&[u8]) -> Result<(), MarksError>,
) -> Result<(), MarksError> {
    const MOST: usize = MARK_LINE_BUFFER - 1;
    // A piece that the reader's buffer ended in the middle of.
    let mut partial = Vec::with_capacity(MOST);
    loop {
        let buffer = match input.fill_buf() {
            Ok(buffer) => buffer,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(cannot_read(path, &err)),
        };
        if buffer.is_empty() {
            return if partial.is_empty() { Ok(()) } else { each(&partial) };
        }
        let mut used = 0;
        if !partial.is_empty() {
            let window = &buffer[..buffer.len().min(MOST - partial.len())];
            let lf = memchr::memchr(b'\n', window);
            used = lf.map_or(window.len(), |lf| lf + 1);
            partial.extend_from_slice(&window[..used]);
            if lf.is_some() || partial.len() == MOST {
                each(&partial)?;
                partial.clear();
            }
        }
        while partial.is_empty() && used < buffer.len() {
            let rest = &buffer[used..];
            let window = &rest[..rest.len().min(MOST)];
            let lf = memchr::memchr(b'\n', window);
            let end = lf.map_or(window.len(), |lf| lf + 1);
            if lf.is_some() || end == MOST {
                each(&window[..end])?;
            } else {
                partial.extend_from_slice(window);
            }
            used += end;
        }
        input.consume(used);
    }
}

/// One `fgets` piece as git's `read_mark_file` reads it: it must start with `:`, end with LF, hold a non-zero mark,
/// exactly one SP, and a hex id of either hash (anything after it is ignored).
pub(super) fn parse_piece(piece: &[u8]) -> Result<(u64, ObjectId), MarksError> {
    // The C code works on a C string: a NUL ends the line early, hiding its LF.
    let line = crate::fast_import::command::c_string(piece);
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
    Ok((mark, parse_hex_any(hex).ok_or_else(corrupt)?))
}

/// git's `get_oid_hex_any`: the longest hash whose full hex length starts `hex` (trailing bytes ignored).
fn parse_hex_any(hex: &[u8]) -> Option<ObjectId> {
    let mut bytes = [0; 32];
    [Kind::Sha256, Kind::Sha1].into_iter().find_map(|kind| {
        let digits = hex.get(..kind.len_in_hex())?;
        let bytes = &mut bytes[..kind.len_in_bytes()];
        decode_hex(digits, bytes).then(|| ObjectId::from_bytes_or_panic(bytes))
    })
}

/// Decodes `hex` into `out` (half as long); false if a byte is not a hex digit. One pass without branches: a
/// 10-million-line marks file spent a third of its reading in checking the digits, then decoding them.
fn decode_hex(hex: &[u8], out: &mut [u8]) -> bool {
    const NOT_HEX: u8 = 0x10;
    const VALUES: [u8; 256] = {
        let mut table = [NOT_HEX; 256];
        let mut byte = 0;
        while byte < 256 {
            table[byte] = match byte as u8 {
                digit @ b'0'..=b'9' => digit - b'0',
                letter @ b'a'..=b'f' => letter - b'a' + 10,
                letter @ b'A'..=b'F' => letter - b'A' + 10,
                _ => NOT_HEX,
            };
            byte += 1;
        }
        table
    };
    let mut bad = 0;
    for (pair, byte) in hex.chunks_exact(2).zip(out) {
        let (high, low) = (VALUES[pair[0] as usize], VALUES[pair[1] as usize]);
        bad |= high | low;
        *byte = high << 4 | (low & 0xf);
    }
    bad & NOT_HEX == 0
}

/// A marks file read whole, before any object is looked up: each line's mark and id, in file order.
pub(super) struct Lines {
    hash: Kind,
    /// Each line's id, end to end.
    ids: Vec<u8>,
    /// Each line's mark; `None` while they are 1, 2, 3, …, as in the files git writes (then `ids` is already the
    /// array of a [`super::table::Table`], and 8 bytes a line are saved).
    marks: Option<Vec<u64>>,
    len: usize,
    /// Why reading stopped before the end of the file: the error git dies of at the line after the last one
    /// here, unless one of these names an object that does not exist.
    pub(super) stop: Option<MarksError>,
}

impl Lines {
    /// Reads every line up to the end of `input` or the first that is corrupt. An id of another hash than the
    /// repository's stops the reading too: no such object exists in it.
    pub(super) fn read(input: impl BufRead, path: &Path, hash: Kind) -> Lines {
        let mut lines = Lines { hash, ids: Vec::new(), marks: None, len: 0, stop: None };
        let read = for_each_piece(input, path, |piece| {
            let (mark, id) = parse_piece(piece)?;
            if id.kind() != hash {
                return Err(MarksError::ObjectNotFound(id));
            }
            lines.push(mark, &id);
            Ok(())
        });
        lines.stop = read.err();
        lines
    }

    fn push(&mut self, mark: u64, id: &oid) {
        match &mut self.marks {
            Some(marks) => marks.push(mark),
            None if mark == self.len as u64 + 1 => {}
            None => self.marks = Some((1..=self.len as u64).chain([mark]).collect()),
        }
        self.ids.extend_from_slice(id.as_bytes());
        self.len += 1;
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn mark(&self, line: usize) -> u64 {
        self.marks.as_ref().map_or(line as u64 + 1, |marks| marks[line])
    }

    pub(super) fn id(&self, line: usize) -> &oid {
        let len = self.hash.len_in_bytes();
        oid::from_bytes_unchecked(&self.ids[line * len..(line + 1) * len])
    }

    /// Whether the lines define marks 1, 2, 3, … in that order.
    pub(super) fn is_dense(&self) -> bool {
        self.marks.is_none()
    }

    /// The ids end to end: the array of a [`super::table::Table`] of marks `1..=len` if [`Lines::is_dense`].
    pub(super) fn into_dense(self) -> (Kind, Vec<u8>) {
        (self.hash, self.ids)
    }

    /// The first line, in file order, whose object does not exist: git dies there.
    pub(super) fn first_missing(&self, objects: &mut dyn ObjectLookup) -> Option<usize> {
        let order = self.by_id();
        let unlisted = objects.unlisted(self.len, &|at| self.id(order[at] as usize));
        let mut lines: Vec<usize> = unlisted.into_iter().map(|at| order[at] as usize).collect();
        drop(order);
        lines.sort_unstable();
        lines.into_iter().find(|&line| !objects.exists(self.id(line)))
    }

    /// Every line, in the order of their ids. Sorted as 8-byte keys (the id's first 4 bytes, then the line) that
    /// the sort moves in registers: sorting line numbers by ids looked up elsewhere is a cache miss a comparison.
    /// Keys whose 4 bytes are equal are then put in order by their whole ids.
    fn by_id(&self) -> Vec<u64> {
        let prefix = |line: usize| u32::from_be_bytes(self.id(line).as_bytes()[..4].try_into().expect("4 bytes"));
        if u32::try_from(self.len).is_err() {
            // Over 4 billion lines (200 GB): line numbers do not fit in the key.
            let mut order: Vec<u64> = (0..self.len as u64).collect();
            order.sort_unstable_by(|a, b| self.id(*a as usize).cmp(self.id(*b as usize)));
            return order;
        }
        let mut keys: Vec<u64> = (0..self.len).map(|line| (prefix(line) as u64) << 32 | line as u64).collect();
        keys.sort_unstable();
        let line = |key: &u64| (*key & u64::from(u32::MAX)) as usize;
        for same_prefix in keys.chunk_by_mut(|a, b| a >> 32 == b >> 32).filter(|run| run.len() > 1) {
            same_prefix.sort_unstable_by(|a, b| self.id(line(a)).cmp(self.id(line(b))));
        }
        keys.iter_mut().for_each(|key| *key = line(key) as u64);
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pieces `for_each_piece` gives for `input` read through a buffer of `capacity` bytes.
    fn pieces(input: &[u8], capacity: usize) -> Vec<Vec<u8>> {
        let mut pieces = Vec::new();
        let reader = io::BufReader::with_capacity(capacity, input);
        for_each_piece(reader, Path::new("m"), |piece| {
            pieces.push(piece.to_vec());
            Ok(())
        })
        .expect("no error");
        pieces
    }

    /// What `fgets(buffer, 512, file)` returns, call after call.
    fn fgets_pieces(mut input: &[u8]) -> Vec<Vec<u8>> {
        let mut pieces = Vec::new();
        while !input.is_empty() {
            let most = &input[..input.len().min(511)];
            let end = most.iter().position(|&b| b == b'\n').map_or(most.len(), |lf| lf + 1);
            pieces.push(input[..end].to_vec());
            input = &input[end..];
        }
        pieces
    }

    #[test]
    fn pieces_are_those_of_fgets_whatever_the_buffer() {
        let long = [b'x'; 1200];
        let inputs: [&[u8]; 6] =
            [b"", b"\n", b":1 a\n:2 b\n", b":1 a\n:2 no lf", &long, &[&long[..], b"\nend\n"].concat()];
        for input in inputs {
            for capacity in [1, 2, 7, 64, 510, 511, 512, 4096] {
                assert_eq!(pieces(input, capacity), fgets_pieces(input), "{input:?} through {capacity} bytes");
            }
        }
    }

    #[test]
    fn hex_is_decoded_in_either_case_and_anything_else_refused() {
        let mut out = [0; 4];
        assert!(decode_hex(b"09afAF7e", &mut out));
        assert_eq!(out, [0x09, 0xaf, 0xaf, 0x7e]);
        for bad in [b"09afAF7g", b"/9afAF7e", b":9afAF7e", b"09a@AF7e", b"09afAG7e", b"09af`F7e", b"09 fAF7e"] {
            assert!(!decode_hex(bad, &mut out), "{}", String::from_utf8_lossy(bad));
        }
        let sha1 = "ce013625030ba8dba906f756967f9e9ca394464a";
        assert_eq!(parse_hex_any(format!("{sha1} junk").as_bytes()).map(|id| id.to_string()), Some(sha1.into()));
        let both = format!("{sha1}{}", &sha1[..24]);
        assert_eq!(parse_hex_any(both.as_bytes()).map(|id| id.kind()), Some(Kind::Sha256));
        assert_eq!(parse_hex_any(&sha1.as_bytes()[..39]), None);
    }

    #[test]
    fn marks_one_to_n_in_order_are_kept_as_an_array() {
        let id = |n: u8| ObjectId::from_bytes_or_panic(&[n; 20]);
        let file: String = (1..=3).map(|n| format!(":{n} {}\n", id(n))).collect();
        let lines = Lines::read(file.as_bytes(), Path::new("m"), Kind::Sha1);
        assert!(lines.stop.is_none());
        assert!(lines.is_dense());
        let (kind, ids) = lines.into_dense();
        assert_eq!((kind, ids), (Kind::Sha1, [[1; 20], [2; 20], [3; 20]].concat()));
        let file = format!(":1 {}\n:3 {}\n:2 {}\n:2 {}\n", id(1), id(3), id(2), id(4));
        let lines = Lines::read(file.as_bytes(), Path::new("m"), Kind::Sha1);
        assert_eq!((0..4).map(|line| lines.mark(line)).collect::<Vec<_>>(), [1, 3, 2, 2]);
        assert_eq!(lines.id(3), id(4).as_ref());
        assert!(!lines.is_dense());
    }

    #[test]
    fn lines_sort_by_whole_ids_when_their_first_bytes_are_equal() {
        let ids: Vec<ObjectId> = [[9u8; 20], [1; 20], [5; 20], [1; 20]]
            .into_iter()
            .enumerate()
            .map(|(n, mut bytes)| {
                bytes[19] = 10 - n as u8;
                ObjectId::from_bytes_or_panic(&bytes)
            })
            .collect();
        let file: String = ids.iter().enumerate().map(|(n, id)| format!(":{} {id}\n", n + 1)).collect();
        let lines = Lines::read(file.as_bytes(), Path::new("m"), Kind::Sha1);
        assert_eq!(lines.by_id(), [3, 1, 2, 0]);
    }

    #[test]
    fn reading_stops_at_a_corrupt_line_or_an_id_of_another_hash() {
        let sha1 = "ce013625030ba8dba906f756967f9e9ca394464a";
        let file = format!(":1 {sha1}\n:2 {sha1}{sha1}\n:3 {sha1}\n");
        let lines = Lines::read(file.as_bytes(), Path::new("m"), Kind::Sha1);
        assert_eq!(lines.len(), 1);
        assert!(matches!(lines.stop, Some(MarksError::ObjectNotFound(id)) if id.kind() == Kind::Sha256));
        let lines = Lines::read(format!(":1 {sha1}\n:x\n").as_bytes(), Path::new("m"), Kind::Sha1);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines.stop.expect("corrupt").to_string(), "corrupt mark line: :x");
    }
}
