//! A real server on an ephemeral port serving the API and the console, with keys for two
//! tenants, a read-only key and a private agent's user, and an agent inventory.

#![allow(dead_code, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

pub mod webdriver;

use serde_json::{Value, json};
use wsp_console::ConsoleConfig;
use wsp_server::{AgentsConfig, AppState, ConfigAgentRegistry, KeyAuthenticator};
use wsp_store::keys::{ApiKey, KeyRecord, KeyRegistry, MemoryKeyRegistry};
use wsp_store::{Limits, MemoryStore};
use wsp_types::{Owner, Scope, Scopes};

pub struct Host {
    pub base: String,
    /// tenant-a/default, every scope.
    pub key_a: String,
    /// tenant-b/default, every scope.
    pub key_b: String,
    /// tenant-a/default, `workspace:read` only.
    pub key_a_read: String,
    /// tenant-a, user u1 acting through the private agent `acme.main`.
    pub key_main: String,
    /// The keys, to revoke one.
    pub registry: Arc<MemoryKeyRegistry>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

fn agents_config() -> AgentsConfig {
    serde_json::from_value(json!({
        "install_scope": "tenant",
        "packs": [
            {"name": "acme.kitchen", "version": "2.0.0", "agents": [
                {"id": "acme.main", "persona": "Main", "label": "Main agent", "model_class": "general",
                 "tool_allowlist": [], "system_prompt_ref": "prompts/main.md",
                 "description": "The user's own agent."},
                {"id": "acme.cook", "persona": "Cook", "label": "Cook", "model_class": "general",
                 "tool_allowlist": ["workspace.read"], "shared": true,
                 "system_prompt_ref": "prompts/cook.md"}
            ]},
            {"name": "acme.research", "version": "0.3.0", "agents": [
                {"id": "acme.researcher", "persona": "Researcher", "label": "Researcher",
                 "model_class": "reasoning", "tool_allowlist": ["web.search"],
                 "system_prompt_ref": "prompts/research.md"}
            ]}
        ],
        "approvals": [
            {"tenant": "tenant-a", "workspace": "default", "packs": ["acme.kitchen"]},
            {"tenant": "tenant-a", "workspace": "user-u1", "packs": ["acme.kitchen"]},
            {"tenant": "tenant-b", "workspace": "default", "packs": ["acme.research"]}
        ]
    }))
    .expect("the test configuration deserializes")
}

async fn key(
    registry: &MemoryKeyRegistry,
    tenant: &str,
    workspace: &str,
    principal: &str,
    agent: Option<&str>,
    scopes: Scopes,
) -> String {
    let k = ApiKey::generate();
    let mut record = KeyRecord::new(
        &k,
        Owner::parse(tenant, workspace).unwrap(),
        principal.into(),
        scopes,
    );
    record.agent = agent.map(str::to_owned);
    registry.insert(record).await.unwrap();
    k.expose()
}

/// A host whose console sessions end after `idle` without use.
pub async fn start(idle: Duration) -> Host {
    let registry = Arc::new(MemoryKeyRegistry::default());
    let read: Scopes = [Scope::WorkspaceRead].into_iter().collect();
    let key_a = key(
        &registry,
        "tenant-a",
        "default",
        "alice",
        None,
        Scopes::all(),
    )
    .await;
    let key_b = key(&registry, "tenant-b", "default", "bob", None, Scopes::all()).await;
    let key_a_read = key(&registry, "tenant-a", "default", "reader", None, read).await;
    let key_main = key(
        &registry,
        "tenant-a",
        "user-u1",
        "u1",
        Some("acme.main"),
        Scopes::all(),
    )
    .await;
    let store = Arc::new(MemoryStore::new(
        Limits::default()
            .with_max_file_bytes(64 * 1024)
            .with_max_files(100)
            .with_max_versions(20),
    ));
    let agents = ConfigAgentRegistry::from_config(&agents_config()).unwrap();
    let state = AppState::builder(store, Arc::new(KeyAuthenticator::new(registry.clone())))
        .agents(Arc::new(agents))
        .build();
    let api = wsp_server::router(state.clone());
    let app = wsp_console::router(
        api.clone(),
        ConsoleConfig::default().with_idle_timeout(idle),
    )
    .merge(api);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(wsp_server::serve_app_with(
        listener,
        state,
        app,
        wsp_server::ConnectionLimits::default(),
        async move {
            let _ = rx.await;
        },
    ));
    Host {
        base: format!("http://{addr}"),
        key_a,
        key_b,
        key_a_read,
        key_main,
        registry,
        shutdown: Some(tx),
    }
}

impl Host {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// One `/v1` request with `key`; answers the status and the JSON body.
    pub async fn api(
        &self,
        method: &str,
        path: &str,
        key: &str,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> (u16, Value) {
        let http = reqwest::Client::new();
        let mut req = http
            .request(method.parse().unwrap(), self.url(path))
            .bearer_auth(key);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Reads the live file at `path` with `key`; answers the JSON of the API's answer (the
    /// error envelope when there is no such file).
    pub async fn get(&self, key: &str, path: &str) -> Value {
        let file = format!("/v1/host/workspace/files/{path}");
        self.api("GET", &file, key, &[], None).await.1
    }

    /// Writes `content` at `path` with `key` (no precondition); answers the stored file.
    pub async fn put(&self, key: &str, path: &str, content: &str) -> Value {
        let (status, body) = self
            .api(
                "PUT",
                &format!("/v1/host/workspace/files/{path}"),
                key,
                &[],
                Some(json!({ "content": content })),
            )
            .await;
        assert_eq!(status, 200, "PUT {path}: {body}");
        body
    }

    /// Starts a run with `key`; answers its id.
    pub async fn run(&self, key: &str) -> String {
        let (status, body) = self
            .api(
                "POST",
                "/v1/runs",
                key,
                &[],
                Some(json!({ "workflowId": "nightly" })),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        body["runId"].as_str().unwrap().to_owned()
    }
}
