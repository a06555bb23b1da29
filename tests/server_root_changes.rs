//! `cat-blobd serve --root` while its repositories change under it, each case against git run the same way: a
//! pack whose data file is gone while its index remains, a repository deleted or renamed while a client reads it,
//! a repository reconfigured; and the shim's global options (`--git-dir`, `--bare`, `--work-tree`,
//! `--no-replace-objects`) carried to the daemon.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use crate::server_root::{
    Forge, Interactive, Ran, commit, connect_cat_file, git, git_answer, git_cat_file, run, same_as_git, stop,
};
use crate::util::shim::Shim;
use crate::util::{CAT_BLOBD, assert_bytes_eq, escape};

/// Same stdout, stderr and exit status.
#[track_caller]
fn assert_same(what: &str, theirs: &Ran, ours: &Ran) {
    assert_bytes_eq(&format!("{what}: stdout"), &theirs.stdout, &ours.stdout);
    assert_bytes_eq(&format!("{what}: stderr"), &theirs.stderr, &ours.stderr);
    assert_eq!(theirs.status.code(), ours.status.code(), "{what}: {}", escape(&ours.stderr));
}

/// `cat-blobd cat-file args` run directly in `dir`.
fn direct_cat_file(dir: &Path, args: &[&str], stdin: &[u8]) -> Ran {
    let mut cmd = Command::new(CAT_BLOBD);
    cmd.arg("cat-file").args(args);
    run(cmd, dir, stdin, &[])
}

fn rev_parse(dir: &Path, name: &str) -> String {
    String::from_utf8(git(dir, &["rev-parse", name])).unwrap().trim().to_owned()
}

/// Packs `ids` (one a line) into a new pack of `dir`'s repository, whose `.pack` gets the modification time `age`
/// seconds after an epoch of the test's: git searches the newest pack first. The `.pack` file's path.
fn pack(dir: &Path, ids: &[&str], age: u64) -> PathBuf {
    let mut cmd = Command::new("git");
    cmd.args(["pack-objects", "-q", ".git/objects/pack/pack"]);
    let ran = run(cmd, dir, format!("{}\n", ids.join("\n")).as_bytes(), &[]);
    assert!(ran.status.success(), "{}", escape(&ran.stderr));
    let name = String::from_utf8(ran.stdout).unwrap();
    let path = dir.join(format!(".git/objects/pack/pack-{}.pack", name.trim()));
    let when = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + age);
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(when).unwrap();
    path
}

/// A work tree under the root whose objects are in three packs and nowhere else: the commit, its tree and the
/// blob of `o` in the oldest; the blob of `d` in the middle one and in the newest, which also has `n`'s. Its
/// directory, the newest `.pack`, and the ids of `o`, `d`, `n`.
fn three_packs(root: &Path) -> (PathBuf, PathBuf, [String; 3]) {
    let dir = root.join("packs/work");
    std::fs::create_dir_all(&dir).unwrap();
    git(&dir, &["init", "-q"]);
    for (name, content) in [("o", "old\n"), ("d", "in two packs\n"), ("n", "newest only\n")] {
        std::fs::write(dir.join(name), content).unwrap();
    }
    commit(&dir, "n", "newest only\n");
    let [o, d, n] = ["HEAD:o", "HEAD:d", "HEAD:n"].map(|name| rev_parse(&dir, name));
    let (head, tree) = (rev_parse(&dir, "HEAD"), rev_parse(&dir, "HEAD^{tree}"));
    pack(&dir, &[&head, &tree, &o], 0);
    pack(&dir, &[&d], 60);
    let newest = pack(&dir, &[&d, &n], 120);
    git(&dir, &["prune-packed"]);
    (dir, newest, [o, d, n])
}

/// A `.pack` removed while its `.idx` remains (as mid-repack): git's `is_pack_valid` fails, and an object listed
/// there is looked for in the other packs, else `missing`; never an error. Run directly, and through a daemon that
/// has the repository open with that pack's index read.
#[test]
fn server_root_a_pack_whose_data_is_gone_is_passed_over_as_git_does() {
    let forge = Forge::new();
    let (dir, newest, [o, d, n]) = three_packs(&forge.root());
    let daemon = forge.daemon(&[]);
    // Opens the repository in the daemon; looking `o` up searches the newest pack's index first.
    let opened = connect_cat_file(&daemon.socket, &dir, &["--batch-check"], format!("{o}\n").as_bytes(), &[]);
    assert!(opened.status.success(), "{}", escape(&opened.stderr));
    std::fs::remove_file(&newest).unwrap();
    let batch = format!("{n}\n{d}\n{o}\nHEAD:n\nHEAD:d\n");
    for (args, stdin) in [
        (&["--batch"][..], batch.as_bytes()),
        (&["--batch-check"], batch.as_bytes()),
        (&["-e", &n], b""),
        (&["-p", &n], b""),
        (&["-p", &d], b""),
        (&["-s", "HEAD:d"], b""),
    ] {
        let theirs = git_cat_file(&dir, args, stdin, &[]);
        assert_same(&format!("cat-blobd cat-file {args:?}"), &theirs, &direct_cat_file(&dir, args, stdin));
        let through = connect_cat_file(&daemon.socket, &dir, args, stdin, &[]);
        assert_same(&format!("connect cat-file {args:?}"), &theirs, &through);
    }
    let _ = stop(daemon);
}

/// Runs `program args` in `dir` after deleting `dir` (so its working directory is a deleted one).
fn in_deleted(dir: &Path, program: &str, args: &[&str]) -> Ran {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg("rm -rf \"$DOOMED\" && exec \"$@\"").arg("sh").arg(program).args(args);
    run(cmd, dir, b"HEAD\n", &[("DOOMED", dir)])
}

/// A repository deleted while a client reads it: that client goes on as git does (what it had opened still
/// reads, the rest is `missing`), a new client in the deleted directory is told what git tells it, and other
/// repositories' clients see nothing of it. A renamed one is served at its new path, and is no repository at the
/// old one.
#[test]
fn server_root_a_repository_deleted_or_renamed_answers_as_git_does() {
    let forge = Forge::new();
    let root = forge.root();
    let (dir, _, [o, d, n]) = three_packs(&root);
    let loose = String::from_utf8(git(&dir, &["hash-object", "-w", "--stdin"])).unwrap();
    let mut daemon = forge.daemon(&[]);
    let socket = daemon.socket.clone();
    let work = root.join("plain/work");
    let mut other = Interactive::start(&socket, &work);
    let (mut ours, mut theirs) = (Interactive::start(&socket, &dir), Interactive::git(&dir));
    assert_bytes_eq("before", &theirs.ask(&n), &ours.ask(&n));
    std::fs::remove_dir_all(root.join("packs")).unwrap();
    for name in [&n, &d, &o, loose.trim(), "HEAD", &n] {
        assert_bytes_eq(&format!("{name} once deleted"), &theirs.ask(name), &ours.ask(name));
    }
    ours.finish();
    theirs.finish();
    std::fs::create_dir_all(&dir).unwrap();
    let git_there = in_deleted(&dir, "git", &["cat-file", "--batch-check"]);
    std::fs::create_dir_all(&dir).unwrap();
    let connect = ["connect", "--socket", socket.to_str().unwrap(), "cat-file", "--batch-check"];
    assert_same("connect in a deleted directory", &git_there, &in_deleted(&dir, CAT_BLOBD, &connect));
    std::fs::create_dir_all(&dir).unwrap();
    let direct = ["cat-file", "--batch-check"];
    assert_same("cat-blobd in a deleted directory", &git_there, &in_deleted(&dir, CAT_BLOBD, &direct));
    // Renamed: the next client at the new path is served from there; the old path is no repository.
    let pool = root.join("org/pool.git");
    same_as_git(&socket, &pool, &[]);
    std::fs::rename(&pool, root.join("org/renamed.git")).unwrap();
    same_as_git(&socket, &root.join("org/renamed.git"), &[]);
    let old = [("GIT_DIR", Path::new("pool.git"))];
    let gone = connect_cat_file(&socket, &root.join("org"), &["-t", "HEAD"], b"", &old);
    assert_eq!(gone.status.code(), Some(128), "{}", escape(&gone.stderr));
    assert!(gone.stderr.starts_with(b"fatal: not a git repository"), "{}", escape(&gone.stderr));
    assert_bytes_eq("another repository's client", &git_answer(&work, "HEAD:f"), &other.ask("HEAD:f"));
    other.finish();
    daemon.wait_for_log("Unable to read current working directory");
    let _ = stop(daemon);
}

/// The shim with `CAT_BLOBD_SOCKET` at a `--root` daemon sends the global options that choose the repository
/// (`--git-dir`, `--bare`, `--work-tree`, `--no-replace-objects`) with the stream: the daemon answers, from the
/// repository git would read.
#[test]
fn server_root_shim_carries_the_options_that_choose_the_repository() {
    let forge = Forge::new();
    let root = forge.root();
    let work = root.join("plain/work");
    // A replace ref: `--no-replace-objects` changes the answer.
    let (f, g) = (rev_parse(&work, "HEAD:f"), rev_parse(&work, "HEAD:d/g"));
    git(&work, &["replace", &f, &g]);
    let daemon = forge.daemon(&[]);
    let shim = Shim::new();
    let path = PathBuf::from(shim.path());
    let env =
        [("PATH", path.as_path()), ("CAT_BLOBD_SHIM_LOG", &shim.log_file()), ("CAT_BLOBD_SOCKET", &daemon.socket)];
    let stdin = format!("{f}\nHEAD:f\nHEAD\n");
    for (dir, options) in [
        (root.clone(), vec!["--git-dir=plain/work/.git"]),
        (root.join("org"), vec!["--git-dir", "pool.git"]),
        (root.join("org/pool.git"), vec!["--bare"]),
        (root.clone(), vec!["-C", "@hashed/ab/cd/abcd.git", "--bare"]),
        (root.clone(), vec!["--no-replace-objects", "--git-dir=plain/work/.git"]),
        (root.join("plain"), vec!["--git-dir=work/.git", "--work-tree=work"]),
        (work.clone(), vec!["--no-replace-objects"]),
    ] {
        let args: Vec<&str> = options.iter().copied().chain(["cat-file", "--batch"]).collect();
        let mut through = Command::new("git");
        through.args(&args);
        let ours = run(through, &dir, stdin.as_bytes(), &env);
        let mut direct = Command::new("git");
        direct.args(&args);
        let theirs = run(direct, &dir, stdin.as_bytes(), &[]);
        let what = format!("git {args:?} in {}", dir.display());
        assert_same(&what, &theirs, &ours);
        let log = shim.take_log();
        assert!(log.starts_with("daemon cat-file"), "{what} answered by the daemon, log: {log}");
    }
    let _ = stop(daemon);
}

/// An open repository's configuration is read again only when one of its files changed, and then it is: the next
/// client sees the change as git does. The log says how long each opening took.
#[test]
fn server_root_a_reconfigured_repository_is_read_anew() {
    let forge = Forge::new();
    let root = forge.root();
    let work = root.join("plain/work");
    let (f, g) = (rev_parse(&work, "HEAD:f"), rev_parse(&work, "HEAD:d/g"));
    git(&work, &["replace", &f, &g]);
    let mut daemon = forge.daemon(&["--log-format", "json"]);
    let ask = |daemon: &crate::util::daemon::Daemon| {
        let stdin = format!("{f}\n");
        let theirs = git_cat_file(&work, &["--batch"], stdin.as_bytes(), &[]);
        let ours = connect_cat_file(&daemon.socket, &work, &["--batch"], stdin.as_bytes(), &[]);
        assert_same("after the change", &theirs, &ours);
    };
    ask(&daemon);
    ask(&daemon);
    git(&work, &["config", "core.useReplaceRefs", "false"]);
    ask(&daemon);
    daemon.wait_for_log_count("\"outcome\":\"ok\"", 3);
    let log = stop(daemon);
    let opened: Vec<&str> = log.lines().filter(|line| line.contains("\"open_ms\":")).collect();
    assert_eq!(opened.len(), 2, "opened on the first client and after the change only:\n{log}");
}

/// A single-repository daemon serves a shim's `git --git-dir=<dir>` only when `<dir>` is its repository: another
/// one is answered by the shim itself, never from the daemon's repository.
#[test]
fn server_shim_git_dir_of_another_repository_is_not_read_from_the_daemons() {
    let forge = Forge::new();
    let root = forge.root();
    let daemon = crate::util::daemon::Daemon::start(&root.join("org/pool.git"), &[]);
    let shim = Shim::new();
    let path = PathBuf::from(shim.path());
    let env =
        [("PATH", path.as_path()), ("CAT_BLOBD_SHIM_LOG", &shim.log_file()), ("CAT_BLOBD_SOCKET", &daemon.socket)];
    for (git_dir, answered_by) in [("org/pool.git", "daemon"), ("org/fork-work/.git", "cat-blobd")] {
        let args = [&format!("--git-dir={git_dir}")[..], "cat-file", "--batch"];
        let mut through = Command::new("git");
        through.args(args);
        let ours = run(through, &root, b"HEAD:fork\nHEAD:f\n", &env);
        let mut direct = Command::new("git");
        direct.args(args);
        let theirs = run(direct, &root, b"HEAD:fork\nHEAD:f\n", &[]);
        assert_same(&format!("git {args:?}"), &theirs, &ours);
        let log = shim.take_log();
        assert!(log.starts_with(answered_by), "{git_dir} answered by {answered_by}, log: {log}");
    }
}
