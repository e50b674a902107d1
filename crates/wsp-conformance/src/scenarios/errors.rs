//! WIRE §3: the error envelope, checked across one error of each kind the runner can provoke.

use serde_json::json;

use super::create;
use crate::outcome::Outcome;
use crate::scenario::{Ctx, ScenarioResult};
use crate::transport::FILES;

/// WS-ERR-001
pub(crate) async fn envelopes(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("errors.md");
    create(&a, &path, "x").await?;
    let cases = [
        (401, "unauthenticated", ctx.anonymous().list(None)),
        (404, "not_found", a.get(&ctx.path("missing.md"))),
        (
            400,
            "validation_error",
            a.put_json(&path, &json!({"content": "x", "bogus": true})),
        ),
        (
            400,
            "validation_error",
            a.put(&format!("{}a//b.md", ctx.prefix()), "x"),
        ),
        (
            415,
            "unsupported_media_type",
            a.call("PUT", format!("{FILES}/{path}"))
                .body(Some("text/plain"), b"x".to_vec()),
        ),
        (
            409,
            "workspace_conflict",
            a.put(&path, "x").header("If-None-Match", "*"),
        ),
        (404, "not_found", a.delete(&ctx.path("missing.md"))),
    ];
    let mut seen = Vec::new();
    for (status, code, call) in cases {
        let reply = call.send().await?;
        reply.expect_error(status, code)?;
        let content_type = reply.header("content-type").unwrap_or("absent");
        if !content_type
            .to_ascii_lowercase()
            .starts_with("application/json")
        {
            return Err(reply.fail(format!(
                "error {status} has Content-Type {content_type:?}, not application/json"
            )));
        }
        seen.push(status);
    }
    Ok(Outcome::pass(format!(
        "statuses {seen:?} all carry exactly error, message and optional details"
    )))
}
