//! Online backups of wsp's SQLite files, and the checks `wsp restore` makes before it puts a
//! backup into place.
//!
//! A backup copies a file through SQLite's online backup API in one step: the copy is the
//! database as of one committed transaction (a read transaction pins it), so it holds every write
//! acknowledged before the backup began, while the server keeps writing (in WAL mode a reader
//! never blocks the writer).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, ErrorCode, OpenFlags};

/// The SQLite files a wsp data directory can hold, in the order they are copied: the workspace
/// store (with its `Idempotency-Key` records), the key registry, the pack approvals.
pub const DATA_FILES: [&str; 3] = ["wsp.sqlite3", "keys.sqlite3", "approvals.sqlite3"];

/// How long a backup or check waits for a lock before it gives up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a backup, check or lock probe of one file failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {reason}", path.display())]
pub struct BackupError {
    /// The file concerned.
    pub path: PathBuf,
    /// What went wrong, in words.
    pub reason: String,
}

fn fail(path: &Path, reason: impl std::fmt::Display) -> BackupError {
    BackupError {
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

/// Copies the SQLite database `source` to the new file `target` (created 0600 on Unix; an
/// existing `target` is refused) as of one committed transaction, then checks the copy
/// (`PRAGMA integrity_check`) and syncs it to disk. Safe while a server writes to `source`.
pub fn backup_file(source: &Path, target: &Path) -> Result<(), BackupError> {
    let src = Connection::open_with_flags(
        source,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| fail(source, e))?;
    src.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| fail(source, e))?;
    // SQLite opens the empty file as a new database and keeps its mode.
    drop(create_private_file(target)?);
    let mut dst = Connection::open(target).map_err(|e| fail(target, e))?;
    dst.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| fail(target, e))?;
    {
        let backup = Backup::new(&src, &mut dst).map_err(|e| fail(source, e))?;
        // All pages in one step: one read transaction on the source, so one consistent state.
        // A busy or locked step copied nothing; it is tried again after a pause.
        let mut attempts = 0;
        loop {
            match backup.step(-1).map_err(|e| fail(source, e))? {
                StepResult::Done => break,
                StepResult::More => continue,
                _ if attempts < 100 => {
                    attempts += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
                _ => return Err(fail(source, "the database stayed locked; try again")),
            }
        }
    }
    // The copy keeps the source's WAL mode; closing it checkpoints and removes its WAL, so the
    // backup is one self-contained file per database.
    check_connection(&dst, target)?;
    dst.close().map_err(|(_, e)| fail(target, e))?;
    sync_file(target)
}

/// Checks the database `path` with `PRAGMA integrity_check` (and, for `wsp.sqlite3`, that its
/// header marks it as a wsp store). The file is opened read-write, so that a WAL-mode file opens
/// without its `-shm`; nothing is written to it.
pub fn check_file(path: &Path) -> Result<(), BackupError> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
        .map_err(|e| fail(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| fail(path, e))?;
    check_connection(&conn, path)?;
    if path.file_name().is_some_and(|n| n == DATA_FILES[0]) {
        let id: i32 = conn
            .pragma_query_value(None, "application_id", |r| r.get(0))
            .map_err(|e| fail(path, e))?;
        if id != crate::APPLICATION_ID {
            return Err(fail(path, "not a wsp store (wrong application_id)"));
        }
    }
    conn.close().map_err(|(_, e)| fail(path, e))
}

fn check_connection(conn: &Connection, path: &Path) -> Result<(), BackupError> {
    let mut stmt = conn
        .prepare("PRAGMA integrity_check")
        .map_err(|e| fail(path, e))?;
    let problems: Vec<String> = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .and_then(|rows| rows.collect())
        .map_err(|e| fail(path, e))?;
    if problems != ["ok"] {
        return Err(fail(
            path,
            format!("integrity check failed: {}", problems.join("; ")),
        ));
    }
    Ok(())
}

/// Whether another connection (a running `wsp serve`, `wsp mcp`, or any SQLite client) has the
/// database `path` open. It asks SQLite for an exclusive lock on the file (locking mode
/// `EXCLUSIVE`, no waiting): every connection to a WAL-mode file holds a shared lock on it for as
/// long as it is open, so the request fails exactly while someone else has it open. A file that
/// does not exist is not in use.
pub fn in_use(path: &Path) -> Result<bool, BackupError> {
    if !path.exists() {
        return Ok(false);
    }
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
        .map_err(|e| fail(path, e))?;
    conn.busy_timeout(Duration::ZERO)
        .map_err(|e| fail(path, e))?;
    conn.pragma_update(None, "locking_mode", "EXCLUSIVE")
        .map_err(|e| fail(path, e))?;
    let probe = conn.execute_batch("BEGIN EXCLUSIVE; SELECT count(*) FROM sqlite_master; COMMIT");
    let busy = match probe {
        Ok(()) => false,
        Err(e)
            if matches!(
                e.sqlite_error_code(),
                Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
            ) =>
        {
            true
        }
        Err(e) => return Err(fail(path, e)),
    };
    drop(conn);
    Ok(busy)
}

/// Creates the empty file `path`, readable and writable by its owner alone on Unix, open for
/// writing; an existing file is refused.
fn create_private_file(path: &Path) -> Result<std::fs::File, BackupError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options.open(path).map_err(|e| fail(path, e))
}

/// Copies the file `source` to `target` (created 0600, replacing nothing: `target` must not
/// exist) and syncs the copy to disk.
pub fn copy_private(source: &Path, target: &Path) -> Result<(), BackupError> {
    let mut to = create_private_file(target)?;
    let mut from = std::fs::File::open(source).map_err(|e| fail(source, e))?;
    std::io::copy(&mut from, &mut to).map_err(|e| fail(target, e))?;
    to.sync_all().map_err(|e| fail(target, e))
}

fn sync_file(path: &Path) -> Result<(), BackupError> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| fail(path, e))
}

/// Syncs the directory `dir`, so that files created or renamed in it survive a crash (a no-op
/// where directories cannot be opened).
pub fn sync_dir(dir: &Path) -> Result<(), BackupError> {
    #[cfg(unix)]
    sync_file(dir)?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_file(dir: &Path) -> PathBuf {
        let path = dir.join("wsp.sqlite3");
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.pragma_update(None, "application_id", crate::APPLICATION_ID)
            .unwrap();
        conn.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1), (2);")
            .unwrap();
        path
    }

    #[test]
    fn a_backup_is_a_checked_private_copy_and_an_open_file_is_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let source = store_file(dir.path());
        let holder = Connection::open(&source).unwrap();
        holder.execute("INSERT INTO t VALUES (3)", []).unwrap();
        assert!(
            in_use(&source).unwrap(),
            "an open connection holds the file"
        );

        let out = tempfile::tempdir().unwrap();
        let target = out.path().join("wsp.sqlite3");
        backup_file(&source, &target).unwrap();
        assert!(backup_file(&source, &target).is_err(), "never overwrites");
        check_file(&target).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&target).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let copy = Connection::open(&target).unwrap();
        let n: i64 = copy
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 3);
        drop(copy);
        assert!(!in_use(&target).unwrap());
        drop(holder);
        assert!(!in_use(&source).unwrap(), "closed: no longer in use");
    }

    #[test]
    fn a_damaged_or_foreign_file_fails_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let foreign = dir.path().join("wsp.sqlite3");
        Connection::open(&foreign)
            .unwrap()
            .execute_batch("CREATE TABLE t(x)")
            .unwrap();
        assert!(
            check_file(&foreign)
                .unwrap_err()
                .reason
                .contains("application_id")
        );
        let junk = dir.path().join("keys.sqlite3");
        std::fs::write(&junk, vec![7u8; 8192]).unwrap();
        assert!(check_file(&junk).is_err());
    }
}
