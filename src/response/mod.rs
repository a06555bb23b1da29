//! Responses: what each command answers ([`encode`]) and how it reaches the frontend ([`writev`]).
pub mod encode;
pub mod writev;
