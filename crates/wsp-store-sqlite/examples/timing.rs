//! A quick timing table for the SQLite store (not a benchmark suite; `cargo xtask bench` is).
//!
//! ```text
//! cargo run --release -p wsp-store-sqlite --example timing [-- <database dir>]
//! ```
//!
//! Prints the mean latency of a 1 KiB unconditional PUT, a conditional PUT, a live GET, a
//! versioned GET, a 100-file LIST, and GET throughput with several concurrent readers while a
//! writer runs. Pass a directory to measure on a particular disk (default: a temporary one).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use wsp_store::{FileWrite, Limits, Precondition, WorkspaceStore};
use wsp_store_sqlite::SqliteStore;
use wsp_types::{Owner, WorkspacePath, WorkspacePrefix};

const ROUNDS: u32 = 2000;
const READERS: usize = 4;

fn row(what: &str, elapsed: Duration, n: u32) {
    let per = elapsed / n;
    println!(
        "{what:<44} {:>9.1} µs {:>10.0} /s",
        per.as_secs_f64() * 1e6,
        f64::from(n) / elapsed.as_secs_f64()
    );
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let temp = tempfile::tempdir()?;
    let dir = std::env::args()
        .nth(1)
        .map_or_else(|| temp.path().to_owned(), Into::into);
    let db = dir.join("wsp-timing.sqlite3");
    let store = Arc::new(SqliteStore::open(&db, Limits::default())?);
    let owner = Owner::parse("bench", "w")?;
    let path = WorkspacePath::parse("notes/plan.md")?;
    let body = "x".repeat(1024);
    println!("database: {}", db.display());

    let start = Instant::now();
    for _ in 0..ROUNDS {
        store
            .put(
                &owner,
                &path,
                FileWrite::markdown(&body),
                Precondition::None,
            )
            .await?;
    }
    row("PUT 1 KiB (commit + fsync)", start.elapsed(), ROUNDS);

    let mut live = store.get(&owner, &path, None).await?;
    let start = Instant::now();
    for _ in 0..ROUNDS {
        let pre = Precondition::IfMatch(vec![live.meta.etag.clone()]);
        live = store
            .put(&owner, &path, FileWrite::markdown(&body), pre)
            .await?;
    }
    row("PUT 1 KiB If-Match", start.elapsed(), ROUNDS);

    let start = Instant::now();
    for _ in 0..ROUNDS {
        store.get(&owner, &path, None).await?;
    }
    row("GET 1 KiB live", start.elapsed(), ROUNDS);

    let start = Instant::now();
    for _ in 0..ROUNDS {
        tokio::task::spawn_blocking(|| ()).await?;
    }
    row(
        "(floor: an empty spawn_blocking round trip)",
        start.elapsed(),
        ROUNDS,
    );

    let old = live.meta.version - 10;
    let start = Instant::now();
    for _ in 0..ROUNDS {
        store.get(&owner, &path, Some(old)).await?;
    }
    row("GET 1 KiB ?version=N", start.elapsed(), ROUNDS);

    for i in 0..100 {
        let p = WorkspacePath::parse(&format!("knowledge/{i:03}.md"))?;
        store
            .put(&owner, &p, FileWrite::markdown(&body), Precondition::None)
            .await?;
    }
    let prefix = WorkspacePrefix::parse("knowledge/")?;
    let start = Instant::now();
    for _ in 0..ROUNDS / 10 {
        assert_eq!(store.list(&owner, &prefix).await?.len(), 100);
    }
    row("LIST 100 files", start.elapsed(), ROUNDS / 10);

    let writing = Arc::new(AtomicBool::new(true));
    let writer = {
        let (store, owner, path, body, writing) = (
            store.clone(),
            owner.clone(),
            path.clone(),
            body.clone(),
            writing.clone(),
        );
        tokio::spawn(async move {
            let mut writes = 0u32;
            while writing.load(Ordering::Relaxed) {
                store
                    .put(
                        &owner,
                        &path,
                        FileWrite::markdown(&body),
                        Precondition::None,
                    )
                    .await
                    .expect("put");
                writes += 1;
            }
            writes
        })
    };
    let start = Instant::now();
    let mut readers = tokio::task::JoinSet::new();
    for _ in 0..READERS {
        let (store, owner, path) = (store.clone(), owner.clone(), path.clone());
        readers.spawn(async move {
            for _ in 0..ROUNDS {
                store.get(&owner, &path, None).await.expect("get");
            }
        });
    }
    while let Some(r) = readers.join_next().await {
        r?;
    }
    let elapsed = start.elapsed();
    writing.store(false, Ordering::Relaxed);
    let writes = writer.await?;
    row(
        &format!("GET 1 KiB, {READERS} readers + 1 writer (aggregate)"),
        elapsed,
        ROUNDS * READERS as u32,
    );
    row("  the writer meanwhile", elapsed, writes.max(1));
    Ok(())
}
