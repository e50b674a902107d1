//! Who may use the streamable HTTP endpoint: a bearer token, checked in constant time.

use std::fmt;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

/// The secret a client presents as `Authorization: Bearer <token>`. Its `Debug` hides it.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(Arc<str>);

/// Why a string cannot be a [`BearerToken`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BearerTokenError {
    /// Shorter than [`BearerToken::MIN_LEN`] bytes.
    #[error("the token is {0} characters; it must have at least {min}", min = BearerToken::MIN_LEN)]
    TooShort(usize),
    /// A character outside visible ASCII (an HTTP header could not carry it as given).
    #[error("the token must be visible ASCII characters only (no spaces or control characters)")]
    NotVisibleAscii,
}

impl BearerToken {
    /// Shortest accepted token, in bytes.
    pub const MIN_LEN: usize = 32;

    /// A fresh token: 32 random bytes from the operating system, as 64 hex digits.
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the operating system's random source is available");
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Self(hex.into())
    }

    /// `token` as given: at least [`Self::MIN_LEN`] visible ASCII characters.
    ///
    /// ```
    /// use wsp_mcp::BearerToken;
    /// assert!(BearerToken::new("x".repeat(32)).is_ok());
    /// assert!(BearerToken::new("too-short").is_err());
    /// assert!(BearerToken::new(format!("{} ", "x".repeat(32))).is_err());
    /// ```
    pub fn new(token: impl Into<String>) -> Result<Self, BearerTokenError> {
        let token = token.into();
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(BearerTokenError::NotVisibleAscii);
        }
        if token.len() < Self::MIN_LEN {
            return Err(BearerTokenError::TooShort(token.len()));
        }
        Ok(Self(token.into()))
    }

    /// The token itself, to hand to the client once.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether an `Authorization` header value carries this token (scheme case-insensitive,
    /// token compared in constant time).
    fn admits(&self, authorization: Option<&HeaderValue>) -> bool {
        let Some(value) = authorization.and_then(|v| v.to_str().ok()) else {
            return false;
        };
        let Some((scheme, presented)) = value.split_once(' ') else {
            return false;
        };
        scheme.eq_ignore_ascii_case("bearer")
            && bool::from(presented.trim().as_bytes().ct_eq(self.0.as_bytes()))
    }
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(<hidden>)")
    }
}

/// How the HTTP endpoint decides who may call it.
#[derive(Debug, Clone)]
pub enum HttpAuth {
    /// Every request carries `Authorization: Bearer <token>`; any other gets 401 before it
    /// reaches MCP.
    Bearer(BearerToken),
    /// No check here: the application this router is nested in authenticates every request
    /// before it reaches the router.
    Upstream,
}

/// Answers 401 unless the request carries the token.
pub(crate) async fn require_bearer(
    State(token): State<BearerToken>,
    request: Request,
    next: Next,
) -> Response {
    if token.admits(request.headers().get(header::AUTHORIZATION)) {
        return next.run(request).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "missing or wrong bearer token: send Authorization: Bearer <token>\n",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_admitted_only_whole_and_as_bearer() {
        let token = BearerToken::new("a".repeat(40)).unwrap();
        let admits = |v: &str| token.admits(Some(&HeaderValue::from_str(v).unwrap()));
        assert!(admits(&format!("Bearer {}", "a".repeat(40))));
        assert!(admits(&format!("bearer {}", "a".repeat(40))));
        assert!(!admits(&format!("Bearer {}", "a".repeat(39))));
        assert!(!admits(&format!("Bearer {}", "a".repeat(41))));
        assert!(!admits(&format!("Basic {}", "a".repeat(40))));
        assert!(!admits(&"a".repeat(40)));
        assert!(!token.admits(None));
    }

    #[test]
    fn generated_tokens_differ_and_are_valid() {
        let (a, b) = (BearerToken::generate(), BearerToken::generate());
        assert_ne!(a, b);
        assert_eq!(a.expose().len(), 64);
        assert!(BearerToken::new(a.expose()).is_ok());
        assert_eq!(format!("{a:?}"), "BearerToken(<hidden>)");
    }

    #[test]
    fn bad_tokens_say_why() {
        assert_eq!(
            BearerToken::new("short").unwrap_err(),
            BearerTokenError::TooShort(5)
        );
        assert_eq!(
            BearerToken::new(format!("{}\n", "a".repeat(40))).unwrap_err(),
            BearerTokenError::NotVisibleAscii
        );
    }
}
