//! `cat-blobd serve --root DIR`: many repositories of every shape under one root through one daemon, byte for byte
//! against git run in the same directory; escapes from the root refused; the pool's eviction under small limits;
//! repositories created, repacked and deleted while clients read; the shim's routing.
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};

use crate::util::daemon::{Daemon, WAIT};
use crate::util::shim::Shim;
use crate::util::skip::{is_root, skip_unless};
use crate::util::{
    CAT_BLOBD, TempDir, assert_bytes_eq, clean_git_env, escape, feed_stdin, read_all, wait_with_timeout,
};

/// What a command gave: status, stdout, stderr.
pub(crate) struct Ran {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// `cmd` with the test environment (no GIT_* of ours, pinned identity and dates), `env` added, `stdin` fed.
pub(crate) fn run(mut cmd: Command, dir: &Path, stdin: &[u8], env: &[(&str, &Path)]) -> Ran {
    clean_git_env(&mut cmd);
    pinned(&mut cmd);
    cmd.current_dir(dir).envs(env.iter().map(|(k, v)| (*k, *v)));
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    let feeder = feed_stdin(&mut child, stdin.to_vec());
    let (out, err) = (read_all(child.stdout.take().unwrap()), read_all(child.stderr.take().unwrap()));
    let status = wait_with_timeout(&mut child, WAIT, "a client".as_ref());
    feeder.join().unwrap();
    Ran { status, stdout: out.join().unwrap(), stderr: err.join().unwrap() }
}

fn pinned(cmd: &mut Command) {
    for (key, value) in [
        ("GIT_AUTHOR_NAME", "A U Thor"),
        ("GIT_AUTHOR_EMAIL", "author@example.com"),
        ("GIT_COMMITTER_NAME", "C O Mitter"),
        ("GIT_COMMITTER_EMAIL", "committer@example.com"),
        ("GIT_AUTHOR_DATE", "1112911993 -0700"),
        ("GIT_COMMITTER_DATE", "1112911993 -0700"),
    ] {
        cmd.env(key, value);
    }
}

/// `git args` in `dir`, which must succeed; its stdout.
pub(crate) fn git(dir: &Path, args: &[&str]) -> Vec<u8> {
    let mut cmd = Command::new("git");
    cmd.args(["-c", "init.defaultBranch=main", "-c", "gc.auto=0", "-c", "maintenance.auto=false"]).args(args);
    let ran = run(cmd, dir, b"", &[]);
    assert!(ran.status.success(), "git {args:?} in {}: {}", dir.display(), escape(&ran.stderr));
    ran.stdout
}

pub(crate) fn git_cat_file(dir: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &Path)]) -> Ran {
    let mut cmd = Command::new("git");
    cmd.arg("cat-file").args(args);
    run(cmd, dir, stdin, env)
}

pub(crate) fn connect_cat_file(socket: &Path, dir: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &Path)]) -> Ran {
    let mut cmd = Command::new(CAT_BLOBD);
    cmd.arg("connect").arg("--socket").arg(socket).arg("cat-file").args(args);
    run(cmd, dir, stdin, env)
}

/// Commits `name` with `content` in the work tree `dir`.
pub(crate) fn commit(dir: &Path, name: &str, content: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", name]);
}

/// A root of repositories of every shape, and one repository outside it.
pub(crate) struct Forge {
    top: TempDir,
}

impl Forge {
    pub(crate) fn new() -> Forge {
        let top = TempDir::new("forge");
        let root = top.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        let work = root.join("plain/work");
        std::fs::create_dir_all(&work).unwrap();
        git(&work, &["init", "-q"]);
        commit(&work, "f", "one\n");
        commit(&work, "d/g", "two\n");
        commit(&work, "f", "three\n");
        // GitLab's hashed layout and Gitea's owner/name.git, both bare.
        git(&root, &["clone", "-q", "--bare", "--no-local", "plain/work", "@hashed/ab/cd/abcd.git"]);
        git(&root, &["clone", "-q", "--bare", "--no-local", "plain/work", "org/pool.git"]);
        // A fork borrowing the pool's objects through a relative alternate, with a commit of its own.
        git(&root, &["clone", "-q", "--shared", "org/pool.git", "org/fork-work"]);
        commit(&root.join("org/fork-work"), "fork", "forked\n");
        // A linked worktree of the work tree.
        git(&work, &["worktree", "add", "-q", "../linked"]);
        // Several packs under a multi-pack-index.
        git(&root, &["clone", "-q", "--bare", "--no-local", "plain/work", "packed.git"]);
        let outside = top.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        git(&outside, &["init", "-q", "secret"]);
        commit(&outside.join("secret"), "secret", "not for you\n");
        Forge { top }
    }

    pub(crate) fn root(&self) -> PathBuf {
        self.top.path().join("root")
    }

    pub(crate) fn outside(&self) -> PathBuf {
        self.top.path().join("outside")
    }

    /// `cat-blobd serve --root` on the forge's root.
    pub(crate) fn daemon(&self, extra: &[&str]) -> Daemon {
        let socket = self.top.path().join(format!("socket-{}", extra.len()));
        let mut cmd = Command::new(CAT_BLOBD);
        clean_git_env(&mut cmd);
        cmd.arg("serve").arg("--socket").arg(&socket).arg("--root").arg(self.root()).args(extra);
        let mut daemon = Daemon::from_command(cmd, &socket);
        daemon.wait_until_listening();
        daemon
    }
}

/// Every object `dir`'s repository reaches, by id, and names that git resolves through refs and trees.
fn requests(dir: &Path, env: &[(&str, &Path)]) -> Vec<u8> {
    let all = git_cat_file(dir, &["--batch-all-objects", "--batch-check=%(objectname)"], b"", env);
    assert!(all.status.success(), "{}", escape(&all.stderr));
    [all.stdout, b"HEAD\nHEAD:f\nHEAD^{tree}\nHEAD~1:d\nnope\n".to_vec()].concat()
}

#[track_caller]
pub(crate) fn same_as_git(socket: &Path, dir: &Path, env: &[(&str, &Path)]) {
    let input = requests(dir, env);
    let commands: Vec<u8> = input
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .enumerate()
        .flat_map(|(i, name)| {
            let verb: &[u8] = if i % 2 == 0 { b"contents " } else { b"info " };
            [verb, name, if i % 5 == 4 { b"\nflush\n" } else { b"\n" }].concat()
        })
        .collect();
    for (args, stdin) in [
        (&["--batch"][..], &input),
        (&["--batch-check"], &input),
        (&["--batch-command", "--buffer"], &commands),
        (&["-p", "HEAD:f"], &Vec::new()),
    ] {
        same_cat_file(socket, dir, args, stdin, env);
    }
}

/// `cat-file args` on `stdin` in `dir` with `env`, by git and through the daemon at `socket`: the same stdout,
/// stderr and exit status.
#[track_caller]
pub(crate) fn same_cat_file(socket: &Path, dir: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &Path)]) {
    let theirs = git_cat_file(dir, args, stdin, env);
    let ours = connect_cat_file(socket, dir, args, stdin, env);
    let what =
        format!("cat-file {args:?} in {} with {env:?} on {}", dir.display(), escape(&stdin[..stdin.len().min(300)]));
    assert_bytes_eq(&format!("{what}: stdout"), &theirs.stdout, &ours.stdout);
    assert_bytes_eq(&format!("{what}: stderr"), &theirs.stderr, &ours.stderr);
    assert_eq!(theirs.status.code(), ours.status.code(), "{what}");
}

#[test]
fn server_root_serves_every_shape_of_repository_like_git() {
    let forge = Forge::new();
    let root = forge.root();
    let packed = root.join("packed.git");
    git(&root.join("plain/work"), &["push", "-q", &packed.display().to_string(), "HEAD:refs/heads/main"]);
    git(&packed, &["repack", "-q"]);
    git(&packed, &["multi-pack-index", "write"]);
    let daemon = forge.daemon(&[]);
    let socket = daemon.socket.clone();
    // A work tree from a subdirectory, a linked worktree, bare repositories from inside and through a relative
    // GIT_DIR, a fork through its alternates, packs under a multi-pack-index.
    same_as_git(&socket, &root.join("plain/work/d"), &[]);
    same_as_git(&socket, &root.join("plain/linked"), &[]);
    same_as_git(&socket, &root.join("@hashed/ab/cd/abcd.git"), &[]);
    same_as_git(&socket, &root.join("@hashed/ab/cd/abcd.git/refs"), &[]);
    same_as_git(&socket, &root.join("@hashed"), &[("GIT_DIR", Path::new("ab/cd/abcd.git"))]);
    same_as_git(&socket, &root.join("org/fork-work"), &[]);
    same_as_git(&socket, &packed, &[]);
    // The same repository, many clients at once, one open copy.
    let clients: Vec<_> = (0..6)
        .map(|_| {
            let socket = socket.clone();
            let dir = root.join("plain/work");
            std::thread::spawn(move || same_as_git(&socket, &dir, &[]))
        })
        .collect();
    clients.into_iter().for_each(|client| client.join().unwrap());
    let stats = stats(&socket);
    let work = root.canonicalize().unwrap().join("plain/work/.git");
    let line = repository_line(&stats, &work);
    assert!(line.contains(" opens=1 "), "one open for every client of one repository:\n{stats}");
    // The log names each stream; nothing was refused.
    let log = stop(daemon);
    assert!(!log.contains("outcome=refused"), "{log}");
    let named = format!(" repository={}\n", work.display());
    assert_eq!(log.matches(&named).count(), 4 + 6 * 4, "each stream names its repository:\n{log}");
}

/// Stops the daemon with SIGTERM; it must exit 0. Its whole log.
/// A client in `dir` is refused: exit 128, nothing on stdout, one `fatal:` naming `named` and, when given, that it
/// is outside `root`.
#[track_caller]
pub(crate) fn assert_refused(
    socket: &Path,
    what: &str,
    dir: &Path,
    env: &[(&str, &Path)],
    named: &str,
    root: Option<&Path>,
) {
    let ran = connect_cat_file(socket, dir, &["--batch-check"], b"HEAD\n", env);
    assert_eq!(ran.status.code(), Some(128), "{what}: {}", escape(&ran.stderr));
    assert!(ran.stdout.is_empty(), "{what}: {}", escape(&ran.stdout));
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(stderr.starts_with("fatal: "), "{what}: {stderr}");
    assert!(stderr.contains(named), "{what}: {named:?} not in {stderr}");
    if let Some(root) = root {
        assert!(stderr.contains(&format!("is outside the root '{}'", root.display())), "{what}: {stderr}");
    }
}

pub(crate) fn stop(mut daemon: Daemon) -> String {
    daemon.signal(rustix::process::Signal::TERM);
    assert!(daemon.wait().success(), "{}", daemon.log());
    daemon.log()
}

/// `cat-blobd stats` on the daemon at `socket`.
fn stats(socket: &Path) -> String {
    let out = Command::new(CAT_BLOBD).arg("stats").arg("--socket").arg(socket).output().unwrap();
    assert!(out.status.success(), "{}", escape(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The `repository <git dir> …` line of `stats`.
#[track_caller]
fn repository_line<'a>(stats: &'a str, git_dir: &Path) -> &'a str {
    let prefix = format!("repository {} ", git_dir.display());
    stats.lines().find(|line| line.starts_with(&prefix)).unwrap_or_else(|| panic!("no {prefix:?} in:\n{stats}"))
}

fn stat_value(stats: &str, name: &str) -> u64 {
    let line = stats.lines().find_map(|line| line.strip_prefix(&format!("{name} ")));
    line.unwrap_or_else(|| panic!("no {name} in:\n{stats}")).parse().unwrap()
}

/// What an escape is, where the client runs, its environment, and what its message must name.
type Escape<'a> = (&'a str, PathBuf, Vec<(&'a str, &'a Path)>, String);

#[test]
fn server_root_refuses_escapes_and_what_is_no_repository() {
    let forge = Forge::new();
    let root = forge.root();
    let secret = forge.outside().join("secret");
    // A symlink to a repository outside, a `.git` file pointing outside, a repository whose alternates lie
    // outside, a relative GIT_DIR climbing out with `..`, a client working outside the root.
    std::os::unix::fs::symlink(&secret, root.join("link")).unwrap();
    std::fs::create_dir_all(root.join("gitfile")).unwrap();
    std::fs::write(root.join("gitfile/.git"), format!("gitdir: {}\n", secret.join(".git").display())).unwrap();
    git(&root, &["init", "-q", "--bare", "borrows.git"]);
    let alternates = format!("{}\n", secret.join(".git/objects").display());
    std::fs::write(root.join("borrows.git/objects/info/alternates"), alternates).unwrap();
    std::fs::create_dir_all(root.join("empty/dir")).unwrap();
    let mut daemon = forge.daemon(&[]);
    let socket = daemon.socket.clone();
    let real_root = root.canonicalize().unwrap();
    let cases: [Escape; 7] = [
        ("a symlink", root.join("link"), vec![], secret.canonicalize().unwrap().display().to_string()),
        ("a symlinked GIT_DIR", root.clone(), vec![("GIT_DIR", Path::new("link/.git"))], "link/.git".into()),
        ("a .git file", root.join("gitfile"), vec![], "outside the root".into()),
        ("alternates", root.join("borrows.git"), vec![], secret.join(".git/objects").display().to_string()),
        ("..", root.clone(), vec![("GIT_DIR", Path::new("../outside/secret/.git"))], "outside the root".into()),
        ("the working directory", secret.clone(), vec![], secret.canonicalize().unwrap().display().to_string()),
        ("no repository", root.join("empty/dir"), vec![], "not a git repository".into()),
    ];
    for (what, dir, env, named) in &cases {
        let root = (*what != "no repository").then_some(real_root.as_path());
        assert_refused(&socket, what, dir, env, named, root);
    }
    daemon.wait_for_log_count("outcome=refused", cases.len());
    // The refusals changed nothing for a repository under the root.
    same_as_git(&socket, &root.join("plain/work"), &[]);
    let _ = stop(daemon);
}

/// A client of another uid reaches only the repositories whose mode lets it read them. Needs root (to run a
/// client as another uid): skipped, and says so, otherwise.
#[test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
fn server_root_gives_other_uids_only_what_they_may_read() {
    skip_unless!(is_root(), "needs root to run a client as another uid");
    let forge = Forge::new();
    let root = forge.root();
    let nobody = 65534;
    use std::os::unix::fs::PermissionsExt;
    // Everyone may traverse down to the repositories; the hashed one is private.
    let mut dir = root.clone();
    while dir.parent().is_some() {
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode | 0o711)).unwrap();
        dir = dir.parent().unwrap().to_owned();
    }
    std::fs::set_permissions(root.join("@hashed/ab/cd/abcd.git"), std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut daemon = forge.daemon(&["--socket-mode", "0666", "--allow-uid", "65534"]);
    let socket = daemon.socket.clone();
    let as_nobody = |git_dir: &Path| {
        let mut cmd = Command::new(CAT_BLOBD);
        cmd.arg("connect").arg("--socket").arg(&socket).args(["cat-file", "--batch-check"]).uid(nobody).gid(nobody);
        run(cmd, Path::new("/"), b"HEAD\n", &[("GIT_DIR", git_dir)])
    };
    let public = as_nobody(&root.join("org/pool.git"));
    assert!(public.status.success(), "{}", escape(&public.stderr));
    let expected = git_cat_file(&root.join("org/pool.git"), &["--batch-check"], b"HEAD\n", &[]);
    assert_bytes_eq("a readable repository", &expected.stdout, &public.stdout);
    let private = as_nobody(&root.join("@hashed/ab/cd/abcd.git"));
    assert_eq!(private.status.code(), Some(128), "{}", escape(&private.stderr));
    assert!(private.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&private.stderr).contains("is not readable by uid 65534"),
        "{}",
        escape(&private.stderr)
    );
    daemon.wait_for_log("outcome=refused");
    let _ = stop(daemon);
}

/// A `--batch` client kept open: requests in, one answer out at a time.
pub(crate) struct Interactive {
    child: Child,
    stdout: BufReader<ChildStdout>,
}

impl Interactive {
    pub(crate) fn start(socket: &Path, dir: &Path) -> Interactive {
        let mut cmd = Command::new(CAT_BLOBD);
        cmd.arg("connect").arg("--socket").arg(socket).args(["cat-file", "--batch"]);
        Interactive::of(cmd, dir)
    }

    /// `git cat-file --batch` in `dir`, to ask the same as a client of the daemon.
    pub(crate) fn git(dir: &Path) -> Interactive {
        let mut cmd = Command::new("git");
        cmd.args(["cat-file", "--batch"]);
        Interactive::of(cmd, dir)
    }

    fn of(mut cmd: Command, dir: &Path) -> Interactive {
        clean_git_env(&mut cmd);
        cmd.current_dir(dir);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        let mut child = cmd.spawn().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Interactive { child, stdout }
    }

    /// Asks for `name`; the answer (header and contents).
    pub(crate) fn ask(&mut self, name: &str) -> Vec<u8> {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(format!("{name}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
        let mut header = Vec::new();
        self.stdout.read_until(b'\n', &mut header).unwrap();
        let size = std::str::from_utf8(&header).unwrap().split(' ').nth(2).map(|size| size.trim().parse::<usize>());
        if let Some(Ok(size)) = size {
            let mut body = vec![0; size + 1];
            self.stdout.read_exact(&mut body).unwrap();
            header.extend_from_slice(&body);
        }
        header
    }

    pub(crate) fn finish(mut self) {
        drop(self.child.stdin.take());
        let status = wait_with_timeout(&mut self.child, WAIT, "an interactive client".as_ref());
        assert!(status.success());
    }
}

/// What git's `--batch` answers for `name` in `dir`.
pub(crate) fn git_answer(dir: &Path, name: &str) -> Vec<u8> {
    git_cat_file(dir, &["--batch"], format!("{name}\n").as_bytes(), &[]).stdout
}

#[test]
fn server_root_closes_idle_repositories_past_its_limits_never_one_with_clients() {
    let forge = Forge::new();
    let root = forge.root();
    let daemon = forge.daemon(&["--max-open-repositories", "1", "--memory-budget", "1m"]);
    let socket = daemon.socket.clone();
    // A client holds the work tree's repository open while others come and go.
    let work = root.join("plain/work");
    let mut held = Interactive::start(&socket, &work);
    assert_bytes_eq("held", &git_answer(&work, "HEAD:f"), &held.ask("HEAD:f"));
    for dir in ["@hashed/ab/cd/abcd.git", "org/pool.git", "org/fork-work", "@hashed/ab/cd/abcd.git"] {
        same_as_git(&socket, &root.join(dir), &[]);
    }
    assert_bytes_eq("held, after the others", &git_answer(&work, "HEAD~1:d/g"), &held.ask("HEAD~1:d/g"));
    let stats = stats(&socket);
    let real = root.canonicalize().unwrap();
    assert!(repository_line(&stats, &real.join("plain/work/.git")).contains(" open=1 clients=1 "), "{stats}");
    assert!(repository_line(&stats, &real.join("plain/work/.git")).contains(" evictions=0"), "{stats}");
    // The hashed repository was closed for the pool and the fork, and opened again.
    let hashed = repository_line(&stats, &real.join("@hashed/ab/cd/abcd.git"));
    assert!(hashed.contains(" opens=2 ") && hashed.contains(" evictions=1"), "{stats}");
    assert!(stat_value(&stats, "repositories_evicted_total") >= 3, "{stats}");
    held.finish();
    // Once its client is gone, the held one goes too when another comes.
    same_as_git(&socket, &root.join("org/pool.git"), &[]);
    let stats = self::stats(&socket);
    assert!(repository_line(&stats, &real.join("plain/work/.git")).contains(" open=0 "), "{stats}");
    assert!(stat_value(&stats, "repositories_open") <= 1, "{stats}");
    let _ = stop(daemon);
}

/// Bytes of the pack indexes of the repository at `git_dir`, as the daemon counts them.
fn index_bytes(git_dir: &Path) -> u64 {
    let pack = git_dir.join("objects/pack");
    std::fs::read_dir(&pack)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "idx"))
        .map(|path| std::fs::metadata(path).unwrap().len())
        .sum()
}

/// An idle repository's maps are released (its pages leave the daemon's resident set), so its indexes do not count
/// against the budget: with room for one repository's indexes but not two, a second repository in use does not close
/// the idle first. Before, every open repository's indexes counted, and 45 idle copies of git.git filled 1 GiB.
#[test]
fn server_root_counts_only_the_indexes_of_repositories_in_use_against_the_budget() {
    let forge = Forge::new();
    let root = forge.root();
    let (first, second) = (root.join("@hashed/ab/cd/abcd.git"), root.join("org/pool.git"));
    let budget = (index_bytes(&first) + index_bytes(&second) - 1).to_string();
    let daemon = forge.daemon(&["--memory-budget", &budget]);
    let socket = daemon.socket.clone();
    for dir in [&first, &second, &first] {
        same_as_git(&socket, dir, &[]);
    }
    let stats = stats(&socket);
    let real = root.canonicalize().unwrap();
    let line = repository_line(&stats, &real.join("@hashed/ab/cd/abcd.git"));
    assert!(line.contains(" opens=1 ") && line.contains(" evictions=0"), "{stats}");
    assert_eq!(stat_value(&stats, "repositories_evicted_total"), 0, "{stats}");
    let _ = stop(daemon);
}

#[test]
fn server_root_follows_repositories_created_repacked_and_deleted_while_serving() {
    let forge = Forge::new();
    let root = forge.root();
    let mut daemon = forge.daemon(&[]);
    let socket = daemon.socket.clone();
    let work = root.join("plain/work");
    let mut reader = Interactive::start(&socket, &work);
    assert_bytes_eq("before", &git_answer(&work, "HEAD:f"), &reader.ask("HEAD:f"));
    // Created after the daemon started.
    let new = root.join("late/new");
    std::fs::create_dir_all(&new).unwrap();
    git(&new, &["init", "-q"]);
    commit(&new, "f", "late\n");
    same_as_git(&socket, &new, &[]);
    // Repacked (loose objects gone into a pack) and grown while a client reads: new objects are found, old ones
    // still read right.
    commit(&work, "f", "four\n");
    git(&work, &["repack", "-a", "-d", "-q"]);
    git(&work, &["prune-packed"]);
    for name in ["HEAD:f", "HEAD~1:f", "HEAD~3:d/g", "HEAD"] {
        assert_bytes_eq(&format!("after the repack: {name}"), &git_answer(&work, name), &reader.ask(name));
    }
    same_as_git(&socket, &work, &[]);
    // Deleted: its next client is told as git would tell it; others go on.
    same_as_git(&socket, &root.join("org/pool.git"), &[]);
    std::fs::remove_dir_all(root.join("org/pool.git")).unwrap();
    let gone = connect_cat_file(
        &socket,
        &root.join("org"),
        &["--batch-check"],
        b"HEAD\n",
        &[("GIT_DIR", Path::new("pool.git"))],
    );
    assert_eq!(gone.status.code(), Some(128), "{}", escape(&gone.stderr));
    assert!(
        String::from_utf8_lossy(&gone.stderr).starts_with("fatal: not a git repository"),
        "{}",
        escape(&gone.stderr)
    );
    // Re-created under the same name: the new one is served, not the old one's store.
    git(&root, &["clone", "-q", "--bare", "--no-local", "late/new", "org/pool.git"]);
    same_as_git(&socket, &root.join("org/pool.git"), &[]);
    assert_bytes_eq("unaffected", &git_answer(&work, "HEAD:d/g"), &reader.ask("HEAD:d/g"));
    reader.finish();
    daemon.wait_for_log("outcome=refused");
    let _ = stop(daemon);
}

#[test]
fn server_root_fast_import_streams_read_their_own_repository() {
    let forge = Forge::new();
    let root = forge.root();
    let daemon = forge.daemon(&[]);
    for dir in ["plain/work", "org/fork-work", "@hashed/ab/cd/abcd.git"] {
        let dir = root.join(dir);
        let blob = String::from_utf8(git(&dir, &["rev-parse", "HEAD:f"])).unwrap();
        let stream = format!(
            "cat-blob {}\nls {} d\n",
            blob.trim(),
            String::from_utf8(git(&dir, &["rev-parse", "HEAD^{tree}"])).unwrap().trim()
        );
        let mut direct = Command::new(CAT_BLOBD);
        direct.arg("--cat-blob-fd=1");
        let direct = run(direct, &dir, stream.as_bytes(), &[]);
        let mut connect = Command::new(CAT_BLOBD);
        connect.arg("connect").arg("--socket").arg(&daemon.socket).arg("--cat-blob-fd=1");
        let through = run(connect, &dir, stream.as_bytes(), &[]);
        assert!(direct.status.success(), "{}", escape(&direct.stderr));
        assert_bytes_eq(&format!("fast-import in {}", dir.display()), &direct.stdout, &through.stdout);
        assert_eq!(direct.status.code(), through.status.code());
    }
}

/// With `CAT_BLOBD_SOCKET` naming a `--root` daemon, the shim sends the repositories under the root there and
/// answers the others itself, never refusing.
#[test]
fn server_root_shim_routes_by_repository() {
    let forge = Forge::new();
    let root = forge.root();
    let daemon = forge.daemon(&[]);
    let shim = Shim::new();
    let through_shim = |dir: &Path| {
        let mut cmd = Command::new("git");
        cmd.args(["cat-file", "--batch"]);
        // After `run`'s own environment, whose PATH (with CAT_BLOBD_TEST_GIT) would leave the shim out.
        let path = PathBuf::from(shim.path());
        let env =
            [("PATH", path.as_path()), ("CAT_BLOBD_SHIM_LOG", &shim.log_file()), ("CAT_BLOBD_SOCKET", &daemon.socket)];
        run(cmd, dir, b"HEAD:f\nHEAD\n", &env)
    };
    for (dir, answered_by) in [(root.join("plain/work/d"), "daemon"), (forge.outside().join("secret"), "cat-blobd")] {
        let ours = through_shim(&dir);
        let theirs = git_cat_file(&dir, &["--batch"], b"HEAD:f\nHEAD\n", &[]);
        assert!(ours.status.success(), "{}: {}", dir.display(), escape(&ours.stderr));
        assert_bytes_eq(&format!("shim in {}", dir.display()), &theirs.stdout, &ours.stdout);
        assert_bytes_eq(&format!("shim in {}: stderr", dir.display()), &theirs.stderr, &ours.stderr);
        let log = shim.take_log();
        assert!(log.starts_with(answered_by), "{} answered by {answered_by:?}, log: {log}", dir.display());
    }
}

/// A flood of distinct repositories (hard-linked copies of one) through a pool of four: at most four open, the
/// daemon's fds as few at the end as after the first.
#[test]
fn server_root_a_flood_of_repositories_keeps_fds_and_open_repositories_bounded() {
    let forge = Forge::new();
    let root = forge.root();
    let source = root.join("@hashed/ab/cd/abcd.git");
    git(&source, &["repack", "-a", "-d", "-q"]);
    std::fs::create_dir_all(root.join("flood")).unwrap();
    for i in 0..80 {
        let copy = root.join(format!("flood/{i:02}.git"));
        let status = Command::new("cp").arg("-al").arg(&source).arg(&copy).status().unwrap();
        assert!(status.success());
    }
    let daemon = forge.daemon(&["--max-open-repositories", "4"]);
    let pid = daemon.child.id();
    let fds = || std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count();
    let expected = git_cat_file(&source, &["--batch"], b"HEAD:f\n", &[]).stdout;
    let mut after_first = None;
    for i in 0..80 {
        let git_dir = root.join(format!("flood/{i:02}.git"));
        let ran = connect_cat_file(&daemon.socket, &root, &["--batch"], b"HEAD:f\n", &[("GIT_DIR", &git_dir)]);
        assert_bytes_eq(&format!("copy {i}"), &expected, &ran.stdout);
        after_first.get_or_insert_with(fds);
    }
    let stats = stats(&daemon.socket);
    assert!(stat_value(&stats, "repositories_open") <= 4, "{stats}");
    assert!(stat_value(&stats, "repositories_evicted_total") >= 76, "{stats}");
    // A connection's fds (and those of the `stats` query) close just after its client has its answer: wait for
    // the daemon to close them, up to WAIT, rather than count while it is still doing so.
    let after_first = after_first.unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    while fds() > after_first && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(fds() <= after_first, "fds grew from {after_first} to {}", fds());
}

/// `serve --metrics`: Prometheus' text format, checked by Prometheus' own parser (`promtool check metrics`, from
/// Debian's `prometheus`, which `.ci/run` installs; recorded as skipped where it is missing), with the counters
/// the clients made.
#[test]
fn server_root_metrics_pass_promtool() {
    let forge = Forge::new();
    let root = forge.root();
    let mut daemon = forge.daemon(&["--metrics", "127.0.0.1:0"]);
    for dir in ["plain/work", "org/pool.git", "plain/work"] {
        let ran = connect_cat_file(&daemon.socket, &root.join(dir), &["--batch-check"], b"HEAD\nHEAD:f\n", &[]);
        assert!(ran.status.success(), "{}", escape(&ran.stderr));
    }
    daemon.wait_for_log_count("outcome=ok", 3);
    let log = daemon.log();
    let addr = log.lines().find_map(|line| line.split(" metrics address=").nth(1)).expect("the metrics address");
    let text = scrape(addr.trim(), "/metrics");
    for expected in [
        "cat_blobd_catfile_requests_total 6\n",
        "cat_blobd_catfile_cache_members 2\n",
        "cat_blobd_catfile_cache_total{type=\"miss\"} 2\n",
        "cat_blobd_catfile_cache_total{type=\"hit\"} 1\n",
        "cat_blobd_streams_total{outcome=\"ok\"} 3\n",
    ] {
        assert!(text.contains(expected), "{expected:?} not in:\n{text}");
    }
    assert!(scrape(addr.trim(), "/other").is_empty(), "only /metrics is served");
    let promtool = Command::new("promtool").arg("--version").output();
    skip_unless!(promtool.is_ok(), "no promtool (Debian's prometheus package): the exposition is not checked by it");
    let mut cmd = Command::new("promtool");
    cmd.args(["check", "metrics"]);
    let checked = run(cmd, forge.top.path(), text.as_bytes(), &[]);
    assert!(checked.status.success(), "promtool: {}{}", escape(&checked.stdout), escape(&checked.stderr));
}

/// The body of `GET path` on `addr`, empty unless the answer is 200.
fn scrape(addr: &str, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    if head.starts_with("HTTP/1.1 200 ") { body.to_owned() } else { String::new() }
}

/// A client that stops reading in the middle of a large answer holds its own stream only: clients of other
/// repositories, of its own repository, and the pool's eviction (with one repository open at most) go on.
#[test]
fn server_root_a_stalled_client_holds_up_no_one_else() {
    let forge = Forge::new();
    let root = forge.root();
    let work = root.join("plain/work");
    let big: String = (0..200_000).map(|i| format!("line {i}\n")).collect();
    commit(&work, "big", &big);
    let daemon = forge.daemon(&["--max-open-repositories", "1"]);
    let mut cmd = Command::new(CAT_BLOBD);
    clean_git_env(&mut cmd);
    cmd.arg("connect").arg("--socket").arg(&daemon.socket).args(["cat-file", "--batch"]).current_dir(&work);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut stalled = cmd.spawn().unwrap();
    // Megabytes asked for, none read: the daemon's writer blocks on the full pipe.
    stalled.stdin.as_mut().unwrap().write_all(&b"HEAD:big\n".repeat(8)).unwrap();
    let mut first = [0u8; 64];
    let mut stdout = stalled.stdout.take().unwrap();
    stdout.read_exact(&mut first).unwrap();
    for dir in ["org/pool.git", "@hashed/ab/cd/abcd.git", "plain/work/d"] {
        same_as_git(&daemon.socket, &root.join(dir), &[]);
    }
    let stats = stats(&daemon.socket);
    let real = root.canonicalize().unwrap();
    assert!(repository_line(&stats, &real.join("plain/work/.git")).contains(" open=1 clients=1 "), "{stats}");
    // Once it reads on, it gets every byte.
    drop(stalled.stdin.take());
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).unwrap();
    let expected = git_cat_file(&work, &["--batch"], &b"HEAD:big\n".repeat(8), &[]).stdout;
    assert_bytes_eq("the stalled client", &expected, &[&first[..], &rest].concat());
    assert!(wait_with_timeout(&mut stalled, WAIT, "the stalled client".as_ref()).success());
    let _ = stop(daemon);
}

/// With `--allow-writes`, a stream's writing commands go to git in the client's own repository under the root,
/// as they would with a single-repository daemon: the same ref and answers as git fast-import alone.
#[test]
fn server_root_writes_through_to_the_clients_repository() {
    let forge = Forge::new();
    let root = forge.root();
    git(&root, &["clone", "-q", "--bare", "--no-local", "plain/work", "org/theirs.git"]);
    let daemon = forge.daemon(&["--allow-writes"]);
    let stream = b"blob\nmark :1\ndata 4\nnew\ncommit refs/heads/written\nmark :2\n\
                   committer C O Mitter <c@example.com> 1600000000 +0000\ndata 2\nm\nfrom refs/heads/main\n\
                   M 100644 :1 n\n\nget-mark :2\ncat-blob :1\n";
    let mut connect = Command::new(CAT_BLOBD);
    connect.arg("connect").arg("--socket").arg(&daemon.socket).args(["--quiet", "--cat-blob-fd=1"]);
    let ours = run(connect, &root.join("org/pool.git"), stream, &[]);
    let mut direct = Command::new("git");
    direct.args(["fast-import", "--quiet", "--cat-blob-fd=1"]);
    let theirs = run(direct, &root.join("org/theirs.git"), stream, &[]);
    assert!(theirs.status.success(), "{}", escape(&theirs.stderr));
    assert_bytes_eq("answers", &theirs.stdout, &ours.stdout);
    assert_bytes_eq("stderr", &theirs.stderr, &ours.stderr);
    assert_eq!(theirs.status.code(), ours.status.code());
    let written = |dir: &str| git(&root.join(dir), &["rev-parse", "refs/heads/written"]);
    assert_bytes_eq("the ref written", &written("org/theirs.git"), &written("org/pool.git"));
    let _ = stop(daemon);
}
