//! The read paths: an object whole, through its delta chain ([`resolve`]), with the delta-base [`cache`]; its type
//! and size alone ([`info`]); and a big blob in pieces ([`big`]).
mod big;
pub(crate) mod cache;
mod info;
mod resolve;

pub(super) use big::Want;
pub use big::{Answer, BigBlob, DEFAULT_BIG_FILE_THRESHOLD, PieceError};
pub(super) use info::Where;
pub(crate) use info::{Info, Place};
pub(super) use resolve::{PackOrder, Scratch};
