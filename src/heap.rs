//! The heap of a one-shot stream: each resolver thread's glibc arena made writable whole when it is created, not
//! a few pages at a time as it grows.
//!
//! A thread's arena lives in a 64 MiB reservation (glibc's `HEAP_MAX_SIZE`) that glibc makes writable with one
//! `mprotect` per growth; as the delta-base cache fills (up to 96 MiB of kept blobs and trees), that was 8,600
//! `mprotect` calls for 20,000 blobs of small-A in pack order, 5,300 for 10,000 `ls`. `M_TOP_PAD` of a whole heap
//! makes the first heap of every arena writable at once: the calls go, and nothing else changes (the pages are
//! still touched one by one, and only the touched ones are resident). CPU −2 to −9% (benches/README.md, "issue
//! 28, branch reads4", which also says why the heap is not put in huge pages).
//!
//! Only for one stream per process (`cat-blobd` reading stdin, `cat-file`, the shim), and only once it proves
//! long (its resolver threads start): never the daemon, where the pad would make glibc keep up to 64 MiB of freed
//! memory at the top of each arena instead of returning it, which its idle memory must not hold.
use std::sync::atomic::{AtomicBool, Ordering};

/// glibc's `HEAP_MAX_SIZE` on 64-bit targets (2 × `DEFAULT_MMAP_THRESHOLD_MAX`): the largest heap of a thread
/// arena, and so the pad that makes its first heap writable whole.
const ARENA_HEAP: usize = 64 << 20;

/// Whether this process runs one stream and has not set the heap up yet ([`for_one_stream`]).
static ONE_STREAM: AtomicBool = AtomicBool::new(false);

/// Notes that this process runs one stream; the heap is set up only if it proves long ([`before_resolvers`]).
/// Costs nothing at start-up.
pub fn for_one_stream() {
    ONE_STREAM.store(true, Ordering::Relaxed);
}

/// Sets glibc's malloc up for the resolver threads about to start, once, in a process that runs one stream, where
/// the pad cannot make an allocation fail ([`pad_fits`]).
///
/// Explicit values for all three thresholds: setting any one of them turns off glibc's dynamic mmap threshold,
/// so each is set to where that rule would take it for large blobs (mmap only from 32 MiB, the largest glibc
/// allows, and trim from twice that), rather than leaving every blob over 128 KiB to an `mmap` of its own, faulted
/// page by page and unmapped at free.
pub(crate) fn before_resolvers() {
    if !ONE_STREAM.swap(false, Ordering::Relaxed) {
        return;
    }
    let data_limit = rustix::process::getrlimit(rustix::process::Resource::Data).current;
    let overcommit = std::fs::read("/proc/sys/vm/overcommit_memory").ok();
    if !pad_fits(data_limit, overcommit.as_deref()) {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
    for (param, value) in
        [(libc::M_TOP_PAD, ARENA_HEAP), (libc::M_MMAP_THRESHOLD, ARENA_HEAP / 2), (libc::M_TRIM_THRESHOLD, ARENA_HEAP)]
    {
        #[allow(unsafe_code)]
        // SAFETY: `mallopt` takes any parameter and value (an unknown one is refused with 0); these only tune when
        // malloc asks the kernel for memory and gives it back, never what an allocation returns. glibc changes
        // them under its main arena's lock; a thread reading an old value meanwhile is only tuned as before.
        let set = unsafe { libc::mallopt(param, value as libc::c_int) };
        if set == 0 {
            return;
        }
    }
}

/// Whether whole heaps can be made writable without an allocation failing: each arena's first heap is then
/// 64 MiB of private writable memory at once, which counts in full against `RLIMIT_DATA` (`ulimit -d`; a limit
/// below 1 GiB keeps glibc's default) and, under strict overcommit (`vm.overcommit_memory` = 2), against the
/// commit limit.
fn pad_fits(data_limit: Option<u64>, overcommit_mode: Option<&[u8]>) -> bool {
    data_limit.is_none_or(|bytes| bytes >= 1 << 30) && !overcommit_mode.is_some_and(|mode| mode.starts_with(b"2"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hardening test that serves a 16 MiB blob under an 8 MiB data limit aborted in malloc while the pad was
    /// set regardless (tests/server_hardening.rs).
    #[test]
    fn the_pad_is_left_out_under_a_data_limit_or_strict_overcommit() {
        assert!(pad_fits(None, Some(b"0\n")), "no limit, heuristic overcommit");
        assert!(pad_fits(None, None), "no /proc: nothing known against it");
        assert!(pad_fits(Some(8 << 30), Some(b"1\n")));
        assert!(!pad_fits(Some(8 << 20), Some(b"0\n")), "ulimit -d 8192");
        assert!(!pad_fits(None, Some(b"2\n")), "strict overcommit");
    }
}
