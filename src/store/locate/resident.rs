//! Letting go of the pages an idle repository's maps hold: pack indexes, multi-pack-indexes, `.rev` files and pack
//! data stay mapped (reopening them costs more than keeping them), but their pages leave the process's resident
//! set. They stay in the page cache, so the next client's lookups fault them back in without reading the disk.
//!
//! Why: a page mapped into a process counts in its proportional set size (PSS, what a host's memory accounting
//! sees) for as long as it stays mapped. A `git cat-file` that a Gitaly-like pool closes after 10 s gives its pages
//! back; a daemon that keeps a thousand repositories open kept every page any client ever touched.
use std::sync::atomic::AtomicU64;

use rustix::mm::{Advice, madvise};

/// Drops the page-table entries of the whole pages inside `mapped`, a read-only mapping of a file.
pub(in crate::store) fn release(mapped: &[u8]) {
    let Some((first, end)) = whole_pages(mapped.as_ptr() as usize, mapped.len()) else { return };
    // SAFETY: `[first, end)` lies inside `mapped`, which the caller borrows, so it is mapped for the whole call.
    // Every caller passes a read-only mapping of a file (an index, a `.rev` or a pack, mapped with PROT_READ):
    // no page of it was ever written, so MADV_DONTNEED only removes page-table entries, and the next read faults
    // the same bytes back in from the file, which git never rewrites in place (the premise of mapping it at all).
    // No reference into the range sees a change.
    #[allow(unsafe_code)]
    let result = unsafe { madvise(first as *mut std::ffi::c_void, end - first, Advice::LinuxDontNeed) };
    // Failing only leaves the pages resident, as they were.
    let _ = result;
}

/// Empties `words`, a table whose every word means "nothing here" when 0, by letting the whole pages inside it leave
/// the resident set: they read back as zeros, and cost nothing until a word of them is written again. The words at
/// either end that share a page with other memory are left as they are.
///
/// Why: a table filled at random (the kind memo, one word per chain an `info` walked) touches one page per word
/// written; a `--root` daemon kept each idle repository's, 8 MiB of address space and 0.1–1 MiB resident for a
/// git.git copy, never given back until the repository closed.
pub(in crate::store) fn empty(words: &[AtomicU64]) {
    let Some((first, end)) = whole_pages(words.as_ptr() as usize, std::mem::size_of_val(words)) else { return };
    // SAFETY: `[first, end)` is whole pages inside `words`, which the caller borrows, so they stay mapped for the
    // whole call and hold nothing but these words (an allocation's bytes hold none of the allocator's own data).
    // `words` is heap memory, so private anonymous pages: after MADV_DONTNEED they read back as zero-filled pages
    // at the next touch, and 0 is a valid `AtomicU64` that the caller's table takes for empty. A word never tears
    // (words are 8-byte aligned, pages whole), so a thread using the table meanwhile sees each word either as it
    // was or as 0, as if it had been overwritten with 0; a store racing with the call may be lost, as an
    // overwritten one would be.
    #[allow(unsafe_code)]
    let result = unsafe { madvise(first as *mut std::ffi::c_void, end - first, Advice::LinuxDontNeed) };
    // Failing only leaves the words as they were: still valid, still resident.
    let _ = result;
}

/// The whole pages inside the `len` bytes at `start`, as `[first, end)` addresses; `None` when there is none.
fn whole_pages(start: usize, len: usize) -> Option<(usize, usize)> {
    let page = page_size();
    let (first, end) = (start.next_multiple_of(page), (start + len) / page * page);
    (first < end).then_some((first, end))
}

/// The system's page size. Not `rustix::param::page_size`: its first call checks the vDSO's ELF header, which
/// valgrind does not map, so every tool of valgrind (callgrind included) killed a process that mapped a pack.
pub(in crate::store) fn page_size() -> usize {
    // SAFETY: sysconf takes no pointer and has no precondition; it reads a constant of the system.
    #[allow(unsafe_code)]
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).ok().filter(|&size| size > 0).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    fn resident_pages(map: &memmap2::Mmap) -> usize {
        let page = super::page_size();
        let mut vec = vec![0u8; map.len().div_ceil(page)];
        // SAFETY: `map` is a live mapping of `map.len()` bytes and `vec` has one byte per page of it.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::mincore(map.as_ptr() as *mut libc::c_void, map.len(), vec.as_mut_ptr()) };
        assert_eq!(rc, 0);
        vec.iter().filter(|&&byte| byte & 1 == 1).count()
    }

    fn rss_of_range(map: &memmap2::Mmap) -> u64 {
        // Rss of the mapping's line in /proc/self/smaps: what this process holds of it.
        let start = format!("{:x}-", map.as_ptr() as usize);
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let mut lines = smaps.lines().skip_while(|line| !line.starts_with(&start));
        lines
            .find_map(|line| line.strip_prefix("Rss:"))
            .map(|kb| kb.trim().trim_end_matches(" kB").trim().parse().expect("kB"))
            .expect("the mapping's Rss line")
    }

    /// Pages of `bytes` resident in this process (`mincore`, which sees anonymous pages too).
    fn resident_pages_of(bytes: &[u8]) -> usize {
        let page = super::page_size();
        let (start, end) = super::whole_pages(bytes.as_ptr() as usize, bytes.len()).expect("whole pages");
        let mut vec = vec![0u8; (end - start) / page];
        // SAFETY: `[start, end)` lies inside `bytes`, mapped while borrowed; `vec` has one byte per page of it.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::mincore(start as *mut libc::c_void, end - start, vec.as_mut_ptr()) };
        assert_eq!(rc, 0);
        vec.iter().filter(|&&byte| byte & 1 == 1).count()
    }

    #[test]
    fn an_emptied_table_reads_zero_and_leaves_the_resident_set() {
        use std::sync::atomic::{AtomicU64, Ordering};
        let words: Box<[AtomicU64]> = (0..1u64 << 17).map(AtomicU64::new).collect();
        // SAFETY: the table's own bytes, borrowed for the count only.
        #[allow(unsafe_code)]
        let bytes = unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), size_of_val(&words[..])) };
        assert!(resident_pages_of(bytes) >= 250, "1 MiB written: {} pages", resident_pages_of(bytes));
        super::empty(&words);
        assert_eq!(resident_pages_of(bytes), 0);
        let page_words = super::page_size() / 8;
        let inner = (words.as_ptr() as usize).next_multiple_of(page_words * 8);
        let first_inner = (inner - words.as_ptr() as usize) / 8;
        assert!(words[first_inner..words.len() - page_words].iter().all(|word| word.load(Ordering::Relaxed) == 0));
        // A word still takes a write, and keeps it.
        words[first_inner + 5].store(99, Ordering::Relaxed);
        assert_eq!(words[first_inner + 5].load(Ordering::Relaxed), 99);
    }

    #[test]
    fn released_pages_leave_the_resident_set_and_read_back_the_same() {
        let mut file = tempfile::tempfile().expect("temporary file");
        let bytes: Vec<u8> = (0..1 << 20).map(|n: u32| (n * 7 % 251) as u8).collect();
        file.write_all(&bytes).expect("write");
        // SAFETY: a temporary file nothing else writes.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(&file) }.expect("map");
        assert_eq!(map.iter().map(|&b| b as u64).sum::<u64>(), bytes.iter().map(|&b| b as u64).sum::<u64>());
        assert!(rss_of_range(&map) >= 1000, "touched: {} kB", rss_of_range(&map));
        super::release(&map);
        assert_eq!(rss_of_range(&map), 0);
        // Still in the page cache: reading faults them back, with the same bytes.
        assert!(resident_pages(&map) > 0);
        assert_eq!(&map[..], &bytes[..]);
    }
}
