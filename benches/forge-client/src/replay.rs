//! Replays a plan one way, as forge-node.py's Python clients do: one thread per client, each connection's
//! requests one at a time (write, then read the whole answer), each timed from its write to its answer's last byte.

use crate::Options;
use crate::connect;
use crate::plan::{self, Connection};
use crate::pool::Pool;
use crate::stream::Stream;
use anyhow::{Context, Result, bail};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// What one client thread measured: per request (first of its connection, nanoseconds), and the kept answers.
#[derive(Default)]
struct Measured {
    latencies: Vec<(bool, u64)>,
    kept: Vec<u8>,
    /// Nanoseconds this thread spent runnable but waiting for a core (`/proc/thread-self/schedstat`).
    runq_wait_ns: u64,
}

enum Way {
    Pool(Pool),
    Daemon(std::path::PathBuf),
}

pub fn run(options: &Options) -> Result<()> {
    let plan = plan::read(options.plan.as_deref().context("run needs --plan")?)?;
    let out = options.out.as_deref().context("run needs --out")?;
    let way = match options.way.as_deref() {
        Some("pool") => Way::Pool(Pool::new(&options.git, options.pool_max, Duration::from_secs_f64(options.ttl))),
        Some("daemon") => Way::Daemon(options.socket.clone().context("the daemon way needs --socket")?),
        other => bail!("--way pool or daemon, not {other:?}"),
    };
    let way = Arc::new(way);
    let start = Arc::new(Barrier::new(plan.len() + 1));
    let threads: Vec<_> = plan
        .into_iter()
        .map(|connections| {
            let (way, start) = (Arc::clone(&way), Arc::clone(&start));
            std::thread::spawn(move || -> Result<Measured> {
                start.wait();
                client(&way, &connections, Instant::now())
            })
        })
        .collect();
    start.wait();
    let began = Instant::now();
    let measured =
        threads.into_iter().map(|t| t.join().expect("a client thread panicked")).collect::<Result<Vec<_>>>()?;
    let wall = began.elapsed();
    let most = match &*way {
        Way::Pool(pool) => pool.most(),
        Way::Daemon(_) => 0,
    };
    write_results(out, &measured, wall, most)?;
    // The script takes its last memory sample of the pool now, with its processes still alive (as it does for
    // its own Python pool), and closes our stdin when it has.
    println!("done");
    std::io::stdout().flush()?;
    std::io::copy(&mut std::io::stdin(), &mut std::io::sink())?;
    if let Way::Pool(pool) = &*way {
        pool.shutdown();
    }
    Ok(())
}

fn client(way: &Way, connections: &[Connection], began: Instant) -> Result<Measured> {
    let mut measured = Measured::default();
    for conn in connections {
        // A paced connection late on its time opens at once: the lateness is not counted (each request is timed
        // from its own write), which is fair only while the ways keep up with the rate (the script's `busy`).
        if let Some(wait) = (began + conn.at).checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        match way {
            Way::Pool(pool) => {
                let mut proc = pool.checkout(&conn.repo, conn.check)?;
                requests(&mut proc.stream, conn, &mut measured)?;
                pool.checkin(&conn.repo, conn.check, proc);
            }
            Way::Daemon(socket) => {
                let (socket, mut stream) = connect::connect(socket, &conn.repo, conn.check)?;
                requests(&mut stream, conn, &mut measured)?;
                connect::finish(socket, stream)?;
            }
        }
    }
    measured.runq_wait_ns = runq_wait_ns()?;
    Ok(measured)
}

/// Gitaly's requests: `contents <id>` and `info <id>` in turn, each followed by `flush`; or bare ids for
/// `--batch-check`.
fn requests(stream: &mut Stream, conn: &Connection, measured: &mut Measured) -> Result<()> {
    let (mut line, mut answer) = (Vec::with_capacity(64), Vec::new());
    for (i, id) in conn.ids.iter().enumerate() {
        line.clear();
        if !conn.check {
            line.extend_from_slice(if i % 2 == 0 { b"contents " } else { b"info " });
        }
        line.extend_from_slice(id);
        line.extend_from_slice(if conn.check { b"\n" } else { b"\nflush\n" });
        answer.clear();
        let start = Instant::now();
        stream.input.write_all(&line)?;
        read_answer(&mut stream.output, conn.check || i % 2 == 1, &mut answer)?;
        measured.latencies.push((i == 0, start.elapsed().as_nanos() as u64));
        if conn.keep {
            measured.kept.extend_from_slice(&answer);
        }
    }
    Ok(())
}

/// One answer of cat-file: `<id> <type> <size>\n[<bytes>\n]` or `<name> missing\n`, appended to `out`.
fn read_answer(output: &mut BufReader<File>, header_only: bool, out: &mut Vec<u8>) -> Result<()> {
    if output.read_until(b'\n', out)? == 0 {
        bail!("the stream ended before its answer");
    }
    let fields: Vec<&[u8]> = out[..out.len() - 1].split(|&b| b == b' ').collect();
    if header_only || fields.len() != 3 {
        return Ok(());
    }
    let size: usize = std::str::from_utf8(fields[2])?.parse()?;
    let at = out.len();
    out.resize(at + size + 1, 0);
    output.read_exact(&mut out[at..])?;
    Ok(())
}

/// The second field of schedstat: time spent on a run queue waiting to run. A thread of a closed loop on two
/// busy cores waits there after each answer arrives; this says how much of its latency that is, on average.
fn runq_wait_ns() -> Result<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat")?;
    Ok(stat.split_whitespace().nth(1).context("a short schedstat")?.parse()?)
}

fn write_results(out: &Path, measured: &[Measured], wall: Duration, most: usize) -> Result<()> {
    let mut latencies = String::new();
    let mut kept = Vec::new();
    for m in measured {
        for (first, ns) in &m.latencies {
            latencies.push_str(&format!("{} {ns}\n", u8::from(*first)));
        }
        kept.extend_from_slice(&m.kept);
    }
    std::fs::write(out.join("latencies"), latencies)?;
    std::fs::write(out.join("kept"), kept)?;
    let runq: u64 = measured.iter().map(|m| m.runq_wait_ns).sum();
    let summary = format!("wall_s {}\nmost {most}\nrunq_wait_ns {runq}\n", wall.as_secs_f64());
    std::fs::write(out.join("summary"), summary)?;
    Ok(())
}
