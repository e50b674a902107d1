//! Memory bounds against hostile arguments: what one tool call may make the process hold.
//!
//! Each test does one thing an agent controls (an `edit_file` whose result would be gigabytes,
//! an `if_match` write against a 10 GB sparse file, a `read_file` of a file of empty lines with
//! a huge `limit`) and then checks the process's peak resident set (`VmHWM`) against
//! [`PEAK_RSS_LIMIT`]. This binary holds only such bounded tests, so running them in parallel
//! keeps the sum bounded too. A regression must not take the machine down with it: every test
//! first caps the address space at [`ADDRESS_SPACE_CAP`], so an unbounded allocation aborts
//! this test binary instead of growing until the kernel kills something.
//!
//! The peak and the cap are the process's: that is why these tests are a binary of their own
//! and not a module of `tests/it/`, whose other tests would count towards the peak and live
//! under the cap.
#![cfg(target_os = "linux")]

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Once};

use serde_json::json;
use wsp_store::MemoryStore;
use wsp_vfs::{
    AccessScope, EditFileArgs, MountConfig, MountTable, ReadFileArgs, Vfs, VfsErrorCode,
    WorkspaceConfig, WriteFileArgs,
};

/// The peak resident set this whole test binary may reach. Alone, each test peaks at 7 to 22 MiB
/// (the harness, a 4 MiB file read once, a 4 MiB result or page); the defects these tests
/// reproduce took it to gigabytes (or to an abort at the address-space cap).
const PEAK_RSS_LIMIT: u64 = 64 * 1024 * 1024;

/// The address space this test binary may reserve (glibc arenas and thread stacks reserve far
/// more than they use, so this is well above [`PEAK_RSS_LIMIT`]).
const ADDRESS_SPACE_CAP: u64 = 2 * 1024 * 1024 * 1024;

/// 4 MiB: the default read and write limit.
const FOUR_MIB: usize = 4 * 1024 * 1024;

fn cap_address_space() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let now = getrlimit(Resource::As);
        let cap = now
            .current
            .map_or(ADDRESS_SPACE_CAP, |c| c.min(ADDRESS_SPACE_CAP));
        setrlimit(
            Resource::As,
            Rlimit {
                current: Some(cap),
                maximum: now.maximum,
            },
        )
        .expect("the address space can be lowered");
    });
}

/// The process's peak resident set (`VmHWM`), in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM in /proc/self/status");
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kib * 1024
}

fn assert_peak_bounded(what: &str) {
    let peak = peak_rss();
    assert!(
        peak < PEAK_RSS_LIMIT,
        "{what}: peak resident set {} MiB, over the bound of {} MiB",
        peak >> 20,
        PEAK_RSS_LIMIT >> 20
    );
}

/// `/ws` (rw, physical over `dir`) and `/o` (rw, overlay with `dir` below).
fn vfs_over(dir: &Path) -> Vfs {
    let table = MountTable::builder()
        .workspace(WorkspaceConfig::new(
            "/ws",
            AccessScope::ReadWrite,
            MountConfig::physical(dir),
        ))
        .workspace(WorkspaceConfig::new(
            "/o",
            AccessScope::ReadWrite,
            MountConfig::overlay("up", dir),
        ))
        .build()
        .unwrap();
    Vfs::builder(table)
        .virtual_store(Arc::new(MemoryStore::default()))
        .build()
        .unwrap()
}

/// Writes `len` bytes of `byte` to `path` without holding them in memory at once.
fn fill(path: &Path, byte: u8, len: usize) {
    let mut file = std::fs::File::create(path).unwrap();
    let chunk = vec![byte; 64 * 1024];
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len());
        file.write_all(&chunk[..n]).unwrap();
        left -= n;
    }
}

/// `edit_file` arguments without `if_match`.
fn edit(path: &str, old: &str, new: impl Into<String>, replace_all: bool) -> EditFileArgs {
    EditFileArgs {
        path: path.into(),
        old_string: old.into(),
        new_string: new.into(),
        replace_all,
        if_match: None,
    }
}

/// A 10 GB file that costs no disk: a hole.
fn sparse(path: &Path) {
    std::fs::File::create(path)
        .unwrap()
        .set_len(10 << 30)
        .unwrap();
}

#[tokio::test]
async fn an_edit_whose_result_would_be_gigabytes_is_refused_before_it_is_built() {
    cap_address_space();
    let dir = tempfile::tempdir().unwrap();
    fill(&dir.path().join("a.txt"), b'a', FOUR_MIB);
    let vfs = vfs_over(dir.path());
    // 4,194,304 matches, each replaced by 2,000 bytes: 8 GB.
    let err = vfs
        .edit_file(edit("/ws/a.txt", "a", "b".repeat(2000), true))
        .await
        .unwrap_err();
    assert_eq!(err.code, VfsErrorCode::TooLarge, "{err:?}");
    assert_eq!(
        err.message,
        "the edited file would be 8388608000 bytes, over write_file's limit of 4194304 bytes; \
         replace fewer occurrences or with shorter text"
    );
    assert_eq!(
        std::fs::metadata(dir.path().join("a.txt")).unwrap().len(),
        FOUR_MIB as u64,
        "the file is untouched"
    );
    assert_peak_bounded("edit_file replace_all bomb");
}

#[tokio::test]
async fn a_single_edit_over_the_limit_is_refused_with_the_same_error() {
    cap_address_space();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.txt"), "hello world\n").unwrap();
    let vfs = vfs_over(dir.path());
    let err = vfs
        .edit_file(edit("/ws/s.txt", "world", "w".repeat(FOUR_MIB), false))
        .await
        .unwrap_err();
    assert_eq!(err.code, VfsErrorCode::TooLarge, "{err:?}");
    assert_eq!(
        err.message,
        "the edited file would be 4194311 bytes, over write_file's limit of 4194304 bytes; \
         replace fewer occurrences or with shorter text"
    );
    // Exactly at the limit is allowed.
    let edited = vfs
        .edit_file(edit(
            "/ws/s.txt",
            "hello world\n",
            "w".repeat(FOUR_MIB),
            false,
        ))
        .await
        .unwrap();
    assert_eq!(edited.replacements, 1);
    assert_eq!(
        std::fs::metadata(dir.path().join("s.txt")).unwrap().len(),
        FOUR_MIB as u64
    );
    assert_peak_bounded("edit_file over the limit");
}

#[tokio::test]
async fn if_match_against_a_sparse_10_gb_file_is_refused_without_reading_it() {
    cap_address_space();
    let dir = tempfile::tempdir().unwrap();
    sparse(&dir.path().join("huge.bin"));
    let vfs = vfs_over(dir.path());
    for path in ["/ws/huge.bin", "/o/huge.bin"] {
        let err = vfs
            .write_file(WriteFileArgs {
                path: path.into(),
                content: "x".into(),
                if_match: Some("\"sha256-000000000000000000000000\"".into()),
                create_only: false,
            })
            .await
            .unwrap_err();
        assert_eq!(err.code, VfsErrorCode::TooLarge, "{path}: {err:?}");
        assert_eq!(
            err.message,
            format!(
                "{path} is over 4194304 bytes, more than if_match can compare, so no etag you hold \
                 can match it; leave out if_match to replace it"
            )
        );
        // The other tools that look at it refuse it too, without reading it.
        let err = vfs
            .read_file(ReadFileArgs {
                path: path.into(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(err.code, VfsErrorCode::TooLarge, "{path}: {err:?}");
        let err = vfs
            .edit_file(edit(path, "\0", "x", true))
            .await
            .unwrap_err();
        assert_eq!(err.code, VfsErrorCode::TooLarge, "{path}: {err:?}");
        let found = vfs
            .call("grep", json!({"pattern": "x", "path": path}))
            .await
            .unwrap();
        assert_eq!(found.structured["skipped_large"], 1, "{path}: {found:?}");
    }
    assert_eq!(
        std::fs::metadata(dir.path().join("huge.bin"))
            .unwrap()
            .len(),
        10 << 30,
        "the file is untouched"
    );
    assert_peak_bounded("if_match against a sparse file");
}

#[tokio::test]
async fn read_file_with_a_huge_limit_returns_a_bounded_page() {
    cap_address_space();
    let dir = tempfile::tempdir().unwrap();
    // 4 MiB of empty lines: each returned line costs a numbered line of text and a string.
    fill(&dir.path().join("lines.txt"), b'\n', FOUR_MIB);
    let vfs = vfs_over(dir.path());
    let out = vfs
        .call(
            "read_file",
            json!({"path": "/ws/lines.txt", "limit": 1_000_000_000u64}),
        )
        .await
        .unwrap();
    assert!(
        out.text.len() as u64 <= 4 * 1024 * 1024 + 200,
        "{} bytes of text",
        out.text.len()
    );
    assert_eq!(out.structured["more"], true, "{}", out.structured);
    assert_eq!(
        out.structured["total_lines"], FOUR_MIB,
        "{}",
        out.structured
    );
    let returned = out.structured["returned_lines"].as_u64().unwrap();
    assert!(returned > 0);
    assert!(
        out.text
            .contains(&format!("continue with offset={}", returned + 1)),
        "{}",
        &out.text[out.text.len() - 200..]
    );
    assert_peak_bounded("read_file with a huge limit");
}
