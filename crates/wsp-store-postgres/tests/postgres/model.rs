//! What the battery cannot see: the stored data model (change sequence, tombstones, live-file
//! counts), content that PostgreSQL text could not hold, and connect refusals.

use std::time::{Duration, Instant};

use wsp_store::{FileWrite, Limits, Precondition, StoreError, WorkspaceStore};
use wsp_store_postgres::{ConnectError, PgOptions, PgStore, SCHEMA_VERSION};
use wsp_types::ETag;

use crate::support::{TestSchema, admin, database_url, owner, path};

/// Every committed write and delete takes the owner's next sequence number; refused ones take
/// none. A tombstone keeps its delete's number and the last version plus one; a delete drops
/// the path's stored versions; `live_files` follows creates and deletes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequence_numbers_tombstones_and_counts_are_stored() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    let s = schema.store(Limits::default()).await;
    let (a, b) = (owner("a"), owner("b"));
    let put = |o, p: &'static str, c: &'static str| {
        let s = &s;
        async move {
            s.put(o, &path(p), FileWrite::markdown(c), Precondition::None)
                .await
                .unwrap()
        }
    };
    put(&a, "x.md", "1").await; // a: seq 1
    put(&a, "x.md", "2").await; // a: seq 2
    put(&b, "x.md", "b").await; // b: seq 1
    put(&a, "y.md", "y").await; // a: seq 3
    let refused = s
        .put(
            &a,
            &path("x.md"),
            FileWrite::markdown("no"),
            Precondition::IfNoneMatchAny,
        )
        .await;
    assert_eq!(refused, Err(StoreError::Conflict { current_version: 2 }));
    s.delete(&a, &path("x.md"), Precondition::None)
        .await
        .unwrap(); // a: seq 4

    let db = admin(&url).await;
    let owners: Vec<(String, i64, i64)> = db
        .query(
            &schema.sql("SELECT tenant, seq, live_files FROM {s}.wsp_owners ORDER BY tenant"),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(owners, [("a".into(), 4, 1), ("b".into(), 1, 1)]);
    let files: Vec<(String, i64, bool, i64)> = db
        .query(
            &schema.sql(
                "SELECT path, version, live, seq FROM {s}.wsp_files WHERE tenant = 'a'
                 ORDER BY path",
            ),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    assert_eq!(
        files,
        [("x.md".into(), 3, false, 4), ("y.md".into(), 1, true, 3)]
    );
    let versions: Vec<(String, i64, i64)> = db
        .query(
            &schema.sql(
                "SELECT path, version, seq FROM {s}.wsp_versions WHERE tenant = 'a'
                 ORDER BY seq",
            ),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(versions, [("y.md".into(), 1, 3)], "x.md's versions dropped");

    // A new life continues the owner's sequence.
    let again = put(&a, "x.md", "again").await;
    assert_eq!(again.meta.version, 1);
    let seq: i64 = db
        .query_one(
            &schema.sql("SELECT seq FROM {s}.wsp_files WHERE tenant = 'a' AND path = 'x.md'"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(seq, 5);
}

/// Content is bytes to PostgreSQL: NUL, control characters and any Unicode round-trip, and a
/// timestamp read back equals the one the write returned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_string_round_trips() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    let s = schema.store(Limits::default()).await;
    let a = owner("a");
    for (i, content) in [
        "",
        "nul \0 inside",
        "\r\n\t\u{7f}",
        "ü€𝄞 emoji 🦀",
        "\\x00 looks like bytea",
    ]
    .into_iter()
    .enumerate()
    {
        let p = path(&format!("s/{i}.txt"));
        let w = FileWrite::text(
            content,
            wsp_types::MediaType::from_static("text/plain; charset=utf-8"),
        )
        .by("ünïcode author");
        let written = s.put(&a, &p, w, Precondition::None).await.unwrap();
        assert_eq!(written.meta.size, content.len() as u64);
        assert_eq!(s.get(&a, &p, None).await.unwrap(), written, "{content:?}");
        assert_eq!(
            s.list(
                &a,
                &wsp_types::WorkspacePrefix::parse(&format!("s/{i}")).unwrap()
            )
            .await
            .unwrap(),
            vec![written.meta]
        );
    }
}

/// Lists sort byte-wise whatever the database's default collation, and a prefix is a plain
/// string prefix (`_` is not a pattern).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_sort_bytewise_and_prefixes_are_literal() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    let s = schema.store(Limits::default()).await;
    let a = owner("a");
    let names = [
        "a_b", "a-b", "aXb", "a.b", "A", "a", "ab", "a/b", "Z", "0_z", "0",
    ];
    for n in names {
        s.put(&a, &path(n), FileWrite::markdown("x"), Precondition::None)
            .await
            .unwrap();
    }
    let mut sorted: Vec<&str> = names.to_vec();
    sorted.sort_unstable();
    let list = |prefix: &str| {
        let s = &s;
        let a = &a;
        let prefix = wsp_types::WorkspacePrefix::parse(prefix).unwrap();
        async move {
            s.list(a, &prefix)
                .await
                .unwrap()
                .into_iter()
                .map(|m| m.path.into_string())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(list("").await, sorted);
    assert_eq!(list("a_").await, ["a_b"]);
    assert_eq!(
        list("a").await,
        ["a", "a-b", "a.b", "a/b", "aXb", "a_b", "ab"]
    );
    assert_eq!(list("0_").await, ["0_z"]);
}

/// A store refuses a schema that a newer build migrated, and names both versions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_schema_is_refused() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    drop(schema.store(Limits::default()).await);
    admin(&url)
        .await
        .execute(
            &schema.sql(
                "INSERT INTO {s}.wsp_schema_migrations (version, description)
                 VALUES (999, 'from the future')",
            ),
            &[],
        )
        .await
        .unwrap();
    let refused = PgStore::connect(&url, Limits::default(), schema.options()).await;
    assert_eq!(
        refused.unwrap_err(),
        ConnectError::TooNew {
            schema: schema.name.clone(),
            found: 999,
            supported: SCHEMA_VERSION
        }
    );
}

/// Options and URLs that cannot work are refused before any connection is tried, and a
/// database that is not there is reported as unreachable, within the connect timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_settings_and_absent_databases_are_refused() {
    let connect = |url: &'static str, options: PgOptions| async move {
        PgStore::connect(url, Limits::default(), options)
            .await
            .unwrap_err()
    };
    let valid = "postgres://postgres@127.0.0.1:5432/test";
    for schema in [
        "",
        "Public",
        "pg_temp",
        "a-b",
        "x\"; DROP SCHEMA public; --",
    ] {
        let options = PgOptions::default().with_schema(schema);
        assert_eq!(
            connect(valid, options).await,
            ConnectError::InvalidSchema {
                schema: schema.into()
            }
        );
    }
    let zero = PgOptions::default().with_max_connections(0);
    assert!(matches!(
        connect(valid, zero).await,
        ConnectError::InvalidOptions { .. }
    ));
    let bad = connect(
        "postgres://user:hunter2@127.0.0.1:notaport/db",
        PgOptions::default(),
    )
    .await;
    assert!(matches!(bad, ConnectError::InvalidUrl { .. }), "{bad:?}");
    assert!(!bad.to_string().contains("hunter2"), "{bad}");

    // A port nobody listens on.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("postgres://postgres:hunter2@127.0.0.1:{port}/test");
    let started = Instant::now();
    let options = PgOptions::default().with_connect_timeout(Duration::from_secs(2));
    let absent = PgStore::connect(&url, Limits::default(), options)
        .await
        .unwrap_err();
    assert!(
        matches!(absent, ConnectError::Unreachable { .. }),
        "{absent:?}"
    );
    assert!(!absent.to_string().contains("hunter2"), "{absent}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// An etag of another schema's store (another deployment) never matches here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemas_are_separate_deployments() {
    let url = database_url();
    let (one, two) = (TestSchema::new(&url), TestSchema::new(&url));
    let (s1, s2) = (
        one.store(Limits::default()).await,
        two.store(Limits::default()).await,
    );
    let a = owner("a");
    let p = path("AGENTS.md");
    let f1 = s1
        .put(&a, &p, FileWrite::markdown("one"), Precondition::None)
        .await
        .unwrap();
    assert_eq!(s2.get(&a, &p, None).await, Err(StoreError::NotFound));
    let f2 = s2
        .put(&a, &p, FileWrite::markdown("two"), Precondition::None)
        .await
        .unwrap();
    assert_ne!(f1.meta.etag, f2.meta.etag);
    assert_eq!(
        s2.put(
            &a,
            &p,
            FileWrite::markdown("x"),
            Precondition::IfMatch(vec![f1.meta.etag, ETag::from_wire("\"0-1\"")])
        )
        .await,
        Err(StoreError::Conflict { current_version: 1 })
    );
    assert_eq!(s1.get(&a, &p, None).await.unwrap().content, "one");
}

/// A schema at version 3 (as an older wsp left it, with data) is brought up to date at connect,
/// its data carried over: migration 4 moved the live metadata onto the path rows, and a list
/// afterwards shows exactly what it showed before; migration 9 indexed the live text files for
/// search (a text with a NUL character up to it: text search values hold no NUL).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_schema_with_data_is_migrated() {
    let url = database_url();
    let schema = TestSchema::new(&url);
    let s = schema.store(Limits::default()).await;
    let a = owner("a");
    for (p, author) in [("a.md", Some("ann")), ("b/c.md", None)] {
        let mut w = FileWrite::text(
            format!("{p} body"),
            wsp_types::MediaType::from_static("text/plain"),
        );
        w.author = author.map(str::to_owned);
        s.put(&a, &path(p), w, Precondition::None).await.unwrap();
    }
    s.put(
        &a,
        &path("nul.md"),
        FileWrite::markdown("nul body\0 hidden"),
        Precondition::None,
    )
    .await
    .unwrap();
    s.put(
        &a,
        &path("gone.md"),
        FileWrite::markdown("gone body"),
        Precondition::None,
    )
    .await
    .unwrap();
    s.delete(&a, &path("gone.md"), Precondition::None)
        .await
        .unwrap();
    let before = s
        .list(&a, &wsp_types::WorkspacePrefix::all())
        .await
        .unwrap();
    drop(s);
    admin(&url)
        .await
        .batch_execute(&schema.sql(
            "ALTER TABLE {s}.wsp_files DROP COLUMN content_type, DROP COLUMN author,
                 DROP COLUMN updated_at, DROP COLUMN size, DROP COLUMN base64;
             ALTER TABLE {s}.wsp_versions DROP COLUMN base64;
             DROP TABLE {s}.wsp_idempotency;
             DROP TABLE {s}.wsp_approvals;
             DROP INDEX {s}.wsp_snapshots_by_time;
             DROP TABLE {s}.wsp_search;
             DELETE FROM {s}.wsp_schema_migrations WHERE version >= 4;",
        ))
        .await
        .unwrap();
    let s = schema.store(Limits::default()).await;
    let after = s
        .list(&a, &wsp_types::WorkspacePrefix::all())
        .await
        .unwrap();
    assert_eq!(after, before);
    assert_eq!(after.len(), 3);
    let found = |q: &str| {
        let query = wsp_store::SearchQuery::new(q, wsp_types::WorkspacePrefix::all(), 10).unwrap();
        let (s, a) = (&s, a.clone());
        async move {
            let results = s.search(&a, &query).await.unwrap();
            let mut paths: Vec<String> = results.hits.iter().map(|h| h.path.to_string()).collect();
            paths.sort();
            paths
        }
    };
    assert_eq!(found("body").await, ["a.md", "b/c.md", "nul.md"]);
    assert!(found("hidden").await.is_empty(), "indexed past the NUL");
    let versions: Vec<i32> = admin(&url)
        .await
        .query(
            &schema.sql("SELECT version FROM {s}.wsp_schema_migrations ORDER BY version"),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(versions, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
}
