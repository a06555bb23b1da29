//! Object names, resolved as git's `get_oid_with_context` resolves them for cat-file.
//!
//! `resolve` parses a name with gix-revision and answers its callbacks: references through gix-ref, abbreviated
//! ids through the store (`ambiguous` when more than one object fits), `<ref>@{<n>}`, `<ref>@{<date>}` and `@{-<n>}` from reflogs
//! (`reflog`), `@{upstream}` and `@{push}` from the branches' configuration (`upstream`), `:/<text>` and `^{/<text>}` by searching commits (`search`), `:<path>` from the index (`index`),
//! and peeling and `<rev>:<path>` by walking objects (`walk`, and `symlinks` for `--follow-symlinks`). Every
//! step fails with the one `error::NameError`.
mod ambiguous;
mod error;
mod forms;
mod index;
mod reflog;
mod reflog_entries;
mod resolve;
mod search;
mod symlinks;
mod syntax;
mod upstream;
mod walk;

pub use error::{Form, NameError, ReflogError};
pub use forms::refusable;
pub use index::IndexFile;
pub use resolve::{Names, Resolved};
