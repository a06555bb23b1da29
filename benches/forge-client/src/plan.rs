//! The plan forge-node.py writes: what each client thread does, decided before anything is timed.
//!
//! ```text
//! client                                   starts the next client thread's list
//! conn <check> <keep> <at> <n> <repo>      a connection: 1 for `--batch-check`, 1 to keep its answers, not
//!                                          opened before <at> µs from the start (0: at once, a closed loop), n ids
//! <id>                                     n lines, one id each
//! ```

use anyhow::{Context, Result, bail};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub struct Connection {
    pub repo: PathBuf,
    pub check: bool,
    pub keep: bool,
    /// Not opened before this long after the start: the script's paced runs (`--rate`) give each connection
    /// its arrival time; zero in a closed loop.
    pub at: Duration,
    pub ids: Vec<Vec<u8>>,
}

/// One list of connections per client thread.
pub type Plan = Vec<Vec<Connection>>;

pub fn read(path: &Path) -> Result<Plan> {
    let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mut lines = text.split(|&b| b == b'\n');
    let mut plan: Plan = Vec::new();
    while let Some(line) = lines.next() {
        if line.is_empty() {
            continue;
        }
        if line == b"client" {
            plan.push(Vec::new());
            continue;
        }
        let Some(rest) = line.strip_prefix(b"conn ") else {
            bail!("bad plan line {:?}", String::from_utf8_lossy(line));
        };
        let mut fields = rest.splitn(5, |&b| b == b' ');
        let mut field = || fields.next().context("short conn line");
        let check = field()? == b"1";
        let keep = field()? == b"1";
        let at = Duration::from_micros(std::str::from_utf8(field()?)?.parse()?);
        let n: usize = std::str::from_utf8(field()?)?.parse()?;
        let repo = PathBuf::from(OsStr::from_bytes(field()?));
        let ids = (0..n)
            .map(|_| lines.next().map(<[u8]>::to_vec).context("plan ends inside a connection"))
            .collect::<Result<_>>()?;
        let client = plan.last_mut().context("conn before any client")?;
        client.push(Connection { repo, check, keep, at, ids });
    }
    Ok(plan)
}
