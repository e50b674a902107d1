//! `POST /v1/host/workspace/publish` (wsp extension, WIRE.md §8, seed 001): a private agent
//! copies one of its files into a shared agent's workspace. One way only: a caller working in a
//! shared agent's workspace cannot publish, and the target must be a shared agent the caller
//! may see: under `installScope: tenant`, one whose pack the caller's workspace approved. Any
//! other target (unknown, private, unapproved) gets the same 403, so publishing reveals no more
//! than the inventory does.
//!
//! A copy lands only under the target agent's publish prefix (`inbox/` unless configured):
//! without `targetPath` at `<prefix><path>`, and a `targetPath` outside the prefix is refused
//! (403, `details.allowedPrefix`). So no caller can replace a shared agent's own files, such as
//! the `AGENTS.md` every user of that agent reads.
//!
//! The copy is a normal write of the target workspace (a new version there, a
//! `workspace.updated` in its feed), made by [`wsp_store::shared::Publication`], the same
//! operation the virtual filesystem's `workspace_publish` tool runs.

use std::num::NonZeroU64;

use axum::body::Body;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use wsp_store::StoreError;
use wsp_store::shared::{
    Publication, PublishError, PublishPrefix, agent_of_workspace, shared_workspace,
};
use wsp_types::wire::PublishResponse;
use wsp_types::{ErrorCode, Owner, Scope, WorkspacePath};

use crate::agents::{AgentRegistry, approved, registry_error, visible};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::files::{caller, idempotent};
use crate::idempotency::fingerprint;
use crate::request::require_json;
use crate::{AppState, JSON};

/// The route.
pub const ROUTE: &str = "/v1/host/workspace/publish";

/// Largest body read: the request is three short strings.
const MAX_BODY: usize = 64 * 1024;

/// The body: `path`, `targetAgentId`, optional `targetPath`, nothing else.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PublishBody {
    path: String,
    target_agent_id: String,
    target_path: Option<String>,
}

fn forbidden(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::Forbidden, message)
}

/// The one answer for a target that is unknown, private, or not approved for the caller.
fn not_shared(id: &str) -> ApiError {
    forbidden(format!(
        "{id:?} is not a shared agent: publishing copies into a shared agent's workspace only"
    ))
}

/// The targetPath itself is not repeated: a refused path may hold what must not be echoed.
fn outside_prefix(id: &str, prefix: &PublishPrefix) -> ApiError {
    forbidden(format!(
        "targetPath is outside {prefix}: publications into {id:?}'s workspace land only under \
         {prefix}"
    ))
    .with_detail("field", "targetPath")
    .with_detail("allowedPrefix", prefix.as_str())
}

fn from_shared() -> ApiError {
    forbidden(
        "a shared agent's workspace cannot publish: publishing goes one way, from a private \
         workspace into a shared agent's",
    )
}

/// Whether `caller` works in a shared agent's workspace (as that agent, or with a key naming
/// its workspace).
async fn works_in_shared(registry: &dyn AgentRegistry, caller: &Caller) -> Result<bool, ApiError> {
    let candidates = [
        caller.agent.as_deref(),
        agent_of_workspace(&caller.owner.workspace),
    ];
    for id in candidates.into_iter().flatten() {
        let agent = registry.agent(id).await.map_err(registry_error)?;
        if agent.is_some_and(|a| a.shared) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `POST /v1/host/workspace/publish`
#[utoipa::path(
    post,
    path = "/v1/host/workspace/publish",
    tag = "agents",
    operation_id = "publishWorkspaceFile",
    summary = "Copy one of the caller's files into a shared agent's workspace (wsp extension)",
    description = "One way only, private to shared: a caller that works in a shared agent's workspace, or a target that is not a shared agent the caller may see (unknown, private, or under `installScope: tenant` not approved for the caller's workspace; all answered alike), is refused with 403. The copy lands under the target agent's publish prefix (`inbox/` unless the host configures another): without `targetPath` at `<prefix><path>`; a `targetPath` outside the prefix is refused with 403 (`details.allowedPrefix`). The copy is a normal write of the target workspace: a new version there and a `workspace.updated` in its feed.",
    params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first outcome of the same request.")),
    request_body(content = ref("#/components/schemas/PublishRequest"), content_type = "application/json"),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "Copied; the version it created in the target workspace.", body = ref("#/components/schemas/PublishResponse")),
        (status = 400, description = "Invalid path or body (`validation_error`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 401, description = "No or unknown credential (`unauthenticated`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 403, description = "The credential lacks `workspace:write` (`details.requiredScope`), the caller works in a shared agent's workspace, the target is not a shared agent the caller may see, or `targetPath` is outside the target's publish prefix (`details.allowedPrefix`) (`forbidden`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 404, description = "The caller has no live file at `path` (`not_found`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 409, description = "An `Idempotency-Key` was reused for another request (`idempotency_key_mismatch`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 413, description = "The target workspace is at `maxFiles`, or the body is too large (`workspace_too_large`, `details.limit`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 415, description = "The body is not `application/json` (`unsupported_media_type`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 501, description = "The host offers no workspace or no agents (`capability_not_provided`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 503, description = "Storage unavailable; retry (`service_unavailable`).", body = ref("#/components/schemas/ErrorEnvelope")),
    ),
)]
pub async fn publish(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let registry = state.agent_registry().cloned().ok_or_else(|| {
        ApiError::new(
            ErrorCode::CapabilityNotProvided,
            "this host has no agents, so no shared workspace to publish to",
        )
    })?;
    let caller = caller(&state, &headers, Scope::WorkspaceWrite).await?;
    require_json(&headers)?;
    let raw = crate::files::read_body(&headers, body, MAX_BODY).await?;
    let req: PublishBody = serde_json::from_slice(&raw)
        .map_err(|e| ApiError::validation(format!("invalid request body: {e}")))?;
    let path = WorkspacePath::parse(&req.path).map_err(|e| ApiError::bad_path(&e))?;
    let target_path = match &req.target_path {
        None => None,
        Some(p) => Some(WorkspacePath::parse(p).map_err(|e| {
            ApiError::validation(format!("invalid targetPath: {e}"))
                .with_detail("field", "targetPath")
        })?),
    };
    if let Some(p) = &req.target_path {
        crate::secrets::refuse_secret(&state, &caller.owner, "targetPath", p)?;
    }
    let fp = || fingerprint(&[b"PUBLISH", &raw]);
    idempotent(&state, &caller.owner, &headers, fp, async {
        let source_is_shared = works_in_shared(&*registry, &caller).await?;
        if source_is_shared {
            return Err(from_shared());
        }
        let id = req.target_agent_id.as_str();
        // Approvals are read whatever the target, so an unapproved agent costs what an unknown
        // one does.
        let approved = approved(&*registry, &caller.owner).await?;
        let agent = registry
            .agent(id)
            .await
            .map_err(registry_error)?
            .filter(|a| a.shared && a.id == id && visible(registry.install_scope(), &approved, a));
        let target: Option<Owner> = agent
            .as_ref()
            .and_then(|_| shared_workspace(id).ok())
            .map(|w| Owner::new(caller.owner.tenant.clone(), w));
        let publication = Publication {
            source: caller.owner.clone(),
            source_is_shared,
            path: path.clone(),
            target,
            target_path,
            prefix: agent.map(|a| a.publish_prefix).unwrap_or_default(),
            author: Some(caller.principal.clone()),
        };
        let copy = publication
            .run(&*state.inner.store)
            .await
            .map_err(|e| match e {
                PublishError::SourceIsShared | PublishError::SameWorkspace => from_shared(),
                PublishError::TargetNotShared => not_shared(id),
                PublishError::OutsidePrefix { prefix } => outside_prefix(id, &prefix),
                PublishError::Unplaceable { prefix, error } => ApiError::validation(format!(
                    "without a targetPath the copy of {:?} lands at {prefix}{}, which is not a \
                     valid path ({error}); send a targetPath under {prefix}",
                    path.as_str(),
                    path.as_str()
                ))
                .with_detail("field", "path")
                .with_detail("allowedPrefix", prefix.as_str()),
                PublishError::Source(StoreError::NotFound) => ApiError::file_not_found(&req.path),
                PublishError::Source(other) => ApiError::from_store(other, path.as_str()),
                PublishError::Target { path, error } => ApiError::from_store(error, path.as_str()),
            })?;
        let version = NonZeroU64::new(copy.meta.version).expect("store versions start at 1");
        let answer = PublishResponse {
            path: copy.meta.path.clone(),
            target_agent_id: id.to_owned(),
            version,
        };
        let body = serde_json::to_vec(&answer).expect("wire types always serialize");
        let mut resp = (StatusCode::OK, body).into_response();
        resp.headers_mut().insert(CONTENT_TYPE, JSON);
        Ok(resp)
    })
    .await
}
