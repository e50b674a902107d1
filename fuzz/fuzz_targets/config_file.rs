//! libFuzzer entry point of `wsp_fuzz::config_file`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsp_fuzz::config_file(data));
