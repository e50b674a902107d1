//! Checks on replies. Each returns the checked value, or the failing [`Outcome`] with the
//! exchange attached, so scenarios read as a sequence of `?`.

use serde_json::{Map, Value};

use crate::outcome::Outcome;
use crate::transport::Reply;

/// The keys a WorkspaceFile may carry (RFC 0059 §B, `additionalProperties: false`).
pub(crate) const FILE_KEYS: [&str; 6] = [
    "path",
    "content",
    "contentType",
    "version",
    "etag",
    "updatedAt",
];

/// Keys a WorkspaceFile may carry besides [`FILE_KEYS`]: documented wsp extensions.
const EXTENSION_FILE_KEYS: [&str; 3] = ["updatedBy", "contentEncoding", "size"];

/// A WorkspaceFile (or a list entry) read off the wire after its shape was checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileView {
    pub path: String,
    /// `None` for list entries, which carry no `content` key.
    pub content: Option<String>,
    pub content_type: String,
    pub version: u64,
    pub etag: String,
    pub updated_at: String,
    /// `contentEncoding` when present (`utf-8` or `base64`): a wsp extension.
    pub encoding: Option<String>,
    /// `size` when present (bytes, decoded for base64): a wsp extension.
    pub size: Option<u64>,
}

impl Reply {
    /// The status must be `status`.
    pub(crate) fn expect_status(&self, status: u16) -> Result<&Self, Outcome> {
        if self.status == status {
            Ok(self)
        } else {
            Err(self.fail(format!(
                "expected status {status}, got {}{}",
                self.status,
                error_code_suffix(self)
            )))
        }
    }

    /// The body must be JSON.
    pub(crate) fn json(&self) -> Result<Value, Outcome> {
        serde_json::from_slice(&self.body)
            .map_err(|e| self.fail(format!("status {}: body is not JSON: {e}", self.status)))
    }

    /// The body must be a JSON object.
    pub(crate) fn json_object(&self) -> Result<Map<String, Value>, Outcome> {
        match self.json()? {
            Value::Object(map) => Ok(map),
            other => Err(self.fail(format!("body is JSON but not an object: {}", kind(&other)))),
        }
    }

    /// Status `status` with an error envelope whose `error` is `code`; returns `details` (empty
    /// when absent).
    pub(crate) fn expect_error(
        &self,
        status: u16,
        code: &str,
    ) -> Result<Map<String, Value>, Outcome> {
        self.expect_status(status)?;
        let body = self.json()?;
        check_envelope(&body).map_err(|why| self.fail(format!("status {status}: {why}")))?;
        let got = body["error"].as_str().unwrap_or_default();
        if got != code {
            return Err(self.fail(format!(
                "status {status} with error {got:?}, expected {code:?}"
            )));
        }
        Ok(body
            .get("details")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default())
    }

    /// A 200 WorkspaceFile with content; its `path` must be `path`.
    pub(crate) fn expect_file(&self, path: &str) -> Result<FileView, Outcome> {
        self.expect_status(200)?;
        let map = self.json_object()?;
        let file = file_view(&map, true).map_err(|why| self.fail(why))?;
        if file.path != path {
            return Err(self.fail(format!("file path is {:?}, expected {path:?}", file.path)));
        }
        Ok(file)
    }

    /// A 200 list answer: `{"files": [...]}` whose entries have the entry shape.
    pub(crate) fn expect_list(&self) -> Result<Vec<FileView>, Outcome> {
        self.expect_status(200)?;
        let map = self.json_object()?;
        let Some(Value::Array(files)) = map.get("files") else {
            return Err(self.fail("list answer has no `files` array"));
        };
        files
            .iter()
            .enumerate()
            .map(|(i, entry)| match entry {
                Value::Object(obj) => {
                    file_view(obj, false).map_err(|why| self.fail(format!("files[{i}]: {why}")))
                }
                other => Err(self.fail(format!("files[{i}] is {}, not an object", kind(other)))),
            })
            .collect()
    }
}

/// The error code of an error reply, for failure messages (` (error "x")`).
fn error_code_suffix(reply: &Reply) -> String {
    serde_json::from_slice::<Value>(&reply.body)
        .ok()
        .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_string))
        .map(|code| format!(" (error {code:?})"))
        .unwrap_or_default()
}

/// WIRE §3: exactly `error` (string), `message` (string) and optional `details` (object).
pub(crate) fn check_envelope(body: &Value) -> Result<(), String> {
    let Value::Object(map) = body else {
        return Err(format!("error body is {}, not an object", kind(body)));
    };
    let extra: Vec<&str> = map
        .keys()
        .map(String::as_str)
        .filter(|k| !["error", "message", "details"].contains(k))
        .collect();
    if !extra.is_empty() {
        return Err(format!("error envelope has extra top-level keys {extra:?}"));
    }
    match map.get("error") {
        Some(Value::String(s)) if !s.is_empty() => {}
        Some(other) => {
            return Err(format!(
                "`error` is {}, not a non-empty string",
                kind(other)
            ));
        }
        None => return Err("error envelope has no `error` key".into()),
    }
    match map.get("message") {
        Some(Value::String(_)) => {}
        Some(other) => return Err(format!("`message` is {}, not a string", kind(other))),
        None => return Err("error envelope has no `message` key".into()),
    }
    match map.get("details") {
        None | Some(Value::Object(_)) => Ok(()),
        Some(other) => Err(format!("`details` is {}, not an object", kind(other))),
    }
}

/// Checks a WorkspaceFile (`with_content`) or a list entry (no `content` key allowed).
pub(crate) fn file_view(map: &Map<String, Value>, with_content: bool) -> Result<FileView, String> {
    let extra: Vec<&str> = map
        .keys()
        .map(String::as_str)
        .filter(|k| !FILE_KEYS.contains(k) && !EXTENSION_FILE_KEYS.contains(k))
        .collect();
    if !extra.is_empty() {
        return Err(format!("unexpected keys {extra:?}"));
    }
    let string = |key: &str| match map.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!("`{key}` is {}, not a string", kind(other))),
        None => Err(format!("`{key}` is missing")),
    };
    let content = if with_content {
        Some(string("content")?)
    } else if map.contains_key("content") {
        return Err("a list entry carries a `content` key".into());
    } else {
        None
    };
    let version = match map.get("version") {
        Some(Value::Number(n)) => match n.as_u64() {
            Some(v) if v >= 1 => v,
            _ => return Err(format!("`version` is {n}, not an integer >= 1")),
        },
        Some(other) => return Err(format!("`version` is {}, not an integer", kind(other))),
        None => return Err("`version` is missing".into()),
    };
    let etag = string("etag")?;
    if etag.is_empty() {
        return Err("`etag` is empty".into());
    }
    if let Some(by) = map.get("updatedBy").filter(|v| !v.is_string()) {
        return Err(format!("`updatedBy` is {}, not a string", kind(by)));
    }
    let encoding = match map.get("contentEncoding") {
        None => None,
        Some(Value::String(e)) if e == "utf-8" || e == "base64" => Some(e.clone()),
        Some(other) => {
            return Err(format!(
                "`contentEncoding` is {other}, not \"utf-8\" or \"base64\""
            ));
        }
    };
    let size = match map.get("size") {
        None => None,
        Some(v) => match v.as_u64() {
            Some(n) if v.is_u64() => Some(n),
            _ => return Err(format!("`size` is {v}, not an integer >= 0")),
        },
    };
    let updated_at = string("updatedAt")?;
    if chrono::DateTime::parse_from_rfc3339(&updated_at).is_err() {
        return Err(format!(
            "`updatedAt` {updated_at:?} is not an RFC 3339 date-time"
        ));
    }
    Ok(FileView {
        path: string("path")?,
        content,
        content_type: string("contentType")?,
        version,
        etag,
        updated_at,
        encoding,
        size,
    })
}

/// The JSON type name of a value, for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A positive integer (`minimum: 1`) or a message saying what it is instead.
pub(crate) fn positive_integer(value: &Value) -> Result<u64, String> {
    match value.as_u64() {
        Some(n) if n >= 1 && value.is_u64() => Ok(n),
        _ => Err(format!("{value} is not a positive integer")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(body: Value, expect: Result<(), &str>) {
        let got = check_envelope(&body);
        match expect {
            Ok(()) => assert_eq!(got, Ok(()), "{body}"),
            Err(fragment) => {
                let why = got.expect_err(&body.to_string());
                assert!(why.contains(fragment), "{why:?} lacks {fragment:?}");
            }
        }
    }

    #[test]
    fn envelopes() {
        check(json!({"error": "not_found", "message": "x"}), Ok(()));
        check(
            json!({"error": "x", "message": "", "details": {"a": 1}}),
            Ok(()),
        );
        check(
            json!({"error": "x", "message": "m", "status": 404}),
            Err("extra top-level keys"),
        );
        check(json!({"error": "x"}), Err("no `message`"));
        check(json!({"message": "m"}), Err("no `error`"));
        check(
            json!({"error": 4, "message": "m"}),
            Err("`error` is a number"),
        );
        check(json!({"error": "", "message": "m"}), Err("non-empty"));
        check(
            json!({"error": "x", "message": null}),
            Err("`message` is null"),
        );
        check(
            json!({"error": "x", "message": "m", "details": []}),
            Err("`details` is an array"),
        );
        check(json!(["error"]), Err("not an object"));
    }

    fn file(value: Value, with_content: bool) -> Result<FileView, String> {
        file_view(value.as_object().unwrap(), with_content)
    }

    #[test]
    fn workspace_files() {
        let good = json!({"path": "a.md", "content": "x", "contentType": "text/markdown",
                          "version": 2, "etag": "\"e\"", "updatedAt": "2026-01-01T00:00:00Z"});
        let view = file(good.clone(), true).unwrap();
        assert_eq!(view.version, 2);
        assert_eq!(view.content.as_deref(), Some("x"));
        assert!(
            file(good.clone(), false)
                .unwrap_err()
                .contains("carries a `content` key")
        );

        let mut entry = good.clone();
        entry.as_object_mut().unwrap().remove("content");
        assert_eq!(file(entry.clone(), false).unwrap().content, None);
        assert!(
            file(entry, true)
                .unwrap_err()
                .contains("`content` is missing")
        );

        let broken = [
            ("version", json!(0), "not an integer >= 1"),
            ("version", json!(1.5), "not an integer >= 1"),
            ("version", json!("1"), "not an integer"),
            ("etag", json!(""), "empty"),
            ("etag", json!(7), "not a string"),
            ("updatedAt", json!("yesterday"), "RFC 3339"),
            ("owner", json!("t"), "unexpected keys"),
        ];
        for (key, value, fragment) in broken {
            let mut v = good.clone();
            v[key] = value;
            let why = file(v, true).unwrap_err();
            assert!(why.contains(fragment), "{key}: {why}");
        }
    }

    #[test]
    fn positive_integers() {
        assert_eq!(positive_integer(&json!(5)), Ok(5));
        for bad in [json!(0), json!(-1), json!(1.0), json!("3"), json!(null)] {
            assert!(positive_integer(&bad).is_err(), "{bad}");
        }
    }
}
