//! The console in a real browser: headless Chromium driven over WebDriver. Ignored by a plain
//! `cargo test` (a machine may have no browser); `cargo xtask console` installs Chromium and
//! chromedriver when missing and runs them. Without a browser each test fails saying so.
//! Screenshots of the main pages land in `target/console/`.

mod support;

use std::time::Duration;

use serde_json::json;
use support::webdriver::Browser;
use support::{Host, start};

async fn sign_in(b: &Browser, host: &Host, key: &str) {
    b.goto(&host.url("/console/sign-in")).await;
    b.type_into("#key", key).await;
    // By keyboard: Enter in the key field submits the form.
    b.press_enter("#key").await;
    assert!(
        b.wait_for("return location.pathname === '/console/files'", 5)
            .await,
        "signed in: {} {}",
        b.url().await,
        b.source().await
    );
}

/// Waits until the page's live script follows the change feed.
async fn live(b: &Browser) -> bool {
    b.wait_for("return document.body.dataset.live === 'open'", 10)
        .await
}

async fn at(b: &Browser, path: &str) -> bool {
    b.wait_for(&format!("return location.pathname === '{path}'"), 5)
        .await
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Chromium and chromedriver: run `cargo xtask console`"]
async fn sign_in_and_sign_out() {
    let host = start(Duration::from_secs(600)).await;
    let b = Browser::start().await;
    b.goto(&host.url("/")).await;
    assert!(
        at(&b, "/console/sign-in").await,
        "/ leads to the sign-in page"
    );
    assert_eq!(
        b.script("return document.querySelector('#key').type", json!([]))
            .await,
        "password"
    );
    b.screenshot("sign-in").await;
    assert_eq!(
        b.unlabelled().await,
        json!([]),
        "sign-in: every control is labelled"
    );
    sign_in(&b, &host, &host.key_a).await;
    // The session cookie is HttpOnly: the page cannot read it, nor the key.
    assert_eq!(b.script("return document.cookie", json!([])).await, "");
    assert!(!b.source().await.contains(&host.key_a));
    b.click("form[action='/console/sign-out'] button").await;
    assert!(at(&b, "/console/sign-in").await);
    b.goto(&host.url("/console/files")).await;
    assert!(at(&b, "/console/sign-in").await, "signed out for good");
    b.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Chromium and chromedriver: run `cargo xtask console`"]
async fn a_wrong_key_is_refused() {
    let host = start(Duration::from_secs(600)).await;
    let b = Browser::start().await;
    b.goto(&host.url("/console/sign-in")).await;
    b.type_into("#key", "wsp_wrong_key").await;
    b.click("form[action='/console/sign-in'] button").await;
    assert!(
        b.wait_for(
            "const a = document.querySelector('[role=alert]'); return !!a && a.textContent.includes('not accepted')",
            5
        )
        .await
    );
    b.goto(&host.url("/console/files")).await;
    assert!(at(&b, "/console/sign-in").await);
    b.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Chromium and chromedriver: run `cargo xtask console`"]
async fn an_expired_session_asks_to_sign_in_again() {
    let host = start(Duration::from_secs(1)).await;
    let b = Browser::start().await;
    sign_in(&b, &host, &host.key_a).await;
    tokio::time::sleep(Duration::from_millis(1600)).await;
    b.goto(&host.url("/console/runs")).await;
    assert!(b.text("[role=alert]").await.contains("Sign in again"));
    assert!(b.has("#key").await, "the sign-in form is shown");
    b.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Chromium and chromedriver: run `cargo xtask console`"]
async fn browse_view_and_the_main_pages() {
    let host = start(Duration::from_secs(600)).await;
    host.put(
        &host.key_main,
        "AGENTS.md",
        "# Agent rules\n\nBe **brief**. Cite `knowledge/`.\n",
    )
    .await;
    host.put(
        &host.key_main,
        "DIRECTIVES.md",
        "- never delete MEMORY.md\n",
    )
    .await;
    host.put(
        &host.key_main,
        "MEMORY.md",
        "# Memory\n\n- 2026-05-25: the user prefers tea\n",
    )
    .await;
    host.put(
        &host.key_main,
        "knowledge/recipes.md",
        "# Recipes\n\n| dish | time |\n|---|---|\n| soup | 20 min |\n",
    )
    .await;
    host.put(&host.key_main, "knowledge/suppliers.md", "# Suppliers\n")
        .await;
    host.put(&host.key_main, "memory/2026-05-25.md", "- bought eggs\n")
        .await;
    let run = host.run(&host.key_main).await;
    let b = Browser::start().await;
    sign_in(&b, &host, &host.key_main).await;
    assert!(b.source().await.contains("knowledge/"));
    b.screenshot("files").await;
    assert_eq!(
        b.unlabelled().await,
        json!([]),
        "files: every control is labelled"
    );
    // Keyboard: the folder link opens with Enter.
    b.press_enter("a[href='/console/files?prefix=knowledge%2F']")
        .await;
    assert!(
        b.wait_for("return location.search.includes('knowledge')", 5)
            .await
    );
    b.type_into("#filter", "recip").await;
    b.click("form[role=search] button").await;
    assert!(
        b.wait_for("return location.search.includes('filter=recip')", 5)
            .await
    );
    assert!(b.has("a[href='/console/file/knowledge/recipes.md']").await);
    assert!(
        !b.has("a[href='/console/file/knowledge/suppliers.md']")
            .await
    );
    b.click("a[href='/console/file/knowledge/recipes.md']")
        .await;
    assert!(at(&b, "/console/file/knowledge/recipes.md").await);
    assert_eq!(b.text(".rendered h1").await, "Recipes");
    assert!(b.has(".rendered table").await, "Markdown tables render");
    assert!(b.text("dl.meta").await.contains("\""), "the etag is shown");
    b.screenshot("file").await;
    assert_eq!(
        b.unlabelled().await,
        json!([]),
        "file: every control is labelled"
    );
    b.goto(&host.url(&format!("/console/runs/{run}"))).await;
    assert!(b.source().await.contains("MEMORY.md"));
    b.screenshot("run").await;
    assert_eq!(
        b.unlabelled().await,
        json!([]),
        "run: every control is labelled"
    );
    b.goto(&host.url("/console/runs")).await;
    b.screenshot("runs").await;
    assert_eq!(
        b.unlabelled().await,
        json!([]),
        "runs: every control is labelled"
    );
    b.goto(&host.url("/console/context")).await;
    assert!(b.source().await.contains("Agent rules"));
    b.screenshot("context").await;
    assert_eq!(
        b.unlabelled().await,
        json!([]),
        "context: every control is labelled"
    );
    b.goto(&host.url("/console/agents")).await;
    assert!(b.source().await.contains("acme.cook"));
    b.screenshot("agents").await;
    assert_eq!(
        b.unlabelled().await,
        json!([]),
        "agents: every control is labelled"
    );
    // Phone width: nothing needs a horizontal scroll.
    b.window_size(390, 844).await;
    b.goto(&host.url("/console/files?prefix=knowledge%2F"))
        .await;
    let wide = b
        .script(
            "return document.documentElement.scrollWidth <= window.innerWidth + 1",
            json!([]),
        )
        .await;
    assert_eq!(wide, true, "the folder page fits a phone's width");
    b.screenshot("files-phone").await;
    b.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Chromium and chromedriver: run `cargo xtask console`"]
async fn edit_and_save() {
    let host = start(Duration::from_secs(600)).await;
    host.put(&host.key_a, "DIRECTIVES.md", "# Directives\n\n- be brief\n")
        .await;
    let b = Browser::start().await;
    sign_in(&b, &host, &host.key_a).await;
    b.goto(&host.url("/console/file/DIRECTIVES.md")).await;
    b.click("a[href='/console/edit/DIRECTIVES.md']").await;
    assert!(at(&b, "/console/edit/DIRECTIVES.md").await);
    assert_eq!(
        b.script("return document.querySelector('#content').value", json!([]))
            .await,
        "# Directives\n\n- be brief\n",
        "the editor holds the file exactly"
    );
    b.set_value("#content", "# Directives\n\n- be brief\n- cite sources\n")
        .await;
    b.screenshot("edit").await;
    assert_eq!(
        b.unlabelled().await,
        json!([]),
        "edit: every control is labelled"
    );
    b.click("form[action='/console/save'] button[type=submit]")
        .await;
    assert!(at(&b, "/console/file/DIRECTIVES.md").await);
    let now = host.get(&host.key_a, "DIRECTIVES.md").await;
    assert_eq!(
        now["content"],
        "# Directives\n\n- be brief\n- cite sources\n"
    );
    assert_eq!(now["version"], 2);
    // A new file, through the form.
    b.goto(&host.url("/console/new?prefix=notes%2F")).await;
    b.type_into("#path", "notes/today.md").await;
    b.set_value("#content", "# Today\n").await;
    b.click("form[action='/console/save'] button[type=submit]")
        .await;
    assert!(at(&b, "/console/file/notes/today.md").await);
    b.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Chromium and chromedriver: run `cargo xtask console`"]
async fn a_concurrent_write_mid_edit_is_shown_as_a_diff_and_merged() {
    let host = start(Duration::from_secs(600)).await;
    host.put(&host.key_a, "knowledge/faq.md", "# FAQ\n\nQ1\nQ2\n")
        .await;
    let b = Browser::start().await;
    sign_in(&b, &host, &host.key_a).await;
    b.goto(&host.url("/console/edit/knowledge/faq.md")).await;
    assert!(b.has("#content").await);
    // The live script follows the change feed before the other write.
    assert!(live(&b).await, "the change feed is followed");
    host.put(
        &host.key_a,
        "knowledge/faq.md",
        "# FAQ\n\nQ1 answered by the agent\nQ2\n",
    )
    .await;
    // The editor is told before saving.
    assert!(
        b.wait_for(
            "const n = document.getElementById('live'); return !n.hidden && n.textContent.includes('changed since you opened')",
            10
        )
        .await,
        "the stale-editor notice appears"
    );
    b.set_value("#content", "# FAQ\n\nQ1\nQ2\nQ3 from me\n")
        .await;
    b.click("form[action='/console/save'] button[type=submit]")
        .await;
    assert!(
        b.wait_for("return !!document.querySelector('.diff')", 5)
            .await,
        "the conflict page shows a diff"
    );
    let diff = b.text(".diff").await;
    assert!(diff.contains("Q1 answered by the agent"), "{diff}");
    assert!(diff.contains("Q3 from me"), "{diff}");
    b.screenshot("conflict").await;
    assert_eq!(
        b.unlabelled().await,
        json!([]),
        "conflict: every control is labelled"
    );
    // Merge: both changes.
    b.set_value(
        "#content",
        "# FAQ\n\nQ1 answered by the agent\nQ2\nQ3 from me\n",
    )
    .await;
    b.click("form[action='/console/save'] button[type=submit]")
        .await;
    assert!(at(&b, "/console/file/knowledge/faq.md").await);
    let now = host.get(&host.key_a, "knowledge/faq.md").await;
    assert_eq!(
        now["content"],
        "# FAQ\n\nQ1 answered by the agent\nQ2\nQ3 from me\n"
    );
    assert_eq!(now["version"], 3);
    b.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Chromium and chromedriver: run `cargo xtask console`"]
async fn history_diff_and_restore() {
    let host = start(Duration::from_secs(600)).await;
    host.put(&host.key_a, "MEMORY.md", "- likes tea\n").await;
    host.put(
        &host.key_a,
        "MEMORY.md",
        "- likes tea\n- allergic to nuts\n",
    )
    .await;
    host.put(&host.key_a, "MEMORY.md", "- (wiped by a bad run)\n")
        .await;
    let b = Browser::start().await;
    sign_in(&b, &host, &host.key_a).await;
    b.goto(&host.url("/console/history/MEMORY.md")).await;
    assert!(b.text("table").await.contains("alice"));
    b.screenshot("history").await;
    assert_eq!(
        b.unlabelled().await,
        json!([]),
        "history: every control is labelled"
    );
    b.script(
        "document.querySelector('#from').value = '2'; document.querySelector('#to').value = '3';",
        json!([]),
    )
    .await;
    b.click("form.inline button").await;
    assert!(
        b.wait_for("return !!document.querySelector('.diff')", 5)
            .await
    );
    assert!(b.text(".diff .removed").await.contains("likes tea"));
    assert!(b.text(".diff .added").await.contains("wiped"));
    b.screenshot("diff").await;
    assert_eq!(
        b.unlabelled().await,
        json!([]),
        "diff: every control is labelled"
    );
    b.goto(&host.url("/console/history/MEMORY.md")).await;
    b.click("button[aria-label='Restore version 2']").await;
    assert!(at(&b, "/console/file/MEMORY.md").await);
    let now = host.get(&host.key_a, "MEMORY.md").await;
    assert_eq!(now["content"], "- likes tea\n- allergic to nuts\n");
    assert_eq!(now["version"], 4);
    b.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Chromium and chromedriver: run `cargo xtask console`"]
async fn a_live_update_arrives_while_a_file_is_open() {
    let host = start(Duration::from_secs(600)).await;
    host.put(&host.key_a, "MEMORY.md", "- one\n").await;
    let b = Browser::start().await;
    sign_in(&b, &host, &host.key_a).await;
    b.goto(&host.url("/console/file/MEMORY.md")).await;
    assert!(b.has(".rendered").await);
    assert!(live(&b).await, "the change feed is followed");
    assert!(
        b.script("return document.getElementById('live').hidden", json!([]))
            .await
            == true
    );
    host.put(&host.key_a, "MEMORY.md", "- one\n- two\n").await;
    assert!(
        b.wait_for(
            "const n = document.getElementById('live'); return !n.hidden && n.textContent.includes('version (2)')",
            10
        )
        .await,
        "the open file says a newer version exists"
    );
    b.screenshot("live").await;
    // Another tenant's write to the same path is never announced here.
    b.goto(&host.url("/console/files")).await;
    assert!(live(&b).await, "the change feed is followed");
    host.put(&host.key_b, "MEMORY.md", "- other tenant\n").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        b.script("return document.getElementById('live').hidden", json!([]))
            .await
            == true
    );
    host.put(&host.key_a, "notes/new.md", "x").await;
    assert!(
        b.wait_for("return !document.getElementById('live').hidden", 10)
            .await,
        "the open folder learns of a new file"
    );
    b.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Chromium and chromedriver: run `cargo xtask console`"]
async fn a_read_only_key_cannot_edit_and_a_forged_post_is_refused() {
    let host = start(Duration::from_secs(600)).await;
    host.put(&host.key_a, "AGENTS.md", "# Rules\n").await;
    let b = Browser::start().await;
    sign_in(&b, &host, &host.key_a_read).await;
    b.goto(&host.url("/console/file/AGENTS.md")).await;
    assert!(b.has(".rendered").await);
    assert!(!b.has("a[href='/console/edit/AGENTS.md']").await, "no Edit");
    assert!(
        !b.has("a[href='/console/delete/AGENTS.md']").await,
        "no Delete"
    );
    // The editor reached by its URL saves nothing, and keeps the text.
    b.goto(&host.url("/console/edit/AGENTS.md")).await;
    b.set_value("#content", "# Rules, changed by a reader\n")
        .await;
    b.click("form[action='/console/save'] button[type=submit]")
        .await;
    assert!(
        b.wait_for("return !!document.querySelector('[role=alert]')", 5)
            .await
    );
    assert!(b.text("[role=alert]").await.contains("may not"));
    assert_eq!(
        b.script("return document.querySelector('#content').value", json!([]))
            .await,
        "# Rules, changed by a reader\n"
    );
    b.quit().await;

    // A writer's session, and a form posted without its token.
    let b = Browser::start().await;
    sign_in(&b, &host, &host.key_a).await;
    b.script(
        "const f = document.createElement('form'); f.method = 'post'; f.action = '/console/save';
         for (const [k, v] of [['csrf', 'forged'], ['path', 'AGENTS.md'], ['etag', ''], ['content', 'pwned']]) {
           const i = document.createElement('input'); i.type = 'hidden'; i.name = k; i.value = v; f.appendChild(i);
         }
         document.body.appendChild(f); f.submit();",
        json!([]),
    )
    .await;
    assert!(
        b.wait_for(
            "const a = document.querySelector('[role=alert]'); return !!a && a.textContent.includes('Refused')",
            5
        )
        .await
    );
    let now = host.get(&host.key_a, "AGENTS.md").await;
    assert_eq!(
        (now["content"].as_str(), now["version"].as_u64()),
        (Some("# Rules\n"), Some(1))
    );
    b.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Chromium and chromedriver: run `cargo xtask console`"]
async fn a_file_holding_an_xss_payload_renders_inert() {
    let host = start(Duration::from_secs(600)).await;
    let payload = "# Notes\n\n<script>window.__xss = 'script'</script>\n\n\
        <img src=x onerror=\"window.__xss = 'img'\">\n\n\
        <svg onload=\"window.__xss = 'svg'\"></svg>\n\n\
        [click me](javascript:window.__xss='link')\n\n\
        <a href=\"javascript:window.__xss='a'\">raw link</a>\n\n\
        <iframe srcdoc=\"<script>parent.__xss='iframe'</script>\"></iframe>\n";
    host.put(&host.key_a, "knowledge/evil.md", payload).await;
    host.put(&host.key_a, "knowledge/evil.html", payload).await;
    let b = Browser::start().await;
    sign_in(&b, &host, &host.key_a).await;
    for path in [
        "/console/file/knowledge/evil.md",
        "/console/file/knowledge/evil.md?source=1",
        "/console/file/knowledge/evil.html",
        "/console/edit/knowledge/evil.md",
        "/console/history/knowledge/evil.md",
    ] {
        b.goto(&host.url(path)).await;
        assert!(b.has("main").await);
        // Click every link the page shows for the payload, too.
        if path == "/console/file/knowledge/evil.md" {
            assert!(
                b.text(".rendered").await.contains("<script>"),
                "shown as text"
            );
            assert!(!b.has(".rendered a").await, "no link survives");
            b.screenshot("xss-inert").await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            b.script("return typeof window.__xss", json!([])).await,
            "undefined",
            "{path} ran the payload"
        );
        assert_eq!(b.alert().await, None, "{path} opened an alert");
    }
    b.quit().await;
}
