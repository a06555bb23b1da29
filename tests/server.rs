//! Daemon mode: `cat-blobd serve` started as a real process on a fixture, clients through both connection ways —
//! plain streams on the socket, and `cat-blobd connect` passing its fds — checked byte for byte against
//! `cat-blobd` run directly on the same stream. Every wait is bounded: a hang becomes a failure with a message.

use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::util::daemon::{Daemon, WAIT, connect, direct, plain, spawn_connect};
use crate::util::skip::{is_root, skip_unless};
use crate::util::{
    CAT_BLOBD, Fixture, Rng, TempDir, assert_bytes_eq, assert_same_as_git, blobs, clean_git_env, escape, git, read_all,
    rev_parse,
};

// ---------------------------------------------------------------------------------------------------------------
// Streams

/// A stream of every kind of read command, different for each `seed`: `cat-blob` by id (present, big, missing)
/// and by mark, blobs defined in the stream, `get-mark`, `ls` (plain and C-quoted paths), `progress`.
pub(crate) fn mixed_stream(seed: u64) -> Vec<u8> {
    let fixture = Fixture::Basic;
    let blobs = cached_blobs(fixture);
    let commit = rev_parse(fixture, "HEAD");
    let tree = rev_parse(fixture, "HEAD^{tree}");
    let mut rng = Rng::new(seed);
    let mut s = String::new();
    s.push_str(&format!("blob\nmark :1\ndata {}\nclient {seed}\n\n", format!("client {seed}\n").len()));
    s.push_str("blob\nmark :2\ndata <<EOF\nsecond blob of the stream\nEOF\n");
    for i in 0..40 {
        match rng.below(10) {
            0 => s.push_str(&format!("cat-blob :{}\n", 1 + rng.below(2))),
            1 => s.push_str(&format!("get-mark :{}\n", 1 + rng.below(2))),
            2 => {
                let paths = ["ChangeLog", "docs", "nested/deep/dir/file.txt", "submodule", "link-to-readme", "nope"];
                let base = if rng.below(2) == 0 { &commit } else { &tree };
                s.push_str(&format!("ls {base} {}\n", paths[rng.below(paths.len())]));
            }
            3 => s.push_str(&format!("ls {commit} \"odd names/tab\\there.txt\"\n")),
            4 => s.push_str(&format!("progress client {seed} step {i}\n")),
            5 => s.push_str(&format!("cat-blob {}\n", rng.hex_id())),
            _ => s.push_str(&format!("cat-blob {}\n", blobs[rng.below(blobs.len())])),
        }
    }
    if seed.is_multiple_of(4) {
        s.push_str(&format!("cat-blob {}\n", rev_parse(fixture, "HEAD:one-mib.bin")));
    }
    s.push_str(&format!("progress client {seed} done\n"));
    s.into_bytes()
}

fn cached_blobs(fixture: Fixture) -> Vec<String> {
    static BASIC: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    assert_eq!(fixture, Fixture::Basic);
    BASIC.get_or_init(|| blobs(Fixture::Basic)).clone()
}

pub(crate) fn five_mib() -> String {
    rev_parse(Fixture::Basic, "HEAD:five-mib.bin")
}

// ---------------------------------------------------------------------------------------------------------------
// The tests

/// 32 clients at once, each with its own stream: 16 plain, 16 through `connect` (half of them with
/// `--cat-blob-fd=3`). Each one's bytes, status and stderr must be those of `cat-blobd` run directly.
#[test]
fn server_32_concurrent_clients_match_cat_blobd_both_ways() {
    let fixture = Fixture::Basic;
    let daemon = Daemon::start(&fixture.git_dir(), &[]);
    let socket = daemon.socket.clone();
    let clients: Vec<JoinHandle<()>> = (0..32u64)
        .map(|k| {
            let socket = socket.clone();
            thread::spawn(move || {
                let stream = mixed_stream(k);
                if k % 2 == 0 {
                    let expected = direct(fixture, &stream, false, &[]);
                    assert!(expected.status.success(), "direct run {k}: {}", expected.describe());
                    let got = plain(&socket, stream);
                    assert_bytes_eq(&format!("plain client {k}"), &expected.stdout, &got);
                } else {
                    let fd3 = k % 4 == 1;
                    let expected = direct(fixture, &stream, fd3, &[]);
                    let got = connect(&socket, &stream, fd3, &[]);
                    assert_same_as_git(&format!("connect client {k}"), &expected, &got);
                    assert!(got.stderr.is_empty(), "connect client {k}: {}", escape(&got.stderr));
                }
            })
        })
        .collect();
    for client in clients {
        client.join().expect("client thread");
    }
    daemon.wait_for_stat("connections_open", 1);
    assert_eq!(daemon.stat("streams_ok"), 32);
    let log = daemon.log();
    assert_eq!(log.matches(" kind=plain ").count(), 16, "{log}");
    assert_eq!(log.matches(" kind=connect ").count(), 16, "{log}");
}

/// `connect` behaves as `cat-blobd` run directly, failures included: statuses, the first stderr line, marks
/// files written relative to the client's own directory, a cat-blob fd above 3, one that is not open.
#[test]
fn server_connect_is_a_drop_in_for_cat_blobd() {
    let fixture = Fixture::Basic;
    let daemon = Daemon::start(&fixture.git_dir(), &[]);
    let blob = rev_parse(fixture, "HEAD:README.md");
    let tree = rev_parse(fixture, "HEAD^{tree}");
    let cases: Vec<(&str, String, bool, Vec<&str>)> = vec![
        ("undeclared mark", format!("cat-blob {blob}\ncat-blob :7\n"), true, vec![]),
        ("not a blob", format!("cat-blob {blob}\ncat-blob {tree}\n"), true, vec![]),
        ("writes history", format!("cat-blob {blob}\ncommit refs/heads/x\n"), true, vec![]),
        ("done required", format!("cat-blob {blob}\n"), true, vec!["--done"]),
        ("unknown flag", format!("cat-blob {blob}\n"), true, vec!["--no-such-flag"]),
        ("usage", format!("cat-blob {blob}\n"), false, vec!["positional"]),
        ("fd 1 by default", format!("cat-blob {blob}\nprogress p\n"), false, vec![]),
        ("stats on stderr", format!("cat-blob {blob}\n"), true, vec!["--stats"]),
    ];
    for (what, stream, fd3, extra) in cases {
        // The daemon is read-only; cat-blobd alone would hand the commit to git, writing into the fixture.
        let direct_extra = if what == "writes history" { vec!["--read-only"] } else { extra.clone() };
        let expected = direct(fixture, stream.as_bytes(), fd3, &direct_extra);
        let got = connect(&daemon.socket, stream.as_bytes(), fd3, &extra);
        assert_same_as_git(what, &expected, &got);
    }

    // A cat-blob fd above 3, and one that is not open in the client (EBADF, as git says).
    for (what, fd, redirect) in [("fd 5", "5", "5>&1 1>/dev/null"), ("fd 7 closed", "7", "7>&-")] {
        let run = |program: crate::util::Run| program.arg(format!("--cat-blob-fd={fd}")).redirect(redirect);
        let stream = format!("cat-blob {blob}\n");
        let expected = run(crate::util::Run::cat_blobd_on(fixture)).stdin(stream.clone()).run();
        let got = run(crate::util::Run::new(CAT_BLOBD).arg("connect").arg("--socket").arg(&daemon.socket))
            .stdin(stream)
            .run();
        assert_same_as_git(what, &expected, &got);
    }

    // Relative marks paths are the client's: each run writes `marks` in its own directory.
    let stream = b"blob\nmark :3\ndata 4\nabc\n\nget-mark :3\n".to_vec();
    let (here, there) = (TempDir::new("marks-direct"), TempDir::new("marks-connect"));
    // Read-only as the daemon is: cat-blobd alone would have git write the exported blob into the fixture.
    let expected = crate::util::Run::cat_blobd_on(fixture)
        .arg("--read-only")
        .arg("--export-marks=marks")
        .current_dir(here.path())
        .stdin(stream.clone())
        .run();
    let got = crate::util::Run::new(CAT_BLOBD)
        .arg("connect")
        .arg("--socket")
        .arg(&daemon.socket)
        .arg("--quiet")
        .arg("--export-marks=marks")
        .current_dir(there.path())
        .stdin(stream)
        .run();
    assert_same_as_git("export-marks", &expected, &got);
    let marks = std::fs::read(here.path().join("marks")).expect("direct marks file");
    assert_bytes_eq("marks file", &marks, &std::fs::read(there.path().join("marks")).expect("connect's marks file"));
}

/// Connection threads are reused: the working directory a `connect` client's stream ran in must not stay with
/// the thread. A later client that passes no directory (the hello allows that) names files relative to the
/// daemon's own directory, never to an earlier client's.
#[test]
fn server_a_connect_clients_directory_does_not_outlive_its_stream() {
    let fixture = Fixture::Basic;
    let (daemon_dir, client_dir) = (TempDir::new("daemon-cwd"), TempDir::new("client-cwd"));
    let socket = daemon_dir.path().join("socket");
    let cwd = daemon_dir.path().to_owned();
    let mut daemon = Daemon::spawn_with(&socket, &fixture.git_dir(), &[], |cmd| {
        cmd.current_dir(&cwd);
    });
    daemon.wait_until_listening();
    let stream = b"blob\nmark :3\ndata 4\nabc\n\n";
    let got = crate::util::Run::new(CAT_BLOBD)
        .arg("connect")
        .arg("--socket")
        .arg(&socket)
        .arg("--export-marks=first.marks")
        .current_dir(client_dir.path())
        .stdin(stream.to_vec())
        .run();
    assert!(got.status.success(), "connect: {}", escape(&got.stderr));
    assert!(client_dir.path().join("first.marks").exists(), "the connect client's marks, in its directory");
    daemon.wait_for_log_count("outcome=", 1);

    // The same stream from a client that passes its stdin and no directory.
    let input = daemon_dir.path().join("stream");
    std::fs::write(&input, stream).unwrap();
    let input = std::fs::File::open(&input).unwrap();
    let hello = cat_blobd::server::protocol::Hello {
        fd_numbers: vec![0],
        umask: 0o022,
        args: vec![b"--export-marks=second.marks".to_vec()],
    };
    let conn = UnixStream::connect(&socket).expect("connect to the daemon");
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = rustix::net::SendAncillaryBuffer::new(&mut space);
    let fds = [std::os::fd::AsFd::as_fd(&input)];
    assert!(control.push(rustix::net::SendAncillaryMessage::ScmRights(&fds)));
    let bytes = hello.encode();
    let sent =
        rustix::net::sendmsg(&conn, &[std::io::IoSlice::new(&bytes)], &mut control, rustix::net::SendFlags::empty());
    assert_eq!(sent.expect("send the hello"), bytes.len());
    conn.set_read_timeout(Some(WAIT)).unwrap();
    let mut reply = Vec::new();
    (&conn).read_to_end(&mut reply).expect("the reply");
    assert_eq!(reply, b"exit 0\n", "{}", daemon.log());
    assert!(!client_dir.path().join("second.marks").exists(), "a later stream wrote into the first client's directory");
    assert!(daemon_dir.path().join("second.marks").exists(), "marks of a client without a directory, in the daemon's");
}

/// A frontend that stops reading: `cat-blobd` is killed by SIGPIPE, and so is `connect` (shell status 141), with
/// nothing on stderr; the daemon goes on serving.
#[test]
fn server_connect_dies_by_sigpipe_like_cat_blobd() {
    let fixture = Fixture::Basic;
    let daemon = Daemon::start(&fixture.git_dir(), &[]);
    // A mark first, so that an export would write a marks file: dying by SIGPIPE, `cat-blobd` writes none.
    let stream = format!("blob\nmark :1\ndata 3\nabc\n{}", format!("cat-blob {}\n", five_mib()).repeat(8));
    let dir = TempDir::new("sigpipe-marks");
    for (what, args) in [
        // Read-only as the daemon is: cat-blobd alone may hand the exported blob to git, which writes the fixture.
        ("direct", vec!["--git-dir".into(), fixture.git_dir().display().to_string(), "--read-only".into()]),
        ("connect", vec!["connect".into(), "--socket".into(), daemon.socket.display().to_string()]),
    ] {
        let mut cmd = Command::new(CAT_BLOBD);
        clean_git_env(&mut cmd);
        // Args go first for `connect` (a subcommand word must come first).
        let mut child = cmd
            .args(&args)
            .arg("--quiet")
            .arg(format!("--export-marks={}", dir.path().join(what).display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let (status, stderr) =
            crate::util::hang_up_after_first_bytes(&mut child, stream.clone().into_bytes(), WAIT, what);
        assert_eq!(status.signal(), Some(libc::SIGPIPE), "{what}: {status}");
        assert!(stderr.is_empty(), "{what}: {}", escape(&stderr));
        assert!(!dir.path().join(what).exists(), "{what}: no marks exported after SIGPIPE");
    }
    let mut daemon = daemon;
    daemon.wait_for_log("outcome=broken-pipe");
    let again = connect(&daemon.socket, b"cat-blob :1\n", false, &[]);
    assert_eq!(again.status.code(), Some(128), "the daemon still serves");
}

/// A message written to a stderr whose reader is gone: `cat-blobd` dies by SIGPIPE, and so does `connect`.
#[test]
fn server_connect_dies_by_sigpipe_on_a_broken_stderr_too() {
    let fixture = Fixture::Basic;
    let daemon = Daemon::start(&fixture.git_dir(), &[]);
    let stream = format!("cat-blob {}\n", rev_parse(fixture, "HEAD:README.md"));
    for (what, args) in [
        // Read-only as the daemon is: cat-blobd alone may hand the exported blob to git, which writes the fixture.
        ("direct", vec!["--git-dir".into(), fixture.git_dir().display().to_string(), "--read-only".into()]),
        ("connect", vec!["connect".into(), "--socket".into(), daemon.socket.display().to_string()]),
    ] {
        let (read_end, write_end) = rustix::pipe::pipe().unwrap();
        drop(read_end);
        let mut cmd = Command::new(CAT_BLOBD);
        clean_git_env(&mut cmd);
        // --max-pack-size=1 makes git (and cat-blobd) print a warning on stderr.
        cmd.args(&args).arg("--max-pack-size=1").stdin(Stdio::piped()).stdout(Stdio::null());
        let mut child = cmd.stderr(Stdio::from(write_end)).spawn().expect("spawn");
        let feeder = crate::util::feed_stdin(&mut child, stream.clone().into_bytes());
        let status = crate::util::wait_with_timeout(&mut child, WAIT, what.as_ref());
        feeder.join().unwrap();
        assert_eq!(status.signal(), Some(libc::SIGPIPE), "{what}: {status}");
    }
}

/// Clients killed mid-response, both ways: their connections end and free their slot; others are served.
#[test]
fn server_clients_killed_mid_response_free_their_connection() {
    let fixture = Fixture::Basic;
    let mut daemon = Daemon::start(&fixture.git_dir(), &[]);
    let big = five_mib();

    // Plain: read a little of a 40 MiB answer, then go away.
    let conn = UnixStream::connect(&daemon.socket).unwrap();
    (&conn).write_all(format!("cat-blob {big}\n").repeat(8).as_bytes()).unwrap();
    let mut some = [0u8; 1000];
    (&conn).read_exact(&mut some).unwrap();
    drop(conn);

    // connect: one reply read, then the `connect` process is killed while its stdin is still open; then the
    // frontend (this test) closes the pipes too.
    let mut child = spawn_connect(&daemon.socket, &[], Stdio::piped(), Stdio::null());
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let small = rev_parse(fixture, "HEAD:README.md");
    stdin.write_all(format!("cat-blob {small}\n").as_bytes()).unwrap();
    let mut header = [0u8; 41];
    stdout.read_exact(&mut header).unwrap();
    assert!(header.starts_with(small.as_bytes()));
    child.kill().unwrap();
    child.wait().unwrap();
    daemon.wait_for_log("outcome=client-gone");
    drop(stdin);
    drop(stdout);

    daemon.wait_for_log("outcome=broken-pipe");
    daemon.wait_for_stat("connections_open", 1);
    let stream = mixed_stream(99);
    assert_bytes_eq("after the kills", &direct(fixture, &stream, false, &[]).stdout, &plain(&daemon.socket, stream));
}

/// A client that never reads (its socket full) while others are served in full.
#[test]
fn server_a_stalled_client_does_not_slow_others() {
    let fixture = Fixture::Basic;
    let daemon = Daemon::start(&fixture.git_dir(), &[]);
    let stalled = UnixStream::connect(&daemon.socket).unwrap();
    (&stalled).write_all(format!("cat-blob {}\n", five_mib()).repeat(40).as_bytes()).unwrap();
    // The stalled stream is open and blocked writing.
    daemon.wait_for_stat("connections_open", 2);
    let clients: Vec<JoinHandle<()>> = (100..108u64)
        .map(|k| {
            let socket = daemon.socket.clone();
            thread::spawn(move || {
                let stream = mixed_stream(k);
                if k % 2 == 0 {
                    let expected = direct(fixture, &stream, false, &[]);
                    assert_bytes_eq(&format!("plain client {k}"), &expected.stdout, &plain(&socket, stream));
                } else {
                    let expected = direct(fixture, &stream, true, &[]);
                    assert_same_as_git(&format!("connect {k}"), &expected, &connect(&socket, &stream, true, &[]));
                }
            })
        })
        .collect();
    for client in clients {
        client.join().expect("client thread");
    }
    // The stalled client is still open (and the stats query itself).
    daemon.wait_for_stat("connections_open", 2);
    assert_eq!(daemon.stat("streams_ok"), 8);
    drop(stalled);
    daemon.wait_for_stat("connections_open", 1);
}

/// `git repack -adf` (which deletes the old packs and loose objects) twice while streams run, both ways: every
/// response stays correct.
#[test]
fn server_streams_stay_correct_across_repack_and_pack_removal() {
    let fixture = Fixture::Multipack;
    let copy = TempDir::new("repack");
    let status = Command::new("cp").arg("-a").arg(fixture.dir()).arg(copy.path().join("repo")).status().unwrap();
    assert!(status.success());
    let git_dir = copy.path().join("repo/.git");
    let ids = blobs(fixture);
    let stream = crate::util::cat_blob_stream(&ids);
    let expected = direct(fixture, &stream, false, &[]);
    assert!(expected.status.success());
    let expected = Arc::new(expected.stdout);
    let daemon = Daemon::start(&git_dir, &[]);
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicUsize::new(0));
    let clients: Vec<JoinHandle<usize>> = (0..4)
        .map(|k| {
            let (socket, stream, expected) = (daemon.socket.clone(), stream.clone(), Arc::clone(&expected));
            let (stop, rounds) = (Arc::clone(&stop), Arc::clone(&rounds));
            thread::spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    let got = if k % 2 == 0 {
                        plain(&socket, stream.clone())
                    } else {
                        let out = connect(&socket, &stream, false, &[]);
                        assert!(out.status.success(), "connect: {}", out.describe());
                        out.stdout
                    };
                    assert_bytes_eq(&format!("client {k} round {n}"), &expected, &got);
                    n += 1;
                    rounds.fetch_add(1, Ordering::SeqCst);
                }
                n
            })
        })
        .collect();
    let wait_rounds = |target: usize| {
        let start = Instant::now();
        while rounds.load(Ordering::SeqCst) < target {
            assert!(start.elapsed() < WAIT * 2, "clients stalled at {} rounds", rounds.load(Ordering::SeqCst));
            thread::sleep(Duration::from_millis(10));
        }
    };
    let packs = |dir: &Path| std::fs::read_dir(dir.join("objects/pack")).unwrap().count();
    wait_rounds(4);
    let before = packs(&git_dir);
    git(&git_dir, &["repack", "-adf", "-q"]);
    wait_rounds(rounds.load(Ordering::SeqCst) + 8);
    git(&git_dir, &["repack", "-adf", "-q", "--depth=5", "--window=5"]);
    wait_rounds(rounds.load(Ordering::SeqCst) + 8);
    stop.store(true, Ordering::SeqCst);
    for client in clients {
        assert!(client.join().expect("client thread") > 0);
    }
    assert!(packs(&git_dir) < before, "the repacks replaced the packs ({before} files before)");
    assert!(daemon.stat("packs_mapped") >= 1);
}

#[test]
fn server_socket_is_0600_by_default_and_socket_mode_widens_it() {
    let fixture = Fixture::Basic;
    for (extra, mode) in [(vec![], 0o600), (vec!["--socket-mode", "0660"], 0o660)] {
        let mut daemon = Daemon::start(&fixture.git_dir(), &extra);
        let meta = std::fs::symlink_metadata(&daemon.socket).unwrap();
        assert!(meta.file_type().is_socket());
        assert_eq!(meta.mode() & 0o7777, mode, "{extra:?}");
        daemon.signal(rustix::process::Signal::TERM);
        assert!(daemon.wait().success());
        assert!(!daemon.socket.exists(), "the socket file is removed on exit");
    }
}

#[test]
fn server_replaces_a_stale_socket_but_never_steals_a_live_one() {
    let fixture = Fixture::Basic;
    let dir = TempDir::new("stale");
    let socket = dir.path().join("socket");
    // A socket file nobody listens on, as a killed daemon leaves it. Made by killing one: bound in this process,
    // the listener could live on for a moment in a child that another test forks, and look live.
    let mut killed = Daemon::spawn(&socket, &fixture.git_dir(), &[]);
    killed.wait_until_listening();
    killed.signal(rustix::process::Signal::KILL);
    killed.wait();
    assert!(socket.exists());
    let mut first = Daemon::spawn(&socket, &fixture.git_dir(), &[]);
    first.wait_until_listening();
    let stream = mixed_stream(5);
    let expected = direct(fixture, &stream, false, &[]).stdout;
    assert_bytes_eq("first daemon", &expected, &plain(&socket, stream.clone()));

    // A second daemon on the same path refuses to start; the first keeps serving.
    let mut second = Daemon::spawn(&socket, &fixture.git_dir(), &[]);
    let status = second.wait();
    assert_eq!(status.code(), Some(128), "{}", second.log());
    assert!(
        second.log().starts_with("fatal: another cat-blobd daemon is starting or listening on"),
        "{}",
        second.log()
    );
    assert_bytes_eq("first daemon after the second tried", &expected, &plain(&socket, stream));

    // A file that is not a socket is never removed.
    let file = dir.path().join("file");
    std::fs::write(&file, b"precious").unwrap();
    let mut third = Daemon::spawn(&file, &fixture.git_dir(), &[]);
    assert_eq!(third.wait().code(), Some(128));
    assert!(third.log().contains("is not a socket"), "{}", third.log());
    assert_eq!(std::fs::read(&file).unwrap(), b"precious");
}

/// Another uid is refused unless listed with --allow-uid, and even then may not name files. Needs root to run a
/// client as another user; the admission check itself is unit-tested in `server::peer`.
#[test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
fn server_refuses_other_uids_unless_allowed() {
    skip_unless!(is_root(), "needs root to run a client as another uid");
    let fixture = Fixture::Basic;
    let nobody = 65534;
    let blob = rev_parse(fixture, "HEAD:README.md");
    let stream = format!("cat-blob {blob}\n");
    let as_nobody_with = |socket: &Path, extra: &[&str], stream: &str| -> (ExitStatus, Vec<u8>, Vec<u8>) {
        let mut cmd = Command::new(CAT_BLOBD);
        cmd.arg("connect").arg("--socket").arg(socket).args(extra).uid(nobody).gid(nobody).current_dir("/");
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn connect as nobody");
        let feeder = crate::util::feed_stdin(&mut child, stream.as_bytes().to_vec());
        let (out, err) = (read_all(child.stdout.take().unwrap()), read_all(child.stderr.take().unwrap()));
        let status = crate::util::wait_with_timeout(&mut child, WAIT, "connect as nobody".as_ref());
        feeder.join().unwrap();
        (status, out.join().unwrap(), err.join().unwrap())
    };
    let as_nobody = |socket: &Path, extra: &[&str]| as_nobody_with(socket, extra, &stream);
    // The socket must be reachable for the test to mean anything: a world-writable socket in a directory
    // that everyone may traverse.
    let dir = std::env::temp_dir().join(format!("cat-blobd-uid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let socket = dir.join("socket");

    let mut strict = Daemon::spawn(&socket, &fixture.git_dir(), &["--socket-mode", "0666"]);
    strict.wait_until_listening();
    let (status, out, err) = as_nobody(&socket, &[]);
    assert_eq!(status.code(), Some(128), "{}", escape(&err));
    assert!(out.is_empty());
    let expected = format!("fatal: uid {nobody} may not use this cat-blobd daemon");
    assert!(err.starts_with(expected.as_bytes()), "{}", escape(&err));
    strict.wait_for_log("outcome=refused");
    strict.signal(rustix::process::Signal::TERM);
    assert!(strict.wait().success());

    let allowed = ["--socket-mode", "0666", "--allow-uid", "65534"];
    let mut daemon = Daemon::spawn(&socket, &fixture.git_dir(), &allowed);
    daemon.wait_until_listening();
    let (status, out, err) = as_nobody(&socket, &[]);
    assert!(status.success(), "{status}: {}", escape(&err));
    assert_bytes_eq("allowed uid", &direct(fixture, stream.as_bytes(), false, &[]).stdout, &out);
    let (status, _, err) = as_nobody(&socket, &["--export-marks=/tmp/not-for-nobody"]);
    assert_eq!(status.code(), Some(128));
    assert!(
        err.starts_with(b"fatal: --export-marks=/tmp/not-for-nobody is not allowed for uid 65534"),
        "{}",
        escape(&err)
    );
    assert!(!Path::new("/tmp/not-for-nobody").exists());
    // Nor may the stream itself name a file: it would be created or read with the daemon's rights.
    let edges = dir.join("edges-for-nobody");
    for (line, named) in [
        (format!("option git export-pack-edges={}", edges.display()), format!("export-pack-edges={}", edges.display())),
        (
            "feature rewrite-submodules-from=sub:/etc/shadow".to_owned(),
            "rewrite-submodules-from=sub:/etc/shadow".to_owned(),
        ),
    ] {
        let (status, out, err) = as_nobody_with(&socket, &[], &format!("{line}\n{stream}"));
        assert_eq!(status.code(), Some(128), "{line}: {}", escape(&err));
        assert!(out.is_empty());
        let expected = format!("fatal: '{named}' is not allowed over the cat-blobd daemon for another uid");
        assert!(err.starts_with(expected.as_bytes()), "{}", escape(&err));
    }
    assert!(!edges.exists());
    daemon.signal(rustix::process::Signal::TERM);
    assert!(daemon.wait().success());
    let _ = std::fs::remove_dir_all(&dir);
}

/// SIGTERM with two open streams (one of each kind, each half sent): the socket goes away at once, both streams
/// finish in full within the grace period, and the daemon exits 0.
#[test]
fn server_sigterm_lets_open_streams_finish_then_exits_0() {
    let fixture = Fixture::Basic;
    let mut daemon = Daemon::start(&fixture.git_dir(), &["--grace", "60"]);
    let stream = mixed_stream(7);
    let half = stream.len() / 2;
    let expected = direct(fixture, &stream, false, &[]).stdout;

    let conn = UnixStream::connect(&daemon.socket).unwrap();
    conn.set_read_timeout(Some(WAIT)).unwrap();
    (&conn).write_all(&stream[..half]).unwrap();

    let mut child = spawn_connect(&daemon.socket, &["--quiet"], Stdio::piped(), Stdio::piped());
    let mut stdin = child.stdin.take().unwrap();
    let mut connect_out = child.stdout.take().unwrap();
    let stderr = read_all(child.stderr.take().unwrap());
    stdin.write_all(&stream[..half]).unwrap();
    // Both streams are past their hello once each has answered something (a connection still in its hello at
    // the signal is told the daemon is shutting down).
    let (mut plain_first, mut connect_first) = ([0u8; 1], [0u8; 1]);
    (&conn).read_exact(&mut plain_first).expect("the plain stream's first byte");
    connect_out.read_exact(&mut connect_first).expect("the connect stream's first byte");
    let stdout = read_all(connect_out);

    daemon.signal(rustix::process::Signal::TERM);
    daemon.wait_for_log("shutdown open=2");
    assert!(!daemon.socket.exists(), "no new connections after SIGTERM");
    assert!(UnixStream::connect(&daemon.socket).is_err());

    (&conn).write_all(&stream[half..]).unwrap();
    conn.shutdown(Shutdown::Write).unwrap();
    let mut got = plain_first.to_vec();
    (&conn).read_to_end(&mut got).expect("the plain stream ends within the wait");
    assert_bytes_eq("plain stream across SIGTERM", &expected, &got);

    stdin.write_all(&stream[half..]).unwrap();
    drop(stdin);
    let status = crate::util::wait_with_timeout(&mut child, WAIT, "connect".as_ref());
    assert!(status.success(), "{status}: {}", escape(&stderr.join().unwrap()));
    let got = [&connect_first[..], &stdout.join().unwrap()].concat();
    assert_bytes_eq("connect stream across SIGTERM", &expected, &got);

    assert!(daemon.wait().success(), "{}", daemon.log());
    assert!(daemon.log().contains(" cut=0 abandoned=0"), "{}", daemon.log());
}

/// Streams that do not finish within the grace period are cut: the plain one gets end of file after its
/// responses, the `connect` one a `fatal:` line and 128; the daemon still exits 0 and removes its socket.
#[test]
fn server_grace_period_cuts_streams_that_do_not_end() {
    let fixture = Fixture::Basic;
    let mut daemon = Daemon::start(&fixture.git_dir(), &["--grace", "0.2"]);
    let blob = rev_parse(fixture, "HEAD:README.md");
    let request = format!("cat-blob {blob}\n");
    let expected = direct(fixture, request.as_bytes(), false, &[]).stdout;

    let conn = UnixStream::connect(&daemon.socket).unwrap();
    conn.set_read_timeout(Some(WAIT)).unwrap();
    (&conn).write_all(request.as_bytes()).unwrap();
    let mut reply = vec![0u8; expected.len()];
    (&conn).read_exact(&mut reply).unwrap();
    assert_bytes_eq("before the cut", &expected, &reply);

    let mut child = spawn_connect(&daemon.socket, &[], Stdio::piped(), Stdio::piped());
    let mut stdin = child.stdin.take().unwrap();
    let stderr = read_all(child.stderr.take().unwrap());
    // One answer through `connect` first: its stream is running, and waits for its next command (a client still
    // in its hello at shutdown would be told the daemon is shutting down, with no stream to cut).
    stdin.write_all(request.as_bytes()).unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut answer = vec![0u8; expected.len()];
    stdout.read_exact(&mut answer).unwrap();
    assert_bytes_eq("through connect before the cut", &expected, &answer);
    daemon.wait_for_stat("connections_open", 3);

    daemon.signal(rustix::process::Signal::TERM);
    assert!(daemon.wait().success(), "{}", daemon.log());
    assert!(!daemon.socket.exists());
    let mut rest = Vec::new();
    (&conn).read_to_end(&mut rest).expect("end of file for the cut plain stream");
    assert!(rest.is_empty(), "{}", escape(&rest));
    let status = crate::util::wait_with_timeout(&mut child, WAIT, "connect".as_ref());
    drop(stdin);
    assert_eq!(status.code(), Some(128));
    assert_eq!(
        stderr.join().unwrap(),
        b"fatal: error reading the command stream: the cat-blobd daemon is shutting down\n"
    );
    assert!(daemon.log().contains("cut=2 abandoned=0"), "{}", daemon.log());
}

/// A `connect` stream blocked writing into a frontend's full pipe cannot be interrupted; at shutdown it is
/// abandoned after the cut (logged), the daemon still exits 0, and the client reports the missing status.
#[test]
fn server_shutdown_abandons_a_stream_stuck_on_a_full_pipe() {
    let fixture = Fixture::Basic;
    let mut daemon = Daemon::start(&fixture.git_dir(), &["--grace", "0.1"]);
    let mut child = spawn_connect(&daemon.socket, &[], Stdio::piped(), Stdio::piped());
    let feeder = crate::util::feed_stdin(&mut child, format!("cat-blob {}\n", five_mib()).repeat(40).into_bytes());
    let unread_stdout = child.stdout.take().unwrap();
    let stderr = read_all(child.stderr.take().unwrap());
    // The first answer (5 MiB) has begun in the pipe, which holds less: the stream is stuck in that write. (An open
    // connection alone is not enough: a stream not yet writing is cut cleanly, not abandoned.)
    let mut readable = [rustix::event::PollFd::new(&unread_stdout, rustix::event::PollFlags::IN)];
    let timeout = rustix::event::Timespec { tv_sec: WAIT.as_secs() as i64, tv_nsec: 0 };
    assert_eq!(rustix::event::poll(&mut readable, Some(&timeout)).unwrap(), 1, "no answer began: {}", daemon.log());
    daemon.signal(rustix::process::Signal::TERM);
    assert!(daemon.wait().success(), "{}", daemon.log());
    assert!(daemon.log().contains("outcome=abandoned"), "{}", daemon.log());
    assert!(!daemon.socket.exists());
    let status = crate::util::wait_with_timeout(&mut child, WAIT, "connect".as_ref());
    assert_eq!(status.code(), Some(128));
    let stderr = stderr.join().unwrap();
    assert!(stderr.ends_with(b"closed the connection without an exit status\n"), "{}", escape(&stderr));
    drop(feeder);
}

/// Past --max-connections, clients wait in the backlog; with --refuse-when-full they are told so.
#[test]
fn server_connection_limit_queues_or_refuses() {
    let fixture = Fixture::Basic;
    let blob = rev_parse(fixture, "HEAD:README.md");
    let request = format!("cat-blob {blob}\n");
    let expected = direct(fixture, request.as_bytes(), false, &[]).stdout;

    let refusing = Daemon::start(&fixture.git_dir(), &["--max-connections", "1", "--refuse-when-full"]);
    let holder = UnixStream::connect(&refusing.socket).unwrap();
    (&holder).write_all(b"progress holding\n").unwrap();
    let mut line = [0u8; 17];
    (&holder).read_exact(&mut line).unwrap();
    let got = connect(&refusing.socket, request.as_bytes(), false, &[]);
    assert_eq!(got.status.code(), Some(128), "{}", got.describe());
    assert!(got.stderr.starts_with(b"fatal: the cat-blobd daemon is busy"), "{}", escape(&got.stderr));
    drop(holder);

    let queueing = Daemon::start(&fixture.git_dir(), &["--max-connections", "1"]);
    let holder = UnixStream::connect(&queueing.socket).unwrap();
    (&holder).write_all(b"progress holding\n").unwrap();
    (&holder).read_exact(&mut line).unwrap();
    let waiting = UnixStream::connect(&queueing.socket).unwrap();
    (&waiting).write_all(request.as_bytes()).unwrap();
    waiting.shutdown(Shutdown::Write).unwrap();
    // Once the daemon has accepted the second client, and answered the first after that, the second still has no
    // answer. Accepted: the holder, the second client and each `stats` asked so far (a connection of its own).
    let start = Instant::now();
    for asked in 1.. {
        if queueing.stat("connections_total") >= 2 + asked {
            break;
        }
        assert!(start.elapsed() < WAIT, "the second client was never accepted: {:?}", queueing.stats());
        thread::sleep(Duration::from_millis(10));
    }
    (&holder).write_all(b"progress holding\n").unwrap();
    (&holder).read_exact(&mut line).unwrap();
    waiting.set_nonblocking(true).unwrap();
    let early = (&waiting).read(&mut [0u8; 1]);
    assert!(
        matches!(&early, Err(err) if err.kind() == std::io::ErrorKind::WouldBlock),
        "the second client waits while the first is open: {early:?}"
    );
    waiting.set_nonblocking(false).unwrap();
    waiting.set_read_timeout(Some(WAIT)).unwrap();
    drop(holder);
    let mut got = Vec::new();
    (&waiting).read_to_end(&mut got).expect("the queued client's answer");
    assert_bytes_eq("queued client", &expected, &got);
}

/// `--log-format json`: one JSON object per connection with the fields the issue names.
#[test]
fn server_json_log_has_one_object_per_connection() {
    let fixture = Fixture::Basic;
    let mut daemon = Daemon::start(&fixture.git_dir(), &["--log-format", "json"]);
    let stream = mixed_stream(3);
    plain(&daemon.socket, stream.clone());
    connect(&daemon.socket, &stream, false, &[]);
    daemon.wait_for_log_count("\"event\":\"connection\"", 2);
    daemon.signal(rustix::process::Signal::INT);
    assert!(daemon.wait().success());
    let log = daemon.log();
    let lines: Vec<serde_json::Value> =
        log.lines().map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))).collect();
    let connections: Vec<&serde_json::Value> = lines.iter().filter(|l| l["event"] == "connection").collect();
    assert_eq!(connections.len(), 2, "{log}");
    for line in connections {
        for field in ["conn", "kind", "uid", "pid", "requests", "bytes", "duration_ms", "outcome", "exit"] {
            assert!(line.get(field).is_some(), "no {field} in {line}");
        }
        assert_eq!(line["outcome"], "ok");
        assert!(line["requests"].as_u64().unwrap() > 0);
    }
    assert!(lines.iter().any(|l| l["event"] == "signal" && l["signal"] == "SIGINT"), "{log}");
}

/// `stats` counts the requests and bytes of streams still open, as they are answered.
#[test]
fn server_stats_counts_open_streams_as_they_go() {
    let fixture = Fixture::Basic;
    let daemon = Daemon::start(&fixture.git_dir(), &[]);
    let ids: Vec<String> = cached_blobs(fixture).iter().take(3).map(|blob| blob.to_string()).collect();
    let stream: String = ids.iter().map(|id| format!("cat-blob {id}\n")).collect();
    let expected = direct(fixture, stream.as_bytes(), false, &[]).stdout;

    let conn = UnixStream::connect(&daemon.socket).unwrap();
    conn.set_read_timeout(Some(WAIT)).unwrap();
    (&conn).write_all(stream.as_bytes()).unwrap();
    let mut got = vec![0u8; expected.len()];
    (&conn).read_exact(&mut got).unwrap();
    assert_bytes_eq("responses", &expected, &got);
    // The stream is still open (no end of input yet): its work shows already.
    assert_eq!(daemon.stat("connections_open"), 2, "this stream and the stats query itself");
    assert_eq!(daemon.stat("requests"), 3);
    assert_eq!(daemon.stat("bytes"), expected.len() as u64);
    assert_eq!(daemon.stat("streams_ok"), 0);

    conn.shutdown(Shutdown::Write).unwrap();
    assert_eq!((&conn).read(&mut [0u8; 16]).unwrap(), 0);
    daemon.wait_for_stat("streams_ok", 1);
    assert_eq!(daemon.stat("requests"), 3, "counted once, not again at the end");
    assert_eq!(daemon.stat("bytes"), expected.len() as u64);
}

/// Write-through in the daemon: with `serve --allow-writes`, a client of the daemon's own uid gets what
/// `cat-blobd` alone gives (responses, status, refs and objects); without it, writing commands are refused with a
/// `fatal:` that says why; a client of another uid is refused even with it (needs root to run one).
#[test]
fn server_writes_through_only_with_allow_writes_for_its_own_uid() {
    let stream = format!(
        "blob\nmark :1\ndata 3\nabc\ncommit refs/heads/main\nmark :2\ncommitter C <c@example.com> 1700000000 +0000\n\
         data 0\nM 100644 :1 a\nls \"a\"\n\nget-mark :2\nls :2 a\ncat-blob {}\n",
        rev_parse(Fixture::Basic, "HEAD:README.md")
    );
    let (_direct_dir, direct_repo) = crate::util::scratch_repo(Fixture::Basic);
    let (_daemon_dir, daemon_repo) = crate::util::scratch_repo(Fixture::Basic);
    let expected = crate::util::Run::cat_blobd()
        .capture_fd3()
        .env("GIT_DIR", &direct_repo)
        .current_dir(&direct_repo)
        .stdin(stream.clone())
        .run();
    assert!(expected.status.success(), "{}", expected.describe());
    let writes = Daemon::start(&daemon_repo, &["--allow-writes"]);
    let got = connect(&writes.socket, stream.as_bytes(), true, &[]);
    assert_same_as_git("daemon with --allow-writes", &expected, &got);
    for query in [&["for-each-ref"][..], &["cat-file", "--batch-all-objects", "--batch-check"]] {
        assert_bytes_eq("daemon's repository", &git(&direct_repo, query), &git(&daemon_repo, query));
    }

    let read_only = Daemon::start(&daemon_repo, &[]);
    let refused = connect(&read_only.socket, stream.as_bytes(), true, &[]);
    assert_eq!(refused.status.code(), Some(128), "{}", refused.describe());
    let message = b"fatal: 'commit' is not supported: cat-blobd only answers read commands";
    assert!(refused.stderr.starts_with(message), "{}", escape(&refused.stderr));

    skip_unless!(is_root(), "the other-uid case needs root to run a client as another uid");
    let dir = std::env::temp_dir().join(format!("cat-blobd-writes-uid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let socket = dir.join("socket");
    let mut daemon =
        Daemon::spawn(&socket, &daemon_repo, &["--allow-writes", "--allow-uid", "65534", "--socket-mode", "0666"]);
    daemon.wait_until_listening();
    let mut cmd = Command::new(CAT_BLOBD);
    cmd.arg("connect").arg("--socket").arg(&socket).uid(65534).gid(65534).current_dir("/");
    cmd.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn connect as nobody");
    let feeder = crate::util::feed_stdin(&mut child, stream.into_bytes());
    let err = read_all(child.stderr.take().unwrap());
    let status = crate::util::wait_with_timeout(&mut child, WAIT, "connect as nobody".as_ref());
    feeder.join().unwrap();
    let err = err.join().unwrap();
    assert_eq!(status.code(), Some(128), "{}", escape(&err));
    assert!(err.starts_with(message), "another uid is refused: {}", escape(&err));
    daemon.signal(rustix::process::Signal::TERM);
    let _ = std::fs::remove_dir_all(&dir);
}
