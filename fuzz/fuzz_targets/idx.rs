//! `.idx` parsing: arbitrary bytes as the index of the pack in `fuzz/repo`.
#![no_main]

use std::sync::LazyLock;

use cat_blobd::fuzzing::{self, FuzzRepo};
use libfuzzer_sys::fuzz_target;

static REPO: LazyLock<FuzzRepo> =
    LazyLock::new(|| FuzzRepo::open(concat!(env!("CARGO_MANIFEST_DIR"), "/repo").as_ref()));

fuzz_target!(|data: &[u8]| fuzzing::idx(&REPO, data));
