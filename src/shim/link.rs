//! `cat-blobd shim <dir>`: the link `<dir>/git` → this binary, and the `PATH` line that puts it in front.
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::real_git::FileId;
use crate::fatal::Bytes;
use crate::git_compat::strerror::strerror;

#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("cannot find this binary: {}", strerror(.0))]
    OwnPath(#[source] std::io::Error),
    #[error("cannot create directory '{}': {}", Bytes(.0.as_os_str().as_bytes()), strerror(.1))]
    Directory(PathBuf, #[source] std::io::Error),
    #[error("cannot create the link '{}': {}", Bytes(.0.as_os_str().as_bytes()), strerror(.1))]
    Link(PathBuf, #[source] std::io::Error),
    #[error("'{}' already exists and is not cat-blobd: not replacing it", Bytes(.0.as_os_str().as_bytes()))]
    Exists(PathBuf),
}

/// Makes `<dir>/git` a link to this binary (creating `dir` if needed; an existing link to it is kept) and returns
/// the `PATH` line for a POSIX shell that puts `dir` first.
pub fn install(dir: &Path) -> Result<Vec<u8>, LinkError> {
    let own = std::env::current_exe().and_then(std::fs::canonicalize).map_err(LinkError::OwnPath)?;
    std::fs::create_dir_all(dir).map_err(|err| LinkError::Directory(dir.to_owned(), err))?;
    let dir = std::path::absolute(dir).map_err(|err| LinkError::Directory(dir.to_owned(), err))?;
    let link = dir.join(super::GIT);
    if std::fs::symlink_metadata(&link).is_ok() {
        if FileId::of(&link).is_some() && FileId::of(&link) == FileId::of(&own) {
            return Ok(path_line(&dir));
        }
        return Err(LinkError::Exists(link));
    }
    std::os::unix::fs::symlink(&own, &link).map_err(|err| LinkError::Link(link.clone(), err))?;
    Ok(path_line(&dir))
}

/// `export PATH=<dir>:"$PATH"`, `dir` single-quoted when the shell would read it otherwise.
fn path_line(dir: &Path) -> Vec<u8> {
    let dir = dir.as_os_str().as_bytes();
    let plain = dir.iter().all(|b| b.is_ascii_alphanumeric() || b"/._-+,@%".contains(b));
    let mut line = b"export PATH=".to_vec();
    if plain {
        line.extend_from_slice(dir);
    } else {
        line.push(b'\'');
        for &byte in dir {
            match byte {
                b'\'' => line.extend_from_slice(b"'\\''"),
                _ => line.push(byte),
            }
        }
        line.push(b'\'');
    }
    line.extend_from_slice(b":\"$PATH\"\n");
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_line_quotes_what_the_shell_would_split() {
        assert_eq!(path_line(Path::new("/opt/shim")), b"export PATH=/opt/shim:\"$PATH\"\n".to_vec());
        assert_eq!(path_line(Path::new("/a b/it's")), b"export PATH='/a b/it'\\''s':\"$PATH\"\n".to_vec());
    }
}
