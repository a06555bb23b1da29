//! Where objects are: the object directories (the repository's and its [`alternates`]), their packs (each a
//! [`pack_index`] and its [`pack`] data, grouped by a [`midx`] or not, as one [`packset`] per directory; each
//! `.midx` file read by [`midx_file`]), loose files ([`loose`]), and the [`replace`] refs that send one id to
//! another. Also the passes over all of it that need no object's content: listing every object ([`enumerate`])
//! and checking many ids at once ([`exists_sorted`]).
pub(super) mod alternates;
mod chain_kinds;
mod enumerate;
mod exists_sorted;
mod kind_memo;
pub(super) mod loose;
mod midx;
mod midx_file;
mod pack;
mod pack_index;
mod packset;
mod prefetch;
pub(super) mod replace;
mod resident;
mod rev_file;
pub(super) mod rev_index;
mod skewed;
mod sorted_offsets;

pub(crate) use enumerate::{PrefixMatch, Run, WalkOrder};
pub(super) use midx::PackOpener;
pub(crate) use pack::EntryKey;
pub(super) use pack::Pack;
pub(super) use packset::{Copy, PackSet};
pub(crate) use replace::Replacements;
