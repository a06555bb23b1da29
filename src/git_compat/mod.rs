//! Leaf helpers that copy git's C behaviour byte for byte. Nothing here depends on the rest of the crate.
pub mod quote;
