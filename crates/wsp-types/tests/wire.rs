//! The generated wire types against the schemas' own examples and the wire contract, and
//! `WorkspacePath` against the repository's adversarial path vectors.

use std::num::NonZeroU64;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use wsp_types::WorkspacePath;
use wsp_types::wire::{
    Discovery, ErrorEnvelope, InstallScope, WorkspaceFile, WorkspaceFileCreate,
    WorkspaceFileHistory, WorkspaceFileList, WorkspaceFileMeta, WorkspaceUpdated,
};

fn examples(file_name: &str) -> Vec<Value> {
    let path = format!("{}/../../schemas/{file_name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let schema: Value = serde_json::from_str(&text).unwrap();
    let examples = schema["examples"].as_array().cloned().unwrap_or_default();
    assert!(!examples.is_empty(), "{file_name} has no examples");
    examples
}

/// `written` as it comes back after a trip through `T`: keys in `defaulted` may appear with
/// their default value, keys in `dropped` (unknown to `T`) disappear, nothing else changes.
fn expect_same(written: &Value, read_back: &Value, defaulted: &[&str], dropped: &[&str], at: &str) {
    match (written, read_back) {
        (Value::Object(w), Value::Object(r)) => {
            for (key, value) in w {
                match r.get(key) {
                    Some(back) => {
                        expect_same(value, back, defaulted, dropped, &format!("{at}.{key}"))
                    }
                    None => assert!(dropped.contains(&key.as_str()), "{at}.{key} was lost"),
                }
            }
            for key in r.keys().filter(|k| !w.contains_key(*k)) {
                assert!(defaulted.contains(&key.as_str()), "{at}.{key} appeared");
            }
        }
        (Value::Array(w), Value::Array(r)) => {
            assert_eq!(w.len(), r.len(), "{at}");
            for (i, (w, r)) in w.iter().zip(r).enumerate() {
                expect_same(w, r, defaulted, dropped, &format!("{at}[{i}]"));
            }
        }
        _ => assert_eq!(written, read_back, "{at}"),
    }
}

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(
    file_name: &str,
    defaulted: &[&str],
    dropped: &[&str],
) {
    for example in examples(file_name) {
        let typed: T = serde_json::from_value(example.clone())
            .unwrap_or_else(|e| panic!("{file_name}: {example} does not deserialize: {e}"));
        let back = serde_json::to_value(&typed).unwrap();
        expect_same(&example, &back, defaulted, dropped, file_name);
        assert_eq!(
            serde_json::from_value::<T>(back).unwrap(),
            typed,
            "{file_name}"
        );
    }
}

#[test]
fn schema_examples_round_trip() {
    round_trip::<WorkspaceFile>("workspace-file.schema.json", &["contentType"], &[]);
    round_trip::<WorkspaceFileMeta>("workspace-file-meta.schema.json", &["contentType"], &[]);
    round_trip::<WorkspaceFileCreate>("workspace-file-create.schema.json", &["contentType"], &[]);
    round_trip::<WorkspaceFileList>("workspace-file-list.schema.json", &["contentType"], &[]);
    round_trip::<WorkspaceFileHistory>("workspace-file-history.schema.json", &["contentType"], &[]);
    round_trip::<ErrorEnvelope>("error-envelope.schema.json", &[], &[]);
    round_trip::<WorkspaceUpdated>("workspace-updated.schema.json", &[], &[]);
    round_trip::<Discovery>(
        "discovery.schema.json",
        &["handoffValidation", "installScope"],
        &["feedback"],
    );
}

fn meta() -> WorkspaceFileMeta {
    WorkspaceFileMeta {
        path: WorkspacePath::parse("notes/plan.md").unwrap(),
        content_type: "text/markdown".into(),
        content_encoding: None,
        size: None,
        version: NonZeroU64::new(3).unwrap(),
        etag: Some("\"00000000000004d2-3\"".into()),
        updated_at: "2026-05-25T10:15:00Z".parse().unwrap(),
        updated_by: None,
    }
}

#[test]
fn file_meta_has_no_content_key() {
    let value = serde_json::to_value(meta()).unwrap();
    assert_eq!(
        value,
        json!({"path": "notes/plan.md", "contentType": "text/markdown", "version": 3,
               "etag": "\"00000000000004d2-3\"", "updatedAt": "2026-05-25T10:15:00Z"})
    );
    let mut with_content = value;
    with_content["content"] = json!("");
    assert!(serde_json::from_value::<WorkspaceFileMeta>(with_content).is_err());
}

#[test]
fn error_envelope_omits_absent_details() {
    let envelope = ErrorEnvelope {
        error: "not_found".into(),
        message: "no file at a.md".into(),
        details: Default::default(),
    };
    let text = serde_json::to_string(&envelope).unwrap();
    assert_eq!(text, r#"{"error":"not_found","message":"no file at a.md"}"#);
    let mut conflict = envelope;
    conflict.error = "workspace_conflict".into();
    conflict.details.insert("currentVersion".into(), json!(0));
    assert_eq!(
        serde_json::to_value(&conflict).unwrap()["details"],
        json!({"currentVersion": 0})
    );
}

#[test]
fn create_body_takes_content_and_an_optional_content_type_only() {
    let body: WorkspaceFileCreate = serde_json::from_str(r#"{"content": "x"}"#).unwrap();
    assert_eq!(body.content_type, "text/markdown");
    let body: WorkspaceFileCreate =
        serde_json::from_str(r#"{"content": "{}", "contentType": "application/json"}"#).unwrap();
    assert_eq!(body.content_type, "application/json");
    for bad in [
        r#"{"content": "x", "path": "a.md"}"#,
        r#"{"content": "x", "version": 2}"#,
        r#"{"contentType": "text/plain"}"#,
        r#"{"content": 1}"#,
        r#"{"content": null}"#,
    ] {
        assert!(
            serde_json::from_str::<WorkspaceFileCreate>(bad).is_err(),
            "{bad} accepted"
        );
    }
}

#[test]
fn paths_and_versions_are_validated_while_parsing() {
    let file =
        json!({"path": "a.md", "content": "", "version": 1, "updatedAt": "2026-05-25T10:15:00Z"});
    assert!(serde_json::from_value::<WorkspaceFile>(file.clone()).is_ok());
    for (key, bad) in [
        ("path", json!("a/../b.md")),
        ("path", json!("a//b.md")),
        ("path", json!("/etc/passwd")),
        ("version", json!(0)),
        ("version", json!(-1)),
        ("updatedAt", json!("2026-05-25")),
    ] {
        let mut file = file.clone();
        file[key] = bad;
        assert!(
            serde_json::from_value::<WorkspaceFile>(file.clone()).is_err(),
            "{file} accepted"
        );
    }
    assert!(
        serde_json::from_value::<WorkspaceUpdated>(json!({"path": "..", "version": 1})).is_err()
    );
}

#[test]
fn discovery_tolerates_other_capability_blocks_but_not_unknown_limits() {
    let doc = json!({"protocolVersion": "1.0", "supportedEnvelopes": [], "schemaVersions": {},
        "limits": {"clarificationRounds": 1, "schemaRounds": 1, "envelopesPerTurn": 1},
        "deadLetter": {"supported": true},
        "agents": {"manifestRuntime": {"supported": true}, "inventory": {}}});
    let discovery: Discovery = serde_json::from_value(doc.clone()).unwrap();
    let runtime = discovery.agents.unwrap().manifest_runtime.unwrap();
    assert_eq!(runtime.install_scope, InstallScope::Host);
    assert!(!runtime.handoff_validation);
    let mut extra = doc.clone();
    extra["limits"]["maxTurns"] = json!(1);
    assert!(serde_json::from_value::<Discovery>(extra).is_err());
    let mut extra = doc;
    extra["workspace"] = json!({"supported": true, "maxFolders": 1});
    assert!(serde_json::from_value::<Discovery>(extra).is_err());
}

/// Every `http_path` vector of `conformance/vectors/paths.json` (read at run time, the one copy
/// every suite reads): decoded as a server decodes the request path, `WorkspacePath::parse`
/// accepts exactly the ones a host answers 200.
#[test]
fn workspace_paths_follow_the_shared_vectors() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../conformance/vectors/paths.json"
    );
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let vectors: Value = serde_json::from_str(&text).unwrap();
    let cases = vectors["http_path"].as_array().expect("http_path vectors");
    assert!(cases.len() >= 10, "the vectors were read: {}", cases.len());
    for case in cases {
        let raw = case["path"].as_str().unwrap();
        let raw = if raw == "LONG_257_CHARS" {
            "a".repeat(257)
        } else {
            raw.to_owned()
        };
        let decoded = percent_encoding::percent_decode_str(&raw)
            .decode_utf8()
            .unwrap()
            .into_owned();
        let accepted = WorkspacePath::parse(&decoded).is_ok();
        assert_eq!(
            accepted,
            case["expect"] == 200,
            "{raw:?} (decoded {decoded:?}): parse accepted it: {accepted}"
        );
    }
}
