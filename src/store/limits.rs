//! Allocation limits for untrusted repository data: `GIT_ALLOC_LIMIT`, read as git reads it.
//!
//! git dies when any allocation exceeds `GIT_ALLOC_LIMIT` (`memory_limit_check` in wrapper.c); here it lowers
//! the largest object or delta result the store agrees to allocate, so a pack that declares a huge size is
//! refused before anything is allocated.

use crate::git_compat::parse_ulong::git_parse_ulong;

/// A limit that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// git's `git_env_ulong` message.
    #[error("failed to parse {0}")]
    Parse(&'static str),
}

/// `GIT_ALLOC_LIMIT` from the environment: `None` when unset or 0 (no limit, as in git).
pub fn git_alloc_limit() -> Result<Option<u64>, LimitError> {
    use std::os::unix::ffi::OsStrExt;
    let Some(value) = std::env::var_os("GIT_ALLOC_LIMIT") else { return Ok(None) };
    let limit = git_parse_ulong(value.as_bytes()).ok_or(LimitError::Parse("GIT_ALLOC_LIMIT"))?;
    Ok((limit != 0).then_some(limit))
}
