//! RFC 0059 §B/§C and WIRE §3/§4: PUT.

use serde_json::{Value, json};

use super::{create, expect_absent, expect_unchanged};
use crate::outcome::Outcome;
use crate::scenario::{Ctx, ScenarioResult};

/// WS-PUT-001
pub(crate) async fn create_is_version_one(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("created.md");
    let reply = a.put(&path, "# created\n").send().await?;
    let file = reply.expect_file(&path)?;
    if file.version != 1 {
        return Err(reply.fail(format!(
            "a new path was stored at version {}, not 1",
            file.version
        )));
    }
    if file.content.as_deref() != Some("# created\n") {
        return Err(reply.fail("the answer's content differs from what was written"));
    }
    Ok(Outcome::pass(format!("200, version 1, etag {}", file.etag)))
}

/// WS-PUT-002
pub(crate) async fn replace_bumps_version(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("replaced.md");
    let mut previous = create(&a, &path, "one").await?;
    for content in ["two", "three"] {
        let reply = a.put(&path, content).send().await?;
        let file = reply.expect_file(&path)?;
        if file.version != previous.version + 1 {
            return Err(reply.fail(format!(
                "replace of version {} gave version {}, expected {}",
                previous.version,
                file.version,
                previous.version + 1
            )));
        }
        if file.etag == previous.etag {
            return Err(reply.fail("a new version kept the previous etag"));
        }
        if file.content.as_deref() != Some(content) {
            return Err(reply.fail("the answer's content differs from what was written"));
        }
        previous = file;
    }
    Ok(Outcome::pass(
        "two replaces gave versions 2 and 3 with new etags",
    ))
}

/// WS-PUT-003
pub(crate) async fn content_type_default(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("default.md");
    let reply = a.put(&path, "x").send().await?;
    let file = reply.expect_file(&path)?;
    if file.content_type != "text/markdown" {
        return Err(reply.fail(format!(
            "contentType defaulted to {:?}, not text/markdown",
            file.content_type
        )));
    }
    let given = ctx.path("given.txt");
    let reply = a
        .put_json(
            &given,
            &json!({"content": "x", "contentType": "text/plain"}),
        )
        .send()
        .await?;
    let file = reply.expect_file(&given)?;
    if file.content_type != "text/plain" {
        return Err(reply.fail(format!(
            "contentType text/plain was stored as {:?}",
            file.content_type
        )));
    }
    let read = a.get(&given).send().await?;
    let file = read.expect_file(&given)?;
    if file.content_type != "text/plain" {
        return Err(read.fail(format!(
            "GET answers contentType {:?}, not text/plain",
            file.content_type
        )));
    }
    Ok(Outcome::pass("default text/markdown; text/plain kept"))
}

/// WS-PUT-004
pub(crate) async fn unknown_key_refused(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("unknown-key.md");
    let bodies = [
        json!({"content": "x", "owner": "someone-else"}),
        json!({"content": "x", "contenttype": "text/plain"}),
        json!({"content": "x", "version": 7}),
    ];
    for body in bodies {
        let reply = a.put_json(&path, &body).send().await?;
        reply
            .expect_error(400, "validation_error")
            .map_err(|o| o.context(&body.to_string()))?;
    }
    expect_absent(&a, &path, "three refused writes").await?;
    Ok(Outcome::pass(
        "unknown body keys answer 400 validation_error and write nothing",
    ))
}

/// WS-PUT-005
pub(crate) async fn content_not_string(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("not-string.md");
    for content in [
        json!(42),
        Value::Null,
        json!({"text": "x"}),
        json!(["x"]),
        json!(true),
    ] {
        let body = json!({ "content": content });
        let reply = a.put_json(&path, &body).send().await?;
        reply
            .expect_error(400, "validation_error")
            .map_err(|o| o.context(&body.to_string()))?;
    }
    expect_absent(&a, &path, "refused writes").await?;
    Ok(Outcome::pass(
        "number, null, object, array and boolean content answer 400",
    ))
}

/// WS-PUT-006
pub(crate) async fn bad_json_refused(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("bad-json.md");
    let bodies: [(&str, &[u8]); 5] = [
        ("an empty object", b"{}"),
        ("contentType only", b"{\"contentType\":\"text/plain\"}"),
        ("truncated JSON", b"{\"content\": \"x"),
        ("a JSON array", b"[\"x\"]"),
        ("an empty body", b""),
    ];
    for (what, bytes) in bodies {
        let reply = a
            .call("PUT", format!("{}/{path}", crate::transport::FILES))
            .body(Some("application/json"), bytes.to_vec())
            .send()
            .await?;
        reply
            .expect_error(400, "validation_error")
            .map_err(|o| o.context(what))?;
    }
    expect_absent(&a, &path, "refused writes").await?;
    Ok(Outcome::pass(
        "missing content, broken JSON and non-objects answer 400",
    ))
}

/// WS-PUT-007
pub(crate) async fn non_json_media_type(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("media-type.md");
    let body = br#"{"content":"x"}"#.to_vec();
    for content_type in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        let reply = a
            .call("PUT", format!("{}/{path}", crate::transport::FILES))
            .body(content_type, body.clone())
            .send()
            .await?;
        reply
            .expect_error(415, "unsupported_media_type")
            .map_err(|o| {
                o.context(&format!(
                    "Content-Type {}",
                    content_type.unwrap_or("absent")
                ))
            })?;
    }
    expect_absent(&a, &path, "refused writes").await?;
    Ok(Outcome::pass(
        "text/plain, form and missing Content-Type answer 415",
    ))
}

/// WS-PUT-008
pub(crate) async fn json_with_charset(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("charset.md");
    let reply = a
        .call("PUT", format!("{}/{path}", crate::transport::FILES))
        .body(
            Some("application/json; charset=utf-8"),
            br#"{"content":"x"}"#.to_vec(),
        )
        .send()
        .await?;
    reply.expect_file(&path)?;
    Ok(Outcome::pass("application/json; charset=utf-8 is accepted"))
}

/// WS-PUT-009
pub(crate) async fn content_round_trips(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let samples = [
        (
            "utf8.md",
            "línea 1\nzweite Zeile ✓\r\n日本語 🚀 \"quoted\" \\back\\slash\ttab </script> &amp;",
        ),
        ("empty.md", ""),
        ("whitespace.md", "  \n\n\t  "),
        ("surrogates.md", "𝄞 music, 🏳️‍🌈 flag, e\u{301} combining"),
    ];
    for (name, content) in samples {
        let path = ctx.path(name);
        let written = create(&a, &path, content).await?;
        let reply = a.get(&path).send().await?;
        let read = reply.expect_file(&path)?;
        if written.content.as_deref() != Some(content) || read.content.as_deref() != Some(content) {
            return Err(reply.fail(format!("{name}: content did not round-trip byte for byte")));
        }
    }
    Ok(Outcome::pass(
        "multi-byte, escaped, empty and whitespace content round-trip exactly",
    ))
}

/// WS-PUT-010
pub(crate) async fn refused_write_changes_nothing(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("kept.md");
    let original = create(&a, &path, "original").await?;
    let files = crate::transport::FILES;
    let attempts = [
        (
            "unknown key",
            a.put_json(&path, &json!({"content": "changed", "extra": 1})),
        ),
        (
            "text/plain body",
            a.call("PUT", format!("{files}/{path}"))
                .body(Some("text/plain"), br#"{"content":"changed"}"#.to_vec()),
        ),
        (
            "stale If-Match",
            a.put(&path, "changed")
                .header("If-Match", "\"wsp-conformance-stale\""),
        ),
        (
            "If-None-Match: *",
            a.put(&path, "changed").header("If-None-Match", "*"),
        ),
    ];
    for (what, call) in attempts {
        let reply = call.send().await?;
        if reply.status < 400 {
            return Err(reply.fail(format!("{what}: expected a refusal, got {}", reply.status)));
        }
        expect_unchanged(&a, &path, &original, what).await?;
    }
    Ok(Outcome::pass(
        "400, 415 and 409 refusals leave the file untouched",
    ))
}
