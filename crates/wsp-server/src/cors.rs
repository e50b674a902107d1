//! Cross-origin requests (CORS): which web origins may call the API from a browser.

use axum::http::HeaderValue;

/// A web origin as browsers send it in `Origin`: `http` or `https`, a lowercase host, an
/// optional port, nothing else (no path, no trailing `/`, no user information). Parsed, never
/// trimmed or lowercased: `https://App.example/` is refused, not repaired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorsOrigin(HeaderValue);

/// Why a text is not a [`CorsOrigin`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a web origin: write scheme://host[:port], like https://app.example or \
     http://localhost:5173 (no path, no trailing /)"
)]
pub struct CorsOriginError(String);

impl CorsOrigin {
    /// Checks `text`.
    ///
    /// ```
    /// use wsp_server::CorsOrigin;
    /// assert!(CorsOrigin::parse("http://localhost:5173").is_ok());
    /// assert!(CorsOrigin::parse("https://app.example/").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self, CorsOriginError> {
        let refuse = || CorsOriginError(text.to_owned());
        let rest = text
            .strip_prefix("https://")
            .or_else(|| text.strip_prefix("http://"))
            .ok_or_else(refuse)?;
        // `[v6]:port`, `[v6]`, `host:port` or `host`.
        let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
            let (inside, after) = v6.split_once(']').ok_or_else(refuse)?;
            let port = match after {
                "" => None,
                _ => Some(after.strip_prefix(':').ok_or_else(refuse)?),
            };
            let ok =
                !inside.is_empty() && inside.bytes().all(|b| b.is_ascii_hexdigit() || b == b':');
            if !ok || inside != inside.to_ascii_lowercase() {
                return Err(refuse());
            }
            (None, port)
        } else {
            match rest.split_once(':') {
                Some((host, port)) => (Some(host), Some(port)),
                None => (Some(rest), None),
            }
        };
        if let Some(host) = host {
            let labels_ok = !host.is_empty()
                && host.split('.').all(|label| {
                    !label.is_empty()
                        && label
                            .bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                });
            if !labels_ok {
                return Err(refuse());
            }
        }
        if let Some(port) = port
            && !(!port.is_empty()
                && port.bytes().all(|b| b.is_ascii_digit())
                && port.parse::<u16>().is_ok())
        {
            return Err(refuse());
        }
        HeaderValue::from_str(text).map(Self).map_err(|_| refuse())
    }

    /// The origin as a header value.
    pub(crate) fn header(&self) -> &HeaderValue {
        &self.0
    }
}

impl std::fmt::Display for CorsOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.to_str().unwrap_or_default())
    }
}

impl std::str::FromStr for CorsOrigin {
    type Err = CorsOriginError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// CORS for `origins` (none: no layer, no header). Preflights are answered with the methods
/// and request headers the API reads; answers expose the headers a client needs.
pub(crate) fn layer(origins: &[CorsOrigin]) -> Option<tower_http::cors::CorsLayer> {
    use axum::http::{Method, header};
    use tower_http::cors::{AllowOrigin, CorsLayer};
    if origins.is_empty() {
        return None;
    }
    Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(
                origins.iter().map(|o| o.header().clone()),
            ))
            .allow_methods([Method::GET, Method::PUT, Method::POST, Method::DELETE])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                header::IF_MATCH,
                header::IF_NONE_MATCH,
                header::HeaderName::from_static("idempotency-key"),
                header::HeaderName::from_static("last-event-id"),
            ])
            .expose_headers([
                header::ETAG,
                header::LOCATION,
                header::WWW_AUTHENTICATE,
                header::HeaderName::from_static("x-request-id"),
            ])
            .max_age(std::time::Duration::from_secs(600)),
    )
}

#[cfg(test)]
mod tests {
    use super::CorsOrigin;

    #[test]
    fn origins_are_checked_not_repaired() {
        for ok in [
            "https://app.example",
            "http://localhost:5173",
            "http://127.0.0.1:8080",
            "https://[::1]:8443",
            "https://[::1]",
        ] {
            assert_eq!(CorsOrigin::parse(ok).unwrap().to_string(), ok);
        }
        for bad in [
            "",
            "app.example",
            "https://",
            "https://app.example/",
            "https://app.example/path",
            "ftp://app.example",
            "https://user@app.example",
            "https://App.example",
            "https://app.example:",
            "https://app.example:99999",
            "https://app..example",
            "https://[::1",
            "https://[::1]x",
            "*",
            "null",
        ] {
            assert!(CorsOrigin::parse(bad).is_err(), "{bad}");
        }
    }
}
