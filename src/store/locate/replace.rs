//! Replace refs (`refs/replace/<id>`, loose and packed): git reads the replacement wherever it reads an
//! object from the repository, and so do we. `GIT_NO_REPLACE_OBJECTS` or `core.useReplaceRefs=false` turn
//! them off; `GIT_REPLACE_REF_BASE` moves them.
use std::collections::HashMap;

use crate::refs::{FileError, Refs};
use crate::store::ObjectId;

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
    /// Reads the replace refs of the repository from `refs` (opened on its shared git directory), loose over
    /// packed, as gix-ref lists them: a sorted packed-refs file is searched for the prefix, so a repository with
    /// millions of other refs (a forge's `refs/pull/*`) costs no more to start than one without them, as in git.
    /// A ref whose name below `base` or whose target is not a full id of the repository's hash is skipped, as git
    /// skips it (with a warning); so is one that cannot be read. One that may not be read at all (leading outside
    /// a `--root` daemon's root) is the error.
    pub fn read(refs: &Refs<'_>, base: &str, hash: gix_hash::Kind) -> Result<Replacements, FileError> {
        let mut map = HashMap::new();
        let base = if base.ends_with('/') { base.to_owned() } else { format!("{base}/") };
        let listed = refs.prefixed(&base);
        if let Some(refused) = refs.take_refused() {
            return Err(refused);
        }
        for reference in listed {
            let (Some(original), gix_ref::Target::Object(target)) =
                (reference.name.as_bstr().strip_prefix(base.as_bytes()), &reference.target)
            else {
                continue;
            };
            let original = (original.len() == hash.len_in_hex()).then(|| ObjectId::from_hex(original).ok()).flatten();
            if let Some(original) = original.filter(|_| target.kind() == hash) {
                map.insert(original, *target);
            }
        }
        Ok(Replacements { map })
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
        let read = |base| {
            let refs = Refs::open(&dir, &dir, gix_hash::Kind::Sha1, crate::refs::Files::ByPath);
            Replacements::read(&refs, base, gix_hash::Kind::Sha1).unwrap()
        };
        let r = read("refs/replace/");
        assert_eq!(r.resolve(&id(1)), Ok(id(2)));
        std::fs::write(dir.join("refs/replace").join(&a), format!("{c}\n")).unwrap();
        let r = read("refs/replace");
        assert_eq!(r.resolve(&id(1)), Ok(id(3)));
        assert_eq!(r.resolve(&id(3)), Ok(id(3)));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
