//! What the fuzz targets in `fuzz/fuzz_targets/` run, shared with their replay in `tests/fuzz_replay.rs` so
//! that every corpus file and every finding is checked by an ordinary `cargo test`, without a fuzzing
//! toolchain. Each function must return normally for any input: a panic is a bug.
//!
//! Limits are small here (1 MiB objects, 8 MiB per delta chain) so that the fuzzer's malloc limit only
//! fires for allocations the store did not bound.
#![doc(hidden)]

use std::fs::File;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::engine::EngineConfig;
use crate::fast_import::{self, Exit, SessionConfig, StreamIo, ls::LsOptions};
use crate::store::cache::SharedCache;
use crate::store::{ObjectId, Resolver, Store, StoreOptions, delta, fuzz_api};

/// The largest object the fuzzed store agrees to allocate.
pub(crate) const MAX_OBJECT_SIZE: u64 = 1 << 20;

fn options() -> StoreOptions {
    StoreOptions { max_object_size: MAX_OBJECT_SIZE, max_chain_bytes: 8 << 20, ..StoreOptions::default() }
}

/// The small repository the `session` and `idx` targets read (`fuzz/repo`, built by `fuzz/make-repo.sh`).
pub struct FuzzRepo {
    pub store: Store,
    /// The bytes of its one pack.
    pub pack: Vec<u8>,
    /// Every object id it holds (from `fuzz/repo/OBJECTS`).
    pub ids: Vec<ObjectId>,
}

impl FuzzRepo {
    /// Opens `root` (the `fuzz/repo` folder: `objects/` and `OBJECTS`).
    pub fn open(root: &Path) -> FuzzRepo {
        let objects = root.join("objects");
        let pack_dir = objects.join("pack");
        let pack = std::fs::read_dir(&pack_dir)
            .expect("fuzz/repo/objects/pack")
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .find(|path| path.extension().is_some_and(|e| e == "pack"))
            .expect("a pack in fuzz/repo");
        let listing = std::fs::read_to_string(root.join("OBJECTS")).expect("fuzz/repo/OBJECTS");
        let ids = listing
            .lines()
            .filter_map(|line| line.split(' ').next())
            .map(|hex| ObjectId::from_hex(hex.as_bytes()).expect("an object id"))
            .collect();
        FuzzRepo {
            store: Store::open(&objects, gix_hash::Kind::Sha1, options()),
            pack: std::fs::read(pack).expect("read the pack"),
            ids,
        }
    }
}

fn dev_null() -> &'static File {
    static DEV_NULL: OnceLock<File> = OnceLock::new();
    DEV_NULL.get_or_init(|| File::options().write(true).open("/dev/null").expect("open /dev/null"))
}

/// `session`: `data` as a whole command stream against `store`, responses and messages to /dev/null, one
/// resolver thread. The cat-blob fd can only be 1 (`--cat-blob-fd` is a command-line flag, and no other fd is
/// passed), so nothing is written anywhere else.
pub fn session(store: &Store, data: &[u8]) -> Exit {
    let null = dev_null().as_fd();
    let io = StreamIo { stdout: Some(null), stderr: Some(null), passed_fds: Some(Vec::new()) };
    let config = SessionConfig {
        cache: SharedCache::new(1 << 20),
        stream_blob_memory: 1 << 20,
        stream_blob_limits: Default::default(),
        ls: LsOptions { quote_path: true, ignore_case: false },
        fast_import_args: Vec::new(),
        relative_marks_dir: std::env::temp_dir().join("cat-blobd-fuzz-no-marks-here"),
        engine: EngineConfig {
            threads: 1,
            window: 8,
            window_bytes: 1 << 20,
            batch_bytes: 64 << 10,
            inline_requests: 0,
            jobs_per_hand_off: 4,
        },
        may_name_files: true,
        process_exits_after: false,
        live: None,
        mark_limits: Default::default(),
        write_through: None,
    };
    let outcome = fast_import::run(data, io, store, config);
    assert_eq!(outcome.fatal.is_some(), outcome.exit == Exit::Fatal, "a fatal exit always has its message");
    outcome.exit
}

/// `delta`: the first two bytes (little-endian) say how many of the following bytes are the base (modulo
/// what is there); the rest is the delta. A result must have exactly the size the delta declares.
pub fn delta(data: &[u8]) {
    let Some((head, rest)) = data.split_first_chunk::<2>() else { return };
    let base_len = usize::from(u16::from_le_bytes(*head)) % (rest.len() + 1);
    let (base, instructions) = rest.split_at(base_len);
    if let Ok(out) = delta::apply(base, instructions, MAX_OBJECT_SIZE) {
        assert_eq!(Ok(out.len() as u64), delta::result_size(instructions), "the result has the declared size");
    }
}

/// `loose`: `data` as the file of a loose object.
pub fn loose(data: &[u8]) {
    if let Ok((_, content)) = fuzz_api::decode_loose(data, MAX_OBJECT_SIZE) {
        assert!(content.len() as u64 <= MAX_OBJECT_SIZE);
    }
}

/// The head lengths the store asks of a zlib stream (delta headers, loose headers, unknown types' headers),
/// and every one around them.
fn head_lengths() -> impl Iterator<Item = usize> {
    (1..=64).chain([1 << 16])
}

/// `inflate_prefix`: `data` as a zlib stream. For every head length, the prefix decoder (src/store/
/// inflate_prefix.rs) must give zlib's bytes, or leave the stream to zlib. Returns how many lengths it answered.
pub fn inflate_prefix(data: &[u8]) -> usize {
    head_lengths().filter(|&max| fuzz_api::inflate_prefix(data, max)).count()
}

/// [`inflate_prefix`] on every object's zlib stream under `objects`: `(streams, streams answered for every
/// head length)`.
pub fn inflate_prefix_objects(objects: &Path, hash: gix_hash::Kind) -> (usize, usize) {
    let store = Store::open(objects, hash, options());
    let (mut streams, mut answered) = (0, 0);
    fuzz_api::each_zlib_stream(&store, |data| {
        streams += 1;
        answered += usize::from(inflate_prefix(data) == head_lengths().count());
    });
    (streams, answered)
}

/// `pack`: `[n: u8][n × offset: u32 LE][pack bytes]`. The pack is stored with an index listing `n` objects
/// whose ids are `[i, 0, 0, …]` (so a REF_DELTA can name them) at those offsets (high bit cleared), its
/// header's object count set to `n` and the index's pack checksum copied from the pack's trailer, so that
/// entry decoding and delta resolution are reached; then every object is read through the [`Store`].
pub fn pack(data: &[u8]) {
    let Some((&count, rest)) = data.split_first() else { return };
    let Some(offsets) = rest.get(..usize::from(count) * 4) else { return };
    let offsets: Vec<u32> = offsets.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()) >> 1).collect();
    let mut pack = rest[offsets.len() * 4..].to_vec();
    if let Some(header_count) = pack.get_mut(8..12) {
        header_count.copy_from_slice(&u32::from(count).to_be_bytes());
    }
    let ids: Vec<ObjectId> = (0..count).map(fake_id).collect();
    let checksum = pack.len().checked_sub(20).map_or([0; 20], |at| pack[at..].try_into().unwrap());
    let entries: Vec<(ObjectId, u32)> = ids.iter().copied().zip(offsets).collect();
    with_pack(&pack, &index_v2(&entries, &checksum), |store| read_all(store, &ids));
}

/// `idx`: `data` as the `.idx` of `repo`'s pack. Every object of the repository is read, and the ids found
/// where a version-2 index keeps them.
pub fn idx(repo: &FuzzRepo, data: &[u8]) {
    let mut ids = repo.ids.clone();
    ids.extend(data.get(1032..).unwrap_or_default().chunks_exact(20).take(16).map(ObjectId::from_bytes_or_panic));
    with_pack(&repo.pack, data, |store| read_all(store, &ids));
}

/// `[i, 0, 0, …]`, the id of the `i`th object of a fuzzed pack.
pub(crate) fn fake_id(i: u8) -> ObjectId {
    let mut bytes = [0u8; 20];
    bytes[0] = i;
    ObjectId::from_bytes_or_panic(&bytes)
}

/// A version-2 pack index for `entries` (sorted by id, offsets below 2^31), CRCs and own checksum zero.
pub(crate) fn index_v2(entries: &[(ObjectId, u32)], pack_checksum: &[u8; 20]) -> Vec<u8> {
    let mut sorted = entries.to_vec();
    sorted.sort();
    let mut out = vec![0xff, b't', b'O', b'c', 0, 0, 0, 2];
    for byte in 0..=255u8 {
        let below = sorted.iter().filter(|(id, _)| id.as_bytes()[0] <= byte).count() as u32;
        out.extend_from_slice(&below.to_be_bytes());
    }
    for (id, _) in &sorted {
        out.extend_from_slice(id.as_bytes());
    }
    out.resize(out.len() + sorted.len() * 4, 0);
    for (_, offset) in &sorted {
        out.extend_from_slice(&(offset & 0x7fff_ffff).to_be_bytes());
    }
    out.extend_from_slice(pack_checksum);
    out.resize(out.len() + 20, 0);
    out
}

/// Stores `pack` and `idx` as the one pack of a fresh object directory and hands the store to `read`.
fn with_pack(pack: &[u8], idx: &[u8], read: impl FnOnce(&Store)) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let pack_dir: PathBuf = dir.path().join("objects/pack");
    std::fs::create_dir_all(&pack_dir).expect("create objects/pack");
    std::fs::write(pack_dir.join("pack-fuzz.pack"), pack).expect("write the pack");
    std::fs::write(pack_dir.join("pack-fuzz.idx"), idx).expect("write the index");
    let store = Store::open(&dir.path().join("objects"), gix_hash::Kind::Sha1, options());
    read(&store);
}

/// Reads every id (twice: the second time from the delta-base cache where there is one); any answer or
/// error is fine, and an error must say which object it concerns.
fn read_all(store: &Store, ids: &[ObjectId]) {
    let mut resolver = Resolver::new(1 << 20);
    for _ in 0..2 {
        for id in ids {
            let _ = store.exists(id);
            if let Err(err) = store.read(id, &mut resolver) {
                assert_eq!(err.oid, *id);
                assert!(err.to_string().contains(&id.to_string()));
            }
        }
    }
}
