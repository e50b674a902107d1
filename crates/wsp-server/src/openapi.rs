//! The OpenAPI 3.1 document: routes from the handlers' `#[utoipa::path]` annotations, component
//! schemas from our own `schemas/*.schema.json`, so patterns, bounds and defaults survive.

use std::sync::OnceLock;

use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Map, Value};
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

use crate::JSON;

/// `(file name, contents)` of one embedded schema of `schemas/`.
macro_rules! schema {
    ($name:literal) => {
        (
            concat!($name, ".schema.json"),
            include_str!(concat!("../../../schemas/", $name, ".schema.json")),
        )
    };
}

/// The JSON Schemas that become `components.schemas`, embedded at build time.
const SCHEMAS: &[(&str, &str)] = &[
    schema!("discovery"),
    schema!("error-envelope"),
    schema!("workspace-file"),
    schema!("workspace-file-create"),
    schema!("workspace-file-history"),
    schema!("workspace-file-list"),
    schema!("workspace-file-meta"),
    schema!("workspace-updated"),
    schema!("workspace-event"),
    schema!("run-create"),
    schema!("run-created"),
    schema!("run-status"),
    schema!("run-owner"),
    schema!("run-workspace-entry"),
    schema!("run"),
    schema!("agent-inventory-entry"),
    schema!("agent-inventory"),
    schema!("publish-request"),
    schema!("publish-response"),
];

#[derive(OpenApi)]
#[openapi(
    info(
        title = "wsp",
        description = "Agent workspaces: a versioned, tenant-scoped file store speaking the OpenWOP \
                       host.workspace wire (RFC 0059). Every error body is an ErrorEnvelope.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    paths(
        crate::discovery::discovery,
        openapi_json,
        crate::files::list,
        crate::files::read,
        crate::files::write,
        crate::files::delete,
        crate::files::history,
        crate::events::events,
        crate::runs::create,
        crate::runs::get_run,
        crate::runs::cancel,
        crate::runs::list_files,
        crate::runs::get_file,
        crate::agents::list,
        crate::agents::get_one,
        crate::publish::publish,
    ),
    modifiers(&BearerAuth),
    tags(
        (name = "discovery", description = "What the host offers."),
        (name = "workspace", description = "RFC 0059 workspace files."),
        (name = "runs", description = "RFC 0059 section D: runs and their immutable workspace snapshots."),
        (name = "agents", description = "RFC 0072 section A and RFC 0074: the agent inventory scoped to the caller; shared agent workspaces and one-way publish (wsp extension)."),
    ),
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearerAuth",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An API key `wsp_<id>_<secret>` from `wsp keys create`.",
                    ))
                    .build(),
            ),
        );
    }
}

fn title_of(file: &str) -> String {
    let (_, text) = SCHEMAS
        .iter()
        .find(|(name, _)| *name == file)
        .expect("referenced schema is embedded");
    let schema: Value = serde_json::from_str(text).expect("embedded schemas are JSON");
    schema["title"]
        .as_str()
        .expect("every schema has a title")
        .to_owned()
}

/// Rewrites file references (`workspace-file-meta.schema.json`) to component references.
fn rewrite_refs(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref") {
                if let Some(def) = r.strip_prefix("#/$defs/") {
                    *r = format!("#/components/schemas/{def}");
                } else if r.ends_with(".schema.json") {
                    *r = format!("#/components/schemas/{}", title_of(r));
                }
            }
            map.values_mut().for_each(rewrite_refs);
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

/// `components.schemas` built from the embedded JSON Schemas, keyed by their titles; each
/// schema's local `$defs` become components of their own.
fn component_schemas() -> Map<String, Value> {
    let mut out = Map::new();
    for (_, text) in SCHEMAS {
        let mut schema: Value = serde_json::from_str(text).expect("embedded schemas are JSON");
        rewrite_refs(&mut schema);
        let obj = schema.as_object_mut().expect("schemas are objects");
        obj.remove("$schema");
        obj.remove("$id");
        if let Some(Value::Object(defs)) = obj.remove("$defs") {
            for (name, def) in defs {
                let previous = out.insert(name.clone(), def);
                assert!(previous.is_none(), "schema name {name} is defined twice");
            }
        }
        let title = obj["title"]
            .as_str()
            .expect("every schema has a title")
            .to_owned();
        let previous = out.insert(title.clone(), schema);
        assert!(previous.is_none(), "schema name {title} is defined twice");
    }
    out
}

/// The whole OpenAPI 3.1 document, as served at `/v1/openapi.json` and committed as
/// `api/openapi.json`.
pub fn document() -> Value {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).expect("the document serializes");
    doc["info"]["version"] = Value::from(env!("CARGO_PKG_VERSION"));
    doc["components"]["schemas"] = Value::Object(component_schemas());
    doc
}

/// The document as pretty JSON with a final newline: the exact bytes of `api/openapi.json`.
pub fn document_text() -> String {
    let mut text = serde_json::to_string_pretty(&document()).expect("the document serializes");
    text.push('\n');
    text
}

/// `GET /v1/openapi.json` (no auth): this host's OpenAPI 3.1 document.
#[utoipa::path(
    get,
    path = "/v1/openapi.json",
    tag = "discovery",
    responses((status = 200, description = "The OpenAPI 3.1 document of this host.", content_type = "application/json")),
)]
pub async fn openapi_json() -> Response {
    static BODY: OnceLock<Bytes> = OnceLock::new();
    let body = BODY.get_or_init(|| Bytes::from(document_text())).clone();
    let mut resp = (StatusCode::OK, body).into_response();
    resp.headers_mut().insert(CONTENT_TYPE, JSON);
    resp.headers_mut().insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=60"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r.clone());
                }
                m.values().for_each(|x| refs(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
            _ => {}
        }
    }

    #[test]
    fn every_reference_resolves_to_a_component() {
        let doc = document();
        assert_eq!(
            doc["openapi"].as_str().map(|v| v.starts_with("3.1")),
            Some(true)
        );
        let mut all = Vec::new();
        refs(&doc, &mut all);
        assert!(all.len() > 10, "the operations reference the schemas");
        for r in all {
            let name = r
                .strip_prefix("#/components/schemas/")
                .unwrap_or_else(|| panic!("non-local ref {r}"));
            assert!(
                doc["components"]["schemas"].get(name).is_some(),
                "dangling ref {r}"
            );
        }
        let path = &doc["components"]["schemas"]["WorkspaceFile"]["properties"]["path"]["pattern"];
        assert_eq!(
            path, "^[A-Za-z0-9][A-Za-z0-9._/-]{0,255}$",
            "patterns survive"
        );
    }
}
