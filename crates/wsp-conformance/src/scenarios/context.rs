//! WIRE (wsp extension, discovery `wsp.context`): the run-start context over HTTP,
//! `GET /v1/host/workspace/context` and `GET /v1/runs/{runId}/context`.
//!
//! These scenarios write nothing: the context is rendered from whatever the first key's
//! workspace holds, and they check what holds for any workspace (the budget, the two forms of
//! the answer, a run reading its snapshot).

use serde_json::Value;

use crate::outcome::Outcome;
use crate::scenario::{Ctx, ScenarioResult};
use crate::scenarios::runs;
use crate::transport::Reply;

const LIVE: &str = "/v1/host/workspace/context";

/// The `text` and `report` of a 200 JSON answer, checked against the budget.
fn rendered(reply: &Reply, budget: u64) -> Result<(String, Value), Outcome> {
    reply.expect_status(200)?;
    let body = reply.json_object()?;
    let (Some(text), Some(report)) = (body.get("text").and_then(Value::as_str), body.get("report"))
    else {
        return Err(reply.fail("the answer needs `text` (a string) and `report`"));
    };
    let used = report["usedTokens"].as_u64();
    if report["budgetTokens"].as_u64() != Some(budget) || used.is_none_or(|u| u > budget) {
        return Err(reply.fail(format!(
            "report: budgetTokens {} and usedTokens {} for a budget of {budget}",
            report["budgetTokens"], report["usedTokens"]
        )));
    }
    // The text itself, counted as the report says tokens are (characters / 4, rounded up).
    let chars = text.chars().count() as u64;
    if report["tokenizer"] == "chars/4" && chars.div_ceil(4) > budget {
        return Err(reply.fail(format!(
            "the text is {chars} characters, over a budget of {budget} tokens"
        )));
    }
    if !report["entries"].is_array() {
        return Err(reply.fail("report.entries is not an array"));
    }
    Ok((text.to_owned(), report.clone()))
}

/// WS-CTX-001
pub(crate) async fn live_context_within_budget(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    for budget in [40_u64, 8000] {
        let query = format!("{LIVE}?budget={budget}&strict=true");
        let reply = a.call("GET", query.clone()).send().await?;
        let (text, _) = rendered(&reply, budget)?;
        let plain = a
            .call("GET", query)
            .header("accept", "text/plain")
            .send()
            .await?;
        plain.expect_status(200)?;
        let media = plain.header("content-type").unwrap_or_default().to_owned();
        if !media.starts_with("text/plain") || plain.text() != text {
            return Err(plain.fail(format!(
                "with Accept: text/plain the answer must be the JSON's text as text/plain, got {media}"
            )));
        }
    }
    let reply = a
        .call("GET", format!("{LIVE}?budget=1&strict=true"))
        .send()
        .await?;
    let (_, report) = rendered(&reply, 1)?;
    if report["collapsed"] != true {
        return Err(
            reply.fail("a budget of 1 token cannot hold the frame: report.collapsed must be true")
        );
    }
    // Not strict, AGENTS.md is never cut: over the budget only when it alone is larger, and
    // then the report and the text's first line say so.
    let reply = a.call("GET", format!("{LIVE}?budget=40")).send().await?;
    reply.expect_status(200)?;
    let body = reply.json_object()?;
    let (text, report) = (body["text"].as_str().unwrap_or_default(), &body["report"]);
    let over = report["overBudget"] == true;
    let used = report["usedTokens"].as_u64().unwrap_or(u64::MAX);
    if over != text.starts_with("[OVER BUDGET: ") || (!over && used > 40) {
        return Err(reply.fail(format!(
            "without strict: overBudget {over}, usedTokens {used} of 40, text starts {:?}",
            text.chars().take(40).collect::<String>()
        )));
    }
    for query in [
        "?budget=0",
        "?budget=1000001",
        "?budget=x",
        "?budget=10&other=1",
        "?strict=yes",
    ] {
        a.call("GET", format!("{LIVE}{query}"))
            .send()
            .await?
            .expect_error(400, "validation_error")?;
    }
    Ok(Outcome::pass(
        "rendered within strict budgets of 1, 40 and 8000 tokens as JSON and as text/plain; over a loose budget only as overBudget says; bad parameters answer 400",
    ))
}

/// WS-CTX-002
pub(crate) async fn run_context_reads_the_snapshot(ctx: &Ctx) -> ScenarioResult {
    let client = runs::a(ctx)?;
    let a = ctx.as_a()?;
    let run = client
        .create_run("conformance")
        .await
        .map_err(|e| Outcome::fail(format!("POST /v1/runs: {e}")))?;
    let url = format!("/v1/runs/{}/context?budget=8000", run.run_id);
    let seen = a.call("GET", url.clone()).send().await?;
    let (run_text, _) = rendered(&seen, 8000)?;
    let live = a.call("GET", format!("{LIVE}?budget=8000")).send().await?;
    let (live_text, _) = rendered(&live, 8000)?;
    let same = run_text == live_text;
    client
        .cancel_run(&run.run_id)
        .await
        .map_err(|e| Outcome::fail(format!("cancel: {e}")))?;
    if !same {
        return Err(seen.fail(
            "nothing was written between the run's start and these reads, yet the run's context differs from the live one",
        ));
    }
    let ended = a.call("GET", url).send().await?;
    ended.expect_error(404, "not_found")?;
    Ok(Outcome::pass(
        "a run's context is the workspace's as the run started; 404 once the run ended",
    ))
}
