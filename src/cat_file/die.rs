//! git cat-file's own `die()` messages, word for word, each with what it names.
use crate::fatal::Bytes;
use crate::store::ObjectId;

#[derive(Debug, thiserror::Error)]
pub(crate) enum Die {
    #[error("git cat-file: could not get object info")]
    NoObjectInfo,
    #[error("Not a valid object name {}", Bytes(.0))]
    NotValidName(Vec<u8>),
    #[error("invalid object type \"{}\"", Bytes(.0))]
    InvalidType(Vec<u8>),
    #[error("git cat-file {}: bad file", Bytes(.0))]
    BadFile(Vec<u8>),
    #[error("path '{}' exists on disk, but not in '{}'", Bytes(.path), Bytes(.rev))]
    OnDiskNotInRev { path: Vec<u8>, rev: Vec<u8> },
    #[error("path '{}' exists on disk, but not in the index", Bytes(.0))]
    OnDiskNotInIndex(Vec<u8>),
    #[error("empty command in input")]
    EmptyCommand,
    #[error("whitespace before command: '{}'", Bytes(.0))]
    WhitespaceBeforeCommand(Vec<u8>),
    #[error("flush is only for --buffer mode")]
    FlushWithoutBuffer,
    #[error("mailmap: invalid boolean '{}'", Bytes(.0))]
    MailmapBoolean(Vec<u8>),
    #[error("{0} requires arguments")]
    RequiresArguments(&'static str),
    #[error("{0} takes no arguments")]
    TakesNoArguments(&'static str),
    #[error("unknown command: '{}'", Bytes(.0))]
    UnknownCommand(Vec<u8>),
    /// An object found by name, then gone when read (a repository changed under the run).
    #[error("object {0} disappeared")]
    Disappeared(ObjectId),
}
