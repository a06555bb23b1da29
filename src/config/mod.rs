//! git's configuration as cat-blobd reads it: the one list of the keys it reads ([`Config`]), how their values
//! are read from the merged files, and which settings on git's command line (`-c`, `--config-env`,
//! `GIT_CONFIG_PARAMETERS`) it reads exactly as git does ([`key_use`]). Finding the files is the repository's
//! business (`repo`); this module knows only keys and values.
pub mod parameters;
mod remotes;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub use parameters::ParametersError;
pub use remotes::{BranchConfig, PushDefault, RemoteConfig, RemotesConfig};

/// The configuration values git fast-import's read side and cat-file honour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `core.quotePath` (default true): quote bytes ≥ 0x80 in printed paths.
    pub quote_path: bool,
    /// `core.ignoreCase` (default false).
    pub ignore_case: bool,
    /// `core.useReplaceRefs` (default true).
    pub use_replace_refs: bool,
    /// `core.bigFileThreshold` (default 512 MiB): blobs larger than this are streamed, not held whole.
    pub big_file_threshold: u64,
    /// Where `cat-file --use-mailmap` reads the mailmap from.
    pub mailmap: MailmapConfig,
    /// The branches' upstreams and the remotes, for `@{upstream}` and `@{push}`.
    pub remotes: RemotesConfig,
}

/// `mailmap.file`, `mailmap.blob` and the work tree's `.mailmap`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MailmapConfig {
    /// `mailmap.file`, with a leading `~/` expanded as git expands a pathname.
    pub file: Option<PathBuf>,
    /// `mailmap.blob`: an object name.
    pub blob: Option<Vec<u8>>,
    /// The `.mailmap` git reads first: in the directory git works in once it has set the repository up (the top of
    /// the work tree when it started inside it). `None`: git takes the repository as bare; then the blob defaults
    /// to `HEAD:.mailmap`.
    pub work_tree_file: Option<PathBuf>,
    /// `core.bare` and `core.worktree`, from which `work_tree_file` was placed (a `--root` daemon places it for
    /// each of its clients).
    pub work_tree: WorkTreeConfig,
}

/// What git's set-up makes of the repository's work tree: `core.bare` and `core.worktree`, as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkTreeConfig {
    pub bare: Option<bool>,
    pub worktree: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            quote_path: true,
            ignore_case: false,
            use_replace_refs: true,
            big_file_threshold: crate::store::DEFAULT_BIG_FILE_THRESHOLD,
            mailmap: MailmapConfig::default(),
            remotes: RemotesConfig::default(),
        }
    }
}

/// What kind of value a key cat-blobd reads holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bool,
    /// A byte count (`git_config_ulong`).
    Size,
    /// A pathname (`git_config_pathname`).
    Path,
    /// An object name.
    Text,
}

/// The keys [`Config`] is read from, lowercase (as git canonicalises a key's section and name).
const READ: &[(&str, Kind)] = &[
    ("core.quotepath", Kind::Bool),
    ("core.ignorecase", Kind::Bool),
    ("core.usereplacerefs", Kind::Bool),
    ("core.bigfilethreshold", Kind::Size),
    ("mailmap.file", Kind::Path),
    ("mailmap.blob", Kind::Text),
];

/// Keys that change what git's cat-file or fast-import answer and that cat-blobd does not read from the command
/// line: `core.bare` and `core.worktree` (git's set-up reads them from the repository's own file, the rest of
/// git from every source), the abbreviation length of the ambiguity hints, the preferred type of an ambiguous
/// abbreviation, and whether to warn about ambiguous ref names.
const NOT_READ: &[&str] = &["core.bare", "core.worktree", "core.abbrev", "core.disambiguate", "core.warnambiguousrefs"];

/// The sections git's cat-file and fast-import read at start (`git_default_config`, `userdiff_config`,
/// fast-import's `git_pack_config`, the repository settings): a value of theirs that git cannot parse (a bare
/// `user.name`, `core.compression=x`) makes git die, so a key of theirs that cat-blobd does not read is git's,
/// unless [`ANY_VALUE`] says otherwise.
const GIT_READS: &[&str] = &[
    "core",
    "user",
    "author",
    "committer",
    "i18n",
    "branch",
    "push",
    "attr",
    "advice",
    "pack",
    "sparse",
    "diff",
    "fastimport",
    "transfer",
    "feature",
    "index",
    "fetch",
    "gc",
    "extensions",
    "safe",
];

/// Keys of [`GIT_READS`] whose every value git takes (a string), given one.
const ANY_VALUE: &[&str] =
    &["user.name", "user.email", "author.name", "author.email", "committer.name", "committer.email"];

/// Where `message` came from, for [`ConfigError`].
#[derive(Debug, thiserror::Error)]
#[error("bad config value in {}: {message}", crate::fatal::Bytes(.origin.as_os_str().as_bytes()))]
pub struct ConfigError {
    pub origin: PathBuf,
    pub message: String,
}

impl Config {
    /// The values in `config` (the files, `GIT_CONFIG_COUNT` and `GIT_CONFIG_PARAMETERS` merged, in git's order);
    /// `work_tree_mailmap` says where the work tree's `.mailmap` is, given `core.bare` and `core.worktree`;
    /// `home` expands `~/` in pathnames. A value that does not parse names `origin`.
    pub fn read(
        config: &gix_config::File,
        work_tree_mailmap: impl FnOnce(WorkTreeConfig) -> Option<PathBuf>,
        home: Option<&Path>,
        origin: &Path,
    ) -> Result<Config, ConfigError> {
        let error = |err: &dyn std::fmt::Display| ConfigError { origin: origin.to_owned(), message: err.to_string() };
        let flag = |key: &str, default: bool| -> Result<bool, ConfigError> {
            config.boolean(key).map(|v| v.unwrap_or(default)).map_err(|err| error(&err))
        };
        let work_tree = WorkTreeConfig {
            bare: config.boolean("core.bare").map_err(|err| error(&err))?,
            // Taken as it is, as git's set-up takes it (no `~/`).
            worktree: config.string("core.worktree").map(|path| PathBuf::from(OsStr::from_bytes(&path))),
        };
        Ok(Config {
            quote_path: flag("core.quotePath", true)?,
            ignore_case: flag("core.ignoreCase", false)?,
            use_replace_refs: flag("core.useReplaceRefs", true)?,
            big_file_threshold: match config.integer("core.bigFileThreshold") {
                Ok(Some(value)) => u64::try_from(value).unwrap_or(0),
                Ok(None) => crate::store::DEFAULT_BIG_FILE_THRESHOLD,
                Err(err) => return Err(error(&err)),
            },
            mailmap: MailmapConfig {
                file: config.string("mailmap.file").map(|path| expand_home(&path, home)),
                blob: config.string("mailmap.blob").map(|name| name.to_vec()),
                work_tree_file: work_tree_mailmap(work_tree.clone()),
                work_tree,
            },
            remotes: RemotesConfig::read(config),
        })
    }
}

/// git's pathname config values: a leading `~/` is the home directory.
fn expand_home(path: &[u8], home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix(b"~/"), home) {
        (Some(rest), Some(home)) => home.join(OsStr::from_bytes(rest)),
        _ => PathBuf::from(OsStr::from_bytes(path)),
    }
}

/// The settings of `GIT_CONFIG_PARAMETERS` (`text`) as one more configuration, read after every other as git
/// reads it. `None` when it holds no setting.
pub fn from_parameters(text: &[u8]) -> Result<Option<gix_config::File>, ParametersError> {
    let settings = parameters::parse(text)?;
    if settings.is_empty() {
        return Ok(None);
    }
    let meta = gix_config::file::Metadata::from(gix_config::Source::Cli);
    let mut config = gix_config::File::new(meta);
    for (key, value) in settings {
        // Checked by `parse`: `section[.subsection].name`, the section and the name ASCII.
        let (first_dot, last_dot) = (key.iter().position(|&b| b == b'.'), key.iter().rposition(|&b| b == b'.'));
        let (Some(first_dot), Some(last_dot)) = (first_dot, last_dot) else { continue };
        let section = String::from_utf8_lossy(&key[..first_dot]).into_owned();
        let name = String::from_utf8_lossy(&key[last_dot + 1..]).into_owned();
        let subsection = (first_dot < last_dot).then(|| gix_object::bstr::BStr::new(&key[first_dot + 1..last_dot]));
        let pushed = config
            .section_mut_or_create_new(section, subsection)
            .and_then(|mut section| section.push(name, value.as_deref().map(gix_object::bstr::BStr::new)).map(drop));
        pushed.map_err(|_| ParametersError::InvalidKey(key.clone()))?;
    }
    Ok(Some(config))
}

/// What cat-blobd makes of a setting given on git's command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyUse {
    /// A key that neither git's cat-file nor its fast-import reads: git passes it on to the commands it runs (a
    /// write-through `git fast-import`), and so does cat-blobd.
    Ignored,
    /// A key cat-blobd reads, with a value it reads as git does.
    Read,
    /// An include, a key whose effect cat-blobd does not copy, or a value git might read differently: only git
    /// answers exactly.
    GitOnly,
}

/// How cat-blobd takes the setting `key` = `value` (`None`: a bare key) from git's command line.
pub fn key_use(key: &[u8], value: Option<&[u8]>) -> KeyUse {
    let key = key.to_ascii_lowercase();
    let section = key.split(|&b| b == b'.').next().unwrap_or_default();
    let name = key.rsplit(|&b| b == b'.').next().unwrap_or_default();
    // A key with a subsection is another key (`core.x.quotepath` is not `core.quotepath`).
    let plain = |wanted: &str| {
        let (wanted_section, wanted_name) = wanted.split_once('.').unwrap_or_default();
        section == wanted_section.as_bytes() && name == wanted_name.as_bytes() && key.len() == wanted.len()
    };
    // `branch.*`, `remote.*` and `push.*` (read for `@{upstream}`, `@{push}`) have values cat-blobd does not
    // check as git does (refspecs, remote names): given on the command line, only git answers exactly.
    if matches!(section, b"include" | b"includeif" | b"branch" | b"remote" | b"push")
        || NOT_READ.iter().any(|k| plain(k))
    {
        return KeyUse::GitOnly;
    }
    if let Some(&(_, kind)) = READ.iter().find(|(k, _)| plain(k)) {
        return if read_alike(kind, value) { KeyUse::Read } else { KeyUse::GitOnly };
    }
    let git_reads = GIT_READS.iter().any(|s| s.as_bytes() == section)
        || matches!(&key[..], b"pager.color" | b"color.pager")
        || key.starts_with(b"color.advice");
    if git_reads && !(value.is_some() && ANY_VALUE.iter().any(|k| plain(k))) {
        return KeyUse::GitOnly;
    }
    KeyUse::Ignored
}

/// Does cat-blobd read `value` as git does for a key of `kind`? Only the spellings both read the same way:
/// git's boolean words and small decimal numbers, a byte count in decimal with an optional `k`/`m`/`g`, a path
/// that is plain or starts with `~/`, an object name.
fn read_alike(kind: Kind, value: Option<&[u8]>) -> bool {
    let decimal = |digits: &[u8]| {
        !digits.is_empty()
            && digits.len() <= 9
            && digits.iter().all(u8::is_ascii_digit)
            && (digits[0] != b'0' || digits.len() == 1)
    };
    match (kind, value) {
        (Kind::Bool, None) => true,
        (Kind::Bool, Some(value)) => {
            let value = value.to_ascii_lowercase();
            matches!(&value[..], b"" | b"true" | b"false" | b"yes" | b"no" | b"on" | b"off") || decimal(&value)
        }
        (Kind::Size, Some(value)) => match value.split_last() {
            Some((unit, digits)) if b"kKmMgG".contains(unit) => decimal(digits),
            _ => decimal(value),
        },
        (Kind::Path, Some(value)) => !value.is_empty() && (value[0] != b'~' || value.starts_with(b"~/")),
        (Kind::Text, Some(value)) => !value.is_empty(),
        (_, None) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_values_read_alike_stay_with_cat_blobd() {
        assert_eq!(key_use(b"Core.QuotePath", Some(b"Off")), KeyUse::Read);
        assert_eq!(key_use(b"core.ignorecase", None), KeyUse::Read);
        assert_eq!(key_use(b"core.ignorecase", Some(b"2")), KeyUse::Read);
        assert_eq!(key_use(b"core.ignorecase", Some(b"007")), KeyUse::GitOnly);
        assert_eq!(key_use(b"core.ignorecase", Some(b"maybe")), KeyUse::GitOnly);
        assert_eq!(key_use(b"core.bigFileThreshold", Some(b"10k")), KeyUse::Read);
        assert_eq!(key_use(b"core.bigFileThreshold", Some(b"0x10")), KeyUse::GitOnly);
        assert_eq!(key_use(b"core.bigFileThreshold", None), KeyUse::GitOnly);
        assert_eq!(key_use(b"mailmap.file", Some(b"~/map")), KeyUse::Read);
        assert_eq!(key_use(b"mailmap.file", Some(b"~user/map")), KeyUse::GitOnly);
        assert_eq!(key_use(b"mailmap.blob", Some(b"")), KeyUse::GitOnly);
        assert_eq!(key_use(b"core.bare", Some(b"true")), KeyUse::GitOnly);
        assert_eq!(key_use(b"core.abbrev", Some(b"12")), KeyUse::GitOnly);
        assert_eq!(key_use(b"includeIf.gitdir:x.path", Some(b"f")), KeyUse::GitOnly);
        assert_eq!(key_use(b"user.name", Some(b"x")), KeyUse::Ignored);
        assert_eq!(key_use(b"user.name", None), KeyUse::GitOnly);
        assert_eq!(key_use(b"core.compression", Some(b"1")), KeyUse::GitOnly);
        assert_eq!(key_use(b"pack.depth", Some(b"1")), KeyUse::GitOnly);
        assert_eq!(key_use(b"diff.x.textconv", None), KeyUse::GitOnly);
        assert_eq!(key_use(b"color.pager", Some(b"x")), KeyUse::GitOnly);
        assert_eq!(key_use(b"color.ui", None), KeyUse::Ignored);
        assert_eq!(key_use(b"filter.x.clean", Some(b"x")), KeyUse::Ignored);
        assert_eq!(key_use(b"core.x.quotepath", Some(b"x")), KeyUse::GitOnly);
        assert_eq!(key_use(b"foo.x.quotepath", Some(b"x")), KeyUse::Ignored);
    }

    #[test]
    fn parameters_come_last_and_keep_bare_keys_true() {
        let text = b"'core.quotePath'='false' 'Core.IgnoreCase'= 'core.useReplaceRefs'='' 'mailmap.blob'='HEAD:m' \
                     'a.Sub.b'='x'";
        let config = from_parameters(text).unwrap().unwrap();
        let read = Config::read(&config, |_| None, None, Path::new("GIT_CONFIG_PARAMETERS")).unwrap();
        assert!(!read.quote_path);
        assert!(read.ignore_case);
        assert!(!read.use_replace_refs, "an empty value is false, as git reads it");
        assert_eq!(read.mailmap.blob.as_deref(), Some(&b"HEAD:m"[..]));
        assert_eq!(config.string("a.Sub.b").as_deref().map(|v| v.to_vec()), Some(b"x".to_vec()));
        assert!(from_parameters(b"").unwrap().is_none());
    }
}
