//! The `host.workspace` file endpoints (RFC 0059 §C, WIRE.md §4).

use std::any::Any;

use axum::body::Body;
use axum::extract::State;
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE, ETAG};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Deserialize;
use wsp_store::{FileWrite, Precondition};
use wsp_types::{ErrorCode, LimitKind, Owner, Scope, WorkspacePath};

use crate::auth::{Caller, authenticate};
use crate::error::ApiError;
use crate::idempotency::{Begin, fingerprint, validate_key};
use crate::request::{
    precondition, prefix_param, query_params, require_json, version_param, workspace_path,
};
use crate::{AppState, JSON, encode};

/// The list route.
pub const LIST: &str = "/v1/host/workspace/files";
/// The prefix of one file's route.
pub const FILE_PREFIX: &str = "/v1/host/workspace/files/";
/// The prefix of one file's history route (extension).
pub const HISTORY_PREFIX: &str = "/v1/host/workspace/history/";

/// The PUT body: `content`, optional `contentType`, nothing else.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PutBody {
    content: String,
    content_type: Option<String>,
}

/// 501 unless the capability is on, then the authenticated caller holding `scope`.
pub(crate) async fn caller(
    state: &AppState,
    headers: &HeaderMap,
    scope: Scope,
) -> Result<Caller, ApiError> {
    if !state.inner.config.workspace_enabled {
        return Err(ApiError::new(
            ErrorCode::CapabilityNotProvided,
            "this host does not offer the host.workspace capability",
        ));
    }
    let caller = authenticate(&*state.inner.auth, headers).await?;
    caller.require(scope)?;
    Ok(caller)
}

fn json_response(status: StatusCode, body: Vec<u8>, etag: Option<&str>) -> Response {
    let mut resp = (status, body).into_response();
    resp.headers_mut().insert(CONTENT_TYPE, JSON);
    if let Some(tag) = etag.and_then(|t| HeaderValue::from_str(t).ok()) {
        resp.headers_mut().insert(ETAG, tag);
    }
    resp
}

/// `GET /v1/host/workspace/files?prefix=P`
#[utoipa::path(
    get,
    path = "/v1/host/workspace/files",
    tag = "workspace",
    operation_id = "listWorkspaceFiles",
    summary = "List live files (no bodies), sorted by path",
    params(("prefix" = Option<String>, Query, description = "Plain string prefix of the paths to list.")),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The caller's live files.", body = ref("#/components/schemas/WorkspaceFileList")),
        (status = 400, description = "Invalid path, query or body (`validation_error`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 401, description = "No or unknown credential (`unauthenticated`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 403, description = "The credential lacks the scope (`forbidden`, `details.requiredScope`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 501, description = "The host does not offer `host.workspace` (`capability_not_provided`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 503, description = "Storage unavailable; retry (`service_unavailable`).", body = ref("#/components/schemas/ErrorEnvelope")),
    ),
)]
pub async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, ApiError> {
    let caller = caller(&state, &headers, Scope::WorkspaceRead).await?;
    let prefix = prefix_param(&query_params(uri.query())?)?;
    let files = state
        .inner
        .store
        .list(&caller.owner, &prefix)
        .await
        .map_err(|e| ApiError::from_store(e, prefix.as_str()))?;
    Ok(json_response(
        StatusCode::OK,
        encode::file_list(files),
        None,
    ))
}

/// `GET /v1/host/workspace/files/{path}[?version=N]`
#[utoipa::path(
    get,
    path = "/v1/host/workspace/files/{path}",
    tag = "workspace",
    operation_id = "getWorkspaceFile",
    summary = "Read a file, or a retained version of it",
    params(
        ("path" = String, Path, description = "Workspace path, raw (`notes/plan.md`) or percent-encoded (`notes%2Fplan.md`); decoded once, never repaired."),
        ("version" = Option<u64>, Query, minimum = 1, description = "A retained version of the current life."),
    ),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The file; the `ETag` header repeats `etag`.", body = ref("#/components/schemas/WorkspaceFile"),
            headers(("ETag" = String, description = "The version's etag."))),
        (status = 400, description = "Invalid path, query or body (`validation_error`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 401, description = "No or unknown credential (`unauthenticated`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 403, description = "The credential lacks the scope (`forbidden`, `details.requiredScope`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 404, description = "No such live file or retained version; another owner's file answers the same (`not_found`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 501, description = "The host does not offer `host.workspace` (`capability_not_provided`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 503, description = "Storage unavailable; retry (`service_unavailable`).", body = ref("#/components/schemas/ErrorEnvelope")),
    ),
)]
pub async fn read(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, ApiError> {
    let caller = caller(&state, &headers, Scope::WorkspaceRead).await?;
    let path = workspace_path(uri.path(), FILE_PREFIX)?;
    let version = version_param(&query_params(uri.query())?)?;
    let file = state
        .inner
        .store
        .get(&caller.owner, &path, version)
        .await
        .map_err(|e| ApiError::from_store(e, path.as_str()))?;
    let etag = file.meta.etag.as_str().to_owned();
    Ok(json_response(
        StatusCode::OK,
        encode::file(file),
        Some(&etag),
    ))
}

/// `GET /v1/host/workspace/history/{path}` (extension): retained versions, newest first.
#[utoipa::path(
    get,
    path = "/v1/host/workspace/history/{path}",
    tag = "workspace",
    operation_id = "getWorkspaceFileHistory",
    summary = "Retained versions of a live file, newest first (wsp extension)",
    params(("path" = String, Path, description = "Workspace path, raw (`notes/plan.md`) or percent-encoded (`notes%2Fplan.md`); decoded once, never repaired.")),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The retained versions of the current life.", body = ref("#/components/schemas/WorkspaceFileHistory")),
        (status = 400, description = "Invalid path, query or body (`validation_error`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 401, description = "No or unknown credential (`unauthenticated`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 403, description = "The credential lacks the scope (`forbidden`, `details.requiredScope`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 404, description = "No such live file or retained version; another owner's file answers the same (`not_found`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 501, description = "The host does not offer `host.workspace` (`capability_not_provided`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 503, description = "Storage unavailable; retry (`service_unavailable`).", body = ref("#/components/schemas/ErrorEnvelope")),
    ),
)]
pub async fn history(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, ApiError> {
    let caller = caller(&state, &headers, Scope::WorkspaceRead).await?;
    let path = workspace_path(uri.path(), HISTORY_PREFIX)?;
    let versions = state
        .inner
        .store
        .history(&caller.owner, &path)
        .await
        .map_err(|e| ApiError::from_store(e, path.as_str()))?;
    Ok(json_response(
        StatusCode::OK,
        encode::history(&path, versions),
        None,
    ))
}

/// `PUT /v1/host/workspace/files/{path}`
#[utoipa::path(
    put,
    path = "/v1/host/workspace/files/{path}",
    tag = "workspace",
    operation_id = "putWorkspaceFile",
    summary = "Create or replace a file atomically",
    params(
        ("path" = String, Path, description = "Workspace path, raw (`notes/plan.md`) or percent-encoded (`notes%2Fplan.md`); decoded once, never repaired."),
        ("If-Match" = Option<String>, Header, description = "Write only if the live etag is one of these, or `*` for any live version."),
        ("If-None-Match" = Option<String>, Header, description = "`*`: write only if the path has no live file."),
        ("Idempotency-Key" = Option<String>, Header, description = "Replays the first outcome of the same request."),
    ),
    request_body(content = ref("#/components/schemas/WorkspaceFileCreate"), content_type = "application/json"),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "Stored: version 1 on create, plus 1 on each replace.", body = ref("#/components/schemas/WorkspaceFile"),
            headers(("ETag" = String, description = "The new version's etag."))),
        (status = 400, description = "Invalid path, query or body (`validation_error`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 401, description = "No or unknown credential (`unauthenticated`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 403, description = "The credential lacks the scope (`forbidden`, `details.requiredScope`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 409, description = "`If-Match`/`If-None-Match` failed (`workspace_conflict`, `details.currentVersion`) or an `Idempotency-Key` was reused for another request (`idempotency_key_mismatch`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 413, description = "Over `maxFileBytes`, `maxFiles` or the body limit (`workspace_too_large`, `details.limit`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 415, description = "The body is not `application/json` (`unsupported_media_type`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 501, description = "The host does not offer `host.workspace` (`capability_not_provided`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 503, description = "Storage unavailable; retry (`service_unavailable`).", body = ref("#/components/schemas/ErrorEnvelope")),
    ),
)]
pub async fn write(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Result<Response, ApiError> {
    let caller = caller(&state, &headers, Scope::WorkspaceWrite).await?;
    let path = workspace_path(uri.path(), FILE_PREFIX)?;
    let pre = precondition(&headers)?;
    require_json(&headers)?;
    let raw = read_body(&headers, body, state.max_body_bytes()).await?;
    let put: PutBody = serde_json::from_slice(&raw)
        .map_err(|e| ApiError::validation(format!("invalid request body: {e}")))?;
    let limits = state.inner.store.limits();
    if put.content.len() as u64 > limits.max_file_bytes {
        return Err(ApiError::too_large(
            LimitKind::MaxFileBytes,
            limits.max_file_bytes,
        ));
    }
    let content_type = match put.content_type {
        None => "text/markdown".to_owned(),
        Some(t) if valid_media_type(&t) => t,
        Some(_) => {
            return Err(ApiError::validation(
                "contentType must be a media type like text/markdown",
            )
            .with_detail("field", "contentType"));
        }
    };
    let fp = || {
        fingerprint(&[
            b"PUT",
            path.as_str().as_bytes(),
            &precondition_bytes(&headers),
            &raw,
        ])
    };
    idempotent(&state, &caller.owner, &headers, fp, async {
        // The store is a RedactingStore: it redacts the content and refuses a secret in the
        // path or the media type.
        let write = FileWrite {
            content: put.content,
            content_type,
            author: Some(caller.principal.clone()),
        };
        let stored = state
            .inner
            .store
            .put(&caller.owner, &path, write, pre)
            .await
            .map_err(|e| ApiError::from_store(e, path.as_str()))?;
        let etag = stored.meta.etag.as_str().to_owned();
        Ok(json_response(
            StatusCode::OK,
            encode::file(stored),
            Some(&etag),
        ))
    })
    .await
}

/// `DELETE /v1/host/workspace/files/{path}`
#[utoipa::path(
    delete,
    path = "/v1/host/workspace/files/{path}",
    tag = "workspace",
    operation_id = "deleteWorkspaceFile",
    summary = "Tombstone a file",
    params(
        ("path" = String, Path, description = "Workspace path, raw (`notes/plan.md`) or percent-encoded (`notes%2Fplan.md`); decoded once, never repaired."),
        ("If-Match" = Option<String>, Header, description = "Delete only if the live etag is one of these."),
        ("Idempotency-Key" = Option<String>, Header, description = "Replays the first outcome of the same request."),
    ),
    security(("bearerAuth" = [])),
    responses(
        (status = 204, description = "Deleted; the path can be written again, starting at version 1."),
        (status = 400, description = "Invalid path, query or body (`validation_error`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 401, description = "No or unknown credential (`unauthenticated`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 403, description = "The credential lacks the scope (`forbidden`, `details.requiredScope`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 404, description = "No such live file or retained version; another owner's file answers the same (`not_found`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 409, description = "`If-Match`/`If-None-Match` failed (`workspace_conflict`, `details.currentVersion`) or an `Idempotency-Key` was reused for another request (`idempotency_key_mismatch`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 501, description = "The host does not offer `host.workspace` (`capability_not_provided`).", body = ref("#/components/schemas/ErrorEnvelope")),
        (status = 503, description = "Storage unavailable; retry (`service_unavailable`).", body = ref("#/components/schemas/ErrorEnvelope")),
    ),
)]
pub async fn delete(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, ApiError> {
    let caller = caller(&state, &headers, Scope::WorkspaceWrite).await?;
    let path = workspace_path(uri.path(), FILE_PREFIX)?;
    let pre = precondition(&headers)?;
    if pre == Precondition::IfNoneMatchAny {
        return Err(ApiError::validation(
            "If-None-Match makes no sense on DELETE",
        ));
    }
    let fp = || {
        fingerprint(&[
            b"DELETE",
            path.as_str().as_bytes(),
            &precondition_bytes(&headers),
        ])
    };
    idempotent(&state, &caller.owner, &headers, fp, async {
        state
            .inner
            .store
            .delete(&caller.owner, &path, pre)
            .await
            .map_err(|e| ApiError::from_store(e, path.as_str()))?;
        Ok(StatusCode::NO_CONTENT.into_response())
    })
    .await
}

/// Runs a mutation under its `Idempotency-Key`, if the request sent one.
pub(crate) async fn idempotent(
    state: &AppState,
    owner: &Owner,
    headers: &HeaderMap,
    fingerprint: impl FnOnce() -> [u8; 32],
    run: impl Future<Output = Result<Response, ApiError>>,
) -> Result<Response, ApiError> {
    let Some(raw_key) = headers.get(HeaderName::from_static("idempotency-key")) else {
        return run.await;
    };
    let key = validate_key(raw_key)?;
    crate::secrets::refuse_secret(state, owner, "Idempotency-Key", &key)?;
    let claim = match crate::idempotency::begin(&state.inner.idempotency, owner, key, fingerprint())
        .await?
    {
        Begin::Replay(stored) => return Ok(crate::idempotency::replay(&stored)),
        Begin::Run(claim) => claim,
    };
    let response = run.await.unwrap_or_else(IntoResponse::into_response);
    let (parts, body) = response.into_parts();
    // Our responses are small and already buffered, so collecting cannot fail in practice.
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let headers: Vec<(HeaderName, HeaderValue)> = [CONTENT_TYPE, ETAG]
        .into_iter()
        .filter_map(|h| parts.headers.get(&h).map(|v| (h, v.clone())))
        .collect();
    // 5xx and 400/401/403 are never recorded (WIRE §3): a retry runs again.
    let replayable =
        !(parts.status.is_server_error() || matches!(parts.status.as_u16(), 400 | 401 | 403));
    claim
        .finish(replayable.then(|| crate::idempotency::record(parts.status, &headers, &body)))
        .await;
    Ok(Response::from_parts(parts, Body::from(body)))
}

fn precondition_bytes(headers: &HeaderMap) -> Vec<u8> {
    let mut out = Vec::new();
    for name in ["if-match", "if-none-match"] {
        for v in headers.get_all(name) {
            out.extend_from_slice(name.as_bytes());
            out.push(b':');
            out.extend_from_slice(v.as_bytes());
            out.push(b'\n');
        }
    }
    out
}

/// Reads a request body up to `limit` bytes; over it is 413 with `details.limit = requestBody`
/// (an oversized body is drained first, so the client reads the answer).
pub(crate) async fn read_body(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let too_large = || ApiError::too_large(LimitKind::RequestBody, limit as u64);
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        drain(body, limit).await;
        return Err(too_large());
    }
    let mut body = body;
    let mut buf = bytes::BytesMut::new();
    while let Some(frame) = http_body_util::BodyExt::frame(&mut body).await {
        let frame =
            frame.map_err(|_| ApiError::validation("the request body could not be read"))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > limit {
                drain(body, limit).await;
                return Err(too_large());
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf.freeze())
}

/// Reads and discards what is left of an oversized body, up to about `limit` more bytes, so
/// that a client still sending it reads our 413 instead of a broken pipe. Past that the
/// connection is dropped rather than spending more on it.
async fn drain(mut body: Body, limit: usize) {
    let mut seen = 0usize;
    while let Some(Ok(frame)) = http_body_util::BodyExt::frame(&mut body).await {
        seen += frame.data_ref().map_or(0, |d| d.len());
        if seen > limit.saturating_mul(2) {
            break;
        }
    }
}

/// `type/subtype` with optional parameters, visible ASCII, at most 255 bytes.
fn valid_media_type(t: &str) -> bool {
    let essence = t.split(';').next().unwrap_or_default().trim();
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    t.len() <= 255
        && t.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
        && essence
            .split_once('/')
            .is_some_and(|(a, b)| token(a) && token(b))
}

/// `…/files/` with nothing after it.
pub async fn empty_path() -> ApiError {
    ApiError::validation("invalid workspace path: path is empty").with_detail("field", "path")
}

/// Any route that does not exist.
pub async fn no_route(uri: Uri) -> ApiError {
    ApiError::new(ErrorCode::NotFound, format!("no route for {}", uri.path()))
}

/// A route that exists, with the wrong method.
pub async fn method_not_allowed(method: Method) -> ApiError {
    ApiError::new(
        ErrorCode::MethodNotAllowed,
        format!("{method} is not allowed here"),
    )
}

/// A handler panicked: 500 with a correlation id, nothing internal.
pub fn panic_response(cause: Box<dyn Any + Send + 'static>) -> Response {
    let what = cause
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| cause.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic".into());
    ApiError::internal(&format!("handler panicked: {what}")).into_response()
}

/// Checks one path the way the file routes do; used by the test seam.
pub(crate) fn parse_path(raw: &str) -> Result<WorkspacePath, ApiError> {
    WorkspacePath::parse(raw).map_err(|e| ApiError::bad_path(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types() {
        for ok in [
            "text/markdown",
            "application/json",
            "text/plain; charset=utf-8",
            "application/vnd.a+json",
        ] {
            assert!(valid_media_type(ok), "{ok}");
        }
        for bad in [
            "",
            "text",
            "/x",
            "text/",
            "te xt/plain",
            "text/plain\n",
            "ü/x",
        ] {
            assert!(!valid_media_type(bad), "{bad}");
        }
    }
}
