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
use crate::util::{
    CAT_BLOBD, TempDir, assert_bytes_eq, assert_fatal_naming, build_with_script, cat_blob_stream, git, git_in,
    parse_responses, test_git_version,
};

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

/// Every object in an order unrelated to the pack's (sorted by the id's bytes read backwards), twice, through
/// `--batch-check`: each delta's type is found by a walk down its chain that stops at an entry an earlier walk
/// passed (the kind memo), and its size from its delta header; the second round asks only of remembered chains.
#[test]
fn random_order_types_of_deep_chains_like_git() {
    let dir = repo();
    let mut ids: Vec<String> = objects_in_pack_order(&dir).into_iter().map(|(_, id)| id).collect();
    ids.sort_by_key(|id| id.bytes().rev().collect::<Vec<u8>>());
    let twice = [&ids[..], &ids[..]].concat();
    same(&dir, &["--batch-check", "--buffer"], &lines(&twice, b'\n'));
    same(&dir, &["--batch-check=%(objecttype) %(objectsize) %(objectsize:disk)"], &lines(&ids, b'\n'));
}

/// filter-repo's `--analyze` format.
const ANALYZE: &str = "--batch-check=%(objectname) %(objecttype) %(objectsize) %(objectsize:disk)";

/// A copy of history.git that a test may change.
fn copy_of_history(label: &str) -> (TempDir, PathBuf) {
    let tmp = TempDir::new(label);
    let dir = tmp.path().join("history.git");
    let status = std::process::Command::new("cp").arg("-a").arg(repo()).arg(&dir).status().expect("cp");
    assert!(status.success(), "cp -a failed");
    (tmp, dir)
}

/// The pack files of `dir` with `extension`.
fn pack_files(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let listing = std::fs::read_dir(dir.join("objects/pack")).expect("pack dir").map(|e| e.expect("entry").path());
    listing.filter(|path| path.extension().is_some_and(|e| e == extension)).collect()
}

/// `--batch-all-objects` sorted and `--unordered`, in runs of answers over one pack read through its `.rev` file
/// and without it, over packs that share objects, with loose objects, and through an alternate: git's bytes.
#[test]
fn all_objects_over_one_pack_or_many_like_git() {
    let (tmp, dir) = copy_of_history("all-objects-shapes");
    // Sorted, the disk size and delta base of an object stored twice are those of the copy git's lookup finds
    // first, and git moves the pack it last found an object in to the front (its most-recently-used list).
    // cat-blobd follows that list over packs alone; with loose objects too it reads the newest pack's copy, so
    // those sorted answers leave the disk size and delta base out.
    let check = |dir: &Path, shape: &str| {
        let sorted = match shape.contains("loose") {
            true => "--batch-check=%(objectname) %(objecttype) %(objectsize)",
            false => "--batch-check=%(objectname) %(objecttype) %(objectsize) %(objectsize:disk) %(deltabase)",
        };
        for args in [&["--batch-all-objects", sorted][..], &["--batch-all-objects", "--unordered", ANALYZE]] {
            let git = run("git", dir, args, b"", &[]);
            let ours = run(CAT_BLOBD, dir, args, b"", &[]);
            assert!(git.status.success(), "git cat-file {args:?}: {}", git.describe());
            assert_same(&format!("cat-file {args:?}, {shape}"), &git, &ours, Stderr::Exact);
        }
    };
    assert_eq!(pack_files(&dir, "rev").len(), 1, "git wrote a .rev file");
    check(&dir, "one pack with its .rev");
    for rev in pack_files(&dir, "rev") {
        std::fs::remove_file(rev).expect("remove .rev");
    }
    check(&dir, "one pack without a .rev");
    // A second pack holding every third object again: duplicates across packs.
    let ids = String::from_utf8(git(&dir, &["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"]));
    let some: String = ids.expect("ascii").lines().step_by(3).map(|id| format!("{id}\n")).collect();
    let prefix = dir.join("objects/pack/pack");
    let first_pack = pack_files(&dir, "pack");
    git_in(&dir, &["pack-objects", "-q", prefix.to_str().expect("utf-8")], some.as_bytes());
    // The first pack a day older, so that git's starting order (newest first, by the second) is certain.
    let file = std::fs::File::options().write(true).open(&first_pack[0]).expect("open the first pack");
    file.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(86_400)).expect("set mtime");
    check(&dir, "two packs sharing objects");
    git_in(&dir, &["hash-object", "-w", "--stdin"], b"a loose blob of its own\n");
    check(&dir, "two packs sharing objects, and a loose object");
    let alt = tmp.path().join("alt.git");
    git_in(&alt, &["init", "-q", "--bare"], b"");
    std::fs::write(alt.join("objects/info/alternates"), format!("{}\n", dir.join("objects").display())).expect("write");
    git_in(&alt, &["hash-object", "-w", "--stdin"], b"the alternate's own blob\n");
    check(&alt, "an alternate (two packs sharing objects) and a loose object");
}

/// `--batch-all-objects` over three packs that share no object (each object in one of them, their ids
/// interleaved), without and with a multi-pack-index: the packs' indexes are merged, and walked in pack order,
/// with no seen-set; git's bytes, sizes on disk and delta bases included. With the index, `--unordered` lists the
/// packs in its order, and packs of one second in directory order, as git 2.55 does (2.47 lists them in reverse:
/// against it, the lines are compared sorted).
#[test]
fn all_objects_over_packs_sharing_nothing_like_git() {
    let (_tmp, dir) = copy_of_history("all-objects-disjoint");
    let ids = String::from_utf8(git(&dir, &["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"]));
    let ids: Vec<String> = ids.expect("ascii").lines().map(str::to_owned).collect();
    let old: Vec<PathBuf> = ["pack", "idx", "rev"].iter().flat_map(|ext| pack_files(&dir, ext)).collect();
    let prefix = dir.join("objects/pack/pack");
    for third in 0..3 {
        let some: String = ids.iter().skip(third).step_by(3).map(|id| format!("{id}\n")).collect();
        git_in(&dir, &["pack-objects", "-q", prefix.to_str().expect("utf-8")], some.as_bytes());
    }
    for file in old {
        std::fs::remove_file(file).expect("remove the first pack");
    }
    let packs = pack_files(&dir, "pack");
    assert_eq!(packs.len(), 3);
    // git orders packs by their modification time in whole seconds, newest first; those of one second in directory
    // order (2.55; 2.47 in the reverse).
    let set_mtimes = |seconds_apart: u64| {
        let now = std::time::SystemTime::now();
        for (n, pack) in packs.iter().enumerate() {
            let file = std::fs::File::options().write(true).open(pack).expect("open a pack");
            let age = std::time::Duration::from_secs(3600 + seconds_apart * n as u64);
            file.set_modified(now - age).expect("set a pack's mtime");
        }
    };
    let with_base = "--batch-check=%(objectname) %(objecttype) %(objectsize:disk) %(deltabase)";
    for shape in ["three packs of one second", "three packs", "three packs and a multi-pack-index"] {
        match shape {
            "three packs of one second" => set_mtimes(0),
            "three packs" => set_mtimes(10),
            _ => drop(git(&dir, &["multi-pack-index", "write"])),
        };
        for order in [&[][..], &["--unordered"]] {
            for format in [ANALYZE, with_base] {
                let args = [&["--batch-all-objects"], order, &[format]].concat();
                let git = run("git", &dir, &args, b"", &[]);
                let ours = run(CAT_BLOBD, &dir, &args, b"", &[]);
                assert!(git.status.success(), "git cat-file {args:?}: {}", git.describe());
                assert_eq!(git.stdout.iter().filter(|&&b| b == b'\n').count(), ids.len(), "git lists each object once");
                let what = format!("cat-file {args:?}, {shape}");
                let reversed_by_2_47 = shape.ends_with("index") || shape.ends_with("second");
                if reversed_by_2_47 && !order.is_empty() && test_git_version() < (2, 55) {
                    // git 2.55 walks the packs in the multi-pack-index's order, and those of one second in
                    // directory order, as cat-blobd does; 2.47 in the reverse. The same lines, then.
                    let sorted = |bytes: &[u8]| {
                        let mut lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
                        lines.sort_unstable();
                        lines.concat()
                    };
                    assert_bytes_eq(&what, &sorted(&git.stdout), &sorted(&ours.stdout));
                    assert_eq!((git.status.code(), &git.stderr), (ours.status.code(), &ours.stderr), "{what}");
                } else {
                    assert_same(&what, &git, &ours, Stderr::Exact);
                }
            }
        }
    }
}

/// Where the zlib stream of the pack entry at `offset` starts: after its type-and-size bytes and, for an
/// offset delta, its base offset.
fn zlib_start(pack: &[u8], offset: usize) -> usize {
    let mut at = offset;
    let kind = (pack[at] >> 4) & 7;
    while pack[at] & 0x80 != 0 {
        at += 1;
    }
    at += 1;
    if kind == 6 {
        while pack[at] & 0x80 != 0 {
            at += 1;
        }
        at += 1;
    }
    at
}

/// A delta whose zlib stream is damaged in the middle of a run of answers (the 300th object on, sorted and in
/// pack order): every answer before it exactly as git gives them for the intact pack, then one `fatal:` line
/// naming the object and the pack, status 128.
#[test]
fn all_objects_write_every_earlier_answer_before_a_damaged_object() {
    for unordered in [false, true] {
        let (_tmp, dir) = copy_of_history("all-objects-damage");
        let order: &[&str] = if unordered { &["--unordered"] } else { &[] };
        let args = [&["--batch-all-objects"], order, &[ANALYZE]].concat();
        let intact = run("git", &dir, &args, b"", &[]);
        let with_base = [&["cat-file", "--batch-all-objects"], order, &["--batch-check=%(objectname) %(deltabase)"]];
        let listing = String::from_utf8(git(&dir, &with_base.concat())).expect("ascii");
        let (at, victim) = listing
            .lines()
            .enumerate()
            .skip(300)
            .find(|(_, line)| !line.ends_with(&"0".repeat(40)))
            .map(|(at, line)| (at, line[..40].to_owned()))
            .expect("a delta after the 300th object");
        let pack_path = pack_files(&dir, "pack").pop().expect("one pack");
        let show = git_in(&dir, &["show-index"], &std::fs::read(pack_path.with_extension("idx")).expect("idx"));
        let show = String::from_utf8(show).expect("ascii");
        let offset: usize = show
            .lines()
            .find(|line| line.split(' ').nth(1) == Some(&victim))
            .and_then(|line| line.split(' ').next()?.parse().ok())
            .expect("the victim's offset");
        let mut bytes = std::fs::read(&pack_path).expect("read pack");
        let start = zlib_start(&bytes, offset);
        bytes[start] ^= 0xff;
        bytes[start + 1] ^= 0xff;
        std::fs::remove_file(&pack_path).expect("remove the read-only pack");
        std::fs::write(&pack_path, bytes).expect("write pack");
        let ours = run(CAT_BLOBD, &dir, &args, b"", &[]);
        let before: Vec<u8> = intact.stdout.split_inclusive(|&b| b == b'\n').take(at).flatten().copied().collect();
        let what = format!("cat-file {args:?} with {victim} damaged");
        assert_bytes_eq(&what, &before, &ours.stdout);
        let name = pack_path.file_name().expect("name").to_str().expect("utf-8");
        let stderr_only = crate::util::Output { stdout: Vec::new(), ..ours };
        assert_fatal_naming(&what, &stderr_only, &victim, name);
    }
}
