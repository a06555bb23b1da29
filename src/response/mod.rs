//! Responses: what each command answers ([`encode`]). They reach the frontend through [`crate::io::writev`].
pub mod encode;
