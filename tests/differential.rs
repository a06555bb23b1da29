//! Differential tests: the same stream through `git fast-import --cat-blob-fd=3` (the oracle, in a throwaway
//! repository borrowing the fixture's objects) and through cat-blobd. The cat-blob fd, stdout and the exit status
//! must be identical, and the first stderr line equal ignoring ASCII case.

use std::collections::HashSet;
use std::path::Path;
use std::sync::OnceLock;

use crate::util::case::{Case, EMPTY_BLOB, EMPTY_TREE, MISSING_ONE, Source};
use crate::util::{
    Fixture, Output, Rng, Run, TempDir, assert_bytes_eq, assert_same_as_git, blobs, cat_blob_stream, differential,
    escape, fixtures_root, git_fast_import, oracle, parse_responses, rev_parse,
};

// ---------------------------------------------------------------------------------------------------------------
// Every blob of every fixture, in three orders, with missing ids interleaved

#[derive(Clone, Copy, Debug)]
enum Order {
    /// `git cat-file --batch-all-objects --unordered`: pack by pack, by offset.
    Pack,
    /// Sorted by id: jumps all over the packs.
    Sorted,
    /// A seeded shuffle.
    Random(u64),
}

/// All blobs of the fixture in the given order, with missing ids at the start, every 53 requests, and at the end.
fn requests(fixture: Fixture, order: Order) -> Vec<String> {
    let mut ids = blobs(fixture);
    assert!(ids.len() >= 50, "{}: only {} blobs", fixture.name(), ids.len());
    match order {
        Order::Pack => {}
        Order::Sorted => ids.sort(),
        Order::Random(seed) => Rng::new(seed).shuffle(&mut ids),
    }
    let present: HashSet<String> = ids.iter().cloned().collect();
    let mut rng = Rng::new(ids.len() as u64);
    let mut out = vec![MISSING_ONE.to_owned()];
    for (i, id) in ids.into_iter().enumerate() {
        out.push(id);
        if i % 53 == 52 {
            let missing = rng.hex_id();
            assert!(!present.contains(&missing));
            out.push(missing);
        }
    }
    out.push(MISSING_ONE.to_owned());
    out
}

fn all_blobs(fixture: Fixture, order: Order) {
    let ids = requests(fixture, order);
    let stream = cat_blob_stream(&ids);
    let git = differential(&format!("{} {order:?}", fixture.name()), fixture, &stream);
    // The oracle itself must have answered every request, or the comparison proves nothing.
    assert!(git.status.success(), "git failed: {}", git.describe());
    assert_eq!(parse_responses(&git.fd3).len(), ids.len());
}

macro_rules! all_blobs_tests {
    ($($name:ident: $fixture:ident, $order:expr;)*) => {$(
        #[test]
        fn $name() {
            all_blobs(Fixture::$fixture, $order);
        }
    )*};
}

all_blobs_tests! {
    all_blobs_basic_pack_order: Basic, Order::Pack;
    all_blobs_basic_sorted_order: Basic, Order::Sorted;
    all_blobs_basic_random_order: Basic, Order::Random(1);
    all_blobs_refdelta_pack_order: Refdelta, Order::Pack;
    all_blobs_refdelta_sorted_order: Refdelta, Order::Sorted;
    all_blobs_refdelta_random_order: Refdelta, Order::Random(2);
    all_blobs_multipack_pack_order: Multipack, Order::Pack;
    all_blobs_multipack_sorted_order: Multipack, Order::Sorted;
    all_blobs_multipack_random_order: Multipack, Order::Random(3);
    all_blobs_alternates_pack_order: Alternates, Order::Pack;
    all_blobs_alternates_sorted_order: Alternates, Order::Sorted;
    all_blobs_alternates_random_order: Alternates, Order::Random(4);
    all_blobs_bare_pack_order: Bare, Order::Pack;
    all_blobs_bare_sorted_order: Bare, Order::Sorted;
    all_blobs_bare_random_order: Bare, Order::Random(5);
}

// ---------------------------------------------------------------------------------------------------------------
// Delta chains deeper than git writes

const DEEP_CHAIN_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/deep-chain.py");
const DEEP_CHAIN_DEPTH: usize = 10_000;

/// Valid chains of any depth are served as git serves them. git's pack-objects writes at most 4,095 links, so
/// `fixtures/deep-chain.py` writes two packs (checked and indexed by `git index-pack`): one chain of 10,000
/// OFS_DELTA links and one of 10,000 REF_DELTA links. The deepest of each is asked for first, cold; then the
/// roots, the middles, the tips again, and a seeded sample of both chains.
#[test]
fn delta_chains_10000_deep_ofs_and_ref_like_git() {
    let scratch = TempDir::new("deep-chain");
    let git_dir = scratch.path().join("deep.git");
    let mut generate = std::process::Command::new("python3");
    crate::util::clean_git_env(&mut generate);
    let made =
        generate.arg(DEEP_CHAIN_SCRIPT).arg(&git_dir).arg(DEEP_CHAIN_DEPTH.to_string()).output().expect("python3");
    assert!(made.status.success(), "deep-chain.py: {}", escape(&made.stderr));
    let mut chains: [Vec<String>; 2] = Default::default();
    for line in String::from_utf8(made.stdout).expect("ascii").lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let chain = &mut chains[usize::from(f[0] == "ref")];
        assert_eq!(f[1].parse::<usize>().expect("depth"), chain.len(), "{line}");
        chain.push(f[2].to_owned());
    }
    assert!(chains.iter().all(|chain| chain.len() == DEEP_CHAIN_DEPTH + 1));

    let mut ids: Vec<&str> = Vec::new();
    for at in [DEEP_CHAIN_DEPTH, 0, DEEP_CHAIN_DEPTH / 2, DEEP_CHAIN_DEPTH, DEEP_CHAIN_DEPTH - 1] {
        ids.extend(chains.iter().map(|chain| chain[at].as_str()));
    }
    let mut rng = Rng::new(10_000);
    ids.extend((0..200).map(|i| chains[i % 2][rng.below(DEEP_CHAIN_DEPTH + 1)].as_str()));
    let source = Source::Extra { objects: vec![git_dir.join("objects")], sha256: false };
    let git =
        Case::new("10,000-deep OFS_DELTA and REF_DELTA chains", source).raw_stream(cat_blob_stream(&ids)).expect(0, "");
    assert_eq!(parse_responses(&git.fd3).len(), ids.len(), "git answered every request");
}

// ---------------------------------------------------------------------------------------------------------------
// Repository discovery: --git-dir, GIT_DIR, and walking up from the current directory

/// A dozen blobs spread over the fixture (the first and last in pack order, loose ones included) and missing ids.
fn discovery_stream(fixture: Fixture) -> Vec<u8> {
    let ids = blobs(fixture);
    let mut picked: Vec<&str> = ids.iter().step_by(ids.len() / 10).map(String::as_str).collect();
    picked.push(ids.last().expect("blobs"));
    picked.insert(3, MISSING_ONE);
    cat_blob_stream(&picked)
}

/// Runs `run` (cat-blobd without `--git-dir` unless the case adds it) on the discovery stream of `fixture` and
/// compares it with the oracle on that fixture.
fn discovers(what: &str, fixture: Fixture, run: Run) {
    let stream = discovery_stream(fixture);
    let git = git_fast_import(fixture, &stream, true);
    assert!(git.status.success(), "git failed: {}", git.describe());
    let ours = run.capture_fd3().stdin(stream).run();
    assert_same_as_git(what, &git, &ours);
}

#[test]
fn discovery_git_dir_flag_absolute() {
    let elsewhere = TempDir::outside_any_repo("cwd");
    let run = Run::cat_blobd().arg("--git-dir").arg(Fixture::Basic.git_dir()).current_dir(elsewhere.path());
    discovers("--git-dir DIR", Fixture::Basic, run);
}

#[test]
fn discovery_git_dir_flag_equals_form() {
    let mut flag = std::ffi::OsString::from("--git-dir=");
    flag.push(Fixture::Bare.git_dir());
    let elsewhere = TempDir::outside_any_repo("cwd");
    discovers("--git-dir=DIR", Fixture::Bare, Run::cat_blobd().arg(flag).current_dir(elsewhere.path()));
}

#[test]
fn discovery_git_dir_flag_relative() {
    let run = Run::cat_blobd().arg("--git-dir").arg("multipack/.git").current_dir(fixtures_root());
    discovers("--git-dir relative", Fixture::Multipack, run);
}

#[test]
fn discovery_git_dir_env_absolute() {
    let elsewhere = TempDir::outside_any_repo("cwd");
    let run = Run::cat_blobd().env("GIT_DIR", Fixture::Basic.git_dir()).current_dir(elsewhere.path());
    discovers("GIT_DIR=DIR", Fixture::Basic, run);
}

#[test]
fn discovery_git_dir_env_relative() {
    let run = Run::cat_blobd().env("GIT_DIR", "refdelta/.git").current_dir(fixtures_root());
    discovers("GIT_DIR relative", Fixture::Refdelta, run);
}

#[test]
fn discovery_git_dir_env_of_alternates_repository() {
    let elsewhere = TempDir::outside_any_repo("cwd");
    let run = Run::cat_blobd().env("GIT_DIR", Fixture::Alternates.git_dir()).current_dir(elsewhere.path());
    discovers("GIT_DIR=alternates", Fixture::Alternates, run);
}

#[test]
fn discovery_git_dir_flag_overrides_env() {
    // git --git-dir=X sets GIT_DIR=X for the command, so the flag wins over the environment.
    let run = Run::cat_blobd()
        .arg("--git-dir")
        .arg(Fixture::Basic.git_dir())
        .env("GIT_DIR", Fixture::Empty.git_dir())
        .current_dir(Fixture::Multipack.dir());
    discovers("--git-dir over GIT_DIR", Fixture::Basic, run);
}

#[test]
fn discovery_git_dir_env_overrides_cwd() {
    let run = Run::cat_blobd().env("GIT_DIR", Fixture::Basic.git_dir()).current_dir(Fixture::Multipack.dir());
    discovers("GIT_DIR over cwd", Fixture::Basic, run);
}

#[test]
fn discovery_cwd_work_tree() {
    discovers("cwd work tree", Fixture::Basic, Run::cat_blobd().current_dir(Fixture::Basic.dir()));
}

#[test]
fn discovery_cwd_subdirectory() {
    let dir = Fixture::Basic.dir().join("nested/deep/dir");
    discovers("cwd subdirectory", Fixture::Basic, Run::cat_blobd().current_dir(dir));
}

#[test]
fn discovery_cwd_subdirectory_with_space() {
    let dir = Fixture::Basic.dir().join("odd names");
    discovers("cwd subdirectory with space", Fixture::Basic, Run::cat_blobd().current_dir(dir));
}

#[test]
fn discovery_cwd_inside_git_dir() {
    let dir = Fixture::Multipack.git_dir().join("objects/pack");
    discovers("cwd .git/objects/pack", Fixture::Multipack, Run::cat_blobd().current_dir(dir));
}

#[test]
fn discovery_cwd_bare() {
    discovers("cwd bare", Fixture::Bare, Run::cat_blobd().current_dir(Fixture::Bare.dir()));
}

#[test]
fn discovery_cwd_bare_subdirectory() {
    let dir = Fixture::Bare.dir().join("refs/heads");
    discovers("cwd bare/refs/heads", Fixture::Bare, Run::cat_blobd().current_dir(dir));
}

#[test]
fn discovery_cwd_alternates_work_tree() {
    let run = Run::cat_blobd().current_dir(Fixture::Alternates.dir());
    discovers("cwd alternates work tree", Fixture::Alternates, run);
}

/// Runs git fast-import itself (not the oracle: it must fail before touching any repository) and cat-blobd the
/// same way, expects both to exit 128 with `fatal: not a git repository` and to write no response.
fn not_a_repository(what: &str, cwd: &Path, envs: &[(&str, &Path)], git_global_args: &[&Path], flag: Option<&Path>) {
    let stream = cat_blob_stream(&[MISSING_ONE]);
    let mut git = Run::new("git");
    for arg in git_global_args {
        git = git.arg(arg);
    }
    let mut ours = Run::cat_blobd();
    if let Some(dir) = flag {
        ours = ours.arg("--git-dir").arg(dir);
    }
    git = git.arg("fast-import").arg("--quiet");
    for (k, v) in envs {
        git = git.env(k, v);
        ours = ours.env(k, v);
    }
    let git = git.current_dir(cwd).capture_fd3().stdin(stream.clone()).run();
    let ours = ours.current_dir(cwd).capture_fd3().stdin(stream).run();
    for (who, out) in [("git", &git), ("cat-blobd", &ours)] {
        assert_eq!(out.status.code(), Some(128), "{what}: {who}: {}", out.describe());
        assert!(
            out.first_stderr_line().to_ascii_lowercase().starts_with(b"fatal: not a git repository"),
            "{what}: {who}: {}",
            escape(&out.stderr)
        );
    }
    assert_bytes_eq(&format!("{what}: cat-blob fd"), &git.fd3, &ours.fd3);
    assert_bytes_eq(&format!("{what}: stdout"), &git.stdout, &ours.stdout);
    assert!(!escape(&ours.stderr).contains("panicked at"), "{what}: {}", escape(&ours.stderr));
}

#[test]
fn outside_any_repository() {
    let dir = TempDir::outside_any_repo("norepo");
    let ceiling = dir.path().parent().expect("parent");
    not_a_repository("outside any repository", dir.path(), &[("GIT_CEILING_DIRECTORIES", ceiling)], &[], None);
}

#[test]
fn git_dir_env_not_a_repository() {
    let dir = TempDir::outside_any_repo("norepo");
    let bogus = dir.path().join("no-such-dir");
    not_a_repository("GIT_DIR=nonexistent", dir.path(), &[("GIT_DIR", &bogus)], &[], None);
}

#[test]
fn git_dir_flag_not_a_repository() {
    let dir = TempDir::outside_any_repo("norepo");
    let bogus = dir.path().join("no-such-dir");
    let mut global = std::ffi::OsString::from("--git-dir=");
    global.push(&bogus);
    let global = std::path::PathBuf::from(global);
    not_a_repository("--git-dir nonexistent", dir.path(), &[], &[&global], Some(&bogus));
}

#[test]
fn git_dir_flag_plain_directory_is_not_a_repository() {
    let dir = TempDir::outside_any_repo("norepo");
    let mut global = std::ffi::OsString::from("--git-dir=");
    global.push(dir.path());
    let global = std::path::PathBuf::from(global);
    not_a_repository("--git-dir plain dir", dir.path(), &[], &[&global], Some(dir.path()));
}

/// Regression guard: discovery must stop at GIT_CEILING_DIRECTORIES like git's. The scratch directory is inside
/// the cat-blobd checkout (under target/), so walking past the ceiling would find the checkout's own repository.
#[test]
fn ceiling_directories_stop_discovery() {
    let dir = TempDir::new("ceiling");
    let ceiling = dir.path().parent().expect("parent");
    // Read-only sanity check first: with the ceiling, git must not find a repository here.
    let probe = Run::new("git")
        .arg("rev-parse")
        .arg("--git-dir")
        .env("GIT_CEILING_DIRECTORIES", ceiling)
        .current_dir(dir.path())
        .run();
    assert!(!probe.status.success(), "git found a repository below the ceiling: {}", escape(&probe.stdout));
    not_a_repository("GIT_CEILING_DIRECTORIES", dir.path(), &[("GIT_CEILING_DIRECTORIES", ceiling)], &[], None);
}

// ---------------------------------------------------------------------------------------------------------------
// Malformed and unusual requests. Each stream is: a valid request for a 5 MiB blob (its response must be written
// in full before anything goes wrong), the line under test, then a valid request that must not be answered if
// the line is fatal.

struct Ids {
    big: String,
    small: String,
    tree: String,
    commit: String,
    tag: String,
}

fn ids() -> &'static Ids {
    static IDS: OnceLock<Ids> = OnceLock::new();
    IDS.get_or_init(|| Ids {
        big: rev_parse(Fixture::Basic, "HEAD:five-mib.bin"),
        small: rev_parse(Fixture::Basic, "HEAD:no-newline.txt"),
        tree: rev_parse(Fixture::Basic, "HEAD^{tree}"),
        commit: rev_parse(Fixture::Basic, "HEAD"),
        tag: rev_parse(Fixture::Basic, "refs/tags/v1.0"),
    })
}

#[derive(Debug, PartialEq)]
enum Git {
    /// git answers the line (or skips it) and the stream goes on: exit 0.
    Answers,
    /// git dies on the line: exit 128, only the first request answered.
    Dies,
}

fn request_case(what: &str, line: Vec<u8>, expect: Git) {
    let ids = ids();
    let mut stream = cat_blob_stream(&[&ids.big]);
    stream.extend_from_slice(&line);
    stream.push(b'\n');
    stream.extend_from_slice(&cat_blob_stream(&[&ids.small]));
    let git = differential(what, Fixture::Basic, &stream);
    // Check the oracle did what this case is about, so a changed git cannot turn the case into a no-op.
    let answered = parse_responses(&git.fd3).len();
    match expect {
        Git::Answers => assert!(git.status.success() && answered >= 2, "{what}: git: {}", git.describe()),
        Git::Dies => assert!(git.status.code() == Some(128) && answered == 1, "{what}: git: {}", git.describe()),
    }
}

macro_rules! request_cases {
    ($($name:ident: $expect:ident, |$ids:ident| $line:expr;)*) => {$(
        #[test]
        fn $name() {
            let $ids = ids();
            let line: Vec<u8> = $line.into();
            request_case(stringify!($name), line, Git::$expect);
        }
    )*};
}

request_cases! {
    request_tree_id: Dies, |i| format!("cat-blob {}", i.tree);
    request_commit_id: Dies, |i| format!("cat-blob {}", i.commit);
    request_tag_id: Dies, |i| format!("cat-blob {}", i.tag);
    request_abbreviated_id: Dies, |i| format!("cat-blob {}", &i.small[..7]);
    request_39_hex: Dies, |i| format!("cat-blob {}", &i.small[..39]);
    request_41_hex: Dies, |i| format!("cat-blob {}a", i.small);
    request_63_hex: Dies, |i| format!("cat-blob {}{}", i.small, &i.tree[..23]);
    request_64_hex_in_sha1_repository: Dies, |i| format!("cat-blob {}{}", i.small, &i.tree[..24]);
    request_65_hex: Dies, |i| format!("cat-blob {}{}", i.small, &i.tree[..25]);
    request_trailing_space: Dies, |i| format!("cat-blob {} ", i.small);
    request_trailing_cr: Dies, |i| format!("cat-blob {}\r", i.small);
    request_trailing_tab: Dies, |i| format!("cat-blob {}\t", i.small);
    request_non_hex_digit: Dies, |i| format!("cat-blob g{}", &i.small[1..]);
    request_upper_case_hex: Answers, |i| format!("cat-blob {}", i.small.to_ascii_uppercase());
    request_mixed_case_hex: Answers, |i| format!("cat-blob {}{}", i.small[..20].to_ascii_uppercase(), &i.small[20..]);
    request_upper_case_missing_id: Answers, |_i| "cat-blob ABCDEF0000000000000000000000000000000001";
    request_null_id: Answers, |_i| "cat-blob 0000000000000000000000000000000000000000";
    request_id_then_nul_and_junk: Answers, |i| [format!("cat-blob {}", i.small).as_bytes(), b"\0junk\r and more"].concat();
    request_nul_right_after_keyword: Dies, |i| [b"cat-blob \0".as_ref(), i.small.as_bytes()].concat();
    request_undeclared_mark: Dies, |_i| "cat-blob :1";
    request_mark_zero: Dies, |_i| "cat-blob :0";
    request_mark_not_a_number: Dies, |_i| "cat-blob :abc";
    request_mark_with_garbage: Dies, |_i| "cat-blob :1x";
    request_mark_trailing_space: Dies, |_i| "cat-blob :1 ";
    request_mark_negative: Dies, |_i| "cat-blob :-1";
    request_mark_leading_space: Dies, |_i| "cat-blob : 7";
    request_mark_overflow: Dies, |_i| "cat-blob :99999999999999999999999";
    request_no_argument: Dies, |_i| "cat-blob";
    request_keyword_and_space_only: Dies, |_i| "cat-blob ";
    request_empty_line: Dies, |_i| "";
    request_two_spaces: Dies, |i| format!("cat-blob  {}", i.small);
    request_tab_separator: Dies, |i| format!("cat-blob\t{}", i.small);
    request_leading_space: Dies, |i| format!(" cat-blob {}", i.small);
    request_upper_case_keyword: Dies, |i| format!("CAT-BLOB {}", i.small);
    request_revision_head: Dies, |_i| "cat-blob HEAD";
    request_revision_path: Dies, |_i| "cat-blob HEAD:README.md";
    request_ref_name: Dies, |_i| "cat-blob main";
    request_non_ascii_argument: Dies, |_i| "cat-blob \u{e9}t\u{e9}";
    request_control_characters_in_echo: Dies, |_i| "cat-blob \x1b[31mred\x7f\x01";
    request_comment_line: Answers, |_i| "# a comment: cat-blob 0000";
    request_unknown_command: Dies, |_i| "cat-blobs 0000000000000000000000000000000000000001";
}

// ---------------------------------------------------------------------------------------------------------------
// Special objects and streams

#[test]
fn empty_tree_in_empty_repository_is_a_tree() {
    // git treats the empty tree as always present, even where it is not stored, and dies with "is a tree".
    let stream = cat_blob_stream(&[MISSING_ONE, EMPTY_TREE, MISSING_ONE]);
    let git = differential("empty tree in empty repository", Fixture::Empty, &stream);
    assert_eq!(git.status.code(), Some(128), "git: {}", git.describe());
}

#[test]
fn empty_blob_in_empty_repository_is_missing() {
    let stream = cat_blob_stream(&[EMPTY_BLOB, MISSING_ONE]);
    let git = differential("empty blob in empty repository", Fixture::Empty, &stream);
    assert_bytes_eq("git", format!("{EMPTY_BLOB} missing\n{MISSING_ONE} missing\n").as_bytes(), &git.fd3);
}

#[test]
fn empty_blob_in_basic_is_present() {
    let stream = cat_blob_stream(&[EMPTY_BLOB, EMPTY_BLOB]);
    let git = differential("empty blob in basic", Fixture::Basic, &stream);
    assert_bytes_eq("git", format!("{EMPTY_BLOB} blob 0\n\n").repeat(2).as_bytes(), &git.fd3);
}

#[test]
fn only_missing_ids() {
    let mut rng = Rng::new(42);
    let ids: Vec<String> = (0..300).map(|_| rng.hex_id()).collect();
    for fixture in [Fixture::Basic, Fixture::Alternates, Fixture::Empty] {
        let git = differential(&format!("only missing ids in {}", fixture.name()), fixture, &cat_blob_stream(&ids));
        assert_eq!(parse_responses(&git.fd3).len(), ids.len());
    }
}

#[test]
fn empty_stream() {
    differential("empty stream", Fixture::Basic, b"");
}

#[test]
fn same_blob_many_times() {
    let ids = ids();
    let requests: Vec<&str> = (0..200).map(|i| if i % 2 == 0 { ids.small.as_str() } else { MISSING_ONE }).collect();
    differential("same blob many times", Fixture::Basic, &cat_blob_stream(&requests));
}

/// Without `--cat-blob-fd`, responses go to stdout.
#[test]
fn responses_on_stdout() {
    let stream = discovery_stream(Fixture::Basic);
    let git = git_fast_import(Fixture::Basic, &stream, false);
    let ours = Run::cat_blobd_on(Fixture::Basic).stdin(stream).run();
    assert!(git.status.success() && !git.stdout.is_empty(), "git: {}", git.describe());
    assert_same_as_git("responses on stdout", &git, &ours);
}

/// `--cat-blob-fd=9` with fd 9 closed: the die happens when the first response is written, not before
/// (`fatal: Write to frontend failed: Bad file descriptor` in git 2.47).
#[test]
fn cat_blob_fd_not_open() {
    let ids = ids();
    let stream = [b"# a comment first\n".as_ref(), &cat_blob_stream(&[&ids.small, MISSING_ONE])].concat();
    let (_guard, git) = oracle(Fixture::Basic);
    let git = git.arg("--cat-blob-fd=9").redirect("9>&-").stdin(stream.clone()).run();
    let ours = Run::cat_blobd_on(Fixture::Basic).arg("--cat-blob-fd=9").redirect("9>&-").stdin(stream).run();
    assert_eq!(git.status.code(), Some(128), "git: {}", git.describe());
    assert_same_as_git("--cat-blob-fd=9 closed", &git, &ours);
}

/// With a closed cat-blob fd but no request that needs a response, nothing fails.
#[test]
fn cat_blob_fd_not_open_without_requests() {
    let stream = b"# nothing to answer\n".to_vec();
    let (_guard, git) = oracle(Fixture::Basic);
    let git = git.arg("--cat-blob-fd=9").redirect("9>&-").stdin(stream.clone()).run();
    let ours = Run::cat_blobd_on(Fixture::Basic).arg("--cat-blob-fd=9").redirect("9>&-").stdin(stream).run();
    assert!(git.status.success(), "git: {}", git.describe());
    assert_same_as_git("--cat-blob-fd=9 closed, no requests", &git, &ours);
}

/// Nothing but `fatal:` lines on stderr unless asked, even without `--quiet`.
#[test]
fn stderr_is_silent_without_quiet() {
    let stream = discovery_stream(Fixture::Basic);
    let ours: Output = Run::new(crate::util::CAT_BLOBD)
        .arg("--git-dir")
        .arg(Fixture::Basic.git_dir())
        .capture_fd3()
        .stdin(stream.clone())
        .run();
    assert!(ours.status.success(), "{}", ours.describe());
    assert!(ours.stderr.is_empty(), "stderr: {}", escape(&ours.stderr));
    let git = git_fast_import(Fixture::Basic, &stream, true);
    assert_bytes_eq("cat-blob fd", &git.fd3, &ours.fd3);
}

/// `--stats` counts as missing the objects that do not exist, not every answer whose bytes end in " missing":
/// an `ls` of a path named "x missing" answers `missing x missing`, which once counted.
#[test]
fn stats_count_missing_objects_by_what_the_answer_is() {
    let fixture = Fixture::Basic;
    let tree = rev_parse(fixture, "HEAD^{tree}");
    let stream = format!("ls {tree} \"nope missing\"\nls {tree} nope\ncat-blob {MISSING_ONE}\n");
    let ours = Run::cat_blobd_on(fixture).arg("--stats").stdin(stream).run();
    assert!(ours.status.success(), "{}", ours.describe());
    assert_bytes_eq(
        "responses",
        format!("missing nope missing\nmissing nope\n{MISSING_ONE} missing\n").as_bytes(),
        &ours.stdout,
    );
    let stderr = String::from_utf8(ours.stderr).expect("stats are text");
    assert!(stderr.contains("requests:      3 (1 missing)"), "{stderr}");
}

/// A repository where blob `a` (packed) and blob `c` (loose only) are both replaced by blob `b`.
fn replaced_blobs_repo(dir: &TempDir) -> (std::path::PathBuf, [String; 3]) {
    let git_dir = dir.path().join("repo.git");
    crate::util::case::git_init_bare(&git_dir, false);
    let mut ids = Vec::new();
    for (name, content) in [("a", "a\n"), ("b", "bbb\n"), ("c", "c\n")] {
        let file = dir.path().join(name);
        std::fs::write(&file, content).expect("write blob file");
        let id = crate::util::git(&git_dir, &["hash-object", "-w", file.to_str().expect("utf-8 path")]);
        ids.push(String::from_utf8(id).expect("hex").trim_end().to_owned());
    }
    let [a, b, c] = <[String; 3]>::try_from(ids).expect("three ids");
    let list = dir.path().join("pack-list");
    std::fs::write(&list, format!("{a}\n{b}\n")).expect("write pack list");
    let pack = Run::new("git")
        .env("GIT_DIR", &git_dir)
        .arg("pack-objects")
        .arg("-q")
        .arg(git_dir.join("objects/pack/pack"))
        .stdin(std::fs::read(&list).expect("read pack list"))
        .run();
    assert!(pack.status.success(), "git pack-objects: {}", pack.describe());
    crate::util::git(&git_dir, &["replace", &a, &b]);
    crate::util::git(&git_dir, &["replace", &c, &b]);
    (git_dir, [a, b, c])
}

/// A blob the stream defines whose id is already in a pack is not the stream's own: git finds it in the pack and
/// reads it back (by mark and by id) through replace refs. One that is only loose is written into git's own
/// pack and read from there, without replacement.
#[test]
fn stream_blobs_already_packed_are_read_through_replace_refs() {
    let dir = TempDir::new("replaced-stream-blobs");
    let (git_dir, [a, _b, c]) = replaced_blobs_repo(&dir);
    let stream = format!(
        "cat-blob {a}\ncat-blob {c}\nblob\nmark :1\ndata 2\na\n\ncat-blob :1\ncat-blob {a}\n\
         blob\nmark :2\ndata 2\nc\n\ncat-blob :2\ncat-blob {c}\n"
    );
    // cat-blobd first: git fast-import writes a pack into the repository.
    let ours = Run::cat_blobd()
        .arg("--git-dir")
        .arg(&git_dir)
        .capture_fd3()
        .arg("--cat-blob-fd=3")
        .stdin(stream.clone())
        .run();
    let git = Run::new("git")
        .arg("fast-import")
        .arg("--quiet")
        .arg("--cat-blob-fd=3")
        .env("GIT_DIR", &git_dir)
        .capture_fd3()
        .stdin(stream)
        .run();
    assert_same_as_git("stream blobs and replace refs", &git, &ours);
    let answers = parse_responses(&git.fd3);
    assert_eq!(answers.len(), 6, "{}", git.describe());
}
