//! `<rev>:<path>` with `--follow-symlinks` (git's `get_tree_entry_follow_symlinks`): walk the path through
//! the tree, replacing each symlink met by its target, relative to the directory holding it, `..` going up
//! the directories walked; at most 40 links. gix has no such walk, so this follows git's loop step by step.
use gix_hash::ObjectId;
use gix_object::Kind;

use super::error::NameError;
use super::walk;
use crate::git_compat::tree_entry::{S_IFDIR, S_IFLNK, S_IFMT, S_IFREG};
use crate::store::{Resolver, Store};

/// git's `GET_TREE_ENTRY_FOLLOW_SYMLINKS_MAX_LINKS`.
const MAX_LINKS: usize = 40;

/// Where the walk ended, as git's `get_oid_result` says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Followed {
    Found(ObjectId, u32),
    /// A symlink led outside the tree (absolute, or `..` above the root): git answers `symlink <path>`.
    OutOfTree(Vec<u8>),
    Missing,
    Dangling,
    Loop,
    NotDir,
}

/// One directory of the walk: its id and its entries.
struct Dir {
    id: ObjectId,
    data: crate::store::Data,
}

/// Walks `path` from the tree that `start` names (a tree, or a commit or tag leading to one).
pub(crate) fn follow(
    store: &Store,
    resolver: &mut Resolver,
    start: ObjectId,
    path: &[u8],
) -> Result<Followed, NameError> {
    let mut name = path.to_vec();
    let mut parents: Vec<Dir> = Vec::new();
    let mut pending = Some(start);
    let mut outcome = Followed::Missing;
    let mut links_left = MAX_LINKS;
    loop {
        if let Some(id) = pending.take() {
            let Some(root) = enter(store, resolver, id, &mut parents)? else { return Ok(outcome) };
            if name.is_empty() {
                return Ok(Followed::Found(root, S_IFDIR.into()));
            }
            if parents.last().is_some_and(|dir| dir.data.is_empty()) {
                return Ok(outcome);
            }
        }
        let (first, remainder) = split_first(&mut name);
        if first == b".." {
            if parents.len() == 1 {
                return Ok(Followed::OutOfTree(name));
            }
            parents.pop();
            name = remainder.unwrap_or_default();
            continue;
        }
        if first.is_empty() {
            let dir = parents.last().expect("the root is walked");
            return Ok(Followed::Found(dir.id, S_IFDIR.into()));
        }
        let dir = parents.last().expect("the root is walked");
        let Some((id, mode)) = find_entry(&dir.data, store.object_hash(), &first)? else { return Ok(outcome) };
        match mode & S_IFMT {
            S_IFDIR => match remainder {
                None => return Ok(Followed::Found(id, mode.into())),
                Some(rest) => {
                    name = rest;
                    pending = Some(id);
                }
            },
            S_IFREG if remainder.is_some() => return Ok(Followed::NotDir),
            S_IFREG => return Ok(Followed::Found(id, mode.into())),
            S_IFLNK => {
                if links_left == 0 {
                    return Ok(Followed::Loop);
                }
                links_left -= 1;
                // From here on, a path that leads nowhere is a dangling link.
                outcome = Followed::Dangling;
                let Some(target) = store.read(&id, resolver)? else { return Ok(outcome) };
                match replace_link(&target.data, remainder) {
                    Ok(next) => name = next,
                    Err(out_of_tree) => return Ok(out_of_tree),
                }
            }
            // git's loop never ends on a gitlink in the path; we say it is missing.
            _ => return Ok(outcome),
        }
    }
}

/// Reads the tree that `id` leads to (git's `read_object_with_reference` to a tree) onto the walk's stack.
fn enter(
    store: &Store,
    resolver: &mut Resolver,
    id: ObjectId,
    parents: &mut Vec<Dir>,
) -> Result<Option<ObjectId>, NameError> {
    let Some(root) = walk::peel_to_kind(store, resolver, id, Kind::Tree)? else { return Ok(None) };
    let data = store.read(&root, resolver)?.map(|object| object.data).unwrap_or_default();
    parents.push(Dir { id: root, data });
    Ok(Some(root))
}

/// Drops the leading slashes of `name` (a link to `a//b`) and splits off its first component.
fn split_first(name: &mut Vec<u8>) -> (Vec<u8>, Option<Vec<u8>>) {
    let slashes = name.iter().take_while(|&&b| b == b'/').count();
    name.drain(..slashes);
    match memchr::memchr(b'/', name) {
        Some(slash) => (name[..slash].to_vec(), Some(name[slash + 1..].to_vec())),
        None => (name.clone(), None),
    }
}

/// The entry `name` (one component) of a tree, with its canonical mode, found as git finds it
/// (`find_tree_entry`): damage on the way fails the walk.
fn find_entry(tree: &[u8], hash: gix_hash::Kind, name: &[u8]) -> Result<Option<(ObjectId, u16)>, NameError> {
    match walk::find_tree_entry(tree, hash, name)? {
        walk::Step::Found(id, mode) => Ok(Some((id, mode))),
        walk::Step::Descend(..) | walk::Step::NotFound => Ok(None),
    }
}

/// The path to walk next when a link to `target` stands where the walk is, `remainder` still to go; an absolute
/// target leaves the tree.
fn replace_link(target: &[u8], remainder: Option<Vec<u8>>) -> Result<Vec<u8>, Followed> {
    if target.first() == Some(&b'/') {
        return Err(Followed::OutOfTree(target.to_vec()));
    }
    let mut next = target.to_vec();
    if let Some(rest) = remainder {
        next.push(b'/');
        next.extend_from_slice(&rest);
    }
    Ok(next)
}
