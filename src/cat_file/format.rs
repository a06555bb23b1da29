//! `--batch=<format>`: literal text and `%(atom)`s, parsed once (git's `expand_format`, whose first pass
//! with `mark_query` decides what to look up for every object).
use crate::fatal::Bytes;
use crate::store::{Info, ObjectId};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Atom {
    ObjectName,
    ObjectType,
    ObjectSize,
    DiskSize,
    Rest,
    DeltaBase,
    ObjectMode,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(Vec<u8>),
    Atom(Atom),
}

/// A parsed format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    parts: Vec<Part>,
}

/// git's `strbuf_expand_bad_format`.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error("bad cat-file format: %{}", Bytes(.0))]
    Bad(Vec<u8>),
    #[error("bad cat-file format: element '{}' does not end in ')'", Bytes(.0))]
    Unterminated(Vec<u8>),
}

/// What an object's line says, besides its name.
pub struct Fields<'a> {
    pub id: &'a ObjectId,
    pub info: Option<&'a Info>,
    pub rest: Option<&'a [u8]>,
    /// The tree entry's mode, for a `<rev>:<path>` name.
    pub mode: Option<u32>,
}

impl Format {
    /// `%(objectname) %(objecttype) %(objectsize)`.
    pub fn default_format() -> Format {
        Format::parse(b"%(objectname) %(objecttype) %(objectsize)").expect("the default format is valid")
    }

    pub fn parse(mut input: &[u8]) -> Result<Format, FormatError> {
        let mut parts = Vec::new();
        let mut text = Vec::new();
        while let Some(percent) = memchr::memchr(b'%', input) {
            text.extend_from_slice(&input[..percent]);
            let after = &input[percent + 1..];
            if after.first() == Some(&b'%') || after.first() != Some(&b'(') {
                // `%%` is one `%`; a `%` not before `(` stays as it is.
                text.push(b'%');
                input = if after.first() == Some(&b'%') { &after[1..] } else { after };
                continue;
            }
            let Some(close) = memchr::memchr(b')', after) else {
                return Err(bad_element(after));
            };
            let atom = match &after[1..close] {
                b"objectname" => Atom::ObjectName,
                b"objecttype" => Atom::ObjectType,
                b"objectsize" => Atom::ObjectSize,
                b"objectsize:disk" => Atom::DiskSize,
                b"rest" => Atom::Rest,
                b"deltabase" => Atom::DeltaBase,
                b"objectmode" => Atom::ObjectMode,
                _ => return Err(bad_element(after)),
            };
            if !text.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut text)));
            }
            parts.push(Part::Atom(atom));
            input = &after[close + 1..];
        }
        text.extend_from_slice(input);
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        Ok(Format { parts })
    }

    fn uses(&self, atom: Atom) -> bool {
        self.parts.contains(&Part::Atom(atom))
    }

    /// Does the format need the object looked up at all? (Only `%(objectname)` and `%(rest)` do not.)
    pub fn needs_info(&self) -> bool {
        [Atom::ObjectType, Atom::ObjectSize, Atom::DiskSize, Atom::DeltaBase].iter().any(|a| self.uses(*a))
    }

    /// Does it need the size on disk or the delta base?
    pub fn needs_disk(&self) -> bool {
        self.uses(Atom::DiskSize) || self.uses(Atom::DeltaBase)
    }

    /// Does it have `%(rest)` (so input lines are split at the first whitespace)?
    pub fn has_rest(&self) -> bool {
        self.uses(Atom::Rest)
    }

    /// Appends the expanded format for one object to `out`. `info` is `None` only when
    /// [`Self::needs_info`] is false; fields not looked up print as git prints them unset.
    pub fn expand(&self, fields: &Fields<'_>, out: &mut Vec<u8>) {
        let hash = fields.id.kind();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.extend_from_slice(text),
                Part::Atom(Atom::ObjectName) => push_hex(fields.id, out),
                Part::Atom(Atom::ObjectType) => {
                    out.extend_from_slice(fields.info.map_or(&b""[..], |info| info.kind.as_bytes()))
                }
                Part::Atom(Atom::ObjectSize) => {
                    out.extend_from_slice(itoa::Buffer::new().format(fields.info.map_or(0, |i| i.size)).as_bytes())
                }
                Part::Atom(Atom::DiskSize) => {
                    out.extend_from_slice(itoa::Buffer::new().format(fields.info.map_or(0, |i| i.disk_size)).as_bytes())
                }
                Part::Atom(Atom::Rest) => out.extend_from_slice(fields.rest.unwrap_or_default()),
                Part::Atom(Atom::ObjectMode) => {
                    // git 2.55: the mode of a `<rev>:<path>` name, six octal digits; empty for other names.
                    if let Some(mode) = fields.mode {
                        out.extend_from_slice(format!("{mode:06o}").as_bytes());
                    }
                }
                Part::Atom(Atom::DeltaBase) => {
                    let base = fields.info.and_then(|i| i.delta_base).unwrap_or_else(|| ObjectId::null(hash));
                    push_hex(&base, out);
                }
            }
        }
    }
}

/// Appends `id` in lowercase hex, written straight into `out` (through `fmt`, a `String` per object was a tenth of
/// `--batch-all-objects --batch-check`'s instructions).
fn push_hex(id: &ObjectId, out: &mut Vec<u8>) {
    let len = id.kind().len_in_hex();
    let start = out.len();
    out.resize(start + len, 0);
    let _ = id.hex_to_buf(&mut out[start..]);
}

/// git's message quotes the format from the `%` on: up to and including `)`, or all of it without one.
fn bad_element(after_percent: &[u8]) -> FormatError {
    match memchr::memchr(b')', after_percent) {
        Some(close) => FormatError::Bad(after_percent[..=close].to_vec()),
        None => FormatError::Unterminated(after_percent.to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Kind;

    fn expand(format: &[u8], rest: Option<&[u8]>) -> Vec<u8> {
        let id = ObjectId::from_hex(b"ce013625030ba8dba906f756967f9e9ca394464a").unwrap();
        let info = Info { kind: Kind::Blob, size: 6, disk_size: 21, delta_base: None };
        let mut out = Vec::new();
        Format::parse(format)
            .unwrap()
            .expand(&Fields { id: &id, info: Some(&info), rest, mode: Some(0o100644) }, &mut out);
        out
    }

    #[test]
    fn atoms_and_literal_text() {
        assert_eq!(
            expand(b"%(objecttype) %(objectsize) %(objectsize:disk) [%(rest)] %% %x % %(objectmode)", Some(b"r s")),
            b"blob 6 21 [r s] % %x % 100644"
        );
        assert_eq!(expand(b"%(deltabase)", None), [b'0'; 40]);
        assert!(Format::parse(b"%(objectname)").unwrap().needs_info().eq(&false));
        assert!(Format::parse(b"%(deltabase)").unwrap().needs_disk());
    }

    #[test]
    fn unknown_atoms_are_fatal_as_in_git() {
        assert_eq!(Format::parse(b"x %(foo) y").unwrap_err().to_string(), "bad cat-file format: %(foo)");
    }
}
