//! Hardening: hostile streams, damaged repositories, allocation limits and output faults.
//!
//! Damaged repositories come from `fixtures/damage.sh`, which copies the `basic` fixture once per kind of
//! damage and says which objects each copy affects. For every copy, a stream asks first for intact objects
//! (loose, from other packs, or from the damaged file before the damage) and then for an affected one:
//! cat-blobd must write every earlier response in full (the same bytes git gives for them), then exactly one
//! `fatal:` line naming the object and the damaged file, exit 128, never a panic (damage is never presented as
//! `missing`). Where git's behaviour is defined (bad streams, fd faults), it is the oracle.

use std::collections::HashSet;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::Duration;

use cat_blobd::store::{Damage, Location, Resolver, Store, StoreOptions};

use crate::util::case::{MISSING_ONE, Source, throwaway};
use crate::util::{
    CAT_BLOBD, Fixture, Output, Rng, Run, TempDir, assert_bytes_eq, assert_fatal_naming, assert_same_as_git, blobs,
    cat_blob_stream, clean_git_env, differential, escape, feed_stdin, fnv1a, git, git_fast_import, loose_blobs, oracle,
    read_all, wait_with_timeout,
};

const DAMAGE_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/damage.sh");
/// The pack-format helpers damage.sh imports: part of the cache key too.
const PACKFILE_MODULE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/packfile.py");
/// `five-mib.bin` and `one-mib.bin` of `basic`: whole (undeltified) blobs in its pack.
const FIVE_MIB: &str = "321d9e5a3df77a4d7f085b28f8a505190822c4a9";
const ONE_MIB: &str = "d2ef068c205a8086316f7003934e25f4a024e46b";

// ---------------------------------------------------------------------------------------------------------------
// Damaged copies of `basic`

/// One line of `damage.sh`'s output.
#[derive(Debug)]
struct Damaged {
    kind: String,
    git_dir: PathBuf,
    /// The damaged file, relative to the copy (`objects/pack/pack-….pack`, `objects/xx/…`).
    file: String,
    affected: Vec<String>,
    intact: Vec<String>,
}

impl Damaged {
    /// The file name the `fatal:` line must contain.
    fn file_name(&self) -> &str {
        self.file.rsplit('/').next().expect("a file name")
    }

    /// A loose object path as the message shows it (`xx/yyyy…`), or the file name.
    fn place(&self) -> String {
        match self.file.strip_prefix("objects/") {
            Some(loose) if !loose.starts_with("pack/") => loose.to_owned(),
            _ => self.file_name().to_owned(),
        }
    }
}

/// Runs `fixtures/damage.sh` on `basic` once per test run (into a staging directory renamed into place, so
/// parallel test processes are safe) and parses what it printed.
fn damaged_copies() -> &'static [Damaged] {
    static COPIES: OnceLock<Vec<Damaged>> = OnceLock::new();
    COPIES.get_or_init(|| {
        let mut script = fs::read(DAMAGE_SCRIPT).expect("read fixtures/damage.sh");
        script.extend(fs::read(PACKFILE_MODULE).expect("read fixtures/packfile.py"));
        let source = Fixture::Basic.dir();
        let key = fnv1a(&[&script[..], source.as_os_str().as_encoded_bytes()].concat());
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let root = tmp.join(format!("damaged-{key:016x}"));
        if !root.join("MANIFEST").exists() {
            let staging = tmp.join(format!("damaged-{key:016x}.staging-{}", std::process::id()));
            let _ = fs::remove_dir_all(&staging);
            let mut cmd = Command::new("bash");
            clean_git_env(&mut cmd);
            let out = cmd.arg(DAMAGE_SCRIPT).arg(&source).arg(&staging).stdin(Stdio::null()).output().expect("bash");
            assert!(out.status.success(), "damage.sh failed: {}", escape(&out.stderr));
            fs::write(staging.join("MANIFEST"), &out.stdout).expect("write MANIFEST");
            if fs::rename(&staging, &root).is_err() {
                let _ = fs::remove_dir_all(&staging);
                assert!(root.join("MANIFEST").exists(), "another process made {}", root.display());
            }
        }
        let manifest = fs::read_to_string(root.join("MANIFEST")).expect("MANIFEST");
        let list = |field: &str| field.split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect::<Vec<_>>();
        manifest
            .lines()
            .map(|line| {
                let f: Vec<&str> = line.split('\t').collect();
                assert_eq!(f.len(), 5, "damage.sh line: {line}");
                Damaged {
                    kind: f[0].to_owned(),
                    git_dir: root.join(f[1]),
                    file: f[2].to_owned(),
                    affected: list(f[3]),
                    intact: list(f[4]),
                }
            })
            .collect()
    })
}

fn copy(kind: &str) -> &'static Damaged {
    damaged_copies().iter().find(|d| d.kind == kind).unwrap_or_else(|| panic!("damage.sh made no {kind} copy"))
}

fn basic_blobs() -> &'static HashSet<String> {
    static BLOBS: OnceLock<HashSet<String>> = OnceLock::new();
    BLOBS.get_or_init(|| blobs(Fixture::Basic).into_iter().collect())
}

/// `git fast-import --cat-blob-fd=3` on `stream`, in a throwaway repository whose alternates point at
/// `objects_dir`.
fn git_on(objects_dir: &Path, stream: &[u8]) -> Output {
    let source = Source::Extra { objects: vec![objects_dir.to_owned()], sha256: false };
    let (_scratch, repo) = throwaway(&source, "hardening-oracle");
    Run::new("git")
        .arg("fast-import")
        .arg("--quiet")
        .env("GIT_DIR", &repo)
        .current_dir(&repo)
        .stdin(stream)
        .capture_fd3()
        .run()
}

/// The check every damaged copy gets: intact requests (loose blobs or packed ones, a missing id where the
/// indexes can be read, then intact objects of the damaged file), then an affected blob, then one more intact
/// request that must never be answered.
fn expect_damage(kind: &str) {
    let damaged = copy(kind);
    let loose_damage = !damaged.file.starts_with("objects/pack/");
    let mut earlier: Vec<String> = if loose_damage {
        // The damage is in a loose object: ask for packed blobs first.
        let mut packed: Vec<String> = blobs(Fixture::Basic).into_iter().step_by(97).take(6).collect();
        packed.retain(|id| !damaged.affected.contains(id));
        packed
    } else {
        loose_blobs(Fixture::Basic).into_iter().take(4).collect()
    };
    if kind != "idx-fanout" {
        // An unreadable index makes every miss an error (the object may be in it), so no miss there.
        earlier.insert(1, MISSING_ONE.to_owned());
    }
    earlier.extend(damaged.intact.iter().cloned());
    // The deepest affected object (for a delta chain, the one farthest from anything cached), and a blob:
    // fixture objects that are not blobs are skipped, made-up objects of hand-made packs are all blobs.
    let victim = damaged
        .affected
        .iter()
        .rev()
        .find(|id| basic_blobs().contains(*id) || !in_basic(id))
        .unwrap_or_else(|| panic!("{kind}: no affected blob"));
    let mut stream = cat_blob_stream(&earlier);
    stream.extend_from_slice(&cat_blob_stream(&[victim, &earlier[0]]));

    let oracle = git_on(&damaged.git_dir.join("objects"), &cat_blob_stream(&earlier));
    assert!(oracle.status.success(), "{kind}: git on the intact requests: {}", oracle.describe());
    let ours = Run::cat_blobd().arg("--git-dir").arg(&damaged.git_dir).capture_fd3().stdin(stream).run();
    assert_fatal_naming(kind, &ours, victim, &damaged.place());
    assert_bytes_eq(&format!("{kind}: responses before the damaged object"), &oracle.fd3, &ours.fd3);
}

fn in_basic(id: &str) -> bool {
    static ALL: OnceLock<HashSet<String>> = OnceLock::new();
    ALL.get_or_init(|| crate::util::all_objects(Fixture::Basic).into_iter().map(|(id, _)| id).collect()).contains(id)
}

// Item 2: one test per kind of damage.

#[test]
fn damaged_truncated_pack() {
    expect_damage("truncated-pack");
}

#[test]
fn damaged_pack_signature() {
    expect_damage("pack-signature");
}

#[test]
fn damaged_pack_version() {
    expect_damage("pack-version");
}

#[test]
fn damaged_idx_object_count_disagrees_with_its_pack() {
    expect_damage("idx-count");
}

#[test]
fn damaged_idx_trailer_disagrees_with_its_pack() {
    expect_damage("idx-trailer");
}

#[test]
fn damaged_idx_fanout_not_monotonic() {
    expect_damage("idx-fanout");
}

/// A `.pack` gone while its `.idx` remains is no damage: git's `is_pack_valid` passes the pack over and its
/// objects are `missing` (issue 29), and so does cat-blobd, going on with the next request.
#[test]
fn a_missing_pack_behind_an_idx_is_absence_as_in_git() {
    let damaged = copy("missing-pack");
    let victim = damaged.affected.iter().find(|id| basic_blobs().contains(*id)).expect("an affected blob");
    let loose: Vec<String> = loose_blobs(Fixture::Basic).into_iter().take(2).collect();
    let stream = cat_blob_stream(&[loose[0].as_str(), victim.as_str(), MISSING_ONE, loose[1].as_str()]);
    let oracle = git_on(&damaged.git_dir.join("objects"), &stream);
    let ours = Run::cat_blobd().arg("--git-dir").arg(&damaged.git_dir).capture_fd3().stdin(stream).run();
    assert!(oracle.status.success(), "git: {}", oracle.describe());
    assert!(ours.status.success(), "cat-blobd: {}", ours.describe());
    assert_bytes_eq("missing-pack: responses", &oracle.fd3, &ours.fd3);
}

#[test]
fn damaged_entry_zlib_stream() {
    expect_damage("entry-zlib");
}

#[test]
fn damaged_entry_inflated_size_differs_from_header() {
    expect_damage("entry-size");
}

#[test]
fn damaged_delta_copy_reads_past_its_base() {
    expect_damage("delta-past-base");
}

#[test]
fn damaged_delta_result_size_differs_from_its_header() {
    let damaged = copy("delta-result-size");
    assert_eq!(damaged.affected.len(), 2, "one delta produces too few bytes, one too many");
    expect_damage("delta-result-size");
    // The other one (the first listed) on its own too.
    let victim = &damaged.affected[0];
    let ours =
        Run::cat_blobd().arg("--git-dir").arg(&damaged.git_dir).capture_fd3().stdin(cat_blob_stream(&[victim])).run();
    assert_fatal_naming("delta-result-size (other)", &ours, victim, damaged.file_name());
}

#[test]
fn damaged_refdelta_cycle_directly_and_through_another() {
    let damaged = copy("refdelta-cycle");
    expect_damage("refdelta-cycle");
    for victim in &damaged.affected {
        let stream = cat_blob_stream(&[&damaged.intact[0], victim]);
        let ours = Run::cat_blobd().arg("--git-dir").arg(&damaged.git_dir).capture_fd3().stdin(stream).run();
        assert_fatal_naming("refdelta-cycle", &ours, victim, damaged.file_name());
    }
}

#[test]
fn damaged_loose_object_with_a_bad_header() {
    expect_damage("loose-header");
}

#[test]
fn damaged_loose_object_with_trailing_garbage() {
    expect_damage("loose-trailing");
}

// ---------------------------------------------------------------------------------------------------------------
// Item 3: allocation limits

#[test]
fn huge_declared_sizes_are_refused_before_allocating() {
    // Under a 2 GiB address-space limit: allocating what the pack declares (1 TiB) would abort, not exit 128.
    for kind in ["huge-entry-size", "huge-delta-size"] {
        expect_damage(kind);
        let damaged = copy(kind);
        for max in ["4g", "2048g"] {
            let ours = Run::new("sh")
                .arg("-c")
                .arg(r#"ulimit -v 2097152 && exec "$0" "$@""#)
                .arg(CAT_BLOBD)
                .arg("--quiet")
                .arg("--git-dir")
                .arg(&damaged.git_dir)
                .arg(format!("--max-object-size={max}"))
                .env("CAT_BLOBD_THREADS", "1")
                .capture_fd3()
                .stdin(cat_blob_stream(&[&damaged.intact[0], &damaged.affected[0]]))
                .run();
            assert_fatal_naming(
                &format!("{kind} with --max-object-size={max}"),
                &ours,
                &damaged.affected[0],
                damaged.file_name(),
            );
        }
    }
}

/// `--max-object-size` and `GIT_ALLOC_LIMIT` (git's syntax, the smaller wins) refuse larger objects and delta
/// results, naming the object and its pack; smaller ones before are served.
#[test]
fn max_object_size_and_git_alloc_limit() {
    // A 15-byte loose blob and a miss, then the victim.
    let earlier = ["4fbe31777ad2824e93a9b60bd1bd9a53cf94f29b", MISSING_ONE];
    let intact = git_fast_import(Fixture::Basic, &cat_blob_stream(&earlier), true);
    assert!(intact.status.success(), "{}", intact.describe());
    let basic = Fixture::Basic.git_dir();
    // In the hand-made pack: a 3,600-byte blob and a delta on it whose result has 3,608 bytes.
    let hand_made = copy("delta-past-base");
    let (base, delta) = (&hand_made.intact[0], &hand_made.intact[1]);
    let cases: [(&str, &Path, &str, Option<&str>, &str); 6] = [
        ("flag", &basic, "64k", None, FIVE_MIB),
        ("flag, delta result", &hand_made.git_dir, "3600", None, delta),
        ("GIT_ALLOC_LIMIT", &basic, "1m", Some("64k"), FIVE_MIB),
        ("GIT_ALLOC_LIMIT in hex", &basic, "4g", Some("0x10000"), ONE_MIB),
        ("GIT_ALLOC_LIMIT smaller than the flag, delta result", &hand_made.git_dir, "1m", Some("3600"), delta),
        ("flag smaller than GIT_ALLOC_LIMIT", &basic, "1k", Some("1g"), ONE_MIB),
    ];
    for (what, git_dir, flag, env, victim) in cases {
        let mut run = Run::cat_blobd().arg("--git-dir").arg(git_dir).arg(format!("--max-object-size={flag}"));
        if let Some(limit) = env {
            run = run.env("GIT_ALLOC_LIMIT", limit);
        }
        let mut requests = earlier.to_vec();
        if victim == delta {
            requests.push(base);
        }
        let expected = if victim == delta {
            git_on(&git_dir.join("objects"), &cat_blob_stream(&requests))
        } else {
            git_fast_import(Fixture::Basic, &cat_blob_stream(&requests), true)
        };
        requests.push(victim);
        let ours = run.capture_fd3().stdin(cat_blob_stream(&requests)).run();
        assert_fatal_naming(what, &ours, victim, ".pack at offset");
        assert!(escape(&ours.stderr).contains("exceeds the limit of"), "{what}: {}", escape(&ours.stderr));
        assert_bytes_eq(what, &expected.fd3, &ours.fd3);
    }
    assert!(intact.fd3.starts_with(b"4fbe31777ad2824e93a9b60bd1bd9a53cf94f29b blob 15\n"));
    // 0 means no limit, as in git.
    let stream = cat_blob_stream(&[FIVE_MIB]);
    let git = git_fast_import(Fixture::Basic, &stream, true);
    let ours = Run::cat_blobd_on(Fixture::Basic).capture_fd3().env("GIT_ALLOC_LIMIT", "0").stdin(stream).run();
    assert_same_as_git("GIT_ALLOC_LIMIT=0", &git, &ours);
}

#[test]
fn git_alloc_limit_that_cannot_be_parsed_is_fatal_like_git() {
    for value in ["lots", "1kb", "-1", ""] {
        let stream = cat_blob_stream(&[MISSING_ONE]);
        let (_dir, git) = oracle(Fixture::Basic);
        let git = git.env("GIT_ALLOC_LIMIT", value).stdin(stream.clone()).capture_fd3().run();
        let ours = Run::cat_blobd_on(Fixture::Basic).capture_fd3().env("GIT_ALLOC_LIMIT", value).stdin(stream).run();
        assert_same_as_git(&format!("GIT_ALLOC_LIMIT={value:?}"), &git, &ours);
        assert_eq!(ours.first_stderr_line(), b"fatal: failed to parse GIT_ALLOC_LIMIT");
    }
}

/// The bytes one delta chain may inflate and produce are capped (`StoreOptions::max_chain_bytes`): a 64 KiB blob
/// under 64 deltas of 64 KiB each reads with the default cap and is damage under a 1 MiB cap.
#[test]
fn total_bytes_of_one_delta_chain_are_capped() {
    let damaged = copy("chain-bytes");
    let objects = damaged.git_dir.join("objects");
    let deepest = gix_hash::ObjectId::from_hex(damaged.affected[0].as_bytes()).expect("id");
    let expected = git(&damaged.git_dir, &["cat-file", "blob", &damaged.affected[0]]);

    let store = Store::open(&objects, gix_hash::Kind::Sha1, StoreOptions::default());
    let object = store.read(&deepest, &mut Resolver::new(1 << 20)).expect("readable").expect("present");
    assert_bytes_eq("chain-bytes with the default cap", &expected, &object.data);

    // The cap is never below three objects of the largest size: lower that too.
    let capped = StoreOptions { max_object_size: 128 << 10, max_chain_bytes: 1 << 20, ..StoreOptions::default() };
    let store = Store::open(&objects, gix_hash::Kind::Sha1, capped);
    let Err(err) = store.read(&deepest, &mut Resolver::new(1 << 20)) else { panic!("read over the cap") };
    assert_eq!(err.oid, deepest);
    assert!(matches!(err.damage, Damage::ChainTooLarge { .. }), "{err}");
    assert!(matches!(&err.location, Location::Pack { path, .. } if path.ends_with(damaged.file_name())), "{err}");
    // The first links of the chain are within the cap.
    let mut resolver = Resolver::new(64 << 20);
    for id in &damaged.intact {
        let id = gix_hash::ObjectId::from_hex(id.as_bytes()).expect("id");
        assert!(store.read(&id, &mut resolver).expect("readable").is_some());
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Item 1: bad streams

/// Requests that succeed, to put before a bad part of a stream.
fn good_requests() -> Vec<u8> {
    let mut ids: Vec<String> = loose_blobs(Fixture::Basic).into_iter().take(2).collect();
    ids.push(MISSING_ONE.to_owned());
    ids.push(ONE_MIB.to_owned());
    cat_blob_stream(&ids)
}

#[test]
fn binary_garbage_is_an_unsupported_command_like_git() {
    let mut rng = Rng::new(6);
    for round in 0..6 {
        let mut stream = good_requests();
        // Starts with a byte no command starts with; NULs, LFs and high bytes anywhere after it.
        stream.push(0xff);
        stream.extend((0..4096).map(|_| rng.next_u64() as u8));
        let git = git_fast_import(Fixture::Basic, &stream, true);
        let ours = Run::cat_blobd_on(Fixture::Basic).capture_fd3().stdin(stream).run();
        let what = format!("garbage round {round}");
        assert_eq!(ours.status.code(), git.status.code(), "{what}: {}", ours.describe());
        assert_eq!(ours.status.code(), Some(128));
        assert_bytes_eq(&what, &git.fd3, &ours.fd3);
        assert_bytes_eq(&what, &git.stdout, &ours.stdout);
        // The message quotes the raw line: git prints its bytes raw, cat-blobd escapes non-UTF-8 (README).
        assert!(git.first_stderr_line().to_ascii_lowercase().starts_with(b"fatal: unsupported command: "));
        assert!(ours.stderr.starts_with(b"fatal: unsupported command: "), "{what}: {}", escape(&ours.stderr));
        assert_eq!(ours.stderr.iter().filter(|&&b| b == b'\n').count(), 1, "{what}: {}", escape(&ours.stderr));
    }
}

/// A reader of `limit` bytes of `x` that never contains LF (nothing is allocated for it).
struct Xs {
    left: u64,
}

impl Read for Xs {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = out.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        out[..n].fill(b'x');
        self.left -= n as u64;
        Ok(n)
    }
}

/// A 1 GiB line without LF: refused at 64 MiB with a clear error, in bounded memory (under a 1 GiB
/// address-space limit, holding the line would abort instead of exiting 128). git has no limit.
#[test]
fn a_gibibyte_line_without_lf_is_refused_in_bounded_memory() {
    let mut cmd = Command::new("sh");
    clean_git_env(&mut cmd);
    cmd.arg("-c")
        .arg(r#"ulimit -v 1048576 && exec "$0" "$@""#)
        .arg(CAT_BLOBD)
        .arg("--quiet")
        .arg("--git-dir")
        .arg(Fixture::Basic.git_dir())
        .env("CAT_BLOBD_THREADS", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let feeder = thread::spawn(move || {
        let _ = stdin.write_all(&good_requests());
        let _ = std::io::copy(&mut Xs { left: 1 << 30 }, &mut stdin);
    });
    let stdout = read_all(child.stdout.take().expect("stdout"));
    let stderr = read_all(child.stderr.take().expect("stderr"));
    let status = wait_with_timeout(&mut child, Duration::from_secs(120), "cat-blobd".as_ref());
    feeder.join().expect("feeder");
    let (stdout, stderr) = (stdout.join().expect("stdout"), stderr.join().expect("stderr"));
    assert_eq!(status.code(), Some(128), "{status}: {}", escape(&stderr));
    assert_eq!(escape(&stderr), "fatal: command line longer than 67108864 bytes\\n");
    let expected = git_fast_import(Fixture::Basic, &good_requests(), false);
    assert_bytes_eq("responses before the long line", &expected.stdout, &stdout);
}

#[test]
fn data_count_larger_than_the_input_like_git() {
    for tail in [&b"blob\nmark :1\ndata 100\nshort"[..], b"blob\ndata 18446744073709551615\n", b"blob\ndata 5\n"] {
        let mut stream = good_requests();
        stream.extend_from_slice(tail);
        let git = differential(&format!("data count larger than the input: {}", escape(tail)), Fixture::Basic, &stream);
        assert_eq!(git.status.code(), Some(128));
    }
}

#[test]
fn delimited_body_that_never_ends_like_git() {
    for tail in [&b"blob\ndata <<EOF\nline\n"[..], b"blob\ndata <<EOF\nEOF \nEOFx\n EOF", b"blob\ndata <<\n\n"] {
        let mut stream = good_requests();
        stream.extend_from_slice(tail);
        differential(&format!("delimited body without its end: {}", escape(tail)), Fixture::Basic, &stream);
    }
}

/// A stream of blobs and requests cut at every byte of a data body and the lines around it.
#[test]
fn stream_cut_in_the_middle_of_a_data_body_like_git() {
    let mut full = good_requests();
    let body_start = full.len() + "blob\nmark :1\ndata 20\n".len();
    full.extend_from_slice(b"blob\nmark :1\ndata 20\n0123456789\n\0abcdefgh\ncat-blob :1\nget-mark :1\n");
    for cut in (body_start - 3..body_start + 23).chain([full.len() - 5]) {
        differential(&format!("cut at byte {cut}"), Fixture::Basic, &full[..cut]);
    }
}

#[test]
fn nul_bytes_anywhere_like_git() {
    let id = loose_blobs(Fixture::Basic)[0].clone();
    let streams: Vec<Vec<u8>> = vec![
        format!("cat-blob {id}\0trailing\n").into_bytes(),
        format!("cat-blob \0{id}\n").into_bytes(),
        format!("cat-blob {}\0{}\n", &id[..20], &id[20..]).into_bytes(),
        b"\0\n".to_vec(),
        b"\0cat-blob\n".to_vec(),
        b"progress a\0b\n".to_vec(),
        b"blob\nmark :1\ndata 3\n\0\0\0\ncat-blob :1\n".to_vec(),
        b"blob\nmark :\x001\ndata 1\nx\nget-mark :1\n".to_vec(),
        b"blob\nmark :1\ndata <<E\0F\nbody\nE\nget-mark :1\n".to_vec(),
        b"blob\nmark :1\ndata <<EOF\n\0\nEOF\ncat-blob :1\n".to_vec(),
        b"feature done\0\ndone\n".to_vec(),
        b"option git quiet\0\n".to_vec(),
        format!("ls {} \0x\n", rev("HEAD")).into_bytes(),
        format!("ls {} README.md\0\n", rev("HEAD")).into_bytes(),
        format!("ls \"README.md\0\" {}\n", rev("HEAD")).into_bytes(),
        b"get-mark :\0\n".to_vec(),
        b"# comment\0\ncat-blob 0000000000000000000000000000000000000001\n".to_vec(),
    ];
    for (i, tail) in streams.iter().enumerate() {
        let mut stream = good_requests();
        stream.extend_from_slice(tail);
        differential(&format!("NUL stream {i}: {}", escape(tail)), Fixture::Basic, &stream);
    }
}

fn rev(rev: &str) -> String {
    crate::util::rev_parse(Fixture::Basic, rev)
}

// ---------------------------------------------------------------------------------------------------------------
// Item 4: output faults

/// A throwaway repository for git whose alternates point at `basic`, and the command to run git fast-import
/// there (responses on stdout).
fn git_command(scratch: &TempDir) -> Command {
    let repo = scratch.path().join("oracle.git");
    let mut init = Command::new("git");
    clean_git_env(&mut init);
    assert!(init.args(["init", "-q", "--bare"]).arg(&repo).status().expect("git init").success());
    let objects = Fixture::Basic.git_dir().join("objects");
    fs::write(repo.join("objects/info/alternates"), format!("{}\n", objects.display())).expect("alternates");
    let mut cmd = Command::new("git");
    clean_git_env(&mut cmd);
    cmd.args(["fast-import", "--quiet"]).env("GIT_DIR", &repo).current_dir(&repo);
    cmd
}

fn cat_blobd_command() -> Command {
    let mut cmd = Command::new(CAT_BLOBD);
    clean_git_env(&mut cmd);
    cmd.arg("--quiet").arg("--git-dir").arg(Fixture::Basic.git_dir());
    cmd
}

/// Spawns `cmd` with `stream` on stdin, `stdout` as its stdout and stderr captured.
fn spawn(
    mut cmd: Command,
    stream: Vec<u8>,
    stdout: Stdio,
) -> (Child, thread::JoinHandle<()>, thread::JoinHandle<Vec<u8>>) {
    let mut child = cmd.stdin(Stdio::piped()).stdout(stdout).stderr(Stdio::piped()).spawn().expect("spawn");
    let feeder = feed_stdin(&mut child, stream);
    let stderr = read_all(child.stderr.take().expect("stderr"));
    (child, feeder, stderr)
}

/// The reader goes away after 64 KiB of 200 MB of responses: killed by SIGPIPE (shell status 141), as git is,
/// with nothing on stderr (no message claims anything about what was or was not written).
#[test]
fn reader_closing_early_is_a_quiet_sigpipe_like_git() {
    let stream = cat_blob_stream(&[FIVE_MIB; 40]);
    let scratch = TempDir::new("sigpipe");
    for (who, cmd) in [("git", git_command(&scratch)), ("cat-blobd", cat_blobd_command())] {
        let (mut child, feeder, stderr) = spawn(cmd, stream.clone(), Stdio::piped());
        let mut stdout = child.stdout.take().expect("stdout");
        let mut first = vec![0u8; 64 << 10];
        stdout.read_exact(&mut first).expect("the first 64 KiB");
        assert!(first.starts_with(format!("{FIVE_MIB} blob 5242880\n").as_bytes()), "{who}");
        drop(stdout);
        let status = wait_with_timeout(&mut child, Duration::from_secs(120), who.as_ref());
        feeder.join().expect("feeder");
        let stderr = stderr.join().expect("stderr");
        assert_eq!(status.signal(), Some(libc::SIGPIPE), "{who}: {status}, stderr: {}", escape(&stderr));
        assert!(stderr.is_empty(), "{who}: {}", escape(&stderr));
    }
}

/// `--cat-blob-fd=9` when fd 9 is not open: `fatal: write to frontend failed: Bad file descriptor` once a
/// response is due, and not before (a stream without responses succeeds), as in git.
#[test]
fn cat_blob_fd_that_is_not_open_like_git() {
    let id = loose_blobs(Fixture::Basic)[0].clone();
    let streams: Vec<Vec<u8>> = vec![
        b"blob\nmark :1\ndata 3\nabc\nprogress no response is due\ncheckpoint\n".to_vec(),
        format!("progress before\ncat-blob {id}\nprogress after\n").into_bytes(),
        b"blob\nmark :1\ndata 3\nabc\nget-mark :1\n".to_vec(),
        format!("cat-blob {MISSING_ONE}\n").into_bytes(),
        format!("ls {} README.md\n", rev("HEAD")).into_bytes(),
    ];
    for (i, stream) in streams.iter().enumerate() {
        let (_dir, git) = oracle(Fixture::Basic);
        let git = git.arg("--cat-blob-fd=9").redirect("9>&-").stdin(stream.clone()).run();
        let ours =
            Run::cat_blobd_on(Fixture::Basic).arg("--cat-blob-fd=9").redirect("9>&-").stdin(stream.clone()).run();
        assert_same_as_git(&format!("fd 9 closed, stream {i}"), &git, &ours);
        if i > 0 {
            assert_eq!(ours.first_stderr_line(), b"fatal: write to frontend failed: Bad file descriptor");
        }
    }
}

/// A standard fd that is not open is opened on /dev/null before anything else, as git's `sanitize_stdfds` does
/// (and std did before `main` became the C entry point): with stdout closed, progress goes nowhere and responses
/// still reach the cat-blob fd; with stderr closed, a fatal error still exits 128 and a file opened later never
/// takes fd 2.
#[test]
fn closed_standard_fds_are_opened_on_dev_null_like_git() {
    let id = loose_blobs(Fixture::Basic)[0].clone();
    let ok = format!("progress before\ncat-blob {id}\nprogress after\n").into_bytes();
    let fatal = format!("cat-blob {id}\nnot-a-command\n").into_bytes();
    for (what, redirect, stream) in
        [("stdout closed", "1>&-", &ok), ("stderr closed", "2>&-", &fatal), ("stdin closed", "0<&-", &ok)]
    {
        let (_dir, git) = oracle(Fixture::Basic);
        let git = git.arg("--cat-blob-fd=3").capture_fd3().redirect(redirect).stdin(stream.clone()).run();
        let ours = Run::cat_blobd_on(Fixture::Basic)
            .arg("--cat-blob-fd=3")
            .capture_fd3()
            .redirect(redirect)
            .stdin(stream.clone())
            .run();
        assert_same_as_git(what, &git, &ours);
    }
}

/// A stream with large and small responses, for the slow-reader tests.
fn mixed_stream(big: &[&str]) -> Vec<u8> {
    let mut ids: Vec<String> = Vec::new();
    let small = loose_blobs(Fixture::Basic);
    for (i, id) in big.iter().enumerate() {
        ids.push((*id).to_owned());
        ids.push(small[i % small.len()].clone());
        ids.push(MISSING_ONE.to_owned());
    }
    cat_blob_stream(&ids)
}

/// Reads all of `from` in `chunk`-byte reads with `pause` between them.
fn slow_reader(mut from: impl Read + Send + 'static, chunk: usize, pause: Duration) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut out = Vec::new();
        let mut buf = vec![0u8; chunk];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => return out,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
            thread::sleep(pause);
        }
    })
}

/// The output is a pipe whose write end is non-blocking (`O_NONBLOCK`, shared with the child) and whose
/// reader is slow: writes return EAGAIN, and every byte must still arrive, in order, as from git.
#[test]
fn non_blocking_output_fd() {
    let stream = mixed_stream(&[ONE_MIB, FIVE_MIB]);
    let expected = git_fast_import(Fixture::Basic, &stream, false);
    assert!(expected.status.success());
    let scratch = TempDir::new("nonblocking");
    for (who, cmd) in [("git", git_command(&scratch)), ("cat-blobd", cat_blobd_command())] {
        let (read_end, write_end) = rustix::pipe::pipe().expect("pipe");
        rustix::fs::fcntl_setfl(&write_end, rustix::fs::OFlags::NONBLOCK).expect("O_NONBLOCK");
        let (mut child, feeder, stderr) = spawn(cmd, stream.clone(), Stdio::from(write_end));
        let reader = slow_reader(fs::File::from(read_end), 64 << 10, Duration::from_millis(2));
        let status = wait_with_timeout(&mut child, Duration::from_secs(120), who.as_ref());
        drop(child);
        feeder.join().expect("feeder");
        let (got, stderr) = (reader.join().expect("reader"), stderr.join().expect("stderr"));
        assert!(status.success(), "{who}: {status}: {}", escape(&stderr));
        assert_bytes_eq(&format!("{who} on a non-blocking fd"), &expected.stdout, &got);
    }
}

/// A reader about 1000 times slower than the writer (512-byte reads, 1 ms apart: ~0.5 MB/s): the same bytes
/// as git, nothing lost or reordered.
#[test]
fn reader_a_thousand_times_slower_than_the_writer() {
    // Loose blobs of 15, 7,018 and 17,855 bytes, misses, and the 200,000-byte loose blob once.
    let small = [
        "4fbe31777ad2824e93a9b60bd1bd9a53cf94f29b",
        "4a197ff53a1e3ec6dfbf3d776840f7424ebccdf6",
        "9e770e557600ef03384da0a48d62a6ad3c4dfe57",
    ];
    let mut ids: Vec<&str> = Vec::new();
    for round in 0..30 {
        ids.push(small[round % small.len()]);
        ids.push(MISSING_ONE);
    }
    ids.push("da858b207fe58f0ee6cf3add149fe1e2182cea38");
    let stream = cat_blob_stream(&ids);
    let expected = git_fast_import(Fixture::Basic, &stream, false);
    assert!(expected.status.success());
    assert!(expected.stdout.len() < 1 << 20, "a few hundred KB: {}", expected.stdout.len());
    let (mut child, feeder, stderr) = spawn(cat_blobd_command(), stream, Stdio::piped());
    let reader = slow_reader(child.stdout.take().expect("stdout"), 512, Duration::from_millis(1));
    let status = wait_with_timeout(&mut child, Duration::from_secs(120), "cat-blobd".as_ref());
    feeder.join().expect("feeder");
    let (got, stderr) = (reader.join().expect("reader"), stderr.join().expect("stderr"));
    assert!(status.success(), "{status}: {}", escape(&stderr));
    assert_bytes_eq("slow reader", &expected.stdout, &got);
}
