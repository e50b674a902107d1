//! Stateless replicas on one PostgreSQL: three `wsp serve --store postgres://...` processes.
//!
//! The server is `WSP_TEST_POSTGRES_URL`, or else the throwaway cluster that the test binaries of
//! this `cargo test` share (see `wsp-pgtest`); the binary says on stderr which one it used.
//! Without either, the tests fail with one line saying what to do.

use std::collections::BTreeMap;
use std::time::Duration;

use wsp_client::{Client, FeedItem, PutOptions};
use wsp_types::{ETag, WorkspacePath};

use crate::support;
use crate::support::{Server, drop_schema, store_key, unique_schema};

/// The database URL (see the module docs); panics with one line when there is none.
fn database_url() -> String {
    wsp_pgtest::database_url().to_owned()
}

/// A `wsp serve --store DB --pg-schema SCHEMA` with a data directory of its own.
struct Replica {
    server: Server,
    _data: tempfile::TempDir,
}

fn replica(db: &str, schema: &str) -> Replica {
    replica_with(db, schema, &[])
}

fn replica_with(db: &str, schema: &str, extra: &[&str]) -> Replica {
    let data = tempfile::tempdir().unwrap();
    let at = ["--store", db, "--pg-schema", schema];
    Replica {
        server: support::serve(data.path(), &[&at[..], extra].concat()),
        _data: data,
    }
}

fn p(s: &str) -> WorkspacePath {
    WorkspacePath::parse(s).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_share_one_database() {
    let db = database_url();
    let schema = unique_schema("wsp_cli");
    // A key created through the store, before any replica runs (this also migrates the schema).
    let key = store_key(&db, &schema);
    let replicas: Vec<Replica> = (0..3).map(|_| replica(&db, &schema)).collect();
    let clients: Vec<Client> = replicas
        .iter()
        .map(|r| Client::new(&r.server.url).unwrap().with_key(key.clone()))
        .collect();

    // An SSE client on replica 1 follows everything from the start.
    let feed_client = Client::with_http_client(&replicas[0].server.url, reqwest::Client::new())
        .unwrap()
        .with_key(key.clone());
    let mut feed = feed_client.events(Some(0)).await.unwrap();

    // Racing conditional writers on the same paths through different replicas.
    clients[0]
        .put(&p("race.md"), "start", PutOptions::default())
        .await
        .unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..9 {
        let c = clients[t % 3].clone();
        tasks.spawn(async move {
            let mut won = Vec::new();
            for i in 0..8 {
                let live = c.get(&p("race.md"), None).await.unwrap();
                let tag = live.etag.clone().map(ETag::from_wire);
                let opts = PutOptions {
                    if_match: tag,
                    ..Default::default()
                };
                match c
                    .put(&p("race.md"), format!("writer {t} try {i}"), opts)
                    .await
                {
                    Ok(f) => won.push((f.version.get(), f.content)),
                    Err(e) => assert_eq!(
                        e.code(),
                        Some(wsp_types::ErrorCode::WorkspaceConflict),
                        "{e}"
                    ),
                }
            }
            won
        });
    }
    let mut wins = Vec::new();
    while let Some(r) = tasks.join_next().await {
        wins.extend(r.unwrap());
    }
    wins.sort();
    let versions: Vec<u64> = wins.iter().map(|w| w.0).collect();
    assert_eq!(
        versions,
        (2..2 + wins.len() as u64).collect::<Vec<_>>(),
        "one winner per version, gap-free"
    );
    for (version, content) in &wins {
        let f = clients[2].get(&p("race.md"), Some(*version)).await;
        // History keeps the newest 50 versions; every retained winner is intact.
        if let Ok(f) = f {
            assert_eq!(&f.content, content);
        }
    }

    // Writes on replicas 2 and 3 reach the feed on replica 1, in order.
    for i in 0..10 {
        clients[1 + i % 2]
            .put(&p(&format!("spread/{i}.md")), "x", PutOptions::default())
            .await
            .unwrap();
    }
    let total = 1 + wins.len() as u64 + 10;
    let mut last = 0;
    let mut spread = 0;
    while last < total {
        let item = tokio::time::timeout(Duration::from_secs(20), feed.next())
            .await
            .expect("events keep coming");
        match item {
            Some(Ok(FeedItem::Updated(e))) => {
                assert_eq!(e.sequence.get(), last + 1, "in order, no gap");
                last = e.sequence.get();
                if e.payload.path.as_str().starts_with("spread/") {
                    spread += 1;
                }
            }
            other => panic!("unexpected feed item {other:?}"),
        }
    }
    assert_eq!(
        spread, 10,
        "replica 1's subscriber saw every write of replicas 2 and 3"
    );

    // kill -9 of one replica mid-load loses no acknowledged write.
    let mut replicas = replicas;
    let victim = replicas.pop().unwrap();
    let victim_client = clients[2].clone();
    let writer = tokio::spawn(async move {
        let mut acked = BTreeMap::new();
        for i in 0..400u32 {
            let path = format!("kill/{}.md", i % 20);
            match victim_client
                .put(&p(&path), format!("write {i}"), PutOptions::default())
                .await
            {
                Ok(f) => {
                    acked.insert(path, (f.version.get(), f.content));
                }
                Err(_) => break,
            }
        }
        acked
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut victim = victim;
    victim.server.child.kill().unwrap(); // SIGKILL
    victim.server.child.wait().unwrap();
    let acked = writer.await.unwrap();
    assert!(
        !acked.is_empty(),
        "writes were acknowledged before the kill"
    );
    for (path, (version, content)) in &acked {
        let live = clients[0].get(&p(path), None).await.unwrap();
        assert!(
            live.version.get() >= *version,
            "{path}: acknowledged v{version} lost"
        );
        assert_eq!(
            &clients[0]
                .get(&p(path), Some(*version))
                .await
                .unwrap()
                .content,
            content
        );
    }
    drop(replicas);
    drop_schema(&db, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotency_key_used_on_one_replica_replays_on_another() {
    let db = database_url();
    let schema = unique_schema("wsp_cli");
    let key = store_key(&db, &schema);
    let replicas: Vec<Replica> = (0..2).map(|_| replica(&db, &schema)).collect();
    let put = |url: &str, content: &str| {
        reqwest::Client::new()
            .put(format!("{url}/v1/host/workspace/files/idem.md"))
            .bearer_auth(&key)
            .header("idempotency-key", "k-replicas")
            .json(&serde_json::json!({ "content": content }))
            .send()
    };
    let first = put(&replicas[0].server.url, "once").await.unwrap();
    assert_eq!(first.status(), 200);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first_body = first.text().await.unwrap();

    let replay = put(&replicas[1].server.url, "once").await.unwrap();
    assert_eq!(replay.status(), 200);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(replay.text().await.unwrap(), first_body);

    let other = put(&replicas[1].server.url, "twice").await.unwrap();
    assert_eq!(other.status(), 409);
    assert!(
        other
            .text()
            .await
            .unwrap()
            .contains("idempotency_key_mismatch")
    );
    // Written once, whichever replica is asked.
    let live = Client::new(&replicas[1].server.url)
        .unwrap()
        .with_key(key.clone())
        .get(&p("idem.md"), None)
        .await
        .unwrap();
    assert_eq!((live.version.get(), live.content.as_str()), (1, "once"));
    drop(replicas);
    drop_schema(&db, &schema).await;
}

/// A tenant-scoped inventory of one pack, for the approvals test.
const AGENTS: &str = r#"
[agents]
install_scope = "tenant"

[[agents.packs]]
name = "acme.reviewer"
version = "1.0.0"

[[agents.packs.agents]]
id = "acme.reviewer.default"
persona = "Code Reviewer"
model_class = "coding"
tool_allowlist = []
system_prompt_ref = "prompts/reviewer.md"
"#;

/// Runs `wsp ARGS` and returns its standard output; panics with its standard error on failure.
fn wsp_ok(args: &[&str]) -> String {
    let out = support::wsp(args, &[], None);
    assert!(
        out.status.success(),
        "wsp {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_made_against_the_store_count_on_every_replica() {
    let db = database_url();
    let schema = unique_schema("wsp_cli");
    let key = store_key(&db, &schema);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("wsp.toml");
    std::fs::write(&config, AGENTS).unwrap();
    let config = config.display().to_string();
    let replicas: Vec<Replica> = (0..2)
        .map(|_| replica_with(&db, &schema, &["--config", &config]))
        .collect();
    let totals = || async {
        let mut totals = Vec::new();
        for r in &replicas {
            let client = Client::new(&r.server.url).unwrap().with_key(key.clone());
            totals.push(client.agents().await.unwrap().total);
        }
        totals
    };
    assert_eq!(totals().await, [0, 0], "nothing approved yet");

    let at = ["--store", db.as_str(), "--pg-schema", schema.as_str()];
    let approve = [
        &["agents", "approve"][..],
        &at,
        &[
            "--config",
            &config,
            "--tenant",
            "t",
            "--workspace",
            "w",
            "acme.reviewer",
        ],
    ]
    .concat();
    let out = wsp_ok(&approve);
    assert!(
        out.contains("approved pack acme.reviewer for tenant t workspace w"),
        "{out}"
    );
    assert_eq!(totals().await, [1, 1], "counts at once on every replica");

    let listed = wsp_ok(&[&["agents", "approvals"][..], &at, &["--json"]].concat());
    assert!(listed.contains("\"pack\": \"acme.reviewer\""), "{listed}");
    assert!(listed.contains("\"source\": \"stored\""), "{listed}");

    let revoke = [
        &["agents", "revoke"][..],
        &at,
        &["--tenant", "t", "--workspace", "w", "acme.reviewer"],
    ]
    .concat();
    let out = wsp_ok(&revoke);
    assert!(out.contains("revoked pack acme.reviewer"), "{out}");
    assert_eq!(totals().await, [0, 0], "revoked at once on every replica");
    drop(replicas);
    drop_schema(&db, &schema).await;
}

/// Replicas started at the same moment on an empty store create one admin key between them,
/// printed by one of them: the check for existing keys and the insert are one step.
#[test]
fn replicas_starting_together_on_an_empty_store_create_one_admin_key() {
    let db = database_url();
    for round in 0..3 {
        let schema = unique_schema(&format!("wsp_first_{round}"));
        // Migrated and empty: the replicas skip the migration (which runs one at a time) and
        // reach the first-start check together.
        wsp_ok(&["keys", "list", "--store", &db, "--pg-schema", &schema]);
        let replicas: Vec<Replica> = std::thread::scope(|s| {
            let starting: Vec<_> = (0..4).map(|_| s.spawn(|| replica(&db, &schema))).collect();
            starting.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let printed = replicas
            .iter()
            .filter(|r| r.server.first_key.is_some())
            .count();
        let listed = wsp_ok(&["keys", "list", "--store", &db, "--pg-schema", &schema]);
        let keys = listed.lines().filter(|l| l.contains("admin")).count();
        assert_eq!(
            (printed, keys),
            (1, 1),
            "round {round}: {printed} replicas printed a first key, the store holds {keys}:\n{listed}"
        );
        drop(replicas);
        tokio::runtime::Runtime::new()
            .unwrap()
            .block_on(drop_schema(&db, &schema));
    }
}

/// `wsp keys` and `wsp agents` find a PostgreSQL store in `WSP_STORE` and `WSP_PG_SCHEMA`, as
/// `wsp serve` does, so its password need not be on a command line; `WSP_STORE=sqlite` (the
/// value a `wsp serve` environment may hold) means the data directory.
#[test]
fn key_commands_take_the_store_from_the_environment() {
    let db = database_url();
    let schema = unique_schema("wsp_env");
    let env = [
        ("WSP_STORE", db.as_str()),
        ("WSP_PG_SCHEMA", schema.as_str()),
    ];
    let created = support::wsp(
        &[
            "keys",
            "create",
            "--tenant",
            "t",
            "--workspace",
            "w",
            "--principal",
            "from-env",
        ],
        &env,
        None,
    );
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let listed = wsp_ok(&["keys", "list", "--store", &db, "--pg-schema", &schema]);
    assert!(listed.contains("from-env"), "{listed}");

    let data = tempfile::tempdir().unwrap();
    let data_arg = data.path().to_str().unwrap();
    let sqlite = [("WSP_STORE", "sqlite")];
    let local = support::wsp(
        &[
            "keys",
            "create",
            "--data",
            data_arg,
            "--tenant",
            "t",
            "--workspace",
            "w",
            "--principal",
            "local",
        ],
        &sqlite,
        None,
    );
    assert!(
        local.status.success(),
        "{}",
        String::from_utf8_lossy(&local.stderr)
    );
    let listed = support::wsp(&["keys", "list", "--data", data_arg], &sqlite, None);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("local") && !listed.contains("from-env"),
        "{listed}"
    );
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(drop_schema(&db, &schema));
}

/// A replica that has a file in its cache of current files answers the version another replica
/// wrote within the change-notice delay (`LISTEN`/`NOTIFY`: milliseconds; 2 s allowed here), and
/// a delete there is never answered with the deleted file for longer.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replica_answers_what_another_wrote_within_the_notice_delay() {
    let db = database_url();
    let schema = unique_schema("wsp_cli");
    let key = store_key(&db, &schema);
    let (one, two) = (replica(&db, &schema), replica(&db, &schema));
    let reader = Client::new(&one.server.url).unwrap().with_key(key.clone());
    let writer = Client::new(&two.server.url).unwrap().with_key(key);
    writer
        .put(&p("cached.md"), "one", PutOptions::default())
        .await
        .unwrap();
    for _ in 0..3 {
        assert_eq!(
            reader.get(&p("cached.md"), None).await.unwrap().content,
            "one"
        );
    }
    writer
        .put(&p("cached.md"), "two", PutOptions::default())
        .await
        .unwrap();
    let written = std::time::Instant::now();
    while reader.get(&p("cached.md"), None).await.unwrap().content != "two" {
        assert!(
            written.elapsed() < Duration::from_secs(2),
            "replica one still answers the old version after 2 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    writer.delete(&p("cached.md"), None).await.unwrap();
    let deleted = std::time::Instant::now();
    while reader.get(&p("cached.md"), None).await.is_ok() {
        assert!(
            deleted.elapsed() < Duration::from_secs(2),
            "replica one still answers the deleted file after 2 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop((one, two));
    drop_schema(&db, &schema).await;
}
