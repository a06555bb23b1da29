//! `cat-blobd serve --root DIR`: every repository under one directory, through one daemon.
//!
//! ```text
//! confine   the root: paths resolved beneath it by the kernel (openat2 RESOLVE_BENEATH), never outside it
//! find      a client's repository, found as git finds it from the client's directory and GIT_* variables,
//!           every path it reads (git dir, commondir, common dir, objects, alternates, the repository's
//!           config files and their includes) confined to the root
//! mailmap   where each client's `--use-mailmap` reads (its work tree's top or its own directory), beneath the root
//! pool      the repositories opened so far, shared by their clients, closed idle-longest first past the
//!           memory budget or --max-open-repositories; never one with clients
//! ```
mod confine;
mod find;
mod mailmap;
mod pool;

pub(crate) use confine::{ClientFiles, Root};
pub(crate) use find::{Client, FindError, find};
pub(crate) use pool::{Lease, LeaseError, Pool, PoolLimits};
