//! A small SQLite side file (keys, approvals) shared by `wsp serve` and the `wsp` CLI: one
//! connection, used on the blocking pool.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;
use wsp_store::{StoreError, StoreFuture};

use crate::OpenError;

/// One connection to a side file, opened in WAL mode with `synchronous=FULL` and `schema`
/// applied (`CREATE TABLE IF NOT EXISTS ...`).
#[derive(Clone)]
pub(crate) struct SideFile {
    conn: Arc<Mutex<Connection>>,
    /// Prefix of internal error messages (`keys`, `approvals`).
    what: &'static str,
}

impl SideFile {
    /// Opens (creating if needed) the file at `path`.
    pub(crate) fn open(path: &Path, schema: &str, what: &'static str) -> Result<Self, OpenError> {
        let conn = Connection::open(path).map_err(|e| OpenError::CannotOpen {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .and_then(|_| conn.pragma_update(None, "journal_mode", "WAL"))
            .and_then(|_| conn.pragma_update(None, "synchronous", "FULL"))
            .and_then(|_| conn.execute_batch(schema))
            .map_err(|e| OpenError::Setup {
                path: path.to_owned(),
                reason: e.to_string(),
            })?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            what,
        })
    }

    /// An internal error about this file (never quoting stored values).
    pub(crate) fn internal(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError::Internal(format!("{}: {e}", self.what))
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
