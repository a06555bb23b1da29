//! cat-blobd answers git's object-reading protocols from an existing repository, byte for byte as git does:
//! fast-import's read commands (`cat-blob`, `get-mark`, `ls`) and `git cat-file --batch*`.
//!
//! Data flows one way, and the modules follow it, in the order of docs/reference.md's "How it works":
//!
//! ```text
//! input ─► io (line reader) ─► fast_import/ or cat_file/ ─► engine/ ─► store/ ─► response/ ─► io (writev) ─► fds
//!
//! io/            bytes in -> lines; bytes -> fd (the line reader, the gather-writer, borrowed fds)
//! fast_import/   front end: lines -> jobs      (fast-import grammar and stream state, in stream order)
//! cat_file/      front end: lines -> jobs      (git cat-file's flags, formats, object names in names/)
//! engine/        jobs -> ordered responses     (resolver threads, one ordered writer)
//! store/         object id -> object bytes     (locate/: packs, midx, loose, alternates; decode/; read/: chains, cache)
//! response/      object bytes -> responses     (headers, encoded on the stack; io/ writes them in one writev)
//!
//! around them:
//! server/        many streams, one store each  (the daemon: one repository, or every one under --root)
//! wire/          the daemon's socket protocol  (hello and replies, and the client side: connect, stats)
//! shim/          the binary run as `git`       (cat-file and fast-import here, the rest to the real git)
//! settings.rs    flags, environment and config read once into what every stream starts from
//! config/        git's configuration: the keys cat-blobd reads, `GIT_CONFIG_PARAMETERS`
//! heap.rs        the heap of a one-shot stream: each arena writable whole at once
//! git_compat/    leaf helpers that copy git's C behaviour (and git's tree-entry reader, and its dates: approxidate)
//! ```
//!
//! `main.rs` is the binary's edge: it parses flags, runs one stream (fast-import or cat-file), the daemon, or
//! the shim, and maps errors to git's exit codes.
//!
//! What is `pub` is what the binary, the tests, the benches and the fuzz targets use; the rest is the crate's own.
#![deny(unsafe_code)]
#![warn(unreachable_pub)]

pub mod cat_file;
pub mod cli;
pub mod config;
mod engine;
pub mod fast_import;
pub mod fatal;
pub mod fuzzing;
pub mod git_compat;
pub mod heap;
pub mod io;
pub mod quota;
pub mod refs;
mod repo;
pub mod response;
pub mod server;
pub mod settings;
pub mod shim;
pub mod store;
pub mod wire;
