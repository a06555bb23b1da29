//! Replays every fuzz corpus file and every finding (`fuzz/corpus/<target>/`, `fuzz/artifacts/<target>/`)
//! through the same functions the fuzz targets call (`cat_blobd::fuzzing`), so that CI keeps them passing
//! without a fuzzing toolchain. Each finding also has a named test below, saying what it was.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cat_blobd::fuzzing::{self, FuzzRepo};

const FUZZ_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz");

fn repo() -> &'static FuzzRepo {
    static REPO: OnceLock<FuzzRepo> = OnceLock::new();
    REPO.get_or_init(|| FuzzRepo::open(&Path::new(FUZZ_DIR).join("repo")))
}

/// Runs one input through the target's function.
fn run(target: &str, data: &[u8]) {
    match target {
        "session" => _ = fuzzing::session(&repo().store, data),
        "delta" => fuzzing::delta(data),
        "pack" => fuzzing::pack(data),
        "idx" => fuzzing::idx(repo(), data),
        "loose" => fuzzing::loose(data),
        "inflate_prefix" => _ = fuzzing::inflate_prefix(data),
        other => panic!("unknown fuzz target {other}"),
    }
}

/// Every file under `fuzz/<kind>/<target>/`, sorted.
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(FUZZ_DIR).join(kind).join(target);
    let mut files: Vec<PathBuf> = match fs::read_dir(&dir) {
        Ok(entries) => entries.map(|e| e.expect("dir entry").path()).filter(|p| p.is_file()).collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}

/// Replays the corpus and the findings of `target`; at least one corpus file must exist.
fn replay(target: &str) {
    let corpus = inputs("corpus", target);
    assert!(!corpus.is_empty(), "fuzz/corpus/{target} is empty");
    for path in corpus.iter().chain(&inputs("artifacts", target)) {
        let data = fs::read(path).expect("read input");
        let outcome = std::panic::catch_unwind(|| run(target, &data));
        assert!(outcome.is_ok(), "fuzz target {target} panicked on {}", path.display());
    }
}

#[test]
fn replay_session_corpus_and_findings() {
    replay("session");
}

#[test]
fn replay_delta_corpus_and_findings() {
    replay("delta");
}

#[test]
fn replay_pack_corpus_and_findings() {
    replay("pack");
}

#[test]
fn replay_idx_corpus_and_findings() {
    replay("idx");
}

#[test]
fn replay_loose_corpus_and_findings() {
    replay("loose");
}

#[test]
fn replay_inflate_prefix_corpus_and_findings() {
    replay("inflate_prefix");
}

/// Replays one finding by name.
fn finding(target: &str, name: &str) {
    let path = Path::new(FUZZ_DIR).join("artifacts").join(target).join(name);
    let data = fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    run(target, &data);
}

/// `pack`, first run: LeakSanitizer reported the thread that indexes a pack's delta bases in the background
/// (started by the 32nd read of a pack, detached, holding the pack until it is done: src/store/pack.rs) when an
/// input ended before that thread did. Not a fault in reading; later runs use `-detect_leaks=0`.
#[test]
fn finding_pack_background_base_scan_reported_as_a_leak() {
    finding("pack", "leak-9651e62d61b6cfd434926ff4f43a3e7c4e32b429");
}

/// `idx`, first run: the same background thread, started by reading the objects of `fuzz/repo` through a
/// mutated index of the right size (171 bytes of its id table and offsets changed).
#[test]
fn finding_idx_background_base_scan_reported_as_a_leak() {
    finding("idx", "leak-3be029f0abf2324f9ae73d437b5066a31218e1e1");
}
