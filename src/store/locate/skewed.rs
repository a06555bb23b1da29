//! A read-only map of a whole file, placed 1 MiB past a 2 MiB boundary when the file is 2 MiB or more, so that
//! touching a byte of it puts a few pages into the process's resident set rather than a whole 2 MiB folio.
//!
//! Why: since Linux 6.18 a read fault on a file mapping maps the whole folio of the page cache that holds the byte
//! ("map entire large folio faultaround") when the folio lies inside one page table of the mapping. The page
//! cache holds a pack read in big chunks (a clone, a repack, a `git cat-file --batch-all-objects`) in folios of up
//! to 2 MiB, and the kernel places a file mapping of 2 MiB or more at an address congruent to its file offsets
//! modulo 2 MiB: every 2 MiB folio then sits inside one page table, and one random read of git.git's pack put up
//! to 2 MiB into the reader's proportional set size (PSS). Twenty random one-byte reads made 25–39 MB of a pack
//! resident as the kernel places the map, 1.7 MB with the map 1 MiB off (2026-12-06): a 2 MiB folio then straddles
//! two page tables and the fault maps only its fault-around window (64 KiB). For a `--root` daemon that was most of
//! its memory while its busy repositories read (up to 80 MiB of pack pages at a peak of forge-node's 1,000
//! repositories). Why 1 MiB and not a page: folios of 1 MiB or less stay aligned to the map's addresses as the
//! kernel would place them, so a fault maps what it maps in an aligned map; one page off, a fault-around window
//! overlaps two of them and maps both (2.5 MB against 1.3 MB for twenty reads in a page cache of small folios).
use std::fs::File;
use std::io;
use std::ops::Deref;

use rustix::mm::{MapFlags, ProtFlags, mmap, mmap_anonymous, munmap};

/// The span the map is placed off: the size of what one page table maps on x86-64 (and arm64 with 4 KiB pages).
const BOUNDARY: usize = 2 << 20;
/// Where in that span the map starts.
const SKEW: usize = BOUNDARY / 2;

/// A read-only, shared map of a whole file (as `memmap2::Mmap::map` makes it), starting [`SKEW`] past a multiple of
/// [`BOUNDARY`]; unmapped when dropped.
pub(crate) struct SkewedMap {
    /// Where the file's bytes start, and how many. Kept as integers, so the map is `Send` and `Sync` as a byte
    /// slice is.
    data: usize,
    len: usize,
}

impl SkewedMap {
    /// Maps the whole of `file` read-only.
    ///
    /// # Safety
    /// As for `memmap2::Mmap::map`: the caller must make sure the file is not truncated or changed in place while
    /// mapped (git never rewrites a pack, index or `.rev` in place; it writes a new file and renames it over).
    #[allow(unsafe_code)]
    pub(crate) unsafe fn map(file: &File) -> io::Result<SkewedMap> {
        let len = usize::try_from(file.metadata()?.len()).map_err(|_| io::Error::other("file too large to map"))?;
        if len == 0 {
            return Ok(SkewedMap { data: 0, len: 0 });
        }
        if len < BOUNDARY {
            // A file smaller than the boundary holds no 2 MiB folio (the page cache's folios end at the end of the
            // file), and the kernel places a map of it without aligning it: a plain map faults in no more than a
            // skewed one, in one system call instead of four (an index opened by each lookup that passes it, 123 of
            // them on git.git in packs of 8 MiB).
            // SAFETY: a new shared read-only map of the whole file at an address the kernel picks; its bytes are
            // only ever read through `Deref`, and the caller vouches that the file does not change while mapped.
            let data = unsafe { mmap(std::ptr::null_mut(), len, ProtFlags::READ, MapFlags::SHARED, file, 0) }?;
            return Ok(SkewedMap { data: data as usize, len });
        }
        let page = super::resident::page_size();
        let (reserved, mapped) = (len + BOUNDARY + SKEW, len.next_multiple_of(page));
        // SAFETY: a new private anonymous mapping with no access, at an address the kernel picks: it overlaps no
        // memory in use, and only reserves the range the file is mapped into below.
        let start = unsafe {
            mmap_anonymous(std::ptr::null_mut(), reserved, ProtFlags::empty(), MapFlags::PRIVATE | MapFlags::NORESERVE)
        }? as usize;
        let data = start.next_multiple_of(BOUNDARY) + SKEW;
        // SAFETY: `[data, data + mapped)` lies inside the reservation just made (`data + mapped <= start + BOUNDARY
        // + SKEW + len` rounded to pages), which nothing else uses, so MAP_FIXED replaces only our own reserved
        // pages. The file's bytes are only ever read through `Deref`, never written (PROT_READ); the caller vouches
        // that the file does not change while mapped.
        let on_file = unsafe {
            mmap(data as *mut std::ffi::c_void, len, ProtFlags::READ, MapFlags::SHARED | MapFlags::FIXED, file, 0)
        };
        // What is left of the reservation around the file goes, so the map costs one kernel mapping, as a plain
        // one does (a daemon with many repositories open keeps thousands).
        let mut unused = vec![(start, data - start), (data + mapped, start + reserved - data - mapped)];
        if on_file.is_err() {
            unused = vec![(start, reserved)];
        }
        for (at, length) in unused.into_iter().filter(|&(_, length)| length > 0) {
            // SAFETY: parts of the reservation made above that hold no file bytes, referenced by nothing. Failing
            // only leaks address space.
            let _ = unsafe { munmap(at as *mut std::ffi::c_void, length) };
        }
        on_file?;
        Ok(SkewedMap { data, len })
    }
}

impl Deref for SkewedMap {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `[data, data + len)` is the file mapped read-only in `map`, and stays mapped until `self` drops;
        // its bytes do not change (the caller of `map` vouched for that).
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts(self.data as *const u8, self.len)
        }
    }
}

impl Drop for SkewedMap {
    fn drop(&mut self) {
        if self.len == 0 {
            return;
        }
        // SAFETY: the file's mapping that `map` made; `&mut self` means no slice from `deref` is alive. Failing
        // only leaks the address range.
        #[allow(unsafe_code)]
        let _ = unsafe { munmap(self.data as *mut std::ffi::c_void, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn maps_the_whole_file_past_a_boundary() {
        let mut file = tempfile::tempfile().expect("temporary file");
        let bytes: Vec<u8> = (0..(5 << 20) + 123).map(|n: u32| (n * 7 % 251) as u8).collect();
        file.write_all(&bytes).expect("write");
        // SAFETY: a temporary file nothing else writes.
        #[allow(unsafe_code)]
        let map = unsafe { SkewedMap::map(&file) }.expect("map");
        assert_eq!(&map[..], &bytes[..]);
        assert_eq!(map.as_ptr() as usize % BOUNDARY, SKEW);
        let at = format!("{:x}-", map.as_ptr() as usize);
        let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
        let line = maps.lines().find(|line| line.starts_with(&at)).expect("the file's mapping");
        let end = usize::from_str_radix(line[at.len()..].split(' ').next().expect("end"), 16).expect("hex");
        assert_eq!(
            end - map.as_ptr() as usize,
            bytes.len().next_multiple_of(crate::store::locate::resident::page_size())
        );
        let before = map.as_ptr() as usize - 1;
        let reserved = maps.lines().any(|line| {
            let (start, rest) = line.split_once('-').expect("a range");
            let end = rest.split(' ').next().expect("end");
            let (start, end) = (usize::from_str_radix(start, 16).unwrap(), usize::from_str_radix(end, 16).unwrap());
            (start..end).contains(&before) && line.contains("---p")
        });
        assert!(!reserved, "the reservation before the file was given back");
        let empty = tempfile::tempfile().expect("temporary file");
        // SAFETY: as above.
        #[allow(unsafe_code)]
        let nothing = unsafe { SkewedMap::map(&empty) }.expect("map");
        assert!(nothing.is_empty());
    }

    /// A file under the boundary is mapped as the kernel places it, in one mapping of its own pages and nothing
    /// reserved around it.
    #[test]
    fn maps_a_small_file_plainly() {
        let mut file = tempfile::tempfile().expect("temporary file");
        let bytes: Vec<u8> = (0..300_001u32).map(|n| (n * 11 % 251) as u8).collect();
        file.write_all(&bytes).expect("write");
        // SAFETY: a temporary file nothing else writes.
        #[allow(unsafe_code)]
        let map = unsafe { SkewedMap::map(&file) }.expect("map");
        assert_eq!(&map[..], &bytes[..]);
        let at = format!("{:x}-", map.as_ptr() as usize);
        let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
        let line = maps.lines().find(|line| line.starts_with(&at)).expect("the file's mapping");
        let end = usize::from_str_radix(line[at.len()..].split(' ').next().expect("end"), 16).expect("hex");
        let page = crate::store::locate::resident::page_size();
        assert_eq!(end - map.as_ptr() as usize, bytes.len().next_multiple_of(page), "the file's pages, no more");
    }
}
