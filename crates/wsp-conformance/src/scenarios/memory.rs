//! WIRE (wsp extensions, discovery `wsp.search` and `wsp.memory`): searching the caller's files
//! (`GET /v1/host/workspace/search`) and appending to the daily memory log
//! (`POST /v1/host/workspace/memory`).
//!
//! The search scenarios write under the scenario's prefix and search only there, for a word made
//! from the run id, so that nothing else in the workspace can answer. The memory scenarios
//! append lines naming the run to today's log `memory/YYYY-MM-DD.md` of the first key's
//! workspace (outside the run prefix: the log's path is the server's to choose); a log the run
//! created is deleted at the end, one that was there keeps the run's lines.

use futures_util::future::join_all;
use serde_json::{Value, json};

use crate::outcome::Outcome;
use crate::scenario::{Caller, Ctx, Role, ScenarioResult};
use crate::transport::{Reply, query_value};

const SEARCH: &str = "/v1/host/workspace/search";
const MEMORY: &str = "/v1/host/workspace/memory";

/// A word no other text holds: `w` and the run id's hex digits, with a tag.
fn word(ctx: &Ctx, tag: &str) -> String {
    let id: String = ctx
        .run_id()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    format!("w{id}{tag}")
}

/// `GET /v1/host/workspace/search?q=..&prefix=..`.
async fn search(caller: &Caller<'_>, q: &str, prefix: &str) -> Result<Reply, Outcome> {
    caller
        .call(
            "GET",
            format!(
                "{SEARCH}?q={}&prefix={}",
                query_value(q),
                query_value(prefix)
            ),
        )
        .send()
        .await
}

/// The `(path, line, score)` of each match, in order, and `total`.
type Found = (Vec<(String, u64, u64)>, u64);

/// The matches of a 200 search answer.
fn matches(reply: &Reply) -> Result<Found, Outcome> {
    reply.expect_status(200)?;
    let body = reply.json_object()?;
    let list = body
        .get("matches")
        .and_then(Value::as_array)
        .ok_or_else(|| reply.fail("the answer has no `matches` array"))?;
    let mut out = Vec::new();
    for m in list {
        let (Some(path), Some(line), Some(score), Some(_)) = (
            m["path"].as_str(),
            m["line"].as_u64(),
            m["score"].as_u64(),
            m["snippet"].as_str(),
        ) else {
            return Err(reply.fail(format!("a match lacks path, line, score or snippet: {m}")));
        };
        out.push((path.to_owned(), line, score));
    }
    let total = body
        .get("total")
        .and_then(Value::as_u64)
        .ok_or_else(|| reply.fail("the answer has no `total`"))?;
    Ok((out, total))
}

/// WS-SRCH-001
pub(crate) async fn search_ranks_and_follows_changes(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let (one, two) = (word(ctx, "a"), word(ctx, "b"));
    let (both, single) = (ctx.path("both.md"), ctx.path("single.md"));
    a.put(&single, &format!("first line\n{one} alone\n"))
        .send()
        .await?
        .expect_status(200)?;
    a.put(&both, &format!("{one} and {two} together\n"))
        .send()
        .await?
        .expect_status(200)?;
    let reply = search(&a, &format!("{one} {two}"), &ctx.prefix()).await?;
    let (found, total) = matches(&reply)?;
    let want = vec![(both.clone(), 1, 200), (single.clone(), 2, 100)];
    if found != want || total != 2 {
        return Err(reply.fail(format!(
            "expected {want:?} (total 2): the line with both words first, then the one with \
             one word at its line number; got {found:?} (total {total})"
        )));
    }
    // A replaced file is searched by its new text, a deleted one not at all.
    a.put(&both, "nothing to find here\n")
        .send()
        .await?
        .expect_status(200)?;
    a.delete(&single).send().await?.expect_status(204)?;
    let reply = search(&a, &format!("{one} {two}"), &ctx.prefix()).await?;
    let (found, total) = matches(&reply)?;
    if !found.is_empty() || total != 0 {
        return Err(reply.fail(format!(
            "after replacing one file and deleting the other, the search still finds {found:?}"
        )));
    }
    Ok(Outcome::pass(
        "lines ranked by the words they hold; replaced and deleted text no longer found",
    ))
}

/// WS-SRCH-002
pub(crate) async fn search_keeps_to_the_owner(ctx: &Ctx) -> ScenarioResult {
    let (a, b) = (ctx.as_a()?, ctx.as_b()?);
    let secret = word(ctx, "c");
    let path = ctx.path("theirs.md");
    b.put(&path, &format!("B's {secret}\n"))
        .send()
        .await?
        .expect_status(200)?;
    ctx.stray(Role::B, &path);
    let reply = search(&a, &secret, &ctx.prefix()).await?;
    let (found, total) = matches(&reply)?;
    if !found.is_empty() || total != 0 {
        return Err(reply.fail(format!("A's search finds B's text: {found:?}")));
    }
    let reply = search(&b, &secret, &ctx.prefix()).await?;
    let (found, _) = matches(&reply)?;
    if found.len() != 1 {
        return Err(reply.fail(format!(
            "B's own search should find its line, got {found:?}"
        )));
    }
    Ok(Outcome::pass("a search never shows another tenant's text"))
}

/// WS-SRCH-003
pub(crate) async fn bad_searches_refused(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    for query in ["", "?q=", "?q=a&limit=0", "?q=a&limit=101", "?q=a&zzz=1"] {
        let reply = a.call("GET", format!("{SEARCH}{query}")).send().await?;
        reply.expect_error(400, "validation_error")?;
    }
    let reply = a
        .call("GET", format!("{SEARCH}?q={}", query_value("...")))
        .send()
        .await?;
    let (found, total) = matches(&reply)?;
    if !found.is_empty() || total != 0 {
        return Err(reply.fail("a query with no word must match nothing"));
    }
    Ok(Outcome::pass(
        "no or an empty q, a limit outside 1..=100 and an unknown parameter answer 400; punctuation alone matches nothing",
    ))
}

/// A log path as the server must name it: `memory/YYYY-MM-DD.md`.
fn is_log_path(path: &str) -> bool {
    path.strip_prefix("memory/")
        .and_then(|rest| rest.strip_suffix(".md"))
        .is_some_and(|date| {
            date.len() == 10
                && date.char_indices().all(|(i, c)| {
                    if i == 4 || i == 7 {
                        c == '-'
                    } else {
                        c.is_ascii_digit()
                    }
                })
        })
}

/// WS-MEM-001
pub(crate) async fn concurrent_appends_lose_nothing(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let tag = word(ctx, "m");
    let mut calls = Vec::new();
    for n in 0..8 {
        for i in 0..3 {
            let body = json!({ "text": format!("{tag} writer {n} line {i}") });
            calls.push(async move { a.call("POST", MEMORY).json(&body).send().await });
        }
    }
    let replies = join_all(calls).await;
    let mut log = None;
    for reply in replies {
        let reply = reply?;
        reply.expect_status(200)?;
        let body = reply.json_object()?;
        let path = body["path"].as_str().unwrap_or_default().to_owned();
        if !is_log_path(&path) || body["line"].as_u64().is_none_or(|l| l == 0) {
            return Err(reply.fail(format!(
                "the answer must name memory/YYYY-MM-DD.md and a line from 1: {body:?}"
            )));
        }
        log.get_or_insert(path);
    }
    let Some(path) = log else {
        return Err(Outcome::fail("no append was answered"));
    };
    let log = a.get(&path).send().await?;
    let text = if log.status == 404 {
        String::new()
    } else {
        log.expect_file(&path)?.content.unwrap_or_default()
    };
    // A log that holds only this run's lines was made by it: deleted at the end of the run.
    let run_word = word(ctx, "");
    if text.lines().all(|l| l.starts_with(&run_word)) {
        ctx.stray(Role::A, &path);
    }
    let mut missing = Vec::new();
    for n in 0..8 {
        for i in 0..3 {
            let line = format!("{tag} writer {n} line {i}");
            if text.lines().filter(|l| *l == line).count() != 1 {
                missing.push(line);
            }
        }
    }
    if !missing.is_empty() {
        return Err(log.fail(format!(
            "{} of 24 concurrent appends are not in {path} exactly once, e.g. {:?}",
            missing.len(),
            missing[0]
        )));
    }
    if text.lines().filter(|l| l.starts_with(&tag)).count() != 24 {
        return Err(log.fail(format!("{path} should hold the run's 24 lines once each")));
    }
    Ok(Outcome::pass(
        "24 concurrent appends are each in today's log exactly once",
    ))
}

/// WS-MEM-002
pub(crate) async fn bad_lines_refused(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let tag = word(ctx, "n");
    for text in [format!("{tag}\nsecond"), "   ".to_owned(), "x".repeat(4097)] {
        let reply = a
            .call("POST", MEMORY)
            .json(&json!({ "text": text }))
            .send()
            .await?;
        reply.expect_error(400, "validation_error")?;
    }
    let reply = a
        .call("POST", MEMORY)
        .json(&json!({ "text": "a", "other": 1 }))
        .send()
        .await?;
    reply.expect_error(400, "validation_error")?;
    let reply = search(&a, &tag, "memory/").await?;
    let (found, _) = matches(&reply)?;
    if !found.is_empty() {
        return Err(reply.fail(format!("a refused line was written: {found:?}")));
    }
    Ok(Outcome::pass(
        "a line break, a blank line, over 4096 characters and an unknown key answer 400 and write nothing",
    ))
}
