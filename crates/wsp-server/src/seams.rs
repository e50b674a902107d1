//! The conformance test seam (WIRE.md §9): off unless the server starts with it enabled.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Deserialize;
use wsp_store::{FileWrite, Precondition};
use wsp_types::{ETag, Owner, WorkspacePrefix};

use crate::auth::authenticate;
use crate::error::ApiError;
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
pub async fn sample_op(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    authenticate(&*state.inner.auth, &headers).await?;
    crate::request::require_json(&headers)?;
    let op: SampleOp = serde_json::from_slice(&body)
        .map_err(|e| ApiError::validation(format!("invalid request body: {e}")))?;
    let owner = Owner::parse(&op.tenant, &op.workspace)
        .map_err(|e| ApiError::validation(format!("tenant/workspace: {e}")))?;
    let store = &state.inner.store;
    let path = || {
        let raw = op
            .path
            .as_deref()
            .ok_or_else(|| ApiError::validation("path is required"))?;
        parse_path(raw)
    };
    let pre = op.if_match.as_ref().map_or(Precondition::None, |t| {
        Precondition::IfMatch(vec![ETag::from_wire(t.clone())])
    });
    let ok = |body: Vec<u8>| {
        (
            StatusCode::OK,
            [(axum::http::header::CONTENT_TYPE, crate::JSON)],
            body,
        )
            .into_response()
    };
    match op.op {
        Op::List => {
            let prefix = match &op.prefix {
                Some(p) => WorkspacePrefix::parse(p)
                    .map_err(|e| ApiError::validation(format!("invalid prefix: {e}")))?,
                None => WorkspacePrefix::all(),
            };
            let files = store
                .list(&owner, &prefix)
                .await
                .map_err(|e| ApiError::from_store(e, ""))?;
            Ok(ok(encode::file_list(files)))
        }
        Op::Get => {
            let path = path()?;
            let file = store
                .get(&owner, &path, op.version)
                .await
                .map_err(|e| ApiError::from_store(e, path.as_str()))?;
            Ok(ok(encode::file(file)))
        }
        Op::Put => {
            let path = path()?;
            let content = op
                .content
                .ok_or_else(|| ApiError::validation("content is required"))?;
            let write = FileWrite {
                content,
                content_type: op.content_type.unwrap_or_else(|| "text/markdown".into()),
                author: Some("test-seam".into()),
            };
            let file = store
                .put(&owner, &path, write, pre)
                .await
                .map_err(|e| ApiError::from_store(e, path.as_str()))?;
            Ok(ok(encode::file(file)))
        }
        Op::Delete => {
            let path = path()?;
            store
                .delete(&owner, &path, pre)
                .await
                .map_err(|e| ApiError::from_store(e, path.as_str()))?;
            Ok(StatusCode::NO_CONTENT.into_response())
        }
    }
}
