//! The embedded default wsp workspace store: one SQLite file in WAL mode.
//!
//! **Invariant:** [`SqliteStore`] passes the `wsp-store` backend battery; a write is
//! acknowledged only after its transaction is committed and its WAL frames are synced
//! (`synchronous=FULL`), so acknowledged writes survive `kill -9` (and power loss, as far as the
//! disk honours `fsync`); every statement on workspace data names the owner (`tenant`,
//! `workspace`) in its WHERE clause or key; a row that an open snapshot can see is never pruned,
//! and a row that nothing needs any more (neither history, nor an open snapshot, nor being a
//! path's newest row) is dropped by the transaction that made it so.
//!
//! # Design
//!
//! - **One writer, many readers.** A single read-write connection sits behind a lock (SQLite
//!   admits one writer at a time anyway). A fixed pool of read-only connections serves reads;
//!   in WAL mode each read sees a committed snapshot and never waits for the writer.
//! - **Group commit.** Writes and deletes queue for the writer. Whoever finds no commit in
//!   progress spawns a task that takes the lock and commits what waits, up to 256 changes per
//!   `BEGIN IMMEDIATE` transaction, until nothing waits. Each change runs in a savepoint of its
//!   own (precondition, `maxFiles` counting the changes before it, version bump, change
//!   sequence, pruning and its change-feed entry), so a change that fails is rolled back alone
//!   and never fails its neighbours; one `COMMIT` (one WAL sync) makes the rest durable, and
//!   only then is each caller answered and each change announced. A single writer waits for
//!   nobody: with nothing queued its change commits alone, at once.
//! - **Blocking work off the async threads.** Every call runs its SQLite work in
//!   [`tokio::task::spawn_blocking`], so the store must be used from within a Tokio runtime.
//!   Calls wait for the writer or a free reader asynchronously, so the blocking pool holds at
//!   most one thread per connection.
//! - **Schema.** `owners` (per-owner change sequence `seq` and live-file count); `files` (per
//!   path its newest row and that row's `seq`: live, or tombstoned while an open snapshot may
//!   need the path); `versions` (the rows of each path in commit order, each with the `seq` of
//!   its change: versions with content, and tombstones with `deleted = 1` and no content; a
//!   row is never updated after it is written); `snapshots` (`id`, the `seq` it pins, label,
//!   creation, release and outcome); `events` (the change feed: `seq`, path, version, delete
//!   flag, time). Migrations are a list indexed by SQLite's `user_version`; the header's
//!   `application_id` marks the file as wsp's.
//! - **Snapshots** are one INSERT that reads `owners.seq`: the cost does not depend on how many
//!   files the owner has. A read as of a snapshot at `s` takes, per path, the newest row with
//!   `seq <= s` (one index seek per path); a tombstone there means "absent then". Snapshots live
//!   in the file, so runs survive a restart.
//! - **Pruning** keeps exactly what the reference `MemoryStore` keeps: per path, its newest row,
//!   the newest `max_versions` versions of its live life, and for each open snapshot the row it
//!   sees (a row is seen by the snapshots from its `seq` up to, not including, its successor's).
//!   A write re-checks the rows that left the history window; a delete with no open snapshot
//!   forgets the path entirely (rows and `files` row), otherwise it adds a tombstone row and
//!   keeps of the deleted life only what a snapshot sees; a release re-checks the row the
//!   released snapshot saw of each path changed since it was taken and, when it was the owner's
//!   last open snapshot, forgets tombstoned paths. `get` with a version and `history` serve only
//!   the newest `max_versions` versions of the live life, even when a snapshot keeps older ones.
//! - **Fixed plans.** Every statement is written to be answered through an index (a test checks
//!   each plan), and every connection turns on SQLite's query planner stability guarantee, so a
//!   prepared statement keeps that plan and is never re-prepared for new bound values.
//! - **The change feed** gets one `events` row per write or delete in the change's own
//!   transaction, and keeps the newest [`SqliteOptions::feed_retention`] per owner (older ones
//!   are dropped by a range delete in the same transaction). After each commit the store sends
//!   a [`ChangeNotice`] to the receivers of [`subscribe`](WorkspaceStore::subscribe) on this
//!   store and its clones. Commits that another process makes to the same file are announced
//!   too, within about a quarter of a second, by a watcher that runs while anyone subscribes
//!   (`PRAGMA data_version` on the writer connection; see `watch`).
//! - **Limits** are checked in the write transaction. Lowering `max_versions` between opens
//!   applies to reads at once and frees storage at each path's next write.
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

mod approvals;
pub mod backup;
mod feed;
mod files;
mod idempotency;
mod keys;
mod readers;
mod schema;
mod search;
mod side_file;
mod snapshots;
mod watch;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::broadcast;
use wsp_store::{
    ChangeNotice, ChangePage, CommitObserver, DEFAULT_FEED_RETENTION, Deleted, FileMeta, FileWrite,
    Limits, Precondition, QuotaExceeded, SearchQuery, SearchResults, SnapshotCursor, SnapshotId,
    SnapshotInfo, SnapshotLabel, SnapshotQuota, SnapshotUsage, StoreError, StoreFeatures,
    StoreFuture, StoredFile, WorkspaceStore, check_file_size,
};
use wsp_types::{Owner, WorkspacePath, WorkspacePrefix};

pub use approvals::SqliteApprovals;
pub use idempotency::SqliteIdempotency;
pub use keys::SqliteKeyRegistry;
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};

use readers::ReaderPool;

/// Prepared statements kept per connection: more than the store ever uses.
const STATEMENT_CACHE: usize = 64;

/// Change notices buffered per subscriber; one that lags further loses notices, not changes.
const NOTICE_BUFFER: usize = 1024;

/// Why a database file could not be opened as a wsp store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
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

/// Creates `path` as an empty file that its owner alone may read and write (0600) when nothing
/// is there yet, so that SQLite opens it as a new database and gives the `-wal` and `-shm`
/// files it makes the same mode; the process's umask can only take bits away. A file that
/// already exists keeps its mode. A failure here is left for SQLite's open, which follows and
/// reports it with its usual error.
pub(crate) fn create_private(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path);
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Tuning for [`SqliteStore::open_with`]; [`Default`] suits a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteOptions {
    busy_timeout: Duration,
    readers: usize,
    feed_retention: u64,
    inline_reads: bool,
}

impl Default for SqliteOptions {
    /// A 5 s busy timeout, two read-only connections per available core (at least 4), a
    /// change feed of [`DEFAULT_FEED_RETENTION`] events per owner, and inline point reads.
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Self {
            busy_timeout: Duration::from_secs(5),
            readers: (2 * cores).clamp(4, 64),
            feed_retention: DEFAULT_FEED_RETENTION,
            inline_reads: true,
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

    /// How many of its newest changes each owner's feed retains (at least 1). Older events are
    /// dropped in the write that pushes them out; a reader asking for them learns the oldest
    /// position still retained ([`ChangePage::oldest`]).
    pub fn feed_retention(mut self, events: u64) -> Self {
        self.feed_retention = events.max(1);
        self
    }

    /// Whether the reads of one file or one record (`get`, `history`, `get_at`,
    /// `snapshot_info`, `changes`) run on the calling thread when a read-only connection is
    /// free at once (the default), rather than on Tokio's blocking pool. Such a read costs
    /// microseconds when its pages are cached, less than waking a pool thread and the caller's
    /// task again; it blocks its runtime thread that long, and up to about a millisecond for a
    /// file of several MiB. Listings, whose size grows with the workspace, always go to the
    /// pool. Both paths read the same committed state.
    pub fn inline_reads(mut self, inline: bool) -> Self {
        self.inline_reads = inline;
        self
    }
}

/// What a write transaction enforces.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Policy {
    pub(crate) limits: Limits,
    pub(crate) feed_retention: u64,
}

impl Policy {
    /// Versions retained per path, as stored (at least 1).
    pub(crate) fn keep(&self) -> i64 {
        i64::try_from(self.limits.max_versions.max(1)).unwrap_or(i64::MAX)
    }
}

/// The result of a change applied in a group commit's transaction, with the owner's sequence
/// number it took.
pub(crate) struct Changed<T> {
    pub(crate) value: T,
    pub(crate) seq: u64,
}

/// The most changes one group commit holds; more wait for the next.
const MAX_BATCH: usize = 256;

/// The changes waiting for the next group commit, and whether a task is committing them.
#[derive(Default)]
struct Queue {
    changes: Vec<Box<dyn Pending>>,
    draining: bool,
}

/// A write or delete waiting for a group commit.
trait Pending: Send {
    /// Applies the change in `conn`'s open transaction; `true` when it succeeded (it then
    /// waits for the COMMIT), `false` when it failed (the caller rolls its savepoint back).
    fn apply(&mut self, conn: &Connection, policy: &Policy) -> bool;
    /// Answers the caller once the batch is settled (`committed`: the COMMIT's outcome), and
    /// announces a committed change to the subscribers.
    fn settle(self: Box<Self>, committed: &Result<(), StoreError>, shared: &Shared);
}

/// One caller's change: the work, then its outcome, and where the answer goes.
struct Change<T, F> {
    owner: Owner,
    work: Option<F>,
    outcome: Option<Result<Changed<T>, StoreError>>,
    reply: tokio::sync::oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> Pending for Change<T, F>
where
    T: Send,
    F: FnOnce(&Connection, &Policy) -> Result<Changed<T>, StoreError> + Send,
{
    fn apply(&mut self, conn: &Connection, policy: &Policy) -> bool {
        let outcome = match self.work.take() {
            Some(work) => work(conn, policy),
            None => Err(StoreError::internal("a change was applied twice")),
        };
        let applied = outcome.is_ok();
        self.outcome = Some(outcome);
        applied
    }

    fn settle(self: Box<Self>, committed: &Result<(), StoreError>, shared: &Shared) {
        let answer = match (self.outcome, committed) {
            (Some(Err(refused)), _) => Err(refused),
            // The transaction failed before or after this change: nothing of it stands.
            (_, Err(failed)) => Err(failed.clone()),
            (None, Ok(())) => Err(StoreError::internal("a change was never applied")),
            (Some(Ok(Changed { value, seq })), Ok(())) => {
                // After COMMIT returned and under the writer lock, so notices arrive in
                // sequence order and never announce a change that could still roll back. No
                // receiver is fine: nobody is watching.
                shared
                    .announced
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .own(&self.owner, seq);
                let _ = shared.notices.send(ChangeNotice {
                    owner: self.owner,
                    seq,
                });
                Ok(value)
            }
        };
        // The caller may have stopped waiting; the change stands either way.
        let _ = self.reply.send(answer);
    }
}

/// Commits the waiting changes, a batch at a time, until none waits; holds the writer lock
/// meanwhile. Spawned by the change that found no one committing, so a caller that stops
/// waiting never stops the others' commit.
async fn drain(shared: Arc<Shared>) {
    let mut conn = Arc::clone(&shared.writer).lock_owned().await;
    loop {
        let batch: Vec<Box<dyn Pending>> = {
            let mut queue = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            if queue.changes.is_empty() {
                queue.draining = false;
                return;
            }
            let n = queue.changes.len().min(MAX_BATCH);
            queue.changes.drain(..n).collect()
        };
        let on = Arc::clone(&shared);
        match tokio::task::spawn_blocking(move || {
            commit_batch(&mut conn, batch, &on);
            conn
        })
        .await
        {
            Ok(back) => conn = back,
            // A panic rolled the batch back and dropped its callers' answers (they hear that
            // the writer stopped); the lock was released while unwinding.
            Err(e) if e.is_panic() => conn = Arc::clone(&shared.writer).lock_owned().await,
            // The runtime is shutting down: nothing will commit the rest.
            Err(_) => {
                let mut queue = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
                queue.changes.clear();
                queue.draining = false;
                return;
            }
        }
    }
}

/// Applies `batch` in one immediate transaction, each change in a savepoint of its own (a
/// change that fails is rolled back alone), commits once (`synchronous=FULL`: one WAL sync for
/// all), then answers every caller.
fn commit_batch(conn: &mut Connection, mut batch: Vec<Box<dyn Pending>>, shared: &Shared) {
    let mut applied = 0;
    let outcome = (|| {
        let fail = |e| files::sqlite_error("group commit", e);
        let mut tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(fail)?;
        for change in &mut batch {
            let savepoint = tx.savepoint().map_err(fail)?;
            if change.apply(&savepoint, &shared.policy) {
                savepoint.commit().map_err(fail)?;
                applied += 1;
            }
            // A refused change's savepoint is rolled back as it is dropped.
        }
        let committing = std::time::Instant::now();
        tx.commit().map_err(fail)?;
        Ok(committing.elapsed())
    })();
    if let (Ok(commit_time), Some(observer)) = (&outcome, shared.commits.get())
        && applied > 0
    {
        observer.committed(applied, *commit_time);
    }
    let committed = outcome.map(|_| ());
    for change in batch {
        change.settle(&committed, shared);
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
    policy: Policy,
    /// [`SqliteOptions::inline_reads`].
    inline_reads: bool,
    notices: broadcast::Sender<ChangeNotice>,
    /// What was announced, so the watcher of other processes' commits repeats nothing.
    announced: std::sync::Mutex<watch::Announced>,
    /// The watcher of other processes' commits, while anyone subscribes.
    watcher: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Told of every commit of a write or delete ([`SqliteStore::observe_commits`]).
    commits: std::sync::OnceLock<Arc<dyn CommitObserver>>,
    // Dropped before the writer, so that the writer closes last and its close checkpoints the
    // WAL into the database file and removes it.
    readers: ReaderPool,
    // An async lock: writers queued behind it hold no thread of the blocking pool.
    writer: Arc<tokio::sync::Mutex<Connection>>,
    /// Writes and deletes waiting for the next group commit.
    queue: std::sync::Mutex<Queue>,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.shared.path)
            .field("limits", &self.shared.policy.limits)
            .field("feed_retention", &self.shared.policy.feed_retention)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens the database at `path` with default [`SqliteOptions`], creating the file (not its
    /// directory; readable and writable by its owner alone) and migrating its schema as needed.
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
        create_private(path);
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
                policy: Policy {
                    limits,
                    feed_retention: options.feed_retention,
                },
                inline_reads: options.inline_reads,
                notices: broadcast::channel(NOTICE_BUFFER).0,
                announced: std::sync::Mutex::default(),
                watcher: std::sync::Mutex::default(),
                commits: std::sync::OnceLock::new(),
                readers: ReaderPool::new(readers),
                writer: Arc::new(tokio::sync::Mutex::new(writer)),
                queue: std::sync::Mutex::default(),
            }),
        })
    }

    /// The database file this store was opened on.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Tells `observer` of every commit of a write or delete through this store and its
    /// clones from now on: the changes it held and how long `COMMIT` took (with
    /// `synchronous=FULL`, writing the WAL frames and syncing them to disk). Only the first
    /// observer set is kept; `false` when one was already set.
    pub fn observe_commits(&self, observer: Arc<dyn CommitObserver>) -> bool {
        self.shared.commits.set(observer).is_ok()
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

    /// Runs a read of one file or one record ([`SqliteOptions::inline_reads`]) on the calling
    /// thread when a connection is free at once; otherwise like [`read`](Self::read). A panic in
    /// it is [`StoreError::Internal`], as on the pool.
    fn point_read<T, F>(&self, read: F) -> StoreFuture<'static, T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let permit = if self.shared.inline_reads {
            self.shared.readers.try_permit()
        } else {
            None
        };
        match permit {
            Some(permit) => {
                let shared = &self.shared;
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    shared.readers.with(permit, read)
                }))
                .unwrap_or_else(|_| Err(StoreError::internal("sqlite read panicked")));
                Box::pin(std::future::ready(result))
            }
            None => self.read(read),
        }
    }

    /// Runs `write` on the writer connection, off the async threads.
    fn write<T, F>(&self, write: F) -> StoreFuture<'static, T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &Policy) -> Result<T, StoreError> + Send + 'static,
    {
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let mut conn = Arc::clone(&shared.writer).lock_owned().await;
            // A panic in `write` rolls its transaction back while unwinding, then unlocks.
            blocking(move || write(&mut conn, &shared.policy)).await
        })
    }

    /// Queues `change` for the next group commit and waits for its outcome: it is applied in
    /// the commit's transaction within a savepoint of its own, made durable by the commit's WAL
    /// sync, and then announced to the subscribers of `owner`.
    fn change<T, F>(&self, owner: &Owner, change: F) -> StoreFuture<'static, T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &Policy) -> Result<Changed<T>, StoreError> + Send + 'static,
    {
        let shared = Arc::clone(&self.shared);
        let (reply, answer) = tokio::sync::oneshot::channel();
        let pending = Box::new(Change {
            owner: owner.clone(),
            work: Some(change),
            outcome: None,
            reply,
        });
        Box::pin(async move {
            let lead = {
                let mut queue = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
                queue.changes.push(pending);
                !std::mem::replace(&mut queue.draining, true)
            };
            if lead {
                tokio::spawn(drain(Arc::clone(&shared)));
            }
            answer.await.unwrap_or_else(|_| {
                Err(StoreError::internal(
                    "the change was lost: the store's writer stopped",
                ))
            })
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
        Err(e) if e.is_panic() => Err(StoreError::internal("sqlite store task panicked")),
        Err(_) => Err(StoreError::unavailable("the runtime is shutting down")),
    }
}

impl WorkspaceStore for SqliteStore {
    fn limits(&self) -> Limits {
        self.shared.policy.limits
    }

    fn features(&self) -> StoreFeatures {
        StoreFeatures::ALL
    }

    fn ready(&self) -> StoreFuture<'_, ()> {
        // The writer answers (not wedged behind a stuck write) and the file is still writable:
        // `BEGIN IMMEDIATE` takes the write lock without changing anything.
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let wait = std::time::Duration::from_secs(2);
            let conn = tokio::time::timeout(wait, Arc::clone(&shared.writer).lock_owned())
                .await
                .map_err(|_| StoreError::unavailable("the sqlite writer is busy"))?;
            blocking(move || {
                conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK;")
                    .map_err(|e| StoreError::unavailable(format!("sqlite is not writable: {e}")))
            })
            .await
        })
    }

    fn list<'a>(
        &'a self,
        owner: &'a Owner,
        prefix: &'a WorkspacePrefix,
    ) -> StoreFuture<'a, Vec<FileMeta>> {
        let (owner, prefix) = (owner.clone(), prefix.clone());
        self.read(move |conn| files::list(conn, &owner, &prefix))
    }

    fn search<'a>(
        &'a self,
        owner: &'a Owner,
        query: &'a SearchQuery,
    ) -> StoreFuture<'a, SearchResults> {
        let (owner, query) = (owner.clone(), query.clone());
        self.read(move |conn| search::run(conn, &owner, &query))
    }

    fn get<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        version: Option<u64>,
    ) -> StoreFuture<'a, StoredFile> {
        let (owner, path) = (owner.clone(), path.clone());
        let keep = self.shared.policy.keep();
        self.point_read(move |conn| files::get(conn, &owner, &path, version, keep))
    }

    fn put<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        write: FileWrite,
        precondition: Precondition,
    ) -> StoreFuture<'a, StoredFile> {
        if let Err(e) = check_file_size(&self.shared.policy.limits, &write) {
            return Box::pin(std::future::ready(Err(e)));
        }
        let (o, path) = (owner.clone(), path.clone());
        self.change(owner, move |conn, policy| {
            files::put(conn, policy, &o, &path, write, &precondition)
        })
    }

    fn delete<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        precondition: Precondition,
    ) -> StoreFuture<'a, Deleted> {
        let (o, path) = (owner.clone(), path.clone());
        self.change(owner, move |conn, policy| {
            files::delete(conn, policy, &o, &path, &precondition)
        })
    }

    fn history<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
    ) -> StoreFuture<'a, Vec<FileMeta>> {
        let (owner, path) = (owner.clone(), path.clone());
        let keep = self.shared.policy.keep();
        self.point_read(move |conn| files::history(conn, &owner, &path, keep))
    }

    fn snapshot<'a>(
        &'a self,
        owner: &'a Owner,
        label: &'a SnapshotLabel,
    ) -> StoreFuture<'a, SnapshotInfo> {
        let (owner, label) = (owner.clone(), label.clone());
        self.write(move |conn, _| snapshots::take(conn, &owner, &label))
    }

    fn snapshot_usage<'a>(&'a self, owner: &'a Owner) -> StoreFuture<'a, SnapshotUsage> {
        let owner = owner.clone();
        let keep = self.shared.policy.keep();
        self.read(move |conn| snapshots::usage(conn, &owner, keep))
    }

    fn snapshot_within<'a>(
        &'a self,
        owner: &'a Owner,
        label: &'a SnapshotLabel,
        quota: SnapshotQuota,
    ) -> StoreFuture<'a, Result<SnapshotInfo, QuotaExceeded>> {
        let (owner, label) = (owner.clone(), label.clone());
        self.write(move |conn, policy| {
            snapshots::take_within(conn, policy.keep(), &owner, &label, quota)
        })
    }

    fn snapshot_info<'a>(
        &'a self,
        owner: &'a Owner,
        id: &'a SnapshotId,
    ) -> StoreFuture<'a, SnapshotInfo> {
        let (owner, id) = (owner.clone(), id.clone());
        self.point_read(move |conn| snapshots::info(conn, &owner, &id))
    }

    fn list_snapshots<'a>(
        &'a self,
        owner: &'a Owner,
        after: Option<&'a SnapshotCursor>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<SnapshotInfo>> {
        let (owner, after) = (owner.clone(), after.cloned());
        self.read(move |conn| snapshots::list(conn, &owner, after.as_ref(), limit))
    }

    fn release_snapshot<'a>(
        &'a self,
        owner: &'a Owner,
        id: &'a SnapshotId,
        outcome: &'a str,
    ) -> StoreFuture<'a, SnapshotInfo> {
        let (owner, id, outcome) = (owner.clone(), id.clone(), outcome.to_owned());
        self.write(move |conn, policy| {
            snapshots::release(conn, policy.keep(), &owner, &id, &outcome)
        })
    }

    fn open_snapshots_before<'a>(
        &'a self,
        cutoff: chrono::DateTime<chrono::Utc>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<(Owner, SnapshotInfo)>> {
        self.read(move |conn| snapshots::open_before(conn, cutoff, limit))
    }

    fn count_open_snapshots(&self) -> StoreFuture<'_, u64> {
        self.read(snapshots::count_open)
    }

    fn forget_released_snapshots<'a>(
        &'a self,
        cutoff: chrono::DateTime<chrono::Utc>,
        limit: usize,
    ) -> StoreFuture<'a, usize> {
        self.write(move |conn, _| snapshots::forget_released(conn, cutoff, limit))
    }

    fn list_at<'a>(
        &'a self,
        owner: &'a Owner,
        snapshot: &'a SnapshotId,
        prefix: &'a WorkspacePrefix,
    ) -> StoreFuture<'a, Vec<FileMeta>> {
        let (owner, id, prefix) = (owner.clone(), snapshot.clone(), prefix.clone());
        self.read(move |conn| snapshots::list_at(conn, &owner, &id, &prefix))
    }

    fn get_at<'a>(
        &'a self,
        owner: &'a Owner,
        snapshot: &'a SnapshotId,
        path: &'a WorkspacePath,
    ) -> StoreFuture<'a, StoredFile> {
        let (owner, id, path) = (owner.clone(), snapshot.clone(), path.clone());
        self.point_read(move |conn| snapshots::get_at(conn, &owner, &id, &path))
    }

    fn changes<'a>(
        &'a self,
        owner: &'a Owner,
        after: u64,
        limit: usize,
    ) -> StoreFuture<'a, ChangePage> {
        let owner = owner.clone();
        self.point_read(move |conn| feed::changes(conn, &owner, after, limit))
    }

    /// Notices of the changes committed through this store and its clones at once, and of
    /// those another process (or another [`SqliteStore`] on the same file) commits within about
    /// a quarter of a second: while anyone subscribes, a watcher checks the file for commits it
    /// did not make (`PRAGMA data_version`).
    fn subscribe(&self) -> Option<broadcast::Receiver<ChangeNotice>> {
        let rx = self.shared.notices.subscribe();
        watch::ensure_watching(&self.shared);
        Some(rx)
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn a_panic_in_blocking_work_is_an_internal_error() {
        let result: Result<(), StoreError> = blocking(|| panic!("boom")).await;
        assert_eq!(
            result,
            Err(StoreError::internal("sqlite store task panicked"))
        );
    }

    #[test]
    fn options_keep_at_least_one_reader() {
        assert_eq!(SqliteOptions::default().readers(0).readers, 1);
        assert!(SqliteOptions::default().readers >= 4);
        assert_eq!(SqliteOptions::default().feed_retention(0).feed_retention, 1);
    }

    /// What the writer connection does while `work` runs: rows it changes, and virtual-machine
    /// instructions it executes over every statement (counted by a progress handler that fires
    /// at each instruction).
    async fn writer_cost<F: Future<Output = ()>>(store: &SqliteStore, work: F) -> (u64, u64) {
        let steps = Arc::new(AtomicU64::new(0));
        let changes_before = {
            let mut conn = store.shared.writer.lock().await;
            let counter = Arc::clone(&steps);
            conn.progress_handler(
                1,
                Some(move || {
                    counter.fetch_add(1, Ordering::Relaxed);
                    false
                }),
            )
            .unwrap();
            conn.total_changes()
        };
        work.await;
        let mut conn = store.shared.writer.lock().await;
        conn.progress_handler(0, None::<fn() -> bool>).unwrap();
        (
            conn.total_changes() - changes_before,
            steps.load(Ordering::Relaxed),
        )
    }

    async fn fill(store: &SqliteStore, owner: &Owner, from: usize, to: usize) {
        for i in from..to {
            let path = WorkspacePath::parse(&format!("knowledge/{i:05}.md")).unwrap();
            let write = FileWrite::markdown(format!("file {i}"));
            store
                .put(owner, &path, write, Precondition::None)
                .await
                .unwrap();
        }
    }

    /// Taking a snapshot does the same work for 10 files as for 1,000 (and with other owners'
    /// files, history and older snapshots around): one row written, the same instructions.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_cost_of_a_snapshot_does_not_grow_with_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("wsp.sqlite3"), Limits::default()).unwrap();
        let (a, b) = (
            Owner::parse("a", "w").unwrap(),
            Owner::parse("b", "w").unwrap(),
        );
        let snapshot = |owner: &Owner| {
            let (store, owner) = (store.clone(), owner.clone());
            async move {
                store.snapshot(&owner, &"run".into()).await.unwrap();
            }
        };
        // The instrument sees row work: counting an owner's files costs more with more files.
        let count_files = |store: &SqliteStore| {
            let store = store.clone();
            async move {
                let conn = store.shared.writer.lock().await;
                let _: i64 = conn
                    .query_row("SELECT count(*) FROM files WHERE tenant = 'a'", [], |r| {
                        r.get(0)
                    })
                    .unwrap();
            }
        };

        fill(&store, &a, 0, 10).await;
        let small = writer_cost(&store, snapshot(&a)).await;
        let count_small = writer_cost(&store, count_files(&store)).await;

        fill(&store, &a, 10, 1_000).await;
        fill(&store, &b, 0, 500).await;
        for _ in 0..3 {
            fill(&store, &a, 0, 100).await;
        }
        let large = writer_cost(&store, snapshot(&a)).await;
        let count_large = writer_cost(&store, count_files(&store)).await;

        assert_eq!(small.0, 1, "a snapshot writes exactly one row");
        assert_eq!(
            large, small,
            "(rows changed, VM instructions) at 1,000 vs 10 files"
        );
        assert!(small.1 > 0, "the progress handler counts");
        assert!(
            count_large.1 > 10 * count_small.1,
            "counting files: {count_small:?} at 10, {count_large:?} at 1,000"
        );
        // An owner that never wrote anything costs no more (its sequence number is absent).
        let c = Owner::parse("c", "w").unwrap();
        let empty = writer_cost(&store, snapshot(&c)).await;
        assert!(empty.0 == 1 && empty.1 <= small.1, "{empty:?} vs {small:?}");
    }

    /// Records the changes of each commit.
    #[derive(Default)]
    struct Commits(std::sync::Mutex<Vec<usize>>);

    impl CommitObserver for Commits {
        fn committed(&self, changes: usize, _: Duration) {
            self.0.lock().unwrap().push(changes);
        }
    }

    /// Writes that arrive while the writer is busy are made durable by one commit, and each
    /// keeps its own outcome: a failed precondition or a limit refuses that write alone, a
    /// write sees the ones before it in the batch (the file count), and each success gets its
    /// own version, sequence number and change-feed entry, in order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_waiting_for_the_writer_share_one_commit_and_keep_their_outcomes() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits::default().with_max_files(40);
        let store = SqliteStore::open(&dir.path().join("wsp.sqlite3"), limits).unwrap();
        let commits = Arc::new(Commits::default());
        assert!(store.observe_commits(commits.clone()));
        let owner = Owner::parse("a", "w").unwrap();
        let shared = WorkspacePath::parse("shared.md").unwrap();
        let first = store
            .put(
                &owner,
                &shared,
                FileWrite::markdown("v1"),
                Precondition::None,
            )
            .await
            .unwrap();
        let stale = Precondition::IfMatch(vec![wsp_types::ETag::mint(1, 99)]);
        let fresh = Precondition::IfMatch(vec![first.meta.etag.clone()]);

        // The writer is busy: 64 writes queue up behind it.
        let busy = store.shared.writer.lock().await;
        let mut writes = Vec::new();
        for i in 0..64usize {
            let (writer, owner) = (store.clone(), owner.clone());
            let (path, precondition) = match i {
                0 => (shared.clone(), fresh.clone()),
                i if i % 8 == 1 => (shared.clone(), stale.clone()),
                i => (
                    WorkspacePath::parse(&format!("f{i:02}.md")).unwrap(),
                    Precondition::IfNoneMatchAny,
                ),
            };
            writes.push(tokio::spawn(async move {
                let write = FileWrite::markdown(format!("w{i}"));
                writer.put(&owner, &path, write, precondition).await
            }));
            // In submission order, so that the batch's order is known.
            while store_queued(&store) < i + 1 {
                tokio::task::yield_now().await;
            }
        }
        drop(busy);
        let mut outcomes = Vec::new();
        for w in writes {
            outcomes.push(w.await.unwrap());
        }

        assert_eq!(outcomes[0].as_ref().map(|f| f.meta.version), Ok(2));
        let mut created = 0;
        for (i, outcome) in outcomes.iter().enumerate().skip(1) {
            match outcome {
                Err(StoreError::Conflict { current_version: 2 }) if i % 8 == 1 => {}
                Ok(f) if i % 8 != 1 && created < 39 => {
                    created += 1;
                    assert_eq!(
                        (f.meta.version, f.content.as_str()),
                        (1, format!("w{i}").as_str())
                    );
                }
                Err(StoreError::TooLarge { .. }) if i % 8 != 1 && created == 39 => {}
                other => panic!("write {i}: {other:?} ({created} created before it)"),
            }
        }
        assert_eq!(
            created, 39,
            "the file limit counts the batch's own creations"
        );
        assert_eq!(
            *commits.0.lock().unwrap(),
            [1, 40],
            "one commit for the batch"
        );
        let feed = store.changes(&owner, 1, 100).await.unwrap();
        let seqs: Vec<u64> = feed.events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (2..=41).collect::<Vec<_>>());
        assert_eq!(feed.events[0].path, shared);
        assert_eq!(
            store.get(&owner, &shared, None).await.unwrap().content,
            "w0"
        );
    }

    /// A read that starts after a write was acknowledged sees it (or something newer): through
    /// the same store, inline or on the blocking pool, and through another store on the same
    /// file (as another process would), with no delay: there is no cache to go stale.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_read_after_an_acknowledged_write_never_sees_an_older_version() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("wsp.sqlite3");
        let store = SqliteStore::open(&file, Limits::default()).unwrap();
        let pooled = SqliteStore::open_with(
            &file,
            Limits::default(),
            SqliteOptions::default().inline_reads(false),
        )
        .unwrap();
        let owner = Owner::parse("a", "w").unwrap();
        let path = WorkspacePath::parse("hot.md").unwrap();
        let mut readers = Vec::new();
        for reader in [store.clone(), pooled.clone(), store.clone()] {
            let (owner, path) = (owner.clone(), path.clone());
            readers.push(tokio::spawn(async move {
                for _ in 0..200 {
                    let _ = reader.get(&owner, &path, None).await;
                    tokio::task::yield_now().await;
                }
            }));
        }
        for n in 1..=200u64 {
            let writer = if n % 2 == 0 { &store } else { &pooled };
            let put = writer
                .put(
                    &owner,
                    &path,
                    FileWrite::markdown(format!("{n}")),
                    Precondition::None,
                )
                .await
                .unwrap();
            assert_eq!(put.meta.version, n);
            for reader in [&store, &pooled] {
                let read = reader.get(&owner, &path, None).await.unwrap();
                assert!(
                    read.meta.version >= n,
                    "v{} read after v{n}",
                    read.meta.version
                );
                let history = reader.history(&owner, &path).await.unwrap();
                assert!(history[0].version >= n);
            }
        }
        for r in readers {
            r.await.unwrap();
        }
    }

    /// How many changes wait for the next group commit.
    fn store_queued(store: &SqliteStore) -> usize {
        store.shared.queue.lock().unwrap().changes.len()
    }

    /// Every statement keeps the plan it was prepared with: running a mixed workload, with new
    /// values bound each time, never makes SQLite prepare a statement again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn statements_are_prepared_once() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits::default().with_max_versions(2);
        let store = SqliteStore::open(&dir.path().join("wsp.sqlite3"), limits).unwrap();
        let a = Owner::parse("a", "w").unwrap();
        let all = WorkspacePrefix::all();
        let mut open = Vec::new();
        for i in 0..120u32 {
            let path = WorkspacePath::parse(&format!("p{}.md", i % 5)).unwrap();
            if i % 4 == 3 {
                let _ = store.delete(&a, &path, Precondition::None).await;
            } else {
                let write = FileWrite::markdown(format!("{i}"));
                store
                    .put(&a, &path, write, Precondition::None)
                    .await
                    .unwrap();
            }
            if i % 7 == 0 {
                open.push(store.snapshot(&a, &"run".into()).await.unwrap().id);
            }
            if i % 9 == 0 && open.len() > 2 {
                let id = open.remove(0);
                store.release_snapshot(&a, &id, "done").await.unwrap();
            }
        }
        while let Some(id) = open.pop() {
            store.release_snapshot(&a, &id, "done").await.unwrap();
        }
        // The reads, on the writer connection so that one statement cache holds everything.
        let conn = store.shared.writer.lock().await;
        let first = snapshots::take(&conn, &a, &"reads".into()).unwrap();
        for i in 0..5 {
            let path = WorkspacePath::parse(&format!("p{i}.md")).unwrap();
            let prefix = WorkspacePrefix::parse(&format!("p{i}")).unwrap();
            let _ = files::get(&conn, &a, &path, Some(i), 2);
            let _ = files::history(&conn, &a, &path, 2 + i as i64);
            files::list(&conn, &a, &prefix).unwrap();
            files::list(&conn, &a, &all).unwrap();
            let snap = snapshots::take(&conn, &a, &"reads".into()).unwrap();
            for id in [&first.id, &snap.id] {
                snapshots::list_at(&conn, &a, id, &prefix).unwrap();
                snapshots::list_at(&conn, &a, id, &all).unwrap();
                let _ = snapshots::get_at(&conn, &a, id, &path);
                snapshots::info(&conn, &a, id).unwrap();
            }
            feed::changes(&conn, &a, i, 10).unwrap();
        }
        let statements = files::STATEMENTS
            .iter()
            .chain(feed::STATEMENTS)
            .chain(snapshots::STATEMENTS);
        for sql in statements {
            let stmt = conn.prepare_cached(sql).unwrap();
            let runs = stmt.get_status(rusqlite::StatementStatus::Run);
            let again = stmt.get_status(rusqlite::StatementStatus::RePrepare);
            assert_eq!(again, 0, "re-prepared {again} times in {runs} runs: {sql}");
        }
    }
}
