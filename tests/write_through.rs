//! Write-through: streams that write history go through cat-blobd and through `git fast-import` alone, each in
//! its own throwaway bare repository borrowing a fixture's objects, and must end the same: cat-blob fd, stdout,
//! exit status, stderr, refs, objects (and `git fsck`), and marks files.
//!
//! Seeded random mixed streams: replay one with `CATBLOBD_WRITE_THROUGH_SEED=<seed> cargo test --test tests
//! write_through` (the stream is then printed in full).

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::util::case::{Case, Source, StderrMatch, assert_same_repository, case};
use crate::util::{
    CAT_BLOBD, Fixture, Output, Rng, Run, TempDir, assert_bytes_eq, clean_git_env, escape, git,
    hang_up_after_first_bytes_and, parse_responses, read_all, rev_parse, scratch_repo, wait_with_timeout,
};

const IDENT: &str = "C O Mitter <c@example.com> 1700000000 +0000";

/// One stream through git alone and through cat-blobd, with the same flags, in two repositories.
struct Both {
    git: Output,
    ours: Output,
    git_repo: PathBuf,
    our_repo: PathBuf,
    /// The scratch directories, removed with this.
    _dirs: Vec<TempDir>,
}

fn run_both(fixture: Fixture, stream: &[u8], args: &[&str]) -> Both {
    let (git_dir, git_repo) = scratch_repo(fixture);
    let (our_dir, our_repo) = scratch_repo(fixture);
    let mut both = run_both_in(stream, args, &git_repo, &our_repo);
    both._dirs = vec![git_dir, our_dir];
    both
}

/// Like [`run_both`], in existing repositories.
fn run_both_in(stream: &[u8], args: &[&str], git_repo: &Path, our_repo: &Path) -> Both {
    let run = |program: Run, repo: &Path| {
        args.iter()
            .fold(program, |run, arg| run.arg(arg))
            .capture_fd3()
            .env("GIT_DIR", repo)
            .current_dir(repo)
            .stdin(stream)
            .run()
    };
    let git = run(Run::new("git").arg("fast-import").arg("--quiet"), git_repo);
    let ours = run(Run::cat_blobd(), our_repo);
    Both { git, ours, git_repo: git_repo.to_owned(), our_repo: our_repo.to_owned(), _dirs: Vec::new() }
}

impl Both {
    /// Everything the frontend and the repository can see is the same.
    #[track_caller]
    fn assert_same(&self, what: &str, marks: &[&str]) {
        let (git, ours) = (&self.git, &self.ours);
        assert!(!escape(&ours.stderr).contains("panicked"), "{what}: {}", ours.describe());
        assert_eq!(ours.status.code(), git.status.code(), "{what}: git {}\n ours {}", git.describe(), ours.describe());
        assert_eq!(ours.status.code().is_none(), git.status.code().is_none(), "{what}: signals");
        assert_bytes_eq(&format!("{what}: cat-blob fd"), &git.fd3, &ours.fd3);
        assert_bytes_eq(&format!("{what}: stdout"), &git.stdout, &ours.stdout);
        assert_bytes_eq(&format!("{what}: first stderr line"), git.first_stderr_line(), ours.first_stderr_line());
        assert_same_repository(what, &self.git_repo, &self.our_repo);
        for name in marks {
            let read = |repo: &Path| fs::read(repo.join(name)).ok();
            let (expected, actual) = (read(&self.git_repo), read(&self.our_repo));
            assert_eq!(expected.is_some(), actual.is_some(), "{what}: marks file {name} exists on one side only");
            assert_bytes_eq(&format!("{what}: {name}"), &expected.unwrap_or_default(), &actual.unwrap_or_default());
        }
    }
}

fn git_out(repo: &Path, args: &[&str]) -> Vec<u8> {
    git(repo, args)
}

/// The stream's `{head}`, `{readme}` and `{tree}` are the basic fixture's.
fn expand(template: &str) -> Vec<u8> {
    let fixture = Fixture::Basic;
    template
        .replace("{ident}", IDENT)
        .replace("{head}", &rev_parse(fixture, "HEAD"))
        .replace("{readme}", &rev_parse(fixture, "HEAD:README.md"))
        .replace("{tree}", &rev_parse(fixture, "HEAD^{tree}"))
        .into_bytes()
}

/// Commits with every kind of file change, reads inside and between them, tags, resets, notes, an alias,
/// checkpoint, progress and done.
const MIXED: &str = "\
feature done
blob
mark :1
data 6
hello

cat-blob :1
cat-blob {readme}
commit refs/heads/main
mark :2
author {ident}
committer {ident}
data 4
one
from {head}
M 100644 :1 a.txt
M 100644 inline b.txt
cat-blob :1
data 3
bb
M 100644 {readme} dir/c.txt
ls \"a.txt\"
cat-blob 0000000000000000000000000000000000000001
ls {tree} README.md

get-mark :2
ls :2 b.txt
ls :2 dir
progress between
commit refs/heads/main
mark :3
committer {ident}
data <<EOF
two
EOF
D a.txt
C b.txt c.txt
R dir/c.txt d.txt
ls \"d.txt\"
N inline :2
data 5
note

cat-blob e0b3f1b09bd1819ed1f7ce2e75fc7400809f5350
tag v1
mark :4
from :3
tagger {ident}
data 3
v1
get-mark :4
reset refs/heads/other
from :2

reset refs/tags/light
from :3
commit refs/heads/empty
committer {ident}
data 0
deleteall
M 644 :1 only

alias
mark :5
to :3
get-mark :5
get-mark :5
checkpoint
ls :3 d.txt
commit refs/heads/main
committer {ident}
data 6
three
from :3
merge :2
M 100755 :1 run
get-mark :3
cat-blob :1
progress end
done
";

#[test]
fn mixed_streams_match_git_alone() {
    let stream = expand(MIXED);
    let both = run_both(Fixture::Basic, &stream, &["--export-marks=out.marks"]);
    assert!(both.git.status.success(), "git itself fails the stream: {}", both.git.describe());
    both.assert_same("mixed", &["out.marks"]);
    // The same stream on stdout, responses and progress interleaved.
    let (git_side, our_side) = (scratch_repo(Fixture::Basic), scratch_repo(Fixture::Basic));
    let run = |program: Run, repo: &Path| program.env("GIT_DIR", repo).current_dir(repo).stdin(stream.clone()).run();
    let git = run(Run::new("git").arg("fast-import").arg("--quiet"), &git_side.1);
    let ours = run(Run::cat_blobd(), &our_side.1);
    assert_bytes_eq("mixed on stdout", &git.stdout, &ours.stdout);
}

/// Marks exported by one run and imported by the next, the second one reading and extending the first's
/// history by mark; and a run that only defined blobs, whose marks must name objects that exist.
#[test]
fn marks_round_trip_over_two_runs() {
    let first = expand(
        "blob\nmark :1\ndata 3\nabc\n\
         commit refs/heads/main\nmark :2\ncommitter {ident}\ndata 1\na\nM 100644 :1 f\n\n",
    );
    let second = expand(
        "get-mark :2\ncat-blob :1\nls :2 f\n\
         commit refs/heads/main\nmark :3\ncommitter {ident}\ndata 1\nb\nfrom :2\nM 100644 inline g\ndata 2\ng\n\n\
         get-mark :3\nls :3 g\n",
    );
    let blobs_only = b"blob\nmark :7\ndata 5\nfresh\ncat-blob :7\n".to_vec();
    let after_blobs_only =
        expand("cat-blob :7\ncommit refs/heads/b\ncommitter {ident}\ndata 0\nM 100644 :7 fresh\n\nget-mark :7\n");
    for (what, runs) in [("commits", [first, second]), ("blobs only", [blobs_only, after_blobs_only])] {
        let ((_git_dir, git_repo), (_our_dir, our_repo)) = (scratch_repo(Fixture::Basic), scratch_repo(Fixture::Basic));
        let both = run_both_in(&runs[0], &["--export-marks=m"], &git_repo, &our_repo);
        both.assert_same(&format!("{what}: first run"), &["m"]);
        let args = ["--import-marks=m", "--export-marks=m"];
        let both = run_both_in(&runs[1], &args, &git_repo, &our_repo);
        assert!(both.git.status.success(), "{what}: {}", both.git.describe());
        both.assert_same(&format!("{what}: second run"), &["m"]);
    }
}

/// Streams git dies on: git's status, git's message, earlier responses in full, and the repository as git
/// leaves it (objects kept, marks written, no refs).
#[test]
fn failures_end_as_with_git_alone() {
    let cases = [
        // The end of input in the middle of a commit's inline data.
        (
            "eof mid-commit",
            "blob\nmark :1\ndata 1\nx\ncat-blob :1\ncommit refs/heads/main\nmark :2\ncommitter {ident}\ndata 0\nM 100644 :1 a\nM 100644 inline b\ndata 10\nabc",
        ),
        // A command git refuses right after a commit.
        (
            "unsupported after a commit",
            "commit refs/heads/main\ncommitter {ident}\ndata 0\nM 100644 {readme} a\n\ncat-blob {readme}\nbogus\ncat-blob {readme}\n",
        ),
        // A read git dies on, inside a commit.
        (
            "tree as blob in a commit",
            "commit refs/heads/main\nmark :1\ncommitter {ident}\ndata 0\nM 100644 {readme} a\ncat-blob {readme}\ncat-blob {tree}\n\n",
        ),
        ("commit mark as blob", "commit refs/heads/main\nmark :1\ncommitter {ident}\ndata 0\n\ncat-blob :1\n"),
        ("missing committer", "commit refs/heads/main\ndata 0\n\ncat-blob {readme}\n"),
        ("undeclared mark", "commit refs/heads/main\ncommitter {ident}\ndata 0\n\nget-mark :9\n"),
        ("stream ends early", "feature done\ncommit refs/heads/main\ncommitter {ident}\ndata 0\n\n"),
    ];
    for (what, template) in cases {
        let both = run_both(Fixture::Basic, &expand(template), &["--export-marks=out.marks"]);
        assert!(!both.git.status.success(), "{what}: git accepts the stream");
        both.assert_same(what, &["out.marks"]);
    }
}

/// A blob, a commit that uses it, and a read: git runs from here on.
fn git_running() -> String {
    format!("blob\nmark :1\ndata 3\nabc\ncommit refs/heads/main\nmark :2\ncommitter {IDENT}\ndata 0\nM 100644 :1 a\n\n")
}

/// A case that writes, compared in full: stderr byte for byte (or but for ASCII case), the repository, marks.
fn writing_case(what: &str, stream: &str, stderr: StderrMatch) -> Case {
    case(what, stream)
        .args(&["--export-marks=out.marks"])
        .compare("out.marks")
        .whole_stderr(stderr)
        .compare_repository()
}

/// cat-blobd fails first while git runs: git dies where it stands, and stderr is git alone's: one `fatal:`
/// line (git's own, where git dies of the same line; cat-blobd's in the place of git's line about the poison
/// line that ends its input), then git's crash report line.
#[test]
fn failing_first_prints_one_fatal_as_git_alone() {
    let commit_reading = format!(
        "commit refs/heads/main\ncommitter {IDENT}\ndata 0\nfrom :2\nM 100644 :1 b\ncat-blob :1\nM 100644 :1 c\n\n"
    );
    let git_running = git_running();
    let mut checks = crate::util::case::Checks::default();
    for (what, tail, message, stderr) in [
        (
            "feature",
            "feature done\ncat-blob :1\n",
            "fatal: Got feature command 'done' after data command",
            StderrMatch::Exact,
        ),
        (
            "option",
            "cat-blob :1\noption git --quiet\n",
            "fatal: Got option command '--quiet' after data command",
            StderrMatch::Exact,
        ),
        // The responses' fd is not open: cat-blobd finds out writing a response it made itself.
        (
            "unwritable response at the top level",
            "cat-blob :1\nget-mark :2\n",
            "fatal: Write to frontend failed: Bad file descriptor",
            StderrMatch::AnyCase,
        ),
        (
            "unwritable response in a commit",
            &commit_reading,
            "fatal: Write to frontend failed: Bad file descriptor",
            StderrMatch::AnyCase,
        ),
    ] {
        let mut case = writing_case(what, &format!("{git_running}{tail}"), stderr);
        if stderr == StderrMatch::AnyCase {
            case = case.args(&["--cat-blob-fd=9"]);
        }
        case.check(&mut checks, 128, message);
    }
    checks.finish();
}

/// git's own stderr still reaches the frontend in full, in order, before cat-blobd exits: a warning and its
/// exit status 1, git's statistics before cat-blobd's.
#[test]
fn git_stderr_is_relayed_in_full() {
    let not_fast_forward = format!(
        "commit refs/heads/main\nmark :1\ncommitter {IDENT}\ndata 0\n\ncheckpoint\nreset refs/heads/main\n\n\
         commit refs/heads/main\ncommitter {IDENT}\ndata 2\nb\n\nget-mark :1\n"
    );
    writing_case("warning", &not_fast_forward, StderrMatch::Exact).expect(1, "Not updating refs/heads/main (new tip");
    let both = run_both(Fixture::Basic, git_running().as_bytes(), &["--stats"]);
    assert!(
        both.git.status.success() && both.git.stderr.starts_with(b"fast-import statistics:"),
        "{}",
        both.git.describe()
    );
    let ours = &both.ours.stderr;
    assert_bytes_eq("git's statistics first", &both.git.stderr, &ours[..both.git.stderr.len().min(ours.len())]);
    assert!(ours[both.git.stderr.len()..].starts_with(b"cat-blobd statistics:"), "then ours: {}", escape(ours));
}

/// A file change git dies on inside a commit: no read after it is answered (by cat-blobd, which could), as
/// with git alone, wherever the read is.
#[test]
fn no_read_answered_after_a_change_git_dies_on() {
    let commit = format!("commit refs/heads/main\ncommitter {IDENT}\ndata 0\nfrom :2\nM 100644 :99 b\n");
    let mut checks = crate::util::case::Checks::default();
    for (what, tail) in [
        ("cat-blob of a stream blob", "cat-blob :1\n\n"),
        ("cat-blob of a repository blob", "cat-blob {blob}\n\n"),
        ("ls of a tree", "ls {tree} README.md\n\n"),
        ("before inline data", "M 100644 inline c\ncat-blob :1\ndata 1\nc\n\n"),
        ("get-mark after the commit", "\nget-mark :1\n"),
        ("progress after the commit", "\nprogress p\n"),
    ] {
        let stream = format!("{}{commit}{tail}cat-blob :1\n", git_running());
        writing_case(what, &stream, StderrMatch::Exact).check(&mut checks, 128, "fatal: mark :99 not declared");
    }
    checks.finish();
}

// ---------------------------------------------------------------------------------------------------------------
// Seeded random mixed streams

const STREAMS: u64 = 24;

/// A random stream of blobs, commits (every kind of change), tags, resets and reads of everything so far.
fn random_stream(seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed ^ 0x77e1_7e7b);
    let mut out = String::from("feature done\n");
    let (mut next_mark, mut blob_marks, mut commit_marks) = (1u64, Vec::new(), Vec::new());
    let paths = ["a", "b", "dir/c", "dir/sub/d", "e f"];
    for _ in 0..20 + rng.below(40) {
        match rng.below(10) {
            0..=2 => {
                out += &format!(
                    "blob\nmark :{next_mark}\ndata {}\nblob {seed} {next_mark}\n",
                    format!("blob {seed} {next_mark}").len()
                );
                blob_marks.push(next_mark);
                next_mark += 1;
            }
            3..=5 => {
                out +=
                    &format!("commit refs/heads/b{}\nmark :{next_mark}\ncommitter {IDENT}\ndata 2\nc\n", rng.below(3));
                if let Some(parent) = commit_marks.get(rng.below(commit_marks.len() + 1)) {
                    out += &format!("from :{parent}\n");
                }
                for _ in 0..1 + rng.below(4) {
                    let path = paths[rng.below(paths.len())];
                    match (rng.below(6), blob_marks.get(rng.below(blob_marks.len().max(1)))) {
                        (0, _) => out += &format!("D {path}\n"),
                        (1, _) => out += &format!("ls \"{path}\"\n"),
                        (2, Some(blob)) => out += &format!("cat-blob :{blob}\n"),
                        (3, _) => out += &format!("M 100644 inline {path}\ndata 4\nin{}\n", rng.below(10)),
                        (_, Some(blob)) => out += &format!("M 100644 :{blob} {path}\n"),
                        (_, None) => out += "deleteall\n",
                    }
                }
                out += "\n";
                commit_marks.push(next_mark);
                next_mark += 1;
            }
            6 if !commit_marks.is_empty() => {
                let target = commit_marks[rng.below(commit_marks.len())];
                out += &format!("get-mark :{target}\nls :{target} {}\n", paths[rng.below(paths.len())]);
            }
            7 if !commit_marks.is_empty() => {
                let target = commit_marks[rng.below(commit_marks.len())];
                out += &format!("reset refs/heads/r{}\nfrom :{target}\n\n", rng.below(2));
            }
            8 if !blob_marks.is_empty() => out += &format!("cat-blob :{}\n", blob_marks[rng.below(blob_marks.len())]),
            _ => out += "progress p\n",
        }
    }
    out += "done\n";
    out.into_bytes()
}

#[test]
fn random_mixed_streams_match_git_alone() {
    let seeds: Vec<u64> = match std::env::var("CATBLOBD_WRITE_THROUGH_SEED") {
        Ok(seed) => vec![seed.parse().expect("CATBLOBD_WRITE_THROUGH_SEED is a number")],
        Err(_) => (0..STREAMS).collect(),
    };
    for seed in &seeds {
        let stream = random_stream(*seed);
        if seeds.len() == 1 {
            eprintln!("seed {seed}: {}", escape(&stream));
        }
        let both = run_both(Fixture::Basic, &stream, &["--export-marks=out.marks"]);
        both.assert_same(&format!("seed {seed} (replay with CATBLOBD_WRITE_THROUGH_SEED={seed})"), &["out.marks"]);
    }
}

/// Random mixed streams with a file change git dies on in the middle of one of their commits.
#[test]
fn random_mixed_streams_failing_mid_commit() {
    for seed in 0..4u64 {
        let stream = random_stream(seed);
        let modifies: Vec<usize> = (0..stream.len()).filter(|&i| stream[i..].starts_with(b"\nM 100644 :")).collect();
        let at = modifies[Rng::new(seed).below(modifies.len())] + 1;
        let stream = [&stream[..at], b"M 100644 :999999 undeclared\n", &stream[at..]].concat();
        Case::new(&format!("seed {seed}, failing"), Source::Fixture(Fixture::Basic))
            .raw_stream(stream)
            .args(&["--export-marks=out.marks"])
            .compare("out.marks")
            .whole_stderr(StderrMatch::Exact)
            .compare_repository()
            .expect(128, "fatal: mark :999999 not declared");
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Processes that go away, and an interactive frontend

const WAIT: Duration = Duration::from_secs(60);

/// cat-blobd on `repo`, its stdin and stdout ours, its stderr collected.
fn spawn_cat_blobd(repo: &Path, args: &[&str]) -> Child {
    let mut cmd = Command::new(CAT_BLOBD);
    clean_git_env(&mut cmd);
    cmd.arg("--quiet").args(args).env("GIT_DIR", repo).current_dir(repo);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn cat-blobd")
}

/// The children of `pid` (every thread's).
fn children(pid: u32) -> Vec<i32> {
    let tasks = fs::read_dir(format!("/proc/{pid}/task")).expect("/proc");
    let mut kids = Vec::new();
    for task in tasks.flatten() {
        let list = fs::read_to_string(task.path().join("children")).unwrap_or_default();
        kids.extend(list.split_whitespace().map(|pid| pid.parse::<i32>().expect("pid")));
    }
    kids
}

/// Waits until process `pid` (not a child of ours) has exited: it is gone, or a zombie nobody reaped.
fn wait_for_exit_of(pid: i32, what: &str) {
    let start = std::time::Instant::now();
    loop {
        match fs::read_to_string(format!("/proc/{pid}/stat")) {
            // The state follows the command's closing parenthesis.
            Ok(stat) if !stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')) => {}
            _ => return,
        }
        assert!(start.elapsed() < WAIT, "{what}: git {pid} still runs after {WAIT:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn commit(branch: &str, mark: u64) -> String {
    format!(
        "commit refs/heads/{branch}\nmark :{mark}\ncommitter {IDENT}\ndata 0\nM 100644 inline f{mark}\ndata 1\nx\n\n"
    )
}

/// git killed in the middle of a stream: every earlier response is there, cat-blobd exits as git did (128 + 9),
/// and the repository is what git left (no ref, nothing half-written that fsck minds).
#[test]
fn git_killed_mid_stream() {
    let (_dir, repo) = scratch_repo(Fixture::Basic);
    let mut child = spawn_cat_blobd(&repo, &[]);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let stderr = read_all(child.stderr.take().unwrap());
    stdin.write_all(format!("{}get-mark :1\n", commit("main", 1)).as_bytes()).unwrap();
    let mut reply = String::new();
    stdout.read_line(&mut reply).unwrap();
    assert_eq!(reply.len(), 41, "a commit id: {reply:?}");
    let git_pids = children(child.id());
    assert_eq!(git_pids.len(), 1, "one git child: {git_pids:?}");
    rustix::process::kill_process(rustix::process::Pid::from_raw(git_pids[0]).unwrap(), rustix::process::Signal::KILL)
        .unwrap();
    let _ = stdin.write_all(format!("{}get-mark :2\n", commit("main", 2)).as_bytes());
    drop(stdin);
    let status = wait_with_timeout(&mut child, WAIT, "cat-blobd".as_ref());
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).unwrap();
    assert_eq!(status.code(), Some(128 + 9), "exits as git did; stderr {}", escape(&stderr.join().unwrap()));
    assert!(rest.is_empty(), "no reply after git died: {}", escape(&rest));
    assert!(git_out(&repo, &["for-each-ref"]).is_empty(), "no ref written");
    git_out(&repo, &["fsck", "--no-progress", "--no-dangling"]);
}

/// The frontend stops reading mid-stream: git alone dies of SIGPIPE without refs or marks; so do cat-blobd and
/// its git.
#[test]
fn frontend_gone_mid_stream() {
    let five_mib = rev_parse(Fixture::Basic, "HEAD:five-mib.bin");
    let stream = format!("{}get-mark :1\n{}", commit("main", 1), format!("cat-blob {five_mib}\n").repeat(8));
    for who in ["git", "cat-blobd"] {
        let (_dir, repo) = scratch_repo(Fixture::Basic);
        let mut child = if who == "git" {
            let mut cmd = Command::new("git");
            clean_git_env(&mut cmd);
            cmd.args(["fast-import", "--quiet", "--export-marks=m"]).env("GIT_DIR", &repo).current_dir(&repo);
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn git")
        } else {
            spawn_cat_blobd(&repo, &["--export-marks=m"])
        };
        // cat-blobd's git, running by the time the get-mark answer is out.
        let mut gits = Vec::new();
        let (status, stderr) =
            hang_up_after_first_bytes_and(&mut child, stream.clone().into_bytes(), WAIT, who, |child| {
                gits = children(child.id());
            });
        assert_eq!(status.signal(), Some(libc::SIGPIPE), "{who}: {status} {}", escape(&stderr));
        assert!(stderr.is_empty(), "{who}: {}", escape(&stderr));
        assert!(who == "git" || gits.len() == 1, "cat-blobd runs one git: {gits:?}");
        // An orphaned git would finish the import on its own: whatever it does is done once it has exited.
        for git in gits {
            wait_for_exit_of(git, who);
        }
        assert!(!repo.join("m").exists(), "{who}: no marks after SIGPIPE");
        assert!(git_out(&repo, &["for-each-ref"]).is_empty(), "{who}: no ref after SIGPIPE");
    }
}

/// An interactive frontend: each read is sent alone and its reply awaited (with a watchdog) before anything
/// else is sent, reads relayed to git included. The replies are git alone's, byte for byte.
#[test]
fn interactive_mixed_stream() {
    // (what to send, whether a reply comes)
    let readme = rev_parse(Fixture::Basic, "HEAD:README.md");
    let steps: Vec<(String, bool)> = vec![
        ("blob\nmark :1\ndata 3\nabc\n".into(), false),
        ("cat-blob :1\n".into(), true),
        (format!("commit refs/heads/main\nmark :2\ncommitter {IDENT}\ndata 0\nM 100644 :1 a\n"), false),
        ("ls \"a\"\n".into(), true),
        (format!("cat-blob {readme}\n"), true),
        ("M 100644 inline b\n".into(), false),
        ("cat-blob :1\n".into(), true),
        ("data 2\nb\n".into(), false),
        ("get-mark :2\n".into(), true),
        ("ls :2 b\n".into(), true),
        ("progress p\n".into(), true),
        (format!("commit refs/heads/main\nmark :3\ncommitter {IDENT}\ndata 0\nfrom :2\nD a\n\n"), false),
        ("get-mark :3\n".into(), true),
        ("cat-blob :1\n".into(), true),
    ];
    let whole: String = steps.iter().map(|(text, _)| text.as_str()).collect();
    let ((_git_dir, git_repo), (_our_dir, our_repo)) = (scratch_repo(Fixture::Basic), scratch_repo(Fixture::Basic));
    let git = Run::new("git").arg("fast-import").arg("--quiet").env("GIT_DIR", &git_repo).current_dir(&git_repo);
    let expected = git.stdin(whole).run();
    assert!(expected.status.success(), "{}", expected.describe());

    let mut child = spawn_cat_blobd(&our_repo, &[]);
    let mut stdin = child.stdin.take().unwrap();
    let (chunks, received) = mpsc::channel::<Vec<u8>>();
    let mut stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || chunks.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut got = Vec::new();
    let mut expected_replies = parse_responses(&expected.stdout).into_iter();
    for (text, replies) in &steps {
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
        if !replies {
            continue;
        }
        let want = got.len() + expected_replies.next().expect("git replied").len();
        while got.len() < want {
            match received.recv_timeout(Duration::from_secs(20)) {
                Ok(chunk) => got.extend_from_slice(&chunk),
                Err(_) => {
                    let _ = child.kill();
                    panic!("no reply to {:?} within 20 s: cat-blobd holds it back; so far {}", text, escape(&got));
                }
            }
        }
    }
    drop(stdin);
    let status = wait_with_timeout(&mut child, WAIT, "cat-blobd".as_ref());
    while let Ok(chunk) = received.recv_timeout(Duration::from_millis(100)) {
        got.extend_from_slice(&chunk);
    }
    assert!(status.success(), "{status}");
    assert_bytes_eq("interactive replies", &expected.stdout, &got);
    for query in [&["for-each-ref"][..], &["cat-file", "--batch-all-objects", "--batch-check"]] {
        assert_bytes_eq("interactive repository", &git_out(&git_repo, query), &git_out(&our_repo, query));
    }
}
