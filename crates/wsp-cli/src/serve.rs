//! `wsp serve`: the HTTP server on the embedded default (SQLite) or in memory.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use wsp_server::{AppState, KeyAuthenticator, Metrics, PoolGauges, ServerConfig};
use wsp_store::approvals::ApprovalRegistry;
use wsp_store::keys::{ApiKey, KeyRecord, KeyRegistry};
use wsp_store::{IdempotencyRecords, MemoryIdempotency, MemoryStore, WorkspaceStore};
use wsp_store_postgres::{PgOptions, PgStore, PoolStatus};
use wsp_store_sqlite::SqliteApprovals;
use wsp_store_sqlite::SqliteKeyRegistry;
use wsp_store_sqlite::SqliteStore;
use wsp_types::{Owner, Scopes};

use crate::CliError;
use crate::agents::approvals_file;
use crate::config::{FileConfig, LimitArgs};
use crate::failure::Failure;
use crate::keys::key_file;
use crate::location::{prepare_data_dir, unusable_data_dir, unusable_postgres};
use crate::out::outln;

/// Where workspace files (and, for PostgreSQL, keys) are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreKind {
    /// One SQLite file in the data directory (the embedded default).
    Sqlite,
    /// Process memory: everything is lost at exit (keys still live in the data directory).
    Memory,
    /// A PostgreSQL database shared by any number of `wsp serve` replicas (files and keys).
    Postgres(String),
}

impl StoreKind {
    /// Parses `sqlite`, `memory` or a `postgres://` / `postgresql://` URL.
    pub fn parse(raw: &str) -> Result<Self, String> {
        match raw {
            "sqlite" => Ok(Self::Sqlite),
            "memory" => Ok(Self::Memory),
            url if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Ok(Self::Postgres(url.to_owned()))
            }
            _ => Err("expected sqlite, memory or a postgres:// URL".to_owned()),
        }
    }

    /// The backend's name, for messages (never the URL, which may hold a password).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Memory => "memory",
            Self::Postgres(_) => "postgres",
        }
    }
}

/// PostgreSQL pool settings (`--pg-*`), used with `--store postgres://...`.
#[derive(Debug, Clone, Args)]
pub struct PgArgs {
    /// Most connections this replica opens (sum over replicas < the server's max_connections).
    #[arg(long, env = "WSP_PG_MAX_CONNECTIONS", default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub pg_max_connections: u64,
    /// Seconds to open one connection.
    #[arg(long, env = "WSP_PG_CONNECT_TIMEOUT", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=600))]
    pub pg_connect_timeout: u64,
    /// Seconds one statement may run (0: no limit).
    #[arg(long, env = "WSP_PG_STATEMENT_TIMEOUT", default_value_t = 30)]
    pub pg_statement_timeout: u64,
    /// The PostgreSQL schema holding wsp's tables (created at start when missing).
    #[arg(long, env = "WSP_PG_SCHEMA", default_value = "public")]
    pub pg_schema: String,
}

impl PgArgs {
    /// The store options these flags describe.
    pub fn options(&self) -> PgOptions {
        PgOptions::default()
            .with_max_connections(self.pg_max_connections as usize)
            .with_connect_timeout(std::time::Duration::from_secs(self.pg_connect_timeout))
            .with_statement_timeout(std::time::Duration::from_secs(self.pg_statement_timeout))
            .with_schema(self.pg_schema.clone())
    }
}

/// `wsp serve`'s flags. Each can also be set by the environment variable shown beside it
/// (`WSP_ADDR`, `WSP_DATA`, ...): a flag on the command line beats the variable, which beats
/// the default.
#[derive(Debug, Args)]
#[command(
    after_help = "Every flag can also be set by the environment variable shown with it: a flag on \
                  the command line beats the variable, which beats the default."
)]
pub struct ServeArgs {
    /// Address to listen on: HOST:PORT, HOST an IP address or a name such as localhost (the
    /// first of its addresses that can be bound is used). Port 0 picks a free port.
    #[arg(long, env = "WSP_ADDR", default_value = "127.0.0.1:8787", value_parser = crate::listen::ListenAddr::parse)]
    addr: crate::listen::ListenAddr,
    /// Also serve `GET /metrics` (Prometheus, plain HTTP) on this HOST:PORT, without a key.
    /// Bind it to a private interface only. On --addr, /metrics still needs a key holding
    /// metrics:read.
    #[arg(long, env = "WSP_METRICS_ADDR", value_name = "ADDR", value_parser = crate::listen::ListenAddr::parse)]
    metrics_addr: Option<crate::listen::ListenAddr>,
    /// Data directory (created if missing): the SQLite file and the key file.
    #[arg(long, env = "WSP_DATA", default_value = "./wsp-data")]
    data: PathBuf,
    /// Storage backend: `sqlite` (the file in --data), `memory`, or `postgres://user@host/db`
    /// (files and keys in PostgreSQL; run as many replicas as you like).
    #[arg(long, env = "WSP_STORE", hide_env_values = true, default_value = "sqlite", value_parser = StoreKind::parse)]
    store: StoreKind,
    #[command(flatten)]
    pg: PgArgs,
    #[command(flatten)]
    limits: LimitArgs,
    /// Configuration file (TOML): secrets to redact per tenant, agent packs and approvals.
    #[arg(long, env = "WSP_CONFIG")]
    config: Option<PathBuf>,
    /// Expose the conformance test seam `POST /v1/host/sample/workspace/op`. Never in production.
    #[arg(long, env = "WSP_ENABLE_TEST_SEAMS")]
    enable_test_seams: bool,
    /// Seconds a run lives before it ends by itself (`completed`) and releases its snapshot.
    #[arg(long, env = "WSP_RUN_TTL", default_value_t = 3600, value_parser = clap::value_parser!(u64).range(1..=31_536_000))]
    run_ttl: u64,
    /// Seconds the record of an ended run is kept (its status stays readable); then the run
    /// is forgotten (404).
    #[arg(long, env = "WSP_RUN_RETENTION", default_value_t = 604_800, value_parser = clap::value_parser!(u64).range(1..=315_360_000))]
    run_retention: u64,
    /// Most open runs per workspace; the next `POST /v1/runs` is answered 429 until one ends.
    #[arg(long, env = "WSP_MAX_OPEN_RUNS", default_value_t = ServerConfig::default().max_open_runs, value_parser = clap::value_parser!(u64).range(1..))]
    max_open_runs: u64,
    /// Most bytes of old versions a workspace's open runs may keep from pruning; above it,
    /// new runs are answered 429 (writes still succeed) until runs end.
    #[arg(long, env = "WSP_MAX_PINNED_BYTES", default_value_t = ServerConfig::default().max_pinned_bytes)]
    max_pinned_bytes: u64,
    /// MiB of memory for the cache of current files (their encoded `GET` answers, forgotten
    /// as they change, here or through another server on the same store); 0 turns it off.
    #[arg(long, env = "WSP_FILE_CACHE_MIB", default_value_t = 16, value_parser = clap::value_parser!(u64).range(0..=65_536))]
    file_cache_mib: u64,
    /// A web origin (`https://app.example`, `http://localhost:5173`) whose pages may call the
    /// API from the browser (CORS); repeat for more. Without it no CORS header is sent.
    #[arg(long = "cors-origin", env = "WSP_CORS_ORIGINS", value_delimiter = ',', value_name = "ORIGIN", value_parser = |t: &str| wsp_server::CorsOrigin::parse(t).map_err(|e| e.to_string()))]
    cors_origins: Vec<wsp_server::CorsOrigin>,
    /// Seconds a web console session (`/console/`) lives without a request before the person
    /// has to sign in again.
    #[arg(long, env = "WSP_CONSOLE_IDLE", default_value_t = 1800, value_parser = clap::value_parser!(u64).range(1..=604_800))]
    console_idle: u64,
    /// Log lines on standard error: `text` for people, `json` (one object per line, the
    /// request id in every line of a request) for log collectors. The level is `WSP_LOG`.
    #[arg(long, env = "WSP_LOG_FORMAT", value_enum, default_value_t = crate::lifecycle::LogFormat::Text)]
    log_format: crate::lifecycle::LogFormat,
    #[command(flatten)]
    conn: crate::conn::ConnArgs,
}

/// What `--store` gives the server: the files and, beside them, the keys, the `Idempotency-Key`
/// records and (in PostgreSQL only) the approvals made while it runs.
struct Backend {
    store: Arc<dyn WorkspaceStore>,
    keys: Arc<dyn KeyRegistry>,
    idempotency: Arc<dyn IdempotencyRecords>,
    approvals: Option<Arc<dyn ApprovalRegistry>>,
    /// Adds what only the backend sees to the server's metrics (commits, the pool).
    observe: Box<dyn FnOnce(&Metrics)>,
}

/// Runs the server until Ctrl-C or SIGTERM, then drains in-flight requests.
pub async fn run(args: ServeArgs) -> Result<(), Failure> {
    crate::lifecycle::init_logging_as(true, args.log_format);
    let file_config = match &args.config {
        Some(path) => FileConfig::load(path)?,
        None => FileConfig::default(),
    };
    // Before anything is created (a first start's admin key is shown only once).
    let tls = args.conn.tls()?;
    // Served over TLS, the console's cookie is marked Secure.
    let console = wsp_console::ConsoleConfig::default()
        .with_idle_timeout(std::time::Duration::from_secs(args.console_idle))
        .with_secure_cookie(tls.is_some());
    let limits = args.limits.limits();
    let data_dir_error = |e: &dyn std::fmt::Display| unusable_data_dir(&args.data, e);
    prepare_data_dir(&args.data)?;
    // Idempotency-Key records live with the data: in PostgreSQL, shared by the replicas; in
    // the SQLite file, surviving a restart; in memory with the memory store.
    // Approvals made while the server runs: in PostgreSQL with its store, shared by the
    // replicas; otherwise in the data directory (opened only when [agents] is configured).
    let Backend {
        store,
        keys: registry,
        idempotency,
        approvals: pg_approvals,
        observe,
    } = match &args.store {
        StoreKind::Postgres(url) => {
            let pg = PgStore::connect(url, limits, args.pg.options())
                .await
                .map_err(unusable_postgres)?;
            let keys = pg.key_registry();
            let records = pg.idempotency_records();
            let approvals = pg.approvals();
            let pool = pg.clone();
            Backend {
                observe: Box::new(move |metrics| {
                    metrics.observe_pool(move || pool_gauges(pool.pool_status()));
                }),
                store: Arc::new(pg),
                keys: Arc::new(keys),
                idempotency: Arc::new(records),
                approvals: Some(Arc::new(approvals)),
            }
        }
        kind => {
            let keys =
                SqliteKeyRegistry::open(&key_file(&args.data)).map_err(|e| data_dir_error(&e))?;
            let store: Arc<dyn WorkspaceStore>;
            let records: Arc<dyn IdempotencyRecords>;
            let observe: Box<dyn FnOnce(&Metrics)>;
            if *kind == StoreKind::Memory {
                store = Arc::new(MemoryStore::new(limits));
                records = Arc::new(MemoryIdempotency::default());
                observe = Box::new(|_| {});
            } else {
                let file = args.data.join("wsp.sqlite3");
                let sqlite = SqliteStore::open(&file, limits).map_err(|e| data_dir_error(&e))?;
                records = Arc::new(sqlite.idempotency_records());
                let writer = sqlite.clone();
                observe = Box::new(move |metrics| {
                    writer.observe_commits(metrics.commit_observer());
                });
                store = Arc::new(sqlite);
            }
            Backend {
                store,
                keys: Arc::new(keys),
                idempotency: records,
                approvals: None,
                observe,
            }
        }
    };
    let tcp = args.addr.bind().await?;
    let listener = wsp_listener::Listener::new(tcp, tls.clone());
    let local = listener.local_addr()?;
    let metrics_listener = match &args.metrics_addr {
        Some(addr) => Some(addr.bind().await?),
        None => None,
    };
    let config = ServerConfig::default()
        .with_workspace_enabled(true)
        .with_test_seams(args.enable_test_seams)
        .with_run_ttl(std::time::Duration::from_secs(args.run_ttl))
        .with_ended_run_retention(std::time::Duration::from_secs(args.run_retention))
        .with_max_open_runs(args.max_open_runs)
        .with_max_pinned_bytes(args.max_pinned_bytes)
        .with_file_cache_bytes(
            usize::try_from(args.file_cache_mib * 1024 * 1024).unwrap_or(usize::MAX),
        )
        .with_cors_origins(args.cors_origins.clone());
    let secrets = Arc::new(file_config.secrets()?);
    // [agents]: the inventory, agent principals and publishing; approvals made with
    // `wsp agents approve` count at once.
    let agents = match file_config.agents() {
        Some(agents) => {
            let stored: Arc<dyn ApprovalRegistry> = match pg_approvals {
                Some(pg) => pg,
                None => Arc::new(
                    SqliteApprovals::open(&approvals_file(&args.data))
                        .map_err(|e| data_dir_error(&e))?,
                ),
            };
            Some(Arc::new(agents.clone().with_stored_approvals(stored)))
        }
        None => None,
    };
    // After everything else that can fail: a first start's admin key is shown only once.
    let first_key = first_start_key(&*registry).await?;
    let auth = Arc::new(KeyAuthenticator::new(registry));
    let mut state = AppState::builder(store, auth.clone())
        .secrets(secrets)
        .idempotency(idempotency)
        .config(config);
    if let Some(agents) = agents {
        state = state.agents(agents);
    }
    let state = state.build();
    state.metrics().observe_key_cache(&auth);
    observe(state.metrics());
    if let Some(key) = first_key {
        outln!("First start: created an admin key for tenant `default`, workspace `default`.")?;
        outln!("It is shown only this once; keep it (e.g. export WSP_API_KEY=...):")?;
        outln!("{}", key.expose())?;
    }
    let store_name = args.store.name();
    // Installed before the announcement below: a signal right after it drains (or reloads).
    let shutdown = crate::lifecycle::shutdown_signal();
    crate::lifecycle::reload_tls_on_hangup(tls);
    if let Some(metrics) = &metrics_listener {
        outln!(
            "wsp metrics on http://{}/metrics (no key)",
            metrics.local_addr()?
        )?;
    }
    outln!(
        "wsp listening on {}://{local} (store: {store_name}, data: {})",
        listener.scheme(),
        args.data.display()
    )?;
    if args.enable_test_seams {
        tracing::warn!("test seams are enabled: any valid key can act for any owner");
    }
    let limits = args.conn.connection_limits();
    // The metrics listener stops when the main one begins to.
    let (stopping, stop) = tokio::sync::watch::channel(false);
    let metrics = metrics_listener
        .map(|listener| tokio::spawn(serve_metrics(listener, state.clone(), limits, stop)));
    let shutdown = async move {
        shutdown.await;
        stopping.send_replace(true);
    };
    // The web console calls the same router in process, with each person's own key.
    let api = wsp_server::router(state.clone());
    let app = wsp_console::router(api.clone(), console).merge(api);
    wsp_server::serve_app_with(listener, state, app, limits, shutdown).await?;
    if let Some(metrics) = metrics {
        metrics
            .await
            .map_err(|e| CliError(format!("the metrics listener failed: {e}")))??;
    }
    outln!("wsp stopped")?;
    Ok(())
}

/// Serves `GET /metrics` of `state` on `listener` without a key until `stop` turns true.
async fn serve_metrics(
    listener: tokio::net::TcpListener,
    state: AppState,
    limits: wsp_listener::ConnectionLimits,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<()> {
    let stopped = async move {
        // An error means the sender is gone: the server is stopping all the same.
        let _ = stop.wait_for(|stopping| *stopping).await;
    };
    wsp_listener::serve(listener, wsp_server::metrics_router(state), limits, stopped).await
}

/// What a PostgreSQL pool's status is as metrics.
fn pool_gauges(status: PoolStatus) -> PoolGauges {
    let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    PoolGauges {
        max: count(status.max),
        in_use: count(status.open.saturating_sub(status.idle)),
        idle: count(status.idle),
        waiting: count(status.waiting),
    }
}

/// On a key registry without keys, creates the admin key (every scope) for `default/default`.
/// The check and the insert are one step, so replicas starting at once on an empty store
/// create one admin key, printed by the replica that made it.
async fn first_start_key(registry: &dyn KeyRegistry) -> Result<Option<ApiKey>, CliError> {
    if !registry.list().await?.is_empty() {
        return Ok(None);
    }
    let key = ApiKey::generate();
    let owner = Owner::parse("default", "default").expect("static ids are valid");
    let stored = registry
        .insert_first(KeyRecord::new(&key, owner, "admin".into(), Scopes::all()))
        .await?;
    Ok(stored.then_some(key))
}
