//! RFC 0059 §C and WIRE §4: DELETE, tombstones, and new lives after a delete.

use super::{create, expect_absent, expect_conflict};
use crate::outcome::Outcome;
use crate::scenario::{Ctx, ScenarioResult};

/// WS-DEL-001
pub(crate) async fn delete_then_404(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("doomed.md");
    create(&a, &path, "x").await?;
    let reply = a.delete(&path).send().await?;
    reply.expect_status(204)?;
    if !reply.body.is_empty() {
        return Err(reply.fail(format!("204 with a {}-byte body", reply.body.len())));
    }
    expect_absent(&a, &path, "DELETE").await?;
    Ok(Outcome::pass("204 with no body, then 404"))
}

/// WS-DEL-002
pub(crate) async fn delete_absent_404(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let never = ctx.path("never.md");
    a.delete(&never)
        .send()
        .await?
        .expect_error(404, "not_found")
        .map_err(|o| o.context("never written"))?;
    let twice = ctx.path("twice.md");
    create(&a, &twice, "x").await?;
    a.delete(&twice).send().await?.expect_status(204)?;
    a.delete(&twice)
        .send()
        .await?
        .expect_error(404, "not_found")
        .map_err(|o| o.context("second DELETE"))?;
    Ok(Outcome::pass(
        "absent and already deleted paths answer 404 not_found",
    ))
}

/// WS-DEL-003
pub(crate) async fn old_life_versions_404(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("lives.md");
    create(&a, &path, "life 1 v1").await?;
    a.put(&path, "life 1 v2").send().await?.expect_file(&path)?;
    a.delete(&path).send().await?.expect_status(204)?;
    for version in [1, 2] {
        let reply = a.get_version(&path, version).send().await?;
        reply
            .expect_error(404, "not_found")
            .map_err(|o| o.context(&format!("?version={version} of the deleted life")))?;
    }
    create(&a, &path, "life 2 v1").await?;
    let reply = a.get_version(&path, 1).send().await?;
    let file = reply.expect_file(&path)?;
    if file.content.as_deref() != Some("life 2 v1") {
        return Err(reply.fail(format!(
            "?version=1 after re-creation serves {:?}, the old life",
            file.content
        )));
    }
    a.get_version(&path, 2)
        .send()
        .await?
        .expect_error(404, "not_found")
        .map_err(|o| o.context("?version=2 after re-creation at version 1"))?;
    Ok(Outcome::pass("the deleted life is never served again"))
}

/// WS-DEL-004
pub(crate) async fn recreate_fresh_etag(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("reborn.md");
    let mut earlier = Vec::new();
    for life in 1..=3 {
        let first = a.put(&path, "same content every life").send().await?;
        let v1 = first.expect_file(&path)?;
        if v1.version != 1 {
            return Err(first.fail(format!(
                "life {life} started at version {}, not 1",
                v1.version
            )));
        }
        let second = a.put(&path, "second").send().await?;
        let v2 = second.expect_file(&path)?;
        for (reply, etag) in [(&first, &v1.etag), (&second, &v2.etag)] {
            if earlier.contains(etag) {
                return Err(reply.fail(format!(
                    "life {life} reuses etag {etag} of an earlier life: a stale If-Match could succeed"
                )));
            }
        }
        earlier.extend([v1.etag, v2.etag]);
        a.delete(&path).send().await?.expect_status(204)?;
    }
    Ok(Outcome::pass(
        "three lives start at version 1 with six distinct etags",
    ))
}

/// WS-DEL-005
pub(crate) async fn stale_if_match_across_delete(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("across.md");
    let old = create(&a, &path, "same").await?;
    a.delete(&path).send().await?.expect_status(204)?;
    let reply = a
        .put(&path, "after delete")
        .header("If-Match", old.etag.clone())
        .send()
        .await?;
    expect_conflict(&reply, 0)
        .map_err(|o| o.context("If-Match of the deleted life, path absent"))?;
    expect_absent(&a, &path, "a stale conditional create").await?;
    let new = create(&a, &path, "same").await?;
    let reply = a
        .put(&path, "stale writer")
        .header("If-Match", old.etag.clone())
        .send()
        .await?;
    expect_conflict(&reply, new.version)
        .map_err(|o| o.context("If-Match of the deleted life, new life live"))?;
    let reply = a
        .delete(&path)
        .header("If-Match", old.etag.clone())
        .send()
        .await?;
    expect_conflict(&reply, new.version)
        .map_err(|o| o.context("conditional DELETE with the old etag"))?;
    let reply = a
        .put(&path, "fresh writer")
        .header("If-Match", new.etag.clone())
        .send()
        .await?;
    reply.expect_file(&path)?;
    Ok(Outcome::pass(
        "an etag from before a delete never matches again",
    ))
}
