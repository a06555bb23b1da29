use super::*;
use crate::store::testpack::{Objects, Stored, chain, chain_of, delta, object_id};
use crate::store::{Kind, ObjectId};

const SHA1: gix_hash::Kind = gix_hash::Kind::Sha1;

fn open(objects: &Objects) -> Store {
    Store::open(objects.path(), SHA1, StoreOptions::default())
}

/// The store's packs, newest first.
fn packs(store: &Store) -> Vec<Arc<Pack>> {
    store.snapshots().iter().flat_map(|set| set.all_packs(&store.opener).cloned().collect::<Vec<_>>()).collect()
}

fn read(store: &Store, id: &ObjectId, resolver: &mut Resolver) -> Vec<u8> {
    let object = store.read(id, resolver).expect("intact").expect("present");
    assert_eq!(object.kind, Kind::Blob);
    object.data.to_vec()
}

/// Versions of a file, each the one before plus a line.
fn versions(label: &str, count: usize) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = vec![format!("{label} 0\n").into_bytes()];
    for k in 1..count {
        out.push([&out[k - 1][..], format!("{label} {k}\n").as_bytes()].concat());
    }
    out
}

fn slices(versions: &[Vec<u8>]) -> Vec<&[u8]> {
    versions.iter().map(Vec::as_slice).collect()
}

#[test]
fn reads_ofs_and_ref_chains_in_any_order() {
    let objects = Objects::new();
    let (ofs, refs) = (versions("ofs", 6), versions("ref", 6));
    let ofs_entries = chain(&slices(&ofs), true);
    let ref_entries = chain(&slices(&refs), false);
    objects.add_pack("ofs", &ofs_entries);
    objects.add_pack("ref", &ref_entries);
    let store = open(&objects);
    let mut resolver = Resolver::new(1 << 20);
    for k in [5, 0, 3, 4, 1, 2] {
        assert_eq!(read(&store, &ofs_entries[k].0, &mut resolver), ofs[k]);
        assert_eq!(read(&store, &ref_entries[k].0, &mut resolver), refs[k]);
    }
}

#[test]
fn a_cold_read_keeps_the_chain_root_and_not_the_intermediates() {
    let objects = Objects::new();
    let contents = versions("v", 4);
    let entries = chain(&slices(&contents), true);
    let (_, offsets) = objects.add_pack("a", &entries);
    let store = open(&objects);
    let pack = &packs(&store)[0];
    let resolver = &mut Resolver::new(1 << 20);
    assert_eq!(read(&store, &entries[3].0, resolver), contents[3]);
    let cache = resolver.cache().clone();
    assert!(cache.get(pack.key(offsets[0])).is_some(), "the root");
    for offset in &offsets[1..] {
        assert!(cache.get(pack.key(*offset)).is_none(), "not the intermediates nor the object ({offset})");
    }
    // A cold walk keeps no inflated delta: walked again, from the cached root, its deltas are inflated again
    // and now kept (the chain is one that is walked again), so a third walk inflates nothing.
    let inflated = cache.inflated_bytes();
    assert_eq!(read(&store, &entries[3].0, resolver), contents[3]);
    let delta_bytes: usize = entries[1..]
        .iter()
        .map(|(_, stored)| match stored {
            Stored::Ofs(_, delta) => delta.len(),
            _ => panic!("a chain of OFS deltas"),
        })
        .sum();
    assert_eq!(cache.inflated_bytes() - inflated, delta_bytes as u64, "the deltas again, not the root");
    let inflated = cache.inflated_bytes();
    assert_eq!(read(&store, &entries[3].0, resolver), contents[3]);
    assert_eq!(cache.inflated_bytes(), inflated, "a walk from a cached root kept its deltas");
}

/// A chain of trees keeps every 4th result of a walk (counted from the root) besides the root, so that the
/// next read of a neighbouring version applies at most 4 deltas; a chain of blobs keeps only its root.
#[test]
fn a_cold_read_of_a_tree_keeps_every_fourth_link_of_its_chain() {
    let contents = versions("v", 11);
    for (kind, expected) in [(Kind::Tree, &[0, 4, 8][..]), (Kind::Blob, &[0][..])] {
        let objects = Objects::new();
        let entries = chain_of(kind, &slices(&contents), true);
        let (_, offsets) = objects.add_pack("a", &entries);
        let store = open(&objects);
        let pack = &packs(&store)[0];
        let resolver = &mut Resolver::new(1 << 20);
        let cache = resolver.cache().clone();
        let object = store.read(&entries[10].0, resolver).expect("intact").expect("present");
        assert_eq!((object.kind, object.data.to_vec()), (kind, contents[10].clone()));
        let kept: Vec<usize> = (0..=10).filter(|&k| cache.get(pack.key(offsets[k])).is_some()).collect();
        assert_eq!(kept, expected, "{kind}");
        if kind == Kind::Tree {
            // The next read of a version above the last kept link applies only the deltas above it.
            let inflated = cache.inflated_bytes();
            let object = store.read(&entries[9].0, resolver).expect("intact").expect("present");
            assert_eq!(object.data.to_vec(), contents[9]);
            let Stored::Ofs(_, delta) = &entries[9].1 else { panic!("a delta") };
            assert_eq!(cache.inflated_bytes() - inflated, delta.len() as u64, "one delta, on the kept 8th");
        }
    }
}

/// Pack order: a whole object, then the delta built on it. The whole object asked for by itself is not kept
/// in the cache (nothing was built on it yet); before, the next request inflated it again. Its resolver now
/// holds on to it, unless it is larger than the cache.
#[test]
fn a_whole_object_read_by_itself_is_held_for_the_delta_that_follows() {
    let objects = Objects::new();
    let contents = versions("v", 2);
    let entries = chain(&slices(&contents), true);
    objects.add_pack("a", &entries);
    let store = open(&objects);
    let Stored::Ofs(_, delta) = &entries[1].1 else { panic!("the second entry is a delta") };
    for (capacity, base_inflated) in [(1 << 20, 1), (contents[0].len() - 1, 2)] {
        let resolver = &mut Resolver::new(capacity);
        let cache = resolver.cache().clone();
        assert_eq!(read(&store, &entries[0].0, resolver), contents[0]);
        assert_eq!(read(&store, &entries[1].0, resolver), contents[1]);
        let inflated = (base_inflated * contents[0].len() + delta.len()) as u64;
        assert_eq!(cache.inflated_bytes(), inflated, "the base inflated {base_inflated} times");
    }
}

#[test]
fn known_bases_are_kept_until_their_last_delta_is_served_then_go_first() {
    let objects = Objects::new();
    let contents = versions("v", 4);
    let mut entries = chain(&slices(&contents), true);
    // A second delta on v1.
    let other = [&contents[1][..], b"another 2\n"].concat();
    let other_delta = delta(contents[1].len(), contents[1].len(), b"another 2\n");
    entries.push((object_id(Kind::Blob, &other), Stored::Ofs(1, other_delta)));
    let (_, offsets) = objects.add_pack("a", &entries);
    let store = open(&objects);
    let pack = &packs(&store)[0];
    pack.index_delta_bases();
    let resolver = &mut Resolver::new(1 << 20);
    let cache = resolver.cache().clone();
    let cached = |k: usize| cache.get(pack.key(offsets[k])).is_some();

    read(&store, &entries[0].0, resolver);
    assert!(cached(0), "a whole object its delta waits for");
    read(&store, &entries[1].0, resolver);
    assert_eq!(cache.first_to_go(), Some(pack.key(offsets[0])), "its only delta was served: let go first");
    assert!(cached(1), "served, and two deltas wait for it");
    assert_eq!(read(&store, &entries[4].0, resolver), other);
    assert!(cached(1), "one of its deltas was served, the other still waits");
    read(&store, &entries[3].0, resolver);
    assert!(cached(1), "walking through v2 does not serve it: v1 still waits for that");
    assert!(!cached(2) && !cached(3) && !cached(4), "an intermediate, and objects nothing is built on");
    read(&store, &entries[2].0, resolver);
    assert_eq!(cache.first_to_go(), Some(pack.key(offsets[1])), "now its last delta was served");
}

#[test]
fn ref_bases_in_another_pack_or_loose() {
    let objects = Objects::new();
    let contents = versions("v", 3);
    let ids: Vec<ObjectId> = contents.iter().map(|c| object_id(Kind::Blob, c)).collect();
    // v0 is loose, v1 a delta on it in one pack, v2 a delta on v1 in another pack.
    assert_eq!(objects.add_loose(Kind::Blob, &contents[0]), ids[0]);
    let on = |k: usize| delta(contents[k - 1].len(), contents[k - 1].len(), &contents[k][contents[k - 1].len()..]);
    objects.add_pack("one", &[(ids[1], Stored::Ref(ids[0], on(1)))]);
    objects.add_pack("two", &[(ids[2], Stored::Ref(ids[1], on(2)))]);
    let store = open(&objects);
    let mut resolver = Resolver::new(1 << 20);
    for k in [2, 1, 0] {
        assert_eq!(read(&store, &ids[k], &mut resolver), contents[k]);
    }
}

/// A delta on a loose base, that another delta is built on: serving it does not spend its own count (it
/// was counted as built from itself), so it stays in the cache for the delta that waits for it.
#[test]
fn a_delta_on_a_loose_base_is_kept_for_the_delta_that_waits_for_it() {
    let objects = Objects::new();
    let contents = versions("v", 3);
    let ids: Vec<ObjectId> = contents.iter().map(|c| object_id(Kind::Blob, c)).collect();
    objects.add_loose(Kind::Blob, &contents[0]);
    let on = |k: usize| delta(contents[k - 1].len(), contents[k - 1].len(), &contents[k][contents[k - 1].len()..]);
    let (_, offsets) = objects.add_pack("a", &[(ids[1], Stored::Ref(ids[0], on(1))), (ids[2], Stored::Ofs(0, on(2)))]);
    let store = open(&objects);
    let pack = &packs(&store)[0];
    pack.index_delta_bases();
    let resolver = &mut Resolver::new(1 << 20);
    assert_eq!(read(&store, &ids[1], resolver), contents[1]);
    assert!(resolver.cache().get(pack.key(offsets[0])).is_some(), "v2 waits for it");
    assert!(pack.is_delta_base(offsets[0]));
}

#[test]
fn cycles_and_missing_bases_are_damage_at_the_entry() {
    let objects = Objects::new();
    let (me, one, two) = (object_id(Kind::Blob, b"me"), object_id(Kind::Blob, b"one"), object_id(Kind::Blob, b"two"));
    let nowhere = object_id(Kind::Blob, b"nowhere");
    let orphan = object_id(Kind::Blob, b"orphan");
    let small = || delta(2, 2, b"");
    let (path, offsets) = objects.add_pack(
        "bad",
        &[
            (me, Stored::Ref(me, small())),
            (one, Stored::Ref(two, small())),
            (two, Stored::Ref(one, small())),
            (orphan, Stored::Ref(nowhere, small())),
        ],
    );
    let store = open(&objects);
    let mut resolver = Resolver::new(1 << 20);
    for (id, cycle) in [(me, &offsets[..1]), (one, &offsets[1..3]), (two, &offsets[1..3])] {
        // Reading the object, and only its type and size (`--batch-check`), which walks the chain for the type.
        let errors =
            [store.read(&id, &mut resolver).expect_err("a cycle"), store.info(&id, false).expect_err("a cycle")];
        for err in errors {
            assert!(matches!(err.damage, Damage::DeltaCycle), "{err}");
            let Location::Pack { path: at_path, offset } = &err.location else { panic!("{err}") };
            assert!(at_path == &path && cycle.contains(offset), "an entry of the cycle: {err}");
        }
    }
    let err = store.read(&orphan, &mut resolver).expect_err("no base");
    assert!(matches!(err.damage, Damage::BaseMissing(id) if id == nowhere), "{err}");
    assert_eq!(err.location, Location::Pack { path, offset: offsets[3] });
}

#[test]
fn a_run_of_reads_in_pack_order_is_noticed_once() {
    let key = |pack, offset| EntryKey { pack, offset };
    let mut order = PackOrder::default();
    let noticed: Vec<u64> = (1..=40).filter(|&offset| order.note(key(0, offset * 10))).collect();
    assert_eq!(noticed, [u64::from(PACK_ORDER_RUN)], "once, at the run's length");
    let mut order = PackOrder::default();
    for offset in 1..PACK_ORDER_RUN as u64 {
        assert!(!order.note(key(0, offset)));
    }
    assert!(!order.note(key(1, 100)), "another pack starts a new run");
    let mut order = PackOrder::default();
    for offset in (1..=u64::from(PACK_ORDER_RUN) * 2).rev() {
        assert!(!order.note(key(0, offset)), "backwards is not pack order");
    }
    let mut order = PackOrder::default();
    for _ in 0..PACK_ORDER_RUN * 2 {
        assert!(!order.note(key(0, 5)), "the same entry again is not pack order");
    }
}

/// The run lasts while reads go on in pack order, and ends at the first read that does not.
#[test]
fn a_pack_order_run_lasts_until_a_read_breaks_it() {
    let key = |pack, offset| EntryKey { pack, offset };
    let mut order = PackOrder::default();
    for offset in 1..=u64::from(PACK_ORDER_RUN) * 2 {
        order.note(key(0, offset));
        assert_eq!(order.in_run(), offset >= u64::from(PACK_ORDER_RUN), "after {offset} reads in pack order");
    }
    order.note(key(0, 1));
    assert!(!order.in_run(), "a read backwards ends the run");
}

/// A stream in pack order: its 16th read starts the base scan, long before the read count would.
#[test]
fn reads_in_pack_order_start_the_base_scan_at_once() {
    let objects = Objects::new();
    let contents: Vec<Vec<u8>> = (0..PACK_ORDER_RUN + 1).map(|k| format!("blob {k}\n").into_bytes()).collect();
    let mut entries = chain(&slices(&versions("v", 2)), true);
    entries.extend(contents.iter().map(|c| (object_id(Kind::Blob, c), Stored::Whole(Kind::Blob, c.clone()))));
    let (_, offsets) = objects.add_pack("a", &entries);
    let store = open(&objects);
    let resolver = &mut Resolver::new(1 << 20);
    for (id, _) in &entries[2..2 + PACK_ORDER_RUN as usize - 1] {
        read(&store, id, resolver);
    }
    let pack = &packs(&store)[0];
    assert!(!pack.scan_started_for_tests(), "not before the run is long enough");
    read(&store, &entries[2 + PACK_ORDER_RUN as usize - 1].0, resolver);
    for _ in 0..1000 {
        if pack.is_delta_base(offsets[0]) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("the scan did not run");
}

/// A pack of a chain of three versions, then many small whole blobs.
struct ChainThenFillers {
    /// The chain's contents: the first stored whole, each next a delta on the one before.
    contents: Vec<Vec<u8>>,
    entries: Vec<(ObjectId, Stored)>,
    offsets: Vec<u64>,
}

fn chain_then_fillers(objects: &Objects) -> ChainThenFillers {
    let contents = versions("v", 3);
    let mut entries = chain(&slices(&contents), true);
    let fillers: Vec<Vec<u8>> = (0..PACK_ORDER_RUN * 20).map(|k| format!("filler {k}\n").into_bytes()).collect();
    entries.extend(fillers.iter().map(|c| (object_id(Kind::Blob, c), Stored::Whole(Kind::Blob, c.clone()))));
    let (_, offsets) = objects.add_pack("a", &entries);
    ChainThenFillers { contents, entries, offsets }
}

/// Reads every 20th of [`chain_then_fillers`]'s whole blobs, a run in pack order: far apart against the pack's
/// mean entry, a sample rather than a scan of the whole pack.
fn read_a_sparse_run(store: &Store, entries: &[(ObjectId, Stored)], resolver: &mut Resolver) {
    for (id, _) in entries[3..].iter().step_by(20).take(PACK_ORDER_RUN as usize) {
        read(store, id, resolver);
    }
}

/// A sample read in pack order (a run of reads far apart): no scan of the bases, and each blob built by deltas is
/// kept, so that the next read on its chain starts from it rather than from the root.
#[test]
fn a_sparse_run_in_pack_order_keeps_served_blobs_without_the_base_scan() {
    let objects = Objects::new();
    let ChainThenFillers { contents, entries, offsets } = chain_then_fillers(&objects);
    let store = open(&objects);
    let pack = &packs(&store)[0];
    let resolver = &mut Resolver::new(1 << 20);
    assert_eq!(read(&store, &entries[1].0, resolver), contents[1]);
    read_a_sparse_run(&store, &entries, resolver);
    assert!(resolver.pack_order.ordered(), "a run in pack order");
    assert!(!pack.scan_started_for_tests(), "a sparse run does not start the scan");
    assert_eq!(read(&store, &entries[1].0, resolver), contents[1], "the run is broken: no longer in order");
    let cache = resolver.cache().clone();
    assert!(cache.get(pack.key(offsets[1])).is_some(), "the served blob, kept once the stream showed order");
    let inflated = cache.inflated_bytes();
    assert_eq!(read(&store, &entries[2].0, resolver), contents[2]);
    let Stored::Ofs(_, delta) = &entries[2].1 else { panic!("a delta") };
    assert_eq!(cache.inflated_bytes() - inflated, delta.len() as u64, "one delta, from the kept blob");
}

/// A sample read in order, its bases unknown: a whole blob asked for by itself is kept as a chain root (later
/// requests on its chain walk down to it; not kept, 715 of small-A's roots were inflated twice), and a blob built
/// by deltas is kept as spare, which goes before the roots (kept with them, served blobs pushed roots out).
#[test]
fn a_sample_in_order_keeps_whole_blobs_as_roots_and_served_blobs_as_spare() {
    let objects = Objects::new();
    let ChainThenFillers { contents, entries, offsets } = chain_then_fillers(&objects);
    let store = open(&objects);
    let pack = &packs(&store)[0];
    let resolver = &mut Resolver::new(1 << 20);
    read_a_sparse_run(&store, &entries, resolver);
    assert!(resolver.pack_order.ordered() && !pack.scan_started_for_tests(), "a sample in order, bases unknown");
    let cache = resolver.cache().clone();
    assert_eq!(read(&store, &entries[0].0, resolver), contents[0]);
    read(&store, &entries[4].0, resolver); // the resolver's last whole object is another now
    assert!(cache.get(pack.key(offsets[0])).is_some(), "the whole blob asked for is kept as a root");
    assert_eq!(read(&store, &entries[2].0, resolver), contents[2]);
    assert_eq!(cache.first_to_go(), Some(pack.key(offsets[2])), "the served blob is spare: it goes first");
}

/// `ls` reads a path's trees root first, and a pack written by `pack-objects` stores them in that order: a few
/// requests made 16 reads at increasing offsets, and the base scan then read every entry header of the pack beside
/// the walks (small-A, 10,000 `ls`). Only blobs make a run in pack order.
#[test]
fn trees_read_in_pack_order_do_not_start_the_base_scan() {
    let objects = Objects::new();
    // Fewer reads than start the scan by their count.
    let trees: Vec<Vec<u8>> = (0..PACK_ORDER_RUN + 8).map(|k| format!("tree {k}\n").into_bytes()).collect();
    let entries: Vec<(ObjectId, Stored)> =
        trees.iter().map(|t| (object_id(Kind::Tree, t), Stored::Whole(Kind::Tree, t.clone()))).collect();
    objects.add_pack("a", &entries);
    let store = open(&objects);
    let resolver = &mut Resolver::new(1 << 20);
    for ((id, _), tree) in entries.iter().zip(&trees) {
        let object = store.read(id, resolver).expect("intact").expect("present");
        assert_eq!((object.kind, &object.data[..]), (Kind::Tree, &tree[..]));
    }
    assert!(!packs(&store)[0].scan_started_for_tests(), "trees in pack order are not a stream in pack order");
}

#[test]
fn the_bytes_of_one_chain_are_capped() {
    let options = StoreOptions { max_object_size: 10, max_chain_bytes: 25, ..StoreOptions::default() };
    let mut budget = ChainBudget::new(&options);
    assert_eq!(budget.limit, 30, "never less than a delta and its base of the largest size need");
    assert!(budget.charge(11).is_ok(), "too large for one object: refused where it would be allocated");
    for _ in 0..3 {
        assert!(budget.charge(10).is_ok());
    }
    assert!(matches!(budget.charge(1), Err(Damage::ChainTooLarge { limit: 30 })));
}

/// Walks `next` from `start` until it leaves the entries (None) or `CycleCheck` stops it; the links taken.
fn walk(start: u64, next: impl Fn(u64) -> Option<u64>) -> Result<usize, usize> {
    let mut cycle = CycleCheck::new(EntryKey { pack: 0, offset: start });
    let (mut at, mut links) = (start, 0);
    while let Some(base) = next(at) {
        if cycle.comes_back(EntryKey { pack: 0, offset: base }) {
            return Err(links);
        }
        (at, links) = (base, links + 1);
    }
    Ok(links)
}

#[test]
fn valid_chains_of_any_depth_pass() {
    assert_eq!(walk(100_000, |at| at.checked_sub(1)), Ok(100_000));
    assert_eq!(walk(0, |_| None), Ok(0));
}

#[test]
fn cycles_are_found_soon_after_they_close() {
    assert_eq!(walk(7, Some), Err(0), "an entry based on itself");
    assert_eq!(walk(1, |at| Some(3 - at)), Err(2), "two entries based on each other");
    // A tail of 1,000 links into a cycle of 5,001: found once the walk has gone round, within three times
    // the links that lead into the cycle and go around it.
    let next = |at: u64| Some(if at == 0 { 5_000 } else { at - 1 });
    let links = walk(6_000, next).expect_err("a cycle");
    assert!((6_001..3 * 6_001).contains(&links), "{links}");
}

/// The results on the way up a chain go through one buffer kept by the resolver for the next walk, unless it
/// grew past `SCRATCH_KEPT`: a big blob's chain leaves nothing of its size behind.
#[test]
fn a_walk_reuses_one_result_buffer_and_lets_a_big_one_go() {
    for (head, kept) in [(vec![b'a'; 100], true), (vec![b'b'; SCRATCH_KEPT + 1], false)] {
        let contents: Vec<Vec<u8>> = (0..4).map(|k| [&head[..], &b"0123"[..k]].concat()).collect();
        // Each version a delta that inserts all of it (the test deltas copy at most 64 KiB).
        let entries: Vec<(ObjectId, Stored)> = (0..contents.len())
            .map(|k| {
                let stored = match k {
                    0 => Stored::Whole(Kind::Blob, contents[0].clone()),
                    _ => Stored::Ofs(k - 1, delta(contents[k - 1].len(), 0, &contents[k])),
                };
                (object_id(Kind::Blob, &contents[k]), stored)
            })
            .collect();
        let objects = Objects::new();
        objects.add_pack("a", &entries);
        let store = open(&objects);
        let resolver = &mut Resolver::new(1 << 30);
        assert_eq!(read(&store, &entries[3].0, resolver), contents[3]);
        let capacity = resolver.scratch.result.capacity();
        assert_eq!(capacity >= contents[2].len(), kept, "{capacity} after results of {} bytes", contents[2].len());
    }
}

/// The results of a tree's walk that nothing keeps are not built: the deltas between kept links are composed
/// and applied once, so the scratch result buffer is never used (a blob's walk builds each one in it). A
/// damaged delta inside a composed run is reported at its own entry.
#[test]
fn a_tree_walk_builds_only_the_links_it_keeps_and_the_object() {
    let contents = versions("v", 11);
    for kind in [Kind::Tree, Kind::Blob] {
        let objects = Objects::new();
        let entries = chain_of(kind, &slices(&contents), true);
        objects.add_pack("a", &entries);
        let store = open(&objects);
        for k in [10, 7, 2, 9, 0, 5] {
            let resolver = &mut Resolver::new(1 << 20);
            let object = store.read(&entries[k].0, resolver).expect("intact").expect("present");
            assert_eq!((object.kind, object.data.to_vec()), (kind, contents[k].clone()));
            let built = resolver.scratch.result.capacity() > 0;
            assert_eq!(built, kind == Kind::Blob && k >= 2, "{kind} {k}: an intermediate result built");
        }
    }
    let mut entries = chain_of(Kind::Tree, &slices(&contents), true);
    entries[6].1 = Stored::Ofs(5, delta(contents[5].len() + 1, 0, &contents[6]));
    let objects = Objects::new();
    let (path, offsets) = objects.add_pack("bad", &entries);
    let err = open(&objects).read(&entries[7].0, &mut Resolver::new(1 << 20)).expect_err("a damaged delta");
    assert!(matches!(err.damage, Damage::Delta(delta::DeltaError::BaseSizeMismatch { .. })), "{err}");
    assert_eq!(err.location, Location::Pack { path, offset: offsets[6] });
}

/// A sample of a pack read in pack order walks several links from a kept base, and the next delta read on the
/// same links passes them again: those walks keep their deltas as in any other order. Before, a pack-order run
/// kept no delta, and the third walk here inflated the shared link's delta a third time.
#[test]
fn a_sparse_pack_order_run_keeps_the_deltas_of_long_walks() {
    let objects = Objects::new();
    let mut entries: Vec<(ObjectId, Stored)> = (0..PACK_ORDER_RUN)
        .map(|k| format!("whole {k}\n").into_bytes())
        .map(|c| (object_id(Kind::Blob, &c), Stored::Whole(Kind::Blob, c)))
        .collect();
    let base = b"base\n".repeat(20);
    let shared = [&base[..], b"shared\n"].concat();
    let at = entries.len();
    entries.push((object_id(Kind::Blob, &base), Stored::Whole(Kind::Blob, base.clone())));
    entries.push((object_id(Kind::Blob, &shared), Stored::Ofs(at, delta(base.len(), base.len(), b"shared\n"))));
    let tips: Vec<Vec<u8>> = (0..3).map(|k| [&shared[..], format!("tip {k}\n").as_bytes()].concat()).collect();
    for tip in &tips {
        let stored = Stored::Ofs(at + 1, delta(shared.len(), shared.len(), &tip[shared.len()..]));
        entries.push((object_id(Kind::Blob, tip), stored));
    }
    objects.add_pack("a", &entries);
    let store = open(&objects);
    packs(&store)[0].index_delta_bases();
    let resolver = &mut Resolver::new(1 << 20);
    for (id, _) in &entries[..at] {
        read(&store, id, resolver);
    }
    assert!(resolver.pack_order.in_run());
    let cache = resolver.cache().clone();
    for (k, tip) in tips.iter().enumerate() {
        let inflated = cache.inflated_bytes();
        assert_eq!(read(&store, &entries[at + 2 + k].0, resolver), *tip);
        let Stored::Ofs(_, tip_delta) = &entries[at + 2 + k].1 else { unreachable!("a delta") };
        if k == 2 {
            assert_eq!(cache.inflated_bytes() - inflated, tip_delta.len() as u64, "only its own delta");
        }
    }
    assert!(resolver.pack_order.in_run(), "every read was in pack order");
}
