//! Fuzz target: see `caterva_fuzz::frame_check`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    caterva_fuzz::frame_check(data);
});
