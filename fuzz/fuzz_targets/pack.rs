//! Pack entry decoding and delta resolution: arbitrary pack bytes with an index of chosen offsets.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cat_blobd::fuzzing::pack(data));
