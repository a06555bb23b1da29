//! What blobs a repository has (id, size, delta depth), in pack order, and a cache of that list under `target/`.
//!
//! git lists 10M objects with their delta bases in about 35 s on this machine (`cat-file --batch-all-objects`
//! reads every entry header): the cache, keyed by the pack names, makes every run after the first one over the
//! same packs take a second or two.

use std::collections::HashMap;
use std::fs;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::git;

pub struct Blob {
    pub size: u64,
    /// Delta chain length in the pack (0: stored whole or loose).
    pub depth: u32,
}

pub struct Inventory {
    /// Every blob, in pack order (`--unordered`).
    pub blobs: Vec<Blob>,
    /// Their hex ids end to end, `hex_len` bytes each: one allocation, not one per blob (10M of them).
    oids: String,
    hex_len: usize,
    pub pack_bytes: u64,
}

impl Inventory {
    fn new() -> Inventory {
        Inventory { blobs: Vec::new(), oids: String::new(), hex_len: 0, pack_bytes: 0 }
    }

    fn push(&mut self, oid: &str, size: u64, depth: u32) -> Result<()> {
        if self.hex_len == 0 {
            self.hex_len = oid.len();
        }
        if oid.len() != self.hex_len || !oid.bytes().all(|b| b.is_ascii_hexdigit()) {
            bail!("bad object id {oid:?}");
        }
        self.oids.push_str(oid);
        self.blobs.push(Blob { size, depth });
        Ok(())
    }

    /// The hex id of blob `i`.
    pub fn oid(&self, i: usize) -> &str {
        &self.oids[i * self.hex_len..(i + 1) * self.hex_len]
    }

    /// The bytes of `<oid> blob <size>\n<payload>\n`.
    pub fn response_len(&self, i: usize) -> u64 {
        self.header_len(i) + self.blobs[i].size + 1
    }

    /// The bytes of `<oid> blob <size>\n`, all that `--batch-check` writes.
    pub fn header_len(&self, i: usize) -> u64 {
        (self.hex_len + " blob ".len() + self.blobs[i].size.to_string().len() + 1) as u64
    }
}

/// Bump when the cache file's layout changes.
const CACHE_MAGIC: &[u8] = b"vs_git inventory v2\n";

/// [`scan`], through a cache file under `cache_dir` named by the repository's packs; a repository with loose
/// objects is scanned every time (loose objects come and go without changing any name the key could use).
pub fn load(git_dir: &Path, cache_dir: &Path) -> Result<Inventory> {
    let Some(key) = cache_key(git_dir)? else {
        return scan(git_dir);
    };
    let path = cache_dir.join(format!("{key:016x}.bin"));
    let started = Instant::now();
    if let Ok(file) = fs::File::open(&path) {
        match decode(file) {
            Ok(inventory) => {
                let secs = started.elapsed().as_secs_f64();
                eprintln!("read {} blobs from the inventory cache in {secs:.1} s", inventory.blobs.len());
                return Ok(inventory);
            }
            Err(e) => eprintln!("note: ignoring the inventory cache {}: {e:#}", path.display()),
        }
    }
    eprintln!("listing the blobs of {} (once for these packs; cached in {})", git_dir.display(), path.display());
    let inventory = scan(git_dir)?;
    eprintln!("listed {} blobs in {:.1} s", inventory.blobs.len(), started.elapsed().as_secs_f64());
    fs::create_dir_all(cache_dir).with_context(|| format!("creating {}", cache_dir.display()))?;
    let partial = path.with_extension("partial");
    encode(&inventory, &partial)?;
    fs::rename(&partial, &path).with_context(|| format!("renaming {}", partial.display()))?;
    Ok(inventory)
}

/// A hash of the pack names and sizes and of the alternates file, or `None` when there are loose objects.
fn cache_key(git_dir: &Path) -> Result<Option<u64>> {
    let objects = git_dir.join("objects");
    let mut names = Vec::new();
    for entry in fs::read_dir(&objects).with_context(|| format!("reading {}", objects.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let loose_dir = name.len() == 2 && name.bytes().all(|b| b.is_ascii_hexdigit());
        if loose_dir && fs::read_dir(entry.path())?.next().is_some() {
            return Ok(None);
        }
    }
    let packs = objects.join("pack");
    for entry in fs::read_dir(&packs).with_context(|| format!("reading {}", packs.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".pack") {
            names.push(format!("{name} {}", entry.metadata()?.len()));
        }
    }
    names.sort();
    names.push(fs::read_to_string(objects.join("info/alternates")).unwrap_or_default());
    // FNV-1a: stable across Rust versions, unlike `DefaultHasher`.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in CACHE_MAGIC.iter().chain(names.join("\n").as_bytes()) {
        hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
    }
    Ok(Some(hash))
}

/// Layout: magic, then pack bytes, blob count and id length (u64 LE each), then the ids end to end, the sizes
/// (u64 LE) and the depths (u32 LE): reading it back is three copies, no parsing per blob.
fn encode(inventory: &Inventory, path: &Path) -> Result<()> {
    let file = fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    out.write_all(CACHE_MAGIC)?;
    for word in [inventory.pack_bytes, inventory.blobs.len() as u64, inventory.hex_len as u64] {
        out.write_all(&word.to_le_bytes())?;
    }
    out.write_all(inventory.oids.as_bytes())?;
    for blob in &inventory.blobs {
        out.write_all(&blob.size.to_le_bytes())?;
    }
    for blob in &inventory.blobs {
        out.write_all(&blob.depth.to_le_bytes())?;
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(())
}

/// Reads each part straight into its place: no copy of the whole file in memory.
fn decode(mut file: fs::File) -> Result<Inventory> {
    let mut read = |len: usize| -> Result<Vec<u8>> {
        let mut buf = vec![0; len];
        file.read_exact(&mut buf).context("truncated")?;
        Ok(buf)
    };
    if read(CACHE_MAGIC.len())? != CACHE_MAGIC {
        bail!("not an inventory cache of this version");
    }
    let head = read(24)?;
    let word = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().expect("8 bytes"));
    let (pack_bytes, n, hex_len) = (word(0), usize::try_from(word(8))?, usize::try_from(word(16))?);
    let oids = read(n * hex_len)?;
    // ASCII, so that slicing at multiples of `hex_len` cannot split a character.
    if !oids.is_ascii() {
        bail!("an object id is not ASCII");
    }
    let oids = String::from_utf8(oids)?;
    let sizes = read(n * 8)?;
    let depths = read(n * 4)?;
    let blobs = sizes
        .chunks_exact(8)
        .zip(depths.chunks_exact(4))
        .map(|(size, depth)| Blob {
            size: u64::from_le_bytes(size.try_into().expect("8 bytes")),
            depth: u32::from_le_bytes(depth.try_into().expect("4 bytes")),
        })
        .collect();
    Ok(Inventory { blobs, oids, hex_len, pack_bytes })
}

/// Lists every blob with its size and delta depth, in pack order.
pub fn scan(git_dir: &Path) -> Result<Inventory> {
    let (mut inventory, bases) = list(git_dir)?;
    let depths = depths(&inventory, &bases)?;
    for (blob, depth) in inventory.blobs.iter_mut().zip(depths) {
        blob.depth = depth;
    }
    Ok(inventory)
}

/// git's listing: the blobs (depth not yet known) and each blob's delta base key (0: none).
fn list(git_dir: &Path) -> Result<(Inventory, Vec<u64>)> {
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
    let mut reader = BufReader::with_capacity(1 << 20, child.stdout.take().expect("piped stdout"));
    let mut inventory = Inventory::new();
    let mut bases: Vec<u64> = Vec::new();
    let mut line = String::new();
    while {
        line.clear();
        reader.read_line(&mut line)? > 0
    } {
        let mut fields = line.trim_end().split(' ');
        let (Some(kind), Some(oid), Some(size), Some(disk), Some(base)) =
            (fields.next(), fields.next(), fields.next(), fields.next(), fields.next())
        else {
            bail!("unexpected cat-file line {line:?}");
        };
        inventory.pack_bytes += disk.parse::<u64>()?;
        if kind != "blob" {
            continue;
        }
        inventory.push(oid, size.parse()?, 0)?;
        bases.push(if base.bytes().all(|b| b == b'0') { 0 } else { key(base)? });
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("git cat-file --batch-all-objects failed ({status})");
    }
    Ok((inventory, bases))
}

/// Each blob's delta chain length, following `bases` (keys of the delta bases, 0: stored whole).
fn depths(inventory: &Inventory, bases: &[u64]) -> Result<Vec<u32>> {
    let n = inventory.blobs.len();
    // Blobs are only ever deltified against blobs, so the chains stay within this list.
    let mut index: HashMap<u64, usize, BuildHasherDefault<KeyHasher>> = HashMap::default();
    index.reserve(n);
    for i in 0..n {
        index.insert(key(inventory.oid(i))?, i);
    }
    let mut depth: Vec<Option<u32>> = vec![None; n];
    let mut chain = Vec::new();
    for start in 0..n {
        chain.clear();
        let mut at = start;
        let mut known;
        loop {
            if let Some(d) = depth[at] {
                known = d;
                break;
            }
            chain.push(at);
            match index.get(&bases[at]) {
                Some(&base) if bases[at] != 0 && chain.len() <= n => at = base,
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
    Ok(depth.into_iter().map(|d| d.unwrap_or(0)).collect())
}

/// The first 16 hex digits of an object id: unique enough to follow delta chains.
fn key(oid: &str) -> Result<u64> {
    u64::from_str_radix(oid.get(..16).unwrap_or(oid), 16).with_context(|| format!("bad object id {oid:?}"))
}

/// The keys are already uniformly random (the start of a hash): SipHash over them would only cost time.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    fn write_u64(&mut self, key: u64) {
        self.0 = key;
    }
}
