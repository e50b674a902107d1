//! WSR-1 over real HTTP: a configured secret never reaches storage or the logs, whichever field
//! of a request carries it. Content is redacted; a path, a media type, an `Idempotency-Key`, a
//! run's `workflowId` and a publish `targetPath` carrying one are refused with 400, the field
//! named and the secret never echoed. Normalization forms of a secret count as the secret.
//!
//! The logs checked are every log line of this process, caught by a process-wide subscriber:
//! that is why this file is a test binary of its own and not a module of `tests/it/`.

mod support;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};
use support::{Options, TestServer, start_with};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};
use wsp_server::{AppState, ConfigAgentRegistry, KeyAuthenticator, ServerConfig, TenantSecrets};
use wsp_store::keys::{ApiKey, KeyRecord, KeyRegistry, MemoryKeyRegistry};
use wsp_store::{FileWrite, MemoryStore, Precondition, Redactor, Secret, WorkspaceStore};
use wsp_types::{Owner, OwnerId, Scopes, WorkspacePath, WorkspacePrefix};

const SECRET: &str = "sk-live-1234567890";
/// A secret with letters that have several Unicode normalization forms (NFC as written here).
const ACCENTED: &str = "p\u{e4}ssw\u{f6}rd-geheim-\u{e9}";

/// Everything every span and event in this test binary recorded, as text.
fn logs() -> &'static Mutex<String> {
    static LOGS: OnceLock<Arc<Mutex<String>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buf = Arc::new(Mutex::new(String::new()));
        tracing::subscriber::set_global_default(Capture {
            buf: buf.clone(),
            next: AtomicU64::new(1),
        })
        .expect("no other subscriber in this test binary");
        buf
    })
}

/// A subscriber that writes every field of every span and event, at every level, into a buffer.
struct Capture {
    buf: Arc<Mutex<String>>,
    next: AtomicU64,
}

struct Fields<'a>(&'a Mutex<String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let mut buf = self.0.lock().unwrap();
        let _ = write!(buf, "{}={value:?} ", field.name());
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        span.record(&mut Fields(&self.buf));
        self.buf.lock().unwrap().push('\n');
        Id::from_u64(self.next.fetch_add(1, Ordering::Relaxed))
    }
    fn record(&self, _: &Id, values: &Record<'_>) {
        values.record(&mut Fields(&self.buf));
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        event.record(&mut Fields(&self.buf));
        self.buf.lock().unwrap().push('\n');
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

async fn server() -> TestServer {
    logs();
    start_with(Options {
        secrets: vec![
            ("tenant-a", "openai", SECRET),
            ("tenant-a", "accented", ACCENTED),
        ],
        config: ServerConfig::default().with_test_seams(true),
        ..Options::default()
    })
    .await
}

/// One request: the status and the JSON body (the raw text when it is not JSON).
async fn call(
    base: &str,
    method: &str,
    path: &str,
    key: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = reqwest::Client::new()
        .request(method.parse().unwrap(), format!("{base}{path}"))
        .bearer_auth(key);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    if let Some(body) = body {
        req = req.json(&body);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// One request with tenant A's key and no other header.
async fn call_a(s: &TestServer, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    call(&s.base, method, path, &s.key_a, &[], body).await
}

/// A `put` through the test seam into tenant A's `default` workspace, with `fields` (the path,
/// the content, ...) added to the operation.
async fn seam_put(s: &TestServer, fields: Value) -> (u16, Value) {
    let Value::Object(fields) = fields else {
        panic!("fields are an object: {fields}");
    };
    let mut op = json!({"tenant": "tenant-a", "workspace": "default", "op": "put"});
    op.as_object_mut().unwrap().extend(fields);
    call_a(s, "POST", "/v1/host/sample/workspace/op", Some(op)).await
}

/// Asserts a 400 refusal naming `field` whose body never shows the secret.
fn refused(answer: &(u16, Value), field: &str) {
    let (status, body) = answer;
    assert_eq!(*status, 400, "{body}");
    assert_eq!(body["error"], "validation_error", "{body}");
    assert_eq!(body["details"]["field"], field, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("a configured secret appears in {field}")),
        "{message}"
    );
    assert!(!body.to_string().contains(SECRET), "{body}");
}

async fn live_paths(s: &TestServer) -> Vec<String> {
    let (status, list) = call_a(s, "GET", "/v1/host/workspace/files", None).await;
    assert_eq!(status, 200, "{list}");
    list["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_secret_in_the_path_is_refused_and_nothing_is_stored() {
    let s = server().await;
    let body = json!({"content": "harmless"});
    let encoded: String = SECRET.bytes().map(|b| format!("%{b:02X}")).collect();
    for path in [
        format!("/v1/host/workspace/files/notes/{SECRET}.md"),
        format!("/v1/host/workspace/files/notes%2F{SECRET}.md"),
        format!("/v1/host/workspace/files/{encoded}"),
    ] {
        let answer = call_a(&s, "PUT", &path, Some(body.clone())).await;
        refused(&answer, "path");
    }
    // The test seam writes through the same store.
    let answer = seam_put(
        &s,
        json!({"path": format!("x-{SECRET}"), "content": "harmless"}),
    )
    .await;
    refused(&answer, "path");
    assert!(live_paths(&s).await.is_empty());
    // Tenant B has no secrets: the same path is an ordinary path there.
    let (status, _) = call(
        &s.base,
        "PUT",
        &format!("/v1/host/workspace/files/notes/{SECRET}.md"),
        &s.key_b,
        &[],
        Some(body),
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_secret_in_the_content_type_is_refused() {
    let s = server().await;
    let answer = call_a(
        &s,
        "PUT",
        "/v1/host/workspace/files/a.md",
        Some(json!({"content": "x", "contentType": format!("text/plain; token={SECRET}")})),
    )
    .await;
    refused(&answer, "contentType");
    let answer = seam_put(
        &s,
        json!({"path": "a.md", "content": "x", "contentType": format!("text/{SECRET}")}),
    )
    .await;
    refused(&answer, "contentType");
    assert!(live_paths(&s).await.is_empty());
}

#[tokio::test]
async fn a_secret_in_the_idempotency_key_is_refused() {
    let s = server().await;
    let key = format!("retry-{SECRET}");
    let put = call(
        &s.base,
        "PUT",
        "/v1/host/workspace/files/a.md",
        &s.key_a,
        &[("idempotency-key", &key)],
        Some(json!({"content": "x"})),
    )
    .await;
    refused(&put, "Idempotency-Key");
    assert!(live_paths(&s).await.is_empty());
    let (status, _) = call_a(
        &s,
        "PUT",
        "/v1/host/workspace/files/a.md",
        Some(json!({"content": "x"})),
    )
    .await;
    assert_eq!(status, 200);
    let delete = call(
        &s.base,
        "DELETE",
        "/v1/host/workspace/files/a.md",
        &s.key_a,
        &[("idempotency-key", &key)],
        None,
    )
    .await;
    refused(&delete, "Idempotency-Key");
    assert_eq!(live_paths(&s).await, ["a.md"]);
}

#[tokio::test]
async fn a_secret_in_a_workflow_id_is_refused() {
    let s = server().await;
    let answer = call_a(
        &s,
        "POST",
        "/v1/runs",
        Some(json!({"workflowId": format!("deploy-{SECRET}")})),
    )
    .await;
    refused(&answer, "workflowId");
    let (status, _) = call_a(
        &s,
        "POST",
        "/v1/runs",
        Some(json!({"workflowId": "deploy"})),
    )
    .await;
    assert_eq!(status, 201);
}

#[tokio::test]
async fn every_normalization_form_of_a_secret_is_redacted() {
    let s = server().await;
    let nfd = "pa\u{308}sswo\u{308}rd-geheim-e\u{301}";
    // Full-width letters: the NFKC form of this text is the secret.
    let wide = "\u{ff50}\u{e4}\u{ff53}\u{ff53}w\u{f6}rd-geheim-\u{e9}";
    for (name, text) in [("nfc", ACCENTED), ("nfd", nfd), ("wide", wide)] {
        let content = format!("before {text} after");
        let path = format!("/v1/host/workspace/files/{name}.md");
        let (status, stored) = call_a(&s, "PUT", &path, Some(json!({ "content": content }))).await;
        assert_eq!(status, 200, "{stored}");
        assert_eq!(
            stored["content"], "before [REDACTED:accented] after",
            "{name}"
        );
        let (_, read) = call_a(&s, "GET", &path, None).await;
        assert_eq!(read["content"], "before [REDACTED:accented] after");
    }
    // And through the test seam.
    let (status, stored) = seam_put(
        &s,
        json!({"path": "seam.md", "content": format!("{SECRET} {nfd}")}),
    )
    .await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(stored["content"], "[REDACTED:openai] [REDACTED:accented]");
}

#[tokio::test]
async fn no_secret_reaches_the_logs() {
    let s = server().await;
    let encoded: String = SECRET.bytes().map(|b| format!("%{b:02X}")).collect();
    for path in [
        format!("/v1/host/workspace/files/{SECRET}.md"),
        format!("/v1/host/workspace/files/{encoded}"),
        format!("/v1/host/workspace/history/{SECRET}"),
    ] {
        let (status, _) = call_a(&s, "PUT", &path, Some(json!({"content": "x"}))).await;
        assert!(status == 400 || status == 405, "{path}: {status}");
    }
    let text = logs().lock().unwrap().clone();
    assert!(
        text.contains("/v1/host/workspace/files/[REDACTED:openai].md"),
        "the request is still logged, with the secret redacted: {text}"
    );
    assert!(!text.contains(SECRET), "{text}");
    assert!(!text.contains(&encoded), "{text}");
}

/// A publishing host: its URL, the key of user u1's private agent `acme.main`, the store the
/// server writes through (for data written before a secret was configured) and its stop switch.
struct PublishingHost {
    base: String,
    key: String,
    store: Arc<MemoryStore>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// A host with tenant-a's secret and one shared agent, `acme.cook`.
async fn publishing_host() -> PublishingHost {
    logs();
    let registry = Arc::new(MemoryKeyRegistry::default());
    let key = ApiKey::generate();
    let mut record = KeyRecord::new(
        &key,
        Owner::parse("tenant-a", "user-u1").unwrap(),
        "acme.main".into(),
        Scopes::all(),
    );
    record.agent = Some("acme.main".into());
    registry.insert(record).await.unwrap();
    let agents = serde_json::from_value(json!({
        "install_scope": "tenant",
        "packs": [{"name": "acme.kitchen", "version": "1.0.0", "agents": [
            {"id": "acme.main", "persona": "Main", "model_class": "general",
             "tool_allowlist": [], "system_prompt_ref": "prompts/main.md"},
            {"id": "acme.cook", "persona": "Cook", "model_class": "general",
             "tool_allowlist": [], "shared": true, "system_prompt_ref": "prompts/cook.md"}
        ]}],
        "approvals": [{"tenant": "tenant-a", "workspace": "user-u1", "packs": ["acme.kitchen"]}]
    }))
    .unwrap();
    let secrets = TenantSecrets::new(HashMap::from([(
        OwnerId::parse("tenant-a").unwrap(),
        Redactor::new(vec![Secret {
            id: "openai".into(),
            value: SECRET.into(),
        }])
        .unwrap(),
    )]));
    let store = Arc::new(MemoryStore::default());
    let state = AppState::builder(store.clone(), Arc::new(KeyAuthenticator::new(registry)))
        .secrets(Arc::new(secrets))
        .agents(Arc::new(ConfigAgentRegistry::from_config(&agents).unwrap()))
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(wsp_server::serve(listener, state, async move {
        let _ = rx.await;
    }));
    PublishingHost {
        base,
        key: key.expose(),
        store,
        _stop: tx,
    }
}

#[tokio::test]
async fn a_secret_in_a_publish_target_path_is_refused_and_content_is_redacted() {
    let host = publishing_host().await;
    let (base, key) = (&host.base, &host.key);
    // Written before the secret was configured: plaintext in the backend.
    let user = Owner::parse("tenant-a", "user-u1").unwrap();
    let path = WorkspacePath::parse("list.md").unwrap();
    host.store
        .put(
            &user,
            &path,
            FileWrite::markdown(format!("eggs {SECRET}")),
            Precondition::None,
        )
        .await
        .unwrap();
    let answer = call(
        base,
        "POST",
        "/v1/host/workspace/publish",
        key,
        &[],
        Some(json!({"path": "list.md", "targetAgentId": "acme.cook",
                    "targetPath": format!("inbox/{SECRET}.md")})),
    )
    .await;
    refused(&answer, "targetPath");
    let (status, body) = call(
        base,
        "POST",
        "/v1/host/workspace/publish",
        key,
        &[],
        Some(json!({"path": "list.md", "targetAgentId": "acme.cook"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let cook = Owner::parse("tenant-a", "agent-acme.cook").unwrap();
    let landed = WorkspacePath::parse("inbox/list.md").unwrap();
    let copy = host.store.get(&cook, &landed, None).await.unwrap();
    assert_eq!(copy.content, "eggs [REDACTED:openai]");
    assert_eq!(
        host.store
            .list(&cook, &WorkspacePrefix::all())
            .await
            .unwrap()
            .len(),
        1
    );
}
