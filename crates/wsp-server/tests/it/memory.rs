//! The memory endpoints: `GET /v1/host/workspace/search` and `POST /v1/host/workspace/memory`,
//! owner-scoped, with their refusals.

use reqwest::StatusCode;
use serde_json::{Value, json};
use wsp_client::{Error, PutOptions};
use wsp_types::{ErrorCode, WorkspacePath};

use crate::support::start;

fn p(s: &str) -> WorkspacePath {
    WorkspacePath::parse(s).unwrap()
}

fn today_log() -> String {
    format!(
        "memory/{}.md",
        chrono::Utc::now().date_naive().format("%Y-%m-%d")
    )
}

/// Search answers the caller's best lines first, follows prefix and limit, and never shows
/// another tenant's text; bad queries are 400 with the field named.
#[tokio::test]
async fn search_ranks_the_callers_lines_only() {
    let s = start().await;
    let (a, b) = (s.a(), s.b());
    for (path, text) in [
        ("MEMORY.md", "# Memory\n- Friday deploys are off.\n"),
        ("memory/2026-01-02.md", "The friday deploy failed.\n"),
        ("knowledge/ops.md", "Deploy with care.\n"),
    ] {
        a.put(&p(path), text, PutOptions::default()).await.unwrap();
    }
    b.put(
        &p("MEMORY.md"),
        "Friday deploy secrets of B\n",
        PutOptions::default(),
    )
    .await
    .unwrap();
    let found = a.search("friday deploy", None, None).await.unwrap();
    let lines: Vec<(String, u64, i64)> = found
        .matches
        .iter()
        .map(|m| (m.path.to_string(), m.line.get(), m.score))
        .collect();
    assert_eq!(
        lines,
        [
            ("memory/2026-01-02.md".to_owned(), 1, 200),
            ("MEMORY.md".to_owned(), 2, 200),
            ("knowledge/ops.md".to_owned(), 1, 100),
        ]
    );
    assert_eq!((found.total, found.files_searched), (3, 3));
    assert!(!found.truncated);
    assert!(found.matches.iter().all(|m| !m.snippet.contains("B")));
    let some = a.search("deploy", Some("memory/"), Some(1)).await.unwrap();
    assert_eq!(some.matches.len(), 1);
    assert_eq!(some.matches[0].path.as_str(), "memory/2026-01-02.md");
    let theirs = b.search("friday", None, None).await.unwrap();
    assert_eq!(theirs.total, 1);
    assert_eq!(theirs.matches[0].snippet, "Friday deploy secrets of B");

    let c = reqwest::Client::new();
    let nothing = c
        .get(s.url("/v1/host/workspace/search?q=..."))
        .bearer_auth(&s.key_a)
        .send()
        .await
        .unwrap();
    assert_eq!(nothing.status(), StatusCode::OK, "no words match nothing");
    let nothing: Value = nothing.json().await.unwrap();
    assert_eq!(
        (nothing["total"].as_u64(), nothing["query"].as_str()),
        (Some(0), Some("..."))
    );
    let long = "a".repeat(257);
    for (query, field) in [
        ("", "q"),
        ("q=", "q"),
        (&*format!("q={long}"), "q"),
        ("q=a&limit=0", "limit"),
        ("q=a&limit=101", "limit"),
        ("q=a&prefix=/etc", "prefix"),
    ] {
        let resp = c
            .get(s.url(&format!("/v1/host/workspace/search?{query}")))
            .bearer_auth(&s.key_a)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{query}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"], "validation_error", "{query}: {body}");
        assert_eq!(body["details"]["field"], field, "{query}: {body}");
    }
    let unknown = c
        .get(s.url("/v1/host/workspace/search?q=a&x=1"))
        .bearer_auth(&s.key_a)
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), StatusCode::BAD_REQUEST);
    let anonymous = c
        .get(s.url("/v1/host/workspace/search?q=a"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
}

/// 8 clients append 5 lines each at once: today's log holds all 40, each once, and each
/// answer names the log, the line and a version that holds it; the author is the caller.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_never_lose_a_line() {
    let s = start().await;
    let mut tasks = Vec::new();
    for n in 0..8 {
        let client = s.a();
        tasks.push(tokio::spawn(async move {
            for i in 0..5 {
                let done = client
                    .append_memory(&format!("client {n} fact {i}"))
                    .await
                    .unwrap();
                assert_eq!(done.path.as_str(), today_log());
                assert!(done.line.get() >= 1 && done.line.get() <= 40);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let log = s.a().get(&p(&today_log()), None).await.unwrap();
    assert_eq!(log.content.lines().count(), 40, "{}", log.content);
    for n in 0..8 {
        for i in 0..5 {
            let line = format!("client {n} fact {i}");
            assert_eq!(
                log.content.lines().filter(|l| *l == line).count(),
                1,
                "{line}"
            );
        }
    }
    assert_eq!(log.version.get(), 40);
    assert_eq!(log.updated_by.as_deref(), Some("alice"));
}

/// A line with a break (a trailing one too), an empty one, one over 4096 characters and an
/// unknown key are 400 and write nothing; a read-only key is 403.
#[tokio::test]
async fn a_memory_line_is_one_line_of_text() {
    let s = start().await;
    let c = reqwest::Client::new();
    let post = |key: &str, body: Value| {
        c.post(s.url("/v1/host/workspace/memory"))
            .bearer_auth(key)
            .json(&body)
            .send()
    };
    for body in [
        json!({"text": "two\nlines"}),
        json!({"text": "trailing\n"}),
        json!({"text": "  "}),
        json!({"text": "x".repeat(4097)}),
        json!({"text": "a", "path": "x.md"}),
        json!({}),
    ] {
        let resp = post(&s.key_a, body.clone()).await.unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{body}");
    }
    assert!(matches!(
        s.a().get(&p(&today_log()), None).await,
        Err(Error::Api(e)) if e.code() == Some(ErrorCode::NotFound)
    ));
    let resp = post(&s.key_a_read, json!({"text": "no"})).await.unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let done = s.a().append_memory("kept").await.unwrap();
    assert_eq!((done.line.get(), done.version.get()), (1, 1));
    assert_eq!(
        s.a().get(&p(&today_log()), None).await.unwrap().content,
        "kept\n"
    );
    // Found by search at once.
    let found = s.a().search("kept", None, None).await.unwrap();
    assert_eq!(found.matches[0].path.as_str(), today_log());
}

/// Validates `value` against the document's component schema `name`.
fn valid(name: &str, value: &Value) {
    let doc = wsp_server::openapi::document();
    let root = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "components": doc["components"],
        "$ref": format!("#/components/schemas/{name}"),
    });
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .offline()
        .build(&root)
        .unwrap();
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{value} is not a {name}: {errors:?}");
}

/// The live context renders the caller's files within the budget, as JSON that is a
/// `WorkspaceContext` or as the text alone with `Accept: text/plain`; a run's context is what
/// the run saw, whatever was written since, and 404 once the run ended; bad budgets are 400.
#[tokio::test]
async fn the_context_is_rendered_live_and_as_a_run_saw_it() {
    let s = start().await;
    let a = s.a();
    a.put(
        &p("AGENTS.md"),
        "# Reviewer\nBe brief.\n",
        PutOptions::default(),
    )
    .await
    .unwrap();
    let memory: String = (1..=90).map(|i| format!("- fact {i}\n")).collect();
    a.put(&p("MEMORY.md"), &memory, PutOptions::default())
        .await
        .unwrap();
    let c = reqwest::Client::new();
    let get = |url: &str, accept: Option<&str>| {
        let mut req = c.get(s.url(url)).bearer_auth(&s.key_a);
        if let Some(accept) = accept {
            req = req.header("accept", accept);
        }
        req.send()
    };
    let resp = get("/v1/host/workspace/context?budget=300", None)
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let body: Value = resp.json().await.unwrap();
    valid("WorkspaceContext", &body);
    let text = body["text"].as_str().unwrap();
    assert!(text.contains("Be brief."), "{text}");
    assert!(text.contains("tokens omitted, read MEMORY.md]"), "{text}");
    assert!(body["report"]["usedTokens"].as_u64().unwrap() <= 300);
    assert!(text.chars().count().div_ceil(4) <= 300);
    assert!(text.starts_with("## Session Context\n"), "{text}");
    assert!(text.contains("## Workspace guidance"), "{text}");
    let plain = get("/v1/host/workspace/context?budget=300", Some("text/plain"))
        .await
        .unwrap();
    assert_eq!(plain.status(), StatusCode::OK);
    assert_eq!(plain.headers()["content-type"], "text/plain; charset=utf-8");
    assert_eq!(plain.text().await.unwrap(), text);
    let typed = a.context(Some(300)).await.unwrap();
    assert_eq!(typed.text, text);
    assert_eq!(typed.report.budget_tokens.to_string(), "300");

    let run = a.create_run("review").await.unwrap();
    a.put(&p("AGENTS.md"), "# Changed\n", PutOptions::default())
        .await
        .unwrap();
    let url = format!("/v1/runs/{}/context", run.run_id);
    let seen: Value = get(&url, None).await.unwrap().json().await.unwrap();
    valid("WorkspaceContext", &seen);
    assert!(
        seen["text"].as_str().unwrap().contains("Be brief."),
        "{seen}"
    );
    let live: Value = get("/v1/host/workspace/context", None)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(live["text"].as_str().unwrap().contains("# Changed"));
    assert_eq!(live["report"]["budgetTokens"], 8000);
    // Another tenant's key does not find the run.
    let theirs = c
        .get(s.url(&url))
        .bearer_auth(&s.key_b)
        .send()
        .await
        .unwrap();
    assert_eq!(theirs.status(), StatusCode::NOT_FOUND);
    a.cancel_run(&run.run_id).await.unwrap();
    assert_eq!(
        get(&url, None).await.unwrap().status(),
        StatusCode::NOT_FOUND
    );

    for query in [
        "budget=0",
        "budget=1000001",
        "budget=x",
        "budget=10&extra=AGENTS.md",
    ] {
        let resp = get(&format!("/v1/host/workspace/context?{query}"), None)
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{query}");
    }
    // A strict budget too small for anything still answers, and says so.
    let tiny: Value = get("/v1/host/workspace/context?budget=1&strict=true", None)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    valid("WorkspaceContext", &tiny);
    assert_eq!(tiny["report"]["collapsed"], true, "{tiny}");
    // Not strict, AGENTS.md is loaded in full anyway, and that is said first.
    let loose: Value = get("/v1/host/workspace/context?budget=1", None)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    valid("WorkspaceContext", &loose);
    assert_eq!(loose["report"]["overBudget"], true, "{loose}");
    let text = loose["text"].as_str().unwrap();
    assert!(
        text.starts_with("[OVER BUDGET: a budget of 1 tokens"),
        "{text}"
    );
    assert!(text.contains("# Changed"), "{text}");
    let bad = get("/v1/host/workspace/context?strict=yes", None)
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
}
