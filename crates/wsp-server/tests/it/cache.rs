//! The cache of current files never serves what the store no longer holds: a read after an
//! acknowledged write sees it, and a change made through another store on the same SQLite file
//! (as another process would) is seen within the store's notice delay.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wsp_client::{Error, PutOptions};
use wsp_store::{FileWrite, Limits, Precondition, WorkspaceStore};
use wsp_store_sqlite::SqliteStore;
use wsp_types::{ErrorCode, Owner, WorkspacePath};

use crate::support::{Options, TestServer, start_with};

fn p(s: &str) -> WorkspacePath {
    WorkspacePath::parse(s).unwrap()
}

fn limits() -> Limits {
    Limits::default().with_max_file_bytes(4096)
}

async fn sqlite_server(file: &std::path::Path) -> TestServer {
    let store = SqliteStore::open(file, limits()).unwrap();
    start_with(Options {
        store: Some(Arc::new(store)),
        ..Options::default()
    })
    .await
}

/// Writers and readers of one path, at once: every read that starts after a write was
/// acknowledged returns that version or a newer one, and a delete is never answered with the
/// file it deleted.
async fn reads_follow_acknowledged_writes(server: &TestServer) {
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..8 {
        let c = server.a();
        tasks.spawn(async move {
            for i in 0..40 {
                let put = c
                    .put(&p("hot.md"), format!("t{t} i{i}"), PutOptions::default())
                    .await
                    .unwrap();
                let read = c.get(&p("hot.md"), None).await.unwrap();
                assert!(
                    read.version >= put.version,
                    "read version {} after writing version {}",
                    read.version,
                    put.version
                );
                let mine = format!("gone/{t}.md");
                c.put(&p(&mine), "x", PutOptions::default()).await.unwrap();
                assert_eq!(c.get(&p(&mine), None).await.unwrap().content, "x");
                c.delete(&p(&mine), None).await.unwrap();
                match c.get(&p(&mine), None).await {
                    Err(Error::Api(e)) => assert_eq!(e.code(), Some(ErrorCode::NotFound)),
                    other => panic!("a deleted file was read: {other:?}"),
                }
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reads_follow_acknowledged_writes_in_memory() {
    let server = start_with(Options::default()).await;
    reads_follow_acknowledged_writes(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reads_follow_acknowledged_writes_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let server = sqlite_server(&dir.path().join("wsp.sqlite3")).await;
    reads_follow_acknowledged_writes(&server).await;
}

/// Another store on the same file (another process, as far as this server can tell) changes a
/// file this server has cached: the server answers the new version within the SQLite store's
/// watch interval (250 ms) and a feed read, well under the 2 s allowed here; a delete likewise.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_change_through_another_store_on_the_file_reaches_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wsp.sqlite3");
    let server = sqlite_server(&file).await;
    let other = SqliteStore::open(&file, limits()).unwrap();
    let owner = Owner::parse("tenant-a", "default").unwrap();
    let c = server.a();
    c.put(&p("seen.md"), "one", PutOptions::default())
        .await
        .unwrap();
    for _ in 0..3 {
        assert_eq!(c.get(&p("seen.md"), None).await.unwrap().content, "one");
    }

    other
        .put(
            &owner,
            &p("seen.md"),
            FileWrite::markdown("two"),
            Precondition::None,
        )
        .await
        .unwrap();
    let written = Instant::now();
    loop {
        let read = c.get(&p("seen.md"), None).await.unwrap();
        if read.content == "two" {
            break;
        }
        assert!(
            written.elapsed() < Duration::from_secs(2),
            "still the old version {:?} after 2 s",
            written.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    other
        .delete(&owner, &p("seen.md"), Precondition::None)
        .await
        .unwrap();
    let deleted = Instant::now();
    while c.get(&p("seen.md"), None).await.is_ok() {
        assert!(
            deleted.elapsed() < Duration::from_secs(2),
            "the deleted file still read after 2 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
