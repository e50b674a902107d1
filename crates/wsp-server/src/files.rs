//! The `host.workspace` file endpoints (RFC 0059 §C, WIRE.md §4).

use std::any::Any;

use axum::extract::State;
use axum::http::{Method, Uri};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use wsp_store::{FileWrite, Precondition};
use wsp_types::wire::ContentEncoding;
use wsp_types::{ErrorCode, LimitKind, MediaType, WorkspacePath};

use crate::cache::Entry;
use crate::error::WireError;
use crate::extract::{
    Authed, IdempotencyKey, JsonBody, ListPrefix, OrWire, Preconditions, Reply, Version,
    WorkspaceRead, WorkspaceWrite, WsPath,
};
use crate::fails::{self, Documented, Failure};
use crate::idempotency::{fingerprint, idempotent};
use crate::{AppState, encode};

/// The list route.
pub const LIST: &str = "/v1/host/workspace/files";

/// The PUT body: `content`, optional `contentType` and `contentEncoding`, nothing else.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct PutBody {
    content: String,
    content_type: Option<String>,
    #[serde(default)]
    content_encoding: ContentEncoding,
}

/// The route of one file (`{*path}` spans segments).
pub(crate) const FILE: &str = "/v1/host/workspace/files/{*path}";

/// The route of a file's retained versions.
pub(crate) const HISTORY: &str = "/v1/host/workspace/history/{*path}";

/// The OpenAPI operation of [`list`] and the failures of its own steps.
pub(crate) struct ListFilesOp;

impl Documented for ListFilesOp {
    const OWN: &'static [Failure] = &[fails::STORE_UNAVAILABLE];
}

/// `GET /v1/host/workspace/files?prefix=P`
#[utoipa::path(
    get,
    impl_for = ListFilesOp,
    path = LIST,
    tag = "workspace",
    operation_id = "listWorkspaceFiles",
    summary = "List live files (no bodies), sorted by path",
    description = "Needs `workspace:read`. Every live file of the caller's workspace whose path starts with `prefix`, with its metadata and no content. Another tenant's or workspace's files never appear.",
    params(("prefix" = Option<String>, Query, description = "Plain string prefix of the paths to list.")),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The caller's live files.", body = ref("#/components/schemas/WorkspaceFileList")),
    ),
)]
pub(crate) async fn list(
    State(state): State<AppState>,
    auth: Authed<WorkspaceRead>,
    ListPrefix(prefix): ListPrefix,
) -> Result<Reply, WireError> {
    let files = state.inner.store.list(&auth.owner, &prefix).await;
    Ok(Reply::encoded(encode::file_list(
        files.or_wire(prefix.as_str())?,
    )))
}

/// The OpenAPI operation of [`read`] and the failures of its own steps.
pub(crate) struct GetFileOp;

impl Documented for GetFileOp {
    const OWN: &'static [Failure] = &[fails::FILE_NOT_FOUND, fails::STORE_UNAVAILABLE];
}

/// `GET /v1/host/workspace/files/{path}[?version=N]`
#[utoipa::path(
    get,
    impl_for = GetFileOp,
    path = FILE,
    tag = "workspace",
    operation_id = "getWorkspaceFile",
    summary = "Read a file, or a retained version of it",
    description = "Needs `workspace:read`. The live file with its content and `ETag`, or with `?version=N` a retained version of the current life. A path that only another tenant or workspace holds reads exactly as a missing one.",
    params(
        ("path" = String, Path, description = "Workspace path, raw (`notes/plan.md`) or percent-encoded (`notes%2Fplan.md`); decoded once, never repaired."),
        ("version" = Option<u64>, Query, minimum = 1, description = "A retained version of the current life."),
    ),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The file; the `ETag` header repeats `etag`.", body = ref("#/components/schemas/WorkspaceFile"),
            headers(("ETag" = String, description = "The version's etag."))),
    ),
)]
pub(crate) async fn read(
    State(state): State<AppState>,
    auth: Authed<WorkspaceRead>,
    WsPath(path): WsPath,
    Version(version): Version,
) -> Result<Reply, WireError> {
    let inner = &state.inner;
    if version.is_some() {
        let file = inner.store.get(&auth.owner, &path, version).await;
        return Ok(file_reply(file.or_wire(path.as_str())?));
    }
    if let Some(hit) = inner.cache.get(&auth.owner, &path) {
        return Ok(hit.reply());
    }
    inner.cache.watch(&inner.store);
    let generation = inner.cache.generation();
    let file = inner.store.get(&auth.owner, &path, None).await;
    let answer = Entry::of(file.or_wire(path.as_str())?);
    inner
        .cache
        .insert(generation, &auth.owner, &path, answer.clone());
    Ok(answer.reply())
}

/// A stored file with its `ETag`.
pub(crate) fn file_reply(file: wsp_store::StoredFile) -> Reply {
    Entry::of(file).reply()
}

/// The OpenAPI operation of [`history`] and the failures of its own steps.
pub(crate) struct HistoryOp;

impl Documented for HistoryOp {
    const OWN: &'static [Failure] = &[fails::FILE_NOT_FOUND, fails::STORE_UNAVAILABLE];
}

/// `GET /v1/host/workspace/history/{path}` (extension): retained versions, newest first.
#[utoipa::path(
    get,
    impl_for = HistoryOp,
    path = HISTORY,
    tag = "workspace",
    operation_id = "getWorkspaceFileHistory",
    summary = "Retained versions of a live file, newest first (wsp extension)",
    description = "Needs `workspace:read`. The versions of the current life that are still retained (at most `maxVersions`), newest first, metadata only.",
    params(("path" = String, Path, description = "Workspace path, raw (`notes/plan.md`) or percent-encoded (`notes%2Fplan.md`); decoded once, never repaired.")),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The retained versions of the current life.", body = ref("#/components/schemas/WorkspaceFileHistory")),
    ),
)]
pub(crate) async fn history(
    State(state): State<AppState>,
    auth: Authed<WorkspaceRead>,
    WsPath(path): WsPath,
) -> Result<Reply, WireError> {
    let versions = state.inner.store.history(&auth.owner, &path).await;
    Ok(Reply::encoded(encode::history(
        &path,
        versions.or_wire(path.as_str())?,
    )))
}

/// A `contentType` that is not a media type.
const BAD_MEDIA_TYPE: Failure = fails::fail(
    ErrorCode::ValidationError,
    "`contentType` is not a media type (`details.field`)",
);
/// `contentEncoding: base64` with content that is not canonical base64.
const BAD_BASE64: Failure = fails::fail(
    ErrorCode::ValidationError,
    "`contentEncoding` is `base64` and `content` is not standard, padded base64 \
     (`details.field`)",
);
/// `If-None-Match` on a delete.
const DELETE_IF_NONE_MATCH: Failure = fails::fail(
    ErrorCode::ValidationError,
    "`If-None-Match` was sent on a delete",
);

/// The OpenAPI operation of [`write`] and the failures of its own steps.
pub(crate) struct PutFileOp;

impl Documented for PutFileOp {
    const OWN: &'static [Failure] = &[
        BAD_MEDIA_TYPE,
        BAD_BASE64,
        fails::SECRET_REFUSED,
        fails::CONFLICT,
        fails::FILE_TOO_LARGE,
        fails::STORE_UNAVAILABLE,
    ];
}

/// `PUT /v1/host/workspace/files/{path}`
#[utoipa::path(
    put,
    impl_for = PutFileOp,
    path = FILE,
    tag = "workspace",
    operation_id = "putWorkspaceFile",
    summary = "Create or replace a file atomically",
    description = "Needs `workspace:write`. Stores the body as the file's next version in one atomic step: readers see the old or the new content, never a mix. `If-Match` (one of these etags, or `*`) or `If-None-Match: *` (create only) make the write conditional, answered 409 `workspace_conflict` with `details.currentVersion` when they fail. `maxFileBytes` (counting the decoded bytes of a `base64` body) and `maxFiles` apply (413), old versions past `maxVersions` are pruned, and a configured secret in text content is redacted before it is stored (a `base64` body holding one is refused: bytes cannot be redacted without corrupting them). With `contentEncoding: base64` the body is bytes that need not be text (an image, a PDF), answered back in base64. `Idempotency-Key` replays the first outcome of a retried request.",
    params(
        ("path" = String, Path, description = "Workspace path, raw (`notes/plan.md`) or percent-encoded (`notes%2Fplan.md`); decoded once, never repaired."),
        ("If-Match" = Option<String>, Header, description = "Write only if the live etag is one of these, or `*` for any live version."),
        ("If-None-Match" = Option<String>, Header, description = "`*`: write only if the path has no live file. Sent with `If-Match`, both are evaluated (RFC 9110 section 13.2.2), which no state satisfies: 409."),
        ("Idempotency-Key" = Option<String>, Header, description = "Replays the first outcome of the same request."),
    ),
    request_body(content = ref("#/components/schemas/WorkspaceFileCreate"), content_type = "application/json"),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "Stored: version 1 on create, plus 1 on each replace.", body = ref("#/components/schemas/WorkspaceFile"),
            headers(("ETag" = String, description = "The new version's etag."))),
    ),
)]
pub(crate) async fn write(
    State(state): State<AppState>,
    auth: Authed<WorkspaceWrite>,
    WsPath(path): WsPath,
    pre: Preconditions,
    key: IdempotencyKey,
    body: JsonBody<PutBody>,
) -> Result<Reply, WireError> {
    let write = body.value.into_write(&state, &auth.principal)?;
    let fp = || change_fingerprint(b"PUT", &path, &pre.raw, &[&body.raw]);
    idempotent(&state, &auth.owner, key, fp, async {
        // The store is a RedactingStore: it redacts the content and refuses a secret in the
        // path or the media type.
        let stored = state
            .inner
            .store
            .put(&auth.owner, &path, write, pre.precondition);
        Ok(file_reply(stored.await.or_wire(path.as_str())?))
    })
    .await
}

impl PutBody {
    /// The write this body asks for: `content` in its encoding (400 for base64 that is not
    /// canonical) within `maxFileBytes` (413; decoded bytes for base64), a valid media type
    /// (400; `text/markdown` when absent, `application/octet-stream` for bytes), attributed to
    /// `principal`.
    fn into_write(self, state: &AppState, principal: &str) -> Result<FileWrite, WireError> {
        let max = state.inner.store.limits().max_file_bytes;
        let size = self
            .content_encoding
            .body_len(&self.content)
            .map_err(|e| WireError::validation(e.to_string()).with_detail("field", "content"))?;
        if size > max {
            return Err(WireError::too_large(LimitKind::MaxFileBytes, max));
        }
        let content_type = match self.content_type {
            None if self.content_encoding.is_binary() => {
                MediaType::from_static("application/octet-stream")
            }
            None => MediaType::markdown(),
            Some(t) => MediaType::parse(&t).map_err(|_| bad_media_type())?,
        };
        Ok(FileWrite {
            content: self.content,
            encoding: self.content_encoding,
            content_type,
            author: Some(principal.to_owned()),
        })
    }
}

/// The OpenAPI operation of [`delete`] and the failures of its own steps.
pub(crate) struct DeleteFileOp;

impl Documented for DeleteFileOp {
    const OWN: &'static [Failure] = &[
        DELETE_IF_NONE_MATCH,
        fails::FILE_NOT_FOUND,
        fails::CONFLICT,
        fails::STORE_UNAVAILABLE,
    ];
}

/// `DELETE /v1/host/workspace/files/{path}`
#[utoipa::path(
    delete,
    impl_for = DeleteFileOp,
    path = FILE,
    tag = "workspace",
    operation_id = "deleteWorkspaceFile",
    summary = "Tombstone a file",
    description = "Needs `workspace:write`. Removes the live file: a tombstone version is recorded, the path then reads as missing, and a later write starts a new life at version 1 with etags never used before. `If-Match` makes the delete conditional; `Idempotency-Key` replays the first outcome.",
    params(
        ("path" = String, Path, description = "Workspace path, raw (`notes/plan.md`) or percent-encoded (`notes%2Fplan.md`); decoded once, never repaired."),
        ("If-Match" = Option<String>, Header, description = "Delete only if the live etag is one of these."),
        ("Idempotency-Key" = Option<String>, Header, description = "Replays the first outcome of the same request."),
    ),
    security(("bearerAuth" = [])),
    responses(
        (status = 204, description = "Deleted; the path can be written again, starting at version 1."),
    ),
)]
pub(crate) async fn delete(
    State(state): State<AppState>,
    auth: Authed<WorkspaceWrite>,
    WsPath(path): WsPath,
    pre: Preconditions,
    key: IdempotencyKey,
) -> Result<Reply, WireError> {
    let precondition = delete_precondition(pre.precondition)?;
    let fp = || change_fingerprint(b"DELETE", &path, &pre.raw, &[]);
    idempotent(&state, &auth.owner, key, fp, async {
        let deleted = state.inner.store.delete(&auth.owner, &path, precondition);
        deleted.await.or_wire(path.as_str())?;
        Ok(Reply::no_content())
    })
    .await
}

/// What a delete may be conditional on: `If-Match`, never `If-None-Match` (400).
fn delete_precondition(precondition: Precondition) -> Result<Precondition, WireError> {
    if matches!(
        precondition,
        Precondition::IfNoneMatchAny | Precondition::Unsatisfiable
    ) {
        return Err(WireError::validation(
            "If-None-Match makes no sense on DELETE",
        ));
    }
    Ok(precondition)
}

/// The fingerprint [`idempotent`] compares a retry of a change of `path` by: the method, the
/// path, the precondition headers as sent and the body, if any.
fn change_fingerprint(
    method: &[u8],
    path: &WorkspacePath,
    preconditions: &[u8],
    body: &[&[u8]],
) -> [u8; 32] {
    let mut parts = vec![method, path.as_str().as_bytes(), preconditions];
    parts.extend_from_slice(body);
    fingerprint(&parts)
}

/// 400 for a `contentType` that is not a [`MediaType`].
pub(crate) fn bad_media_type() -> WireError {
    WireError::validation("contentType must be a media type like text/markdown")
        .with_detail("field", "contentType")
}

/// `…/files/` with nothing after it.
pub(crate) async fn empty_path() -> WireError {
    WireError::validation("invalid workspace path: path is empty").with_detail("field", "path")
}

/// Any route that does not exist.
pub(crate) async fn no_route(uri: Uri) -> WireError {
    WireError::new(ErrorCode::NotFound, format!("no route for {}", uri.path()))
}

/// A route that exists, with the wrong method.
pub(crate) async fn method_not_allowed(method: Method) -> WireError {
    WireError::new(
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
    WireError::internal(&format!("handler panicked: {what}")).into_response()
}

/// Checks one path the way the file routes do; used by the test seam.
pub(crate) fn parse_path(raw: &str) -> Result<WorkspacePath, WireError> {
    WorkspacePath::parse(raw).map_err(|e| WireError::bad_path(&e))
}
