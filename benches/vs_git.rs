//! `cargo bench --bench vs_git`: cat-blobd against `git fast-import --cat-blob-fd` and `git cat-file --batch
//! --buffer` on the same request streams, every output through a pipe into a byte-counting reader.
//!
//! Data flow: [`corpus`] (or `--git-dir`) → [`inventory`] (every blob, cached) → [`requests`] (the blob set, three
//! orders, request files) and [`ls`] (`ls` requests over the history) → [`run`] (one verified run per tool, then
//! timed runs alternating A B C, strace, ping-pong latency) → [`report`] (table, JSON, SVG under
//! `target/bench-results/`). See benches/README.md.

#[path = "vs_git/corpus.rs"]
mod corpus;
#[path = "vs_git/git.rs"]
mod git;
#[path = "vs_git/inventory.rs"]
mod inventory;
#[path = "vs_git/ls.rs"]
mod ls;
#[path = "vs_git/report.rs"]
mod report;
#[path = "vs_git/requests.rs"]
mod requests;
#[path = "vs_git/rng.rs"]
mod rng;
#[path = "vs_git/run.rs"]
mod run;
#[path = "vs_git/usage.rs"]
mod usage;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};

use report::{LatencyResult, Meta, OrderResult, Report};
use requests::{Order, Requests, Sample};
use rng::Rng;
use run::{Git, Kind, Latency, Output, Probe, Setup, Tool};

/// Requests not timed at the start of each ping-pong session (process start-up, index loading).
const LATENCY_WARMUP: usize = 50;
/// Blobs up to this size are "small" for the latency test.
const LATENCY_MAX_SIZE: u64 = 16 << 10;

#[derive(Parser)]
#[command(name = "vs_git", about = "cat-blobd vs git fast-import and git cat-file, through a pipe")]
struct Args {
    /// Repository to read (e.g. a clone of linux.git); default: the generated corpus under target/bench-corpus/.
    #[arg(long, value_name = "DIR")]
    git_dir: Option<PathBuf>,
    /// Blobs per request stream (chosen by --sample), or `all`; also the number of `ls` requests
    /// [default: 100000; --quick: 2000].
    #[arg(long, value_name = "N|all", value_parser = parse_count)]
    count: Option<usize>,
    /// Only blobs of at most this many bytes (e.g. 4096: small-object runs).
    #[arg(long, value_name = "BYTES")]
    max_size: Option<u64>,
    /// Which N blobs: the first in pack order (a compact stretch of the pack), or N at random from the whole
    /// inventory (spread over the whole pack).
    #[arg(long, value_enum, default_value = "first")]
    sample: Sample,
    /// Seed of `--sample random` and of the `ls` requests.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Timed runs per tool and order [default: 5; --quick: 3].
    #[arg(long, value_name = "R")]
    runs: Option<usize>,
    /// Request orders to measure; `ls` sends `ls <commit> <path>` requests to the fast-import front ends.
    #[arg(long, value_delimiter = ',', default_value = "pack,history,random")]
    orders: Vec<Order>,
    /// Tools to run; the first of them that is cat-blobd, else the first listed, is the ratio baseline. git's tools
    /// run once per `--git`.
    #[arg(long, value_delimiter = ',', default_value = "cat-blobd,cat-blobd-cat-file,fast-import,cat-file")]
    tools: Vec<Kind>,
    /// A git binary to compare against (repeatable, e.g. the installed git and one built from git's current
    /// source) [default: `git` on PATH].
    #[arg(long, value_name = "PATH")]
    git: Vec<PathBuf>,
    /// Small blobs asked one at a time for the latency figures (0: skip) [default: 2000; --quick: 300].
    #[arg(long, value_name = "N")]
    latency: Option<usize>,
    /// Extra argument for cat-blobd (repeatable), e.g. --cat-blobd-arg=--threads --cat-blobd-arg=1.
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    cat_blobd_arg: Vec<String>,
    /// Skip the strace runs even when strace is installed.
    #[arg(long)]
    no_strace: bool,
    /// Smoke run: the small generated corpus, 2,000 ids, 3 runs.
    #[arg(long)]
    quick: bool,
    /// Read the linux.git-scale stand-in instead of the generated corpus: 10,000,000 small blobs in depth-50
    /// chains, built once by benches/linux-scale.sh under target/bench-corpus/linux-scale/ (about 5 minutes,
    /// 4 GB of disk).
    #[arg(long, conflicts_with_all = ["git_dir", "quick"])]
    linux_scale: bool,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// The linux.git-scale stand-in's repository, built by benches/linux-scale.sh the first time.
fn linux_scale(target: &Path) -> Result<PathBuf> {
    let dir = target.join("bench-corpus/linux-scale");
    if !dir.join("COMPLETE").exists() {
        eprintln!("building the linux-scale stand-in in {} (about 5 minutes)", dir.display());
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/linux-scale.sh");
        let status = std::process::Command::new("bash").arg(script).arg(&dir).status()?;
        if !status.success() {
            bail!("benches/linux-scale.sh failed: {status}");
        }
    }
    Ok(dir.join("repo.git"))
}

fn parse_count(text: &str) -> Result<usize, String> {
    if text == "all" {
        return Ok(usize::MAX);
    }
    text.replace('_', "").parse().map_err(|e| format!("{e}"))
}

fn main() -> ExitCode {
    // First: the wrapper's environment also has the floor's variable, which every tool gets.
    if let Some(report) = std::env::var_os(usage::USAGE_REPORT) {
        return usage::wrapper(Path::new(&report)).unwrap_or_else(|e| {
            eprintln!("vs_git usage wrapper: error: {e:#}");
            ExitCode::FAILURE
        });
    }
    if let Some(replies) = std::env::var_os(run::FLOOR_REPLIES) {
        return match run::floor_responder(Path::new(&replies)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("vs_git floor: error: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    match bench(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vs_git: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn bench(args: Args) -> Result<()> {
    let target = target_dir();
    let count = args.count.unwrap_or(if args.quick { 2_000 } else { 100_000 }).max(1);
    let runs = args.runs.unwrap_or(if args.quick { 3 } else { 5 }).max(1);
    let latency_count = args.latency.unwrap_or(if args.quick { 300 } else { 2_000 });
    let gits = gits(&args.git)?;
    run::name_gits(&gits);
    let mut tools: Vec<Tool> = Vec::new();
    for &kind in &args.tools {
        let of_kind: Vec<Tool> = match kind.is_git() {
            true => (0..gits.len()).map(|git| Tool { kind, git }).collect(),
            false => vec![Tool::cat_blobd(kind)],
        };
        for tool in of_kind {
            if !tools.contains(&tool) {
                tools.push(tool);
            }
        }
    }
    let baseline = tools.iter().copied().find(|t| t.kind == Kind::CatBlobd).unwrap_or(tools[0]);

    // The binary under test first: fail before a long corpus build, not after.
    let cat_blobd = if tools.iter().any(|t| !t.kind.is_git()) { Some(locate_cat_blobd(&target)?) } else { None };

    let (git_dir, corpus) = match &args.git_dir {
        Some(dir) => (absolute_git_dir(dir)?, None),
        None if args.linux_scale => (absolute_git_dir(&linux_scale(&target)?)?, None),
        None => {
            let shape = if args.quick { &corpus::SMALL } else { &corpus::FULL };
            let corpus = corpus::ensure(&target, shape)?;
            let info = &corpus.info;
            eprintln!(
                "corpus {} ({}): {} blobs, {:.1} MB of blobs in a {:.1} MB pack, {} commits, delta depth max {} mean {:.1}; \
                 generated in {:.0} s (history {:.0} s, repack {:.0} s)",
                info.tag,
                if corpus.reused { "cached" } else { "new" },
                info.blobs,
                info.blob_bytes as f64 / 1e6,
                info.pack_bytes as f64 / 1e6,
                info.commits,
                info.max_depth,
                info.mean_depth,
                info.total_secs,
                info.stream_secs,
                info.repack_secs,
            );
            (absolute_git_dir(&corpus.git_dir)?, Some(corpus.info))
        }
    };

    let work = target.join("bench-work");
    let inventory = inventory::load(&git_dir, &work.join("inventory"))?;
    if inventory.blobs.is_empty() {
        bail!("{} has no blobs", git_dir.display());
    }
    let eligible_blobs = match args.max_size {
        Some(max) => inventory.blobs.iter().filter(|b| b.size <= max).count(),
        None => inventory.blobs.len(),
    };
    let set = requests::select(&inventory, count, args.max_size, args.sample, args.seed);
    if set.is_empty() {
        bail!("{} has no blobs of at most {} bytes", git_dir.display(), args.max_size.unwrap_or(0));
    }
    let mut streams = Vec::new();
    for &order in &args.orders {
        let dir = work.join("requests");
        streams.push(match order {
            Order::Ls => ls::build(&git_dir, count, args.seed, &dir)?,
            _ => requests::build(&git_dir, &inventory, &set, order, &dir)?,
        });
    }

    let objects = String::from_utf8(git::output(git::git(&git_dir).args(["rev-parse", "--git-path", "objects"]))?)?;
    let objects = git_dir.join(objects.trim());
    let setup = Setup {
        git_dir: git_dir.clone(),
        scratch: work.join("fast-import-scratch.git"),
        cat_blobd: cat_blobd.clone(),
        floor_replies: work.join("floor-replies"),
        gits,
        cat_blobd_args: args.cat_blobd_arg.clone(),
        strace: if args.no_strace { None } else { which("strace") },
        logs: work.join("logs"),
    };
    setup.prepare_scratch(&objects)?;
    if setup.strace.is_none() && !args.no_strace {
        eprintln!("note: strace not found: no syscall counts");
    }

    let load_before = load_average();
    let per_tool = runs + 1 + usize::from(setup.strace.is_some());
    let steps: usize = streams.iter().map(|s| tools.iter().filter(|&&t| serves(s, t)).count() * per_tool).sum();
    let bar = ProgressBar::new(steps as u64).with_style(
        ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} {msg} ({elapsed})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let mut batch = Vec::new();
    for stream in &streams {
        batch.push(measure_order(&setup, &tools, stream, runs, &bar)?);
    }
    bar.finish_and_clear();

    let mut latency = Vec::new();
    if latency_count > 0 {
        let mut small: Vec<&str> =
            set.iter().filter(|&&i| inventory.blobs[i].size <= LATENCY_MAX_SIZE).map(|&i| inventory.oid(i)).collect();
        Rng::new(7).shuffle(&mut small);
        small.truncate(latency_count + LATENCY_WARMUP);
        if small.len() > LATENCY_WARMUP {
            write_floor_replies(&setup, &small)?;
            let floor = Tool::cat_blobd(Kind::Floor);
            for &tool in tools.iter().filter(|t| t.kind.output() == Output::Response).chain([&floor]) {
                eprintln!("latency: {} ping-pong over {} small blobs", tool.label(), small.len() - LATENCY_WARMUP);
                latency.push(measure_latency(&setup, tool, &small)?);
            }
        }
    }

    let payload_bytes = set.iter().map(|&i| inventory.blobs[i].size).sum();
    let response_bytes = set.iter().map(|&i| inventory.response_len(i)).sum();
    let mut report = Report {
        meta: Meta {
            git_dir: git_dir.display().to_string(),
            corpus,
            git_versions: setup.gits.iter().map(|g| format!("{} ({})", g.version, g.path.display())).collect(),
            cat_blobd: cat_blobd.map(|p| p.display().to_string()),
            cat_blobd_args: args.cat_blobd_arg.clone(),
            baseline,
            requests: set.len(),
            sample: args.sample,
            max_size: args.max_size,
            seed: args.seed,
            eligible_blobs,
            inventory_blobs: inventory.blobs.len(),
            runs,
            payload_bytes,
            response_bytes,
            max_depth_requested: set.iter().map(|&i| inventory.blobs[i].depth).max().unwrap_or(0),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            load_before,
            load_after: load_average(),
            unix_time: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
            user_sys_rss: true,
            strace: setup.strace.is_some(),
        },
        batch,
        latency,
    };
    report::fill_ratios(&mut report);
    let table = report::table(&report);
    print!("{table}");
    for path in report::save(&report, &target.join("bench-results"), &table)? {
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// One order: a checksummed warm-up run per tool (all must agree), then `runs` timed rounds A B C, then strace.
/// Tools with no request for the stream (cat-file on `ls`) sit it out.
fn measure_order(
    setup: &Setup,
    tools: &[Tool],
    stream: &Requests,
    runs: usize,
    bar: &ProgressBar,
) -> Result<OrderResult> {
    let tools: Vec<Tool> = tools.iter().copied().filter(|&t| serves(stream, t)).collect();
    let order = stream.order.name();
    let mut expected = Expected { response: stream.expected_bytes, header: stream.expected_header_bytes };
    verify(setup, &tools, stream, &mut expected, bar)?;

    let mut measured: Vec<Vec<run::Measurement>> = vec![Vec::new(); tools.len()];
    for round in 0..runs {
        for (slot, &tool) in tools.iter().enumerate() {
            step(bar, format!("{order}: {} run {}/{runs}", tool.label(), round + 1));
            let m = run::batch(setup, tool, input(stream, tool), Probe::Time)?;
            expected.check(stream, tool, m.bytes)?;
            measured[slot].push(m);
            bar.inc(1);
        }
    }

    let mut results = Vec::new();
    for (slot, &tool) in tools.iter().enumerate() {
        let write_calls = if setup.strace.is_some() {
            step(bar, format!("{order}: {} strace", tool.label()));
            let m = run::batch(setup, tool, input(stream, tool), Probe::Strace)?;
            expected.check(stream, tool, m.bytes)?;
            bar.inc(1);
            m.write_calls
        } else {
            None
        };
        let runs = std::mem::take(&mut measured[slot]);
        results.push(report::summarise(tool, runs, stream.requests, write_calls));
    }
    let description = stream.description.clone();
    Ok(OrderResult { order: stream.order, requests: stream.requests, description, tools: results })
}

/// One checksummed, untimed run per tool: tools that write the same kind of output must write the same bytes.
fn verify(setup: &Setup, tools: &[Tool], stream: &Requests, expected: &mut Expected, bar: &ProgressBar) -> Result<()> {
    let order = stream.order.name();
    let mut references: Vec<(Output, Tool, u64)> = Vec::new();
    for &tool in tools {
        step(bar, format!("{order}: {} verify", tool.label()));
        let m = run::batch(setup, tool, input(stream, tool), Probe::Checksum)?;
        expected.check(stream, tool, m.bytes)?;
        let sum = m.checksum.expect("checksummed run");
        match references.iter().find(|r| r.0 == tool.kind.output()).map(|r| (r.1, r.2)) {
            None => references.push((tool.kind.output(), tool, sum)),
            Some((first, expected)) if expected != sum => bail!(
                "WRONG OUTPUT: {} and {} wrote the same number of bytes with different contents for the {order}-order \
                 stream (checksums {expected:016x} vs {sum:016x}; request file {})",
                first.label(),
                tool.label(),
                input(stream, tool).display()
            ),
            Some(_) => {}
        }
        bar.inc(1);
    }
    Ok(())
}

/// Whether `tool` has a request for `stream`: the cat-file tools have none for `ls`.
fn serves(stream: &Requests, tool: Tool) -> bool {
    stream.ids.is_some() || tool.speaks_fast_import()
}

/// The request file `tool` reads: `cat-blob`/`ls` lines, or bare ids.
fn input(stream: &Requests, tool: Tool) -> &Path {
    match &stream.ids {
        Some(ids) if !tool.speaks_fast_import() => ids,
        _ => &stream.fast_import,
    }
}

/// The bytes each kind of output must have: known from the inventory, or (`ls`) set by the first verified run.
struct Expected {
    response: Option<u64>,
    header: Option<u64>,
}

impl Expected {
    fn check(&mut self, stream: &Requests, tool: Tool, bytes: u64) -> Result<()> {
        let slot = match tool.kind.output() {
            Output::Response => &mut self.response,
            Output::Header => &mut self.header,
        };
        let expected = *slot.get_or_insert(bytes);
        if bytes != expected {
            bail!(
                "WRONG OUTPUT: {} wrote {bytes} bytes for the {}-order stream, expected {expected} (request file {})",
                tool.label(),
                stream.order.name(),
                input(stream, tool).display()
            );
        }
        Ok(())
    }
}

/// Shows what runs next: on the bar, or as a plain line when stderr is not a terminal (the bar is hidden then).
fn step(bar: &ProgressBar, message: String) {
    if bar.is_hidden() {
        eprintln!("[{}/{}] {message}", bar.position() + 1, bar.length().unwrap_or(0));
    }
    bar.set_message(message);
}

/// What [`Kind::Floor`] answers: `git cat-file --batch`'s replies for `ids`.
fn write_floor_replies(setup: &Setup, ids: &[&str]) -> Result<()> {
    let ids_path = setup.floor_replies.with_extension("ids");
    std::fs::write(&ids_path, ids.iter().map(|id| format!("{id}\n")).collect::<String>())?;
    let stdin = std::fs::File::open(&ids_path)?.into();
    let replies = git::output_from(git::git(&setup.git_dir).args(["cat-file", "--batch"]), stdin)?;
    std::fs::write(&setup.floor_replies, replies).with_context(|| format!("writing {}", setup.floor_replies.display()))
}

fn measure_latency(setup: &Setup, tool: Tool, ids: &[&str]) -> Result<LatencyResult> {
    let (mut times, _) = run::ping_pong(setup, tool, ids, LATENCY_WARMUP, false)?;
    times.sort_by(f64::total_cmp);
    let writes_per_response = if setup.strace.is_some() {
        let sample = &ids[..ids.len().min(LATENCY_WARMUP + 500)];
        let (_, writes) = run::ping_pong(setup, tool, sample, 0, true)?;
        Some(writes as f64 / sample.len() as f64)
    } else {
        None
    };
    Ok(LatencyResult {
        tool,
        latency: Latency {
            requests: times.len(),
            p50_us: report::percentile(&times, 0.50),
            p99_us: report::percentile(&times, 0.99),
            mean_us: times.iter().sum::<f64>() / times.len().max(1) as f64,
            writes_per_response,
        },
        p50_ratio_to_baseline: f64::NAN,
    })
}

/// `$CARGO_TARGET_DIR`, else `target/` of this package.
fn target_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => manifest.join(dir),
        None => manifest.join("target"),
    }
}

/// `$CAT_BLOBD`, else the binary cargo built for this bench, else `target/release/cat-blobd`.
fn locate_cat_blobd(target: &Path) -> Result<PathBuf> {
    let path = match std::env::var_os("CAT_BLOBD") {
        Some(path) => PathBuf::from(path),
        None => option_env!("CARGO_BIN_EXE_cat-blobd")
            .map(PathBuf::from)
            .unwrap_or_else(|| target.join("release/cat-blobd")),
    };
    if !path.is_file() {
        bail!(
            "cat-blobd not found at {} (run `cargo build --release`, set CAT_BLOBD, or measure git alone with \
             --tools fast-import,cat-file)",
            path.display()
        );
    }
    Ok(path)
}

/// The `--git` binaries (default: `git` on PATH), each with its version.
fn gits(paths: &[PathBuf]) -> Result<Vec<Git>> {
    let paths = if paths.is_empty() { vec![PathBuf::from("git")] } else { paths.to_vec() };
    paths
        .into_iter()
        .map(|path| {
            let version = git::version(&path)?;
            Ok(Git { path, version })
        })
        .collect()
}

fn absolute_git_dir(dir: &Path) -> Result<PathBuf> {
    let mut cmd = Command::new("git");
    git::pin_env(&mut cmd);
    let out = git::output(cmd.arg("-C").arg(dir).args(["rev-parse", "--absolute-git-dir"]))
        .with_context(|| format!("{} is not a git repository", dir.display()))?;
    Ok(PathBuf::from(String::from_utf8(out)?.trim()))
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|dir| Path::new(dir).join(program)).find(|path| path.is_file())
}

/// The 1-minute load average (`-` where /proc is missing).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "-".to_string())
}
