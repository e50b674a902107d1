//! The `http_requests` target: the real router, in process, over a fresh memory store.
//!
//! The input is one to eight requests written like HTTP/1.1 without the version, separated by
//! a line `~~~`:
//!
//! ```text
//! PUT /v1/host/workspace/files/notes%2Fplan.md
//! authorization: Bearer $A
//! content-type: application/json
//!
//! {"content": "ship it"}
//! ~~~
//! GET /v1/host/workspace/files/notes%2Fplan.md
//! authorization: Bearer $R
//! if-none-match: $E
//! ```
//!
//! In header values `$A` is a key of tenant-a with every scope, `$R` a read-only key of
//! tenant-a, `$B` a key of tenant-b, `$M` the private agent `acme.main` and `$C` the shared agent
//! `acme.cook` of tenant-a; `$E` is the last `ETag` a response carried, and `$RUN` (also in the
//! request target) the last `runId`.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::FutureExt;
use http::header::{CONTENT_TYPE, ETAG};
use http::{HeaderName, HeaderValue, Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use wsp_server::{AgentsConfig, AppState, ConfigAgentRegistry, KeyAuthenticator, ServerConfig};
use wsp_store::keys::{ApiKey, KeyRecord, KeyRegistry, MemoryKeyRegistry};
use wsp_store::{Limits, MemoryStore};
use wsp_types::{ErrorCode, Owner, Scope, Scopes};

/// Requests in one input at most.
const MAX_REQUESTS: usize = 8;

/// How long a finite response body may take; a body still open then is a hang.
const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// The keys every input may name, and the registry that knows them.
struct Keys {
    registry: Arc<MemoryKeyRegistry>,
    /// `$X` placeholder and key, longest placeholder first.
    placeholders: Vec<(&'static str, String)>,
}

async fn key(
    registry: &MemoryKeyRegistry,
    owner: (&str, &str),
    agent: Option<&str>,
    scopes: Scopes,
) -> String {
    let k = ApiKey::generate();
    let mut record = KeyRecord::new(
        &k,
        Owner::parse(owner.0, owner.1).expect("a valid owner"),
        agent.unwrap_or("fuzz").to_owned(),
        scopes,
    );
    record.agent = agent.map(str::to_owned);
    registry
        .insert(record)
        .await
        .expect("the memory registry stores");
    k.expose()
}

async fn keys() -> Keys {
    let registry = Arc::new(MemoryKeyRegistry::default());
    let read: Scopes = [Scope::WorkspaceRead].into_iter().collect();
    let all = Scopes::all;
    let placeholders = vec![
        (
            "$A",
            key(&registry, ("tenant-a", "default"), None, all()).await,
        ),
        (
            "$R",
            key(&registry, ("tenant-a", "default"), None, read).await,
        ),
        (
            "$B",
            key(&registry, ("tenant-b", "default"), None, all()).await,
        ),
        (
            "$M",
            key(&registry, ("tenant-a", "user-u1"), Some("acme.main"), all()).await,
        ),
        (
            "$C",
            key(&registry, ("tenant-a", "user-u1"), Some("acme.cook"), all()).await,
        ),
    ];
    Keys {
        registry,
        placeholders,
    }
}

fn agents_config() -> AgentsConfig {
    serde_json::from_value(json!({
        "install_scope": "tenant",
        "packs": [
            {"name": "acme.kitchen", "version": "2.0.0", "agents": [
                {"id": "acme.main", "persona": "Main", "model_class": "general",
                 "tool_allowlist": [], "system_prompt_ref": "prompts/main.md"},
                {"id": "acme.cook", "persona": "Cook", "model_class": "general",
                 "tool_allowlist": ["workspace.read"], "shared": true,
                 "system_prompt_ref": "prompts/cook.md"}
            ]},
            {"name": "acme.research", "version": "0.3.0", "agents": [
                {"id": "acme.researcher", "persona": "Researcher", "model_class": "reasoning",
                 "tool_allowlist": [], "system_prompt_ref": "prompts/research.md"}
            ]}
        ],
        "approvals": [
            {"tenant": "tenant-a", "workspace": "default", "packs": ["acme.kitchen"]},
            {"tenant": "tenant-a", "workspace": "user-u1", "packs": ["acme.kitchen"]}
        ]
    }))
    .expect("the agents configuration deserializes")
}

/// A server over a fresh store: small limits so that they are reached, test seams on, agents.
fn app(keys: &Keys) -> axum::Router {
    let store = Arc::new(MemoryStore::new(
        Limits::default()
            .with_max_file_bytes(1024)
            .with_max_files(20)
            .with_max_versions(3),
    ));
    let registry =
        ConfigAgentRegistry::from_config(&agents_config()).expect("the agents configuration");
    let state = AppState::builder(
        store,
        Arc::new(KeyAuthenticator::new(keys.registry.clone())),
    )
    .config(ServerConfig::default().with_test_seams(true))
    .agents(Arc::new(registry))
    .build();
    wsp_server::router(state)
}

/// What earlier responses of the same input handed out.
#[derive(Default)]
struct Memory {
    etag: String,
    run: String,
}

fn substitute(text: &str, keys: &Keys, memory: &Memory) -> String {
    let mut out = text
        .replace("$RUN", &memory.run)
        .replace("$E", &memory.etag);
    for (name, key) in &keys.placeholders {
        out = out.replace(name, key);
    }
    out
}

/// Builds one request, or `None` when the text does not describe one HTTP can carry.
fn request(text: &str, keys: &Keys, memory: &Memory) -> Option<Request<Full<Bytes>>> {
    let (head, body) = text.split_once("\n\n").unwrap_or((text, ""));
    let mut lines = head.lines();
    let (method, target) = lines.next()?.split_once(' ')?;
    let method = Method::from_bytes(method.as_bytes()).ok()?;
    let uri: Uri = target.replace("$RUN", &memory.run).parse().ok()?;
    let mut req = Request::builder().method(method).uri(uri);
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = substitute(value.trim(), keys, memory);
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.trim().as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            req = req.header(name, value);
        }
    }
    req.body(Full::new(Bytes::copy_from_slice(body.as_bytes())))
        .ok()
}

/// Sends the requests of the input (lossily decoded as UTF-8) through
/// [`wsp_server::router`] over a fresh [`MemoryStore`] and checks every response: no 5xx but
/// 503, a JSON body (an error envelope for 4xx and 5xx, whose code matches the status), an
/// event stream only with 200, and no body that never ends.
///
/// ```
/// wsp_fuzz::http_requests(b"GET /v1/host/workspace/files\nauthorization: Bearer $A\n");
/// wsp_fuzz::http_requests(b"PUT /v1/host/workspace/files/a%2F..%2Fb\nauthorization: Bearer $A\n\n{}");
/// ```
pub fn http_requests(data: &[u8]) {
    thread_local! {
        static KEYS: Arc<Keys> = Arc::new(crate::block_on(keys()));
    }
    let keys = KEYS.with(Arc::clone);
    let text = String::from_utf8_lossy(data);
    crate::block_on(async {
        let app = app(&keys);
        let mut memory = Memory::default();
        for part in text.split("\n~~~\n").take(MAX_REQUESTS) {
            let Some(req) = request(part, &keys, &memory) else {
                continue;
            };
            let what = format!("{} {}", req.method(), req.uri());
            let head = req.method() == Method::HEAD;
            let resp = tower::Service::call(&mut app.clone(), req)
                .await
                .unwrap_or_else(|never| match never {});
            check(&what, head, resp, &mut memory).await;
        }
    });
}

async fn check(
    what: &str,
    head: bool,
    resp: http::Response<axum::body::Body>,
    memory: &mut Memory,
) {
    let status = resp.status().as_u16();
    assert!(
        status < 500 || status == 503,
        "{what}: status {status} ({:?})",
        resp.body()
    );
    if let Some(etag) = resp.headers().get(ETAG).and_then(|v| v.to_str().ok()) {
        memory.etag = etag.to_owned();
    }
    let content_type = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let mut body = resp.into_body();
    if content_type.starts_with("text/event-stream") {
        assert_eq!(status, 200, "{what}: an event stream with status {status}");
        // The feed never ends: look at what is ready now, then hang up.
        if let Some(Some(Ok(frame))) = body.frame().now_or_never()
            && let Ok(data) = frame.into_data()
        {
            assert!(
                std::str::from_utf8(&data).is_ok(),
                "{what}: the event stream is not UTF-8"
            );
        }
        return;
    }
    let body = tokio::time::timeout(BODY_TIMEOUT, body.collect())
        .await
        .unwrap_or_else(|_| panic!("{what}: the body did not end within {BODY_TIMEOUT:?}"))
        .unwrap_or_else(|e| panic!("{what}: the body failed: {e}"))
        .to_bytes();
    if body.is_empty() && (head || status == 204 || status == 304) {
        return;
    }
    assert!(
        content_type == "application/json",
        "{what}: status {status} with content type {content_type:?}: {:?}",
        String::from_utf8_lossy(&body)
    );
    let value: Value = serde_json::from_slice(&body).unwrap_or_else(|e| {
        panic!(
            "{what}: status {status}, the body is not JSON ({e}): {:?}",
            String::from_utf8_lossy(&body)
        )
    });
    if let Some(run) = value.get("runId").and_then(Value::as_str) {
        memory.run = run.to_owned();
    }
    if status >= 400 {
        envelope(what, status, &value);
    }
}

/// `{error, message, details?}` with nothing else, and a code whose status is `status`.
fn envelope(what: &str, status: u16, value: &Value) {
    let map = value.as_object().unwrap_or_else(|| {
        panic!("{what}: status {status}, the envelope is not an object: {value}")
    });
    assert!(
        map.keys()
            .all(|k| matches!(k.as_str(), "error" | "message" | "details")),
        "{what}: unexpected envelope keys: {value}"
    );
    let code = map
        .get("error")
        .and_then(Value::as_str)
        .and_then(ErrorCode::from_wire)
        .unwrap_or_else(|| panic!("{what}: no known error code: {value}"));
    assert_eq!(code.http_status(), status, "{what}: {value}");
    assert!(
        map.get("message").is_some_and(Value::is_string),
        "{what}: no message: {value}"
    );
    assert!(
        map.get("details").is_none_or(Value::is_object),
        "{what}: details is not an object: {value}"
    );
}
