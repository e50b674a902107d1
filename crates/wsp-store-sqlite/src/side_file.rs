//! A small SQLite side file (keys, approvals) shared by `wsp serve` and the `wsp` CLI: one
//! connection, used on the blocking pool.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, TransactionBehavior};
use wsp_store::{StoreError, StoreFuture};

use crate::OpenError;

/// One connection to a side file, opened in WAL mode with `synchronous=FULL` and its
/// migrations applied.
#[derive(Clone)]
pub(crate) struct SideFile {
    conn: Arc<Mutex<Connection>>,
    /// Prefix of internal error messages (`keys`, `approvals`).
    what: &'static str,
}

impl SideFile {
    /// Opens (creating if needed) the file at `path` and applies the pending `migrations`.
    ///
    /// The file's schema version is SQLite's `user_version`; `migrations[n]` takes a file from
    /// version `n` to `n + 1`, in one immediate transaction (so two processes opening a new
    /// file at once migrate it exactly once). A file of a newer build is refused.
    pub(crate) fn open(
        path: &Path,
        migrations: &[&str],
        what: &'static str,
    ) -> Result<Self, OpenError> {
        let mut conn = Connection::open(path).map_err(|e| OpenError::CannotOpen {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        let setup = |e: rusqlite::Error| OpenError::Setup {
            path: path.to_owned(),
            reason: e.to_string(),
        };
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .and_then(|_| conn.pragma_update(None, "journal_mode", "WAL"))
            .and_then(|_| conn.pragma_update(None, "synchronous", "FULL"))
            .map_err(setup)?;
        migrate(path, &mut conn, migrations)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            what,
        })
    }

    /// An internal error about this file (never quoting stored values).
    pub(crate) fn internal(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError::internal(format!("{}: {e}", self.what))
    }

    /// Runs `f` with the connection on the blocking pool.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'_, T> {
        let conn = self.conn.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let conn = conn.lock().unwrap_or_else(|e| e.into_inner());
                f(&conn)
            })
            .await
            .map_err(|e| self.internal(e))?
        })
    }
}

/// Applies the migrations a side file has not applied yet (see [`SideFile::open`]).
fn migrate(path: &Path, conn: &mut Connection, migrations: &[&str]) -> Result<(), OpenError> {
    let setup = |e: rusqlite::Error| OpenError::Setup {
        path: path.to_owned(),
        reason: e.to_string(),
    };
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(setup)?;
    let from: i64 = tx
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(setup)?;
    let supported = migrations.len() as i64;
    if from > supported {
        return Err(OpenError::TooNew {
            path: path.to_owned(),
            found: from,
            supported,
        });
    }
    for (index, sql) in migrations.iter().enumerate().skip(from.max(0) as usize) {
        tx.execute_batch(sql).map_err(|e| OpenError::Setup {
            path: path.to_owned(),
            reason: format!("migration to schema version {} failed: {e}", index + 1),
        })?;
    }
    if from != supported {
        tx.pragma_update(None, "user_version", supported)
            .map_err(setup)?;
    }
    tx.commit().map_err(setup)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIGRATIONS: &[&str] = &[
        "CREATE TABLE IF NOT EXISTS t (x INTEGER) STRICT;",
        "ALTER TABLE t ADD COLUMN y INTEGER;",
    ];

    fn version(path: &Path) -> i64 {
        Connection::open(path)
            .unwrap()
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap()
    }

    #[test]
    fn a_new_file_gets_every_migration_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("side.sqlite3");
        SideFile::open(&path, MIGRATIONS, "test").unwrap();
        assert_eq!(version(&path), 2);
        // Opening again applies nothing (the ALTER would fail a second time).
        SideFile::open(&path, MIGRATIONS, "test").unwrap();
        assert_eq!(version(&path), 2);
    }

    #[test]
    fn a_file_from_before_versioning_adopts_version_one_and_keeps_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("side.sqlite3");
        let old = Connection::open(&path).unwrap();
        old.execute_batch(MIGRATIONS[0]).unwrap();
        old.execute("INSERT INTO t (x) VALUES (7)", []).unwrap();
        drop(old);
        SideFile::open(&path, MIGRATIONS, "test").unwrap();
        assert_eq!(version(&path), 2);
        let kept: (i64, Option<i64>) = Connection::open(&path)
            .unwrap()
            .query_row("SELECT x, y FROM t", [], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap();
        assert_eq!(kept, (7, None));
    }

    #[test]
    fn a_file_of_a_newer_build_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("side.sqlite3");
        SideFile::open(&path, MIGRATIONS, "test").unwrap();
        let refused = SideFile::open(&path, &MIGRATIONS[..1], "test").map(|_| ());
        assert!(
            matches!(
                refused,
                Err(OpenError::TooNew {
                    found: 2,
                    supported: 1,
                    ..
                })
            ),
            "{refused:?}"
        );
    }
}
