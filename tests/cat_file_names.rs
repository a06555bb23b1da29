//! Object names in `cat-blobd cat-file` against the installed `git cat-file`, the differences issue 21 found and
//! their neighbours: every length of hex name, odd path forms, ambiguous short ids followed by every suffix,
//! carriage returns in the input, and git's messages. Each test names the difference it pins. The repositories
//! are those of fixtures/make-cat-file-fixtures.sh.
use std::path::Path;

use crate::util::cat_file::{Stderr, assert_same, fixture_word, generated_names, repo, run};
use crate::util::{CAT_BLOBD, escape, git};

/// The git to compare with: `CAT_BLOBD_TEST_GIT`, else the installed `git`.
fn git_program() -> String {
    std::env::var("CAT_BLOBD_TEST_GIT").unwrap_or_else(|_| "git".to_owned())
}

/// Is the git compared with at least 2.55, the release cat-blobd answers as? Where 2.47 answers otherwise, a
/// test compares only with such a git.
fn git_is_newest() -> bool {
    crate::util::test_git_version() >= (2, 55)
}

/// Runs git and cat-blobd with `args` on `stdin` in `dir`; asserts the same bytes on stdout and stderr and the
/// same exit status.
#[track_caller]
fn same(dir: &Path, args: &[&str], stdin: &[u8]) {
    let git = run(&git_program(), dir, args, stdin, &[]);
    let ours = run(CAT_BLOBD, dir, args, stdin, &[]);
    let what = format!("cat-file {args:?} in {} on {}", dir.display(), escape(&stdin[..stdin.len().min(300)]));
    assert_same(&what, &git, &ours, Stderr::Exact);
}

/// The repositories of fixtures/make-reflog-fixture.sh (work trees with reflogs and an index).
fn reflog_fixture() -> &'static Path {
    static ROOT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/make-reflog-fixture.sh");
        crate::util::build_with_script(script, "reflog-fixture")
    })
}

/// `names`, each followed by `delimiter`.
fn lines<S: AsRef<str>>(names: &[S], delimiter: u8) -> Vec<u8> {
    names.iter().flat_map(|name| name.as_ref().bytes().chain([delimiter])).collect()
}

fn rev_parse(dir: &Path, rev: &str) -> String {
    String::from_utf8(git(dir, &["rev-parse", rev])).expect("hex").trim().to_owned()
}

/// Regression: a name of 41 hex digits panicked (exit 101, no output). git searches up to 64 digits: in a SHA-1
/// repository an id followed by zeros names that id, and so does a packed id followed by anything.
#[test]
fn hex_names_of_every_length_from_1_to_70() {
    for name in ["names.git", "sha256.git"] {
        let dir = repo(name);
        let head = rev_parse(&dir, "HEAD");
        let loose = rev_parse(&dir, if name == "names.git" { "loose" } else { "HEAD" });
        let bases = [
            "a".repeat(70),
            "A".repeat(70),
            format!("{head}{head}"),
            format!("{head}{}", "0".repeat(40)),
            format!("{loose}{}", "0".repeat(40)),
            format!("{loose}{loose}"),
        ];
        let mut names = Vec::new();
        for base in &bases {
            for len in 1..=70 {
                for suffix in ["", "^{}", "~0", ":"] {
                    names.push(format!("{}{suffix}", &base[..len]));
                }
            }
        }
        same(&dir, &["--batch-check"], &lines(&names, b'\n'));
        for len in [39, 40, 41, 42, 63, 64, 65] {
            same(&dir, &["-t", &bases[2][..len]], b"");
        }
    }
}

/// Regression: `HEAD:dir//file` and `HEAD:/file` answered the file's blob where git answers `missing`; `.` and
/// `..` were refused as relative paths. git's `get_tree_entry` takes `dir/` for the directory, and nothing else
/// that is not a name in the tree.
#[test]
fn odd_path_forms_name_what_git_names() {
    let dir = repo("names.git");
    let paths = [
        "dir//sub/file",
        "/hello.txt",
        "//hello.txt",
        ".",
        "..",
        "./",
        "dir/.",
        "dir/./sub",
        "dir/sub/..",
        "dir/",
        "dir//",
        "/",
        "//",
        "hello.txt/",
        "dir/sub/",
        "dir/sub/file/",
        "dir/sub/file//",
        "module/",
        "module/x",
        "link/",
        "dirlink/",
        "",
        "hello.txt\r",
        "hello.txt\t",
        "hello.txt ",
        "other/with space.txt",
        "many-1",
        "many-",
        "many-10/",
    ];
    let names: Vec<String> = paths.iter().map(|path| format!("HEAD:{path}")).collect();
    for args in [&["--batch-check"][..], &["--batch-check", "--follow-symlinks"], &["--batch"]] {
        same(&dir, args, &lines(&names, b'\n'));
        let mut z = args.to_vec();
        z.push("-z");
        same(&dir, &z, &lines(&names, 0));
    }
    // A NUL ends the name as git reads it (a C string).
    same(&dir, &["--batch-check", "-z"], b"HEAD:hello.txt\0x\0HEAD:dir\0/sub\0");
    same(&dir, &["--batch-check"], b"HEAD:hello.txt\0x\nHEAD:\0\n");
    // Only `^{` and `@{` open braces in which a colon does not start the path: git 2.55's get_oid_with_context_1
    // (2.47 counted every `{`, so `<rev>{:<path>` was not split at the colon).
    let mut braces = vec!["HEAD@{0}:x", "main^{/a:b}:hello.txt"];
    if git_is_newest() {
        braces.extend(["HEAD^{}{:x", "HEAD{:x", "nope{/:/x", "HEAD^{tree}{:/"]);
    }
    for name in braces {
        same(&dir, &["-t", name], b"");
        same(&dir, &["--batch-check"], format!("{name}\n").as_bytes());
    }
    for path in ["dir//sub/file", "/hello.txt", "nope", "dir/nope", "objects", ".", "..", "hello.txt/"] {
        for mode in ["-t", "-p", "-e"] {
            same(&dir, &[mode, &format!("HEAD:{path}")], b"");
        }
    }
}

/// Regression: `<rev>:./<path>` was refused as unsupported; git dies with its own message when there is no work
/// tree (a bare repository), in every mode.
#[test]
fn relative_paths_outside_a_work_tree_are_fatal_as_in_git() {
    let dir = repo("names.git");
    for name in ["HEAD:./hello.txt", "HEAD:../x", "HEAD:./", ":./hello.txt", ":../x"] {
        same(&dir, &["--batch-check"], format!("HEAD\n{name}\nHEAD\n").as_bytes());
        same(&dir, &["-t", name], b"");
    }
}

/// Regression: a CR was dropped from every record, where git (`strbuf_getdelim_strip_crlf`) drops it only
/// before an LF: `-z` keeps it, and so does a last line without LF. And under `-z`/`-Z` an empty record still
/// holds its NUL, so `--batch-command` says `unknown command: ''` (not `empty command in input`).
#[test]
fn carriage_returns_and_empty_records_as_git_reads_them() {
    let dir = repo("names.git");
    let inputs: [&[u8]; 14] = [
        b"HEAD\r",
        b"HEAD\r\n",
        b"HEAD:hello.txt\r\0HEAD\r",
        b"info HEAD\r\n",
        b"info HEAD\r",
        b"info HEAD\r\0",
        b"\0",
        b"info HEAD\0\0",
        b"\n",
        b"info HEAD\n\n",
        b"\r\n",
        b"HEAD\r\r\n",
        b"HEAD x\r",
        b"contents v1\0info HEAD:hello.txt\r\0",
    ];
    let modes: [&[&str]; 8] = [
        &["--batch-check"],
        &["--batch-check", "-z"],
        &["--batch-check", "-Z"],
        &["--batch"],
        &["--batch-command"],
        &["--batch-command", "-z"],
        &["--batch-command", "-Z"],
        &["--batch-check=%(objectname)%(rest)"],
    ];
    for args in modes {
        for input in inputs {
            same(&dir, args, input);
        }
    }
}

/// Regression: an ambiguous short id followed by `^{commit}`, `^{tree}`, `~0` or `:<path>` was answered
/// `missing` with git's ambiguity message, where git picks the one candidate of the kind the suffix needs (a
/// commit-ish or a tree-ish); and `<short>~0` was `missing` where git says `ambiguous`. The fixtures hold a
/// prefix shared by two blobs, one by a commit and a blob, and one by a tag (of a commit), a tree and a blob.
#[test]
fn ambiguous_short_ids_are_disambiguated_by_what_follows_them() {
    let dir = repo("names.git");
    let suffixes = [
        "",
        "^{commit}",
        "^{tree}",
        "^{}",
        "^{blob}",
        "^{tag}",
        "^{object}",
        "~0",
        "^0",
        "^",
        "~",
        "~1",
        "^2",
        "^^",
        "~0~0",
        "~1^{tree}",
        "^{commit}~1",
        "^{commit}^{tree}",
        "^{tree}^{tree}",
        ":",
        ":hello.txt",
        ":loose.txt",
        "^{tree}:loose.txt",
        "^{commit}:loose.txt",
        "~0:loose.txt",
        "^{/a}",
        "^{/nomatch}",
        "^!",
        "^@",
        "^-",
        "@{0}",
        "..HEAD",
    ];
    let mut names = Vec::new();
    for fixture in ["ambiguous", "ambiguous-commit", "ambiguous-tag"] {
        let prefix = fixture_word(fixture);
        for abbrev in [prefix.clone(), prefix.to_uppercase()] {
            names.extend(suffixes.iter().map(|suffix| format!("{abbrev}{suffix}")));
        }
    }
    same(&dir, &["--batch-check"], &lines(&names, b'\n'));
    same(&dir, &["--batch"], &lines(&names, b'\n'));
    for name in names.iter().filter(|name| !name.contains("..")) {
        same(&dir, &["-t", name], b"");
    }
}

/// Regression: `:/<text>` and `<rev>^{/<text>}` were refused as unsupported. git searches the commits reachable
/// from every reference and HEAD (or from `<rev>`), youngest first. The youngest: git 2.55 keeps its queue in
/// commit-date order; 2.47 took the references' commits in the order it listed them, so where the two differ
/// (`:/!-first`, `:/a.*b` here) only a git of 2.55 or newer is compared.
#[test]
fn commit_message_searches() {
    let dir = repo("names.git");
    let mut names = vec![
        ":/first",
        ":/nomatch",
        ":/",
        ":/!x",
        ":/!!x",
        ":/^a loose",
        ":/commit$",
        ":/^merge",
        ":/many",
        ":/(",
        ":/its body$",
        ":/[[:alpha:]]+ commit 99",
        ":/first:hello.txt",
        ":/first^{tree}",
        "HEAD^{/first}",
        "HEAD^{/first}:hello.txt",
        "main^{/^merge}",
        "main^{/^second}",
        "main^{/!-many}",
        "v1^{/}",
        "v1-outer^{/}",
        "tree-tag^{/x}",
        "blob-tag^{/x}",
        "v1^{tree}^{/x}",
    ];
    if git_is_newest() {
        names.extend([":/!-first", ":/a.*b", ":/!-a"]);
    }
    same(&dir, &["--batch-check"], &lines(&names, b'\n'));
    for name in [":/first", ":/nomatch", "HEAD^{/first}", "tree-tag^{/x}"] {
        same(&dir, &["-t", name], b"");
    }
}

/// Regression: `^0` of a tree said git's `peel_to_type` message, and `^` or `~<n>` of a tree said nothing;
/// git's `get_parent` says `object <id> is a tree, not a commit`. For a tag of a tree, git 2.55 names the tag
/// (2.47 named the tree), so those names are compared only with a git of 2.55 or newer.
#[test]
fn parent_of_a_non_commit_is_explained_as_git_does() {
    let dir = repo("names.git");
    let mut names = vec![
        "HEAD^{tree}^0",
        "HEAD^{tree}^",
        "HEAD^{tree}~0",
        "HEAD^{tree}~1",
        "HEAD^{tree}^2",
        "HEAD:hello.txt^0",
        "HEAD:hello.txt~3",
        "v1^{tree}^",
        "HEAD^0^{tree}^0",
        "HEAD^{tree}^{commit}",
        "1111111111111111111111111111111111111111^0",
        "HEAD~1^{tree}~1",
        "HEAD:module^0",
    ];
    if git_is_newest() {
        names.extend(["tree-tag^0", "tree-tag^", "blob-tag~2", "tree-tag~0"]);
    }
    same(&dir, &["--batch-check"], &lines(&names, b'\n'));
    same(&dir, &["-t", "HEAD^{tree}^0"], b"");
}

/// git 2.55's `%(objectmode)` (the tree entry's mode of a `<rev>:<path>` name, empty for other names) and
/// `<id> submodule` (a name that resolves to a gitlink whose commit is not in the repository). git 2.47 knows
/// neither (the atom is a bad format, the gitlink `missing`): with an older git the expected lines are built
/// from what git says of the same names (`ls-tree`, `rev-parse`).
#[test]
fn object_mode_and_submodule_entries_as_git_2_55_answers() {
    let dir = repo("names.git");
    let names = [
        "HEAD:hello.txt",
        "HEAD:run.sh",
        "HEAD:link",
        "HEAD:dir",
        "HEAD:dir/",
        "HEAD:dir/sub/file",
        "HEAD:",
        "HEAD",
        "HEAD^{tree}",
        "HEAD:nope",
        "v1:hello.txt",
        "v1:module",
        "v1:module^{}",
        "v1:module/",
        "HEAD:dirlink/file",
    ];
    let input = lines(&names, b'\n');
    if git_is_newest() {
        for format in ["--batch-check=%(objectmode) %(objectname)", "--batch=[%(objectmode)]", "--batch-check"] {
            same(&dir, &[format], &input);
            same(&dir, &[format, "--follow-symlinks"], &input);
        }
        same(&dir, &["--batch-command"], b"info v1:module\ncontents v1:module\ninfo HEAD:link\n");
        return;
    }
    let mut expected = Vec::new();
    for name in ["HEAD:hello.txt", "HEAD:run.sh", "HEAD:link", "HEAD:dir", "HEAD:dir/sub/file", "HEAD", "v1:module"] {
        let id = rev_parse(&dir, name);
        let line = match name.split_once(':') {
            Some(_) if name == "v1:module" => format!("{id} submodule\n"),
            Some((rev, path)) => {
                let listed = String::from_utf8(git(&dir, &["ls-tree", rev, "--", path])).expect("ASCII");
                format!("{} {id}\n", listed.split(' ').next().expect("a mode"))
            }
            None => format!(" {id}\n"),
        };
        expected.push((name, line));
    }
    let input = lines(&expected.iter().map(|(name, _)| *name).collect::<Vec<_>>(), b'\n');
    let ours = run(CAT_BLOBD, &dir, &["--batch-check=%(objectmode) %(objectname)"], &input, &[]);
    let expected: String = expected.iter().map(|(_, line)| line.as_str()).collect();
    crate::util::assert_bytes_eq("%(objectmode) and submodule", expected.as_bytes(), &ours.stdout);
    assert!(ours.status.success() && ours.stderr.is_empty(), "{}", ours.describe());
}

/// Regression: every `@{…}` form was refused as unsupported. In a bare repository (no reflogs) git answers
/// `@{0}` with the branch HEAD is on, `<ref>@{0}` and `@{-1}` as missing, and dies for `@{1}` or a date.
#[test]
fn at_sign_names_in_a_bare_repository() {
    let dir = repo("names.git");
    let names = ["@", "@{0}", "@{0}:hello.txt", "@{0}~1", "HEAD@{0}", "main@{0}", "nope@{0}", "v1@{0}", "@{-1}"];
    same(&dir, &["--batch-check"], &lines(&names, b'\n'));
    for name in ["@{1}", "main@{1}", "@{1.day.ago}", "@{1700000000}"] {
        same(&dir, &["--batch-check"], format!("HEAD\n{name}\nHEAD\n").as_bytes());
        same(&dir, &["-t", name], b"");
    }
}

/// `<ref>@{<n>}` read from the reflog, as git's t1006 uses it (`foo@@{0}:hello`), and past its end: the value
/// before the oldest entry, then git's `only has <n> entries`. `@{-<n>}`: the branch, or the detached commit,
/// HEAD was on before its n-th newest checkout.
#[test]
fn at_sign_names_read_the_reflog() {
    let dir = reflog_fixture().join("reflog");
    let names = [
        "@{0}",
        "@{1}",
        "@{3}",
        "HEAD@{0}",
        "HEAD@{1}",
        "HEAD@{4}",
        "HEAD@{5}",
        "foo@@{0}:hello",
        "foo@@{1}",
        "foo{bar:hello",
        "main@{1}",
        "main@{2}",
        "main@{3}",
        "heads/main@{1}",
        "refs/heads/main@{2}",
        "main@{1}~1",
        "main@{1}^{tree}",
        "@{-1}",
        "@{-2}",
        "@{-3}",
        "@{-4}",
        "@{-1}~1",
        "@{-2}:hello",
    ];
    same(&dir, &["--batch-check"], &lines(&names, b'\n'));
    for name in ["main@{4}", "HEAD@{6}", "foo@@{2}"] {
        same(&dir, &["--batch-check"], format!("HEAD\n{name}\n").as_bytes());
        same(&dir, &["-p", name], b"");
    }
    same(&dir, &["-p", "foo@@{0}:hello"], b"");
}

/// A reflog that is a symlink: git's `<name>@{…}` takes a log only where `lstat` finds a regular file, so
/// `main@{1}` is `missing`, while `@{1}` (HEAD's branch, no such check) reads the log through the link. Before,
/// cat-blobd (through gix-ref, which follows the link) answered `main@{1}` from it.
#[test]
fn a_symlinked_reflog_is_no_log_for_a_names_at_sign_as_in_git() {
    let tmp = crate::util::TempDir::new("symlinked-reflog");
    let copy = tmp.path().join("work");
    let cp = std::process::Command::new("cp").arg("-a").arg(reflog_fixture().join("reflog")).arg(&copy).status();
    assert!(cp.expect("cp").success());
    let log = copy.join(".git/logs/refs/heads/main");
    std::fs::rename(&log, tmp.path().join("main.log")).expect("move the log");
    std::os::unix::fs::symlink("../../../../../main.log", &log).expect("symlink");
    assert!(std::fs::read(&log).is_ok(), "the link leads to the log");
    let names = ["main@{1}", "main@{0}", "heads/main@{1}", "refs/heads/main@{2}", "@{1}", "@{0}", "HEAD@{1}"];
    same(&copy, &["--batch-check"], &lines(&names, b'\n'));
    same(&copy, &["-t", "main@{1}"], b"");
}

/// Regression: for a name git never takes apart (`<rev>..`, `<rev>^!`, a `/` after a step, `<ref>@{0}` without
/// a reflog), cat-blobd printed what its steps found on the way (a peel's or a parent's complaint, "refname is
/// ambiguous", the candidates of an abbreviation); git tries the whole name as a reference and says nothing.
#[test]
fn names_git_does_not_take_apart_print_nothing_on_the_way() {
    let dir = repo("names.git");
    let (ref_like, ambiguous) = (fixture_word("ref-like-hex"), fixture_word("ambiguous"));
    let names = [
        "HEAD^{tag}..".to_owned(),
        "HEAD^{tag}..HEAD".to_owned(),
        "HEAD^{tree}~1/".to_owned(),
        "HEAD^{tree}^^!".to_owned(),
        "HEAD^{blob}^{/a}/".to_owned(),
        "dup^!".to_owned(),
        "dup..".to_owned(),
        "dup@{0}".to_owned(),
        "dup^{commit}".to_owned(),
        format!("{ref_like}^!"),
        format!("{ref_like}@{{0}}"),
        format!("{ref_like}.."),
        format!("{ref_like}~1"),
        format!("{ambiguous}^!"),
        format!("{ambiguous}@{{0}}"),
        format!("{ambiguous}~1/"),
        format!("{ambiguous}~1"),
    ];
    same(&dir, &["--batch-check"], &lines(&names, b'\n'));
}

/// Regression: `:<path>` and `:<n>:<path>` were refused; git reads them from the index (`%(objectmode)` is
/// the entry's mode), in every index version, and explains a path at another stage.
#[test]
fn index_paths_in_a_work_tree() {
    let root = reflog_fixture();
    let names = [
        ":hello",
        ":0:hello",
        ":white space",
        ":exec",
        ":d/f",
        ":d",
        ":nope",
        ":1:conflict",
        ":2:conflict",
        ":3:conflict",
        ":conflict",
        ":1:hello",
        ":hello:x",
    ];
    for repo in ["reflog", "index-v3", "index-v4"] {
        let dir = root.join(repo);
        same(&dir, &["--batch-check"], &lines(&names, b'\n'));
        if git_is_newest() {
            same(&dir, &["--batch-check=%(objectmode) %(objectname)"], &lines(&names, b'\n'));
        }
        for name in [":hello", ":nope", ":1:hello", ":conflict", ":d"] {
            same(&dir, &["-t", name], b"");
        }
    }
}

/// git 2.55 reads `<ref>-<count>-g<abbrev>` as describe output only with a count of hex digits and a valid ref
/// name (git commit 191f0c8db2); 2.47 took any `<anything>-g<abbrev>`. cat-blobd answers as 2.55: against an older
/// git, the forms both take are compared, and the ones only 2.47 takes must be `missing`.
#[test]
fn describe_output_needs_a_count_as_in_git_2_55() {
    let dir = repo("names.git");
    let head = rev_parse(&dir, "HEAD");
    let abbrev = &head[..7];
    let both: Vec<String> = ["v1.0-3-g", "x-1-g", "x-a-g", "v1.0-0-g"].iter().map(|p| format!("{p}{abbrev}")).collect();
    let newest_only: Vec<String> = ["x-g", "v1.0-g", "-1-g"].iter().map(|p| format!("{p}{abbrev}")).collect();
    same(&dir, &["--batch-check"], &lines(&both, b'\n'));
    if git_is_newest() {
        same(&dir, &["--batch-check"], &lines(&newest_only, b'\n'));
        return;
    }
    let ours = run(CAT_BLOBD, &dir, &["--batch-check"], &lines(&newest_only, b'\n'), &[]);
    let expected: Vec<u8> = newest_only.iter().flat_map(|name| format!("{name} missing\n").into_bytes()).collect();
    assert_eq!(escape(&ours.stdout), escape(&expected), "{}", ours.describe());
}

/// Names from [`generated_names`] (replayable: `CAT_BLOBD_NAME_SEED=<n>`), each batch compared with git byte
/// for byte, stderr included.
#[test]
fn generated_names_answer_as_git() {
    let dir = repo("names.git");
    let seed = std::env::var("CAT_BLOBD_NAME_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(21);
    let names = generated_names(seed, git_is_newest());
    for chunk in names.chunks(50) {
        same(&dir, &["--batch-check"], &lines(chunk, b'\n'));
        same(&dir, &["--batch-check=%(objectname) %(rest)"], &lines(chunk, b'\n'));
        same(&dir, &["--batch-check", "-z"], &lines(chunk, b'\0'));
    }
}

/// A tree object written by hand, entries as `(mode digits, name, id)`, in the order given.
fn hand_made_tree(git_dir: &Path, entries: &[(&str, &str, &str)]) -> String {
    let mut data = Vec::new();
    for (mode, name, id) in entries {
        data.extend_from_slice(format!("{mode} {name}\0").as_bytes());
        data.extend_from_slice(gix_hash::ObjectId::from_hex(id.as_bytes()).expect("hex id").as_bytes());
    }
    let written = crate::util::git_in(git_dir, &["hash-object", "-t", "tree", "-w", "--literally", "--stdin"], &data);
    String::from_utf8(written).expect("hex").trim().to_owned()
}

/// Damage is never absence: a tree whose entries do not decode fails a name walked through it as git fails it
/// (`fatal: malformed mode in tree entry`, where git's tree-walk meets the bad entry), never `missing`. Before
/// cat-file read trees with git's tree-walk rules, entries that did not parse were dropped and the names
/// answered `missing`.
#[test]
fn names_through_a_damaged_tree_fail_as_git_fails() {
    let dir = crate::util::TempDir::new("damaged-tree");
    let top = dir.path().join("repo");
    let init = std::process::Command::new("git").args(["init", "-q", "--bare"]).arg(&top).status().expect("git init");
    assert!(init.success());
    let blob = String::from_utf8(crate::util::git_in(&top, &["hash-object", "-w", "--stdin"], b"hi\n")).unwrap();
    let blob = blob.trim();
    let good = hand_made_tree(&top, &[("100644", "a", blob)]);
    let trees = [
        (
            "malformed mode",
            hand_made_tree(
                &top,
                &[("100644", "a", blob), ("100644", "b", blob), ("10x644", "c", blob), ("100644", "d", blob)],
            ),
        ),
        ("empty mode first", hand_made_tree(&top, &[("", "a", blob), ("100644", "b", blob)])),
        ("empty name", hand_made_tree(&top, &[("100644", "a", blob), ("100644", "", blob), ("100644", "c", blob)])),
        (
            "a subtree damaged",
            hand_made_tree(
                &top,
                &[(
                    "40000",
                    "dir",
                    &hand_made_tree(&top, &[("100644", "x", blob), ("1006z4", "y", blob), ("100644", "z", blob)]),
                )],
            ),
        ),
        (
            "a mode of 140000",
            hand_made_tree(&top, &[("100644", "a", blob), ("140000", "b", &good), ("100644", "c", blob)]),
        ),
    ];
    for (what, tree) in &trees {
        let names = ["", ":a", ":b", ":c", ":d", ":z", ":dir", ":dir/x", ":dir/y", ":dir/z", ":b/a"]
            .map(|path| format!("{tree}{path}"));
        for name in &names {
            same(&top, &["-p", name], b"");
            same(&top, &["-t", name], b"");
        }
        let input: String = names.iter().map(|name| format!("{name}\n")).collect();
        for args in [&["--batch-check"][..], &["--batch-check", "--follow-symlinks"], &["--batch"]] {
            same(&top, args, input.as_bytes());
            // Each name on its own too, so that a name after the first failure is compared as well.
            for name in &names {
                same(&top, args, format!("{name}\n").as_bytes());
            }
        }
        eprintln!("{what}: compared");
    }
}

/// `same` with `env` set for both.
#[track_caller]
fn same_with_env(dir: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) {
    let git = run(&git_program(), dir, args, stdin, env);
    let ours = run(CAT_BLOBD, dir, args, stdin, env);
    let what = format!("cat-file {args:?} in {} with {env:?} on {}", dir.display(), escape(stdin));
    assert_same(&what, &git, &ours, Stderr::Exact);
}

/// Index paths read the index git reads: `$GIT_INDEX_FILE` (absolute, or relative to the top of the work tree,
/// wherever the command runs), a split index with its shared part, and a damaged index dies as git dies. Before,
/// `GIT_INDEX_FILE` was ignored and a split index refused.
#[test]
fn index_paths_read_git_index_file_split_and_damaged_indexes() {
    let root = reflog_fixture();
    let names = [":hello", ":0:hello", ":white space", ":exec", ":d/f", ":nope", ":2:conflict", ":conflict"];
    let input = lines(&names, b'\n');
    let tmp = crate::util::TempDir::new("index-files");
    let copy = tmp.path().join("work");
    let cp = std::process::Command::new("cp").arg("-a").arg(root.join("reflog")).arg(&copy).status().expect("cp");
    assert!(cp.success());
    let other = root.join("index-v4").join(".git/index");
    let other = other.to_str().expect("UTF-8 path");
    std::fs::copy(other, copy.join("other-index")).expect("copy the index");
    std::fs::write(copy.join("bad-signature"), b"garbagegarbagegarbagegarbagegarbage").unwrap();
    std::fs::write(copy.join("short"), b"DIRC").unwrap();
    std::fs::create_dir_all(copy.join("d")).unwrap();
    for (dir, file) in [
        (copy.clone(), other),
        (copy.clone(), "other-index"),
        (copy.join("d"), "other-index"),
        (copy.clone(), "no-such-index"),
        (copy.clone(), "bad-signature"),
        (copy.clone(), "short"),
    ] {
        let env = [("GIT_INDEX_FILE", file)];
        same_with_env(&dir, &["--batch-check"], &input, &env);
        for name in [":hello", ":nope"] {
            same_with_env(&dir, &["-t", name], b"", &env);
        }
    }
    // A split index: the entries are in the shared index, changes in the split one.
    let split = tmp.path().join("split");
    let cp = std::process::Command::new("cp").arg("-a").arg(root.join("reflog")).arg(&split).status().expect("cp");
    assert!(cp.success());
    git(&split.join(".git"), &["update-index", "--split-index"]);
    crate::util::git_in(
        &split.join(".git"),
        &["update-index", "--index-info"],
        b"100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\tadded-later\n",
    );
    let shared = std::fs::read_dir(split.join(".git")).unwrap().flatten();
    assert!(shared.into_iter().any(|entry| entry.file_name().to_string_lossy().starts_with("sharedindex.")));
    let names = [":hello", ":added-later", ":white space", ":2:conflict", ":nope"];
    same(&split, &["--batch-check"], &lines(&names, b'\n'));
}
