//! A quick timing table for the PostgreSQL store, with the same rows as the SQLite store's
//! `timing` example (not a benchmark suite).
//!
//! ```text
//! cargo run --release -p wsp-store-postgres --example timing [-- <database url>]
//! ```
//!
//! The URL defaults to `WSP_TEST_POSTGRES_URL`. The example works in a schema of its own
//! (`wsp_timing_<random>`) and drops it at the end.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use wsp_store::{FileWrite, Limits, Precondition, WorkspaceStore, new_life_id};
use wsp_store_postgres::{PgOptions, PgStore};
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
    let url = match std::env::args().nth(1) {
        Some(url) => url,
        None => std::env::var("WSP_TEST_POSTGRES_URL")
            .map_err(|_| "pass a database URL or set WSP_TEST_POSTGRES_URL")?,
    };
    let schema = format!("wsp_timing_{:016x}", new_life_id());
    let options = PgOptions::default().with_schema(schema.clone());
    let store = Arc::new(PgStore::connect(&url, Limits::default(), options).await?);
    println!("schema: {schema}");
    let result = measure(&store).await;
    drop(store);
    let (admin, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    admin
        .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .await?;
    result
}

async fn measure(store: &Arc<PgStore>) -> Result<(), Box<dyn std::error::Error>> {
    let owner = Owner::parse("bench", "w")?;
    let path = WorkspacePath::parse("notes/plan.md")?;
    let body = "x".repeat(1024);

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
    row("PUT 1 KiB (commit)", start.elapsed(), ROUNDS);

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

    let start = Instant::now();
    for _ in 0..ROUNDS / 10 {
        let snap = store.snapshot(&owner, &"timing".into()).await?;
        store.release_snapshot(&owner, &snap.id, "done").await?;
    }
    row(
        "snapshot + release (101 files)",
        start.elapsed(),
        ROUNDS / 10,
    );

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

    // Writers of different owners do not wait for each other.
    let start = Instant::now();
    let mut owners = tokio::task::JoinSet::new();
    for t in 0..READERS {
        let (store, path, body) = (store.clone(), path.clone(), body.clone());
        owners.spawn(async move {
            let owner = Owner::parse(&format!("bench{t}"), "w").expect("owner");
            for _ in 0..ROUNDS / 4 {
                store
                    .put(
                        &owner,
                        &path,
                        FileWrite::markdown(&body),
                        Precondition::None,
                    )
                    .await
                    .expect("put");
            }
        });
    }
    while let Some(r) = owners.join_next().await {
        r?;
    }
    row(
        &format!("PUT 1 KiB, {READERS} owners at once (aggregate)"),
        start.elapsed(),
        ROUNDS / 4 * READERS as u32,
    );
    Ok(())
}
