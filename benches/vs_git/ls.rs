//! `ls <commit> <path>` request streams for the fast-import front ends: seeded random (commit, path) pairs over a
//! repository's history, most of them files, some directories and some paths that do not exist.
//!
//! git fast-import answers `ls` from the tree of each commit it is given, so the commits are spread over the whole
//! history (not only the tips), and the paths are drawn from each commit's own tree. What a correct reply is, only
//! git knows: the stream has no expected byte count, and the verified runs compare every tool's bytes with the
//! first one's.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::git;
use crate::requests::{Order, Requests};
use crate::rng::Rng;

/// Commits to ask about, evenly spaced over `git rev-list --all`.
const COMMITS: usize = 40;
/// Paths kept per commit (a random sample of its tree): a linux-sized tree has 80,000.
const PATHS_PER_COMMIT: usize = 5_000;

/// One commit's tree, sampled.
struct Tree {
    commit: String,
    files: Vec<Vec<u8>>,
    dirs: Vec<Vec<u8>>,
}

/// What a request asks for, counted for the description.
#[derive(Default)]
struct Mix {
    files: usize,
    dirs: usize,
    missing: usize,
}

/// Writes `count` `ls` requests (at most one per sampled path) to `<dir>/ls.fast-import`.
pub fn build(git_dir: &Path, count: usize, seed: u64, dir: &Path) -> Result<Requests> {
    let mut rng = Rng::new(seed);
    let mut trees = Vec::new();
    for commit in spread_commits(git_dir)? {
        let tree = sample_tree(git_dir, commit, &mut rng)?;
        if !tree.files.is_empty() {
            trees.push(tree);
        }
    }
    if trees.is_empty() {
        bail!("{} has no commit with files: no ls requests to make", git_dir.display());
    }
    let pool: usize = trees.iter().map(|t| t.files.len() + t.dirs.len()).sum();
    let count = count.min(pool);
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join("ls.fast-import");
    let file = fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = BufWriter::new(file);
    let mut mix = Mix::default();
    for _ in 0..count {
        let tree = rng.pick(&trees);
        let roll = rng.unit();
        let path = if roll < 0.8 || tree.dirs.is_empty() {
            mix.files += 1;
            rng.pick(&tree.files).clone()
        } else if roll < 0.9 {
            mix.dirs += 1;
            rng.pick(&tree.dirs).clone()
        } else {
            mix.missing += 1;
            missing_path(tree, &mut rng)
        };
        out.write_all(format!("ls {} ", tree.commit).as_bytes())?;
        out.write_all(&quote(&path))?;
        out.write_all(b"\n")?;
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    let description = format!(
        "ls: {count} requests over {} commits ({} files, {} directories, {} missing paths)",
        trees.len(),
        mix.files,
        mix.dirs,
        mix.missing
    );
    Ok(Requests {
        order: Order::Ls,
        requests: count,
        fast_import: path,
        ids: None,
        expected_bytes: None,
        expected_header_bytes: None,
        description: Some(description),
    })
}

/// [`COMMITS`] commits evenly spaced over `git rev-list --all` (all of them when there are fewer).
fn spread_commits(git_dir: &Path) -> Result<Vec<String>> {
    let out = git::output(git::git(git_dir).args(["rev-list", "--all"]))?;
    let all: Vec<String> = String::from_utf8(out)?.lines().map(str::to_string).collect();
    let take = all.len().min(COMMITS);
    Ok((0..take).map(|k| all[k * all.len() / take].clone()).collect())
}

/// The files (blobs and gitlinks) and directories of `commit`'s tree, each cut to [`PATHS_PER_COMMIT`] at random.
fn sample_tree(git_dir: &Path, commit: String, rng: &mut Rng) -> Result<Tree> {
    let out = git::output(git::git(git_dir).args(["ls-tree", "-r", "-t", "-z", "--full-tree", &commit]))?;
    let mut tree = Tree { commit, files: Vec::new(), dirs: Vec::new() };
    for entry in out.split(|&b| b == 0).filter(|e| !e.is_empty()) {
        // `<mode> SP <type> SP <id> TAB <path>`
        let tab = entry.iter().position(|&b| b == b'\t').context("ls-tree entry without a tab")?;
        let (info, path) = (&entry[..tab], entry[tab + 1..].to_vec());
        match info.split(|&b| b == b' ').nth(1) {
            Some(b"tree") => tree.dirs.push(path),
            _ => tree.files.push(path),
        }
    }
    for paths in [&mut tree.files, &mut tree.dirs] {
        rng.shuffle(paths);
        paths.truncate(PATHS_PER_COMMIT);
    }
    Ok(tree)
}

/// A path `tree` does not have: beside a file, inside a directory, under a missing directory, or below a file.
fn missing_path(tree: &Tree, rng: &mut Rng) -> Vec<u8> {
    let file = rng.pick(&tree.files).clone();
    match rng.below(4) {
        0 => [file.as_slice(), b".missing"].concat(),
        1 if !tree.dirs.is_empty() => [rng.pick(&tree.dirs).as_slice(), b"/no-such-file"].concat(),
        2 => [b"no-such-dir/".as_slice(), file.rsplit(|&b| b == b'/').next().unwrap_or(&file)].concat(),
        _ => [file.as_slice(), b"/below-a-file"].concat(),
    }
}

/// The path as fast-import reads it: as is, unless it starts with `"` or holds a byte a line cannot (C-quoted then).
fn quote(path: &[u8]) -> Vec<u8> {
    let plain = path.first() != Some(&b'"') && !path.iter().any(|&b| b < 0x20 || b == 0x7f);
    if plain {
        return path.to_vec();
    }
    let mut out = vec![b'"'];
    for &b in path {
        match b {
            b'"' | b'\\' => out.extend_from_slice(&[b'\\', b]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0..0x20 | 0x7f => out.extend_from_slice(format!("\\{b:03o}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
    out
}
