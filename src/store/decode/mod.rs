//! Decoding what is stored: zlib streams whole ([`inflate`]) or only their first bytes ([`inflate_prefix`]), and
//! git's deltas ([`delta`]), one at a time or several composed into one ([`compose`]).
pub(crate) mod compose;
pub(crate) mod delta;
mod inflate;
pub(super) mod inflate_prefix;

pub(super) use inflate::Inflater;

use super::Damage;

/// Deflate expands at most 1032 times (a 258-byte match in every 2 bits); a size larger than this many times
/// the compressed bytes available is damage, refused before allocating it.
pub(crate) fn inflatable(declared: u64, compressed: usize) -> Result<(), Damage> {
    if declared > (compressed as u64).saturating_mul(1032) {
        return Err(Damage::ImpossibleSize { declared, compressed: compressed as u64 });
    }
    Ok(())
}
