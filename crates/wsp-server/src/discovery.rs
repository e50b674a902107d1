//! `GET /.well-known/openwop`: what this host offers (WIRE.md §1).

use axum::extract::State;
use bytes::Bytes;
use wsp_agents::AgentRegistry;
use wsp_store::{Limits, StoreFeatures};

use axum::http::StatusCode;

use crate::extract::{IfNoneMatch, Reply};
use crate::fails::{Documented, Failure};
use crate::{AppState, ServerConfig, encode};

/// The discovery document as served: its bytes and its strong entity tag.
#[derive(Debug, Clone)]
pub(crate) struct Rendered {
    /// The JSON document.
    pub(crate) body: Bytes,
    /// `"<32 hex digits>"`: the first 128 bits of the body's SHA-256, so a tag changes exactly
    /// when the document does (across restarts and replicas alike).
    pub(crate) etag: String,
}

impl Rendered {
    fn of(body: Bytes) -> Self {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(&body);
        let etag = format!("\"{}\"", wsp_types::hex(&digest[..16]));
        Self { body, etag }
    }
}

/// The discovery document, rendered once when the state is built: with the `agents` block
/// when the host serves `agents`.
pub(crate) fn document(
    config: &ServerConfig,
    limits: &Limits,
    features: StoreFeatures,
    max_body_bytes: usize,
    agents: Option<&dyn AgentRegistry>,
) -> Rendered {
    let body = encode::discovery(config, limits, features, max_body_bytes);
    let Some(registry) = agents else {
        return Rendered::of(Bytes::from(body));
    };
    let mut doc: serde_json::Value =
        serde_json::from_slice(&body).expect("the discovery document is JSON");
    doc["agents"] = serde_json::to_value(crate::agents::capability(registry))
        .expect("wire types always serialize");
    Rendered::of(Bytes::from(
        serde_json::to_vec(&doc).expect("JSON always serializes"),
    ))
}

/// The discovery route.
pub(crate) const WELL_KNOWN: &str = "/.well-known/openwop";

/// The OpenAPI operation of [`discovery`] and the failures of its own steps.
pub(crate) struct DiscoveryOp;

impl Documented for DiscoveryOp {
    const OWN: &'static [Failure] = &[];
}

/// `GET /.well-known/openwop` (no auth; a bearer header, if sent, is ignored).
#[utoipa::path(
    get,
    impl_for = DiscoveryOp,
    path = WELL_KNOWN,
    tag = "discovery",
    operation_id = "discovery",
    summary = "Protocol version, limits and capability blocks",
    description = "No credential is needed; a bearer header, if sent, is ignored. The document is rendered once when the server starts; its `ETag` and `Cache-Control` let a client revalidate with `If-None-Match` (304). Capability blocks (`workspace`, `agents`, `wsp`) sit at the root and say which of the other operations this host serves.",
    params(("If-None-Match" = Option<String>, Header, description = "The `ETag` of a discovery document held: 304 while it is still current.")),
    responses(
        (status = 200, description = "The discovery document.", body = ref("#/components/schemas/Discovery"),
            headers(("ETag" = String, description = "A strong tag of this document; it changes exactly when the document does."))),
        (status = 304, description = "The document held (`If-None-Match`) is current; no body.",
            headers(("ETag" = String, description = "The current tag."))),
    ),
)]
pub(crate) async fn discovery(
    State(state): State<AppState>,
    IfNoneMatch(held): IfNoneMatch,
) -> Reply {
    let current = &state.inner.discovery;
    let reply = if held.is_some_and(|h| h.admits(&current.etag)) {
        Reply::no_content().status(StatusCode::NOT_MODIFIED)
    } else {
        Reply::encoded(current.body.clone())
    };
    reply.etag(&current.etag).cache("public, max-age=60")
}
