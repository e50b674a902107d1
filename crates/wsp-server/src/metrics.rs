//! Prometheus metrics: `GET /metrics` in the OpenMetrics text format.
//!
//! Every label value comes from a fixed set (a route template, a method, a status code, a store
//! operation's name), never from a request: no key, tenant, workspace or file path is ever a
//! label, so a client cannot grow the number of series.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use wsp_store::{CommitObserver, StoreFuture, WorkspaceStore, forward_store};

use crate::AppState;
use crate::auth::KeyAuthenticator;
use crate::error::correlation_id;
use crate::fails::{Documented, Failure};

/// The metrics route.
pub const METRICS: &str = "/metrics";

/// The media type of the exposition (OpenMetrics 1.0 text, which Prometheus asks for).
const OPENMETRICS: HeaderValue =
    HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8");

/// Upper bounds (seconds) of the latency histograms: 0.5 ms to 10 s.
const LATENCY_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Upper bounds (seconds) of the commit histogram: 50 µs to 1 s.
const COMMIT_BUCKETS: [f64; 14] = [
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
];

/// Upper bounds of the write batch histogram (changes per commit).
const BATCH_BUCKETS: [f64; 8] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0];

/// The label of requests that matched no route (answered 404 by the fallback).
const UNMATCHED: &str = "unmatched";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: &'static str,
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OpLabels {
    op: &'static str,
}

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// How a connection pool stands at a scrape (`wsp_pg_pool_*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolGauges {
    /// Most connections the pool opens.
    pub max: u64,
    /// Open connections that a call is using.
    pub in_use: u64,
    /// Open connections that no call is using.
    pub idle: u64,
    /// Calls waiting for a connection.
    pub waiting: u64,
}

type PoolSource = Box<dyn Fn() -> PoolGauges + Send + Sync>;

/// What is read only when scraped: the key cache's counters and the connection pool.
#[derive(Default)]
struct Sources {
    key_cache: OnceLock<KeyCacheCounters>,
    pool: OnceLock<PoolSource>,
}

impl std::fmt::Debug for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sources").finish_non_exhaustive()
    }
}

/// Lookups of verified key records, shared by a [`KeyAuthenticator`] and the metrics it is
/// observed by.
#[derive(Debug, Clone, Default)]
pub(crate) struct KeyCacheCounters {
    /// Served from the cache.
    pub(crate) hits: Counter,
    /// Read from the key registry.
    pub(crate) misses: Counter,
}

impl Collector for Sources {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if let Some(cache) = self.key_cache.get() {
            let counter = ConstCounter::new(0u64);
            let mut family = encoder.encode_descriptor(
                "wsp_key_cache_lookups",
                "Lookups of API key records by the authenticator: result=hit served from its \
                 cache (2 s), result=miss read from the key registry.",
                None,
                counter.metric_type(),
            )?;
            for (result, count) in [("hit", &cache.hits), ("miss", &cache.misses)] {
                let labels = [("result", result)];
                ConstCounter::new(count.get()).encode(family.encode_family(&labels)?)?;
            }
        }
        if let Some(pool) = self.pool.get() {
            let now = pool();
            let gauge = ConstGauge::new(0i64);
            let mut family = encoder.encode_descriptor(
                "wsp_pg_pool_connections",
                "Open PostgreSQL connections of this replica's pool, by state (in_use, idle).",
                None,
                gauge.metric_type(),
            )?;
            for (state, count) in [("in_use", now.in_use), ("idle", now.idle)] {
                let labels = [("state", state)];
                ConstGauge::new(gauge_value(count)).encode(family.encode_family(&labels)?)?;
            }
            for (name, help, value) in [
                (
                    "wsp_pg_pool_max_connections",
                    "Most connections this replica's PostgreSQL pool opens.",
                    now.max,
                ),
                (
                    "wsp_pg_pool_waiting",
                    "Calls waiting for a PostgreSQL connection of this replica's pool.",
                    now.waiting,
                ),
            ] {
                let gauge = ConstGauge::new(gauge_value(value));
                gauge.encode(encoder.encode_descriptor(
                    name,
                    help,
                    None,
                    gauge.metric_type(),
                )?)?;
            }
        }
        Ok(())
    }
}

fn gauge_value(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The metrics of one server: every [`AppState`] has its own ([`AppState::metrics`]).
///
/// Requests, store calls and change-feed streams are counted by the server itself; a host
/// adds what only it can see: its SQLite store's commits
/// ([`commit_observer`](Self::commit_observer)), its key cache
/// ([`observe_key_cache`](Self::observe_key_cache)) and its PostgreSQL pool
/// ([`observe_pool`](Self::observe_pool)). Cheap to clone (shared).
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<MetricsInner>,
}

struct MetricsInner {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    request_time: Family<RouteLabels, Histogram>,
    store_ops: Family<OpLabels, Histogram>,
    commit_time: Histogram,
    batch_size: Histogram,
    sse_subscribers: Gauge,
    runs_open: Gauge,
    sources: Arc<Sources>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let requests = Family::<RequestLabels, Counter>::default();
        let request_time =
            Family::<RouteLabels, Histogram>::new_with_constructor(latency_histogram as fn() -> _);
        let store_ops =
            Family::<OpLabels, Histogram>::new_with_constructor(latency_histogram as fn() -> _);
        let commit_time = Histogram::new(COMMIT_BUCKETS);
        let batch_size = Histogram::new(BATCH_BUCKETS);
        let sse_subscribers = Gauge::default();
        let runs_open = Gauge::default();
        let sources = Arc::new(Sources::default());
        let mut registry = Registry::default();
        registry.register(
            "wsp_http_requests",
            "HTTP requests answered, by method, route template and status",
            requests.clone(),
        );
        registry.register(
            "wsp_http_request_duration_seconds",
            "Time from a request's arrival to its response's head, by method and route \
             template (a change-feed stream counts until it opens)",
            request_time.clone(),
        );
        registry.register(
            "wsp_store_operation_duration_seconds",
            "Time of the store's calls, by operation (get, put, list, ...)",
            store_ops.clone(),
        );
        registry.register(
            "wsp_sqlite_commit_duration_seconds",
            "Time of each SQLite COMMIT of a write or delete: writing the WAL frames and \
             syncing them to disk (synchronous=FULL). Empty on other stores",
            commit_time.clone(),
        );
        registry.register(
            "wsp_write_batch_size",
            "Writes and deletes committed together by the SQLite writer, per commit. Empty on \
             other stores",
            batch_size.clone(),
        );
        registry.register(
            "wsp_sse_subscribers",
            "Open change-feed (SSE) streams of this server",
            sse_subscribers.clone(),
        );
        registry.register(
            "wsp_runs_open",
            "Open runs of every workspace in the store (on PostgreSQL: of every replica), \
             counted at the scrape",
            runs_open.clone(),
        );
        registry.register_collector(Box::new(sources.clone()));
        Self {
            inner: Arc::new(MetricsInner {
                registry,
                requests,
                request_time,
                store_ops,
                commit_time,
                batch_size,
                sse_subscribers,
                runs_open,
                sources,
            }),
        }
    }
}

impl Metrics {
    /// Counts the key cache's hits and misses of `auth` as `wsp_key_cache_lookups_total`.
    /// Only the first authenticator observed counts; `false` when one already does.
    pub fn observe_key_cache(&self, auth: &KeyAuthenticator) -> bool {
        self.inner
            .sources
            .key_cache
            .set(auth.cache_counters())
            .is_ok()
    }

    /// Reads a connection pool at every scrape as `wsp_pg_pool_connections{state}`,
    /// `wsp_pg_pool_max_connections` and `wsp_pg_pool_waiting`. Only the first pool observed
    /// counts; `false` when one already does.
    pub fn observe_pool(&self, pool: impl Fn() -> PoolGauges + Send + Sync + 'static) -> bool {
        self.inner.sources.pool.set(Box::new(pool)).is_ok()
    }

    /// An observer for a store's writer (`SqliteStore::observe_commits`): each commit's time
    /// becomes `wsp_sqlite_commit_duration_seconds` and its changes `wsp_write_batch_size`.
    pub fn commit_observer(&self) -> Arc<dyn CommitObserver> {
        Arc::new(self.clone())
    }

    /// The exposition in the OpenMetrics text format, as served at `/metrics`.
    pub fn render(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.inner.registry)
            .expect("writing to a String cannot fail");
        text
    }

    /// A store that times each call of `store` into `wsp_store_operation_duration_seconds`.
    pub(crate) fn metered(&self, store: Arc<dyn WorkspaceStore>) -> Arc<dyn WorkspaceStore> {
        Arc::new(MeteredStore {
            inner: store,
            ops: self.inner.store_ops.clone(),
        })
    }

    fn request(&self, method: &Method, route: String, status: StatusCode, took: Duration) {
        let method = method_label(method);
        self.inner
            .request_time
            .get_or_create(&RouteLabels {
                method,
                route: route.clone(),
            })
            .observe(took.as_secs_f64());
        self.inner
            .requests
            .get_or_create(&RequestLabels {
                method,
                route,
                status: status.as_u16(),
            })
            .inc();
    }
}

impl CommitObserver for Metrics {
    fn committed(&self, changes: usize, commit_time: Duration) {
        self.inner.commit_time.observe(commit_time.as_secs_f64());
        self.inner.batch_size.observe(changes as f64);
    }
}

/// A method's label: the standard ones by name, anything else `other` (a client can send any
/// token as a method).
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// A route template as the OpenAPI document writes it: `{*path}` becomes `{path}`.
fn route_label(matched: Option<&MatchedPath>) -> String {
    matched.map_or_else(|| UNMATCHED.to_owned(), |m| m.as_str().replace("{*", "{"))
}

/// Counts and times every request of the router by its route template (a layer inside the
/// routing, so the template is known; requests that match no route count as `unmatched`).
pub(crate) async fn track(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().clone();
    let route = route_label(req.extensions().get::<MatchedPath>());
    let resp = next.run(req).await;
    state
        .inner
        .metrics
        .request(&method, route, resp.status(), started.elapsed());
    resp
}

/// A store that times every call of the store it wraps.
struct MeteredStore {
    inner: Arc<dyn WorkspaceStore>,
    ops: Family<OpLabels, Histogram>,
}

impl MeteredStore {
    fn timed<'a, T: Send + 'a>(
        &'a self,
        op: &'static str,
        call: StoreFuture<'a, T>,
    ) -> StoreFuture<'a, T> {
        Box::pin(async move {
            let started = Instant::now();
            let result = call.await;
            self.ops
                .get_or_create(&OpLabels { op })
                .observe(started.elapsed().as_secs_f64());
            result
        })
    }
}

impl WorkspaceStore for MeteredStore {
    forward_store!(|this| this.inner, |op, call| this.timed(op, call);
        limits, features, ready, list, get, put, delete, history, snapshot, snapshot_info, list_snapshots,
        release_snapshot, open_snapshots_before, count_open_snapshots, forget_released_snapshots,
        snapshot_usage, snapshot_within, list_at, get_at, changes, subscribe, search);
}

/// Sets the gauges read from the server's state (open streams, open runs) and renders.
async fn scrape(state: &AppState) -> Response {
    let inner = &state.inner;
    inner
        .metrics
        .inner
        .sse_subscribers
        .set(gauge_value(inner.feeds.open_streams() as u64));
    match inner.store.count_open_snapshots().await {
        Ok(open) => {
            inner.metrics.inner.runs_open.set(gauge_value(open));
        }
        // A store without snapshots has no runs.
        Err(wsp_store::StoreError::Unsupported(_)) => {}
        Err(e) => {
            // The gauge keeps its last value; the cause is logged, never sent.
            let id = correlation_id();
            tracing::warn!(correlation_id = %id, error = %e, "metrics: counting open runs failed");
        }
    }
    let mut resp = (StatusCode::OK, inner.metrics.render()).into_response();
    resp.headers_mut().insert(CONTENT_TYPE, OPENMETRICS);
    resp.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// The OpenAPI operation of [`metrics`] and the failures of its own steps.
pub(crate) struct MetricsOp;

impl Documented for MetricsOp {
    const OWN: &'static [Failure] = &[];
}

/// `GET /metrics` on the main listener: the caller's key must hold `metrics:read`.
#[utoipa::path(
    get,
    impl_for = MetricsOp,
    path = METRICS,
    tag = "metrics",
    operation_id = "metrics",
    summary = "Prometheus metrics of this server (OpenMetrics text)",
    description = "Needs a key with `metrics:read` (or use the separate `--metrics-addr` listener). The OpenMetrics text of this server: requests by route template and status with latencies, store call latencies, open change-feed streams and runs. No label names a key, tenant, workspace or path.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The OpenMetrics 1.0 text exposition: requests by route template and status with latency histograms, store call latencies, SQLite commit time and batch size, open change-feed streams, open runs, key-cache lookups and the PostgreSQL pool. No label names a key, tenant, workspace or path.", content_type = "application/openmetrics-text"),
    ),
)]
pub(crate) async fn metrics(
    State(state): State<AppState>,
    _: crate::extract::Authed<crate::extract::MetricsRead>,
) -> Response {
    scrape(&state).await
}

/// `GET /metrics` on the metrics listener (`metrics_router`): no credential; that listener
/// belongs on a private interface.
pub(crate) async fn metrics_open(State(state): State<AppState>) -> Response {
    scrape(&state).await
}
