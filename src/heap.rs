//! The heap of a one-shot stream: the resolver threads' glibc arenas made writable whole at once and backed by
//! 2 MiB transparent huge pages, so that the delta-base cache filling up (up to 96 MiB of kept blobs and trees,
//! every byte a first touch) costs a page fault per 2 MiB instead of per 4 KiB.
//!
//! Why here and not in the allocator: glibc already does this when asked through the environment
//! (`GLIBC_TUNABLES=glibc.malloc.hugetlb=1`, with `top_pad`), which a process cannot set for itself; what it does
//! then is two things this module does in-process. (1) `M_TOP_PAD` of a whole heap: a thread's arena lives in a
//! 64 MiB reservation (`HEAP_MAX_SIZE`, aligned to its size, so that glibc finds a chunk's heap by masking its
//! address) that glibc otherwise makes writable a few pages at a time, one `mprotect` per growth, which no huge
//! page fits in; with the pad its first heap is writable whole. (2) `madvise(MADV_HUGEPAGE)` of that heap, since
//! THP is `madvise` on the machines measured. small-A, 20,000 blobs in pack order: page faults 30.8k → 2.5k,
//! CPU −7 to −19% over reads in every order and `ls` (benches/README.md, "issue 28, branch reads4").
//!
//! Only for one stream per process (`cat-blobd` reading stdin, `cat-file`, the shim), and only once it proves
//! long (its resolver threads start): never the daemon, where the pad would make glibc keep up to 64 MiB of freed
//! memory at the top of each arena instead of returning it, which its idle memory must not hold.
use std::sync::atomic::{AtomicBool, Ordering};

/// glibc's `HEAP_MAX_SIZE` on 64-bit targets (2 × `DEFAULT_MMAP_THRESHOLD_MAX`): the size and alignment of a
/// thread arena's heap.
const ARENA_HEAP: usize = 64 << 20;

/// Whether this process runs one stream ([`for_one_stream`]).
static ONE_STREAM: AtomicBool = AtomicBool::new(false);

/// Whether [`before_resolvers`] configured the heap, so that resolver threads advise theirs.
static HUGE_ARENAS: AtomicBool = AtomicBool::new(false);

/// Notes that this process runs one stream; the heap is set up only if it proves long ([`before_resolvers`]).
/// Costs nothing at start-up.
pub fn for_one_stream() {
    ONE_STREAM.store(true, Ordering::Relaxed);
}

/// Sets glibc's malloc up for the resolver threads about to start, once, in a process that runs one stream, and
/// only where the pad cannot make an allocation fail: each arena's first heap is then 64 MiB of private writable
/// memory at once, which counts in full against `RLIMIT_DATA` (`ulimit -d`) and, under strict overcommit
/// (`vm.overcommit_memory` = 2), against the commit limit.
///
/// Explicit values for all three thresholds: setting any one of them turns off glibc's dynamic mmap threshold,
/// so each is set to where that rule would take it for large blobs (mmap only from 32 MiB, the largest glibc
/// allows, and trim from twice that), rather than leaving every blob over 128 KiB to an `mmap` of its own, faulted
/// page by page and unmapped at free.
pub(crate) fn before_resolvers() {
    if !ONE_STREAM.swap(false, Ordering::Relaxed) || !room_for_whole_heaps() {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
    {
        let settings = [
            (libc::M_TOP_PAD, ARENA_HEAP),
            (libc::M_MMAP_THRESHOLD, ARENA_HEAP / 2),
            (libc::M_TRIM_THRESHOLD, ARENA_HEAP),
        ];
        for (param, value) in settings {
            #[allow(unsafe_code)]
            // SAFETY: `mallopt` takes any parameter and value (an unknown one is refused with 0); these only tune
            // when malloc asks the kernel for memory and gives it back, never what an allocation returns. glibc
            // takes its lock for the change; threads reading the old values meanwhile are only tuned later.
            let set = unsafe { libc::mallopt(param, value as libc::c_int) };
            if set == 0 {
                return;
            }
        }
        HUGE_ARENAS.store(true, Ordering::Relaxed);
    }
}

/// No data-segment limit below 1 GiB, and no strict overcommit.
fn room_for_whole_heaps() -> bool {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Data).current;
    if limit.is_some_and(|bytes| bytes < 1 << 30) {
        return false;
    }
    std::fs::read("/proc/sys/vm/overcommit_memory").map_or(true, |mode| !mode.starts_with(b"2"))
}

/// Asks for huge pages on the calling thread's arena heap, if [`before_resolvers`] configured the heap: called once
/// by each resolver thread as it starts, whose allocations (the results it builds and the cache keeps) live there.
pub(crate) fn advise_thread_arena() {
    if !HUGE_ARENAS.load(Ordering::Relaxed) {
        return;
    }
    // An allocation served by this thread's arena is in its heap (glibc gives each new thread its own arena, up to
    // 8 per core); the heap starts at the address rounded down to its size. Not a small one: glibc's per-thread
    // cache (up to 1,032 bytes) hands out chunks other threads allocated and this one freed (the spawned closure,
    // from the main arena). `black_box`: an allocation the compiler can see through may be left out.
    let probe = std::hint::black_box(Vec::<u8>::with_capacity(4096));
    let heap = (probe.as_ptr() as usize) & !(ARENA_HEAP - 1);
    drop(probe);
    #[allow(unsafe_code)]
    // SAFETY: `MADV_HUGEPAGE` changes no contents and no protection, only whether later faults in the range may be
    // backed by 2 MiB pages; on a range that is not all mapped it advises the mapped parts and fails with ENOMEM.
    // Even if the heap were not where glibc's layout puts it, the advice would only change the page size of
    // anonymous memory next to it.
    let advised =
        unsafe { rustix::mm::madvise(heap as *mut std::ffi::c_void, ARENA_HEAP, rustix::mm::Advice::LinuxHugepage) };
    // Without THP (or with it off), the heap stays in 4 KiB pages: nothing else changes.
    let _ = advised;
}

#[cfg(all(test, target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
mod tests {
    use super::*;

    /// The `VmFlags` of the mapping that holds `address`, from /proc/self/smaps.
    fn vm_flags(address: usize) -> String {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps is readable");
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((start, end)) = range.split_once('-')
                && let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16))
            {
                inside = (start..end).contains(&address);
            } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
                return flags.to_owned();
            }
        }
        panic!("no mapping holds {address:#x}")
    }

    /// A new thread's allocations, after the thread advised its arena, are in memory marked for huge pages (`hg`).
    /// The test process's own malloc is reconfigured by this: harmless, the settings only tune when memory is
    /// asked for and given back.
    #[test]
    fn a_resolver_threads_arena_is_advised_for_huge_pages() {
        for_one_stream();
        before_resolvers();
        assert!(HUGE_ARENAS.load(Ordering::Relaxed), "glibc took the settings");
        let flags = std::thread::spawn(|| {
            advise_thread_arena();
            let kept = std::hint::black_box(vec![1u8; 4096]);
            vm_flags(kept.as_ptr() as usize)
        })
        .join()
        .expect("the thread ran");
        assert!(flags.split_whitespace().any(|flag| flag == "hg"), "VmFlags:{flags}");
    }
}
