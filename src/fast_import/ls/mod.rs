//! `ls <dataref> <path>` at the top level (git's `parse_ls`, `parse_treeish_dataref`, `dereference`,
//! `load_tree`, `tree_content_get`, `print_ls`): resolve the tree-ish, parse the path, walk the trees, and format
//! the one response line.
//!
//! The order of the checks is git's, because it decides which error a bad line gets: the dataref is resolved
//! and the root tree parsed before the path is looked at; each subtree is read and parsed in full before the next
//! path component is looked at.
//!
//! Split in two for the engine: [`parse`] needs the stream's state (marks, the submodule rewrite map) and runs on
//! the front end's thread; [`answer`] needs only objects and may run on a resolver thread.
#[cfg(test)]
mod tests;
mod tree;

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use super::ObjectSource;
use crate::fast_import::dataref::parse_mark_ref;
use crate::fatal::Bytes;
use crate::git_compat::quote::{quote_c_style, unquote_c_style};
use crate::git_compat::tree_entry::{self, S_IFDIR};
use crate::store::{Kind, ObjectId, ReadError};
use tree::Tree;
pub(crate) use tree::TreeCache;

/// Configuration git honours when answering `ls`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LsOptions {
    /// `core.quotePath` (default true): quote bytes ≥ 0x80 in printed paths.
    pub quote_path: bool,
    /// `core.ignoreCase` (default false): compare path components ASCII-case-insensitively.
    pub ignore_case: bool,
}

impl Default for LsOptions {
    fn default() -> Self {
        LsOptions { quote_path: true, ignore_case: false }
    }
}

/// Why `ls` ends the stream. The texts are git's (≥ 2.52 wording); `.0` is the whole command line unless noted.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LsError {
    #[error("not in a commit: {}", Bytes(.0))]
    NotInCommit(Vec<u8>),
    #[error("no value after ':' in mark: {}", Bytes(.0))]
    NoMarkValue(Vec<u8>),
    #[error("missing space after mark: {}", Bytes(.0))]
    MissingSpaceAfterMark(Vec<u8>),
    #[error("mark :{0} not declared")]
    MarkNotDeclared(u64),
    #[error("invalid dataref: {}", Bytes(.0))]
    InvalidDataref(Vec<u8>),
    #[error("missing space after tree-ish: {}", Bytes(.0))]
    MissingSpaceAfterTreeish(Vec<u8>),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("object not found: {0}")]
    ObjectNotFound(ObjectId),
    #[error("not a tree-ish: {}", Bytes(.0))]
    NotATreeish(Vec<u8>),
    #[error("invalid SHA1 in commit: {}", Bytes(.0))]
    InvalidSha1InCommit(Vec<u8>),
    #[error("invalid SHA1 in tag: {}", Bytes(.0))]
    InvalidSha1InTag(Vec<u8>),
    /// Only possible through replace refs. git loops forever here; we stop.
    #[error("the tags and commits named by this tree-ish form a cycle (through replace refs?): {}", Bytes(.0))]
    PeelCycle(Vec<u8>),
    #[error("invalid path: {}", Bytes(.0))]
    InvalidPath(Vec<u8>),
    #[error("NUL in path: {}", Bytes(.0))]
    NulInPath(Vec<u8>),
    #[error("garbage after path: {}", Bytes(.0))]
    GarbageAfterPath(Vec<u8>),
    #[error("empty path component found in input")]
    EmptyPathComponent,
    /// A subtree that this stream wrote and that is not a tree (`.0` is its id).
    #[error("not a tree: {0}")]
    NotATree(ObjectId),
    /// A subtree that is missing or not a tree (`.0` is its id).
    #[error("can't load tree {0}")]
    CantLoadTree(ObjectId),
    /// A tree object git cannot parse (`.0` is its id).
    #[error("corrupt mode in {0}")]
    CorruptMode(ObjectId),
}

/// fast-import's internal "do not delta" bit, masked off when a mode is printed.
const NO_DELTA: u16 = 0o4000;

/// Answers `ls` whose arguments (after `ls `) are `arg`, on the command `line` (for messages). Returns the
/// response line, LF included.
pub(crate) fn ls(
    line: &[u8],
    arg: &[u8],
    objects: &mut dyn ObjectSource,
    trees: &TreeCache,
    options: &LsOptions,
) -> Result<Vec<u8>, LsError> {
    let (start, path_field) = parse(line, arg, objects)?;
    answer(line, start, path_field, objects, trees, options)
}

/// The part of `ls` that reads the stream's state: the object the tree-ish names, and the path field after it.
pub(crate) fn parse<'a>(
    line: &[u8],
    arg: &'a [u8],
    objects: &dyn ObjectSource,
) -> Result<(ObjectId, &'a [u8]), LsError> {
    // `ls "<path>"` reads the tree of the commit being built; at the top level there is none.
    if arg.first() == Some(&b'"') {
        return Err(LsError::NotInCommit(line.to_vec()));
    }
    parse_treeish_dataref(line, arg, objects)
}

/// The part of `ls` that reads objects only: peel `start` to a tree, parse `path_field`, walk, print.
pub(crate) fn answer(
    line: &[u8],
    start: ObjectId,
    path_field: &[u8],
    objects: &mut dyn ObjectSource,
    trees: &TreeCache,
    options: &LsOptions,
) -> Result<Vec<u8>, LsError> {
    let root = peel_to_tree(line, start, objects, trees)?;
    let path = parse_path(line, path_field)?;
    let found = tree_content_get(root, &path, objects, trees, options.ignore_case)?;
    Ok(print_ls(found, &path, options.quote_path))
}

/// git's `parse_treeish_dataref` up to the lookup: the object `arg` names and the path field after its SP.
fn parse_treeish_dataref<'a>(
    line: &[u8],
    arg: &'a [u8],
    objects: &dyn ObjectSource,
) -> Result<(ObjectId, &'a [u8]), LsError> {
    if arg.first() == Some(&b':') {
        let (mark, rest) = parse_mark_ref(arg).ok_or_else(|| LsError::NoMarkValue(line.to_vec()))?;
        let rest = rest.strip_prefix(b" ").ok_or_else(|| LsError::MissingSpaceAfterMark(line.to_vec()))?;
        let id = objects.mark(mark).ok_or(LsError::MarkNotDeclared(mark))?;
        Ok((id, rest))
    } else {
        let (id, rest) = objects.parse_oid(arg).ok_or_else(|| LsError::InvalidDataref(line.to_vec()))?;
        let rest = rest.strip_prefix(b" ").ok_or_else(|| LsError::MissingSpaceAfterTreeish(line.to_vec()))?;
        Ok((id, rest))
    }
}

/// git's `dereference` loop: follows tags (`object <hex>`) and commits (`tree <hex>`) until a tree, which is then
/// parsed (`load_tree` of the root). Like git's `get_oid_hex`, only the hex digits at the fixed offset are checked,
/// not the word before them nor what follows.
fn peel_to_tree(
    line: &[u8],
    start: ObjectId,
    objects: &mut dyn ObjectSource,
    trees: &TreeCache,
) -> Result<Arc<Tree>, LsError> {
    let mut id = start;
    let mut peeled = HashSet::new();
    loop {
        // git's object lookup never finds the null id.
        if id.is_null() {
            return Err(LsError::ObjectNotFound(id));
        }
        // A stream blob is read as the stream has it; any other id is the same object whatever the stream does.
        let cached = !objects.written_by_stream(&id);
        if cached && let Some(tree) = trees.get(&id) {
            return Ok(tree);
        }
        let next = match trees.peeled(&id).filter(|_| cached) {
            Some(next) => next,
            None => match peel_once(line, id, objects, trees)? {
                Peeled::Tree(tree) => return Ok(tree),
                Peeled::To(next) => next,
            },
        };
        if !peeled.insert(id) {
            return Err(LsError::PeelCycle(line.to_vec()));
        }
        id = next;
    }
}

/// One step of [`peel_to_tree`] that reads the object.
enum Peeled {
    Tree(Arc<Tree>),
    To(ObjectId),
}

/// Reads `id`: a tree is the end; a commit or tag names the next id (kept in `trees`).
fn peel_once(line: &[u8], id: ObjectId, objects: &mut dyn ObjectSource, trees: &TreeCache) -> Result<Peeled, LsError> {
    let hash = objects.object_hash();
    let object = objects.read(&id)?.ok_or(LsError::ObjectNotFound(id))?;
    let (offset, invalid): (usize, fn(Vec<u8>) -> LsError) = match object.kind {
        Kind::Tree => return parsed(id, object.data, hash, trees).map(Peeled::Tree),
        // A stream blob is read as a blob: only commits and tags of the repository come past here.
        Kind::Blob => return Err(LsError::NotATreeish(line.to_vec())),
        Kind::Commit => (b"tree ".len(), LsError::InvalidSha1InCommit),
        Kind::Tag => (b"object ".len(), LsError::InvalidSha1InTag),
    };
    let next = object
        .data
        .get(offset..offset + hash.len_in_hex())
        .filter(|hex| hex.iter().all(u8::is_ascii_hexdigit))
        .and_then(|hex| ObjectId::from_hex(hex).ok())
        .ok_or_else(|| invalid(line.to_vec()))?;
    trees.put_peeled(id, next);
    Ok(Peeled::To(next))
}

/// git's `parse_path_eol` for the field `"path"`: a C-quoted path, or else the rest of the line verbatim.
fn parse_path<'a>(line: &[u8], field: &'a [u8]) -> Result<Cow<'a, [u8]>, LsError> {
    if field.first() != Some(&b'"') {
        return Ok(Cow::Borrowed(field));
    }
    let (path, rest) = unquote_c_style(field).map_err(|_| LsError::InvalidPath(line.to_vec()))?;
    if path.contains(&0) {
        return Err(LsError::NulInPath(line.to_vec()));
    }
    if !rest.is_empty() {
        return Err(LsError::GarbageAfterPath(line.to_vec()));
    }
    Ok(Cow::Owned(path))
}

/// What a path names: its raw mode and id. Mode 0 (possible in a hand-made tree) prints as missing, like git.
type Leaf = Option<(u16, ObjectId)>;

/// git's `tree_content_get(root, path, leaf, allow_root=1)`.
///
/// An empty first component means the root itself, whatever follows (`""`, `/`, `/x`); an empty component
/// further down is an error. Only entries whose mode says directory are descended into; anything else in the
/// middle of the path makes it missing.
fn tree_content_get(
    root: Arc<Tree>,
    path: &[u8],
    objects: &mut dyn ObjectSource,
    trees: &TreeCache,
    ignore_case: bool,
) -> Result<Leaf, LsError> {
    let hash = objects.object_hash();
    let mut tree = root;
    let mut rest = path;
    let mut at_root = true;
    loop {
        let (component, below) = match memchr::memchr(b'/', rest) {
            Some(slash) => (&rest[..slash], Some(&rest[slash + 1..])),
            None => (rest, None),
        };
        if component.is_empty() {
            return if at_root { Ok(Some((S_IFDIR, tree.id))) } else { Err(LsError::EmptyPathComponent) };
        }
        let Some((mode, id)) = tree.find(component, ignore_case) else {
            return Ok(None);
        };
        let id = id.to_owned();
        match below {
            // git prints a directory whose id is null after `store_tree` wrote it: as the empty tree.
            None if is_dir(mode) && id.is_null() => return Ok(Some((mode, ObjectId::empty_tree(hash)))),
            None => return Ok(Some((mode, id))),
            Some(_) if !is_dir(mode) => return Ok(None),
            Some(below) => {
                tree = load_tree(id, objects, trees)?;
                rest = below;
                at_root = false;
            }
        }
    }
}

/// git's `print_ls`: `<mode> SP <type> SP <hex> HT <path> LF`, or `missing SP <path> LF`; the path is the one
/// requested (not the stored name), C-quoted.
fn print_ls(leaf: Leaf, path: &[u8], quote_path: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(100 + path.len());
    match leaf {
        // `{:06o} {kind} {id}\t` by hand: the formatting machinery was 2% of `ls`'s instructions (small-A).
        Some((mode, id)) if mode != 0 => {
            let mode = mode & !NO_DELTA;
            // Six octal digits hold any 16-bit mode.
            out.extend((0..6).rev().map(|digit| b'0' + ((mode >> (3 * digit)) & 7) as u8));
            out.push(b' ');
            out.extend_from_slice(tree_entry::object_type(mode).as_bytes());
            out.push(b' ');
            let hex_at = out.len();
            out.resize(hex_at + id.kind().len_in_hex(), 0);
            let _ = id.hex_to_buf(&mut out[hex_at..]);
            out.push(b'\t');
        }
        _ => out.extend_from_slice(b"missing "),
    }
    quote_c_style(path, quote_path, &mut out);
    out.push(b'\n');
    out
}

fn is_dir(mode: u16) -> bool {
    mode & tree_entry::S_IFMT == S_IFDIR
}

/// A tree read for `ls`, parsed in full and then kept in `trees`.
fn parsed(
    id: ObjectId,
    data: crate::store::Data,
    hash: gix_hash::Kind,
    trees: &TreeCache,
) -> Result<Arc<Tree>, LsError> {
    let tree = Arc::new(Tree::parse(id, data, hash).map_err(|_| LsError::CorruptMode(id))?);
    trees.put(Arc::clone(&tree));
    Ok(tree)
}

/// git's `load_tree` of a subtree: the null id is an empty tree; anything missing or not a tree cannot be
/// loaded.
fn load_tree(id: ObjectId, objects: &mut dyn ObjectSource, trees: &TreeCache) -> Result<Arc<Tree>, LsError> {
    if id.is_null() {
        return Ok(Arc::new(Tree::null(id)));
    }
    // Only stream blobs can be written by the stream here, and they are never trees.
    if objects.written_by_stream(&id) {
        return Err(LsError::NotATree(id));
    }
    if let Some(tree) = trees.get(&id) {
        return Ok(tree);
    }
    match objects.read(&id)? {
        Some(object) if object.kind == Kind::Tree => parsed(id, object.data, objects.object_hash(), trees),
        _ => Err(LsError::CantLoadTree(id)),
    }
}
