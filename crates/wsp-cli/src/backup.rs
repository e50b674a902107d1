//! `wsp backup` and `wsp restore`: a consistent copy of a SQLite data directory while the server
//! runs, and putting one back into place while it does not.

use std::path::{Path, PathBuf};

use clap::Args;
use wsp_store_sqlite::backup::{
    BackupError, DATA_FILES, backup_file, check_file, copy_private, in_use, sync_dir,
};

use crate::CliError;
use crate::failure::Failure;
use crate::location::prepare_data_dir;
use crate::out::outln;

/// `wsp backup --data DIR OUT`.
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The server's data directory (SQLite). For a PostgreSQL store use pg_dump instead.
    #[arg(long, default_value = "./wsp-data")]
    data: PathBuf,
    /// The directory to write the backup to: new, or empty.
    out: PathBuf,
}

/// `wsp restore BACKUP --data DIR [--force]`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// A directory written by `wsp backup`.
    backup: PathBuf,
    /// The data directory to restore into; no server may have it open.
    #[arg(long, default_value = "./wsp-data")]
    data: PathBuf,
    /// Replace the store the data directory already holds.
    #[arg(long)]
    force: bool,
}

fn error(e: BackupError) -> CliError {
    CliError(e.to_string())
}

/// The files of [`DATA_FILES`] present in `dir`.
fn present(dir: &Path) -> Vec<&'static str> {
    DATA_FILES
        .into_iter()
        .filter(|name| dir.join(name).is_file())
        .collect()
}

/// Whether `files` hold a store or a key registry (approvals alone are no wsp data).
fn holds_wsp_data(files: &[&str]) -> bool {
    files
        .iter()
        .any(|f| matches!(*f, "wsp.sqlite3" | "keys.sqlite3"))
}

/// Runs `wsp backup`.
pub async fn backup(args: BackupArgs) -> Result<(), Failure> {
    tokio::task::spawn_blocking(move || backup_blocking(&args))
        .await
        .map_err(|e| CliError(e.to_string()))?
}

fn backup_blocking(args: &BackupArgs) -> Result<(), Failure> {
    let files = present(&args.data);
    if !holds_wsp_data(&files) {
        return Err(CliError(format!(
            "{} holds no wsp data (no wsp.sqlite3 or keys.sqlite3)",
            args.data.display()
        ))
        .into());
    }
    if args.out.exists() {
        let mut entries = std::fs::read_dir(&args.out)
            .map_err(|e| CliError(format!("cannot use {}: {e}", args.out.display())))?;
        if entries.next().is_some() {
            return Err(CliError(format!(
                "{} exists and is not empty; a backup goes to a new or empty directory",
                args.out.display()
            ))
            .into());
        }
    }
    create_private_dir(&args.out)?;
    for name in &files {
        backup_file(&args.data.join(name), &args.out.join(name)).map_err(error)?;
        outln!("{name}\tbacked up")?;
    }
    sync_dir(&args.out).map_err(error)?;
    outln!(
        "backup of {} written to {} ({} files)",
        args.data.display(),
        args.out.display(),
        files.len()
    )?;
    Ok(())
}

/// Creates `dir` (and missing parents) and makes it 0700 on Unix.
fn create_private_dir(dir: &Path) -> Result<(), CliError> {
    let fail = |e: std::io::Error| CliError(format!("cannot create {}: {e}", dir.display()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(fail)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(fail)
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir).map_err(fail)
}

/// Runs `wsp restore`.
pub async fn restore(args: RestoreArgs) -> Result<(), Failure> {
    tokio::task::spawn_blocking(move || restore_blocking(&args))
        .await
        .map_err(|e| CliError(e.to_string()))?
}

fn restore_blocking(args: &RestoreArgs) -> Result<(), Failure> {
    let files = present(&args.backup);
    if !holds_wsp_data(&files) {
        return Err(CliError(format!(
            "{} is not a wsp backup (no wsp.sqlite3 or keys.sqlite3)",
            args.backup.display()
        ))
        .into());
    }
    for name in &files {
        check_file(&args.backup.join(name)).map_err(error)?;
        outln!("{name}\tchecked")?;
    }
    prepare_data_dir(&args.data)?;
    let existing = present(&args.data);
    for name in &existing {
        if in_use(&args.data.join(name)).map_err(error)? {
            return Err(CliError(format!(
                "{} is open in another process (a running wsp serve?); stop it first",
                args.data.join(name).display()
            ))
            .into());
        }
    }
    if !existing.is_empty() && !args.force {
        return Err(CliError(format!(
            "{} already holds a store ({}); pass --force to replace it",
            args.data.display(),
            existing.join(", ")
        ))
        .into());
    }
    // First every file becomes a checked copy beside its place, touching nothing of the old
    // store; only then does each copy replace its file, with the WAL or shared-memory file the
    // old database left behind (it belongs to the old file). A restore that fails before that
    // point leaves the old store whole.
    let mut staged = Vec::new();
    for name in DATA_FILES.iter().filter(|name| files.contains(name)) {
        let temp = sidecar(&args.data.join(name), ".restoring");
        remove_if_present(&temp)?;
        copy_private(&args.backup.join(name), &temp).map_err(error)?;
        check_file(&temp).map_err(error)?;
        staged.push((*name, temp));
    }
    for name in DATA_FILES {
        let place = args.data.join(name);
        for suffix in ["-wal", "-shm", "-journal"] {
            remove_if_present(&sidecar(&place, suffix))?;
        }
        match staged.iter().find(|(staged, _)| *staged == name) {
            Some((_, temp)) => {
                std::fs::rename(temp, &place).map_err(|e| {
                    CliError(format!("cannot put {} in place: {e}", place.display()))
                })?;
                outln!("{name}\trestored")?;
            }
            None => remove_if_present(&place)?,
        }
    }
    sync_dir(&args.data).map_err(error)?;
    outln!(
        "restored {} into {}",
        args.backup.display(),
        args.data.display()
    )?;
    Ok(())
}

fn sidecar(file: &Path, suffix: &str) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn remove_if_present(path: &Path) -> Result<(), CliError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CliError(format!("cannot remove {}: {e}", path.display()))),
    }
}
