//! Loose object parsing: arbitrary bytes as the (zlib-compressed) file of a loose object.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cat_blobd::fuzzing::loose(data));
