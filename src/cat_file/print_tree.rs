//! A tree as `git ls-tree` prints it, for `cat-file -p` of a tree.
use crate::git_compat::quote::quote_c_style;
use crate::git_compat::tree_entry::{Malformed, TreeDesc, object_type};

/// A tree as `git ls-tree <tree>` prints it: `<mode> SP <type> SP <id> TAB <path> LF` per entry (tree-walk's
/// canonical modes), the path quoted as `core.quotePath` says. Damage stops it where git dies, with what git
/// printed before in `out`.
pub(crate) fn ls_tree(data: &[u8], hash: gix_hash::Kind, quote_path: bool, out: &mut Vec<u8>) -> Result<(), Malformed> {
    out.reserve(data.len() * 2);
    let entries = TreeDesc::new(data, hash);
    entries.check_first()?;
    for entry in entries {
        let entry = entry?;
        let type_name = object_type(entry.mode);
        out.extend_from_slice(format!("{:06o} {type_name} {}\t", entry.mode, entry.id).as_bytes());
        quote_c_style(entry.name, quote_path, out);
        out.push(b'\n');
    }
    Ok(())
}
