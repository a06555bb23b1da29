//! What can go wrong reading the store, in one place for every layer: damage to an object ([`Damage`]) and where it
//! was found ([`Location`]), the error a read returns ([`ReadError`]), and why a pack, its index or a
//! multi-pack-index or an entry of it cannot be used ([`PackError`], [`IndexError`], [`MidxError`],
//! [`MidxLoadError`]).
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gix_hash::ObjectId;

use super::decode::delta;
use super::locate::replace;
use crate::fatal::Bytes;

/// What is wrong with a stored object. Each one names damage, never absence. (Errors of other crates are
/// shared, so that a `ReadError` can be cloned.)
#[derive(Debug, Clone, thiserror::Error)]
pub enum Damage {
    #[error("bad entry header: {0}")]
    Entry(Arc<gix_error::Error>),
    #[error("entry lies past the end of the pack data (truncated pack?)")]
    Truncated,
    #[error("corrupt zlib stream")]
    Zlib,
    /// A loose object's zlib stream that asks for a preset dictionary, as git names it.
    #[error("inflate: needs dictionary")]
    ZlibDictionary,
    #[error("inflates to {} the declared {declared} bytes", actual.map_or("more than".into(), |n| format!("{n} bytes instead of")))]
    SizeMismatch { declared: u64, actual: Option<u64> },
    #[error("declares {declared} bytes, more than {compressed} bytes of zlib data can hold")]
    ImpossibleSize { declared: u64, compressed: u64 },
    #[error(transparent)]
    Delta(#[from] delta::DeltaError),
    #[error("object of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge { size: u64, limit: u64 },
    #[error("delta cycle: the chain of bases comes back to an entry it passed")]
    DeltaCycle,
    #[error("delta chain produces more than {limit} bytes")]
    ChainTooLarge { limit: u64 },
    #[error("delta base {0} is in no pack and not loose")]
    BaseMissing(ObjectId),
    #[error("delta base offset points outside the pack")]
    BadBaseOffset,
    #[error("{0}")]
    Unusable(Arc<PackError>),
    #[error("corrupt loose object header")]
    LooseHeader,
    /// A loose object whose header names a type git does not know (`git hash-object --literally -t bogus`):
    /// git's "invalid object type"; `cat-file --allow-unknown-type` shows the name and size.
    /// `header_too_long`: more than git's 32 header bytes, which git reads only with --allow-unknown-type.
    #[error("invalid object type")]
    UnknownType { type_name: Vec<u8>, size: u64, header_too_long: bool },
    #[error("garbage at end of loose object")]
    TrailingGarbage,
    #[error("{0}")]
    Io(Arc<std::io::Error>),
    /// Damage a caller found in a source of objects of its own ([`Location::Caller`]).
    #[error("{0}")]
    Caller(Arc<dyn std::error::Error + Send + Sync>),
    #[error("replacement {0} not found")]
    ReplacementMissing(ObjectId),
    #[error(transparent)]
    Replace(#[from] replace::ReplaceError),
}

/// Where damage was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Pack {
        path: PathBuf,
        offset: u64,
    },
    Loose {
        path: PathBuf,
    },
    /// A pack index that could not be read at all: any object might be in it.
    Index {
        path: PathBuf,
    },
    /// The replace refs (`refs/replace/`).
    ReplaceRefs,
    /// A source of objects that a caller reads before the store, named by that caller.
    Caller(&'static str),
}

/// An object that exists but cannot be read correctly. Names the object and where the damage is.
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot read object {oid} from {location}: {damage}")]
pub struct ReadError {
    pub oid: ObjectId,
    pub location: Location,
    pub damage: Damage,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Pack { path, offset } => write!(f, "{} at offset {offset}", show(path)),
            Location::Loose { path } => write!(f, "{}", show(path)),
            Location::Index { path } => write!(f, "unreadable pack index {}", show(path)),
            Location::ReplaceRefs => write!(f, "replace refs"),
            Location::Caller(name) => write!(f, "{name}"),
        }
    }
}

/// Why a pack cannot be used: its index (then any object might be in it), or its data.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("{0}")]
    Index(#[from] IndexError),
    #[error("{0}")]
    Midx(MidxError),
    #[error("cannot open pack: {0}")]
    Open(gix_error::Error),
    /// The `.pack` file is not there (removed by a repack, or with its repository, after its `.idx` was listed):
    /// git's `is_pack_valid` fails and its objects are not found in it.
    #[error("cannot open pack: {0}")]
    Gone(gix_error::Error),
    #[error("pack has {pack} objects but its index lists {index}")]
    CountMismatch { pack: u32, index: u32 },
    #[error("pack does not match its index (checksum differs: truncated or replaced?)")]
    ChecksumMismatch,
}

/// Why an index cannot be used, in git's words (`packfile.c`).
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("cannot open {}: {source}", show(.path))]
    Open { path: PathBuf, source: std::io::Error },
    #[error("index file {} is too small", show(.0))]
    TooSmall(PathBuf),
    #[error("index file {} is version {version} and is not supported by this binary", show(.path))]
    Version { path: PathBuf, version: u32 },
    #[error("non-monotonic index {}", show(.0))]
    NonMonotonic(PathBuf),
    #[error("wrong index v{version} file size in {}", show(.path))]
    WrongSize { path: PathBuf, version: u32 },
    /// A 32-bit offset that names a slot past the index's table of 64-bit offsets.
    #[error("offset beyond end of pack index for {} (truncated index?)", show(.0))]
    LargeOffset(PathBuf),
}

fn show(path: &Path) -> String {
    Bytes(path.as_os_str().as_bytes()).to_string()
}

/// A midx hit whose entry cannot be decoded (a pack number or large offset out of range).
#[derive(Debug, thiserror::Error)]
#[error("multi-pack-index {}: {source}", show(.path))]
pub struct MidxError {
    pub(in crate::store) path: PathBuf,
    pub(in crate::store) source: MidxEntryError,
}

/// What is wrong with one object's entry of a midx, in git's words (git dies on both).
#[derive(Debug, thiserror::Error)]
pub(in crate::store) enum MidxEntryError {
    #[error("bad pack-int-id: {pack} ({packs} total packs)")]
    PackNumber { pack: u32, packs: u32 },
    #[error("multi-pack-index large offset out of bounds")]
    LargeOffset,
}

/// Why a `.midx` file is not used (then every pack is searched on its own). git says most of these in an `error:`
/// line or dies; cat-blobd ignores the file silently.
#[derive(Debug, thiserror::Error)]
pub(in crate::store) enum MidxLoadError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("too small")]
    TooSmall,
    #[error("bad signature")]
    Signature,
    #[error("version {0} not recognized")]
    Version(u8),
    #[error("hash version {0} does not match the repository's")]
    Hash(u8),
    #[error("bad chunk table: {0}")]
    Chunks(gix_error::Error),
    #[error("a chunk is not 4-byte aligned or overlaps the trailing checksum")]
    ChunkPlacement,
    #[error("required chunk {} missing or of the wrong size", .0.escape_ascii())]
    Chunk([u8; 4]),
    #[error("oid fanout out of order")]
    Fanout,
    #[error("pack-name chunk is too short")]
    PackNames,
    #[error("pack names out of order")]
    PackNameOrder,
}
