//! `GET /.well-known/openwop`: what this host offers (WIRE.md §1).

use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use wsp_store::{Limits, StoreFeatures};

use crate::{AppState, JSON, ServerConfig, encode};

/// The discovery document, rendered once at start.
pub(crate) fn document(
    config: &ServerConfig,
    limits: &Limits,
    features: StoreFeatures,
    max_body_bytes: usize,
) -> Bytes {
    Bytes::from(encode::discovery(config, limits, features, max_body_bytes))
}

/// `GET /.well-known/openwop` (no auth; a bearer header, if sent, is ignored).
#[utoipa::path(
    get,
    path = "/.well-known/openwop",
    tag = "discovery",
    operation_id = "discovery",
    summary = "Protocol version, limits and capability blocks",
    responses((status = 200, description = "The discovery document.", body = ref("#/components/schemas/Discovery"))),
)]
pub async fn discovery(State(state): State<AppState>) -> Response {
    let mut resp = (StatusCode::OK, state.discovery_body()).into_response();
    let h = resp.headers_mut();
    h.insert(CONTENT_TYPE, JSON);
    h.insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=60"),
    );
    resp
}
