//! Fuzz target: see `caterva_fuzz::from_cframe`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    caterva_fuzz::from_cframe(data);
});
