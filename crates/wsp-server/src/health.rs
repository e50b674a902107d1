//! `GET /healthz` and `GET /readyz`: unauthenticated probes for load balancers and
//! orchestrators. Both are tiny, never cached, and name no internals.

use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use wsp_types::ErrorCode;

use crate::error::{ApiError, correlation_id};
use crate::{AppState, JSON};

/// The liveness route.
pub const HEALTHZ: &str = "/healthz";
/// The readiness route.
pub const READYZ: &str = "/readyz";

/// `Cache-Control: no-store` on every answer: a probe must never see a cached one.
fn no_store(mut resp: Response) -> Response {
    resp.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// A small JSON body with status 200.
fn ok_json(body: &'static str) -> Response {
    let mut resp = (StatusCode::OK, body).into_response();
    resp.headers_mut().insert(CONTENT_TYPE, JSON);
    no_store(resp)
}

/// `GET /healthz` (no auth): the process answers.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "health",
    operation_id = "healthz",
    summary = "Liveness: the process answers",
    responses((status = 200, description = "`{\"status\":\"ok\"}`", content_type = "application/json")),
)]
pub async fn healthz() -> Response {
    ok_json(r#"{"status":"ok"}"#)
}

/// `GET /readyz` (no auth): the store answers (SQLite writable; PostgreSQL reachable and
/// migrated to this build's schema). 503 `service_unavailable` with `details.check = "store"`
/// otherwise; the cause is logged with a correlation id, never sent.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "health",
    operation_id = "readyz",
    summary = "Readiness: the store answers",
    responses(
        (status = 200, description = "`{\"status\":\"ready\"}`", content_type = "application/json"),
        (status = 503, description = "Not ready: `details.check` names what failed.", body = ref("#/components/schemas/ErrorEnvelope")),
    ),
)]
pub async fn readyz(State(state): State<AppState>) -> Response {
    match state.inner.store.ready().await {
        Ok(()) => ok_json(r#"{"status":"ready"}"#),
        Err(cause) => {
            let id = correlation_id();
            tracing::warn!(correlation_id = %id, error = %cause, "not ready: store");
            no_store(
                ApiError::new(ErrorCode::ServiceUnavailable, "the store is not ready")
                    .with_detail("check", "store")
                    .with_detail("correlationId", id)
                    .into_response(),
            )
        }
    }
}

/// Marks the probes as needing no credential: `security: []` in the OpenAPI document.
pub(crate) struct NoSecurity;

impl utoipa::Modify for NoSecurity {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for path in [HEALTHZ, READYZ] {
            if let Some(op) = openapi
                .paths
                .paths
                .get_mut(path)
                .and_then(|item| item.get.as_mut())
            {
                op.security = Some(Vec::new());
            }
        }
    }
}
