//! cat-blobd answers git fast-import's read commands (`cat-blob`, `get-mark`, `ls`) from an existing
//! repository, byte for byte like `git fast-import --cat-blob-fd`, but faster.
//!
//! Data flows one way, and the modules follow it:
//!
//! ```text
//! io/            bytes in -> lines, bytes -> fd (the line reader and the gather-writer, shared by all)
//! fast_import/   front end: lines -> jobs      (fast-import grammar and stream state, in stream order)
//! cat_file/      front end: lines -> answers   (git cat-file's flags, formats and object names)
//! engine/        jobs -> ordered responses     (resolver threads, one ordered writer)
//! store/         object id -> object bytes     (packs via mmap, loose objects, alternates, delta-base cache)
//! response/      object bytes -> responses     (response encoding, gathered into one writev by io/)
//! server/        many streams, one store       (daemon mode over a Unix socket)
//! wire/          the daemon's socket protocol  (its hello and replies, and the client side: connect, stats)
//! shim/          the binary run as `git`       (cat-file and fast-import here, the rest to the real git)
//! config/        git's configuration: the keys cat-blobd reads, `GIT_CONFIG_PARAMETERS` (read and written)
//! git_compat/    leaf helpers that copy git's C behaviour
//! ```
//!
//! `main.rs` only parses flags, calls [`fast_import::run`] and maps errors to exit codes.
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
pub mod io;
pub mod quota;
mod repo;
pub mod response;
pub mod server;
pub mod settings;
pub mod shim;
pub mod store;
pub mod wire;
