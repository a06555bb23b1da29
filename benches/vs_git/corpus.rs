//! The generated linux-shaped corpus: a fast-import stream we write, packed by git, cached under `target/`.
//!
//! Shape (FULL): ~6,000 files in a linux-like tree, then ~6,000 commits touching a heavy-tailed number of files
//! each (most a few, some a hundred), picked with a power law plus subsystem locality, so ~100 paths get 50 or more
//! versions (the hottest ~700) and the median path 12; ≥ 100,000 blobs. Text files grow as they age (so size order
//! follows history, as in real repositories, and `repack` builds long chains). Sizes: mostly 1–40 KiB of C-, doc-
//! and Kconfig-like text, a tail up to 300 KiB, a few tiny files, ~18 partly random binary blobs up to 2 MiB and
//! six multi-MiB generated headers. `git repack -adF --depth=50 --window=100` then makes one pack: ~4 minutes in
//! all on 2 cores, three quarters of it the repack (which grows linearly with the window). Everything comes from
//! one seeded PRNG and pinned dates, so the blob ids are the same on every machine.

use std::collections::HashSet;
use std::fs;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};

use crate::git;
use crate::inventory;
use crate::rng::Rng;

/// Bump when the generator changes: the cache directory is keyed by it.
const GENERATOR_VERSION: u32 = 2;
const SEED: u64 = 0x6C69_6E75_7820_2020; // "linux   "

pub struct Shape {
    pub name: &'static str,
    initial_files: usize,
    min_blobs: usize,
    min_commits: usize,
    big_files: usize,
    /// `git repack --window`: the repack is most of the generation time, and grows linearly with it.
    pub window: u32,
    pub depth: u32,
}

/// The default corpus: ≥ 100,000 blobs in one pack.
pub const FULL: Shape = Shape {
    name: "full",
    initial_files: 6_000,
    min_blobs: 105_000,
    min_commits: 3_000,
    big_files: 6,
    window: 100,
    depth: 50,
};

/// For `--quick`: same generator, a few seconds to build.
pub const SMALL: Shape = Shape {
    name: "small",
    initial_files: 600,
    min_blobs: 6_000,
    min_commits: 300,
    big_files: 1,
    window: 10,
    depth: 50,
};

/// What the marker file records; written last, so its presence means the corpus is complete.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct CorpusInfo {
    pub tag: String,
    pub git_version: String,
    pub commits: usize,
    pub blobs_written: usize,
    pub blobs: usize,
    pub blob_bytes: u64,
    pub pack_bytes: u64,
    pub max_depth: u32,
    pub mean_depth: f64,
    pub window: u32,
    pub depth: u32,
    pub stream_secs: f64,
    pub repack_secs: f64,
    pub total_secs: f64,
}

pub struct Corpus {
    pub git_dir: PathBuf,
    pub info: CorpusInfo,
    pub reused: bool,
}

/// Returns the cached corpus for `shape`, generating it first when it is missing or incomplete.
pub fn ensure(target_dir: &Path, shape: &Shape) -> Result<Corpus> {
    let tag = format!("v{GENERATOR_VERSION}-{}-w{}", shape.name, shape.window);
    let dir = target_dir.join("bench-corpus").join(&tag);
    let git_dir = dir.join("repo.git");
    let marker = dir.join("COMPLETE.json");
    if let Ok(text) = fs::read_to_string(&marker) {
        let info: CorpusInfo = serde_json::from_str(&text).with_context(|| format!("reading {}", marker.display()))?;
        return Ok(Corpus { git_dir, info, reused: true });
    }
    if dir.exists() {
        fs::remove_dir_all(&dir).with_context(|| format!("removing incomplete {}", dir.display()))?;
    }
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    eprintln!("generating corpus {tag} in {} (once; cached)", dir.display());

    let started = Instant::now();
    let mut init = Command::new("git");
    git::pin_env(&mut init);
    git::output(init.args(["init", "--bare", "-q", "--initial-branch=master"]).arg(&git_dir))?;

    let (commits, blobs_written) = write_history(&git_dir, &dir, shape)?;
    let stream_secs = started.elapsed().as_secs_f64();

    let repack_started = Instant::now();
    repack(&git_dir, shape)?;
    let repack_secs = repack_started.elapsed().as_secs_f64();

    let inventory = inventory::scan(&git_dir)?;
    let depths: Vec<u32> = inventory.blobs.iter().map(|b| b.depth).collect();
    let info = CorpusInfo {
        tag,
        git_version: git::version(Path::new("git"))?,
        commits,
        blobs_written,
        blobs: inventory.blobs.len(),
        blob_bytes: inventory.blobs.iter().map(|b| b.size).sum(),
        pack_bytes: inventory.pack_bytes,
        max_depth: depths.iter().copied().max().unwrap_or(0),
        mean_depth: depths.iter().map(|&d| d as f64).sum::<f64>() / depths.len().max(1) as f64,
        window: shape.window,
        depth: shape.depth,
        stream_secs,
        repack_secs,
        total_secs: started.elapsed().as_secs_f64(),
    };
    // A few versions come out identical to an earlier one (git stores them once): allow for that.
    if info.blobs < shape.min_blobs * 95 / 100 {
        bail!("corpus has {} blobs, expected about {}", info.blobs, shape.min_blobs);
    }
    fs::write(&marker, serde_json::to_string_pretty(&info)?)
        .with_context(|| format!("writing {}", marker.display()))?;
    Ok(Corpus { git_dir, info, reused: false })
}

/// Streams the whole history into `git fast-import`; returns (commits, blobs written).
fn write_history(git_dir: &Path, dir: &Path, shape: &Shape) -> Result<(usize, usize)> {
    let log = dir.join("fast-import.log");
    // Stored uncompressed and undeltified: fast-import is single-threaded and `repack -F` redoes both anyway.
    let mut child = git::git(git_dir)
        .args(["-c", "core.compression=0", "fast-import", "--quiet", "--depth=0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log)?)
        .spawn()
        .context("spawning git fast-import")?;
    let stdin = child.stdin.take().expect("piped stdin");
    let mut out = BufWriter::with_capacity(1 << 20, stdin);

    let bar = ProgressBar::new(shape.min_blobs as u64).with_style(
        ProgressStyle::with_template("{spinner} writing history  [{bar:40}] {pos}/{len} blobs, {msg} ({elapsed})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    if bar.is_hidden() {
        eprintln!("writing history into git fast-import ({}+ blobs)", shape.min_blobs);
    }
    let mut world = World::new(Rng::new(SEED), shape);
    let result = world.write(&mut out, shape, &bar);
    // Close fast-import's stdin whatever happened, so it exits and we can report its error.
    let flushed = result.and_then(|counts| {
        out.into_inner().map_err(|e| e.into_error())?;
        Ok(counts)
    });
    bar.finish_and_clear();
    let status = child.wait()?;
    if !status.success() {
        bail!("git fast-import failed ({status}): {}", fs::read_to_string(&log).unwrap_or_default().trim());
    }
    flushed
}

/// `git repack -adF` (recompute deltas, recompress everything at the default level) into one pack, with git's own progress shown on a spinner.
fn repack(git_dir: &Path, shape: &Shape) -> Result<()> {
    let mut child = git::git(git_dir)
        .args(["-c", "repack.writeBitmaps=false", "-c", "gc.auto=0", "repack", "-a", "-d", "-F"])
        .arg(format!("--depth={}", shape.depth))
        .arg(format!("--window={}", shape.window))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("spawning git repack")?;
    let spinner = ProgressBar::new_spinner().with_style(
        ProgressStyle::with_template("{spinner} git repack -adF --depth={prefix}: {msg} ({elapsed})")
            .expect("valid template"),
    );
    spinner.set_prefix(format!("{} --window={}", shape.depth, shape.window));
    if spinner.is_hidden() {
        eprintln!("git repack -adF --depth={} --window={} (most of the generation time)", shape.depth, shape.window);
    }
    spinner.enable_steady_tick(Duration::from_millis(200));
    let log = follow_progress(&mut child, &spinner);
    spinner.finish_and_clear();
    let status = child.wait()?;
    if !status.success() {
        bail!("git repack failed ({status}): {}", log.trim());
    }
    Ok(())
}

/// Shows each `\r`- or `\n`-terminated progress line of the child's stderr; returns all of it.
fn follow_progress(child: &mut Child, spinner: &ProgressBar) -> String {
    let mut all = String::new();
    let Some(stderr) = child.stderr.take() else {
        return all;
    };
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while let Ok(1) = reader.read(&mut byte) {
        if byte[0] == b'\r' || byte[0] == b'\n' {
            let text = String::from_utf8_lossy(&line).trim().to_string();
            if !text.is_empty() {
                spinner.set_message(text.clone());
                all.push_str(&text);
                all.push('\n');
            }
            line.clear();
        } else {
            line.push(byte[0]);
        }
    }
    // Whatever is left, e.g. a last line without terminator.
    let _ = reader.read_until(b'\n', &mut line);
    all.push_str(&String::from_utf8_lossy(&line));
    all
}

#[derive(Clone, Copy, PartialEq)]
enum Style {
    C,
    Doc,
    Build,
    /// Multi-MiB generated register headers.
    Big,
    Binary,
}

struct File {
    path: String,
    dir: usize,
    style: Style,
    content: Vec<u8>,
    /// Text files grow with each version until this size.
    limit: usize,
    alive: bool,
}

/// The evolving tree and the text generator's vocabulary.
struct World {
    rng: Rng,
    files: Vec<File>,
    dirs: Vec<String>,
    files_in_dir: Vec<Vec<usize>>,
    paths: HashSet<String>,
    /// Text files (no big, no binary) from hottest to coldest.
    hot: Vec<usize>,
    /// The hottest 1,000, which are never deleted.
    hottest: HashSet<usize>,
    big: Vec<usize>,
    binary: Vec<usize>,
    idents: Vec<String>,
    uppers: Vec<String>,
    words: Vec<String>,
    authors: Vec<String>,
    time: u64,
}

const SYLLABLES: &[&str] = &[
    "dev", "reg", "buf", "irq", "ctx", "lock", "spin", "mem", "alloc", "page", "map", "io", "port", "net", "skb",
    "usb", "pci", "drv", "data", "priv", "init", "exit", "probe", "read", "write", "conf", "clk", "dma", "queue",
    "ring", "head", "tail", "len", "size", "flag", "mask", "val", "ops", "tx", "rx", "phy", "mac", "hw", "fw", "cmd",
    "resp", "err", "ret", "idx", "cnt", "max", "min", "off", "addr", "base", "link", "node", "list", "entry", "table",
    "hash", "key", "state", "mode", "pwr", "gpio", "i2c", "spi", "ata", "scsi", "blk", "bio", "req", "inode", "dentry",
    "file", "sb", "vma", "pte", "pmd", "task", "sched", "cpu", "zone", "slab", "timer", "work", "sem", "mutex", "rcu",
    "ref", "kobj", "attr", "proc", "trace", "event", "perf", "bpf", "sock", "tcp", "udp", "route", "nf", "ct", "vlan",
    "eth", "wlan", "mmc", "nvme", "pm", "acpi", "of",
];

const TOP_DIRS: &[(&str, u32)] = &[
    ("drivers", 45),
    ("arch", 14),
    ("Documentation", 8),
    ("fs", 6),
    ("include", 6),
    ("net", 6),
    ("sound", 4),
    ("tools", 4),
    ("kernel", 2),
    ("lib", 2),
    ("mm", 1),
    ("crypto", 1),
    ("security", 1),
];

const KEYWORDS: &[&str] = &["int", "u32", "u64", "void", "bool", "size_t", "unsigned long", "u8", "long"];

impl World {
    fn new(mut rng: Rng, shape: &Shape) -> World {
        // `min..=max` syllables joined by `sep`.
        let syllable = |rng: &mut Rng, min: usize, max: usize, sep: &str| -> String {
            let parts = rng.range(min, max);
            (0..parts).map(|_| *rng.pick(SYLLABLES)).collect::<Vec<_>>().join(sep)
        };
        let idents = (0..3000).map(|_| syllable(&mut rng, 1, 3, "_")).collect();
        let uppers = (0..1500).map(|_| syllable(&mut rng, 2, 4, "_").to_uppercase()).collect();
        let words = (0..1200).map(|_| syllable(&mut rng, 1, 2, "")).collect();
        let authors = (0..300)
            .map(|_| {
                let first = syllable(&mut rng, 2, 2, "");
                let last = syllable(&mut rng, 2, 3, "");
                format!("{} {} <{first}.{last}@example.org>", capitalize(&first), capitalize(&last))
            })
            .collect();
        let mut world = World {
            rng,
            files: Vec::new(),
            dirs: Vec::new(),
            files_in_dir: Vec::new(),
            paths: HashSet::new(),
            hot: Vec::new(),
            hottest: HashSet::new(),
            big: Vec::new(),
            binary: Vec::new(),
            idents,
            uppers,
            words,
            authors,
            time: 1_112_911_993,
        };
        world.make_dirs(shape.initial_files / 12);
        for _ in 0..shape.initial_files {
            let dir = world.rng.below(world.dirs.len());
            world.add_file(dir);
        }
        for _ in 0..shape.big_files {
            let size = world.rng.log_uniform(1_500 << 10, 7 << 20);
            world.add_special(Style::Big, size);
        }
        for _ in 0..(shape.initial_files / 330).max(1) {
            let size = world.rng.log_uniform(4 << 10, 2 << 20);
            world.add_special(Style::Binary, size);
        }
        world.rank_hotness();
        world
    }

    fn make_dirs(&mut self, count: usize) {
        let total: u32 = TOP_DIRS.iter().map(|&(_, w)| w).sum();
        let mut seen = HashSet::new();
        while self.dirs.len() < count.max(4) {
            let mut roll = self.rng.below(total as usize) as u32;
            let top = TOP_DIRS
                .iter()
                .find(|&&(_, w)| {
                    if roll < w {
                        true
                    } else {
                        roll -= w;
                        false
                    }
                })
                .map(|&(name, _)| name)
                .unwrap_or("drivers");
            let depth = self.rng.range(1, 3);
            let mut dir = top.to_string();
            for _ in 0..depth {
                dir.push('/');
                let syllable = SYLLABLES[self.rng.below(SYLLABLES.len())];
                dir.push_str(syllable);
            }
            if seen.insert(dir.clone()) {
                self.dirs.push(dir);
                self.files_in_dir.push(Vec::new());
            }
        }
    }

    fn unique_path(&mut self, dir: usize, stem_ext: impl Fn(&mut Rng, &[String]) -> String) -> String {
        loop {
            let name = stem_ext(&mut self.rng, &self.idents);
            let path = format!("{}/{name}", self.dirs[dir]);
            if self.paths.insert(path.clone()) {
                return path;
            }
        }
    }

    /// A new text file in `dir`; returns its index.
    fn add_file(&mut self, dir: usize) -> usize {
        let is_doc_dir = self.dirs[dir].starts_with("Documentation");
        let roll = self.rng.below(100);
        let (style, ext) = if is_doc_dir {
            (Style::Doc, if roll < 80 { ".rst" } else { ".txt" })
        } else {
            match roll {
                0..=54 => (Style::C, ".c"),
                55..=81 => (Style::C, ".h"),
                82..=84 => (Style::C, ".S"),
                85..=87 => (Style::C, ".dts"),
                88..=93 => (Style::Build, ""),
                _ => (Style::Doc, ".txt"),
            }
        };
        let path = if style == Style::Build {
            let name = if self.rng.chance(0.5) { "Makefile" } else { "Kconfig" };
            let candidate = format!("{}/{name}", self.dirs[dir]);
            if self.paths.insert(candidate.clone()) {
                candidate
            } else {
                self.unique_path(dir, |rng, idents| format!("Kconfig.{}", rng.pick(idents)))
            }
        } else {
            self.unique_path(dir, |rng, idents| format!("{}{ext}", rng.pick(idents)))
        };
        let size = match self.rng.below(1000) {
            0..=49 => self.rng.log_uniform(3, 600),
            50..=969 => self.rng.log_uniform(1 << 10, 40 << 10),
            _ => self.rng.log_uniform(40 << 10, 300 << 10),
        };
        let mut content = Vec::with_capacity(size + 100);
        while content.len() < size {
            self.line(style, &mut content);
        }
        self.push_file(path, dir, style, content)
    }

    fn add_special(&mut self, style: Style, size: usize) {
        let (dir_name, name) = if style == Style::Big {
            let chip = self.rng.pick(&self.idents).clone();
            ("drivers/gpu/drm/amd/include/asic_reg".to_string(), format!("{chip}_sh_mask.h"))
        } else {
            ("firmware".to_string(), format!("{}.bin", self.rng.pick(&self.idents)))
        };
        let dir = match self.dirs.iter().position(|d| *d == dir_name) {
            Some(dir) => dir,
            None => {
                self.dirs.push(dir_name);
                self.files_in_dir.push(Vec::new());
                self.dirs.len() - 1
            }
        };
        let path = format!("{}/{name}", self.dirs[dir]);
        if !self.paths.insert(path.clone()) {
            return;
        }
        let mut content = Vec::with_capacity(size + 100);
        if style == Style::Binary {
            while content.len() < size {
                self.binary_block(&mut content);
            }
        } else {
            while content.len() < size {
                self.line(Style::Big, &mut content);
            }
        }
        let index = self.push_file(path, dir, style, content);
        if style == Style::Big {
            self.big.push(index);
        } else {
            self.binary.push(index);
        }
    }

    fn push_file(&mut self, path: String, dir: usize, style: Style, content: Vec<u8>) -> usize {
        let limit = content.len() + content.len() / 2 + (4 << 10);
        self.files.push(File { path, dir, style, content, limit, alive: true });
        let index = self.files.len() - 1;
        self.files_in_dir[dir].push(index);
        index
    }

    /// A random hotness order for the text files, keeping files over 40 KiB out of the hottest 300.
    fn rank_hotness(&mut self) {
        let mut hot: Vec<usize> = (0..self.files.len())
            .filter(|&i| matches!(self.files[i].style, Style::C | Style::Doc | Style::Build))
            .collect();
        self.rng.shuffle(&mut hot);
        let (mut small, mut large): (Vec<usize>, Vec<usize>) =
            hot.iter().partition(|&&i| self.files[i].content.len() <= 40 << 10);
        let head = small.len().min(300);
        let mut ranked: Vec<usize> = small.drain(..head).collect();
        small.append(&mut large);
        self.rng.shuffle(&mut small);
        ranked.append(&mut small);
        self.hottest = ranked.iter().take(1000).copied().collect();
        self.hot = ranked;
    }

    /// A power law over the hotness ranking: the hottest file gets ~1% of all modifications.
    fn pick_hot(&mut self) -> usize {
        let u = self.rng.unit();
        self.hot[((u * u) * self.hot.len() as f64) as usize]
    }

    fn write(&mut self, out: &mut impl Write, shape: &Shape, bar: &ProgressBar) -> Result<(usize, usize)> {
        writeln!(out, "feature done")?;
        // The initial import: every file, one commit.
        let everything: Vec<usize> = (0..self.files.len()).collect();
        let mut blobs = self.commit(out, &everything, &[], "Initial import")?;
        bar.set_position(blobs as u64);
        let mut commits = 1;
        while commits < shape.min_commits || blobs < shape.min_blobs {
            let (changed, deleted, subject) = self.plan_commit();
            blobs += self.commit(out, &changed, &deleted, &subject)?;
            commits += 1;
            bar.set_position(blobs as u64);
            bar.set_message(format!("{commits} commits"));
        }
        writeln!(out, "done")?;
        Ok((commits, blobs))
    }

    /// Picks which files one commit touches and changes their contents; returns (changed, deleted, subject).
    fn plan_commit(&mut self) -> (Vec<usize>, Vec<usize>, String) {
        let anchor = self.pick_hot();
        let dir = self.files[anchor].dir;
        let count = self.rng.log_uniform(1, 120);
        let mut changed = vec![anchor];
        let mut seen: HashSet<usize> = changed.iter().copied().collect();
        for _ in 1..count {
            let file = if self.rng.chance(0.6) { *self.rng.pick(&self.files_in_dir[dir]) } else { self.pick_hot() };
            let style = self.files[file].style;
            if self.files[file].alive && style != Style::Big && style != Style::Binary && seen.insert(file) {
                changed.push(file);
            }
        }
        if self.rng.chance(0.01) && !self.big.is_empty() {
            let file = *self.rng.pick(&self.big);
            if seen.insert(file) {
                changed.push(file);
            }
        }
        if self.rng.chance(0.02) && !self.binary.is_empty() {
            let file = *self.rng.pick(&self.binary);
            if seen.insert(file) {
                changed.push(file);
            }
        }
        for &file in &changed {
            self.edit(file);
            self.files[file].alive = true;
        }
        if self.rng.chance(0.15) {
            for _ in 0..self.rng.range(1, 3) {
                let file = self.add_file(dir);
                changed.push(file);
            }
        }
        let mut deleted = Vec::new();
        if self.rng.chance(0.02) {
            let victim = *self.rng.pick(&self.files_in_dir[dir]);
            if self.files[victim].alive && !seen.contains(&victim) && !self.hottest.contains(&victim) {
                self.files[victim].alive = false;
                deleted.push(victim);
            }
        }
        let area = self.dirs[dir].rsplit('/').next().unwrap_or("tree").to_string();
        let summary = self.sentence(6);
        (changed, deleted, format!("{area}: {summary}"))
    }

    fn commit(&mut self, out: &mut impl Write, changed: &[usize], deleted: &[usize], subject: &str) -> Result<usize> {
        self.time += self.rng.range(30, 20_000) as u64;
        let author = self.rng.pick(&self.authors).clone();
        let committer = self.rng.pick(&self.authors[..20]).clone();
        let message = format!("{subject}\n\n{}.\n\nSigned-off-by: {author}\n", self.sentence(20));
        writeln!(out, "commit refs/heads/master")?;
        writeln!(out, "author {author} {} +0000", self.time - 3_600)?;
        writeln!(out, "committer {committer} {} +0000", self.time)?;
        writeln!(out, "data {}\n{message}", message.len())?;
        for &file in changed {
            let file = &self.files[file];
            writeln!(out, "M 100644 inline {}\ndata {}", file.path, file.content.len())?;
            out.write_all(&file.content)?;
            out.write_all(b"\n")?;
        }
        for &file in deleted {
            writeln!(out, "D {}", self.files[file].path)?;
        }
        writeln!(out)?;
        Ok(changed.len())
    }

    fn edit(&mut self, file: usize) {
        let style = self.files[file].style;
        let mut content = std::mem::take(&mut self.files[file].content);
        match style {
            Style::Binary => {
                for _ in 0..self.rng.range(1, 4) {
                    let len = self.rng.range(16, 2048).min(content.len());
                    let at = self.rng.below(content.len() - len + 1);
                    let mut patch = Vec::with_capacity(len);
                    self.rng.fill(&mut patch, len);
                    content[at..at + len].copy_from_slice(&patch);
                }
                if self.rng.chance(0.3) {
                    self.binary_block(&mut content);
                }
            }
            _ => {
                let hunks = if style == Style::Big { self.rng.range(2, 20) } else { self.rng.range(1, 4) };
                // Files grow as they age (so size order is roughly history order, as in real repositories)
                // until they reach their limit, then hover around it.
                let growing = content.len() < self.files[file].limit;
                for _ in 0..hunks {
                    let at = line_start(&content, self.rng.below(content.len() + 1));
                    let deleted = self.rng.below(3);
                    let end = skip_lines(&content, at, deleted);
                    let inserted = if growing {
                        deleted + self.rng.range(usize::from(end == at), 3)
                    } else {
                        self.rng.range(usize::from(end == at), 2)
                    };
                    let mut new = Vec::new();
                    for _ in 0..inserted {
                        self.line(style, &mut new);
                    }
                    content.splice(at..end, new);
                }
                if content.is_empty() {
                    self.line(style, &mut content);
                }
            }
        }
        self.files[file].content = content;
    }

    fn sentence(&mut self, words: usize) -> String {
        let n = self.rng.range(words / 2, words);
        (0..n.max(1)).map(|_| self.rng.pick(&self.words).as_str()).collect::<Vec<_>>().join(" ")
    }

    /// Appends one line of text in `style`.
    fn line(&mut self, style: Style, out: &mut Vec<u8>) {
        let rng = &mut self.rng;
        let id = |rng: &mut Rng| self.idents[rng.below(self.idents.len())].as_str();
        let up = |rng: &mut Rng| self.uppers[rng.below(self.uppers.len())].as_str();
        let word = |rng: &mut Rng| self.words[rng.below(self.words.len())].as_str();
        let tabs = "\t\t\t\t";
        let line = match style {
            Style::C => {
                let ind = &tabs[..rng.below(4)];
                match rng.below(20) {
                    0 | 1 => String::new(),
                    2 => format!("{ind}/* {} {} {} {} {} */", word(rng), word(rng), word(rng), word(rng), word(rng)),
                    3 => format!("{ind}if ({}->{} & {}) {{", id(rng), id(rng), up(rng)),
                    4 => format!("{ind}return {};", id(rng)),
                    5 | 6 => format!("{ind}}}"),
                    7 => format!(
                        "static {} {}(struct {} *{}, {} {})",
                        rng.pick(KEYWORDS),
                        id(rng),
                        id(rng),
                        id(rng),
                        rng.pick(KEYWORDS),
                        id(rng)
                    ),
                    8 => format!("{ind}struct {} *{} = {}->{};", id(rng), id(rng), id(rng), id(rng)),
                    9 => format!("#define {} 0x{:x}", up(rng), rng.next_u64() & 0xffff),
                    10 => format!("{ind}{}->{} = {};", id(rng), id(rng), rng.below(4096)),
                    11 => format!("{ind}goto {};", id(rng)),
                    12 => format!("#include <linux/{}.h>", id(rng)),
                    13 => format!("{ind}{} {};", rng.pick(KEYWORDS), id(rng)),
                    14 => format!("{ind}{}({}, \"{} {} %d\\n\", {});", id(rng), id(rng), word(rng), word(rng), id(rng)),
                    15 => format!("{ind}for ({} = 0; {} < {}; {}++) {{", id(rng), id(rng), up(rng), id(rng)),
                    16 => format!("{ind}if (!{})", id(rng)),
                    _ => format!("{ind}{} = {}({}, {});", id(rng), id(rng), id(rng), id(rng)),
                }
            }
            Style::Doc => match rng.below(12) {
                0 => String::new(),
                1 => {
                    let title = format!("{} {}", word(rng), word(rng));
                    format!("{title}\n{}", "=".repeat(title.len()))
                }
                2 => format!("  {} {} {}", id(rng), id(rng), id(rng)),
                _ => (0..rng.range(6, 13)).map(|_| word(rng)).collect::<Vec<_>>().join(" "),
            },
            Style::Build => match rng.below(6) {
                0 => format!("obj-$(CONFIG_{}) += {}.o", up(rng), id(rng)),
                1 => format!("config {}", up(rng)),
                2 => format!("\ttristate \"{} {} {}\"", word(rng), word(rng), word(rng)),
                3 => format!("\tdepends on {} && {}", up(rng), up(rng)),
                4 => String::new(),
                _ => format!("\t  {} {} {} {} {}", word(rng), word(rng), word(rng), word(rng), word(rng)),
            },
            Style::Big | Style::Binary => {
                format!("#define {}__{}_MASK 0x{:08x}L", up(rng), up(rng), rng.next_u64() as u32)
            }
        };
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }

    /// Firmware-like bytes: random runs, zero padding and repeated patterns.
    fn binary_block(&mut self, out: &mut Vec<u8>) {
        let len = self.rng.range(256, 4096);
        match self.rng.below(4) {
            0 | 1 => self.rng.fill(out, out.len() + len),
            2 => out.resize(out.len() + len, 0),
            _ => {
                let mut pattern = Vec::new();
                let period = self.rng.range(2, 16);
                self.rng.fill(&mut pattern, period);
                for i in 0..len {
                    out.push(pattern[i % pattern.len()]);
                }
            }
        }
    }
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Start of the line containing byte `at`.
fn line_start(content: &[u8], at: usize) -> usize {
    content[..at].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1)
}

/// Offset after `lines` more lines from `at` (or the end).
fn skip_lines(content: &[u8], mut at: usize, lines: usize) -> usize {
    for _ in 0..lines {
        match content[at..].iter().position(|&b| b == b'\n') {
            Some(p) => at += p + 1,
            None => return content.len(),
        }
    }
    at
}
