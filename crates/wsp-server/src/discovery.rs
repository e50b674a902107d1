//! `GET /.well-known/openwop`: what this host offers (WIRE.md §1).

use axum::extract::State;
use bytes::Bytes;
use wsp_agents::AgentRegistry;
use wsp_store::{Limits, StoreFeatures};

use crate::extract::Reply;
use crate::fails::{Documented, Failure};
use crate::{AppState, ServerConfig, encode};

/// The discovery document, rendered once when the state is built: with the `agents` block
/// when the host serves `agents`.
pub(crate) fn document(
    config: &ServerConfig,
    limits: &Limits,
    features: StoreFeatures,
    max_body_bytes: usize,
    agents: Option<&dyn AgentRegistry>,
) -> Bytes {
    let body = encode::discovery(config, limits, features, max_body_bytes);
    let Some(registry) = agents else {
        return Bytes::from(body);
    };
    let mut doc: serde_json::Value =
        serde_json::from_slice(&body).expect("the discovery document is JSON");
    doc["agents"] = serde_json::to_value(crate::agents::capability(registry))
        .expect("wire types always serialize");
    Bytes::from(serde_json::to_vec(&doc).expect("JSON always serializes"))
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
    responses((status = 200, description = "The discovery document.", body = ref("#/components/schemas/Discovery"))),
)]
pub(crate) async fn discovery(State(state): State<AppState>) -> Reply {
    Reply::encoded(state.inner.discovery.clone()).cache("public, max-age=60")
}
