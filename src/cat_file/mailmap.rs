//! `--use-mailmap` and the `--batch-command` `mailmap <bool>` command: the mailmap read as git's `read_mailmap`
//! reads it, and applied to the `author`, `committer` and `tagger` lines of an object's header as git's
//! `apply_mailmap_to_header` applies it.
//!
//! gix-mailmap parses the files and merges them in git's order (a later entry replaces the fields an earlier one
//! gave). The lookup is git's `map_user`, done here: gix-mailmap's own lookup also rewrites an email whose case
//! differs from the mailmap's, which git leaves as the object has it.
use std::collections::HashMap;
use std::path::Path;

use gix_object::Kind;

use super::names::{NameError, Names};
use super::output::Messages;
use crate::fatal::Bytes;
use crate::repo::MailmapConfig;

/// Where the mailmap's files are opened: by path from this process's directory ([`ByPath`]), or beneath a
/// `--root` daemon's root from the directory its client's git would work in.
pub trait MailmapFiles: Sync {
    /// Opens `path` for reading (`no_follow`: a symlink as its last component is not followed, `ELOOP`).
    fn open(&self, path: &Path, no_follow: bool) -> Result<std::fs::File, MailmapError>;
}

/// Why a mailmap file was not read.
#[derive(Debug, thiserror::Error)]
pub enum MailmapError {
    /// What `open(2)` said: git's `error: unable to open mailmap at …`, and the mailmap goes on without it.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The file may not be opened at all (it lies outside a `--root` daemon's root): the client's run dies.
    #[error("{0}")]
    Refused(String),
}

/// Files opened by path, as git opens them.
pub struct ByPath;

impl MailmapFiles for ByPath {
    fn open(&self, path: &Path, no_follow: bool) -> Result<std::fs::File, MailmapError> {
        let mut options = std::fs::OpenOptions::new();
        options.read(true);
        if no_follow {
            std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NOFOLLOW);
        }
        Ok(options.open(path)?)
    }
}

/// What one entry maps an ident to: either may be absent.
#[derive(Debug, Default, Clone)]
struct Mapping {
    name: Option<Vec<u8>>,
    email: Option<Vec<u8>>,
}

/// The mappings of one old email (ASCII case folded, as git's `strcasecmp` compares).
#[derive(Debug, Default)]
struct EmailEntry {
    /// `Proper Name <proper@email> <commit@email>`: for any name.
    any_name: Option<Mapping>,
    /// `... Commit Name <commit@email>`: by the old name, case folded.
    by_name: HashMap<Vec<u8>, Mapping>,
}

/// A loaded mailmap (possibly empty).
#[derive(Debug, Default)]
pub(crate) struct Mailmap {
    by_email: HashMap<Vec<u8>, EmailEntry>,
}

impl Mailmap {
    /// git's `read_mailmap`: the work tree's `.mailmap` unless the repository is bare, then
    /// `mailmap.blob` (default `HEAD:.mailmap` in a bare repository), then `mailmap.file`. What cannot be read
    /// is skipped with git's `error:` line; a missing file or a name that does not resolve, silently.
    pub(crate) fn load(
        config: &MailmapConfig,
        files: &dyn MailmapFiles,
        names: &mut Names<'_>,
    ) -> Result<Mailmap, MailmapError> {
        let messages = names.messages;
        let mut snapshot = gix_mailmap::Snapshot::default();
        if let Some(path) = &config.work_tree_file {
            read_file(files, path, true, messages, &mut snapshot)?;
        }
        let default_blob = config.work_tree_file.is_none().then_some(&b"HEAD:.mailmap"[..]);
        if let Some(blob) = config.blob.as_deref().or(default_blob) {
            read_blob(blob, names, &mut snapshot)?;
        }
        if let Some(file) = &config.file {
            read_file(files, file, false, messages, &mut snapshot)?;
        }
        Ok(Mailmap::from_snapshot(&snapshot))
    }

    fn from_snapshot(snapshot: &gix_mailmap::Snapshot) -> Mailmap {
        let mut mailmap = Mailmap::default();
        for entry in snapshot.iter() {
            let email = mailmap.by_email.entry(entry.old_email().to_ascii_lowercase()).or_default();
            let mapping = Mapping {
                name: entry.new_name().map(|name| name.to_vec()),
                email: entry.new_email().map(|email| email.to_vec()),
            };
            match entry.old_name() {
                Some(name) => _ = email.by_name.insert(name.to_ascii_lowercase(), mapping),
                None => email.any_name = Some(mapping),
            }
        }
        mailmap
    }

    /// git's `map_user`: the name and email to write instead, if the mailmap changes them.
    fn map_user<'a>(&'a self, name: &'a [u8], email: &'a [u8]) -> Option<(&'a [u8], &'a [u8])> {
        let entry = self.by_email.get(&email.to_ascii_lowercase())?;
        let mapping = entry.by_name.get(&name.to_ascii_lowercase()).or(entry.any_name.as_ref())?;
        if mapping.name.is_none() && mapping.email.is_none() {
            return None;
        }
        Some((mapping.name.as_deref().unwrap_or(name), mapping.email.as_deref().unwrap_or(email)))
    }

    /// git's `replace_idents_using_mailmap` for an object of this kind, as cat-file calls it: `None` when nothing
    /// changes. (git runs it on every kind it does not stream, trees included; only header lines can match.)
    pub(crate) fn apply(&self, kind: Kind, data: &[u8]) -> Option<Vec<u8>> {
        if kind == Kind::Blob || self.by_email.is_empty() {
            return None;
        }
        let mut out: Option<Vec<u8>> = None;
        let mut at = 0;
        // A line at a time up to the first empty one (or a NUL: git walks a C string).
        while at < data.len() && data[at] != b'\n' && data[at] != 0 {
            let end = memchr::memchr2(b'\n', 0, &data[at..]).map_or(data.len(), |i| at + i);
            let line = &data[at..end];
            let person = [&b"author "[..], b"committer ", b"tagger "].iter().find_map(|h| line.strip_prefix(*h));
            if let Some(person) = person
                && let Some(rewritten) = self.rewrite_ident(person)
            {
                let out = out.get_or_insert_with(|| data[..at].to_vec());
                out.extend_from_slice(&line[..line.len() - person.len()]);
                out.extend_from_slice(&rewritten);
            } else if let Some(out) = &mut out {
                out.extend_from_slice(line);
            }
            at = if data.get(end) == Some(&b'\n') { end + 1 } else { end };
            if let Some(out) = &mut out {
                out.extend_from_slice(&data[end..at]);
            }
        }
        let mut out = out?;
        out.extend_from_slice(&data[at..]);
        Some(out)
    }

    /// git's `rewrite_ident_line` on the text after the header's name: `Name <email>` replaced, the rest kept.
    fn rewrite_ident(&self, person: &[u8]) -> Option<Vec<u8>> {
        let ident = split_ident(person)?;
        let (name, email) = self.map_user(&person[..ident.name_end], &person[ident.mail_begin..ident.mail_end])?;
        let mut out = Vec::with_capacity(person.len() + name.len() + email.len());
        out.extend_from_slice(name);
        out.extend_from_slice(b" <");
        out.extend_from_slice(email);
        out.push(b'>');
        // git splices over `>` too: one byte past the email, whatever it is.
        out.extend_from_slice(person.get(ident.mail_end + 1..).unwrap_or_default());
        Some(out)
    }
}

/// git's `git_parse_maybe_bool`, for `mailmap <bool>`: empty is false; `true`/`yes`/`on`, `false`/`no`/`off` in
/// any case; else an `int` (with a `k`, `m` or `g` unit), true unless zero. `None`: not a boolean.
pub(crate) fn parse_maybe_bool(text: &[u8]) -> Option<bool> {
    let word = |words: [&[u8]; 3]| words.iter().any(|w| text.eq_ignore_ascii_case(w));
    if text.is_empty() || word([b"false", b"no", b"off"]) {
        return Some(false);
    }
    if word([b"true", b"yes", b"on"]) {
        return Some(true);
    }
    // git_parse_int: strtoimax, then a unit, then the product must fit an int.
    let converted = crate::git_compat::strtoumax::strtoumax_errno(text, 0)?;
    let negative = text.iter().find(|b| !b.is_ascii_whitespace() && **b != 0x0b) == Some(&b'-');
    let magnitude = if negative { converted.value.wrapping_neg() } else { converted.value };
    let factor: u64 = match text[converted.end..].to_ascii_lowercase().as_slice() {
        b"" => 1,
        b"k" => 1 << 10,
        b"m" => 1 << 20,
        b"g" => 1 << 30,
        _ => return None,
    };
    (!converted.overflowed && magnitude <= i32::MAX as u64 / factor).then_some(magnitude != 0)
}

/// The parts of git's `split_ident_line` that the mailmap needs.
struct Ident {
    name_end: usize,
    mail_begin: usize,
    mail_end: usize,
}

/// git's `split_ident_line`, up to the email: the name runs from the start to the last non-space before `<`.
fn split_ident(person: &[u8]) -> Option<Ident> {
    let mail_begin = memchr::memchr(b'<', person)? + 1;
    let name_end = person[..mail_begin - 1].iter().rposition(|b| !is_git_space(*b)).map_or(0, |i| i + 1);
    let mail_end = mail_begin + memchr::memchr(b'>', &person[mail_begin..])?;
    Some(Ident { name_end, mail_begin, mail_end })
}

/// git's `isspace` (its own ctype table): space, tab, LF and CR only.
fn is_git_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// git's `read_mailmap_file`; `no_follow` for `.mailmap` in the work tree (git's `MAILMAP_NOFOLLOW`). Only a
/// refusal to open the file is an error.
fn read_file(
    files: &dyn MailmapFiles,
    path: &Path,
    no_follow: bool,
    messages: Messages<'_>,
    snapshot: &mut gix_mailmap::Snapshot,
) -> Result<(), MailmapError> {
    let read = files.open(path, no_follow).and_then(|mut file| {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut bytes).map(|_| bytes).map_err(MailmapError::Io)
    });
    match read {
        Ok(bytes) => _ = snapshot.merge(gix_mailmap::parse_ignore_errors(&bytes)),
        Err(MailmapError::Io(err)) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(MailmapError::Io(err)) => {
            let path = Bytes(path.as_os_str().as_encoded_bytes());
            let why = crate::git_compat::strerror::strerror(&err);
            messages.write(format!("error: unable to open mailmap at {path}: {why}\n").as_bytes());
        }
        Err(refused @ MailmapError::Refused(_)) => return Err(refused),
    }
    Ok(())
}

/// git's `read_mailmap_blob`: a name that does not resolve is no mailmap; one that is not a blob is an error.
fn read_blob(name: &[u8], names: &mut Names<'_>, snapshot: &mut gix_mailmap::Snapshot) -> Result<(), MailmapError> {
    let resolved = match names.resolve(name) {
        Ok(resolved) => resolved,
        // A reference leading outside a `--root` daemon's root: the run dies, as for a mailmap file there.
        Err(NameError::Refused(message)) => return Err(MailmapError::Refused(message)),
        Err(_) => return Ok(()),
    };
    let messages = names.messages;
    match names.store.read(&resolved.id, names.resolver) {
        Ok(Some(object)) if object.kind == Kind::Blob => {
            // git reads the blob as a C string.
            let text = memchr::memchr(0, &object.data).map_or(&object.data[..], |nul| &object.data[..nul]);
            _ = snapshot.merge(gix_mailmap::parse_ignore_errors(text));
        }
        Ok(Some(_)) => messages.write(format!("error: mailmap is not a blob: {}\n", Bytes(name)).as_bytes()),
        _ => messages.write(format!("error: unable to read mailmap object at {}\n", Bytes(name)).as_bytes()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mailmap(text: &[u8]) -> Mailmap {
        Mailmap::from_snapshot(&gix_mailmap::Snapshot::from_bytes(text))
    }

    #[test]
    fn header_idents_are_rewritten_and_nothing_else() {
        let map = mailmap(b"Proper <proper@x> <old@x>\nOther <other@x> Named <named@x>\n");
        let commit =
            b"tree 1\nauthor A U Thor <OLD@x> 1 +0000\ncommitter Named  <named@x> 2 +0000\n\nauthor x <old@x>\n";
        let expected =
            b"tree 1\nauthor Proper <proper@x> 1 +0000\ncommitter Other <other@x> 2 +0000\n\nauthor x <old@x>\n";
        assert_eq!(map.apply(Kind::Commit, commit).as_deref(), Some(&expected[..]));
        assert_eq!(map.apply(Kind::Blob, commit), None);
        assert_eq!(map.apply(Kind::Commit, b"author Nobody <no@x> 1 +0000\n"), None);
    }

    #[test]
    fn booleans_parse_as_git_parse_maybe_bool() {
        for (text, expected) in [
            (&b""[..], Some(false)),
            (b"TRUE", Some(true)),
            (b"off", Some(false)),
            (b"0", Some(false)),
            (b"-1", Some(true)),
            (b"0x10k", Some(true)),
            (b"2g", None),
            (b"maybe", None),
            (b"1 ", None),
        ] {
            assert_eq!(parse_maybe_bool(text), expected, "{:?}", text.escape_ascii());
        }
    }

    #[test]
    fn a_name_only_entry_keeps_the_email_as_written() {
        let map = mailmap(b"Proper <old@x>\n");
        assert_eq!(
            map.apply(Kind::Tag, b"tagger T <OLD@X> 1 +0000\n").as_deref(),
            Some(&b"tagger Proper <OLD@X> 1 +0000\n"[..])
        );
    }
}
