//! Command lines in, commands out: the top-level grammar of a fast-import stream ([`parse_command`]).
//!
//! Everything here works on `&[u8]`: a command line is whatever bytes the frontend sent.
use std::collections::HashMap;

use super::dataref::{self, Dataref};
use crate::fatal::Bytes;
use crate::store::ObjectId;

/// One top-level command line of a fast-import stream (git's main loop dispatch, in git's order). Commands
/// with more lines (`blob`: `mark`, `original-oid`, `data`) are finished by the session, which owns the reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command<'a> {
    /// `blob`
    Blob,
    /// `cat-blob <dataref>`
    CatBlob(Dataref),
    /// `get-mark :<n>`
    GetMark(u64),
    /// `ls <args>`, parsed by the session (it needs the store to resolve the dataref first).
    Ls(&'a [u8]),
    /// `checkpoint`
    Checkpoint,
    /// `done`: stop reading; nothing after it is read.
    Done,
    /// `progress <any>`: the whole raw line is echoed.
    Progress,
    /// `feature <name>`
    Feature(&'a [u8]),
    /// `option git <name>`
    OptionGit(&'a [u8]),
    /// `option <anything else>`: ignored anywhere.
    OptionOther,
    /// `commit`, `tag`, `reset` or `alias`: history-writing commands cat-blobd refuses.
    Writes(&'static str),
}

/// What the parser needs to know about the stream: the repository's hash and the submodule rewrite map
/// (`rewrite-submodules-from/to`), which git applies to every hex dataref.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub hash: gix_hash::Kind,
    pub rewrites: &'a HashMap<ObjectId, ObjectId>,
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
    /// `get-mark` without `:`; git prints only the argument here.
    #[error("not a mark: {}", Bytes(.0))]
    NotAMark(Vec<u8>),
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
pub fn parse_command<'a>(line: &'a [u8], cx: Context<'_>) -> Result<Command<'a>, ParseError> {
    let command = if line == b"blob" {
        Command::Blob
    } else if line.starts_with(b"commit ") {
        Command::Writes("commit")
    } else if line.starts_with(b"tag ") {
        Command::Writes("tag")
    } else if line.starts_with(b"reset ") {
        Command::Writes("reset")
    } else if let Some(arg) = line.strip_prefix(b"ls ") {
        Command::Ls(arg)
    } else if let Some(arg) = line.strip_prefix(b"cat-blob ") {
        Command::CatBlob(parse_cat_blob(line, arg, cx)?)
    } else if let Some(arg) = line.strip_prefix(b"get-mark ") {
        Command::GetMark(parse_get_mark(line, arg)?)
    } else if line == b"checkpoint" {
        Command::Checkpoint
    } else if line == b"done" {
        Command::Done
    } else if line == b"alias" {
        Command::Writes("alias")
    } else if line.starts_with(b"progress ") {
        Command::Progress
    } else if let Some(feature) = line.strip_prefix(b"feature ") {
        Command::Feature(feature)
    } else if let Some(option) = line.strip_prefix(b"option git ") {
        Command::OptionGit(option)
    } else if line.starts_with(b"option ") {
        Command::OptionOther
    } else {
        return Err(ParseError::Unsupported(line.to_vec()));
    };
    Ok(command)
}

/// A mark reference with nothing after it (`parse_mark_ref_eol`).
fn parse_mark_eol(line: &[u8], arg: &[u8]) -> Result<u64, ParseError> {
    let (mark, rest) = dataref::parse_mark_ref(arg).ok_or_else(|| ParseError::NoMarkValue(line.to_vec()))?;
    if !rest.is_empty() {
        return Err(ParseError::GarbageAfterMark(line.to_vec()));
    }
    Ok(mark)
}

/// `cat-blob <dataref>`: a mark with nothing after it, or a full object id with nothing after it
/// (git's `parse_cat_blob`).
fn parse_cat_blob(line: &[u8], arg: &[u8], cx: Context<'_>) -> Result<Dataref, ParseError> {
    if arg.first() == Some(&b':') {
        return parse_mark_eol(line, arg).map(Dataref::Mark);
    }
    let (oid, rest) = dataref::parse_mapped_oid_hex(arg, cx.hash, cx.rewrites)
        .ok_or_else(|| ParseError::InvalidDataref(line.to_vec()))?;
    if !rest.is_empty() {
        return Err(ParseError::GarbageAfterOid(line.to_vec()));
    }
    Ok(Dataref::Oid(oid))
}

/// `get-mark :<n>` (git's `parse_get_mark`).
fn parse_get_mark(line: &[u8], arg: &[u8]) -> Result<u64, ParseError> {
    if arg.first() != Some(&b':') {
        return Err(ParseError::NotAMark(arg.to_vec()));
    }
    parse_mark_eol(line, arg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gix_hash::Kind::{Sha1, Sha256};

    fn parse_command(line: &[u8], hash: gix_hash::Kind) -> Result<Command<'_>, ParseError> {
        super::parse_command(line, Context { hash, rewrites: &HashMap::new() })
    }

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
            (b"get-mark :1 ".to_vec(), ParseError::GarbageAfterMark),
            (b"get-mark :".to_vec(), ParseError::NoMarkValue),
            (b"blob x".to_vec(), ParseError::Unsupported),
            (b"done ".to_vec(), ParseError::Unsupported),
            (b"progress".to_vec(), ParseError::Unsupported),
            (b"feature".to_vec(), ParseError::Unsupported),
            (b"".to_vec(), ParseError::Unsupported),
            (b"Cat-blob :1".to_vec(), ParseError::Unsupported),
        ];
        for (input, expected) in cases {
            assert_eq!(parse_command(&input, Sha1), Err(expected(input.clone())), "{}", Bytes(&input));
        }
    }

    #[test]
    fn sha256_repositories_take_64_hex_and_refuse_40() {
        let long = [HEX, &HEX[..24]].concat();
        assert!(matches!(parse_command(&line(&[b"cat-blob ", &long]), Sha256), Ok(Command::CatBlob(_))));
        assert!(matches!(parse_command(&line(&[b"cat-blob ", HEX]), Sha256), Err(ParseError::InvalidDataref(_))));
    }

    #[test]
    fn marks_follow_strtoumax() {
        for (arg, mark) in [(&b":1"[..], 1), (b": 1", 1), (b":+1", 1), (b":01", 1), (b":-1", u64::MAX)] {
            assert_eq!(parse_command(&line(&[b"cat-blob ", arg]), Sha1), Ok(Command::CatBlob(Dataref::Mark(mark))));
        }
    }

    #[test]
    fn get_mark_without_colon_names_only_the_argument() {
        assert_eq!(parse_command(b"get-mark  :1", Sha1), Err(ParseError::NotAMark(b" :1".to_vec())));
    }

    #[test]
    fn dispatch_follows_gits_order() {
        assert_eq!(parse_command(b"option git quiet", Sha1), Ok(Command::OptionGit(b"quiet")));
        assert_eq!(parse_command(b"option git", Sha1), Ok(Command::OptionOther));
        assert_eq!(parse_command(b"option cat-blob-fd=3", Sha1), Ok(Command::OptionOther));
        assert_eq!(parse_command(b"progress ", Sha1), Ok(Command::Progress));
        assert_eq!(parse_command(b"commit refs/heads/x", Sha1), Ok(Command::Writes("commit")));
        assert_eq!(parse_command(b"ls :1 a b", Sha1), Ok(Command::Ls(b":1 a b")));
    }

    #[test]
    fn a_nul_cuts_the_line() {
        assert_eq!(c_string(b"done\0x"), b"done");
        assert_eq!(parse_command(c_string(b"done\0x"), Sha1), Ok(Command::Done));
    }
}
