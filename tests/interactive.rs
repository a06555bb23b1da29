//! An interactive frontend, like a remote helper driving fast-import: send one `cat-blob`, read the complete
//! reply, and only then send the next. cat-blobd must never hold a reply back waiting for more input. A reply
//! that does not arrive within `REPLY_TIMEOUT` kills the child and fails the test: a hang must become a failure,
//! never a stuck CI.

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::Duration;

use crate::util::{
    CAT_BLOBD, Fixture, Rng, assert_bytes_eq, blobs, cat_blob_stream, clean_git_env, escape, git_fast_import,
    parse_responses, read_all, read_response,
};

const REQUESTS: usize = 1000;
const REPLY_TIMEOUT: Duration = Duration::from_secs(20);

/// Where cat-blobd writes its replies; the test reads them from the child's stdout pipe either way.
#[derive(Clone, Copy, Debug)]
enum Transport {
    /// The default: responses on fd 1.
    Stdout,
    /// `--cat-blob-fd=3`, with fd 3 our pipe and fd 1 sent to stderr (which must stay empty).
    Fd3,
}

/// The oracle's batch output as the raw bytes of each response, keyed by id.
fn split_responses(bytes: &[u8]) -> HashMap<String, Vec<u8>> {
    let id = |raw: &[u8]| String::from_utf8(raw.split(|&b| b == b' ').next().expect("id").to_vec()).expect("hex");
    parse_responses(bytes).into_iter().map(|raw| (id(&raw), raw)).collect()
}

/// Kills the child when the test ends early (panics included), so no process outlives its test.
struct KillOnDrop(Arc<Mutex<Child>>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let mut child = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(child.try_wait(), Ok(None)) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `half_of_next`: each write also carries the first half of the next request's line (the frontend has begun
/// it, and finishes it only after this reply).
fn one_request_at_a_time(transport: Transport, half_of_next: bool) {
    let fixture = Fixture::Basic;
    let blobs = blobs(fixture);
    let mut rng = Rng::new(7);
    let missing: Vec<String> = (0..5).map(|_| rng.hex_id()).collect();
    let requests: Vec<&str> = (0..REQUESTS)
        .map(|i| if i % 97 == 96 { &missing[(i / 97) % missing.len()] } else { &blobs[i % blobs.len()] })
        .map(String::as_str)
        .collect();

    // The expected reply for every distinct id, from one batch run of git.
    let mut distinct = blobs.clone();
    distinct.extend(missing.iter().cloned());
    let git = git_fast_import(fixture, &cat_blob_stream(&distinct), true);
    assert!(git.status.success(), "git: {}", git.describe());
    let expected = split_responses(&git.fd3);
    assert_eq!(expected.len(), distinct.len());

    let script = match transport {
        Transport::Stdout => r#"exec "$0" "$@""#,
        Transport::Fd3 => r#"exec "$0" "$@" 3>&1 1>&2"#,
    };
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(script).arg(CAT_BLOBD).arg("--quiet").arg("--git-dir").arg(fixture.git_dir());
    if let Transport::Fd3 = transport {
        cmd.arg("--cat-blob-fd=3");
    }
    clean_git_env(&mut cmd);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn cat-blobd");
    let mut input = child.stdin.take().expect("stdin");
    let mut output = BufReader::new(child.stdout.take().expect("stdout"));
    let stderr = read_all(child.stderr.take().expect("stderr"));
    let child = Arc::new(Mutex::new(child));
    let _kill_on_drop = KillOnDrop(Arc::clone(&child));

    // The watchdog: every complete reply ticks; no tick within REPLY_TIMEOUT kills the child, which turns the
    // blocked read below into an EOF and the test into a failure.
    let (tick, ticks) = mpsc::channel::<()>();
    let timed_out = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let child = Arc::clone(&child);
        let timed_out = Arc::clone(&timed_out);
        thread::spawn(move || {
            loop {
                match ticks.recv_timeout(REPLY_TIMEOUT) {
                    Ok(()) => {}
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        timed_out.store(true, Ordering::SeqCst);
                        let _ = child.lock().unwrap_or_else(|e| e.into_inner()).kill();
                        return;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                }
            }
        })
    };
    let fail = |n: usize, id: &str, err: &dyn std::fmt::Display| -> ! {
        if timed_out.load(Ordering::SeqCst) {
            panic!("{transport:?}: no complete reply to request #{n} (cat-blob {id}) within {REPLY_TIMEOUT:?}: {err}");
        }
        panic!("{transport:?}: request #{n} (cat-blob {id}): {err}");
    };

    let lines: Vec<Vec<u8>> = requests.iter().map(|id| format!("cat-blob {id}\n").into_bytes()).collect();
    let half = |line: &[u8]| if half_of_next { line.len() / 2 } else { 0 };
    for (n, id) in requests.iter().enumerate() {
        let mut write = lines[n][if n == 0 { 0 } else { half(&lines[n]) }..].to_vec();
        if let Some(next) = lines.get(n + 1) {
            write.extend_from_slice(&next[..half(next)]);
        }
        if let Err(err) = input.write_all(&write).and_then(|()| input.flush()) {
            fail(n, id, &err);
        }
        let reply = read_response(&mut output).unwrap_or_else(|err| fail(n, id, &err));
        assert_bytes_eq(&format!("{transport:?}: reply #{n} (cat-blob {id})"), &expected[*id], &reply);
        tick.send(()).expect("watchdog alive");
    }

    // EOF on stdin ends the stream: exit 0, nothing more on the reply pipe, nothing on stderr.
    drop(input);
    let status = loop {
        if let Some(status) = child.lock().unwrap().try_wait().expect("try_wait") {
            break status;
        }
        assert!(!timed_out.load(Ordering::SeqCst), "{transport:?}: cat-blobd did not exit after EOF");
        thread::sleep(Duration::from_millis(2));
    };
    drop(tick);
    watchdog.join().expect("watchdog");
    let mut rest = Vec::new();
    output.read_to_end(&mut rest).expect("read rest");
    let stderr = stderr.join().expect("stderr");
    assert!(status.success() && !timed_out.load(Ordering::SeqCst), "{transport:?}: {status}: {}", escape(&stderr));
    assert!(
        rest.is_empty(),
        "{transport:?}: unexpected output after the last reply: {}",
        escape(&rest[..rest.len().min(200)])
    );
    assert!(stderr.is_empty(), "{transport:?}: stderr: {}", escape(&stderr));
}

#[test]
fn one_request_at_a_time_on_stdout() {
    one_request_at_a_time(Transport::Stdout, false);
}

#[test]
fn one_request_at_a_time_on_cat_blob_fd() {
    one_request_at_a_time(Transport::Fd3, false);
}

/// Half a line buffered is not a request yet: the reply before it must not wait for it.
#[test]
fn one_request_at_a_time_with_half_of_the_next_line_sent() {
    one_request_at_a_time(Transport::Fd3, true);
}

/// A reply, then a blob whose data the frontend sends only after that reply: git answers the `cat-blob` before
/// it reads the blob. A request waiting in a batch of jobs must go out before the data is read.
#[test]
fn a_reply_before_a_blob_whose_data_comes_later() {
    let fixture = Fixture::Basic;
    let id = &blobs(fixture)[0];
    let git = git_fast_import(fixture, &cat_blob_stream(std::slice::from_ref(id)), true);
    assert!(git.status.success(), "git: {}", git.describe());
    let mut cmd = Command::new(CAT_BLOBD);
    cmd.arg("--quiet").arg("--git-dir").arg(fixture.git_dir()).arg("--cat-blob-fd=1");
    clean_git_env(&mut cmd);
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("spawn");
    let mut input = child.stdin.take().expect("stdin");
    let mut output = BufReader::new(child.stdout.take().expect("stdout"));
    let child = Arc::new(Mutex::new(child));
    let _kill_on_drop = KillOnDrop(Arc::clone(&child));
    let (replied, watchdog) = mpsc::channel::<()>();
    let guard = {
        let child = Arc::clone(&child);
        thread::spawn(move || {
            if watchdog.recv_timeout(REPLY_TIMEOUT) == Err(mpsc::RecvTimeoutError::Timeout) {
                let _ = child.lock().unwrap_or_else(|e| e.into_inner()).kill();
            }
        })
    };
    write!(input, "cat-blob {id}\nblob\nmark :1\ndata 10\nhello").and_then(|()| input.flush()).expect("send");
    let reply = read_response(&mut output).expect("the reply before the blob's data is complete");
    let _ = replied.send(());
    guard.join().expect("watchdog");
    assert_bytes_eq("cat-blob before the blob", &git.fd3, &reply);
    write!(input, "world\ncat-blob :1\n").and_then(|()| input.flush()).expect("send");
    drop(input);
    let stream_blob = read_response(&mut output).expect("the stream's blob");
    assert!(stream_blob.ends_with(b" blob 10\nhelloworld\n"), "{}", escape(&stream_blob));
    assert!(child.lock().unwrap().wait().expect("wait").success());
}
