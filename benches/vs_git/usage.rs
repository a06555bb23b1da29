//! The CPU time and peak RSS of one tool run, from `wait4`, measured by a small wrapper process: this harness
//! binary started again with [`USAGE_REPORT`] set, which starts the tool, reaps it and writes its usage to a file.
//!
//! Why a wrapper: `/usr/bin/time` prints CPU time in hundredths of a second, too coarse for a run of 2,000 small
//! requests; and the harness cannot reap the tool itself, because Linux charges the peak RSS of the process that
//! called `exec` to the new program (`ru_maxrss` after a `vfork` + `exec` from a harness holding a 10M-blob
//! inventory reads 1.3 GiB for every tool). The wrapper is a few MiB, like `/usr/bin/time`.

use std::ffi::OsString;
use std::fs;
use std::io::{self, ErrorKind};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, ExitCode, ExitStatus};

use anyhow::{Context, Result, bail};

/// Set for the wrapper: the file it writes the tool's usage to.
pub const USAGE_REPORT: &str = "VS_GIT_USAGE_REPORT";

/// What the kernel counted for one child and the descendants it waited for.
#[derive(Clone, Copy, Debug)]
pub struct Usage {
    pub user_secs: f64,
    pub sys_secs: f64,
    pub max_rss_kib: u64,
}

/// `argv` run under the wrapper; give the wrapper [`USAGE_REPORT`] in its environment, then [`read`] the report.
pub fn wrap(argv: Vec<OsString>) -> Result<Vec<OsString>> {
    let mut wrapped: Vec<OsString> = vec![std::env::current_exe()?.into()];
    wrapped.extend(argv);
    Ok(wrapped)
}

/// The usage the wrapper wrote.
pub fn read(report: &Path) -> Result<Usage> {
    let text = fs::read_to_string(report).with_context(|| format!("reading {}", report.display()))?;
    let fields: Vec<&str> = text.split_whitespace().collect();
    let [user_us, sys_us, max_rss_kib] = fields[..] else {
        bail!("unexpected usage report {text:?}");
    };
    Ok(Usage {
        user_secs: user_us.parse::<f64>()? / 1e6,
        sys_secs: sys_us.parse::<f64>()? / 1e6,
        max_rss_kib: max_rss_kib.parse()?,
    })
}

/// The wrapper's `main`: runs its arguments as a command with the inherited stdin, stdout and stderr, writes
/// `<user µs> <sys µs> <max RSS KiB>` to `report`, and exits as the command did.
pub fn wrapper(report: &Path) -> Result<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    let program = args.next().context("no command to run")?;
    let child = Command::new(&program)
        .args(args)
        .env_remove(USAGE_REPORT)
        .spawn()
        .with_context(|| format!("spawning {program:?}"))?;
    let (status, usage) = wait_with_usage(&child)?;
    let micros = |secs: f64| (secs * 1e6).round() as u64;
    fs::write(report, format!("{} {} {}\n", micros(usage.user_secs), micros(usage.sys_secs), usage.max_rss_kib))
        .with_context(|| format!("writing {}", report.display()))?;
    let code = status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// Reaps `child` with `wait4`, which returns that one child's usage, CPU time to the microsecond. `child` must
/// not be waited for again.
fn wait_with_usage(child: &Child) -> Result<(ExitStatus, Usage)> {
    let pid = libc::pid_t::try_from(child.id())?;
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain integers, for which all-zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: both pointers are to live locals of the types wait4 writes; `pid` is our unreaped child.
        let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if reaped == pid {
            break;
        }
        let error = io::Error::last_os_error();
        if error.kind() != ErrorKind::Interrupted {
            return Err(error).context("wait4");
        }
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let usage = Usage {
        user_secs: secs(usage.ru_utime),
        sys_secs: secs(usage.ru_stime),
        // Linux counts ru_maxrss in KiB.
        max_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
    };
    Ok((ExitStatus::from_raw(status), usage))
}
