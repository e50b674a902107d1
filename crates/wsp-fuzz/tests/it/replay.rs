//! Replays every committed seed (`fuzz/corpus/<target>/`) and every once-found crash
//! (`fuzz/regressions/<target>/`) through the target's library function: a crash the fuzzer
//! found once stays a regression test forever.
//!
//! `cargo test -p wsp-fuzz --test it replay::<target>` replays one target.

use std::path::{Path, PathBuf};

/// The files of `fuzz/<kind>/<target>/`, sorted (none when the directory does not exist).
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz")
        .join(kind)
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a readable directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Runs every file of `fuzz/<kind>/<target>/` through the target; fails naming each input
/// that panics.
fn replay(kind: &str, target: &str) {
    let run = wsp_fuzz::target(target).expect("a known target");
    let files = inputs(kind, target);
    if kind == "corpus" {
        assert!(!files.is_empty(), "fuzz/corpus/{target}/ has no seeds");
    }
    let mut failed = Vec::new();
    for file in &files {
        let data = std::fs::read(file).expect("a readable input");
        if std::panic::catch_unwind(|| run(&data)).is_err() {
            failed.push(file.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{target} fails on (the panic messages are above):\n{}",
        failed.join("\n")
    );
}

#[test]
fn paths() {
    replay("corpus", "paths");
    replay("regressions", "paths");
}

#[test]
fn mount_table() {
    replay("corpus", "mount_table");
    replay("regressions", "mount_table");
}

#[test]
fn config_file() {
    replay("corpus", "config_file");
    replay("regressions", "config_file");
}

#[test]
fn http_requests() {
    replay("corpus", "http_requests");
    replay("regressions", "http_requests");
}

#[test]
fn sse_chunks() {
    replay("corpus", "sse_chunks");
    replay("regressions", "sse_chunks");
}

#[test]
fn vfs_tools() {
    replay("corpus", "vfs_tools");
    replay("regressions", "vfs_tools");
}

#[test]
fn every_target_is_replayed_and_has_a_libfuzzer_binary() {
    let here = include_str!("replay.rs");
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    for (name, _) in wsp_fuzz::TARGETS {
        for kind in ["corpus", "regressions"] {
            assert!(
                here.contains(&format!("replay(\"{kind}\", \"{name}\");")),
                "no replay of fuzz/{kind}/{name}"
            );
        }
        assert!(
            fuzz.join("fuzz_targets")
                .join(format!("{name}.rs"))
                .is_file(),
            "fuzz/fuzz_targets/{name}.rs is missing"
        );
    }
}
