//! `wsp serve`: the HTTP server on the embedded default (SQLite) or in memory.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, ValueEnum};
use wsp_server::{AppState, KeyAuthenticator, ServerConfig};
use wsp_store::keys::{ApiKey, KeyRecord, KeyRegistry};
use wsp_store::{Limits, MemoryStore, WorkspaceStore};
use wsp_store_sqlite::SqliteStore;
use wsp_store_sqlite::approvals::SqliteApprovals;
use wsp_store_sqlite::keys::SqliteKeyRegistry;
use wsp_types::{Owner, Scopes};

use crate::CliError;
use crate::agents::approvals_file;
use crate::config::FileConfig;
use crate::keys::key_file;

/// Where workspace files are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StoreKind {
    /// One SQLite file in the data directory (the embedded default).
    Sqlite,
    /// Process memory: everything is lost at exit (keys still live in the data directory).
    Memory,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8787")]
    addr: SocketAddr,
    /// Data directory (created if missing): the SQLite file and the key file.
    #[arg(long, default_value = "./wsp-data")]
    data: PathBuf,
    /// Storage backend.
    #[arg(long, value_enum, default_value_t = StoreKind::Sqlite)]
    store: StoreKind,
    /// Largest file content in UTF-8 bytes.
    #[arg(long, default_value_t = Limits::default().max_file_bytes, value_parser = clap::value_parser!(u64).range(1..))]
    max_file_bytes: u64,
    /// Most live files per workspace.
    #[arg(long, default_value_t = Limits::default().max_files, value_parser = clap::value_parser!(u64).range(1..))]
    max_files: u64,
    /// Versions retained per file.
    #[arg(long, default_value_t = Limits::default().max_versions, value_parser = clap::value_parser!(u64).range(1..))]
    max_versions: u64,
    /// Configuration file (TOML): secrets to redact per tenant, agent packs and approvals.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Expose the conformance test seam `POST /v1/host/sample/workspace/op`. Never in production.
    #[arg(long)]
    enable_test_seams: bool,
    /// Seconds a run lives before it ends by itself (`completed`) and releases its snapshot.
    #[arg(long, default_value_t = 3600, value_parser = clap::value_parser!(u64).range(1..=31_536_000))]
    run_ttl: u64,
}

/// Runs the server until Ctrl-C or SIGTERM, then drains in-flight requests.
pub async fn run(args: ServeArgs) -> Result<(), CliError> {
    init_logging();
    let file_config = match &args.config {
        Some(path) => FileConfig::load(path)?,
        None => FileConfig::default(),
    };
    std::fs::create_dir_all(&args.data).map_err(|e| {
        CliError(format!(
            "cannot use data directory {}: {e}",
            args.data.display()
        ))
    })?;
    let registry = SqliteKeyRegistry::open(&key_file(&args.data)).map_err(|e| {
        CliError(format!(
            "cannot use data directory {}: {e}",
            args.data.display()
        ))
    })?;
    let first_key = first_start_key(&registry).await?;
    let limits = Limits {
        max_file_bytes: args.max_file_bytes,
        max_files: args.max_files,
        max_versions: args.max_versions,
    };
    let store: Arc<dyn WorkspaceStore> = match args.store {
        StoreKind::Sqlite => {
            let file = args.data.join("wsp.sqlite3");
            Arc::new(SqliteStore::open(&file, limits).map_err(|e| {
                CliError(format!(
                    "cannot use data directory {}: {e}",
                    args.data.display()
                ))
            })?)
        }
        StoreKind::Memory => Arc::new(MemoryStore::new(limits)),
    };
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .map_err(|e| CliError(format!("cannot listen on {}: {e}", args.addr)))?;
    let local = listener.local_addr()?;
    let config = ServerConfig {
        workspace_enabled: true,
        test_seams: args.enable_test_seams,
        run_ttl: std::time::Duration::from_secs(args.run_ttl),
    };
    let state = AppState::with_secrets(
        store,
        Arc::new(KeyAuthenticator::new(Arc::new(registry))),
        Arc::new(file_config.secrets()?),
        config,
    );
    // [agents]: the inventory, agent principals and publishing; approvals made with
    // `wsp agents approve` live in the data directory and count at once.
    let state = match file_config.agents() {
        Some(agents) => {
            let stored = SqliteApprovals::open(&approvals_file(&args.data)).map_err(|e| {
                CliError(format!(
                    "cannot use data directory {}: {e}",
                    args.data.display()
                ))
            })?;
            state.with_agents(Arc::new(
                agents.clone().with_stored_approvals(Arc::new(stored)),
            ))
        }
        None => state,
    };
    if let Some(key) = first_key {
        println!("First start: created an admin key for tenant `default`, workspace `default`.");
        println!("It is shown only this once; keep it (e.g. export WSP_API_KEY=...):");
        println!("{}", key.expose());
    }
    let store_name = match args.store {
        StoreKind::Sqlite => "sqlite",
        StoreKind::Memory => "memory",
    };
    println!(
        "wsp listening on http://{local} (store: {store_name}, data: {})",
        args.data.display()
    );
    if args.enable_test_seams {
        tracing::warn!("test seams are enabled: any valid key can act for any owner");
    }
    wsp_server::serve(listener, state, shutdown_signal()).await?;
    println!("wsp stopped");
    Ok(())
}

/// On a data directory without keys, creates the admin key (every scope) for `default/default`.
async fn first_start_key(registry: &SqliteKeyRegistry) -> Result<Option<ApiKey>, CliError> {
    if !registry.list().await?.is_empty() {
        return Ok(None);
    }
    let key = ApiKey::generate();
    let owner = Owner::parse("default", "default").expect("static ids are valid");
    registry
        .insert(KeyRecord::new(&key, owner, "admin".into(), Scopes::all()))
        .await?;
    Ok(Some(key))
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("WSP_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down: draining in-flight requests");
}
