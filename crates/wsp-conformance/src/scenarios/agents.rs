//! RFC 0072 §A and RFC 0074 (the agent inventory scoped to the caller, WIRE §7) and WIRE §8
//! (shared agent workspaces and one-way publish). Gated on `agents.manifestRuntime.supported`.
//!
//! Owner A and owner B are the suite's two principals; `--agent-a` names A's approved agents.
//! Publishing needs a key acting as a private agent, a key acting as a shared agent of the same
//! tenant, and that shared agent's id.

use std::collections::BTreeSet;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Value, json};

use super::{expect_absent, expect_same_answer};
use crate::expect::kind;
use crate::outcome::Outcome;
use crate::scenario::{Caller, Ctx, ScenarioResult, lookup};
use crate::transport::{Call, Reply};

/// The inventory route.
const AGENTS: &str = "/v1/agents";
/// The publish route.
const PUBLISH: &str = "/v1/host/workspace/publish";

/// The keys an inventory entry must carry (RFC 0072 §A).
const REQUIRED: [&str; 8] = [
    "agentId",
    "persona",
    "label",
    "modelClass",
    "packName",
    "packVersion",
    "toolAllowlist",
    "hasHandoffSchemas",
];

/// The optional keys an entry may carry: wsp's `description` and OpenWOP's optional members.
const OPTIONAL: [&str; 4] = [
    "description",
    "memoryShape",
    "confidenceThreshold",
    "degraded",
];

/// `GET /v1/agents/{id}`, the id sent as one segment.
fn one<'a>(caller: &Caller<'a>, id: &str) -> Call<'a> {
    caller.call("GET", format!("{AGENTS}/{}", segment(id)))
}

/// What [`segment`] escapes in an agent id: every byte but RFC 3986's unreserved characters
/// and `:` (a path character that ids such as `urn:` names carry as they are).
const AGENT_ID_SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b':');

/// Percent-encodes an agent id as one path segment.
fn segment(id: &str) -> String {
    utf8_percent_encode(id, AGENT_ID_SEGMENT).to_string()
}

/// The advertised scope: `tenant`, or `host` (also when absent).
fn install_scope(ctx: &Ctx) -> Result<String, Outcome> {
    let doc = ctx.discovery()?;
    let scope = lookup(
        &Value::Object(doc.clone()),
        "agents.manifestRuntime.installScope",
    )
    .cloned();
    match scope {
        None => Ok("host".into()),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(Outcome::fail(format!(
            "agents.manifestRuntime.installScope is {}, not a string",
            kind(&other)
        ))),
    }
}

fn tenant_scoped(ctx: &Ctx) -> Result<(), Outcome> {
    match install_scope(ctx)?.as_str() {
        "tenant" => Ok(()),
        other => Err(Outcome::inapplicable(format!(
            "installScope is {other:?}; this checks tenant scoping"
        ))),
    }
}

fn agents_a(ctx: &Ctx) -> Result<BTreeSet<String>, Outcome> {
    let ids: BTreeSet<String> = ctx.config().agents_a.iter().cloned().collect();
    if ids.is_empty() {
        return Err(Outcome::blocked(
            "needs the agents owner A's workspace approved (--agent-a / WSP_CONFORMANCE_AGENTS_A)",
        ));
    }
    Ok(ids)
}

/// An agent id nobody installed.
fn never_installed(ctx: &Ctx) -> String {
    format!("conformance.no-such-agent.{}", ctx.shared.run_id)
}

/// Checks one inventory entry's shape; returns its `agentId`.
fn check_entry(entry: &Value) -> Result<String, String> {
    let Value::Object(map) = entry else {
        return Err(format!("an entry is {}, not an object", kind(entry)));
    };
    for key in REQUIRED {
        if !map.contains_key(key) {
            return Err(format!("an entry has no `{key}`"));
        }
    }
    let extra: Vec<&str> = map
        .keys()
        .map(String::as_str)
        .filter(|k| !REQUIRED.contains(k) && !OPTIONAL.contains(k))
        .collect();
    if !extra.is_empty() {
        return Err(format!(
            "entry {} carries keys outside the inventory entry: {extra:?}",
            map["agentId"]
        ));
    }
    for key in [
        "agentId",
        "persona",
        "label",
        "modelClass",
        "packName",
        "packVersion",
    ] {
        if !map[key].is_string() {
            return Err(format!("`{key}` is {}, not a string", kind(&map[key])));
        }
    }
    match &map["toolAllowlist"] {
        Value::Array(tools) if tools.iter().all(Value::is_string) => {}
        other => {
            return Err(format!(
                "`toolAllowlist` is {}, not an array of strings",
                kind(other)
            ));
        }
    }
    if !map["hasHandoffSchemas"].is_boolean() {
        return Err("`hasHandoffSchemas` is not a boolean".into());
    }
    if let Some(d) = map.get("description")
        && !d.is_string()
    {
        return Err("`description` is not a string".into());
    }
    Ok(map["agentId"].as_str().unwrap_or_default().to_owned())
}

/// A 200 inventory: `{agents, total}` only, entries well formed, `total` the count, sorted by
/// `agentId` in byte order without duplicates. Returns the entries by id, in order.
fn expect_inventory(reply: &Reply) -> Result<Vec<(String, Value)>, Outcome> {
    reply.expect_status(200)?;
    let map = reply.json_object()?;
    let extra: Vec<&String> = map
        .keys()
        .filter(|k| *k != "agents" && *k != "total")
        .collect();
    if !extra.is_empty() {
        return Err(reply.fail(format!("the inventory has extra keys {extra:?}")));
    }
    let Some(Value::Array(agents)) = map.get("agents") else {
        return Err(reply.fail("the inventory has no `agents` array"));
    };
    let mut out = Vec::new();
    for entry in agents {
        let id = check_entry(entry).map_err(|why| reply.fail(why))?;
        out.push((id, entry.clone()));
    }
    match map.get("total").and_then(Value::as_u64) {
        Some(n) if n == out.len() as u64 => {}
        Some(n) => {
            return Err(reply.fail(format!("`total` is {n}, but `agents` holds {}", out.len())));
        }
        None => return Err(reply.fail("`total` is not a non-negative integer")),
    }
    if !out
        .windows(2)
        .all(|w| w[0].0.as_bytes() < w[1].0.as_bytes())
    {
        let ids: Vec<&str> = out.iter().map(|(id, _)| id.as_str()).collect();
        return Err(reply.fail(format!(
            "`agents` is not sorted by agentId (or repeats one): {ids:?}"
        )));
    }
    Ok(out)
}

async fn list(caller: &Caller<'_>) -> Result<Vec<(String, Value)>, Outcome> {
    let reply = caller.call("GET", AGENTS).send().await?;
    expect_inventory(&reply)
}

fn ids(list: &[(String, Value)]) -> BTreeSet<String> {
    list.iter().map(|(id, _)| id.clone()).collect()
}

/// WS-AGT-001
pub(crate) async fn capability_shape(ctx: &Ctx) -> ScenarioResult {
    let doc = Value::Object(ctx.discovery()?.clone());
    let reply = ctx.discovery_reply()?;
    let Some(Value::Object(block)) = lookup(&doc, "agents.manifestRuntime") else {
        return Err(reply.fail("agents.manifestRuntime is not an object"));
    };
    let extra: Vec<&String> = block
        .keys()
        .filter(|k| !["supported", "handoffValidation", "installScope"].contains(&k.as_str()))
        .collect();
    if !extra.is_empty() {
        return Err(reply.fail(format!("manifestRuntime has unknown keys {extra:?}")));
    }
    if !block["supported"].is_boolean() {
        return Err(reply.fail("manifestRuntime.supported is not a boolean"));
    }
    if let Some(v) = block.get("handoffValidation")
        && !v.is_boolean()
    {
        return Err(reply.fail("manifestRuntime.handoffValidation is not a boolean"));
    }
    match block.get("installScope") {
        None => {}
        Some(Value::String(s)) if s == "host" || s == "tenant" => {}
        Some(other) => {
            return Err(reply.fail(format!(
                "manifestRuntime.installScope is {other}, not \"host\" or \"tenant\""
            )));
        }
    }
    Ok(Outcome::pass(format!(
        "manifestRuntime is well formed; installScope {}",
        install_scope(ctx)?
    )))
}

/// WS-AGT-002
pub(crate) async fn credential_required(ctx: &Ctx) -> ScenarioResult {
    let unknown = format!("wsp-conformance-unknown-{}", ctx.shared.run_id);
    let id = ctx
        .config()
        .agents_a
        .first()
        .cloned()
        .unwrap_or_else(|| never_installed(ctx));
    for (who, caller) in [
        ("without a key", ctx.anonymous()),
        ("with an unknown key", ctx.with_key(&unknown)),
    ] {
        for path in [AGENTS.to_owned(), format!("{AGENTS}/{}", segment(&id))] {
            let reply = caller.call("GET", path.clone()).send().await?;
            reply
                .expect_error(401, "unauthenticated")
                .map_err(|o| o.context(&format!("GET {path} {who}")))?;
        }
    }
    Ok(Outcome::pass(
        "GET /v1/agents and /v1/agents/{id} answer 401 without a valid key, never a list",
    ))
}

/// WS-AGT-003
pub(crate) async fn list_shape(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let listed = list(&a).await?;
    Ok(Outcome::pass(format!(
        "A's inventory: {} well-formed entries sorted by agentId, total equal to the count",
        listed.len()
    )))
}

/// WS-AGT-004
pub(crate) async fn a_sees_its_approved_agents(ctx: &Ctx) -> ScenarioResult {
    tenant_scoped(ctx)?;
    let expected = agents_a(ctx)?;
    let a = ctx.as_a()?;
    let reply = a.call("GET", AGENTS).send().await?;
    let got = ids(&expect_inventory(&reply)?);
    if got != expected {
        return Err(reply.fail(format!(
            "A's inventory is {got:?}, but A's workspace approved exactly {expected:?}"
        )));
    }
    Ok(Outcome::pass(format!(
        "A sees exactly its {} approved agent(s)",
        expected.len()
    )))
}

/// WS-AGT-005
pub(crate) async fn b_never_sees_a_agents(ctx: &Ctx) -> ScenarioResult {
    tenant_scoped(ctx)?;
    let theirs = agents_a(ctx)?;
    let b = ctx.as_b()?;
    let reply = b.call("GET", AGENTS).send().await?;
    let got = ids(&expect_inventory(&reply)?);
    let leaked: Vec<&String> = got.intersection(&theirs).collect();
    if !leaked.is_empty() {
        return Err(reply.fail(format!(
            "B's inventory shows agents only A's workspace approved: {leaked:?}"
        )));
    }
    Ok(Outcome::pass(format!(
        "B's inventory ({} agent(s)) shows none of A's",
        got.len()
    )))
}

/// WS-AGT-006
pub(crate) async fn b_gets_404_for_a_agents(ctx: &Ctx) -> ScenarioResult {
    tenant_scoped(ctx)?;
    let theirs = agents_a(ctx)?;
    let b = ctx.as_b()?;
    let missing_id = never_installed(ctx);
    let missing = one(&b, &missing_id).send().await?;
    missing.expect_error(404, "not_found")?;
    for id in &theirs {
        let reply = one(&b, id).send().await?;
        reply.expect_error(404, "not_found")?;
        expect_same_answer(&reply, id, &missing, &missing_id)
            .map_err(|o| o.context(&format!("agent {id}")))?;
    }
    Ok(Outcome::pass(
        "B's GET of each of A's agents is the 404 of an agent that does not exist",
    ))
}

/// WS-AGT-007
pub(crate) async fn get_matches_the_list(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let listed = list(&a).await?;
    for (id, entry) in &listed {
        let reply = one(&a, id).send().await?;
        reply.expect_status(200)?;
        let body = reply.json()?;
        check_entry(&body).map_err(|why| reply.fail(why))?;
        if &body != entry {
            return Err(reply.fail(format!(
                "GET /v1/agents/{id} differs from its list entry {entry}"
            )));
        }
    }
    let missing = one(&a, &never_installed(ctx)).send().await?;
    missing.expect_error(404, "not_found")?;
    Ok(Outcome::pass(format!(
        "each of A's {} agents reads as listed; an unknown agent is 404",
        listed.len()
    )))
}

/// WS-AGT-008
pub(crate) async fn host_scope_is_one_list(ctx: &Ctx) -> ScenarioResult {
    let scope = install_scope(ctx)?;
    if scope != "host" {
        return Err(Outcome::inapplicable(format!(
            "installScope is {scope:?}; this checks host scope"
        )));
    }
    let a = list(&ctx.as_a()?).await?;
    let b_caller = ctx.as_b()?;
    let b_reply = b_caller.call("GET", AGENTS).send().await?;
    let b = expect_inventory(&b_reply)?;
    if a != b {
        return Err(b_reply.fail(format!(
            "under host scope B's list {:?} differs from A's {:?}",
            ids(&b),
            ids(&a)
        )));
    }
    for (id, _) in &a {
        one(&b_caller, id).send().await?.expect_status(200)?;
    }
    Ok(Outcome::pass(format!(
        "A and B get the same {} agent(s), and B can read each",
        a.len()
    )))
}

/// Strings and keys anywhere in `value` that look like a prompt, or hold `marker`.
fn prompt_leaks(value: &Value, marker: Option<&str>, out: &mut Vec<String>) {
    match value {
        Value::String(s) if marker.is_some_and(|m| s.contains(m)) => {
            out.push(format!("the string {s:?} holds the prompt marker"));
        }
        Value::Array(items) => items.iter().for_each(|v| prompt_leaks(v, marker, out)),
        Value::Object(map) => {
            for (k, v) in map {
                let key = k.to_ascii_lowercase();
                if key.contains("prompt") || key.contains("secret") || key.contains("credential") {
                    out.push(format!("the key {k:?}"));
                }
                prompt_leaks(v, marker, out);
            }
        }
        _ => {}
    }
}

/// WS-AGT-009
pub(crate) async fn never_a_prompt(ctx: &Ctx) -> ScenarioResult {
    let marker = ctx.config().prompt_marker.as_deref();
    let mut replies = Vec::new();
    for (who, caller) in [("A", ctx.as_a()?), ("B", ctx.as_b()?)] {
        let reply = caller.call("GET", AGENTS).send().await?;
        let listed = expect_inventory(&reply)?;
        replies.push((who, reply));
        for (id, _) in listed {
            replies.push((who, one(&caller, &id).send().await?));
        }
    }
    for (who, reply) in &replies {
        let mut leaks = Vec::new();
        prompt_leaks(&reply.json()?, marker, &mut leaks);
        if let Some(m) = marker
            && reply.text().contains(m)
            && leaks.is_empty()
        {
            leaks.push("the body holds the prompt marker".into());
        }
        if !leaks.is_empty() {
            return Err(reply.fail(format!(
                "an inventory answer to {who} carries prompt material: {}",
                leaks.join("; ")
            )));
        }
    }
    Ok(Outcome::pass(format!(
        "{} inventory answers carry no prompt key{}",
        replies.len(),
        if marker.is_some() {
            " and never the prompt marker"
        } else {
            " (no --prompt-marker given)"
        }
    )))
}

/// WS-AGT-010
pub(crate) async fn scope_required(ctx: &Ctx) -> ScenarioResult {
    let ro = ctx.as_readonly()?;
    let reply = ro.call("GET", AGENTS).send().await?;
    let details = reply.expect_error(403, "forbidden")?;
    if details.get("requiredScope") != Some(&json!("agents:read")) {
        return Err(reply.fail(format!(
            "403 without details.requiredScope = \"agents:read\": {details:?}"
        )));
    }
    Ok(Outcome::pass(
        "a key without agents:read gets 403 forbidden, requiredScope agents:read",
    ))
}

/// The keys and ids publishing needs.
struct Publishers<'c> {
    private: Caller<'c>,
    shared: Caller<'c>,
    shared_id: String,
}

fn publishers(ctx: &Ctx) -> Result<Publishers<'_>, Outcome> {
    let c = ctx.config();
    let blocked = |what: &str| Outcome::blocked(format!("needs {what}"));
    let private = c.key_private_agent.as_deref().ok_or_else(|| {
        blocked(
            "a key acting as a private agent (--key-private-agent / WSP_CONFORMANCE_KEY_PRIVATE_AGENT)",
        )
    })?;
    let shared = c.key_shared_agent.as_deref().ok_or_else(|| {
        blocked(
            "a key acting as a shared agent (--key-shared-agent / WSP_CONFORMANCE_KEY_SHARED_AGENT)",
        )
    })?;
    let shared_id = c.shared_agent.clone().ok_or_else(|| {
        blocked("the shared agent's id (--shared-agent / WSP_CONFORMANCE_SHARED_AGENT)")
    })?;
    Ok(Publishers {
        private: ctx.with_key(private),
        shared: ctx.with_key(shared),
        shared_id,
    })
}

fn publish_body(path: &str, target: &str, target_path: Option<&str>) -> Value {
    let mut body = Map::new();
    body.insert("path".into(), json!(path));
    body.insert("targetAgentId".into(), json!(target));
    if let Some(t) = target_path {
        body.insert("targetPath".into(), json!(t));
    }
    Value::Object(body)
}

/// Deletes what a publishing scenario wrote (the runner cleans only owners A and B).
async fn clean(callers: &[&Caller<'_>], paths: &[&str]) {
    for caller in callers {
        for path in paths {
            let _ = caller.delete(path).send().await;
        }
    }
}

/// Runs `body`, then cleans `paths` in both workspaces whatever happened.
async fn with_cleanup<'c>(
    p: &Publishers<'c>,
    paths: &[&str],
    body: impl Future<Output = ScenarioResult>,
) -> ScenarioResult {
    let result = body.await;
    clean(&[&p.private, &p.shared], paths).await;
    result
}

/// A 200 publish answer naming `target`; returns its version and the path where the copy
/// landed (the host decides it when the request has no `targetPath`, e.g. under an inbox).
fn expect_published(reply: &Reply, target: &str) -> Result<(u64, String), Outcome> {
    reply.expect_status(200)?;
    let map = reply.json_object()?;
    let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
    keys.sort_unstable();
    if keys != ["path", "targetAgentId", "version"] {
        return Err(reply.fail(format!(
            "the answer has keys {keys:?}, not path, targetAgentId, version"
        )));
    }
    if map["targetAgentId"] != json!(target) {
        return Err(reply.fail(format!(
            "the answer names {}, not {target}",
            map["targetAgentId"]
        )));
    }
    let landed = map["path"]
        .as_str()
        .ok_or_else(|| reply.fail("`path` is not a string"))?
        .to_owned();
    let version = map["version"]
        .as_u64()
        .filter(|v| *v >= 1)
        .ok_or_else(|| reply.fail("`version` is not a positive integer"))?;
    Ok((version, landed))
}

/// WS-PUB-001
pub(crate) async fn publish_private_to_shared(ctx: &Ctx) -> ScenarioResult {
    let p = publishers(ctx)?;
    let path = ctx.path("shopping.md");
    // Where the copy landed, cleaned up in the shared workspace whatever happens.
    let landed = std::sync::Mutex::new(None::<String>);
    let result = with_cleanup(&p, &[&path], async {
        p.private.put(&path, "eggs").send().await?.expect_file(&path)?;
        let body = publish_body(&path, &p.shared_id, None);
        let reply = p.private.call("POST", PUBLISH).json(&body).send().await?;
        let (first, at) = expect_published(&reply, &p.shared_id)?;
        *landed.lock().unwrap_or_else(|e| e.into_inner()) = Some(at.clone());
        let copy = p.shared.get(&at).send().await?.expect_file(&at)?;
        if copy.content.as_deref() != Some("eggs") || copy.version != first {
            return Err(Outcome::fail(format!(
                "the shared agent reads {:?} v{}, expected \"eggs\" v{first}",
                copy.content, copy.version
            )));
        }
        p.private
            .put(&path, "eggs, milk")
            .send()
            .await?
            .expect_file(&path)?;
        let reply = p.private.call("POST", PUBLISH).json(&body).send().await?;
        let (second, again) = expect_published(&reply, &p.shared_id)?;
        if again != at {
            return Err(reply.fail(format!(
                "the same publication landed at {again}, the first one at {at}"
            )));
        }
        if second != first + 1 {
            return Err(reply.fail(format!(
                "publishing again created v{second} in the target, expected v{}",
                first + 1
            )));
        }
        let copy = p.shared.get(&at).send().await?.expect_file(&at)?;
        if copy.content.as_deref() != Some("eggs, milk") {
            return Err(Outcome::fail("the second publication is not what the shared agent reads"));
        }
        Ok(Outcome::pass(
            "private -> shared: 200 {targetAgentId, path, version}; the copy is a new version there, at the path the answer names",
        ))
    })
    .await;
    let at = landed.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(at) = at {
        clean(&[&p.shared], &[&at]).await;
    }
    result
}

/// WS-PUB-002
pub(crate) async fn publish_never_reverse(ctx: &Ctx) -> ScenarioResult {
    let p = publishers(ctx)?;
    let path = ctx.path("from-shared.md");
    with_cleanup(&p, &[&path], async {
        p.shared
            .put(&path, "shared data")
            .send()
            .await?
            .expect_file(&path)?;
        let mut targets = vec![p.shared_id.clone()];
        targets.extend(ctx.config().private_agent.clone());
        for target in &targets {
            let body = publish_body(&path, target, None);
            let reply = p.shared.call("POST", PUBLISH).json(&body).send().await?;
            reply
                .expect_error(403, "forbidden")
                .map_err(|o| o.context(&format!("the shared agent publishing to {target}")))?;
        }
        expect_absent(&p.private, &path, "a refused reverse publication").await?;
        Ok(Outcome::pass(
            "a shared agent publishing (to itself or to a private agent) gets 403 forbidden",
        ))
    })
    .await
}

/// WS-PUB-003
pub(crate) async fn publish_only_to_shared(ctx: &Ctx) -> ScenarioResult {
    let p = publishers(ctx)?;
    let path = ctx.path("private.md");
    with_cleanup(&p, &[&path], async {
        p.private
            .put(&path, "private")
            .send()
            .await?
            .expect_file(&path)?;
        let unknown = never_installed(ctx);
        let send = |target: String| {
            let body = publish_body(&path, &target, None);
            let call = p.private.call("POST", PUBLISH).json(&body);
            async move { call.send().await }
        };
        let unknown_reply = send(unknown.clone()).await?;
        unknown_reply
            .expect_error(403, "forbidden")
            .map_err(|o| o.context("publishing to an agent that does not exist"))?;
        let mut checked = "an unknown agent".to_owned();
        if let Some(private_id) = ctx.config().private_agent.clone() {
            let reply = send(private_id.clone()).await?;
            reply
                .expect_error(403, "forbidden")
                .map_err(|o| o.context(&format!("publishing to the private agent {private_id}")))?;
            expect_same_answer(&reply, &private_id, &unknown_reply, &unknown)?;
            checked = format!("the private agent {private_id} (answered like an unknown agent)");
        }
        expect_absent(&p.shared, &path, "a refused publication").await?;
        Ok(Outcome::pass(format!(
            "publishing to {checked} gets 403 forbidden and writes nothing"
        )))
    })
    .await
}

/// WS-PUB-004
pub(crate) async fn shared_never_sees_private(ctx: &Ctx) -> ScenarioResult {
    let p = publishers(ctx)?;
    let path = ctx.path("diary.md");
    let missing = ctx.path("never-written.md");
    with_cleanup(&p, &[&path], async {
        p.private.put(&path, "private diary").send().await?.expect_file(&path)?;
        let theirs = p.shared.get(&path).send().await?;
        let nothing = p.shared.get(&missing).send().await?;
        theirs.expect_error(404, "not_found")?;
        expect_same_answer(&theirs, &path, &nothing, &missing)?;
        let listed = p.shared.list(Some(&ctx.prefix())).send().await?;
        if listed.expect_list()?.iter().any(|f| f.path == path) {
            return Err(listed.fail("the shared agent's list shows the private file"));
        }
        Ok(Outcome::pass(
            "the shared agent's read of a private file is the 404 of a missing one; its list never shows it",
        ))
    })
    .await
}

/// WS-PUB-005
pub(crate) async fn publish_absent_and_unauthenticated(ctx: &Ctx) -> ScenarioResult {
    let p = publishers(ctx)?;
    let path = ctx.path("absent.md");
    with_cleanup(&p, &[&path], async {
        let body = publish_body(&path, &p.shared_id, None);
        let reply = p.private.call("POST", PUBLISH).json(&body).send().await?;
        reply
            .expect_error(404, "not_found")
            .map_err(|o| o.context("publishing a path with no live file"))?;
        let reply = ctx
            .anonymous()
            .call("POST", PUBLISH)
            .json(&body)
            .send()
            .await?;
        reply
            .expect_error(401, "unauthenticated")
            .map_err(|o| o.context("publishing without a key"))?;
        expect_absent(&p.shared, &path, "refused publications").await?;
        Ok(Outcome::pass(
            "an absent source is 404 not_found; no key is 401; nothing is written",
        ))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_id_is_one_segment_with_its_colons() {
        assert_eq!(segment("urn:a-b.c_d~e"), "urn:a-b.c_d~e");
        assert_eq!(segment("a/b c%é"), "a%2Fb%20c%25%C3%A9");
    }
}
