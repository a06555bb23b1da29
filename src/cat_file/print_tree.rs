//! A tree as `git ls-tree` prints it, for `cat-file -p` of a tree.
use gix_object::TreeRefIter;

use super::names::NameError;
use crate::git_compat::quote::quote_c_style;

/// A tree as `git ls-tree <tree>` prints it: `<mode> SP <type> SP <id> TAB <path> LF` per entry, the path
/// quoted as `core.quotePath` says.
pub(crate) fn ls_tree(data: &[u8], hash: gix_hash::Kind, quote_path: bool) -> Result<Vec<u8>, NameError> {
    let mut out = Vec::with_capacity(data.len() * 2);
    for entry in TreeRefIter::from_bytes(data, hash) {
        let entry = entry.map_err(|_| NameError::Missing)?;
        let kind = entry.mode.kind();
        let type_name = match kind {
            gix_object::tree::EntryKind::Tree => "tree",
            gix_object::tree::EntryKind::Commit => "commit",
            _ => "blob",
        };
        out.extend_from_slice(format!("{:06o} {type_name} {}\t", kind as u32, entry.oid).as_bytes());
        quote_c_style(entry.filename, quote_path, &mut out);
        out.push(b'\n');
    }
    Ok(out)
}
