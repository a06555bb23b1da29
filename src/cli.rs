//! The command line, spelled like `git fast-import`'s so cat-blobd can take its place in a pipeline.
use std::path::PathBuf;

use clap::Parser;

/// Answers git fast-import read commands (`cat-blob`) from an existing repository.
///
/// Reads a fast-import command stream on stdin and writes each response to the cat-blob fd,
/// byte for byte like `git fast-import --cat-blob-fd=<fd>`.
#[derive(Debug, Parser)]
#[command(name = "cat-blobd", version)]
pub struct Cli {
    /// The repository's git directory (else GIT_DIR, else found by walking up from the current directory).
    #[arg(long, value_name = "DIR")]
    pub git_dir: Option<PathBuf>,

    /// File descriptor that receives responses (git accepts decimal, 0x hex and 0 octal).
    #[arg(long, value_name = "FD", default_value = "1", value_parser = parse_fd)]
    pub cat_blob_fd: i32,

    /// Accepted for compatibility with git fast-import; cat-blobd prints nothing extra unless asked.
    #[arg(long)]
    pub quiet: bool,

    /// Print a summary on stderr at the end: requests, bytes, elapsed time, throughput.
    #[arg(long)]
    pub stats: bool,

    /// Bytes of undeltified and intermediate delta bases to keep (like core.deltaBaseCacheLimit).
    #[arg(long, value_name = "BYTES", default_value = "96m", value_parser = parse_size)]
    pub delta_cache_size: u64,
}

/// `--cat-blob-fd` is parsed like git's `ulong_arg` (`strtoul(arg, &end, 0)` with no sign and nothing after it),
/// then capped at `INT_MAX`.
fn parse_fd(arg: &str) -> Result<i32, String> {
    let value = parse_c_ulong(arg).ok_or("--cat-blob-fd: argument must be a non-negative integer")?;
    i32::try_from(value).map_err(|_| format!("--cat-blob-fd cannot exceed {}", i32::MAX))
}

/// C's `strtoul(s, _, 0)` for a whole string: `0x` hex, leading `0` octal, else decimal; no sign.
fn parse_c_ulong(arg: &str) -> Option<u64> {
    let (digits, radix) = if let Some(hex) = arg.strip_prefix("0x").or_else(|| arg.strip_prefix("0X")) {
        (hex, 16)
    } else if arg.len() > 1 && arg.starts_with('0') {
        (&arg[1..], 8)
    } else {
        (arg, 10)
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
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

    #[test]
    fn cat_blob_fd_takes_c_radix_prefixes_like_git() {
        assert_eq!(parse_fd("3"), Ok(3));
        assert_eq!(parse_fd("0x3"), Ok(3));
        assert_eq!(parse_fd("010"), Ok(8));
        assert_eq!(parse_fd("0"), Ok(0));
        assert!(parse_fd("-1").is_err());
        assert!(parse_fd("abc").is_err());
        assert!(parse_fd("3x").is_err());
        assert_eq!(
            parse_fd("2147483648"),
            Err("--cat-blob-fd cannot exceed 2147483647".into())
        );
    }

    #[test]
    fn both_flag_spellings_parse() {
        let a = Cli::try_parse_from(["cat-blobd", "--cat-blob-fd=3"]).unwrap();
        let b = Cli::try_parse_from(["cat-blobd", "--cat-blob-fd", "3"]).unwrap();
        assert_eq!((a.cat_blob_fd, b.cat_blob_fd), (3, 3));
    }

    #[test]
    fn sizes_take_units() {
        assert_eq!(parse_size("96m"), Ok(96 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("lots").is_err());
    }
}
