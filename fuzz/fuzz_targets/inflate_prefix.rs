//! The prefix decoder against zlib: a zlib stream from arbitrary bytes, every head length.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cat_blobd::fuzzing::inflate_prefix(data);
});
