//! Snapshot creation cost against workspace size: 10, 1,000 and 100,000 files.
//!
//! A snapshot pins a sequence number and copies nothing, so its cost must not grow with the
//! workspace (target: largest / smallest median at most 1.5). Prints a table and the ratio.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wsp_bench::summarize;
use wsp_store::{FileWrite, Limits, MemoryStore, Precondition, WorkspaceStore};
use wsp_store_sqlite::SqliteStore;
use wsp_types::{Owner, WorkspacePath};

const SIZES: [usize; 3] = [10, 1_000, 100_000];
const SAMPLES: usize = 300;

async fn fill(store: &dyn WorkspaceStore, owner: &Owner, from: usize, to: usize) {
    for i in from..to {
        let path =
            WorkspacePath::parse(&format!("knowledge/{:03}/{i}.md", i % 997)).expect("valid path");
        store
            .put(
                owner,
                &path,
                FileWrite::markdown(format!("note {i}")),
                Precondition::None,
            )
            .await
            .expect("the bench writes");
    }
}

async fn measure(store: &dyn WorkspaceStore, owner: &Owner) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(SAMPLES);
    let mut taken = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let start = Instant::now();
        let snap = store
            .snapshot(owner, &"bench".into())
            .await
            .expect("snapshots work");
        samples.push(start.elapsed());
        taken.push(snap.id);
    }
    // Released after the timed loop: releasing prunes, which is not what is measured here.
    for id in taken {
        store
            .release_snapshot(owner, &id, "completed")
            .await
            .expect("release works");
    }
    samples
}

async fn run(name: &str, store: Arc<dyn WorkspaceStore>) -> (f64, f64) {
    let owner = Owner::parse("bench", "snapshot").expect("valid owner");
    let mut medians = Vec::new();
    let mut filled = 0;
    for n in SIZES {
        let t = Instant::now();
        fill(&*store, &owner, filled, n).await;
        filled = n;
        let fill_time = t.elapsed();
        let mut samples = measure(&*store, &owner).await;
        let s = summarize(&mut samples);
        println!(
            "{name:<8} {n:>7} files   snapshot p50 {:>8.1} us   p99 {:>8.1} us   ({} samples; filled in {:.1} s)",
            s.p50,
            s.p99,
            SAMPLES,
            fill_time.as_secs_f64()
        );
        medians.push(s.p50);
    }
    (medians[0], medians[SIZES.len() - 1])
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let limits = Limits::default().with_max_files(200_000);
    let sqlite =
        SqliteStore::open(&dir.path().join("bench.sqlite3"), limits).expect("the store opens");
    println!("snapshot creation cost by workspace size (release build)");
    let (small, large) = run("sqlite", Arc::new(sqlite)).await;
    let sqlite_ratio = large / small;
    let (m_small, m_large) = run("memory", Arc::new(MemoryStore::new(limits))).await;
    println!();
    println!(
        "ratio 100,000 / 10 files: sqlite {sqlite_ratio:.2}, memory {:.2} (target: at most 1.5)",
        m_large / m_small
    );
}
