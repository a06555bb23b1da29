//! `<branch>@{upstream}` and `<branch>@{push}` against git: a table of the cases and each of git's `fatal:`
//! messages, and a seeded generator of neighbours (every spelling of the marks, after a branch, a
//! remote-tracking ref, HEAD, a detached HEAD, a tag, a missing branch; odd separators; `^`, `~<n>`,
//! `^{<type>}`, `:<path>` after them; CR and NUL in batch input; push.default and the other settings varied
//! through `GIT_CONFIG_COUNT`). Repositories: fixtures/make-upstream-fixtures.sh.
//!
//! Each case runs through the installed git and cat-blobd and must give the same stdout, stderr and exit status;
//! also through git 2.55 when `CAT_BLOBD_TEST_GIT` names one (else the test says it skipped that). git 2.47 and
//! 2.55 answer these names alike (remote.c's messages did not change between them).
//!
//! A failing generated case prints its seed. Replay one with
//! `CATBLOBD_UPSTREAM_SEED=<seed> cargo test --test tests cat_file_upstream`; run more seeds with
//! `CATBLOBD_UPSTREAM_CASES=<n>`.
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::util::cat_file::{Stderr, assert_same, run};
use crate::util::{CAT_BLOBD, Rng, build_with_script, escape, git_255};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/make-upstream-fixtures.sh");

/// Generated cases per run: seeds `0..CASES`.
const CASES: u64 = 160;

fn root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| build_with_script(SCRIPT, "upstream-fixtures"))
}

/// One way of asking for a name: its arguments and stdin.
struct Ask {
    args: Vec<String>,
    stdin: Vec<u8>,
}

/// `GIT_CONFIG_COUNT` and its keys and values for `settings`.
fn config_env(settings: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut env = vec![("GIT_CONFIG_COUNT".to_owned(), settings.len().to_string())];
    for (at, (key, value)) in settings.iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{at}"), (*key).to_owned()));
        env.push((format!("GIT_CONFIG_VALUE_{at}"), (*value).to_owned()));
    }
    env
}

/// Runs `ask` in `repo` through git (and git 2.55 if there is one) and cat-blobd; they must answer alike, or
/// (`refused`: a form cat-blobd refuses, which the shim leaves to git) cat-blobd must say it does not support it.
/// Returns whether the 2.55 comparison ran.
#[track_caller]
fn same(what: &str, repo: &str, ask: &Ask, settings: &[(&str, &str)], refused: bool) -> bool {
    let dir = root().join(repo);
    let env = config_env(settings);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let args: Vec<&str> = ask.args.iter().map(String::as_str).collect();
    let what = format!("{what}: cat-file {args:?} in {repo} on {} with {settings:?}", escape(&ask.stdin));
    let ours = run(CAT_BLOBD, &dir, &args, &ask.stdin, &env);
    if refused && escape(&ours.stderr).contains("cat-blobd cat-file does not support") {
        assert_eq!(ours.status.code(), Some(128), "{what}: {}", ours.describe());
        return false;
    }
    let git = run("git", &dir, &args, &ask.stdin, &env);
    assert_same(&what, &git, &ours, Stderr::Exact);
    let Some(git_255) = git_255() else { return false };
    let theirs = run(&git_255.to_string_lossy(), &dir, &args, &ask.stdin, &env);
    assert_same(&format!("{what} (git 2.55)"), &theirs, &ours, Stderr::Exact);
    true
}

fn single(option: &str, name: &str) -> Ask {
    Ask { args: vec![option.to_owned(), name.to_owned()], stdin: Vec::new() }
}

fn batch(lines: &[u8]) -> Ask {
    Ask { args: vec!["--batch-check".to_owned()], stdin: lines.to_vec() }
}

/// Settings given through `GIT_CONFIG_COUNT`: `(key, value)`.
type Settings = &'static [(&'static str, &'static str)];

#[test]
fn upstream_and_push_answer_and_fail_as_git_does() {
    let mut compared_255 = false;
    let cases: &[(&str, &str, Settings)] = &[
        // Found: the current branch's, a branch's, HEAD's, through `.`, a nested branch name, any case.
        ("up.git", "@{u}", &[]),
        ("up.git", "main@{upstream}", &[]),
        ("up.git", "topic@{UPSTREAM}", &[]),
        ("up.git", "HEAD@{U}", &[]),
        ("up.git", "local@{u}", &[]),
        ("up.git", "a/b@{u}", &[]),
        ("up.git", "ghost@{u}", &[]),
        ("up.git", "sec@{u}", &[]),
        ("up.git", "main@{u}~1", &[]),
        ("up.git", "topic@{u}:file", &[]),
        ("up.git", "topic@{u}^{tree}", &[]),
        ("up.git", "topic@{u}^{blob}", &[]),
        // Configured, never fetched: the name names nothing.
        ("up.git", "feature@{u}", &[]),
        // git's messages.
        ("detached.git", "@{u}", &[]),
        ("detached.git", "HEAD@{push}", &[]),
        ("up.git", "noup@{u}", &[]),
        ("up.git", "only-merge@{u}", &[]),
        ("up.git", "nothere@{upstream}", &[]),
        ("up.git", "v1@{u}", &[]),
        ("up.git", "origin/main@{u}", &[]),
        ("up.git", "weird@{u}", &[]),
        // @{push} by push.default, push remotes, push refspecs and mirrors.
        ("up.git", "@{push}", &[]),
        ("up.git", "topic@{push}", &[("push.default", "simple")]),
        ("up.git", "a/b@{push}", &[("push.default", "simple")]),
        ("up.git", "noup@{push}", &[("push.default", "simple")]),
        ("up.git", "main@{push}", &[("push.default", "nothing")]),
        ("up.git", "main@{push}", &[("push.default", "matching")]),
        ("up.git", "noup@{push}", &[("push.default", "current")]),
        ("up.git", "feature@{push}", &[("push.default", "current")]),
        ("up.git", "topic@{push}", &[("push.default", "upstream")]),
        ("up.git", "noup@{push}", &[("push.default", "tracking")]),
        ("up.git", "local@{push}", &[("push.default", "simple")]),
        ("up.git", "main@{push}", &[("remote.pushDefault", "other")]),
        ("up.git", "main@{push}", &[("branch.main.pushRemote", "other"), ("push.default", "current")]),
        ("up.git", "main@{push}", &[("remote.origin.push", "refs/heads/main:refs/heads/topic")]),
        ("up.git", "main@{push}", &[("remote.origin.push", "refs/heads/x:refs/heads/y")]),
        ("up.git", "main@{push}", &[("remote.origin.push", "refs/heads/*:refs/heads/a/*")]),
        ("up.git", "topic@{push}", &[("remote.origin.mirror", "true")]),
        ("up.git", "main@{push}", &[("remote.nowhere.url", "x"), ("branch.main.pushRemote", "nowhere")]),
    ];
    for (repo, name, settings) in cases {
        for ask in [single("-t", name), batch(format!("{name}\nHEAD\n").as_bytes())] {
            compared_255 |= same("case", repo, &ask, settings, false);
        }
    }
    if !compared_255 {
        crate::util::skip::record("the comparison with git 2.55 (set CAT_BLOBD_TEST_GIT to one)");
    }
}

const BASES: &[&str] = &[
    "",
    "main",
    "topic",
    "feature",
    "local",
    "weird",
    "noup",
    "ghost",
    "sec",
    "only-merge",
    "a/b",
    "HEAD",
    "v1",
    "origin/main",
    "refs/heads/main",
    "refs/remotes/origin/main",
    "nothere",
    "@",
    "Main",
    "other/x",
];
const MARKS: &[&str] = &[
    "@{u}",
    "@{U}",
    "@{upstream}",
    "@{UPSTREAM}",
    "@{Upstream}",
    "@{push}",
    "@{PUSH}",
    "@{pUsH}",
    // Neighbours that are not marks. (Not `@{<n>}`: `@@{<n>}`, HEAD's own reflog, is answered `missing` today,
    // a difference of the reflog lookup, not of these marks.)
    "@{ u}",
    "@{u }",
    "@{up}",
    "@{pushy}",
    "@{}",
    "@{u",
    "@@{u}",
    "@{u}}",
    "@ {u}",
    "@{upstream}x",
];
const TAILS: &[&str] = &[
    "",
    "",
    "",
    "^",
    "^0",
    "~1",
    "~",
    "~3",
    "^2",
    "^{tree}",
    "^{blob}",
    "^{commit}",
    "^{}",
    ":file",
    ":nope",
    ":",
    "..main",
    "^!",
    "junk",
    "/x",
];
const SETTINGS: &[(&str, &str)] = &[
    ("push.default", "nothing"),
    ("push.default", "matching"),
    ("push.default", "current"),
    ("push.default", "upstream"),
    ("push.default", "tracking"),
    ("push.default", "simple"),
    ("remote.pushDefault", "other"),
    ("remote.pushDefault", "nowhere"),
    ("branch.main.pushRemote", "other"),
    ("remote.origin.push", "refs/heads/*:refs/heads/*"),
    ("remote.origin.push", "refs/heads/main:refs/heads/topic"),
    ("remote.origin.mirror", "true"),
    ("branch.noup.remote", "origin"),
    ("branch.noup.merge", "refs/heads/topic"),
];

/// The case of `seed`: repository, name (bytes: batch input may hold CR or NUL), the way it is asked, settings.
fn generated(seed: u64) -> (&'static str, String, Ask, Vec<(&'static str, &'static str)>) {
    let mut rng = Rng::new(seed);
    let mut pick = |list: &[&'static str]| list[rng.below(list.len())];
    let repo = pick(&["up.git", "up.git", "detached.git"]);
    let name = format!("{}{}{}", pick(BASES), pick(MARKS), pick(TAILS));
    let mut rng = Rng::new(seed ^ 0x5eed);
    let settings: Vec<(&str, &str)> = (0..rng.below(3)).map(|_| SETTINGS[rng.below(SETTINGS.len())]).collect();
    let ask = match rng.below(6) {
        0 => single("-t", &name),
        1 => single("-e", &name),
        2 => single("-p", &name),
        3 => batch(format!("{name}\nHEAD\n").as_bytes()),
        4 => batch(format!("HEAD\n{name}\r\nmain\n").as_bytes()),
        _ => batch(format!("{name}\0ignored\nHEAD\n").as_bytes()),
    };
    (repo, name, ask, settings)
}

#[test]
fn generated_neighbours_of_upstream_and_push_answer_as_git_does() {
    let seeds: Vec<u64> = match std::env::var("CATBLOBD_UPSTREAM_SEED") {
        Ok(seed) => vec![seed.parse().expect("CATBLOBD_UPSTREAM_SEED: a number")],
        Err(_) => {
            (0..std::env::var("CATBLOBD_UPSTREAM_CASES").map_or(CASES, |n| n.parse().expect("a number"))).collect()
        }
    };
    let mut compared_255 = false;
    for seed in seeds {
        let (repo, name, ask, settings) = generated(seed);
        let refused = cat_blobd::cat_file::names::refusable(name.as_bytes()).is_some();
        compared_255 |= same(&format!("seed {seed}"), repo, &ask, &settings, refused);
    }
    if !compared_255 {
        crate::util::skip::record("the comparison with git 2.55 (set CAT_BLOBD_TEST_GIT to one)");
    }
}
