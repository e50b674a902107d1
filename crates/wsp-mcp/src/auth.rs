//! Who may use the streamable HTTP endpoint: a request that names this server (`Host`, the
//! request target and any `Origin`: DNS-rebinding protection), then a bearer token, checked
//! in constant time.

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::uri::Authority;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

/// The secret a client presents as `Authorization: Bearer <token>`. Its `Debug` hides it.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(Arc<str>);

/// Why a string cannot be a [`BearerToken`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
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
        Self(wsp_types::random_hex(32).into())
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

/// Which `Host` and `Origin` values the HTTP endpoint accepts, against DNS rebinding: a web
/// page on another site must not reach a server on this machine through the browser.
///
/// A request must carry exactly one `Host` header naming a loopback address (`localhost`,
/// `127.0.0.0/8`, `::1`, any port) or an allowed host; an absolute-form request target must
/// name the same authority as the `Host`; an `Origin` header, when present, must be a loopback
/// origin (`http` or `https`, any port) or an allowed origin. Any other request is answered
/// 403 before the bearer token is looked at.
///
/// ```
/// use wsp_mcp::HttpAllowList;
///
/// let allow = HttpAllowList::loopback()
///     .allow_host("mcp.example.com")?          // any port
///     .allow_host("gateway.example.com:8443")? // this port only
///     .allow_origin("https://app.example.com")?;
/// assert!(HttpAllowList::loopback().allow_origin("app.example.com").is_err());
/// # Ok::<(), wsp_mcp::AllowListError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpAllowList {
    hosts: Vec<AllowedHost>,
    origins: Vec<Origin>,
}

/// Why a string cannot join an [`HttpAllowList`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AllowListError {
    /// Not a host name or IP address with an optional port (`name`, `name:port`, `[v6]:port`).
    #[error("{0:?} is not a host: expected a name or address with an optional :port")]
    Host(String),
    /// Not a web origin `http://host[:port]` or `https://host[:port]` (no path).
    #[error("{0:?} is not an origin: expected http://host[:port] or https://host[:port]")]
    Origin(String),
}

/// A host name (lowercase, IPv6 without brackets) and, when given, the one port allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct AllowedHost {
    name: String,
    port: Option<u16>,
}

/// A web origin: scheme, host (normalised as in [`AllowedHost`]) and port (the scheme's
/// default when none is written).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    https: bool,
    host: String,
    port: u16,
}

impl HttpAllowList {
    /// Loopback hosts and origins only (the default).
    pub fn loopback() -> Self {
        Self::default()
    }

    /// Also accepts `Host: host` (`name` for any port, `name:port` for that port only): the
    /// names under which a proxy or a tunnel reaches this server.
    pub fn allow_host(mut self, host: &str) -> Result<Self, AllowListError> {
        let (name, port) =
            parse_authority(host).ok_or_else(|| AllowListError::Host(host.into()))?;
        self.hosts.push(AllowedHost { name, port });
        Ok(self)
    }

    /// Also accepts `Origin: origin` (`https://app.example.com`; without a port, the scheme's
    /// default port): a web application allowed to call this server from a browser.
    pub fn allow_origin(mut self, origin: &str) -> Result<Self, AllowListError> {
        let parsed = Origin::parse(origin).ok_or_else(|| AllowListError::Origin(origin.into()))?;
        self.origins.push(parsed);
        Ok(self)
    }

    /// Why the request must be refused, if it must.
    fn refusal(&self, uri: &Uri, headers: &HeaderMap) -> Option<&'static str> {
        let mut hosts = headers.get_all(header::HOST).iter();
        let (Some(host), None) = (hosts.next(), hosts.next()) else {
            return Some("the request must carry exactly one Host header");
        };
        let Some((name, port)) = host.to_str().ok().and_then(parse_authority) else {
            return Some("the Host header is not a host");
        };
        let allowed = is_loopback(&name)
            || self
                .hosts
                .iter()
                .any(|h| h.name == name && h.port.is_none_or(|p| port == Some(p)));
        if !allowed {
            return Some("the Host header names neither a loopback address nor an allowed host");
        }
        if let Some(target) = uri.authority() {
            let default = match uri.scheme_str() {
                Some(s) if s.eq_ignore_ascii_case("https") => Some(443),
                Some(s) if s.eq_ignore_ascii_case("http") => Some(80),
                _ => None,
            };
            let same = parse_authority(target.as_str())
                .is_some_and(|(n, p)| n == name && p.or(default) == port.or(default));
            if !same {
                return Some("the request target names another host than the Host header");
            }
        }
        let mut origins = headers.get_all(header::ORIGIN).iter();
        match (origins.next(), origins.next()) {
            (None, _) => None,
            (Some(origin), None) => {
                let allowed = origin
                    .to_str()
                    .ok()
                    .and_then(Origin::parse)
                    .is_some_and(|o| is_loopback(&o.host) || self.origins.contains(&o));
                (!allowed)
                    .then_some("the Origin is neither a loopback origin nor an allowed origin")
            }
            (Some(_), Some(_)) => Some("the request must carry at most one Origin header"),
        }
    }
}

impl Origin {
    /// `http://host[:port]` or `https://host[:port]`, scheme and host in any case, nothing
    /// after the authority.
    fn parse(origin: &str) -> Option<Self> {
        let (scheme, authority) = origin.split_once("://")?;
        let https = if scheme.eq_ignore_ascii_case("https") {
            true
        } else if scheme.eq_ignore_ascii_case("http") {
            false
        } else {
            return None;
        };
        let (host, port) = parse_authority(authority)?;
        let port = port.unwrap_or(if https { 443 } else { 80 });
        Some(Self { https, host, port })
    }
}

/// `host[:port]` as a lowercase host (IPv6 without brackets) and the port; `None` for anything
/// else, including user information (`user@host`) and paths.
fn parse_authority(raw: &str) -> Option<(String, Option<u16>)> {
    // `http` refuses a path, query or fragment after the authority.
    let authority: Authority = raw.parse().ok()?;
    let host = authority.host();
    // What follows the host is nothing or `:` and a port that fits in 16 bits: not user
    // information before it (`host` is what follows the `@`), and not `http`'s reading of an
    // empty or oversized port as no port at all, or of `+80` as 80.
    let port = match raw.strip_prefix(host)? {
        "" => None,
        rest => {
            let digits = rest.strip_prefix(':')?;
            if !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some(digits.parse::<u16>().ok()?)
        }
    };
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.is_empty() {
        return None;
    }
    Some((host.to_ascii_lowercase(), port))
}

/// `localhost` or a loopback IP address (`127.0.0.0/8`, `::1`).
fn is_loopback(host: &str) -> bool {
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Answers 403 unless the request names this server ([`HttpAllowList`]).
pub(crate) async fn require_allowed_host(
    State(allow): State<Arc<HttpAllowList>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(reason) = allow.refusal(request.uri(), request.headers()) else {
        return next.run(request).await;
    };
    tracing::warn!(reason, "refused an HTTP request (DNS-rebinding protection)");
    (StatusCode::FORBIDDEN, format!("forbidden: {reason}\n")).into_response()
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
    fn authorities_parse_strictly() {
        let check = |raw: &str, want: Option<(&str, Option<u16>)>| {
            let got = parse_authority(raw);
            assert_eq!(got, want.map(|(h, p)| (h.to_owned(), p)), "{raw:?}");
        };
        check("localhost", Some(("localhost", None)));
        check("LocalHost:8080", Some(("localhost", Some(8080))));
        check("[::1]:80", Some(("::1", Some(80))));
        check("[::1]", Some(("::1", None)));
        check("127.0.0.1", Some(("127.0.0.1", None)));
        for bad in [
            "",
            ":80",
            "localhost:+80",
            "localhost:8080:80",
            "localhost:",
            "localhost:99999",
            "user@localhost",
            "localhost/x",
            "local host",
            "localhost?x",
            "localhost#x",
            "[::1",
        ] {
            check(bad, None);
        }
    }

    #[test]
    fn loopback_means_this_machine_only() {
        for yes in ["localhost", "127.0.0.1", "127.255.0.9", "::1"] {
            assert!(is_loopback(yes), "{yes}");
        }
        for no in [
            "localhost.",
            "127.0.0.1.nip.io",
            "0.0.0.0",
            "::",
            "10.0.0.1",
            "127.1",
        ] {
            assert!(!is_loopback(no), "{no}");
        }
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
