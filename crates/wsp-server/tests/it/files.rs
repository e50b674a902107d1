//! The file endpoints over real HTTP: every status and error body of WIRE.md sections 1-4.

use reqwest::StatusCode;
use serde_json::{Value, json};
use wsp_client::{Error, PutOptions};
use wsp_server::ServerConfig;
use wsp_types::{ErrorCode, WorkspacePath};

use crate::support;
use crate::support::{Options, start, start_with};

fn p(s: &str) -> WorkspacePath {
    WorkspacePath::parse(s).unwrap()
}

/// Asserts an error envelope: status, code, and exactly the keys error, message, details?.
async fn envelope(resp: reqwest::Response, status: u16, code: &str) -> Value {
    assert_eq!(resp.status().as_u16(), status);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let body: Value = resp.json().await.unwrap();
    let obj = body.as_object().unwrap();
    assert_eq!(obj["error"], code, "{body}");
    assert!(obj["message"].is_string());
    assert!(
        obj.keys()
            .all(|k| ["error", "message", "details"].contains(&k.as_str())),
        "{body}"
    );
    body
}

fn put_req(s: &support::TestServer, key: &str, path: &str, body: Value) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .put(s.url(&format!("/v1/host/workspace/files/{path}")))
        .bearer_auth(key)
        .json(&body)
}

/// Discovery is served with a strong `ETag`; `If-None-Match` with it (alone, in a list, weak
/// or `*`) answers 304 with no body and the same validators; another tag gets the document.
#[tokio::test]
async fn discovery_revalidates_with_its_etag() {
    let s = start().await;
    let c = reqwest::Client::new();
    let get = |inm: Option<String>| {
        let mut req = c.get(s.url("/.well-known/openwop"));
        if let Some(v) = inm {
            req = req.header("if-none-match", v);
        }
        req.send()
    };
    let first = get(None).await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    let etag = first.headers()["etag"].to_str().unwrap().to_owned();
    assert!(
        etag.starts_with('"') && etag.ends_with('"') && etag.len() > 2,
        "{etag}"
    );
    let body = first.bytes().await.unwrap();
    let again = get(None).await.unwrap();
    assert_eq!(again.headers()["etag"], etag.as_str(), "the tag is stable");
    for inm in [
        etag.clone(),
        format!("W/{etag}"),
        format!("\"other\", {etag}"),
        "*".to_owned(),
    ] {
        let resp = get(Some(inm.clone())).await.unwrap();
        assert_eq!(resp.status(), StatusCode::NOT_MODIFIED, "{inm}");
        assert_eq!(resp.headers()["etag"], etag.as_str());
        assert!(resp.headers().contains_key("cache-control"));
        assert!(resp.bytes().await.unwrap().is_empty());
    }
    for inm in ["\"other\"", "W/\"other\"", "garbage"] {
        let resp = get(Some(inm.to_owned())).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{inm}");
        assert_eq!(resp.bytes().await.unwrap(), body);
    }
}

#[tokio::test]
async fn discovery_needs_no_auth_and_advertises_the_workspace() {
    let s = start().await;
    let resp = reqwest::Client::new()
        .get(s.url("/.well-known/openwop"))
        .bearer_auth("not-a-key")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(
        resp.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("max-age")
    );
    let d: Value = resp.json().await.unwrap();
    assert_eq!(d["protocolVersion"], "1.0");
    assert!(d["supportedEnvelopes"].is_array());
    assert!(d["schemaVersions"].is_object());
    let limits = d["limits"].as_object().unwrap();
    for k in limits.keys() {
        assert!(
            [
                "clarificationRounds",
                "schemaRounds",
                "envelopesPerTurn",
                "maxRequestBodyBytes"
            ]
            .contains(&k.as_str())
        );
    }
    assert_eq!(
        d["workspace"],
        json!({"supported": true, "versioned": true, "maxFileBytes": 1024, "maxFiles": 50, "maxVersions": 5})
    );
    assert!(d.get("capabilities").is_none());
    // The whole document, as committed: nothing in it depends on the port or the run.
    insta::assert_snapshot!("discovery", serde_json::to_string_pretty(&d).unwrap());
    let typed = s.a().discovery().await.unwrap();
    assert_eq!(typed.protocol_version, "1.0");
}

#[tokio::test]
async fn crud_round_trip_through_the_client() {
    let s = start().await;
    let a = s.a();
    let created = a
        .put(&p("notes/plan.md"), "# Plan", PutOptions::default())
        .await
        .unwrap();
    assert_eq!(created.version.get(), 1);
    assert_eq!(created.content_type, "text/markdown");
    let etag1 = created.etag.clone().unwrap();
    let replaced = a
        .put(
            &p("notes/plan.md"),
            "# Plan v2",
            PutOptions {
                if_match: Some(wsp_types::ETag::from_wire(etag1.clone())),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(replaced.version.get(), 2);
    assert_ne!(replaced.etag.as_deref(), Some(etag1.as_str()));
    let got = a.get(&p("notes/plan.md"), None).await.unwrap();
    assert_eq!(got.content, "# Plan v2");
    let old = a.get(&p("notes/plan.md"), Some(1)).await.unwrap();
    assert_eq!(old.content, "# Plan");
    let history = a.history(&p("notes/plan.md")).await.unwrap();
    assert_eq!(
        history
            .versions
            .iter()
            .map(|v| v.version.get())
            .collect::<Vec<_>>(),
        vec![2, 1]
    );
    a.put(&p("AGENTS.md"), "be nice", PutOptions::default())
        .await
        .unwrap();
    let list = a.list(None).await.unwrap();
    assert_eq!(
        list.files
            .iter()
            .map(|f| f.path.as_str())
            .collect::<Vec<_>>(),
        ["AGENTS.md", "notes/plan.md"]
    );
    let notes = a.list(Some("notes/")).await.unwrap();
    assert_eq!(notes.files.len(), 1);
    a.delete(&p("notes/plan.md"), None).await.unwrap();
    assert_eq!(
        a.get(&p("notes/plan.md"), None).await.unwrap_err().code(),
        Some(ErrorCode::NotFound)
    );
}

#[tokio::test]
async fn get_sets_the_etag_header_and_list_has_no_content_key() {
    let s = start().await;
    s.a()
        .put(&p("b.md"), "bee", PutOptions::default())
        .await
        .unwrap();
    s.a()
        .put(&p("a.md"), "ay", PutOptions::default())
        .await
        .unwrap();
    let resp = reqwest::Client::new()
        .get(s.url("/v1/host/workspace/files/b.md"))
        .bearer_auth(&s.key_a)
        .send()
        .await
        .unwrap();
    let header = resp.headers()["etag"].to_str().unwrap().to_owned();
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["etag"], header);
    for k in [
        "path",
        "content",
        "contentType",
        "version",
        "etag",
        "updatedAt",
    ] {
        assert!(body.get(k).is_some(), "missing {k}");
    }
    let list: Value = reqwest::Client::new()
        .get(s.url("/v1/host/workspace/files"))
        .bearer_auth(&s.key_a)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let files = list["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[0]["path"], "a.md");
    for f in files {
        assert!(
            f.get("content").is_none(),
            "list entries carry no content key"
        );
        assert!(f.get("etag").is_some());
    }
}

#[tokio::test]
async fn encoded_and_raw_paths_are_the_same_file() {
    let s = start().await;
    let resp = put_req(&s, &s.key_a, "notes%2Fplan.md", json!({"content": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let (status, body) = s
        .raw(
            "GET",
            "/v1/host/workspace/files/notes/plan.md",
            &s.key_a,
            "",
        )
        .await;
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["path"], "notes/plan.md");
    assert_eq!(v["version"], 1);
}

/// The `http_path` group of the repository's adversarial vectors, read at run time:
/// `(segment as sent, status of a PUT)`, with `LONG_257_CHARS` spelled out.
fn http_path_vectors() -> Vec<(String, u16)> {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../conformance/vectors/paths.json");
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    let doc: Value = serde_json::from_str(&text).expect("the vectors are JSON");
    let cases: Vec<(String, u16)> = doc["http_path"]
        .as_array()
        .expect("an http_path group")
        .iter()
        .map(|v| {
            let path = v["path"].as_str().expect("path");
            let path = if path == "LONG_257_CHARS" {
                "a".repeat(257)
            } else {
                path.to_owned()
            };
            (path, v["expect"].as_u64().expect("expect") as u16)
        })
        .collect();
    assert!(cases.len() >= 19, "only {} http_path vectors", cases.len());
    cases
}

#[tokio::test]
async fn every_http_path_vector() {
    let s = start().await;
    // The shared vectors (conformance/vectors/paths.json), then more of our own.
    let mut cases: Vec<(String, u16)> = http_path_vectors();
    let beyond: &[(&str, u16)] = &[
        // Beyond the vectors: odd encodings and characters.
        ("%", 400),
        ("a%zz", 400),
        ("%C3%A9.md", 400),
        ("a%20b.md", 400),
        ("a%2F%2Fb", 400),
        (".env", 400),
        ("a/%2e%2e/b", 400),
        ("a%252Fb", 400),
        ("x/.env", 200),
    ];
    cases.extend(beyond.iter().map(|&(p, e)| (p.to_owned(), e)));
    for (path, expect) in &cases {
        let target = format!("/v1/host/workspace/files/{path}");
        let (status, body) = s.raw("PUT", &target, &s.key_a, r#"{"content":"v"}"#).await;
        assert_eq!(status, *expect, "PUT {path}: {body}");
        if *expect == 400 {
            let v: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(v["error"], "validation_error", "{path}");
            for method in ["GET", "DELETE"] {
                let (status, _) = s.raw(method, &target, &s.key_a, "").await;
                assert_eq!(status, 400, "{method} {path}");
            }
        }
    }
    // Nothing was written outside the legal names.
    let list = s.a().list(None).await.unwrap();
    let names: Vec<&str> = list.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        names,
        [
            "a.b-c_d/E.md",
            "notes/plan.md",
            "report..final.md",
            "x/.env"
        ]
    );
}

#[tokio::test]
async fn validation_errors() {
    let s = start().await;
    let c = reqwest::Client::new();
    let cases = [
        json!({"content": 5}),
        json!({"content": "x", "extra": 1}),
        json!({"contentType": "text/plain"}),
        json!({"content": "x", "contentType": "not a type"}),
        json!(["content"]),
    ];
    for body in cases {
        let resp = put_req(&s, &s.key_a, "a.md", body.clone())
            .send()
            .await
            .unwrap();
        let e = envelope(resp, 400, "validation_error").await;
        assert!(!e["message"].as_str().unwrap().is_empty(), "{body}");
    }
    let resp = c
        .put(s.url("/v1/host/workspace/files/a.md"))
        .bearer_auth(&s.key_a)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    envelope(resp, 400, "validation_error").await;
    s.a()
        .put(&p("a.md"), "x", PutOptions::default())
        .await
        .unwrap();
    for q in [
        "version=0",
        "version=abc",
        "version=-1",
        "version=",
        "version=1&version=1",
    ] {
        let resp = c
            .get(s.url(&format!("/v1/host/workspace/files/a.md?{q}")))
            .bearer_auth(&s.key_a)
            .send()
            .await
            .unwrap();
        envelope(resp, 400, "validation_error").await;
    }
    for q in ["prefix=..%2F", "prefix=%2F"] {
        let resp = c
            .get(s.url(&format!("/v1/host/workspace/files?{q}")))
            .bearer_auth(&s.key_a)
            .send()
            .await
            .unwrap();
        envelope(resp, 400, "validation_error").await;
    }
    let resp = c
        .put(s.url("/v1/host/workspace/files/"))
        .bearer_auth(&s.key_a)
        .json(&json!({"content":"x"}))
        .send()
        .await
        .unwrap();
    envelope(resp, 400, "validation_error").await;
}

#[tokio::test]
async fn unauthenticated_and_forbidden() {
    let s = start().await;
    let c = reqwest::Client::new();
    let url = s.url("/v1/host/workspace/files");
    envelope(c.get(&url).send().await.unwrap(), 401, "unauthenticated").await;
    envelope(
        c.get(&url)
            .bearer_auth("wsp_000000000000_".to_owned() + &"0".repeat(64))
            .send()
            .await
            .unwrap(),
        401,
        "unauthenticated",
    )
    .await;
    envelope(
        c.get(&url)
            .header("authorization", "Basic abc")
            .send()
            .await
            .unwrap(),
        401,
        "unauthenticated",
    )
    .await;
    // A forged secret for a real key id.
    let id = &s.key_a[4..16];
    let forged = format!("wsp_{id}_{}", "f".repeat(64));
    envelope(
        c.get(&url).bearer_auth(forged).send().await.unwrap(),
        401,
        "unauthenticated",
    )
    .await;
    // Read-only key: reads work, writes are 403 with the required scope.
    s.a()
        .put(&p("a.md"), "x", PutOptions::default())
        .await
        .unwrap();
    let reader = s.client(&s.key_a_read);
    assert_eq!(reader.get(&p("a.md"), None).await.unwrap().content, "x");
    let e = put_req(&s, &s.key_a_read, "a.md", json!({"content":"y"}))
        .send()
        .await
        .unwrap();
    let body = envelope(e, 403, "forbidden").await;
    assert_eq!(body["details"]["requiredScope"], "workspace:write");
    let e = c
        .delete(s.url("/v1/host/workspace/files/a.md"))
        .bearer_auth(&s.key_a_read)
        .send()
        .await
        .unwrap();
    envelope(e, 403, "forbidden").await;
    assert_eq!(s.a().get(&p("a.md"), None).await.unwrap().content, "x");
}

#[tokio::test]
async fn other_owners_files_answer_exactly_like_missing_ones() {
    let s = start().await;
    s.a()
        .put(&p("secret.md"), "A only", PutOptions::default())
        .await
        .unwrap();
    s.a()
        .put(&p("secret.md"), "A only v2", PutOptions::default())
        .await
        .unwrap();
    let c = reqwest::Client::new();
    for (theirs, never) in [
        (
            "/v1/host/workspace/files/secret.md",
            "/v1/host/workspace/files/nevr.md",
        ),
        (
            "/v1/host/workspace/files/secret.md?version=1",
            "/v1/host/workspace/files/nevr.md?version=1",
        ),
        (
            "/v1/host/workspace/history/secret.md",
            "/v1/host/workspace/history/nevr.md",
        ),
    ] {
        let r1 = c
            .get(s.url(theirs))
            .bearer_auth(&s.key_b)
            .send()
            .await
            .unwrap();
        let r2 = c
            .get(s.url(never))
            .bearer_auth(&s.key_b)
            .send()
            .await
            .unwrap();
        assert_eq!(r1.status(), 404);
        assert_eq!(r2.status(), 404);
        let (b1, b2) = (r1.text().await.unwrap(), r2.text().await.unwrap());
        assert_eq!(
            b1.replace("secret.md", "nevr.md"),
            b2,
            "same body for foreign and missing"
        );
    }
    assert!(s.b().list(None).await.unwrap().files.is_empty());
    let e = c
        .delete(s.url("/v1/host/workspace/files/secret.md"))
        .bearer_auth(&s.key_b)
        .send()
        .await
        .unwrap();
    envelope(e, 404, "not_found").await;
    let b_own = s
        .b()
        .put(&p("secret.md"), "B's own", PutOptions::default())
        .await
        .unwrap();
    assert_eq!(b_own.version.get(), 1);
    assert_eq!(
        s.a().get(&p("secret.md"), None).await.unwrap().content,
        "A only v2"
    );
}

#[tokio::test]
async fn preconditions_and_conflicts() {
    let s = start().await;
    let a = s.a();
    let v1 = a
        .put(&p("DIRECTIVES.md"), "one", PutOptions::default())
        .await
        .unwrap();
    let v2 = a
        .put(&p("DIRECTIVES.md"), "two", PutOptions::default())
        .await
        .unwrap();
    let stale = put_req(&s, &s.key_a, "DIRECTIVES.md", json!({"content":"three"}))
        .header("if-match", v1.etag.clone().unwrap())
        .send()
        .await
        .unwrap();
    let body = envelope(stale, 409, "workspace_conflict").await;
    assert_eq!(body["details"]["currentVersion"], 2);
    let fresh = put_req(&s, &s.key_a, "DIRECTIVES.md", json!({"content":"three"}))
        .header("if-match", v2.etag.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(fresh.status(), 200);
    let star = put_req(&s, &s.key_a, "DIRECTIVES.md", json!({"content":"four"}))
        .header("if-match", "*")
        .send()
        .await
        .unwrap();
    assert_eq!(star.status(), 200);
    let create_only = put_req(&s, &s.key_a, "DIRECTIVES.md", json!({"content":"x"}))
        .header("if-none-match", "*")
        .send()
        .await
        .unwrap();
    let body = envelope(create_only, 409, "workspace_conflict").await;
    assert_eq!(body["details"]["currentVersion"], 4);
    let absent = put_req(&s, &s.key_a, "new.md", json!({"content":"x"}))
        .header("if-match", v2.etag.clone().unwrap())
        .send()
        .await
        .unwrap();
    let body = envelope(absent, 409, "workspace_conflict").await;
    assert_eq!(body["details"]["currentVersion"], 0);
    let created = put_req(&s, &s.key_a, "new.md", json!({"content":"x"}))
        .header("if-none-match", "*")
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 200);
    let stale_delete = reqwest::Client::new()
        .delete(s.url("/v1/host/workspace/files/DIRECTIVES.md"))
        .bearer_auth(&s.key_a)
        .header("if-match", v1.etag.unwrap())
        .send()
        .await
        .unwrap();
    envelope(stale_delete, 409, "workspace_conflict").await;
}

/// `If-Match` with `If-None-Match: *` (RFC 9110 §13.2.2 evaluates both): a live version must
/// match and none may exist, which no state satisfies. The write is a conflict with the live
/// version, whether the file exists (with the matching tag) or not, and nothing is written.
#[tokio::test]
async fn if_match_with_if_none_match_is_a_conflict_that_writes_nothing() {
    let s = start().await;
    let live = put_req(&s, &s.key_a, "both.md", json!({"content":"kept"}))
        .send()
        .await
        .unwrap();
    assert_eq!(live.status(), 200);
    let etag = live.headers()["etag"].to_str().unwrap().to_owned();
    for (path, current) in [("both.md", 1), ("absent.md", 0)] {
        let both = put_req(&s, &s.key_a, path, json!({"content":"lost"}))
            .header("if-match", etag.as_str())
            .header("if-none-match", "*")
            .send()
            .await
            .unwrap();
        let body = envelope(both, 409, "workspace_conflict").await;
        assert_eq!(body["details"]["currentVersion"], current, "{path}");
    }
    let read = reqwest::Client::new()
        .get(s.url("/v1/host/workspace/files/both.md"))
        .bearer_auth(&s.key_a)
        .send()
        .await
        .unwrap();
    let read: serde_json::Value = read.json().await.unwrap();
    assert_eq!(
        (read["content"].as_str(), read["version"].as_u64()),
        (Some("kept"), Some(1))
    );
    let absent = reqwest::Client::new()
        .get(s.url("/v1/host/workspace/files/absent.md"))
        .bearer_auth(&s.key_a)
        .send()
        .await
        .unwrap();
    assert_eq!(absent.status(), 404);
}

#[tokio::test]
async fn delete_then_recreate_starts_a_new_life() {
    let s = start().await;
    let a = s.a();
    let v1 = a
        .put(&p("cycle.md"), "old 1", PutOptions::default())
        .await
        .unwrap();
    let v2 = a
        .put(&p("cycle.md"), "old 2", PutOptions::default())
        .await
        .unwrap();
    let resp = reqwest::Client::new()
        .delete(s.url("/v1/host/workspace/files/cycle.md"))
        .bearer_auth(&s.key_a)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204);
    assert_eq!(resp.content_length(), Some(0));
    for v in [None, Some(1), Some(2)] {
        assert_eq!(
            a.get(&p("cycle.md"), v).await.unwrap_err().code(),
            Some(ErrorCode::NotFound)
        );
    }
    assert!(a.list(None).await.unwrap().files.is_empty());
    assert_eq!(
        a.delete(&p("cycle.md"), None).await.unwrap_err().code(),
        Some(ErrorCode::NotFound)
    );
    let stale = PutOptions {
        if_match: Some(wsp_types::ETag::from_wire(v2.etag.clone().unwrap())),
        ..Default::default()
    };
    let e = a.put(&p("cycle.md"), "x", stale).await.unwrap_err();
    assert_eq!(e.api().unwrap().detail("currentVersion"), Some(&json!(0)));
    let again = a
        .put(&p("cycle.md"), "new 1", PutOptions::default())
        .await
        .unwrap();
    assert_eq!(again.version.get(), 1);
    assert_ne!(again.etag, v1.etag);
    assert_ne!(again.etag, v2.etag);
    assert_eq!(
        a.get(&p("cycle.md"), Some(2)).await.unwrap_err().code(),
        Some(ErrorCode::NotFound)
    );
}

#[tokio::test]
async fn size_limits() {
    let s = start().await;
    // 1024 bytes exactly (512 two-byte characters) is accepted; one more byte is not.
    let exact = "é".repeat(512);
    assert_eq!(
        s.a()
            .put(&p("big.md"), exact.clone(), PutOptions::default())
            .await
            .unwrap()
            .content,
        exact
    );
    let over = put_req(
        &s,
        &s.key_a,
        "big.md",
        json!({"content": format!("{exact}x")}),
    )
    .send()
    .await
    .unwrap();
    let body = envelope(over, 413, "workspace_too_large").await;
    assert_eq!(body["details"]["limit"], "maxFileBytes");
    // JSON escaping blows a legal content up six times: still judged by maxFileBytes.
    let escaped = "\u{1}".repeat(1024);
    let resp = put_req(&s, &s.key_a, "ctl.md", json!({"content": escaped}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let huge = "x".repeat(2 * 1024 * 1024);
    let resp = put_req(&s, &s.key_a, "huge.md", json!({"content": huge}))
        .send()
        .await
        .unwrap();
    let body = envelope(resp, 413, "workspace_too_large").await;
    assert_eq!(body["details"]["limit"], "requestBody");
    // maxFiles: a small store.
    let small = start_with(Options {
        limits: wsp_store::Limits::default()
            .with_max_file_bytes(100)
            .with_max_files(2)
            .with_max_versions(2),
        ..Options::default()
    })
    .await;
    for name in ["1.md", "2.md"] {
        small
            .a()
            .put(&p(name), "x", PutOptions::default())
            .await
            .unwrap();
    }
    let resp = put_req(&small, &small.key_a, "3.md", json!({"content":"x"}))
        .send()
        .await
        .unwrap();
    let body = envelope(resp, 413, "workspace_too_large").await;
    assert_eq!(body["details"]["limit"], "maxFiles");
}

#[tokio::test]
async fn non_json_bodies_are_415() {
    let s = start().await;
    let c = reqwest::Client::new();
    for ct in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        let mut req = c
            .put(s.url("/v1/host/workspace/files/a.md"))
            .bearer_auth(&s.key_a)
            .body(r#"{"content":"x"}"#);
        if let Some(ct) = ct {
            req = req.header("content-type", ct);
        }
        envelope(req.send().await.unwrap(), 415, "unsupported_media_type").await;
    }
}

#[tokio::test]
async fn idempotency_keys_replay_and_refuse_reuse() {
    let s = start().await;
    let send = |content: &str, key: &str| {
        put_req(&s, &s.key_a, "idem.md", json!({"content": content})).header("idempotency-key", key)
    };
    let first = send("one", "k1").send().await.unwrap();
    assert_eq!(first.status(), 200);
    let first: Value = first.json().await.unwrap();
    let replay = send("one", "k1").send().await.unwrap();
    assert_eq!(replay.status(), 200);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    let replay: Value = replay.json().await.unwrap();
    assert_eq!(replay, first, "the replay is the first response");
    assert_eq!(
        s.a().get(&p("idem.md"), None).await.unwrap().version.get(),
        1,
        "ran once"
    );
    let reuse = send("two", "k1").send().await.unwrap();
    envelope(reuse, 409, "idempotency_key_mismatch").await;
    // Validation errors are not recorded: the same key can then carry a valid request.
    let bad = put_req(&s, &s.key_a, "idem2.md", json!({"content": 1}))
        .header("idempotency-key", "k2")
        .send()
        .await
        .unwrap();
    envelope(bad, 400, "validation_error").await;
    let ok = put_req(&s, &s.key_a, "idem2.md", json!({"content": "fine"}))
        .header("idempotency-key", "k2")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    // Another owner's identical key is unrelated.
    let other = put_req(&s, &s.key_b, "idem.md", json!({"content": "two"}))
        .header("idempotency-key", "k1")
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 200);
}

#[tokio::test]
async fn capability_off_is_501() {
    let s = start_with(Options {
        config: ServerConfig::default().with_workspace_enabled(false),
        ..Options::default()
    })
    .await;
    let resp = reqwest::Client::new()
        .get(s.url("/v1/host/workspace/files"))
        .bearer_auth(&s.key_a)
        .send()
        .await
        .unwrap();
    envelope(resp, 501, "capability_not_provided").await;
    let d: Value = reqwest::get(s.url("/.well-known/openwop"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(d["workspace"], json!({"supported": false}));
}

#[tokio::test]
async fn secrets_are_redacted_before_storage() {
    let s = start_with(Options {
        secrets: vec![
            ("tenant-a", "openai", "sk-live-1234567890"),
            ("tenant-a", "db", "hunter2hunter2"),
        ],
        ..Options::default()
    })
    .await;
    let stored = s
        .a()
        .put(
            &p("MEMORY.md"),
            "key sk-live-1234567890 and hunter2hunter2.",
            PutOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(stored.content, "key [REDACTED:openai] and [REDACTED:db].");
    assert_eq!(
        s.a().get(&p("MEMORY.md"), None).await.unwrap().content,
        stored.content
    );
    // Tenant B has no secrets configured: its text is stored as sent.
    let b = s
        .b()
        .put(&p("MEMORY.md"), "sk-live-1234567890", PutOptions::default())
        .await
        .unwrap();
    assert_eq!(b.content, "sk-live-1234567890");
}

#[tokio::test]
async fn unknown_routes_and_methods_get_envelopes() {
    let s = start().await;
    let c = reqwest::Client::new();
    envelope(
        c.get(s.url("/v1/nope")).send().await.unwrap(),
        404,
        "not_found",
    )
    .await;
    envelope(
        c.post(s.url("/v1/host/workspace/files/a.md"))
            .bearer_auth(&s.key_a)
            .send()
            .await
            .unwrap(),
        405,
        "method_not_allowed",
    )
    .await;
    // The test seam is absent unless enabled.
    envelope(
        c.post(s.url("/v1/host/sample/workspace/op"))
            .bearer_auth(&s.key_a)
            .json(&json!({}))
            .send()
            .await
            .unwrap(),
        404,
        "not_found",
    )
    .await;
}

#[tokio::test]
async fn racing_conditional_writers_over_http() {
    let s = start().await;
    let base = s
        .a()
        .put(&p("race.md"), "start", PutOptions::default())
        .await
        .unwrap();
    let etag = base.etag.unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..16 {
        let req = put_req(
            &s,
            &s.key_a,
            "race.md",
            json!({"content": format!("writer {i}")}),
        )
        .header("if-match", etag.clone());
        tasks.spawn(async move { req.send().await.unwrap().status().as_u16() });
    }
    let mut statuses = Vec::new();
    while let Some(r) = tasks.join_next().await {
        statuses.push(r.unwrap());
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 15);
    assert_eq!(
        s.a().get(&p("race.md"), None).await.unwrap().version.get(),
        2
    );
}

#[tokio::test]
async fn client_separates_envelopes_from_transport_failures() {
    let s = start().await;
    let e = s.client("wsp_bogus").list(None).await.unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::Unauthenticated));
    let dead = wsp_client::Client::new("http://127.0.0.1:9").unwrap();
    assert!(matches!(
        dead.list(None).await.unwrap_err(),
        Error::Transport(_)
    ));
}

#[tokio::test]
async fn served_openapi_equals_the_committed_document() {
    let s = start().await;
    let resp = reqwest::get(s.url("/v1/openapi.json")).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let served = resp.text().await.unwrap();
    let committed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../api/openapi.json"
    ))
    .expect("api/openapi.json is committed (cargo xtask openapi)");
    assert!(
        served == committed,
        "api/openapi.json is stale: run `cargo xtask openapi` and commit"
    );
    // Every documented operation is routed: none answers "no route".
    let doc: Value = serde_json::from_str(&served).unwrap();
    let c = reqwest::Client::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for method in ops.as_object().unwrap().keys() {
            let url = s.url(&path.replace("{path}", "x.md"));
            let m = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let body = c
                .request(m, url)
                .bearer_auth(&s.key_a)
                .json(&json!({"content": "x"}))
                .send()
                .await
                .unwrap();
            assert_ne!(body.status(), 405, "{method} {path}");
            if body
                .headers()
                .get("content-type")
                .is_some_and(|v| v == "text/event-stream")
            {
                continue; // an endless stream: routed, and nothing to read to its end
            }
            let text = body.text().await.unwrap();
            assert!(
                !text.contains("no route"),
                "{method} {path} is documented but not routed"
            );
        }
    }
}

/// A store that panics on every read: the panic must never reach the client.
struct PanickingStore(wsp_store::MemoryStore);

impl wsp_store::WorkspaceStore for PanickingStore {
    fn limits(&self) -> wsp_store::Limits {
        self.0.limits()
    }
    fn list<'a>(
        &'a self,
        o: &'a wsp_types::Owner,
        p: &'a wsp_types::WorkspacePrefix,
    ) -> wsp_store::StoreFuture<'a, Vec<wsp_store::FileMeta>> {
        self.0.list(o, p)
    }
    fn get<'a>(
        &'a self,
        _: &'a wsp_types::Owner,
        _: &'a WorkspacePath,
        _: Option<u64>,
    ) -> wsp_store::StoreFuture<'a, wsp_store::StoredFile> {
        panic!("the disk caught fire at /var/lib/secret/path")
    }
    fn put<'a>(
        &'a self,
        o: &'a wsp_types::Owner,
        p: &'a WorkspacePath,
        w: wsp_store::FileWrite,
        pre: wsp_store::Precondition,
    ) -> wsp_store::StoreFuture<'a, wsp_store::StoredFile> {
        self.0.put(o, p, w, pre)
    }
    fn delete<'a>(
        &'a self,
        o: &'a wsp_types::Owner,
        p: &'a WorkspacePath,
        pre: wsp_store::Precondition,
    ) -> wsp_store::StoreFuture<'a, wsp_store::Deleted> {
        self.0.delete(o, p, pre)
    }
    fn history<'a>(
        &'a self,
        o: &'a wsp_types::Owner,
        p: &'a WorkspacePath,
    ) -> wsp_store::StoreFuture<'a, Vec<wsp_store::FileMeta>> {
        self.0.history(o, p)
    }
}

#[tokio::test]
async fn a_panic_becomes_a_500_with_a_correlation_id_and_nothing_internal() {
    let store = std::sync::Arc::new(PanickingStore(wsp_store::MemoryStore::default()));
    let s = start_with(Options {
        store: Some(store),
        ..Options::default()
    })
    .await;
    let resp = reqwest::Client::new()
        .get(s.url("/v1/host/workspace/files/a.md"))
        .bearer_auth(&s.key_a)
        .send()
        .await
        .unwrap();
    let text = {
        let body = envelope(resp, 500, "internal_error").await;
        let id = body["details"]["correlationId"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(id.len(), 16);
        body.to_string()
    };
    assert!(
        !text.contains("fire") && !text.contains("/var/lib"),
        "{text}"
    );
    // The server keeps serving.
    assert!(s.a().list(None).await.is_ok());
}

/// RFC 6750 §3: every 401 says how to authenticate (`WWW-Authenticate: Bearer`), for every
/// operation the document says needs a key, without a key and with a wrong one.
#[tokio::test]
async fn every_401_names_the_bearer_scheme() {
    let s = start().await;
    let c = reqwest::Client::new();
    let doc: Value = c
        .get(s.url("/v1/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut checked = 0;
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            if op["security"].as_array().is_some_and(|s| s.is_empty())
                || op["responses"].get("401").is_none()
            {
                continue;
            }
            let url = s.url(
                &path
                    .replace("{path}", "x.md")
                    .replace("{runId}", &"0".repeat(32))
                    .replace("{agentId}", "a"),
            );
            let m = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            for key in [None, Some("wsp_000000000000_".to_owned() + &"0".repeat(64))] {
                let mut req = c.request(m.clone(), &url).json(&json!({"content": "x"}));
                if let Some(key) = &key {
                    req = req.bearer_auth(key);
                }
                let resp = req.send().await.unwrap();
                if resp.status() == 501 {
                    continue; // a feature this host does not offer says so before any key
                }
                assert_eq!(resp.status(), 401, "{method} {path}");
                assert_eq!(
                    resp.headers()
                        .get("www-authenticate")
                        .map(|v| v.to_str().unwrap()),
                    Some("Bearer"),
                    "{method} {path}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "only {checked} requests checked");
}

/// Every string of at most `max_len` characters over `alphabet`, the empty one included.
fn strings_over(alphabet: &[char], max_len: usize) -> Vec<String> {
    let mut all = vec![String::new()];
    let mut frontier = vec![String::new()];
    for _ in 0..max_len {
        frontier = frontier
            .iter()
            .flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}")))
            .collect();
        all.extend(frontier.iter().cloned());
    }
    all
}

/// The patterns the OpenAPI document declares for `{path}` and `?prefix=` accept exactly what
/// the server accepts: every string of up to five characters over `a . / - _` (and the shared
/// vectors) is matched by the pattern if and only if `WorkspacePath` / `WorkspacePrefix` parse it.
#[test]
fn the_documented_path_patterns_are_the_parsers() {
    let doc = wsp_server::openapi::document();
    let pattern = |ptr: &str| {
        regex::Regex::new(doc.pointer(ptr).and_then(Value::as_str).expect(ptr)).unwrap()
    };
    let path =
        pattern("/paths/~1v1~1host~1workspace~1files~1{path}/get/parameters/0/schema/pattern");
    let prefix = pattern("/paths/~1v1~1host~1workspace~1files/get/parameters/0/schema/pattern");
    let mut samples = strings_over(&['a', '.', '/', '-', '_'], 5);
    samples.extend(
        [
            "notes/plan.md",
            "report..final.md",
            "a/../b",
            "/etc",
            "~x",
            "a\\b",
        ]
        .map(String::from),
    );
    for s in &samples {
        assert_eq!(
            path.is_match(s),
            wsp_types::WorkspacePath::parse(s).is_ok(),
            "path {s:?}"
        );
        assert_eq!(
            prefix.is_match(s),
            wsp_types::WorkspacePrefix::parse(s).is_ok(),
            "prefix {s:?}"
        );
    }
    assert!(samples.len() > 3900);
}

/// The pattern and bound the OpenAPI document declares for a PUT body's `contentType` accept
/// exactly what the server accepts: every string of up to four characters over a small alphabet
/// (and some longer ones) is matched if and only if `MediaType::parse` takes it.
#[test]
fn the_documented_content_type_pattern_is_the_parser() {
    let doc = wsp_server::openapi::document();
    let schema = doc
        .pointer("/components/schemas/WorkspaceFileCreate/properties/contentType")
        .expect("contentType schema");
    let pattern = regex::Regex::new(
        schema["pattern"]
            .as_str()
            .expect("contentType declares a pattern"),
    )
    .unwrap();
    let max = schema["maxLength"].as_u64().expect("contentType maxLength");
    assert_eq!(max, wsp_types::MediaType::MAX_LEN as u64);
    let mut samples = strings_over(&['a', '/', ';', ' ', '+', '=', '\t'], 4);
    samples.extend(
        [
            "text/markdown",
            "text/plain; charset=utf-8",
            " text/plain ;x",
            "text/mark down",
            "text/é",
            "application/vnd.api+json",
            "image/png\n",
            "text/plain;",
            ";text/plain",
        ]
        .map(String::from),
    );
    for s in &samples {
        let documented = pattern.is_match(s) && s.chars().count() as u64 <= max;
        assert_eq!(
            documented,
            wsp_types::MediaType::parse(s).is_ok(),
            "contentType {s:?}"
        );
    }
    assert!(samples.len() > 2500);
}

/// With `contentEncoding: base64` the document requires `content` to match a pattern that
/// accepts exactly what the server decodes (standard, padded, canonical base64): every string of
/// up to six characters over a small alphabet (and some longer ones) matches if and only if
/// `ContentEncoding::Base64.decode` takes it; without the encoding, any content is accepted.
#[test]
fn the_documented_base64_pattern_is_the_decoder() {
    let doc = wsp_server::openapi::document();
    let create = doc
        .pointer("/components/schemas/WorkspaceFileCreate")
        .expect("WorkspaceFileCreate");
    assert_eq!(
        create["if"]["properties"]["contentEncoding"]["const"], "base64",
        "{create}"
    );
    let pattern = regex::Regex::new(
        create["then"]["properties"]["content"]["pattern"]
            .as_str()
            .expect("a base64 content pattern"),
    )
    .unwrap();
    let mut samples = strings_over(&['A', 'Q', 'B', 'w', '/', '=', '-'], 6);
    samples.extend(
        [
            "aGVsbG8=",
            "aGVsbG8",
            "aGVsbA==",
            "aGVsbB==",
            "aGVs\nbG8=",
            "aGVs bG8=",
            "{\"entries\": []}",
            "iVBORw0KGgo=",
        ]
        .map(String::from),
    );
    for s in &samples {
        assert_eq!(
            pattern.is_match(s),
            wsp_types::wire::ContentEncoding::Base64.decode(s).is_ok(),
            "base64 {s:?}"
        );
    }
    assert!(samples.len() > 100_000);
}

/// CORS is off by default (no `Access-Control-*` header, preflight is not answered as one);
/// with allowed origins, a preflight from one of them is answered with the methods and headers
/// the API uses, a real request carries `Access-Control-Allow-Origin` and exposes `ETag`, and
/// any other origin gets no CORS header.
#[tokio::test]
async fn cors_is_off_by_default_and_answers_only_allowed_origins() {
    let c = reqwest::Client::new();
    let preflight = |s: &support::TestServer, origin: &str| {
        c.request(
            reqwest::Method::OPTIONS,
            s.url("/v1/host/workspace/files/a.md"),
        )
        .header("origin", origin)
        .header("access-control-request-method", "PUT")
        .header(
            "access-control-request-headers",
            "authorization, content-type, if-match, idempotency-key",
        )
        .send()
    };
    let plain = start().await;
    let resp = preflight(&plain, "https://app.example").await.unwrap();
    assert!(resp.headers().get("access-control-allow-origin").is_none());
    assert_eq!(
        resp.status(),
        405,
        "no CORS: OPTIONS is not a method of the API"
    );

    let allowed = "https://app.example";
    let s = support::start_with(support::Options {
        config: wsp_server::ServerConfig::default().with_cors_origins(vec![
            allowed.parse().unwrap(),
            "http://localhost:5173".parse().unwrap(),
        ]),
        ..support::Options::default()
    })
    .await;
    let resp = preflight(&s, allowed).await.unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    let h = resp.headers();
    assert_eq!(h["access-control-allow-origin"], allowed);
    let methods = h["access-control-allow-methods"]
        .to_str()
        .unwrap()
        .to_ascii_uppercase();
    for m in ["GET", "PUT", "POST", "DELETE"] {
        assert!(methods.contains(m), "{methods}");
    }
    let headers = h["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    for name in [
        "authorization",
        "content-type",
        "if-match",
        "idempotency-key",
    ] {
        assert!(headers.contains(name), "{headers}");
    }
    s.a()
        .put(&p("a.md"), "x", PutOptions::default())
        .await
        .unwrap();
    let got = c
        .get(s.url("/v1/host/workspace/files/a.md"))
        .bearer_auth(&s.key_a)
        .header("origin", allowed)
        .send()
        .await
        .unwrap();
    assert_eq!(got.status(), 200);
    assert_eq!(got.headers()["access-control-allow-origin"], allowed);
    let exposed = got.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    assert!(exposed.contains("etag"), "{exposed}");
    for other in ["https://evil.example", "https://app.example.evil", "null"] {
        let resp = preflight(&s, other).await.unwrap();
        assert!(
            resp.headers().get("access-control-allow-origin").is_none(),
            "{other}"
        );
    }
}

/// Who wrote each version (`updatedBy`, the principal of the key that wrote it) is on the
/// file, its list entry and each of its history entries; another principal's write is its own.
#[tokio::test]
async fn each_version_names_who_wrote_it() {
    let s = start().await;
    for (key, content) in [(&s.key_a, "by alice"), (&s.key_a_read, "refused")] {
        let _ = put_req(&s, key, "who.md", json!({"content": content}))
            .send()
            .await
            .unwrap();
    }
    let read = |url: String| {
        let key = s.key_a.clone();
        async move {
            let r = reqwest::Client::new()
                .get(url)
                .bearer_auth(key)
                .send()
                .await
                .unwrap();
            r.json::<serde_json::Value>().await.unwrap()
        }
    };
    let file = read(s.url("/v1/host/workspace/files/who.md")).await;
    assert_eq!(file["updatedBy"], "alice", "{file}");
    let list = read(s.url("/v1/host/workspace/files?prefix=who")).await;
    assert_eq!(list["files"][0]["updatedBy"], "alice", "{list}");
    let history = read(s.url("/v1/host/workspace/history/who.md")).await;
    assert_eq!(history["versions"][0]["updatedBy"], "alice", "{history}");
    let typed = s.a().get(&p("who.md"), None).await.unwrap();
    assert_eq!(typed.updated_by.as_deref(), Some("alice"));
}

/// Bytes that are not text travel as `contentEncoding: base64`: stored exactly, with their
/// media type, answered back in base64 by GET, list and history, counted in decoded bytes by
/// `maxFileBytes`; text answers carry no `contentEncoding`; malformed base64 and unknown
/// encodings are refused and store nothing; a secret inside bytes is refused, not redacted.
#[tokio::test]
async fn binary_files_travel_as_base64() {
    let s = start_with(Options {
        secrets: vec![("tenant-a", "openai", "sk-live-1234567890")],
        ..Options::default()
    })
    .await;
    let c = reqwest::Client::new();
    let discovery: Value = c
        .get(s.url("/.well-known/openwop"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(discovery["wsp"]["binaryContent"], true);
    let max = discovery["workspace"]["maxFileBytes"].as_u64().unwrap() as usize;

    // Exactly maxFileBytes of bytes (NUL and invalid UTF-8 included): the base64 text is a
    // third longer than the limit, and still accepted.
    let png: Vec<u8> = (0..max).map(|i| (i * 131 % 256) as u8).collect();
    let written = s
        .a()
        .put_bytes(
            &p("img/logo.png"),
            &png,
            PutOptions {
                content_type: Some("image/png".into()),
                ..PutOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(written.bytes().unwrap(), png);
    assert_eq!(written.content_type, "image/png");
    let raw: Value = c
        .get(s.url("/v1/host/workspace/files/img/logo.png"))
        .bearer_auth(&s.key_a)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(raw["contentEncoding"], "base64");
    assert_eq!(raw["contentType"], "image/png");
    assert_eq!(raw["content"], wsp_types::base64_encode(&png));
    let listed = s.a().list(Some("img/")).await.unwrap();
    assert_eq!(
        listed.files[0].content_encoding,
        Some(wsp_types::wire::ContentEncoding::Base64)
    );
    assert_eq!(listed.files[0].size, Some(max as u64));
    let history = s.a().history(&p("img/logo.png")).await.unwrap();
    assert_eq!(
        history.versions[0].content_encoding,
        Some(wsp_types::wire::ContentEncoding::Base64)
    );

    // Without a media type, bytes are application/octet-stream.
    let plain = put_req(
        &s,
        &s.key_a,
        "blob",
        json!({"content": "AP8=", "contentEncoding": "base64"}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(plain.status(), 200);
    let plain: Value = plain.json().await.unwrap();
    assert_eq!(plain["contentType"], "application/octet-stream");

    // A text file's answers are exactly OpenWOP's: no contentEncoding key; `utf-8` may be sent.
    let text = put_req(
        &s,
        &s.key_a,
        "a.md",
        json!({"content": "AP8=", "contentEncoding": "utf-8"}),
    )
    .send()
    .await
    .unwrap();
    let text: Value = text.json().await.unwrap();
    assert_eq!(text["content"], "AP8=");
    assert!(text.get("contentEncoding").is_none(), "{text}");

    // One byte over the limit in decoded bytes.
    let over = wsp_types::base64_encode(&vec![7u8; max + 1]);
    let resp = put_req(
        &s,
        &s.key_a,
        "img/big.png",
        json!({"content": over, "contentEncoding": "base64"}),
    )
    .send()
    .await
    .unwrap();
    let body = envelope(resp, 413, "workspace_too_large").await;
    assert_eq!(body["details"]["limit"], "maxFileBytes");

    for bad in ["AP8", "AP9=", "AP8=\n", "AP 8=", "AP-_", "!!!!"] {
        let resp = put_req(
            &s,
            &s.key_a,
            "img/bad.png",
            json!({"content": bad, "contentEncoding": "base64"}),
        )
        .send()
        .await
        .unwrap();
        let body = envelope(resp, 400, "validation_error").await;
        assert_eq!(body["details"]["field"], "content", "{bad:?}");
    }
    for bad in [json!("gzip"), json!("BASE64"), json!(null), json!(1)] {
        let resp = put_req(
            &s,
            &s.key_a,
            "img/bad.png",
            json!({"content": "AP8=", "contentEncoding": bad}),
        )
        .send()
        .await
        .unwrap();
        envelope(resp, 400, "validation_error").await;
    }
    // Bytes cannot be redacted: a secret in them is refused.
    let mut secret = vec![0xff, 0x00];
    secret.extend_from_slice(b"sk-live-1234567890");
    let resp = put_req(
        &s,
        &s.key_a,
        "img/secret.png",
        json!({"content": wsp_types::base64_encode(&secret), "contentEncoding": "base64"}),
    )
    .send()
    .await
    .unwrap();
    let body = envelope(resp, 400, "validation_error").await;
    assert_eq!(body["details"]["field"], "content");
    let names: Vec<String> = s
        .a()
        .list(Some("img/"))
        .await
        .unwrap()
        .files
        .into_iter()
        .map(|f| f.path.into_string())
        .collect();
    assert_eq!(names, ["img/logo.png"], "refused writes stored nothing");
}
