//! The cat-file front end through the daemon: `cat-blobd connect --socket S cat-file <args>` against
//! `git cat-file <args>` on the cat-file fixtures (tests/cat_file.rs), byte for byte on stdout and stderr and by
//! exit status, and the daemon's side of it: slots, stats, shutdown, a client that goes away, and cat-file and
//! fast-import clients on one daemon at once.
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;

use crate::cat_file::{ALL_ATOMS, assert_interactive, lines, names};
use crate::util::cat_file::{Stderr, assert_same, fixture_word, repo, run, run_as};
use crate::util::daemon::{Daemon, WAIT, join_within};
use crate::util::{
    CAT_BLOBD, Fixture, Output, Run, assert_bytes_eq, clean_git_env, escape, read_all, wait_with_timeout,
};

/// `cat-blobd connect --socket <daemon's> cat-file <args>` in `dir`, with `env` in the client's environment.
fn through(daemon: &Daemon, dir: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Output {
    let connect = Run::new(CAT_BLOBD).arg("connect").arg("--socket").arg(&daemon.socket);
    run_as(connect, dir, args, stdin, env)
}

/// git cat-file and the daemon on the same arguments and input: the same bytes and status.
#[track_caller]
fn same_through(daemon: &Daemon, dir: &Path, args: &[&str], stdin: &[u8], stderr: Stderr) {
    let git = run("git", dir, args, stdin, &[]);
    let ours = through(daemon, dir, args, stdin, &[]);
    let what = format!("connect cat-file {args:?} on {}", escape(&stdin[..stdin.len().min(200)]));
    assert_same(&what, &git, &ours, stderr);
}

/// `cat-blobd connect --socket <daemon's> cat-file <args>`, all three std fds piped.
fn spawn_connect(daemon: &Daemon, args: &[&str]) -> std::process::Child {
    Command::new(CAT_BLOBD)
        .arg("connect")
        .arg("--socket")
        .arg(&daemon.socket)
        .arg("cat-file")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cat-blobd connect")
}

#[test]
fn server_cat_file_batch_modes_match_git() {
    let dir = repo("names.git");
    let daemon = Daemon::start(&dir, &[]);
    let names = names(&dir);
    let input = lines(&names, b'\n');
    for args in [
        &["--batch"][..],
        &["--batch-check"],
        &[ALL_ATOMS],
        &["--batch", "--buffer"],
        &["--batch-check", "--buffer"],
        &["--batch", "--follow-symlinks"],
    ] {
        same_through(&daemon, &dir, args, &input, Stderr::Exact);
    }
    same_through(&daemon, &dir, &["--batch", "-Z"], &lines(&names, 0), Stderr::Exact);
    same_through(&daemon, &dir, &["--batch-check", "-z"], &lines(&names, 0), Stderr::Exact);
    let commands: &[u8] = b"contents HEAD\ninfo v1\ninfo nope\ncontents HEAD:hello.txt\n";
    same_through(&daemon, &dir, &["--batch-command"], commands, Stderr::Exact);
    let flushed: &[u8] = b"contents HEAD\nflush\ninfo v1\nflush\ninfo HEAD\n";
    same_through(&daemon, &dir, &["--batch-command", "--buffer"], flushed, Stderr::Exact);
    for args in [
        &["--batch-all-objects", ALL_ATOMS][..],
        &["--batch-all-objects", "--unordered", "--batch"],
        &["--batch-all-objects", "--batch"],
    ] {
        same_through(&daemon, &dir, args, b"", Stderr::Exact);
    }
}

/// `-t`, `-s`, `-e`, `-p` and `<type> <object>`, with their exit statuses (0, 1, 128) and messages: a tree
/// printed as git prints it, a missing name, an ambiguous one.
#[test]
fn server_cat_file_single_object_modes_match_git() {
    let dir = repo("names.git");
    let daemon = Daemon::start(&dir, &[]);
    let ambiguous = fixture_word("ambiguous");
    for name in ["HEAD", "HEAD^{tree}", "v1", "HEAD:hello.txt", "nope", "1111111111111111111111111111111111111111"] {
        for mode in ["-t", "-s", "-e", "-p"] {
            same_through(&daemon, &dir, &[mode, name], b"", Stderr::Exact);
        }
    }
    same_through(&daemon, &dir, &["-p", &ambiguous], b"", Stderr::Exact);
    same_through(&daemon, &dir, &["blob", "HEAD:hello.txt"], b"", Stderr::Exact);
    same_through(&daemon, &dir, &["tree", "HEAD"], b"", Stderr::Exact);
    same_through(&daemon, &dir, &["bogus", "HEAD"], b"", Stderr::Exact);
    // The names above cover each of git's statuses: 0, 1 (-e of an object that is not there) and 128.
    let statuses: Vec<Option<i32>> = ["HEAD", "1111111111111111111111111111111111111111", "nope"]
        .iter()
        .map(|name| run("git", &dir, &["-e", name], b"", &[]).status.code())
        .collect();
    assert_eq!(statuses, [Some(0), Some(1), Some(128)], "the cases cover every status");
}

/// Bad input ends the stream with git's `fatal:` line and status after the answers before it; usage errors
/// (status 129) say what the direct run says.
#[test]
fn server_cat_file_bad_input_and_usage_match_git() {
    let dir = repo("names.git");
    let daemon = Daemon::start(&dir, &[]);
    for bad in [&b"info HEAD\n\ninfo v1\n"[..], b"info HEAD\nbogus HEAD\n", b"info HEAD\nflush\n", b"contents\n"] {
        same_through(&daemon, &dir, &["--batch-command"], bad, Stderr::Exact);
    }
    same_through(&daemon, &dir, &["--batch=%(bogus)"], b"HEAD\n", Stderr::Exact);
    for args in [&[][..], &["--bogus"], &["-t"], &["--batch", "x"], &["--buffer"], &["-t", "-p", "HEAD"]] {
        same_through(&daemon, &dir, args, b"", Stderr::FirstLine);
    }
    for args in [&["--socket"][..], &["--threads=2"], &["--cat-blob-fd=3"]] {
        let ours = through(&daemon, &dir, args, b"", &[]);
        let direct = run(CAT_BLOBD, &dir, args, b"", &[]);
        assert_same(&format!("cat-file {args:?}: connect's flags end at `cat-file`"), &direct, &ours, Stderr::Exact);
    }
}

#[test]
fn server_cat_file_interactive_one_request_at_a_time() {
    let dir = repo("names.git");
    let daemon = Daemon::start(&dir, &[]);
    let mut cmd = Command::new(CAT_BLOBD);
    clean_git_env(&mut cmd);
    cmd.arg("connect").arg("--socket").arg(&daemon.socket).args(["cat-file", "--batch"]);
    assert_interactive(cmd, &dir);
}

/// The daemon's environment holds for cat-file streams as for fast-import ones: a client's
/// `GIT_NO_REPLACE_OBJECTS` changes nothing, the daemon's turns replace refs off.
#[test]
fn server_cat_file_replace_refs_follow_the_daemons_environment() {
    let dir = repo("names.git");
    let input: &[u8] = b"v1:hello.txt\nHEAD\n";
    let off = [("GIT_NO_REPLACE_OBJECTS", "1")];
    let (git_on, git_off) = (run("git", &dir, &["--batch"], input, &[]), run("git", &dir, &["--batch"], input, &off));
    assert_ne!(git_on.stdout, git_off.stdout, "the fixture has a replace ref for this test to see");
    let daemon = Daemon::start(&dir, &[]);
    assert_same("client's env", &git_on, &through(&daemon, &dir, &["--batch"], input, &off), Stderr::Exact);
    let scratch = crate::util::TempDir::new("daemon-no-replace");
    let mut no_replace = Daemon::spawn_with(&scratch.path().join("socket"), &dir, &[], |cmd| {
        cmd.env("GIT_NO_REPLACE_OBJECTS", "1");
    });
    no_replace.wait_until_listening();
    assert_same("daemon's env", &git_off, &through(&no_replace, &dir, &["--batch"], input, &[]), Stderr::Exact);
}

/// Cat-file and fast-import clients at once on one daemon: each gets the bytes of its own direct run, and each
/// stream counts in the daemon's stats and log.
#[test]
fn server_cat_file_and_fast_import_clients_share_one_daemon() {
    let dir = repo("names.git");
    let mut daemon = Daemon::start(&dir, &[]);
    let names = names(&dir);
    let listing = run("git", &dir, &["--batch-all-objects", "--batch-check=%(objectname) %(objecttype)"], b"", &[]);
    let listing = String::from_utf8(listing.stdout).expect("ASCII");
    let blobs: Vec<&str> = listing.lines().filter_map(|line| line.strip_suffix(" blob")).collect();
    assert!(blobs.len() > 3, "{blobs:?}");
    let stream: Vec<u8> = blobs.iter().flat_map(|id| format!("cat-blob {id}\n").into_bytes()).collect();
    let fast_import_expected =
        Run::new(CAT_BLOBD).arg("--git-dir").arg(&dir).arg("--read-only").stdin(stream.clone()).run();
    assert!(fast_import_expected.status.success(), "{}", fast_import_expected.describe());
    let cat_file_expected = run("git", &dir, &["--batch"], &lines(&names, b'\n'), &[]);
    let socket = daemon.socket.clone();
    let clients: Vec<thread::JoinHandle<(bool, Output)>> = (0..8)
        .map(|i| {
            let (socket, dir, stream, input) = (socket.clone(), dir.clone(), stream.clone(), lines(&names, b'\n'));
            thread::spawn(move || {
                let connect = Run::new(CAT_BLOBD).arg("connect").arg("--socket").arg(&socket);
                if i % 2 == 0 {
                    (true, run_as(connect, &dir, &["--batch"], &input, &[]))
                } else {
                    (false, connect.stdin(stream).run())
                }
            })
        })
        .collect();
    for (i, client) in clients.into_iter().enumerate() {
        let (cat_file, got) = join_within(client, WAIT, "a client");
        let expected = if cat_file { &cat_file_expected } else { &fast_import_expected };
        assert_same(&format!("client {i} (cat-file: {cat_file})"), expected, &got, Stderr::Exact);
    }
    daemon.wait_for_stat("streams_ok", 8);
    let requests = daemon.stat("requests");
    let expected_requests = 4 * (names.len() + blobs.len()) as u64;
    assert_eq!(requests, expected_requests, "every object asked for counts: {:?}", daemon.stats());
    daemon.wait_for_log_count("kind=cat-file", 4);
    daemon.wait_for_log_count("kind=connect", 4);
}

/// A cat-file stream holds a stream slot while it runs (a second client is refused with --refuse-when-full),
/// and a shutdown cuts it after the grace period with the fast-import stream's `fatal:` line and status 128.
#[test]
fn server_cat_file_takes_a_slot_and_is_cut_at_shutdown() {
    let dir = repo("names.git");
    let mut daemon = Daemon::start(&dir, &["--max-connections", "1", "--refuse-when-full", "--grace", "0.2"]);
    let mut child = spawn_connect(&daemon, &["--batch"]);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let stderr = read_all(child.stderr.take().unwrap());
    std::io::Write::write_all(&mut stdin, b"HEAD\n").unwrap();
    let mut first = [0u8; 40];
    stdout.read_exact(&mut first).expect("the first answer's id");
    let refused = through(&daemon, &dir, &["-t", "HEAD"], b"", &[]);
    assert_eq!(refused.status.code(), Some(128), "{}", refused.describe());
    assert!(refused.stderr.starts_with(b"fatal: the cat-blobd daemon is busy"), "{}", refused.describe());
    daemon.signal(rustix::process::Signal::TERM);
    assert!(daemon.wait().success(), "{}", daemon.log());
    let status = wait_with_timeout(&mut child, WAIT, "connect".as_ref());
    drop(stdin);
    assert_eq!(status.code(), Some(128));
    assert_eq!(
        stderr.join().unwrap(),
        b"fatal: error reading the command stream: the cat-blobd daemon is shutting down\n"
    );
    assert!(daemon.log().contains("kind=cat-file") && daemon.log().contains("outcome=cut"), "{}", daemon.log());
}

/// A reader that stops reading: `cat-blobd cat-file` is killed by SIGPIPE with nothing on stderr, and so is
/// `connect … cat-file`; the daemon goes on serving.
#[test]
fn server_cat_file_dies_by_sigpipe_like_the_direct_run() {
    let dir = repo("names.git");
    let mut daemon = Daemon::start(&dir, &[]);
    let socket = daemon.socket.display().to_string();
    for (what, prefix) in [("direct", vec![]), ("connect", vec!["connect", "--socket", &socket])] {
        let mut cmd = Command::new(CAT_BLOBD);
        clean_git_env(&mut cmd);
        let mut child = cmd
            .args(&prefix)
            .args(["cat-file", "--batch"])
            .current_dir(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let input = "HEAD:dir/long.txt\n".repeat(20_000).into_bytes();
        let (status, stderr) = crate::util::hang_up_after_first_bytes(&mut child, input, WAIT, what);
        assert_eq!(status.signal(), Some(libc::SIGPIPE), "{what}: {status}");
        assert!(stderr.is_empty(), "{what}: {}", escape(&stderr));
    }
    daemon.wait_for_log("outcome=broken-pipe");
    assert!(daemon.log().contains("kind=cat-file"), "{}", daemon.log());
    let again = through(&daemon, &dir, &["-t", "HEAD"], b"", &[]);
    assert_bytes_eq("the daemon still serves", b"commit\n", &again.stdout);
}

/// `--batch-all-objects` reads no input, so a shutdown cuts it between objects instead: the objects before are
/// written in full, then the fast-import stream's `fatal:` line for a shutdown, status 128.
#[test]
fn server_cat_file_all_objects_is_cut_between_objects_at_shutdown() {
    let git_dir = Fixture::Basic.git_dir();
    // One object in flight at a time, and no grace: the cut comes while the run waits for the reader.
    let mut daemon = Daemon::start(&git_dir, &["--grace", "0", "--window", "1"]);
    let full = run("git", &git_dir, &["--batch-all-objects", "--batch"], b"", &[]).stdout;
    let mut child = spawn_connect(&daemon, &["--batch-all-objects", "--batch"]);
    let mut stdout = child.stdout.take().unwrap();
    let stderr = read_all(child.stderr.take().unwrap());
    let mut got = vec![0u8; 1];
    stdout.read_exact(&mut got).expect("the first byte");
    daemon.signal(rustix::process::Signal::TERM);
    daemon.wait_for_log("shutdown");
    stdout.read_to_end(&mut got).expect("the rest, to end of file");
    let status = wait_with_timeout(&mut child, WAIT, "connect".as_ref());
    let stderr = stderr.join().unwrap();
    assert_eq!(status.code(), Some(128), "{}", escape(&stderr));
    assert_bytes_eq("stderr", b"fatal: the cat-blobd daemon is shutting down\n", &stderr);
    assert!(got.len() < full.len() && full.starts_with(&got), "{} of {} bytes, a prefix", got.len(), full.len());
    assert!(daemon.wait().success(), "{}", daemon.log());
}

/// A `connect … cat-file --batch` killed while its stdin is still open: the daemon ends the stream (client gone)
/// and frees its connection, as for a fast-import stream.
#[test]
fn server_cat_file_client_killed_frees_its_connection() {
    let dir = repo("names.git");
    let mut daemon = Daemon::start(&dir, &[]);
    let mut child = spawn_connect(&daemon, &["--batch-check"]);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    std::io::Write::write_all(&mut stdin, b"HEAD\n").unwrap();
    let mut answer = [0u8; 41];
    stdout.read_exact(&mut answer).expect("the first answer");
    child.kill().unwrap();
    child.wait().unwrap();
    daemon.wait_for_log("outcome=client-gone");
    assert!(daemon.log().contains("kind=cat-file"), "{}", daemon.log());
    drop((stdin, stdout));
    daemon.wait_for_stat("connections_open", 1);
    same_through(&daemon, &dir, &["--batch-check"], b"HEAD\n", Stderr::Exact);
}
