//! One object named on the command line (git's `cat_one_file`): `-t`, `-s`, `-e`, `-p` and `<type> <object>`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use gix_object::Kind;

use super::args::{Args, CmdMode};
use super::die::Die;
use super::mailmap::Mailmap;
use super::names::{NameError, Names, Resolved};
use super::output::Output;
use super::{CatFileError, print_tree};
use crate::store::{Damage, Data, Info, Object, ObjectId, ReadError};

pub(crate) fn run(
    args: &Args,
    mut names: Names<'_>,
    quote_path: bool,
    mailmap: Option<&Mailmap>,
    out: &mut Output<'_>,
) -> Result<u8, CatFileError> {
    let name = args.rest.last().expect("checked: one object name");
    let id = resolve_or_die(&mut names, name)?.id;
    let store = names.store;
    let info = || -> Result<Info, CatFileError> {
        store.info(&id, false)?.ok_or_else(|| CatFileError::Git(Die::NoObjectInfo))
    };
    if let Err(ReadError { damage: Damage::UnknownType { header_too_long: true, .. }, .. }) = store.info(&id, false)
        && matches!(args.mode, Some(CmdMode::Type | CmdMode::Size | CmdMode::Print))
    {
        // git reads 32 header bytes at most.
        let message = format!("error: header for {id} too long, exceeds 32 bytes\n");
        names.messages.write(message.as_bytes());
        return Err(match args.mode {
            Some(CmdMode::Type | CmdMode::Size) => CatFileError::Git(Die::NoObjectInfo),
            _ => CatFileError::Git(Die::NotValidName(name.to_vec())),
        });
    }
    match args.mode {
        Some(CmdMode::Exists) => return Ok(if store.exists(&id)? { 0 } else { 1 }),
        Some(CmdMode::Type) => out.push(format!("{}\n", info()?.kind).into_bytes()),
        Some(CmdMode::Size) => {
            let size = mapped_size(&mut names, id, info()?, mailmap)?;
            out.push(format!("{size}\n").into_bytes());
        }
        Some(CmdMode::Print) => {
            // git asks for the type first: an unknown one is fatal before anything is read.
            store.info(&id, false)?;
            let not_valid = || CatFileError::Git(Die::NotValidName(name.to_vec()));
            let object = store.read(&id, names.resolver)?.ok_or_else(not_valid)?;
            if object.kind == Kind::Tree {
                // git prints a tree by running `ls-tree <name>`, which resolves the name again and says again
                // what it said on the way (a reflog's warnings, an ambiguous refname).
                names.resolve(name)?;
                let mut listing = Vec::new();
                let listed = print_tree::ls_tree(&object.data, store.object_hash(), quote_path, &mut listing);
                out.push(listing);
                listed.map_err(NameError::from)?;
            } else {
                push_mapped(out, mailmap, object.kind, object.data);
            }
        }
        _ => {
            let wanted = &args.rest[0];
            let kind = Kind::from_bytes(wanted).map_err(|_| CatFileError::Git(Die::InvalidType(wanted.to_vec())))?;
            // git asks for the type first: an unknown one is fatal before anything is read.
            store.info(&id, false)?;
            let data =
                with_reference(&mut names, id, kind)?.ok_or_else(|| CatFileError::Git(Die::BadFile(name.to_vec())))?;
            push_mapped(out, mailmap, kind, data);
        }
    }
    Ok(0)
}

/// `-s`: the size from the header, or with the mailmap on, that of the commit or tag `-p` would print.
fn mapped_size(
    names: &mut Names<'_>,
    id: ObjectId,
    info: Info,
    mailmap: Option<&Mailmap>,
) -> Result<u64, CatFileError> {
    let Some(mailmap) = mailmap.filter(|_| matches!(info.kind, Kind::Commit | Kind::Tag)) else { return Ok(info.size) };
    let object = names.store.read(&id, names.resolver)?.ok_or_else(|| CatFileError::Git(Die::NoObjectInfo))?;
    Ok(mailmap.apply(object.kind, &object.data).map_or(info.size, |data| data.len() as u64))
}

/// An object's content for stdout, with the mailmap applied if there is one.
fn push_mapped(out: &mut Output<'_>, mailmap: Option<&Mailmap>, kind: Kind, data: Data) {
    match mailmap.and_then(|mailmap| mailmap.apply(kind, &data)) {
        Some(mapped) => out.push(mapped),
        None => out.push_shared(data),
    }
}

/// git's `get_oid_with_context` with `GET_OID_ONLY_TO_DIE`: a name that does not resolve is fatal, with
/// git's explanation.
fn resolve_or_die(names: &mut Names<'_>, name: &[u8]) -> Result<Resolved, CatFileError> {
    if name.starts_with(b":/") {
        // With GET_OID_ONLY_TO_DIE git does not search commit messages: `:/<text>` is an index path that a
        // path starting with '/' never names.
        return Err(CatFileError::Git(Die::NotValidName(name.to_vec())));
    }
    match names.resolve(name) {
        Ok(resolved) => Ok(resolved),
        // git's `diagnose_invalid_oid_path` looks for the path on disk first (lstat, from the current directory).
        Err(NameError::PathMissing { path, rev }) if names.files.on_disk(Path::new(OsStr::from_bytes(&path))) => {
            Err(CatFileError::Git(Die::OnDiskNotInRev { path, rev }))
        }
        Err(NameError::NotInIndex(path)) if names.files.on_disk(Path::new(OsStr::from_bytes(&path))) => {
            Err(CatFileError::Git(Die::OnDiskNotInIndex(path)))
        }
        Err(
            err @ (NameError::PathMissing { .. }
            | NameError::InvalidRev(_)
            | NameError::Unsupported { .. }
            | NameError::RelativePath
            | NameError::Reflog(_)
            | NameError::Branch(_)
            | NameError::NotInIndex(_)
            | NameError::NotAtStage { .. }
            | NameError::Read(_)
            | NameError::Tree(_)
            | NameError::Index(_)
            | NameError::Refused(_)),
        ) => Err(err.into()),
        Err(_) => Err(CatFileError::Git(Die::NotValidName(name.to_vec()))),
    }
}

/// `<type> <object>` (git's `read_object_with_reference`, and its shortcut for blobs behind a tag): follow
/// tags to their targets and commits to their trees until an object of `kind`.
fn with_reference(names: &mut Names<'_>, mut id: ObjectId, kind: Kind) -> Result<Option<Data>, CatFileError> {
    let store = names.store;
    loop {
        let Some(Object { kind: found, data }) = store.read(&id, names.resolver)? else { return Ok(None) };
        if found == kind {
            return Ok(Some(data));
        }
        let prefix: &[u8] = match found {
            Kind::Commit => b"tree ",
            Kind::Tag => b"object ",
            _ => return Ok(None),
        };
        let hex_len = store.object_hash().len_in_hex();
        let Some(hex) = data.strip_prefix(prefix).and_then(|rest| rest.get(..hex_len)) else { return Ok(None) };
        let Ok(next) = ObjectId::from_hex(hex) else { return Ok(None) };
        id = next;
    }
}
