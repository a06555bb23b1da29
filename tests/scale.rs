//! The store at scale, on small repositories built by fixtures/make-scale-fixtures.sh: lookups through a
//! multi-pack-index (one file, an incremental chain, one naming a deleted pack, one too short to read), packs it
//! does not cover, loose objects, a REF_DELTA whose base is in another pack, and entries past 2 GiB and 4 GiB of a
//! (sparse) pack. Each is compared with git, on both front ends.
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::util::cat_file::{Stderr, assert_same, run};
use crate::util::{CAT_BLOBD, Run, TempDir, assert_bytes_eq, build_with_script, git_in};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/make-scale-fixtures.sh");
const MISSING: &str = "0000000000000000000000000000000000000001";
const CHECK_FORMAT: &str = "--batch-check=%(objectname) %(objecttype) %(objectsize) %(objectsize:disk) %(deltabase)";

fn repo(name: &str) -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| build_with_script(SCRIPT, "scale-fixtures")).join(name)
}

/// Every object id git lists in `repo`, then one that is nowhere.
fn all_ids(repo: &Path) -> Vec<u8> {
    let mut ids = git_in(repo, &["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"], b"");
    assert!(ids.len() > 40, "{} lists objects", repo.display());
    ids.extend_from_slice(MISSING.as_bytes());
    ids.push(b'\n');
    ids
}

/// `cat-file --batch` and `--batch-check` (type, size, disk size, delta base) on every object, and `cat-blob` on
/// every blob, through git and through cat-blobd. `git_warns`: a message git prints on stderr and cat-blobd
/// does not; otherwise stderr is compared too.
fn same_as_git(name: &str, git_warns: Option<&str>) {
    let dir = repo(name);
    let ids = all_ids(&dir);
    for args in [&["--batch"][..], &[CHECK_FORMAT], &["--batch", "--buffer"]] {
        let mut git = run("git", &dir, args, &ids, &[]);
        let ours = run(CAT_BLOBD, &dir, args, &ids, &[]);
        if let Some(warning) = git_warns {
            let said = String::from_utf8_lossy(&git.stderr).into_owned();
            assert!(said.contains(warning), "{name}: git says {said:?}");
            git.stderr.clear();
        }
        assert_same(&format!("{name}: cat-file {args:?}"), &git, &ours, Stderr::Exact);
    }
    let blobs =
        git_in(&dir, &["cat-file", "--batch-all-objects", "--batch-check=cat-blob %(objectname) %(objecttype)"], b"");
    let stream: Vec<u8> = blobs
        .split(|&b| b == b'\n')
        .filter_map(|line| line.strip_suffix(b" blob"))
        .flat_map(|request| [request, b"\n"].concat())
        .collect();
    same_cat_blob(name, &dir, &stream, &[], git_warns);
}

/// `cat-blob` requests through git fast-import (in a throwaway repository whose alternates reach `dir`'s
/// objects: fast-import writes into its repository) and through cat-blobd.
fn same_cat_blob(name: &str, dir: &Path, stream: &[u8], env: &[(&str, &str)], git_warns: Option<&str>) {
    let oracle = TempDir::new("scale-oracle");
    let git_dir = oracle.path().join("oracle.git");
    git_in(oracle.path(), &["init", "-q", "--bare", git_dir.to_str().expect("UTF-8")], b"");
    let alternates = [dir.join("objects").as_os_str().as_encoded_bytes(), b"\n"].concat();
    std::fs::write(git_dir.join("objects/info/alternates"), alternates).expect("alternates");
    let (mut git, mut ours) = (Run::new("git").arg("fast-import"), Run::new(CAT_BLOBD));
    for (key, value) in env {
        (git, ours) = (git.env(key, value), ours.env(key, value));
    }
    let git = git.arg("--quiet").arg("--cat-blob-fd=1").env("GIT_DIR", &git_dir).stdin(stream.to_vec()).run();
    let ours = ours.arg("--quiet").env("GIT_DIR", dir).stdin(stream.to_vec()).run();
    assert_eq!(ours.status.code(), git.status.code(), "{name}: fast-import status\n{}", ours.describe());
    assert_bytes_eq(&format!("{name}: cat-blob responses"), &git.stdout, &ours.stdout);
    match git_warns {
        None => assert_bytes_eq(&format!("{name}: cat-blob stderr"), &git.stderr, &ours.stderr),
        Some(warning) => assert!(String::from_utf8_lossy(&git.stderr).contains(warning) && ours.stderr.is_empty()),
    }
}

#[test]
fn scale_objects_are_found_through_a_multi_pack_index_and_in_packs_it_does_not_cover() {
    same_as_git("midx.git", None);
}

#[test]
fn scale_an_incremental_multi_pack_index_chain_is_read_layer_by_layer() {
    same_as_git("midx-chain.git", None);
}

/// The midx names a pack that is gone: its objects are missing, the other packs it covers still answer.
#[test]
fn scale_a_multi_pack_index_naming_a_deleted_pack() {
    same_as_git("midx-deleted.git", None);
}

/// A midx too short to be one is ignored and every pack searched on its own. git also prints an `error:` line
/// about the file; cat-blobd ignores it silently (README, "Where it deliberately differs").
#[test]
fn scale_a_multi_pack_index_that_cannot_be_read_is_ignored() {
    same_as_git("midx-short.git", Some("is too small"));
}

/// Entries at offsets past 2 GiB and 4 GiB (the index's 64-bit table, and the midx's large-offset chunk), in a
/// sparse pack of 5 GiB that takes a few KiB of disk.
#[test]
fn scale_entries_past_2_and_4_gib_are_served_exactly() {
    same_as_git("large-offsets.git", None);
    same_as_git("large-offsets-midx.git", None);
}

/// A REF_DELTA whose base is in another pack: git reads bases from the delta's own pack only and answers
/// `missing`; cat-blobd builds the object from the base it finds elsewhere (README, "Where it deliberately
/// differs"). What it serves must hash to the id it was asked for.
#[test]
fn scale_a_ref_delta_on_a_base_in_another_pack_is_built_from_it() {
    let dir = repo("refdelta-cross.git");
    let listed = git_in(&dir, &["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"], b"");
    let mut served = 0;
    for id in listed.split(|&b| b == b'\n').filter(|id| !id.is_empty()) {
        let git = run("git", &dir, &["--batch"], &[id, b"\n"].concat(), &[]);
        let ours = run(CAT_BLOBD, &dir, &["--batch"], &[id, b"\n"].concat(), &[]);
        if git.stdout == ours.stdout {
            continue;
        }
        assert_bytes_eq("git cannot read it", &[id, b" missing\n"].concat(), &git.stdout);
        let header_end = ours.stdout.iter().position(|&b| b == b'\n').expect("a header");
        let content = &ours.stdout[header_end + 1..ours.stdout.len() - 1];
        let hashed = git_in(&dir, &["hash-object", "--stdin"], content);
        assert_bytes_eq("the content is the object asked for", &[id, b"\n"].concat(), &hashed);
        served += 1;
    }
    assert_eq!(served, 5, "the five REF_DELTA entries");
}

/// `core.bigFileThreshold` set to 1 MiB: blobs of 2.5 and 3 MiB (in a pack: the fixture keeps fast-import from
/// unpacking them to loose objects, which are read whole) are answered in pieces (the header with the first,
/// the LF with the last), with the same bytes as git's, on both front ends and with or without `--buffer`.
const SMALL_THRESHOLD: [(&str, &str); 3] =
    [("GIT_CONFIG_COUNT", "1"), ("GIT_CONFIG_KEY_0", "core.bigFileThreshold"), ("GIT_CONFIG_VALUE_0", "1m")];

#[test]
fn scale_blobs_over_the_big_file_threshold_are_streamed_with_gits_bytes() {
    let dir = repo("big.git");
    let ids = all_ids(&dir);
    for args in [&["--batch"][..], &["--batch", "--buffer"], &["--batch-command"]] {
        let input = match args[0] {
            "--batch-command" => ids.split(|&b| b == b'\n').flat_map(|id| [b"contents ", id, b"\n"].concat()).collect(),
            _ => ids.clone(),
        };
        let git = run("git", &dir, args, &input, &SMALL_THRESHOLD);
        let ours = run(CAT_BLOBD, &dir, args, &input, &SMALL_THRESHOLD);
        assert_same(&format!("big.git: cat-file {args:?}"), &git, &ours, Stderr::Exact);
        assert!(git.stdout.len() > 5 << 20, "the big blobs were answered");
    }
    let stream: Vec<u8> =
        ids.split(|&b| b == b'\n').take(3).flat_map(|id| [b"cat-blob ", id, b"\n"].concat()).collect();
    same_cat_blob("big.git", &dir, &stream, &SMALL_THRESHOLD, None);
}

/// A reader that goes away in the middle of a streamed blob: cat-blobd ends quietly (SIGPIPE), as git does.
#[test]
fn scale_a_reader_that_stops_halfway_through_a_streamed_blob_ends_it_quietly() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    let dir = repo("big.git");
    let ids = all_ids(&dir);
    let stream: Vec<u8> =
        ids.split(|&b| b == b'\n').take(3).flat_map(|id| [b"cat-blob ", id, b"\n"].concat()).collect();
    let mut command = Command::new(CAT_BLOBD);
    command.arg("--quiet").env("GIT_DIR", &dir).envs(SMALL_THRESHOLD);
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let wait = std::time::Duration::from_secs(60);
    let (status, stderr) = crate::util::hang_up_after_first_bytes(&mut child, stream, wait, "cat-blobd");
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status:?}: {}", String::from_utf8_lossy(&stderr));
    assert!(stderr.is_empty(), "{}", String::from_utf8_lossy(&stderr));
}

/// Damage inside a streamed blob (a flipped byte of its stored data: only the zlib checksum at its end tells) ends
/// the stream with `fatal:` naming the object and the pack, exit 128, after every earlier response in full. The
/// blob's own answer is cut before its last piece, so it is never complete with a wrong byte.
#[test]
fn scale_damage_in_a_streamed_blob_is_fatal_after_the_earlier_responses() {
    let copy = TempDir::new("scale-big-damaged");
    let dir = copy.path().join("big.git");
    let status = std::process::Command::new("cp").arg("-a").arg(repo("big.git")).arg(&dir).status().expect("cp");
    assert!(status.success());
    let listing = git_in(&dir, &["cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objectsize)"], b"");
    let listing = String::from_utf8(listing).expect("ASCII");
    let sized: Vec<(&str, u64)> =
        listing.lines().map(|l| l.split_once(' ').expect("id size")).map(|(id, n)| (id, n.parse().unwrap())).collect();
    let small = sized.iter().find(|(_, size)| *size < 100).expect("the small blob").0;
    let big = sized.iter().find(|(_, size)| *size == 3 << 20).expect("the random blob").0;
    let pack = std::fs::read_dir(dir.join("objects/pack"))
        .expect("pack dir")
        .map(|entry| entry.expect("entry").path())
        .find(|path| path.extension().is_some_and(|ext| ext == "pack"))
        .expect("a pack");
    let show = git_in(&dir, &["show-index"], &std::fs::read(pack.with_extension("idx")).expect("idx"));
    let offset: u64 = String::from_utf8(show)
        .expect("ASCII")
        .lines()
        .find(|line| line.contains(big))
        .and_then(|line| line.split(' ').next()?.parse().ok())
        .expect("the big blob's offset");
    let mut bytes = std::fs::read(&pack).expect("pack");
    bytes[offset as usize + (2 << 20)] ^= 0xff;
    std::fs::write(&pack, bytes).expect("write");

    let stream = format!("cat-blob {small}\ncat-blob {big}\ncat-blob {small}\n");
    let mut run = Run::new(CAT_BLOBD).arg("--quiet").env("GIT_DIR", &dir);
    for (key, value) in SMALL_THRESHOLD {
        run = run.env(key, value);
    }
    let ours = run.stdin(stream).run();
    assert_eq!(ours.status.code(), Some(128), "{}", ours.describe());
    let stderr = String::from_utf8_lossy(&ours.stderr);
    let named = format!("fatal: cannot read object {big} from {}", pack.display());
    assert!(stderr.starts_with(&named), "{stderr}");
    let first = git_in(&dir, &["cat-file", "blob", small], b"");
    let expected_first = [format!("{small} blob {}\n", first.len()).as_bytes(), &first, b"\n"].concat();
    assert!(ours.stdout.starts_with(&expected_first), "the earlier response in full");
    let rest = &ours.stdout[expected_first.len()..];
    // Streamed: the header and the pieces before the damaged one are out; the last piece never is.
    assert!(rest.starts_with(format!("{big} blob {}\n", 3 << 20).as_bytes()), "the big blob's header went out");
    assert!(rest.len() >= 1 << 20, "pieces went out before the damage was found: {} bytes", rest.len());
    assert!(rest.len() < (3 << 20) + 60, "the big blob's answer is cut before its last piece: {} bytes", rest.len());
}
