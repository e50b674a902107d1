//! libFuzzer entry point of `wsp_fuzz::sse_chunks`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsp_fuzz::sse_chunks(data));
