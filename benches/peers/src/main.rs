//! The peer libraries as tools the benchmarks can run like `git cat-file --batch --buffer`: gitoxide's object
//! database (`gix`) or libgit2's (`git2`, the Rust binding's `Odb::read`) reads object ids, one hex id a line, from
//! stdin and writes `<id> <type> <size>\n<bytes>\n` for each to stdout (`--check`: the header line alone), and
//! `<id> missing\n` for an object that is not there: the same bytes as git's, so the harness can compare them.
//!
//! The output goes through the same pipe as every other tool's, rather than being touched in-process: the pipe
//! copy is part of what a user of any of the tools pays, and equal bytes prove the library read every object.
//!
//! `--threads N` splits the ids into blocks of [`BLOCK`]; worker `k` reads blocks `k`, `k + N`, … with its own
//! handle (its own caches), and the main thread writes the blocks back in order.

use std::io::{BufWriter, Read, Write};
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread;

use anyhow::{Context, Result, bail};

/// Ids per block handed to a worker: large enough that the hand-off costs nothing, small enough to keep both
/// workers busy to the end.
const BLOCK: usize = 512;

#[derive(Clone, Copy, PartialEq)]
enum Library {
    Gix,
    Git2,
}

struct Args {
    library: Library,
    git_dir: PathBuf,
    threads: usize,
    check: bool,
}

fn parse_args() -> Result<Args> {
    let mut args = std::env::args().skip(1);
    let library = match args.next().as_deref() {
        Some("gix") => Library::Gix,
        Some("git2") => Library::Git2,
        _ => bail!("usage: peers gix|git2 --git-dir DIR [--threads N] [--check]"),
    };
    let (mut git_dir, mut threads, mut check) = (None, 1, false);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--git-dir" => git_dir = Some(PathBuf::from(args.next().context("--git-dir needs a value")?)),
            "--threads" => threads = args.next().context("--threads needs a value")?.parse()?,
            "--check" => check = true,
            other => bail!("unknown argument {other:?}"),
        }
    }
    let git_dir = git_dir.context("--git-dir is required")?;
    Ok(Args { library, git_dir, threads: threads.max(1), check })
}

/// One thread's view of an object database.
trait Reader {
    /// Appends the responses for the objects `ids` (hex) name to `out`.
    fn respond(&mut self, ids: &[&[u8]], check: bool, out: &mut Vec<u8>) -> Result<()>;
}

struct GixReader {
    repo: gix::Repository,
    buf: Vec<u8>,
}

impl GixReader {
    /// gix's defaults with `max-performance`: a 64-entry LRU delta-base cache per handle, no object cache (its
    /// documentation advises one only when the same objects are read again and again).
    fn open(shared: &gix::ThreadSafeRepository) -> GixReader {
        GixReader { repo: shared.to_thread_local(), buf: Vec::new() }
    }
}

impl Reader for GixReader {
    fn respond(&mut self, ids: &[&[u8]], check: bool, out: &mut Vec<u8>) -> Result<()> {
        use gix::prelude::{Find, Header};
        for &hex in ids {
            let id = gix::ObjectId::from_hex(hex)?;
            if check {
                match self.repo.objects.try_header(&id)? {
                    Some(h) => header(out, hex, h.kind().as_bytes(), h.size()),
                    None => missing(out, hex),
                }
                continue;
            }
            match self.repo.objects.try_find(&id, &mut self.buf)? {
                Some(data) => {
                    header(out, hex, data.kind.as_bytes(), data.data.len() as u64);
                    out.extend_from_slice(data.data);
                    out.push(b'\n');
                }
                None => missing(out, hex),
            }
        }
        Ok(())
    }
}

/// libgit2's defaults: its odb keeps its own cache of recently read objects.
struct Git2Reader {
    repo: git2::Repository,
}

impl Reader for Git2Reader {
    fn respond(&mut self, ids: &[&[u8]], check: bool, out: &mut Vec<u8>) -> Result<()> {
        let odb = self.repo.odb()?;
        for &hex in ids {
            let id = git2::Oid::from_str(std::str::from_utf8(hex)?)?;
            if check {
                match odb.read_header(id) {
                    Ok((size, kind)) => header(out, hex, git2_kind(kind)?, size as u64),
                    Err(e) if e.code() == git2::ErrorCode::NotFound => missing(out, hex),
                    Err(e) => return Err(e.into()),
                }
                continue;
            }
            match odb.read(id) {
                Ok(object) => {
                    let data = object.data();
                    header(out, hex, git2_kind(object.kind())?, data.len() as u64);
                    out.extend_from_slice(data);
                    out.push(b'\n');
                }
                Err(e) if e.code() == git2::ErrorCode::NotFound => missing(out, hex),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

fn git2_kind(kind: git2::ObjectType) -> Result<&'static [u8]> {
    Ok(match kind {
        git2::ObjectType::Blob => b"blob",
        git2::ObjectType::Tree => b"tree",
        git2::ObjectType::Commit => b"commit",
        git2::ObjectType::Tag => b"tag",
        other => bail!("unexpected object type {other:?}"),
    })
}

fn header(out: &mut Vec<u8>, hex: &[u8], kind: &[u8], size: u64) {
    out.extend_from_slice(hex);
    out.push(b' ');
    out.extend_from_slice(kind);
    out.extend_from_slice(format!(" {size}\n").as_bytes());
}

fn missing(out: &mut Vec<u8>, hex: &[u8]) {
    out.extend_from_slice(hex);
    out.extend_from_slice(b" missing\n");
}

fn main() {
    if let Err(e) = run() {
        // A reader that went away is not an error worth a message.
        if e.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) {
            std::process::exit(0);
        }
        eprintln!("peers: error: {e:#}");
        std::process::exit(128);
    }
}

fn run() -> Result<()> {
    let args = parse_args()?;
    let mut input = Vec::new();
    std::io::stdin().lock().read_to_end(&mut input)?;
    let ids: Vec<&[u8]> = input.lines_bytes().collect();
    let blocks: Vec<&[&[u8]]> = ids.chunks(BLOCK).collect();
    let stdout = std::io::stdout().lock();
    let mut out = BufWriter::with_capacity(1 << 20, stdout);
    let shared = match args.library {
        Library::Gix => Some(gix::open(&args.git_dir)?.into_sync()),
        Library::Git2 => None,
    };
    let open = |_: usize| -> Result<Box<dyn Reader>> {
        Ok(match &shared {
            Some(shared) => Box::new(GixReader::open(shared)),
            None => Box::new(Git2Reader { repo: git2::Repository::open_bare(&args.git_dir)? }),
        })
    };
    thread::scope(|scope| -> Result<()> {
        let mut receivers = Vec::new();
        for worker in 0..args.threads {
            let (send, receive) = mpsc::sync_channel::<Result<Vec<u8>>>(4);
            receivers.push(receive);
            let (blocks, open, check, threads) = (&blocks, &open, args.check, args.threads);
            scope.spawn(move || {
                let mut reader = match open(worker) {
                    Ok(reader) => reader,
                    Err(e) => return drop(send.send(Err(e))),
                };
                for block in blocks.iter().skip(worker).step_by(threads) {
                    let mut buf = Vec::new();
                    let result = reader.respond(block, check, &mut buf).map(|()| buf);
                    let failed = result.is_err();
                    if send.send(result).is_err() || failed {
                        return;
                    }
                }
            });
        }
        for n in 0..blocks.len() {
            let block = receivers[n % args.threads].recv().context("a worker stopped")??;
            out.write_all(&block)?;
        }
        out.flush()?;
        Ok(())
    })
}

/// Lines of a byte buffer without their `\n` (and without a trailing empty line).
trait LinesBytes {
    fn lines_bytes(&self) -> impl Iterator<Item = &[u8]>;
}

impl LinesBytes for Vec<u8> {
    fn lines_bytes(&self) -> impl Iterator<Item = &[u8]> {
        self.split(|&b| b == b'\n').filter(|line| !line.is_empty())
    }
}
