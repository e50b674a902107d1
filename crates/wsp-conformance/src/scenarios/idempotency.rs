//! WIRE §3/§4: `Idempotency-Key` on PUT.

use serde_json::json;

use crate::outcome::Outcome;
use crate::scenario::{Ctx, ScenarioResult};

fn key(ctx: &Ctx, n: u32) -> String {
    format!(
        "wsp-conformance-{}-{}-{n}",
        ctx.shared.run_id,
        ctx.scenario.to_ascii_lowercase()
    )
}

/// WS-IDEM-001
pub(crate) async fn replay_same_answer(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("once.md");
    let k = key(ctx, 1);
    let first = a
        .put(&path, "exactly once")
        .header("Idempotency-Key", k.clone())
        .send()
        .await?;
    let file = first.expect_file(&path)?;
    let replay = a
        .put(&path, "exactly once")
        .header("Idempotency-Key", k.clone())
        .send()
        .await?;
    replay
        .expect_status(first.status)
        .map_err(|o| o.context("replay"))?;
    if replay.json()? != first.json()? {
        return Err(Outcome::fail("the replay answered a different body")
            .with(first.exchange())
            .with(replay.exchange()));
    }
    let reply = a.get(&path).send().await?;
    let now = reply.expect_file(&path)?;
    if now.version != file.version {
        return Err(reply.fail(format!(
            "after a replay the file is at version {}, expected {}",
            now.version, file.version
        )));
    }
    Ok(Outcome::pass(
        "the replay returns the first answer and writes nothing",
    ))
}

/// WS-IDEM-002
pub(crate) async fn mismatch_refused(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("mismatch.md");
    let k = key(ctx, 1);
    let file = a
        .put(&path, "first body")
        .header("Idempotency-Key", k.clone())
        .send()
        .await?
        .expect_file(&path)?;
    let reply = a
        .put(&path, "second body")
        .header("Idempotency-Key", k)
        .send()
        .await?;
    reply.expect_error(409, "idempotency_key_mismatch")?;
    super::expect_unchanged(&a, &path, &file, "a mismatched replay").await?;
    Ok(Outcome::pass(
        "same key, different body: 409 idempotency_key_mismatch, nothing written",
    ))
}

/// WS-IDEM-003
pub(crate) async fn validation_not_cached(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("uncached.md");
    let k = key(ctx, 1);
    let reply = a
        .put_json(&path, &json!({"content": "x", "unknown": 1}))
        .header("Idempotency-Key", k.clone())
        .send()
        .await?;
    reply.expect_error(400, "validation_error")?;
    let reply = a
        .put(&path, "x")
        .header("Idempotency-Key", k.clone())
        .send()
        .await?;
    let file = reply
        .expect_file(&path)
        .map_err(|o| o.context("valid request after a 400 with the same key"))?;
    if file.version != 1 {
        return Err(reply.fail(format!("version {}", file.version)));
    }
    let other = ctx.path("uncached-401.md");
    let k2 = key(ctx, 2);
    ctx.anonymous()
        .put(&other, "x")
        .header("Idempotency-Key", k2.clone())
        .send()
        .await?
        .expect_error(401, "unauthenticated")?;
    a.put(&other, "x")
        .header("Idempotency-Key", k2)
        .send()
        .await?
        .expect_file(&other)
        .map_err(|o| o.context("valid request after a 401 with the same key"))?;
    Ok(Outcome::pass(
        "400 and 401 answers are not replayed for the key",
    ))
}
