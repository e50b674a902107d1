//! The conformance test seam (WIRE.md §9): off unless the server starts with it enabled.

use axum::extract::State;
use serde::Deserialize;
use wsp_store::{FileWrite, Precondition, WorkspaceStore};
use wsp_types::{ETag, MediaType, Owner, WorkspacePath, WorkspacePrefix};

use crate::error::WireError;
use crate::extract::{AnyScope, Authed, JsonBody, OrWire, Reply};
use crate::files::parse_path;
use crate::{AppState, encode};

/// The seam's route.
pub const SAMPLE_OP: &str = "/v1/host/sample/workspace/op";

/// One operation for an explicit owner.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SampleOp {
    tenant: String,
    workspace: String,
    op: Op,
    path: Option<String>,
    content: Option<String>,
    content_type: Option<String>,
    if_match: Option<String>,
    prefix: Option<String>,
    version: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Op {
    List,
    Get,
    Put,
    Delete,
}

/// `POST /v1/host/sample/workspace/op`: runs one store operation for the named owner, with the
/// same statuses and bodies as the file routes. Needs a valid credential; exists only when the
/// server was started with test seams enabled.
pub(crate) async fn sample_op(
    State(state): State<AppState>,
    _: Authed<AnyScope>,
    body: JsonBody<SampleOp>,
) -> Result<Reply, WireError> {
    let op = body.value;
    let owner = op.owner()?;
    let store = &*state.inner.store;
    match op.op {
        Op::List => list(store, &owner, &op).await,
        Op::Get => get(store, &owner, &op).await,
        Op::Put => put(store, &owner, op).await,
        Op::Delete => delete(store, &owner, &op).await,
    }
}

/// The seam's `list`: every live file unless `prefix` narrows it.
async fn list(
    store: &dyn WorkspaceStore,
    owner: &Owner,
    op: &SampleOp,
) -> Result<Reply, WireError> {
    let prefix = match &op.prefix {
        Some(p) => WorkspacePrefix::parse(p)
            .map_err(|e| WireError::validation(format!("invalid prefix: {e}")))?,
        None => WorkspacePrefix::all(),
    };
    let files = store.list(owner, &prefix).await.or_wire("")?;
    Ok(Reply::encoded(encode::file_list(files)))
}

/// The seam's `get`: the live file, or `version` of it.
async fn get(store: &dyn WorkspaceStore, owner: &Owner, op: &SampleOp) -> Result<Reply, WireError> {
    let path = op.path()?;
    let file = store.get(owner, &path, op.version).await;
    Ok(Reply::encoded(encode::file(file.or_wire(path.as_str())?)))
}

/// The seam's `delete`, under `ifMatch` if sent.
async fn delete(
    store: &dyn WorkspaceStore,
    owner: &Owner,
    op: &SampleOp,
) -> Result<Reply, WireError> {
    let path = op.path()?;
    let deleted = store.delete(owner, &path, op.precondition()).await;
    deleted.or_wire(path.as_str())?;
    Ok(Reply::no_content())
}

/// The seam's `put`: `content` is required, the media type defaults to `text/markdown`.
async fn put(store: &dyn WorkspaceStore, owner: &Owner, op: SampleOp) -> Result<Reply, WireError> {
    let path = op.path()?;
    let pre = op.precondition();
    let content = op
        .content
        .ok_or_else(|| WireError::validation("content is required"))?;
    let content_type = match op.content_type {
        None => MediaType::markdown(),
        Some(t) => MediaType::parse(&t).map_err(|_| crate::files::bad_media_type())?,
    };
    let write = FileWrite::text(content, content_type).by("test-seam");
    let file = store.put(owner, &path, write, pre).await;
    Ok(Reply::encoded(encode::file(file.or_wire(path.as_str())?)))
}

impl SampleOp {
    /// The owner the operation runs for.
    fn owner(&self) -> Result<Owner, WireError> {
        Owner::parse(&self.tenant, &self.workspace)
            .map_err(|e| WireError::validation(format!("tenant/workspace: {e}")))
    }

    /// The operation's path, required and checked the way the file routes check one.
    fn path(&self) -> Result<WorkspacePath, WireError> {
        let raw = self
            .path
            .as_deref()
            .ok_or_else(|| WireError::validation("path is required"))?;
        parse_path(raw)
    }

    /// `ifMatch` as a precondition (none when absent).
    fn precondition(&self) -> Precondition {
        self.if_match.as_ref().map_or(Precondition::None, |t| {
            Precondition::IfMatch(vec![ETag::from_wire(t.clone())])
        })
    }
}
