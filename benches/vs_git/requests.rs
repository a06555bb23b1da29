//! Which blobs are asked for, in which order: the inventory of a repository and the three request files.
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
use crate::rng::Rng;

const SHUFFLE_SEED: u64 = 20_250_101;

pub struct Blob {
    pub oid: String,
    pub size: u64,
    /// Delta chain length in the pack (0: stored whole or loose).
    pub depth: u32,
}

pub struct Inventory {
    /// Every blob, in pack order (`--unordered`).
    pub blobs: Vec<Blob>,
    pub pack_bytes: u64,
}

/// Lists every blob with its size and delta depth, in pack order.
pub fn inventory(git_dir: &Path) -> Result<Inventory> {
    let mut child = git::git(git_dir)
        .args([
            "cat-file",
            "--batch-all-objects",
            "--unordered",
            "--batch-check=%(objecttype) %(objectname) %(objectsize) %(objectsize:disk) %(deltabase)",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .context("spawning git cat-file --batch-all-objects")?;
    let reader = BufReader::with_capacity(1 << 20, child.stdout.take().expect("piped stdout"));
    let mut blobs = Vec::new();
    let mut bases: Vec<u64> = Vec::new();
    let mut pack_bytes = 0;
    for line in reader.lines() {
        let line = line?;
        let fields: Vec<&str> = line.split(' ').collect();
        let [kind, oid, size, disk, base] = fields[..] else {
            bail!("unexpected cat-file line {line:?}");
        };
        let disk: u64 = disk.parse()?;
        pack_bytes += disk;
        if kind != "blob" {
            continue;
        }
        blobs.push(Blob { oid: oid.to_string(), size: size.parse()?, depth: 0 });
        bases.push(if base.bytes().all(|b| b == b'0') { 0 } else { key(base)? });
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("git cat-file --batch-all-objects failed ({status})");
    }
    // Blobs are only ever deltified against blobs, so the chains stay within this list.
    let index: HashMap<u64, usize> =
        blobs.iter().enumerate().map(|(i, b)| Ok((key(&b.oid)?, i))).collect::<Result<_>>()?;
    let mut depth: Vec<Option<u32>> = vec![None; blobs.len()];
    for start in 0..blobs.len() {
        let mut chain = Vec::new();
        let mut at = start;
        let mut known;
        loop {
            if let Some(d) = depth[at] {
                known = d;
                break;
            }
            chain.push(at);
            match index.get(&bases[at]) {
                Some(&base) if bases[at] != 0 && chain.len() <= blobs.len() => at = base,
                _ => {
                    // Stored whole, or based on an object outside this list: the last one is the root.
                    known = 0;
                    depth[chain.pop().expect("non-empty chain")] = Some(0);
                    break;
                }
            }
        }
        for &link in chain.iter().rev() {
            known += 1;
            depth[link] = Some(known);
        }
    }
    for (blob, d) in blobs.iter_mut().zip(depth) {
        blob.depth = d.unwrap_or(0);
    }
    Ok(Inventory { blobs, pack_bytes })
}

/// The first 16 hex digits of an object id: unique enough to follow delta chains.
fn key(oid: &str) -> Result<u64> {
    u64::from_str_radix(oid.get(..16).unwrap_or(oid), 16).with_context(|| format!("bad object id {oid:?}"))
}

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
    let expected_bytes = blobs.iter().map(|&i| response_len(&inventory.blobs[i])).sum();
    let expected_header_bytes = blobs.iter().map(|&i| header_len(&inventory.blobs[i])).sum();
    Ok(Requests { order, blobs, fast_import, ids, expected_bytes, expected_header_bytes })
}

/// The bytes of `<oid> blob <size>\n<payload>\n`.
pub fn response_len(blob: &Blob) -> u64 {
    header_len(blob) + blob.size + 1
}

/// The bytes of `<oid> blob <size>\n`, all that `--batch-check` writes.
pub fn header_len(blob: &Blob) -> u64 {
    format!("{} blob {}\n", blob.oid, blob.size).len() as u64
}

fn write_lines(path: &Path, blobs: &[usize], inventory: &Inventory, prefix: &str) -> Result<()> {
    let file = fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = BufWriter::new(file);
    for &i in blobs {
        writeln!(out, "{prefix}{}", inventory.blobs[i].oid)?;
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(())
}

/// `set` in the order `git rev-list --objects --all` first names each blob (newest history first).
fn history_order(git_dir: &Path, inventory: &Inventory, set: &[usize]) -> Result<Vec<usize>> {
    let wanted: HashMap<&str, usize> = set.iter().map(|&i| (inventory.blobs[i].oid.as_str(), i)).collect();
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
