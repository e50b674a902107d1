//! RFC 0059 §C (`?version=N` when versioned), WIRE §3/§4, and retention (RFC 0059 §A with the
//! Phase-0 ruling: a versioned host retains at least `maxVersions`).

use super::create;
use crate::outcome::Outcome;
use crate::scenario::{Ctx, ScenarioResult};

/// The most writes a retention check makes; past it the behaviour is unobservable.
const MAX_RETENTION_WRITES: u64 = 300;

/// WS-VER-001
pub(crate) async fn historical_content(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("history.md");
    let contents = ["one", "two", "three"];
    let mut etags = Vec::new();
    for (i, content) in contents.iter().enumerate() {
        let reply = a.put(&path, content).send().await?;
        let file = reply.expect_file(&path)?;
        if file.version != i as u64 + 1 {
            return Err(reply.fail(format!("write {} gave version {}", i + 1, file.version)));
        }
        etags.push(file.etag);
    }
    let retained = ctx.workspace_limit("maxVersions").unwrap_or(u64::MAX);
    let mut checked = 0;
    for (i, content) in contents.iter().enumerate() {
        let version = i as u64 + 1;
        if contents.len() as u64 - version >= retained {
            continue; // older than the advertised retention
        }
        let reply = a.get_version(&path, version).send().await?;
        let file = reply
            .expect_file(&path)
            .map_err(|o| o.context(&format!("?version={version}")))?;
        if file.version != version || file.content.as_deref() != Some(content) {
            return Err(reply.fail(format!(
                "?version={version} answered version {} with content {:?}, expected {content:?}",
                file.version, file.content
            )));
        }
        if file.etag != etags[i] {
            return Err(reply.fail(format!(
                "?version={version} has etag {}, it was written as {}",
                file.etag, etags[i]
            )));
        }
        checked += 1;
    }
    Ok(Outcome::pass(format!(
        "{checked} historical versions served with their content and etag"
    )))
}

/// WS-VER-002
pub(crate) async fn bad_version_refused(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("bad-version.md");
    create(&a, &path, "x").await?;
    for bad in ["0", "-1", "abc", "1.5", "1e2", "%20"] {
        let reply = a.get_version(&path, bad).send().await?;
        reply
            .expect_error(400, "validation_error")
            .map_err(|o| o.context(&format!("?version={bad}")))?;
    }
    Ok(Outcome::pass(
        "?version=0, negative, non-integer and blank answer 400",
    ))
}

/// WS-VER-003
pub(crate) async fn future_version_404(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("future.md");
    create(&a, &path, "x").await?;
    for (target, version) in [
        (path.clone(), 2u64),
        (path.clone(), 999_999),
        (ctx.path("never.md"), 1),
    ] {
        let reply = a.get_version(&target, version).send().await?;
        reply
            .expect_error(404, "not_found")
            .map_err(|o| o.context(&format!("{target}?version={version}")))?;
    }
    Ok(Outcome::pass("versions never written answer 404 not_found"))
}

/// WS-VER-004
pub(crate) async fn retains_max_versions(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let Some(keep) = ctx.workspace_limit("maxVersions") else {
        return Err(Outcome::inapplicable("maxVersions is not advertised"));
    };
    let writes = keep + 1;
    if writes > MAX_RETENTION_WRITES {
        return Ok(Outcome::unobservable(format!(
            "maxVersions = {keep} needs {writes} writes; the runner makes at most {MAX_RETENTION_WRITES}"
        )));
    }
    let path = ctx.path("retained.md");
    for n in 1..=writes {
        let reply = a.put(&path, &format!("version {n}")).send().await?;
        let file = reply.expect_file(&path)?;
        if file.version != n {
            return Err(reply.fail(format!("write {n} gave version {}", file.version)));
        }
    }
    // `keep` versions counting the latest: writes-keep+1 ..= writes.
    for n in (writes - keep + 1)..=writes {
        let reply = a.get_version(&path, n).send().await?;
        let file = reply
            .expect_file(&path)
            .map_err(|o| o.context(&format!("?version={n} of {writes} with maxVersions {keep}")))?;
        if file.content.as_deref() != Some(format!("version {n}").as_str()) {
            return Err(reply.fail(format!("?version={n} has the wrong content")));
        }
    }
    Ok(Outcome::pass(format!(
        "the last {keep} of {writes} versions are served"
    )))
}

/// WS-VER-005
pub(crate) async fn versions_name_their_writer(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("written-by.md");
    for content in ["one", "two"] {
        a.put(&path, content).send().await?.expect_file(&path)?;
    }
    let who = |v: &serde_json::Value, place: &str| -> Result<String, Outcome> {
        match v.get("updatedBy") {
            Some(serde_json::Value::String(s)) if !s.is_empty() => Ok(s.clone()),
            other => Err(Outcome::fail(format!(
                "{place}: updatedBy is {other:?}, want a non-empty string"
            ))),
        }
    };
    let file = a.get(&path).send().await?;
    let mut names = vec![who(&file.json()?, "GET")?];
    let listed = a.list(Some(&path)).send().await?.json()?;
    let entry = listed["files"]
        .as_array()
        .and_then(|files| files.iter().find(|f| f["path"] == path.as_str()))
        .ok_or_else(|| Outcome::fail("the list does not have the file"))?;
    names.push(who(entry, "list entry")?);
    let history = a.history(&path).send().await?.json()?;
    for (i, version) in history["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        names.push(who(version, &format!("history entry {i}"))?);
    }
    if names.len() < 4 || names.iter().any(|n| *n != names[0]) {
        return Err(Outcome::fail(format!(
            "one key wrote both versions, yet updatedBy reads {names:?}"
        )));
    }
    Ok(Outcome::pass(format!(
        "the file, its list entry and both history entries name {:?}",
        names[0]
    )))
}
