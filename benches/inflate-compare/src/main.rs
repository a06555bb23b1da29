//! Compares whole-buffer zlib inflaters on every entry of a repository's packs.
//!
//! cat-blobd inflates each pack entry in one call into a buffer of the entry's declared size
//! (`src/store/inflate.rs`). This measures exactly that loop — allocate `vec![0u8; size]`, inflate,
//! check the size — for libdeflate, zlib-rs, zlib-ng and system zlib, on base objects and deltas alike,
//! so the default can be chosen on numbers rather than folklore.
//!
//! Usage: `inflate-compare [GIT_DIR] [--rounds N]`.
use std::hint::black_box;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};

mod backends;

use backends::{Backend, Libdeflate, SystemZlib, ZlibNg, ZlibRs};

const DEFAULT_GIT_DIR: &str = "/work/main/target/bench-corpus/v2-full-w100/repo.git";
const DEFAULT_ROUNDS: usize = 5;

/// One pack entry: where its zlib stream lies in [`Corpus::data`] and what it declares it inflates to.
struct Entry {
    compressed: Range<usize>,
    size: usize,
}

/// The compressed streams of all pack entries, copied out of the packs so that every backend reads the
/// same warm, already-faulted-in memory.
#[derive(Default)]
struct Corpus {
    data: Vec<u8>,
    entries: Vec<Entry>,
    deltas: usize,
    inflated_bytes: u64,
}

impl Corpus {
    fn input(&self, entry: &Entry) -> &[u8] {
        &self.data[entry.compressed.clone()]
    }
}

fn main() -> anyhow::Result<()> {
    let (git_dir, rounds) = parse_args()?;
    let corpus = load(&git_dir)?;
    println!(
        "corpus: {} ({} entries: {} base objects, {} deltas; {:.1} MB compressed, {:.1} MB inflated)",
        git_dir.display(),
        corpus.entries.len(),
        corpus.entries.len() - corpus.deltas,
        corpus.deltas,
        corpus.data.len() as f64 / 1e6,
        corpus.inflated_bytes as f64 / 1e6,
    );

    let mut backends: Vec<Box<dyn Backend>> = vec![
        Box::new(Libdeflate::new()),
        Box::new(ZlibRs::new()),
        Box::new(ZlibNg::new()),
        Box::new(SystemZlib::new()?),
    ];
    for backend in &backends {
        println!("  {:<14} {}", backend.name(), backend.describe());
    }

    verify(&corpus, &mut backends)?;

    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); backends.len()];
    for round in 1..=rounds {
        for (backend, times) in backends.iter_mut().zip(&mut times) {
            let elapsed = time_all(&corpus, backend.as_mut())?;
            times.push(elapsed);
            eprintln!("round {round}/{rounds}: {:<14} {:.3} s", backend.name(), elapsed.as_secs_f64());
        }
    }
    print_table(&corpus, &backends, &mut times, rounds);
    Ok(())
}

fn parse_args() -> anyhow::Result<(PathBuf, usize)> {
    let mut git_dir = None;
    let mut rounds = DEFAULT_ROUNDS;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rounds" => {
                let value = args.next().context("--rounds needs a value")?;
                rounds = value.parse().with_context(|| format!("--rounds {value:?}"))?;
                ensure!(rounds > 0, "--rounds must be at least 1");
            }
            "-h" | "--help" => {
                println!(
                    "usage: inflate-compare [GIT_DIR] [--rounds N]   (default {DEFAULT_GIT_DIR}, {DEFAULT_ROUNDS} rounds)"
                );
                std::process::exit(0);
            }
            _ if arg.starts_with('-') => bail!("unknown option {arg:?}"),
            _ if git_dir.is_none() => git_dir = Some(PathBuf::from(arg)),
            _ => bail!("unexpected argument {arg:?}"),
        }
    }
    Ok((git_dir.unwrap_or_else(|| DEFAULT_GIT_DIR.into()), rounds))
}

/// Reads every entry of every `objects/pack/*.pack`. The index supplies the entry offsets; an entry's
/// compressed stream runs from its data offset to the next entry (or the pack's trailing checksum).
fn load(git_dir: &Path) -> anyhow::Result<Corpus> {
    let pack_dir = git_dir.join("objects/pack");
    let mut packs: Vec<PathBuf> = std::fs::read_dir(&pack_dir)
        .with_context(|| format!("reading {}", pack_dir.display()))?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    packs.retain(|path| path.extension().is_some_and(|ext| ext == "pack"));
    packs.sort();
    ensure!(!packs.is_empty(), "no packs in {}", pack_dir.display());

    let mut corpus = Corpus::default();
    for pack_path in packs {
        let kind = gix_hash::Kind::Sha1;
        let index = gix_pack::index::File::at(pack_path.with_extension("idx"), kind)
            .with_context(|| format!("opening the index of {}", pack_path.display()))?;
        let pack =
            gix_pack::data::File::at(&pack_path, kind).with_context(|| format!("opening {}", pack_path.display()))?;
        let offsets = index.sorted_offsets();
        for (i, &offset) in offsets.iter().enumerate() {
            let entry = pack.entry(offset)?;
            let end = offsets.get(i + 1).copied().unwrap_or(pack.pack_end() as u64);
            let stream = pack
                .entry_slice(entry.data_offset..end)
                .with_context(|| format!("entry at {offset} lies outside {}", pack_path.display()))?;
            let start = corpus.data.len();
            corpus.data.extend_from_slice(stream);
            let size = usize::try_from(entry.decompressed_size)?;
            corpus.entries.push(Entry { compressed: start..corpus.data.len(), size });
            corpus.deltas += usize::from(entry.header.is_delta());
            corpus.inflated_bytes += entry.decompressed_size;
        }
    }
    Ok(corpus)
}

/// Inflates every entry with every backend once and checks each output against libdeflate's, byte for
/// byte. Doubles as the warm-up round.
fn verify(corpus: &Corpus, backends: &mut [Box<dyn Backend>]) -> anyhow::Result<()> {
    let (reference, others) = backends.split_first_mut().expect("at least one backend");
    let mut mismatches = vec![0usize; others.len()];
    for (i, entry) in corpus.entries.iter().enumerate() {
        let input = corpus.input(entry);
        let mut expected = vec![0u8; entry.size];
        reference.inflate(input, &mut expected).with_context(|| format!("{}: entry #{i}", reference.name()))?;
        for (backend, mismatches) in others.iter_mut().zip(&mut mismatches) {
            let mut out = vec![0u8; entry.size];
            backend.inflate(input, &mut out).with_context(|| format!("{}: entry #{i}", backend.name()))?;
            *mismatches += usize::from(out != expected);
        }
    }
    println!("verification: every backend inflated all {} entries to their declared size", corpus.entries.len());
    for (backend, mismatches) in others.iter().zip(mismatches) {
        let verdict =
            if mismatches == 0 { "byte-identical".to_string() } else { format!("{mismatches} entries DIFFER") };
        println!("  {:<14} vs {}: {verdict}", backend.name(), reference.name());
    }
    Ok(())
}

/// One timed pass over the whole corpus, allocating each output like the store does.
fn time_all(corpus: &Corpus, backend: &mut dyn Backend) -> anyhow::Result<Duration> {
    let start = Instant::now();
    for entry in &corpus.entries {
        let mut out = vec![0u8; entry.size];
        backend.inflate(corpus.input(entry), &mut out)?;
        black_box(out);
    }
    Ok(start.elapsed())
}

fn print_table(corpus: &Corpus, backends: &[Box<dyn Backend>], times: &mut [Vec<Duration>], rounds: usize) {
    for t in times.iter_mut() {
        t.sort();
    }
    let median = |t: &[Duration]| {
        let n = t.len();
        if n % 2 == 1 { t[n / 2].as_secs_f64() } else { (t[n / 2 - 1] + t[n / 2]).as_secs_f64() / 2.0 }
    };
    let medians: Vec<f64> = times.iter().map(|t| median(t)).collect();
    let fastest = medians.iter().copied().fold(f64::INFINITY, f64::min);

    println!();
    println!(
        "{} entries, {} bytes compressed -> {} bytes inflated; {rounds} round(s), backends alternating",
        corpus.entries.len(),
        corpus.data.len(),
        corpus.inflated_bytes,
    );
    println!("| backend        | median s | min–max s     | MB/s inflated | × fastest |");
    println!("|----------------|---------:|---------------|--------------:|----------:|");
    for ((backend, t), &med) in backends.iter().zip(times.iter()).zip(&medians) {
        println!(
            "| {:<14} | {:>8.3} | {:<13} | {:>13.0} | {:>9.2} |",
            backend.name(),
            med,
            format!("{:.3}–{:.3}", t[0].as_secs_f64(), t[t.len() - 1].as_secs_f64()),
            corpus.inflated_bytes as f64 / 1e6 / med,
            med / fastest,
        );
    }
}
