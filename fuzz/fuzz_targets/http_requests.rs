//! libFuzzer entry point of `wsp_fuzz::http_requests`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsp_fuzz::http_requests(data));
