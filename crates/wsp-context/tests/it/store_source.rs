//! Reading a store: live, through a snapshot, and a released snapshot.

use wsp_context::{
    ContextConfig, ContextSource, Entry, ReadOutcome, SourceError, StoreSource, assemble,
};
use wsp_store::{Precondition, WorkspaceStore};
use wsp_types::WorkspacePrefix;

use crate::support::{owner, path, put_all, store_with};

#[tokio::test]
async fn a_snapshot_source_ignores_later_writes_and_deletes() {
    let store = store_with(&[("AGENTS.md", "before\n"), ("MEMORY.md", "kept\n")]).await;
    let run = store.snapshot(&owner(), &"run".into()).await.unwrap();
    put_all(
        &store,
        &[("AGENTS.md", "after\n"), ("knowledge/new.md", "x")],
    )
    .await;
    store
        .delete(&owner(), &path("MEMORY.md"), Precondition::None)
        .await
        .unwrap();

    let pinned = StoreSource::at_snapshot(store.clone(), owner(), run.id.clone());
    let ctx = assemble(&pinned, &ContextConfig::default()).await.unwrap();
    assert!(ctx.text.contains("before\n") && ctx.text.contains("kept\n"));
    assert!(!ctx.text.contains("after") && !ctx.text.contains("knowledge/new.md"));
    assert_eq!(
        ctx.report.source,
        format!("snapshot {} of t-ctx/w-ctx", run.id)
    );

    let live = StoreSource::live(store.clone(), owner());
    let ctx = assemble(&live, &ContextConfig::default()).await.unwrap();
    assert!(ctx.text.contains("after\n") && ctx.text.contains("[MISSING: MEMORY.md]"));
    assert!(ctx.text.contains("- knowledge/new.md\n"));
}

#[tokio::test]
async fn a_released_snapshot_is_an_error_not_missing_files() {
    let store = store_with(&[("AGENTS.md", "a\n")]).await;
    let run = store.snapshot(&owner(), &"run".into()).await.unwrap();
    let source = StoreSource::at_snapshot(store.clone(), owner(), run.id.clone());
    assert_eq!(
        source.read(&path("nope.md")).await.unwrap(),
        ReadOutcome::Missing
    );
    store
        .release_snapshot(&owner(), &run.id, "done")
        .await
        .unwrap();
    let err = assemble(&source, &ContextConfig::default())
        .await
        .unwrap_err();
    assert_eq!(err, SourceError::SnapshotGone(run.id.to_string()));
    let unknown = StoreSource::at_snapshot(
        store,
        owner(),
        wsp_store::SnapshotId::parse(&"0".repeat(32)).unwrap(),
    );
    assert!(matches!(
        unknown.list(&WorkspacePrefix::all()).await,
        Err(SourceError::SnapshotGone(_))
    ));
}

#[tokio::test]
async fn another_owner_sees_nothing() {
    let store = store_with(&[("AGENTS.md", "mine\n")]).await;
    let other = wsp_types::Owner::parse("t-other", "w-ctx").unwrap();
    let source = StoreSource::live(store, other);
    assert_eq!(
        source.read(&path("AGENTS.md")).await.unwrap(),
        ReadOutcome::Missing
    );
    assert_eq!(
        source.list(&WorkspacePrefix::all()).await.unwrap(),
        Vec::<Entry>::new()
    );
}
