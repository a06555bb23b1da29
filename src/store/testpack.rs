//! Small packs for the store's unit tests, written entry by entry with a version-2 index, in a temporary
//! object directory. Nothing checks them: a test may write a damaged pack (a delta cycle) as easily as a valid one.
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::ZlibEncoder;

use super::{Kind, ObjectId};

/// How an entry is stored.
pub(super) enum Stored {
    Whole(Kind, Vec<u8>),
    /// A delta on the entry at this index of the same pack (written before it).
    Ofs(usize, Vec<u8>),
    /// A delta on the object with this id.
    Ref(ObjectId, Vec<u8>),
}

/// A temporary object directory.
pub(super) struct Objects {
    dir: tempfile::TempDir,
}

impl Objects {
    pub(super) fn new() -> Objects {
        let dir = tempfile::tempdir().expect("temporary directory");
        std::fs::create_dir_all(dir.path().join("pack")).expect("objects/pack");
        Objects { dir }
    }

    pub(super) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a pack of `entries` (each with the id its index lists) and its index; returns the pack's path and
    /// where each entry starts.
    pub(super) fn add_pack(&self, name: &str, entries: &[(ObjectId, Stored)]) -> (PathBuf, Vec<u64>) {
        let mut pack = b"PACK".to_vec();
        pack.extend_from_slice(&2u32.to_be_bytes());
        pack.extend_from_slice(&(entries.len() as u32).to_be_bytes());
        let mut offsets = Vec::new();
        for (_, stored) in entries {
            let start = pack.len() as u64;
            let (type_number, payload) = match stored {
                Stored::Whole(kind, data) => (type_number(*kind), data),
                Stored::Ofs(_, delta) => (6, delta),
                Stored::Ref(_, delta) => (7, delta),
            };
            pack.extend_from_slice(&entry_header(type_number, payload.len() as u64));
            match stored {
                Stored::Ofs(base, _) => pack.extend_from_slice(&ofs_distance(start - offsets[*base])),
                Stored::Ref(base, _) => pack.extend_from_slice(base.as_slice()),
                Stored::Whole(..) => {}
            }
            pack.extend_from_slice(&deflate(payload));
            offsets.push(start);
        }
        let checksum = sha1(&pack);
        pack.extend_from_slice(checksum.as_slice());
        let pack_path = self.path().join("pack").join(format!("pack-{name}.pack"));
        std::fs::write(&pack_path, &pack).expect("write pack");
        let ids: Vec<ObjectId> = entries.iter().map(|(id, _)| *id).collect();
        std::fs::write(pack_path.with_extension("idx"), index(&ids, &offsets, &checksum)).expect("write idx");
        (pack_path, offsets)
    }

    /// Writes a loose object.
    pub(super) fn add_loose(&self, kind: Kind, data: &[u8]) -> ObjectId {
        let id = object_id(kind, data);
        let path = super::loose::path(self.path(), &id);
        std::fs::create_dir_all(path.parent().expect("fan-out directory")).expect("fan-out directory");
        let mut object = format!("{kind} {}\0", data.len()).into_bytes();
        object.extend_from_slice(data);
        std::fs::write(path, deflate(&object)).expect("write loose object");
        id
    }

    /// A pack `a` of a delta chain, indexed by git with its `.rev` beside it.
    pub(super) fn pack_with_rev_file(&self) -> PathBuf {
        let contents: Vec<Vec<u8>> = (1..12).map(|k| b"line of a chain\n".repeat(k)).collect();
        let contents: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
        let (path, _) = self.add_pack("a", &chain(&contents, true));
        std::fs::remove_file(path.with_extension("idx")).expect("remove our index");
        let status = std::process::Command::new("git")
            .args(["index-pack", "--rev-index"])
            .arg(&path)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .stdout(std::process::Stdio::null())
            .status()
            .expect("git index-pack");
        assert!(status.success());
        assert!(path.with_extension("rev").is_file());
        path
    }

    /// `git multi-pack-index write` over these objects (git writes a midx only for its own object directory or an
    /// alternate of it: a scratch repository borrows them).
    pub(crate) fn write_midx(&self) {
        let repo = tempfile::tempdir().expect("temporary directory");
        let git = |args: &[&std::ffi::OsStr]| {
            let mut command = std::process::Command::new("git");
            command.arg("--git-dir").arg(repo.path()).args(args);
            command.env("GIT_CONFIG_NOSYSTEM", "1").env("GIT_CONFIG_GLOBAL", "/dev/null").status().expect("git")
        };
        assert!(git(&["init".as_ref(), "-q".as_ref(), "--bare".as_ref()]).success());
        // git writes a midx only for its own object directory or an alternate of it.
        let alternates = repo.path().join("objects/info/alternates");
        std::fs::write(alternates, [self.path().as_os_str().as_bytes(), b"\n"].concat()).expect("alternates");
        let status =
            git(&["multi-pack-index".as_ref(), "--object-dir".as_ref(), self.path().as_ref(), "write".as_ref()]);
        assert!(status.success());
    }

    /// Rewrites the midx that [`Objects::write_midx`] wrote into one that only git 2.54 and later write (with
    /// `git multi-pack-index compact`): version 2, its pack names in reverse order (every entry's pack number
    /// following), and the trailing checksum of the result.
    pub(crate) fn midx_to_version_2_reversed(&self) {
        let path = self.path().join("pack/multi-pack-index");
        let mut midx = std::fs::read(&path).expect("midx");
        let be32 = |bytes: &[u8]| u32::from_be_bytes(bytes[..4].try_into().expect("4 bytes"));
        let be64 = |bytes: &[u8]| u64::from_be_bytes(bytes[..8].try_into().expect("8 bytes"));
        let chunk = |midx: &[u8], id: &[u8]| {
            let toc = &midx[12..12 + 12 * (midx[6] as usize + 1)];
            let at = toc.chunks_exact(12).position(|entry| &entry[..4] == id).expect("chunk");
            be64(&toc[12 * at + 4..]) as usize..be64(&toc[12 * (at + 1) + 4..]) as usize
        };
        let packs = be32(&midx[8..12]);
        let names_at = chunk(&midx, b"PNAM");
        let names: Vec<Vec<u8>> =
            midx[names_at.clone()].split(|&b| b == 0).take(packs as usize).map(<[u8]>::to_vec).collect();
        let mut reversed: Vec<u8> = names.iter().rev().flat_map(|name| [&name[..], b"\0"].concat()).collect();
        reversed.resize(names_at.len(), 0);
        midx[names_at].copy_from_slice(&reversed);
        let offsets_at = chunk(&midx, b"OOFF");
        for entry in midx[offsets_at].chunks_exact_mut(8) {
            let number = packs - 1 - be32(entry);
            entry[..4].copy_from_slice(&number.to_be_bytes());
        }
        midx[4] = 2;
        let trailer = midx.len() - 20;
        let checksum = sha1(&midx[..trailer]);
        midx[trailer..].copy_from_slice(checksum.as_slice());
        std::fs::write(path, midx).expect("write midx");
    }
}

/// Sets the modification time of the pack at `pack_path` (which orders the search) to `seconds` after the epoch.
pub(super) fn set_mtime(pack_path: &Path, seconds: u64) {
    let file = std::fs::File::options().write(true).open(pack_path).expect("open pack");
    file.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds)).expect("set mtime");
}

/// A version-2 index (CRCs left 0: nothing here reads them).
fn index(ids: &[ObjectId], offsets: &[u64], pack_checksum: &ObjectId) -> Vec<u8> {
    let mut sorted: Vec<(ObjectId, u64)> = ids.iter().copied().zip(offsets.iter().copied()).collect();
    sorted.sort();
    let mut idx = b"\xfftOc\x00\x00\x00\x02".to_vec();
    for byte in 0..=255u8 {
        let count = sorted.iter().filter(|(id, _)| id.as_slice()[0] <= byte).count() as u32;
        idx.extend_from_slice(&count.to_be_bytes());
    }
    sorted.iter().for_each(|(id, _)| idx.extend_from_slice(id.as_slice()));
    sorted.iter().for_each(|_| idx.extend_from_slice(&0u32.to_be_bytes()));
    sorted.iter().for_each(|(_, offset)| idx.extend_from_slice(&(*offset as u32).to_be_bytes()));
    idx.extend_from_slice(pack_checksum.as_slice());
    let checksum = sha1(&idx);
    idx.extend_from_slice(checksum.as_slice());
    idx
}

fn type_number(kind: Kind) -> u8 {
    match kind {
        Kind::Commit => 1,
        Kind::Tree => 2,
        Kind::Blob => 3,
        Kind::Tag => 4,
    }
}

fn entry_header(type_number: u8, mut size: u64) -> Vec<u8> {
    let mut out = vec![(type_number << 4) | (size & 15) as u8];
    size >>= 4;
    while size > 0 {
        *out.last_mut().expect("one byte") |= 0x80;
        out.push((size & 0x7f) as u8);
        size >>= 7;
    }
    out
}

fn ofs_distance(mut distance: u64) -> Vec<u8> {
    let mut out = vec![(distance & 0x7f) as u8];
    distance >>= 7;
    while distance > 0 {
        distance -= 1;
        out.insert(0, 0x80 | (distance & 0x7f) as u8);
        distance >>= 7;
    }
    out
}

fn size(mut n: u64, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push(0x80 | (n & 0x7f) as u8);
        n >>= 7;
    }
    out.push(n as u8);
}

/// A delta that copies the first `keep` bytes of a base of `base_len` bytes, then inserts `insert`.
pub(super) fn delta(base_len: usize, keep: usize, insert: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    size(base_len as u64, &mut out);
    size((keep + insert.len()) as u64, &mut out);
    if keep > 0 {
        assert!(keep < 0x10000, "one copy instruction");
        out.extend_from_slice(&[0x80 | 0x10 | 0x20, (keep & 0xff) as u8, (keep >> 8) as u8]);
    }
    for piece in insert.chunks(0x7f) {
        out.push(piece.len() as u8);
        out.extend_from_slice(piece);
    }
    out
}

pub(super) fn object_id(kind: Kind, data: &[u8]) -> ObjectId {
    gix_object::compute_hash(gix_hash::Kind::Sha1, kind, data).expect("hash")
}

fn sha1(bytes: &[u8]) -> ObjectId {
    let mut hasher = gix_hash::hasher(gix_hash::Kind::Sha1);
    hasher.update(bytes);
    hasher.try_finalize().expect("hash")
}

fn deflate(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = ZlibEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(bytes).expect("deflate");
    encoder.finish().expect("deflate")
}

/// `contents` as a chain: the first whole, each next a delta on the one before (OFS_DELTA or REF_DELTA). Each
/// content must start with the one before it.
pub(super) fn chain(contents: &[&[u8]], ofs: bool) -> Vec<(ObjectId, Stored)> {
    chain_of(Kind::Blob, contents, ofs)
}

/// [`chain`] of objects of `kind`.
pub(super) fn chain_of(kind: Kind, contents: &[&[u8]], ofs: bool) -> Vec<(ObjectId, Stored)> {
    let mut entries: Vec<(ObjectId, Stored)> = Vec::new();
    for (k, content) in contents.iter().enumerate() {
        let id = object_id(kind, content);
        let stored = match k {
            0 => Stored::Whole(kind, content.to_vec()),
            _ => {
                let before = contents[k - 1];
                let delta = delta(before.len(), before.len(), &content[before.len()..]);
                if ofs { Stored::Ofs(k - 1, delta) } else { Stored::Ref(entries[k - 1].0, delta) }
            }
        };
        entries.push((id, stored));
    }
    entries
}

/// Reproducible bytes that do not compress (xorshift64), without a dependency.
pub(super) fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}
