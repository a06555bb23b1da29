use super::*;
use crate::store::testpack::{Objects, Stored, chain, delta, noise, object_id};
use crate::store::{Kind, ObjectId};

const SHA1: gix_hash::Kind = gix_hash::Kind::Sha1;

fn open(pack_path: &Path) -> Pack {
    Pack::open(&pack_path.with_extension("idx"), 7, SHA1).expect("a readable index")
}

#[test]
fn finds_reads_and_inflates_entries() {
    let objects = Objects::new();
    let entries = chain(&[b"base\n", b"base\nmore\n"], true);
    let (path, offsets) = objects.add_pack("a", &entries);
    let pack = open(&path);
    assert_eq!(pack.lookup(&entries[0].0).map(Result::ok), Some(Some(offsets[0])));
    assert_eq!(pack.lookup(&entries[1].0).map(Result::ok), Some(Some(offsets[1])));
    assert!(pack.lookup(&object_id(Kind::Blob, b"elsewhere")).is_none());
    assert_eq!(pack.key(offsets[1]), EntryKey { pack: 7, offset: offsets[1] });

    let mut inflater = Inflater::default();
    let whole = pack.entry(offsets[0]).expect("entry");
    assert_eq!(whole.header, Header::Blob);
    assert_eq!(pack.inflate(&whole, &mut inflater, 1 << 20).expect("inflate"), b"base\n");
    let on_base = pack.entry(offsets[1]).expect("entry");
    let Header::OfsDelta { base_distance } = on_base.header else { panic!("{:?}", on_base.header) };
    assert_eq!(on_base.checked_base_pack_offset(base_distance), Some(offsets[0]));
    let Stored::Ofs(_, expected) = &entries[1].1 else { panic!("a delta") };
    assert_eq!(&pack.inflate(&on_base, &mut inflater, 1 << 20).expect("inflate"), expected);
    let refused = pack.inflate(&whole, &mut inflater, 4);
    assert!(matches!(refused, Err(Damage::TooLarge { size: 5, limit: 4 })), "{refused:?}");
    assert!(matches!(pack.entry(1 << 20), Err(Damage::Truncated)));
}

#[test]
fn a_pack_that_does_not_match_its_index_is_unusable_not_absent() {
    let objects = Objects::new();
    let entries = chain(&[b"one\n", b"one\ntwo\n"], true);
    let (path, offsets) = objects.add_pack("a", &entries);
    let unusable = |pack: &Pack| match pack.entry(offsets[0]) {
        Err(Damage::Unusable(why)) => why,
        other => panic!("{other:?}"),
    };

    let bytes = std::fs::read(&path).expect("pack");
    let mut other_trailer = bytes.clone();
    *other_trailer.last_mut().expect("trailer") ^= 1;
    std::fs::write(&path, &other_trailer).expect("write");
    let pack = open(&path);
    assert!(pack.lookup(&entries[0].0).is_some(), "the index still answers");
    assert!(matches!(*unusable(&pack), PackError::ChecksumMismatch));

    let mut fewer = bytes.clone();
    fewer[8..12].copy_from_slice(&1u32.to_be_bytes());
    std::fs::write(&path, &fewer).expect("write");
    assert!(matches!(*unusable(&open(&path)), PackError::CountMismatch { pack: 1, index: 2 }));

    std::fs::remove_file(&path).expect("remove");
    assert!(matches!(*unusable(&open(&path)), PackError::Gone(_)), "a pack that is not there is gone");

    std::fs::write(path.with_extension("idx"), b"not an index").expect("write");
    let refused = Pack::open(&path.with_extension("idx"), 7, SHA1).map(|_| ());
    assert!(matches!(refused, Err(PackError::Index(_))), "{refused:?}");
}

/// What the delta-base cache learns from a pack: which entries deltas are built on, and when the last of
/// those deltas has been served.
#[test]
fn delta_bases_count_down_as_their_deltas_are_served() {
    let objects = Objects::new();
    let base = b"a base for two deltas\n";
    let mut entries = chain(&[base, b"a base for two deltas\nfirst\n"], true);
    let second = b"a base for two deltas\nsecond\n";
    let second_delta = delta(base.len(), base.len(), b"second\n");
    entries.push((object_id(Kind::Blob, second), Stored::Ref(entries[0].0, second_delta)));
    let (path, offsets) = objects.add_pack("a", &entries);
    let pack = open(&path);
    assert!(!pack.is_delta_base(offsets[0]), "nothing is known before the scan");
    assert!(!pack.known_not_base(offsets[1]), "nothing is known before the scan");
    assert!(!pack.delta_built_from(offsets[0]));

    pack.index_delta_bases();
    assert!(pack.is_delta_base(offsets[0]), "an OFS_DELTA and a REF_DELTA are built on it");
    assert!(!pack.is_delta_base(offsets[1]) && !pack.is_delta_base(offsets[2]));
    assert!(pack.known_not_base(offsets[1]) && pack.known_not_base(offsets[2]) && !pack.known_not_base(offsets[0]));
    assert!(!pack.delta_built_from(offsets[0]), "one delta still waits");
    assert!(pack.is_delta_base(offsets[0]));
    assert!(pack.delta_built_from(offsets[0]), "the last one was served");
    assert!(!pack.is_delta_base(offsets[0]));
    assert!(!pack.delta_built_from(offsets[0]), "once spent, the count stays at zero");
    assert!(!pack.delta_built_from(offsets[1]), "not a base");
}

/// Kibibytes of this process's mappings of `path` that are resident (`/proc/self/smaps`).
fn resident_kib(path: &Path) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
    let mut ours = false;
    let mut kib = 0;
    for line in smaps.lines() {
        if let Some(rss) = line.strip_prefix("Rss:") {
            let value = rss.trim().trim_end_matches("kB").trim();
            kib += if ours { value.parse::<u64>().expect("a number") } else { 0 };
        } else if line
            .split_whitespace()
            .next()
            .is_some_and(|range| range.contains('-') && range.chars().all(|c| c == '-' || c.is_ascii_hexdigit()))
        {
            // A mapping's first line: its address range, ..., its path.
            ours = line.ends_with(path.to_str().expect("a UTF-8 temporary path"));
        }
    }
    kib
}

/// The scan reads every entry header: through the mapping, that made the whole pack resident (476 MB of a
/// 663 MB peak on git.git at 100,000 blobs), though the stream never asked for most of it.
#[test]
fn the_base_scan_leaves_the_mapped_pack_alone() {
    // 4 MiB that does not compress, with a delta so that the scan has a base to find.
    let mut entries: Vec<(ObjectId, Stored)> = (0..1024u64)
        .map(|n| {
            let data = noise(n, 4096);
            (object_id(Kind::Blob, &data), Stored::Whole(Kind::Blob, data))
        })
        .collect();
    let Stored::Whole(_, last) = &entries[1023].1 else { unreachable!() };
    let on_last = [&last[..], b"more"].concat();
    entries.push((object_id(Kind::Blob, &on_last), Stored::Ofs(1023, delta(4096, 4096, b"more"))));
    let objects = Objects::new();
    let (path, offsets) = objects.add_pack("big", &entries);
    let pack = open(&path);
    pack.data_end().expect("mapped by a first read");
    let before = resident_kib(&path);
    pack.index_delta_bases();
    assert!(pack.is_delta_base(offsets[1023]), "the scan found the base");
    let after = resident_kib(&path);
    assert!(after < before + 512, "the scan made {} KiB of the 4 MiB pack resident", after - before);
}

/// The scan reads the pack through a new file handle: a file that is no longer the mapped pack (replaced
/// under the same name) leaves the bases unknown rather than counting another pack's.
#[test]
fn the_base_scan_reads_only_the_mapped_pack() {
    let objects = Objects::new();
    let (path, offsets) = objects.add_pack("a", &chain(&[b"one\n", b"one\ntwo\n"], true));
    let pack = open(&path);
    pack.data_end().expect("mapped by a first read");
    let mut other = std::fs::read(&path).expect("pack");
    *other.last_mut().expect("trailer") ^= 1;
    let replacement = path.with_extension("new");
    std::fs::write(&replacement, &other).expect("write");
    std::fs::rename(&replacement, &path).expect("rename");
    pack.index_delta_bases();
    assert!(!pack.is_delta_base(offsets[0]), "another file's bases are not counted");
    assert_eq!(
        pack.inflate(&pack.entry(offsets[0]).expect("mapped"), &mut Inflater::default(), 99).ok(),
        Some(b"one\n".to_vec())
    );
}

#[test]
fn the_base_scan_waits_for_a_share_of_a_big_pack() {
    assert_eq!(reads_before_base_scan(3), READS_BEFORE_BASE_SCAN);
    assert_eq!(reads_before_base_scan(320), READS_BEFORE_BASE_SCAN);
    assert_eq!(reads_before_base_scan(849_000), 84_900, "git.git: not for a 20,000-request stream");
}

#[test]
fn the_base_scan_starts_after_some_reads() {
    let objects = Objects::new();
    let (path, offsets) = objects.add_pack("a", &chain(&[b"x", b"xy"], true));
    let pack = Arc::new(open(&path));
    for _ in 0..READS_BEFORE_BASE_SCAN - 1 {
        Pack::note_read(&pack);
    }
    assert!(pack.delta_bases.get().is_none(), "short streams never pay for the scan");
    Pack::note_read(&pack);
    for _ in 0..1000 {
        if pack.delta_bases.get().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(pack.is_delta_base(offsets[0]), "the scan ran in the background");
}

/// An idle repository's packs keep nothing their walks learnt: the kind memo (8 MiB of address space for a
/// git.git-sized pack, a page resident for each chain walked) is emptied with the maps' pages.
#[test]
fn releasing_a_pack_empties_its_kind_memo() {
    let (_objects, pack, offsets) = five_thousand_blobs();
    pack.walked_links.store(links_before_made(5000), Ordering::Relaxed);
    let memo = pack.kind_memo_to_fill().expect("made once its walks decoded enough links");
    offsets.iter().for_each(|&offset| memo.put(offset, Kind::Blob));
    let remembered = |pack: &Pack| {
        let memo = pack.kind_memo().expect("kept when released");
        offsets.iter().filter(|&&offset| memo.get(offset).is_some()).count()
    };
    let before = remembered(&pack);
    assert!(before > 3000, "{before} of 5000 offsets remembered in 8192 slots");
    pack.release_resident();
    // Only the words that share a page with other memory at either end of the table (1022 at most) may stay.
    let after = remembered(&pack);
    assert!(after < 1023, "{after} still remembered");
}

/// A pack's data of 2 MiB or more is mapped 1 MiB past a 2 MiB boundary, so that a read maps a few pages of the
/// page cache's large folios into the process, not whole ones (see `skewed.rs`); its small index is mapped as the
/// kernel places it, and reads the same.
#[test]
fn a_large_packs_data_starts_1_mib_past_a_2_mib_boundary() {
    // 3 MiB that does not compress (`noise` takes odd seeds: n and n | 1 are the same stream).
    let entries: Vec<(ObjectId, Stored)> = (0..768u64)
        .map(|n| {
            let data = noise(2 * n + 1, 4096);
            (object_id(Kind::Blob, &data), Stored::Whole(Kind::Blob, data))
        })
        .collect();
    let objects = Objects::new();
    let (path, offsets) = objects.add_pack("a", &entries);
    let pack = open(&path);
    pack.data_end().expect("mapped by a first read");
    let data = pack.data().expect("mapped").entry_slice(0..1).expect("the first byte");
    assert_eq!(data.as_ptr() as usize % (2 << 20), 1 << 20, "the pack data");
    assert!(pack.index.mapped().len() < 2 << 20, "a small index");
    let found = pack.index.lookup(&entries[700].0).map(|position| pack.index.offset_at(position));
    assert_eq!(found.and_then(Result::ok), Some(offsets[700]), "read through its plain map");
}

/// A pack's kind memo is made only once its walks have decoded a link for every 64 of its slots: a stream of a
/// few requests over many packs zeroed a table in each pack it touched for nothing.
#[test]
fn a_kind_memo_is_made_once_the_walks_pay_for_it() {
    let (_objects, pack, _) = five_thousand_blobs();
    assert_eq!(links_before_made(5000), 128, "8,192 slots");
    assert!(pack.kind_memo_to_fill().is_none() && pack.kind_memo().is_none(), "no walk yet");
    pack.walked_links.store(127, Ordering::Relaxed);
    assert!(pack.kind_memo_to_fill().is_none(), "one link short");
    pack.walked_links.store(128, Ordering::Relaxed);
    assert!(pack.kind_memo_to_fill().is_some() && pack.kind_memo().is_some(), "made, and kept");
}

/// A pack of 5,000 small whole blobs, opened, with their offsets (the `Objects` holds its directory).
fn five_thousand_blobs() -> (Objects, Pack, Vec<u64>) {
    let entries: Vec<(ObjectId, Stored)> = (0..5000u32)
        .map(|n| {
            let data = format!("blob {n}\n").into_bytes();
            (object_id(Kind::Blob, &data), Stored::Whole(Kind::Blob, data))
        })
        .collect();
    let objects = Objects::new();
    let (path, offsets) = objects.add_pack("many", &entries);
    let pack = open(&path);
    (objects, pack, offsets)
}
