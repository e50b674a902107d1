//! The scenario bodies, one module per area, and the checks they share.

pub(crate) mod agents;
pub(crate) mod atomicity;
pub(crate) mod auth;
pub(crate) mod binary;
pub(crate) mod capability;
pub(crate) mod context;
pub(crate) mod delete;
pub(crate) mod discovery;
pub(crate) mod errors;
pub(crate) mod etag;
pub(crate) mod idempotency;
pub(crate) mod isolation;
pub(crate) mod limits;
pub(crate) mod list;
pub(crate) mod memory;
pub(crate) mod paths;
pub(crate) mod read;
pub(crate) mod redaction;
pub(crate) mod runs;
pub(crate) mod versions;
pub(crate) mod write;

use serde_json::Value;

use crate::expect::FileView;
use crate::outcome::Outcome;
use crate::scenario::Caller;
use crate::transport::Reply;

/// PUT `content` at `path` and expect the stored file back.
pub(crate) async fn create(
    caller: &Caller<'_>,
    path: &str,
    content: &str,
) -> Result<FileView, Outcome> {
    caller.put(path, content).send().await?.expect_file(path)
}

/// A 409 `workspace_conflict` whose `details.currentVersion` is `current`.
pub(crate) fn expect_conflict(reply: &Reply, current: u64) -> Result<(), Outcome> {
    let details = reply.expect_error(409, "workspace_conflict")?;
    match details.get("currentVersion") {
        Some(v) if v.as_u64() == Some(current) => Ok(()),
        Some(v) => Err(reply.fail(format!("details.currentVersion is {v}, expected {current}"))),
        None => Err(reply.fail("409 workspace_conflict without details.currentVersion")),
    }
}

/// The live file at `path` is still exactly `expected` (content, version, etag).
pub(crate) async fn expect_unchanged(
    caller: &Caller<'_>,
    path: &str,
    expected: &FileView,
    after: &str,
) -> Result<(), Outcome> {
    let reply = caller.get(path).send().await?;
    let now = reply.expect_file(path)?;
    if now.version != expected.version
        || now.etag != expected.etag
        || now.content != expected.content
    {
        return Err(reply.fail(format!(
            "after {after} the file changed: version {} -> {}, etag {} -> {}",
            expected.version, now.version, expected.etag, now.etag
        )));
    }
    Ok(())
}

/// `path` answers 404 `not_found`.
pub(crate) async fn expect_absent(
    caller: &Caller<'_>,
    path: &str,
    after: &str,
) -> Result<(), Outcome> {
    let reply = caller.get(path).send().await?;
    if reply.status != 404 {
        return Err(reply.fail(format!(
            "after {after}, GET answered {} instead of 404",
            reply.status
        )));
    }
    reply.expect_error(404, "not_found").map(|_| ())
}

/// The answer about `their_path` is indistinguishable from the answer about `missing_path`:
/// same status, and the same body once each path is replaced by a placeholder (a message may
/// name what the request named, nothing else).
pub(crate) fn expect_same_answer(
    theirs: &Reply,
    their_path: &str,
    missing: &Reply,
    missing_path: &str,
) -> Result<(), Outcome> {
    let normalize = |reply: &Reply, path: &str| -> Value {
        match serde_json::from_slice::<Value>(&reply.body) {
            Ok(v) => replace_strings(v, path),
            Err(_) => Value::String(reply.text().replace(path, "{path}")),
        }
    };
    let evidence = |why: String| {
        Outcome::fail(why)
            .with(theirs.exchange())
            .with(missing.exchange())
    };
    if theirs.status != missing.status {
        return Err(evidence(format!(
            "another owner's file answers {}, a missing file {}",
            theirs.status, missing.status
        )));
    }
    let (a, b) = (
        normalize(theirs, their_path),
        normalize(missing, missing_path),
    );
    if a != b {
        return Err(evidence(format!(
            "another owner's file and a missing file get different bodies: {a} vs {b}"
        )));
    }
    Ok(())
}

fn replace_strings(value: Value, path: &str) -> Value {
    match value {
        Value::String(s) => Value::String(s.replace(path, "{path}")),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|v| replace_strings(v, path))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, replace_strings(v, path)))
                .collect(),
        ),
        other => other,
    }
}

/// Percent-decodes once (invalid escapes are kept as they are; bytes that are not UTF-8
/// become U+FFFD).
pub(crate) fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding_is_single() {
        assert_eq!(percent_decode("a%2Fb"), "a/b");
        assert_eq!(percent_decode("a%252Fb"), "a%2Fb");
        assert_eq!(percent_decode("%2e%2e%2Fx"), "../x");
        assert_eq!(percent_decode("bad%zz%2"), "bad%zz%2");
        assert_eq!(percent_decode("%"), "%");
    }

    #[test]
    fn strings_are_replaced_recursively() {
        let v = serde_json::json!({"error": "not_found", "message": "no file p/a.md", "details": {"path": "p/a.md", "n": 1}});
        let got = replace_strings(v, "p/a.md");
        assert_eq!(got["message"], "no file {path}");
        assert_eq!(got["details"]["path"], "{path}");
        assert_eq!(got["details"]["n"], 1);
    }
}
