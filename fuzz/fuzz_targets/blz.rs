//! Fuzz target: see `caterva_fuzz::blz`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    caterva_fuzz::blz(data);
});
