//! The bytes of each response, kept as slices so the payload is written straight from the object buffer.
use std::io::IoSlice;
use std::sync::Arc;

use crate::store::{Answer, BigBlob, Data, ObjectId};

/// `<hex> blob <size>\n`: at most 64 hex digits, " blob ", 20 digits and LF. Longer headers (a cat-file format
/// with literal text) go on the heap.
const HEADER_CAPACITY: usize = 96;

/// One response, ready to be gathered into a writev.
#[derive(Debug, Clone)]
pub enum Response {
    /// A header line, the object's bytes straight from its buffer, and one terminator byte: `cat-blob`'s
    /// `<hex> blob <size>\n<payload>\n`, and `git cat-file --batch`'s answers.
    Object { header: Header, payload: Data, terminator: u8 },
    /// A blob too big to hold, inflated in pieces as it is written: the header goes with the first piece, the
    /// terminator with the last (see `engine::output`). Nothing else is gathered into the same writes.
    Streamed { header: Header, body: Arc<BigBlob>, terminator: u8 },
    /// `<name> missing\n` (or another terminator): an object that does not exist.
    Missing(Vec<u8>),
    /// Any other answer: get-mark, ls, progress, `--batch-check` lines.
    Line(Vec<u8>),
}

/// A response header, on the stack when it fits.
#[derive(Debug, Clone)]
pub enum Header {
    Inline { bytes: [u8; HEADER_CAPACITY], len: u8 },
    Heap(Vec<u8>),
}

impl Header {
    /// `<hex> blob <size>\n`, cat-blob's header.
    fn blob(oid: &ObjectId, size: usize) -> Header {
        let mut bytes = [0u8; HEADER_CAPACITY];
        let hex_len = oid.kind().len_in_hex();
        let _ = oid.hex_to_buf(&mut bytes[..hex_len]);
        let mut len = hex_len;
        for part in [&b" blob "[..], itoa::Buffer::new().format(size).as_bytes(), b"\n"] {
            bytes[len..len + part.len()].copy_from_slice(part);
            len += part.len();
        }
        Header::Inline { bytes, len: len as u8 }
    }

    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Header::Inline { bytes, len } => &bytes[..usize::from(*len)],
            Header::Heap(bytes) => bytes,
        }
    }
}

impl From<&[u8]> for Header {
    fn from(line: &[u8]) -> Header {
        if line.len() > HEADER_CAPACITY {
            return Header::Heap(line.to_vec());
        }
        let mut bytes = [0u8; HEADER_CAPACITY];
        bytes[..line.len()].copy_from_slice(line);
        Header::Inline { bytes, len: line.len() as u8 }
    }
}

impl Response {
    /// cat-blob's answer for a blob.
    pub fn blob(oid: &ObjectId, payload: Data) -> Response {
        Response::Object { header: Header::blob(oid, payload.len()), payload, terminator: b'\n' }
    }

    /// An object's answer with any header line (which carries its own line end).
    pub fn object(header: &[u8], payload: Data, terminator: u8) -> Response {
        Response::Object { header: Header::from(header), payload, terminator }
    }

    /// cat-blob's answer for a blob read whole or to be streamed.
    pub fn blob_answer(oid: &ObjectId, answer: Answer) -> Response {
        match answer {
            Answer::Whole(object) => Response::blob(oid, object.data),
            Answer::Big(body) => {
                Response::Streamed { header: Header::blob(oid, body.size() as usize), body, terminator: b'\n' }
            }
        }
    }

    /// An object's answer, read whole or to be streamed, with any header line.
    pub fn object_answer(header: &[u8], answer: Answer, terminator: u8) -> Response {
        match answer {
            Answer::Whole(object) => Response::object(header, object.data, terminator),
            Answer::Big(body) => Response::Streamed { header: Header::from(header), body, terminator },
        }
    }

    /// cat-blob's `<hex> missing\n`.
    pub fn missing(oid: &ObjectId) -> Response {
        let mut line = oid.to_hex().to_string().into_bytes();
        line.extend_from_slice(b" missing\n");
        Response::Missing(line)
    }

    /// Appends this response's slices (header, payload, terminator; or the line) to `out`. A streamed response
    /// has none: its writer writes it piece by piece.
    pub fn push_slices<'a>(&'a self, out: &mut Vec<IoSlice<'a>>) {
        match self {
            Response::Streamed { .. } => {}
            Response::Object { header, payload, terminator } => {
                out.push(IoSlice::new(header.as_bytes()));
                out.push(IoSlice::new(payload));
                out.push(IoSlice::new(std::slice::from_ref(terminator)));
            }
            Response::Missing(line) | Response::Line(line) => out.push(IoSlice::new(line)),
        }
    }

    /// Is this the answer for an object that does not exist?
    pub fn is_missing(&self) -> bool {
        matches!(self, Response::Missing(_))
    }

    /// Total bytes this response puts on the fd.
    pub fn len(&self) -> usize {
        match self {
            Response::Object { header, payload, .. } => header.as_bytes().len() + payload.len() + 1,
            Response::Streamed { header, body, .. } => header.as_bytes().len() + body.size() as usize + 1,
            Response::Missing(line) | Response::Line(line) => line.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn concat(response: &Response) -> Vec<u8> {
        let mut slices = Vec::new();
        response.push_slices(&mut slices);
        slices.iter().flat_map(|s| s.iter().copied()).collect()
    }

    #[test]
    fn blob_and_missing_bytes_are_gits() {
        let oid = ObjectId::from_hex(b"ce013625030ba8dba906f756967f9e9ca394464a").unwrap();
        let blob = Response::blob(&oid, Data::new(b"hello\n".to_vec()));
        assert_eq!(concat(&blob), b"ce013625030ba8dba906f756967f9e9ca394464a blob 6\nhello\n\n");
        assert_eq!(blob.len(), 55);
        let empty = ObjectId::from_hex(b"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391").unwrap();
        assert_eq!(
            concat(&Response::blob(&empty, Data::default())),
            b"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 blob 0\n\n"
        );
        assert_eq!(concat(&Response::missing(&oid)), b"ce013625030ba8dba906f756967f9e9ca394464a missing\n");
        assert!(Response::missing(&oid).is_missing());
    }

    #[test]
    fn a_line_that_ends_in_missing_is_not_a_missing_object() {
        // An `ls` answer for a path named "x missing" ends with the same bytes as a missing object's answer.
        let ls = Response::Line(b"100644 blob e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\tx missing\n".to_vec());
        assert!(!ls.is_missing());
    }

    #[test]
    fn headers_of_any_length_are_kept_whole() {
        let long = vec![b'x'; 300];
        let response = Response::object(&long, Data::new(b"body".to_vec()), 0);
        let mut expected = long.clone();
        expected.extend_from_slice(b"body\0");
        assert_eq!(concat(&response), expected);
        assert_eq!(response.len(), expected.len());
        assert_eq!(concat(&Response::object(b"short\n", Data::default(), b'\n')), b"short\n\n");
    }

    #[test]
    fn sha256_headers_fit() {
        let oid = ObjectId::from_hex(&[b'f'; 64]).unwrap();
        let header = Header::blob(&oid, usize::MAX);
        assert_eq!(header.as_bytes().len(), 64 + 6 + 20 + 1);
    }
}
