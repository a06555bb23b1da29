//! Alternates: other object directories a repository borrows objects from (`objects/info/alternates`,
//! `GIT_ALTERNATE_OBJECT_DIRECTORIES`), followed recursively as git does.
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::git_compat::quote::unquote_c_style;

/// git stops following alternates deeper than this (`link_alt_odb_entries`: "nesting too deep").
const MAX_DEPTH: usize = 5;

/// The object directories to search, in git's order: `objects_dir` first, then each alternate followed by its
/// own alternates (depth first), then those from `GIT_ALTERNATE_OBJECT_DIRECTORIES`. Directories that do not
/// exist and repeats are left out.
pub(in crate::store) fn object_dirs(objects_dir: &Path, env_alternates: Option<&OsStr>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    add(objects_dir.to_path_buf(), 0, &mut dirs);
    if let Some(list) = env_alternates {
        for entry in list.as_bytes().split(|&b| b == b':').filter(|e| !e.is_empty()) {
            add(PathBuf::from(OsStr::from_bytes(entry)), 1, &mut dirs);
        }
    }
    dirs
}

fn add(dir: PathBuf, depth: usize, dirs: &mut Vec<PathBuf>) {
    let Ok(canonical) = dir.canonicalize() else { return };
    if dirs.contains(&canonical) {
        return;
    }
    dirs.push(canonical.clone());
    if depth >= MAX_DEPTH {
        return;
    }
    let Ok(list) = std::fs::read(canonical.join("info").join("alternates")) else {
        return;
    };
    for entry in entries(&list) {
        // Relative entries are relative to the object directory that names them.
        add(canonical.join(OsStr::from_bytes(&entry)), depth + 1, dirs);
    }
}

/// The directories an `objects/info/alternates` file lists, as written (relative ones are relative to the object
/// directory that holds the file).
pub(crate) fn entries(list: &[u8]) -> impl Iterator<Item = Vec<u8>> + '_ {
    list.split(|&b| b == b'\n').filter_map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() || line.starts_with(b"#") {
            return None;
        }
        // A line may be C-quoted (since git 2.11); one that does not unquote is taken as written.
        Some(match unquote_c_style(line) {
            Ok((unquoted, b"")) => unquoted,
            _ => line.to_vec(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_relative_and_nested_alternates_once_each() {
        let root = std::env::temp_dir().join(format!("cat-blobd-alt-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for name in ["a", "b", "c"] {
            std::fs::create_dir_all(root.join(name).join("objects/info")).unwrap();
        }
        let objects = |name: &str| root.join(name).join("objects");
        std::fs::write(objects("a").join("info/alternates"), "../../b/objects\n# comment\n\n").unwrap();
        let c = objects("c").canonicalize().unwrap();
        let a = objects("a").canonicalize().unwrap();
        std::fs::write(objects("b").join("info/alternates"), format!("{}\n{}\n", c.display(), a.display())).unwrap();
        let dirs = object_dirs(&objects("a"), None);
        let b = objects("b").canonicalize().unwrap();
        assert_eq!(dirs, vec![a, b, c]);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
