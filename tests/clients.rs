//! Real `git cat-file` clients, run once with plain git and once through the shim (`cat-blobd shim`: a `git` link
//! first on `PATH` that answers `cat-file` and `fast-import` and runs the real git for everything else):
//! GitPython's persistent `--batch`/`--batch-check` processes, `git filter-repo --file-info-callback`
//! (`--batch-command`, and `fast-import` written through to git), and perl's Git.pm `cat_blob` (`--batch`). Each
//! must give the same results both ways, and cat-blobd must have answered.
//!
//! The clients are installed by scripts/install-clients.sh into target/clients (`.ci/run` runs it first; a test
//! runs it too when it never ran). Only when that install failed do the tests skip, loudly.
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::util::shim::Shim;
use crate::util::{TempDir, assert_bytes_eq, clean_git_env, escape};

const INSTALL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/install-clients.sh");
const CLIENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/clients");

/// The clients' folder, or why they are not there.
fn clients() -> Result<&'static Path, String> {
    static STATUS: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    STATUS
        .get_or_init(|| {
            let dir = PathBuf::from(CLIENTS);
            if std::fs::read_to_string(dir.join("STATUS")).map(|s| s.trim() != "ok").unwrap_or(true) {
                let _ = Command::new("bash").arg(INSTALL).arg(&dir).stdin(Stdio::null()).status();
            }
            match std::fs::read_to_string(dir.join("STATUS")) {
                Ok(status) if status.trim() == "ok" => Ok(dir),
                Ok(status) => Err(status.trim().to_owned()),
                Err(err) => Err(format!("{INSTALL} wrote no STATUS: {err}")),
            }
        })
        .as_ref()
        .map(PathBuf::as_path)
        .map_err(Clone::clone)
}

/// Skips the test loudly when the clients could not be installed.
macro_rules! clients_or_skip {
    () => {
        match clients() {
            Ok(dir) => dir,
            Err(why) => {
                return crate::util::skip::record(&format!("the cat-file clients are not installed ({why})"));
            }
        }
    };
}

fn names_repo() -> PathBuf {
    crate::util::cat_file::repo("names.git")
}

/// Runs `program args` with plain git, or `through` the shim; returns stdout, failing on error.
fn run(program: &Path, args: &[&str], through: Option<&Shim>, cwd: &Path) -> Vec<u8> {
    let mut cmd = Command::new(program);
    clean_git_env(&mut cmd);
    if let Some(shim) = through {
        cmd.env("PATH", shim.path()).env("CAT_BLOBD_SHIM_LOG", shim.log_file());
    }
    let out = cmd.args(args).current_dir(cwd).stdin(Stdio::null()).output().expect("run client");
    assert!(out.status.success(), "{} {args:?} failed: {}", program.display(), escape(&out.stderr));
    out.stdout
}

/// Runs the same client both ways and compares what it printed; the run through the shim must have had cat-blobd
/// answer `expect_call` (`cat-blobd <command> <args>`).
fn same_both_ways(program: &Path, args: &[&str], cwd: &Path, expect_call: &str) {
    let plain = run(program, args, None, cwd);
    let shim = Shim::new();
    let shimmed = run(program, args, Some(&shim), cwd);
    assert!(!plain.is_empty(), "{} printed nothing", program.display());
    assert_bytes_eq(&format!("{} {args:?}", program.display()), &plain, &shimmed);
    assert!(shim.calls().contains(expect_call), "cat-blobd was not used: calls {:?}", shim.calls());
}

const GITPYTHON: &str = r#"
import hashlib, sys
import git
repo = git.Repo(sys.argv[1])
odb = repo.odb
seen = set()
for commit in repo.iter_commits("--all"):
    for item in [commit, commit.tree] + list(commit.tree.traverse()):
        sha = item.binsha
        # A gitlink names a commit of another repository.
        if sha in seen or item.type == "submodule":
            continue
        seen.add(sha)
        info = odb.info(sha)
        data = odb.stream(sha).read()
        print(item.hexsha, info.type.decode(), info.size, len(data), hashlib.sha1(data).hexdigest())
    print(commit.hexsha, commit.author.name, commit.message.strip())
"#;

#[test]
fn gitpython_reads_every_object_through_its_persistent_processes() {
    let clients = clients_or_skip!();
    let scratch = TempDir::new("gitpython");
    let script = scratch.path().join("read.py");
    std::fs::write(&script, GITPYTHON).expect("write script");
    let python = clients.join("venv/bin/python");
    let repo = names_repo();
    same_both_ways(
        &python,
        &[script.to_str().expect("utf-8"), repo.to_str().expect("utf-8")],
        &repo,
        "cat-blobd cat-file --batch\n",
    );
}

const GIT_PM: &str = r#"
use Git;
my $repo = Git->repository(Directory => $ARGV[0]);
my @blobs = $repo->command(qw(rev-list --objects --all));
for my $line (@blobs) {
    my ($sha) = split / /, $line;
    my $type = $repo->command_oneline('cat-file', '-t', $sha);
    next unless $type eq 'blob';
    my $content = '';
    open my $fh, '>', \$content or die;
    my $size = $repo->cat_blob($sha, $fh);
    close $fh;
    print "$sha $size ", length($content), "\n", $content, "\n";
}
"#;

#[test]
fn perl_git_pm_cat_blob() {
    let _ = clients_or_skip!();
    let scratch = TempDir::new("gitpm");
    let script = scratch.path().join("cat_blob.pl");
    std::fs::write(&script, GIT_PM).expect("write script");
    let repo = names_repo();
    same_both_ways(
        Path::new("perl"),
        &[script.to_str().expect("utf-8"), repo.to_str().expect("utf-8")],
        &repo,
        "cat-blobd cat-file --batch\n",
    );
}

/// `git filter-repo --file-info-callback` reads every file's contents through `cat-file --batch-command` and
/// rewrites them through `git fast-import`; through the shim, cat-blobd answers both, and hands fast-import's
/// writes to the real git (write-through). The rewritten history must be the same commit for commit.
#[test]
fn filter_repo_rewrites_to_the_same_history() {
    let clients = clients_or_skip!();
    let filter_repo = clients.join("venv/bin/git-filter-repo");
    let callback = "contents = value.get_contents_by_identifier(blob_id)\n\
                    if filename.endswith(b'.txt'):\n    blob_id = value.insert_file_with_contents(contents.upper())\n\
                    return (filename, mode, blob_id)";
    let mut results = Vec::new();
    for through_shim in [false, true] {
        let scratch = TempDir::new("filter-repo");
        let clone = scratch.path().join("clone");
        let mut cmd = Command::new("git");
        clean_git_env(&mut cmd);
        let status = cmd.args(["clone", "-q", "--no-local"]).arg(names_repo()).arg(&clone).status().expect("clone");
        assert!(status.success());
        let shim = Shim::new();
        let through = through_shim.then_some(&shim);
        run(&filter_repo, &["--force", "--quiet", "--file-info-callback", callback], through, &clone);
        let log = run(Path::new("git"), &["log", "--all", "--format=%H %T %s"], through, &clone);
        if through_shim {
            let calls = shim.calls();
            let answered = |line: &str| calls.lines().any(|call| call.starts_with(line));
            assert!(answered("cat-blobd cat-file --batch-command"), "cat-blobd did not answer cat-file: {calls:?}");
            assert!(answered("cat-blobd fast-import "), "cat-blobd did not run fast-import: {calls:?}");
            assert!(answered("git fast-import "), "no write-through git fast-import: {calls:?}");
        }
        results.push(log);
    }
    assert_bytes_eq("filter-repo history", &results[0], &results[1]);
}
