//! Delta application: a base and a delta from arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cat_blobd::fuzzing::delta(data));
