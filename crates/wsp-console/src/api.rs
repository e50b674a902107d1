//! The console's only way to the data: `/v1` requests through the API router, in process,
//! with the signed-in person's key, and their JSON answers. Bodies and answers are the wire
//! types generated from the JSON Schemas ([`wsp_types::wire`]).

use axum::Router;
use axum::body::Body;
use http::{HeaderValue, Method, Request, header};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tower::ServiceExt;
use wsp_types::wire::{ErrorEnvelope, WorkspaceFile};

use crate::error::ConsoleError;

/// Largest API answer the console reads (the API's own limits keep answers far below).
const MAX_ANSWER_BYTES: usize = 256 * 1024 * 1024;

/// One path parameter (workspace path, run id, agent id), fully percent-encoded: `/` too, so
/// whatever a console URL held stays one parameter of the API route it is sent to.
pub(crate) fn enc(part: &str) -> String {
    utf8_percent_encode(part, NON_ALPHANUMERIC).to_string()
}

/// One query value.
pub(crate) fn q(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// The API router and the key of one request.
pub(crate) struct Api<'a> {
    pub(crate) router: &'a Router,
    pub(crate) key: &'a str,
}

/// An answer with a success status.
pub(crate) struct Answer {
    pub(crate) body: bytes::Bytes,
}

impl Api<'_> {
    /// Sends one request; a success status is an [`Answer`], any other the API's error.
    pub(crate) async fn send(
        &self,
        method: Method,
        uri: &str,
        headers: &[(http::HeaderName, String)],
        json: Option<serde_json::Value>,
    ) -> Result<Answer, ConsoleError> {
        let resp = self.raw(method, uri, headers, json).await?;
        let status = resp.status();
        let body = axum::body::to_bytes(resp.into_body(), MAX_ANSWER_BYTES)
            .await
            .map_err(|e| ConsoleError::Internal(format!("reading an API answer: {e}")))?;
        if status.is_success() {
            return Ok(Answer { body });
        }
        let (code, message) = match serde_json::from_slice::<ErrorEnvelope>(&body) {
            Ok(e) => (e.error, e.message),
            Err(_) => (
                "internal".to_owned(),
                "the server gave no reason".to_owned(),
            ),
        };
        Err(ConsoleError::Api {
            status,
            code,
            message,
        })
    }

    /// Sends one request and hands back the API's response as it is (the change feed).
    pub(crate) async fn raw(
        &self,
        method: Method,
        uri: &str,
        headers: &[(http::HeaderName, String)],
        json: Option<serde_json::Value>,
    ) -> Result<http::Response<Body>, ConsoleError> {
        let bearer = HeaderValue::try_from(format!("Bearer {}", self.key))
            .map_err(|_| ConsoleError::SignedOut)?;
        let mut req = Request::builder()
            .method(method)
            .uri(uri)
            .header(header::AUTHORIZATION, bearer);
        for (name, value) in headers {
            req = req.header(name, value);
        }
        let body = match json {
            Some(v) => {
                req = req.header(header::CONTENT_TYPE, "application/json");
                Body::from(v.to_string())
            }
            None => Body::empty(),
        };
        let req = req
            .body(body)
            .map_err(|e| ConsoleError::BadRequest(format!("this request cannot be made: {e}")))?;
        // The router's error type is Infallible.
        let resp = self.router.clone().oneshot(req).await;
        Ok(resp.unwrap_or_else(|never| match never {}))
    }

    /// GET `uri` and parse its JSON.
    pub(crate) async fn get<T: DeserializeOwned>(&self, uri: &str) -> Result<T, ConsoleError> {
        let answer = self.send(Method::GET, uri, &[], None).await?;
        parse(&answer.body)
    }
}

/// A request body as JSON.
pub(crate) fn body<T: Serialize>(value: &T) -> Result<serde_json::Value, ConsoleError> {
    serde_json::to_value(value)
        .map_err(|_| ConsoleError::Internal("a request body did not serialize".into()))
}

/// The JSON of an answer as `T`.
pub(crate) fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ConsoleError> {
    serde_json::from_slice(body).map_err(|e| {
        // Line and column only: serde's message may quote the file's content.
        ConsoleError::Internal(format!(
            "an API answer did not parse (line {}, column {})",
            e.line(),
            e.column()
        ))
    })
}

/// Whether a file is shown rendered as Markdown: by its media type, or by its name.
pub(crate) fn is_markdown(f: &WorkspaceFile) -> bool {
    let path = f.path.as_str();
    f.content_type == "text/markdown" || path.ends_with(".md") || path.ends_with(".markdown")
}
