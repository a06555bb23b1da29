//! `cat-blobd serve --root`: a linked worktree's `commondir`, and a repository's configuration files and their
//! includes, are read beneath the root like every other path that finds a repository. One whose `commondir` names a directory outside the root, is a symlink leading out, or
//! names a path through a symlink leading out is refused (`fatal: ... is outside the root ...`, exit 128, and the
//! daemon logs it) before anything outside is opened, as is a repository whose `objects` leads out; the linked
//! worktrees inside the root are served as git serves them. So is a repository whose `config` is a symlink leading
//! out, or includes a file outside (by an absolute path, a relative one, or through an include inside the root);
//! includes inside the root are served as git serves them.
use std::path::{Path, PathBuf};

use crate::server_root::{Forge, assert_refused, git, same_as_git, stop};

/// A new linked worktree `name` of the forge's work tree: its work tree and its git directory.
fn worktree(root: &Path, name: &str) -> (PathBuf, PathBuf) {
    git(&root.join("plain/work"), &["worktree", "add", "-q", &format!("../{name}")]);
    (root.join("plain").join(name), root.join("plain/work/.git/worktrees").join(name))
}

#[test]
fn server_root_refuses_a_linked_worktree_whose_commondir_leads_outside() {
    let forge = Forge::new();
    let root = forge.root();
    let secret_git = forge.outside().join("secret/.git");
    // `commondir` naming the repository outside.
    let (named_work, named_git) = worktree(&root, "named");
    std::fs::write(named_git.join("commondir"), format!("{}\n", secret_git.display())).unwrap();
    // `commondir` a symlink to a file outside that names the work tree's own common directory: the link alone
    // leads out.
    let (symlinked_work, symlinked_git) = worktree(&root, "symlinked");
    let outside_commondir = forge.outside().join("commondir");
    std::fs::write(&outside_commondir, format!("{}\n", root.join("plain/work/.git").display())).unwrap();
    std::fs::remove_file(symlinked_git.join("commondir")).unwrap();
    std::os::unix::fs::symlink(&outside_commondir, symlinked_git.join("commondir")).unwrap();
    // `commondir` naming a path under the root through a symlink that leads out.
    let (through_work, through_git) = worktree(&root, "through");
    std::os::unix::fs::symlink(&secret_git, root.join("secret-link")).unwrap();
    std::fs::write(through_git.join("commondir"), "../../../../../secret-link\n").unwrap();
    // Not a worktree: a bare repository whose `objects` is a symlink leading out, checked the same way.
    git(&root, &["init", "-q", "--bare", "objects-out.git"]);
    std::fs::remove_dir_all(root.join("objects-out.git/objects")).unwrap();
    std::os::unix::fs::symlink(secret_git.join("objects"), root.join("objects-out.git/objects")).unwrap();
    let mut daemon = forge.daemon(&[]);
    let socket = daemon.socket.clone();
    let real_root = root.canonicalize().unwrap();
    let real = |path: &Path| path.canonicalize().unwrap().display().to_string();
    let cases = [
        ("a commondir naming a directory outside", named_work.clone(), vec![], real(&secret_git)),
        ("the same, by GIT_DIR", root.clone(), vec![("GIT_DIR", named_git.as_path())], real(&secret_git)),
        ("a symlinked commondir", symlinked_work, vec![], "commondir".into()),
        ("a commondir through a symlink", through_work, vec![], "secret-link".into()),
        ("an objects symlink", root.join("objects-out.git"), vec![], "objects-out.git/objects".into()),
    ];
    for (what, dir, env, named) in &cases {
        assert_refused(&socket, what, dir, env, named, Some(&real_root));
    }
    daemon.wait_for_log_count("outcome=refused", cases.len());
    // The linked worktrees inside the root are answered as git answers them, before and after the refusals.
    same_as_git(&socket, &root.join("plain/linked"), &[]);
    let log = stop(daemon);
    assert_eq!(log.matches("is outside the root").count(), cases.len(), "{log}");
}

#[test]
fn server_root_refuses_a_repository_whose_config_leads_outside() {
    let forge = Forge::new();
    let root = forge.root();
    let outside_include = forge.outside().join("include");
    std::fs::write(&outside_include, "[core]\n\tbigFileThreshold = 1k\n").unwrap();
    let bare = |name: &str| {
        git(&root, &["clone", "-q", "--bare", "--no-local", "plain/work", name]);
        root.join(name)
    };
    let include = |repo: &Path, path: &str| {
        git(repo, &["config", "--add", "include.path", path]);
    };
    let symlinked = bare("config-link.git");
    std::fs::remove_file(symlinked.join("config")).unwrap();
    std::os::unix::fs::symlink(forge.outside().join("secret/.git/config"), symlinked.join("config")).unwrap();
    let absolute = bare("include-absolute.git");
    include(&absolute, outside_include.to_str().unwrap());
    let relative = bare("include-relative.git");
    include(&relative, "../../outside/include");
    // An include inside the root that includes the file outside.
    let nested = bare("include-nested.git");
    std::fs::write(root.join("nested.inc"), format!("[include]\n\tpath = {}\n", outside_include.display())).unwrap();
    include(&nested, "../nested.inc");
    // An include inside the root: served as git serves it.
    let inside = bare("include-inside.git");
    std::fs::write(root.join("inside.inc"), "[core]\n\tbigFileThreshold = 1k\n").unwrap();
    include(&inside, "../inside.inc");
    let mut daemon = forge.daemon(&[]);
    let socket = daemon.socket.clone();
    let real_root = root.canonicalize().unwrap();
    let cases = [
        ("a symlinked config", symlinked, "config-link.git/config".to_owned()),
        ("an absolute include", absolute, outside_include.display().to_string()),
        ("a relative include", relative, "../../outside/include".into()),
        ("a nested include", nested, outside_include.display().to_string()),
    ];
    for (what, dir, named) in &cases {
        assert_refused(&socket, what, dir, &[], named, Some(&real_root));
    }
    daemon.wait_for_log_count("outcome=refused", cases.len());
    same_as_git(&socket, &inside, &[]);
    let log = stop(daemon);
    assert_eq!(log.matches("is outside the root").count(), cases.len(), "{log}");
}
