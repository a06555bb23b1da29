//! The floor of a blob request stream: the least work its answer needs, done once, on one thread.
//!
//! Reads the whole request stream first (`cat-blob <id>` lines or bare ids), works out which pack entries the
//! answers need (every requested object and the bases its delta chain reaches), and how many times each is
//! needed (requests of it, plus deltas built on it). Then answers in request order: each needed entry is inflated
//! exactly once and each delta applied exactly once, a result is kept only while something still needs it (as
//! index-pack resolves each base once for all its children), and the answers go to stdout (a pipe of 1 MiB) in
//! `writev`s of up to 256 KiB, in git's `<id> <type> <size>\n<content>\n` form.
//!
//! Not shipped and not the same contract as cat-blobd (it sees the whole stream before answering, keeps whatever
//! is still needed however large, trusts the pack): it is what the inflate, the delta copies and the pipe cost
//! with nothing else, the yardstick in benches/README.md's "The floor of a scan".
//!
//! Usage: `floor GIT_DIR < requests | reader` (one pack in GIT_DIR/objects/pack).
use std::io::Read;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use anyhow::{Context, bail, ensure};
use gix_pack::data::entry::Header;

/// One needed pack entry.
struct Node {
    data_offset: u64,
    size: usize,
    /// The node this entry is a delta against.
    base: Option<usize>,
    /// Requests of it still to answer plus deltas on it still to apply.
    need: u32,
    kind: &'static [u8],
    value: Option<Rc<Vec<u8>>>,
}

struct Plan {
    nodes: Vec<Node>,
    /// Node of each request, in request order, with its id.
    requests: Vec<(usize, gix_hash::ObjectId)>,
}

fn pack_files(git_dir: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let dir = git_dir.join("objects/pack");
    let mut idx: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "idx"))
        .collect();
    ensure!(idx.len() == 1, "{} has {} pack indexes; the floor reads exactly one", dir.display(), idx.len());
    let idx = idx.pop().expect("one");
    Ok((idx.with_extension("pack"), idx))
}

fn parse_ids(input: &[u8]) -> anyhow::Result<Vec<gix_hash::ObjectId>> {
    let mut ids = Vec::new();
    for line in input.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let hex = line.strip_prefix(b"cat-blob ").unwrap_or(line);
        ids.push(gix_hash::ObjectId::from_hex(hex).with_context(|| format!("bad request {line:?}"))?);
    }
    Ok(ids)
}

fn kind_name(header: &Header) -> &'static [u8] {
    match header {
        Header::Blob => b"blob",
        Header::Tree => b"tree",
        Header::Commit => b"commit",
        Header::Tag => b"tag",
        _ => b"",
    }
}

/// The needed entries and their counts: each request's chain is followed down until it reaches an entry
/// already planned (or its root).
fn plan(
    index: &gix_pack::index::File,
    pack: &gix_pack::data::File,
    ids: Vec<gix_hash::ObjectId>,
) -> anyhow::Result<Plan> {
    let mut by_offset = std::collections::HashMap::<u64, usize>::new();
    let mut nodes: Vec<Node> = Vec::new();
    let mut requests = Vec::with_capacity(ids.len());
    for id in ids {
        let at = index.lookup(id).with_context(|| format!("{id} not in the pack"))?;
        let mut offset = index.pack_offset_at_index(at);
        let mut child: Option<usize> = None;
        let mut first = None;
        loop {
            if let Some(&n) = by_offset.get(&offset) {
                nodes[n].need += 1;
                if let Some(c) = child {
                    nodes[c].base = Some(n);
                }
                first.get_or_insert(n);
                break;
            }
            let entry = pack.entry(offset)?;
            let n = nodes.len();
            let base_offset = match entry.header {
                Header::OfsDelta { base_distance } => Some(entry.base_pack_offset(base_distance)),
                Header::RefDelta { base_id } => Some(index.pack_offset_at_index(
                    index.lookup(base_id).with_context(|| format!("base {base_id} not in the pack"))?,
                )),
                _ => None,
            };
            nodes.push(Node {
                data_offset: entry.data_offset,
                size: entry.decompressed_size as usize,
                base: None,
                need: 1,
                kind: kind_name(&entry.header),
                value: None,
            });
            by_offset.insert(offset, n);
            if let Some(c) = child {
                nodes[c].base = Some(n);
            }
            first.get_or_insert(n);
            match base_offset {
                Some(b) => {
                    child = Some(n);
                    offset = b;
                }
                None => break,
            }
        }
        requests.push((first.expect("a node"), id));
    }
    // Types come from the roots: fill them in going up from each root.
    for n in 0..nodes.len() {
        let mut m = n;
        while nodes[m].kind.is_empty() {
            m = nodes[m].base.expect("a delta has a base");
        }
        nodes[n].kind = nodes[m].kind;
    }
    Ok(Plan { nodes, requests })
}

struct Resolver<'a> {
    pack: &'a [u8],
    inflater: libdeflater::Decompressor,
    scratch: Vec<u8>,
    stack: Vec<usize>,
    inflated: u64,
    applied: u64,
}

impl Resolver<'_> {
    fn inflate(&mut self, data_offset: u64, out: &mut Vec<u8>, size: usize) -> anyhow::Result<()> {
        out.clear();
        out.resize(size, 0);
        let n = self.inflater.zlib_decompress(&self.pack[data_offset as usize..], out)?;
        ensure!(n == size, "entry at {data_offset} inflates to {n}, not {size}");
        self.inflated += size as u64;
        Ok(())
    }

    /// The content of node `n`, built from the nearest kept result below it; every result built on the way is
    /// kept while something still needs it.
    fn resolve(&mut self, nodes: &mut [Node], n: usize) -> anyhow::Result<Rc<Vec<u8>>> {
        self.stack.clear();
        let mut m = n;
        while nodes[m].value.is_none() {
            self.stack.push(m);
            match nodes[m].base {
                Some(b) => m = b,
                None => break,
            }
        }
        let mut below: Option<usize> = nodes[m].value.as_ref().map(|_| m);
        while let Some(m) = self.stack.pop() {
            let value = match below {
                None => {
                    let mut out = Vec::new();
                    self.inflate(nodes[m].data_offset, &mut out, nodes[m].size)?;
                    out
                }
                Some(b) => {
                    let mut delta = std::mem::take(&mut self.scratch);
                    self.inflate(nodes[m].data_offset, &mut delta, nodes[m].size)?;
                    let base = nodes[b].value.clone().expect("built below");
                    let out = apply(&base, &delta)?;
                    self.applied += 1;
                    self.scratch = delta;
                    nodes[b].need -= 1;
                    if nodes[b].need == 0 {
                        nodes[b].value = None;
                    }
                    out
                }
            };
            nodes[m].value = Some(Rc::new(value));
            below = Some(m);
        }
        let value = nodes[n].value.clone().expect("built");
        nodes[n].need -= 1;
        if nodes[n].need == 0 {
            nodes[n].value = None;
        }
        Ok(value)
    }
}

fn read_size(delta: &[u8], pos: &mut usize) -> usize {
    let mut size = 0usize;
    let mut shift = 0;
    loop {
        let byte = delta[*pos];
        *pos += 1;
        size |= usize::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return size;
        }
    }
}

/// git's `patch_delta`, trusting the pack beyond slice bounds.
fn apply(base: &[u8], delta: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut pos = 0;
    ensure!(read_size(delta, &mut pos) == base.len(), "base size mismatch");
    let size = read_size(delta, &mut pos);
    let mut out = Vec::with_capacity(size);
    while pos < delta.len() {
        let cmd = delta[pos];
        pos += 1;
        if cmd & 0x80 != 0 {
            let mut field = 0u64;
            for bit in 0..7 {
                if cmd & (1 << bit) != 0 {
                    field |= u64::from(delta[pos]) << (8 * bit);
                    pos += 1;
                }
            }
            let (offset, len) = ((field & 0xffff_ffff) as usize, (field >> 32) as usize);
            let len = if len == 0 { 0x10000 } else { len };
            out.extend_from_slice(&base[offset..offset + len]);
        } else if cmd != 0 {
            out.extend_from_slice(&delta[pos..pos + usize::from(cmd)]);
            pos += usize::from(cmd);
        } else {
            bail!("reserved opcode");
        }
    }
    ensure!(out.len() == size, "short delta result");
    Ok(out)
}

/// Answers gathered into `writev`s of up to 256 KiB.
struct Out {
    headers: Vec<u8>,
    pending: Vec<(std::ops::Range<usize>, Rc<Vec<u8>>)>,
    bytes: usize,
}

impl Out {
    fn push(&mut self, id: &gix_hash::ObjectId, kind: &[u8], value: Rc<Vec<u8>>) -> anyhow::Result<()> {
        let start = self.headers.len();
        self.headers.extend_from_slice(id.to_hex().to_string().as_bytes());
        self.headers.push(b' ');
        self.headers.extend_from_slice(kind);
        self.headers.push(b' ');
        self.headers.extend_from_slice(value.len().to_string().as_bytes());
        self.headers.push(b'\n');
        self.bytes += self.headers.len() - start + value.len() + 1;
        self.pending.push((start..self.headers.len(), value));
        if self.bytes >= 256 << 10 || self.pending.len() >= 300 {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        let mut iov: Vec<libc::iovec> = Vec::with_capacity(self.pending.len() * 3);
        for (range, value) in &self.pending {
            let h = &self.headers[range.clone()];
            iov.push(libc::iovec { iov_base: h.as_ptr() as *mut _, iov_len: h.len() });
            iov.push(libc::iovec { iov_base: value.as_ptr() as *mut _, iov_len: value.len() });
            iov.push(libc::iovec { iov_base: b"\n".as_ptr() as *mut _, iov_len: 1 });
        }
        let mut at = 0;
        while at < iov.len() {
            // SAFETY: every iovec points into `self.headers`, a pending value or a static, all alive here.
            let n = unsafe { libc::writev(1, iov[at..].as_ptr(), (iov.len() - at) as i32) };
            ensure!(n >= 0, "writev: {}", std::io::Error::last_os_error());
            let mut n = n as usize;
            while at < iov.len() && n >= iov[at].iov_len {
                n -= iov[at].iov_len;
                at += 1;
            }
            if n > 0 {
                // SAFETY: n < iov_len, so the advanced pointer stays inside the same buffer.
                iov[at].iov_base = unsafe { (iov[at].iov_base as *mut u8).add(n) } as *mut _;
                iov[at].iov_len -= n;
            }
        }
        self.pending.clear();
        self.headers.clear();
        self.bytes = 0;
        Ok(())
    }
}

fn main() -> anyhow::Result<()> {
    let git_dir = PathBuf::from(std::env::args_os().nth(1).context("usage: floor GIT_DIR < requests")?);
    let (pack_path, idx_path) = pack_files(&git_dir)?;
    let index = gix_pack::index::File::at(&idx_path, gix_hash::Kind::Sha1)?;
    let pack = gix_pack::data::File::at(&pack_path, gix_hash::Kind::Sha1)?;
    let mut input = Vec::new();
    std::io::stdin().read_to_end(&mut input)?;
    let Plan { mut nodes, requests } = plan(&index, &pack, parse_ids(&input)?)?;
    // SAFETY: fcntl on fd 1 with an integer argument; failure (not a pipe) is ignored, as cat-blobd does.
    unsafe { libc::fcntl(1, libc::F_SETPIPE_SZ, 1 << 20) };
    let data = pack.entry_slice(0..pack.pack_end() as u64).context("pack data")?;
    let mut resolver = Resolver {
        pack: data,
        inflater: libdeflater::Decompressor::new(),
        scratch: Vec::new(),
        stack: Vec::new(),
        inflated: 0,
        applied: 0,
    };
    let mut out = Out { headers: Vec::new(), pending: Vec::new(), bytes: 0 };
    for (n, id) in &requests {
        let value = resolver.resolve(&mut nodes, *n)?;
        out.push(id, nodes[*n].kind, value)?;
    }
    out.flush()?;
    if std::env::var_os("FLOOR_STATS").is_some() {
        eprintln!(
            "floor: {} requests, {} entries, {} inflated bytes, {} deltas applied",
            requests.len(),
            nodes.len(),
            resolver.inflated,
            resolver.applied
        );
    }
    Ok(())
}
