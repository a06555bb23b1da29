//! Leaf helpers that copy git's C behaviour byte for byte. Nothing here depends on the rest of the crate.
pub mod parse_ulong;
pub mod quote;
pub mod sigset;
pub mod strerror;
pub mod strtoumax;
