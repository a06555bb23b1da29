//! Whole scans over a repository shaped like a project's history and packed as a server packs it
//! (fixtures/make-history-fixture.sh: the newest version of each file and tree whole, older ones chained deltas up
//! to 50 deep, trees as deeply as blobs), against the installed git: every object's type and sizes
//! (`--batch-all-objects`, sorted and in pack order), and every blob and tree read in pack order through both
//! front ends, the order in which a base comes just before the deltas built on it.
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::cat_file::{ALL_ATOMS, lines};
use crate::util::case::{Case, Source};
use crate::util::cat_file::{Stderr, assert_same, run};
use crate::util::{CAT_BLOBD, build_with_script, cat_blob_stream, git, parse_responses};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/make-history-fixture.sh");

fn repo() -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| build_with_script(SCRIPT, "history-fixture")).join("history.git")
}

#[track_caller]
fn same(dir: &Path, args: &[&str], stdin: &[u8]) {
    let git = run("git", dir, args, stdin, &[]);
    let ours = run(CAT_BLOBD, dir, args, stdin, &[]);
    assert!(git.status.success(), "git cat-file {args:?}: {}", git.describe());
    assert_same(&format!("cat-file {args:?} on history.git"), &git, &ours, Stderr::Exact);
}

/// Every object, with `<type> <id>`, in pack order (`--unordered`).
fn objects_in_pack_order(dir: &Path) -> Vec<(String, String)> {
    let listing =
        git(dir, &["cat-file", "--batch-all-objects", "--unordered", "--batch-check=%(objecttype) %(objectname)"]);
    let listing = String::from_utf8(listing).expect("ascii");
    listing
        .lines()
        .map(|line| line.split_once(' ').expect("type and id"))
        .map(|(t, id)| (t.into(), id.into()))
        .collect()
}

/// The fixture is what the tests say it is: most trees and blobs are deltas, some chains are deep.
fn assert_history_shaped(dir: &Path) {
    let listing = git(dir, &["cat-file", "--batch-all-objects", "--batch-check=%(objecttype) %(deltabase)"]);
    let listing = String::from_utf8(listing).expect("ascii");
    for kind in ["tree", "blob"] {
        let all = listing.lines().filter(|line| line.starts_with(kind)).count();
        let deltas = listing.lines().filter(|line| line.starts_with(kind) && !line.ends_with(&"0".repeat(40))).count();
        assert!(all > 500 && deltas * 3 > all, "{kind}: {deltas} deltas of {all}");
    }
}

/// Type, size, size on disk and delta base of every object, sorted by id and in pack order: the sizes of deltas
/// come from their delta headers and the types from the bottom of their chains.
#[test]
fn all_objects_of_deep_chains_like_git() {
    let dir = repo();
    assert_history_shaped(&dir);
    for args in [
        &["--batch-all-objects", ALL_ATOMS][..],
        &["--batch-all-objects", "--unordered", ALL_ATOMS],
        &["--batch-all-objects", "--batch-check=%(objectname) %(objecttype) %(objectsize) %(objectsize:disk)"],
        &["--batch-all-objects", "--batch-check=%(objecttype)"],
        &["--batch-all-objects", "--unordered", "--batch-check=%(objectsize)"],
    ] {
        same(&dir, args, b"");
    }
}

/// Every blob, then every tree, in pack order through `cat-file --batch` and `--batch-check`, and every blob
/// through `cat-blob`: each base comes just before the deltas built on it.
#[test]
fn pack_order_scan_of_deep_chains_like_git() {
    let dir = repo();
    let objects = objects_in_pack_order(&dir);
    let of = |kind: &str| objects.iter().filter(|(t, _)| t == kind).map(|(_, id)| id.clone()).collect::<Vec<_>>();
    let (blobs, trees) = (of("blob"), of("tree"));
    for ids in [&blobs, &trees] {
        same(&dir, &["--batch", "--buffer"], &lines(ids, b'\n'));
        same(&dir, &["--batch-check=%(objectname) %(objectsize)"], &lines(ids, b'\n'));
    }
    let source = Source::Extra { objects: vec![dir.join("objects")], sha256: false };
    let git =
        Case::new("every blob of history.git in pack order", source).raw_stream(cat_blob_stream(&blobs)).expect(0, "");
    assert_eq!(parse_responses(&git.fd3).len(), blobs.len(), "git answered every request");
}
