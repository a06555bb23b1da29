//! `cat-blobd serve --root`: the files a repository's settings name are looked at and read beneath the root,
//! from where git would read them for each client. An open repository's configuration file (or one it includes)
//! replaced by a symlink leading out is refused at the next client, not looked at through the link; the work
//! tree's `.mailmap` is read at the top of the client's work tree (not in the daemon's directory or the client's
//! subdirectory), as git reads it; a `mailmap.file` outside the root is refused, never read.
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::server_root::{
    Forge, assert_refused, connect_cat_file, git, git_cat_file, run, same_as_git, same_cat_file, stop,
};
use crate::util::shim::Shim;
use crate::util::{assert_bytes_eq, escape};

/// `path` replaced by a symlink to a hard link of it outside the root, `outside`: by path, the same file (same
/// device, inode, size and modification time) as the one the daemon opened.
fn link_out(path: &Path, outside: &Path) {
    std::fs::hard_link(path, outside).unwrap();
    std::fs::remove_file(path).unwrap();
    std::os::unix::fs::symlink(outside, path).unwrap();
}

#[test]
fn server_root_refuses_an_open_repositorys_config_replaced_by_a_link_leading_outside() {
    let forge = Forge::new();
    let root = forge.root();
    let bare = |name: &str| {
        git(&root, &["clone", "-q", "--bare", "--no-local", "plain/work", name]);
        root.join(name)
    };
    let config = bare("config.git");
    let including = bare("including.git");
    std::fs::write(root.join("inside.inc"), "[core]\n\tbigFileThreshold = 1k\n").unwrap();
    git(&including, &["config", "--add", "include.path", "../inside.inc"]);
    let mut daemon = forge.daemon(&[]);
    let socket = daemon.socket.clone();
    // Both open, their configuration files stamped.
    same_as_git(&socket, &config, &[]);
    same_as_git(&socket, &including, &[]);
    link_out(&config.join("config"), &forge.outside().join("config"));
    link_out(&root.join("inside.inc"), &forge.outside().join("inside.inc"));
    let real_root = root.canonicalize().unwrap();
    assert_refused(&socket, "a config linked out", &config, &[], "config.git/config", Some(&real_root));
    assert_refused(&socket, "an include linked out", &including, &[], "inside.inc", Some(&real_root));
    daemon.wait_for_log_count("outcome=refused", 2);
    let log = stop(daemon);
    assert_eq!(log.matches("is outside the root").count(), 2, "{log}");
}

/// `cat-file --use-mailmap` of every commit, through the daemon and by git, in `dir`: the same bytes.
#[track_caller]
fn same_mailmap_as_git(socket: &Path, dir: &Path) {
    let input = git(dir, &["rev-list", "--all"]);
    for args in [&["--use-mailmap", "--batch"][..], &["--use-mailmap", "-p", "HEAD"]] {
        same_cat_file(socket, dir, args, &input, &[]);
    }
}

#[test]
fn server_root_reads_the_work_trees_mailmap_where_git_does() {
    let forge = Forge::new();
    let root = forge.root();
    let work = root.join("plain/work");
    std::fs::write(work.join(".mailmap"), "Mapped Name <mapped@example.com> <author@example.com>\n").unwrap();
    // A linked worktree whose `.mailmap` is a symlink: git does not follow it (and says so).
    std::os::unix::fs::symlink("../work/.mailmap", root.join("plain/linked/.mailmap")).unwrap();
    let daemon = forge.daemon(&[]);
    let socket = daemon.socket.clone();
    // From a subdirectory of the work tree git reads the top's `.mailmap`; then from the top and the worktree,
    // with the repository open already.
    same_mailmap_as_git(&socket, &work.join("d"));
    same_mailmap_as_git(&socket, &work);
    same_mailmap_as_git(&socket, &root.join("plain/linked"));
    let mapped = connect_cat_file(&socket, &work.join("d"), &["--use-mailmap", "-p", "HEAD"], b"", &[]);
    assert!(mapped.stdout.windows(11).any(|w| w == b"Mapped Name"), "{}", escape(&mapped.stdout));
    // Through the shim, answered by the daemon.
    let shim = Shim::new();
    let mut cmd = Command::new("git");
    cmd.args(["cat-file", "--use-mailmap", "-p", "HEAD"]);
    let path = PathBuf::from(shim.path());
    let env = [("PATH", path.as_path()), ("CAT_BLOBD_SHIM_LOG", &shim.log_file()), ("CAT_BLOBD_SOCKET", &socket)];
    let ours = run(cmd, &work.join("d"), b"", &env);
    let theirs = git_cat_file(&work.join("d"), &["--use-mailmap", "-p", "HEAD"], b"", &[]);
    assert_bytes_eq("shim: stdout", &theirs.stdout, &ours.stdout);
    assert!(ours.stderr.is_empty() && ours.status.success(), "{}", escape(&ours.stderr));
    let log = shim.take_log();
    assert!(log.starts_with("daemon"), "answered by the daemon, log: {log}");
    let log = stop(daemon);
    assert!(!log.contains("outcome=refused"), "{log}");
}

#[test]
fn server_root_refuses_a_mailmap_file_outside_the_root() {
    let forge = Forge::new();
    let root = forge.root();
    let outside_map = forge.outside().join("mailmap");
    std::fs::write(&outside_map, "Secret <secret@example.com> <author@example.com>\n").unwrap();
    let repo = root.join("mapped.git");
    git(&root, &["clone", "-q", "--bare", "--no-local", "plain/work", "mapped.git"]);
    git(&repo, &["config", "mailmap.file", outside_map.to_str().unwrap()]);
    let mut daemon = forge.daemon(&[]);
    let socket = daemon.socket.clone();
    for args in [&["--use-mailmap", "--batch-check"][..], &["--use-mailmap", "-p", "HEAD"]] {
        let ran = connect_cat_file(&socket, &repo, args, b"HEAD\n", &[]);
        let stderr = String::from_utf8_lossy(&ran.stderr);
        assert_eq!(ran.status.code(), Some(128), "{args:?}: {stderr}");
        assert!(ran.stdout.is_empty(), "{args:?}: {}", escape(&ran.stdout));
        let real_root = root.canonicalize().unwrap();
        let refusal = format!("fatal: '{}' is outside the root '{}'\n", outside_map.display(), real_root.display());
        assert_eq!(stderr, refusal, "{args:?}");
    }
    // Without the mailmap, the repository is served as git serves it.
    same_as_git(&socket, &repo, &[]);
    daemon.wait_for_log_count("is outside the root", 2);
    stop(daemon);
}

/// `-p`/`-t` of a path that is not in the tree or the index but is on disk: git says `exists on disk, but not
/// in …` after an `lstat` from where it runs (the top of the work tree, or the client's directory in a bare
/// repository). Through a `--root` daemon that `lstat` is done beneath the root. Before, the daemon never looked
/// and said `does not exist in …`.
#[test]
fn server_root_explains_a_path_on_disk_as_git_does() {
    let forge = Forge::new();
    let root = forge.root();
    let work = root.join("plain/work");
    std::fs::write(work.join("untracked"), "not committed\n").unwrap();
    std::fs::write(work.join("d/untracked"), "not committed\n").unwrap();
    std::os::unix::fs::symlink("../../outside", work.join("link-out")).unwrap();
    let daemon = forge.daemon(&[]);
    for dir in [work.clone(), work.join("d")] {
        for name in ["HEAD:untracked", "HEAD:d/untracked", ":untracked", ":d/untracked", "HEAD:link-out", "HEAD:nope"] {
            for args in [&["-p", name][..], &["-t", name]] {
                same_cat_file(&daemon.socket, &dir, args, b"", &[]);
            }
        }
    }
    let log = stop(daemon);
    assert!(!log.contains("outcome=refused"), "{log}");
}
