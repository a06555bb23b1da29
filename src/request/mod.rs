//! Bytes in, commands out: the line reader ([`reader`]), object names and marks ([`dataref`]), and the
//! top-level grammar ([`parse_command`]).
//!
//! Everything here works on `&[u8]`: a command line is whatever bytes the frontend sent.
pub mod dataref;
pub mod reader;

use crate::fatal::Bytes;
use dataref::Dataref;

/// One top-level command of the fast-import stream that cat-blobd acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `cat-blob <dataref>`
    CatBlob(Dataref),
    /// `done`: stop reading; nothing after it is read.
    Done,
}

/// A command line that git fast-import would die on, with git's message (≥ 2.52 wording).
///
/// Each variant keeps the whole command line (cut at its first NUL, as git's C strings are), because git's
/// messages quote it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("unsupported command: {}", Bytes(.0))]
    Unsupported(Vec<u8>),
    #[error("invalid dataref: {}", Bytes(.0))]
    InvalidDataref(Vec<u8>),
    #[error("garbage after SHA1: {}", Bytes(.0))]
    GarbageAfterOid(Vec<u8>),
    #[error("no value after ':' in mark: {}", Bytes(.0))]
    NoMarkValue(Vec<u8>),
    #[error("garbage after mark: {}", Bytes(.0))]
    GarbageAfterMark(Vec<u8>),
}

/// The part of a line git's C-string parsing sees: everything before the first NUL.
pub fn c_string(line: &[u8]) -> &[u8] {
    match memchr::memchr(0, line) {
        Some(nul) => &line[..nul],
        None => line,
    }
}

/// Is this line a comment? (Any line whose first byte is `#`, wherever a command may stand.)
pub fn is_comment(line: &[u8]) -> bool {
    line.first() == Some(&b'#')
}

/// Parses one top-level command line (without its LF, already cut at NUL, not a comment).
pub fn parse_command(line: &[u8], hash: gix_hash::Kind) -> Result<Command, ParseError> {
    if let Some(arg) = line.strip_prefix(b"cat-blob ") {
        return parse_cat_blob(line, arg, hash).map(Command::CatBlob);
    }
    if line == b"done" {
        return Ok(Command::Done);
    }
    Err(ParseError::Unsupported(line.to_vec()))
}

/// `cat-blob <dataref>`: a mark with nothing after it, or a full object id with nothing after it
/// (git's `parse_cat_blob`).
fn parse_cat_blob(line: &[u8], arg: &[u8], hash: gix_hash::Kind) -> Result<Dataref, ParseError> {
    if arg.first() == Some(&b':') {
        let (mark, rest) = dataref::parse_mark_ref(arg).ok_or_else(|| ParseError::NoMarkValue(line.to_vec()))?;
        if !rest.is_empty() {
            return Err(ParseError::GarbageAfterMark(line.to_vec()));
        }
        return Ok(Dataref::Mark(mark));
    }
    let (oid, rest) = dataref::parse_oid_hex(arg, hash).ok_or_else(|| ParseError::InvalidDataref(line.to_vec()))?;
    if !rest.is_empty() {
        return Err(ParseError::GarbageAfterOid(line.to_vec()));
    }
    Ok(Dataref::Oid(oid))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gix_hash::Kind::{Sha1, Sha256};

    const HEX: &[u8] = b"ce013625030ba8dba906f756967f9e9ca394464a";

    fn line(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    #[test]
    fn cat_blob_by_id_accepts_upper_case_and_prints_lower_case() {
        let upper = HEX.to_ascii_uppercase();
        let Command::CatBlob(Dataref::Oid(oid)) = parse_command(&line(&[b"cat-blob ", &upper]), Sha1).unwrap() else {
            panic!("not a cat-blob by id");
        };
        assert_eq!(oid.to_hex().to_string().as_bytes(), HEX);
    }

    #[test]
    fn cat_blob_errors_match_git() {
        type Expected = fn(Vec<u8>) -> ParseError;
        let cases: Vec<(Vec<u8>, Expected)> = vec![
            (line(&[b"cat-blob ", &HEX[..39]]), ParseError::InvalidDataref),
            (line(&[b"cat-blob ", HEX, b" "]), ParseError::GarbageAfterOid),
            (line(&[b"cat-blob ", HEX, b"\r"]), ParseError::GarbageAfterOid),
            (line(&[b"cat-blob ", HEX, b"a"]), ParseError::GarbageAfterOid),
            (line(&[b"cat-blob ", HEX, &HEX[..24]]), ParseError::InvalidDataref),
            (line(&[b"cat-blob  ", HEX]), ParseError::InvalidDataref),
            (b"cat-blob HEAD".to_vec(), ParseError::InvalidDataref),
            (b"cat-blob :".to_vec(), ParseError::NoMarkValue),
            (b"cat-blob :x".to_vec(), ParseError::NoMarkValue),
            (b"cat-blob :1 ".to_vec(), ParseError::GarbageAfterMark),
            (b"cat-blob".to_vec(), ParseError::Unsupported),
            (b"".to_vec(), ParseError::Unsupported),
            (b"Cat-blob :1".to_vec(), ParseError::Unsupported),
        ];
        for (input, expected) in cases {
            assert_eq!(
                parse_command(&input, Sha1),
                Err(expected(input.clone())),
                "{}",
                Bytes(&input)
            );
        }
    }

    #[test]
    fn sha256_repositories_take_64_hex_and_refuse_40() {
        let long = [HEX, &HEX[..24]].concat();
        assert!(matches!(
            parse_command(&line(&[b"cat-blob ", &long]), Sha256),
            Ok(Command::CatBlob(_))
        ));
        assert!(matches!(
            parse_command(&line(&[b"cat-blob ", HEX]), Sha256),
            Err(ParseError::InvalidDataref(_))
        ));
    }

    #[test]
    fn marks_follow_strtoumax() {
        for (arg, mark) in [
            (&b":1"[..], 1),
            (b": 1", 1),
            (b":+1", 1),
            (b":01", 1),
            (b":-1", u64::MAX),
        ] {
            assert_eq!(
                parse_command(&line(&[b"cat-blob ", arg]), Sha1),
                Ok(Command::CatBlob(Dataref::Mark(mark)))
            );
        }
    }

    #[test]
    fn a_nul_cuts_the_line() {
        assert_eq!(c_string(b"done\0x"), b"done");
        assert_eq!(parse_command(c_string(b"done\0x"), Sha1), Ok(Command::Done));
    }
}
