//! The wsp HTTP server skeleton: the OpenWOP `host.workspace` wire on axum.
//!
//! **Invariant:** only this crate knows axum. Handlers are thin: decode the request (every
//! failure becomes a wire error envelope), authenticate, call the store, encode. The owner of
//! every store call comes from the credential alone.
//!
//! Host authors mount [`router`] inside their own app and plug their own [`Authenticator`],
//! [`SecretSource`] and [`WorkspaceStore`]:
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use std::sync::Arc;
//! use wsp_server::{AppState, KeyAuthenticator, ServerConfig};
//! use wsp_store::{MemoryStore, keys::MemoryKeyRegistry};
//!
//! let state = AppState::new(
//!     Arc::new(MemoryStore::default()),
//!     Arc::new(KeyAuthenticator::new(Arc::new(MemoryKeyRegistry::default()))),
//!     ServerConfig::default(),
//! );
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8787").await?;
//! wsp_server::serve(listener, state, std::future::pending()).await
//! # }
//! ```

mod agent_config;
mod agents;
mod auth;
pub mod config_file;
mod discovery;
mod encode;
mod error;
mod events;
mod feed_hub;
mod files;
mod health;
mod idempotency;
pub mod openapi;
mod publish;
mod request;
mod runs;
mod seams;
mod secrets;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderName, HeaderValue, Request};
use axum::routing::{get, post};
use tower_http::catch_panic::CatchPanicLayer;
use wsp_store::{RedactingStore, Redactor, WorkspaceStore};

pub use agent_config::{
    AgentConfig, AgentConfigError, AgentsConfig, ApprovalConfig, ConfigAgentRegistry,
    InstallScopeSetting, PackConfig,
};
pub use agents::{AgentRegistry, RegisteredAgent};
pub use auth::{AuthFuture, Authenticator, Caller, KEY_CACHE_TTL, KeyAuthenticator, bearer_token};
pub use error::ApiError;
pub use feed_hub::DEFAULT_MAX_STREAMS_PER_KEY;
pub use runs::{RunSweep, sweep_runs};
pub use secrets::{SecretSource, TenantSecrets};
pub use wsp_store::idempotency::{IdempotencyRecords, MemoryIdempotency};

/// Settings of one server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Whether the `host.workspace` capability is offered (off: its endpoints answer 501).
    pub workspace_enabled: bool,
    /// Whether the conformance test seam (`POST /v1/host/sample/workspace/op`) exists.
    pub test_seams: bool,
    /// How long a run lives before it ends by itself (`completed`) and releases its snapshot.
    pub run_ttl: std::time::Duration,
    /// How long the record of an ended run is kept (`GET /v1/runs/{runId}` answers its status);
    /// after that the run is unknown (404).
    pub ended_run_retention: std::time::Duration,
    /// Most open runs per workspace (`{tenant, workspace}`); the next `POST /v1/runs` is
    /// answered 429 `rate_limited` with `details.limit = maxOpenRuns`.
    pub max_open_runs: u64,
    /// Most bytes of old versions that a workspace's open runs may keep from pruning; while
    /// they keep more, `POST /v1/runs` is answered 429 with `details.limit = maxPinnedBytes`
    /// (writes still succeed).
    pub max_pinned_bytes: u64,
}

impl Default for ServerConfig {
    /// Workspace on, no test seams, runs live one hour, ended runs are remembered for a week,
    /// at most 64 open runs per workspace keeping at most 256 MiB of old versions.
    fn default() -> Self {
        Self {
            workspace_enabled: true,
            test_seams: false,
            run_ttl: std::time::Duration::from_secs(3600),
            ended_run_retention: std::time::Duration::from_secs(7 * 24 * 3600),
            max_open_runs: 64,
            max_pinned_bytes: 256 * 1024 * 1024,
        }
    }
}

/// Everything a handler needs, shared by all requests.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn WorkspaceStore>,
    auth: Arc<dyn Authenticator>,
    secrets: Arc<dyn SecretSource>,
    idempotency: Arc<dyn IdempotencyRecords>,
    config: ServerConfig,
    discovery: bytes::Bytes,
    max_body_bytes: usize,
    agents: agents::AgentsCell,
    feeds: feed_hub::FeedHub,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// State over a store and an authenticator, with no secrets to redact.
    pub fn new(
        store: Arc<dyn WorkspaceStore>,
        auth: Arc<dyn Authenticator>,
        config: ServerConfig,
    ) -> Self {
        Self::with_secrets(store, auth, Arc::new(TenantSecrets::default()), config)
    }

    /// State with a [`SecretSource`] for WSR-1: the server writes through a
    /// [`RedactingStore`] over `store`, so every route that writes is redacted in one place.
    pub fn with_secrets(
        store: Arc<dyn WorkspaceStore>,
        auth: Arc<dyn Authenticator>,
        secrets: Arc<dyn SecretSource>,
        config: ServerConfig,
    ) -> Self {
        let store: Arc<dyn WorkspaceStore> = Arc::new(RedactingStore::new(store, secrets.clone()));
        let limits = store.limits();
        // JSON escaping can grow content up to six times (`\u00XX`); leave room for the rest.
        let max_body_bytes = usize::try_from(
            limits
                .max_file_bytes
                .saturating_mul(6)
                .saturating_add(64 * 1024),
        )
        .unwrap_or(usize::MAX);
        let discovery = discovery::document(&config, &limits, store.features(), max_body_bytes);
        // Callers acting as an agent get the workspace the agent registry says (agents.rs).
        let agents = agents::AgentsCell::default();
        let auth: Arc<dyn Authenticator> =
            Arc::new(agents::AgentResolver::new(auth, agents.clone()));
        Self {
            inner: Arc::new(Inner {
                store,
                auth,
                secrets,
                idempotency: Arc::new(MemoryIdempotency::default()),
                config,
                discovery,
                max_body_bytes,
                agents,
                feeds: feed_hub::FeedHub::default(),
            }),
        }
    }

    /// The same state with `Idempotency-Key` records kept in `records` (default: in process
    /// memory, [`MemoryIdempotency`]). Replicas sharing a database should share its records.
    pub fn with_idempotency(self, records: Arc<dyn IdempotencyRecords>) -> Self {
        let Inner {
            store,
            auth,
            secrets,
            idempotency: _,
            config,
            discovery,
            max_body_bytes,
            agents,
            feeds,
        } = Arc::try_unwrap(self.inner).unwrap_or_else(|shared| Inner {
            store: shared.store.clone(),
            auth: shared.auth.clone(),
            secrets: shared.secrets.clone(),
            idempotency: shared.idempotency.clone(),
            config: shared.config.clone(),
            discovery: shared.discovery.clone(),
            max_body_bytes: shared.max_body_bytes,
            agents: shared.agents.clone(),
            feeds: shared.feeds.clone(),
        });
        Self {
            inner: Arc::new(Inner {
                store,
                auth,
                secrets,
                idempotency: records,
                config,
                discovery,
                max_body_bytes,
                agents,
                feeds,
            }),
        }
    }

    /// The HTTP body limit in bytes (advertised as `limits.maxRequestBodyBytes`).
    pub fn max_body_bytes(&self) -> usize {
        self.inner.max_body_bytes
    }

    /// The same state with at most `max` open change-feed streams per credential (default
    /// [`DEFAULT_MAX_STREAMS_PER_KEY`]); the next one is answered 429 `rate_limited`. 0 refuses
    /// every stream.
    pub fn with_max_streams_per_key(self, max: usize) -> Self {
        self.inner.feeds.set_max_per_key(max);
        self
    }

    /// Ends every open change-feed stream with a final `error` event (`service_unavailable`:
    /// the server is shutting down, reconnect with `Last-Event-ID`) and refuses new ones with
    /// 503, so that a graceful shutdown is not held up by endless streams. [`serve`] calls it
    /// when its shutdown begins; a host serving [`router`] itself calls it when its own does.
    pub fn close_streams(&self) {
        self.inner.feeds.close();
    }
}

/// The wsp routes, ready to serve or to nest in a host's own router.
pub fn router(state: AppState) -> Router {
    let mut app = Router::new()
        .route("/.well-known/openwop", get(discovery::discovery))
        .route("/v1/openapi.json", get(openapi::openapi_json))
        .route(health::HEALTHZ, get(health::healthz))
        .route(health::READYZ, get(health::readyz))
        .route(files::LIST, get(files::list))
        .route(
            &format!("{}/", files::LIST),
            get(files::empty_path)
                .put(files::empty_path)
                .delete(files::empty_path),
        )
        .route(
            &format!("{}{{*path}}", files::FILE_PREFIX),
            get(files::read).put(files::write).delete(files::delete),
        )
        .route(
            &format!("{}{{*path}}", files::HISTORY_PREFIX),
            get(files::history),
        )
        .route("/v1/host/workspace/events", get(events::events))
        .route(publish::ROUTE, post(publish::publish))
        .route(agents::LIST, get(agents::list))
        .route(
            &format!("{}{{*id}}", agents::ONE_PREFIX),
            get(agents::get_one),
        )
        .route("/v1/runs", post(runs::create))
        .route("/v1/runs/{run_id}", get(runs::get_run))
        .route("/v1/runs/{run_id}/cancel", post(runs::cancel))
        .route("/v1/runs/{run_id}/workspace/files", get(runs::list_files))
        .route(
            "/v1/runs/{run_id}/workspace/files/{*path}",
            get(runs::get_file),
        );
    if state.inner.config.test_seams {
        app = app.route(seams::SAMPLE_OP, post(seams::sample_op));
    }
    let every_secret = state.inner.secrets.every_secret();
    app.fallback(files::no_route)
        .method_not_allowed_fallback(files::method_not_allowed)
        .with_state(state)
        .layer(CatchPanicLayer::custom(files::panic_response))
        .layer(
            tower_http::trace::TraceLayer::new_for_http()
                .make_span_with(move |req: &Request<_>| make_span(req, every_secret.as_deref()))
                .on_response(access_log),
        )
        // Outermost: the span above and every response, even a panic's, see the same id.
        .layer(axum::middleware::from_fn(request_id))
}

/// The request id header, read from the client and echoed on every response.
const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// A client's request id is kept when it is 1 to 64 visible ASCII characters.
fn valid_request_id(v: &HeaderValue) -> bool {
    let b = v.as_bytes();
    !b.is_empty() && b.len() <= 64 && b.iter().all(|c| (0x21..=0x7e).contains(c))
}

/// Gives every request an `x-request-id` (the client's when valid, else a fresh one) before
/// the log span is made, and echoes it on the response.
async fn request_id(
    mut req: Request<axum::body::Body>,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let id = match req.headers().get(&REQUEST_ID) {
        Some(v) if valid_request_id(v) => v.clone(),
        _ => HeaderValue::from_str(&error::correlation_id()).expect("hex is a header value"),
    };
    req.headers_mut().insert(REQUEST_ID, id.clone());
    let mut resp = next.run(req).await;
    resp.headers_mut().insert(REQUEST_ID, id);
    resp
}

/// The access log: one INFO line per request, inside its span (request id, method and the
/// redacted path), with the status and the latency in milliseconds. No header is logged.
fn access_log<B>(resp: &axum::http::Response<B>, latency: std::time::Duration, _: &tracing::Span) {
    tracing::info!(
        status = resp.status().as_u16(),
        latency_ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
        "request done"
    );
}

fn make_span<B>(req: &Request<B>, every_secret: Option<&Redactor>) -> tracing::Span {
    // The request id ties log lines together (set by `request_id` when the router's layers
    // run; a fresh one otherwise); the Authorization header is never recorded.
    let id = req
        .headers()
        .get(&REQUEST_ID)
        .filter(|v| valid_request_id(v))
        .and_then(|v| v.to_str().ok())
        .map_or_else(error::correlation_id, str::to_owned);
    // A path holding a secret is refused, and logged redacted.
    let path = secrets::loggable_path(every_secret, req.uri().path());
    tracing::info_span!("request", id = %id, method = %req.method(), path = %path)
}

pub use wsp_listener::ConnectionLimits;

/// [`serve_with`] under the default [`ConnectionLimits`] (the connection cap follows the
/// process's open-file limit).
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, state, ConnectionLimits::default(), shutdown).await
}

/// Serves `router(state)` on `listener` under `limits` ([`wsp_listener::serve`]: header, idle,
/// body and write timeouts, and a connection cap that closes the connection idle longest to
/// make room) until `shutdown` resolves, then ends the open change-feed streams
/// ([`AppState::close_streams`]), stops accepting and drains in-flight requests for at most
/// `limits.drain_timeout`.
/// Meanwhile, every quarter of the run time to live (between one second and one minute), it ends
/// runs past their time to live, so an abandoned run stops pinning versions, and forgets runs
/// that ended longer ago than the retention ([`sweep_runs`]).
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    state: AppState,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // Open change-feed streams never end by themselves: end them when the shutdown begins.
    let shutdown = {
        let state = state.clone();
        async move {
            shutdown.await;
            state.close_streams();
        }
    };
    let sweeper = tokio::spawn(runs::sweep_forever(state.clone()));
    let served = wsp_listener::serve(listener, router(state), limits, shutdown).await;
    sweeper.abort();
    served
}

/// `application/json` as a header value.
pub(crate) const JSON: HeaderValue = HeaderValue::from_static("application/json");
