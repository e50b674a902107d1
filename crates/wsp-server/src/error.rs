//! The one place where failures become wire error envelopes.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};
use wsp_store::StoreError;
use wsp_types::wire::ErrorEnvelope;
use wsp_types::{ErrorCode, LimitKind, PathError};

/// An error on its way to the client: a wire code, a message, and optional details.
///
/// Business crates keep HTTP-free errors ([`StoreError`], ...); they are converted here once.
/// The message may name what the request named (a path, an agent id) and nothing else.
#[derive(Debug, Clone, PartialEq)]
pub struct WireError {
    /// The wire code (and so the HTTP status).
    pub code: ErrorCode,
    /// A human-readable message.
    pub message: String,
    /// Structured details (`currentVersion`, `limit`, `requiredScope`, `correlationId`, ...).
    pub details: Option<Map<String, Value>>,
}

impl WireError {
    /// An error with no details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: None,
        }
    }

    /// Adds one detail.
    pub fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details
            .get_or_insert_with(Map::new)
            .insert(key.to_owned(), value.into());
        self
    }

    /// 400 `validation_error`.
    pub fn validation(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ValidationError, message)
    }

    /// 404 `not_found` for a workspace path; identical for absent and foreign files.
    pub fn file_not_found(path: &str) -> Self {
        Self::new(
            ErrorCode::NotFound,
            format!("no workspace file at {path:?}"),
        )
    }

    /// 400 for a path that is not a valid workspace path.
    pub fn bad_path(err: &PathError) -> Self {
        Self::validation(format!("invalid workspace path: {err}")).with_detail("field", "path")
    }

    /// 413 `workspace_too_large` naming the limit.
    pub fn too_large(limit: LimitKind, max: u64) -> Self {
        Self::new(
            ErrorCode::WorkspaceTooLarge,
            format!("over the {} limit of {max}", limit.as_str()),
        )
        .with_detail("limit", limit.as_str())
        .with_detail("max", max)
    }

    /// 500 with a fresh correlation id; the cause is logged, never sent.
    pub fn internal(cause: &dyn std::fmt::Display) -> Self {
        let id = correlation_id();
        tracing::error!(correlation_id = %id, error = %cause, "internal error");
        Self::new(
            ErrorCode::InternalError,
            "internal error; quote the correlation id",
        )
        .with_detail("correlationId", id)
    }

    /// The wire envelope `{error, message, details?}`.
    pub fn envelope(&self) -> ErrorEnvelope {
        ErrorEnvelope {
            details: self.details.clone().unwrap_or_default(),
            error: self.code.as_str().to_owned(),
            message: self.message.clone(),
        }
    }

    /// Maps a store failure on `path` to its wire form.
    pub fn from_store(err: StoreError, path: &str) -> Self {
        match err {
            StoreError::NotFound => Self::file_not_found(path),
            StoreError::Conflict { current_version } => Self::new(
                ErrorCode::WorkspaceConflict,
                format!("precondition failed for {path:?}: the live version is {current_version}"),
            )
            .with_detail("currentVersion", current_version),
            StoreError::TooLarge { limit, max } => Self::too_large(limit, max),
            StoreError::Unavailable { reason: cause, .. } => {
                let id = correlation_id();
                tracing::warn!(correlation_id = %id, error = %cause, "store unavailable");
                Self::new(
                    ErrorCode::ServiceUnavailable,
                    "storage is unavailable; retry later",
                )
                .with_detail("correlationId", id)
            }
            StoreError::ContainsSecret { field } => Self::validation(format!(
                "a configured secret appears in {field}; nothing was stored (WSR-1)"
            ))
            .with_detail("field", field),
            StoreError::InvalidContent(why) => {
                Self::validation(why).with_detail("field", "content")
            }
            StoreError::Unsupported(what) => Self::new(
                ErrorCode::CapabilityNotProvided,
                format!("this host's store does not support {what}"),
            ),
            StoreError::Internal { reason: cause, .. } => Self::internal(&cause),
            other => Self::internal(&other.to_string()),
        }
    }
}

/// A short id (16 hex digits) that ties a request and a 5xx answer to its log lines.
///
/// Unique within the process (a counter through a bijective mix, so no two calls repeat in
/// 2^64) and unlikely to repeat across processes (the counter starts from a random base). It is
/// made on every request, so it costs no system call: only the base comes from the OS.
pub fn correlation_id() -> String {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    static BASE: OnceLock<u64> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let base = *BASE.get_or_init(|| {
        u64::from_str_radix(&wsp_types::random_hex(8), 16).expect("16 hex digits are a u64")
    });
    format!("{:016x}", mix(base ^ NEXT.fetch_add(1, Ordering::Relaxed)))
}

/// splitmix64's finalizer: a bijection on `u64`, so distinct inputs give distinct ids.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl IntoResponse for WireError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.code.http_status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(&self.envelope()).unwrap_or_default();
        let mut resp = (status, body).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if status == StatusCode::UNAUTHORIZED {
            // RFC 6750 §3: a 401 names the scheme that would be accepted.
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for WireError {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Request ids are 16 lowercase hex digits and do not repeat.
    #[test]
    fn correlation_ids_are_distinct_hex() {
        let ids: std::collections::HashSet<String> =
            (0..10_000).map(|_| correlation_id()).collect();
        assert_eq!(ids.len(), 10_000);
        for id in ids.iter().take(100) {
            assert_eq!(id.len(), 16, "{id}");
            assert!(
                id.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
                "{id}"
            );
        }
    }
}
