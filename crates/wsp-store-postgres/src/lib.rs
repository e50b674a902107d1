//! The scale-out wsp workspace store: any number of stateless replicas sharing one PostgreSQL.
//!
//! **Invariant:** [`PgStore`] passes the `wsp-store` backend battery, also with its calls spread
//! over several stores (replicas) on one database; a replica keeps no workspace state in its
//! memory (every answer is read from PostgreSQL and every mutation is one committed transaction,
//! so a replica may die at any moment and lose nothing it acknowledged); every statement on
//! workspace data names the owner (`tenant`, `workspace`) in its WHERE clause or key.
//!
//! # Design
//!
//! - **Connections.** A [`deadpool_postgres`] pool of `tokio-postgres` connections, sized and
//!   timed by [`PgOptions`]. TLS (rustls) follows libpq's `sslmode` in the connection URL:
//!   `disable`, `prefer` (the default), `require` (encrypted, the certificate not checked),
//!   `verify-ca` and `verify-full` (checked against the system's CA certificates, or those of
//!   `sslrootcert=FILE`); the listening connection uses the same settings.
//!   Statements are prepared once per connection and cached. A connection that breaks is
//!   dropped from the pool and replaced on demand, so the store recovers by itself when the
//!   database comes back.
//! - **Writes.** Each write or delete is one READ COMMITTED transaction that locks the owner's
//!   row, then the path's row, and holds both to the commit: precondition, `maxFiles` (against
//!   a live-file count on the owner row), version bump, the owner's change sequence number and
//!   history pruning commit together. Writers of one owner queue on its row lock, on whichever
//!   replica they run; writers of different owners never wait for each other.
//! - **Reads** are single statements, each on one consistent snapshot. A list is one range of
//!   the path table's primary key (the live version's metadata sits on the path row).
//! - **Schema** (tables `wsp_owners`, `wsp_files`, `wsp_versions`, `wsp_changes`,
//!   `wsp_snapshots`, `wsp_keys`, `wsp_idempotency`, `wsp_approvals`, in the schema named by
//!   [`PgOptions::schema`]) mirrors the
//!   SQLite store's data model: a per-owner `seq` taken by every write and delete, recorded on
//!   each stored version, on each path's latest change and in the feed. Text keys collate as
//!   `"C"`, so lists sort in byte order and prefixes are primary-key ranges. Migrations are
//!   versioned in `wsp_schema_migrations` and applied at connect under an advisory lock, so
//!   replicas starting at once migrate exactly once; each new one is appended.
//! - **Snapshots** pin an owner's `seq` (a row; nothing is copied). Reads through one take,
//!   per path, the newest stored row at or before the pin; a delete leaves a tombstone row
//!   while any snapshot is open, and pruning keeps what an open snapshot sees until it is
//!   released. Taking one costs the same at any workspace size; releasing one prunes the
//!   owner's stored rows in one statement.
//! - **Deletes** tombstone the path; a later write starts a new life with a fresh random life
//!   id, so etags never repeat.
//! - **Change feed and notices.** Every write and delete appends to `wsp_changes` (trimmed to
//!   [`PgOptions::feed_retention`] per owner) and runs `pg_notify` in its transaction. Each
//!   store `LISTEN`s on one extra connection and passes the notices of its schema to its
//!   subscribers ([`WorkspaceStore::subscribe`]), so a replica's subscribers hear of commits
//!   made through any replica. [`PgStore::connect`] returns only once that connection listens
//!   (so no commit made elsewhere after it returns goes unheard); the listener reconnects by
//!   itself and then re-announces every owner's head, since notices are wake-up calls and
//!   readers re-read the feed.
//! - **Failures.** A lost connection, a timeout or an overloaded server is
//!   [`StoreError::Unavailable`] (503 at the HTTP edge); a call that failed before `COMMIT` was
//!   sent is retried on a fresh connection first (twice at most). When the connection is lost
//!   during a `COMMIT` (or a one-statement write), or a call hears nothing for
//!   `statement_timeout + connect_timeout` (a black-holed network), the error says the change
//!   may or may not have been applied. Anything else is [`StoreError::Internal`]. Error texts carry the SQLSTATE and PostgreSQL's primary message,
//!   never a bound value or a `DETAIL` line, so they never contain file content.
//!
//! ```no_run
//! use wsp_store::{FileWrite, Limits, Precondition, WorkspaceStore};
//! use wsp_store_postgres::{PgOptions, PgStore};
//! use wsp_types::{Owner, WorkspacePath};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = PgStore::connect(
//!     "postgres://wsp@127.0.0.1:5432/wsp",
//!     Limits::default(),
//!     PgOptions::default(),
//! )
//! .await?;
//! let owner = Owner::parse("acme", "main")?;
//! let path = WorkspacePath::parse("notes/plan.md")?;
//! let written = store
//!     .put(&owner, &path, FileWrite::markdown("# Plan"), Precondition::IfNoneMatchAny)
//!     .await?;
//! assert_eq!(store.get(&owner, &path, None).await?, written);
//! # Ok(())
//! # }
//! ```
//!
//! # Tests
//!
//! The tests need a PostgreSQL server: `WSP_TEST_POSTGRES_URL` when it is set (its role must be
//! allowed to create schemas), otherwise a throwaway cluster made from the machine's PostgreSQL
//! programs, shared by the test binaries of one `cargo test` and removed when it ends (see the
//! `wsp-pgtest` crate). Each test binary says once on stderr which server it used. Each test
//! works in a fresh schema of its own (`wsp_test_<random>`) and drops it at the end, so runs
//! never see each other. Without the URL or the programs every test **fails** with one line
//! saying what to do; no test is ever skipped. One test needs no database (connect refusals).

mod approvals;
mod batch;
mod failure;
mod files;
mod idempotency;
mod keys;
mod listener;
mod schema;
mod snapshots;
mod tls;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Client, Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio::sync::broadcast;
use wsp_store::{
    ChangeNotice, ChangePage, CommitObserver, DEFAULT_FEED_RETENTION, Deleted, FileMeta, FileWrite,
    Limits, Precondition, QuotaExceeded, SearchQuery, SearchResults, SnapshotCursor, SnapshotId,
    SnapshotInfo, SnapshotLabel, SnapshotQuota, SnapshotUsage, StoreError, StoreFeatures,
    StoreFuture, StoredFile, WorkspaceStore, check_file_size,
};
use wsp_types::{Owner, WorkspacePath, WorkspacePrefix};

pub use approvals::PgApprovals;
pub use idempotency::PgIdempotency;
pub use keys::PgKeyRegistry;
pub use schema::SCHEMA_VERSION;

use failure::{Attempts, Failure};
use files::{FileSql, Retention};
use schema::SchemaName;
use snapshots::SnapshotSql;

/// Pool sizing, timeouts and the schema; [`Default`] suits one server replica.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PgOptions {
    /// Most connections this store (replica) opens at once (at least 1). Sum it over all
    /// replicas and keep it below the server's `max_connections`.
    pub max_connections: usize,
    /// How long opening one connection (TCP and authentication) may take.
    pub connect_timeout: Duration,
    /// How long one statement may run on the server, lock waits included
    /// (`statement_timeout`; also the server's `idle_in_transaction_session_timeout`, so a
    /// replica that stalls mid-transaction cannot hold an owner's lock for longer).
    /// [`Duration::ZERO`] means no limit.
    pub statement_timeout: Duration,
    /// How long a call waits for a free pooled connection when all are busy.
    pub acquire_timeout: Duration,
    /// The PostgreSQL schema holding wsp's tables, created at connect when absent: 1 to 63
    /// characters of `a-z`, `0-9` and `_`, not starting with a digit or `pg_`.
    pub schema: String,
    /// Changes each owner's feed keeps (at least 1); older ones are trimmed as new ones commit.
    /// Every replica on one database should use the same value.
    pub feed_retention: u64,
}

impl PgOptions {
    /// This configuration with [`PgOptions::max_connections`] set.
    pub fn with_max_connections(mut self, max_connections: usize) -> Self {
        self.max_connections = max_connections;
        self
    }

    /// This configuration with [`PgOptions::connect_timeout`] set.
    pub fn with_connect_timeout(mut self, connect_timeout: Duration) -> Self {
        self.connect_timeout = connect_timeout;
        self
    }

    /// This configuration with [`PgOptions::statement_timeout`] set.
    pub fn with_statement_timeout(mut self, statement_timeout: Duration) -> Self {
        self.statement_timeout = statement_timeout;
        self
    }

    /// This configuration with [`PgOptions::acquire_timeout`] set.
    pub fn with_acquire_timeout(mut self, acquire_timeout: Duration) -> Self {
        self.acquire_timeout = acquire_timeout;
        self
    }

    /// This configuration with [`PgOptions::schema`] set.
    pub fn with_schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// This configuration with [`PgOptions::feed_retention`] set.
    pub fn with_feed_retention(mut self, feed_retention: u64) -> Self {
        self.feed_retention = feed_retention;
        self
    }
}

impl Default for PgOptions {
    /// 16 connections, 5 s to connect, 30 s per statement, 10 s to get a connection, schema
    /// `public`, [`DEFAULT_FEED_RETENTION`] changes per owner.
    fn default() -> Self {
        Self {
            max_connections: 16,
            connect_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(30),
            acquire_timeout: Duration::from_secs(10),
            schema: "public".to_owned(),
            feed_retention: DEFAULT_FEED_RETENTION,
        }
    }
}

/// Why [`PgStore::connect`] (or [`PgKeyRegistry::connect`]) failed. No variant repeats the URL,
/// which may hold a password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The connection URL could not be parsed.
    #[error("invalid PostgreSQL connection URL: {reason}")]
    InvalidUrl {
        /// What is wrong with it.
        reason: String,
    },
    /// [`PgOptions::schema`] is not an acceptable schema name.
    #[error(
        "invalid PostgreSQL schema name {schema:?}: use 1 to 63 characters of a-z, 0-9 and _, \
         not starting with a digit or pg_"
    )]
    InvalidSchema {
        /// The name given.
        schema: String,
    },
    /// Another option is out of range.
    #[error("invalid PostgreSQL store options: {reason}")]
    InvalidOptions {
        /// What is wrong.
        reason: String,
    },
    /// The database could not be reached or refused the connection.
    #[error("cannot connect to PostgreSQL: {reason}")]
    Unreachable {
        /// Why, in the driver's or the server's words.
        reason: String,
    },
    /// TLS, as the URL's `sslmode` asks for it, failed: the server does not offer it, or its
    /// certificate was refused.
    #[error("cannot connect to PostgreSQL over TLS (sslmode={mode}): {reason}")]
    Tls {
        /// The `sslmode` in effect.
        mode: &'static str,
        /// Why, in rustls's or the driver's words.
        reason: String,
    },
    /// Creating the schema or recording migrations failed.
    #[error("cannot prepare the PostgreSQL schema: {reason}")]
    Setup {
        /// The server's words.
        reason: String,
    },
    /// A migration failed; nothing of it was applied.
    #[error("migration to wsp schema version {version} failed: {reason}")]
    Migration {
        /// The version it would have reached.
        version: i32,
        /// The server's words.
        reason: String,
    },
    /// The schema was migrated by a newer wsp than this build.
    #[error(
        "the PostgreSQL schema {schema} has wsp schema version {found}, newer than version \
         {supported} that this build understands; upgrade wsp to use it"
    )]
    TooNew {
        /// The schema.
        schema: String,
        /// Its version.
        found: i32,
        /// The newest version this build knows ([`SCHEMA_VERSION`]).
        supported: i32,
    },
}

/// Runs `$body`, a future using the pooled connection `$client` and resolving to
/// `Result<T, Failure>`, on a fresh connection per try, retrying as `$attempts`
/// ([`Attempts`]) allows. Evaluates to `Result<T, StoreError>`.
macro_rules! retrying {
    ($db:expr, $attempts:expr, |$client:ident| $body:expr) => {{
        let db: &$crate::Database = &$db;
        let mut attempts: $crate::failure::Attempts = $attempts;
        loop {
            #[allow(unused_mut)]
            let mut $client = match db.client(&attempts).await {
                Ok(client) => client,
                Err(e) => break Err(e),
            };
            let result = db.within($body).await;
            match result {
                Ok(value) => break Ok(value),
                Err(failure) => {
                    if let Err(e) = attempts.again(failure, $client) {
                        break Err(e);
                    }
                }
            }
        }
    }};
}
pub(crate) use retrying;

/// The connection pool and schema shared by a store and its key registry.
#[derive(Clone)]
pub(crate) struct Database {
    pool: Pool,
    /// The connection settings, for connections outside the pool (the listener).
    config: tokio_postgres::Config,
    /// The TLS of every connection, as the URL's `sslmode` asks.
    tls: tls::MakeTls,
    schema: Arc<SchemaName>,
    /// How long one try may wait for the server's answers, when bounded.
    deadline: Option<Duration>,
}

impl Database {
    /// Builds the pool, opens a first connection and migrates the schema.
    async fn connect(url: &str, options: &PgOptions) -> Result<Self, ConnectError> {
        let schema = SchemaName::parse(&options.schema)?;
        if options.max_connections == 0 {
            return Err(ConnectError::InvalidOptions {
                reason: "max_connections must be at least 1".into(),
            });
        }
        let (mut config, tls) = tls::parse(url)?;
        config.connect_timeout(options.connect_timeout);
        if config.get_application_name().is_none() {
            config.application_name("wsp");
        }
        let millis = options.statement_timeout.as_millis();
        let mut startup = config.get_options().unwrap_or_default().to_owned();
        startup.push_str(&format!(
            " -c statement_timeout={millis} -c idle_in_transaction_session_timeout={millis}"
        ));
        config.options(startup.trim_start());
        let manager = Manager::from_config(
            config.clone(),
            tls.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.max_connections)
            .wait_timeout(Some(options.acquire_timeout))
            .create_timeout(Some(options.connect_timeout))
            .recycle_timeout(Some(options.connect_timeout))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| ConnectError::InvalidOptions {
                reason: e.to_string(),
            })?;
        let mut client = pool.get().await.map_err(|e| {
            if let deadpool_postgres::PoolError::Backend(e) = &e
                && let Some(reason) = tls::failure(e)
            {
                return ConnectError::Tls {
                    mode: tls.mode().name(),
                    reason,
                };
            }
            ConnectError::Unreachable {
                reason: match failure::pool_error("connect", e) {
                    StoreError::Unavailable { reason, .. }
                    | StoreError::Internal { reason, .. } => reason,
                    other => other.to_string(),
                },
            }
        })?;
        schema::migrate(&mut client, &schema).await?;
        // The server cancels a statement after `statement_timeout`; a try that hears nothing for
        // longer (plus time to connect) is talking to a dead peer or a black-holed network.
        let deadline = (!options.statement_timeout.is_zero())
            .then(|| options.statement_timeout + options.connect_timeout);
        Ok(Self {
            pool,
            config,
            tls,
            schema: Arc::new(schema),
            deadline,
        })
    }

    /// Runs one try, giving up when it outlives the deadline.
    async fn within<T>(
        &self,
        attempt: impl Future<Output = Result<T, Failure>>,
    ) -> Result<T, Failure> {
        match self.deadline {
            Some(deadline) => tokio::time::timeout(deadline, attempt)
                .await
                .unwrap_or(Err(Failure::NoAnswer(deadline))),
            None => attempt.await,
        }
    }

    fn schema(&self) -> &SchemaName {
        &self.schema
    }

    /// A pooled connection for one try of `attempts`' operation.
    async fn client(&self, attempts: &Attempts) -> Result<Client, StoreError> {
        self.pool
            .get()
            .await
            .map_err(|e| failure::pool_error(attempts.op(), e))
    }
}

/// Notices a subscriber may fall behind by before it loses some (it then re-reads the feed).
const NOTICE_CAPACITY: usize = 1024;

/// A [`WorkspaceStore`] in a PostgreSQL database, for any number of replicas at once.
///
/// Cloning is cheap and shares the pool. Calls must be made from within a Tokio runtime.
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

struct Inner {
    db: Database,
    limits: Limits,
    retention: Retention,
    sql: FileSql,
    snapshots: SnapshotSql,
    notices: broadcast::Sender<ChangeNotice>,
    /// Takes writes and deletes to the group-commit task ([`batch`]).
    writer: batch::Writer,
    /// Passes on other replicas' notices; stops when the store is dropped.
    _listener: listener::Listener,
}

impl Inner {
    /// Tells subscribers that `owner`'s feed reached `seq` (after the commit).
    fn notify(&self, owner: &Owner, seq: u64) {
        // No receiver is fine: nobody is watching.
        let _ = self.notices.send(ChangeNotice {
            owner: owner.clone(),
            seq,
        });
    }
}

impl fmt::Debug for PgStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgStore")
            .field("schema", &self.inner.db.schema().as_str())
            .field("limits", &self.inner.limits)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects to the database at `url` (a `postgres://` URL or a `key=value` string, as
    /// `tokio-postgres` reads them), creating the schema and applying pending migrations.
    ///
    /// Fails when the database cannot be reached within [`PgOptions::connect_timeout`] (the
    /// change-notice connection included: the store is returned listening), or the schema was
    /// migrated by a newer wsp. Without an `application_name` in the URL, sessions
    /// are named `wsp` (visible in `pg_stat_activity`).
    pub async fn connect(
        url: &str,
        limits: Limits,
        options: PgOptions,
    ) -> Result<Self, ConnectError> {
        let db = Database::connect(url, &options).await?;
        let replica = format!("{:016x}", wsp_store::new_life_id());
        let sql = FileSql::new(db.schema(), &replica);
        let snapshots = SnapshotSql::new(db.schema());
        let (notices, _) = broadcast::channel(NOTICE_CAPACITY);
        let (listener, listening) = listener::spawn(
            listener::Settings {
                config: db.config.clone(),
                tls: db.tls.clone(),
                schema: db.schema().clone(),
                replica,
                ping: options.connect_timeout.max(Duration::from_secs(1)),
            },
            notices.clone(),
        );
        // Handed out only once it listens: a subscriber must hear of every commit made through
        // another replica after this returns.
        match tokio::time::timeout(options.connect_timeout, listening).await {
            Ok(Ok(())) => {}
            _ => {
                return Err(ConnectError::Unreachable {
                    reason: format!(
                        "the change-notice connection did not start listening within {:?}",
                        options.connect_timeout
                    ),
                });
            }
        }
        let inner = Arc::new_cyclic(|store| Inner {
            db,
            limits,
            retention: Retention::new(&limits, options.feed_retention),
            sql,
            snapshots,
            notices,
            writer: batch::Writer::new(store.clone()),
            _listener: listener,
        });
        Ok(Self { inner })
    }

    /// Tells `observer` of every commit of writes and deletes through this store and its
    /// clones from now on: how many changes it held (concurrent ones share a commit) and how
    /// long `COMMIT` took. Only the first observer set is kept; `false` when one was already
    /// set.
    pub fn observe_commits(&self, observer: Arc<dyn CommitObserver>) -> bool {
        self.inner.writer.commits.set(observer).is_ok()
    }

    /// Queues a change for the next group commit and waits for its outcome.
    async fn change<T>(
        &self,
        owner: &Owner,
        path: &WorkspacePath,
        kind: impl FnOnce(tokio::sync::oneshot::Sender<Result<T, StoreError>>) -> batch::Kind,
    ) -> Result<T, StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let change = batch::Change {
            owner: owner.clone(),
            path: path.clone(),
            kind: kind(reply),
        };
        if !self.inner.writer.send(change) {
            return Err(batch::stopped());
        }
        answer.await.unwrap_or_else(|_| Err(batch::stopped()))
    }

    /// The key registry in the same database and schema, sharing this store's connections.
    pub fn key_registry(&self) -> PgKeyRegistry {
        PgKeyRegistry::new(self.inner.db.clone())
    }

    /// The pack approvals in the same database and schema, sharing this store's connections.
    pub fn approvals(&self) -> PgApprovals {
        PgApprovals::new(self.inner.db.clone())
    }

    /// The schema holding this store's tables.
    pub fn schema(&self) -> &str {
        self.inner.db.schema().as_str()
    }

    /// How this replica's connection pool stands now (shared with its key registry and
    /// approvals; the change-feed listener's own connection is not in it).
    pub fn pool_status(&self) -> PoolStatus {
        let status = self.inner.db.pool.status();
        PoolStatus {
            max: status.max_size,
            open: status.size,
            idle: status.available,
            waiting: status.waiting,
        }
    }
}

/// A moment's view of a [`PgStore`]'s connection pool ([`PgStore::pool_status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStatus {
    /// Most connections the pool opens ([`PgOptions::max_connections`]).
    pub max: usize,
    /// Connections open now, idle or in use.
    pub open: usize,
    /// Open connections that no call is using.
    pub idle: usize,
    /// Calls waiting for a connection.
    pub waiting: usize,
}

impl WorkspaceStore for PgStore {
    fn limits(&self) -> Limits {
        self.inner.limits
    }

    fn features(&self) -> StoreFeatures {
        StoreFeatures::ALL
    }

    fn ready(&self) -> StoreFuture<'_, ()> {
        let inner = &self.inner;
        Box::pin(async move {
            let table = inner.db.schema().render("{s}.wsp_schema_migrations");
            let query = format!("SELECT coalesce(max(version), 0) FROM {table}");
            let applied: i32 = retrying!(inner.db, Attempts::read("ready"), |client| async {
                Ok::<i32, Failure>(client.query_one(&query, &[]).await?.get(0))
            })?;
            if applied == SCHEMA_VERSION {
                Ok(())
            } else {
                Err(StoreError::unavailable(format!(
                    "schema at migration {applied}, this build needs {SCHEMA_VERSION}"
                )))
            }
        })
    }

    fn list<'a>(
        &'a self,
        owner: &'a Owner,
        prefix: &'a WorkspacePrefix,
    ) -> StoreFuture<'a, Vec<FileMeta>> {
        let inner = &self.inner;
        Box::pin(async move {
            retrying!(inner.db, Attempts::read("list"), |client| files::list(
                &client, &inner.sql, owner, prefix
            ))
        })
    }

    fn search<'a>(
        &'a self,
        owner: &'a Owner,
        query: &'a SearchQuery,
    ) -> StoreFuture<'a, SearchResults> {
        let inner = &self.inner;
        Box::pin(async move {
            retrying!(inner.db, Attempts::read("search"), |client| files::search(
                &client, &inner.sql, owner, query
            ))
        })
    }

    fn get<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        version: Option<u64>,
    ) -> StoreFuture<'a, StoredFile> {
        let inner = &self.inner;
        Box::pin(async move {
            let (meta, content) = retrying!(inner.db, Attempts::read("get"), |client| files::get(
                &client,
                &inner.sql,
                inner.retention,
                owner,
                path,
                version
            ))?;
            Ok(StoredFile { meta, content })
        })
    }

    fn put<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        write: FileWrite,
        precondition: Precondition,
    ) -> StoreFuture<'a, StoredFile> {
        Box::pin(async move {
            check_file_size(&self.inner.limits, &write)?;
            self.change(owner, path, |reply| batch::Kind::Put {
                write,
                precondition,
                reply,
            })
            .await
        })
    }

    fn delete<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        precondition: Precondition,
    ) -> StoreFuture<'a, Deleted> {
        Box::pin(async move {
            self.change(owner, path, |reply| batch::Kind::Delete {
                precondition,
                reply,
            })
            .await
        })
    }

    fn history<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
    ) -> StoreFuture<'a, Vec<FileMeta>> {
        let inner = &self.inner;
        Box::pin(async move {
            retrying!(
                inner.db,
                Attempts::read("history"),
                |client| files::history(&client, &inner.sql, inner.retention, owner, path)
            )
        })
    }

    fn snapshot<'a>(
        &'a self,
        owner: &'a Owner,
        label: &'a SnapshotLabel,
    ) -> StoreFuture<'a, SnapshotInfo> {
        let inner = &self.inner;
        Box::pin(async move {
            retrying!(inner.db, Attempts::write("snapshot"), |client| {
                snapshots::take(&client, &inner.snapshots, owner, label)
            })
        })
    }

    fn snapshot_usage<'a>(&'a self, owner: &'a Owner) -> StoreFuture<'a, SnapshotUsage> {
        let inner = &self.inner;
        Box::pin(async move {
            retrying!(inner.db, Attempts::read("snapshot usage"), |client| {
                snapshots::usage(&client, &inner.snapshots, inner.retention, owner)
            })
        })
    }

    fn snapshot_within<'a>(
        &'a self,
        owner: &'a Owner,
        label: &'a SnapshotLabel,
        quota: SnapshotQuota,
    ) -> StoreFuture<'a, Result<SnapshotInfo, QuotaExceeded>> {
        let inner = &self.inner;
        Box::pin(async move {
            retrying!(inner.db, Attempts::write("snapshot"), |client| {
                snapshots::take_within(
                    &mut client,
                    &inner.snapshots,
                    inner.retention,
                    owner,
                    label,
                    quota,
                )
            })
        })
    }

    fn snapshot_info<'a>(
        &'a self,
        owner: &'a Owner,
        id: &'a SnapshotId,
    ) -> StoreFuture<'a, SnapshotInfo> {
        let inner = &self.inner;
        Box::pin(async move {
            retrying!(inner.db, Attempts::read("snapshot info"), |client| {
                snapshots::info_of(&client, &inner.snapshots, owner, id)
            })
        })
    }

    fn list_snapshots<'a>(
        &'a self,
        owner: &'a Owner,
        after: Option<&'a SnapshotCursor>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<SnapshotInfo>> {
        let inner = &self.inner;
        Box::pin(async move {
            retrying!(inner.db, Attempts::read("list snapshots"), |client| {
                snapshots::list(&client, &inner.snapshots, owner, after, limit)
            })
        })
    }

    fn open_snapshots_before<'a>(
        &'a self,
        cutoff: chrono::DateTime<chrono::Utc>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<(Owner, SnapshotInfo)>> {
        let inner = &self.inner;
        Box::pin(async move {
            retrying!(inner.db, Attempts::read("open snapshots"), |client| {
                snapshots::open_before(&client, &inner.snapshots, cutoff, limit)
            })
        })
    }

    fn count_open_snapshots(&self) -> StoreFuture<'_, u64> {
        let inner = &self.inner;
        Box::pin(async move {
            retrying!(inner.db, Attempts::read("count open snapshots"), |client| {
                snapshots::count_open(&client, &inner.snapshots)
            })
        })
    }

    fn forget_released_snapshots<'a>(
        &'a self,
        cutoff: chrono::DateTime<chrono::Utc>,
        limit: usize,
    ) -> StoreFuture<'a, usize> {
        let inner = &self.inner;
        Box::pin(async move {
            // When the answer is lost the outcome is unknown and this call fails; the next
            // sweep deletes whatever is still there.
            retrying!(inner.db, Attempts::write("forget snapshots"), |client| {
                snapshots::forget_released(&client, &inner.snapshots, cutoff, limit)
            })
        })
    }

    fn release_snapshot<'a>(
        &'a self,
        owner: &'a Owner,
        id: &'a SnapshotId,
        outcome: &'a str,
    ) -> StoreFuture<'a, SnapshotInfo> {
        let inner = &self.inner;
        Box::pin(async move {
            retrying!(inner.db, Attempts::write("snapshot release"), |client| {
                snapshots::release(
                    &mut client,
                    &inner.snapshots,
                    inner.retention,
                    owner,
                    id,
                    outcome,
                )
            })
        })
    }

    fn list_at<'a>(
        &'a self,
        owner: &'a Owner,
        snapshot: &'a SnapshotId,
        prefix: &'a WorkspacePrefix,
    ) -> StoreFuture<'a, Vec<FileMeta>> {
        let inner = &self.inner;
        Box::pin(async move {
            retrying!(inner.db, Attempts::read("list_at"), |client| {
                snapshots::list_at(&client, &inner.snapshots, owner, snapshot, prefix)
            })
        })
    }

    fn get_at<'a>(
        &'a self,
        owner: &'a Owner,
        snapshot: &'a SnapshotId,
        path: &'a WorkspacePath,
    ) -> StoreFuture<'a, StoredFile> {
        let inner = &self.inner;
        Box::pin(async move {
            let (meta, content) = retrying!(inner.db, Attempts::read("get_at"), |client| {
                snapshots::get_at(&client, &inner.snapshots, owner, snapshot, path)
            })?;
            Ok(StoredFile { meta, content })
        })
    }

    fn changes<'a>(
        &'a self,
        owner: &'a Owner,
        after: u64,
        limit: usize,
    ) -> StoreFuture<'a, ChangePage> {
        let inner = &self.inner;
        Box::pin(async move {
            retrying!(inner.db, Attempts::read("changes"), |client| {
                snapshots::changes(&client, &inner.snapshots, owner, after, limit)
            })
        })
    }

    fn subscribe(&self) -> Option<broadcast::Receiver<ChangeNotice>> {
        Some(self.inner.notices.subscribe())
    }
}
