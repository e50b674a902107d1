//! The console's only way to the data: `/v1` requests through the API router, in process,
//! with the signed-in person's key, and their JSON answers.

use axum::Router;
use axum::body::Body;
use http::{HeaderValue, Method, Request, header};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use tower::ServiceExt;

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

/// The API's error envelope.
#[derive(Deserialize)]
struct Envelope {
    error: String,
    message: String,
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
        let (code, message) = match serde_json::from_slice::<Envelope>(&body) {
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

/// A file's metadata, as listed or in history.
#[derive(Deserialize, Clone)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FileMeta {
    pub(crate) path: String,
    pub(crate) version: u64,
    #[serde(default)]
    pub(crate) etag: Option<String>,
    #[serde(default)]
    pub(crate) updated_at: String,
    #[serde(default)]
    pub(crate) updated_by: Option<String>,
    #[serde(default)]
    pub(crate) size: Option<u64>,
}

/// A file with its content.
#[derive(Deserialize, Clone)]
#[serde(rename_all = "camelCase")]
pub(crate) struct File {
    pub(crate) path: String,
    pub(crate) content: String,
    #[serde(default)]
    pub(crate) content_type: Option<String>,
    #[serde(default)]
    pub(crate) content_encoding: Option<String>,
    pub(crate) version: u64,
    #[serde(default)]
    pub(crate) etag: Option<String>,
    #[serde(default)]
    pub(crate) updated_at: String,
    #[serde(default)]
    pub(crate) updated_by: Option<String>,
}

impl File {
    /// Whether the content is base64 bytes rather than text.
    pub(crate) fn is_binary(&self) -> bool {
        self.content_encoding.as_deref() == Some("base64")
    }

    /// Whether the file is shown rendered as Markdown.
    pub(crate) fn is_markdown(&self) -> bool {
        self.content_type.as_deref() == Some("text/markdown")
            || self.path.ends_with(".md")
            || self.path.ends_with(".markdown")
    }
}

/// `GET /v1/host/workspace/files`.
#[derive(Deserialize)]
pub(crate) struct FileList {
    pub(crate) files: Vec<FileMeta>,
}

/// `GET /v1/host/workspace/history/{path}`.
#[derive(Deserialize)]
pub(crate) struct History {
    pub(crate) versions: Vec<FileMeta>,
}

/// One run of `GET /v1/runs`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunSummary {
    pub(crate) run_id: String,
    pub(crate) workflow_id: String,
    pub(crate) status: String,
    pub(crate) started_at: String,
    #[serde(default)]
    pub(crate) ended_at: Option<String>,
}

/// `GET /v1/runs`: one page, newest first.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunList {
    pub(crate) runs: Vec<RunSummary>,
    /// Where the next (older) page starts; absent on the last page.
    #[serde(default)]
    pub(crate) next_cursor: Option<String>,
}

/// `GET /v1/runs/{runId}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Run {
    pub(crate) run_id: String,
    pub(crate) workflow_id: String,
    pub(crate) status: String,
    pub(crate) started_at: String,
    #[serde(default)]
    pub(crate) ended_at: Option<String>,
}

/// `GET .../context`.
#[derive(Deserialize)]
pub(crate) struct Context {
    pub(crate) text: String,
    pub(crate) report: ContextReport,
}

/// The budget report of a context.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ContextReport {
    pub(crate) source: String,
    pub(crate) tokenizer: String,
    pub(crate) budget_tokens: u64,
    pub(crate) used_tokens: u64,
    #[serde(default)]
    pub(crate) over_budget: bool,
    pub(crate) entries: Vec<ContextEntry>,
}

/// One line of the budget report.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ContextEntry {
    pub(crate) section: String,
    pub(crate) path: String,
    pub(crate) outcome: String,
    pub(crate) full_tokens: u64,
    pub(crate) included_tokens: u64,
    pub(crate) omitted_tokens: u64,
    #[serde(default)]
    pub(crate) reason: Option<String>,
}

/// One agent of `GET /v1/agents`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Agent {
    pub(crate) agent_id: String,
    pub(crate) label: String,
    pub(crate) persona: String,
    pub(crate) model_class: String,
    pub(crate) pack_name: String,
    pub(crate) pack_version: String,
    #[serde(default)]
    pub(crate) description: Option<String>,
}

/// `GET /v1/agents`.
#[derive(Deserialize)]
pub(crate) struct AgentList {
    pub(crate) agents: Vec<Agent>,
}

/// `POST /v1/host/workspace/publish`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Published {
    pub(crate) target_agent_id: String,
    pub(crate) path: String,
    pub(crate) version: u64,
}
