//! Shared fixtures: a memory store with files, and a directory on disk.

use std::sync::Arc;

use wsp_context::RenderedContext;
use wsp_store::{FileWrite, MemoryStore, Precondition, WorkspaceStore};
use wsp_types::{Owner, WorkspacePath};

pub fn owner() -> Owner {
    Owner::parse("t-ctx", "w-ctx").unwrap()
}

pub fn path(raw: &str) -> WorkspacePath {
    WorkspacePath::parse(raw).unwrap()
}

/// A memory store holding `files` for [`owner`].
pub async fn store_with(files: &[(&str, &str)]) -> Arc<MemoryStore> {
    let store = Arc::new(MemoryStore::default());
    put_all(&store, files).await;
    store
}

pub async fn put_all(store: &MemoryStore, files: &[(&str, &str)]) {
    for (p, content) in files {
        store
            .put(
                &owner(),
                &path(p),
                FileWrite::markdown(*content),
                Precondition::None,
            )
            .await
            .unwrap();
    }
}

/// Numbered lines `<word> line 001 ...`, `n` of them.
pub fn numbered(word: &str, n: usize) -> String {
    (1..=n)
        .map(|i| format!("{word} line {i:03}: keep this fact in mind.\n"))
        .collect()
}

/// The text, then the report as JSON with the source (it names a random snapshot id) redacted.
pub fn snapshot_text(ctx: &RenderedContext) -> String {
    let mut report = ctx.report.clone();
    report.source = "[source]".into();
    format!(
        "{}\n---- report ----\n{}",
        ctx.text,
        serde_json::to_string_pretty(&report).unwrap()
    )
}

/// A [`MemoryStore`] that yields to the scheduler before every read and write, so that
/// concurrent read-modify-write cycles interleave even though the memory store never waits.
#[derive(Default)]
pub struct YieldingStore(pub MemoryStore);

impl WorkspaceStore for YieldingStore {
    wsp_store::forward_store!(|this| this.0; limits, delete, history);

    fn list<'a>(
        &'a self,
        owner: &'a Owner,
        prefix: &'a wsp_types::WorkspacePrefix,
    ) -> wsp_store::StoreFuture<'a, Vec<wsp_store::FileMeta>> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            self.0.list(owner, prefix).await
        })
    }

    fn get<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        version: Option<u64>,
    ) -> wsp_store::StoreFuture<'a, wsp_store::StoredFile> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            self.0.get(owner, path, version).await
        })
    }

    fn put<'a>(
        &'a self,
        owner: &'a Owner,
        path: &'a WorkspacePath,
        write: FileWrite,
        precondition: Precondition,
    ) -> wsp_store::StoreFuture<'a, wsp_store::StoredFile> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            self.0.put(owner, path, write, precondition).await
        })
    }
}
