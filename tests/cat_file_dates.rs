//! `<ref>@{<date>}` and the other reflog lookups against git: a table of named cases and a seeded generator of
//! neighbours (date phrases from approxidate's vocabulary: numbers, units, month and day names, am/pm, the
//! special words, separators, ISO 8601 and RFC 2822 dates, offsets; after a branch, HEAD, `@`, nothing, a branch
//! with a damaged, empty, gapped or missing log; `~<n>`, `^{tree}`, `:<path>` after them). Repository:
//! fixtures/make-dates-fixture.sh, read with a pinned clock (`GIT_TEST_DATE_NOW`) and time zone (`TZ`).
//!
//! Each case must give the same stdout, stderr and exit status as git 2.55 when `CAT_BLOBD_TEST_GIT` names one
//! (else the test says it skipped that), and as the installed git, except where git 2.55's approxidate reads a
//! phrase differently from older gits: cat-blobd answers as 2.55, and against an older git a difference is
//! allowed only for a phrase with one of the words 2.55 changed ([`CHANGED_IN_2_55`]: `today`, which 2.55 reads
//! as midnight and older gits not at all; `yesterday`, `noon`, `midnight` and `tea`, which 2.55 applies after
//! the day is known, so beside a day of the month, or where a number makes the day negative, they give other
//! times). git's reflog code (`read_ref_at`, `get_oid_basic`) did not change between them.
//!
//! Not answered as git does yet, and so not generated: when a `^{…}` after the mark fails (the text is no date,
//! or the object does not peel), git's `get_oid_1` tries the whole name once more in `get_oid_basic`, which
//! reads `<text>}^{…` as the reflog's date: `main@{1}^{blob}` is then main's commit of that "date", and an
//! ambiguous name's warning is printed twice. cat-blobd answers these `missing` (`twice` is in the table only).
//!
//! A failing generated case prints its seed. Replay one with
//! `CATBLOBD_DATES_SEED=<seed> cargo test --test tests cat_file_dates`; run more with `CATBLOBD_DATES_CASES=<n>`.
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::util::cat_file::{Stderr, assert_same, run};
use crate::util::{CAT_BLOBD, Output, Rng, build_with_script, escape, git_255, test_git_version};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/make-dates-fixture.sh");

/// Generated cases per run: seeds `0..CASES`.
const CASES: u64 = 300;

/// The clock and time zone every case runs with (see the fixture script).
const ENV: &[(&str, &str)] = &[("GIT_TEST_DATE_NOW", "1767351600"), ("TZ", "CET-1CEST,M3.5.0,M10.5.0/3")];

/// The words whose reading git 2.55 changed (see the module documentation).
const CHANGED_IN_2_55: &[&str] = &["today", "yesterday", "noon", "midnight", "tea"];

fn repo() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| build_with_script(SCRIPT, "dates-fixture").join("dates"))
}

/// One way of asking: arguments and stdin.
struct Ask {
    args: Vec<String>,
    stdin: Vec<u8>,
}

fn single(option: &str, name: &str) -> Ask {
    Ask { args: vec![option.to_owned(), name.to_owned()], stdin: Vec::new() }
}

fn batch(lines: &str) -> Ask {
    Ask { args: vec!["--batch-check".to_owned()], stdin: lines.as_bytes().to_vec() }
}

/// Did git 2.55 change how `name`'s date reads?
fn changed_in_2_55(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    CHANGED_IN_2_55.iter().any(|word| lower.contains(word))
}

/// What one comparison did: whether git 2.55 was asked, whether the installed (older) git's answer was set aside.
#[derive(Default)]
struct Compared {
    with_255: bool,
    set_aside: usize,
}

/// Runs `ask` through cat-blobd, git 2.55 (if there is one) and the installed git; see the module documentation.
#[track_caller]
fn same(what: &str, name: &str, ask: &Ask, compared: &mut Compared) {
    let args: Vec<&str> = ask.args.iter().map(String::as_str).collect();
    let what = format!("{what}: cat-file {args:?} on {}", escape(&ask.stdin));
    let ours = run(CAT_BLOBD, repo(), &args, &ask.stdin, ENV);
    if let Some(git_255) = git_255() {
        // With CAT_BLOBD_TEST_GIT, `git` on the tests' PATH is that git too: one comparison is enough.
        let theirs = run(&git_255.to_string_lossy(), repo(), &args, &ask.stdin, ENV);
        assert_same(&format!("{what} (git 2.55)"), &theirs, &ours, Stderr::Exact);
        compared.with_255 = true;
        return;
    }
    let git = run("git", repo(), &args, &ask.stdin, ENV);
    if test_git_version() < (2, 55) && changed_in_2_55(name) && !alike(&git, &ours) {
        compared.set_aside += 1;
        return;
    }
    assert_same(&what, &git, &ours, Stderr::Exact);
}

fn alike(a: &Output, b: &Output) -> bool {
    a.status.code() == b.status.code() && a.stdout == b.stdout && a.stderr == b.stderr
}

fn report(compared: &Compared) {
    if !compared.with_255 {
        crate::util::skip::record("the comparison with git 2.55 (set CAT_BLOBD_TEST_GIT to one)");
    }
    if compared.set_aside > 0 {
        eprintln!("{} answers of the installed git set aside: phrases git 2.55 reads differently", compared.set_aside);
    }
}

#[test]
fn reflog_lookups_by_date_and_count_answer_as_git_does() {
    let mut compared = Compared::default();
    let names = [
        "@{yesterday}",
        "main@{yesterday}",
        "HEAD@{2.weeks.ago}",
        "@{2026-01-01}",
        "main@{noon yesterday}",
        "main@{1 month 2 days ago}",
        "main@{last friday}",
        "main@{2024-06-01}",
        "main@{2027-01-01}",
        "main@{not a date}",
        "main@{0}",
        "HEAD@{0}",
        "main@{13}",
        "main@{14}",
        "HEAD@{99}",
        "@{1}",
        "@@{1}",
        "@@{3.months.ago}",
        "@{-1}",
        "@{-2}",
        "@@{-1}",
        "@@{-2 weeks}",
        "main@{-1 day}",
        "@{}",
        "main@{}",
        "main@{1750000000}",
        "main@{99999999}",
        "main@{never}",
        "main@{today}",
        "main@{now}",
        "main@{Sat, 21 Jun 2025 18:00:00 +0200}",
        "main@{2025-07-04 10:00:00 -0700}",
        "main@{@1751648400 -0700}",
        "main@{2025-08-08T08:08:08}",
        "main@{6 months ago}~1",
        "main@{6 months ago}^{tree}",
        "main@{6 months ago}:file",
        "main@{6 months ago}..main",
        "topic@{1 week ago}",
        "refs/heads/main@{3.days.ago}",
        "gap@{2025-04-01}",
        "gap@{2025-06-01}",
        "gap@{2025-08-01}",
        "gap@{2}",
        "gap@{3}",
        "damaged@{0}",
        "damaged@{1}",
        "damaged@{2}",
        "damaged@{3}",
        "damaged@{4}",
        "damaged@{5}",
        "damaged@{2025-03-10}",
        "damaged@{2024-01-01}",
        "damaged@{yesterday}",
        "empty@{0}",
        "empty@{1}",
        "empty@{yesterday}",
        "huge@{0}",
        "huge@{yesterday}",
        "nolog@{0}",
        "nolog@{yesterday}",
        "nosuch@{yesterday}",
        "twice@{0}",
        "twice@{1}",
        "twice@{2025-01-01}",
        "heads/twice@{1}",
    ];
    for name in names {
        for ask in [single("-t", name), single("-p", name), batch(&format!("{name}\nHEAD\n"))] {
            same("case", name, &ask, &mut compared);
        }
    }
    report(&compared);
}

const BASES: &[&str] =
    &["", "", "main", "main", "HEAD", "@", "topic", "gap", "damaged", "empty", "nolog", "refs/heads/main", "nosuch"];
const WORDS: &[&str] = &[
    "yesterday",
    "today",
    "now",
    "noon",
    "midnight",
    "tea",
    "never",
    "PM",
    "AM",
    "pm",
    "am",
    "last",
    "ago",
    "one",
    "two",
    "three",
    "ten",
    "second",
    "seconds",
    "minute",
    "minutes",
    "hour",
    "hours",
    "day",
    "days",
    "week",
    "weeks",
    "month",
    "months",
    "year",
    "years",
    "Jan",
    "January",
    "feb",
    "March",
    "Apr",
    "may",
    "jun",
    "July",
    "aug",
    "Sept",
    "Oct",
    "nov",
    "December",
    "mon",
    "tuesday",
    "Wed",
    "thu",
    "friday",
    "sat",
    "Sunday",
    "UTC",
    "GMT",
    "PST",
    "CEST",
    "Z",
    "T",
    "the",
    "x",
];
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "5",
    "7",
    "9",
    "10",
    "12",
    "13",
    "15",
    "24",
    "28",
    "29",
    "30",
    "31",
    "32",
    "59",
    "60",
    "70",
    "99",
    "100",
    "1400",
    "1969",
    "1970",
    "2024",
    "2025",
    "2026",
    "2100",
    "20250621",
    "123456",
    "1750000000",
];
const SEPARATORS: &[&str] = &[" ", " ", ".", ".", ",", ", ", "-", "/", "_", ""];
const TAILS: &[&str] = &["", "", "", "", "~1", "^{tree}", ":file", "^0"];

/// One part of a phrase.
fn part(rng: &mut Rng) -> String {
    fn pick(rng: &mut Rng, list: &[&str]) -> String {
        list[rng.below(list.len())].to_owned()
    }
    match rng.below(20) {
        0..=7 => pick(rng, WORDS),
        8..=13 => pick(rng, NUMBERS),
        14 => format!("{}{}", pick(rng, &["+", "-"]), pick(rng, &["0100", "0200", "0530", "01:00", "07", "1", "2400"])),
        15 | 16 => format!("2025-{:02}-{:02}", rng.below(14), rng.below(33)),
        17 => format!("{:02}:{:02}:{:02}", rng.below(26), rng.below(61), rng.below(61)),
        18 => format!(
            "{}, {} {} 2025 12:00:00 +0100",
            pick(rng, &["Mon", "Fri", "Sun"]),
            1 + rng.below(31),
            pick(rng, &["Jan", "Jun", "Oct"])
        ),
        _ => format!("@{} {}", 1_740_000_000 + rng.below(30_000_000), pick(rng, &["+0000", "-0700", "+0100"])),
    }
}

/// The case of `seed`: the name and the way it is asked.
fn generated(seed: u64) -> (String, Ask) {
    let mut rng = Rng::new(seed);
    let mut phrase = part(&mut rng);
    for _ in 0..rng.below(4) {
        phrase.push_str(SEPARATORS[rng.below(SEPARATORS.len())]);
        phrase.push_str(&part(&mut rng));
    }
    let name = format!("{}@{{{phrase}}}{}", BASES[rng.below(BASES.len())], TAILS[rng.below(TAILS.len())]);
    let ask = match rng.below(3) {
        0 => single("-t", &name),
        1 => single("-p", &name),
        _ => batch(&format!("{name}\nHEAD\n")),
    };
    (name, ask)
}

#[test]
fn generated_date_phrases_answer_as_git_does() {
    let seeds: Vec<u64> = match std::env::var("CATBLOBD_DATES_SEED") {
        Ok(seed) => vec![seed.parse().expect("CATBLOBD_DATES_SEED: a number")],
        Err(_) => (0..std::env::var("CATBLOBD_DATES_CASES").map_or(CASES, |n| n.parse().expect("a number"))).collect(),
    };
    let mut compared = Compared::default();
    for seed in seeds {
        let (name, ask) = generated(seed);
        same(&format!("seed {seed}"), &name, &ask, &mut compared);
    }
    report(&compared);
}
