//! RFC 0059 §D (runs see an immutable run-start snapshot) and WIRE §5 (the change feed), through
//! `wsp-client`. Gated on the `wsp.runs` / `wsp.events` extension flags of discovery.

use std::time::Duration;

use wsp_client::{Client, EventStream, FeedItem, PutOptions};
use wsp_types::WorkspacePath;

use crate::outcome::Outcome;
use crate::scenario::{Ctx, ScenarioResult};

/// How long a scenario waits for one event.
const EVENT_WAIT: Duration = Duration::from_secs(10);

fn client(ctx: &Ctx, key: Option<&str>, who: &str) -> Result<Client, Outcome> {
    let key = key.ok_or_else(|| Outcome::blocked(format!("needs {who}")))?;
    Client::builder(&ctx.config().base_url)
        .timeout(None)
        .connect_timeout(ctx.config().request_timeout)
        .ca_certs(ctx.config().ca_certs.clone())
        .key(key)
        .build()
        .map_err(|e| Outcome::fail(format!("cannot build the client: {e}")))
}

/// A client acting as owner A, for long-lived feeds (no request timeout).
pub(crate) fn a(ctx: &Ctx) -> Result<Client, Outcome> {
    client(ctx, ctx.config().key_a.as_deref(), "owner A (--key-a)")
}

fn b(ctx: &Ctx) -> Result<Client, Outcome> {
    client(ctx, ctx.config().key_b.as_deref(), "owner B (--key-b)")
}

fn path(ctx: &Ctx, name: &str) -> Result<WorkspacePath, Outcome> {
    WorkspacePath::parse(&ctx.path(name))
        .map_err(|e| Outcome::fail(format!("bad scenario path: {e}")))
}

fn failed(what: &str) -> impl Fn(wsp_client::Error) -> Outcome + '_ {
    move |e| Outcome::fail(format!("{what}: {e}"))
}

async fn put(c: &Client, p: &WorkspacePath, content: &str) -> Result<u64, Outcome> {
    let f = c
        .put(p, content, PutOptions::default())
        .await
        .map_err(failed("PUT"))?;
    Ok(f.version.get())
}

/// WS-RUN-001
pub(crate) async fn writes_after_start_are_invisible(ctx: &Ctx) -> ScenarioResult {
    let a = a(ctx)?;
    let p = path(ctx, "AGENTS.md")?;
    put(&a, &p, "as the run starts").await?;
    let run = a
        .create_run("conformance")
        .await
        .map_err(failed("POST /v1/runs"))?;
    put(&a, &p, "written during the run").await?;
    let later = path(ctx, "later.md")?;
    put(&a, &later, "created during the run").await?;
    let seen = a
        .get_run_file(&run.run_id, &p)
        .await
        .map_err(failed("snapshot read"))?;
    if seen.content != "as the run starts" || seen.version.get() != 1 {
        return Err(Outcome::fail(format!(
            "the run's snapshot shows version {} {:?}, not version 1 as of run start",
            seen.version, seen.content
        )));
    }
    match a.get_run_file(&run.run_id, &later).await {
        Err(e) if e.api().is_some_and(|x| x.status == 404) => {}
        other => {
            return Err(Outcome::fail(format!(
                "a file created after the run started is visible to it: {other:?}"
            )));
        }
    }
    let next = a
        .create_run("conformance")
        .await
        .map_err(failed("POST /v1/runs"))?;
    let now = a
        .get_run_file(&next.run_id, &p)
        .await
        .map_err(failed("next run's read"))?;
    if now.content != "written during the run" {
        return Err(Outcome::fail("the next run does not see the write"));
    }
    let _ = a.cancel_run(&run.run_id).await;
    let _ = a.cancel_run(&next.run_id).await;
    Ok(Outcome::pass(
        "a write after POST /v1/runs is invisible to that run and visible to the next",
    ))
}

/// WS-RUN-002
pub(crate) async fn snapshot_survives_delete_and_recreate(ctx: &Ctx) -> ScenarioResult {
    let a = a(ctx)?;
    let p = path(ctx, "MEMORY.md")?;
    put(&a, &p, "first life v1").await?;
    put(&a, &p, "first life v2").await?;
    let run = a
        .create_run("conformance")
        .await
        .map_err(failed("POST /v1/runs"))?;
    let before = a
        .get_run_file(&run.run_id, &p)
        .await
        .map_err(failed("snapshot read"))?;
    a.delete(&p, None).await.map_err(failed("DELETE"))?;
    let after_delete = a
        .get_run_file(&run.run_id, &p)
        .await
        .map_err(failed("snapshot read after delete"))?;
    put(&a, &p, "second life").await?;
    let after_recreate = a
        .get_run_file(&run.run_id, &p)
        .await
        .map_err(failed("snapshot read after re-create"))?;
    let listed = a
        .list_run_files(&run.run_id, Some(&ctx.prefix()))
        .await
        .map_err(failed("snapshot list"))?;
    let _ = a.cancel_run(&run.run_id).await;
    if before != after_delete || before != after_recreate {
        return Err(Outcome::fail(
            "the snapshot's answer changed after a delete and re-create",
        ));
    }
    if listed.files.len() != 1 || listed.files[0].version.get() != 2 {
        return Err(Outcome::fail(format!(
            "the snapshot lists {:?}",
            listed.files
        )));
    }
    Ok(Outcome::pass(
        "the snapshot answers the same after a delete and a re-create of the path",
    ))
}

/// WS-RUN-003
pub(crate) async fn ended_runs_release_their_snapshot(ctx: &Ctx) -> ScenarioResult {
    let a = a(ctx)?;
    let p = path(ctx, "a.md")?;
    put(&a, &p, "x").await?;
    let run = a
        .create_run("conformance")
        .await
        .map_err(failed("POST /v1/runs"))?;
    let ended = a.cancel_run(&run.run_id).await.map_err(failed("cancel"))?;
    if ended.status != wsp_types::wire::RunStatus::Cancelled {
        return Err(Outcome::fail(format!(
            "status after cancel is {}",
            ended.status
        )));
    }
    match a.get_run_file(&run.run_id, &p).await {
        Err(e) if e.api().is_some_and(|x| x.status == 404) => {}
        other => {
            return Err(Outcome::fail(format!(
                "an ended run's snapshot is still readable: {other:?}"
            )));
        }
    }
    Ok(Outcome::pass(
        "a cancelled run reports `cancelled` and its snapshot reads answer 404",
    ))
}

/// WS-RUN-004
pub(crate) async fn other_owner_sees_no_run(ctx: &Ctx) -> ScenarioResult {
    let (a, b) = (a(ctx)?, b(ctx)?);
    let p = path(ctx, "private.md")?;
    put(&a, &p, "A's").await?;
    let run = a
        .create_run("conformance")
        .await
        .map_err(failed("POST /v1/runs"))?;
    let unknown = "0".repeat(32);
    let answers = [
        (
            b.get_run(&run.run_id).await.map(|_| ()),
            b.get_run(&unknown).await.map(|_| ()),
        ),
        (
            b.list_run_files(&run.run_id, None).await.map(|_| ()),
            b.list_run_files(&unknown, None).await.map(|_| ()),
        ),
        (
            b.get_run_file(&run.run_id, &p).await.map(|_| ()),
            b.get_run_file(&unknown, &p).await.map(|_| ()),
        ),
    ];
    let _ = a.cancel_run(&run.run_id).await;
    for (theirs, never) in answers {
        let (Err(t), Err(n)) = (theirs, never) else {
            return Err(Outcome::fail("owner B could read owner A's run"));
        };
        let (t, n) = (t.api().cloned(), n.api().cloned());
        let same = match (&t, &n) {
            (Some(t), Some(n)) => t.status == 404 && t.status == n.status && t.error == n.error,
            _ => false,
        };
        if !same {
            return Err(Outcome::fail(format!(
                "B's answer for A's run {t:?} differs from an unknown run's {n:?}"
            )));
        }
    }
    Ok(Outcome::pass(
        "B's reads of A's run answer exactly like an unknown run (404)",
    ))
}

/// WS-RUN-005
pub(crate) async fn runs_are_listed_newest_first(ctx: &Ctx) -> ScenarioResult {
    let (a, b) = (a(ctx)?, b(ctx)?);
    let mut mine = Vec::new();
    for _ in 0..3 {
        let run = a
            .create_run("conformance-list")
            .await
            .map_err(failed("POST /v1/runs"))?;
        mine.push(run.run_id);
    }
    // Other scenarios start runs too: walk the pages and keep the order of these three.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..200 {
        let page = a
            .list_runs(Some(2), cursor.as_deref())
            .await
            .map_err(failed("GET /v1/runs"))?;
        if page.runs.len() > 2 {
            return Err(Outcome::fail(format!(
                "limit=2 answered {} runs",
                page.runs.len()
            )));
        }
        seen.extend(
            page.runs
                .iter()
                .filter(|r| mine.contains(&r.run_id))
                .map(|r| r.run_id.clone()),
        );
        cursor = page.next_cursor;
        if seen.len() == mine.len() || cursor.is_none() {
            break;
        }
    }
    let theirs = b
        .list_runs(None, None)
        .await
        .map_err(failed("B's GET /v1/runs"))?;
    for id in &mine {
        let _ = a.cancel_run(id).await;
    }
    let newest_first: Vec<String> = mine.iter().rev().cloned().collect();
    if seen != newest_first {
        return Err(Outcome::fail(format!(
            "A's three runs were listed as {seen:?}, want {newest_first:?} (newest first, each once)"
        )));
    }
    if theirs.runs.iter().any(|r| mine.contains(&r.run_id)) {
        return Err(Outcome::fail("owner B's listing shows owner A's runs"));
    }
    Ok(Outcome::pass(
        "three runs listed newest first across pages of 2; none in owner B's listing",
    ))
}

async fn next_update(stream: &mut EventStream) -> Result<wsp_types::wire::WorkspaceEvent, Outcome> {
    match tokio::time::timeout(EVENT_WAIT, stream.next()).await {
        Ok(Some(Ok(FeedItem::Updated(e)))) => Ok(e),
        Ok(Some(Ok(FeedItem::Error(e)))) => Err(Outcome::fail(format!(
            "error event {}: {}",
            e.error, e.message
        ))),
        Ok(Some(Ok(other))) => Err(Outcome::fail(format!("an unexpected feed item: {other:?}"))),
        Ok(Some(Err(e))) => Err(Outcome::fail(format!("the feed broke: {e}"))),
        Ok(None) => Err(Outcome::fail("the feed closed")),
        Err(_) => Err(Outcome::fail(format!("no event within {EVENT_WAIT:?}"))),
    }
}

/// Reads events until one of `path` arrives (other scenarios write concurrently).
async fn next_for(
    stream: &mut EventStream,
    path: &WorkspacePath,
) -> Result<wsp_types::wire::WorkspaceEvent, Outcome> {
    loop {
        let e = next_update(stream).await?;
        if &e.payload.path == path {
            return Ok(e);
        }
    }
}

/// WS-EVT-001
pub(crate) async fn events_in_commit_order(ctx: &Ctx) -> ScenarioResult {
    let a = a(ctx)?;
    let p = path(ctx, "feed.md")?;
    let mut feed = a
        .events(None)
        .await
        .map_err(failed("GET /v1/host/workspace/events"))?;
    put(&a, &p, "1").await?;
    put(&a, &p, "2").await?;
    a.delete(&p, None).await.map_err(failed("DELETE"))?;
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(next_for(&mut feed, &p).await?);
    }
    let versions: Vec<u64> = seen.iter().map(|e| e.payload.version.get()).collect();
    if versions != [1, 2, 3] {
        return Err(Outcome::fail(format!(
            "versions {versions:?}, want [1, 2, 3] (the delete's is the tombstone's)"
        )));
    }
    if !seen.windows(2).all(|w| w[0].sequence < w[1].sequence)
        || seen.iter().any(|e| e.type_ != "workspace.updated")
    {
        return Err(Outcome::fail(
            "events are not in increasing sequence order, or not workspace.updated",
        ));
    }
    Ok(Outcome::pass(
        "write, write, delete arrive in order with versions 1, 2, 3 and increasing ids",
    ))
}

/// WS-EVT-004
pub(crate) async fn delete_events_say_so(ctx: &Ctx) -> ScenarioResult {
    let a = a(ctx)?;
    let p = path(ctx, "feed-delete.md")?;
    let mut feed = a
        .events(None)
        .await
        .map_err(failed("GET /v1/host/workspace/events"))?;
    put(&a, &p, "1").await?;
    a.delete(&p, None).await.map_err(failed("DELETE"))?;
    let write = next_for(&mut feed, &p).await?;
    let delete = next_for(&mut feed, &p).await?;
    match (write.payload.deleted, delete.payload.deleted) {
        (None, Some(true)) => Ok(Outcome::pass(
            "the delete's payload has deleted: true, the write's has no deleted key",
        )),
        (w, d) => Err(Outcome::fail(format!(
            "deleted is {w:?} on the write and {d:?} on the delete; want absent and true"
        ))),
    }
}

/// WS-EVT-002
pub(crate) async fn resume_without_gap_or_duplicate(ctx: &Ctx) -> ScenarioResult {
    let a = a(ctx)?;
    let p = path(ctx, "resume.md")?;
    let mut first = a
        .events(None)
        .await
        .map_err(failed("GET /v1/host/workspace/events"))?;
    put(&a, &p, "1").await?;
    let one = next_for(&mut first, &p).await?;
    drop(first);
    put(&a, &p, "2").await?;
    put(&a, &p, "3").await?;
    let mut resumed = a
        .events(Some(one.sequence.get()))
        .await
        .map_err(failed("resume with Last-Event-ID"))?;
    let mut got = Vec::new();
    let mut last = one.sequence.get();
    while got.len() < 2 {
        let e = next_update(&mut resumed).await?;
        if e.sequence.get() != last + 1 {
            return Err(Outcome::fail(format!(
                "after {last} came {}: a gap or a duplicate",
                e.sequence
            )));
        }
        last = e.sequence.get();
        if e.payload.path == p {
            got.push(e.payload.version.get());
        }
    }
    if got != [2, 3] {
        return Err(Outcome::fail(format!(
            "after Last-Event-ID the path's versions were {got:?}, want [2, 3]"
        )));
    }
    Ok(Outcome::pass(
        "Last-Event-ID resumes right after the last event: consecutive ids, no gap, no duplicate",
    ))
}

/// WS-EVT-003
pub(crate) async fn other_owner_never_sees_events(ctx: &Ctx) -> ScenarioResult {
    let (a, b) = (a(ctx)?, b(ctx)?);
    let secret = path(ctx, "a-private.md")?;
    let marker = path(ctx, "b-marker.md")?;
    let mut b_feed = b.events(None).await.map_err(failed("B's feed"))?;
    put(&a, &secret, "A only").await?;
    put(&b, &marker, "B's").await?;
    loop {
        let e = next_update(&mut b_feed).await?;
        if e.payload.path == secret {
            let _ = b.delete(&marker, None).await;
            return Err(Outcome::fail("B's feed carried owner A's write"));
        }
        if e.payload.path == marker {
            break;
        }
    }
    let _ = b.delete(&marker, None).await;
    Ok(Outcome::pass("B's feed shows B's write and never A's"))
}
