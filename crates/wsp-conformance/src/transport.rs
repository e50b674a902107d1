//! Sending requests and keeping what was sent and received.
//!
//! Requests go through reqwest when its URL parser keeps the request target byte for byte, and
//! through [`crate::raw`] (a hand-written HTTP/1.1 request over TCP) when it would not (`.` and
//! `..` segments). Either way the caller gets a [`Reply`] with the exact status, headers and body
//! bytes, or an [`Outcome`] that explains the transport failure.

use std::time::Duration;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::Url;
use serde_json::Value;
use wsp_client::CaCerts;

use crate::exchange::{Exchange, RecordedRequest, RecordedResponse};
use crate::outcome::Outcome;
use crate::raw::RawRequest;

/// The files endpoint, to which a workspace path is appended.
pub(crate) const FILES: &str = "/v1/host/workspace/files";
/// The history endpoint (our extension), to which a workspace path is appended.
pub(crate) const HISTORY: &str = "/v1/host/workspace/history";
/// The discovery document.
pub(crate) const DISCOVERY: &str = "/.well-known/openwop";
/// The served OpenAPI document.
pub(crate) const OPENAPI: &str = "/v1/openapi.json";

/// One HTTP client bound to the base URL of the host under test.
pub(crate) struct Transport {
    client: reqwest::Client,
    /// The normalized base URL without a trailing `/`.
    base: String,
    /// `scheme://host:port` of the base.
    origin: String,
    /// `host:port` to connect to for byte-exact requests.
    authority: String,
    plain_http: bool,
    timeout: Duration,
}

impl Transport {
    /// A transport for `base` (already validated); https trusts `ca` besides the system's CAs.
    pub(crate) fn new(base: &Url, timeout: Duration, ca: &CaCerts) -> Result<Self, String> {
        let builder = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            // Talk to the URL given, never to a proxy from the environment.
            .no_proxy();
        let client = ca
            .configure(builder)
            .map_err(|e| e.to_string())?
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {}", error_chain(&e)))?;
        let host = base.host_str().ok_or("base URL has no host")?;
        let port = base.port_or_known_default().ok_or("base URL has no port")?;
        Ok(Transport {
            client,
            base: base.as_str().trim_end_matches('/').to_string(),
            origin: base.origin().ascii_serialization(),
            authority: format!("{host}:{port}"),
            plain_http: base.scheme() == "http",
            timeout,
        })
    }

    /// A request builder; `path_and_query` starts with `/` and is appended to the base as is.
    pub(crate) fn call(&self, method: &'static str, path_and_query: impl Into<String>) -> Call<'_> {
        Call {
            transport: self,
            method,
            path_and_query: path_and_query.into(),
            headers: Vec::new(),
            body: None,
        }
    }
}

/// A request being built.
pub(crate) struct Call<'t> {
    transport: &'t Transport,
    method: &'static str,
    path_and_query: String,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
}

impl Call<'_> {
    /// Adds a header.
    pub(crate) fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_string(), value.into()));
        self
    }

    /// Adds `Authorization: Bearer <key>` when a key is given.
    pub(crate) fn bearer(self, key: Option<&str>) -> Self {
        match key {
            Some(key) => self.header("Authorization", format!("Bearer {key}")),
            None => self,
        }
    }

    /// Sets a JSON body with `Content-Type: application/json`.
    pub(crate) fn json(self, body: &Value) -> Self {
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        self.body(Some("application/json"), bytes)
    }

    /// Sets a body with the given content type (none: no `Content-Type` header).
    pub(crate) fn body(mut self, content_type: Option<&str>, bytes: Vec<u8>) -> Self {
        if let Some(ct) = content_type {
            self.headers.push(("Content-Type".into(), ct.to_string()));
        }
        self.body = Some(bytes);
        self
    }

    /// Sends the request and reads the whole response.
    pub(crate) async fn send(self) -> Result<Reply, Outcome> {
        let t = self.transport;
        let intended = format!("{}{}", t.base, self.path_and_query);
        let parsed = Url::parse(&intended).ok();
        let request =
            RecordedRequest::new(self.method, &intended, &self.headers, self.body.as_deref());
        let lost = |why: String| {
            Outcome::fail(format!("{} {}: {why}", self.method, intended)).with(Exchange {
                request: request.clone(),
                response: None,
                transport_error: Some(why.clone()),
            })
        };
        match parsed {
            Some(url) if url.as_str() == intended => {
                let method = reqwest::Method::from_bytes(self.method.as_bytes())
                    .map_err(|e| lost(e.to_string()))?;
                let mut builder = t.client.request(method, url);
                for (name, value) in &self.headers {
                    builder = builder.header(name.as_str(), value.as_str());
                }
                if let Some(body) = &self.body {
                    builder = builder.body(body.clone());
                }
                let response = builder
                    .send()
                    .await
                    .map_err(|e| lost(describe(&e, t.timeout)))?;
                let status = response.status().as_u16();
                let headers: Vec<(String, String)> = response
                    .headers()
                    .iter()
                    .map(|(n, v)| {
                        (
                            n.as_str().to_string(),
                            String::from_utf8_lossy(v.as_bytes()).into_owned(),
                        )
                    })
                    .collect();
                let body = response.bytes().await.map_err(|e| {
                    lost(format!(
                        "status {status} but the body failed: {}",
                        describe(&e, t.timeout)
                    ))
                })?;
                Ok(Reply {
                    request,
                    status,
                    headers,
                    body: body.to_vec(),
                })
            }
            _ if t.plain_http => {
                let target = &intended[t.origin.len()..];
                let raw = RawRequest {
                    authority: &t.authority,
                    method: self.method,
                    target,
                    headers: &self.headers,
                    body: self.body.as_deref(),
                };
                let response = raw.send(t.timeout).await.map_err(lost)?;
                Ok(Reply {
                    request,
                    status: response.status,
                    headers: response.headers,
                    body: response.body,
                })
            }
            _ => Err(Outcome::unobservable(format!(
                "cannot send {intended:?} byte for byte over TLS (the URL parser rewrites it)"
            ))),
        }
    }
}

/// A response and the request that produced it.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub request: RecordedRequest,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    /// The first value of a header (case-insensitive name).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The exchange as evidence (bodies truncated, credential redacted).
    pub(crate) fn exchange(&self) -> Exchange {
        Exchange {
            request: self.request.clone(),
            response: Some(RecordedResponse::new(
                self.status,
                &self.headers,
                &self.body,
            )),
            transport_error: None,
        }
    }

    /// A failure shown by this exchange.
    pub(crate) fn fail(&self, reason: impl Into<String>) -> Outcome {
        Outcome::fail(reason).with(self.exchange())
    }

    /// The body as text (lossy).
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// What [`query_value`] escapes: every byte but RFC 3986's unreserved characters and `/`
/// (a query character, kept so a path prefix reads as one), so `&`, `=`, `+`, `#` and `%`
/// cannot end or change the value.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// Percent-encodes a query value, keeping unreserved characters and `/`.
pub(crate) fn query_value(value: &str) -> String {
    utf8_percent_encode(value, QUERY_VALUE).to_string()
}

fn describe(error: &reqwest::Error, timeout: Duration) -> String {
    use std::error::Error as _;
    if error.is_timeout() {
        return format!("no response within {} ms", timeout.as_millis());
    }
    // reqwest's own message only repeats the URL; what happened is in its sources.
    let Some(source) = error.source() else {
        return error.to_string();
    };
    if error.is_connect() {
        let mut innermost: &dyn std::error::Error = source;
        while let Some(next) = innermost.source() {
            innermost = next;
        }
        return format!("cannot connect: {innermost}");
    }
    error_chain(source)
}

/// The error and its sources, joined: reqwest's own message alone rarely says what happened.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        let part = inner.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = inner.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_encoded() {
        assert_eq!(query_value("conformance/ab-1.x_~"), "conformance/ab-1.x_~");
        assert_eq!(query_value("a b&c=d%é"), "a%20b%26c%3Dd%25%C3%A9");
        assert_eq!(query_value("+#?:"), "%2B%23%3F%3A");
    }

    #[test]
    fn base_is_normalized_and_authority_has_a_port() {
        let url = Url::parse("http://LOCALHOST/prefix/").unwrap();
        let t = Transport::new(&url, Duration::from_secs(1), &CaCerts::default()).unwrap();
        assert_eq!(t.base, "http://localhost/prefix");
        assert_eq!(t.authority, "localhost:80");
        assert_eq!(t.origin, "http://localhost");
    }
}
