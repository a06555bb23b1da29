//! Gitaly's catfile cache, in spirit, as forge-node.py's `Pool` class: one `git cat-file` per repository and
//! mode, checked out by one connection at a time, the least recently used closed past `max_kept`, each closed
//! after `ttl` idle. A process is started at checkout, outside any timed span (its first request waits for git's
//! start-up, as a pool's client does).

use crate::stream::Stream;
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub struct Proc {
    child: Child,
    pub stream: Stream,
}

pub struct Pool {
    git: PathBuf,
    max_kept: usize,
    ttl: Duration,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Idle processes by (repository, `--batch-check`), each with when it was checked in.
    idle: HashMap<(PathBuf, bool), Vec<(Proc, Instant)>>,
    alive: usize,
    most: usize,
}

impl Pool {
    pub fn new(git: &Path, max_kept: usize, ttl: Duration) -> Self {
        Pool { git: git.to_path_buf(), max_kept, ttl, state: Mutex::default() }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn checkout(&self, repo: &Path, check: bool) -> Result<Proc> {
        {
            let mut state = self.state();
            state.expire(self.ttl);
            if let Some((proc, _)) = state.idle.get_mut(&(repo.to_path_buf(), check)).and_then(Vec::pop) {
                return Ok(proc);
            }
        }
        let mode: &[&str] = if check { &["--batch-check"] } else { &["--batch-command", "--buffer"] };
        let mut git_dir = std::ffi::OsString::from("--git-dir=");
        git_dir.push(repo);
        let mut child = Command::new(&self.git)
            .arg(git_dir)
            .arg("cat-file")
            .args(mode)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", self.git.display()))?;
        let input = OwnedFd::from(child.stdin.take().context("no stdin")?);
        let output = OwnedFd::from(child.stdout.take().context("no stdout")?);
        let stream = Stream { input: File::from(input), output: BufReader::new(File::from(output)) };
        let mut state = self.state();
        state.alive += 1;
        state.most = state.most.max(state.alive);
        Ok(Proc { child, stream })
    }

    pub fn checkin(&self, repo: &Path, check: bool, proc: Proc) {
        let mut state = self.state();
        state.idle.entry((repo.to_path_buf(), check)).or_default().push((proc, Instant::now()));
        while state.idle.values().map(Vec::len).sum::<usize>() > self.max_kept {
            state.close_oldest();
        }
    }

    /// The most processes alive at once so far.
    pub fn most(&self) -> usize {
        self.state().most
    }

    /// Closes every idle process.
    pub fn shutdown(&self) {
        let mut state = self.state();
        let idle: Vec<_> = state.idle.drain().flat_map(|(_, procs)| procs).collect();
        for (proc, _) in idle {
            state.close(proc);
        }
    }
}

impl State {
    fn expire(&mut self, ttl: Duration) {
        let now = Instant::now();
        let mut expired = Vec::new();
        for procs in self.idle.values_mut() {
            let (old, young): (Vec<_>, Vec<_>) = procs.drain(..).partition(|(_, t)| now - *t > ttl);
            *procs = young;
            expired.extend(old);
        }
        for (proc, _) in expired {
            self.close(proc);
        }
    }

    fn close_oldest(&mut self) {
        let oldest = self
            .idle
            .iter()
            .flat_map(|(key, procs)| procs.iter().enumerate().map(move |(i, (_, t))| (*t, key, i)))
            .min_by_key(|(t, _, _)| *t)
            .map(|(_, key, i)| (key.clone(), i));
        if let Some((key, i)) = oldest {
            let (proc, _) = self.idle.get_mut(&key).expect("the key just found").remove(i);
            self.close(proc);
        }
    }

    /// As the script's `Pool.close`: stdin closed, so git exits, and waited for, under the pool's lock.
    fn close(&mut self, proc: Proc) {
        let Proc { mut child, stream } = proc;
        drop(stream);
        let _ = child.wait();
        self.alive -= 1;
    }
}
