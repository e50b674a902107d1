//! A quick timing table for the SQLite store (not a benchmark suite; `cargo xtask bench` is).
//!
//! ```text
//! cargo run --release -p wsp-store-sqlite --example timing [-- <database dir>]
//! ```
//!
//! Prints the mean latency of a 1 KiB unconditional PUT, a conditional PUT, a PUT while a
//! snapshot is open, a live GET, a versioned GET, a 100-file LIST, a read of the change feed,
//! GET throughput with several concurrent readers while a writer runs, and the time to take a
//! snapshot of a workspace of 10, 1,000 and 100,000 files (filled through the store, one
//! committed write per file: on a slow disk pass a tmpfs directory such as `/dev/shm`). Pass a
//! directory to measure on a particular disk (default: a temporary one).

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

    let pinned = store.snapshot(&owner, &"timing".into()).await?;
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
    row("PUT 1 KiB, a snapshot open", start.elapsed(), ROUNDS);
    let start = Instant::now();
    store.release_snapshot(&owner, &pinned.id, "done").await?;
    row("RELEASE that snapshot", start.elapsed(), 1);
    let live = store.get(&owner, &path, None).await?;

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

    let head = store.changes(&owner, 0, 0).await?.head;
    let start = Instant::now();
    for _ in 0..ROUNDS {
        store.changes(&owner, head - 100, 100).await?;
    }
    row("FEED page of 100 events", start.elapsed(), ROUNDS);

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

    let mut times = Vec::new();
    for files in SNAPSHOT_SIZES {
        let elapsed = snapshot_time(&dir, files).await?;
        row(&format!("SNAPSHOT of {files} files"), elapsed, SNAPSHOTS);
        times.push(elapsed);
    }
    if let (Some(first), Some(last)) = (times.first(), times.last()) {
        println!(
            "snapshot time at {} files / at {} files: {:.2}",
            SNAPSHOT_SIZES[SNAPSHOT_SIZES.len() - 1],
            SNAPSHOT_SIZES[0],
            last.as_secs_f64() / first.as_secs_f64()
        );
    }
    Ok(())
}

const SNAPSHOT_SIZES: [usize; 3] = [10, 1_000, 100_000];
const SNAPSHOTS: u32 = 200;

/// Fills a fresh database with `files` files of one owner, then takes [`SNAPSHOTS`] snapshots
/// of it; returns the time they took.
async fn snapshot_time(
    dir: &std::path::Path,
    files: usize,
) -> Result<Duration, Box<dyn std::error::Error>> {
    let db = dir.join(format!("wsp-timing-snapshot-{files}.sqlite3"));
    let limits = Limits::default().with_max_files(files as u64);
    let store = Arc::new(SqliteStore::open(&db, limits)?);
    let owner = Owner::parse("bench", "w")?;
    let fill = Instant::now();
    let mut writers = tokio::task::JoinSet::new();
    for w in 0..4 {
        let (store, owner) = (store.clone(), owner.clone());
        writers.spawn(async move {
            for i in (w..files).step_by(4) {
                let p = WorkspacePath::parse(&format!("files/{i:06}.md")).expect("a path");
                let write = FileWrite::markdown(format!("file {i}"));
                store
                    .put(&owner, &p, write, Precondition::None)
                    .await
                    .expect("put");
            }
        });
    }
    while let Some(r) = writers.join_next().await {
        r?;
    }
    println!(
        "  (filled {files} files in {:.1} s)",
        fill.elapsed().as_secs_f64()
    );
    let mut ids = Vec::new();
    let start = Instant::now();
    for _ in 0..SNAPSHOTS {
        ids.push(store.snapshot(&owner, &"run".into()).await?.id);
    }
    let elapsed = start.elapsed();
    for id in ids {
        store.release_snapshot(&owner, &id, "done").await?;
    }
    drop(store);
    std::fs::remove_file(&db)?;
    Ok(elapsed)
}
