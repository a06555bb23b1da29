//! forge-node.py's clients, compiled (issue 29): the harness's Python threads share one GIL and the machine's two
//! cores with the servers they measure, and set much of both ways' p99 themselves. This program replays the plan
//! the script writes (per client thread, its connections: repository, `--batch-check` or not, ids) with the same
//! semantics as the script's Python clients, and times each request from its write to its whole answer read.
//!
//! ```text
//! forge-client run --way pool|daemon --plan FILE --out DIR [--git GIT] [--socket PATH] [--pool-max 100] [--ttl 10]
//! forge-client floor --socket PATH --answers FILE
//! ```
//!
//! `run` writes into DIR: `latencies` (a line `<first> <ns>` per request, `first` 1 for a connection's first
//! request), `kept` (the answers of the connections the plan marks, in plan order) and `summary` (`wall_s`, and
//! `most`, the most pool processes alive at once). `floor` serves the same connect protocol as `cat-blobd serve`
//! from answers held in memory (`git cat-file --batch` output): the least any server could cost this client.

mod connect;
mod floor;
mod plan;
mod pool;
mod replay;
mod stream;

use anyhow::{Context, Result, bail};
use std::path::PathBuf;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        bail!("usage: forge-client run|floor ...");
    };
    let options = Options::parse(rest)?;
    match command.as_str() {
        "run" => replay::run(&options),
        "floor" => floor::serve(
            options.socket.as_deref().context("floor needs --socket")?,
            options.answers.as_deref().context("floor needs --answers")?,
        ),
        other => bail!("unknown command {other:?}: run or floor"),
    }
}

/// Every flag of both commands; each command checks the ones it needs.
#[derive(Debug)]
pub struct Options {
    pub way: Option<String>,
    pub plan: Option<PathBuf>,
    pub out: Option<PathBuf>,
    pub git: PathBuf,
    pub socket: Option<PathBuf>,
    pub answers: Option<PathBuf>,
    pub pool_max: usize,
    pub ttl: f64,
}

impl Options {
    fn parse(args: &[String]) -> Result<Self> {
        let mut options = Options {
            way: None,
            plan: None,
            out: None,
            git: PathBuf::from("git"),
            socket: None,
            answers: None,
            pool_max: 100,
            ttl: 10.0,
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next().with_context(|| format!("{flag} needs a value"))?;
            match flag.as_str() {
                "--way" => options.way = Some(value.clone()),
                "--plan" => options.plan = Some(value.into()),
                "--out" => options.out = Some(value.into()),
                "--git" => options.git = value.into(),
                "--socket" => options.socket = Some(value.into()),
                "--answers" => options.answers = Some(value.into()),
                "--pool-max" => options.pool_max = value.parse()?,
                "--ttl" => options.ttl = value.parse()?,
                _ => bail!("unknown flag {flag}"),
            }
        }
        Ok(options)
    }
}
