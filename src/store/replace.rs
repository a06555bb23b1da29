//! Replace refs (`refs/replace/<id>`, loose and packed): git reads the replacement wherever it reads an
//! object from the repository, and so do we. `GIT_NO_REPLACE_OBJECTS` or `core.useReplaceRefs=false` turn
//! them off; `GIT_REPLACE_REF_BASE` moves them.
use std::collections::HashMap;
use std::path::Path;

use super::ObjectId;

/// git's `MAXREPLACEDEPTH`: a replacement of a replacement … at most this deep.
const MAX_DEPTH: usize = 5;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplaceError {
    #[error("replace depth too high for object {0}")]
    TooDeep(ObjectId),
}

/// Original id → replacement id.
#[derive(Debug, Default, Clone)]
pub struct Replacements {
    map: HashMap<ObjectId, ObjectId>,
}

impl Replacements {
    /// Reads the replace refs of the repository whose shared git directory is `common_dir`.
    pub fn read(common_dir: &Path, base: &str, hash: gix_hash::Kind) -> Replacements {
        let mut map = HashMap::new();
        let base = if base.ends_with('/') { base.to_owned() } else { format!("{base}/") };
        if let Ok(packed) = std::fs::read(common_dir.join("packed-refs")) {
            for line in packed.split(|&b| b == b'\n') {
                let Some((target, name)) = split_ref_line(line) else { continue };
                if let Some(original) = name.strip_prefix(base.as_bytes()) {
                    insert(&mut map, original, target, hash);
                }
            }
        }
        // Loose refs override packed ones.
        let mut stack = vec![(common_dir.join(&base), Vec::new())];
        while let Some((dir, prefix)) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let name = [&prefix[..], entry.file_name().as_encoded_bytes()].concat();
                let path = entry.path();
                if path.is_dir() {
                    let mut nested = name;
                    nested.push(b'/');
                    stack.push((path, nested));
                } else if let Ok(content) = std::fs::read(&path) {
                    insert(&mut map, &name, content.trim_ascii(), hash);
                }
            }
        }
        Replacements { map }
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The object to read for `id` (git's `lookup_replace_object`).
    pub fn resolve(&self, id: &ObjectId) -> Result<ObjectId, ReplaceError> {
        let mut current = *id;
        for _ in 0..MAX_DEPTH {
            match self.map.get(&current) {
                Some(next) => current = *next,
                None => return Ok(current),
            }
        }
        Err(ReplaceError::TooDeep(*id))
    }
}

/// `<hex> <refname>` from packed-refs; comments and peeled (`^`) lines are not refs.
fn split_ref_line(line: &[u8]) -> Option<(&[u8], &[u8])> {
    if line.starts_with(b"#") || line.starts_with(b"^") {
        return None;
    }
    let space = memchr::memchr(b' ', line)?;
    Some((&line[..space], &line[space + 1..]))
}

/// Keeps a replace ref whose name and target are full ids of the repository's hash (git warns about and
/// skips others).
fn insert(map: &mut HashMap<ObjectId, ObjectId>, original: &[u8], target: &[u8], hash: gix_hash::Kind) {
    let parse = |hex: &[u8]| (hex.len() == hash.len_in_hex()).then(|| ObjectId::from_hex(hex).ok()).flatten();
    if let (Some(original), Some(target)) = (parse(original), parse(target)) {
        map.insert(original, target);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> ObjectId {
        ObjectId::from_bytes_or_panic(&[n; 20])
    }

    #[test]
    fn follows_chains_and_stops_cycles() {
        let mut r = Replacements::default();
        r.map.insert(id(1), id(2));
        r.map.insert(id(2), id(3));
        assert_eq!(r.resolve(&id(1)), Ok(id(3)));
        assert_eq!(r.resolve(&id(9)), Ok(id(9)));
        r.map.insert(id(3), id(1));
        assert_eq!(r.resolve(&id(1)), Err(ReplaceError::TooDeep(id(1))));
    }

    #[test]
    fn reads_loose_over_packed() {
        let dir = std::env::temp_dir().join(format!("cat-blobd-replace-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("refs/replace")).unwrap();
        let (a, b, c) = (id(1).to_string(), id(2).to_string(), id(3).to_string());
        std::fs::write(
            dir.join("packed-refs"),
            format!("# pack-refs with: peeled\n{b} refs/replace/{a}\n^{c}\n{c} refs/heads/x\n"),
        )
        .unwrap();
        let r = Replacements::read(&dir, "refs/replace/", gix_hash::Kind::Sha1);
        assert_eq!(r.resolve(&id(1)), Ok(id(2)));
        std::fs::write(dir.join("refs/replace").join(&a), format!("{c}\n")).unwrap();
        let r = Replacements::read(&dir, "refs/replace", gix_hash::Kind::Sha1);
        assert_eq!(r.resolve(&id(1)), Ok(id(3)));
        assert_eq!(r.resolve(&id(3)), Ok(id(3)));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
