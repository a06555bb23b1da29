//! Criterion micro-benchmarks of the three hot paths: parsing request lines, encoding responses and gathering
//! them into a pipe, and resolving one object from a pack (inflate + delta chain). Run with
//! `cargo bench --bench micro`; `benches/README.md` explains how they relate to the end-to-end harness.
use std::collections::HashMap;
use std::io::{IoSlice, Read};
use std::path::Path;
use std::process::Command;

use cat_blobd::fast_import::command::{Context, parse_command};
use cat_blobd::io::writev::{FdSink, GatherWriter};
use cat_blobd::response::encode::Response;
use cat_blobd::store::{Data, ObjectId, Resolver, Store, StoreOptions};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn request_parsing(c: &mut Criterion) {
    let lines: Vec<Vec<u8>> =
        (0..1000u32).map(|i| format!("cat-blob {:040x}", u128::from(i) * 0x9e37_79b9_7f4a_7c15).into_bytes()).collect();
    let rewrites = HashMap::new();
    let cx = Context { hash: gix_hash::Kind::Sha1, rewrites: &rewrites };
    let mut group = c.benchmark_group("request");
    group.throughput(Throughput::Bytes(lines.iter().map(|l| l.len() as u64 + 1).sum()));
    group.bench_function("parse 1000 cat-blob lines", |b| {
        b.iter(|| lines.iter().filter(|line| parse_command(line, cx).is_ok()).count())
    });
    group.finish();
}

fn gather_write(c: &mut Criterion) {
    let (reader, writer) = std::io::pipe().expect("pipe");
    // Drain the pipe on another thread, as a frontend would.
    std::thread::spawn(move || {
        let mut reader = reader;
        let mut buf = vec![0u8; 1 << 20];
        while reader.read(&mut buf).is_ok_and(|n| n > 0) {}
    });
    let mut out = GatherWriter::new(FdSink::new(std::os::fd::AsFd::as_fd(&writer)));
    let oid = ObjectId::from_hex(b"ce013625030ba8dba906f756967f9e9ca394464a").expect("hex");
    let mut group = c.benchmark_group("response");
    for size in [100usize, 16 << 10, 1 << 20] {
        let payload = Data::new(vec![b'x'; size]);
        let responses: Vec<Response> = (0..32).map(|_| Response::blob(&oid, payload.clone())).collect();
        group.throughput(Throughput::Bytes(responses.iter().map(|r| r.len() as u64).sum()));
        group.bench_function(format!("encode + writev 32 responses of {size} bytes into a pipe"), |b| {
            b.iter(|| {
                let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(responses.len() * 3);
                for response in &responses {
                    response.push_slices(&mut slices);
                }
                out.write_all(&mut slices).expect("write to the pipe");
            })
        });
    }
    group.finish();
    drop(writer);
}

/// A small repository made with git: one file in 60 versions, repacked with deltas.
fn delta_repo(dir: &Path) -> (ObjectId, ObjectId) {
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "bench")
            .env("GIT_AUTHOR_EMAIL", "bench@example.com")
            .env("GIT_AUTHOR_DATE", "1700000000 +0000")
            .env("GIT_COMMITTER_NAME", "bench")
            .env("GIT_COMMITTER_EMAIL", "bench@example.com")
            .env("GIT_COMMITTER_DATE", "1700000000 +0000")
            .output()
            .expect("run git");
        assert!(status.status.success(), "git {args:?} failed");
        status.stdout
    };
    git(&["init", "-q"]);
    let mut text: Vec<String> =
        (0..2000).map(|i| format!("line {i} of a file that changes a little each time")).collect();
    let mut first = None;
    for version in 0..60 {
        text[(version * 37) % 2000] = format!("changed in version {version}");
        std::fs::write(dir.join("file.txt"), text.join("\n")).expect("write");
        git(&["add", "file.txt"]);
        git(&["commit", "-q", "-m", "v"]);
        let id = String::from_utf8(git(&["rev-parse", "HEAD:file.txt"])).expect("hex");
        first.get_or_insert(id);
    }
    git(&["repack", "-adfq", "--depth=50", "--window=250"]);
    let last = String::from_utf8(git(&["rev-parse", "HEAD:file.txt"])).expect("hex");
    let parse = |hex: &str| ObjectId::from_hex(hex.trim().as_bytes()).expect("id");
    (parse(first.as_deref().expect("a version")), parse(&last))
}

fn resolve(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (oldest, newest) = delta_repo(dir.path());
    let store = Store::open(&dir.path().join(".git/objects"), gix_hash::Kind::Sha1, StoreOptions::default());
    let mut group = c.benchmark_group("resolve");
    for (name, id) in [("newest version (stored whole)", newest), ("oldest version (end of a delta chain)", oldest)] {
        let size = store.read(&id, &mut Resolver::new(0)).expect("read").expect("present").data.len();
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_function(format!("{name}, no cache"), |b| {
            let mut resolver = Resolver::new(0);
            b.iter(|| store.read(&id, &mut resolver).expect("read"))
        });
        group.bench_function(format!("{name}, 96 MiB cache"), |b| {
            let mut resolver = Resolver::new(96 << 20);
            b.iter(|| store.read(&id, &mut resolver).expect("read"))
        });
    }
    group.finish();
}

criterion_group!(benches, request_parsing, gather_write, resolve);
criterion_main!(benches);
