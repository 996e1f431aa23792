//! Fuzz target: see `caterva_fuzz::open_file`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    caterva_fuzz::open_file(data);
});
