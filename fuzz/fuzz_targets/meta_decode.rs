//! Fuzz target: see `caterva_fuzz::meta_decode`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    caterva_fuzz::meta_decode(data);
});
