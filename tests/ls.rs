//! `ls <dataref> <path>` against the installed git: the same stream through `git fast-import --cat-blob-fd=3` (in a
//! throwaway repository borrowing the fixture's objects, with the same config and replace refs) and through
//! cat-blobd. The cat-blob fd, stdout and exit status must be identical, the first stderr line equal ignoring
//! ASCII case.
//!
//! The fixture (built by `FIXTURE_SCRIPT` with real git, pinned dates) has nested directories, names with every
//! byte class that needs quoting, a symlink, a gitlink, an executable, annotated, nested and odd tags, a replaced
//! commit, and hand-made trees, commits and tags that `git mktree`/`git commit` would refuse (raw modes such as
//! `100664`, `644`, `40755`; null ids; corrupt entries; bad `tree`/`object` lines).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::util::{Output, Run, TempDir, assert_same_as_git, clean_git_env, escape};

const NULL: &str = "0000000000000000000000000000000000000000";
const MISSING: &str = "1234567890123456789012345678901234567890";
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// Builds `$1/sha1` (the main repository) and `$1/sha256`, and writes `name=id` lines to `$1/ids`.
const FIXTURE_SCRIPT: &str = r##"
set -euo pipefail
OUT=$1
for v in $(env | sed -n 's/^\(GIT_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null HOME="$OUT/home" XDG_CONFIG_HOME="$OUT/home/.config"
export TZ=UTC LC_ALL=C LANG=C
export GIT_AUTHOR_NAME='A U Thor' GIT_AUTHOR_EMAIL='author@example.com' GIT_AUTHOR_DATE='@1700000000 +0000'
export GIT_COMMITTER_NAME='C O Mitter' GIT_COMMITTER_EMAIL='committer@example.com'
export GIT_COMMITTER_DATE='@1700000000 +0000'
export GIT_CONFIG_COUNT=3 GIT_CONFIG_KEY_0=gc.auto GIT_CONFIG_VALUE_0=0
export GIT_CONFIG_KEY_1=advice.nestedTag GIT_CONFIG_VALUE_1=false GIT_CONFIG_KEY_2=core.fsync GIT_CONFIG_VALUE_2=none
mkdir -p "$HOME"

id() { printf '%s=%s\n' "$1" "$2" >>"$OUT/ids"; }
bin() { printf "$(printf '%s' "$1" | sed 's/../\\x&/g')"; }         # hex -> raw bytes
entry() { printf '%s %s\0' "$1" "$2"; bin "$3"; }                    # one raw tree entry
literally() { git hash-object -t "$1" --literally -w --stdin; }
blob() { printf '%s' "$1" | git hash-object -w --stdin; }
add() { git update-index --add --cacheinfo "$1,$2,$3"; }
upper() { printf '%s' "$1" | tr a-f A-F; }
NULL=0000000000000000000000000000000000000000
MISSING=1234567890123456789012345678901234567890

# --- sha1: an ordinary history -----------------------------------------------------------------------------------
git init -q -b main "$OUT/sha1"
cd "$OUT/sha1"
HELLO=$(blob $'hello\n'); id hello "$HELLO"
OTHER=$(blob $'other\n'); id other "$OTHER"
add 100644 "$HELLO" hello.txt
add 100644 "$OTHER" 'with space.txt'
add 100644 "$HELLO" ' lead and trail '
add 100644 "$HELLO" dir/y
add 100644 "$OTHER" dir/sub/deeper/file
add 100644 "$HELLO" dir/sub/z
add 100644 "$OTHER" Dir/F
add 100644 "$HELLO" Case
add 100644 "$OTHER" case
add 100755 "$OTHER" exe
add 120000 "$(blob hello.txt)" link
add 160000 1234567890abcdef1234567890abcdef12345678 gitlink
for name in $'ctl\001x' $'esc\033x' $'del\177x' 'quo"te' 'back\slash' $'with\ttab' $'new\nline' 'ünï' \
    $'bell\a\b\f\v\r' $'mix\001\177\033\a\b\f\v\r\\"\351 z' '"lead' $'latin1\351' $'cr\r'; do
    add 100644 "$HELLO" "$name"
done
TREE=$(git write-tree); id tree "$TREE"
COMMIT=$(git commit-tree -m first "$TREE"); id commit "$COMMIT"
git update-ref refs/heads/main "$COMMIT"
git tag -a -m annotated v1 "$COMMIT"; id tag "$(git rev-parse v1)"
git tag -a -m nested v1-nested v1; id nested_tag "$(git rev-parse v1-nested)"
git tag -a -m nested2 v1-nested2 v1-nested; id nested2_tag "$(git rev-parse v1-nested2)"
git tag -a -m 'of a blob' blobtag "$HELLO"; id blob_tag "$(git rev-parse blobtag)"
git tag -a -m 'of a tree' treetag "$TREE"; id tree_tag "$(git rev-parse treetag)"
SMALL=$(printf '100644 blob %s\tonly.txt\n' "$OTHER" | git mktree)
REPLACED=$(git commit-tree -m replaced "$SMALL"); id replaced "$REPLACED"
REPLACEMENT=$(git commit-tree -m replacement "$TREE"); id replacement "$REPLACEMENT"
git update-ref refs/keep/replaced "$REPLACED"
git replace "$REPLACED" "$REPLACEMENT"
git repack -adq

# --- sha1: hand-made objects, loose ------------------------------------------------------------------------------
DIR=$(git rev-parse "$TREE:dir")
CORRUPT=$( { printf '10064x a\0'; bin "$HELLO"; } | literally tree); id corrupt_nonoctal "$CORRUPT"
id corrupt_empty_mode "$( { printf ' a\0'; bin "$HELLO"; } | literally tree)"
id corrupt_nul_in_mode "$( { entry 100644 a "$HELLO"; printf 10; printf '\0'; printf '644 b\0'; bin "$HELLO"; } | literally tree)"
id corrupt_trailing_digits "$( { entry 100644 a "$HELLO"; printf '1006'; } | literally tree)"
ODD=$( {
    entry 100664 m100664 "$HELLO"; entry 644 m644 "$HELLO"; entry 40755 m40755 "$DIR"; entry 040000 m040000 "$DIR"
    entry 0 m0 "$HELLO"; entry 4000 m4000 "$HELLO"; entry 104644 m104644 "$HELLO"; entry 140000 m140000 "$HELLO"
    entry 1100644 m1100644 "$HELLO"; entry 00000100644 m00000100644 "$HELLO"; entry 44000 m44000 "$DIR"
    entry 160755 m160755 "$HELLO"; entry 120755 m120755 "$HELLO"
    entry 40000 nulldir "$NULL"; entry 40755 nulldir755 "$NULL"; entry 100644 nullblob "$NULL"
    entry 100644 '' "$HELLO"; entry 100644 'a/b' "$HELLO"; entry 100644 dup "$HELLO"; entry 100644 dup "$OTHER"
    entry 40000 toblob "$HELLO"; entry 40000 tomissing "$MISSING"; entry 40000 tocommit "$COMMIT"
    entry 40000 tocorrupt "$CORRUPT"; entry 40000 Upper "$DIR"
} | literally tree); id odd "$ODD"
id commit_upper "$(printf 'tree %s' "$(upper "$TREE")" | literally commit)"
id commit_word "$(printf 'XXXX %sjunk' "$TREE" | literally commit)"
id commit_long "$(printf 'tree %s%s\n' "$TREE" "$TREE" | literally commit)"
id commit_short "$(printf 'tree %s' "${TREE:0:39}" | literally commit)"
id commit_nonhex "$(printf 'tree %sg\n' "${TREE:0:39}" | literally commit)"
id commit_empty "$(printf '' | literally commit)"
id commit_to_blob "$(printf 'tree %s\n' "$HELLO" | literally commit)"
id commit_to_missing "$(printf 'tree %s\n' "$MISSING" | literally commit)"
id commit_to_null "$(printf 'tree %s\n' "$NULL" | literally commit)"
id commit_to_commit "$(printf 'tree %s\n' "$COMMIT" | literally commit)"
id commit_to_odd "$(printf 'tree %s\n' "$ODD" | literally commit)"
id tag_upper "$(printf 'object %s' "$(upper "$COMMIT")" | literally tag)"
id tag_short "$(printf 'object %s' "${COMMIT:0:39}" | literally tag)"
id tag_to_bad_commit "$(printf 'object %s\n' "$(printf 'tree %s' "${TREE:0:39}" | literally commit)" | literally tag)"
id tag_to_missing "$(printf 'object %s\n' "$MISSING" | literally tag)"
id tag_to_tag_to_blob "$(printf 'object %s\ntype tag\n' "$(git rev-parse blobtag)" | literally tag)"
# `d` names the blob `streamblob`, which is in no repository (a stream defines it).
id stream_blob_dir "$(entry 40000 d "$(printf streamblob | git hash-object --stdin)" | literally tree)"

# --- sha256 ------------------------------------------------------------------------------------------------------
git init -q -b main --object-format=sha256 "$OUT/sha256"
cd "$OUT/sha256"
H256=$(blob $'hello\n'); id s256_hello "$H256"
add 100644 "$H256" hello.txt
add 100644 "$H256" dir/y
add 100644 "$H256" 'ünï'
T256=$(git write-tree); id s256_tree "$T256"
C256=$(git commit-tree -m first "$T256"); id s256_commit "$C256"
git update-ref refs/heads/main "$C256"
git tag -a -m annotated v1 "$C256"; id s256_tag "$(git rev-parse v1)"
id s256_odd "$( { entry 644 m644 "$H256"; entry 40000 nulldir 0000000000000000000000000000000000000000000000000000000000000000; } | literally tree)"
id s256_commit_short "$(printf 'tree %s\n' "${T256:0:40}" | literally commit)"
touch "$OUT/COMPLETE"
"##;

/// The fixture: where it is, and the ids the script recorded.
struct Fixture {
    root: PathBuf,
    ids: HashMap<String, String>,
}

impl Fixture {
    fn id(&self, name: &str) -> &str {
        self.ids.get(name).unwrap_or_else(|| panic!("the fixture script records no id named {name}"))
    }

    fn git_dir(&self, repo: Repo) -> PathBuf {
        self.root.join(repo.name()).join(".git")
    }
}

/// Built once per test process; cached across runs under a name that changes with the script.
fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let root = build_fixture();
        let ids = fs::read_to_string(root.join("ids")).expect("read ids");
        let ids = ids
            .lines()
            .map(|line| {
                let (name, id) = line.split_once('=').expect("name=id");
                (name.to_owned(), id.to_owned())
            })
            .collect();
        Fixture { root, ids }
    })
}

fn build_fixture() -> PathBuf {
    let hash =
        FIXTURE_SCRIPT.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let root = tmp.join(format!("ls-fixture-{hash:016x}"));
    if root.join("COMPLETE").exists() {
        return root;
    }
    // Built in a staging directory and renamed into place, so parallel test processes never see half a fixture.
    let staging = TempDir::new("ls-fixture-staging");
    let out = staging.path().join("out");
    let result = Command::new("bash")
        .arg("-c")
        .arg(FIXTURE_SCRIPT)
        .arg("ls-fixture")
        .arg(&out)
        .stdin(Stdio::null())
        .output()
        .expect("run bash");
    assert!(result.status.success(), "fixture script failed ({}):\n{}", result.status, escape(&result.stderr));
    if fs::rename(&out, &root).is_err() {
        assert!(root.join("COMPLETE").exists(), "could not move the fixture to {}", root.display());
    }
    root
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

/// Runs git in `dir` with a pinned configuration; panics if it fails.
fn git_in(dir: &Path, args: &[&str]) {
    let mut cmd = Command::new("git");
    clean_git_env(&mut cmd);
    let out = cmd.current_dir(dir).args(args).stdin(Stdio::null()).output().expect("run git");
    assert!(out.status.success(), "git {args:?} failed: {}", escape(&out.stderr));
}

/// A bare repository borrowing the fixture's objects, with `config` set and the fixture's replace ref copied.
fn throwaway(repo: Repo, config: &[(&str, &str)]) -> (TempDir, PathBuf) {
    let dir = TempDir::new(&format!("ls-{}", repo.name()));
    let git_dir = dir.path().join("repo.git");
    git_in(dir.path(), &["init", "-q", "--bare", &format!("--object-format={}", repo.name()), "repo.git"]);
    let objects = fixture().git_dir(repo).join("objects");
    fs::write(git_dir.join("objects/info/alternates"), format!("{}\n", objects.display())).expect("alternates");
    for (key, value) in config {
        git_in(&git_dir, &["config", key, value]);
    }
    if repo == Repo::Sha1 {
        let f = fixture();
        let replace_ref = format!("refs/replace/{}", f.id("replaced"));
        git_in(&git_dir, &["update-ref", &replace_ref, f.id("replacement")]);
    }
    (dir, git_dir)
}

/// git fast-import (in a throwaway repository: it writes) and cat-blobd (on the fixture itself when the default
/// configuration is wanted, else on a throwaway repository with that configuration) on the same stream.
fn compare(what: &str, repo: Repo, config: &[(&str, &str)], stream: &[u8]) -> Output {
    let (_git_tmp, git_dir) = throwaway(repo, config);
    let git = Run::new("git")
        .arg("fast-import")
        .arg("--quiet")
        .env("GIT_DIR", &git_dir)
        .current_dir(&git_dir)
        .stdin(stream)
        .capture_fd3()
        .run();
    let (_ours_tmp, ours_dir) = if config.is_empty() {
        (None, fixture().git_dir(repo))
    } else {
        let (tmp, dir) = throwaway(repo, config);
        (Some(tmp), dir)
    };
    let ours = Run::cat_blobd().arg("--git-dir").arg(&ours_dir).stdin(stream).capture_fd3().run();
    assert_same_as_git(what, &git, &ours);
    git
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
/// `can't load tree <id>`. `ObjectSource` does not say where a blob comes from, so cat-blobd always says the
/// latter.
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
