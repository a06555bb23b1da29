//! cat-blobd answers git fast-import's read commands (`cat-blob`, `get-mark`, `ls`) from an existing
//! repository, byte for byte like `git fast-import --cat-blob-fd`, but faster.
//!
//! Data flows one way, and the modules follow it:
//!
//! ```text
//! request/   bytes in -> Command           (line reader, dataref parsing)
//! session    Command  -> store lookups      (stream state, in stream order)
//! store/     object id -> object bytes      (packs via mmap, loose objects, alternates, delta-base cache)
//! pipeline   requests in flight             (resolver threads, one ordered writer)
//! response/  object bytes -> fd             (response encoding, one writev per response)
//! server/    many streams, one store        (daemon mode over a Unix socket)
//! ```
//!
//! `main.rs` only parses flags, calls [`session::run`] and maps errors to exit codes.
#![deny(unsafe_code)]

pub mod cli;
pub mod fatal;
pub mod fuzzing;
pub mod pipeline;
pub mod repo;
pub mod request;
pub mod response;
pub mod server;
pub mod session;
pub mod store;
