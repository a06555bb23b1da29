//! The prefix decoder (src/store/inflate_prefix.rs) against zlib on every object of the fixture repositories:
//! for every head length the store asks, its bytes must be zlib's, and it must answer for every stream git
//! wrote (leaving a stream to zlib is for damage and rare forms, never for git's own).
use std::fs;
use std::path::{Path, PathBuf};

use cat_blobd::fuzzing;

use crate::util::{build_with_script, fixtures_root};

/// Every `objects` directory under `root` (the repositories of a fixture script).
fn object_dirs(root: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(root).expect("read a fixture directory") {
        let path = entry.expect("dir entry").path();
        if !path.is_dir() {
            continue;
        }
        if path.file_name().is_some_and(|name| name == "objects") {
            found.push(path);
        } else {
            object_dirs(&path, found);
        }
    }
}

/// The hash of the repository whose object directory is `objects`.
fn hash_of(objects: &Path) -> gix_hash::Kind {
    let config = fs::read(objects.with_file_name("config")).unwrap_or_default();
    let sha256 = config.split(|b| *b == b'\n').any(|line| {
        let line: Vec<u8> = line.iter().filter(|b| !b.is_ascii_whitespace()).map(u8::to_ascii_lowercase).collect();
        line == b"objectformat=sha256"
    });
    if sha256 { gix_hash::Kind::Sha256 } else { gix_hash::Kind::Sha1 }
}

#[test]
fn every_fixture_objects_head_is_decoded_as_zlib_decodes_it() {
    let cat_file = build_with_script(
        concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/make-cat-file-fixtures.sh"),
        "cat-file-fixtures",
    );
    let mut dirs = Vec::new();
    object_dirs(fixtures_root(), &mut dirs);
    object_dirs(&cat_file, &mut dirs);
    dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/repo/objects"));
    let mut total = 0;
    for objects in &dirs {
        let (streams, answered) = fuzzing::inflate_prefix_objects(objects, hash_of(objects));
        assert_eq!(answered, streams, "{}: streams left to zlib", objects.display());
        total += streams;
    }
    assert!(total > 1000, "only {total} objects in {} object directories", dirs.len());
}
