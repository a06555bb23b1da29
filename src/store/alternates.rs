//! Alternates: other object directories a repository borrows objects from (`objects/info/alternates`,
//! `GIT_ALTERNATE_OBJECT_DIRECTORIES`), followed recursively as git does.
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// git stops following alternates deeper than this (`link_alt_odb_entries`: "nesting too deep").
const MAX_DEPTH: usize = 5;

/// The object directories to search, in git's order: `objects_dir` first, then each alternate followed by its
/// own alternates (depth first), then those from `GIT_ALTERNATE_OBJECT_DIRECTORIES`. Directories that do not
/// exist and repeats are left out.
pub fn object_dirs(objects_dir: &Path, env_alternates: Option<&OsStr>) -> Vec<PathBuf> {
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
    for line in list.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() || line.starts_with(b"#") {
            continue;
        }
        let entry = match unquote(line) {
            Some(unquoted) => unquoted,
            None => line.to_vec(),
        };
        // Relative entries are relative to the object directory that names them.
        add(canonical.join(OsStr::from_bytes(&entry)), depth + 1, dirs);
    }
}

/// An alternates line may be C-quoted (`"…"`, since git 2.11); returns `None` when it is not.
fn unquote(line: &[u8]) -> Option<Vec<u8>> {
    let inner = line.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    let mut out = Vec::with_capacity(inner.len());
    let mut bytes = inner.iter().copied();
    while let Some(b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let escaped = bytes.next()?;
        out.push(match escaped {
            b'a' => 7,
            b'b' => 8,
            b'f' => 12,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'v' => 11,
            b'\\' | b'"' => escaped,
            b'0'..=b'3' => {
                let (d2, d3) = (bytes.next()?, bytes.next()?);
                if !(b'0'..=b'7').contains(&d2) || !(b'0'..=b'7').contains(&d3) {
                    return None;
                }
                ((escaped - b'0') << 6) | ((d2 - b'0') << 3) | (d3 - b'0')
            }
            _ => return None,
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_lines_unquote() {
        assert_eq!(
            unquote(br#""/a b/\"q\"/\303\274""#),
            Some(b"/a b/\"q\"/\xc3\xbc".to_vec())
        );
        assert_eq!(unquote(b"/plain"), None);
    }

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
        std::fs::write(
            objects("b").join("info/alternates"),
            format!("{}\n{}\n", c.display(), a.display()),
        )
        .unwrap();
        let dirs = object_dirs(&objects("a"), None);
        let b = objects("b").canonicalize().unwrap();
        assert_eq!(dirs, vec![a, b, c]);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
