//! A small in-memory host of the workspace wire, for testing the runner only: it follows WIRE.md
//! §1-4 and can be told to get one behaviour wrong, so a test can check that the matching
//! scenarios fail and the others pass.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method};
use axum::response::Response;
use serde_json::{Map, Value, json};
use wsp_types::wire::ContentEncoding;

pub const KEY_A: &str = "fake-key-a";
pub const KEY_B: &str = "fake-key-b";
pub const KEY_READONLY: &str = "fake-key-ro";
pub const SECRET_ID: &str = "vault-1";
pub const SECRET_VALUE: &str = "sk-fake-secret-0123";

const MAX_FILE_BYTES: usize = 4096;
const MAX_FILES: usize = 150;
const MAX_VERSIONS: usize = 5;
const MAX_REQUEST_BODY: usize = 65536;
const FILES: &str = "/v1/host/workspace/files";
const HISTORY: &str = "/v1/host/workspace/history";

/// Behaviours the host can be told to get wrong.
#[derive(Debug, Clone, Copy, Default)]
pub struct Faults {
    /// A PUT with a stale `If-Match` on a live file succeeds.
    pub stale_if_match_accepted: bool,
    /// List entries carry `content`.
    pub list_includes_content: bool,
    /// Etags are derived from (path, version) only, so a new life repeats them.
    pub etag_repeats_after_delete: bool,
    /// A GET falls back to another owner's file.
    pub cross_owner_read: bool,
    /// `maxFileBytes` counts characters instead of UTF-8 bytes.
    pub counts_characters: bool,
    /// Discovery has no Cache-Control.
    pub no_cache_control: bool,
    /// A 401 carries no `WWW-Authenticate` challenge.
    pub no_challenge: bool,
    /// Discovery sends an `ETag` but answers every `If-None-Match` with the full document.
    pub ignores_if_none_match: bool,
    /// A large write (1 KiB or more) is visible half-done for a moment.
    pub torn_writes: bool,
    /// Discovery says `workspace.supported: false`; the endpoints answer 501.
    pub workspace_unsupported: bool,
    /// `supportedTransports` names `sse`, which the fake does not serve.
    pub claims_sse: bool,
    /// `supportedTransports` leaves out `rest`, which OpenWOP requires.
    pub transports_without_rest: bool,
    /// `contentEncoding` is accepted and ignored: a base64 body is stored as the text it spells.
    pub binary_as_text: bool,
}

type Owner = &'static str;
type Remembered = (Vec<u8>, Response<Vec<u8>>);

struct Version {
    n: u64,
    content: String,
    /// `content` is the base64 of bytes (`contentEncoding: base64`).
    base64: bool,
    /// The body's size in bytes (decoded for base64).
    size: usize,
    content_type: String,
    etag: String,
    updated_at: String,
}

#[derive(Default)]
struct Entry {
    live: bool,
    versions: Vec<Version>,
}

#[derive(Default)]
struct Store {
    files: HashMap<(Owner, String), Entry>,
    next_etag: u64,
    /// (owner, key) -> (request fingerprint, the answer given).
    idempotency: HashMap<(Owner, String), Remembered>,
}

struct Host {
    faults: Faults,
    store: Mutex<Store>,
}

/// A running fake host.
pub struct FakeHost {
    pub url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeHost {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts a fake host on an ephemeral loopback port.
pub async fn start(faults: Faults) -> FakeHost {
    let host = Arc::new(Host {
        faults,
        store: Mutex::new(Store::default()),
    });
    let app = Router::new().fallback(handle).with_state(host);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    FakeHost { url, task }
}

fn respond(status: u16, headers: &[(&str, String)], body: Vec<u8>) -> Response<Vec<u8>> {
    let mut builder = Response::builder().status(status);
    for (name, value) in headers {
        builder = builder.header(*name, value.as_str());
    }
    builder.body(body).unwrap()
}

fn json_response(status: u16, value: &Value, extra: &[(&str, String)]) -> Response<Vec<u8>> {
    let mut headers = vec![("content-type", "application/json".to_string())];
    headers.extend(extra.iter().cloned());
    respond(status, &headers, serde_json::to_vec(value).unwrap())
}

fn error(status: u16, code: &str, message: &str, details: Option<Value>) -> Response<Vec<u8>> {
    let mut body = json!({"error": code, "message": message});
    if let Some(details) = details {
        body["details"] = details;
    }
    json_response(status, &body, &[])
}

fn not_found(path: &str) -> Response<Vec<u8>> {
    error(404, "not_found", &format!("no file at {path}"), None)
}

fn conflict(current: u64) -> Response<Vec<u8>> {
    error(
        409,
        "workspace_conflict",
        "precondition failed",
        Some(json!({"currentVersion": current})),
    )
}

async fn handle(State(host): State<Arc<Host>>, req: Request) -> Response<Body> {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or_default().to_string();
    let headers = req.headers().clone();
    let body = to_bytes(req.into_body(), usize::MAX)
        .await
        .unwrap_or_default();
    let response = route(&host, &method, &path, &query, &headers, &body).await;
    response.map(Body::from)
}

async fn route(
    host: &Host,
    method: &Method,
    path: &str,
    query: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Response<Vec<u8>> {
    if path == "/.well-known/openwop" && method == Method::GET {
        return discovery(host, headers);
    }
    if path == "/v1/openapi.json" && method == Method::GET {
        return json_response(
            200,
            &json!({"openapi": "3.1.0", "info": {"title": "fake", "version": "0"}, "paths": {}}),
            &[],
        );
    }
    let (kind, raw) = if path == FILES {
        ("list", "")
    } else if let Some(raw) = path.strip_prefix(&format!("{FILES}/")) {
        ("file", raw)
    } else if let Some(raw) = path.strip_prefix(&format!("{HISTORY}/")) {
        ("history", raw)
    } else {
        return error(404, "not_found", "no such route", None);
    };
    let (owner, can_write) = match authenticate(headers) {
        Some(who) => who,
        None => {
            let mut refused = error(
                401,
                "unauthenticated",
                "missing or unknown credential",
                None,
            );
            if !host.faults.no_challenge {
                refused
                    .headers_mut()
                    .insert("www-authenticate", "Bearer".parse().unwrap());
            }
            return refused;
        }
    };
    if host.faults.workspace_unsupported {
        return error(
            501,
            "capability_not_provided",
            "workspace is not supported",
            None,
        );
    }
    if body.len() > MAX_REQUEST_BODY {
        return error(
            413,
            "workspace_too_large",
            "request body too large",
            Some(json!({"limit": "requestBody"})),
        );
    }
    let params = parse_query(query);
    match (kind, method.as_str()) {
        ("list", "GET") => list(
            host,
            owner,
            params.get("prefix").map(String::as_str).unwrap_or(""),
        ),
        ("file" | "history", _) => {
            let writes = matches!(method.as_str(), "PUT" | "DELETE");
            if writes && !can_write {
                return error(
                    403,
                    "forbidden",
                    "missing scope",
                    Some(json!({"requiredScope": "workspace:write"})),
                );
            }
            let Some(path) = decode(raw).filter(|p| valid_path(p)) else {
                return error(400, "validation_error", "invalid path", None);
            };
            match (kind, method.as_str()) {
                ("file", "GET") => get(host, owner, &path, params.get("version")),
                ("file", "PUT") => put(host, owner, &path, headers, body).await,
                ("file", "DELETE") => delete(host, owner, &path, headers),
                ("history", "GET") => history(host, owner, &path),
                _ => error(405, "method_not_allowed", "method not allowed", None),
            }
        }
        _ => error(405, "method_not_allowed", "method not allowed", None),
    }
}

fn discovery(host: &Host, headers: &HeaderMap) -> Response<Vec<u8>> {
    let workspace = if host.faults.workspace_unsupported {
        json!({"supported": false})
    } else {
        json!({"supported": true, "versioned": true, "maxFileBytes": MAX_FILE_BYTES,
               "maxFiles": MAX_FILES, "maxVersions": MAX_VERSIONS})
    };
    let doc = json!({
        "protocolVersion": "1.0",
        "supportedEnvelopes": [],
        "schemaVersions": {},
        "limits": {"clarificationRounds": 3, "schemaRounds": 3, "envelopesPerTurn": 8,
                   "maxRequestBodyBytes": MAX_REQUEST_BODY},
        "implementation": {"name": "fake-host", "version": "0"},
        "supportedTransports": match (host.faults.claims_sse, host.faults.transports_without_rest) {
            (true, _) => json!(["rest", "sse"]),
            (false, true) => json!(["mcp"]),
            (false, false) => json!(["rest"]),
        },
        "workspace": workspace,
        "wsp": {"binaryContent": true},
    });
    let mut extra = if host.faults.no_cache_control {
        vec![]
    } else {
        vec![("cache-control", "public, max-age=60".to_string())]
    };
    // A fixed tag per document: the fake's discovery depends only on its faults.
    let etag = format!("\"fake-{}\"", doc["workspace"]["supported"]);
    extra.push(("etag", etag.clone()));
    let held = headers
        .get("if-none-match")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    if held && !host.faults.ignores_if_none_match {
        return respond(304, &extra, Vec::new());
    }
    json_response(200, &doc, &extra)
}

fn authenticate(headers: &HeaderMap) -> Option<(Owner, bool)> {
    let value = headers.get("authorization")?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    if scheme != "Bearer" || token.is_empty() || token.contains(' ') {
        return None;
    }
    match token {
        KEY_A => Some(("A", true)),
        KEY_B => Some(("B", true)),
        KEY_READONLY => Some(("A", false)),
        _ => None,
    }
}

fn parse_query(query: &str) -> HashMap<String, String> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k).unwrap_or_default(), decode(v).unwrap_or_default())
        })
        .collect()
}

fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn valid_path(p: &str) -> bool {
    let b = p.as_bytes();
    !b.is_empty()
        && b.len() <= 256
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"._/-".contains(c))
        && p.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
}

fn file_json(path: &str, v: &Version, with_content: bool) -> Value {
    let mut map = Map::new();
    map.insert("path".into(), json!(path));
    if with_content {
        map.insert("content".into(), json!(v.content));
    }
    map.insert("contentType".into(), json!(v.content_type));
    if v.base64 {
        map.insert("contentEncoding".into(), json!("base64"));
    }
    map.insert("size".into(), json!(v.size));
    map.insert("version".into(), json!(v.n));
    map.insert("etag".into(), json!(v.etag));
    map.insert("updatedAt".into(), json!(v.updated_at));
    Value::Object(map)
}

fn file_response(path: &str, v: &Version) -> Response<Vec<u8>> {
    json_response(200, &file_json(path, v, true), &[("etag", v.etag.clone())])
}

fn list(host: &Host, owner: Owner, prefix: &str) -> Response<Vec<u8>> {
    let store = host.store.lock().unwrap();
    let mut files: Vec<(&String, &Version)> = store
        .files
        .iter()
        .filter(|((o, p), e)| *o == owner && e.live && p.starts_with(prefix))
        .filter_map(|((_, p), e)| e.versions.last().map(|v| (p, v)))
        .collect();
    files.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let entries: Vec<Value> = files
        .into_iter()
        .map(|(p, v)| file_json(p, v, host.faults.list_includes_content))
        .collect();
    json_response(200, &json!({ "files": entries }), &[])
}

fn get(host: &Host, owner: Owner, path: &str, version: Option<&String>) -> Response<Vec<u8>> {
    let wanted = match version {
        None => None,
        Some(text) => match text.parse::<u64>() {
            Ok(n) if n >= 1 && text.bytes().all(|b| b.is_ascii_digit()) => Some(n),
            _ => {
                return error(
                    400,
                    "validation_error",
                    "version must be a positive integer",
                    None,
                );
            }
        },
    };
    let store = host.store.lock().unwrap();
    let mut entry = store
        .files
        .get(&(owner, path.to_string()))
        .filter(|e| e.live);
    if entry.is_none() && host.faults.cross_owner_read {
        entry = store
            .files
            .iter()
            .find(|((_, p), e)| p == path && e.live)
            .map(|(_, e)| e);
    }
    let Some(entry) = entry else {
        return not_found(path);
    };
    let found = match wanted {
        None => entry.versions.last(),
        Some(n) => entry.versions.iter().find(|v| v.n == n),
    };
    match found {
        Some(v) => file_response(path, v),
        None => not_found(path),
    }
}

fn history(host: &Host, owner: Owner, path: &str) -> Response<Vec<u8>> {
    let store = host.store.lock().unwrap();
    match store
        .files
        .get(&(owner, path.to_string()))
        .filter(|e| e.live)
    {
        Some(entry) => {
            let versions: Vec<Value> = entry
                .versions
                .iter()
                .map(|v| json!({"version": v.n, "etag": v.etag, "updatedAt": v.updated_at}))
                .collect();
            json_response(200, &json!({"path": path, "versions": versions}), &[])
        }
        None => not_found(path),
    }
}

/// The refusal when a precondition fails.
fn check_preconditions(
    host: &Host,
    entry: Option<&Entry>,
    headers: &HeaderMap,
    is_put: bool,
) -> Option<Response<Vec<u8>>> {
    let live = entry.filter(|e| e.live).and_then(|e| e.versions.last());
    if let Some(value) = headers.get("if-match").and_then(|v| v.to_str().ok()) {
        let Some(live) = live else {
            return Some(conflict(0));
        };
        let matches = value.trim() == "*" || value.split(',').any(|t| t.trim() == live.etag);
        let excused = is_put && host.faults.stale_if_match_accepted;
        if !(matches || excused) {
            return Some(conflict(live.n));
        }
    }
    if let Some(value) = headers.get("if-none-match").and_then(|v| v.to_str().ok())
        && value.trim() == "*"
        && let Some(live) = live
    {
        return Some(conflict(live.n));
    }
    None
}

async fn put(
    host: &Host,
    owner: Owner,
    path: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Response<Vec<u8>> {
    let media = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        });
    if media.as_deref() != Some("application/json") {
        return error(
            415,
            "unsupported_media_type",
            "body must be application/json",
            None,
        );
    }
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) else {
        return error(400, "validation_error", "body must be a JSON object", None);
    };
    if map
        .keys()
        .any(|k| k != "content" && k != "contentType" && k != "contentEncoding")
    {
        return error(400, "validation_error", "unknown body field", None);
    }
    let Some(Value::String(content)) = map.get("content") else {
        return error(400, "validation_error", "content must be a string", None);
    };
    let content_type = match map.get("contentType") {
        None => "text/markdown".to_string(),
        Some(Value::String(ct)) => ct.clone(),
        Some(_) => {
            return error(
                400,
                "validation_error",
                "contentType must be a string",
                None,
            );
        }
    };
    let base64 = match map.get("contentEncoding") {
        _ if host.faults.binary_as_text => false,
        None => false,
        Some(Value::String(e)) if e == "utf-8" => false,
        Some(Value::String(e)) if e == "base64" => true,
        Some(_) => {
            return error(
                400,
                "validation_error",
                "contentEncoding must be utf-8 or base64",
                None,
            );
        }
    };
    let size = if base64 {
        match ContentEncoding::Base64.body_len(content) {
            Ok(n) => n as usize,
            Err(e) => return error(400, "validation_error", &e.to_string(), None),
        }
    } else if host.faults.counts_characters {
        content.chars().count()
    } else {
        content.len()
    };
    if size > MAX_FILE_BYTES {
        return error(
            413,
            "workspace_too_large",
            "content too large",
            Some(json!({"limit": "maxFileBytes"})),
        );
    }
    let idempotency = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(|k| (owner, k.to_string()));
    let fingerprint = [path.as_bytes(), b"\n", body].concat();
    if let Some(key) = &idempotency {
        let store = host.store.lock().unwrap();
        if let Some((seen, response)) = store.idempotency.get(key) {
            if *seen != fingerprint {
                return error(
                    409,
                    "idempotency_key_mismatch",
                    "key reused for another request",
                    None,
                );
            }
            return clone_response(response);
        }
    }
    let content = if owner == "A" && !base64 {
        content.replace(SECRET_VALUE, &format!("[REDACTED:{SECRET_ID}]"))
    } else {
        content.clone()
    };
    let body = Written {
        content,
        base64,
        size,
        content_type,
    };
    let response = write(host, owner, path, headers, body).await;
    if let Some(key) = idempotency {
        host.store
            .lock()
            .unwrap()
            .idempotency
            .insert(key, (fingerprint, clone_response(&response)));
    }
    response
}

/// A body as the fake keeps it.
struct Written {
    content: String,
    base64: bool,
    size: usize,
    content_type: String,
}

async fn write(
    host: &Host,
    owner: Owner,
    path: &str,
    headers: &HeaderMap,
    body: Written,
) -> Response<Vec<u8>> {
    let Written {
        content,
        base64,
        size,
        content_type,
    } = body;
    let key = (owner, path.to_string());
    let (n, torn) = {
        let mut store = host.store.lock().unwrap();
        if let Some(refused) = check_preconditions(host, store.files.get(&key), headers, true) {
            return refused;
        }
        let live_count = store
            .files
            .iter()
            .filter(|((o, _), e)| *o == owner && e.live)
            .count();
        let exists = store.files.get(&key).is_some_and(|e| e.live);
        if !exists && live_count >= MAX_FILES {
            return error(
                413,
                "workspace_too_large",
                "too many files",
                Some(json!({"limit": "maxFiles"})),
            );
        }
        store.next_etag += 1;
        let serial = store.next_etag;
        let entry = store.files.entry(key.clone()).or_default();
        if !entry.live {
            entry.versions.clear();
            entry.live = true;
        }
        let n = entry.versions.last().map_or(1, |v| v.n + 1);
        let etag = if host.faults.etag_repeats_after_delete {
            format!("\"{path}-v{n}\"")
        } else {
            format!("\"e{serial}\"")
        };
        let torn = match entry.versions.last() {
            Some(old)
                if host.faults.torn_writes
                    && content.len() >= 1024
                    && old.content.len() == content.len() =>
            {
                let half = content.len() / 2;
                Some(format!("{}{}", &content[..half], &old.content[half..]))
            }
            _ => None,
        };
        let version = Version {
            n,
            content: torn.clone().unwrap_or_else(|| content.clone()),
            base64,
            size,
            content_type,
            etag,
            updated_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        };
        if torn.is_none() {
            return file_response(path, &version_pushed(entry, version));
        }
        version_pushed(entry, version);
        (n, torn)
    };
    // Torn-write fault: the half-done content stays visible for a moment.
    drop(torn);
    tokio::time::sleep(Duration::from_millis(5)).await;
    let mut store = host.store.lock().unwrap();
    let entry = store.files.get_mut(&key).unwrap();
    match entry.versions.iter_mut().find(|v| v.n == n) {
        Some(v) => {
            v.content = content;
            file_response(path, v)
        }
        None => error(500, "internal_error", "version pruned", None),
    }
}

/// Appends a version, prunes past `MAX_VERSIONS`, and returns a copy of the appended one.
fn version_pushed(entry: &mut Entry, version: Version) -> Version {
    let copy = Version {
        n: version.n,
        content: version.content.clone(),
        base64: version.base64,
        size: version.size,
        content_type: version.content_type.clone(),
        etag: version.etag.clone(),
        updated_at: version.updated_at.clone(),
    };
    entry.versions.push(version);
    if entry.versions.len() > MAX_VERSIONS {
        entry.versions.remove(0);
    }
    copy
}

fn delete(host: &Host, owner: Owner, path: &str, headers: &HeaderMap) -> Response<Vec<u8>> {
    let mut store = host.store.lock().unwrap();
    let key = (owner, path.to_string());
    if !store.files.get(&key).is_some_and(|e| e.live) {
        return not_found(path);
    }
    if let Some(refused) = check_preconditions(host, store.files.get(&key), headers, false) {
        return refused;
    }
    store.files.get_mut(&key).unwrap().live = false;
    respond(204, &[], Vec::new())
}

fn clone_response(r: &Response<Vec<u8>>) -> Response<Vec<u8>> {
    let mut builder = Response::builder().status(r.status());
    for (name, value) in r.headers() {
        builder = builder.header(name, value);
    }
    builder.body(r.body().clone()).unwrap()
}
