//! Tests that cannot run everywhere, and how they show. A test that needs what a machine may lack (root,
//! fanotify) is `#[ignore = "needs …"]`: a plain `cargo test` counts it as ignored, not passed, and `.ci/run`,
//! which runs as root, runs the ignored tests in a pass of their own (`cargo test -- --ignored`). There, and
//! where a part of a test cannot run (the comparison with git 2.55 without `CAT_BLOBD_TEST_GIT`), the test
//! checks what it needs with [`skip_unless!`] or [`record`]: lacking it, it says `skipped: <test>: <why>` on
//! stderr and adds that line to the file `CAT_BLOBD_SKIPPED` names, which `.ci/run` counts and prints at the end.

use std::io::Write;

/// Is the test process root (the tests that run a client as another uid, or watch opens with fanotify)?
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Records that the running test (its thread is named after it) skipped all or part of itself, and why.
pub fn record(why: &str) {
    let thread = std::thread::current();
    let line = format!("{}: {why}\n", thread.name().unwrap_or("a test"));
    eprint!("skipped: {line}");
    if let Some(log) = std::env::var_os("CAT_BLOBD_SKIPPED") {
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&log).expect("the skip log");
        // One write: lines of tests running at once never interleave.
        file.write_all(line.as_bytes()).expect("write the skip log");
    }
}

/// `skip_unless!(holds, why)`: unless `holds`, records the test as skipped ([`record`]) and returns from it.
macro_rules! skip_unless {
    ($holds:expr, $why:expr) => {
        if !$holds {
            $crate::util::skip::record($why);
            return;
        }
    };
}
pub(crate) use skip_unless;
