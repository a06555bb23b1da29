//! The command line. cat-blobd's own flags go through clap; every other `--flag` is git fast-import's and is
//! kept, in order, for the session to apply lazily exactly as git's `parse_argv` does (after the stream's
//! leading `feature`/`option` lines), so cat-blobd can take `git fast-import`'s place in a pipeline.
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use clap::Parser;

/// Answers git fast-import read commands (cat-blob, get-mark, ls) from an existing repository.
///
/// Reads a fast-import command stream on stdin and writes each response to the cat-blob fd, byte for byte
/// like `git fast-import --cat-blob-fd=<fd>`.
#[derive(Debug, Parser)]
#[command(
    name = "cat-blobd",
    version,
    after_help = "git fast-import's flags are accepted too and behave as in git: --cat-blob-fd=<fd> (also \
                  --cat-blob-fd <fd>), --done, --quiet, --stats, --import-marks=<f>, \
                  --import-marks-if-exists=<f>, --export-marks=<f>, --relative-marks, --no-relative-marks, \
                  --allow-unsafe-features, --force, --date-format=<f>, --max-pack-size=<n>, \
                  --big-file-threshold=<n>, --depth=<n>, --active-branches=<n>, --export-pack-edges=<f>, \
                  --signed-commits=<mode>, --signed-tags=<mode>, --rewrite-submodules-from=<name>:<f>, \
                  --rewrite-submodules-to=<name>:<f>. Options that only matter when writing a pack are \
                  validated and ignored."
)]
pub struct Cli {
    /// The repository's git directory (else GIT_DIR, else found by walking up from the current directory).
    #[arg(long, value_name = "DIR")]
    pub git_dir: Option<PathBuf>,

    /// Bytes of undeltified and intermediate delta bases to keep (like core.deltaBaseCacheLimit).
    #[arg(long, value_name = "BYTES", default_value = "96m", value_parser = parse_size)]
    pub delta_cache_size: u64,

    /// Bytes of blobs defined in the stream (`blob` commands) to keep in memory; the rest goes to a
    /// temporary file.
    #[arg(long, value_name = "BYTES", default_value = "256m", value_parser = parse_size)]
    pub stream_blob_memory: u64,

    /// Threads that find, inflate and delta-resolve objects (default: the available cores).
    #[arg(long, value_name = "N", env = "CAT_BLOBD_THREADS")]
    pub threads: Option<usize>,

    /// Requests in flight at most; memory stays bounded by this and --window-bytes.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub window: usize,

    /// Bytes of resolved responses waiting to be written at most.
    #[arg(long, value_name = "BYTES", default_value = "64m", value_parser = parse_size)]
    pub window_bytes: u64,
}

/// The whole command line: cat-blobd's flags, and git fast-import's in their original order.
#[derive(Debug)]
pub struct Args {
    pub cli: Cli,
    pub fast_import: Vec<Vec<u8>>,
}

/// Flags that belong to cat-blobd itself (each takes a value, as `--flag=v` or `--flag v`).
const OWN_VALUE_FLAGS: [&str; 6] =
    ["--git-dir", "--delta-cache-size", "--stream-blob-memory", "--threads", "--window", "--window-bytes"];

/// Splits `args` (without the program name) between clap and git's flag list.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Args, clap::Error> {
    let mut own = vec![OsString::from("cat-blobd")];
    let mut fast_import = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy();
        let name = text.split('=').next().unwrap_or_default();
        if OWN_VALUE_FLAGS.contains(&name) {
            let has_value = text.contains('=');
            own.push(arg);
            if !has_value && let Some(value) = args.next() {
                own.push(value);
            }
        } else if matches!(&*text, "--help" | "--version" | "-V") {
            own.push(arg);
        } else if text == "--cat-blob-fd"
            && let Some(value) = args.next()
        {
            // git only takes `--cat-blob-fd=<fd>`; the two-word form is a convenience.
            let mut joined = b"--cat-blob-fd=".to_vec();
            joined.extend_from_slice(&value.into_vec());
            fast_import.push(joined);
        } else {
            fast_import.push(arg.into_vec());
        }
    }
    Ok(Args { cli: Cli::try_parse_from(own)?, fast_import })
}

/// A byte count with git's optional unit suffix: `k`, `m`, `g` (powers of 1024).
fn parse_size(arg: &str) -> Result<u64, String> {
    let lower = arg.to_ascii_lowercase();
    let (digits, unit) = match lower.as_bytes().last() {
        Some(b'k') => (&lower[..lower.len() - 1], 1u64 << 10),
        Some(b'm') => (&lower[..lower.len() - 1], 1 << 20),
        Some(b'g') => (&lower[..lower.len() - 1], 1 << 30),
        _ => (&lower[..], 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| format!("invalid size '{arg}': expected a number with an optional k, m or g suffix"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(args: &[&str]) -> Args {
        parse(args.iter().map(OsString::from)).unwrap()
    }

    #[test]
    fn own_flags_go_to_clap_and_the_rest_stays_in_order() {
        let args = split(&["--quiet", "--git-dir", "/r", "--cat-blob-fd", "3", "--delta-cache-size=1m", "--done", "x"]);
        assert_eq!(args.cli.git_dir, Some(PathBuf::from("/r")));
        assert_eq!(args.cli.delta_cache_size, 1 << 20);
        let expected: Vec<&[u8]> = vec![b"--quiet", b"--cat-blob-fd=3", b"--done", b"x"];
        assert_eq!(args.fast_import, expected);
    }

    #[test]
    fn sizes_take_units() {
        assert_eq!(parse_size("96m"), Ok(96 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("lots").is_err());
    }
}
