//! `cat-blobd serve --root`: a repository's references (`HEAD`, loose refs, `packed-refs`, reflogs, replace
//! refs) and its index are read beneath the root. Each of them replaced by a symlink to a file outside the root
//! that holds a valid id (one that would change the answer) is refused (`fatal: '<path>' is outside the root
//! '<root>'`, exit 128, and the daemon logs it), and nothing is answered from it; the same files linked to files
//! inside the root are read as git reads them.
use std::path::{Path, PathBuf};

use crate::server_root::{Forge, connect_cat_file, git, same_cat_file, stop};
use crate::util::escape;

/// The id `name` names in `dir`.
fn rev(dir: &Path, name: &str) -> String {
    String::from_utf8(git(dir, &["rev-parse", name])).unwrap().trim().to_owned()
}

/// `path` (made anew) a symlink to `target`, which holds `content`: a relative link when both are under `root`
/// (the kernel's walk beneath the root refuses every absolute link, wherever it leads), else an absolute one.
fn link(root: &Path, path: &Path, target: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::write(target, content).unwrap();
    _ = std::fs::remove_file(path);
    let named = match (path.parent().unwrap().strip_prefix(root), target.strip_prefix(root)) {
        (Ok(from), Ok(to)) => from.components().map(|_| Path::new("..")).collect::<PathBuf>().join(to),
        _ => target.to_owned(),
    };
    std::os::unix::fs::symlink(named, path).unwrap();
}

/// The repositories of the tests, each with one file linked to a file under `elsewhere` (outside the root, or
/// inside it), and the names that read that file.
struct Linked {
    repos: Vec<(&'static str, PathBuf, Vec<&'static str>)>,
}

/// Under the forge's root, one repository per file that can lead elsewhere, that file a symlink into `elsewhere`.
/// Each file holds `old` (the first commit) where the repository's own says the newest: an answer read from it
/// differs from one read without it.
fn linked_repositories(root: &Path, elsewhere: &Path) -> Linked {
    let bare = |name: &str| {
        git(root, &["clone", "-q", "--bare", "--no-local", "plain/work", name]);
        root.join(name)
    };
    let work = root.join("plain/work");
    let (old, head) = (rev(&work, "HEAD~2"), rev(&work, "HEAD"));
    let mut repos = Vec::new();

    let link = |path: &Path, target: &Path, content: &str| link(root, path, target, content);
    // git takes a symlinked HEAD only as an old-style symbolic ref (a link to `refs/…`), and no repository has
    // one that leads out; one inside is left to the discovery's tests.
    if !elsewhere.starts_with(root) {
        let repo = bare("head.git");
        link(&repo.join("HEAD"), &elsewhere.join("HEAD"), &format!("{old}\n"));
        repos.push(("HEAD", repo, vec!["HEAD", "HEAD~1"]));
    }

    let repo = bare("loose.git");
    link(&repo.join("refs/heads/main"), &elsewhere.join("main"), &format!("{old}\n"));
    // `:/<text>` lists every reference: here asked only to see one refused. Inside the root its answer is
    // 2.55's, not 2.47's (the installed git this compares with): the linked `main` names an older commit than
    // the packed `linked`, all of one date, and 2.55 breaks the tie by its date queue's order where 2.47 took
    // the references' order (`commit_message_searches` pins that difference).
    let search: &[&str] = if elsewhere.starts_with(root) { &[] } else { &[":/f"] };
    repos.push(("a loose ref", repo, [&["main", "HEAD", "refs/heads/main:f"][..], search].concat()));

    let repo = bare("packed-refs.git");
    git(&repo, &["pack-refs", "--all"]);
    let packed = format!("# pack-refs with: peeled fully-peeled sorted \n{old} refs/heads/main\n");
    link(&repo.join("packed-refs"), &elsewhere.join("packed-refs"), &packed);
    repos.push(("packed-refs", repo, vec!["main", "HEAD"]));

    let repo = bare("reflog.git");
    let zero = "0".repeat(old.len());
    let who = "C O Mitter <committer@example.com>";
    let log = format!("{zero} {old} {who} 1112911993 -0700\tclone\n{old} {head} {who} 1112912000 -0700\tupdate\n");
    link(&repo.join("logs/refs/heads/main"), &elsewhere.join("reflog"), &log);
    // git's `<name>@{…}` takes a log only where `lstat` finds a file (a symlink is none: `missing`, nothing read);
    // `@{…}` of HEAD's branch reads it through the link.
    let names = if elsewhere.starts_with(root) { vec!["main@{1}", "@{1}", "main@{0}", "@{0}"] } else { vec!["@{1}"] };
    repos.push(("a reflog", repo, names));

    let repo = bare("replace.git");
    link(&repo.join("refs/replace").join(&head), &elsewhere.join("replace"), &format!("{old}\n"));
    repos.push(("a replace ref", repo, vec!["HEAD"]));

    // An index whose `f` is a blob of the repository that the work tree's own index does not hold.
    git(root, &["clone", "-q", "--no-local", "plain/work", "index-work"]);
    let repo = root.join("index-work");
    std::fs::write(repo.join("f"), "staged elsewhere\n").unwrap();
    git(&repo, &["add", "f"]);
    let index = std::fs::read(repo.join(".git/index")).unwrap();
    git(&repo, &["reset", "-q"]);
    std::fs::create_dir_all(elsewhere).unwrap();
    std::fs::write(elsewhere.join("index"), &index).unwrap();
    let outside = !elsewhere.starts_with(root);
    let named = if outside { elsewhere.join("index") } else { PathBuf::from("../../shared/index") };
    std::fs::remove_file(repo.join(".git/index")).unwrap();
    std::os::unix::fs::symlink(named, repo.join(".git/index")).unwrap();
    repos.push(("the index", repo, vec![":f", ":0:f"]));
    Linked { repos }
}

#[test]
fn server_root_refuses_refs_and_an_index_that_lead_outside_the_root() {
    let forge = Forge::new();
    let root = forge.root();
    let outside = forge.outside().join("linked");
    let linked = linked_repositories(&root, &outside);
    let real_root = root.canonicalize().unwrap();
    let mut daemon = forge.daemon(&[]);
    let socket = daemon.socket.clone();
    let mut refused = 0;
    for (what, repo, names) in &linked.repos {
        for name in names {
            for args in [&["--batch"][..], &["--batch-check"]] {
                let ran = connect_cat_file(&socket, repo, args, format!("{name}\n").as_bytes(), &[]);
                let stderr = String::from_utf8_lossy(&ran.stderr);
                let asked = format!("{what}: {name} with {args:?}");
                assert_eq!(ran.status.code(), Some(128), "{asked}: {stderr} {}", escape(&ran.stdout));
                assert!(ran.stdout.is_empty(), "{asked}: answered from outside: {}", escape(&ran.stdout));
                assert!(stderr.starts_with("fatal: '"), "{asked}: {stderr}");
                let outside_root = format!("' is outside the root '{}'\n", real_root.display());
                assert!(stderr.ends_with(&outside_root), "{asked}: {stderr}");
                refused += 1;
            }
        }
        let ran = connect_cat_file(&socket, repo, &["-p", names[0]], b"", &[]);
        assert_eq!(ran.status.code(), Some(128), "{what}: -p {}: {}", names[0], escape(&ran.stderr));
        assert!(ran.stdout.is_empty(), "{what}: -p {}: {}", names[0], escape(&ran.stdout));
        refused += 1;
    }
    daemon.wait_for_log_count("is outside the root", refused);
    let log = stop(daemon);
    assert_eq!(log.matches("is outside the root").count(), refused, "{log}");
}

#[test]
fn server_root_reads_refs_and_an_index_linked_inside_the_root_as_git_does() {
    let forge = Forge::new();
    let root = forge.root();
    let linked = linked_repositories(&root, &root.join("shared"));
    let daemon = forge.daemon(&[]);
    let socket = daemon.socket.clone();
    for (_, repo, names) in &linked.repos {
        let input: Vec<u8> = names.iter().flat_map(|name| [name.as_bytes(), b"\n"].concat()).collect();
        for args in [&["--batch"][..], &["--batch-check"]] {
            // The repository's path names what was linked.
            same_cat_file(&socket, repo, args, &input, &[]);
        }
    }
    let log = stop(daemon);
    assert!(!log.contains("outcome=refused"), "{log}");
}

/// The seeded names of the one-shot tests (`generated_names`: refs, tags, short and ambiguous ids, `@`, suffixes
/// and path forms, odd bytes) asked of a `--root` daemon, whose references are read beneath the root by code of
/// its own (`refs::Beneath`), compared with git byte for byte, stderr and exit status included.
#[test]
fn server_root_answers_generated_names_as_git() {
    let forge = Forge::new();
    let repo = forge.root().join("names.git");
    let names_git = crate::util::cat_file::repo("names.git");
    let cp = std::process::Command::new("cp").arg("-a").arg(names_git).arg(&repo).status();
    assert!(cp.expect("cp").success());
    let daemon = forge.daemon(&[]);
    let seed = std::env::var("CAT_BLOBD_NAME_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(29);
    let names = crate::util::cat_file::generated_names(seed, false);
    for chunk in names.chunks(50) {
        let input: Vec<u8> = chunk.iter().flat_map(|name| [name.as_bytes(), b"\n"].concat()).collect();
        for args in [&["--batch-check"][..], &["--batch-check=%(objectname) %(rest)"], &["--batch"]] {
            same_cat_file(&daemon.socket, &repo, args, &input, &[]);
        }
    }
    // Each name alone on the command line: one that does not resolve dies with git's explanation, which for a
    // path looks on disk from where git works (here the bare repository itself: `HEAD:.`, `HEAD:config`).
    for name in names.iter().take(100).map(String::as_str).chain(["HEAD:config", "HEAD:objects", ":refs"]) {
        same_cat_file(&daemon.socket, &repo, &["-t", name], b"", &[]);
    }
    let log = stop(daemon);
    assert!(!log.contains("outcome=refused"), "{log}");
}
