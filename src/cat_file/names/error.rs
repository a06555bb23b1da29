//! Why an object name names no object: the one error type of name resolution, shared by the resolver
//! (`resolve`) and the walks it calls (`walk`, `symlinks`, `reflog`, `search`), so that none imports another's
//! module. `Form` lives here too: `forms` finds a form in a name, `resolve` refuses it, and both name it.
use gix_hash::ObjectId;
use gix_object::Kind;

use crate::git_compat::tree_entry::Malformed;
use crate::store::ReadError;

/// Why a name names no object.
#[derive(Debug, thiserror::Error)]
pub enum NameError {
    /// git's `MISSING_OBJECT`: nothing by that name.
    #[error("missing")]
    Missing,
    /// git's `SHORT_NAME_AMBIGUOUS`, with the candidates.
    #[error("ambiguous")]
    Ambiguous(Vec<ObjectId>),
    /// `<rev>:<path>` where the path is not in the tree (git's `get_oid_with_context` says missing; in the
    /// single-object modes git explains it).
    #[error("path '{}' does not exist in '{}'", crate::fatal::Bytes(.path), crate::fatal::Bytes(.rev))]
    PathMissing { path: Vec<u8>, rev: Vec<u8> },
    /// `<rev>:<path>` whose `<rev>` names nothing (the single-object modes say so; batches say missing).
    #[error("invalid object name '{}'.", crate::fatal::Bytes(.0))]
    InvalidRev(Vec<u8>),
    /// `<rev>:./<path>` (or `../`) where there is no work tree (git's `resolve_relative_path`).
    #[error("relative path syntax can't be used outside working tree")]
    RelativePath,
    /// `:<path>` or `:<n>:<path>` in a repository without an index (git's `diagnose_invalid_index_path`).
    #[error("path '{}' does not exist (neither on disk nor in the index)", crate::fatal::Bytes(.0))]
    NotInIndex(Vec<u8>),
    /// `<ref>@{<n>}` past the end of the reflog, an empty reflog, or one that cannot be read.
    #[error(transparent)]
    Reflog(#[from] ReflogError),
    /// `:<n>:<path>` where the index has the path at another stage.
    #[error("path '{}' is in the index, but not at stage {stage}\nhint: Did you mean ':{found}:{}'?", crate::fatal::Bytes(.path), crate::fatal::Bytes(.path))]
    NotAtStage { path: Vec<u8>, stage: u8, found: u8 },
    /// A form of name that cat-blobd does not resolve.
    #[error("cat-blobd cat-file does not support {form} in object names: '{}'", crate::fatal::Bytes(.name))]
    Unsupported { form: Form, name: Vec<u8> },
    /// `--follow-symlinks`: a symlink whose target is not in the tree (git's `DANGLING_SYMLINK`).
    #[error("dangling symlink")]
    Dangling,
    /// `--follow-symlinks`: more than 40 links (`SYMLINK_LOOP`).
    #[error("symlink loop")]
    Loop,
    /// `--follow-symlinks`: a file where the path needs a directory (`NOT_DIR`).
    #[error("not a directory")]
    NotDir,
    /// `--follow-symlinks`: a symlink leading out of the tree, to this path (git answers `symlink <path>`).
    #[error("symlink out of the tree")]
    OutOfTree(Vec<u8>),
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A tree whose entries git's tree-walk cannot decode, met on the way: git dies with this message.
    #[error(transparent)]
    Tree(#[from] Malformed),
    /// An index file that does not read: git dies with this message.
    #[error(transparent)]
    Index(#[from] super::index::IndexError),
    /// `@{upstream}` or `@{push}` of a branch that has none: git dies with this message.
    #[error(transparent)]
    Branch(#[from] super::upstream::BranchError),
    /// A file the name needs that may not be read (a reference or reflog leading outside a `--root` daemon's
    /// root): the run dies with this message.
    #[error("{0}")]
    Refused(String),
    /// An object that gix-object cannot parse where git needs to look into it (a commit's tree, a tag's target).
    #[error("cannot parse {kind} {id}")]
    Unparsable { id: ObjectId, kind: Kind },
}

/// Why a reflog lookup (`<ref>@{<n>}`, `<ref>@{<date>}`) fails: git's deaths in `read_ref_at` and
/// `get_oid_basic`, and a log that exists but does not read.
#[derive(Debug, thiserror::Error)]
pub enum ReflogError {
    /// No entry git can read, asked for anything but `@{0}` (the full name of the log).
    #[error("log for {} is empty", crate::fatal::Bytes(.0))]
    Empty(Vec<u8>),
    /// `@{<n>}` past the oldest entry (the name as given, and git's count).
    #[error("log for '{}' only has {count} entries", crate::fatal::Bytes(.shown))]
    TooFew { shown: Vec<u8>, count: i32 },
    /// The log exists and cannot be read (git would take it for empty).
    #[error("cannot read the reflog of {}: {source}", crate::fatal::Bytes(.name))]
    Read {
        name: Vec<u8>,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An entry's time that git's `show_date` dies on, in a warning about it.
    #[error(transparent)]
    Date(#[from] crate::git_compat::date::DateError),
}

/// A form of name cat-blobd does not resolve (in some repositories).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `<rev>:./<path>`, `:./<path>`: relative to where the command runs in a work tree.
    RelativePath,
    /// `@{…}` after `@{…}` (`@{-1}@{upstream}`, `<branch>@{u}@{1}`).
    ChainedMarks,
    /// An id of the other hash's length, with `extensions.compatObjectFormat`.
    CompatHash,
}

impl std::fmt::Display for Form {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Form::RelativePath => "paths relative to the current directory (<rev>:./<path>)",
            Form::ChainedMarks => "one @{...} after another (@{-1}@{upstream}, <branch>@{u}@{1})",
            Form::CompatHash => "ids in the compatibility hash (extensions.compatObjectFormat)",
        })
    }
}
