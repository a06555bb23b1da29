//! git's stderr, relayed line by line to the stream's by a thread of its own.
//!
//! Why not give git the stream's stderr: when cat-blobd fails first, git is made to die on a poison line
//! ([`POISON`]), and git alone would not have printed the `fatal:` line git prints about it. The relay puts
//! cat-blobd's own `fatal:` line in that line's place, so stderr reads as git alone's would: git's earlier
//! lines, then the one `fatal:`, then what git's die handler prints after it (its crash report line).
//!
//! Deadlock: the thread does nothing but read git's stderr and write the stream's, so git never waits for
//! cat-blobd to write to stderr (only, as git alone would, for the stream's reader of stderr). Order: git's
//! stderr ends when git exits, and whoever waits for git joins the thread after, so everything git printed is
//! out before cat-blobd writes anything more or exits.
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::process::ChildStderr;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

/// The line git's input ends on when cat-blobd fails first. No state of git's parser accepts it, and none
/// stores anything on reading it: in a commit's file changes it is a modify with a corrupt mode (so git dies
/// before the commit is stored, as it would have at the read cat-blobd failed on); where git wants `data` or
/// a command it is not one. git's message about it ends with the line itself (but for a commit without a
/// committer or a tag without `from`, where cat-blobd can only fail first on an unreadable input line), which
/// is how the relay recognises it.
pub(crate) const POISON: &[u8] = b"M cat-blobd: the stream failed before this line\n";

/// The thread relaying git's stderr.
pub(crate) struct StderrRelay {
    thread: Option<JoinHandle<()>>,
    /// cat-blobd's `fatal:` line, once git is being made to die on [`POISON`]: printed in place of git's line
    /// about it, or at the end if git never printed one (it had died of an earlier line).
    instead: Arc<Mutex<Option<Vec<u8>>>>,
}

impl StderrRelay {
    pub(crate) fn start(from: ChildStderr, to: OwnedFd) -> io::Result<StderrRelay> {
        let instead = Arc::new(Mutex::new(None));
        let shared = Arc::clone(&instead);
        let thread = std::thread::Builder::new()
            .name("git stderr".into())
            .spawn(move || relay(BufReader::new(from), File::from(to), &shared))?;
        Ok(StderrRelay { thread: Some(thread), instead })
    }

    /// From now on, git's `fatal:` line about [`POISON`] is replaced by `fatal`.
    pub(crate) fn replace_poison_line(&self, fatal: Vec<u8>) {
        *self.instead.lock().unwrap_or_else(PoisonError::into_inner) = Some(fatal);
    }

    /// Waits until everything git printed has been relayed (after git has exited: its stderr has ended).
    pub(crate) fn finish(mut self) {
        if let Some(thread) = self.thread.take() {
            // A panic in the relay has been reported by the panic hook; there is nothing left to relay.
            let _ = thread.join();
        }
    }
}

fn relay(mut from: impl BufRead, mut to: impl Write, instead: &Mutex<Option<Vec<u8>>>) {
    let take = || instead.lock().unwrap_or_else(PoisonError::into_inner).take();
    let mut line = Vec::new();
    loop {
        line.clear();
        match from.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
        let replacement = if about_poison(&line) { take() } else { None };
        // A stderr nobody reads any more: go on reading, so that git never blocks on it.
        let _ = to.write_all(replacement.as_deref().unwrap_or(&line));
    }
    if let Some(fatal) = take() {
        let _ = to.write_all(&fatal);
    }
}

/// Is this git's `fatal: <what it expected>: <the line>` about [`POISON`]?
fn about_poison(line: &[u8]) -> bool {
    line.starts_with(b"fatal: ") && line.ends_with(POISON) && line[..line.len() - POISON.len()].ends_with(b": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relayed(git_said: &[u8], instead: Option<&[u8]>) -> Vec<u8> {
        let instead = Mutex::new(instead.map(<[u8]>::to_vec));
        let mut out = Vec::new();
        relay(git_said, &mut out, &instead);
        out
    }

    #[test]
    fn the_line_about_the_poison_is_replaced_once_asked() {
        let poisoned = [&b"warning: w\nfatal: Unsupported command: "[..], POISON, b"fast-import: dumping\n"].concat();
        assert_eq!(relayed(&poisoned, Some(b"fatal: ours\n")), b"warning: w\nfatal: ours\nfast-import: dumping\n");
        assert_eq!(relayed(&poisoned, None), poisoned, "not asked: everything as git said it");
        let data = [&b"fatal: Corrupt mode: "[..], POISON].concat();
        assert_eq!(relayed(&data, Some(b"fatal: ours\n")), b"fatal: ours\n");
    }

    #[test]
    fn a_git_that_died_first_keeps_its_line_and_ours_comes_last() {
        let said = b"fatal: mark :9 not declared\nfast-import: dumping\n";
        assert_eq!(relayed(said, Some(b"fatal: ours\n")), [&said[..], b"fatal: ours\n"].concat());
    }
}
