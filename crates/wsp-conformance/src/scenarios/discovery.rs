//! WIRE §1: the discovery document and the served OpenAPI document.

use serde_json::Value;

use crate::expect::kind;
use crate::outcome::Outcome;
use crate::scenario::{Ctx, ScenarioResult};
use crate::transport::{DISCOVERY, OPENAPI, Reply};

/// The change feed, wsp's one Server-Sent Events stream.
const EVENTS: &str = "/v1/host/workspace/events";

fn is_json(reply: &Reply) -> bool {
    reply
        .header("content-type")
        .is_some_and(|ct| ct.to_ascii_lowercase().starts_with("application/json"))
}

/// WS-DISC-001
pub(crate) async fn answers_json(ctx: &Ctx) -> ScenarioResult {
    let reply = ctx.discovery_reply()?;
    reply.expect_status(200)?;
    if !is_json(reply) {
        return Err(reply.fail(format!(
            "Content-Type is {:?}, not application/json",
            reply.header("content-type").unwrap_or("absent")
        )));
    }
    ctx.discovery()?;
    Ok(Outcome::pass(
        "200 application/json object without credentials",
    ))
}

/// A JSON type test.
type TypeCheck = fn(&Value) -> bool;

/// WS-DISC-002
pub(crate) async fn required_fields(ctx: &Ctx) -> ScenarioResult {
    let doc = ctx.discovery()?;
    let reply = ctx.discovery_reply()?;
    let expect: [(&str, TypeCheck, &str); 4] = [
        (
            "protocolVersion",
            |v| v.as_str().is_some_and(|s| !s.is_empty()),
            "a non-empty string",
        ),
        ("supportedEnvelopes", Value::is_array, "an array"),
        ("schemaVersions", Value::is_object, "an object"),
        ("limits", Value::is_object, "an object"),
    ];
    for (key, ok, what) in expect {
        match doc.get(key) {
            None => return Err(reply.fail(format!("`{key}` is missing"))),
            Some(v) if !ok(v) => {
                return Err(reply.fail(format!("`{key}` is {}, not {what}", kind(v))));
            }
            Some(_) => {}
        }
    }
    Ok(Outcome::pass(format!(
        "protocolVersion {}, supportedEnvelopes, schemaVersions and limits present",
        doc["protocolVersion"]
    )))
}

/// WS-DISC-003
pub(crate) async fn limits_shape(ctx: &Ctx) -> ScenarioResult {
    let doc = ctx.discovery()?;
    let reply = ctx.discovery_reply()?;
    let Some(Value::Object(limits)) = doc.get("limits") else {
        return Err(reply.fail("`limits` is missing or not an object"));
    };
    for key in ["clarificationRounds", "schemaRounds", "envelopesPerTurn"] {
        match limits.get(key) {
            Some(v) if v.is_u64() => {}
            Some(v) => {
                return Err(reply.fail(format!("limits.{key} is {v}, not a non-negative integer")));
            }
            None => return Err(reply.fail(format!("limits.{key} is missing"))),
        }
    }
    if let Some(v) = limits.get("maxRequestBodyBytes")
        && !v.is_u64()
    {
        return Err(reply.fail(format!("limits.maxRequestBodyBytes is {v}, not an integer")));
    }
    let allowed = [
        "clarificationRounds",
        "schemaRounds",
        "envelopesPerTurn",
        "maxRequestBodyBytes",
    ];
    let extra: Vec<&String> = limits
        .keys()
        .filter(|k| !allowed.contains(&k.as_str()))
        .collect();
    if !extra.is_empty() {
        return Err(reply.fail(format!(
            "limits has keys outside the allowed four: {extra:?}"
        )));
    }
    Ok(Outcome::pass(
        "limits has exactly the required integer keys",
    ))
}

/// WS-DISC-004
pub(crate) async fn cache_control(ctx: &Ctx) -> ScenarioResult {
    let reply = ctx.discovery_reply()?;
    reply.expect_status(200)?;
    match reply.header("cache-control") {
        Some(value) if !value.trim().is_empty() => {
            Ok(Outcome::pass(format!("Cache-Control: {value}")))
        }
        _ => Err(reply.fail("no Cache-Control header")),
    }
}

/// WS-DISC-009: a host that tags discovery honours `If-None-Match` (RFC 9110 §13.1.2).
pub(crate) async fn revalidates(ctx: &Ctx) -> ScenarioResult {
    let reply = ctx.discovery_reply()?;
    reply.expect_status(200)?;
    let Some(etag) = reply.header("etag").map(str::to_owned) else {
        return Err(Outcome::inapplicable("discovery is served without an ETag"));
    };
    let held = ctx
        .anonymous()
        .call("GET", DISCOVERY)
        .header("If-None-Match", etag.clone())
        .send()
        .await?;
    if held.status != 304 {
        return Err(held.fail(format!(
            "If-None-Match with the current ETag {etag} answered {}, expected 304",
            held.status
        )));
    }
    if !held.body.is_empty() {
        return Err(held.fail("a 304 carries a body"));
    }
    let other = ctx
        .anonymous()
        .call("GET", DISCOVERY)
        .header("If-None-Match", "\"wsp-conformance-not-current\"")
        .send()
        .await?;
    other.expect_status(200)?;
    if other.json()? != reply.json()? {
        return Err(other.fail("another tag got a different document"));
    }
    Ok(Outcome::pass(format!(
        "ETag {etag}: 304 with no body when held, the document otherwise"
    )))
}

/// WS-DISC-005
pub(crate) async fn no_capabilities_wrapper(ctx: &Ctx) -> ScenarioResult {
    let doc = ctx.discovery()?;
    if doc.contains_key("capabilities") {
        return Err(ctx
            .discovery_reply()?
            .fail("capability blocks are wrapped in `capabilities`; they belong at the root"));
    }
    Ok(Outcome::pass("no `capabilities` wrapper"))
}

/// WS-DISC-006
pub(crate) async fn bearer_ignored(ctx: &Ctx) -> ScenarioResult {
    let plain = ctx.discovery_reply()?;
    plain.expect_status(200)?;
    let unknown = format!("wsp-conformance-unknown-{}", ctx.shared.run_id);
    let with_key = ctx.with_key(&unknown).call("GET", DISCOVERY).send().await?;
    with_key.expect_status(200)?;
    let (a, b) = (plain.json()?, with_key.json()?);
    if a != b {
        return Err(
            Outcome::fail("discovery differs when an (unknown) bearer key is sent")
                .with(plain.exchange())
                .with(with_key.exchange()),
        );
    }
    Ok(Outcome::pass("an unknown bearer key changes nothing"))
}

/// WS-DISC-007
pub(crate) async fn implementation_shape(ctx: &Ctx) -> ScenarioResult {
    let doc = ctx.discovery()?;
    let reply = ctx.discovery_reply()?;
    let Some(implementation) = doc.get("implementation") else {
        return Ok(Outcome::inapplicable("no `implementation` block"));
    };
    let Value::Object(map) = implementation else {
        return Err(reply.fail(format!(
            "`implementation` is {}, not an object",
            kind(implementation)
        )));
    };
    for key in ["name", "version"] {
        if !map.get(key).is_some_and(Value::is_string) {
            return Err(reply.fail(format!("implementation.{key} is missing or not a string")));
        }
    }
    Ok(Outcome::pass(format!(
        "implementation {} {}",
        map["name"], map["version"]
    )))
}

/// WS-DISC-010: the shape OpenWOP's capabilities.md gives `supportedTransports` (a list of
/// names of which `rest` is always one), and an advertised `sse` is really served.
pub(crate) async fn transports_shape(ctx: &Ctx) -> ScenarioResult {
    let doc = ctx.discovery()?;
    let reply = ctx.discovery_reply()?;
    let Some(transports) = doc.get("supportedTransports") else {
        return Ok(Outcome::inapplicable("no `supportedTransports`"));
    };
    let Some(items) = transports.as_array() else {
        return Err(reply.fail(format!(
            "`supportedTransports` is {}, not an array",
            kind(transports)
        )));
    };
    let mut names: Vec<&str> = Vec::new();
    for item in items {
        match item.as_str() {
            Some(name) if !name.is_empty() && !names.contains(&name) => names.push(name),
            _ => {
                return Err(reply.fail(format!(
                    "`supportedTransports` holds {item}: each entry is a distinct, non-empty string"
                )));
            }
        }
    }
    if !names.contains(&"rest") {
        return Err(reply.fail(format!(
            "`supportedTransports` is {names:?}: OpenWOP requires `rest` in it"
        )));
    }
    if names.contains(&"sse") {
        // wsp's only stream is its change feed: a host naming `sse` serves it.
        let feed = super::runs::a(ctx)?;
        if let Err(e) = feed.events(None).await {
            let why = format!(
                "`supportedTransports` names sse, yet GET {EVENTS} is not a text/event-stream: {e}"
            );
            // The answer was not an endless stream, so reading it again in full records it.
            let again = ctx
                .as_a()?
                .call("GET", EVENTS)
                .header("Accept", "text/event-stream")
                .send()
                .await?;
            return Err(again.fail(why));
        }
        let events = doc.get("wsp").and_then(|w| w.get("events"));
        if events != Some(&Value::Bool(true)) {
            return Err(reply.fail(
                "`supportedTransports` names sse, yet the host does not advertise wsp.events",
            ));
        }
    }
    Ok(Outcome::pass(format!(
        "supportedTransports {names:?}, each served"
    )))
}

/// WS-DISC-008
pub(crate) async fn openapi_document(ctx: &Ctx) -> ScenarioResult {
    let reply = ctx.anonymous().call("GET", OPENAPI).send().await?;
    reply.expect_status(200)?;
    if !is_json(&reply) {
        return Err(reply.fail(format!(
            "Content-Type is {:?}, not application/json",
            reply.header("content-type").unwrap_or("absent")
        )));
    }
    let doc = reply.json_object()?;
    let version = doc
        .get("openapi")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !version.starts_with("3.1") {
        return Err(reply.fail(format!(
            "`openapi` is {:?}, expected 3.1.x",
            doc.get("openapi")
        )));
    }
    if !doc.get("paths").is_some_and(Value::is_object) {
        return Err(reply.fail("no `paths` object"));
    }
    Ok(Outcome::pass(format!(
        "OpenAPI {version} served without credentials"
    )))
}
