//! fast-import as git 2.55 speaks it, where it differs from 2.47: the `gpgsig` commit header with its data body,
//! and the modes of `--signed-commits=` / `--signed-tags=` (cat-blobd answers as the newest git release).
//!
//! Streams that write run through git alone and through cat-blobd, whose write-through hands the writing to the
//! same git, so they compare with any git: one that does not know `gpgsig` (2.47) dies on the line, and
//! cat-blobd must die with it without answering a read git never reached. A read-only stream never starts git,
//! so there cat-blobd alone judges a mode: against a git that predates the modes, the test checks what 2.55
//! does (the stream's responses as git gives them without the mode; git 2.55's usage error for an unknown one)
//! instead of asking that git.

use crate::util::case::{Case, Checks, StderrMatch, case};
use crate::util::{Fixture, Run, assert_same_as_git, escape, git_fast_import, test_git_version};

const IDENT: &str = "C O Mitter <c@example.com> 1700000000 +0000";

/// Not a valid signature: it never verifies, whatever verifies it.
const SIGNATURE: &str = "-----BEGIN PGP SIGNATURE-----\n\niQEzBAABCAAdFiEEbogus\n=Ab12\n-----END PGP SIGNATURE-----\n";

/// Every mode git 2.55's `parse_sign_mode` accepts (gpg-interface.c).
const MODES: [&str; 12] = [
    "abort",
    "verbatim",
    "ignore",
    "warn-verbatim",
    "warn",
    "warn-strip",
    "strip",
    "abort-if-invalid",
    "strip-if-invalid",
    "sign-if-invalid",
    "sign-if-invalid=",
    "sign-if-invalid=0xKEY",
];

/// Does the git under test know the modes and `gpgsig` as 2.55 does?
fn git_speaks_2_55() -> bool {
    test_git_version() >= (2, 55)
}

/// `gpg.program=false`: a signature never verifies and signing always fails, the same way in both runs, and no
/// gpg runs (no agent, no keyring written in `$HOME`).
fn without_gpg(case: Case) -> Case {
    case.env("GIT_CONFIG_COUNT", "1").env("GIT_CONFIG_KEY_0", "gpg.program").env("GIT_CONFIG_VALUE_0", "false")
}

/// A case that writes, compared in full: stderr byte for byte, the repository, the marks file.
fn writing(what: &str, stream: &str, args: &[&str]) -> Case {
    writing_unchecked(what, stream, args).compare_repository()
}

/// [`writing`] without the repository comparison, for what git 2.47 stores but its own `fsck` or `for-each-ref`
/// then refuses.
fn writing_unchecked(what: &str, stream: &str, args: &[&str]) -> Case {
    let mut all = vec!["--export-marks=out.marks"];
    all.extend_from_slice(args);
    without_gpg(case(what, stream).args(&all).compare("out.marks").whole_stderr(StderrMatch::Exact))
}

/// Runs `case`; with a git that speaks 2.55, also checks that git does `code` and `message` (see
/// [`Case::expect`]), so that the comparison is about what the case names.
fn check(checks: &mut Checks, what: &str, case: Case, code: i32, message: &str) {
    if git_speaks_2_55() {
        case.check(checks, code, message);
    } else {
        checks.run(what, || {
            case.differential();
        });
    }
}

/// A blob, then a commit signed for both hash functions (the second body delimited), with reads inside it
/// and after it, then a tag whose message carries a signature.
fn signed_stream() -> String {
    format!(
        "blob\nmark :1\ndata 3\nabc\n\
         commit refs/heads/main\nmark :2\nauthor {IDENT}\ncommitter {IDENT}\n\
         gpgsig sha1 openpgp\ndata {}\n{SIGNATURE}\
         gpgsig sha256 ssh\ndata <<EOS\n{SIGNATURE}EOS\n\
         encoding UTF-8\ndata 4\none\n\
         M 100644 :1 a\ncat-blob :1\nls \"a\"\nM 100644 {{blob}} b\n\n\
         get-mark :2\nls :2 b\ncat-blob {{blob}}\n\
         tag v1\nmark :3\nfrom :2\ntagger {IDENT}\ndata {}\nv1\n{SIGNATURE}\
         get-mark :3\nls :2 a\n",
        SIGNATURE.len(),
        SIGNATURE.len() + 3,
    )
}

/// A signed commit and signed tag in every mode, commits and tags alike, and in the default mode: the
/// signatures (kept, stripped, warned about, refused, checked) are git's business, and every read around
/// them is answered as git alone answers it.
#[test]
fn signed_commits_and_tags_in_every_mode() {
    let stream = signed_stream();
    let mut checks = Checks::default();
    check(&mut checks, "default mode", writing("default mode", &stream, &[]), 0, "");
    if !git_speaks_2_55() {
        // Modes this git does not know are covered below (`modes_without_git`).
        return checks.finish();
    }
    // Part of git's line: it means to quote the subject, which it finds in the message alone only after an
    // empty line.
    let (stripping, replacing) = ("stripping invalid signature for commit", "replacing invalid signature for commit");
    for (mode, code, message) in [
        ("abort", 128, "fatal: encountered signed commit; use --signed-commits=<mode> to handle it"),
        ("verbatim", 0, ""),
        ("ignore", 0, ""),
        ("warn-verbatim", 0, "warning: importing a commit signature verbatim"),
        ("warn", 0, "warning: importing a commit signature verbatim"),
        ("warn-strip", 0, "warning: stripping a commit signature"),
        ("strip", 0, ""),
        ("abort-if-invalid", 128, "fatal: aborting due to invalid signature"),
        ("strip-if-invalid", 0, stripping),
        ("sign-if-invalid", 128, replacing),
        ("sign-if-invalid=0xKEY", 128, replacing),
    ] {
        let commits = format!("--signed-commits={mode}");
        check(&mut checks, &commits, writing(&commits, &stream, &[&commits]), code, message);
        // Tags alone: commits imported verbatim.
        let tags = format!("--signed-tags={mode}");
        let tag_message = match mode {
            "abort" => "fatal: encountered signed tag; use --signed-tags=<mode> to handle it",
            "warn-verbatim" | "warn" => "warning: importing a tag signature verbatim for tag 'v1'",
            "warn-strip" => "warning: stripping a tag signature for tag 'v1'",
            "abort-if-invalid" => message,
            _ => "",
        };
        let tag_code = if tag_message.starts_with("fatal:") || mode.starts_with("sign-if") { 128 } else { 0 };
        check(&mut checks, &tags, writing(&tags, &stream, &[&tags]), tag_code, tag_message);
        // The same mode from the stream.
        let (what, option) = (format!("option {commits}"), format!("option git signed-commits={mode}\n{stream}"));
        check(&mut checks, &what, writing(&what, &option, &[]), code, message);
    }
    checks.finish();
}

/// `gpgsig` lines git dies on: not right after the committer, malformed, or any at all for a git before 2.50.
/// cat-blobd answers nothing git alone would not have answered first: not the read inside the commit, nor
/// those after it.
#[test]
fn gpgsig_lines_git_dies_on() {
    let mut checks = Checks::default();
    let data = format!("data {}\n{SIGNATURE}", SIGNATURE.len());
    for (what, header, message) in [
        (
            "no format",
            "gpgsig sha1",
            "fatal: expected gpgsig format: 'gpgsig <hash-algo> <signature-format>', got 'gpgsig sha1'",
        ),
        ("unknown algorithm", "gpgsig md5 openpgp", "fatal: unknown git hash algorithm in gpgsig: 'md5'"),
        ("unknown format", "gpgsig sha1 pgp", "fatal: invalid signature format in gpgsig: 'pgp'"),
        ("a word too many", "gpgsig sha256 ssh x", "fatal: invalid signature format in gpgsig: 'ssh x'"),
        (
            "after encoding",
            "encoding UTF-8\ngpgsig sha1 openpgp",
            "fatal: expected 'data n' command, found: gpgsig sha1 openpgp",
        ),
    ] {
        let stream = format!(
            "blob\nmark :1\ndata 3\nabc\ncommit refs/heads/main\nmark :2\ncommitter {IDENT}\n{header}\n{data}\
             data 0\nM 100644 :1 a\ncat-blob :1\n\nget-mark :1\ncat-blob {{blob}}\n"
        );
        check(&mut checks, what, writing(what, &stream, &[]), 128, message);
    }
    // Before the committer: git wants one there.
    let stream = format!(
        "commit refs/heads/main\nauthor {IDENT}\ngpgsig sha1 openpgp\n{data}committer {IDENT}\ndata 0\n\ncat-blob {{blob}}\n"
    );
    let what = "before the committer";
    check(&mut checks, what, writing(what, &stream, &[]), 128, "fatal: expected committer but didn't get one");
    checks.finish();
}

/// Three signatures for one hash function: git 2.55 keeps the first and warns about each other one (and about
/// the `unknown` format of the third); every body is read, and the reads after the commit answered.
#[test]
fn more_signatures_for_one_hash_are_ignored_with_a_warning() {
    let data = format!("data {}\n{SIGNATURE}", SIGNATURE.len());
    let stream = format!(
        "commit refs/heads/main\nmark :1\ncommitter {IDENT}\ngpgsig sha1 openpgp\n{data}gpgsig sha1 x509\n{data}\
         gpgsig sha1 unknown\n{data}data 0\n\nget-mark :1\ncat-blob {{blob}}\n"
    );
    let mut checks = Checks::default();
    let warning = "warning: multiple SHA-1 signatures found, ignoring additional signature";
    let what = "three sha1 signatures";
    check(&mut checks, what, writing(what, &stream, &[]), 0, warning);
    checks.finish();
}

/// File changes to paths git 2.55 refuses (`verify_path`): git dies on the line, and cat-blobd answers no read
/// after it. git 2.47 stores them (and its `fsck` then complains, so the repositories are compared with 2.55
/// only).
#[test]
fn file_change_paths_git_2_55_refuses() {
    let mut checks = Checks::default();
    for (what, change, path) in [
        ("modify ..", "M 100644 :1 ../x", "../x"),
        ("modify .", "M 100644 :1 a/./x", "a/./x"),
        ("modify .git", "M 100644 :1 .git/config", ".git/config"),
        ("copy to .GIT", "C a .GIT", ".GIT"),
        ("rename to ..", "R a ..", ".."),
    ] {
        let stream = format!(
            "blob\nmark :1\ndata 3\nabc\ncommit refs/heads/main\nmark :2\ncommitter {IDENT}\ndata 0\n\
             M 100644 :1 a\n{change}\ncat-blob :1\n\nget-mark :2\ncat-blob {{blob}}\n"
        );
        let case = if git_speaks_2_55() { writing(what, &stream, &[]) } else { writing_unchecked(what, &stream, &[]) };
        check(&mut checks, what, case, 128, &format!("fatal: invalid path '{path}'"));
    }
    checks.finish();
}

/// A replace ref that would point to itself: git 2.55 drops it (its warning is silenced by `--quiet`); 2.47
/// writes it, and then no git can read the repository's refs.
#[test]
fn a_replace_ref_to_itself_is_dropped() {
    let stream = "reset refs/replace/{commit}\nfrom {commit}\n\ncheckpoint\ncat-blob {blob}\nls {commit} README.md\n";
    let what = "replace ref to itself";
    let case = if git_speaks_2_55() { writing(what, stream, &[]) } else { writing_unchecked(what, stream, &[]) };
    let mut checks = Checks::default();
    check(&mut checks, what, case, 0, "");
    checks.finish();
}

/// A read-only stream with a mode on the command line or in an `option git` line: cat-blobd checks the mode as
/// git 2.55 does and answers the reads; an unknown mode is git 2.55's usage error (exit 129), before any
/// response.
#[test]
fn modes_in_read_only_streams() {
    let reads = "cat-blob {blob}\nls {tree} README.md\n";
    let bad = ["", "sign", "Strip", "verbatim ", "sign-if-invalidx", "warn-verbatim=k"];
    let mut checks = Checks::default();
    for option in ["signed-commits", "signed-tags"] {
        for (mode, valid) in MODES.iter().map(|m| (*m, true)).chain(bad.iter().map(|m| (*m, false))) {
            let usage = format!("usage: unknown --{option} mode '{mode}'");
            let line = format!("option git {option}={mode}\n{reads}");
            let flag = format!("--{option}={mode}");
            for (what, stream, args) in
                [(format!("option {option}={mode}"), line, vec![]), (flag.clone(), reads.to_owned(), vec![flag])]
            {
                let what = format!("read-only {what}");
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                if git_speaks_2_55() {
                    let (code, message) = if valid { (0, "") } else { (129, usage.as_str()) };
                    case(&what, stream.as_str()).args(&args).check(&mut checks, code, message);
                } else {
                    checks.run(&what, || as_git_2_55(&what, reads, &stream, &args, (!valid).then_some(&usage)));
                }
            }
        }
    }
    checks.finish();
}

/// Against a git older than the modes: a known mode changes nothing a read-only stream sees, so cat-blobd's
/// answers are git's to the stream without it; an unknown one is 2.55's usage error, alone on stderr.
#[track_caller]
fn as_git_2_55(what: &str, reads: &str, stream: &str, args: &[&str], usage: Option<&String>) {
    let expand = crate::util::case::expand;
    let ours = args.iter().fold(Run::cat_blobd_on(Fixture::Basic), |run, arg| run.arg(arg));
    let ours = ours.capture_fd3().stdin(expand(stream.as_bytes())).run();
    match usage {
        None => assert_same_as_git(what, &git_fast_import(Fixture::Basic, &expand(reads.as_bytes()), true), &ours),
        Some(usage) => {
            assert_eq!(ours.status.code(), Some(129), "{what}: {}", ours.describe());
            assert_eq!(escape(&ours.stderr), escape(format!("{usage}\n").as_bytes()), "{what}");
            assert!(ours.fd3.is_empty() && ours.stdout.is_empty(), "{what}: {}", ours.describe());
        }
    }
}
