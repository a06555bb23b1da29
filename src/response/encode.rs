//! The bytes of each response, kept as slices so the payload is written straight from the object buffer.
use std::io::IoSlice;

use crate::store::{Data, ObjectId};

/// `<hex> blob <size>\n`: at most 64 hex digits, " blob ", 20 digits and LF.
const HEADER_CAPACITY: usize = 96;

/// One response, ready to be gathered into a writev.
#[derive(Debug, Clone)]
pub enum Response {
    /// `<hex> blob <size>\n<payload>\n`
    Blob { header: Header, payload: Data },
    /// A single line: `<hex> missing\n` (and, later, get-mark and ls answers).
    Line(Vec<u8>),
}

/// A response header on the stack.
#[derive(Debug, Clone)]
pub struct Header {
    bytes: [u8; HEADER_CAPACITY],
    len: usize,
}

impl Header {
    fn new(oid: &ObjectId, size: usize) -> Header {
        let mut bytes = [0u8; HEADER_CAPACITY];
        let hex_len = oid.kind().len_in_hex();
        let _ = oid.hex_to_buf(&mut bytes[..hex_len]);
        let mut len = hex_len;
        for part in [&b" blob "[..], itoa::Buffer::new().format(size).as_bytes(), b"\n"] {
            bytes[len..len + part.len()].copy_from_slice(part);
            len += part.len();
        }
        Header { bytes, len }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl Response {
    pub fn blob(oid: &ObjectId, payload: Data) -> Response {
        Response::Blob { header: Header::new(oid, payload.len()), payload }
    }

    pub fn missing(oid: &ObjectId) -> Response {
        let mut line = oid.to_hex().to_string().into_bytes();
        line.extend_from_slice(b" missing\n");
        Response::Line(line)
    }

    /// Appends this response's slices (header, payload, LF; or the line) to `out`.
    pub fn push_slices<'a>(&'a self, out: &mut Vec<IoSlice<'a>>) {
        match self {
            Response::Blob { header, payload } => {
                out.push(IoSlice::new(header.as_bytes()));
                out.push(IoSlice::new(payload));
                out.push(IoSlice::new(b"\n"));
            }
            Response::Line(line) => out.push(IoSlice::new(line)),
        }
    }

    /// Is this a `<oid> missing` answer?
    pub fn is_missing(&self) -> bool {
        matches!(self, Response::Line(line) if line.ends_with(b" missing\n"))
    }

    /// Total bytes this response puts on the fd.
    pub fn len(&self) -> usize {
        match self {
            Response::Blob { header, payload } => header.len + payload.len() + 1,
            Response::Line(line) => line.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn concat(response: &Response) -> Vec<u8> {
        let mut slices = Vec::new();
        response.push_slices(&mut slices);
        slices.iter().flat_map(|s| s.iter().copied()).collect()
    }

    #[test]
    fn blob_and_missing_bytes_are_gits() {
        let oid = ObjectId::from_hex(b"ce013625030ba8dba906f756967f9e9ca394464a").unwrap();
        let blob = Response::blob(&oid, Arc::new(b"hello\n".to_vec()));
        assert_eq!(concat(&blob), b"ce013625030ba8dba906f756967f9e9ca394464a blob 6\nhello\n\n");
        assert_eq!(blob.len(), 55);
        let empty = ObjectId::from_hex(b"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391").unwrap();
        assert_eq!(
            concat(&Response::blob(&empty, Arc::default())),
            b"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 blob 0\n\n"
        );
        assert_eq!(concat(&Response::missing(&oid)), b"ce013625030ba8dba906f756967f9e9ca394464a missing\n");
    }

    #[test]
    fn sha256_headers_fit() {
        let oid = ObjectId::from_hex(&[b'f'; 64]).unwrap();
        let header = Header::new(&oid, usize::MAX);
        assert_eq!(header.as_bytes().len(), 64 + 6 + 20 + 1);
    }
}
