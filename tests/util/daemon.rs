//! A `cat-blobd serve` as a child process, and its clients: plain streams on the socket, `cat-blobd connect`,
//! and the same stream run directly, to compare with. Every wait is bounded by [`WAIT`]: a hang becomes a failure
//! with a message.

use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::{CAT_BLOBD, Fixture, Output, Run, TempDir, clean_git_env, escape};

/// Longest any single wait in these tests may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------------------------
// The daemon as a child process

pub struct Daemon {
    pub child: Child,
    pub socket: PathBuf,
    log: Arc<Mutex<Vec<u8>>>,
    /// Copies the daemon's stderr into `log`; ends at EOF, which `wait` waits for so the log is complete.
    log_reader: Option<thread::JoinHandle<()>>,
    _dir: Option<TempDir>,
}

impl Daemon {
    /// `cat-blobd serve` on `fixture`'s git dir, with a socket in a fresh scratch directory.
    pub fn start(git_dir: &Path, extra: &[&str]) -> Daemon {
        let dir = TempDir::new("daemon");
        let mut daemon = Daemon::spawn(&dir.path().join("socket"), git_dir, extra);
        daemon._dir = Some(dir);
        daemon.wait_until_listening();
        daemon
    }

    pub fn spawn(socket: &Path, git_dir: &Path, extra: &[&str]) -> Daemon {
        Daemon::spawn_with(socket, git_dir, extra, |_| {})
    }

    /// [`Daemon::spawn`], with `configure` changing the command before it starts (uid, limits, a wrapper).
    pub fn spawn_with(socket: &Path, git_dir: &Path, extra: &[&str], configure: impl FnOnce(&mut Command)) -> Daemon {
        let mut cmd = Command::new(CAT_BLOBD);
        clean_git_env(&mut cmd);
        cmd.arg("serve").arg("--socket").arg(socket).arg("--git-dir").arg(git_dir).args(extra);
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        configure(&mut cmd);
        Daemon::from_command(cmd, socket)
    }

    /// Starts `cmd` (a `cat-blobd serve` on `socket`, perhaps behind a wrapper) with its stderr piped to the log.
    pub fn from_command(mut cmd: Command, socket: &Path) -> Daemon {
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn cat-blobd serve");
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut stderr = child.stderr.take().expect("stderr");
        let sink = Arc::clone(&log);
        let log_reader = thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Daemon { child, socket: socket.to_owned(), log, log_reader: Some(log_reader), _dir: None }
    }

    pub fn log(&self) -> String {
        String::from_utf8(self.log.lock().unwrap().clone()).expect("the log is UTF-8")
    }

    /// Waits until the log contains `needle`; fails if the daemon exits or `WAIT` passes first.
    pub fn wait_for_log(&mut self, needle: &str) {
        self.wait_for_log_count(needle, 1);
    }

    pub fn wait_for_log_count(&mut self, needle: &str, count: usize) {
        self.wait_for_log_where(&format!("{needle:?} ×{count}"), |log| log.matches(needle).count() >= count);
    }

    /// Waits for the `listening` event (text or JSON log). Not the bare word: a daemon that refuses to start says
    /// "another cat-blobd daemon is listening on …".
    pub fn wait_until_listening(&mut self) {
        self.wait_for_log_where("the listening event", |log| {
            log.contains(" listening socket=") || log.contains("\"event\":\"listening\"")
        });
    }

    /// Waits until `done` holds of the log; fails if the daemon exits first, or after [`WAIT`].
    fn wait_for_log_where(&mut self, what: &str, done: impl Fn(&str) -> bool) {
        let start = Instant::now();
        while !done(&self.log()) {
            if self.child.try_wait().expect("try_wait").is_some() {
                let status = self.wait();
                panic!("the daemon exited ({status}) before logging {what}:\n{}", self.log());
            }
            assert!(start.elapsed() < WAIT, "no {what} in the daemon's log within {WAIT:?}:\n{}", self.log());
            thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn signal(&self, signal: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, signal).expect("signal the daemon");
    }

    /// Waits for the daemon to exit by itself, then for the last of its stderr to reach `log`.
    pub fn wait(&mut self) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                if let Some(reader) = self.log_reader.take() {
                    reader.join().expect("the log reader");
                }
                return status;
            }
            assert!(start.elapsed() < WAIT, "the daemon did not exit within {WAIT:?}:\n{}", self.log());
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// The daemon's `stats` answer as (name, value) pairs.
    pub fn stats(&self) -> Vec<(String, String)> {
        let out = Command::new(CAT_BLOBD).arg("stats").arg("--socket").arg(&self.socket).output().expect("stats");
        assert!(out.status.success(), "cat-blobd stats: {} {}", out.status, escape(&out.stderr));
        String::from_utf8(out.stdout)
            .expect("UTF-8")
            .lines()
            .map(|line| {
                let (name, value) = line.split_once(' ').expect("name value");
                (name.to_owned(), value.to_owned())
            })
            .collect()
    }

    pub fn stat(&self, name: &str) -> u64 {
        let stats = self.stats();
        let value = stats.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no {name} in {stats:?}"));
        value.1.parse().expect("a number")
    }

    /// Polls `stats` until `name` has `value`.
    pub fn wait_for_stat(&self, name: &str, value: u64) {
        let start = Instant::now();
        while self.stat(name) != value {
            assert!(start.elapsed() < WAIT, "{name} never became {value}: {:?}\n{}", self.stats(), self.log());
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Clients

/// `cat-blobd connect --socket SOCKET EXTRA…` with a piped stdin, for tests that drive the frontend's side by hand.
pub fn spawn_connect(socket: &Path, extra: &[&str], stdout: Stdio, stderr: Stdio) -> Child {
    Command::new(CAT_BLOBD)
        .arg("connect")
        .args(extra)
        .arg("--socket")
        .arg(socket)
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .expect("spawn cat-blobd connect")
}

/// A plain client: writes `stream` on the socket (from its own thread), half-closes, reads everything to EOF.
pub fn plain(socket: &Path, stream: Vec<u8>) -> Vec<u8> {
    let conn = UnixStream::connect(socket).expect("connect to the daemon");
    conn.set_read_timeout(Some(WAIT)).unwrap();
    let mut writer = conn.try_clone().unwrap();
    let feeder = thread::spawn(move || {
        let _ = writer.write_all(&stream);
        let _ = writer.shutdown(Shutdown::Write);
    });
    let mut out = Vec::new();
    if let Err(err) = (&conn).read_to_end(&mut out) {
        panic!("plain client: no end of file within {WAIT:?} ({err}); got {} bytes", out.len());
    }
    feeder.join().unwrap();
    out
}

/// `cat-blobd connect --socket S --quiet [--cat-blob-fd=3] <extra>` on `stream`, through the util harness (so fd 3
/// is captured exactly as for a direct run).
pub fn connect(socket: &Path, stream: &[u8], fd3: bool, extra: &[&str]) -> Output {
    let mut run = Run::new(CAT_BLOBD).arg("connect").arg("--socket").arg(socket).arg("--quiet");
    for arg in extra {
        run = run.arg(arg);
    }
    if fd3 {
        run = run.capture_fd3();
    }
    run.stdin(stream).run()
}

/// `cat-blobd --quiet` run directly on `fixture` with the same flags.
pub fn direct(fixture: Fixture, stream: &[u8], fd3: bool, extra: &[&str]) -> Output {
    let mut run = Run::cat_blobd_on(fixture);
    for arg in extra {
        run = run.arg(arg);
    }
    if fd3 {
        run = run.capture_fd3();
    }
    run.stdin(stream).run()
}

/// Joins `thread`, failing the test if it has not finished within `limit`.
pub fn join_within<T>(thread: JoinHandle<T>, limit: Duration, what: &str) -> T {
    let start = Instant::now();
    while !thread.is_finished() {
        assert!(start.elapsed() < limit, "{what}: not done within {limit:?}");
        thread::sleep(Duration::from_millis(5));
    }
    thread.join().expect(what)
}
