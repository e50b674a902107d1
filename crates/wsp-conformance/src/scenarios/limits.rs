//! RFC 0059 §A and WIRE §3: `maxFileBytes` (in UTF-8 bytes, judged on the content, not the
//! escaped body) and `maxFiles`.

use super::{create, expect_absent, expect_unchanged};
use crate::expect::FileView;
use crate::outcome::Outcome;
use crate::scenario::{Caller, Ctx, ScenarioResult};
use crate::transport::Reply;

/// The largest `maxFileBytes` the runner exercises (it sends up to six times this).
const MAX_EXERCISED_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// The most files the `maxFiles` check writes.
const MAX_FILES_WRITES: u64 = 300;

fn file_limit(ctx: &Ctx) -> Result<usize, Outcome> {
    let Some(limit) = ctx.workspace_limit("maxFileBytes") else {
        return Err(Outcome::inapplicable("maxFileBytes is not advertised"));
    };
    if limit > MAX_EXERCISED_FILE_BYTES {
        return Err(Outcome::unobservable(format!(
            "maxFileBytes = {limit} is above the {MAX_EXERCISED_FILE_BYTES} bytes the runner sends"
        )));
    }
    usize::try_from(limit).map_err(|_| Outcome::unobservable("maxFileBytes does not fit in memory"))
}

fn expect_too_large(reply: &Reply, limit: &str) -> Result<(), Outcome> {
    let details = reply.expect_error(413, "workspace_too_large")?;
    match details.get("limit").and_then(|v| v.as_str()) {
        Some(got) if got == limit => Ok(()),
        got => Err(reply.fail(format!("details.limit is {got:?}, expected {limit:?}"))),
    }
}

/// Over then at the limit: over is refused and writes nothing, at is stored whole.
async fn over_then_at(
    a: &Caller<'_>,
    path: &str,
    over: &str,
    at: &str,
) -> Result<FileView, Outcome> {
    let reply = a.put(path, over).send().await?;
    expect_too_large(&reply, "maxFileBytes")
        .map_err(|o| o.context(&format!("{} bytes", over.len())))?;
    expect_absent(a, path, "a refused oversized create").await?;
    let reply = a.put(path, at).send().await?;
    let file = reply
        .expect_file(path)
        .map_err(|o| o.context(&format!("exactly {} bytes", at.len())))?;
    if file.content.as_deref() != Some(at) {
        return Err(reply.fail("the stored content differs from what was written"));
    }
    let reply = a.put(path, over).send().await?;
    expect_too_large(&reply, "maxFileBytes").map_err(|o| o.context("oversized replace"))?;
    expect_unchanged(a, path, &file, "a refused oversized replace").await?;
    Ok(file)
}

/// WS-LIM-001
pub(crate) async fn max_file_bytes(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let limit = file_limit(ctx)?;
    let path = ctx.path("big.md");
    over_then_at(&a, &path, &"x".repeat(limit + 1), &"x".repeat(limit)).await?;
    Ok(Outcome::pass(format!(
        "{} bytes: 413 workspace_too_large (limit maxFileBytes); {limit} bytes: 200",
        limit + 1
    )))
}

/// WS-LIM-002
pub(crate) async fn counts_utf8_bytes(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let limit = file_limit(ctx)?;
    if limit < 3 {
        return Ok(Outcome::unobservable(
            "maxFileBytes below 3 leaves no room for a 3-byte character",
        ));
    }
    // '€' is 3 bytes: `at` is exactly `limit` bytes in far fewer characters.
    let at = format!("{}{}", "€".repeat(limit / 3), "x".repeat(limit % 3));
    let over = format!("{at}x");
    debug_assert_eq!(at.len(), limit);
    let path = ctx.path("euro.md");
    over_then_at(&a, &path, &over, &at).await?;
    Ok(Outcome::pass(format!(
        "{} bytes in {} characters refused; {limit} bytes accepted",
        over.len(),
        over.chars().count()
    )))
}

/// WS-LIM-003
pub(crate) async fn escaping_does_not_count(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let limit = file_limit(ctx)?;
    // U+0001 is one byte of content and six bytes of JSON (`\u0001`).
    let at = "\u{1}".repeat(limit);
    let over = "\u{1}".repeat(limit + 1);
    let path = ctx.path("escaped.md");
    over_then_at(&a, &path, &over, &at).await?;
    Ok(Outcome::pass(format!(
        "content of {limit} bytes in a body of about {} bytes accepted; one more byte gives workspace_too_large",
        6 * limit
    )))
}

/// WS-LIM-004
pub(crate) async fn max_files(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let Some(limit) = ctx.workspace_limit("maxFiles") else {
        return Err(Outcome::inapplicable("maxFiles is not advertised"));
    };
    let existing = a.list(None).send().await?.expect_list()?.len() as u64;
    let room = limit.saturating_sub(existing);
    if room + 1 > MAX_FILES_WRITES {
        return Ok(Outcome::unobservable(format!(
            "maxFiles = {limit} with {existing} files needs {} writes; the runner makes at most {MAX_FILES_WRITES}",
            room + 1
        )));
    }
    let mut written = Vec::new();
    let result = fill(ctx, &a, room, &mut written).await;
    // Free the room again whatever happened: later scenarios need it.
    for path in &written {
        let _ = a.delete(path).send().await;
    }
    result?;
    Ok(Outcome::pass(format!(
        "{existing} + {room} files stored; the next new path: 413 workspace_too_large (limit maxFiles)"
    )))
}

async fn fill(
    ctx: &Ctx,
    a: &Caller<'_>,
    room: u64,
    written: &mut Vec<String>,
) -> Result<(), Outcome> {
    for n in 0..room {
        let path = ctx.path(&format!("f{n:04}.md"));
        create(a, &path, "x")
            .await
            .map_err(|o| o.context(&format!("file {} of {room}", n + 1)))?;
        written.push(path);
    }
    let path = ctx.path("one-too-many.md");
    let reply = a.put(&path, "x").send().await?;
    if reply.status < 300 {
        written.push(path.clone());
    }
    expect_too_large(&reply, "maxFiles")?;
    if let Some(first) = written.first() {
        // Replacing an existing path adds no file: it must still work at the limit.
        a.put(first, "y")
            .send()
            .await?
            .expect_file(first)
            .map_err(|o| o.context("replace at the limit"))?;
    }
    Ok(())
}

/// WS-LIM-005
pub(crate) async fn request_body_limit(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let limit = ctx
        .discovery()?
        .get("limits")
        .and_then(|l| l.get("maxRequestBodyBytes"))
        .and_then(|v| v.as_u64())
        .ok_or_else(|| Outcome::inapplicable("limits.maxRequestBodyBytes is not advertised"))?;
    if limit > 6 * MAX_EXERCISED_FILE_BYTES {
        return Ok(Outcome::unobservable(format!(
            "maxRequestBodyBytes = {limit} is above what the runner sends"
        )));
    }
    let limit = usize::try_from(limit)
        .map_err(|_| Outcome::unobservable("maxRequestBodyBytes does not fit in memory"))?;
    let envelope = br#"{"content":""}"#.len();
    if limit < envelope {
        return Ok(Outcome::unobservable(format!(
            "maxRequestBodyBytes = {limit} is smaller than the smallest PUT body"
        )));
    }
    let path = ctx.path("huge-body.md");
    let content = "x".repeat((limit + 1).saturating_sub(envelope));
    let reply = a.put(&path, &content).send().await?;
    if reply.request.body_bytes != limit + 1 {
        return Err(reply.fail(format!(
            "runner defect: built a {}-byte body, not {}",
            reply.request.body_bytes,
            limit + 1
        )));
    }
    expect_too_large(&reply, "requestBody")
        .map_err(|o| o.context(&format!("a {}-byte body", limit + 1)))?;
    expect_absent(&a, &path, "a refused oversized body").await?;
    Ok(Outcome::pass(format!(
        "a {}-byte body: 413 workspace_too_large with details.limit requestBody",
        limit + 1
    )))
}
