//! `GET /healthz` and `GET /readyz`: unauthenticated probes for load balancers and
//! orchestrators. Both are tiny, never cached, and name no internals.

use axum::extract::State;
use axum::response::IntoResponse;
use wsp_types::ErrorCode;

use crate::AppState;
use crate::error::{WireError, correlation_id};
use crate::extract::Reply;
use crate::fails::{self, Documented, Failure};

/// The liveness route.
pub const HEALTHZ: &str = "/healthz";
/// The readiness route.
pub const READYZ: &str = "/readyz";

/// `Cache-Control: no-store` on every answer: a probe must never see a cached one.
const NO_STORE: &str = "no-store";

/// A small JSON body with status 200.
fn ok_json(body: &'static str) -> Reply {
    Reply::encoded(body).cache(NO_STORE)
}

/// The OpenAPI operation of [`healthz`] and the failures of its own steps.
pub(crate) struct HealthzOp;

impl Documented for HealthzOp {
    const OWN: &'static [Failure] = &[];
}

/// `GET /healthz` (no auth): the process answers.
#[utoipa::path(
    get,
    impl_for = HealthzOp,
    path = HEALTHZ,
    tag = "health",
    operation_id = "healthz",
    summary = "Liveness: the process answers",
    description = "No credential is needed. 200 while the process serves requests; the store is not consulted (see `/readyz`).",
    responses((status = 200, description = "`{\"status\":\"ok\"}`", content_type = "application/json")),
)]
pub(crate) async fn healthz() -> Reply {
    ok_json(r#"{"status":"ok"}"#)
}

/// The store does not answer.
const NOT_READY: Failure = fails::fail(
    ErrorCode::ServiceUnavailable,
    "Not ready: `details.check` names what failed",
);

/// The OpenAPI operation of [`readyz`] and the failures of its own steps.
pub(crate) struct ReadyzOp;

impl Documented for ReadyzOp {
    const OWN: &'static [Failure] = &[NOT_READY];
}

/// `GET /readyz` (no auth): the store answers (SQLite writable; PostgreSQL reachable and
/// migrated to this build's schema). 503 `service_unavailable` with `details.check = "store"`
/// otherwise; the cause is logged with a correlation id, never sent.
#[utoipa::path(
    get,
    impl_for = ReadyzOp,
    path = READYZ,
    tag = "health",
    operation_id = "readyz",
    summary = "Readiness: the store answers",
    description = "No credential is needed. 200 when the store answers (SQLite writable; PostgreSQL reachable and migrated to this build's schema), otherwise 503 `service_unavailable` with `details.check` naming what failed, so a load balancer takes the replica out of rotation without restarting it.",
    responses(
        (status = 200, description = "`{\"status\":\"ready\"}`", content_type = "application/json"),
    ),
)]
pub(crate) async fn readyz(State(state): State<AppState>) -> Reply {
    match state.inner.store.ready().await {
        Ok(()) => ok_json(r#"{"status":"ready"}"#),
        Err(cause) => {
            let id = correlation_id();
            tracing::warn!(correlation_id = %id, error = %cause, "not ready: store");
            let refused = WireError::new(ErrorCode::ServiceUnavailable, "the store is not ready")
                .with_detail("check", "store")
                .with_detail("correlationId", id);
            Reply::from(refused.into_response()).cache(NO_STORE)
        }
    }
}

/// Marks the probes as needing no credential: `security: []` in the OpenAPI document.
pub(crate) struct NoSecurity;

impl utoipa::Modify for NoSecurity {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let public = [
            HEALTHZ,
            READYZ,
            crate::discovery::WELL_KNOWN,
            crate::openapi::OPENAPI_JSON,
        ];
        for path in public {
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
