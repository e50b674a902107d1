//! The fuzz targets of wsp, as ordinary library functions.
//!
//! **Invariant:** a target is a function from bytes to nothing that panics exactly when wsp
//! breaks one of its promises (a panic inside wsp, or an invariant the target checks). The
//! same function runs under libFuzzer (`fuzz/fuzz_targets/<target>.rs`, driven by
//! `cargo xtask fuzz`) and under `cargo test -p wsp-fuzz`, which replays every seed in
//! `fuzz/corpus/<target>/` and every once-found crash in `fuzz/regressions/<target>/`, so a crash
//! stays a regression test forever.
//!
//! | target | what it drives | what it checks |
//! |---|---|---|
//! | [`paths`] | `WorkspacePath`, `WorkspacePrefix`, `VirtualPath` parsing | no panic; a parsed path re-parses to itself, has no empty, `.` or `..` component, keeps the length and character rules; a workspace path is a prefix and a virtual path |
//! | [`mount_table`] | `MountTable::from_toml_str` | no panic; a loaded table survives a TOML round trip; its routing is deny by default and longest prefix on whole components, and a path its deny rules hide is never written and reads as missing (checked against a model) |
//! | [`config_file`] | `wsp.toml` the way `wsp serve --config` reads it | no panic |
//! | [`http_requests`] | the real axum router over a `MemoryStore`, with real keys | no panic, no 5xx but 503, every body a JSON document and every error a valid envelope |
//! | [`sse_chunks`] | `wsp-client`'s change-feed reader over loopback HTTP | the events are the same however the byte stream is cut into chunks |
//! | [`vfs_tools`] | `Vfs::call` with arbitrary tool names and JSON arguments over physical, virtual and overlay mounts in a fresh temporary directory | no panic; nothing outside the writable mount directories changes; no output shows a host path or the content of a file outside the mounts; no output shows the name or content of a path the deny rules hide (files, directories, links to them, virtual files), and none of them changes |
//!
//! ```
//! // Each target takes raw bytes; bad input is simply refused by the code under test.
//! wsp_fuzz::paths(b"notes/plan.md");
//! wsp_fuzz::paths(b"/ws/../etc/passwd");
//! assert!(wsp_fuzz::target("paths").is_some());
//! ```

mod config;
mod mounts;
mod path;
mod requests;
mod sse;
mod tools;

pub use config::config_file;
pub use mounts::mount_table;
pub use path::paths;
pub use requests::http_requests;
pub use sse::{SSE_CUT, sse_chunks};
pub use tools::vfs_tools;

/// A fuzz target: panics when wsp breaks a promise on this input.
pub type Target = fn(&[u8]);

/// Every target by name; the name is also its directory under `fuzz/corpus/`,
/// `fuzz/regressions/` and its binary in `fuzz/fuzz_targets/`.
pub const TARGETS: &[(&str, Target)] = &[
    ("paths", paths),
    ("mount_table", mount_table),
    ("config_file", config_file),
    ("http_requests", http_requests),
    ("sse_chunks", sse_chunks),
    ("vfs_tools", vfs_tools),
];

/// The target called `name`, if there is one.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Runs `fut` to completion on this thread's runtime (one per thread, built on first use).
pub(crate) fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    thread_local! {
        static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime builds");
    }
    RUNTIME.with(|rt| rt.block_on(fut))
}

/// 16 random hex digits: markers the fuzzer cannot have learned in an earlier run.
pub(crate) fn random_hex() -> String {
    wsp_types::random_hex(8)
}
