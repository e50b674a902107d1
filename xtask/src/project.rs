//! Where the project is, and how generated files are written or checked.

use std::fs;
use std::path::{Path, PathBuf};

use crate::Result;

/// The project root: the directory holding the workspace `Cargo.toml`.
pub(crate) fn project_root() -> PathBuf {
    // xtask always sits one level below the root.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask has a parent directory")
        .to_path_buf()
}

/// Cargo's target directory: `CARGO_TARGET_DIR` when set, else `target/` in the project root.
pub(crate) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| project_root().join("target"), PathBuf::from)
}

/// The cargo that runs this task (`CARGO`), or `cargo` from `PATH`.
pub(crate) fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Makes `relative` (from the project root) hold exactly `contents`.
///
/// Without `check` the file is written when it differs (and left untouched otherwise). With
/// `check` nothing is written, and a missing or different file is an error telling the reader
/// to run `generator` and commit.
pub(crate) fn ensure_file_contents(
    relative: &str,
    contents: &str,
    check: bool,
    generator: &str,
) -> Result<()> {
    let path = project_root().join(relative);
    let current = fs::read_to_string(&path).ok();
    if current.as_deref() == Some(contents) {
        return Ok(());
    }
    if check {
        return Err(format!("`{relative}` is stale: run `{generator}` and commit").into());
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    fs::write(&path, contents)?;
    eprintln!("updated {relative}");
    Ok(())
}
