//! libFuzzer entry point of `wsp_fuzz::mount_table`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsp_fuzz::mount_table(data));
