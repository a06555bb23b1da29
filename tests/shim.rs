//! cat-blobd run as `git` (the link made by `cat-blobd shim <dir>`): every command line runs once with the real git
//! and once through the link, and both must give the same bytes on every fd and the same exit status. The shim's
//! log (`CAT_BLOBD_SHIM_LOG`) shows who answered: cat-blobd, its daemon, or the real git.
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::util::daemon::Daemon;
use crate::util::shim::Shim;
use crate::util::{CAT_BLOBD, Output, Run, TempDir, assert_bytes_eq, assert_same_as_git, clean_git_env, escape};

/// `git args` with the real git.
fn real_git(args: &[&str]) -> Run {
    args.iter().fold(Run::new("git"), |run, arg| run.arg(arg))
}

/// A repository with a work tree: files (one with a non-ASCII name), a tag, a namespace ref and a replace ref
/// (`a.txt`'s blob replaced by `b`'s), made by git with pinned dates. Returns its top directory.
fn repo() -> &'static Path {
    static REPO: OnceLock<(TempDir, PathBuf)> = OnceLock::new();
    let (_, top) = REPO.get_or_init(|| {
        let dir = TempDir::new("shim-repo");
        let top = dir.path().join("work");
        let script = r#"set -e
            git init -q -b main "$1" && cd "$1"
            printf 'alpha\n' >a.txt && mkdir dir && printf 'beta\n' >dir/b && printf 'gamma\n' >"$(printf '\303\274.txt')"
            git add . && git commit -q -m first
            git tag -a -m tag v1
            git update-ref refs/namespaces/ns/refs/heads/main HEAD
            git replace "$(git rev-parse HEAD:a.txt)" "$(git rev-parse HEAD:dir/b)"
        "#;
        run_script(script, &[&top]);
        (dir, top)
    });
    top
}

/// Runs a fixture `script` with `args` (`$1`, …), with git's environment cleaned and pinned authors and dates.
fn run_script(script: &str, args: &[&Path]) {
    let mut cmd = Command::new("sh");
    clean_git_env(&mut cmd);
    for (name, value) in [
        ("GIT_AUTHOR_NAME", "A U Thor"),
        ("GIT_AUTHOR_EMAIL", "author@example.com"),
        ("GIT_AUTHOR_DATE", "1112911993 -0700"),
        ("GIT_COMMITTER_NAME", "C O Mitter"),
        ("GIT_COMMITTER_EMAIL", "committer@example.com"),
        ("GIT_COMMITTER_DATE", "1112911993 -0700"),
    ] {
        cmd.env(name, value);
    }
    let out = cmd.arg("-c").arg(script).arg("sh").args(args).output().expect("sh");
    assert!(out.status.success(), "making the repository: {}", escape(&out.stderr));
}

fn rev(rev: &str) -> String {
    let out = real_git(&["-C", repo().to_str().unwrap(), "rev-parse", rev]).run();
    assert!(out.status.success(), "rev-parse {rev}: {}", escape(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// What a `cat-file --batch` reads: names of every kind cat-blobd resolves, and a missing one.
fn batch_input() -> Vec<u8> {
    b"HEAD\nmain:a.txt\nv1\nHEAD^{tree}\nHEAD:dir\n0123456789012345678901234567890123456789\n".to_vec()
}

/// A fast-import stream that reads: a blob by id (the replaced one), `ls` of a path with a non-ASCII name.
fn fast_import_stream() -> Vec<u8> {
    format!("cat-blob {}\nls {} \"\\303\\274.txt\"\nls {} dir\n", rev("HEAD:a.txt"), rev("HEAD"), rev("HEAD"))
        .into_bytes()
}

/// Runs `args` both ways from `cwd` with `stdin`; asserts the same bytes and status, and that the shim's log says
/// `who` ran the command.
#[track_caller]
fn both_ways(shim: &Shim, cwd: &Path, args: &[&str], stdin: &[u8], who: &str) -> Output {
    both_ways_with(shim, cwd, args, &[], stdin, who)
}

/// [`both_ways`], with the environment variables `env` set for both.
#[track_caller]
fn both_ways_with(shim: &Shim, cwd: &Path, args: &[&str], env: &[(&str, &str)], stdin: &[u8], who: &str) -> Output {
    let with_env = |run: Run| {
        env.iter()
            .fold(run, |run, (name, value)| run.env(name, value))
            .current_dir(cwd)
            .env("CONFIG_VALUE", "x")
            .env("FALSE_VALUE", "false")
            .stdin(stdin)
    };
    let git = with_env(real_git(args)).run();
    let ours = with_env(shim.git(args)).run();
    let what = format!("git {args:?} in {}", cwd.display());
    if who == "git" {
        // The real git ran both times: every byte is the same.
        assert_eq!(git.status.code(), ours.status.code(), "{what}: exit status");
        assert_bytes_eq(&format!("{what}: stdout"), &git.stdout, &ours.stdout);
        let (git_stderr, ours_stderr) = (without_crash_pid(&git.stderr), without_crash_pid(&ours.stderr));
        assert_bytes_eq(&format!("{what}: stderr"), &git_stderr, &ours_stderr);
    } else {
        assert_same_as_git(&what, &git, &ours);
    }
    let command = args.iter().find(|arg| !arg.starts_with('-') && !arg.contains('/')).copied().unwrap_or("");
    let log = shim.take_log();
    assert!(log.starts_with(&format!("{who} ")), "{what}: expected {who} to run {command}, log: {log:?}");
    git
}

/// `stderr` without the process id git fast-import names its crash report by.
fn without_crash_pid(stderr: &[u8]) -> Vec<u8> {
    let marker = b"fast_import_crash_";
    match stderr.windows(marker.len()).position(|window| window == marker) {
        Some(at) => {
            let digits = stderr[at + marker.len()..].iter().take_while(|b| b.is_ascii_digit()).count();
            [&stderr[..at + marker.len()], &stderr[at + marker.len() + digits..]].concat()
        }
        None => stderr.to_vec(),
    }
}

/// Every global option of git.c's `handle_options` that reads or changes what a command reads, in front of
/// `cat-file` and `fast-import`: the shim applies each as git does and cat-blobd answers.
#[test]
fn shim_global_options_are_applied_as_git_applies_them() {
    let shim = Shim::new();
    let top = repo();
    let parent = top.parent().unwrap();
    let git_dir = top.join(".git");
    let git_dir = git_dir.to_str().unwrap();
    let exec_path = String::from_utf8(real_git(&["--exec-path"]).run().stdout).unwrap();
    let words = |words: &[&str]| words.iter().map(|word| word.to_string()).collect::<Vec<String>>();
    let option_sets: Vec<(Vec<String>, &Path)> = vec![
        (vec![], top),
        (words(&["-C", "work"]), parent),
        (words(&["-C", "", "-C", "work/dir", "-C", ".."]), parent),
        (words(&["--git-dir", git_dir]), parent),
        (vec![format!("--git-dir={git_dir}")], parent),
        (words(&["--git-dir=.git", "--work-tree", "dir"]), top),
        (words(&["--work-tree=dir"]), top),
        (words(&["-C", ".git", "--bare"]), top),
        (words(&["--namespace", "ns"]), top),
        (words(&["--namespace=ns"]), top),
        (words(&["-c", "user.name=x", "-c", "color.ui"]), top),
        (words(&["-c", "core.quotePath=false", "-c", "core.useReplaceRefs=NO", "-c", "core.ignoreCase"]), top),
        (words(&["-c", "core.quotepath=off", "-c", "core.quotePath=on"]), top),
        (words(&["--config-env=core.quotePath=FALSE_VALUE"]), top),
        (words(&["--config-env", "user.name=CONFIG_VALUE"]), top),
        (words(&["--config-env=user.name=CONFIG_VALUE"]), top),
        (words(&["--no-replace-objects"]), top),
        (words(&["--literal-pathspecs", "--no-literal-pathspecs"]), top),
        (words(&["--glob-pathspecs"]), top),
        (words(&["--noglob-pathspecs"]), top),
        (words(&["--icase-pathspecs"]), top),
        (words(&["--no-optional-locks"]), top),
        (words(&["--no-lazy-fetch"]), top),
        (words(&["--no-advice"]), top),
        (words(&["-P"]), top),
        (words(&["--no-pager"]), top),
        (vec![format!("--exec-path={}", exec_path.trim())], top),
        (words(&["--attr-source", "HEAD"]), top),
        (words(&["--attr-source=HEAD"]), top),
    ];
    for (options, cwd) in &option_sets {
        let with =
            |rest: &[&'static str]| options.iter().map(String::as_str).chain(rest.iter().copied()).collect::<Vec<_>>();
        both_ways(&shim, cwd, &with(&["cat-file", "--batch"]), &batch_input(), "cat-blobd");
        both_ways(&shim, cwd, &with(&["cat-file", "-p", "HEAD:a.txt"]), b"", "cat-blobd");
        both_ways(
            &shim,
            cwd,
            &with(&["fast-import", "--quiet", "--cat-blob-fd=1"]),
            &fast_import_stream(),
            "cat-blobd",
        );
    }
}

/// Options that change what cat-blobd reads in a way it does not copy, or that print, page or are unknown: the
/// real git runs the whole command line, and its answers are the answers.
#[test]
fn shim_leaves_what_cat_blobd_would_answer_differently_to_git() {
    let shim = Shim::new();
    let top = repo();
    for args in [
        &["-c", "core.quotePath=maybe", "fast-import", "--quiet", "--cat-blob-fd=1"][..],
        &["-c", "include.path=/dev/null", "cat-file", "--batch"],
        &["-p", "cat-file", "--batch"],
        &["--shallow-file", "x", "cat-file", "--batch"],
        &["--frobnicate", "cat-file", "--batch"],
        &["-c", "nosection", "cat-file", "--batch"],
        &["--config-env=user.name=UNSET_VARIABLE", "cat-file", "--batch"],
        &["-C", "no-such-dir", "cat-file", "--batch"],
        &["--git-dir"],
        &["cat-file", "-p", "HEAD:./a.txt"],
        &["cat-file", "--textconv", "HEAD:a.txt"],
        &["-c", "core.abbrev=12", "cat-file", "--batch"],
        &["-c", "core.bare=true", "cat-file", "--use-mailmap", "-p", "HEAD"],
        &["-c", "core.bigFileThreshold=0x10", "cat-file", "--batch"],
        &["cat-file", "--batch", "--frobnicate"],
        &["fast-import", "--threads=2"],
        &["fast-import", "--cat-blob-fd", "1"],
        &["fast-import", "-h"],
        &["frobnicate"],
        &["--version"],
        &["rev-parse", "HEAD", "v1"],
        &["-C", "dir", "rev-parse", "--show-prefix"],
    ] {
        let stream = if args.contains(&"fast-import") { fast_import_stream() } else { batch_input() };
        both_ways(&shim, top, args, &stream, "git");
    }
}

/// The name forms cat-file's own parser resolves (reflogs, the index, searches) are cat-blobd's, whatever the shim
/// once thought of them.
#[test]
fn shim_answers_the_name_forms_cat_file_resolves() {
    let shim = Shim::new();
    let top = repo();
    for name in ["HEAD@{0}", ":a.txt", ":0:a.txt", "HEAD^{/first}", ":/first", "@{-1}"] {
        both_ways(&shim, top, &["cat-file", "-p", name], b"", "cat-blobd");
    }
}

/// A repository whose history names people a mailmap renames: `.mailmap` in the work tree and in HEAD maps the
/// author, `other.map` in HEAD maps the committer; a third map lies outside the repository. Returns its top
/// directory and the outside map.
fn mailmap_repo() -> &'static (PathBuf, PathBuf) {
    static REPO: OnceLock<(TempDir, (PathBuf, PathBuf))> = OnceLock::new();
    let (_, paths) = REPO.get_or_init(|| {
        let dir = TempDir::new("shim-mailmap");
        let (top, outside) = (dir.path().join("work"), dir.path().join("outside.map"));
        let script = r#"set -e
            printf 'File Name <file@example.com> <author@example.com>\n' >"$2"
            git init -q -b main "$1" && cd "$1"
            printf 'Proper Name <proper@example.com> <author@example.com>\n' >.mailmap
            printf 'Blob Name <blob@example.com> <committer@example.com>\n' >other.map
            mkdir dir && printf 'beta\n' >dir/b && printf '\303\274\n' >"$(printf '\303\274.txt')"
            git add . && git commit -q -m first && git tag -a -m tag v1
        "#;
        run_script(script, &[&top, &outside]);
        (dir, (top, outside))
    });
    paths
}

/// `--use-mailmap` and the settings cat-blobd reads, given with `-c`, `--config-env` or an inherited
/// `GIT_CONFIG_PARAMETERS`, stay with cat-blobd, which answers as git does: from the top, a subdirectory, the git
/// directory, with the mailmap settings and without.
#[test]
fn shim_use_mailmap_and_config_settings_stay_with_cat_blobd() {
    let shim = Shim::new();
    let (top, outside) = mailmap_repo();
    let outside = format!("mailmap.file={}", outside.display());
    // The last: git 2.47 reads no `mailmap.blob` with `--bare` in a git directory that has a work tree; 2.55 does.
    let option_sets: Vec<(Vec<&str>, PathBuf)> = vec![
        (vec![], top.clone()),
        (vec![], top.join("dir")),
        (vec!["-C", ".git", "--bare"], top.clone()),
        (vec!["--git-dir=.git"], top.clone()),
        (vec!["--git-dir=../.git"], top.join("dir")),
        (vec!["--git-dir=.git", "--work-tree=dir"], top.clone()),
        (vec!["-c", &outside], top.clone()),
        (vec!["-c", &outside, "-c", "mailmap.blob=HEAD:other.map"], top.join("dir")),
        (vec!["--config-env=mailmap.blob=MAILMAP_BLOB"], top.clone()),
        (vec!["-c", "mailmap.blob=HEAD:other.map", "-C", ".git", "--bare"], top.clone()),
    ];
    let batch = b"HEAD\nv1\nHEAD:dir\n".to_vec();
    for (at, (options, cwd)) in option_sets.iter().enumerate() {
        if at == option_sets.len() - 1 && crate::util::test_git_version() < (2, 55) {
            crate::util::skip::record(&format!(
                "git {options:?} cat-file --use-mailmap needs git 2.55 (set CAT_BLOBD_TEST_GIT)"
            ));
            continue;
        }
        let with = |rest: &[&'static str]| options.iter().copied().chain(rest.iter().copied()).collect::<Vec<_>>();
        let env = [("MAILMAP_BLOB", "HEAD:other.map")];
        for args in [
            with(&["cat-file", "--use-mailmap", "-p", "HEAD"]),
            with(&["cat-file", "--mailmap", "-s", "v1"]),
            with(&["cat-file", "--use-mailmap", "--batch"]),
            with(&["cat-file", "--use-mailmap", "--batch-check=%(objectsize) %(objecttype)"]),
        ] {
            both_ways_with(&shim, cwd, &args, &env, &batch, "cat-blobd");
        }
    }
    // Settings a parent git hands on: read by cat-blobd as git reads them, or left to git when it would refuse
    // them or read them differently.
    let ls = format!(
        "ls {} \"\\303\\274.txt\"\n",
        String::from_utf8(real_git(&["-C", top.to_str().unwrap(), "rev-parse", "HEAD"]).run().stdout).unwrap().trim()
    );
    let fast_import = ["fast-import", "--quiet", "--cat-blob-fd=1"];
    for (parameters, who) in [
        ("'core.quotePath'='false'", "cat-blobd"),
        ("'core.quotepath=off' 'mailmap.blob'='HEAD:other.map'", "cat-blobd"),
        ("'core.quotePath'= 'user.name'='x'", "cat-blobd"),
        ("'core.quotePath'=false", "git"),
        ("'core.quotePath'='2x'", "git"),
        ("'core.abbrev'='9'", "git"),
    ] {
        let env = [("GIT_CONFIG_PARAMETERS", parameters)];
        both_ways_with(&shim, top, &fast_import, &env, ls.as_bytes(), who);
        let args = ["-c", "core.quotePath=true", "cat-file", "--use-mailmap", "-p", "HEAD"];
        both_ways_with(&shim, top, &args, &env, b"", who);
    }
}

/// Seeded neighbours of a `GIT_CONFIG_PARAMETERS` that a parent git hands on: keys cat-blobd reads and keys it
/// does not, in every case, both forms (`'key'='value'`, `'key=value'`), bare keys, values git reads alike or
/// not, and texts with a quote or a byte taken away. Through the shim each must give git's bytes, whether
/// cat-blobd reads the variable or hands the command to git. Replay one seed with
/// `CATBLOBD_SHIM_CONFIG_SEED=<seed>`.
#[test]
fn shim_inherited_config_parameters_neighbours_read_as_git_reads_them() {
    const SEEDS: u64 = 64;
    let shim = Shim::new();
    let (top, _) = mailmap_repo();
    let head = String::from_utf8(real_git(&["-C", top.to_str().unwrap(), "rev-parse", "HEAD"]).run().stdout).unwrap();
    let ls = format!("ls {} \"\\303\\274.txt\"\n", head.trim());
    let seeds: Vec<u64> = match std::env::var("CATBLOBD_SHIM_CONFIG_SEED") {
        Ok(seed) => vec![seed.parse().expect("a seed")],
        Err(_) => (0..SEEDS).collect(),
    };
    let mut answered = std::collections::BTreeMap::<String, usize>::new();
    for seed in seeds {
        let text = config_parameters_neighbour(&mut crate::util::Rng::new(seed));
        let env = [("GIT_CONFIG_PARAMETERS", text.as_str())];
        for (args, stdin) in [
            (&["fast-import", "--quiet", "--cat-blob-fd=1"][..], ls.as_bytes()),
            (&["cat-file", "--use-mailmap", "-p", "HEAD"][..], &b""[..]),
        ] {
            let run = |run: Run| env.iter().fold(run, |run, (name, value)| run.env(name, value)).current_dir(top);
            let git = run(real_git(args)).stdin(stdin).run();
            let ours = run(shim.git(args)).stdin(stdin).run();
            let what = format!("seed {seed}: GIT_CONFIG_PARAMETERS={} git {args:?}", escape(text.as_bytes()));
            let who = shim.take_log().split(' ').next().unwrap_or_default().to_owned();
            if who == "git" {
                assert_eq!(git.status.code(), ours.status.code(), "{what}: exit status");
                assert_bytes_eq(&format!("{what}: stdout"), &git.stdout, &ours.stdout);
                assert_bytes_eq(&format!("{what}: stderr"), &git.stderr, &ours.stderr);
            } else {
                assert_same_as_git(&what, &git, &ours);
            }
            *answered.entry(who).or_default() += 1;
        }
    }
    eprintln!("answered by: {answered:?}");
}

/// One `GIT_CONFIG_PARAMETERS` for [`shim_inherited_config_parameters_neighbours_read_as_git_reads_them`].
fn config_parameters_neighbour(rng: &mut crate::util::Rng) -> String {
    const KEYS: &[&str] = &[
        "core.quotePath",
        "Core.QUOTEPATH",
        "core.quotepath",
        "mailmap.blob",
        "user.name",
        "core.abbrev",
        "core.x.quotepath",
        "nodot",
        "a.1b",
        "",
    ];
    const VALUES: &[&str] =
        &["false", "true", "off", "ON", "0", "1", "2", "", "2x", "maybe", "HEAD:other.map", "it's!"];
    const SEPARATORS: &[&str] = &[" ", "\t", "  ", "\n", " \r"];
    let quote = |text: &str| format!("'{}'", text.replace('\'', "'\\''").replace('!', "'\\!'"));
    let mut text = String::new();
    for at in 0..1 + rng.below(3) {
        if at > 0 {
            text.push_str(SEPARATORS[rng.below(SEPARATORS.len())]);
        }
        // Mostly keys git accepts (the first five), so that cat-blobd reads some whole texts.
        let keys = if rng.below(4) > 0 { &KEYS[..5] } else { KEYS };
        let key = keys[rng.below(keys.len())];
        let value = VALUES[rng.below(VALUES.len())];
        let entry = match rng.below(4) {
            0 => format!("{}={}", quote(key), quote(value)),
            1 => format!("{}=", quote(key)),
            2 => quote(&format!("{key}={value}")),
            _ => quote(key),
        };
        text.push_str(&entry);
    }
    match rng.below(6) {
        0 if !text.is_empty() => _ = text.remove(rng.below(text.len())),
        1 => text.insert(rng.below(text.len() + 1), '\''),
        _ => {}
    }
    text
}

/// A `git fast-import` stream that writes history: cat-blobd hands the writes to a `git fast-import` child, which
/// (started by cat-blobd) the shim leaves to the real git instead of answering it again. Both repositories end
/// with the same branch.
#[test]
fn shim_fast_import_writes_through_the_real_git() {
    let shim = Shim::new();
    let stream = format!(
        "blob\nmark :1\ndata 4\nnew\ncommit refs/heads/written\nmark :2\ncommitter C <c@example.com> 1112911993 -0700\n\
         data 3\nmsg\nfrom {head}\nM 100644 :1 new.txt\n\ncat-blob :1\nls :2 new.txt\nget-mark :2\ndone\n",
        head = rev("HEAD")
    );
    let mut heads = Vec::new();
    for through_shim in [false, true] {
        let dir = TempDir::new("shim-write");
        let clone = dir.path().join("clone");
        let out = real_git(&["clone", "-q", "--no-local", repo().to_str().unwrap(), clone.to_str().unwrap()]).run();
        assert!(out.status.success(), "clone: {}", escape(&out.stderr));
        let args = ["fast-import", "--quiet", "--done", "--cat-blob-fd=1"];
        let run = if through_shim { shim.git(&args) } else { real_git(&args) };
        let out = run.current_dir(&clone).stdin(stream.as_bytes()).run();
        assert!(out.status.success(), "fast-import (shim: {through_shim}): {}", escape(&out.stderr));
        let head = real_git(&["rev-parse", "refs/heads/written"]).current_dir(&clone).run().stdout;
        heads.push((out.stdout, head));
    }
    assert_bytes_eq("responses", &heads[0].0, &heads[1].0);
    assert_bytes_eq("the written branch", &heads[0].1, &heads[1].1);
    let log = shim.take_log();
    // git 2.55's fast-import may run more git commands of its own (`git unpack-objects` for a small import): they
    // reach the real git too.
    let (answered, rest) = log.split_at(log.find('\n').map_or(0, |end| end + 1));
    assert_eq!(answered, "cat-blobd fast-import --quiet --done --cat-blob-fd=1\n", "{log}");
    assert!(rest.starts_with("git fast-import --quiet --done --cat-blob-fd=1\n"), "the child was the real git: {log}");
    assert!(rest.lines().all(|line| line.starts_with("git ")), "only the real git after that: {log}");
}

/// With `CAT_BLOBD_SOCKET`, a daemon answers; once it is gone, or where the path is no socket, cat-blobd answers
/// directly: the tool sees the same bytes every time.
#[test]
fn shim_uses_the_daemon_and_falls_back_when_it_is_gone() {
    let shim = Shim::new();
    let top = repo();
    let mut daemon = Daemon::start(&top.join(".git"), &[]);
    let socket = daemon.socket.clone();
    let args = ["cat-file", "--batch"];
    let git = real_git(&args).current_dir(top).stdin(batch_input()).run();
    let through =
        |socket: &Path| shim.git(&args).current_dir(top).env("CAT_BLOBD_SOCKET", socket).stdin(batch_input()).run();
    let ours = through(&socket);
    assert_same_as_git("through the daemon", &git, &ours);
    assert_eq!(shim.take_log(), "daemon cat-file --batch\n");
    let fast_import = ["fast-import", "--quiet", "--cat-blob-fd=1"];
    let git_fi = real_git(&fast_import).current_dir(top).stdin(fast_import_stream()).run();
    let ours_fi =
        shim.git(&fast_import).current_dir(top).env("CAT_BLOBD_SOCKET", &socket).stdin(fast_import_stream()).run();
    assert_same_as_git("fast-import through the daemon", &git_fi, &ours_fi);
    assert_eq!(shim.take_log(), "daemon fast-import --quiet --cat-blob-fd=1\n");

    daemon.signal(rustix::process::Signal::TERM);
    daemon.wait();
    let ours = through(&socket);
    assert_same_as_git("the daemon is gone", &git, &ours);
    assert_eq!(shim.take_log(), "cat-blobd cat-file --batch\n");

    let not_a_socket = shim.dir().join("plain-file");
    std::fs::write(&not_a_socket, "").unwrap();
    let ours = through(&not_a_socket);
    assert_same_as_git("a path that is no socket", &git, &ours);
    assert_eq!(shim.take_log(), "cat-blobd cat-file --batch\n");
}

/// Runs the link directly (no shell, so `PATH` can be anything) with `env`.
fn run_link(link: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> std::process::Output {
    let mut cmd = Command::new(link);
    clean_git_env(&mut cmd);
    cmd.args(args).envs(env.iter().copied()).stdin(Stdio::null()).output().expect("run the link")
}

#[track_caller]
fn assert_fatal(what: &str, out: &std::process::Output, message: &str) {
    assert_eq!(out.status.code(), Some(128), "{what}: {}", escape(&out.stderr));
    assert!(out.stdout.is_empty(), "{what}: stdout {}", escape(&out.stdout));
    assert_bytes_eq(what, format!("fatal: {message}\n").as_bytes(), &out.stderr);
}

/// The shim finding itself (as `CAT_BLOBD_GIT`, or as the only `git` on `PATH`), and a `CAT_BLOBD_GIT` that is
/// missing or not executable: each a `fatal:` that says what is wrong, exit 128.
#[test]
fn shim_refuses_to_run_itself_or_a_bad_real_git() {
    let shim = Shim::new();
    let link = shim.bin().join("git");
    let only_shim = shim.bin().into_os_string();
    let other_dir = TempDir::new("shim-path");
    let path_without_git = std::ffi::OsString::from(format!("{}:{}", shim.bin().display(), other_dir.path().display()));
    let out = run_link(&link, &["--version"], &[("PATH", &path_without_git)]);
    assert_fatal(
        "no git on PATH",
        &out,
        "no git on PATH besides this cat-blobd shim: set CAT_BLOBD_GIT to the real git",
    );
    let out = run_link(&link, &["--version"], &[("PATH", &only_shim), ("CAT_BLOBD_GIT", link.as_os_str())]);
    let message =
        format!("CAT_BLOBD_GIT is '{}', which is a cat-blobd shim, not git: running it would loop", link.display());
    assert_fatal("CAT_BLOBD_GIT is the shim", &out, &message);
    let missing = other_dir.path().join("missing");
    let out = run_link(&link, &["--version"], &[("CAT_BLOBD_GIT", missing.as_os_str())]);
    assert_fatal(
        "missing CAT_BLOBD_GIT",
        &out,
        &format!("CAT_BLOBD_GIT is '{}': No such file or directory", missing.display()),
    );
    let plain = other_dir.path().join("plain");
    std::fs::write(&plain, "#!/bin/sh\n").unwrap();
    let out = run_link(&link, &["--version"], &[("CAT_BLOBD_GIT", plain.as_os_str())]);
    assert_fatal(
        "CAT_BLOBD_GIT not executable",
        &out,
        &format!("CAT_BLOBD_GIT is '{}': not an executable file", plain.display()),
    );

    // Another build's shim further on PATH is no real git either: the two would exec each other for ever.
    let other_build = other_dir.path().join("cat-blobd-other-build");
    std::fs::copy(CAT_BLOBD, &other_build).unwrap();
    let other_shim = other_dir.path().join("bin");
    std::fs::create_dir(&other_shim).unwrap();
    std::os::unix::fs::symlink(&other_build, other_shim.join("git")).unwrap();
    let two_shims = format!("{}:{}:{}", shim.bin().display(), other_shim.display(), std::env::var("PATH").unwrap());
    let out = run_link(&link, &["--version"], &[("PATH", std::ffi::OsStr::new(&two_shims))]);
    let expected = Command::new("git").arg("--version").output().unwrap();
    assert_bytes_eq("two shims on PATH", &expected.stdout, &out.stdout);

    // A good CAT_BLOBD_GIT is used even with no git on PATH.
    let real = String::from_utf8(Command::new("sh").args(["-c", "command -v git"]).output().unwrap().stdout).unwrap();
    let real = std::ffi::OsString::from(real.trim());
    let out = run_link(&link, &["--version"], &[("PATH", &only_shim), ("CAT_BLOBD_GIT", &real)]);
    let expected = Command::new(&real).arg("--version").output().unwrap();
    assert_bytes_eq("CAT_BLOBD_GIT --version", &expected.stdout, &out.stdout);
    assert!(out.status.success());
}

/// `cat-blobd shim` into a directory it cannot make, or over a `git` that is not cat-blobd: `fatal:`, exit 128.
/// Making the same link twice is fine. Under another name than `git`, the binary is plain cat-blobd.
#[test]
fn shim_link_errors_and_plain_names() {
    let dir = TempDir::new("shim-link");
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let out = Command::new(CAT_BLOBD).arg("shim").arg(file.join("sub")).output().unwrap();
    assert_fatal(
        "a directory under a file",
        &out,
        &format!("cannot create directory '{}': Not a directory", file.join("sub").display()),
    );
    let taken = dir.path().join("taken");
    std::fs::create_dir(&taken).unwrap();
    std::fs::write(taken.join("git"), "").unwrap();
    let out = Command::new(CAT_BLOBD).arg("shim").arg(&taken).output().unwrap();
    assert_fatal(
        "an existing git",
        &out,
        &format!("'{}' already exists and is not cat-blobd: not replacing it", taken.join("git").display()),
    );
    let shim = Shim::new();
    let again = Command::new(CAT_BLOBD).arg("shim").arg(shim.bin()).output().unwrap();
    assert!(again.status.success(), "the same link again: {}", escape(&again.stderr));
    let out = Command::new(CAT_BLOBD).arg("shim").output().unwrap();
    assert_eq!(out.status.code(), Some(129), "no directory is a usage error");

    let other = shim.bin().join("git-not");
    std::os::unix::fs::symlink(CAT_BLOBD, &other).unwrap();
    let plain = Command::new(CAT_BLOBD).arg("--version").output().unwrap();
    let named = Command::new(&other).arg("--version").output().unwrap();
    assert_bytes_eq("another name is plain cat-blobd", &plain.stdout, &named.stdout);
}
