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

mod agents;
mod auth;
mod cache;
pub mod config_file;
mod context;
mod cors;
mod discovery;
mod encode;
mod error;
mod events;
mod extract;
mod fails;
mod feed_hub;
mod files;
mod health;
mod idempotency;
mod memory;
mod metrics;
pub mod openapi;
mod publish;
mod request;
mod runs;
mod seams;
mod secrets;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::handler::Handler;
use axum::http::{HeaderName, HeaderValue, Request};
use axum::routing::{MethodFilter, MethodRouter, get, post};
use tower_http::catch_panic::CatchPanicLayer;
use utoipa::openapi::path::{HttpMethod, Operation};
use wsp_store::{RedactingStore, Redactor, WorkspaceStore};

use crate::fails::{Documented, Failure, HandlerFailures};

// The agent registry lives in `wsp-agents` (no HTTP); re-exported so hosts keep one import path.
pub use auth::{AuthFuture, Authenticator, Caller, KEY_CACHE_TTL, KeyAuthenticator, bearer_token};
pub use cache::{DEFAULT_FILE_CACHE_BYTES, FileCache};
pub use cors::{CorsOrigin, CorsOriginError};
pub use error::WireError;
pub use feed_hub::DEFAULT_MAX_STREAMS_PER_KEY;
pub use metrics::{Metrics, PoolGauges};
pub use runs::{RunSweep, sweep_runs};
pub use secrets::{SecretSource, TenantSecrets};
pub use wsp_agents::{
    AgentConfig, AgentConfigError, AgentRegistry, AgentsConfig, ApprovalConfig,
    ConfigAgentRegistry, InstallScopeSetting, PackConfig, RegisteredAgent,
};
pub use wsp_store::idempotency::{IdempotencyRecords, MemoryIdempotency};

/// Settings of one server.
#[derive(Debug, Clone)]
#[non_exhaustive]
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
    /// Origins (`https://app.example`, exactly as a browser sends `Origin`) whose web pages may
    /// call the API from another site (CORS). Empty, the default: no CORS header is sent and a
    /// browser keeps other sites' pages from reading any answer.
    pub cors_origins: Vec<CorsOrigin>,
    /// Most bytes of encoded `GET` answers of current files kept in memory ([`FileCache`]); 0
    /// turns the cache off.
    pub file_cache_bytes: usize,
}

impl ServerConfig {
    /// This configuration with [`ServerConfig::workspace_enabled`] set.
    pub fn with_workspace_enabled(mut self, workspace_enabled: bool) -> Self {
        self.workspace_enabled = workspace_enabled;
        self
    }

    /// This configuration with [`ServerConfig::test_seams`] set.
    pub fn with_test_seams(mut self, test_seams: bool) -> Self {
        self.test_seams = test_seams;
        self
    }

    /// This configuration with [`ServerConfig::run_ttl`] set.
    pub fn with_run_ttl(mut self, run_ttl: std::time::Duration) -> Self {
        self.run_ttl = run_ttl;
        self
    }

    /// This configuration with [`ServerConfig::ended_run_retention`] set.
    pub fn with_ended_run_retention(mut self, ended_run_retention: std::time::Duration) -> Self {
        self.ended_run_retention = ended_run_retention;
        self
    }

    /// This configuration with [`ServerConfig::max_open_runs`] set.
    pub fn with_max_open_runs(mut self, max_open_runs: u64) -> Self {
        self.max_open_runs = max_open_runs;
        self
    }

    /// This configuration with [`ServerConfig::max_pinned_bytes`] set.
    pub fn with_max_pinned_bytes(mut self, max_pinned_bytes: u64) -> Self {
        self.max_pinned_bytes = max_pinned_bytes;
        self
    }

    /// This configuration with [`ServerConfig::cors_origins`] set.
    pub fn with_cors_origins(mut self, cors_origins: Vec<CorsOrigin>) -> Self {
        self.cors_origins = cors_origins;
        self
    }

    /// This configuration with [`ServerConfig::file_cache_bytes`] set.
    pub fn with_file_cache_bytes(mut self, file_cache_bytes: usize) -> Self {
        self.file_cache_bytes = file_cache_bytes;
        self
    }
}

impl Default for ServerConfig {
    /// Workspace on, no test seams, runs live one hour, ended runs are remembered for a week,
    /// at most 64 open runs per workspace keeping at most 256 MiB of old versions, a 16 MiB
    /// cache of current files.
    fn default() -> Self {
        Self {
            workspace_enabled: true,
            test_seams: false,
            run_ttl: std::time::Duration::from_secs(3600),
            ended_run_retention: std::time::Duration::from_secs(7 * 24 * 3600),
            max_open_runs: 64,
            max_pinned_bytes: 256 * 1024 * 1024,
            cors_origins: Vec::new(),
            file_cache_bytes: cache::DEFAULT_FILE_CACHE_BYTES,
        }
    }
}

/// Everything a handler needs, shared by all requests. Made by [`AppState::builder`] (or
/// [`AppState::new`] when the defaults do); it cannot change once built.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    store: Arc<dyn WorkspaceStore>,
    auth: Arc<dyn Authenticator>,
    secrets: Arc<dyn SecretSource>,
    idempotency: Arc<dyn IdempotencyRecords>,
    config: ServerConfig,
    discovery: discovery::Rendered,
    max_body_bytes: usize,
    agents: Option<Arc<dyn AgentRegistry>>,
    feeds: feed_hub::FeedHub,
    metrics: Metrics,
    /// Encoded answers of current files; `store` forgets what changes through it.
    cache: Arc<FileCache>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// The settings of an [`AppState`] being made: a store and an authenticator, and the optional
/// rest, each with its default. Each setter may be called any number of times; the last call
/// wins. [`AppStateBuilder::build`] cannot fail.
#[must_use = "an AppStateBuilder does nothing until built"]
pub struct AppStateBuilder {
    store: Arc<dyn WorkspaceStore>,
    auth: Arc<dyn Authenticator>,
    secrets: Arc<dyn SecretSource>,
    idempotency: Arc<dyn IdempotencyRecords>,
    agents: Option<Arc<dyn AgentRegistry>>,
    config: ServerConfig,
    max_streams_per_key: usize,
}

impl std::fmt::Debug for AppStateBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppStateBuilder")
            .field("config", &self.config)
            .field("agents", &self.agents.is_some())
            .field("max_streams_per_key", &self.max_streams_per_key)
            .finish_non_exhaustive()
    }
}

impl AppStateBuilder {
    /// The [`SecretSource`] for WSR-1 (default: none, [`TenantSecrets::default`]): the server
    /// writes through a [`RedactingStore`] over the store, so every route that writes is
    /// redacted in one place.
    pub fn secrets(mut self, secrets: Arc<dyn SecretSource>) -> Self {
        self.secrets = secrets;
        self
    }

    /// Where `Idempotency-Key` records are kept (default: in process memory,
    /// [`MemoryIdempotency`]). Replicas sharing a database should share its records.
    pub fn idempotency(mut self, records: Arc<dyn IdempotencyRecords>) -> Self {
        self.idempotency = records;
        self
    }

    /// Serves the agent inventory from `registry`: `GET /v1/agents[/{agentId}]`, the
    /// `agents.manifestRuntime` block in discovery, agent principals and publishing (default:
    /// none; the agent routes answer 501 `capability_not_provided` and every credential bound
    /// to an agent answers 401).
    pub fn agents(mut self, registry: Arc<dyn AgentRegistry>) -> Self {
        self.agents = Some(registry);
        self
    }

    /// The server's settings (default: [`ServerConfig::default`]).
    pub fn config(mut self, config: ServerConfig) -> Self {
        self.config = config;
        self
    }

    /// At most `max` open change-feed streams per credential (default
    /// [`DEFAULT_MAX_STREAMS_PER_KEY`]); the next one is answered 429 `rate_limited`. 0
    /// refuses every stream.
    pub fn max_streams_per_key(mut self, max: usize) -> Self {
        self.max_streams_per_key = max;
        self
    }

    /// The state.
    pub fn build(self) -> AppState {
        // Timed below the redaction layer: the metrics show the backend's own latency.
        let metrics = Metrics::default();
        let cache = Arc::new(FileCache::new(self.config.file_cache_bytes));
        let store: Arc<dyn WorkspaceStore> = Arc::new(cache::Invalidating {
            inner: Arc::new(RedactingStore::new(
                metrics.metered(self.store),
                self.secrets.clone(),
            )),
            cache: Arc::clone(&cache),
        });
        let limits = store.limits();
        // JSON escaping can grow content up to six times (`\u00XX`); leave room for the rest.
        let max_body_bytes = usize::try_from(
            limits
                .max_file_bytes
                .saturating_mul(6)
                .saturating_add(64 * 1024),
        )
        .unwrap_or(usize::MAX);
        let discovery = discovery::document(
            &self.config,
            &limits,
            store.features(),
            max_body_bytes,
            self.agents.as_deref(),
        );
        // Callers acting as an agent get the workspace the agent registry says (agents.rs).
        let auth: Arc<dyn Authenticator> =
            Arc::new(agents::AgentResolver::new(self.auth, self.agents.clone()));
        let feeds = feed_hub::FeedHub::default();
        feeds.set_max_per_key(self.max_streams_per_key);
        AppState {
            inner: Arc::new(Inner {
                store,
                auth,
                secrets: self.secrets,
                idempotency: self.idempotency,
                config: self.config,
                discovery,
                max_body_bytes,
                agents: self.agents,
                feeds,
                metrics,
                cache,
            }),
        }
    }
}

impl AppState {
    /// A builder over a store and an authenticator; every other setting has its default until
    /// given.
    pub fn builder(
        store: Arc<dyn WorkspaceStore>,
        auth: Arc<dyn Authenticator>,
    ) -> AppStateBuilder {
        AppStateBuilder {
            store,
            auth,
            secrets: Arc::new(TenantSecrets::default()),
            idempotency: Arc::new(MemoryIdempotency::default()),
            agents: None,
            config: ServerConfig::default(),
            max_streams_per_key: DEFAULT_MAX_STREAMS_PER_KEY,
        }
    }

    /// State over a store and an authenticator under `config`, everything else by default:
    /// `AppState::builder(store, auth).config(config).build()`.
    pub fn new(
        store: Arc<dyn WorkspaceStore>,
        auth: Arc<dyn Authenticator>,
        config: ServerConfig,
    ) -> Self {
        Self::builder(store, auth).config(config).build()
    }

    /// This server's metrics (served at `GET /metrics` to keys holding `metrics:read`, and by
    /// [`metrics_router`]); a host adds its store's commits, key cache and pool to them.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// The HTTP body limit in bytes (advertised as `limits.maxRequestBodyBytes`).
    pub fn max_body_bytes(&self) -> usize {
        self.inner.max_body_bytes
    }

    /// Ends every open change-feed stream with a final `error` event (`service_unavailable`:
    /// the server is shutting down, reconnect with `Last-Event-ID`) and refuses new ones with
    /// 503, so that a graceful shutdown is not held up by endless streams. [`serve`] calls it
    /// when its shutdown begins; a host serving [`router`] itself calls it when its own does.
    pub fn close_streams(&self) {
        self.inner.feeds.close();
    }
}

/// One documented operation: its handler, mounted under the route and the method its
/// `#[utoipa::path]` annotation names (so each is written once, there), and what the OpenAPI
/// document says of it, with error responses derived from the failures of the handler's
/// extractors and of its own steps ([`fails`]).
pub(crate) struct Endpoint {
    /// The route template as axum writes it (`{*path}` spans segments).
    template: String,
    methods: Vec<HttpMethod>,
    handler: MethodRouter<AppState>,
    /// What the handler's extractors can answer, read off its signature.
    extractors: Vec<Failure>,
    /// What the handler's own steps can answer.
    own: &'static [Failure],
    operation: fn() -> Operation,
    tags: Vec<&'static str>,
}

impl Endpoint {
    /// The endpoint of `handler`, documented by `D`.
    fn new<D: Documented, H, T, A>(handler: H) -> Self
    where
        H: Handler<T, AppState> + HandlerFailures<A>,
        T: 'static,
    {
        let methods = D::methods();
        let mut router = MethodRouter::new();
        for method in &methods {
            router = router.on(method_filter(method), handler.clone());
        }
        Self {
            template: D::path(),
            methods,
            handler: router,
            extractors: <H as HandlerFailures<A>>::extractor_failures(),
            own: D::OWN,
            operation: D::operation,
            // The annotation's `tag`, kept apart from the operation by utoipa (its own
            // `#[derive(OpenApi)]` reads it the same way).
            tags: <D as utoipa::__dev::Tags>::tags(),
        }
    }

    /// Every failure the handler can answer: its extractors' and its own, each once.
    pub(crate) fn failures(&self) -> Vec<Failure> {
        fails::union(self.extractors.clone(), self.own)
    }

    /// The path as the OpenAPI document writes it (`{path}` for `{*path}`) and its operation.
    pub(crate) fn document(&self) -> (String, Vec<HttpMethod>, Operation) {
        let mut operation = fails::with_error_responses((self.operation)(), &self.failures());
        let tags = operation.tags.get_or_insert_with(Vec::new);
        tags.extend(self.tags.iter().map(|t| (*t).to_owned()));
        (
            self.template.replace("{*", "{"),
            self.methods.clone(),
            operation,
        )
    }
}

fn method_filter(method: &HttpMethod) -> MethodFilter {
    match method {
        HttpMethod::Get => MethodFilter::GET,
        HttpMethod::Put => MethodFilter::PUT,
        HttpMethod::Post => MethodFilter::POST,
        HttpMethod::Delete => MethodFilter::DELETE,
        HttpMethod::Options => MethodFilter::OPTIONS,
        HttpMethod::Head => MethodFilter::HEAD,
        HttpMethod::Patch => MethodFilter::PATCH,
        HttpMethod::Trace => MethodFilter::TRACE,
    }
}

/// `handler => Documented type`: one [`Endpoint`].
macro_rules! endpoint {
    ($handler:path => $doc:ty) => {
        Endpoint::new::<$doc, _, _, _>($handler)
    };
}

/// Every documented operation of the server, each declared once.
pub(crate) fn endpoints() -> Vec<Endpoint> {
    vec![
        endpoint!(discovery::discovery => discovery::DiscoveryOp),
        endpoint!(openapi::openapi_json => openapi::OpenApiJsonOp),
        endpoint!(health::healthz => health::HealthzOp),
        endpoint!(health::readyz => health::ReadyzOp),
        endpoint!(metrics::metrics => metrics::MetricsOp),
        endpoint!(files::list => files::ListFilesOp),
        endpoint!(files::read => files::GetFileOp),
        endpoint!(files::write => files::PutFileOp),
        endpoint!(files::delete => files::DeleteFileOp),
        endpoint!(files::history => files::HistoryOp),
        endpoint!(memory::search => memory::SearchOp),
        endpoint!(memory::append => memory::AppendMemoryOp),
        endpoint!(context::live => context::LiveContextOp),
        endpoint!(events::events => events::EventsOp),
        endpoint!(publish::publish => publish::PublishOp),
        endpoint!(agents::list => agents::ListAgentsOp),
        endpoint!(agents::get_one => agents::GetAgentOp),
        endpoint!(runs::create => runs::CreateRunOp),
        endpoint!(runs::list => runs::ListRunsOp),
        endpoint!(runs::get_run => runs::GetRunOp),
        endpoint!(runs::cancel => runs::CancelRunOp),
        endpoint!(runs::list_files => runs::ListRunFilesOp),
        endpoint!(runs::get_file => runs::GetRunFileOp),
        endpoint!(context::run => context::RunContextOp),
    ]
}

/// Every route of the router: its template and its handlers. The documented endpoints (those
/// sharing a template merged) and the two that the document leaves out: `files/` with no path
/// (always 400) and the test seam, when on. The extractors read their path parameters through
/// the template ([`extract::Template`]).
fn routes(state: &AppState) -> Vec<(Arc<str>, MethodRouter<AppState>)> {
    let mut all: Vec<(Arc<str>, MethodRouter<AppState>)> = Vec::new();
    for e in endpoints() {
        match all.iter_mut().find(|(t, _)| **t == *e.template) {
            Some((_, handlers)) => *handlers = std::mem::take(handlers).merge(e.handler),
            None => all.push((e.template.into(), e.handler)),
        }
    }
    all.push((
        "/v1/host/workspace/files/".into(),
        get(files::empty_path)
            .put(files::empty_path)
            .delete(files::empty_path),
    ));
    if state.inner.config.test_seams {
        all.push((seams::SAMPLE_OP.into(), post(seams::sample_op)));
    }
    all
}

/// The wsp routes, ready to serve or to nest in a host's own router.
pub fn router(state: AppState) -> Router {
    let mut app = Router::new();
    for (template, handlers) in routes(&state) {
        let path = template.to_string();
        let handlers = handlers.layer(axum::Extension(extract::Template(template)));
        app = app.route(&path, handlers);
    }
    let every_secret = state.inner.secrets.every_secret();
    let cors = cors::layer(&state.inner.config.cors_origins);
    app.fallback(files::no_route)
        .method_not_allowed_fallback(files::method_not_allowed)
        // Inside the routing, so each request is counted under its route template.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            metrics::track,
        ))
        .with_state(state)
        .layer(CatchPanicLayer::custom(files::panic_response))
        .layer(
            tower_http::trace::TraceLayer::new_for_http()
                .make_span_with(move |req: &Request<_>| make_span(req, every_secret.as_deref()))
                .on_response(access_log),
        )
        // Before routing and authentication: a preflight carries no credential.
        .layer(tower::util::option_layer(cors))
        // Outermost: the span above and every response, even a panic's, see the same id.
        .layer(axum::middleware::from_fn(request_id))
}

/// Only `GET /metrics`, without a credential, for a second listener that Prometheus scrapes
/// (`wsp serve --metrics-addr`); every other path is 404. Bind it to a private interface: the
/// figures count every tenant's requests (they name no tenant, key or path).
pub fn metrics_router(state: AppState) -> Router {
    Router::new()
        .route(metrics::METRICS, get(metrics::metrics_open))
        .fallback(files::no_route)
        .method_not_allowed_fallback(files::method_not_allowed)
        .with_state(state)
        .layer(CatchPanicLayer::custom(files::panic_response))
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

/// The log target of the access line: `WSP_LOG=info,wsp::access=off` turns the line off and
/// keeps every other (a write to standard error per request is a measurable share of a small
/// `GET`'s cost).
pub const ACCESS_LOG: &str = "wsp::access";

/// The access log: one INFO line per request (target [`ACCESS_LOG`]), inside its span (request
/// id, method and the redacted path), with the status and the latency in milliseconds. No
/// header is logged.
fn access_log<B>(resp: &axum::http::Response<B>, latency: std::time::Duration, _: &tracing::Span) {
    tracing::info!(
        target: ACCESS_LOG,
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

pub use wsp_listener::{ConnectionLimits, Listener, ServerTls};

/// [`serve_with`] under the default [`ConnectionLimits`] (the connection cap follows the
/// process's open-file limit).
pub async fn serve(
    listener: impl Into<Listener>,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, state, ConnectionLimits::default(), shutdown).await
}

/// Serves `router(state)` on `listener` (a `TcpListener`, or a [`Listener`] with [`ServerTls`]
/// for HTTPS) under `limits` ([`wsp_listener::serve`]: header, idle, body and write timeouts,
/// and a connection cap that closes the connection idle longest to make room) until
/// `shutdown` resolves, then ends the open change-feed streams ([`AppState::close_streams`]),
/// stops accepting and drains in-flight requests for at most `limits.drain_timeout`.
/// Meanwhile, every quarter of the run time to live (between one second and one minute), it ends
/// runs past their time to live, so an abandoned run stops pinning versions, and forgets runs
/// that ended longer ago than the retention ([`sweep_runs`]).
pub async fn serve_with(
    listener: impl Into<Listener>,
    state: AppState,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(state.clone());
    serve_app_with(listener, state, app, limits, shutdown).await
}

/// [`serve_with`] serving `app` instead of `router(state)`: a host's router that holds the
/// wsp routes (e.g. merged with a web console's) and is built on `state`, whose streams and
/// runs it ends and sweeps as [`serve_with`] does.
pub async fn serve_app_with(
    listener: impl Into<Listener>,
    state: AppState,
    app: Router,
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
    let served = wsp_listener::serve(listener, app, limits, shutdown).await;
    sweeper.abort();
    served
}

/// `application/json` as a header value.
pub(crate) const JSON: HeaderValue = HeaderValue::from_static("application/json");

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use axum::body::Body;
    use tower::Service;
    use wsp_store::MemoryStore;
    use wsp_store::keys::MemoryKeyRegistry;

    use super::*;

    /// Each builder setting may be given again: the last one counts, nothing panics.
    #[test]
    fn a_second_setting_replaces_the_first() {
        let seams = ServerConfig::default().with_test_seams(true);
        let state = AppState::builder(
            Arc::new(MemoryStore::default()),
            Arc::new(KeyAuthenticator::new(
                Arc::new(MemoryKeyRegistry::default()),
            )),
        )
        .config(ServerConfig::default())
        .config(seams)
        .max_streams_per_key(1)
        .max_streams_per_key(0)
        .build();
        assert!(state.inner.config.test_seams);
        assert!(state.agent_registry().is_none());
        assert!(routes(&state).iter().any(|(t, _)| **t == *seams::SAMPLE_OP));
    }

    /// A request path for a route template.
    pub(super) fn concrete(template: &str) -> String {
        template
            .replace("{*path}", "notes/a.md")
            .replace("{runId}", &"a".repeat(32))
            .replace("{*agentId}", "cook")
    }

    /// Every (path, method) the router answers is in the OpenAPI document, and every operation
    /// of the document is answered by the router: probed on the real router, where a method a
    /// route does not serve is 405 and a path no route serves is 404 `no route`.
    #[tokio::test]
    async fn the_router_and_the_document_agree_both_ways() {
        let state = AppState::new(
            Arc::new(MemoryStore::default()),
            Arc::new(KeyAuthenticator::new(
                Arc::new(MemoryKeyRegistry::default()),
            )),
            ServerConfig::default(),
        );
        let mut app = router(state.clone());
        let doc = openapi::document();
        let documented: BTreeSet<(String, String)> = doc["paths"]
            .as_object()
            .expect("paths")
            .iter()
            .flat_map(|(path, item)| {
                let item = item.as_object().expect("a path item");
                item.keys()
                    .map(|m| (path.clone(), m.to_uppercase()))
                    .collect::<Vec<_>>()
            })
            .collect();
        // The one route the document leaves out: `files/` with no path, answered 400 always.
        let error_only = "/v1/host/workspace/files/";
        let mut served = BTreeSet::new();
        for (template, _) in routes(&state) {
            let template = &*template;
            for method in ["GET", "PUT", "POST", "DELETE", "PATCH"] {
                let req = Request::builder()
                    .method(method)
                    .uri(concrete(template))
                    .body(Body::empty())
                    .expect("a request");
                let resp = app.call(req).await.expect("infallible");
                assert_ne!(resp.status(), 404, "{method} {template} routes nowhere");
                if resp.status() != 405 && template != error_only {
                    served.insert((template.replace("{*", "{"), method.to_owned()));
                }
            }
        }
        let missing: Vec<_> = served.difference(&documented).collect();
        assert!(missing.is_empty(), "served but not documented: {missing:?}");
        let unserved: Vec<_> = documented.difference(&served).collect();
        assert!(
            unserved.is_empty(),
            "documented but not served: {unserved:?}"
        );
    }
}

/// The error responses of the document against what the real router answers.
#[cfg(test)]
mod derived_errors {
    use std::collections::BTreeSet;

    use axum::body::Body;
    use tower::Service;
    use wsp_store::{MemoryStore, StoreError};
    use wsp_types::{Owner, Scopes};

    use super::*;

    /// `all` holds every scope, `none` no scope, `down` meets an unavailable key registry.
    struct Fixed;

    impl Authenticator for Fixed {
        fn authenticate<'a>(&'a self, token: &'a str) -> AuthFuture<'a> {
            let caller = |scopes| Caller {
                owner: Owner::parse("t", "w").expect("an owner"),
                principal: "p".into(),
                scopes,
                agent: None,
            };
            let answer = match token {
                "all" => Ok(Some(caller(Scopes::all()))),
                "none" => Ok(Some(caller(Scopes::NONE))),
                "down" => Err(StoreError::unavailable("the key registry is down")),
                _ => Ok(None),
            };
            Box::pin(async move { answer })
        }
    }

    fn state(workspace_enabled: bool, agents: bool) -> AppState {
        let mut b = AppState::builder(Arc::new(MemoryStore::default()), Arc::new(Fixed)).config(
            ServerConfig {
                workspace_enabled,
                ..ServerConfig::default()
            },
        );
        if agents {
            let registry = ConfigAgentRegistry::from_config(&AgentsConfig::default())
                .expect("an empty configuration");
            b = b.agents(Arc::new(registry));
        }
        b.build()
    }

    fn method(m: &HttpMethod) -> &'static str {
        match m {
            HttpMethod::Get => "GET",
            HttpMethod::Put => "PUT",
            HttpMethod::Post => "POST",
            HttpMethod::Delete => "DELETE",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Options => "OPTIONS",
            HttpMethod::Head => "HEAD",
            HttpMethod::Trace => "TRACE",
        }
    }

    /// The requests each operation is probed with: no credential, a credential without scope,
    /// an unavailable key registry, a plain request, a body that is not JSON, a body declared
    /// too large, one `Idempotency-Key` on two different requests, and a request malformed
    /// everywhere (path encoding, query, key, JSON).
    fn probes(template: &str, method: &str) -> Vec<Request<Body>> {
        let good = super::tests::concrete(template);
        let bad = template
            .replace("{*path}", "a%zz")
            .replace("{runId}", &"a".repeat(32))
            .replace("{*agentId}", "%zz")
            + "?prefix=a&prefix=b&version=0&since=x";
        let req = |uri: &str, token: Option<&str>, headers: &[(&str, &str)], body: &'static str| {
            let mut r = Request::builder().method(method).uri(uri);
            if let Some(t) = token {
                r = r.header("authorization", format!("Bearer {t}"));
            }
            for (k, v) in headers {
                r = r.header(*k, *v);
            }
            r.body(Body::from(body)).expect("a request")
        };
        let json = [("content-type", "application/json")];
        // Two bodies the route accepts, that differ.
        let (first, second) = if template == publish::ROUTE {
            (
                r#"{"path":"a.md","targetAgentId":"x"}"#,
                r#"{"path":"b.md","targetAgentId":"x"}"#,
            )
        } else {
            (r#"{"content":"a"}"#, r#"{"content":"b"}"#)
        };
        vec![
            req(&good, None, &json, "{}"),
            req(&good, Some("none"), &json, "{}"),
            req(&good, Some("down"), &json, "{}"),
            req(&good, Some("all"), &json, "{}"),
            req(&good, Some("all"), &[("content-type", "text/plain")], "x"),
            req(
                &good,
                Some("all"),
                &[
                    ("content-type", "application/json"),
                    ("content-length", "1000000000000"),
                ],
                "",
            ),
            // The same key on two different requests: the second is a mismatch.
            req(
                &good,
                Some("all"),
                &[
                    ("content-type", "application/json"),
                    ("idempotency-key", "k"),
                ],
                first,
            ),
            req(
                &good,
                Some("all"),
                &[
                    ("content-type", "application/json"),
                    ("idempotency-key", "k"),
                    ("if-match", "\"e1\""),
                ],
                second,
            ),
            req(
                &bad,
                Some("all"),
                &[
                    ("content-type", "application/json"),
                    ("idempotency-key", ""),
                ],
                "{",
            ),
        ]
    }

    fn statuses(failures: &[Failure]) -> BTreeSet<u16> {
        failures.iter().map(|f| f.status()).collect()
    }

    /// Every error status the router answers for an operation is documented for it; every
    /// status an extractor of its handler can answer is reached by the probes (so none is
    /// claimed that the handler never returns); and the document's error responses are
    /// exactly the derived ones, none written by hand.
    #[tokio::test]
    async fn documented_errors_are_the_ones_the_router_answers() {
        let doc = openapi::document();
        let mut apps = [
            router(state(true, true)),
            router(state(false, false)),
            router(state(true, false)),
        ];
        for endpoint in endpoints() {
            let (path, methods, _) = endpoint.document();
            let derived = statuses(&endpoint.failures());
            for m in &methods {
                let m = method(m);
                let responses = doc["paths"][&path][m.to_lowercase()]["responses"]
                    .as_object()
                    .unwrap_or_else(|| panic!("{m} {path} is documented"));
                let documented: BTreeSet<u16> = responses
                    .keys()
                    .filter_map(|s| s.parse().ok())
                    .filter(|s| *s >= 400)
                    .collect();
                assert_eq!(documented, derived, "{m} {path}: the document's errors");
                let mut seen = BTreeSet::new();
                for app in &mut apps {
                    for req in probes(&endpoint.template, m) {
                        let resp = app.call(req).await.expect("infallible");
                        let status = resp.status().as_u16();
                        if status >= 400 {
                            seen.insert(status);
                        }
                    }
                }
                let undocumented: Vec<_> = seen.difference(&documented).collect();
                assert!(
                    undocumented.is_empty(),
                    "{m} {path} answers {undocumented:?}, which the document does not list"
                );
                let unreached: Vec<_> = statuses(&endpoint.extractors)
                    .difference(&seen)
                    .copied()
                    .collect();
                assert!(
                    unreached.is_empty(),
                    "{m} {path}: its extractors claim {unreached:?}, never answered"
                );
            }
        }
    }
}
