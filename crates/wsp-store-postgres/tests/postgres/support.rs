//! The test database, a fresh schema per test, and stores that delegate to `PgStore`s.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use wsp_store::{Limits, WorkspaceStore, new_life_id};
use wsp_store_postgres::{PgOptions, PgStore};
use wsp_types::{Owner, WorkspacePath};

/// The variable holding the test database's URL; a test passes the URL to the processes it
/// starts through it.
pub use wsp_pgtest::URL_VAR;

/// The test database's URL: `WSP_TEST_POSTGRES_URL`, or else the throwaway cluster that the
/// test binaries of this `cargo test` share (see `wsp-pgtest`). Panics with one line saying what
/// to do when there is neither: a PostgreSQL test never passes without running.
pub fn database_url() -> String {
    wsp_pgtest::database_url().to_owned()
}

/// An admin connection (its own, outside any store's pool).
pub async fn admin(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("the test database accepts an admin connection");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// A schema of its own for one test, named `wsp_test_<random>`; dropped (with everything in it)
/// when this is dropped.
pub struct TestSchema {
    /// The database URL.
    pub url: String,
    /// The schema name.
    pub name: String,
}

impl TestSchema {
    pub fn new(url: &str) -> Self {
        Self {
            url: url.to_owned(),
            name: format!("wsp_test_{:016x}", new_life_id()),
        }
    }

    /// Options for a store in this schema, sized for tests running side by side.
    pub fn options(&self) -> PgOptions {
        PgOptions::default()
            .with_max_connections(8)
            .with_connect_timeout(Duration::from_secs(5))
            .with_statement_timeout(Duration::from_secs(30))
            .with_acquire_timeout(Duration::from_secs(30))
            .with_schema(self.name.clone())
    }

    /// A store (a replica) in this schema.
    pub async fn store(&self, limits: Limits) -> PgStore {
        PgStore::connect(&self.url, limits, self.options())
            .await
            .expect("the test store connects")
    }

    /// `sql` with `{s}` replaced by the quoted schema name.
    pub fn sql(&self, sql: &str) -> String {
        sql.replace("{s}", &format!("\"{}\"", self.name))
    }
}

impl Drop for TestSchema {
    fn drop(&mut self) {
        let (url, name) = (self.url.clone(), self.name.clone());
        // Drop may run inside a runtime that is unwinding: use a thread with its own.
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async {
                let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                    .await
                    .map_err(|e| e.to_string())?;
                tokio::spawn(connection);
                client
                    .batch_execute(&format!(
                        "SET lock_timeout = '10s'; DROP SCHEMA IF EXISTS \"{name}\" CASCADE"
                    ))
                    .await
                    .map_err(|e| format!("{e:?}"))
            })
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            let _ = writeln!(
                std::io::stderr(),
                "warning: could not drop test schema {}: {dropped:?}",
                self.name
            );
        }
    }
}

/// Implements `WorkspaceStore` for `$ty` by calling the `PgStore` that `$pick` returns.
macro_rules! delegate_store {
    ($ty:ty, |$this:ident| $pick:expr) => {
        impl WorkspaceStore for $ty {
            wsp_store::forward_store!(|$this| $pick;
                limits, features, list, get, put, delete, history, snapshot, snapshot_usage,
                snapshot_within, snapshot_info, list_snapshots, release_snapshot, open_snapshots_before,
                count_open_snapshots, forget_released_snapshots, list_at, get_at, changes,
                subscribe, search);
        }
    };
}

/// One store in a schema of its own, dropped with it.
pub struct TestStore {
    // Declared first so that its connections close before the schema is dropped.
    store: PgStore,
    _schema: TestSchema,
}

impl TestStore {
    pub async fn new(url: &str, limits: Limits) -> Self {
        let schema = TestSchema::new(url);
        Self {
            store: schema.store(limits).await,
            _schema: schema,
        }
    }
}

delegate_store!(TestStore, |this| this.store);

/// Several stores (replicas) on one schema; each call goes to the next one in turn (so a
/// subscriber of one replica hears of writes made through the others).
pub struct Replicas {
    stores: Vec<PgStore>,
    next: AtomicUsize,
    _schema: TestSchema,
}

impl Replicas {
    pub async fn new(url: &str, limits: Limits, count: usize) -> Self {
        let schema = TestSchema::new(url);
        let mut stores = Vec::new();
        for _ in 0..count {
            stores.push(schema.store(limits).await);
        }
        Self {
            stores,
            next: AtomicUsize::new(0),
            _schema: schema,
        }
    }

    fn pick(&self) -> &PgStore {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        &self.stores[i % self.stores.len()]
    }
}

delegate_store!(Replicas, |this| this.pick());

/// `n` stores on one fresh schema, as `n` replicas would be.
pub async fn replicas(url: &str, limits: Limits, n: usize) -> (TestSchema, Vec<Arc<PgStore>>) {
    let schema = TestSchema::new(url);
    let mut stores = Vec::new();
    for _ in 0..n {
        stores.push(Arc::new(schema.store(limits).await));
    }
    (schema, stores)
}

pub fn owner(tenant: &str) -> Owner {
    Owner::parse(tenant, "w").expect("valid owner")
}

pub fn path(p: &str) -> WorkspacePath {
    WorkspacePath::parse(p).expect("valid path")
}
