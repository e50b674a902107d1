//! Extractors: every part of a request a handler takes, decoded here with a typed rejection
//! ([`WireError`], so every failure is a wire envelope), and the one response type, [`Reply`].
//! No handler touches headers, the URI or the body itself.

use std::marker::PhantomData;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts, Request, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, ETAG, IF_NONE_MATCH, LOCATION,
};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::de::DeserializeOwned;
use wsp_agents::AgentRegistry;
use wsp_store::{Precondition, SnapshotId, StoreError};
use wsp_types::{ErrorCode, LimitKind, Scope, WorkspacePath, WorkspacePrefix};

use crate::auth::{Caller, authenticate, bearer_token};
use crate::error::WireError;
use crate::fails::{self, Failure, Fallible};
use crate::request::{percent_decode, precondition, prefix_param, query_params, version_param};
use crate::{AppState, JSON};

/// The route template a request matched, as the route table declared it (the same inside a
/// host's `nest`, where the URI the router sees has the prefix stripped).
#[derive(Debug, Clone)]
pub(crate) struct Template(pub Arc<str>);

/// The raw (still percent-encoded) text of path parameter `name`: one segment for `{name}`, the
/// rest of the path for `{*name}`.
fn raw_param<'a>(parts: &'a Parts, name: &str) -> &'a str {
    let Some(Template(template)) = parts.extensions.get::<Template>() else {
        return "";
    };
    let path = parts.uri.path();
    for (i, segment) in template.split('/').enumerate() {
        let Some(param) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) else {
            continue;
        };
        if param == name {
            return path.split('/').nth(i).unwrap_or_default();
        }
        // `{*name}`: the rest of the path, after as many segments as the template has before it.
        if param.strip_prefix('*') == Some(name) {
            return path.splitn(i + 1, '/').nth(i).unwrap_or_default();
        }
    }
    ""
}

/// What must be on before a caller is authenticated, and the scope it must hold.
pub(crate) trait Gate: Send + Sync + 'static {
    /// The scope checked after authentication (`None`: any valid credential).
    const SCOPE: Option<Scope>;
    /// 501 when the host does not offer what the route belongs to.
    fn open(state: &AppState) -> Result<(), WireError>;
    /// What [`Gate::open`] can answer.
    const CLOSED: &'static [Failure];
}

fn workspace_gate(state: &AppState) -> Result<(), WireError> {
    if state.inner.config.workspace_enabled {
        Ok(())
    } else {
        Err(WireError::new(
            ErrorCode::CapabilityNotProvided,
            "this host does not offer the host.workspace capability",
        ))
    }
}

macro_rules! gates {
    ($($(#[$doc:meta])* $name:ident => $scope:expr, $open:expr, $closed:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub(crate) struct $name;
        impl Gate for $name {
            const SCOPE: Option<Scope> = $scope;
            const CLOSED: &'static [Failure] = $closed;
            fn open(state: &AppState) -> Result<(), WireError> {
                $open(state)
            }
        }
    )*};
}

gates! {
    /// `workspace:read` on a host offering `host.workspace`.
    WorkspaceRead => Some(Scope::WorkspaceRead), workspace_gate, &[fails::NO_WORKSPACE];
    /// `workspace:write` on a host offering `host.workspace`.
    WorkspaceWrite => Some(Scope::WorkspaceWrite), workspace_gate, &[fails::NO_WORKSPACE];
    /// `runs:read` on a host offering `host.workspace`.
    RunsRead => Some(Scope::RunsRead), workspace_gate, &[fails::NO_WORKSPACE];
    /// `runs:create` on a host offering `host.workspace`.
    RunsCreate => Some(Scope::RunsCreate), workspace_gate, &[fails::NO_WORKSPACE];
    /// `agents:read` (the registry itself is the [`Registry`] extractor).
    AgentsRead => Some(Scope::AgentsRead), |_: &AppState| Ok(()), &[];
    /// `metrics:read`.
    MetricsRead => Some(Scope::MetricsRead), |_: &AppState| Ok(()), &[];
    /// Any valid credential (the test seam).
    AnyScope => None, |_: &AppState| Ok(()), &[];
}

/// The authenticated caller, holding the scope `G` requires.
#[derive(Debug)]
pub(crate) struct Authed<G> {
    /// Who calls.
    pub caller: Caller,
    gate: PhantomData<G>,
}

impl<G> std::ops::Deref for Authed<G> {
    type Target = Caller;
    fn deref(&self) -> &Caller {
        &self.caller
    }
}

impl<G: Gate> FromRequestParts<AppState> for Authed<G> {
    type Rejection = WireError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, WireError> {
        G::open(state)?;
        let caller = authenticate(&*state.inner.auth, &parts.headers).await?;
        if let Some(scope) = G::SCOPE {
            caller.require(scope)?;
        }
        Ok(Self {
            caller,
            gate: PhantomData,
        })
    }
}

impl<G: Gate> Fallible for Authed<G> {
    fn failures() -> Vec<Failure> {
        let mut all = G::CLOSED.to_vec();
        all.extend([fails::UNAUTHENTICATED, fails::KEYS_UNAVAILABLE]);
        all.extend(G::SCOPE.map(|_| fails::MISSING_SCOPE));
        all
    }
}

/// Extractors that cannot fail.
macro_rules! infallible {
    ($($t:ty),*) => {$(
        impl Fallible for $t {
            fn failures() -> Vec<Failure> {
                Vec::new()
            }
        }
    )*};
}

infallible!(State<AppState>, BearerToken, IfNoneMatch);

/// Extractors and the failures they answer, in the order they are checked.
macro_rules! fallible {
    ($($t:ty => [$($f:ident),*];)*) => {$(
        impl Fallible for $t {
            fn failures() -> Vec<Failure> {
                vec![$(fails::$f),*]
            }
        }
    )*};
}

fallible! {
    Registry => [NO_AGENTS];
    WsPath => [BAD_ENCODING, BAD_PATH];
    RunId => [RUN_NOT_FOUND];
    AgentId => [BAD_ENCODING];
    ListPrefix => [BAD_QUERY];
    Version => [BAD_QUERY];
    Preconditions => [BAD_PRECONDITION];
    // The key feeds `idempotency::idempotent`, which refuses a key holding a secret, a reuse
    // for another request, and waits for an identical request in progress.
    IdempotencyKey => [BAD_IDEMPOTENCY_KEY, IDEMPOTENCY_MISMATCH, IDEMPOTENCY_BUSY];
}

impl<T, L> Fallible for JsonBody<T, L> {
    fn failures() -> Vec<Failure> {
        vec![fails::NOT_JSON, fails::BODY_TOO_LARGE, fails::BAD_BODY]
    }
}

/// `If-None-Match` as sent (RFC 9110 §13.1.2), for a `GET` that may answer 304.
pub(crate) struct IfNoneMatch(pub Option<HeldTags>);

/// The entity tags a client holds, or `*`.
pub(crate) struct HeldTags(String);

impl HeldTags {
    /// Whether `etag` (a quoted strong tag) is among them, compared weakly as `If-None-Match`
    /// asks (`W/"x"` matches `"x"`); `*` matches any current document. Text that is no list
    /// of tags matches nothing, so the full document is sent.
    pub(crate) fn admits(&self, etag: &str) -> bool {
        let list = self.0.trim();
        list == "*"
            || list
                .split(',')
                .map(|t| t.trim())
                .any(|t| t.strip_prefix("W/").unwrap_or(t) == etag)
    }
}

impl FromRequestParts<AppState> for IfNoneMatch {
    type Rejection = WireError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, WireError> {
        let held = parts
            .headers
            .get_all(IF_NONE_MATCH)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect::<Vec<_>>();
        Ok(Self((!held.is_empty()).then(|| HeldTags(held.join(",")))))
    }
}

/// The bearer token of a request that [`Authed`] accepted (the change feed re-checks it).
pub(crate) struct BearerToken(pub String);

impl FromRequestParts<AppState> for BearerToken {
    type Rejection = WireError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, WireError> {
        Ok(Self(
            bearer_token(&parts.headers).unwrap_or_default().to_owned(),
        ))
    }
}

/// The host's agent registry; 501 when the host serves no agents.
pub(crate) struct Registry(pub Arc<dyn AgentRegistry>);

impl FromRequestParts<AppState> for Registry {
    type Rejection = WireError;

    async fn from_request_parts(_: &mut Parts, state: &AppState) -> Result<Self, WireError> {
        state.agent_registry().cloned().map(Self).ok_or_else(|| {
            WireError::new(
                ErrorCode::CapabilityNotProvided,
                "this host does not offer agents.manifestRuntime",
            )
        })
    }
}

/// The workspace path of the route's `{*path}`, taken from the raw URI, percent-decoded exactly
/// once and validated (400).
pub(crate) struct WsPath(pub WorkspacePath);

impl FromRequestParts<AppState> for WsPath {
    type Rejection = WireError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, WireError> {
        let decoded = percent_decode(raw_param(parts, "path"), false)?;
        WorkspacePath::parse(&decoded)
            .map(Self)
            .map_err(|e| WireError::bad_path(&e))
    }
}

/// The route's `{*agentId}`, percent-decoded exactly once.
pub(crate) struct AgentId(pub String);

impl FromRequestParts<AppState> for AgentId {
    type Rejection = WireError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, WireError> {
        percent_decode(raw_param(parts, "agentId"), false).map(Self)
    }
}

/// The route's `{runId}`: a snapshot id (lowercase hex, so there is nothing to decode); any
/// other text names no run (404).
pub(crate) struct RunId(pub SnapshotId);

impl FromRequestParts<AppState> for RunId {
    type Rejection = WireError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, WireError> {
        let raw = raw_param(parts, "runId");
        SnapshotId::parse(raw)
            .map(Self)
            .ok_or_else(|| crate::runs::run_not_found(raw))
    }
}

/// `?prefix=P` (all paths when absent); a repeated or malformed parameter is 400.
pub(crate) struct ListPrefix(pub WorkspacePrefix);

impl FromRequestParts<AppState> for ListPrefix {
    type Rejection = WireError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, WireError> {
        prefix_param(&query_params(parts.uri.query())?).map(Self)
    }
}

/// `?version=N`, a positive integer, if sent.
pub(crate) struct Version(pub Option<u64>);

impl FromRequestParts<AppState> for Version {
    type Rejection = WireError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, WireError> {
        version_param(&query_params(parts.uri.query())?).map(Self)
    }
}

/// The write precondition of `If-Match` / `If-None-Match`, and those headers as sent (part of
/// an `Idempotency-Key` fingerprint).
pub(crate) struct Preconditions {
    /// What the store checks.
    pub precondition: Precondition,
    /// The headers as sent, one `name:value` line each.
    pub raw: Vec<u8>,
}

impl FromRequestParts<AppState> for Preconditions {
    type Rejection = WireError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, WireError> {
        let precondition = precondition(&parts.headers)?;
        let mut raw = Vec::new();
        for name in ["if-match", "if-none-match"] {
            for v in parts.headers.get_all(name) {
                raw.extend_from_slice(name.as_bytes());
                raw.push(b':');
                raw.extend_from_slice(v.as_bytes());
                raw.push(b'\n');
            }
        }
        Ok(Self { precondition, raw })
    }
}

/// The `Idempotency-Key`, if sent: 1-255 visible ASCII characters (400 otherwise). Used by
/// [`crate::idempotency::idempotent`], which also refuses a key holding a secret and answers
/// 409 for a key reused on another request.
pub(crate) struct IdempotencyKey(pub Option<String>);

impl FromRequestParts<AppState> for IdempotencyKey {
    type Rejection = WireError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, WireError> {
        parts
            .headers
            .get(HeaderName::from_static("idempotency-key"))
            .map(crate::idempotency::validate_key)
            .transpose()
            .map(Self)
    }
}

/// How many bytes of body a route reads.
pub(crate) trait BodyLimit {
    /// The limit for this state.
    fn limit(state: &AppState) -> usize;
}

/// The server's body limit (`limits.maxRequestBodyBytes`).
pub(crate) struct ServerLimit;

impl BodyLimit for ServerLimit {
    fn limit(state: &AppState) -> usize {
        state.max_body_bytes()
    }
}

/// 64 KiB: bodies of a few short strings.
pub(crate) struct SmallLimit;

impl BodyLimit for SmallLimit {
    fn limit(_: &AppState) -> usize {
        64 * 1024
    }
}

/// A JSON body: declared `application/json` (415), at most `L` bytes (413 `requestBody`),
/// parsed into `T` (400; `T` refuses unknown keys). The bytes are kept for fingerprints.
pub(crate) struct JsonBody<T, L = ServerLimit> {
    /// The parsed body.
    pub value: T,
    /// The body as received.
    pub raw: Bytes,
    limit: PhantomData<L>,
}

impl<T: DeserializeOwned, L: BodyLimit> FromRequest<AppState> for JsonBody<T, L> {
    type Rejection = WireError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, WireError> {
        let (parts, body) = req.into_parts();
        crate::request::require_json(&parts.headers)?;
        let raw = read_body(&parts.headers, body, L::limit(state)).await?;
        let value = serde_json::from_slice(&raw)
            .map_err(|e| WireError::validation(format!("invalid request body: {e}")))?;
        Ok(Self {
            value,
            raw,
            limit: PhantomData,
        })
    }
}

/// Reads a request body up to `limit` bytes; over it is 413 with `details.limit = requestBody`
/// (an oversized body is drained first, so the client reads the answer).
async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, WireError> {
    let too_large = || WireError::too_large(LimitKind::RequestBody, limit as u64);
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
            frame.map_err(|_| WireError::validation("the request body could not be read"))?;
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

/// A store result on its way to the wire: [`WireError::from_store`] naming what was asked for.
pub(crate) trait OrWire<T> {
    /// Maps the store's error for a request about `what` (a path, a prefix, a run id).
    fn or_wire(self, what: &str) -> Result<T, WireError>;
}

impl<T> OrWire<T> for Result<T, StoreError> {
    fn or_wire(self, what: &str) -> Result<T, WireError> {
        self.map_err(|e| WireError::from_store(e, what))
    }
}

/// The one response type of the handlers: a status, a body with its media type, and the
/// headers the wire defines (`ETag`, `Location`, `Cache-Control`).
#[derive(Debug)]
pub(crate) struct Reply(Response);

impl Reply {
    /// 200 with a body already encoded as JSON.
    pub fn encoded(body: impl Into<Bytes>) -> Self {
        Self::with_type(JSON, body)
    }

    /// 200 with `value` as JSON.
    pub fn json(value: &impl serde::Serialize) -> Self {
        Self::encoded(serde_json::to_vec(value).expect("wire types always serialize"))
    }

    /// 200 with a body of the given media type.
    pub fn with_type(content_type: HeaderValue, body: impl Into<Bytes>) -> Self {
        let mut resp = (StatusCode::OK, body.into()).into_response();
        resp.headers_mut().insert(CONTENT_TYPE, content_type);
        Self(resp)
    }

    /// 204 with no body.
    pub fn no_content() -> Self {
        Self(StatusCode::NO_CONTENT.into_response())
    }

    /// Any other response (a stream).
    pub fn stream(resp: impl IntoResponse) -> Self {
        Self(resp.into_response())
    }

    /// The same reply with another status.
    pub fn status(mut self, status: StatusCode) -> Self {
        *self.0.status_mut() = status;
        self
    }

    /// The same reply with `ETag: tag`.
    pub fn etag(self, tag: &str) -> Self {
        self.header(ETAG, tag)
    }

    /// The same reply with `ETag: tag`, already a header value.
    pub fn etag_value(mut self, tag: HeaderValue) -> Self {
        self.0.headers_mut().insert(ETAG, tag);
        self
    }

    /// The same reply with `Location: url`.
    pub fn location(self, url: &str) -> Self {
        self.header(LOCATION, url)
    }

    /// The same reply with `Cache-Control: value`.
    pub fn cache(self, value: &'static str) -> Self {
        self.header(CACHE_CONTROL, value)
    }

    fn header(mut self, name: HeaderName, value: &str) -> Self {
        if let Ok(v) = HeaderValue::from_str(value) {
            self.0.headers_mut().insert(name, v);
        }
        self
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        self.0
    }
}

impl From<Response> for Reply {
    fn from(resp: Response) -> Self {
        Self(resp)
    }
}
