//! Running one tool on one request stream: output through a pipe into a byte-counting reader, timed, with the
//! tool's user and system CPU time and peak RSS (see [`crate::usage`]); optionally under `strace -c` (write
//! syscalls); and the ping-pong latency client.

use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::git;
use crate::usage;

/// What a tool is, as `--tools` names it; [`Tool`] adds which git runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    #[value(name = "cat-blobd")]
    CatBlobd,
    #[value(name = "fast-import")]
    FastImport,
    /// `git cat-file --batch` (with `--buffer` in batch runs).
    #[value(name = "cat-file")]
    CatFile,
    /// `cat-blobd cat-file --batch` (with `--buffer` in batch runs), on the same id lists as git cat-file.
    #[value(name = "cat-blobd-cat-file")]
    CatBlobdCatFile,
    /// `git cat-file --batch-check --buffer`: type and size only.
    #[value(name = "cat-file-check")]
    CatFileCheck,
    /// `cat-blobd cat-file --batch-check --buffer`.
    #[value(name = "cat-blobd-cat-file-check")]
    CatBlobdCatFileCheck,
    /// The latency floor: this harness itself, answering every id from replies it holds in memory with one write
    /// each (no lookup, no inflate). No tool answering through a pipe can beat it; it only runs in the latency
    /// test, which always measures it.
    #[value(skip)]
    Floor,
}

impl Kind {
    /// Whether git runs it (once per `--git`), rather than cat-blobd.
    pub fn is_git(self) -> bool {
        matches!(self, Kind::FastImport | Kind::CatFile | Kind::CatFileCheck)
    }

    /// What it writes for each blob: the whole response, or the header line alone.
    pub fn output(self) -> Output {
        match self {
            Kind::CatFileCheck | Kind::CatBlobdCatFileCheck => Output::Header,
            _ => Output::Response,
        }
    }
}

/// The bytes a tool writes per blob: tools with the same output must agree byte for byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// `<oid> blob <size>\n<payload>\n`.
    Response,
    /// `<oid> blob <size>\n`.
    Header,
}

/// One measured program: a kind, and for git's kinds which of the `--git` binaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tool {
    pub kind: Kind,
    /// Index into [`Setup::gits`]; 0 for cat-blobd.
    pub git: usize,
}

/// A git binary to compare against, and its name in the tables.
pub struct Git {
    pub path: PathBuf,
    /// `git --version`'s version, e.g. `2.47.3`.
    pub version: String,
}

/// Tool labels, set once the gits are known: "git fast-import", or "git 2.47.3 fast-import" when several gits run.
static GIT_LABELS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// Names the gits in labels (by version, or by path when two share one) when there is more than one.
pub fn name_gits(gits: &[Git]) {
    let labels = gits
        .iter()
        .map(|git| match gits.len() {
            1 => "git".to_string(),
            _ if gits.iter().filter(|other| other.version == git.version).count() > 1 => {
                format!("git({})", git.path.display())
            }
            _ => format!("git {}", git.version),
        })
        .collect();
    let _ = GIT_LABELS.set(labels);
}

impl Tool {
    pub fn cat_blobd(kind: Kind) -> Tool {
        Tool { kind, git: 0 }
    }

    pub fn label(self) -> String {
        let git = || GIT_LABELS.get().and_then(|labels| labels.get(self.git)).map_or("git", String::as_str);
        match self.kind {
            Kind::CatBlobd => "cat-blobd".to_string(),
            Kind::FastImport => format!("{} fast-import", git()),
            Kind::CatFile => format!("{} cat-file", git()),
            Kind::CatFileCheck => format!("{} cat-file --batch-check", git()),
            Kind::CatBlobdCatFile => "cat-blobd cat-file".to_string(),
            Kind::CatBlobdCatFileCheck => "cat-blobd cat-file --batch-check".to_string(),
            Kind::Floor => "floor (replies from memory)".to_string(),
        }
    }

    /// Whether requests are `cat-blob <id>` lines (else bare ids).
    pub fn speaks_fast_import(self) -> bool {
        matches!(self.kind, Kind::CatBlobd | Kind::FastImport)
    }
}

impl Serialize for Tool {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.label())
    }
}

/// Everything needed to start each tool against the repository.
pub struct Setup {
    pub git_dir: PathBuf,
    /// A throwaway bare repository borrowing the corpus objects: git fast-import writes into its repository.
    pub scratch: PathBuf,
    pub cat_blobd: Option<PathBuf>,
    /// The replies [`Kind::Floor`] answers with (`git cat-file --batch` output for the latency ids).
    pub floor_replies: PathBuf,
    /// The gits to compare against (`--git`, else the `git` on PATH).
    pub gits: Vec<Git>,
    pub cat_blobd_args: Vec<String>,
    pub strace: Option<PathBuf>,
    pub logs: PathBuf,
}

impl Setup {
    /// Creates the scratch repository for git fast-import.
    pub fn prepare_scratch(&self, objects_dir: &Path) -> Result<()> {
        if self.scratch.exists() {
            fs::remove_dir_all(&self.scratch)?;
        }
        let mut init = Command::new("git");
        git::pin_env(&mut init);
        git::output(init.args(["init", "--bare", "-q"]).arg(&self.scratch))?;
        let alternates = self.scratch.join("objects/info/alternates");
        fs::write(&alternates, format!("{}\n", objects_dir.display()))
            .with_context(|| format!("writing {}", alternates.display()))?;
        fs::create_dir_all(&self.logs)?;
        Ok(())
    }

    /// argv of `tool` in batch (`interactive == false`) or ping-pong mode.
    fn argv(&self, tool: Tool, interactive: bool) -> Result<Vec<OsString>> {
        let mut argv: Vec<OsString> = Vec::new();
        if tool.kind.is_git() {
            let git = self.gits.get(tool.git).context("no such git")?;
            let repository = if tool.kind == Kind::FastImport { &self.scratch } else { &self.git_dir };
            argv.extend([git.path.clone().into(), "--git-dir".into(), repository.clone().into()]);
        } else if tool.kind == Kind::Floor {
            argv.push(std::env::current_exe()?.into());
        } else {
            argv.push(self.cat_blobd.as_ref().context("cat-blobd binary not set")?.into());
        }
        match tool.kind {
            Kind::CatBlobd => {
                argv.push("--git-dir".into());
                argv.push(self.git_dir.clone().into());
                argv.push("--quiet".into());
                argv.extend(self.cat_blobd_args.iter().map(OsString::from));
            }
            Kind::FastImport => argv.extend(["fast-import", "--quiet", "--cat-blob-fd=1"].map(OsString::from)),
            // cat-blobd cat-file takes git cat-file's flags only: the repository comes from GIT_DIR (see `command`).
            Kind::CatFile | Kind::CatBlobdCatFile => argv.extend(["cat-file", "--batch"].map(OsString::from)),
            Kind::CatFileCheck | Kind::CatBlobdCatFileCheck => {
                argv.extend(["cat-file", "--batch-check"].map(OsString::from))
            }
            Kind::Floor => {}
        }
        if !interactive && !tool.speaks_fast_import() {
            argv.push("--buffer".into());
        }
        Ok(argv)
    }

    fn command(&self, argv: &[OsString]) -> Command {
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]);
        git::pin_env(&mut cmd);
        // For `cat-blobd cat-file`, which takes git cat-file's flags only; the other tools name their
        // repository with --git-dir, which wins.
        cmd.env("GIT_DIR", &self.git_dir);
        cmd.env(FLOOR_REPLIES, &self.floor_replies);
        cmd
    }

    fn log_path(&self, tool: Tool) -> PathBuf {
        self.logs.join(format!("{}.stderr", tool.label().replace([' ', '/', '(', ')'], "-")))
    }
}

/// How one batch run is observed.
#[derive(Clone, Copy, PartialEq)]
pub enum Probe {
    /// Count bytes only: the timed runs.
    Time,
    /// Also checksum the output: the (untimed) verification run.
    Checksum,
    /// Under `strace -f -c -e trace=write,writev`.
    Strace,
}

#[derive(Clone, Debug, Serialize)]
pub struct Measurement {
    pub wall_secs: f64,
    pub user_secs: Option<f64>,
    pub sys_secs: Option<f64>,
    pub max_rss_kib: Option<u64>,
    pub bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checksum: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_calls: Option<u64>,
}

/// Runs `tool` with stdin from `input` and stdout into a pipe that the harness drains.
pub fn batch(setup: &Setup, tool: Tool, input: &Path, probe: Probe) -> Result<Measurement> {
    let report = setup.logs.join("probe.out");
    let _ = fs::remove_file(&report);
    let mut argv = setup.argv(tool, false)?;
    if probe == Probe::Strace {
        let strace = setup.strace.as_ref().context("strace not found")?;
        argv = wrap(strace, &["-f", "-c", "-e", "trace=write,writev", "-o"], &report, argv);
    } else {
        argv = usage::wrap(argv)?;
    }
    let stdin = fs::File::open(input).with_context(|| format!("opening {}", input.display()))?;
    let log = setup.log_path(tool);
    let started = Instant::now();
    let mut child = setup
        .command(&argv)
        .env(usage::USAGE_REPORT, &report)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(fs::File::create(&log)?)
        .spawn()
        .with_context(|| format!("spawning {:?}", argv[0]))?;
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut checksum = (probe == Probe::Checksum).then(Checksum::new);
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        match stdout.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                bytes += n as u64;
                if let Some(sum) = &mut checksum {
                    sum.update(&buf[..n]);
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e).context("reading the tool's output"),
        }
    }
    let status = child.wait()?;
    let wall_secs = started.elapsed().as_secs_f64();
    if !status.success() {
        bail!("{} failed ({status}) on {}: {}", tool.label(), input.display(), tail(&log));
    }
    let usage = if probe == Probe::Strace { None } else { Some(usage::read(&report)?) };
    Ok(Measurement {
        wall_secs,
        user_secs: usage.map(|u| u.user_secs),
        sys_secs: usage.map(|u| u.sys_secs),
        max_rss_kib: usage.map(|u| u.max_rss_kib),
        bytes,
        checksum: checksum.map(Checksum::finish),
        write_calls: if probe == Probe::Strace { Some(strace_writes(&report)?) } else { None },
    })
}

fn wrap(program: &Path, args: &[&str], report: &Path, inner: Vec<OsString>) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec![program.into()];
    argv.extend(args.iter().map(OsString::from));
    argv.push(report.into());
    argv.extend(inner);
    argv
}

/// Sums the `calls` column of the write and writev rows of an `strace -c` summary.
fn strace_writes(report: &Path) -> Result<u64> {
    let text = fs::read_to_string(report).with_context(|| format!("reading {}", report.display()))?;
    let mut calls = 0;
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let Some(&name) = fields.last()
            && (name == "write" || name == "writev")
            && fields.len() >= 5
        {
            calls += fields[3].parse::<u64>().with_context(|| format!("strace line {line:?}"))?;
        }
    }
    Ok(calls)
}

fn tail(log: &Path) -> String {
    let text = fs::read_to_string(log).unwrap_or_default();
    let start = text.len().saturating_sub(2000);
    text.get(start..).unwrap_or(&text).trim().to_string()
}

/// Per-request round trips of the ping-pong client, and (under strace) write calls per response.
#[derive(Clone, Debug, Serialize)]
pub struct Latency {
    pub requests: usize,
    pub p50_us: f64,
    pub p99_us: f64,
    pub mean_us: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes_per_response: Option<f64>,
}

/// A frontend that sends one request, reads the whole reply (header, then size + 1 bytes), then sends the next.
/// The first `warmup` ids are asked but not timed. Returns per-request times in microseconds.
pub fn ping_pong(setup: &Setup, tool: Tool, ids: &[&str], warmup: usize, strace: bool) -> Result<(Vec<f64>, u64)> {
    let report = setup.logs.join("probe.out");
    let _ = fs::remove_file(&report);
    let mut argv = setup.argv(tool, true)?;
    if strace {
        let program = setup.strace.as_ref().context("strace not found")?;
        argv = wrap(program, &["-f", "-c", "-e", "trace=write,writev", "-o"], &report, argv);
    }
    let log = setup.log_path(tool);
    let mut child = setup
        .command(&argv)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(fs::File::create(&log)?)
        .spawn()
        .with_context(|| format!("spawning {:?}", argv[0]))?;
    // A tool that waits for more input before answering would hang the client: kill it after a deadline.
    let _watchdog = Watchdog::start(child.id(), PING_PONG_DEADLINE);
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = BufReader::with_capacity(1 << 16, child.stdout.take().expect("piped stdout"));
    let prefix = if tool.speaks_fast_import() { "cat-blob " } else { "" };
    let mut times = Vec::with_capacity(ids.len());
    let mut header = Vec::new();
    let mut payload = Vec::new();
    for (n, id) in ids.iter().enumerate() {
        let request = format!("{prefix}{id}\n");
        let started = Instant::now();
        let exchange = (|| -> Result<()> {
            stdin.write_all(request.as_bytes())?;
            header.clear();
            stdout.read_until(b'\n', &mut header)?;
            let text = std::str::from_utf8(&header).unwrap_or("");
            let mut fields = text.split_whitespace();
            let (Some(oid), Some("blob"), Some(size)) = (fields.next(), fields.next(), fields.next()) else {
                bail!("unexpected reply header {text:?} to {request:?}");
            };
            if oid != *id {
                bail!("reply for {oid} to a request for {id}");
            }
            payload.resize(size.parse::<usize>()? + 1, 0);
            stdout.read_exact(&mut payload)?;
            if payload.last() != Some(&b'\n') {
                bail!("reply to {id} does not end with a newline");
            }
            Ok(())
        })();
        let elapsed = started.elapsed();
        if let Err(e) = exchange {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e.context(format!("{} ping-pong: {}", tool.label(), tail(&log))));
        }
        if n >= warmup {
            times.push(elapsed.as_secs_f64() * 1e6);
        }
    }
    drop(stdin);
    let status = child.wait()?;
    if !status.success() {
        bail!("{} failed ({status}) in ping-pong: {}", tool.label(), tail(&log));
    }
    let writes = if strace { strace_writes(&report)? } else { 0 };
    Ok((times, writes))
}

const PING_PONG_DEADLINE: Duration = Duration::from_secs(120);

/// Kills a process (by `kill -KILL <pid>`) unless dropped before the deadline.
struct Watchdog {
    done: Option<mpsc::Sender<()>>,
}

impl Watchdog {
    fn start(pid: u32, deadline: Duration) -> Watchdog {
        let (done, wait) = mpsc::channel::<()>();
        thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(deadline) {
                eprintln!("vs_git: process {pid} did not answer within {deadline:?}; killing it");
                let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            }
        });
        Watchdog { done: Some(done) }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            let _ = done.send(());
        }
    }
}

/// A cheap running checksum of a byte stream, independent of how reads split it.
pub struct Checksum {
    lanes: [u64; 4],
    pending: [u8; 32],
    filled: usize,
    len: u64,
}

impl Checksum {
    const PRIME: u64 = 0x9E37_79B1_85EB_CA87;

    pub fn new() -> Checksum {
        Checksum { lanes: [1, 2, 3, 4], pending: [0; 32], filled: 0, len: 0 }
    }

    pub fn update(&mut self, mut data: &[u8]) {
        self.len += data.len() as u64;
        if self.filled > 0 {
            let take = (32 - self.filled).min(data.len());
            self.pending[self.filled..self.filled + take].copy_from_slice(&data[..take]);
            self.filled += take;
            data = &data[take..];
            if self.filled < 32 {
                return;
            }
            let block = self.pending;
            self.block(&block);
            self.filled = 0;
        }
        let mut blocks = data.chunks_exact(32);
        for block in &mut blocks {
            self.block(block);
        }
        let rest = blocks.remainder();
        self.pending[..rest.len()].copy_from_slice(rest);
        self.filled = rest.len();
    }

    fn block(&mut self, block: &[u8]) {
        for (lane, word) in self.lanes.iter_mut().zip(block.chunks_exact(8)) {
            let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            *lane = (*lane ^ word).wrapping_mul(Self::PRIME).rotate_left(29);
        }
    }

    pub fn finish(mut self) -> u64 {
        let mut last = [0u8; 32];
        last[..self.filled].copy_from_slice(&self.pending[..self.filled]);
        self.block(&last);
        let mut h = self.len;
        for lane in self.lanes {
            h = (h ^ lane).wrapping_mul(Self::PRIME).rotate_left(31);
        }
        h
    }
}

/// Set for the harness's own [`Kind::Floor`] process: the file of replies it answers from.
pub const FLOOR_REPLIES: &str = "VS_GIT_FLOOR_REPLIES";

/// [`Kind::Floor`]'s loop: `git cat-file --batch` replies read from `replies` are held in memory, and each
/// request line (`<id>` or `cat-blob <id>`) is answered with its reply in one `write` on stdout.
pub fn floor_responder(replies: &Path) -> Result<()> {
    let all = fs::read(replies).with_context(|| format!("reading {}", replies.display()))?;
    let mut by_id = std::collections::HashMap::new();
    let mut rest = &all[..];
    while let Some(end) = rest.iter().position(|&b| b == b'\n') {
        let header = std::str::from_utf8(&rest[..end])?;
        let fields: Vec<&str> = header.split(' ').collect();
        let [id, _, size] = fields[..] else { bail!("unexpected reply header {header:?}") };
        let len = end + 1 + size.parse::<usize>()? + 1;
        by_id.insert(id.as_bytes().to_vec(), &rest[..len]);
        rest = &rest[len..];
    }
    let mut stdin = BufReader::new(std::io::stdin().lock());
    let mut stdout = std::io::stdout().lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        if stdin.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        let id = line.strip_suffix(b"\n").unwrap_or(&line);
        let id = id.strip_prefix(b"cat-blob ").unwrap_or(id);
        let reply = by_id.get(id).with_context(|| format!("no reply for {:?}", String::from_utf8_lossy(id)))?;
        // `Stdout` is line-buffered: a whole reply given at once goes out in one `write`.
        stdout.write_all(reply)?;
        stdout.flush()?;
    }
}
