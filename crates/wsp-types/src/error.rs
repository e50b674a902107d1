//! The wire error codes, one variant per code, each with its HTTP status.

use std::fmt;

/// Every error code wsp puts on the wire (`{"error": <code>, "message", "details"?}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// 400: bad path, bad JSON, unknown body field, bad query parameter.
    ValidationError,
    /// 401: no credential, or an unknown one.
    Unauthenticated,
    /// 403: a valid credential without the required scope, or a forbidden direction.
    Forbidden,
    /// 404: absent, purged, tombstoned, or another owner's; all answered alike.
    NotFound,
    /// 405: the route exists but not with this method.
    MethodNotAllowed,
    /// 409: an `If-Match` / `If-None-Match` precondition failed (`details.currentVersion`).
    WorkspaceConflict,
    /// 409: an `Idempotency-Key` was reused for a different request.
    IdempotencyKeyMismatch,
    /// 413: content over `maxFileBytes`, a new path over `maxFiles`, or a body over the HTTP
    /// limit (`details.limit`).
    WorkspaceTooLarge,
    /// 415: a request body that is not `application/json`.
    UnsupportedMediaType,
    /// 410 (SSE error event): a change-feed position older than what the feed retains.
    FeedPositionExpired,
    /// 429: the credential is over a limit on concurrent use, such as open change-feed streams
    /// (`details.limit` names it, `details.max` is its value).
    RateLimited,
    /// 500: an internal failure (`details.correlationId`, nothing internal).
    InternalError,
    /// 501: the capability is not advertised by this host.
    CapabilityNotProvided,
    /// 503: a dependency (such as the database) is unavailable; retry later.
    ServiceUnavailable,
}

impl ErrorCode {
    /// Every code, for tables and tests.
    pub const ALL: [ErrorCode; 14] = [
        Self::ValidationError,
        Self::Unauthenticated,
        Self::Forbidden,
        Self::NotFound,
        Self::MethodNotAllowed,
        Self::WorkspaceConflict,
        Self::IdempotencyKeyMismatch,
        Self::WorkspaceTooLarge,
        Self::UnsupportedMediaType,
        Self::FeedPositionExpired,
        Self::RateLimited,
        Self::InternalError,
        Self::CapabilityNotProvided,
        Self::ServiceUnavailable,
    ];

    /// The code as it appears in the `error` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ValidationError => "validation_error",
            Self::Unauthenticated => "unauthenticated",
            Self::Forbidden => "forbidden",
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::WorkspaceConflict => "workspace_conflict",
            Self::IdempotencyKeyMismatch => "idempotency_key_mismatch",
            Self::WorkspaceTooLarge => "workspace_too_large",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::FeedPositionExpired => "feed_position_expired",
            Self::RateLimited => "rate_limited",
            Self::InternalError => "internal_error",
            Self::CapabilityNotProvided => "capability_not_provided",
            Self::ServiceUnavailable => "service_unavailable",
        }
    }

    /// The HTTP status code that carries this error.
    pub fn http_status(self) -> u16 {
        match self {
            Self::ValidationError => 400,
            Self::Unauthenticated => 401,
            Self::Forbidden => 403,
            Self::NotFound => 404,
            Self::MethodNotAllowed => 405,
            Self::WorkspaceConflict | Self::IdempotencyKeyMismatch => 409,
            Self::FeedPositionExpired => 410,
            Self::WorkspaceTooLarge => 413,
            Self::UnsupportedMediaType => 415,
            Self::RateLimited => 429,
            Self::InternalError => 500,
            Self::CapabilityNotProvided => 501,
            Self::ServiceUnavailable => 503,
        }
    }

    /// Parses a wire code; `None` for a code this version does not know.
    pub fn from_wire(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == code)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which limit a `workspace_too_large` error hit (`details.limit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LimitKind {
    /// The file's content is over `maxFileBytes` (UTF-8 bytes).
    MaxFileBytes,
    /// A new path would exceed `maxFiles` live files.
    MaxFiles,
    /// The HTTP request body is over the server's body limit.
    RequestBody,
}

impl LimitKind {
    /// The wire name (`maxFileBytes`, `maxFiles`, `requestBody`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MaxFileBytes => "maxFileBytes",
            Self::MaxFiles => "maxFiles",
            Self::RequestBody => "requestBody",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for c in ErrorCode::ALL {
            assert!(seen.insert(c.as_str()));
            assert_eq!(ErrorCode::from_wire(c.as_str()), Some(c));
            assert!((400..600).contains(&c.http_status()));
        }
        assert_eq!(ErrorCode::from_wire("nope"), None);
    }
}
