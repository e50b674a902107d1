//! `GET /healthz` and `GET /readyz`: unauthenticated, never cached; readiness follows the store
//! (503 `service_unavailable` naming the check while it fails, 200 again once it recovers).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;
use wsp_store::{MemoryStore, StoreError, StoreFuture, WorkspaceStore};

use crate::support::{Options, start, start_with};

/// A memory store whose readiness check fails while `down` is set.
struct Flaky {
    inner: MemoryStore,
    down: Arc<AtomicBool>,
}

impl WorkspaceStore for Flaky {
    wsp_store::forward_store!(|this| this.inner; limits, list, get, put, delete, history);

    fn ready(&self) -> StoreFuture<'_, ()> {
        let down = self.down.load(Ordering::SeqCst);
        Box::pin(async move {
            if down {
                Err(StoreError::unavailable(
                    "connection refused at 10.0.0.7:5432 (secret-internal-detail)",
                ))
            } else {
                Ok(())
            }
        })
    }
}

async fn probe(url: &str) -> (u16, Option<String>, Value) {
    let resp = reqwest::get(url).await.expect("the server answers");
    let status = resp.status().as_u16();
    let cache = resp
        .headers()
        .get("cache-control")
        .map(|v| v.to_str().unwrap().to_owned());
    let body: Value = resp.json().await.expect("a JSON body");
    (status, cache, body)
}

#[tokio::test]
async fn healthz_and_readyz_answer_without_a_key() {
    let server = start().await;
    let (status, cache, body) = probe(&server.url("/healthz")).await;
    assert_eq!(status, 200);
    assert_eq!(cache.as_deref(), Some("no-store"));
    assert_eq!(body, serde_json::json!({"status": "ok"}));
    let (status, cache, body) = probe(&server.url("/readyz")).await;
    assert_eq!(status, 200);
    assert_eq!(cache.as_deref(), Some("no-store"));
    assert_eq!(body, serde_json::json!({"status": "ready"}));
}

#[tokio::test]
async fn readyz_is_503_while_the_store_fails_and_200_after_it_recovers() {
    let down = Arc::new(AtomicBool::new(true));
    let server = start_with(Options {
        store: Some(Arc::new(Flaky {
            inner: MemoryStore::default(),
            down: down.clone(),
        })),
        ..Options::default()
    })
    .await;
    let (status, cache, body) = probe(&server.url("/readyz")).await;
    assert_eq!(status, 503);
    assert_eq!(cache.as_deref(), Some("no-store"));
    assert_eq!(body["error"], "service_unavailable");
    assert_eq!(body["details"]["check"], "store");
    let text = body.to_string();
    assert!(!text.contains("10.0.0.7") && !text.contains("secret-internal-detail"));
    // Liveness does not depend on the store.
    assert_eq!(probe(&server.url("/healthz")).await.0, 200);

    down.store(false, Ordering::SeqCst);
    let (status, _, body) = probe(&server.url("/readyz")).await;
    assert_eq!(status, 200);
    assert_eq!(body["status"], "ready");
}

#[tokio::test]
async fn the_probes_are_in_the_openapi_document_without_security() {
    let doc = wsp_server::openapi::document();
    for path in ["/healthz", "/readyz"] {
        let op = &doc["paths"][path]["get"];
        assert!(op.is_object(), "{path} is documented");
        assert_eq!(op["security"], serde_json::json!([]), "{path} needs no key");
    }
}

/// The `x-request-id` a response carries.
fn request_id(resp: &reqwest::Response) -> Option<String> {
    resp.headers()
        .get("x-request-id")
        .map(|v| v.to_str().unwrap().to_owned())
}

#[tokio::test]
async fn every_response_echoes_a_request_id() {
    let server = start().await;
    let http = reqwest::Client::new();
    // Success, an error (no key) and the 404 fallback: each gets a fresh id.
    let mut seen = Vec::new();
    for path in ["/healthz", "/v1/host/workspace/files", "/no/such/route"] {
        let resp = http.get(server.url(path)).send().await.unwrap();
        let id = request_id(&resp).unwrap_or_else(|| panic!("{path}: no x-request-id"));
        assert!(!id.is_empty() && id.len() <= 64, "{path}: {id:?}");
        seen.push((resp.status().as_u16(), id));
    }
    assert_eq!(
        seen.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
        [200, 401, 404]
    );
    assert!(seen[0].1 != seen[1].1 && seen[1].1 != seen[2].1);

    // A valid client id comes back as sent, on success and on error alike.
    for path in ["/healthz", "/v1/host/workspace/files"] {
        let resp = http
            .get(server.url(path))
            .header("x-request-id", "client-trace.42:abc")
            .send()
            .await
            .unwrap();
        assert_eq!(request_id(&resp).as_deref(), Some("client-trace.42:abc"));
    }
    // An invalid one (too long, or not visible ASCII) is replaced by a generated one.
    for bad in ["x".repeat(65), "has space".to_owned()] {
        let resp = http
            .get(server.url("/healthz"))
            .header("x-request-id", bad.as_str())
            .send()
            .await
            .unwrap();
        let id = request_id(&resp).expect("an id");
        assert_ne!(id, bad);
        assert!(id.len() <= 64 && id.bytes().all(|c| c.is_ascii_graphic()));
    }
}
