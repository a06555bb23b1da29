//! Marks files with thousands of marks against git, byte for byte (responses, messages, exit status and the
//! exported file): dense runs of marks, scattered ones, marks defined twice, objects in two packs, under a
//! multi-pack-index and loose, and the first bad line of a file, whether corrupt or naming a missing object.
//! cat-blobd reads such a file whole and looks its ids up sorted (issue 23); git looks each up as it reads it.

use std::path::PathBuf;

use crate::util::case::{Case, Checks, Source, git_init_bare, sha1_blob_id};
use crate::util::{Rng, TempDir, git_in};

/// Blobs in the first pack, in the second, and loose.
const FIRST_PACK: usize = 2000;
const SECOND_PACK: usize = 1000;
const LOOSE: usize = 5;

/// A repository of `FIRST_PACK + SECOND_PACK + LOOSE` small blobs, written by git.
struct MarksRepo {
    _dir: TempDir,
    git_dir: PathBuf,
    /// Every blob's id: the first pack's, the second's, then the loose ones.
    ids: Vec<String>,
}

impl MarksRepo {
    fn new(midx: bool) -> MarksRepo {
        let dir = TempDir::new("marks-repo");
        let git_dir = dir.path().join("repo.git");
        git_init_bare(&git_dir, false);
        let payload = |n: usize| format!("blob number {n}\n");
        for range in [0..FIRST_PACK, FIRST_PACK..FIRST_PACK + SECOND_PACK] {
            let stream: String = range.map(|n| format!("blob\ndata {}\n{}\n", payload(n).len(), payload(n))).collect();
            git_in(&git_dir, &["fast-import", "--quiet"], stream.as_bytes());
        }
        let all = FIRST_PACK + SECOND_PACK + LOOSE;
        for n in FIRST_PACK + SECOND_PACK..all {
            git_in(&git_dir, &["hash-object", "-w", "--stdin"], payload(n).as_bytes());
        }
        if midx {
            git_in(&git_dir, &["multi-pack-index", "write"], b"");
        }
        let ids = (0..all).map(|n| sha1_blob_id(payload(n).as_bytes())).collect();
        MarksRepo { _dir: dir, git_dir, ids }
    }

    fn source(&self) -> Source {
        Source::Extra { objects: vec![self.git_dir.join("objects")], sha256: false }
    }

    /// A case that imports `marks` from `in.marks` and exports to `out.marks`, compared with git's.
    fn case(&self, what: &str, marks: &str, stream: &str) -> Case {
        Case::new(what, self.source())
            .raw_stream(stream.as_bytes().to_vec())
            .raw_file("in.marks", marks.as_bytes().to_vec())
            .args(&["--import-marks=in.marks", "--export-marks=out.marks"])
            .compare("out.marks")
    }
}

/// Marks 1 to 3000 in order (every packed blob), a loose blob at mark 3001, marks far past the others (up to the
/// largest a mark can be), and a few marks defined twice, the later line winning.
fn mixed_marks(ids: &[String]) -> Vec<(u64, String)> {
    let packed = FIRST_PACK + SECOND_PACK;
    let mut marks: Vec<(u64, String)> = (0..packed).map(|n| (n as u64 + 1, ids[n].clone())).collect();
    marks.push((packed as u64 + 1, ids[packed].clone()));
    for (n, mark) in [1_000_000u64, 123_456_789_012, u64::MAX, 5_000].into_iter().enumerate() {
        marks.push((mark, ids[packed + 1 + n % LOOSE].clone()));
    }
    marks.extend([(7, ids[2999].clone()), (2500, ids[1].clone()), (1_000_000, ids[0].clone())]);
    marks
}

fn marks_file(marks: &[(u64, String)]) -> String {
    marks.iter().map(|(mark, id)| format!(":{mark} {id}\n")).collect()
}

/// Reads through marks from each part of the table, defines a few more, and exports them all.
const USE_MARKS: &str = "get-mark :1\nget-mark :7\ncat-blob :2500\nget-mark :3000\ncat-blob :3001\n\
    get-mark :1000000\nget-mark :18446744073709551615\ncat-blob :5000\n\
    blob\nmark :3002\ndata 4\nnew\nblob\nmark :7\ndata 6\nagain\nget-mark :7\ncat-blob :3002\n";

#[test]
fn marks_files_dense_scattered_and_redefined_import_and_export_as_gits() {
    let mut checks = Checks::default();
    for midx in [false, true] {
        let repo = MarksRepo::new(midx);
        let marks = mixed_marks(&repo.ids);
        let with = if midx { "through a multi-pack-index" } else { "in two packs" };
        repo.case(&format!("mixed marks {with}"), &marks_file(&marks), USE_MARKS).check(&mut checks, 0, "");
        // The same lines the other way round: no run of 1, 2, 3, … and the earlier definition of a mark wins.
        let reversed: Vec<_> = marks.iter().rev().cloned().collect();
        repo.case(&format!("mixed marks backwards {with}"), &marks_file(&reversed), USE_MARKS).check(
            &mut checks,
            0,
            "",
        );
        let mut shuffled = marks.clone();
        Rng::new(23).shuffle(&mut shuffled);
        repo.case(&format!("mixed marks shuffled {with}"), &marks_file(&shuffled), USE_MARKS).check(&mut checks, 0, "");
    }
    checks.finish();
}

#[test]
fn marks_files_through_import_marks_if_exists_and_one_file_both_ways() {
    let repo = MarksRepo::new(false);
    let file = marks_file(&mixed_marks(&repo.ids));
    let mut checks = Checks::default();
    let flags = [("present", "in.marks", 0, ""), ("missing", "nosuch.marks", 128, "fatal: mark :3000 not declared")];
    for (what, flag, code, message) in flags {
        Case::new(&format!("--import-marks-if-exists, {what}"), repo.source())
            .raw_stream(b"blob\nmark :9\ndata 0\n\nget-mark :9\nget-mark :3000\n".to_vec())
            .raw_file("in.marks", file.clone().into_bytes())
            .args(&[&format!("--import-marks-if-exists={flag}"), "--export-marks=out.marks"])
            .compare("out.marks")
            .check(&mut checks, code, message);
    }
    Case::new("--import-marks and --export-marks of one file", repo.source())
        .raw_stream(USE_MARKS.as_bytes().to_vec())
        .raw_file("io.marks", file.into_bytes())
        .args(&["--import-marks=io.marks", "--export-marks=io.marks"])
        .compare("io.marks")
        .check(&mut checks, 0, "");
    checks.finish();
}

/// git dies on the first line, in file order, that is corrupt or names an object that does not exist: the
/// marks file it was to export is not written.
#[test]
fn marks_files_fail_on_their_first_bad_line_corrupt_or_missing() {
    let repo = MarksRepo::new(false);
    let missing = "0123456789abcdef0123456789abcdef01234567";
    let other_missing = "fedcba9876543210fedcba9876543210fedcba98";
    let marks = mixed_marks(&repo.ids);
    let dense = marks_file(&marks[..3000]);
    let (head, tail) = (marks_file(&marks[..1500]), marks_file(&marks[1500..3000]));
    let mut checks = Checks::default();
    let not_found = format!("fatal: object not found: {missing}");
    let corrupt = "fatal: corrupt mark line: :12 not an id";
    let cases = [
        ("a missing object", format!("{head}:4000 {missing}\n{tail}"), not_found.as_str()),
        ("a missing object, then a corrupt line", format!("{head}:4000 {missing}\n:12 not an id\n{tail}"), &not_found),
        ("a corrupt line, then a missing object", format!("{head}:12 not an id\n:4000 {missing}\n{tail}"), corrupt),
        ("two missing objects", format!(":1 {missing}\n{dense}:2 {other_missing}\n"), &not_found),
        (
            "a missing object first defined, then redefined",
            format!("{dense}:3 {missing}\n:3 {}\n", repo.ids[0]),
            &not_found,
        ),
        ("a missing object last", format!("{dense}:99999999 {missing}\n"), &not_found),
    ];
    for (what, file, message) in cases {
        repo.case(what, &file, "get-mark :1\n").check(&mut checks, 128, message);
    }
    checks.finish();
}

/// One line's neighbours of a valid `:<mark> <id>\n`: what git's `read_mark_file` parses by hand (`strtoumax`,
/// one SP, a hex id of either length, LF) with a byte or a piece changed. `id` is an id that exists.
fn odd_mark_line(rng: &mut Rng, mark: u64, id: &str) -> Vec<u8> {
    let upper = id.to_uppercase();
    let options: Vec<Vec<u8>> = vec![
        format!(":{mark} {id}\r\n").into_bytes(),
        format!(":0{mark} {id}\n").into_bytes(),
        format!(":+{mark} {id}\n").into_bytes(),
        format!(":-{mark} {id}\n").into_bytes(),
        format!(": {mark} {id}\n").into_bytes(),
        format!(":{mark}  {id}\n").into_bytes(),
        format!(":{mark}\t{id}\n").into_bytes(),
        format!(":{mark} {id} \n").into_bytes(),
        format!(":{mark} {upper}\n").into_bytes(),
        format!(":{mark} {}\n", &id[..39]).into_bytes(),
        format!(":{mark} {id}0\n").into_bytes(),
        format!(":{mark} {id}{}\n", &id[..24]).into_bytes(),
        format!(":{mark}{id}\n").into_bytes(),
        format!("{mark} {id}\n").into_bytes(),
        format!("::{mark} {id}\n").into_bytes(),
        format!(":0 {id}\n").into_bytes(),
        format!(":18446744073709551616 {id}\n").into_bytes(),
        format!(":18446744073709551615 {id}\n").into_bytes(),
        format!(":0x{mark:x} {id}\n").into_bytes(),
        b"\n".to_vec(),
        [format!(":{mark} ").as_bytes(), &id.as_bytes()[..20], b"\0", &id.as_bytes()[21..], b"\n"].concat(),
        [format!(":{mark} {id}").as_bytes(), &vec![b' '; 500], b"\n"].concat(),
        format!(":{mark} {id}").into_bytes(),
    ];
    options[rng.below(options.len())].clone()
}

/// A seeded generator of marks files (replayable: `CAT_BLOBD_MARKS_SEED=<n>` runs that seed alone): valid lines
/// with random marks around one or two odd neighbours of a valid line ([`odd_mark_line`]), imported and exported
/// by git and by cat-blobd, compared byte for byte (responses, status, stderr, the exported file).
#[test]
fn generated_marks_files_read_as_gits() {
    let repo = MarksRepo::new(false);
    let seeds = match std::env::var("CAT_BLOBD_MARKS_SEED").ok().and_then(|s| s.parse::<u64>().ok()) {
        Some(seed) => seed..seed + 1,
        None => 0..40,
    };
    for seed in seeds {
        let mut rng = Rng::new(seed);
        let (mut file, mut valid) = (Vec::new(), Vec::new());
        let lines = 3 + rng.below(20);
        let odd: Vec<usize> = (0..1 + rng.below(2)).map(|_| rng.below(lines)).collect();
        for line in 0..lines {
            let mark = [1 + line as u64, 1 + rng.below(5000) as u64, rng.next_u64()][rng.below(3)].max(1);
            let id = &repo.ids[rng.below(repo.ids.len())];
            if odd.contains(&line) {
                file.extend_from_slice(&odd_mark_line(&mut rng, mark, id));
            } else {
                file.extend_from_slice(format!(":{mark} {id}\n").as_bytes());
                valid.push(mark);
            }
        }
        // Reads of marks the valid lines define, and of one no line defines.
        let stream: String = valid.iter().take(3).map(|mark| format!("get-mark :{mark}\ncat-blob :{mark}\n")).collect();
        let stream = stream + "get-mark :99999\n";
        Case::new(&format!("generated marks file, seed {seed} (CAT_BLOBD_MARKS_SEED={seed})"), repo.source())
            .raw_stream(stream.as_bytes().to_vec())
            .raw_file("in.marks", file)
            .args(&["--import-marks=in.marks", "--export-marks=out.marks"])
            .compare("out.marks")
            .differential();
    }
}
