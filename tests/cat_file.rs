//! `cat-blobd cat-file` against the installed `git cat-file`: the same arguments and input in the same
//! repository (fixtures/make-cat-file-fixtures.sh), compared byte for byte on stdout and stderr, and by exit
//! status.
use std::io::{BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::util::cat_file::{Stderr, assert_same, fixture_word, repo, run};
use crate::util::{CAT_BLOBD, assert_bytes_eq, clean_git_env, escape, read_response};

/// Runs git and cat-blobd on the same arguments and input and asserts the same bytes and status.
#[track_caller]
fn same_env(dir: &Path, args: &[&str], stdin: &[u8], stderr: Stderr, env: &[(&str, &str)]) {
    let git = run("git", dir, args, stdin, env);
    let ours = run(CAT_BLOBD, dir, args, stdin, env);
    let what = format!("cat-file {args:?} in {} on {}", dir.display(), escape(&stdin[..stdin.len().min(200)]));
    assert_same(&what, &git, &ours, stderr);
}

#[track_caller]
fn same(dir: &Path, args: &[&str], stdin: &[u8]) {
    same_env(dir, args, stdin, Stderr::Exact, &[]);
}

fn git_in(dir: &Path, args: &[&str]) -> String {
    let mut cmd = Command::new("git");
    clean_git_env(&mut cmd);
    let out = cmd.args(args).current_dir(dir).stdin(Stdio::null()).output().expect("run git");
    assert!(out.status.success(), "git {args:?}: {}", escape(&out.stderr));
    String::from_utf8(out.stdout).expect("ASCII")
}

/// Every object of names.git, then every form of name the front end resolves, and some it must not.
pub(crate) fn names(dir: &Path) -> Vec<String> {
    let head = git_in(dir, &["rev-parse", "HEAD"]).trim().to_owned();
    let (ambiguous, ref_like) = (fixture_word("ambiguous"), fixture_word("ref-like-hex"));
    let mut names: Vec<String> = git_in(dir, &["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"])
        .lines()
        .map(str::to_owned)
        .collect();
    let forms = [
        "HEAD",
        "main",
        "side",
        "loose",
        "light",
        "v1",
        "v1-outer",
        "tree-tag",
        "blob-tag",
        "loose-tag",
        "origin",
        "origin/main",
        "remotes/origin/main",
        "refs/heads/main",
        "heads/main",
        "tags/v1",
        "v1^{}",
        "v1-outer^{}",
        "v1-outer^{commit}",
        "v1-outer^{tree}",
        "v1^{tag}",
        "v1-outer^{tag}",
        "tree-tag^{tree}",
        "tree-tag^{commit}",
        "blob-tag^{blob}",
        "blob-tag^{}",
        "HEAD^{blob}",
        "HEAD^{object}",
        "HEAD^{}",
        "HEAD^0",
        "HEAD^",
        "HEAD^1",
        "HEAD^2",
        "HEAD^3",
        "HEAD~1",
        "HEAD~2",
        "HEAD~20",
        "HEAD~1^2",
        "HEAD^2~1",
        "v1:hello.txt",
        "HEAD:",
        "HEAD:dir",
        "HEAD:dir/",
        "HEAD:dir/sub/file",
        "HEAD:nope",
        "HEAD:link",
        "HEAD:module",
        "HEAD:hello.txt/x",
        "main^{tree}:dir",
        "loose-tag^{tree}:loose.txt",
        "HEAD:other/with space.txt",
        "nope",
        "HEAD..main",
        "^HEAD",
        "dup",
        "dup^{tree}",
        "heads/dup",
        "tags/dup",
        "refs/heads/dup",
        "@",
        "0000",
        "1111111111111111111111111111111111111111",
        // Missing ids in lowercase and uppercase hex: the answer repeats the name as given.
        "abcdef0000000000000000000000000000000001",
        "ABCDEF0000000000000000000000000000000001",
        "v1.0",
        "refs/heads",
        "",
    ];
    names.extend(forms.iter().map(|s| s.to_string()));
    names.extend([ambiguous.clone(), format!("{ambiguous}^{{}}"), ref_like.clone(), format!("{ref_like}^{{}}")]);
    names.extend([fixture_word("ambiguous-commit"), fixture_word("ambiguous-tag")]);
    // Describe output both gits take (`x-g<abbrev>`, without a count, only 2.47 does: tests/cat_file_names.rs).
    names.extend([head[..10].to_owned(), head.to_uppercase(), format!("v1.0-3-g{}", &head[..7])]);
    names
}

pub(crate) fn lines(names: &[String], delimiter: u8) -> Vec<u8> {
    names.iter().flat_map(|name| name.bytes().chain([delimiter])).collect()
}

pub(crate) const ALL_ATOMS: &str =
    "--batch-check=%(objectname)|%(objecttype)|%(objectsize)|%(objectsize:disk)|%(deltabase)|[%(rest)]";

#[test]
fn every_name_form_in_every_batch_mode() {
    let dir = repo("names.git");
    let names = names(&dir);
    let input = lines(&names, b'\n');
    for args in [
        &["--batch"][..],
        &["--batch-check"],
        &[ALL_ATOMS],
        &["--batch=%(objectname) %(rest)"],
        &["--batch=literal %% %x text"],
        &["--batch="],
        &["--batch", "--buffer"],
        &["--batch-check", "--buffer"],
    ] {
        same(&dir, args, &input);
    }
    same(&dir, &["--batch", "-Z"], &lines(&names, 0));
    same(&dir, &["--batch-check", "-z"], &lines(&names, 0));
}

#[test]
fn rest_splits_at_the_first_whitespace_and_crlf_is_stripped() {
    let dir = repo("names.git");
    same(&dir, &[ALL_ATOMS], b"HEAD some rest\nv1\t  tabbed rest \nHEAD:other/with space.txt x\nHEAD\r\nv1 \r\n");
    same(&dir, &["--batch-check"], b"HEAD some rest\nHEAD\r\n");
}

#[test]
fn all_objects_sorted_and_unordered() {
    for name in ["names.git", "sha256.git", "alt.git"] {
        let dir = repo(name);
        for args in [
            &["--batch-all-objects", ALL_ATOMS][..],
            &["--batch-all-objects", "--unordered", ALL_ATOMS],
            &["--batch-all-objects", "--batch-check=%(objectname)"],
            &["--batch-all-objects", "--batch"],
            &["--batch-all-objects", "--unordered", "--batch", "--no-buffer"],
        ] {
            same(&dir, args, b"");
        }
    }
}

#[test]
fn single_object_modes() {
    let dir = repo("names.git");
    let names = [
        "HEAD",
        "v1",
        "v1-outer",
        "tree-tag",
        "blob-tag",
        "HEAD^{tree}",
        "HEAD:dir",
        "HEAD:other",
        "v1:hello.txt",
        "HEAD:module",
        "HEAD:nope",
        "nope",
        "HEAD:link",
        "1111111111111111111111111111111111111111",
        "HEAD~1^2",
    ];
    for name in names {
        for mode in ["-t", "-s", "-e", "-p"] {
            same(&dir, &[mode, name], b"");
        }
        for kind in ["blob", "tree", "commit", "tag", "bogus"] {
            same(&dir, &[kind, name], b"");
        }
    }
    for ambiguous in ["ambiguous", "ambiguous-commit", "ambiguous-tag"] {
        same(&dir, &["-p", &fixture_word(ambiguous)], b"");
        same(&dir, &["-t", &format!("{}^{{}}", fixture_word(ambiguous))], b"");
    }
}

#[test]
fn symlinks_with_follow_symlinks() {
    let dir = repo("names.git");
    let paths = [
        "link",
        "dirlink",
        "through-dir",
        "dangling",
        "loop-a",
        "escape",
        "absolute",
        "dir/up",
        "notdir",
        "dirlink/file",
        "dirlink/nope",
        "hello.txt/x",
        "dir/sub/../../hello.txt",
        "link/x",
        "",
        "dir/",
        "nope",
        "dir/sub/file",
        "dirlink/../hello.txt",
    ];
    let names: Vec<String> =
        paths.iter().map(|path| format!("HEAD:{path}")).chain(["HEAD".into(), "v1:link".into()]).collect();
    for args in [
        &["--batch", "--follow-symlinks"][..],
        &["--batch-check", "--follow-symlinks"],
        &[ALL_ATOMS, "--follow-symlinks"],
    ] {
        same(&dir, args, &lines(&names, b'\n'));
    }
    same(&dir, &["--batch-check", "--follow-symlinks", "-Z"], &lines(&names, 0));
    same(&dir, &["--batch-command", "--follow-symlinks"], b"info HEAD:dangling\ncontents HEAD:through-dir\n");
}

#[test]
fn single_object_names_that_do_not_resolve_are_explained_as_git_does() {
    let dir = repo("names.git");
    let ambiguous = format!("{}:x", fixture_word("ambiguous"));
    for name in ["nope:x", "HEAD~9:x", "HEAD^{blob}:x", "HEAD:nope", "HEAD:dir/nope", "nope", "HEAD^{blob}", &ambiguous]
    {
        same(&dir, &["-p", name], b"");
        same(&dir, &["-t", name], b"");
    }
}

#[test]
fn objects_of_unknown_types_as_git_reports_them() {
    let dir = repo("bogus.git");
    let (short, long) = (fixture_word("bogus-short"), fixture_word("bogus-long"));
    for id in [&short, &long] {
        // `--allow-unknown-type` is a no-op since git 2.50: cat_file_255 checks it.
        for args in [&["-t"][..], &["-s"], &["-p"], &["-e"]] {
            let mut args = args.to_vec();
            args.push(id);
            same(&dir, &args, b"");
        }
        same(&dir, &["--batch-check"], format!("{id}\n").as_bytes());
        same(&dir, &["--batch"], format!("{id}\n").as_bytes());
    }
    // `<type> <object>` of the long header takes git through several readers, each with its own complaint; only
    // the short one is compared.
    same(&dir, &["bogus", &short], b"");
    same(&dir, &["blob", &short], b"");
}

#[test]
fn an_empty_format_still_looks_the_object_up() {
    let dir = repo("names.git");
    same(&dir, &["--batch-check="], b"HEAD\n0000000000000000000000000000000000000000\nnope\n");
    same(&dir, &["--batch-check=%(objectname)"], b"HEAD\n1111111111111111111111111111111111111111\n");
    same(&dir, &["--batch-command=%(rest)"], b"info 1111111111111111111111111111111111111111\n");
}

#[test]
fn compat_object_format_ids_are_refused_by_name() {
    let dir = repo("compat.git");
    same(&dir, &["-p", &fixture_word("compat-sha1")], b"");
    same(&dir, &["--batch"], format!("{}\n", fixture_word("compat-sha1")).as_bytes());
    let sha256 = fixture_word("compat-sha256");
    for (args, stdin) in [(vec!["-p", sha256.as_str()], String::new()), (vec!["--batch"], format!("{sha256}\n"))] {
        let ours = run(CAT_BLOBD, &dir, &args, stdin.as_bytes(), &[]);
        assert_eq!(ours.status.code(), Some(128), "{args:?}: {}", ours.describe());
        let line = String::from_utf8_lossy(ours.first_stderr_line()).into_owned();
        assert!(line.starts_with("fatal: ") && line.contains("compatObjectFormat") && line.contains(&sha256), "{line}");
    }
}

#[test]
fn replace_refs_apply_unless_turned_off() {
    let dir = repo("names.git");
    let input = b"v1:hello.txt\nHEAD\n";
    for env in [&[][..], &[("GIT_NO_REPLACE_OBJECTS", "1")]] {
        same_env(&dir, &["--batch"], input, Stderr::Exact, env);
        same_env(&dir, &[ALL_ATOMS], input, Stderr::Exact, env);
        same_env(&dir, &["-p", "v1:hello.txt"], b"", Stderr::Exact, env);
        same_env(&dir, &["-s", "v1:hello.txt"], b"", Stderr::Exact, env);
    }
}

#[test]
fn sha256_and_alternates() {
    let input = b"HEAD\nt1\nt1^{}\nHEAD:a\nHEAD~1:d/e\nHEAD:d\nnope\n";
    for name in ["sha256.git", "alt.git"] {
        let dir = repo(name);
        same(&dir, &["--batch"], input);
        same(&dir, &[ALL_ATOMS], input);
        same(&dir, &["-p", "HEAD^{tree}"], b"");
        same(&dir, &["-t", "HEAD"], b"");
    }
}

#[test]
fn batch_command_and_its_errors() {
    let dir = repo("names.git");
    let good: &[u8] = b"contents HEAD\ninfo v1\ninfo nope\ncontents HEAD:hello.txt\n";
    same(&dir, &["--batch-command"], good);
    same(&dir, &["--batch-command", "--buffer"], good);
    same(&dir, &["--batch-command", "--buffer"], b"contents HEAD\nflush\ninfo v1\nflush\ninfo HEAD\n");
    same(&dir, &["--batch-command=%(objectname) %(rest)"], b"info HEAD rest\n");
    same(&dir, &["--batch-command", "-Z"], b"contents HEAD\0info v1\0");
    for bad in [
        &b"info HEAD\n\ninfo v1\n"[..],
        b"info HEAD\nbogus HEAD\n",
        b"info HEAD\nflush\n",
        b"info HEAD\n  info v1\n",
        b"info\n",
        b"contents\n",
        b"info HEAD\nflush now\n",
        b"info HEAD\ninfo\0v1\n",
        b"\0info HEAD\n",
    ] {
        same(&dir, &["--batch-command"], bad);
    }
    same_env(
        &dir,
        &["--batch-command", "--buffer"],
        b"info HEAD\n",
        Stderr::Exact,
        &[("GIT_TEST_CAT_FILE_NO_FLUSH_ON_EXIT", "1")],
    );
}

#[test]
fn bad_input_lines() {
    let dir = repo("names.git");
    same(&dir, &["--batch-check"], b"HEAD\n\nv1\n");
    same(&dir, &["--batch-check"], b"HEAD\0garbage\nv1\0\n");
    let mut long = vec![b'H'; 1 << 20];
    long.extend_from_slice(b"\nHEAD\n");
    same(&dir, &["--batch-check"], &long);
    same(&dir, &["--batch=%(bogus)"], b"HEAD\n");
    same(&dir, &["--batch=%(objectname"], b"HEAD\n");
    same(&dir, &["--batch-check=%(objecttype) %(rest"], b"HEAD\n");
}

#[test]
fn usage_errors_are_gits() {
    let dir = repo("names.git");
    for args in [
        &["--buffer"][..],
        &["-t", "-p", "HEAD"],
        &["--batch", "--batch-check"],
        &["--batch", "x"],
        &["--batch", "-p"],
        &["-t"],
        &["-t", "a", "b"],
        &["x"],
        &["x", "y", "z"],
        &["--bogus"],
        &["-q"],
        &["--batch-all-objects"],
        &["-Z", "-p", "HEAD"],
        &["--follow-symlinks", "-p", "HEAD"],
        &["--path=x", "-p", "HEAD"],
        &[],
        &["--textconv"],
        &["--filters"],
        &["--textconv", "a", "b"],
        &["--batch", "-t"],
    ] {
        same_env(&dir, args, b"", Stderr::FirstLine, &[]);
    }
}

#[test]
fn options_that_need_a_work_tree_are_refused_by_name() {
    let dir = repo("names.git");
    for (args, flag) in [
        (&["--textconv", "HEAD:hello.txt"][..], "--textconv"),
        (&["--filters", "HEAD:hello.txt"], "--filters"),
        (&["--batch", "--textconv"], "--textconv"),
        (&["--path=hello.txt", "--filters", "HEAD"], "--filters"),
    ] {
        let ours = run(CAT_BLOBD, &dir, args, b"", &[]);
        assert_eq!(ours.status.code(), Some(129), "{args:?}: {}", ours.describe());
        let line = String::from_utf8_lossy(ours.first_stderr_line()).into_owned();
        assert!(line.starts_with("fatal: ") && line.contains(flag), "{args:?}: {line}");
        assert!(ours.stdout.is_empty());
    }
}

/// One request at a time without `--buffer`: each answer must arrive before the next request is sent. A
/// watchdog kills cat-blobd if an answer is held back, so a hang fails the test instead of stalling it.
#[test]
fn interactive_one_request_at_a_time() {
    let mut cmd = Command::new(CAT_BLOBD);
    clean_git_env(&mut cmd);
    cmd.args(["cat-file", "--batch"]);
    assert_interactive(cmd, &repo("names.git"));
}

/// As above, but each write also carries the first half of the next request's line: the frontend has begun
/// the next request and waits for this answer before it finishes it. git answers: it reads one line and
/// flushes. A partial line buffered must not count as "more input coming": the engine would hold the job back
/// in its batch, waiting for a line that only comes after the answer.
#[test]
fn interactive_with_half_of_the_next_line_sent() {
    let mut cmd = Command::new(CAT_BLOBD);
    clean_git_env(&mut cmd);
    cmd.args(["cat-file", "--batch"]);
    assert_interactive_sending(cmd, &repo("names.git"), true);
}

/// Runs `cmd` (a `cat-file --batch` without `--buffer`) in `dir`, sends it 1,000 names one at a time, each only
/// once the answer to the one before has arrived, and compares the answers with git's. A watchdog kills `cmd`
/// if an answer is held back, so a hang fails the test instead of stalling it.
pub(crate) fn assert_interactive(cmd: Command, dir: &Path) {
    assert_interactive_sending(cmd, dir, false);
}

/// [`assert_interactive`]; with `half_of_next`, each write ends with the first half of the next line.
fn assert_interactive_sending(mut cmd: Command, dir: &Path, half_of_next: bool) {
    const REQUESTS: usize = 1000;
    let sent: Vec<String> = names(dir).into_iter().cycle().take(REQUESTS).collect();
    let expected = run("git", dir, &["--batch"], &lines(&sent, b'\n'), &[]).stdout;
    let mut child = cmd
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn cat-blobd");
    let pid = child.id();
    let (done, watchdog) = mpsc::channel::<()>();
    let guard = std::thread::spawn(move || {
        if watchdog.recv_timeout(Duration::from_secs(60)) == Err(mpsc::RecvTimeoutError::Timeout) {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
    });
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut got = Vec::new();
    let whole: Vec<Vec<u8>> = sent.iter().map(|name| format!("{name}\n").into_bytes()).collect();
    for (at, line) in whole.iter().enumerate() {
        let split = |line: &[u8]| if half_of_next { line.len() / 2 } else { 0 };
        let sent_before = if at == 0 { 0 } else { split(line) };
        let mut write = line[sent_before..].to_vec();
        if let Some(next) = whole.get(at + 1) {
            write.extend_from_slice(&next[..split(next)]);
        }
        stdin.write_all(&write).expect("send");
        stdin.flush().expect("flush");
        got.extend_from_slice(&read_response(&mut stdout).expect("an answer"));
    }
    drop(stdin);
    let _ = done.send(());
    guard.join().expect("watchdog");
    assert!(child.wait().expect("wait").success());
    assert_bytes_eq("interactive answers", &expected, &got);
}
