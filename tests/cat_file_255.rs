//! What `cat-file` gained or changed up to git 2.55: `--filter`, the mailmap (`--use-mailmap` and the
//! `--batch-command` `mailmap <bool>` command), `--allow-unknown-type` as a no-op, 2.55's usage, and zlib
//! streams with a preset dictionary. Repositories: fixtures/make-cat-file-255-fixtures.sh.
//!
//! cat-blobd answers as git 2.55 does. Where 2.47 (the git CI installs) answers the same, a test compares with
//! it. Where 2.47 differs (it has no `--filter`, no `mailmap` command), the 2.55 answer is built from what 2.47
//! answers to requests it does understand, and the test says why. Every test also compares byte for byte with a
//! git 2.55 binary when `CAT_BLOBD_TEST_GIT` names one, and says on stderr that it skipped that where it does not.
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::util::cat_file::{Stderr, assert_same, fixture_word, repo, run};
use crate::util::{CAT_BLOBD, Output, TempDir, assert_bytes_eq, build_with_script, escape};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/make-cat-file-255-fixtures.sh");

fn root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| build_with_script(SCRIPT, "cat-file-255-fixtures"))
}

fn mailmap_repo() -> PathBuf {
    root().join("mailmap.git")
}

/// The git under test (`CAT_BLOBD_TEST_GIT`) when it is 2.55 or newer.
fn git_255() -> Option<PathBuf> {
    let git = std::env::var_os("CAT_BLOBD_TEST_GIT")?;
    (crate::util::test_git_version() >= (2, 55)).then(|| PathBuf::from(git))
}

const NO_GIT_255: &str = "the comparison with git 2.55 (set CAT_BLOBD_TEST_GIT to one)";

/// Compares cat-blobd with git 2.55 when there is one.
#[track_caller]
fn same_as_255(dir: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) {
    let what = format!("cat-file {args:?} in {} on {}", dir.display(), escape(&stdin[..stdin.len().min(200)]));
    let Some(git) = git_255() else {
        return crate::util::skip::record(NO_GIT_255);
    };
    let theirs = run(&git.to_string_lossy(), dir, args, stdin, env);
    let ours = run(CAT_BLOBD, dir, args, stdin, env);
    assert_same(&format!("{what} (git 2.55)"), &theirs, &ours, Stderr::Exact);
}

/// Where 2.47 and 2.55 agree: the same as the installed git, and as 2.55.
#[track_caller]
fn same_everywhere(dir: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) {
    let what = format!("cat-file {args:?} in {} on {}", dir.display(), escape(&stdin[..stdin.len().min(200)]));
    let git = run("git", dir, args, stdin, env);
    let ours = run(CAT_BLOBD, dir, args, stdin, env);
    assert_same(&what, &git, &ours, Stderr::Exact);
    same_as_255(dir, args, stdin, env);
}

/// The installed git's answer, which must succeed.
fn git_ok(dir: &Path, args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let out = run("git", dir, args, stdin, &[]);
    assert!(out.status.success(), "git {args:?}: {}", out.describe());
    out.stdout
}

#[track_caller]
fn assert_ours(what: &str, ours: &Output, code: i32, stdout: &[u8], stderr: &[u8]) {
    assert_eq!(ours.status.code(), Some(code), "{what}: {}", ours.describe());
    assert_bytes_eq(&format!("{what}: stdout"), stdout, &ours.stdout);
    assert_bytes_eq(&format!("{what}: stderr"), stderr, &ours.stderr);
}

/// Every object of mailmap.git as `(id, type, size)`, from the installed git.
fn objects(dir: &Path) -> Vec<(String, String, u64)> {
    let listing = git_ok(dir, &["--batch-all-objects", "--batch-check"], b"");
    String::from_utf8(listing)
        .expect("ASCII")
        .lines()
        .map(|line| {
            let mut fields = line.split(' ');
            let (id, kind, size) = (fields.next().unwrap(), fields.next().unwrap(), fields.next().unwrap());
            (id.to_owned(), kind.to_owned(), size.parse().expect("size"))
        })
        .collect()
}

/// The test's own reading of git's filter documentation: which objects each spec leaves out.
fn excluded_by(spec: &str, kind: &str, size: u64) -> bool {
    let limit = |text: &str| -> u64 {
        let (digits, unit) = text.split_at(text.trim_end_matches(['k', 'm', 'g']).len());
        digits.parse::<u64>().expect("limit")
            << match unit {
                "k" => 10,
                "m" => 20,
                "g" => 30,
                _ => 0,
            }
    };
    if spec == "blob:none" {
        kind == "blob"
    } else if let Some(text) = spec.strip_prefix("blob:limit=") {
        kind == "blob" && size >= limit(text)
    } else {
        kind != spec.strip_prefix("object:type=").expect("a filter the test knows")
    }
}

const FILTERS: [&str; 9] = [
    "blob:none",
    "blob:limit=1",
    "blob:limit=500",
    "blob:limit=1000",
    "blob:limit=1k",
    "object:type=blob",
    "object:type=commit",
    "object:type=tag",
    "object:type=tree",
];

// git 2.47 has no --filter: the answer with a filter is built from its answers without one.
#[test]
fn filtered_objects_are_left_out_of_all_objects() {
    let dir = mailmap_repo();
    let objects = objects(&dir);
    for unordered in [false, true] {
        let mut base = vec!["--batch-all-objects", "--batch-check=%(objectname) %(objecttype)"];
        if unordered {
            base.push("--unordered");
        }
        let all = git_ok(&dir, &base, b"");
        for spec in FILTERS {
            let filter = format!("--filter={spec}");
            let args = [&base[..], &[filter.as_str()]].concat();
            let expected: Vec<u8> = String::from_utf8(all.clone())
                .expect("ASCII")
                .lines()
                .filter(|line| {
                    let (kind, size) =
                        objects.iter().find(|(id, ..)| line.starts_with(id.as_str())).map(|(_, k, s)| (k, *s)).unwrap();
                    !excluded_by(spec, kind, size)
                })
                .flat_map(|line| [line.as_bytes(), b"\n"].concat())
                .collect();
            let ours = run(CAT_BLOBD, &dir, &args, b"", &[]);
            if unordered {
                // With a filter, git 2.55 walks the pack bitmap (by type) before the other packs: that order is
                // compared with 2.55 below; the objects, with 2.47's.
                let sorted = |bytes: &[u8]| {
                    let mut lines: Vec<Vec<u8>> = bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
                    lines.sort();
                    lines
                };
                assert_eq!(ours.status.code(), Some(0), "{args:?}: {}", ours.describe());
                assert_eq!(sorted(&ours.stdout), sorted(&expected), "{args:?}");
            } else {
                assert_ours(&format!("{args:?}"), &ours, 0, &expected, b"");
            }
            same_as_255(&dir, &args, b"", &[]);
            let batch = [&["--batch-all-objects", "--batch", filter.as_str()][..]].concat();
            same_as_255(&dir, &batch, b"", &[]);
        }
    }
}

// git 2.47 has no --filter: a name the filter leaves out is `<name> excluded`, the others as 2.47 answers them.
#[test]
fn a_filtered_object_named_on_stdin_is_excluded() {
    let dir = mailmap_repo();
    let objects = objects(&dir);
    let mut names: Vec<String> = objects.iter().map(|(id, ..)| id.clone()).collect();
    names.extend(
        ["main", "v1", "main^{tree}", "main:blob-500", "main:blob-2000", "nope", "main:nope"].map(String::from),
    );
    let input: Vec<u8> = names.iter().flat_map(|name| format!("{name}\n").into_bytes()).collect();
    // Each name's object, and the installed git's answer for it alone.
    let id_of = |name: &str| {
        let line = git_ok(&dir, &["--batch-check=%(objectname)"], format!("{name}\n").as_bytes());
        String::from_utf8(line).expect("ASCII").trim().to_owned()
    };
    let ids: Vec<String> = names.iter().map(|name| id_of(name)).collect();
    for mode in ["--batch-check", "--batch", "--batch-check=%(objectname) %(rest)"] {
        let alone: Vec<Vec<u8>> =
            names.iter().map(|name| git_ok(&dir, &[mode], format!("{name}\n").as_bytes())).collect();
        for spec in FILTERS {
            let filter = format!("--filter={spec}");
            let args = [mode, filter.as_str()];
            let mut expected = Vec::new();
            for ((name, id), alone) in names.iter().zip(&ids).zip(&alone) {
                let found = objects.iter().find(|(known, ..)| known == id);
                match found.is_some_and(|(_, kind, size)| excluded_by(spec, kind, *size)) {
                    true => expected.extend_from_slice(format!("{name} excluded\n").as_bytes()),
                    false => expected.extend_from_slice(alone),
                }
            }
            assert_ours(&format!("{args:?}"), &run(CAT_BLOBD, &dir, &args, &input, &[]), 0, &expected, b"");
            same_as_255(&dir, &args, &input, &[]);
        }
    }
}

// git 2.47 has no --filter or --no-filter: --no-filter leaves no filter, so the answer is 2.47's without either.
#[test]
fn no_filter_drops_the_filter() {
    let dir = mailmap_repo();
    let input = b"main\nmain:blob-1\n";
    let expected = git_ok(&dir, &["--batch-check"], input);
    let args = ["--filter=blob:none", "--no-filter", "--batch-check"];
    assert_ours("--no-filter", &run(CAT_BLOBD, &dir, &args, input, &[]), 0, &expected, b"");
    same_as_255(&dir, &args, input, &[]);
}

// git 2.47 has no --filter (it says "unknown option"). The messages and statuses are those of git 2.55's
// list-objects-filter-options.c and builtin/cat-file.c, as t1006 checks them.
#[test]
fn filter_specs_git_refuses_are_refused_with_its_messages() {
    let dir = mailmap_repo();
    for (args, code, first_line) in [
        (&["--filter=unknown"][..], 128, "fatal: invalid filter-spec 'unknown'"),
        (&["--filter=tree:1"], 129, "usage: objects filter not supported: 'tree'"),
        (&["--filter=tree:x", "--batch"], 128, "fatal: expected 'tree:<depth>'"),
        (&["--filter=sparse:oid=1234"], 129, "usage: objects filter not supported: 'sparse:oid'"),
        (&["--filter=sparse:path=x"], 128, "fatal: sparse:path filters support has been dropped"),
        (&["--filter=combine:blob:none+tree:0", "--batch"], 129, "usage: objects filter not supported: 'combine'"),
        (
            &["--filter=blob:none", "--filter=blob:none", "--batch"],
            129,
            "usage: objects filter not supported: 'combine'",
        ),
        (&["--filter=combine:", "--batch"], 128, "fatal: expected something after combine:"),
        (&["--filter=combine:a~b", "--batch"], 128, "fatal: must escape char in sub-filter-spec: '~'"),
        (&["--filter=auto", "--batch"], 128, "fatal: 'auto' filter not supported by this command"),
        (&["--filter=blob:limit=x", "--batch"], 128, "fatal: invalid filter-spec 'blob:limit=x'"),
        (
            &["--filter=object:type=Blob", "--batch"],
            128,
            "fatal: 'Blob' for 'object:type=<type>' is not a valid object type",
        ),
        (&["--filter=blob:none", "-p", "main"], 129, "usage: objects filter only supported in batch mode"),
        (&["--filter=blob:none", "--batch-all-objects"], 129, "usage: objects filter only supported in batch mode"),
        (&["--filter"], 129, "error: option `filter' requires a value"),
        (&["--no-filter=x"], 129, "error: option `no-filter' takes no value"),
    ] {
        let ours = run(CAT_BLOBD, &dir, args, b"", &[]);
        assert_eq!(ours.status.code(), Some(code), "{args:?}: {}", ours.describe());
        assert_bytes_eq(&format!("{args:?}"), first_line.as_bytes(), ours.first_stderr_line());
        assert!(ours.stdout.is_empty(), "{args:?}: {}", ours.describe());
        same_as_255(&dir, args, b"", &[]);
    }
}

/// The mailmap settings a test runs under: none (HEAD:.mailmap in the bare repository), `mailmap.blob` (a blob,
/// a commit, a name that does not resolve), `mailmap.file` (present, absent).
fn mailmap_configs() -> Vec<Vec<(String, String)>> {
    let file = root().join("extra.mailmap").display().to_string();
    let config = |key: &str, value: &str| vec![(key.to_owned(), value.to_owned())];
    vec![
        vec![],
        config("mailmap.blob", "other:other.mailmap"),
        config("mailmap.blob", "main"),
        config("mailmap.blob", "nope"),
        config("mailmap.file", &file),
        config("mailmap.file", "/nonexistent/mailmap"),
    ]
}

fn config_env(config: &[(String, String)]) -> Vec<(String, String)> {
    let mut env = vec![("GIT_CONFIG_COUNT".to_owned(), config.len().to_string())];
    for (at, (key, value)) in config.iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{at}"), key.clone()));
        env.push((format!("GIT_CONFIG_VALUE_{at}"), value.clone()));
    }
    env
}

// git 2.47 applies --use-mailmap as 2.55 does: compared with both.
#[test]
fn use_mailmap_reads_and_applies_the_mailmap_as_git_does() {
    let dir = mailmap_repo();
    let names = ["main", "main~1", "main~2", "main~3", "main~4", "v1", "v2", "other", "main^{tree}", "main:blob-1"];
    let input: Vec<u8> = names.iter().flat_map(|name| format!("{name}\n").into_bytes()).collect();
    for (at, config) in mailmap_configs().iter().enumerate() {
        let env = config_env(config);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        for mode in ["--batch", "--batch-check", "--batch-check=%(objectsize) %(objectsize:disk) %(objecttype)"] {
            same_everywhere(&dir, &["--use-mailmap", mode], &input, &env);
        }
        same_everywhere(&dir, &["--mailmap", "--batch-all-objects", "--batch"], b"", &env);
        same_everywhere(&dir, &["--use-mailmap", "--no-mailmap", "-p", "v1"], b"", &env);
        if at > 1 {
            continue;
        }
        // The single-object modes, with the mailmap at HEAD and with one from `mailmap.blob`.
        for name in names {
            for mode in ["-p", "-s", "-t"] {
                same_everywhere(&dir, &["--use-mailmap", mode, name], b"", &env);
            }
        }
        // `<type> <object>` where the object peels to the type (else git 2.47 and 2.55 crash with the mailmap on).
        for (kind, name) in
            [("commit", "main"), ("commit", "v1"), ("tag", "v2"), ("tree", "v1"), ("tree", "main^{tree}")]
        {
            same_everywhere(&dir, &["--use-mailmap", kind, name], b"", &env);
        }
    }
    // With a work tree, `.mailmap` is read from it (cat-file runs at its top).
    same_everywhere(&root().join("work"), &["--use-mailmap", "-p", "HEAD"], b"", &[]);
}

// `mailmap <bool>` is new in git 2.55: its answer is 2.47's with --use-mailmap for the requests after
// `mailmap true` and without for the others.
#[test]
fn the_mailmap_command_switches_the_mailmap_per_request() {
    let dir = mailmap_repo();
    let answer = |mailmap: bool, commands: &[u8]| {
        let args = if mailmap { &["--batch-command", "--use-mailmap"][..] } else { &["--batch-command"] };
        git_ok(&dir, args, commands)
    };
    let segments: [(bool, &[u8]); 4] = [
        (false, b"info main\ncontents v1\n"),
        (true, b"info main\ncontents v1\ncontents v2\n"),
        (false, b"contents v1\n"),
        (true, b"info main~1\n"),
    ];
    let switches: [&[u8]; 4] = [b"", b"mailmap true\n", b"mailmap off\n", b"mailmap 1\n"];
    let mut input = Vec::new();
    let mut expected = Vec::new();
    for ((mailmap, commands), switch) in segments.iter().zip(switches) {
        input.extend_from_slice(switch);
        input.extend_from_slice(commands);
        expected.extend(answer(*mailmap, commands));
    }
    for buffer in [false, true] {
        let args = if buffer { &["--batch-command", "--buffer"][..] } else { &["--batch-command"] };
        assert_ours(&format!("{args:?}"), &run(CAT_BLOBD, &dir, args, &input, &[]), 0, &expected, b"");
        same_as_255(&dir, args, &input, &[]);
        let flushed = [&input[..], b"flush\n"].concat();
        same_as_255(&dir, args, &flushed, &[]);
    }
    // A value that is not a boolean is fatal after the answers before it, as git's die() in the command.
    let before = answer(false, b"info main\n");
    let ours = run(CAT_BLOBD, &dir, &["--batch-command"], b"info main\nmailmap maybe\ninfo v1\n", &[]);
    assert_ours("mailmap maybe", &ours, 128, &before, b"fatal: mailmap: invalid boolean 'maybe'\n");
    for input in [&b"info main\nmailmap maybe\ninfo v1\n"[..], b"mailmap\n", b"mailmapx\n", b"mailmap \ninfo v1\n"] {
        same_as_255(&dir, &["--batch-command"], input, &[]);
        same_as_255(&dir, &["--batch-command", "--buffer"], input, &[]);
    }
}

// --allow-unknown-type is a no-op since git 2.50 (2.47 shows the header's type and size with -t and -s, and
// refuses it with -p): the answer is 2.47's without it.
#[test]
fn allow_unknown_type_is_a_no_op() {
    let bogus = repo("bogus.git");
    let names = repo("names.git");
    for id in [fixture_word("bogus-short"), fixture_word("bogus-long")] {
        for mode in ["-t", "-s", "-p"] {
            let without = run("git", &bogus, &[mode, &id], b"", &[]);
            let ours = run(CAT_BLOBD, &bogus, &[mode, "--allow-unknown-type", &id], b"", &[]);
            assert_same(&format!("{mode} --allow-unknown-type {id}"), &without, &ours, Stderr::Exact);
            same_as_255(&bogus, &[mode, "--allow-unknown-type", &id], b"", &[]);
        }
    }
    let without = run("git", &names, &["-p", "HEAD"], b"", &[]);
    let ours = run(CAT_BLOBD, &names, &["--allow-unknown-type", "-p", "HEAD"], b"", &[]);
    assert_same("--allow-unknown-type -p HEAD", &without, &ours, Stderr::Exact);
    same_as_255(&names, &["--no-allow-unknown-type", "blob", "HEAD:hello.txt"], b"", &[]);
}

// 2.55's usage lists fewer forms than 2.47's (`--allow-unknown-type` is gone, `--filter` is new): its first line
// is the same; the whole text is compared with 2.55.
#[test]
fn usage_is_that_of_git_255() {
    let dir = mailmap_repo();
    for args in [&["-h"][..], &[], &["--bogus"], &["-p"], &["-t", "a", "b"]] {
        let git = run("git", &dir, args, b"", &[]);
        let ours = run(CAT_BLOBD, &dir, args, b"", &[]);
        assert_eq!(ours.status.code(), Some(129), "{args:?}: {}", ours.describe());
        let first = |out: &Output| out.stdout.split(|&b| b == b'\n').next().map(<[u8]>::to_vec);
        assert_eq!(first(&ours), first(&git), "{args:?}");
        assert_bytes_eq(&format!("{args:?}"), git.first_stderr_line(), ours.first_stderr_line());
        same_as_255(&dir, args, b"", &[]);
    }
}

// parse-options' own errors are the message alone, in 2.47 as in 2.55; only an unknown option adds the usage.
#[test]
fn option_errors_are_the_message_alone() {
    let dir = mailmap_repo();
    for args in
        [&["--path"][..], &["--batch", "--batch-check"], &["-t", "-p", "main"], &["--buffer=x"], &["--unordered=1"]]
    {
        same_everywhere(&dir, args, b"", &[]);
    }
}

// Without %(rest) the whole line is the name, spaces and all (t1006 checks it with an index path, which
// cat-blobd does not read; a tree path is the same rule).
#[test]
fn without_rest_the_whole_line_is_the_name() {
    let dir = mailmap_repo();
    let input = b"main:white space\nmain:white space \nmain:white\tspace\n";
    for mode in ["--batch-check", "--batch", "--batch-check=%(objectname) [%(rest)]"] {
        same_everywhere(&dir, &[mode], input, &[]);
    }
}

/// A loose object file whose zlib header asks for a preset dictionary (FDICT, with the Adler-32 of
/// "anything" as its id), as t1006 writes one.
fn dictionary_stream() -> Vec<u8> {
    let adler = |data: &[u8]| {
        let (a, b) = data.iter().fold((1u32, 0u32), |(a, b), &byte| {
            let a = (a + u32::from(byte)) % 65521;
            (a, (b + a) % 65521)
        });
        b << 16 | a
    };
    let (cmf, mut flg) = (0x78u8, 0xa0u8);
    flg += (31 - ((u16::from(cmf) << 8 | u16::from(flg)) % 31) as u8) % 31;
    let mut stream = vec![cmf, flg];
    stream.extend(adler(b"anything").to_be_bytes());
    stream
}

// git 2.47 aborts on such a stream (BUG: total_in mismatch); 2.55 reports it and gives up, which t1006 checks by
// the lines below. The rest of 2.55's stderr (the lines repeated as it retries, its last fatal) is its own.
#[test]
fn a_zlib_dictionary_is_reported_as_git_does() {
    let scratch = TempDir::new("zlib-dictionary");
    let dir = scratch.path().join("repo.git");
    let status = std::process::Command::new("git").args(["init", "-q", "--bare"]).arg(&dir).status().unwrap();
    assert!(status.success());
    let content = b"content that will be recompressed\n";
    let id = crate::util::case::sha1_blob_id(content);
    let path = dir.join("objects").join(&id[..2]).join(&id[2..]);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, dictionary_stream()).unwrap();
    for args in [&["blob", id.as_str()][..], &["-p", &id], &["-t", &id], &["-s", &id]] {
        let ours = run(CAT_BLOBD, &dir, args, b"", &[]);
        let stderr = escape(&ours.stderr);
        assert_eq!(ours.status.code(), Some(128), "{args:?}: {}", ours.describe());
        assert!(ours.stdout.is_empty(), "{args:?}: {}", ours.describe());
        assert!(stderr.contains("error: inflate: needs dictionary"), "{args:?}: {stderr}");
        assert!(stderr.contains(&format!("error: unable to unpack {id} header")), "{args:?}: {stderr}");
        assert!(!stderr.contains("too long"), "{args:?}: {stderr}");
        if let Some(git) = git_255().or_else(|| {
            crate::util::skip::record(NO_GIT_255);
            None
        }) {
            let theirs = run(&git.to_string_lossy(), &dir, args, b"", &[]);
            assert_eq!(theirs.status.code(), ours.status.code(), "{args:?}: {}", theirs.describe());
            let two_lines =
                ours.stderr.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(1).map_or(0, |(at, _)| at + 1);
            assert!(theirs.stderr.starts_with(&ours.stderr[..two_lines]), "{args:?}: {}", theirs.describe());
        }
    }
}
