//! RFC 0059 §A: the `workspace` capability block; WIRE §3: a host without it.

use serde_json::Value;

use crate::expect::{kind, positive_integer};
use crate::outcome::Outcome;
use crate::scenario::{Ctx, ScenarioResult};

const WORKSPACE_KEYS: [&str; 5] = [
    "supported",
    "versioned",
    "maxFileBytes",
    "maxFiles",
    "maxVersions",
];

fn block(ctx: &Ctx) -> Result<&serde_json::Map<String, Value>, Outcome> {
    let doc = ctx.discovery()?;
    match doc.get("workspace") {
        Some(Value::Object(map)) => Ok(map),
        Some(other) => Err(ctx
            .discovery_reply()?
            .fail(format!("`workspace` is {}, not an object", kind(other)))),
        None => Err(Outcome::inapplicable("no `workspace` block")),
    }
}

/// WS-CAP-001
pub(crate) async fn only_known_keys(ctx: &Ctx) -> ScenarioResult {
    let ws = block(ctx)?;
    let reply = ctx.discovery_reply()?;
    let extra: Vec<&String> = ws
        .keys()
        .filter(|k| !WORKSPACE_KEYS.contains(&k.as_str()))
        .collect();
    if !extra.is_empty() {
        return Err(reply.fail(format!(
            "workspace has keys outside the five allowed: {extra:?}"
        )));
    }
    match ws.get("supported") {
        Some(Value::Bool(_)) => Ok(Outcome::pass(format!(
            "workspace keys {:?}",
            ws.keys().collect::<Vec<_>>()
        ))),
        Some(other) => Err(reply.fail(format!(
            "workspace.supported is {}, not a boolean",
            kind(other)
        ))),
        None => Err(reply.fail("workspace.supported is missing (required)")),
    }
}

/// WS-CAP-002
pub(crate) async fn value_types(ctx: &Ctx) -> ScenarioResult {
    let ws = block(ctx)?;
    let reply = ctx.discovery_reply()?;
    if let Some(v) = ws.get("versioned")
        && !v.is_boolean()
    {
        return Err(reply.fail(format!("workspace.versioned is {}, not a boolean", kind(v))));
    }
    let mut seen = Vec::new();
    for key in ["maxFileBytes", "maxFiles", "maxVersions"] {
        if let Some(v) = ws.get(key) {
            let n =
                positive_integer(v).map_err(|why| reply.fail(format!("workspace.{key}: {why}")))?;
            seen.push(format!("{key}={n}"));
        }
    }
    Ok(Outcome::pass(if seen.is_empty() {
        "no limits advertised; versioned is a boolean when present".to_string()
    } else {
        format!("positive integers: {}", seen.join(", "))
    }))
}

/// WS-CAP-003
pub(crate) async fn versioned_has_max_versions(ctx: &Ctx) -> ScenarioResult {
    let ws = block(ctx)?;
    match ws.get("maxVersions") {
        Some(v) => {
            let n = positive_integer(v).map_err(|why| match ctx.discovery_reply() {
                Ok(reply) => reply.fail(format!("workspace.maxVersions: {why}")),
                Err(o) => o,
            })?;
            Ok(Outcome::pass(format!("versioned with maxVersions = {n}")))
        }
        None => Err(ctx.discovery_reply()?.fail(
            "versioned: true without maxVersions: clients cannot know how much history is retained",
        )),
    }
}

/// WS-CAP-004
pub(crate) async fn unsupported_answers_501(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("unsupported.md");
    let calls = [
        ("list", a.list(None)),
        ("get", a.get(&path)),
        ("put", a.put(&path, "x")),
        ("delete", a.delete(&path)),
    ];
    for (what, call) in calls {
        let reply = call.send().await?;
        reply
            .expect_error(501, "capability_not_provided")
            .map_err(|o| o.context(what))?;
    }
    Ok(Outcome::pass(
        "list, get, put and delete answer 501 capability_not_provided",
    ))
}
