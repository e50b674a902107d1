//! The embedded default wsp workspace store: one SQLite file in WAL mode.
//!
//! **Invariant:** [`SqliteStore`] passes the `wsp-store` backend battery; a write is
//! acknowledged only after its transaction is committed and its WAL frames are synced
//! (`synchronous=FULL`), so acknowledged writes survive `kill -9` (and power loss, as far as the
//! disk honours `fsync`); every statement on workspace data names the owner (`tenant`,
//! `workspace`) in its WHERE clause or key.
//!
//! # Design
//!
//! - **One writer, many readers.** A single read-write connection sits behind a lock (SQLite
//!   admits one writer at a time anyway) and runs every write as one `BEGIN IMMEDIATE`
//!   transaction: precondition, `maxFiles`, version bump, change sequence and history pruning
//!   commit together. A fixed pool of read-only connections serves reads; in WAL mode each read
//!   sees a committed snapshot and never waits for the writer.
//! - **Blocking work off the async threads.** Every call runs its SQLite work in
//!   [`tokio::task::spawn_blocking`], so the store must be used from within a Tokio runtime.
//!   Calls wait for the writer or a free reader asynchronously, so the blocking pool holds at
//!   most one thread per connection.
//! - **Schema.** `owners` (per-owner change sequence and live-file count), `files` (the current
//!   state of each path: live or tombstoned, with the sequence number of its last change) and
//!   `versions` (retained versions with content). Migrations are a list indexed by SQLite's
//!   `user_version`; the header's `application_id` marks the file as wsp's.
//! - **Deletes** tombstone the path in `files` and drop all its stored versions in the same
//!   transaction, so no earlier life is ever stored, let alone served.
//! - **Limits** are checked in the write transaction. Lowering `max_versions` between opens
//!   prunes each path at its next write.
//!
//! ```
//! use wsp_store::{FileWrite, Limits, Precondition, WorkspaceStore};
//! use wsp_store_sqlite::SqliteStore;
//! use wsp_types::{Owner, WorkspacePath};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! let store = SqliteStore::open(&dir.path().join("wsp.sqlite3"), Limits::default())?;
//! let owner = Owner::parse("acme", "main")?;
//! let path = WorkspacePath::parse("notes/plan.md")?;
//! let written = store
//!     .put(&owner, &path, FileWrite::markdown("# Plan"), Precondition::IfNoneMatchAny)
//!     .await?;
//! assert_eq!(written.meta.version, 1);
//! assert_eq!(store.get(&owner, &path, None).await?, written);
//! # Ok(())
//! # }
//! ```

pub mod approvals;
mod files;
pub mod keys;
mod readers;
mod schema;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;
use wsp_store::{
    Deleted, FileMeta, FileWrite, Limits, Precondition, StoreError, StoreFuture, StoredFile,
    WorkspaceStore, check_file_size,
};
use wsp_types::{Owner, WorkspacePath, WorkspacePrefix};

pub use schema::{APPLICATION_ID, SCHEMA_VERSION};

use readers::ReaderPool;

/// Prepared statements kept per connection: more than the store ever uses.
const STATEMENT_CACHE: usize = 32;

/// Why a database file could not be opened as a wsp store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// The directory that should hold the file does not exist (it is not created for you).
    #[error(
        "cannot open the wsp database {}: the directory {} does not exist",
        path.display(),
        directory.display()
    )]
    MissingDirectory {
        /// The database file asked for.
        path: PathBuf,
        /// Its missing directory.
        directory: PathBuf,
    },
    /// The file cannot be opened or created for writing.
    #[error("cannot open the wsp database {}: {reason}", path.display())]
    CannotOpen {
        /// The database file asked for.
        path: PathBuf,
        /// Why, in words.
        reason: String,
    },
    /// The file exists but is not a wsp database; it was left untouched.
    #[error("{} is not a wsp database: {reason}", path.display())]
    NotAWspDatabase {
        /// The file.
        path: PathBuf,
        /// What it is instead, in words.
        reason: String,
    },
    /// The file was written by a newer wsp whose schema this build does not know.
    #[error(
        "the wsp database {} has schema version {found}, newer than version {supported} that \
         this build understands; upgrade wsp to open it",
        path.display()
    )]
    TooNew {
        /// The file.
        path: PathBuf,
        /// Its schema version (`user_version`).
        found: i64,
        /// The newest schema version this build knows ([`SCHEMA_VERSION`]).
        supported: i64,
    },
    /// Configuring the connection or migrating the schema failed.
    #[error("cannot prepare the wsp database {}: {reason}", path.display())]
    Setup {
        /// The file.
        path: PathBuf,
        /// Why, in words.
        reason: String,
    },
}

/// Tuning for [`SqliteStore::open_with`]; [`Default`] suits a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteOptions {
    busy_timeout: Duration,
    readers: usize,
}

impl Default for SqliteOptions {
    /// A 5 s busy timeout and two read-only connections per available core (at least 4).
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Self {
            busy_timeout: Duration::from_secs(5),
            readers: (2 * cores).clamp(4, 64),
        }
    }
}

impl SqliteOptions {
    /// How long a statement waits for a lock held by another connection or process before the
    /// call fails with [`StoreError::Unavailable`].
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// How many read-only connections serve reads concurrently (at least 1); a read that finds
    /// them all busy waits for one.
    pub fn readers(mut self, readers: usize) -> Self {
        self.readers = readers.max(1);
        self
    }
}

/// A [`WorkspaceStore`] in one SQLite database file.
///
/// Cloning is cheap and shares the connections. Calls must be made from within a Tokio runtime
/// (they use [`tokio::task::spawn_blocking`]).
#[derive(Clone)]
pub struct SqliteStore {
    shared: Arc<Shared>,
}

struct Shared {
    path: PathBuf,
    limits: Limits,
    // Dropped before the writer, so that the writer closes last and its close checkpoints the
    // WAL into the database file and removes it.
    readers: ReaderPool,
    // An async lock: writers queued behind it hold no thread of the blocking pool.
    writer: Arc<tokio::sync::Mutex<Connection>>,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.shared.path)
            .field("limits", &self.shared.limits)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens the database at `path` with default [`SqliteOptions`], creating the file (not its
    /// directory) and migrating its schema as needed.
    ///
    /// Refuses a file that is not a wsp database or has a newer schema, leaving it untouched.
    /// Opening does blocking file I/O: call it at startup, or from a blocking task.
    pub fn open(path: &Path, limits: Limits) -> Result<Self, OpenError> {
        Self::open_with(path, limits, SqliteOptions::default())
    }

    /// Like [`open`](Self::open), with explicit options.
    pub fn open_with(
        path: &Path,
        limits: Limits,
        options: SqliteOptions,
    ) -> Result<Self, OpenError> {
        let writer = schema::open_writer(path, options.busy_timeout)?;
        writer.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        let readers = (0..options.readers)
            .map(|_| {
                let conn = schema::open_reader(path, options.busy_timeout)?;
                conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
                Ok(conn)
            })
            .collect::<Result<Vec<_>, OpenError>>()?;
        Ok(Self {
            shared: Arc::new(Shared {
                path: path.to_owned(),
                limits,
                readers: ReaderPool::new(readers),
                writer: Arc::new(tokio::sync::Mutex::new(writer)),
            }),
        })
    }

    /// The database file this store was opened on.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Runs `read` on a pooled read-only connection, off the async threads.
    fn read<T, F>(&self, read: F) -> StoreFuture<'static, T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let permit = shared.readers.permit().await?;
            blocking(move || shared.readers.with(permit, read)).await
        })
    }

    /// Runs `write` on the writer connection, off the async threads.
    fn write<T, F>(&self, write: F) -> StoreFuture<'static, T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &Limits) -> Result<T, StoreError> + Send + 'static,
    {
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let mut conn = Arc::clone(&shared.writer).lock_owned().await;
            // A panic in `write` rolls its transaction back while unwinding, then unlocks.
            blocking(move || write(&mut conn, &shared.limits)).await
        })
    }
}

/// Runs `work` on Tokio's blocking pool; a panic in it becomes [`StoreError::Internal`].
async fn blocking<T, F>(work: F) -> Result<T, StoreError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, StoreError> + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(e) if e.is_panic() => Err(StoreError::Internal(
            "sqlite store task panicked".to_owned(),
        )),
        Err(_) => Err(StoreError::Unavailable(
            "the runtime is shutting down".to_owned(),
        )),
    }
}

impl WorkspaceStore for SqliteStore {
    fn limits(&self) -> Limits {
        self.shared.limits
    }

    fn list<'a>(
        &'a self,
        owner: &'a Owner,
        prefix: &'a WorkspacePrefix,
    ) -> StoreFuture<'a, Vec<FileMeta>> {
        let (owner, prefix) = (owner.clone(), prefix.clone());
        self.read(move |conn| files::list(conn, &owner, &prefix))
    }

    fn get<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        version: Option<u64>,
    ) -> StoreFuture<'a, StoredFile> {
        let (owner, path) = (owner.clone(), path.clone());
        self.read(move |conn| files::get(conn, &owner, &path, version))
    }

    fn put<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        write: FileWrite,
        precondition: Precondition,
    ) -> StoreFuture<'a, StoredFile> {
        if let Err(e) = check_file_size(&self.shared.limits, &write) {
            return Box::pin(std::future::ready(Err(e)));
        }
        let (owner, path) = (owner.clone(), path.clone());
        self.write(move |conn, limits| {
            files::put(conn, limits, &owner, &path, write, &precondition)
        })
    }

    fn delete<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        precondition: Precondition,
    ) -> StoreFuture<'a, Deleted> {
        let (owner, path) = (owner.clone(), path.clone());
        self.write(move |conn, _| files::delete(conn, &owner, &path, &precondition))
    }

    fn history<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
    ) -> StoreFuture<'a, Vec<FileMeta>> {
        let (owner, path) = (owner.clone(), path.clone());
        self.read(move |conn| files::history(conn, &owner, &path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn a_panic_in_blocking_work_is_an_internal_error() {
        let result: Result<(), StoreError> = blocking(|| panic!("boom")).await;
        assert_eq!(
            result,
            Err(StoreError::Internal("sqlite store task panicked".into()))
        );
    }

    #[test]
    fn options_keep_at_least_one_reader() {
        assert_eq!(SqliteOptions::default().readers(0).readers, 1);
        assert!(SqliteOptions::default().readers >= 4);
    }
}
