//! RFC 0059 §C and WIRE §3/§4: `If-Match` and `If-None-Match`.

use super::{create, expect_absent, expect_conflict, expect_unchanged};
use crate::outcome::Outcome;
use crate::scenario::{Ctx, ScenarioResult};

/// WS-ETAG-001
pub(crate) async fn stale_if_match_conflicts(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("DIRECTIVES.md");
    let v1 = create(&a, &path, "v1").await?;
    let v2 = a.put(&path, "v2").send().await?.expect_file(&path)?;
    let v3 = a.put(&path, "v3").send().await?.expect_file(&path)?;
    let reply = a
        .put(&path, "from a stale reader")
        .header("If-Match", v1.etag.clone())
        .send()
        .await?;
    expect_conflict(&reply, v3.version)?;
    let reply = a
        .put(&path, "from a stale reader")
        .header("If-Match", v2.etag.clone())
        .send()
        .await?;
    expect_conflict(&reply, v3.version)?;
    expect_unchanged(&a, &path, &v3, "two stale writes").await?;
    Ok(Outcome::pass(format!(
        "409 workspace_conflict with currentVersion {} and nothing written",
        v3.version
    )))
}

/// WS-ETAG-002
pub(crate) async fn fresh_if_match_succeeds(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("DIRECTIVES.md");
    let mut live = create(&a, &path, "v1").await?;
    for content in ["v2", "v3", "v4"] {
        let reply = a
            .put(&path, content)
            .header("If-Match", live.etag.clone())
            .send()
            .await?;
        let file = reply.expect_file(&path)?;
        if file.version != live.version + 1 {
            return Err(reply.fail(format!("version {} after {}", file.version, live.version)));
        }
        live = file;
    }
    Ok(Outcome::pass(
        "three conditional writes gave versions 2, 3, 4",
    ))
}

/// WS-ETAG-003
pub(crate) async fn if_match_star_existing(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("star.md");
    let v1 = create(&a, &path, "v1").await?;
    let reply = a.put(&path, "v2").header("If-Match", "*").send().await?;
    let v2 = reply.expect_file(&path)?;
    if v2.version != v1.version + 1 {
        return Err(reply.fail(format!("If-Match: * gave version {}", v2.version)));
    }
    Ok(Outcome::pass("If-Match: * replaced the live version"))
}

/// WS-ETAG-004
pub(crate) async fn if_match_absent_conflicts(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("absent.md");
    let other = create(&a, &ctx.path("other.md"), "x").await?;
    for value in [
        "*".to_string(),
        other.etag.clone(),
        "\"wsp-conformance-never\"".to_string(),
    ] {
        let reply = a
            .put(&path, "x")
            .header("If-Match", value.clone())
            .send()
            .await?;
        expect_conflict(&reply, 0).map_err(|o| o.context(&format!("If-Match: {value}")))?;
    }
    expect_absent(&a, &path, "refused conditional creates").await?;
    Ok(Outcome::pass(
        "If-Match on an absent path: 409 with currentVersion 0",
    ))
}

/// WS-ETAG-005
pub(crate) async fn if_none_match_star(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("create-only.md");
    let reply = a
        .put(&path, "first")
        .header("If-None-Match", "*")
        .send()
        .await?;
    let first = reply.expect_file(&path)?;
    if first.version != 1 {
        return Err(reply.fail(format!(
            "If-None-Match: * created version {}",
            first.version
        )));
    }
    let replaced = a.put(&path, "second").send().await?.expect_file(&path)?;
    let reply = a
        .put(&path, "third")
        .header("If-None-Match", "*")
        .send()
        .await?;
    expect_conflict(&reply, replaced.version)?;
    expect_unchanged(&a, &path, &replaced, "If-None-Match: * on an existing file").await?;
    Ok(Outcome::pass(
        "creates an absent path; 409 with the live version on an existing one",
    ))
}

/// WS-ETAG-006
pub(crate) async fn if_match_list(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("list.md");
    let v1 = create(&a, &path, "v1").await?;
    let list = format!("\"wsp-conformance-other\", {}", v1.etag);
    let reply = a
        .put(&path, "v2")
        .header("If-Match", list.clone())
        .send()
        .await?;
    let v2 = reply
        .expect_file(&path)
        .map_err(|o| o.context(&format!("If-Match: {list}")))?;
    let stale_list = format!("\"wsp-conformance-other\", {}", v1.etag);
    let reply = a
        .put(&path, "v3")
        .header("If-Match", stale_list)
        .send()
        .await?;
    expect_conflict(&reply, v2.version)?;
    Ok(Outcome::pass(
        "a list matches when one member is live, and not otherwise",
    ))
}

/// WS-ETAG-007
pub(crate) async fn delete_if_match(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("delete-conditional.md");
    let v1 = create(&a, &path, "v1").await?;
    let v2 = a.put(&path, "v2").send().await?.expect_file(&path)?;
    let reply = a
        .delete(&path)
        .header("If-Match", v1.etag.clone())
        .send()
        .await?;
    expect_conflict(&reply, v2.version)?;
    expect_unchanged(&a, &path, &v2, "a stale conditional DELETE").await?;
    let reply = a
        .delete(&path)
        .header("If-Match", v2.etag.clone())
        .send()
        .await?;
    reply.expect_status(204)?;
    expect_absent(&a, &path, "a fresh conditional DELETE").await?;
    Ok(Outcome::pass(
        "stale If-Match on DELETE: 409 and kept; fresh: 204",
    ))
}

/// WS-ETAG-008
pub(crate) async fn exact_comparison(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("exact.md");
    let v1 = create(&a, &path, "v1").await?;
    let mut altered = v1.etag.clone();
    alter_one_char(&mut altered);
    let mut variants = vec![altered];
    if !v1.etag.starts_with("W/") {
        variants.push(format!("W/{}", v1.etag));
    }
    for value in variants {
        let reply = a
            .put(&path, "v2")
            .header("If-Match", value.clone())
            .send()
            .await?;
        expect_conflict(&reply, 1).map_err(|o| o.context(&format!("If-Match: {value}")))?;
    }
    expect_unchanged(&a, &path, &v1, "near-miss etags").await?;
    Ok(Outcome::pass("an altered or weak etag does not match"))
}

/// Changes one character of an etag: the last one inside the quotes, or the last one.
fn alter_one_char(etag: &mut String) {
    let mut chars: Vec<char> = etag.chars().collect();
    let quoted = chars.len() > 2 && chars.last() == Some(&'"');
    let Some(at) = chars.len().checked_sub(if quoted { 2 } else { 1 }) else {
        etag.push('0');
        return;
    };
    chars[at] = if chars[at] == '0' { '1' } else { '0' };
    *etag = chars.into_iter().collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn altering_changes_exactly_one_character() {
        for (etag, expect) in [
            ("\"abc\"", "\"ab0\""),
            ("\"a0\"", "\"a1\""),
            ("v3", "v0"),
            ("", "0"),
            ("\"é\"", "\"0\""),
        ] {
            let mut e = etag.to_string();
            alter_one_char(&mut e);
            assert_eq!(e, expect);
        }
    }
}
