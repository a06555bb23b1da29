//! Corrupt input: damaged pack entries and loose objects in a copy of the `basic` fixture.
//!
//! git prints `error:` lines and answers `<oid> missing` (exit 0) when no intact copy exists; cat-blobd deliberately
//! differs (README, "Where it deliberately differs"): it dies with one `fatal:` line naming the object and where the damage is (pack file and
//! offset, or loose file), exit 128, after writing every earlier response in full. It never panics and never
//! presents damage as absence or as wrong bytes.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util::case::MISSING_ONE;
use crate::util::{
    Fixture, Run, TempDir, assert_bytes_eq, assert_fatal_naming, cat_blob_stream, clean_git_env, git, git_fast_import,
    loose_blobs,
};

/// A private copy of the `basic` git directory that a test may damage.
struct Damaged {
    _dir: TempDir,
    git_dir: PathBuf,
}

fn copy_basic() -> Damaged {
    let dir = TempDir::new("corrupt");
    let git_dir = dir.path().join("basic.git");
    let status = Command::new("cp").arg("-a").arg(Fixture::Basic.git_dir()).arg(&git_dir).status().expect("cp");
    assert!(status.success(), "cp -a failed");
    Damaged { _dir: dir, git_dir }
}

/// One entry of the (only) pack of `basic`, as read from the intact fixture.
#[derive(Clone, Debug)]
struct Entry {
    id: String,
    offset: u64,
    /// Where the next entry (or the trailer) starts.
    end: u64,
    size: u64,
    is_delta: bool,
}

/// The pack file of `basic` and its blob entries, sorted by offset.
fn blob_entries() -> (PathBuf, Vec<Entry>) {
    let pack_dir = Fixture::Basic.git_dir().join("objects/pack");
    let mut packs: Vec<PathBuf> = fs::read_dir(&pack_dir)
        .expect("pack dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "pack"))
        .collect();
    assert_eq!(packs.len(), 1, "basic has one pack");
    let pack = packs.pop().expect("pack");
    let idx = fs::File::open(pack.with_extension("idx")).expect("idx");
    let mut show_index = Command::new("git");
    clean_git_env(&mut show_index);
    let out = show_index.arg("show-index").stdin(idx).stderr(Stdio::inherit()).output().expect("show-index");
    assert!(out.status.success());
    let mut offsets: Vec<(u64, String)> = String::from_utf8(out.stdout)
        .expect("ascii")
        .lines()
        .map(|l| {
            let mut f = l.split(' ');
            (f.next().expect("offset").parse().expect("offset"), f.next().expect("id").to_owned())
        })
        .collect();
    offsets.sort();
    let check = git(
        &Fixture::Basic.git_dir(),
        &["cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype) %(objectsize) %(deltabase)"],
    );
    let mut info = std::collections::HashMap::new();
    for line in String::from_utf8(check).expect("ascii").lines() {
        let f: Vec<&str> = line.split(' ').collect();
        info.insert(
            f[0].to_owned(),
            (f[1] == "blob", f[2].parse::<u64>().expect("size"), f[3].bytes().any(|b| b != b'0')),
        );
    }
    let pack_len = fs::metadata(&pack).expect("pack").len();
    let mut entries = Vec::new();
    for (i, (offset, id)) in offsets.iter().enumerate() {
        let end = offsets.get(i + 1).map_or(pack_len - 20, |next| next.0);
        let (is_blob, size, is_delta) = info[id];
        if is_blob {
            entries.push(Entry { id: id.clone(), offset: *offset, end, size, is_delta });
        }
    }
    (pack, entries)
}

fn make_writable(path: &Path) {
    let mut perms = fs::metadata(path).expect("metadata").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    fs::set_permissions(path, perms).expect("chmod");
}

/// Overwrites `len` bytes at `at` with a pattern that differs from what is there.
fn flip_bytes(path: &Path, at: u64, len: usize) {
    make_writable(path);
    let mut bytes = fs::read(path).expect("read");
    for b in &mut bytes[at as usize..at as usize + len] {
        *b ^= 0xa5;
    }
    fs::write(path, bytes).expect("write");
}

/// Asks for `earlier` (intact objects), then `victim`, then `after`; expects every earlier response exactly as
/// git gives it for the intact fixture, then one `fatal:` line naming the victim and `place`, exit 128.
fn expect_fatal(what: &str, damaged: &Damaged, earlier: &[String], victim: &str, after: &str, place: &str) {
    let mut stream = cat_blob_stream(earlier);
    stream.extend_from_slice(&cat_blob_stream(&[victim, after]));
    let intact = git_fast_import(Fixture::Basic, &cat_blob_stream(earlier), true);
    assert!(intact.status.success(), "git on the intact fixture: {}", intact.describe());
    let ours = Run::cat_blobd().arg("--git-dir").arg(&damaged.git_dir).capture_fd3().stdin(stream).run();
    assert_fatal_naming(what, &ours, victim, place);
    assert_bytes_eq(&format!("{what}: responses before the damaged object"), &intact.fd3, &ours.fd3);
}

/// Intact requests to put before the damaged one: the loose blobs (the damage is in the pack) and a missing id.
fn loose_requests() -> Vec<String> {
    let mut earlier = loose_blobs(Fixture::Basic);
    earlier.insert(1, MISSING_ONE.to_owned());
    earlier
}

#[test]
fn truncated_pack() {
    let damaged = copy_basic();
    let (pack, entries) = blob_entries();
    let pack_len = fs::metadata(&pack).expect("pack").len();
    let cut = pack_len / 2;
    let victim = entries.iter().find(|e| e.offset > cut).expect("a blob past the cut");
    let pack_name = pack.file_name().expect("name").to_string_lossy().into_owned();
    let copy = damaged.git_dir.join("objects/pack").join(&pack_name);
    make_writable(&copy);
    fs::OpenOptions::new().write(true).open(&copy).expect("open pack").set_len(cut).expect("truncate");
    let earlier = loose_requests();
    expect_fatal("truncated pack", &damaged, &earlier, &victim.id, &earlier[0], &pack_name);
}

#[test]
fn flipped_bytes_in_a_compressed_packed_blob() {
    let damaged = copy_basic();
    let (pack, entries) = blob_entries();
    // A whole (non-delta) text blob whose zlib stream really compresses: corrupting it breaks inflate.
    let victim = entries
        .iter()
        .find(|e| !e.is_delta && e.size > 4000 && (e.end - e.offset) * 10 < e.size * 7)
        .expect("a compressed whole blob");
    let pack_name = pack.file_name().expect("name").to_string_lossy().into_owned();
    flip_bytes(&damaged.git_dir.join("objects/pack").join(&pack_name), (victim.offset + victim.end) / 2, 16);
    let earlier = loose_requests();
    expect_fatal("flipped bytes in a compressed blob", &damaged, &earlier, &victim.id, &earlier[0], &pack_name);
}

/// Random data is stored in zlib "stored" blocks, so flipped payload bytes still inflate; only the zlib
/// checksum (adler32) shows the damage. Serving the wrong bytes would be the worst possible answer.
#[test]
fn flipped_bytes_in_a_stored_packed_blob() {
    let damaged = copy_basic();
    let (pack, entries) = blob_entries();
    let victim = entries
        .iter()
        .find(|e| !e.is_delta && e.size >= 65537 && e.end - e.offset > e.size)
        .expect("an incompressible whole blob");
    let pack_name = pack.file_name().expect("name").to_string_lossy().into_owned();
    flip_bytes(&damaged.git_dir.join("objects/pack").join(&pack_name), (victim.offset + victim.end) / 2, 4);
    let earlier = loose_requests();
    expect_fatal("flipped bytes in a stored blob", &damaged, &earlier, &victim.id, &earlier[0], &pack_name);
}

#[test]
fn flipped_bytes_in_a_delta_entry() {
    let damaged = copy_basic();
    let (pack, entries) = blob_entries();
    let victim = entries.iter().find(|e| e.is_delta && e.end - e.offset >= 60).expect("a delta blob");
    let pack_name = pack.file_name().expect("name").to_string_lossy().into_owned();
    flip_bytes(&damaged.git_dir.join("objects/pack").join(&pack_name), (victim.offset + victim.end) / 2, 8);
    let earlier = loose_requests();
    expect_fatal("flipped bytes in a delta", &damaged, &earlier, &victim.id, &earlier[0], &pack_name);
}

fn loose_path(git_dir: &Path, id: &str) -> PathBuf {
    git_dir.join("objects").join(&id[..2]).join(&id[2..])
}

/// Packed blobs to put before a damaged loose object, plus a missing id.
fn packed_requests() -> Vec<String> {
    let (_, entries) = blob_entries();
    let mut earlier: Vec<String> = entries.iter().step_by(entries.len() / 8).map(|e| e.id.clone()).collect();
    earlier.insert(2, MISSING_ONE.to_owned());
    earlier
}

/// The largest loose blob (loose-big.bin, 200,000 random bytes).
fn largest_loose_blob() -> String {
    loose_blobs(Fixture::Basic)
        .into_iter()
        .max_by_key(|id| fs::metadata(loose_path(&Fixture::Basic.git_dir(), id)).expect("loose").len())
        .expect("loose blob")
}

#[test]
fn truncated_loose_object() {
    let damaged = copy_basic();
    let victim = largest_loose_blob();
    let path = loose_path(&damaged.git_dir, &victim);
    make_writable(&path);
    let len = fs::metadata(&path).expect("loose").len();
    fs::OpenOptions::new().write(true).open(&path).expect("open").set_len(len / 2).expect("truncate");
    let earlier = packed_requests();
    let place = format!("{}/{}", &victim[..2], &victim[2..]);
    expect_fatal("truncated loose object", &damaged, &earlier, &victim, &earlier[0], &place);
}

/// zlib-compresses `data` with python3 (no compression crate among the test's dependencies).
fn zlib(data: &[u8]) -> Vec<u8> {
    let mut child = Command::new("python3")
        .args(["-c", "import sys, zlib; sys.stdout.buffer.write(zlib.compress(sys.stdin.buffer.read()))"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let writer = crate::util::feed_stdin(&mut child, data.to_vec());
    let out = child.wait_with_output().expect("python3");
    writer.join().expect("writer");
    assert!(out.status.success());
    out.stdout
}

fn loose_header_mismatch(what: &str, stated: usize, actual: &[u8]) {
    let damaged = copy_basic();
    let victim = largest_loose_blob();
    let path = loose_path(&damaged.git_dir, &victim);
    make_writable(&path);
    let mut object = format!("blob {stated}\0").into_bytes();
    object.extend_from_slice(actual);
    fs::write(&path, zlib(&object)).expect("write loose object");
    let earlier = packed_requests();
    let place = format!("{}/{}", &victim[..2], &victim[2..]);
    expect_fatal(what, &damaged, &earlier, &victim, &earlier[0], &place);
}

#[test]
fn loose_object_shorter_than_its_header_says() {
    loose_header_mismatch("loose object shorter than its header", 1000, b"only a few bytes\n");
}

#[test]
fn loose_object_longer_than_its_header_says() {
    loose_header_mismatch("loose object longer than its header", 4, b"more than four bytes\n");
}
