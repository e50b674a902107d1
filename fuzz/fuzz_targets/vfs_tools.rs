//! libFuzzer entry point of `wsp_fuzz::vfs_tools`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wsp_fuzz::vfs_tools(data));
