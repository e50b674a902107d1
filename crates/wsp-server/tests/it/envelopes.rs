//! Every error envelope the server emits, as a committed insta snapshot: one request per
//! `ErrorCode` the HTTP API can answer with (the 500 of a panic is in `files.rs`), through the
//! real router, so a change to a status, a code, a message or `details` shows in review.

use reqwest::Method;
use serde_json::Value;
use wsp_server::ServerConfig;
use wsp_store::Limits;

use crate::support::{Options, start_with};

/// One request and the envelope it got, as the snapshot shows it.
async fn call(
    http: &reqwest::Client,
    base: &str,
    (method, path): (Method, &str),
    key: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> String {
    let mut req = http.request(method.clone(), format!("{base}{path}"));
    if let Some(key) = key {
        req = req.bearer_auth(key);
    }
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    if let Some(body) = body {
        req = req.body(body.to_owned());
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let mut envelope: Value = resp.json().await.unwrap();
    // Fresh on every run: shown as a placeholder.
    if let Some(details) = envelope.get_mut("details").and_then(Value::as_object_mut) {
        for id in ["correlationId", "currentEtag", "etag"] {
            if details.contains_key(id) {
                details.insert(id.into(), Value::String(format!("[{id}]")));
            }
        }
    }
    format!(
        "{method} {path} -> {status}\n{}\n",
        serde_json::to_string_pretty(&envelope).unwrap()
    )
}

/// A request of the table below: the route, the key, the headers and the body.
type Case<'a> = (
    (Method, &'a str),
    Option<&'a str>,
    Vec<(&'a str, &'a str)>,
    Option<String>,
);

/// A run request the server accepts.
const RUN: &str = r#"{"workflowId":"envelopes"}"#;

#[tokio::test]
async fn every_error_envelope_is_as_committed() {
    let server = start_with(Options {
        limits: Limits::default()
            .with_max_file_bytes(16)
            .with_max_files(1)
            .with_max_versions(5),
        config: ServerConfig::default().with_max_open_runs(1),
        ..Options::default()
    })
    .await;
    let http = reqwest::Client::new();
    let base = server.base.as_str();
    let (a, read_only) = (
        Some(server.key_a.as_str()),
        Some(server.key_a_read.as_str()),
    );
    let json = [("content-type", "application/json")];
    let file = "/v1/host/workspace/files/notes.md";
    let put = |content: &str| format!(r#"{{"content":"{content}"}}"#);
    server
        .a()
        .put(
            &wsp_types::WorkspacePath::parse("notes.md").unwrap(),
            "v1",
            Default::default(),
        )
        .await
        .unwrap();

    let mut out = String::new();
    let cases: Vec<Case> = vec![
        // 400 validation_error: a body that is not the schema, a path with a control character.
        (
            (Method::PUT, file),
            a,
            json.to_vec(),
            Some("{\"content\":1}".into()),
        ),
        (
            (Method::GET, "/v1/host/workspace/files/a%01b.md"),
            a,
            vec![],
            None,
        ),
        // 401 unauthenticated: no key, an unknown key.
        ((Method::GET, file), None, vec![], None),
        (
            (Method::GET, file),
            Some("wsp_000000000000_0000"),
            vec![],
            None,
        ),
        // 403 forbidden: a read-only key writes.
        (
            (Method::PUT, file),
            read_only,
            json.to_vec(),
            Some(put("x")),
        ),
        // 404 not_found: a file that does not exist, a route that does not exist.
        (
            (Method::GET, "/v1/host/workspace/files/missing.md"),
            a,
            vec![],
            None,
        ),
        ((Method::GET, "/v1/nothing-here"), a, vec![], None),
        // 405 method_not_allowed.
        ((Method::PATCH, file), a, vec![], None),
        // 409 workspace_conflict: a stale If-Match.
        (
            (Method::PUT, file),
            a,
            [json[0], ("if-match", "\"0-stale\"")].to_vec(),
            Some(put("x")),
        ),
        // 413 workspace_too_large: over maxFileBytes, and over maxFiles.
        (
            (Method::PUT, file),
            a,
            json.to_vec(),
            Some(put("0123456789abcdefXYZ")),
        ),
        (
            (Method::PUT, "/v1/host/workspace/files/second.md"),
            a,
            json.to_vec(),
            Some(put("x")),
        ),
        // 415 unsupported_media_type.
        (
            (Method::PUT, file),
            a,
            vec![("content-type", "text/plain")],
            Some(put("x")),
        ),
        // 501 capability_not_provided: no agent registry configured.
        ((Method::GET, "/v1/agents"), a, vec![], None),
    ];
    for (route, key, headers, body) in cases {
        out.push_str(&call(&http, base, route, key, &headers, body.as_deref()).await);
    }
    // 409 idempotency_key_mismatch: one Idempotency-Key, two different bodies.
    let idem = [json[0], ("idempotency-key", "envelope-test-1")];
    let route = (Method::PUT, file);
    call(&http, base, route.clone(), a, &idem, Some(&put("same"))).await;
    out.push_str(&call(&http, base, route, a, &idem, Some(&put("other"))).await);
    // 429 rate_limited: a second open run past --max-open-runs 1.
    let run = (Method::POST, "/v1/runs");
    call(&http, base, run.clone(), a, &json, Some(RUN)).await;
    out.push_str(&call(&http, base, run, a, &json, Some(RUN)).await);
    // 503 service_unavailable: the change feed while the server shuts down.
    server.state.close_streams();
    let events = (Method::GET, "/v1/host/workspace/events");
    out.push_str(&call(&http, base, events, a, &[], None).await);

    insta::assert_snapshot!("error_envelopes", out);
}
