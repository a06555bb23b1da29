//! `feature` and `option git` lines and git fast-import's command-line flags, parsed as git parses them
//! (`parse_one_feature`, `parse_one_option`, `parse_argv`).
//!
//! Flags are applied lazily, like git: after the stream's leading `feature`/`option` lines, when the first
//! other line is read (or at the end), so the command line overrides the stream and flag errors surface at
//! the same point as git's.
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::fast_import::marks::{MarksError, read_marks_file};
use crate::fatal::Bytes;
use crate::git_compat::{self, parse_ulong::git_parse_ulong, strerror::strerror};
use crate::store::ObjectId;

/// git's `MAX_DEPTH` for `--depth` (accepted and ignored: cat-blobd writes no pack).
const MAX_DEPTH: u64 = 8191;

#[derive(Debug, thiserror::Error)]
pub(crate) enum OptionError {
    #[error("got feature command '{}' after data command", Bytes(.0))]
    FeatureAfterData(Vec<u8>),
    #[error("got option command '{}' after data command", Bytes(.0))]
    OptionAfterData(Vec<u8>),
    #[error("this version of fast-import does not support feature {}.", Bytes(.0))]
    UnsupportedFeature(Vec<u8>),
    #[error("this version of fast-import does not support option: {}", Bytes(.0))]
    UnsupportedOption(Vec<u8>),
    #[error("feature '{}' forbidden in input without --allow-unsafe-features", Bytes(.0))]
    UnsafeFeature(Vec<u8>),
    #[error("only one import-marks command allowed per stream")]
    SecondImportMarks,
    #[error("unknown --date-format argument {}", Bytes(.0))]
    DateFormat(Vec<u8>),
    #[error("{0}: argument must be a non-negative integer")]
    NotANonNegativeInteger(&'static str),
    #[error("--depth cannot exceed {MAX_DEPTH}")]
    DepthTooLarge,
    #[error("--cat-blob-fd cannot exceed {}", i32::MAX)]
    FdTooLarge,
    #[error("expected format name:filename for submodule rewrite option")]
    SubmoduleRewriteFormat,
    /// git's `xfopen` says "writing" for any mode but "r".
    #[error("could not open '{}' for writing: {message}", Bytes(.path))]
    PackEdges { path: Vec<u8>, message: String },
    #[error(transparent)]
    Marks(#[from] MarksError),
    #[error("unknown option {}", Bytes(.0))]
    UnknownOption(Vec<u8>),
    /// A daemon's client of another uid asked for something that reads or writes a file with the daemon's rights.
    #[error("'{}' is not allowed over the cat-blobd daemon for another uid: it would use files with the daemon's rights", Bytes(.0))]
    FileNotAllowed(Vec<u8>),
    /// git's `usagef` for a mode `parse_sign_mode` does not know: a usage error (exit 129), not a `fatal:`.
    #[error("usage: unknown --{option} mode '{}'", Bytes(.mode))]
    SignMode { option: &'static str, mode: Vec<u8> },
    /// A positional argument or `--`: git prints its usage and exits 129.
    #[error("usage: cat-blobd [--git-dir=<dir>] [--cat-blob-fd=<fd>] [git fast-import options…]")]
    Usage,
}

/// Where a marks file option came from, and whether a missing file is fine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ImportMarks {
    pub path: PathBuf,
    pub from_stream: bool,
    pub ignore_missing: bool,
}

/// A `rewrite-submodules-from/to=<name>:<file>` option, with the marks its file held when the option was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SubmoduleRewrite {
    pub name: Vec<u8>,
    pub marks: Vec<(u64, ObjectId)>,
}

/// Stream settings that features, options and flags change. Only what a reader acts on is kept; the rest is
/// validated like git and ignored.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub cat_blob_fd: i32,
    pub allow_unsafe_features: bool,
    pub require_done: bool,
    pub relative_marks: bool,
    /// The import file in force; earlier ones that git reads on the spot are in `imports_due`.
    pub import_marks: Option<ImportMarks>,
    /// Import files superseded on the command line before they were read: git reads them right away.
    pub imports_due: Vec<ImportMarks>,
    pub export_marks: Option<PathBuf>,
    pub stats: bool,
    pub rewrite_from: Vec<SubmoduleRewrite>,
    pub rewrite_to: Vec<SubmoduleRewrite>,
    /// `warning:` lines git prints while parsing options (e.g. a tiny max-pack-size).
    pub warnings: Vec<String>,
    /// Where relative marks paths go when `relative-marks` is on: `<git dir>/info/fast-import`.
    pub relative_marks_dir: PathBuf,
    /// False for a daemon's client of another uid: nothing may name a file (marks, submodule rewrites, pack
    /// edges), from the flags or from the stream.
    pub may_name_files: bool,
    /// `--signed-commits=<mode>`: what git does with a commit's `gpgsig` lines (the write-through grammar
    /// needs to know whether git dies on one).
    pub signed_commits: SignMode,
}

/// The modes of `--signed-commits=` and `--signed-tags=` (git 2.55's `enum sign_mode`). Signatures are git's
/// business (write-through); cat-blobd validates the mode and follows where git stops reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SignMode {
    Abort,
    Verbatim,
    WarnVerbatim,
    WarnStrip,
    Strip,
    AbortIfInvalid,
    StripIfInvalid,
    SignIfInvalid,
}

impl SignMode {
    /// git's `parse_sign_mode` (gpg-interface.c): `ignore` and `warn` are the old names of `verbatim` and
    /// `warn-verbatim`; `sign-if-invalid=<keyid>` names a key (any text, empty included).
    fn parse(mode: &[u8]) -> Option<SignMode> {
        Some(match mode {
            b"abort" => SignMode::Abort,
            b"verbatim" | b"ignore" => SignMode::Verbatim,
            b"warn-verbatim" | b"warn" => SignMode::WarnVerbatim,
            b"warn-strip" => SignMode::WarnStrip,
            b"strip" => SignMode::Strip,
            b"abort-if-invalid" => SignMode::AbortIfInvalid,
            b"strip-if-invalid" => SignMode::StripIfInvalid,
            _ if mode == b"sign-if-invalid" || mode.starts_with(b"sign-if-invalid=") => SignMode::SignIfInvalid,
            _ => return None,
        })
    }
}

impl Settings {
    pub(crate) fn new(relative_marks_dir: PathBuf) -> Self {
        Settings {
            cat_blob_fd: 1,
            allow_unsafe_features: false,
            require_done: false,
            relative_marks: false,
            import_marks: None,
            imports_due: Vec::new(),
            export_marks: None,
            stats: false,
            rewrite_from: Vec::new(),
            rewrite_to: Vec::new(),
            warnings: Vec::new(),
            relative_marks_dir,
            may_name_files: true,
            signed_commits: SignMode::Verbatim,
        }
    }

    /// `feature <name>` from the stream (`parse_feature`).
    pub(crate) fn stream_feature(&mut self, feature: &[u8], seen_data_command: bool) -> Result<(), OptionError> {
        if seen_data_command {
            return Err(OptionError::FeatureAfterData(feature.to_vec()));
        }
        if self.feature(feature, true)? {
            return Ok(());
        }
        Err(OptionError::UnsupportedFeature(feature.to_vec()))
    }

    /// `option git <name>` from the stream (`parse_option`).
    pub(crate) fn stream_option(&mut self, option: &[u8], seen_data_command: bool) -> Result<(), OptionError> {
        if seen_data_command {
            return Err(OptionError::OptionAfterData(option.to_vec()));
        }
        if self.option(option)? {
            return Ok(());
        }
        Err(OptionError::UnsupportedOption(option.to_vec()))
    }

    /// git's `parse_argv`: every `--x` is tried as an option, then as a feature (without the unsafe gate),
    /// then as `cat-blob-fd=`.
    pub(crate) fn apply_argv(&mut self, args: &[Vec<u8>]) -> Result<(), OptionError> {
        let mut consumed = 0;
        for arg in args {
            if !arg.starts_with(b"-") || arg == b"--" {
                break;
            }
            let Some(flag) = arg.strip_prefix(b"--") else {
                return Err(OptionError::UnknownOption(arg.clone()));
            };
            consumed += 1;
            if self.option(flag)? || self.feature(flag, false)? {
                continue;
            }
            if let Some(fd) = flag.strip_prefix(b"cat-blob-fd=") {
                let fd = ulong_arg("--cat-blob-fd", fd)?;
                self.cat_blob_fd = i32::try_from(fd).map_err(|_| OptionError::FdTooLarge)?;
                continue;
            }
            return Err(OptionError::UnknownOption(arg.clone()));
        }
        if consumed != args.len() {
            return Err(OptionError::Usage);
        }
        Ok(())
    }

    /// `parse_one_feature`: true if `feature` is one git knows.
    fn feature(&mut self, feature: &[u8], from_stream: bool) -> Result<bool, OptionError> {
        let unsafe_gate = |name: &[u8]| {
            if from_stream && !self.allow_unsafe_features {
                return Err(OptionError::UnsafeFeature(name.to_vec()));
            }
            Ok(())
        };
        let names_file = ["import-marks=", "import-marks-if-exists=", "export-marks=", "rewrite-submodules-"]
            .iter()
            .any(|prefix| feature.starts_with(prefix.as_bytes()));
        if names_file && !self.may_name_files {
            return Err(OptionError::FileNotAllowed(feature.to_vec()));
        }
        if let Some(format) = feature.strip_prefix(b"date-format=") {
            if !matches!(format, b"raw" | b"raw-permissive" | b"rfc2822" | b"now") {
                return Err(OptionError::DateFormat(format.to_vec()));
            }
        } else if let Some(path) = feature.strip_prefix(b"import-marks=") {
            unsafe_gate(b"import-marks")?;
            self.import_marks(path, from_stream, false)?;
        } else if let Some(path) = feature.strip_prefix(b"import-marks-if-exists=") {
            unsafe_gate(b"import-marks-if-exists")?;
            self.import_marks(path, from_stream, true)?;
        } else if let Some(path) = feature.strip_prefix(b"export-marks=") {
            // git names the whole feature here, path included.
            unsafe_gate(feature)?;
            self.export_marks = Some(self.marks_path(path));
        } else if let Some(arg) = feature.strip_prefix(b"rewrite-submodules-to=") {
            let rewrite = submodule_rewrite(arg)?;
            self.rewrite_to.push(rewrite);
        } else if let Some(arg) = feature.strip_prefix(b"rewrite-submodules-from=") {
            let rewrite = submodule_rewrite(arg)?;
            self.rewrite_from.push(rewrite);
        } else if feature == b"relative-marks" {
            self.relative_marks = true;
        } else if feature == b"no-relative-marks" {
            self.relative_marks = false;
        } else if feature == b"done" {
            self.require_done = true;
        } else if !matches!(feature, b"alias" | b"get-mark" | b"cat-blob" | b"force" | b"notes" | b"ls") {
            return Ok(false);
        }
        Ok(true)
    }

    /// `parse_one_option`: true if `option` is one git knows. Options that only matter when writing a pack are
    /// validated and ignored.
    fn option(&mut self, option: &[u8]) -> Result<bool, OptionError> {
        if let Some(size) = option.strip_prefix(b"max-pack-size=") {
            let Some(size) = git_parse_ulong(size) else { return Ok(false) };
            if size < 8192 {
                self.warnings.push(format!("max-pack-size is now in bytes, assuming --max-pack-size={size}m"));
            } else if size < 1024 * 1024 {
                self.warnings.push("minimum max-pack-size is 1 MiB".into());
            }
        } else if let Some(size) = option.strip_prefix(b"big-file-threshold=") {
            if git_parse_ulong(size).is_none() {
                return Ok(false);
            }
        } else if let Some(depth) = option.strip_prefix(b"depth=") {
            if ulong_arg("--depth", depth)? > MAX_DEPTH {
                return Err(OptionError::DepthTooLarge);
            }
        } else if let Some(branches) = option.strip_prefix(b"active-branches=") {
            ulong_arg("--active-branches", branches)?;
        } else if let Some(path) = option.strip_prefix(b"export-pack-edges=") {
            if !self.may_name_files {
                return Err(OptionError::FileNotAllowed(option.to_vec()));
            }
            // git opens (creates) the file for appending at once; it stays empty since no pack is written.
            std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(OsStr::from_bytes(path))
                .map_err(|err| OptionError::PackEdges { path: path.to_vec(), message: strerror(&err) })?;
        } else if option == b"quiet" {
            self.stats = false;
        } else if option == b"stats" {
            self.stats = true;
        } else if option == b"allow-unsafe-features" {
            // Already applied by the early scan of the command line.
        } else if let Some(mode) = option.strip_prefix(b"signed-commits=") {
            self.signed_commits = sign_mode("signed-commits", mode)?;
        } else if let Some(mode) = option.strip_prefix(b"signed-tags=") {
            sign_mode("signed-tags", mode)?;
        } else {
            return Ok(false);
        }
        Ok(true)
    }

    /// `option_import_marks`: a second import in the stream is an error; on the command line the earlier file
    /// is read at once unless it came from the stream (which the command line overrides).
    fn import_marks(&mut self, path: &[u8], from_stream: bool, ignore_missing: bool) -> Result<(), OptionError> {
        if let Some(previous) = self.import_marks.take() {
            if from_stream {
                return Err(OptionError::SecondImportMarks);
            }
            if !previous.from_stream {
                self.imports_due.push(previous);
            }
        }
        self.import_marks = Some(ImportMarks { path: self.marks_path(path), from_stream, ignore_missing });
        Ok(())
    }

    /// `make_fast_import_path`: relative paths go under `<git dir>/info/fast-import/` when `relative-marks` is
    /// on, else they are relative to the current directory.
    fn marks_path(&self, path: &[u8]) -> PathBuf {
        let path = PathBuf::from(OsStr::from_bytes(path));
        if self.relative_marks && !path.is_absolute() { self.relative_marks_dir.join(path) } else { path }
    }
}

/// git's `option_rewrite_submodules`: the file (relative to the working directory, never to `relative-marks`)
/// is read when the option is, so a missing, unreadable or corrupt file stops the stream right there.
fn submodule_rewrite(arg: &[u8]) -> Result<SubmoduleRewrite, OptionError> {
    let colon = memchr::memchr(b':', arg).ok_or(OptionError::SubmoduleRewriteFormat)?;
    let marks = read_marks_file(Path::new(OsStr::from_bytes(&arg[colon + 1..])))?;
    Ok(SubmoduleRewrite { name: arg[..colon].to_vec(), marks })
}

/// A `--signed-commits=`/`--signed-tags=` mode; an unknown one is git's usage error, on the command line and
/// in an `option git` line alike.
fn sign_mode(option: &'static str, mode: &[u8]) -> Result<SignMode, OptionError> {
    SignMode::parse(mode).ok_or_else(|| OptionError::SignMode { option, mode: mode.to_vec() })
}

/// git's `ulong_arg`, naming `option` in its error.
fn ulong_arg(option: &'static str, arg: &[u8]) -> Result<u64, OptionError> {
    git_compat::strtoumax::ulong_arg(arg).ok_or(OptionError::NotANonNegativeInteger(option))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings::new(PathBuf::from("/repo/.git/info/fast-import"))
    }

    fn argv(args: &[&str]) -> Vec<Vec<u8>> {
        args.iter().map(|a| a.as_bytes().to_vec()).collect()
    }

    #[test]
    fn a_stream_that_may_not_name_files_cannot_name_any() {
        let dir = tempfile::tempdir().unwrap();
        let edges = dir.path().join("edges");
        let mut s = settings();
        s.may_name_files = false;
        s.allow_unsafe_features = true;
        for feature in ["rewrite-submodules-from=sub:/etc/passwd", "rewrite-submodules-to=sub:m", "export-marks=m"] {
            let err = s.stream_feature(feature.as_bytes(), false).unwrap_err();
            assert!(matches!(&err, OptionError::FileNotAllowed(f) if f == feature.as_bytes()), "{err}");
        }
        let option = format!("export-pack-edges={}", edges.display());
        assert!(matches!(s.stream_option(option.as_bytes(), false), Err(OptionError::FileNotAllowed(_))));
        assert!(!edges.exists(), "refused before the file is created");
        // Everything else still works.
        s.stream_feature(b"relative-marks", false).unwrap();
        s.stream_option(b"depth=10", false).unwrap();
        assert!(s.rewrite_from.is_empty() && s.export_marks.is_none());
    }

    #[test]
    fn sign_modes_are_git_2_55s() {
        let modes = ["abort", "verbatim", "ignore", "warn-verbatim", "warn", "warn-strip", "strip"];
        let if_invalid =
            ["abort-if-invalid", "strip-if-invalid", "sign-if-invalid", "sign-if-invalid=", "sign-if-invalid=K"];
        for mode in modes.iter().chain(&if_invalid) {
            for option in ["signed-commits", "signed-tags"] {
                settings().stream_option(format!("{option}={mode}").as_bytes(), false).unwrap();
                settings().apply_argv(&argv(&[&format!("--{option}={mode}")])).unwrap();
            }
        }
        for (flag, option, mode) in
            [("--signed-tags=sign", "signed-tags", "sign"), ("--signed-commits=", "signed-commits", "")]
        {
            let err = settings().apply_argv(&argv(&[flag])).unwrap_err();
            assert!(
                matches!(&err, OptionError::SignMode { option: o, mode: m } if *o == option && m == mode.as_bytes())
            );
        }
        let mut s = settings();
        s.stream_option(b"signed-commits=abort", false).unwrap();
        assert_eq!(s.signed_commits, SignMode::Abort);
        s.apply_argv(&argv(&["--signed-commits=strip"])).unwrap();
        assert_eq!(s.signed_commits, SignMode::Strip, "the command line wins");
    }

    #[test]
    fn number_parsing_follows_c() {
        assert_eq!(ulong_arg("--depth", b"0x10").unwrap(), 16);
        assert_eq!(ulong_arg("--depth", b"010").unwrap(), 8);
        assert_eq!(ulong_arg("--depth", b"0").unwrap(), 0);
        assert!(ulong_arg("--depth", b"-1").is_err());
        assert!(ulong_arg("--depth", b"1x").is_err());
        assert!(ulong_arg("--depth", b"").is_err());
        assert_eq!(git_parse_ulong(b"2k"), Some(2048));
        assert_eq!(git_parse_ulong(b"1x"), None);
    }

    #[test]
    fn command_line_flags_follow_parse_argv() {
        let mut s = settings();
        s.apply_argv(&argv(&["--cat-blob-fd=0x3", "--done", "--quiet", "--depth=10", "--ls"])).unwrap();
        assert_eq!((s.cat_blob_fd, s.require_done), (3, true));
        for (args, message) in [
            (&["-q"][..], "unknown option -q"),
            (&["--bogus"], "unknown option --bogus"),
            (&["--depth=9000"], "--depth cannot exceed 8191"),
            (&["--cat-blob-fd=-1"], "--cat-blob-fd: argument must be a non-negative integer"),
            (&["--cat-blob-fd=2147483648"], "--cat-blob-fd cannot exceed 2147483647"),
            (&["--date-format=foo"], "unknown --date-format argument foo"),
            (&["--big-file-threshold=1x"], "unknown option --big-file-threshold=1x"),
        ] {
            assert_eq!(settings().apply_argv(&argv(args)).unwrap_err().to_string(), message);
        }
        assert!(matches!(settings().apply_argv(&argv(&["--"])), Err(OptionError::Usage)));
        assert!(matches!(settings().apply_argv(&argv(&["--done", "x"])), Err(OptionError::Usage)));
    }

    #[test]
    fn stream_features_are_gated_and_ordered() {
        let mut s = settings();
        assert_eq!(
            s.stream_feature(b"export-marks=x.marks", false).unwrap_err().to_string(),
            "feature 'export-marks=x.marks' forbidden in input without --allow-unsafe-features"
        );
        assert_eq!(
            s.stream_feature(b"import-marks=x", false).unwrap_err().to_string(),
            "feature 'import-marks' forbidden in input without --allow-unsafe-features"
        );
        assert_eq!(
            s.stream_feature(b"done ", false).unwrap_err().to_string(),
            "this version of fast-import does not support feature done ."
        );
        assert_eq!(
            s.stream_feature(b"done", true).unwrap_err().to_string(),
            "got feature command 'done' after data command"
        );
        s.allow_unsafe_features = true;
        s.stream_feature(b"relative-marks", false).unwrap();
        s.stream_feature(b"import-marks=in", false).unwrap();
        assert_eq!(s.import_marks.as_ref().unwrap().path, PathBuf::from("/repo/.git/info/fast-import/in"));
        assert!(matches!(s.stream_feature(b"import-marks-if-exists=b", false), Err(OptionError::SecondImportMarks)));
        assert!(s.stream_option(b"cat-blob-fd=3", false).is_err());
        assert!(s.stream_option(b"", false).is_err());
        s.stream_option(b"max-pack-size=100", false).unwrap();
        assert_eq!(s.warnings, vec!["max-pack-size is now in bytes, assuming --max-pack-size=100m".to_string()]);
    }

    #[test]
    fn the_command_line_overrides_a_stream_import() {
        let mut s = settings();
        s.allow_unsafe_features = true;
        s.stream_feature(b"import-marks=from-stream", false).unwrap();
        s.apply_argv(&argv(&["--import-marks=a", "--import-marks-if-exists=b"])).unwrap();
        assert_eq!(s.imports_due.len(), 1, "a is read at once, the stream's file never");
        assert_eq!(s.imports_due[0].path, PathBuf::from("a"));
        assert_eq!(s.import_marks.as_ref().unwrap().path, PathBuf::from("b"));
    }
}
