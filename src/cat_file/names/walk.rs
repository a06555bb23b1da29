//! Walking from one object to another as git's name resolution does (tags to their targets, commits to their
//! trees and parents, trees to their entries). gix-object parses every object; only git's peeling rules are
//! written here.
use gix_hash::ObjectId;
use gix_object::{CommitRefIter, Kind, TagRefIter};

use super::error::NameError;
use crate::git_compat::tree_entry::{Malformed, TreeDesc};
use crate::store::{Object, Resolver, Store};

/// The type of `id` (after replace refs), from headers only.
pub(crate) fn kind_of(store: &Store, id: &ObjectId) -> Result<Option<Kind>, NameError> {
    Ok(store.info(id, false)?.map(|info| info.kind))
}

fn read(store: &Store, resolver: &mut Resolver, id: &ObjectId) -> Result<Option<Object>, NameError> {
    Ok(store.read(id, resolver)?)
}

/// An object that gix-object cannot parse: git's parse_object fails on it the same way.
fn unparsable(id: &ObjectId, kind: Kind) -> NameError {
    NameError::Unparsable { id: *id, kind }
}

/// What a tag points at.
fn tag_target(store: &Store, object: &Object, id: &ObjectId) -> Result<ObjectId, NameError> {
    TagRefIter::from_bytes(&object.data, store.object_hash()).target_id().map_err(|_| unparsable(id, Kind::Tag))
}

/// Follows tags until an object that is not a tag (`<rev>^{}`).
pub(crate) fn peel_tags(store: &Store, resolver: &mut Resolver, mut id: ObjectId) -> Result<ObjectId, NameError> {
    loop {
        let object = read(store, resolver, &id)?.ok_or(NameError::Missing)?;
        if object.kind != Kind::Tag {
            return Ok(id);
        }
        id = tag_target(store, &object, &id)?;
    }
}

/// git's `peel_to_type`: tags to their targets, commits to their trees, until an object of `kind`; `None`
/// when the chain ends elsewhere.
pub(crate) fn peel_to_kind(
    store: &Store,
    resolver: &mut Resolver,
    id: ObjectId,
    kind: Kind,
) -> Result<Option<ObjectId>, NameError> {
    Ok(peel_or_dead_end(store, resolver, id, kind)?.and_then(Result::ok))
}

/// Like [`peel_to_kind`], but says where the chain ended: `Err(kind)` is the blob or tree it reached
/// instead (git's "expected … type, but the object dereferences to … type"); `None`, a missing object.
pub(crate) fn peel_or_dead_end(
    store: &Store,
    resolver: &mut Resolver,
    mut id: ObjectId,
    kind: Kind,
) -> Result<Option<Result<ObjectId, Kind>>, NameError> {
    loop {
        let Some(object) = read(store, resolver, &id)? else { return Ok(None) };
        if object.kind == kind {
            return Ok(Some(Ok(id)));
        }
        id = match object.kind {
            Kind::Tag => tag_target(store, &object, &id)?,
            Kind::Commit => CommitRefIter::from_bytes(&object.data, store.object_hash())
                .tree_id()
                .map_err(|_| unparsable(&id, Kind::Commit))?,
            other => return Ok(Some(Err(other))),
        };
    }
}

/// The commit `id` names, peeling tags (git's `lookup_commit_reference`).
fn commit(store: &Store, resolver: &mut Resolver, id: ObjectId) -> Result<Option<(ObjectId, Object)>, NameError> {
    let Some(id) = peel_to_kind_no_tree(store, resolver, id)? else { return Ok(None) };
    Ok(read(store, resolver, &id)?.map(|object| (id, object)))
}

/// Tags peeled to a commit; a commit never becomes its tree here.
fn peel_to_kind_no_tree(store: &Store, resolver: &mut Resolver, id: ObjectId) -> Result<Option<ObjectId>, NameError> {
    let id = peel_tags(store, resolver, id)?;
    Ok((kind_of(store, &id)? == Some(Kind::Commit)).then_some(id))
}

/// `<rev>^<n>`: the n-th parent (`^0`: the commit itself).
pub(crate) fn nth_parent(
    store: &Store,
    resolver: &mut Resolver,
    id: ObjectId,
    n: usize,
) -> Result<Option<ObjectId>, NameError> {
    let Some((id, object)) = commit(store, resolver, id)? else { return Ok(None) };
    if n == 0 {
        return Ok(Some(id));
    }
    Ok(CommitRefIter::from_bytes(&object.data, store.object_hash()).parent_ids().nth(n - 1))
}

/// `<rev>~<n>`: the n-th first-parent ancestor.
pub(crate) fn nth_ancestor(
    store: &Store,
    resolver: &mut Resolver,
    id: ObjectId,
    n: usize,
) -> Result<Option<ObjectId>, NameError> {
    let Some((mut id, _)) = commit(store, resolver, id)? else { return Ok(None) };
    for _ in 0..n {
        match nth_parent(store, resolver, id, 1)? {
            Some(parent) => id = parent,
            None => return Ok(None),
        }
    }
    Ok(Some(id))
}

/// `<rev>:<path>`: the entry at `path` in the tree of `id`, and its mode (git's `get_tree_entry`). An empty
/// path is the tree itself, with no mode (git leaves it unset). Like git, `dir/` names the directory, but an
/// empty component (`dir//file`, `/file`) or a `/` after a file names nothing.
pub(crate) fn lookup_path(
    store: &Store,
    resolver: &mut Resolver,
    id: ObjectId,
    mut path: &[u8],
) -> Result<Option<(ObjectId, Option<u32>)>, NameError> {
    let Some(mut current) = peel_to_kind(store, resolver, id, Kind::Tree)? else { return Ok(None) };
    if path.is_empty() {
        return Ok(Some((current, None)));
    }
    loop {
        let Some(tree) = read(store, resolver, &current)? else { return Ok(None) };
        if tree.kind != Kind::Tree {
            return Ok(None);
        }
        match find_tree_entry(&tree.data, store.object_hash(), path)? {
            Step::Found(entry, mode) => return Ok(Some((entry, Some(mode.into())))),
            Step::Descend(entry, rest) => {
                current = entry;
                path = &path[path.len() - rest..];
            }
            Step::NotFound => return Ok(None),
        }
    }
}

/// One step of git's `find_tree_entry`.
pub(super) enum Step {
    Found(ObjectId, u16),
    /// Into this subtree, with the last `usize` bytes of the path still to walk.
    Descend(ObjectId, usize),
    NotFound,
}

/// git's `find_tree_entry`: entries are compared with the start of `name` in tree order, stopping at the first
/// that sorts after it. An entry that does not decode fails the walk where git dies (see [`TreeDesc`]).
pub(super) fn find_tree_entry(data: &[u8], hash: gix_hash::Kind, name: &[u8]) -> Result<Step, Malformed> {
    let entries = TreeDesc::new(data, hash);
    entries.check_first()?;
    for entry in entries {
        let entry = entry?;
        let len = entry.name.len();
        if len > name.len() {
            continue;
        }
        match name[..len].cmp(entry.name) {
            std::cmp::Ordering::Greater => continue,
            std::cmp::Ordering::Less => break,
            std::cmp::Ordering::Equal => {}
        }
        let mode = entry.mode;
        if len == name.len() {
            return Ok(Step::Found(entry.id.to_owned(), mode));
        }
        if name[len] != b'/' {
            continue;
        }
        if !entry.is_dir() {
            break;
        }
        if len + 1 == name.len() {
            return Ok(Step::Found(entry.id.to_owned(), mode));
        }
        return Ok(Step::Descend(entry.id.to_owned(), name.len() - len - 1));
    }
    Ok(Step::NotFound)
}
