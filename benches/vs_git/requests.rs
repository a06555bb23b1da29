//! Which blobs are asked for, in which order: the set (the first N blobs in pack order, or N drawn at random from
//! the whole inventory; optionally only blobs up to a size), the orders, and the request files. `ls` streams come
//! from [`crate::ls`].
//!
//! All blob orders ask for the same set, so they serve the same bytes and their times compare; only the order
//! changes.

use std::collections::HashMap;
use std::fs;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::git;
use crate::inventory::Inventory;
use crate::rng::Rng;

const SHUFFLE_SEED: u64 = 20_250_101;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    Pack,
    History,
    Random,
    /// `ls <commit> <path>` requests over the repository's history (fast-import speakers only; see [`crate::ls`]).
    Ls,
}

impl Order {
    pub fn name(self) -> &'static str {
        match self {
            Order::Pack => "pack",
            Order::History => "history",
            Order::Random => "random",
            Order::Ls => "ls",
        }
    }
}

/// One request stream, as two files: `cat-blob <id>` (or `ls`) lines for fast-import and cat-blobd, bare ids for
/// cat-file.
pub struct Requests {
    pub order: Order,
    /// Request lines in the stream.
    pub requests: usize,
    pub fast_import: PathBuf,
    /// Bare ids for the cat-file tools; `None` where they have no equivalent request (`ls`).
    pub ids: Option<PathBuf>,
    /// The exact number of bytes a correct answer has (`<id> blob <size>\n<payload>\n` each); `None` where only
    /// git knows it (`ls`): the first verified run sets it.
    pub expected_bytes: Option<u64>,
    /// What `--batch-check` writes for the same ids.
    pub expected_header_bytes: Option<u64>,
    /// What the stream holds, when the table's heading does not say it (`ls`).
    pub description: Option<String>,
}

/// How `--count` blobs are chosen from the inventory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Sample {
    /// The first N in pack order: a compact stretch of the pack.
    First,
    /// N drawn at random (seeded) from the whole inventory, kept in pack order: spread over the whole pack.
    Random,
}

/// `count` blobs of at most `max_size` bytes, as indexes into the inventory, in pack order.
pub fn select(inventory: &Inventory, count: usize, max_size: Option<u64>, sample: Sample, seed: u64) -> Vec<usize> {
    let eligible = (0..inventory.blobs.len()).filter(|&i| max_size.is_none_or(|max| inventory.blobs[i].size <= max));
    match sample {
        Sample::First => eligible.take(count).collect(),
        Sample::Random => {
            let mut all: Vec<usize> = eligible.collect();
            let take = count.min(all.len());
            // A partial Fisher–Yates: only the first `take` places are drawn, so 2,000 of 10M cost 2,000 draws.
            let mut rng = Rng::new(seed);
            for i in 0..take {
                let j = i + rng.below(all.len() - i);
                all.swap(i, j);
            }
            all.truncate(take);
            all.sort_unstable();
            all
        }
    }
}

/// Puts `set` in `order` and writes the two request files under `dir`.
pub fn build(git_dir: &Path, inventory: &Inventory, set: &[usize], order: Order, dir: &Path) -> Result<Requests> {
    let blobs = match order {
        Order::Pack => set.to_vec(),
        Order::History => history_order(git_dir, inventory, set)?,
        Order::Random => {
            let mut shuffled = set.to_vec();
            Rng::new(SHUFFLE_SEED).shuffle(&mut shuffled);
            shuffled
        }
        Order::Ls => bail!("ls streams are built by ls::build"),
    };
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let fast_import = dir.join(format!("{}.fast-import", order.name()));
    let ids = dir.join(format!("{}.ids", order.name()));
    write_lines(&fast_import, &blobs, inventory, "cat-blob ")?;
    write_lines(&ids, &blobs, inventory, "")?;
    let expected_bytes = Some(blobs.iter().map(|&i| inventory.response_len(i)).sum());
    let expected_header_bytes = Some(blobs.iter().map(|&i| inventory.header_len(i)).sum());
    let requests = blobs.len();
    let ids = Some(ids);
    Ok(Requests { order, requests, fast_import, ids, expected_bytes, expected_header_bytes, description: None })
}

fn write_lines(path: &Path, blobs: &[usize], inventory: &Inventory, prefix: &str) -> Result<()> {
    let file = fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = BufWriter::new(file);
    for &i in blobs {
        writeln!(out, "{prefix}{}", inventory.oid(i))?;
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(())
}

/// `set` in the order `git rev-list --objects --all` first names each blob (newest history first).
fn history_order(git_dir: &Path, inventory: &Inventory, set: &[usize]) -> Result<Vec<usize>> {
    let wanted: HashMap<&str, usize> = set.iter().map(|&i| (inventory.oid(i), i)).collect();
    let mut child = git::git(git_dir)
        // A partial clone (git.git as fetched here is one) lacks some blobs its trees name: list what is there.
        .args(["rev-list", "--objects", "--all", "--missing=allow-any"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .context("spawning git rev-list --objects --all")?;
    let reader = BufReader::with_capacity(1 << 20, child.stdout.take().expect("piped stdout"));
    let mut placed = vec![false; inventory.blobs.len()];
    let mut order = Vec::with_capacity(set.len());
    for line in reader.lines() {
        let line = line?;
        let oid = line.split(' ').next().unwrap_or("");
        if let Some(&i) = wanted.get(oid)
            && !placed[i]
        {
            placed[i] = true;
            order.push(i);
        }
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("git rev-list --objects --all failed ({status})");
    }
    // Unreachable blobs (none in the generated corpus) go last, in pack order.
    order.extend(set.iter().copied().filter(|&i| !placed[i]));
    Ok(order)
}
