//! `cargo xtask man [--out DIR]`: the man pages of `wsp`, `wsp.1` and one page per subcommand
//! (`wsp-files-watch.1`, ...), into `target/man` unless `--out` names another directory.
//!
//! The pages are written by `wsp man --out DIR` (clap_mangen over the binary's own command
//! line), run as a subprocess, so xtask itself does not link the CLI. They are not committed:
//! they say nothing the `--help` of each command does not, so a committed copy could only
//! drift from the code and make every new flag a two-file change; packagers generate them.

use std::path::PathBuf;
use std::process::Command;

use crate::Result;
use crate::project::{cargo, project_root};

/// Where the pages go by default, relative to the project root.
const DEFAULT_OUT: &str = "target/man";

/// The directory `args` (`[]` or `["--out", DIR]`) names, absolute: the subprocess runs in
/// the project root, the caller maybe not.
pub(crate) fn out_dir(args: &[String]) -> Result<PathBuf> {
    match args {
        [] => Ok(project_root().join(DEFAULT_OUT)),
        [flag, dir] if flag == "--out" => Ok(std::env::current_dir()?.join(dir)),
        _ => Err(format!("unexpected arguments {args:?}: cargo xtask man [--out DIR]").into()),
    }
}

/// Writes the pages into `out` (created if missing).
pub(crate) fn run(out: &std::path::Path) -> Result<()> {
    let status = Command::new(cargo())
        .args([
            "run", "--quiet", "-p", "wsp-cli", "--bin", "wsp", "--", "man", "--out",
        ])
        .arg(out)
        .current_dir(project_root())
        .status()?;
    if !status.success() {
        return Err(format!("`wsp man --out {}` failed ({status})", out.display()).into());
    }
    Ok(())
}
