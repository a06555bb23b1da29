//! Letting go of the pages an idle repository's maps hold: pack indexes, multi-pack-indexes, `.rev` files and pack
//! data stay mapped (reopening them costs more than keeping them), but their pages leave the process's resident
//! set. They stay in the page cache, so the next client's lookups fault them back in without reading the disk.
//!
//! Why: a page mapped into a process counts in its proportional set size (PSS, what a host's memory accounting
//! sees) for as long as it stays mapped. A `git cat-file` that a Gitaly-like pool closes after 10 s gives its pages
//! back; a daemon that keeps a thousand repositories open kept every page any client ever touched.
use rustix::mm::{Advice, madvise};

/// Drops the page-table entries of the whole pages inside `mapped`, a read-only mapping of a file.
pub(in crate::store) fn release(mapped: &[u8]) {
    let page = rustix::param::page_size();
    let start = mapped.as_ptr() as usize;
    let first = start.next_multiple_of(page);
    let end = (start + mapped.len()) / page * page;
    if end <= first {
        return;
    }
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

#[cfg(test)]
mod tests {
    use std::io::Write;

    fn resident_pages(map: &memmap2::Mmap) -> usize {
        let page = rustix::param::page_size();
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
