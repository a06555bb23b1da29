//! Real `git cat-file` clients, run once with plain git and once through a wrapper `git` that sends `cat-file` to
//! `cat-blobd cat-file` (and everything else to git): GitPython's persistent `--batch`/`--batch-check` processes,
//! `git filter-repo --file-info-callback` (`--batch-command`), and perl's Git.pm `cat_blob` (`--batch`). Each must
//! give the same results both ways, and the wrapper must have been used.
//!
//! The clients are installed by scripts/install-clients.sh into target/clients (`.ci/run` runs it first; a test
//! runs it too when it never ran). Only when that install failed do the tests skip, loudly.
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::util::{CAT_BLOBD, TempDir, assert_bytes_eq, build_with_script, clean_git_env, escape};

const INSTALL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/install-clients.sh");
const CLIENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/clients");
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/make-cat-file-fixtures.sh");

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
                eprintln!("SKIPPED {}: the cat-file clients are not installed ({why})", module_path!());
                println!("SKIPPED {}: the cat-file clients are not installed ({why})", module_path!());
                return;
            }
        }
    };
}

/// A directory with a `git` that sends `cat-file` to cat-blobd (logging each call) and the rest to git.
struct Wrapper {
    dir: TempDir,
}

impl Wrapper {
    fn new() -> Wrapper {
        let dir = TempDir::new("git-wrapper");
        let real = String::from_utf8(Command::new("sh").args(["-c", "command -v git"]).output().expect("sh").stdout)
            .expect("path")
            .trim()
            .to_owned();
        let script = format!(
            "#!/bin/sh\nif [ \"$1\" = cat-file ]; then\n    shift\n    echo \"cat-file $*\" >>'{log}'\n    exec '{cat_blobd}' cat-file \"$@\"\nfi\nexec '{real}' \"$@\"\n",
            log = dir.path().join("calls").display(),
            cat_blobd = CAT_BLOBD,
        );
        let git = dir.path().join("git");
        std::fs::write(&git, script).expect("write wrapper");
        let chmod = Command::new("chmod").arg("+x").arg(&git).status().expect("chmod");
        assert!(chmod.success());
        Wrapper { dir }
    }

    /// `PATH` with the wrapper first.
    fn path(&self) -> String {
        format!("{}:{}", self.dir.path().display(), std::env::var("PATH").unwrap_or_default())
    }

    fn calls(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("calls")).unwrap_or_default()
    }
}

fn names_repo() -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| build_with_script(FIXTURES, "cat-file-fixtures")).join("names.git")
}

/// Runs `program args` with `PATH` set to `path` (plain, or the wrapper first); returns stdout, failing on error.
fn run(program: &Path, args: &[&str], path: &str, cwd: &Path) -> Vec<u8> {
    let mut cmd = Command::new(program);
    clean_git_env(&mut cmd);
    let out = cmd.args(args).env("PATH", path).current_dir(cwd).stdin(Stdio::null()).output().expect("run client");
    assert!(out.status.success(), "{} {args:?} failed: {}", program.display(), escape(&out.stderr));
    out.stdout
}

/// Runs the same client both ways and compares what it printed; the wrapped run must have used cat-blobd.
fn same_both_ways(program: &Path, args: &[&str], cwd: &Path, expect_call: &str) {
    let plain = run(program, args, &std::env::var("PATH").unwrap_or_default(), cwd);
    let wrapper = Wrapper::new();
    let wrapped = run(program, args, &wrapper.path(), cwd);
    assert!(!plain.is_empty(), "{} printed nothing", program.display());
    assert_bytes_eq(&format!("{} {args:?}", program.display()), &plain, &wrapped);
    assert!(wrapper.calls().contains(expect_call), "cat-blobd was not used: calls {:?}", wrapper.calls());
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
    same_both_ways(&python, &[script.to_str().expect("utf-8"), repo.to_str().expect("utf-8")], &repo, "--batch");
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
        "--batch",
    );
}

/// `git filter-repo --file-info-callback` reads every file's contents through `cat-file --batch-command` and
/// rewrites them; the rewritten history must be the same commit for commit.
#[test]
fn filter_repo_rewrites_to_the_same_history() {
    let clients = clients_or_skip!();
    let filter_repo = clients.join("venv/bin/git-filter-repo");
    let callback = "contents = value.get_contents_by_identifier(blob_id)\n\
                    if filename.endswith(b'.txt'):\n    blob_id = value.insert_file_with_contents(contents.upper())\n\
                    return (filename, mode, blob_id)";
    let mut results = Vec::new();
    for wrapped in [false, true] {
        let scratch = TempDir::new("filter-repo");
        let clone = scratch.path().join("clone");
        let mut cmd = Command::new("git");
        clean_git_env(&mut cmd);
        let status = cmd.args(["clone", "-q", "--no-local"]).arg(names_repo()).arg(&clone).status().expect("clone");
        assert!(status.success());
        let wrapper = Wrapper::new();
        let path = if wrapped { wrapper.path() } else { std::env::var("PATH").unwrap_or_default() };
        run(&filter_repo, &["--force", "--quiet", "--file-info-callback", callback], &path, &clone);
        let log = run(Path::new("git"), &["log", "--all", "--format=%H %T %s"], &path, &clone);
        if wrapped {
            assert!(wrapper.calls().contains("--batch-command"), "cat-blobd was not used: {:?}", wrapper.calls());
        }
        results.push(log);
    }
    assert_bytes_eq("filter-repo history", &results[0], &results[1]);
}
