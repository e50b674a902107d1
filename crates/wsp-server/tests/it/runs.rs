//! Runs, their snapshots (RFC 0059 §D, WIRE.md §6), and the change feed (WIRE.md §5).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use wsp_client::{FeedItem, PutOptions};
use wsp_server::ServerConfig;
use wsp_store::{Limits, MemoryStore, WorkspaceStore};
use wsp_types::wire::RunStatus;
use wsp_types::{ErrorCode, WorkspacePath};

use crate::support;
use crate::support::{Options, start, start_with};

fn p(s: &str) -> WorkspacePath {
    WorkspacePath::parse(s).unwrap()
}

#[tokio::test]
async fn a_run_sees_the_workspace_as_it_was_when_it_started() {
    let s = start().await;
    let a = s.a();
    a.put(&p("AGENTS.md"), "be careful", PutOptions::default())
        .await
        .unwrap();
    a.put(&p("MEMORY.md"), "remember", PutOptions::default())
        .await
        .unwrap();
    let run = a.create_run("nightly").await.unwrap();
    assert_eq!(run.status, RunStatus::Running);
    assert_eq!(
        run.status_url.as_deref(),
        Some(format!("/v1/runs/{}", run.run_id).as_str())
    );
    assert!(
        run.events_url
            .starts_with("/v1/host/workspace/events?since=")
    );
    // Changes after the run started.
    a.put(&p("AGENTS.md"), "be bold", PutOptions::default())
        .await
        .unwrap();
    a.delete(&p("MEMORY.md"), None).await.unwrap();
    a.put(&p("MEMORY.md"), "a new life", PutOptions::default())
        .await
        .unwrap();
    a.put(&p("new.md"), "later", PutOptions::default())
        .await
        .unwrap();

    let files = a.list_run_files(&run.run_id, None).await.unwrap();
    let seen: Vec<(&str, u64)> = files
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.version.get()))
        .collect();
    assert_eq!(seen, [("AGENTS.md", 1), ("MEMORY.md", 1)]);
    assert_eq!(
        a.get_run_file(&run.run_id, &p("AGENTS.md"))
            .await
            .unwrap()
            .content,
        "be careful"
    );
    assert_eq!(
        a.get_run_file(&run.run_id, &p("MEMORY.md"))
            .await
            .unwrap()
            .content,
        "remember"
    );
    let missing = a.get_run_file(&run.run_id, &p("new.md")).await.unwrap_err();
    assert_eq!(missing.code(), Some(ErrorCode::NotFound));

    let doc = a.get_run(&run.run_id).await.unwrap();
    assert_eq!(doc.workflow_id, "nightly");
    assert_eq!(doc.status, RunStatus::Running);
    assert_eq!(doc.owner.tenant, "tenant-a");
    let ws: Vec<(&str, u64)> = doc
        .workspace
        .iter()
        .map(|e| (e.path.as_str(), e.version.get()))
        .collect();
    assert_eq!(ws, [("AGENTS.md", 1), ("MEMORY.md", 1)]);

    // The next run sees the writes.
    let next = a.create_run("nightly").await.unwrap();
    assert_eq!(
        a.get_run_file(&next.run_id, &p("AGENTS.md"))
            .await
            .unwrap()
            .content,
        "be bold"
    );
    assert_eq!(
        a.list_run_files(&next.run_id, None)
            .await
            .unwrap()
            .files
            .len(),
        3
    );
}

/// `GET /v1/runs`: the caller's runs newest first, in pages that a run started meanwhile
/// never shifts, running and ended alike; bad parameters are 400 naming the field.
#[tokio::test]
async fn runs_are_listed_newest_first_in_pages() {
    let s = start().await;
    let a = s.a();
    let mut started = Vec::new();
    for i in 0..5 {
        started.push(a.create_run(&format!("flow-{i}")).await.unwrap().run_id);
    }
    a.cancel_run(&started[1]).await.unwrap();
    let newest_first: Vec<String> = started.iter().rev().cloned().collect();

    let first = a.list_runs(Some(2), None).await.unwrap();
    let ids = |page: &wsp_types::wire::RunList| {
        page.runs
            .iter()
            .map(|r| r.run_id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&first), newest_first[..2]);
    assert_eq!(first.runs[0].workflow_id, "flow-4");
    a.create_run("late").await.unwrap();
    let second = a
        .list_runs(Some(2), first.next_cursor.as_deref())
        .await
        .unwrap();
    assert_eq!(ids(&second), newest_first[2..4]);
    let third = a
        .list_runs(Some(2), second.next_cursor.as_deref())
        .await
        .unwrap();
    assert_eq!(ids(&third), newest_first[4..]);
    assert_eq!(third.next_cursor, None, "a short page is the last");
    let all = a.list_runs(None, None).await.unwrap();
    assert_eq!(all.runs.len(), 6);
    assert_eq!(all.runs[0].workflow_id, "late");
    let cancelled = all.runs.iter().find(|r| r.run_id == started[1]).unwrap();
    assert_eq!(cancelled.status, RunStatus::Cancelled);
    assert!(cancelled.ended_at.is_some());
    assert!(
        all.runs
            .iter()
            .filter(|r| r.run_id != started[1])
            .all(|r| r.status == RunStatus::Running && r.ended_at.is_none())
    );

    for (query, field) in [
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("limit=x", "limit"),
        ("cursor=nope", "cursor"),
        ("cursor=12-0123456789abcdef0123456789abcdeZ", "cursor"),
    ] {
        let r = reqwest::Client::new()
            .get(format!("{}/v1/runs?{query}", s.base))
            .bearer_auth(&s.key_a)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{query}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["details"]["field"], field, "{query}: {body}");
    }
    let r = reqwest::Client::new()
        .get(format!("{}/v1/runs?order=oldest", s.base))
        .bearer_auth(&s.key_a)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    // A cursor from far in the future reads from the newest.
    let future = format!("9999999999999999999-{}", started[0]);
    assert_eq!(
        a.list_runs(None, Some(&future)).await.unwrap().runs.len(),
        6
    );
}

/// Another owner's runs are never listed, and listing needs `runs:read`.
#[tokio::test]
async fn listed_runs_belong_to_their_owner() {
    let s = start().await;
    let mine = s.a().create_run("mine").await.unwrap().run_id;
    let theirs = s
        .client(&s.key_b)
        .create_run("theirs")
        .await
        .unwrap()
        .run_id;
    let listed = s.a().list_runs(None, None).await.unwrap();
    assert_eq!(
        listed
            .runs
            .iter()
            .map(|r| r.run_id.as_str())
            .collect::<Vec<_>>(),
        [mine.as_str()]
    );
    let other = s.client(&s.key_b).list_runs(None, None).await.unwrap();
    assert_eq!(other.runs.len(), 1);
    assert_eq!(other.runs[0].run_id, theirs);
    let denied = s
        .client(&s.key_a_read)
        .list_runs(None, None)
        .await
        .unwrap_err();
    assert_eq!(denied.code(), Some(ErrorCode::Forbidden));
}

#[tokio::test]
async fn cancelling_ends_the_run_and_its_snapshot() {
    let s = start().await;
    let a = s.a();
    a.put(&p("a.md"), "x", PutOptions::default()).await.unwrap();
    let run = a.create_run("w").await.unwrap();
    let ended = a.cancel_run(&run.run_id).await.unwrap();
    assert_eq!(ended.status, RunStatus::Cancelled);
    assert!(ended.ended_at.is_some());
    assert!(ended.workspace.is_empty());
    let again = a.cancel_run(&run.run_id).await.unwrap();
    assert_eq!(
        again.status,
        RunStatus::Cancelled,
        "cancelling twice keeps the outcome"
    );
    for e in [
        a.list_run_files(&run.run_id, None).await.unwrap_err(),
        a.get_run_file(&run.run_id, &p("a.md")).await.unwrap_err(),
    ] {
        assert_eq!(e.code(), Some(ErrorCode::NotFound));
    }
    assert_eq!(
        a.get_run(&run.run_id).await.unwrap().status,
        RunStatus::Cancelled
    );
}

#[tokio::test]
async fn runs_end_by_themselves_after_their_time_to_live() {
    let s = start_with(Options {
        config: ServerConfig::default().with_run_ttl(Duration::from_secs(1)),
        ..Options::default()
    })
    .await;
    let a = s.a();
    let run = a.create_run("short").await.unwrap();
    assert_eq!(
        a.get_run(&run.run_id).await.unwrap().status,
        RunStatus::Running
    );
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        a.get_run(&run.run_id).await.unwrap().status,
        RunStatus::Completed
    );
    let e = a.list_run_files(&run.run_id, None).await.unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::NotFound));
}

#[tokio::test]
async fn expired_runs_are_ended_without_being_read() {
    let store = Arc::new(MemoryStore::default());
    let s = start_with(Options {
        config: ServerConfig::default().with_run_ttl(Duration::from_secs(1)),
        store: Some(store.clone()),
        ..Options::default()
    })
    .await;
    let run = s.a().create_run("abandoned").await.unwrap();
    let cutoff = || chrono::Utc::now() + chrono::Duration::seconds(10);
    let open = |v: Vec<(wsp_types::Owner, wsp_store::SnapshotInfo)>| {
        v.into_iter()
            .map(|(_, i)| i.id.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        open(store.open_snapshots_before(cutoff(), 10).await.unwrap()),
        std::slice::from_ref(&run.run_id)
    );
    // The sweep runs every second with this time to live; nobody reads the run.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !open(store.open_snapshots_before(cutoff(), 10).await.unwrap()).is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the expired run was never ended"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        s.a().get_run(&run.run_id).await.unwrap().status,
        RunStatus::Completed
    );
}

#[tokio::test]
async fn ended_runs_are_forgotten_after_the_retention() {
    let s = start_with(Options {
        config: ServerConfig::default().with_ended_run_retention(Duration::from_secs(1)),
        ..Options::default()
    })
    .await;
    let a = s.a();
    let ended = a.create_run("ended").await.unwrap();
    let running = a.create_run("running").await.unwrap();
    a.cancel_run(&ended.run_id).await.unwrap();
    // Within the retention the ended run answers its status.
    assert_eq!(wsp_server::sweep_runs(&s.state).await.unwrap().forgotten, 0);
    assert_eq!(
        a.get_run(&ended.run_id).await.unwrap().status,
        RunStatus::Cancelled
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        wsp_server::sweep_runs(&s.state).await.unwrap(),
        wsp_server::RunSweep {
            ended: 0,
            forgotten: 1
        }
    );
    let e = a.get_run(&ended.run_id).await.unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::NotFound));
    assert_eq!(
        a.get_run(&running.run_id).await.unwrap().status,
        RunStatus::Running
    );
}

#[tokio::test]
async fn the_sweep_ends_only_expired_runs() {
    let store = Arc::new(MemoryStore::default());
    let s = start_with(Options {
        store: Some(store.clone()),
        ..Options::default()
    })
    .await;
    // The default time to live is far away: the sweep leaves the run and a bare snapshot open.
    let run = s.a().create_run("long").await.unwrap();
    let owner = wsp_types::Owner::parse("tenant-a", "default").unwrap();
    store.snapshot(&owner, &"not a run".into()).await.unwrap();
    assert_eq!(
        wsp_server::sweep_runs(&s.state).await.unwrap(),
        wsp_server::RunSweep::default()
    );
    assert_eq!(
        s.a().get_run(&run.run_id).await.unwrap().status,
        RunStatus::Running
    );
}

#[tokio::test]
async fn runs_belong_to_their_owner_and_need_their_scopes() {
    let s = start().await;
    s.a()
        .put(&p("secret.md"), "A", PutOptions::default())
        .await
        .unwrap();
    let run = s.a().create_run("w").await.unwrap();
    let c = reqwest::Client::new();
    let unknown = "0".repeat(32);
    for (theirs, never) in [
        (
            format!("/v1/runs/{}", run.run_id),
            format!("/v1/runs/{unknown}"),
        ),
        (
            format!("/v1/runs/{}/workspace/files", run.run_id),
            format!("/v1/runs/{unknown}/workspace/files"),
        ),
        (
            format!("/v1/runs/{}/workspace/files/secret.md", run.run_id),
            format!("/v1/runs/{unknown}/workspace/files/secret.md"),
        ),
    ] {
        let r1 = c
            .get(s.url(&theirs))
            .bearer_auth(&s.key_b)
            .send()
            .await
            .unwrap();
        let r2 = c
            .get(s.url(&never))
            .bearer_auth(&s.key_b)
            .send()
            .await
            .unwrap();
        assert_eq!((r1.status().as_u16(), r2.status().as_u16()), (404, 404));
        let (b1, b2) = (r1.text().await.unwrap(), r2.text().await.unwrap());
        assert_eq!(b1.replace(&run.run_id, &unknown), b2, "{theirs}");
    }
    let cancel = c
        .post(s.url(&format!("/v1/runs/{}/cancel", run.run_id)))
        .bearer_auth(&s.key_b)
        .send()
        .await
        .unwrap();
    assert_eq!(cancel.status(), 404);
    assert_eq!(
        s.a().get_run(&run.run_id).await.unwrap().status,
        RunStatus::Running
    );
    // A key without runs:create cannot start one.
    let denied = c
        .post(s.url("/v1/runs"))
        .bearer_auth(&s.key_a_read)
        .json(&json!({"workflowId": "w"}))
        .send()
        .await
        .unwrap();
    assert_eq!(denied.status(), 403);
    let body: Value = denied.json().await.unwrap();
    assert_eq!(body["details"]["requiredScope"], "runs:create");
    // Bad bodies.
    for body in [
        json!({}),
        json!({"workflowId": ""}),
        json!({"workflowId": 5}),
    ] {
        let r = c
            .post(s.url("/v1/runs"))
            .bearer_auth(&s.key_a)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{body}");
    }
    let r = c
        .get(s.url("/v1/runs/not-a-run-id"))
        .bearer_auth(&s.key_a)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

async fn next_update(stream: &mut wsp_client::EventStream) -> wsp_types::wire::WorkspaceEvent {
    match tokio::time::timeout(Duration::from_secs(10), stream.next()).await {
        Ok(Some(Ok(FeedItem::Updated(e)))) => e,
        other => panic!("expected an update, got {other:?}"),
    }
}

#[tokio::test]
async fn the_feed_streams_changes_in_order_and_resumes_without_gaps() {
    let s = start().await;
    let a = s.a();
    a.put(
        &p("before.md"),
        "not in the live tail",
        PutOptions::default(),
    )
    .await
    .unwrap();
    let mut live = a.events(None).await.unwrap();
    a.put(&p("a.md"), "1", PutOptions::default()).await.unwrap();
    a.put(&p("a.md"), "2", PutOptions::default()).await.unwrap();
    a.delete(&p("a.md"), None).await.unwrap();
    let got: Vec<(u64, String, u64)> = {
        let mut v = Vec::new();
        for _ in 0..3 {
            let e = next_update(&mut live).await;
            assert_eq!(e.type_, "workspace.updated");
            v.push((
                e.sequence.get(),
                e.payload.path.into_string(),
                e.payload.version.get(),
            ));
        }
        v
    };
    assert_eq!(
        got,
        [
            (2, "a.md".into(), 1),
            (3, "a.md".into(), 2),
            (4, "a.md".into(), 3)
        ]
    );
    assert_eq!(live.last_event_id(), Some(4));
    drop(live);
    // Reconnect after event 2: exactly 3 and 4, then live events.
    let mut resumed = a.events(Some(2)).await.unwrap();
    assert_eq!(next_update(&mut resumed).await.sequence.get(), 3);
    assert_eq!(next_update(&mut resumed).await.sequence.get(), 4);
    a.put(&p("b.md"), "x", PutOptions::default()).await.unwrap();
    let e = next_update(&mut resumed).await;
    assert_eq!((e.sequence.get(), e.payload.path.as_str()), (5, "b.md"));
    // From the start of what is retained.
    let mut all = a.events(Some(0)).await.unwrap();
    assert_eq!(
        next_update(&mut all).await.payload.path.as_str(),
        "before.md"
    );
}

#[tokio::test]
async fn another_owner_never_sees_the_feed() {
    let s = start().await;
    let mut b_feed = s.b().events(Some(0)).await.unwrap();
    s.a()
        .put(&p("a-only.md"), "A", PutOptions::default())
        .await
        .unwrap();
    s.b()
        .put(&p("b.md"), "B", PutOptions::default())
        .await
        .unwrap();
    let e = next_update(&mut b_feed).await;
    assert_eq!(
        (e.sequence.get(), e.payload.path.as_str()),
        (1, "b.md"),
        "B's first event is its own"
    );
}

#[tokio::test]
async fn a_position_older_than_the_feed_gets_an_error_event() {
    let store = Arc::new(MemoryStore::new(Limits::default()).with_feed_retention(2));
    let s = start_with(Options {
        store: Some(store),
        ..Options::default()
    })
    .await;
    for i in 0..5 {
        s.a()
            .put(&p("f.md"), format!("{i}"), PutOptions::default())
            .await
            .unwrap();
    }
    let mut stream = s.a().events(Some(1)).await.unwrap();
    match tokio::time::timeout(Duration::from_secs(10), stream.next()).await {
        Ok(Some(Ok(FeedItem::Error(e)))) => {
            assert_eq!(e.error, "feed_position_expired");
            assert_eq!(e.detail("oldestSequence"), Some(&json!(4)));
        }
        other => panic!("expected an error event, got {other:?}"),
    }
    assert!(
        stream.next().await.is_none(),
        "the stream closes after the error"
    );
    // A position the feed still holds works.
    let mut ok = s.a().events(Some(3)).await.unwrap();
    assert_eq!(next_update(&mut ok).await.sequence.get(), 4);
}

#[tokio::test]
async fn the_feed_needs_a_read_scope_and_a_valid_position() {
    let s = start().await;
    let c = reqwest::Client::new();
    let r = c
        .get(s.url("/v1/host/workspace/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = c
        .get(s.url("/v1/host/workspace/events?since=abc"))
        .bearer_auth(&s.key_a)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = c
        .get(s.url("/v1/host/workspace/events"))
        .bearer_auth(&s.key_a)
        .header("last-event-id", "-3")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    // Positions are sequence numbers, which never pass i64::MAX (as the document says); a
    // bad `since` is refused even when `Last-Event-ID` wins over it.
    for (since, last) in [
        ("9223372036854775808", None),
        ("18446744073709551615", None),
        ("abc", Some("0")),
        ("0", Some("9223372036854775808")),
    ] {
        let mut req = c
            .get(s.url(&format!("/v1/host/workspace/events?since={since}")))
            .bearer_auth(&s.key_a);
        if let Some(last) = last {
            req = req.header("last-event-id", last);
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), 400, "since={since} Last-Event-ID={last:?}");
    }
}

#[tokio::test]
async fn a_stalled_reader_never_holds_up_writers() {
    let s = start().await;
    let a = s.a();
    // A feed that is opened and never read while 1,500 writes commit.
    let mut stalled = a.events(Some(0)).await.unwrap();
    let writes = async {
        for i in 0..1500 {
            a.put(
                &p(&format!("load/{}.md", i % 50)),
                format!("{i}"),
                PutOptions::default(),
            )
            .await
            .unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(120), writes)
        .await
        .expect("writers are never blocked by a reader");
    // The reader then gets everything, in order, from where it was.
    for expected in 1..=1500u64 {
        assert_eq!(next_update(&mut stalled).await.sequence.get(), expected);
    }
}

/// `POST /v1/runs` with `key`: the status and the JSON body.
async fn post_run(s: &support::TestServer, key: &str) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .post(s.url("/v1/runs"))
        .bearer_auth(key)
        .json(&json!({"workflowId": "w"}))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

/// Asserts a 429 naming `limit`, its value and where the workspace stands.
fn assert_refused(answer: &(u16, Value), limit: &str, max: u64, current: u64) {
    let (status, body) = answer;
    assert_eq!(*status, 429, "{body}");
    assert_eq!(body["error"], "rate_limited", "{body}");
    assert_eq!(body["details"]["limit"], limit, "{body}");
    assert_eq!(body["details"]["max"], max, "{body}");
    assert_eq!(body["details"]["current"], current, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(message.contains(limit), "{message}");
    let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["details", "error", "message"],
        "the envelope and nothing else"
    );
}

#[tokio::test]
async fn open_runs_are_capped_at_64_per_workspace_by_default() {
    let s = start().await;
    let a = s.a();
    for _ in 0..64 {
        a.create_run("w").await.unwrap();
    }
    assert_refused(&post_run(&s, &s.key_a).await, "maxOpenRuns", 64, 64);
}

#[tokio::test]
async fn open_runs_are_capped_per_workspace() {
    let s = start_with(Options {
        config: ServerConfig::default().with_max_open_runs(3),
        ..Options::default()
    })
    .await;
    let a = s.a();
    let mut runs = Vec::new();
    for _ in 0..3 {
        runs.push(a.create_run("w").await.unwrap());
    }
    assert_refused(&post_run(&s, &s.key_a).await, "maxOpenRuns", 3, 3);
    // The refusal took nothing, and asking again changes nothing.
    assert_refused(&post_run(&s, &s.key_a).await, "maxOpenRuns", 3, 3);
    // Another workspace is not held back.
    s.b().create_run("w").await.unwrap();
    // Ending a run frees its place; an ended run never counts again.
    a.cancel_run(&runs[0].run_id).await.unwrap();
    a.create_run("w").await.unwrap();
    assert_refused(&post_run(&s, &s.key_a).await, "maxOpenRuns", 3, 3);
    for run in &runs[1..] {
        assert_eq!(
            a.get_run(&run.run_id).await.unwrap().status,
            RunStatus::Running
        );
    }
}

#[tokio::test]
async fn racing_run_creations_never_exceed_the_cap() {
    let s = Arc::new(
        start_with(Options {
            config: ServerConfig::default().with_max_open_runs(4),
            ..Options::default()
        })
        .await,
    );
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let s = s.clone();
        tasks.spawn(async move { post_run(&s, &s.key_a).await.0 });
    }
    let mut statuses = Vec::new();
    while let Some(status) = tasks.join_next().await {
        statuses.push(status.unwrap());
    }
    statuses.sort_unstable();
    let mut expected = vec![201; 4];
    expected.extend([429; 16]);
    assert_eq!(statuses, expected);
}

#[tokio::test]
async fn runs_that_keep_too_many_old_bytes_refuse_new_runs_not_writes() {
    let s = start_with(Options {
        limits: Limits::default()
            .with_max_file_bytes(1024)
            .with_max_files(10)
            .with_max_versions(1),
        config: ServerConfig::default().with_max_pinned_bytes(2000),
        ..Options::default()
    })
    .await;
    let a = s.a();
    let thousand = "k".repeat(1000);
    let big = p("big.md");
    let write = || a.put(&big, &thousand, PutOptions::default());
    write().await.unwrap();
    let first = a.create_run("w").await.unwrap();
    write().await.unwrap();
    // The first run keeps version 1 (1000 bytes), which history alone would have dropped.
    let second = a.create_run("w").await.unwrap();
    write().await.unwrap();
    // 2000 bytes kept: at the quota, not over it.
    a.create_run("w").await.unwrap();
    write().await.unwrap();
    assert_refused(&post_run(&s, &s.key_a).await, "maxPinnedBytes", 2000, 3000);
    // Writes are never refused for it, and a write adds nothing more to keep.
    write().await.unwrap();
    assert_refused(&post_run(&s, &s.key_a).await, "maxPinnedBytes", 2000, 3000);
    // Ending a run frees what only it kept.
    a.cancel_run(&second.run_id).await.unwrap();
    a.create_run("w").await.unwrap();
    // What a run sees is still there.
    assert_eq!(
        a.get_run_file(&first.run_id, &p("big.md"))
            .await
            .unwrap()
            .version
            .get(),
        1
    );
}

#[tokio::test]
async fn discovery_advertises_the_run_limits() {
    let s = start_with(Options {
        config: ServerConfig::default()
            .with_max_open_runs(7)
            .with_max_pinned_bytes(12_345),
        ..Options::default()
    })
    .await;
    let doc: Value = reqwest::get(s.url("/.well-known/openwop"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(doc["wsp"]["runs"], true);
    assert_eq!(doc["wsp"]["maxOpenRuns"], 7);
    assert_eq!(doc["wsp"]["maxPinnedBytes"], 12_345);
    // The OpenWOP blocks keep exactly their keys.
    assert_eq!(doc["workspace"].as_object().unwrap().len(), 5);
}
