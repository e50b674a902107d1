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

use axum::extract::State;
use serde::Deserialize;
use wsp_store::shared::{
    Publication, PublishError, PublishPrefix, agent_of_workspace, shared_workspace,
};
use wsp_store::{StoreError, StoredFile};
use wsp_types::wire::PublishResponse;
use wsp_types::{ErrorCode, Owner, WorkspacePath};

use crate::AppState;
use crate::agents::{approved, registry_error};
use crate::auth::Caller;
use crate::error::WireError;
use crate::extract::{
    Authed, IdempotencyKey, JsonBody, Registry, Reply, SmallLimit, WorkspaceWrite,
};
use crate::fails::{self, Documented, Failure};
use crate::idempotency::{fingerprint, idempotent};
use wsp_agents::{AgentRegistry, visible};

/// The route.
pub const ROUTE: &str = "/v1/host/workspace/publish";

/// The body: `path`, `targetAgentId`, optional `targetPath`, nothing else.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct PublishBody {
    path: String,
    target_agent_id: String,
    target_path: Option<String>,
}

fn forbidden(message: impl Into<String>) -> WireError {
    WireError::new(ErrorCode::Forbidden, message)
}

/// The one answer for a target that is unknown, private, or not approved for the caller.
fn not_shared(id: &str) -> WireError {
    forbidden(format!(
        "{id:?} is not a shared agent: publishing copies into a shared agent's workspace only"
    ))
}

/// The targetPath itself is not repeated: a refused path may hold what must not be echoed.
fn outside_prefix(id: &str, prefix: &PublishPrefix) -> WireError {
    forbidden(format!(
        "targetPath is outside {prefix}: publications into {id:?}'s workspace land only under \
         {prefix}"
    ))
    .with_detail("field", "targetPath")
    .with_detail("allowedPrefix", prefix.as_str())
}

fn from_shared() -> WireError {
    forbidden(
        "a shared agent's workspace cannot publish: publishing goes one way, from a private \
         workspace into a shared agent's",
    )
}

/// Whether `caller` works in a shared agent's workspace (as that agent, or with a key naming
/// its workspace).
async fn works_in_shared(registry: &dyn AgentRegistry, caller: &Caller) -> Result<bool, WireError> {
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

/// `path` or `targetPath` invalid, or the copy's place would be.
const BAD_PUBLISH_PATH: Failure = fails::fail(
    ErrorCode::ValidationError,
    "`path` or `targetPath` is not a valid workspace path, or the copy would land at one that \
     is not (`details.field`)",
);
/// The one-way, visibility and prefix rules.
const PUBLISH_REFUSED: Failure = fails::fail(
    ErrorCode::Forbidden,
    "The caller works in a shared agent's workspace, the target is not a shared agent the \
     caller may see, or `targetPath` is outside the target's publish prefix \
     (`details.allowedPrefix`)",
);
/// No source file.
const SOURCE_NOT_FOUND: Failure =
    fails::fail(ErrorCode::NotFound, "The caller has no live file at `path`");
/// The target workspace is full.
const TARGET_FULL: Failure = fails::fail(
    ErrorCode::WorkspaceTooLarge,
    "The target workspace is at `maxFiles` (`details.limit`)",
);

/// The OpenAPI operation of [`publish`] and the failures of its own steps.
pub(crate) struct PublishOp;

impl Documented for PublishOp {
    const OWN: &'static [Failure] = &[
        BAD_PUBLISH_PATH,
        fails::SECRET_REFUSED,
        PUBLISH_REFUSED,
        SOURCE_NOT_FOUND,
        TARGET_FULL,
        fails::REGISTRY_UNAVAILABLE,
        fails::STORE_UNAVAILABLE,
    ];
}

/// `POST /v1/host/workspace/publish`
#[utoipa::path(
    post,
    impl_for = PublishOp,
    path = ROUTE,
    tag = "agents",
    operation_id = "publishWorkspaceFile",
    summary = "Copy one of the caller's files into a shared agent's workspace (wsp extension)",
    description = "One way only, private to shared: a caller that works in a shared agent's workspace, or a target that is not a shared agent the caller may see (unknown, private, or under `installScope: tenant` not approved for the caller's workspace; all answered alike), is refused with 403. The copy lands under the target agent's publish prefix (`inbox/` unless the host configures another): without `targetPath` at `<prefix><path>`; a `targetPath` outside the prefix is refused with 403 (`details.allowedPrefix`). The copy is a normal write of the target workspace: a new version there and a `workspace.updated` in its feed.",
    params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first outcome of the same request.")),
    request_body(content = ref("#/components/schemas/PublishRequest"), content_type = "application/json"),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "Copied; the version it created in the target workspace.", body = ref("#/components/schemas/PublishResponse")),
    ),
)]
pub(crate) async fn publish(
    State(state): State<AppState>,
    Registry(registry): Registry,
    auth: Authed<WorkspaceWrite>,
    key: IdempotencyKey,
    body: JsonBody<PublishBody, SmallLimit>,
) -> Result<Reply, WireError> {
    let req = &body.value;
    let paths = req.paths(&state, &auth.owner)?;
    let fp = || fingerprint(&[b"PUBLISH", &body.raw]);
    idempotent(&state, &auth.owner, key, fp, async {
        let id = req.target_agent_id.as_str();
        let publication = publication(&*registry, &auth, id, paths).await?;
        let copy = publication.run(&*state.inner.store).await;
        let copy = copy.map_err(|e| publish_error(e, id, &req.path))?;
        Ok(Reply::json(&published(&copy, id)))
    })
    .await
}

impl PublishBody {
    /// `path` and `targetPath` as workspace paths (400 naming the field), refusing a
    /// `targetPath` that holds a secret.
    fn paths(
        &self,
        state: &AppState,
        owner: &Owner,
    ) -> Result<(WorkspacePath, Option<WorkspacePath>), WireError> {
        let path = WorkspacePath::parse(&self.path).map_err(|e| WireError::bad_path(&e))?;
        let target_path = match &self.target_path {
            None => None,
            Some(p) => Some(WorkspacePath::parse(p).map_err(|e| {
                WireError::validation(format!("invalid targetPath: {e}"))
                    .with_detail("field", "targetPath")
            })?),
        };
        if let Some(p) = &self.target_path {
            crate::secrets::refuse_secret(state, owner, "targetPath", p)?;
        }
        Ok((path, target_path))
    }
}

/// The answer to a publication into agent `id`: the copy's path and version there.
fn published(copy: &StoredFile, id: &str) -> PublishResponse {
    PublishResponse {
        path: copy.meta.path.clone(),
        target_agent_id: id.to_owned(),
        version: NonZeroU64::new(copy.meta.version).expect("store versions start at 1"),
    }
}

/// What publishing `path` (to `target_path`, if given) into agent `id`'s workspace means for
/// `caller`: the target is a shared agent the caller may see (approvals are read whatever the
/// target, so an unapproved agent costs what an unknown one does), the copy lands under its
/// publish prefix, and a caller working in a shared agent's workspace cannot publish at all.
async fn publication(
    registry: &dyn AgentRegistry,
    caller: &Caller,
    id: &str,
    (path, target_path): (WorkspacePath, Option<WorkspacePath>),
) -> Result<Publication, WireError> {
    if works_in_shared(registry, caller).await? {
        return Err(from_shared());
    }
    let approved = approved(registry, &caller.owner).await?;
    let agent = registry
        .agent(id)
        .await
        .map_err(registry_error)?
        .filter(|a| a.shared && a.id == id && visible(registry.install_scope(), &approved, a));
    let target: Option<Owner> = agent
        .as_ref()
        .and_then(|_| shared_workspace(id).ok())
        .map(|w| Owner::new(caller.owner.tenant.clone(), w));
    Ok(Publication {
        source: caller.owner.clone(),
        source_is_shared: false,
        path,
        target,
        target_path,
        prefix: agent.map(|a| a.publish_prefix).unwrap_or_default(),
        author: Some(caller.principal.clone()),
    })
}

/// A refused or failed publication into agent `id` of the caller's file `path` as the wire
/// says it.
fn publish_error(e: PublishError, id: &str, path: &str) -> WireError {
    match e {
        PublishError::SourceIsShared | PublishError::SameWorkspace => from_shared(),
        PublishError::TargetNotShared => not_shared(id),
        PublishError::OutsidePrefix { prefix } => outside_prefix(id, &prefix),
        PublishError::Unplaceable { prefix, error } => WireError::validation(format!(
            "without a targetPath the copy of {path:?} lands at {prefix}{path}, which is not a \
             valid path ({error}); send a targetPath under {prefix}",
        ))
        .with_detail("field", "path")
        .with_detail("allowedPrefix", prefix.as_str()),
        PublishError::Source(StoreError::NotFound) => WireError::file_not_found(path),
        PublishError::Source(other) => WireError::from_store(other, path),
        PublishError::Target { path, error } => WireError::from_store(error, path.as_str()),
        // A refusal this build does not know yet: nothing was stored, so a 400 in its words.
        other => WireError::validation(other.to_string()),
    }
}
