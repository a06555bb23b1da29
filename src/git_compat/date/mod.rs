//! git's dates (date.c), ported: `approxidate_careful`, which reads `<ref>@{<date>}`, and `show_date` in RFC
//! 2822, which reflog warnings print. gix-date does not read what approxidate reads (`yesterday`, `noon`,
//! `last friday`, `1 month 2 days ago`, git's guesses at a bare number), so this follows git's C line by line,
//! with the C library's calendar (`tm`) where git uses it.
mod approx;
mod parse;
mod show;
mod tm;

pub use approx::approxidate_careful;
pub use show::{DateError, show_rfc2822};
