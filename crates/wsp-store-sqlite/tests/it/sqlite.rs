//! What the battery cannot see: persistence across reopen (files, snapshots, the feed), opening
//! refusals, lock behaviour across connections and stores, feed retention in storage, when
//! notices are sent, and SQLite-specific edge cases.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;
use tempfile::TempDir;
use wsp_store::{
    FileWrite, Limits, Precondition, SnapshotInfo, StoreError, StoredFile, WorkspaceStore,
};
use wsp_store_sqlite::{APPLICATION_ID, OpenError, SCHEMA_VERSION, SqliteOptions, SqliteStore};
use wsp_types::{LimitKind, Owner, WorkspacePath, WorkspacePrefix};

fn owner(tenant: &str) -> Owner {
    Owner::parse(tenant, "w").unwrap()
}

fn path(p: &str) -> WorkspacePath {
    WorkspacePath::parse(p).unwrap()
}

fn db(dir: &TempDir) -> PathBuf {
    dir.path().join("wsp.sqlite3")
}

async fn put(s: &SqliteStore, o: &Owner, p: &str, content: &str) -> StoredFile {
    s.put(
        o,
        &path(p),
        FileWrite::markdown(content),
        Precondition::None,
    )
    .await
    .expect("put succeeds")
}

fn small() -> Limits {
    Limits::default()
        .with_max_file_bytes(1024 * 1024)
        .with_max_files(3)
        .with_max_versions(3)
}

/// Everything a client can observe of one owner: the list, and per live file its history and
/// every retained version with content.
async fn observe(s: &SqliteStore, o: &Owner) -> Vec<(Vec<StoredFile>, Vec<wsp_store::FileMeta>)> {
    let mut seen = Vec::new();
    for meta in s.list(o, &WorkspacePrefix::all()).await.unwrap() {
        let history = s.history(o, &meta.path).await.unwrap();
        let mut versions = Vec::new();
        for h in &history {
            versions.push(s.get(o, &meta.path, Some(h.version)).await.unwrap());
        }
        assert_eq!(
            s.get(o, &meta.path, None).await.unwrap().meta,
            meta,
            "the list shows the live version"
        );
        seen.push((versions, history));
    }
    seen
}

/// Everything a client can observe of one snapshot: its record, its list, and each listed file.
async fn observe_snapshot(
    s: &SqliteStore,
    o: &Owner,
    id: &wsp_store::SnapshotId,
) -> (SnapshotInfo, Vec<wsp_store::FileMeta>, Vec<StoredFile>) {
    let info = s.snapshot_info(o, id).await.unwrap();
    let listed = s.list_at(o, id, &WorkspacePrefix::all()).await.unwrap();
    let mut files = Vec::new();
    for meta in &listed {
        let file = s.get_at(o, id, &meta.path).await.unwrap();
        assert_eq!(&file.meta, meta, "the snapshot's list shows what it reads");
        files.push(file);
    }
    (info, listed, files)
}

/// Rows stored for one path, tombstones included.
fn stored_rows(raw: &Connection, tenant: &str, p: &str) -> i64 {
    raw.query_row(
        "SELECT count(*) FROM versions WHERE tenant = ?1 AND path = ?2",
        (tenant, p),
        |r| r.get(0),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopen_keeps_versions_etags_tombstones_counts_snapshots_and_the_feed() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (owner("a"), owner("b"));
    let (before_a, before_b, gone_etag, again_v1, run, pinned, feed_a, feed_b) = {
        let s = SqliteStore::open(&db(&dir), small()).unwrap();
        for i in 1..=4 {
            let plain = wsp_types::MediaType::from_static("text/plain");
            // Version 3 is bytes, kept as base64 across the reopen.
            let mut w = if i == 3 {
                FileWrite::bytes(&[0xff, 0x00, i], plain)
            } else {
                FileWrite::text(format!("keep v{i}"), plain)
            };
            w.author = (i % 2 == 0).then(|| format!("author {i}"));
            s.put(&a, &path("keep.md"), w, Precondition::None)
                .await
                .unwrap();
        }
        put(&s, &a, "gone.md", "1").await;
        let gone = put(&s, &a, "gone.md", "2").await;
        let run = s.snapshot(&a, &"run 1".into()).await.unwrap();
        s.delete(&a, &path("gone.md"), Precondition::None)
            .await
            .unwrap();
        put(&s, &a, "again.md", "first life").await;
        s.delete(&a, &path("again.md"), Precondition::None)
            .await
            .unwrap();
        let again = put(&s, &a, "again.md", "second life").await;
        put(&s, &b, "keep.md", "b's").await;
        (
            observe(&s, &a).await,
            observe(&s, &b).await,
            gone.meta.etag,
            again,
            run.clone(),
            observe_snapshot(&s, &a, &run.id).await,
            s.changes(&a, 0, 100).await.unwrap(),
            s.changes(&b, 0, 100).await.unwrap(),
        )
    };
    assert_eq!(before_a.len(), 2, "keep.md and again.md are live");
    assert_eq!(
        pinned
            .1
            .iter()
            .map(|m| (m.path.as_str(), m.version))
            .collect::<Vec<_>>(),
        [("gone.md", 2), ("keep.md", 4)],
        "the snapshot sees the moment it was taken"
    );
    assert_eq!(
        (feed_a.head, feed_a.oldest, feed_a.events.len()),
        (10, 1, 10)
    );

    let s = SqliteStore::open(&db(&dir), small()).unwrap();
    assert_eq!(observe(&s, &a).await, before_a);
    assert_eq!(observe(&s, &b).await, before_b);
    assert_eq!(
        before_a[1].1.iter().map(|m| m.version).collect::<Vec<_>>(),
        vec![4, 3, 2],
        "keep.md kept its three newest versions"
    );
    // The snapshot and the feed survive, to the microsecond.
    assert_eq!(observe_snapshot(&s, &a, &run.id).await, pinned);
    assert_eq!(s.changes(&a, 0, 100).await.unwrap(), feed_a);
    assert_eq!(s.changes(&b, 0, 100).await.unwrap(), feed_b);

    // Tombstones and lives survive: the deleted path stays deleted, stale etags stay stale.
    let gone = path("gone.md");
    assert_eq!(s.get(&a, &gone, None).await, Err(StoreError::NotFound));
    assert_eq!(
        s.delete(&a, &gone, Precondition::None).await,
        Err(StoreError::NotFound)
    );
    assert_eq!(
        s.put(
            &a,
            &gone,
            FileWrite::markdown("x"),
            Precondition::IfMatch(vec![gone_etag.clone()])
        )
        .await,
        Err(StoreError::Conflict { current_version: 0 })
    );
    let reborn = put(&s, &a, "gone.md", "reborn").await;
    assert_eq!(reborn.meta.version, 1);
    assert_ne!(reborn.meta.etag, gone_etag);
    assert_eq!(
        s.get_at(&a, &run.id, &gone).await.unwrap().content,
        "2",
        "the snapshot still reads the deleted life"
    );
    let again2 = s
        .put(
            &a,
            &path("again.md"),
            FileWrite::markdown("again v2"),
            Precondition::IfMatch(vec![again_v1.meta.etag]),
        )
        .await
        .unwrap();
    assert_eq!(
        again2.meta.version, 2,
        "the live etag still matches after reopen"
    );
    // The feed goes on from where it was, without a gap.
    let tail = s.changes(&a, feed_a.head, 100).await.unwrap();
    assert_eq!(
        tail.events
            .iter()
            .map(|e| (e.seq, e.path.as_str(), e.version))
            .collect::<Vec<_>>(),
        [(11, "gone.md", 1), (12, "again.md", 2)]
    );

    // The live count survived: a has 3 live files now, the limit.
    assert_eq!(
        s.put(
            &a,
            &path("fourth.md"),
            FileWrite::markdown("x"),
            Precondition::None
        )
        .await,
        Err(StoreError::TooLarge {
            limit: LimitKind::MaxFiles,
            max: 3
        })
    );

    // Released after the reopen, the snapshot frees the deleted life it alone kept.
    let raw = Connection::open(db(&dir)).unwrap();
    assert_eq!(
        stored_rows(&raw, "a", "gone.md"),
        2,
        "v2 (pinned) and reborn; the tombstone no snapshot sees went with the new life"
    );
    s.release_snapshot(&a, &run.id, "completed").await.unwrap();
    assert_eq!(stored_rows(&raw, "a", "gone.md"), 1, "reborn only");
    assert_eq!(
        s.get_at(&a, &run.id, &gone).await,
        Err(StoreError::NotFound)
    );
    drop(s);

    // A lower `max_versions` is served at once and frees storage at a path's next write.
    let fewer = small().with_max_versions(2);
    let s = SqliteStore::open(&db(&dir), fewer).unwrap();
    let keep = path("keep.md");
    let versions = async || -> Vec<u64> {
        let history = s.history(&a, &keep).await.unwrap();
        history.iter().map(|m| m.version).collect()
    };
    assert_eq!(versions().await, vec![4, 3]);
    assert_eq!(s.get(&a, &keep, Some(2)).await, Err(StoreError::NotFound));
    assert_eq!(stored_rows(&raw, "a", "keep.md"), 3);
    assert_eq!(put(&s, &a, "keep.md", "keep v5").await.meta.version, 5);
    assert_eq!(versions().await, vec![5, 4]);
    assert_eq!(stored_rows(&raw, "a", "keep.md"), 2);
}

#[test]
fn a_new_file_is_stamped_as_wsp_and_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    drop(SqliteStore::open(&db(&dir), Limits::default()).unwrap());
    assert!(
        !dir.path().join("wsp.sqlite3-wal").exists(),
        "closing the store checkpointed and removed the WAL"
    );
    let raw = Connection::open(db(&dir)).unwrap();
    let app: i32 = raw
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .unwrap();
    let version: i64 = raw
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    let mode: String = raw
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(app, APPLICATION_ID);
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(mode, "wal");
}

fn open_err(path: &Path) -> OpenError {
    SqliteStore::open(path, Limits::default()).expect_err("the open is refused")
}

#[test]
fn a_missing_directory_is_refused_and_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let err = open_err(&missing.join("wsp.sqlite3"));
    assert_eq!(
        err,
        OpenError::MissingDirectory {
            path: missing.join("wsp.sqlite3"),
            directory: missing.clone(),
        }
    );
    assert!(err.to_string().contains("does not exist"), "{err}");
    assert!(!missing.exists());
}

#[test]
fn a_path_that_cannot_be_a_database_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file.txt");
    std::fs::write(&file, "x").unwrap();
    let cases = [
        (file.join("wsp.sqlite3"), "is not a directory"),
        (dir.path().to_owned(), "is a directory"),
    ];
    for (path, why) in cases {
        match open_err(&path) {
            OpenError::CannotOpen { path: p, reason } => {
                assert_eq!(p, path);
                assert!(reason.contains(why), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }
}

/// A location where no one, not even root, can create a file.
#[cfg(target_os = "linux")]
#[test]
fn an_unwritable_location_is_refused() {
    let err = open_err(Path::new("/proc/wsp-store-sqlite-test.sqlite3"));
    assert!(
        matches!(err, OpenError::CannotOpen { .. }),
        "unexpected {err:?}"
    );
    assert!(
        err.to_string()
            .contains("/proc/wsp-store-sqlite-test.sqlite3")
    );
}

#[test]
fn a_file_that_is_not_sqlite_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let notes = "these are notes, not a database\n".repeat(200);
    std::fs::write(db(&dir), &notes).unwrap();
    let err = open_err(&db(&dir));
    assert!(
        matches!(&err, OpenError::NotAWspDatabase { reason, .. } if reason.contains("not an SQLite")),
        "unexpected {err:?}"
    );
    assert_eq!(std::fs::read_to_string(db(&dir)).unwrap(), notes);
}

#[test]
fn another_applications_database_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let raw = Connection::open(db(&dir)).unwrap();
    raw.execute_batch("CREATE TABLE mine (x); INSERT INTO mine VALUES (1);")
        .unwrap();
    drop(raw);
    let err = open_err(&db(&dir));
    assert!(
        matches!(&err, OpenError::NotAWspDatabase { reason, .. } if reason.contains("another application")),
        "unexpected {err:?}"
    );
    let raw = Connection::open(db(&dir)).unwrap();
    let mode: String = raw
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "delete", "the foreign file was not switched to WAL");
    let tables: i64 = raw
        .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
        .unwrap();
    assert_eq!(tables, 1);

    // An empty database stamped by another application is refused too.
    let other = dir.path().join("other.sqlite3");
    Connection::open(&other)
        .unwrap()
        .execute_batch("PRAGMA application_id = 42")
        .unwrap();
    let err = open_err(&other);
    assert!(
        matches!(&err, OpenError::NotAWspDatabase { reason, .. } if reason.contains("0x0000002a")),
        "unexpected {err:?}"
    );
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(SqliteStore::open(&db(&dir), Limits::default()).unwrap());
    Connection::open(db(&dir))
        .unwrap()
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    let err = open_err(&db(&dir));
    assert_eq!(
        err,
        OpenError::TooNew {
            path: db(&dir),
            found: SCHEMA_VERSION + 1,
            supported: SCHEMA_VERSION,
        }
    );
    assert!(err.to_string().contains("upgrade wsp"), "{err}");
}

/// Another connection holding the write lock: reads carry on from the last committed state,
/// a write waits for the busy timeout and then reports the store as unavailable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_write_lock_blocks_writes_but_not_reads() {
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteOptions::default().busy_timeout(Duration::from_millis(100));
    let s = SqliteStore::open_with(&db(&dir), Limits::default(), options).unwrap();
    let a = owner("a");
    let v1 = put(&s, &a, "a.md", "committed").await;

    let raw = Connection::open(db(&dir)).unwrap();
    raw.execute_batch(
        "BEGIN IMMEDIATE;
         UPDATE versions SET content = 'uncommitted';",
    )
    .unwrap();
    assert_eq!(s.get(&a, &path("a.md"), None).await.unwrap(), v1);
    assert_eq!(
        s.list(&a, &WorkspacePrefix::all()).await.unwrap(),
        vec![v1.meta.clone()]
    );
    let blocked = s
        .put(
            &a,
            &path("a.md"),
            FileWrite::markdown("v2"),
            Precondition::None,
        )
        .await;
    assert!(
        matches!(blocked, Err(StoreError::Unavailable { .. })),
        "{blocked:?}"
    );
    raw.execute_batch("ROLLBACK").unwrap();
    assert_eq!(put(&s, &a, "a.md", "v2").await.meta.version, 2);
}

/// Writers queued behind a held lock wait without holding blocking threads, so reads still get
/// one even from a small blocking pool.
#[test]
fn queued_writers_leave_the_blocking_pool_to_readers() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(4)
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let options = SqliteOptions::default()
            .busy_timeout(Duration::from_secs(10))
            .readers(2);
        let s = Arc::new(SqliteStore::open_with(&db(&dir), Limits::default(), options).unwrap());
        let a = owner("a");
        let v1 = put(&s, &a, "a.md", "v1").await;

        let raw = Connection::open(db(&dir)).unwrap();
        raw.execute_batch("BEGIN IMMEDIATE").unwrap();
        let mut writers = tokio::task::JoinSet::new();
        for i in 0..16 {
            let (s, a) = (s.clone(), a.clone());
            writers.spawn(async move {
                s.put(
                    &a,
                    &path("a.md"),
                    FileWrite::markdown(format!("w{i}")),
                    Precondition::None,
                )
                .await
            });
        }
        // Let the writers reach the lock (a test may block a worker briefly).
        std::thread::sleep(Duration::from_millis(100));
        for _ in 0..20 {
            assert_eq!(s.get(&a, &path("a.md"), None).await.unwrap(), v1);
        }
        assert_eq!(writers.len(), 16);
        raw.execute_batch("ROLLBACK").unwrap();
        let mut versions = Vec::new();
        while let Some(result) = writers.join_next().await {
            versions.push(
                result
                    .unwrap()
                    .expect("a queued write succeeds")
                    .meta
                    .version,
            );
        }
        versions.sort_unstable();
        assert_eq!(versions, (2..=17).collect::<Vec<u64>>());
    });
}

/// A failure inside the write transaction is internal, names no content, and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_write_transaction_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&db(&dir), Limits::default()).unwrap();
    let a = owner("a");
    let v1 = put(&s, &a, "a.md", "first").await;

    let raw = Connection::open(db(&dir)).unwrap();
    raw.execute_batch(
        "CREATE TRIGGER refuse BEFORE INSERT ON versions BEGIN SELECT RAISE(ABORT, 'refused'); END;",
    )
    .unwrap();
    let secret = "content that must not appear in an error";
    let failed = s
        .put(
            &a,
            &path("a.md"),
            FileWrite::markdown(secret),
            Precondition::None,
        )
        .await;
    match failed {
        Err(StoreError::Internal {
            reason: message, ..
        }) => {
            assert!(message.contains("refused"), "{message}");
            assert!(!message.contains(secret), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let created = s
        .put(
            &a,
            &path("b.md"),
            FileWrite::markdown("b"),
            Precondition::None,
        )
        .await;
    assert!(matches!(created, Err(StoreError::Internal { .. })));
    raw.execute_batch("DROP TRIGGER refuse").unwrap();

    assert_eq!(s.get(&a, &path("a.md"), None).await.unwrap(), v1);
    assert_eq!(
        s.get(&a, &path("b.md"), None).await,
        Err(StoreError::NotFound)
    );
    assert_eq!(put(&s, &a, "a.md", "second").await.meta.version, 2);
    let (seq, live): (i64, i64) = raw
        .query_row(
            "SELECT seq, live_files FROM owners WHERE tenant = 'a'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        (seq, live),
        (2, 1),
        "the failed writes took no sequence number and counted no file"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_round_trips_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&db(&dir), Limits::default()).unwrap();
    let a = owner("a");
    let max = "x".repeat(1024 * 1024);
    let cases = [
        "",
        "nul \0 inside\0",
        "crlf\r\nline\rline\n",
        "emoji 🦀 and combining é",
        "'); DROP TABLE versions; --",
        max.as_str(),
    ];
    for (i, content) in cases.iter().enumerate() {
        let p = format!("case{i}.md");
        let stored = put(&s, &a, &p, content).await;
        assert_eq!(stored.meta.size, content.len() as u64);
        let got = s.get(&a, &path(&p), None).await.unwrap();
        assert_eq!(got.content, *content);
        assert_eq!(got, stored);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_prefixes_are_literal_and_tight() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&db(&dir), Limits::default()).unwrap();
    let a = owner("a");
    for p in [
        "a_b.md", "axb.md", "a-b.md", "a_", "a_/x.md", "notes", "notes.md", "notet.md", "z",
    ] {
        put(&s, &a, p, "x").await;
    }
    let list = async |prefix: &str| -> Vec<String> {
        s.list(&a, &WorkspacePrefix::parse(prefix).unwrap())
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.path.into_string())
            .collect()
    };
    assert_eq!(list("a_").await, ["a_", "a_/x.md", "a_b.md"]);
    assert_eq!(list("a-").await, ["a-b.md"]);
    assert_eq!(list("notes").await, ["notes", "notes.md"]);
    assert_eq!(list("z").await, ["z"]);
    assert_eq!(list("a_/x.md").await, ["a_/x.md"]);
    assert_eq!(list("a_/x.mdx").await, Vec::<String>::new());
}

/// Two stores on one file (as two processes would be) share state and its atomicity.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_stores_on_one_file_have_one_winner() {
    let dir = tempfile::tempdir().unwrap();
    let stores = [
        Arc::new(SqliteStore::open(&db(&dir), Limits::default()).unwrap()),
        Arc::new(SqliteStore::open(&db(&dir), Limits::default()).unwrap()),
    ];
    let a = owner("a");
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..16 {
        let (s, a) = (stores[t % 2].clone(), a.clone());
        tasks.spawn(async move {
            s.put(
                &a,
                &path("once.md"),
                FileWrite::markdown(format!("{t}")),
                Precondition::IfNoneMatchAny,
            )
            .await
        });
    }
    let mut winners = Vec::new();
    while let Some(result) = tasks.join_next().await {
        match result.unwrap() {
            Ok(f) => winners.push(f),
            Err(e) => assert_eq!(e, StoreError::Conflict { current_version: 1 }),
        }
    }
    assert_eq!(winners.len(), 1);
    for s in &stores {
        assert_eq!(s.get(&a, &path("once.md"), None).await.unwrap(), winners[0]);
    }
}

fn event_rows(raw: &Connection) -> i64 {
    raw.query_row("SELECT count(*) FROM events", [], |r| r.get(0))
        .unwrap()
}

/// The feed keeps the configured number of events per owner, in storage too, and a lower
/// retention after a reopen applies at the next write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_feed_keeps_the_configured_number_of_events() {
    let dir = tempfile::tempdir().unwrap();
    let a = owner("a");
    let open = |retention| {
        let options = SqliteOptions::default().feed_retention(retention);
        SqliteStore::open_with(&db(&dir), Limits::default(), options).unwrap()
    };
    let raw = || Connection::open(db(&dir)).unwrap();
    let seqs = |page: &wsp_store::ChangePage| page.events.iter().map(|e| e.seq).collect::<Vec<_>>();

    let s = open(3);
    for i in 0..5 {
        put(&s, &a, &format!("f{i}.md"), "x").await;
    }
    put(&s, &owner("b"), "b.md", "x").await;
    let page = s.changes(&a, 0, 100).await.unwrap();
    assert_eq!((page.oldest, page.head, seqs(&page)), (3, 5, vec![3, 4, 5]));
    assert_eq!(event_rows(&raw()), 3 + 1, "trimmed in storage, per owner");
    let page = s.changes(&a, 3, 1).await.unwrap();
    assert_eq!(
        seqs(&page),
        [4],
        "a page starts after the position and stops at the limit"
    );
    drop(s);

    let s = open(10);
    for i in 5..9 {
        put(&s, &a, &format!("f{i}.md"), "x").await;
    }
    let page = s.changes(&a, 0, 100).await.unwrap();
    assert_eq!(
        (page.oldest, page.head),
        (3, 9),
        "a higher retention keeps more"
    );
    drop(s);

    let s = open(2);
    assert_eq!(s.changes(&a, 0, 100).await.unwrap().oldest, 3);
    s.delete(&a, &path("f0.md"), Precondition::None)
        .await
        .unwrap();
    let page = s.changes(&a, 0, 100).await.unwrap();
    assert_eq!((page.oldest, page.head, seqs(&page)), (9, 10, vec![9, 10]));
    assert!(page.events[1].deleted);
    assert_eq!(event_rows(&raw()), 2 + 1);
}

/// A notice follows only a committed change: a write refused by its precondition, or whose
/// transaction fails (here at the feed append), announces nothing and leaves no trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_committed_changes_are_announced() {
    use tokio::sync::broadcast::error::TryRecvError;

    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&db(&dir), Limits::default()).unwrap();
    let a = owner("a");
    let mut rx = s.subscribe().unwrap();
    let v1 = put(&s, &a, "a.md", "one").await;
    assert_eq!(rx.try_recv().unwrap().seq, 1);

    let refused = s
        .put(
            &a,
            &path("a.md"),
            FileWrite::markdown("x"),
            Precondition::IfNoneMatchAny,
        )
        .await;
    assert_eq!(refused, Err(StoreError::Conflict { current_version: 1 }));
    let raw = Connection::open(db(&dir)).unwrap();
    raw.execute_batch(
        "CREATE TRIGGER refuse BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'no feed'); END;",
    )
    .unwrap();
    let failed = s
        .put(
            &a,
            &path("a.md"),
            FileWrite::markdown("two"),
            Precondition::None,
        )
        .await;
    assert!(
        matches!(failed, Err(StoreError::Internal { .. })),
        "{failed:?}"
    );
    let failed = s.delete(&a, &path("a.md"), Precondition::None).await;
    assert!(
        matches!(failed, Err(StoreError::Internal { .. })),
        "{failed:?}"
    );
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    assert_eq!(s.get(&a, &path("a.md"), None).await.unwrap(), v1);
    raw.execute_batch("DROP TRIGGER refuse").unwrap();

    put(&s, &a, "a.md", "two").await;
    let notice = rx.try_recv().unwrap();
    assert_eq!((notice.owner, notice.seq), (a.clone(), 2));
    let page = s.changes(&a, 0, 10).await.unwrap();
    assert_eq!(
        page.events.iter().map(|e| e.version).collect::<Vec<_>>(),
        [1, 2]
    );
}

/// Notices from racing writers arrive in sequence order, one per change.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn notices_arrive_in_sequence_order() {
    let dir = tempfile::tempdir().unwrap();
    let s = Arc::new(SqliteStore::open(&db(&dir), Limits::default()).unwrap());
    let a = owner("a");
    let mut rx = s.subscribe().unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..4 {
        let (s, a) = (s.clone(), a.clone());
        tasks.spawn(async move {
            for i in 0..10 {
                put(&s, &a, &format!("t{t}/{i}.md"), "x").await;
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }
    let mut seqs = Vec::new();
    while let Ok(notice) = rx.try_recv() {
        seqs.push(notice.seq);
    }
    assert_eq!(seqs, (1..=40).collect::<Vec<u64>>());
}

/// Two stores on one file (as two processes would be): a snapshot taken through one keeps the
/// rows it sees from the other's pruning, and either can read and release it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_pins_rows_for_every_store_on_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let one = SqliteStore::open(&db(&dir), small()).unwrap();
    let two = SqliteStore::open(&db(&dir), small()).unwrap();
    let a = owner("a");
    put(&one, &a, "a.md", "pinned").await;
    put(&one, &a, "b.md", "pinned too").await;
    let snap = one.snapshot(&a, &"run".into()).await.unwrap();
    for i in 2..=6 {
        put(&two, &a, "a.md", &format!("v{i}")).await;
    }
    two.delete(&a, &path("b.md"), Precondition::None)
        .await
        .unwrap();
    for s in [&one, &two] {
        assert_eq!(
            s.get_at(&a, &snap.id, &path("a.md")).await.unwrap().content,
            "pinned"
        );
        assert_eq!(
            s.get_at(&a, &snap.id, &path("b.md")).await.unwrap().content,
            "pinned too"
        );
    }
    two.release_snapshot(&a, &snap.id, "completed")
        .await
        .unwrap();
    assert_eq!(
        one.list_at(&a, &snap.id, &WorkspacePrefix::all()).await,
        Err(StoreError::NotFound)
    );
    let raw = Connection::open(db(&dir)).unwrap();
    assert_eq!(stored_rows(&raw, "a", "a.md"), 3, "the history window only");
    assert_eq!(stored_rows(&raw, "a", "b.md"), 0, "forgotten");
}

/// A write stores its new version once and leaves the previous version's row untouched: the
/// WAL grows by about one copy of the content, not two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_does_not_rewrite_the_previous_version() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&db(&dir), Limits::default()).unwrap();
    let a = owner("a");
    let big = "x".repeat(512 * 1024);
    put(&s, &a, "big.md", &big).await;
    let snap = s.snapshot(&a, &"".into()).await.unwrap();
    let raw = Connection::open(db(&dir)).unwrap();
    let wal = dir.path().join("wsp.sqlite3-wal");
    for (i, body) in ["y", "z"].iter().enumerate() {
        let (busy, _, _): (i64, i64, i64) = raw
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .unwrap();
        assert_eq!(busy, 0, "the checkpoint ran");
        assert_eq!(std::fs::metadata(&wal).unwrap().len(), 0);
        put(&s, &a, "big.md", &body.repeat(512 * 1024)).await;
        let grown = std::fs::metadata(&wal).unwrap().len();
        assert!(
            grown < 600 * 1024,
            "write {i}: the WAL grew by {grown} bytes for 512 KiB of content"
        );
    }
    assert_eq!(
        s.get_at(&a, &snap.id, &path("big.md"))
            .await
            .unwrap()
            .content,
        big
    );
}

/// The next notice on `rx` within `wait`, if any.
async fn notice_within(
    rx: &mut tokio::sync::broadcast::Receiver<wsp_store::ChangeNotice>,
    wait: Duration,
) -> Option<wsp_store::ChangeNotice> {
    tokio::time::timeout(wait, rx.recv())
        .await
        .ok()
        .map(|r| r.expect("the channel stays open"))
}

/// A commit of another process right after the first subscriber subscribed (before the watcher
/// looked at the file for the first time) is announced too: a subscriber hears of every commit
/// made after `subscribe` returned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_elsewhere_right_after_subscribing_is_announced() {
    let dir = tempfile::tempdir().unwrap();
    let here = SqliteStore::open(&db(&dir), Limits::default()).unwrap();
    let there = SqliteStore::open(&db(&dir), Limits::default()).unwrap();
    let a = owner("a");
    put(&here, &a, "before.md", "1").await;
    let mut rx = here.subscribe().expect("SQLite notifies");
    put(&there, &a, "x.md", "from elsewhere").await;
    let n = notice_within(&mut rx, Duration::from_secs(5))
        .await
        .expect("the commit of the other process is announced");
    assert_eq!((n.owner, n.seq), (a, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_of_another_process_are_announced_once() {
    let dir = tempfile::tempdir().unwrap();
    // Two stores on one file: what two processes sharing a data directory do.
    let here = SqliteStore::open(&db(&dir), Limits::default()).unwrap();
    let there = SqliteStore::open(&db(&dir), Limits::default()).unwrap();
    let (a, b) = (owner("a"), owner("b"));
    put(&here, &a, "before.md", "1").await;
    let mut rx = here.subscribe().expect("SQLite notifies");
    // Let the watcher learn where things stand before the other process writes.
    tokio::time::sleep(Duration::from_millis(600)).await;

    put(&there, &b, "x.md", "from elsewhere").await;
    let n = notice_within(&mut rx, Duration::from_secs(5))
        .await
        .expect("a commit of another process is announced");
    assert_eq!((n.owner, n.seq), (b.clone(), 1));

    // This store's own commit is announced at once, and only once.
    put(&here, &a, "after.md", "2").await;
    let n = notice_within(&mut rx, Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!((n.owner, n.seq), (a.clone(), 2));
    assert!(
        notice_within(&mut rx, Duration::from_millis(800))
            .await
            .is_none(),
        "a commit of this store was announced again"
    );

    // Several commits elsewhere between two checks: one notice with the newest sequence.
    for i in 0..3 {
        put(&there, &a, &format!("many-{i}.md"), "x").await;
    }
    let mut last = 0;
    while let Some(n) = notice_within(&mut rx, Duration::from_secs(2)).await {
        assert_eq!(n.owner, a);
        assert!(n.seq > last, "notices go forward: {} after {last}", n.seq);
        last = n.seq;
        if last == 5 {
            break;
        }
    }
    assert_eq!(last, 5, "the newest sequence of owner a was announced");
}
