//! Leaf helpers that copy git's C behaviour byte for byte. Nothing here depends on the rest of the crate.
pub mod date;
pub(crate) mod parse_ulong;
pub(crate) mod quote;
pub mod sigset;
pub(crate) mod strerror;
pub(crate) mod strtoumax;
pub mod tree_entry;
