//! `ls <dataref> <path>`, through the differential runner in [`crate::util::case`] (git in a throwaway
//! repository borrowing the fixture's objects, with the same config and replace refs).
//!
//! The repositories (built by fixtures/make-ls-fixture.sh with real git, pinned dates) have nested directories,
//! names with every byte class that needs quoting, a symlink, a gitlink, an executable, annotated, nested and odd
//! tags, a replaced commit, and hand-made trees, commits and tags that `git mktree`/`git commit` would refuse (raw
//! modes such as `100664`, `644`, `40755`; null ids; corrupt entries; bad `tree`/`object` lines).

use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;
use std::sync::OnceLock;

use crate::util::case::{Case, EMPTY_TREE, Source, StderrMatch};
use crate::util::{Output, build_with_script, escape, git};

const NULL: &str = "0000000000000000000000000000000000000000";
const MISSING: &str = "1234567890123456789012345678901234567890";
const IDENT: &str = "C O Mitter <c@example.com> 1700000000 +0000";
const MAKE_LS_FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/make-ls-fixture.sh");

/// The repositories of these tests: where they are, and the ids the script recorded.
struct LsRepos {
    root: PathBuf,
    ids: HashMap<String, String>,
}

impl LsRepos {
    fn id(&self, name: &str) -> &str {
        self.ids.get(name).unwrap_or_else(|| panic!("the fixture script records no id named {name}"))
    }

    fn git_dir(&self, repo: Repo) -> PathBuf {
        self.root.join(repo.name()).join(".git")
    }
}

/// Built once per test process; cached across runs under a name that changes with the script.
fn fixture() -> &'static LsRepos {
    static FIXTURE: OnceLock<LsRepos> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let root = build_with_script(MAKE_LS_FIXTURE, "ls-fixture");
        let ids = fs::read_to_string(root.join("ids")).expect("read ids");
        let ids = ids
            .lines()
            .map(|line| {
                let (name, id) = line.split_once('=').expect("name=id");
                (name.to_owned(), id.to_owned())
            })
            .collect();
        LsRepos { root, ids }
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Repo {
    Sha1,
    Sha256,
}

impl Repo {
    fn name(self) -> &'static str {
        match self {
            Repo::Sha1 => "sha1",
            Repo::Sha256 => "sha256",
        }
    }
}

/// `stream` through git fast-import and cat-blobd, each in a throwaway repository borrowing `repo`'s objects,
/// with `config` set and the fixture's replace ref copied.
fn compare(what: &str, repo: Repo, config: &[(&str, &str)], stream: &[u8]) -> Output {
    let objects = vec![fixture().git_dir(repo).join("objects")];
    let config: Vec<(String, String)> = config.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    Case::new(what, Source::Extra { objects, sha256: repo == Repo::Sha256 })
        .raw_stream(stream.to_vec())
        .prepare(move |git_dir| {
            for (key, value) in &config {
                git(git_dir, &["config", key, value]);
            }
            if repo == Repo::Sha1 {
                let f = fixture();
                git(git_dir, &["update-ref", &format!("refs/replace/{}", f.id("replaced")), f.id("replacement")]);
            }
        })
        .differential()
}

/// One `ls` line per path, all on `dataref`; git must answer every one (the comparison proves nothing otherwise).
fn compare_paths(what: &str, repo: Repo, config: &[(&str, &str)], dataref: &str, paths: &[&[u8]]) -> Output {
    let mut stream = Vec::new();
    for path in paths {
        stream.extend_from_slice(format!("ls {dataref} ").as_bytes());
        stream.extend_from_slice(path);
        stream.push(b'\n');
    }
    let git = compare(what, repo, config, &stream);
    assert!(git.status.success(), "{what}: git failed: {}", git.describe());
    assert_eq!(git.fd3.iter().filter(|&&b| b == b'\n').count(), paths.len(), "{what}: one response per request");
    git
}

/// A stream with a valid `ls` first, then `bad`; git must fail on `bad`.
fn compare_error(repo: Repo, bad: &[u8]) {
    let good = match repo {
        Repo::Sha1 => fixture().id("commit"),
        Repo::Sha256 => fixture().id("s256_commit"),
    };
    let stream = [format!("ls {good} hello.txt\n").as_bytes(), bad, b"\n"].concat();
    let what = escape(bad);
    let git = compare(&what, repo, &[], &stream);
    assert_eq!(git.status.code(), Some(128), "{what}: git must die: {}", git.describe());
    assert_eq!(git.fd3.iter().filter(|&&b| b == b'\n').count(), 1, "{what}: the first ls is answered");
}

/// Paths in the ordinary tree: found, missing, odd spellings. Quoted when the byte cannot appear raw (LF).
const TREE_PATHS: &[&[u8]] = &[
    b"hello.txt",
    b"with space.txt",
    b"\"with space.txt\"",
    b" lead and trail ",
    b"dir",
    b"dir/y",
    b"dir/sub",
    b"dir/sub/z",
    b"dir/sub/deeper",
    b"dir/sub/deeper/file",
    b"Dir/F",
    b"exe",
    b"link",
    b"gitlink",
    b"Case",
    b"case",
    b"CASE",
    b"nosuch",
    b"no such with space",
    b"dir/nosuch",
    b"dir/sub/deeper/file/x",
    b"hello.txt/",
    b"hello.txt/x",
    b"gitlink/x",
    b"gitlink/",
    b"link/x",
    b"exe/x",
    b"./hello.txt",
    b"dir/../hello.txt",
    b".git",
    b"HELLO.TXT",
    b"hello.txt\r",
    b"hello.txt\0ignored after NUL",
    b"\"hello.txt\"",
    b"\"dir/sub/z\"",
    b"\"\\150ello.txt\"",
];

/// Names that need quoting, asked for raw (where the byte can appear in a line) and quoted.
const QUOTING_PATHS: &[&[u8]] = &[
    b"ctl\x01x",
    b"\"ctl\\001x\"",
    b"esc\x1bx",
    b"del\x7fx",
    b"\"del\\177x\"",
    b"quo\"te",
    b"\"quo\\\"te\"",
    b"back\\slash",
    b"\"back\\\\slash\"",
    b"with\ttab",
    b"\"with\\ttab\"",
    b"\"new\\nline\"",
    "ünï".as_bytes(),
    b"\"\\303\\274n\\303\\257\"",
    b"bell\x07\x08\x0c\x0b\r",
    b"\"bell\\a\\b\\f\\v\\r\"",
    b"mix\x01\x7f\x1b\x07\x08\x0c\x0b\r\\\"\xe9 z",
    b"\"mix\\001\\177\\033\\a\\b\\f\\v\\r\\\\\\\"\\351 z\"",
    b"\"\\\"lead\"",
    b"latin1\xe9",
    b"cr\r",
    b"\"cr\\r\"",
    b"\"missing\\001\\177\"",
    "missing ünï".as_bytes(),
    b"\"\"",
];

#[test]
fn found_and_missing_paths_match_git() {
    let f = fixture();
    for dataref in ["commit", "tree", "tag", "nested_tag", "nested2_tag", "tree_tag", "commit_to_commit"] {
        compare_paths(&format!("ls {dataref}"), Repo::Sha1, &[], f.id(dataref), TREE_PATHS);
    }
}

#[test]
fn answers_are_what_git_prints() {
    // Spot checks of the oracle itself, so the differential tests are known to exercise what they claim.
    let f = fixture();
    let git = compare_paths(
        "spot checks",
        Repo::Sha1,
        &[],
        f.id("commit"),
        &[b"hello.txt", b"gitlink", b"nosuch", b"/hello.txt", b"\"with\\ttab\""],
    );
    let expected = format!(
        "100644 blob {hello}\thello.txt\n160000 commit 1234567890abcdef1234567890abcdef12345678\tgitlink\n\
         missing nosuch\n040000 tree {tree}\t/hello.txt\n100644 blob {hello}\t\"with\\ttab\"\n",
        hello = f.id("hello"),
        tree = f.id("tree"),
    );
    assert_eq!(escape(&git.fd3), escape(expected.as_bytes()));
}

#[test]
fn root_quirks_match_git() {
    let f = fixture();
    let paths: &[&[u8]] = &[b"", b"\"\"", b"/", b"/hello.txt", b"/nosuch/x", b"//", b"/dir/", b"\"/with\\ttab\""];
    compare_paths("root", Repo::Sha1, &[], f.id("commit"), paths);
    compare_paths("empty tree", Repo::Sha1, &[], EMPTY_TREE, &[b"", b"x", b"/x"]);
}

#[test]
fn quoting_matches_git() {
    compare_paths("quoting", Repo::Sha1, &[], fixture().id("commit"), QUOTING_PATHS);
}

#[test]
fn core_quote_path_false_matches_git() {
    let config = [("core.quotePath", "false")];
    compare_paths("quotePath=false", Repo::Sha1, &config, fixture().id("commit"), QUOTING_PATHS);
}

#[test]
fn core_ignore_case_matches_git() {
    let config = [("core.ignoreCase", "true")];
    let paths: &[&[u8]] = &[
        b"HELLO.TXT",
        b"Hello.Txt",
        b"case",
        b"CASE",
        b"DIR/F",
        b"dir/f",
        b"DIR/Y",
        b"dir/SUB/Z",
        "ÜNÏ".as_bytes(),
        "ünï".as_bytes(),
        b"WITH SPACE.TXT",
        b"\"WITH\\tTAB\"",
        b"LINK/x",
    ];
    compare_paths("ignoreCase=true", Repo::Sha1, &config, fixture().id("commit"), paths);
    compare_paths("ignoreCase=true odd", Repo::Sha1, &config, fixture().id("odd"), &[b"upper/y", b"UPPER", b"DUP"]);
    let both = [("core.ignoreCase", "true"), ("core.quotePath", "false")];
    compare_paths("both", Repo::Sha1, &both, fixture().id("commit"), &["ÜNÏ".as_bytes(), "HELLO.txt".as_bytes()]);
}

#[test]
fn raw_modes_and_hand_made_trees_match_git() {
    let paths: &[&[u8]] = &[
        b"m100664",
        b"m644",
        b"m40755",
        b"m40755/y",
        b"m40755/sub/z",
        b"m040000",
        b"m0",
        b"m0/x",
        b"m4000",
        b"m104644",
        b"m140000",
        b"m140000/x",
        b"m1100644",
        b"m00000100644",
        b"m44000",
        b"m44000/sub",
        b"m160755",
        b"m160755/x",
        b"m120755",
        b"nulldir",
        b"nulldir755",
        b"nulldir/x",
        b"nullblob",
        b"a/b",
        b"a",
        b"dup",
        b"toblob",
        b"tomissing",
        b"tocommit",
        b"tocorrupt",
        b"Upper/y",
        b"",
    ];
    let f = fixture();
    compare_paths("odd tree", Repo::Sha1, &[], f.id("odd"), paths);
    compare_paths("odd tree via a commit", Repo::Sha1, &[], f.id("commit_to_odd"), paths);
}

#[test]
fn peeling_matches_git() {
    let f = fixture();
    let paths: &[&[u8]] = &[b"hello.txt", b"dir/y", b"only.txt", b""];
    for dataref in ["commit_upper", "commit_word", "commit_long", "tag_upper", "replaced", "replacement"] {
        compare_paths(dataref, Repo::Sha1, &[], f.id(dataref), paths);
    }
    let upper = f.id("commit").to_ascii_uppercase();
    compare_paths("upper-case dataref", Repo::Sha1, &[], &upper, paths);
}

#[test]
fn replace_refs_are_honoured() {
    // `replaced` has only `only.txt`; its replacement has the full tree.
    let f = fixture();
    let git = compare_paths("replaced", Repo::Sha1, &[], f.id("replaced"), &[b"only.txt", b"hello.txt"]);
    assert_eq!(
        escape(&git.fd3),
        escape(format!("missing only.txt\n100644 blob {}\thello.txt\n", f.id("hello")).as_bytes())
    );
}

#[test]
fn dataref_errors_match_git() {
    let f = fixture();
    let commit = f.id("commit");
    let lines = [
        "ls \"hello.txt\"".to_owned(),
        "ls \"bad".to_owned(),
        "ls :x y".to_owned(),
        "ls :".to_owned(),
        "ls :1x y".to_owned(),
        "ls :1".to_owned(),
        "ls :1 y".to_owned(),
        "ls :0 y".to_owned(),
        "ls :-1 y".to_owned(),
        "ls ".to_owned(),
        "ls abc x".to_owned(),
        "ls HEAD x".to_owned(),
        format!("ls {} x", &commit[..39]),
        format!("ls {commit}{commit} x"),
        format!("ls {commit}x"),
        format!("ls {commit}"),
        format!("ls {commit}\tx"),
    ];
    for line in lines {
        compare_error(Repo::Sha1, line.as_bytes());
    }
}

#[test]
fn resolution_errors_match_git() {
    let f = fixture();
    let mut lines = vec![
        format!("ls {MISSING} x"),
        format!("ls {MISSING} \"bad"),
        format!("ls {NULL} x"),
        format!("ls {} x", f.id("hello")),
        format!("ls {} \"bad", f.id("hello")),
    ];
    for name in [
        "blob_tag",
        "tag_to_tag_to_blob",
        "commit_to_blob",
        "commit_to_missing",
        "commit_to_null",
        "commit_short",
        "commit_nonhex",
        "commit_empty",
        "tag_short",
        "tag_to_bad_commit",
        "tag_to_missing",
    ] {
        lines.push(format!("ls {} hello.txt", f.id(name)));
    }
    for line in lines {
        compare_error(Repo::Sha1, line.as_bytes());
    }
}

#[test]
fn path_errors_match_git() {
    let commit = fixture().id("commit");
    for path in [
        "\"unterminated",
        "\"bad\\x\"",
        "\"bad\\8\"",
        "\"bad\\400\"",
        "\"a\\000b\"",
        "\"a\\000b\" x",
        "\"hello.txt\" ",
        "\"hello.txt\"x",
        "dir/",
        "dir//y",
        "dir/sub/",
        "Dir/",
    ] {
        compare_error(Repo::Sha1, format!("ls {commit} {path}").as_bytes());
    }
}

#[test]
fn tree_loading_errors_match_git() {
    let f = fixture();
    let odd = f.id("odd");
    let mut lines: Vec<String> = ["toblob/x", "tomissing/x", "tocommit/x", "tocorrupt/x", "tocorrupt/", "nulldir/"]
        .iter()
        .map(|path| format!("ls {odd} {path}"))
        .collect();
    lines.push(format!("ls {} toblob/x", f.id("commit_to_odd")));
    for name in ["corrupt_nonoctal", "corrupt_empty_mode", "corrupt_nul_in_mode", "corrupt_trailing_digits"] {
        lines.push(format!("ls {} a", f.id(name)));
        // The root tree is parsed before the path.
        lines.push(format!("ls {} \"bad", f.id(name)));
    }
    for line in lines {
        compare_error(Repo::Sha1, line.as_bytes());
    }
}

#[test]
fn marks_of_stream_blobs_are_not_tree_ish() {
    let blob = b"blob\nmark :1\ndata 10\nstreamblob\n";
    let hex = "a4bcf5a3f91a2d42af2d73e8ffebdf08cef7c4cc"; // `streamblob`, in no repository
    for tail in ["ls :1 x".to_owned(), format!("ls {hex} x"), "ls :1x".to_owned(), "ls :2 x".to_owned()] {
        let stream = [&blob[..], tail.as_bytes(), b"\n"].concat();
        let git = compare(&tail, Repo::Sha1, &[], &stream);
        assert_eq!(git.status.code(), Some(128), "{tail}: {}", git.describe());
    }
}

/// git reports a directory entry naming a blob *written by this stream* as `not a tree: <id>` (it checks the type
/// of objects in its in-progress pack before reading them), and one naming a blob of the repository as
/// `can't load tree <id>`. Such an `ls` stays on the front end's thread, which knows the stream's blobs: on a
/// resolver thread it would say the latter.
#[test]
fn subtree_that_is_a_stream_blob_matches_git() {
    let f = fixture();
    let stream = format!("blob\nmark :1\ndata 10\nstreamblob\nls {} d/x\n", f.id("stream_blob_dir"));
    compare("stream blob as subtree", Repo::Sha1, &[], stream.as_bytes());
}

#[test]
fn sha256_repository_matches_git() {
    let f = fixture();
    let paths: &[&[u8]] = &[b"hello.txt", b"dir", b"dir/y", b"nosuch", b"", b"/x", "ünï".as_bytes()];
    for dataref in ["s256_commit", "s256_tag", "s256_tree"] {
        compare_paths(dataref, Repo::Sha256, &[], f.id(dataref), paths);
    }
    compare_paths("sha256 odd", Repo::Sha256, &[], f.id("s256_odd"), &[b"m644", b"nulldir", b"nulldir/x"]);
    let tree = f.id("s256_tree");
    for line in [
        format!("ls {} hello.txt", &tree[..40]),
        format!("ls {} hello.txt", f.id("s256_commit_short")),
        format!("ls {tree}"),
        format!("ls {tree} dir/"),
    ] {
        compare_error(Repo::Sha256, line.as_bytes());
    }
}

/// `ls` on objects that existed before the stream runs on the resolver threads (with the engine settings CI
/// varies: one thread or four, inline first requests or none); everything else stays on the front end's thread.
/// One long stream mixes them: `ls` of commits, tags, trees and imported marks among `cat-blob`, `get-mark` and
/// `progress`; then a blob only the stream has (from then on `ls` stays on the front end); then a commit written
/// through git, `ls` of it (git's to answer) and of the commits before it. Every answer must come in order.
#[test]
fn ls_keeps_stream_order_among_other_reads() {
    let f = fixture();
    let (commit, hello) = (f.id("commit"), f.id("hello"));
    let datarefs = [commit, f.id("tree"), f.id("tag"), f.id("nested_tag"), f.id("commit_to_commit"), ":1", ":2"];
    let mut stream = Vec::new();
    let round = |stream: &mut Vec<u8>, i: usize| {
        for (j, path) in TREE_PATHS.iter().enumerate().filter(|(j, _)| (j + i).is_multiple_of(3)) {
            stream.extend_from_slice(format!("ls {} ", datarefs[(i + j) % datarefs.len()]).as_bytes());
            stream.extend_from_slice(path);
            stream.push(b'\n');
        }
        stream.extend_from_slice(format!("cat-blob {hello}\nget-mark :{}\nprogress round {i}\n", 1 + i % 2).as_bytes());
    };
    for i in 0..30 {
        round(&mut stream, i);
    }
    stream.extend_from_slice(b"blob\nmark :3\ndata 6\nhello\nblob\nmark :4\ndata 10\nonly here\n\n");
    for i in 30..40 {
        round(&mut stream, i);
    }
    stream.extend_from_slice(
        format!(
            "commit refs/heads/side\nmark :5\ncommitter {IDENT}\ndata 2\nc\nfrom {commit}\nM 100644 :4 new.txt\n\n\
             ls :5 new.txt\nls {commit} new.txt\nls :5 dir/sub/z\nget-mark :5\ncat-blob :4\n"
        )
        .as_bytes(),
    );
    for i in 40..50 {
        round(&mut stream, i);
    }
    let marks = format!(":1 {commit}\n:2 {}\n", f.id("tree"));
    let objects = vec![fixture().git_dir(Repo::Sha1).join("objects")];
    let git = Case::new("ls among reads", Source::Extra { objects, sha256: false })
        .raw_stream(stream)
        .raw_file("marks.in", marks.into_bytes())
        .args(&["--import-marks=marks.in"])
        .differential();
    assert!(git.status.success(), "git failed: {}", git.describe());
}

/// The first `ls` that fails (here on a resolver thread) ends the stream after every answer before it, and none
/// after it, as with git.
#[test]
fn a_failing_ls_ends_the_stream_after_the_answers_before_it() {
    let f = fixture();
    let mut stream = Vec::new();
    for i in 0..300 {
        let path = TREE_PATHS[i % TREE_PATHS.len()];
        stream.extend_from_slice(format!("ls {} ", f.id("commit")).as_bytes());
        stream.extend_from_slice(path);
        stream.push(b'\n');
    }
    let tail = format!("ls {} toblob/x\nls {} hello.txt\ncat-blob {}\n", f.id("odd"), f.id("commit"), f.id("hello"));
    stream.extend_from_slice(tail.as_bytes());
    let git = compare("failing ls after 300", Repo::Sha1, &[], &stream);
    assert_eq!(git.status.code(), Some(128), "git must die: {}", git.describe());
    assert_eq!(git.fd3.iter().filter(|&&b| b == b'\n').count(), 300, "the answers before the failure");
}

/// An `ls` that fails on a resolver thread while the next command, a commit, has already started git for
/// write-through: the stream ends as git alone ends it at that `ls` (its answers before, its status, its
/// stderr with the crash report line, its marks file, no ref). The failing `ls` is the 37th request: still
/// pending (not handed to a thread) when the commit arrives, whatever the thread and inline settings, so git
/// always starts first here.
#[test]
fn a_failing_ls_before_a_commit_ends_the_stream_as_git_does() {
    let f = fixture();
    let mut stream = Vec::new();
    for path in TREE_PATHS {
        stream.extend_from_slice(format!("ls {} ", f.id("commit")).as_bytes());
        stream.extend_from_slice(path);
        stream.push(b'\n');
    }
    let (odd, hello) = (f.id("odd"), f.id("hello"));
    let tail = format!(
        "ls {odd} tomissing/x\ncommit refs/heads/side\nmark :1\ncommitter {IDENT}\ndata 2\nc\nM 100644 {hello} f\n\n"
    );
    stream.extend_from_slice(tail.as_bytes());
    let objects = vec![fixture().git_dir(Repo::Sha1).join("objects")];
    let git = Case::new("failing ls, then a commit", Source::Extra { objects, sha256: false })
        .raw_stream(stream)
        .args(&["--export-marks=marks.out"])
        .compare("marks.out")
        .compare("refs/heads/side")
        .whole_stderr(StderrMatch::AnyCase)
        .differential();
    assert_eq!(git.status.code(), Some(128), "git must die: {}", git.describe());
}
