//! `wsp serve --max-open-runs / --max-pinned-bytes`: open runs are bounded on every backend,
//! so runs taken between big writes can no longer grow the store without limit.
//!
//! The PostgreSQL test runs against `WSP_TEST_POSTGRES_URL`, or else the throwaway cluster that
//! the test binaries of this `cargo test` share (see `wsp-pgtest`); without either it fails
//! with one line saying what to do.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::{Server, WSP, drop_schema, serve, store_key, unique_schema};

const MIB: u64 = 1024 * 1024;

/// Stops the server with SIGTERM and waits: SQLite checkpoints its WAL into the file on close.
fn stop(mut server: Server) {
    server.terminate();
    let status = server.child.wait().unwrap();
    assert!(status.success(), "wsp serve stops cleanly: {status}");
}

/// `POST /v1/runs`: the status and the body.
async fn start_run(http: &reqwest::Client, url: &str, key: &str) -> (u16, Value) {
    let resp = http
        .post(format!("{url}/v1/runs"))
        .bearer_auth(key)
        .json(&json!({"workflowId": "loop"}))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

/// `PUT` of `content` at `path`: the status.
async fn write(http: &reqwest::Client, url: &str, key: &str, path: &str, content: &str) -> u16 {
    http.put(format!("{url}/v1/host/workspace/files/{path}"))
        .bearer_auth(key)
        .json(&json!({ "content": content }))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// The bytes the store takes on disk: the database file and its WAL.
fn stored_bytes(data: &Path) -> u64 {
    ["wsp.sqlite3", "wsp.sqlite3-wal"]
        .iter()
        .map(|f| std::fs::metadata(data.join(f)).map_or(0, |m| m.len()))
        .sum()
}

/// The reproduction: with `--max-versions 5`, 200 runs each followed by a 1 MiB write of the
/// same file used to keep every version (the file grew by about 200 MiB). Now, once the open runs
/// keep more than `--max-pinned-bytes`, new runs are refused (429) while every write succeeds,
/// and the file stays within the quota, the history and one run's worth.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_between_big_writes_stay_within_the_quota_on_sqlite() {
    let data = tempfile::tempdir().unwrap();
    let quota = 16 * MIB;
    let server = serve(
        data.path(),
        &[
            "--max-versions",
            "5",
            "--max-pinned-bytes",
            &quota.to_string(),
        ],
    );
    let key = server.key().to_owned();
    let http = reqwest::Client::new();
    let big = "m".repeat(MIB as usize);
    assert_eq!(write(&http, &server.url, &key, "big.md", &big).await, 200);
    let before = stored_bytes(data.path());
    let (mut started, mut refused) = (0, 0);
    for _ in 0..200 {
        let (status, body) = start_run(&http, &server.url, &key).await;
        match status {
            201 => started += 1,
            429 => {
                assert_eq!(body["details"]["limit"], "maxPinnedBytes", "{body}");
                assert!(body["details"]["current"].as_u64().unwrap() > quota);
                refused += 1;
            }
            other => panic!("POST /v1/runs answered {other}: {body}"),
        }
        assert_eq!(
            write(&http, &server.url, &key, "big.md", &big).await,
            200,
            "writes are never refused for the quota"
        );
    }
    // Run i sees version i; once a run's version leaves the five that history keeps anyway,
    // it is pinned (1 MiB). Run i starts while the i - 5 pinned MiB are within the quota: the
    // quota in MiB plus the history window.
    assert_eq!(started, quota / MIB + 5, "runs started");
    assert_eq!(started + refused, 200);
    stop(server);
    let grown = stored_bytes(data.path()).saturating_sub(before);
    // The quota, the one run admitted at its edge, five versions of history, and room for
    // SQLite's page and free-list overhead; without the quota this was about 200 MiB.
    let bound = quota + MIB + 5 * MIB + 16 * MIB;
    eprintln!(
        "{started} runs started, the store grew by {} KiB",
        grown / 1024
    );
    assert!(
        grown <= bound,
        "the store grew by {} MiB, over {} MiB",
        grown / MIB,
        bound / MIB
    );
}

/// The open-run cap on the in-memory store, set by flag and advertised in discovery.
#[tokio::test]
async fn the_open_run_cap_is_a_flag_and_is_advertised() {
    let data = tempfile::tempdir().unwrap();
    let server = serve(
        data.path(),
        &[
            "--store",
            "memory",
            "--max-open-runs",
            "3",
            "--max-pinned-bytes",
            "1000",
        ],
    );
    let key = server.key().to_owned();
    let http = reqwest::Client::new();
    let doc: Value = http
        .get(format!("{}/.well-known/openwop", server.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(doc["wsp"]["maxOpenRuns"], 3);
    assert_eq!(doc["wsp"]["maxPinnedBytes"], 1000);
    for _ in 0..3 {
        assert_eq!(start_run(&http, &server.url, &key).await.0, 201);
    }
    let (status, body) = start_run(&http, &server.url, &key).await;
    assert_eq!((status, &body["error"]), (429, &json!("rate_limited")));
    assert_eq!(body["details"]["limit"], "maxOpenRuns");
    assert_eq!(body["details"]["max"], 3);
    // Bad values are refused at start.
    let out = Command::new(WSP)
        .args(["serve", "--max-open-runs", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

/// The database URL (see the module docs); panics with one line when there is none.
fn database_url() -> String {
    wsp_pgtest::database_url().to_owned()
}

/// Three replicas on one PostgreSQL schema, 30 `POST /v1/runs` racing through all of them:
/// the cap is kept by the database, so exactly `--max-open-runs` start.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_racing_to_start_runs_never_exceed_the_cap() {
    let db = database_url();
    let schema = unique_schema("wsp_runs");
    let key = store_key(&db, &schema);
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let replicas: Vec<Server> = dirs
        .iter()
        .map(|d| {
            serve(
                d.path(),
                &[
                    "--store",
                    &db,
                    "--pg-schema",
                    &schema,
                    "--max-open-runs",
                    "5",
                ],
            )
        })
        .collect();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..30 {
        let (url, key) = (replicas[i % 3].url.clone(), key.clone());
        tasks.spawn(async move { start_run(&reqwest::Client::new(), &url, &key).await });
    }
    let mut started = 0;
    while let Some(answer) = tasks.join_next().await {
        let (status, body) = answer.unwrap();
        match status {
            201 => started += 1,
            429 => assert_eq!(body["details"]["limit"], "maxOpenRuns", "{body}"),
            other => panic!("POST /v1/runs answered {other}: {body}"),
        }
    }
    assert_eq!(started, 5, "exactly the cap, across replicas");
    drop(replicas);
    drop_schema(&db, &schema).await;
}
