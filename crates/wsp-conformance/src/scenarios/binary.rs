//! WIRE §3 (wsp extension, discovery `wsp.binaryContent`): files written as bytes with
//! `contentEncoding: base64`. The body's bytes travel in standard, padded base64 with exactly one
//! accepted spelling, the content type is kept, and limits count the decoded bytes.

use serde_json::json;

use super::{expect_absent, expect_unchanged};
use crate::expect::FileView;
use crate::outcome::Outcome;
use crate::scenario::{Ctx, ScenarioResult};
use crate::transport::Reply;

/// The largest `maxFileBytes` the limit check writes at (it sends about 1.4 times this).
const MAX_EXERCISED_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Every byte value, then an invalid UTF-8 sequence, a NUL and 0xFF: no text decoder keeps them.
fn awkward_bytes() -> Vec<u8> {
    (0..=255u8).chain([0xC3, 0x28, 0x00, 0xFF]).collect()
}

/// The file must be the base64 body `content` of `len` bytes, typed `content_type`.
fn expect_binary(
    reply: &Reply,
    file: &FileView,
    content: &str,
    content_type: &str,
    place: &str,
) -> Result<(), Outcome> {
    if file.encoding.as_deref() != Some("base64") {
        return Err(reply.fail(format!(
            "{place}: contentEncoding is {:?}, want \"base64\"",
            file.encoding
        )));
    }
    if file.content.as_deref() != Some(content) {
        return Err(reply.fail(format!(
            "{place}: content differs from the base64 written ({} characters written, {} read)",
            content.len(),
            file.content.as_deref().map_or(0, str::len)
        )));
    }
    if file.content_type != content_type {
        return Err(reply.fail(format!(
            "{place}: contentType is {:?}, it was written as {content_type:?}",
            file.content_type
        )));
    }
    Ok(())
}

/// WS-BIN-001
pub(crate) async fn bytes_round_trip(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("image.png");
    let bytes = awkward_bytes();
    let content = wsp_types::base64_encode(&bytes);
    let body = json!({"content": content, "contentType": "image/png", "contentEncoding": "base64"});
    let reply = a.put_json(&path, &body).send().await?;
    let written = reply.expect_file(&path)?;
    expect_binary(&reply, &written, &content, "image/png", "the PUT answer")?;

    let reply = a.get(&path).send().await?;
    let got = reply.expect_file(&path)?;
    expect_binary(&reply, &got, &content, "image/png", "GET")?;
    if ctx.versioned() {
        let reply = a.get_version(&path, 1).send().await?;
        let old = reply.expect_file(&path)?;
        expect_binary(&reply, &old, &content, "image/png", "GET ?version=1")?;
    }

    let reply = a.list(Some(&path)).send().await?;
    let entry = reply
        .expect_list()?
        .into_iter()
        .find(|f| f.path == path)
        .ok_or_else(|| reply.fail("the list does not have the file"))?;
    if entry.encoding.as_deref() != Some("base64") {
        return Err(reply.fail(format!(
            "list entry: contentEncoding is {:?}, want \"base64\"",
            entry.encoding
        )));
    }
    if let Some(size) = entry.size.filter(|s| *s != bytes.len() as u64) {
        return Err(reply.fail(format!(
            "list entry: size is {size}, the file holds {} bytes",
            bytes.len()
        )));
    }

    // A text write is untouched by the extension: no encoding, or `utf-8`.
    let text = ctx.path("beside-the-image.md");
    let reply = a.put(&text, "# text").send().await?;
    let file = reply.expect_file(&text)?;
    if file.encoding.as_deref().is_some_and(|e| e != "utf-8") {
        return Err(reply.fail(format!(
            "a text write reads back with contentEncoding {:?}",
            file.encoding
        )));
    }
    let reply = a
        .put_json(
            &text,
            &json!({"content": "# text", "contentEncoding": "utf-8"}),
        )
        .send()
        .await?;
    let file = reply
        .expect_file(&text)
        .map_err(|o| o.context("an explicit contentEncoding utf-8"))?;
    if file.content.as_deref() != Some("# text") || file.encoding.as_deref() == Some("base64") {
        return Err(reply.fail("an explicit utf-8 write did not read back as the same text"));
    }
    Ok(Outcome::pass(format!(
        "{} bytes (NUL, invalid UTF-8) read back as the same base64 with contentType image/png",
        bytes.len()
    )))
}

/// WS-BIN-002
pub(crate) async fn malformed_base64_refused(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("malformed.bin");
    let bodies = [
        (
            "unpadded",
            json!({"content": "AAE", "contentEncoding": "base64"}),
        ),
        (
            "a line break",
            json!({"content": "AAAA\nAAAA", "contentEncoding": "base64"}),
        ),
        (
            "a trailing line break",
            json!({"content": "AAAA\r\n", "contentEncoding": "base64"}),
        ),
        (
            "a space",
            json!({"content": "AA AA===", "contentEncoding": "base64"}),
        ),
        (
            "unused bits set",
            json!({"content": "AB==", "contentEncoding": "base64"}),
        ),
        (
            "padding inside",
            json!({"content": "AA==AA==", "contentEncoding": "base64"}),
        ),
        (
            "the URL-safe alphabet",
            json!({"content": "-_-_", "contentEncoding": "base64"}),
        ),
        (
            "a character outside base64",
            json!({"content": "AA@A", "contentEncoding": "base64"}),
        ),
        (
            "an unknown encoding",
            json!({"content": "AAAA", "contentEncoding": "base32"}),
        ),
        (
            "an encoding in capitals",
            json!({"content": "AAAA", "contentEncoding": "BASE64"}),
        ),
        (
            "a null encoding",
            json!({"content": "AAAA", "contentEncoding": null}),
        ),
    ];
    for (what, body) in &bodies {
        let reply = a.put_json(&path, body).send().await?;
        reply
            .expect_error(400, "validation_error")
            .map_err(|o| o.context(what))?;
    }
    expect_absent(&a, &path, "refused base64 bodies").await?;
    Ok(Outcome::pass(format!(
        "{} malformed bodies answer 400 validation_error and store nothing",
        bodies.len()
    )))
}

/// WS-BIN-003
pub(crate) async fn limit_counts_decoded_bytes(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let Some(limit) = ctx.workspace_limit("maxFileBytes") else {
        return Err(Outcome::inapplicable("maxFileBytes is not advertised"));
    };
    if limit > MAX_EXERCISED_FILE_BYTES {
        return Ok(Outcome::unobservable(format!(
            "maxFileBytes = {limit} is above the {MAX_EXERCISED_FILE_BYTES} bytes the runner writes"
        )));
    }
    let limit = usize::try_from(limit)
        .map_err(|_| Outcome::unobservable("maxFileBytes does not fit in memory"))?;
    let body_of = |len: usize| {
        let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8 | 0x80).collect();
        json!({"content": wsp_types::base64_encode(&bytes), "contentEncoding": "base64"})
    };
    let (at, over) = (body_of(limit), body_of(limit + 1));
    let needed = serde_json::to_vec(&over).map_or(usize::MAX, |b| b.len()) as u64;
    if let Some(max_body) = ctx
        .discovery()?
        .get("limits")
        .and_then(|l| l.get("maxRequestBodyBytes"))
        .and_then(|v| v.as_u64())
        .filter(|max| *max < needed)
    {
        return Ok(Outcome::unobservable(format!(
            "maxRequestBodyBytes = {max_body} is below the {needed}-byte body of maxFileBytes + 1 bytes in base64"
        )));
    }
    let path = ctx.path("limit.bin");
    let reply = a.put_json(&path, &over).send().await?;
    let details = reply
        .expect_error(413, "workspace_too_large")
        .map_err(|o| o.context(&format!("{} bytes", limit + 1)))?;
    if details.get("limit").and_then(|v| v.as_str()) != Some("maxFileBytes") {
        return Err(reply.fail(format!(
            "details.limit is {:?}, expected \"maxFileBytes\"",
            details.get("limit")
        )));
    }
    expect_absent(&a, &path, "a refused oversized binary create").await?;
    // Exactly the limit in bytes: its base64 is a third longer, and is accepted.
    let reply = a.put_json(&path, &at).send().await?;
    let file = reply.expect_file(&path).map_err(|o| {
        o.context(&format!(
            "exactly maxFileBytes = {limit} bytes, sent as {} base64 characters",
            at["content"].as_str().map_or(0, str::len)
        ))
    })?;
    if file.content.as_deref() != at["content"].as_str() {
        return Err(reply.fail("the stored base64 differs from what was written"));
    }
    let reply = a.put_json(&path, &over).send().await?;
    reply
        .expect_error(413, "workspace_too_large")
        .map_err(|o| o.context("an oversized binary replace"))?;
    expect_unchanged(&a, &path, &file, "a refused oversized binary replace").await?;
    Ok(Outcome::pass(format!(
        "maxFileBytes = {limit} counts decoded bytes: {limit} accepted, {} refused with 413",
        limit + 1
    )))
}
