//! RFC 0059 §B/§C and WIRE §4: GET of one file.

use super::create;
use crate::outcome::Outcome;
use crate::scenario::{Ctx, ScenarioResult};

/// WS-GET-001
pub(crate) async fn all_fields_and_etag_header(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("fields.md");
    create(&a, &path, "fields").await?;
    let reply = a.get(&path).send().await?;
    let file = reply.expect_file(&path)?;
    let map = reply.json_object()?;
    let missing: Vec<&str> = crate::expect::FILE_KEYS
        .iter()
        .copied()
        .filter(|k| !map.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        return Err(reply.fail(format!("WorkspaceFile lacks {missing:?}")));
    }
    match reply.header("etag") {
        Some(header) if header == file.etag => {}
        Some(header) => {
            return Err(reply.fail(format!(
                "ETag header {header:?} differs from etag {:?}",
                file.etag
            )));
        }
        None => return Err(reply.fail("no ETag header")),
    }
    let quoted = file.etag.trim_start_matches("W/");
    if quoted.len() < 2 || !quoted.starts_with('"') || !quoted.ends_with('"') {
        return Err(reply.fail(format!("etag {:?} is not a quoted entity-tag", file.etag)));
    }
    Ok(Outcome::pass(format!("six fields; ETag: {}", file.etag)))
}

/// WS-GET-002
pub(crate) async fn absent_is_404(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("never-written.md");
    let reply = a.get(&path).send().await?;
    reply.expect_error(404, "not_found")?;
    Ok(Outcome::pass("404 not_found"))
}

/// WS-GET-003
pub(crate) async fn put_answer_equals_get(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("same.md");
    let put = a.put(&path, "same").send().await?;
    put.expect_file(&path)?;
    let get = a.get(&path).send().await?;
    get.expect_file(&path)?;
    let (written, read) = (put.json()?, get.json()?);
    if written != read {
        return Err(
            Outcome::fail(format!("PUT answered {written} but GET answers {read}"))
                .with(put.exchange())
                .with(get.exchange()),
        );
    }
    Ok(Outcome::pass("the PUT answer is the stored file"))
}
