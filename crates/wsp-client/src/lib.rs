//! Typed async client for the wsp / OpenWOP `host.workspace` wire.
//!
//! **Invariant:** speaks only the wire. It depends on `wsp-types` and never on the server or
//! store crates, so it works against any conforming host.
//!
//! ```no_run
//! # async fn demo() -> Result<(), wsp_client::Error> {
//! use wsp_client::{Client, PutOptions};
//! use wsp_types::WorkspacePath;
//!
//! let client = Client::new("http://127.0.0.1:8787")?.with_key("wsp_...");
//! let path = WorkspacePath::parse("notes/plan.md").expect("valid path");
//! let created = client.put(&path, "# Plan", PutOptions::default()).await?;
//! let again = client.get(&path, None).await?;
//! assert_eq!(created.etag, again.etag);
//! # Ok(()) }
//! ```
//!
//! With the `rustls` feature (on by default), `https://` hosts work: rustls with the aws-lc-rs
//! crypto provider, trusting the system's CA certificates and those given to
//! [`ClientBuilder::ca_certs`] (a private CA). A refused certificate is
//! [`Error::Certificate`]. Without the feature the client speaks plain HTTP only.
//!
//! Two bounds protect the caller from the host. **Credentials stay with their origin**: a
//! redirect is followed only within the base URL's origin (scheme, host and port); one to
//! another origin is not followed and is [`Error::Redirected`], so the key (and the trust given
//! to [`ClientBuilder::ca_certs`]) never reaches a host the caller did not name. **Answers are
//! bounded**: a response body over [`ClientBuilder::max_response_bytes`] (256 MiB unless set;
//! [`Client::fit_to_host`] sets it from what discovery advertises) is [`Error::ResponseTooLarge`],
//! read no further than the bound.

mod agents;
mod error;
mod events;
#[cfg(feature = "rustls")]
mod tls;
mod upload;

use std::path::Path;
use std::time::Duration;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Method, RequestBuilder, StatusCode};
use serde::de::DeserializeOwned;
use wsp_types::wire::{
    ContentEncoding, Discovery, MemoryAppended, Run, RunCreated, RunList, WorkspaceContext,
    WorkspaceFile, WorkspaceFileHistory, WorkspaceFileList, WorkspaceSearchResults,
};
use wsp_types::{ETag, WorkspacePath};

pub use error::{ApiError, Error, TransportCause};

/// The bound on a response body of a client that was not told another
/// ([`ClientBuilder::max_response_bytes`], [`Client::fit_to_host`]): 256 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 256 * 1024 * 1024;

/// The largest answer a host that advertises `discovery` can send to a request of this client:
/// a file's answer is at most its body as a write could send it (`maxRequestBodyBytes`, or six
/// times `maxFileBytes`, as JSON escaping can grow text sixfold), a listing at most 2 KiB per
/// file for `maxFiles` files; plus 1 MiB for the rest. [`DEFAULT_MAX_RESPONSE_BYTES`] when the
/// host advertises no `maxFileBytes`.
pub fn response_bound(discovery: &Discovery) -> u64 {
    let Some(file) = discovery
        .workspace
        .as_ref()
        .and_then(|w| w.max_file_bytes)
        .map(std::num::NonZeroU64::get)
    else {
        return DEFAULT_MAX_RESPONSE_BYTES;
    };
    let body = discovery
        .limits
        .max_request_body_bytes
        .map_or(0, std::num::NonZeroU64::get);
    let one_file = body.max(file.saturating_mul(6).saturating_add(64 * 1024));
    let listing = discovery
        .workspace
        .as_ref()
        .and_then(|w| w.max_files)
        .map_or(0, |n| n.get().saturating_mul(2048));
    one_file.max(listing).saturating_add(1024 * 1024)
}
pub use events::{EventStream, FeedItem};
#[cfg(feature = "rustls")]
pub use tls::CaCerts;

/// Options of a write.
#[derive(Debug, Clone, Default)]
pub struct PutOptions {
    /// Media type (the host defaults to `text/markdown`; [`Client::put_bytes`] sends
    /// `application/octet-stream` when this is `None`).
    pub content_type: Option<String>,
    /// Write only if the live etag is this one (`If-Match`).
    pub if_match: Option<ETag>,
    /// Write only if the path has no live file (`If-None-Match: *`).
    pub create_only: bool,
    /// Makes retries safe (`Idempotency-Key`).
    pub idempotency_key: Option<String>,
}

/// A file on disk to write with [`Client::put_file`], read once by [`LocalFile::open`] to learn
/// its size and whether it is UTF-8 text (in chunks: never whole in memory).
#[derive(Debug, Clone)]
pub struct LocalFile {
    path: std::path::PathBuf,
    survey: upload::Survey,
}

impl LocalFile {
    /// Reads the file at `path` once; an unreadable file is [`Error::InvalidArgument`] naming
    /// it.
    pub fn open(path: &Path) -> Result<Self, Error> {
        Ok(Self {
            path: path.to_owned(),
            survey: upload::survey(path)?,
        })
    }

    /// Its size in bytes, as read.
    pub fn size(&self) -> u64 {
        self.survey.size
    }

    /// Whether it is UTF-8 text, as read.
    pub fn is_text(&self) -> bool {
        self.survey.text
    }
}

/// A `WorkspaceFileCreate` as sent: `contentEncoding` only for bytes, so that a text write is
/// exactly what any OpenWOP host accepts.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PutBody {
    content: String,
    content_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_encoding: Option<ContentEncoding>,
}

/// A client for one host, with or without a credential.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    key: Option<String>,
    /// The bound on a response body.
    max_response: u64,
    /// Whether CA certificates besides the system's are trusted (said by a refused certificate).
    extra_ca: bool,
}

/// What [`encode_segment`] escapes: every byte but RFC 3986's unreserved characters
/// (`A-Z a-z 0-9 - . _ ~`), so `/`, `%`, `?` and `#` cannot end or change the segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes a path as one URL segment (`/` becomes `%2F`), as OpenWOP clients do.
///
/// ```
/// assert_eq!(wsp_client::encode_segment("notes/a b.md"), "notes%2Fa%20b.md");
/// ```
pub fn encode_segment(raw: &str) -> String {
    utf8_percent_encode(raw, SEGMENT).to_string()
}

/// Builds a [`Client`]: [`Client::builder`], the settings to change, [`ClientBuilder::build`].
///
/// With the `rustls` feature (on by default) the client speaks HTTPS, trusting the system's CA
/// certificates and those given to [`ClientBuilder::ca_certs`].
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    base: String,
    key: Option<String>,
    timeout: Option<Duration>,
    connect_timeout: Duration,
    max_response: u64,
    #[cfg(feature = "rustls")]
    ca: CaCerts,
}

impl ClientBuilder {
    /// Sends `Authorization: Bearer <key>`.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// The limit on a whole request, answer included (30 s by default); `None` for none, as a
    /// long-lived [`Client::events`] stream needs.
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// The limit on opening a connection, TLS handshake included (10 s by default).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The largest response body read ([`DEFAULT_MAX_RESPONSE_BYTES`] unless set); a larger
    /// one is [`Error::ResponseTooLarge`]. [`Client::fit_to_host`] sets it from the host's
    /// discovery.
    pub fn max_response_bytes(mut self, bytes: u64) -> Self {
        self.max_response = bytes;
        self
    }

    /// Trusts these CA certificates as well as the system's (for a host whose certificate a
    /// private CA signed).
    #[cfg(feature = "rustls")]
    pub fn ca_certs(mut self, ca: CaCerts) -> Self {
        self.ca = ca;
        self
    }

    /// The client. Fails on a base URL that is not `http(s)://` (`https` needs the `rustls`
    /// feature). It follows redirects within the base URL's origin only (see the crate's
    /// documentation).
    pub fn build(self) -> Result<Client, Error> {
        #[cfg(not(feature = "rustls"))]
        if self.base.starts_with("https:") {
            return Err(Error::InvalidBaseUrl(
                "https needs wsp-client's rustls feature".into(),
            ));
        }
        let mut http = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .redirect(same_origin_redirects());
        if let Some(timeout) = self.timeout {
            http = http.timeout(timeout);
        }
        #[cfg(feature = "rustls")]
        let http = self.ca.configure(http)?;
        let http = http.build().map_err(|e| Error::transport(e, false))?;
        let mut client = Client::with_http_client(&self.base, http)?;
        client.max_response = self.max_response;
        #[cfg(feature = "rustls")]
        {
            client.extra_ca = !self.ca.is_empty();
        }
        Ok(match self.key {
            Some(key) => client.with_key(key),
            None => client,
        })
    }
}

/// The redirect policy of [`ClientBuilder::build`]: follow a redirect (at most 10) only when
/// it stays within the origin of the first request; stop at any other, so that the answer is
/// the redirect itself ([`Error::Redirected`]) and nothing, the key least of all, is sent to
/// the other origin. Checked against the first request, not the previous hop, so A -> A' -> B
/// stops before B and A -> B never starts.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if same && attempt.previous().len() <= 10 {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

impl Client {
    /// A client for the host at `base_url` (e.g. `http://127.0.0.1:8787`), 30 s timeout.
    pub fn new(base_url: &str) -> Result<Self, Error> {
        Self::builder(base_url).build()
    }

    /// A builder for a client of the host at `base_url`, with a 30 s request timeout, 10 s to
    /// connect, no key, and (with the `rustls` feature) the system's CA certificates.
    pub fn builder(base_url: &str) -> ClientBuilder {
        ClientBuilder {
            base: base_url.to_owned(),
            key: None,
            timeout: Some(Duration::from_secs(30)),
            connect_timeout: Duration::from_secs(10),
            max_response: DEFAULT_MAX_RESPONSE_BYTES,
            #[cfg(feature = "rustls")]
            ca: CaCerts::default(),
        }
    }

    /// A client that sends its requests through `http` (for custom timeouts, proxies, TLS).
    /// Redirects are `http`'s own policy: reqwest's default follows them to other origins.
    pub fn with_http_client(base_url: &str, http: reqwest::Client) -> Result<Self, Error> {
        let base = base_url.trim_end_matches('/').to_owned();
        let parsed =
            reqwest::Url::parse(&base).map_err(|e| Error::InvalidBaseUrl(e.to_string()))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.query().is_some() {
            return Err(Error::InvalidBaseUrl(format!(
                "{base_url:?} is not an http(s) base URL"
            )));
        }
        Ok(Self {
            http,
            base,
            key: None,
            max_response: DEFAULT_MAX_RESPONSE_BYTES,
            extra_ca: false,
        })
    }

    /// The same client, reading response bodies up to `bytes` at most.
    pub fn with_max_response_bytes(mut self, bytes: u64) -> Self {
        self.max_response = bytes;
        self
    }

    /// The bound on a response body.
    pub fn max_response_bytes(&self) -> u64 {
        self.max_response
    }

    /// Reads the host's discovery and returns it with this client, its response bound set to
    /// [`response_bound`] of it.
    pub async fn fit_to_host(mut self) -> Result<(Self, Discovery), Error> {
        // Discovery itself is small: a megabyte is more than any host's.
        let probe = self.clone().with_max_response_bytes(1024 * 1024);
        let discovery = probe.discovery().await?;
        self.max_response = response_bound(&discovery);
        Ok((self, discovery))
    }

    /// The same client, sending `Authorization: Bearer <key>`.
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// The base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    fn request(&self, method: Method, path_and_query: &str) -> RequestBuilder {
        let mut req = self
            .http
            .request(method, format!("{}{path_and_query}", self.base));
        if let Some(key) = &self.key {
            req = req.bearer_auth(key);
        }
        req.header(reqwest::header::ACCEPT, "application/json")
    }

    /// Sends a request and decodes its 2xx JSON answer (or the error).
    async fn send<T: DeserializeOwned>(&self, req: RequestBuilder) -> Result<T, Error> {
        let resp = req.send().await.map_err(|e| self.transport(e))?;
        self.decode(resp).await
    }

    /// The error of a request that got no answer.
    fn transport(&self, e: reqwest::Error) -> Error {
        Error::transport(e, self.extra_ca)
    }

    /// Decodes a 2xx JSON body, or turns anything else into an [`Error`].
    async fn decode<T: DeserializeOwned>(&self, resp: reqwest::Response) -> Result<T, Error> {
        if !resp.status().is_success() {
            return Err(self.error_from(resp).await);
        }
        let status = resp.status().as_u16();
        let body = self.read_body(resp, self.max_response).await?;
        serde_json::from_slice(&body).map_err(|e| Error::UnexpectedBody {
            status,
            reason: e.to_string(),
            body: error::excerpt(&body),
        })
    }

    /// The error of an answer that is not a success: the envelope, or what else it was.
    async fn error_from(&self, resp: reqwest::Response) -> Error {
        let status = resp.status().as_u16();
        if resp.status().is_redirection() {
            let location = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|l| resp.url().join(l).ok());
            return Error::Redirected {
                status,
                to: location.map_or_else(
                    || "an unknown place".to_owned(),
                    |url| url.origin().ascii_serialization(),
                ),
            };
        }
        // An error envelope is short: what is past 64 KiB is not one.
        match self.read_body(resp, 64 * 1024).await {
            Ok(body) => Error::from_response(status, &body),
            Err(Error::ResponseTooLarge { .. }) => Error::UnexpectedBody {
                status,
                reason: "an error body over 64 KiB".into(),
                body: String::new(),
            },
            Err(e) => e,
        }
    }

    /// The body of `resp`, refused past `max` bytes without reading further.
    async fn read_body(&self, mut resp: reqwest::Response, max: u64) -> Result<Vec<u8>, Error> {
        let too_large = || Error::ResponseTooLarge { max };
        if resp.content_length().is_some_and(|n| n > max) {
            return Err(too_large());
        }
        let capacity = resp.content_length().unwrap_or(0).min(max);
        let mut body = Vec::with_capacity(usize::try_from(capacity).unwrap_or(0));
        while let Some(chunk) = resp.chunk().await.map_err(|e| self.transport(e))? {
            if (body.len() + chunk.len()) as u64 > max {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// `GET /.well-known/openwop`.
    pub async fn discovery(&self) -> Result<Discovery, Error> {
        let req = self.http.get(format!("{}/.well-known/openwop", self.base));
        self.send(req).await
    }

    /// `GET /v1/host/workspace/files[?prefix=P]`: live files without content, sorted by path.
    pub async fn list(&self, prefix: Option<&str>) -> Result<WorkspaceFileList, Error> {
        let mut url = "/v1/host/workspace/files".to_owned();
        if let Some(p) = prefix {
            url.push_str("?prefix=");
            url.push_str(&encode_segment(p));
        }
        self.send(self.request(Method::GET, &url)).await
    }

    /// `GET /v1/host/workspace/files/{path}[?version=N]`.
    pub async fn get(
        &self,
        path: &WorkspacePath,
        version: Option<u64>,
    ) -> Result<WorkspaceFile, Error> {
        let mut url = format!("/v1/host/workspace/files/{}", encode_segment(path.as_str()));
        if let Some(v) = version {
            url.push_str(&format!("?version={v}"));
        }
        self.send(self.request(Method::GET, &url)).await
    }

    /// `PUT /v1/host/workspace/files/{path}`: create or replace with text.
    pub async fn put(
        &self,
        path: &WorkspacePath,
        content: impl Into<String>,
        options: PutOptions,
    ) -> Result<WorkspaceFile, Error> {
        let content_type = options
            .content_type
            .clone()
            .unwrap_or_else(|| "text/markdown".to_owned());
        let body = PutBody {
            content: content.into(),
            content_type,
            content_encoding: None,
        };
        self.put_body(path, body, options).await
    }

    /// `PUT /v1/host/workspace/files/{path}` with `contentEncoding: base64`: create or replace
    /// with bytes that need not be text (an image, a PDF), on a host whose discovery says
    /// `wsp.binaryContent`. Read them back with [`WorkspaceFile::bytes`].
    pub async fn put_bytes(
        &self,
        path: &WorkspacePath,
        bytes: &[u8],
        options: PutOptions,
    ) -> Result<WorkspaceFile, Error> {
        let content_type = options
            .content_type
            .clone()
            .unwrap_or_else(|| "application/octet-stream".to_owned());
        let body = PutBody {
            content: wsp_types::base64_encode(bytes),
            content_type,
            content_encoding: Some(ContentEncoding::Base64),
        };
        self.put_body(path, body, options).await
    }

    /// `PUT /v1/host/workspace/files/{path}` with the content of a file on disk, streamed (the
    /// client holds one chunk of it at a time): as text when it is UTF-8 and `as_bytes` is
    /// false, as bytes (`contentEncoding: base64`) otherwise; the media type as [`Client::put`]
    /// and [`Client::put_bytes`] choose it when `options.content_type` is `None`. A file that
    /// changed since [`LocalFile::open`] read it fails the write.
    pub async fn put_file(
        &self,
        path: &WorkspacePath,
        file: &LocalFile,
        as_bytes: bool,
        options: PutOptions,
    ) -> Result<WorkspaceFile, Error> {
        let mut survey = file.survey;
        if as_bytes && survey.text {
            survey.text = false;
            survey.encoded = survey.size.div_ceil(3) * 4;
        }
        let content_type = options.content_type.clone().unwrap_or_else(|| {
            if survey.text {
                "text/markdown".to_owned()
            } else {
                "application/octet-stream".to_owned()
            }
        });
        let opened = std::fs::File::open(&file.path).map_err(|e| {
            Error::InvalidArgument(format!("cannot read {}: {e}", file.path.display()))
        })?;
        let body = upload::FileBody::new(opened, survey, &content_type);
        let length = body.len();
        let req = self
            .conditional(Method::PUT, path, &options)?
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::CONTENT_LENGTH, length)
            .body(reqwest::Body::wrap(body));
        self.send(req).await
    }

    /// A request to the file endpoint of `path` with the preconditions of `options`.
    fn conditional(
        &self,
        method: Method,
        path: &WorkspacePath,
        options: &PutOptions,
    ) -> Result<RequestBuilder, Error> {
        let url = format!("/v1/host/workspace/files/{}", encode_segment(path.as_str()));
        let mut headers = HeaderMap::new();
        if let Some(tag) = &options.if_match {
            headers.insert(reqwest::header::IF_MATCH, header_value(tag.as_str())?);
        }
        if options.create_only {
            headers.insert(
                reqwest::header::IF_NONE_MATCH,
                HeaderValue::from_static("*"),
            );
        }
        if let Some(key) = &options.idempotency_key {
            headers.insert("idempotency-key", header_value(key)?);
        }
        Ok(self.request(method, &url).headers(headers))
    }

    async fn put_body(
        &self,
        path: &WorkspacePath,
        body: PutBody,
        options: PutOptions,
    ) -> Result<WorkspaceFile, Error> {
        let req = self.conditional(Method::PUT, path, &options)?.json(&body);
        self.send(req).await
    }

    /// `DELETE /v1/host/workspace/files/{path}` (optionally `If-Match`).
    pub async fn delete(&self, path: &WorkspacePath, if_match: Option<&ETag>) -> Result<(), Error> {
        let url = format!("/v1/host/workspace/files/{}", encode_segment(path.as_str()));
        let mut req = self.request(Method::DELETE, &url);
        if let Some(tag) = if_match {
            req = req.header(reqwest::header::IF_MATCH, header_value(tag.as_str())?);
        }
        let resp = req.send().await.map_err(|e| self.transport(e))?;
        if resp.status() == StatusCode::NO_CONTENT {
            return Ok(());
        }
        Err(self.error_from(resp).await)
    }

    /// `GET /v1/host/workspace/history/{path}` (wsp extension): retained versions, newest first.
    pub async fn history(&self, path: &WorkspacePath) -> Result<WorkspaceFileHistory, Error> {
        let url = format!(
            "/v1/host/workspace/history/{}",
            encode_segment(path.as_str())
        );
        self.send(self.request(Method::GET, &url)).await
    }
}

impl Client {
    /// `POST /v1/runs`: starts a run, pinning a snapshot of the workspace as it is now.
    pub async fn create_run(&self, workflow_id: &str) -> Result<RunCreated, Error> {
        let body = serde_json::json!({ "workflowId": workflow_id });
        let req = self.request(Method::POST, "/v1/runs").json(&body);
        self.send(req).await
    }

    /// `GET /v1/runs[?limit=N][&cursor=C]` (wsp extension): one page of the caller's runs,
    /// newest first. Pass the page's `next_cursor` as `cursor` for the next page; a page may
    /// hold fewer than `limit` runs, and there is no more when `next_cursor` is `None`.
    pub async fn list_runs(
        &self,
        limit: Option<u32>,
        cursor: Option<&str>,
    ) -> Result<RunList, Error> {
        let mut query = Vec::new();
        if let Some(limit) = limit {
            query.push(format!("limit={limit}"));
        }
        if let Some(cursor) = cursor {
            query.push(format!("cursor={}", encode_segment(cursor)));
        }
        let mut url = "/v1/runs".to_owned();
        if !query.is_empty() {
            url.push('?');
            url.push_str(&query.join("&"));
        }
        self.send(self.request(Method::GET, &url)).await
    }

    /// `GET /v1/host/workspace/search?q=...` (wsp extension): the lines of the caller's live
    /// text files (under `prefix`, all when `None`) holding the words of `query`, best first,
    /// at most `limit` (the server's default, 10, when `None`).
    pub async fn search(
        &self,
        query: &str,
        prefix: Option<&str>,
        limit: Option<u32>,
    ) -> Result<WorkspaceSearchResults, Error> {
        let mut url = format!("/v1/host/workspace/search?q={}", encode_segment(query));
        if let Some(prefix) = prefix {
            url.push_str(&format!("&prefix={}", encode_segment(prefix)));
        }
        if let Some(limit) = limit {
            url.push_str(&format!("&limit={limit}"));
        }
        self.send(self.request(Method::GET, &url)).await
    }

    /// `GET /v1/host/workspace/context[?budget=N]` (wsp extension): the run-start context of
    /// the caller's live workspace within `budget` tokens (the server's default, 8000, when
    /// `None`), and its report.
    pub async fn context(&self, budget: Option<u32>) -> Result<WorkspaceContext, Error> {
        let url = match budget {
            Some(budget) => format!("/v1/host/workspace/context?budget={budget}"),
            None => "/v1/host/workspace/context".to_owned(),
        };
        self.send(self.request(Method::GET, &url)).await
    }

    /// `GET /v1/runs/{runId}/context[?budget=N]` (wsp extension): the run-start context as
    /// the run's snapshot holds it.
    pub async fn run_context(
        &self,
        run_id: &str,
        budget: Option<u32>,
    ) -> Result<WorkspaceContext, Error> {
        let mut url = format!("/v1/runs/{}/context", encode_segment(run_id));
        if let Some(budget) = budget {
            url.push_str(&format!("?budget={budget}"));
        }
        self.send(self.request(Method::GET, &url)).await
    }

    /// `POST /v1/host/workspace/memory` (wsp extension): appends `text` as one line to today's
    /// daily memory log `memory/YYYY-MM-DD.md` (UTC). Concurrent appends never lose a line;
    /// a retried call appends again.
    pub async fn append_memory(&self, text: &str) -> Result<MemoryAppended, Error> {
        let body = serde_json::json!({ "text": text });
        let req = self
            .request(Method::POST, "/v1/host/workspace/memory")
            .json(&body);
        self.send(req).await
    }

    /// `GET /v1/runs/{runId}`.
    pub async fn get_run(&self, run_id: &str) -> Result<Run, Error> {
        let url = format!("/v1/runs/{}", encode_segment(run_id));
        self.send(self.request(Method::GET, &url)).await
    }

    /// `POST /v1/runs/{runId}/cancel`: ends the run and releases its snapshot.
    pub async fn cancel_run(&self, run_id: &str) -> Result<Run, Error> {
        let url = format!("/v1/runs/{}/cancel", encode_segment(run_id));
        self.send(self.request(Method::POST, &url)).await
    }

    /// `GET /v1/runs/{runId}/workspace/files[?prefix=P]`: the files of a run's snapshot.
    pub async fn list_run_files(
        &self,
        run_id: &str,
        prefix: Option<&str>,
    ) -> Result<WorkspaceFileList, Error> {
        let mut url = format!("/v1/runs/{}/workspace/files", encode_segment(run_id));
        if let Some(p) = prefix {
            url.push_str("?prefix=");
            url.push_str(&encode_segment(p));
        }
        self.send(self.request(Method::GET, &url)).await
    }

    /// `GET /v1/runs/{runId}/workspace/files/{path}`: a file as the run sees it.
    pub async fn get_run_file(
        &self,
        run_id: &str,
        path: &WorkspacePath,
    ) -> Result<WorkspaceFile, Error> {
        let url = format!(
            "/v1/runs/{}/workspace/files/{}",
            encode_segment(run_id),
            encode_segment(path.as_str())
        );
        self.send(self.request(Method::GET, &url)).await
    }

    /// `GET /v1/host/workspace/events`: the change feed, from the live tail or after `since`.
    ///
    /// The client's request timeout applies to the whole stream: build the client with
    /// [`ClientBuilder::timeout`]`(None)` for a long-lived feed. A success that is not
    /// `text/event-stream` is [`Error::UnexpectedBody`].
    pub async fn events(&self, since: Option<u64>) -> Result<EventStream, Error> {
        let mut req = self
            .request(Method::GET, "/v1/host/workspace/events")
            .header(reqwest::header::ACCEPT, "text/event-stream");
        if let Some(n) = since {
            req = req.header("last-event-id", n.to_string());
        }
        let resp = req.send().await.map_err(|e| self.transport(e))?;
        if !resp.status().is_success() {
            return Err(self.error_from(resp).await);
        }
        let media_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if !media_type
            .to_ascii_lowercase()
            .starts_with("text/event-stream")
        {
            // A body that is not an event stream would read as a feed that never delivers.
            return Err(Error::UnexpectedBody {
                status: resp.status().as_u16(),
                reason: format!("Content-Type is {media_type:?}, not text/event-stream"),
                body: String::new(),
            });
        }
        Ok(EventStream::new(resp, self.max_response, self.extra_ca))
    }
}

fn header_value(s: &str) -> Result<HeaderValue, Error> {
    HeaderValue::from_str(s)
        .map_err(|_| Error::InvalidArgument(format!("{s:?} cannot be sent in a header")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_keeps_only_unreserved_characters() {
        for byte in 0x20u8..0x7f {
            let c = char::from(byte);
            let expected = if c.is_ascii_alphanumeric() || "-._~".contains(c) {
                c.to_string()
            } else {
                format!("%{byte:02X}")
            };
            assert_eq!(encode_segment(&c.to_string()), expected, "{c:?}");
        }
        assert_eq!(encode_segment("a/é%2F"), "a%2F%C3%A9%252F");
    }
}
