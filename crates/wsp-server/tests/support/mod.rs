//! A real server on an ephemeral port, with three keys: owner A (all scopes), owner B (another
//! tenant, all scopes) and owner A read-only.

#![allow(dead_code, missing_docs)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use wsp_client::Client;
use wsp_server::{AppState, KeyAuthenticator, ServerConfig, TenantSecrets};
use wsp_store::keys::{ApiKey, KeyRecord, KeyRegistry, MemoryKeyRegistry};
use wsp_store::{Limits, MemoryStore, Redactor, Secret, WorkspaceStore};
use wsp_types::{Owner, OwnerId, Scope, Scopes};

pub struct TestServer {
    pub addr: SocketAddr,
    pub base: String,
    pub key_a: String,
    pub key_b: String,
    pub key_a_read: String,
    /// The state the server runs on (for calling library functions beside it).
    pub state: AppState,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

pub struct Options {
    pub limits: Limits,
    pub config: ServerConfig,
    pub secrets: Vec<(&'static str, &'static str, &'static str)>,
    pub store: Option<Arc<dyn WorkspaceStore>>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            limits: Limits::default()
                .with_max_file_bytes(1024)
                .with_max_files(50)
                .with_max_versions(5),
            config: ServerConfig::default(),
            secrets: vec![],
            store: None,
        }
    }
}

async fn key(
    registry: &MemoryKeyRegistry,
    tenant: &str,
    principal: &str,
    scopes: Scopes,
) -> String {
    let k = ApiKey::generate();
    let owner = Owner::parse(tenant, "default").unwrap();
    registry
        .insert(KeyRecord::new(&k, owner, principal.into(), scopes))
        .await
        .unwrap();
    k.expose()
}

pub async fn start() -> TestServer {
    start_with(Options::default()).await
}

pub async fn start_with(options: Options) -> TestServer {
    let registry = Arc::new(MemoryKeyRegistry::default());
    let key_a = key(&registry, "tenant-a", "alice", Scopes::all()).await;
    let key_b = key(&registry, "tenant-b", "bob", Scopes::all()).await;
    let key_a_read = key(
        &registry,
        "tenant-a",
        "reader",
        [Scope::WorkspaceRead].into_iter().collect(),
    )
    .await;
    let store = options
        .store
        .unwrap_or_else(|| Arc::new(MemoryStore::new(options.limits)));
    let mut by_tenant: HashMap<OwnerId, Vec<Secret>> = HashMap::new();
    for (tenant, id, value) in options.secrets {
        by_tenant
            .entry(OwnerId::parse(tenant).unwrap())
            .or_default()
            .push(Secret {
                id: id.into(),
                value: value.into(),
            });
    }
    let secrets = TenantSecrets::new(
        by_tenant
            .into_iter()
            .map(|(t, s)| (t, Redactor::new(s).unwrap()))
            .collect(),
    );
    let state = AppState::builder(store, Arc::new(KeyAuthenticator::new(registry)))
        .secrets(Arc::new(secrets))
        .config(options.config)
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(wsp_server::serve(listener, state.clone(), async move {
        let _ = rx.await;
    }));
    TestServer {
        addr,
        base: format!("http://{addr}"),
        key_a,
        key_b,
        key_a_read,
        state,
        shutdown: Some(tx),
    }
}

impl TestServer {
    pub fn client(&self, key: &str) -> Client {
        Client::new(&self.base).unwrap().with_key(key)
    }

    pub fn a(&self) -> Client {
        self.client(&self.key_a)
    }

    pub fn b(&self) -> Client {
        self.client(&self.key_b)
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends a request line byte for byte (no client-side path normalization).
    pub async fn raw(&self, method: &str, target: &str, key: &str, body: &str) -> (u16, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        let req = format!(
            "{method} {target} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.unwrap();
        let text = String::from_utf8_lossy(&out).into_owned();
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        (status, body)
    }
}
