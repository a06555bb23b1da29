//! Which blobs are asked for, in which order: the set and the three request files.
//!
//! All three orders ask for the same set (the first N blobs in pack order), so they serve the same bytes and
//! their times compare; only the order changes.

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
}

impl Order {
    pub fn name(self) -> &'static str {
        match self {
            Order::Pack => "pack",
            Order::History => "history",
            Order::Random => "random",
        }
    }
}

/// One request stream, as two files: `cat-blob <id>` lines for fast-import and cat-blobd, bare ids for cat-file.
pub struct Requests {
    pub order: Order,
    /// Indexes into the inventory, in request order.
    pub blobs: Vec<usize>,
    pub fast_import: PathBuf,
    pub ids: PathBuf,
    /// The exact number of bytes a correct answer has: `<id> blob <size>\n<payload>\n` each.
    pub expected_bytes: u64,
    /// What `--batch-check` writes for the same ids.
    pub expected_header_bytes: u64,
}

/// The first `count` blobs in pack order, as indexes into the inventory.
pub fn select(inventory: &Inventory, count: usize) -> Vec<usize> {
    (0..inventory.blobs.len().min(count)).collect()
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
    };
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let fast_import = dir.join(format!("{}.fast-import", order.name()));
    let ids = dir.join(format!("{}.ids", order.name()));
    write_lines(&fast_import, &blobs, inventory, "cat-blob ")?;
    write_lines(&ids, &blobs, inventory, "")?;
    let expected_bytes = blobs.iter().map(|&i| inventory.response_len(i)).sum();
    let expected_header_bytes = blobs.iter().map(|&i| inventory.header_len(i)).sum();
    Ok(Requests { order, blobs, fast_import, ids, expected_bytes, expected_header_bytes })
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
