//! WIRE §2: credentials and scopes.

use super::{create, expect_absent, expect_unchanged};
use crate::outcome::Outcome;
use crate::scenario::{Caller, Ctx, ScenarioResult};

/// List, get, put and delete as `caller` must all answer 401; A's file must be unchanged.
async fn all_unauthenticated(ctx: &Ctx, caller: Caller<'_>, who: &str) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("guarded.md");
    let new_path = ctx.path("not-created.md");
    let file = create(&a, &path, "guarded").await?;
    let calls = [
        ("list", caller.list(None)),
        ("list with prefix", caller.list(Some(&ctx.prefix()))),
        ("get", caller.get(&path)),
        ("put", caller.put(&path, "overwritten")),
        ("put new", caller.put(&new_path, "created")),
        ("delete", caller.delete(&path)),
    ];
    for (what, call) in calls {
        let reply = call.send().await?;
        reply
            .expect_error(401, "unauthenticated")
            .map_err(|o| o.context(&format!("{what} {who}")))?;
    }
    expect_unchanged(&a, &path, &file, &format!("writes {who}")).await?;
    expect_absent(&a, &new_path, &format!("a create {who}")).await?;
    Ok(Outcome::pass(format!(
        "every operation {who} answers 401 unauthenticated and changes nothing"
    )))
}

/// WS-AUTH-001
pub(crate) async fn no_key(ctx: &Ctx) -> ScenarioResult {
    all_unauthenticated(ctx, ctx.anonymous(), "without a key").await
}

/// WS-AUTH-002
pub(crate) async fn unknown_key(ctx: &Ctx) -> ScenarioResult {
    let key = format!("wsp-conformance-unknown-{}", ctx.shared.run_id);
    all_unauthenticated(ctx, ctx.with_key(&key), "with an unknown key").await
}

/// WS-AUTH-003
pub(crate) async fn malformed_authorization(ctx: &Ctx) -> ScenarioResult {
    let a_key = ctx
        .config()
        .key_a
        .clone()
        .ok_or_else(|| Outcome::blocked("needs owner A's key"))?;
    let values = [
        "Basic dXNlcjpwYXNzd29yZA==".to_string(),
        "Bearer".to_string(),
        "Bearer ".to_string(),
        format!("Token {a_key}"),
        format!("Bearer {a_key} extra"),
        a_key.clone(),
    ];
    for value in &values {
        let reply = ctx
            .anonymous()
            .list(None)
            .header("Authorization", value.clone())
            .send()
            .await?;
        let shown = value.replace(&a_key, "<key A>");
        reply
            .expect_error(401, "unauthenticated")
            .map_err(|o| o.context(&format!("Authorization: {shown}")))?;
    }
    Ok(Outcome::pass(
        "other schemes, empty bearer and a bare key answer 401",
    ))
}

/// WS-AUTH-006
pub(crate) async fn challenge_names_bearer(ctx: &Ctx) -> ScenarioResult {
    let unknown = format!("wsp-conformance-unknown-{}", ctx.shared.run_id);
    let path = ctx.path("challenge.md");
    let calls = [
        ("list without a key", ctx.anonymous().list(None)),
        ("get without a key", ctx.anonymous().get(&path)),
        (
            "list with an unknown key",
            ctx.with_key(&unknown).list(None),
        ),
    ];
    for (what, call) in calls {
        let reply = call.send().await?;
        reply
            .expect_error(401, "unauthenticated")
            .map_err(|o| o.context(what))?;
        // RFC 9110 §11.6.1: a 401 carries a challenge; RFC 6750 §3 names the scheme.
        let challenge = reply.header("WWW-Authenticate").unwrap_or_default();
        let scheme = challenge.split([' ', ',']).next().unwrap_or_default();
        if !scheme.eq_ignore_ascii_case("Bearer") {
            return Err(reply.fail(format!(
                "{what}: 401 with WWW-Authenticate {challenge:?}, expected a Bearer challenge"
            )));
        }
    }
    Ok(Outcome::pass(
        "every 401 carries a WWW-Authenticate: Bearer challenge",
    ))
}

/// WS-AUTH-004
pub(crate) async fn read_only_cannot_write(ctx: &Ctx) -> ScenarioResult {
    let ro = ctx.as_readonly()?;
    let a = ctx.as_a()?;
    let path = ctx.path("read-only-target.md");
    let file = create(&a, &path, "protected").await?;
    let calls = [
        ("put", ro.put(&path, "overwritten")),
        ("put new", ro.put(&ctx.path("ro-new.md"), "x")),
        ("delete", ro.delete(&path)),
    ];
    for (what, call) in calls {
        let reply = call.send().await?;
        let details = reply
            .expect_error(403, "forbidden")
            .map_err(|o| o.context(what))?;
        match details.get("requiredScope").and_then(|v| v.as_str()) {
            Some("workspace:write") => {}
            other => {
                return Err(reply.fail(format!(
                    "{what}: details.requiredScope is {other:?}, expected \"workspace:write\""
                )));
            }
        }
    }
    expect_unchanged(&a, &path, &file, "writes with the read-only key").await?;
    Ok(Outcome::pass(
        "PUT and DELETE answer 403 forbidden, requiredScope workspace:write",
    ))
}

/// WS-AUTH-005
pub(crate) async fn read_only_can_read(ctx: &Ctx) -> ScenarioResult {
    let ro = ctx.as_readonly()?;
    ro.list(None)
        .send()
        .await?
        .expect_list()
        .map_err(|o| o.context("list"))?;
    ro.get(&ctx.path("missing.md"))
        .send()
        .await?
        .expect_error(404, "not_found")
        .map_err(|o| o.context("get of a missing file"))?;
    Ok(Outcome::pass(
        "the read-only key lists (200) and reads (404 for a missing file, not 403)",
    ))
}
