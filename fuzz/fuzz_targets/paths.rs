//! libFuzzer entry point of `wsp_fuzz::paths`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsp_fuzz::paths(data));
