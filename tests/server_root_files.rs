//! `cat-blobd serve --root`: the files a repository's settings name are looked at beneath the root. An open
//! repository's configuration file (or one it includes) replaced by a symlink leading out is refused at the next
//! client, not looked at through the link.
use std::path::Path;

use crate::server_root::{Forge, assert_refused, git, same_as_git, stop};

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
