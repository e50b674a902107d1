//! Reading a store: live, through a snapshot, and a released snapshot.

use wsp_context::{
    ContextConfig, ContextSource, Entry, EntryOutcome, ReadOutcome, Refusal, SourceError,
    StoreSource, assemble,
};
use wsp_store::{FileWrite, Precondition, WorkspaceStore};
use wsp_types::{MediaType, WorkspacePrefix};

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

#[tokio::test]
async fn a_binary_file_is_skipped_with_its_type_never_rendered() {
    let store = store_with(&[("AGENTS.md", "# Agent\n")]).await;
    let png = MediaType::parse("image/png").unwrap();
    for p in ["MEMORY.md", "knowledge/diagram.png"] {
        store
            .put(
                &owner(),
                &path(p),
                FileWrite::bytes(&[0x89, b'P', b'N', b'G', 0, 0xFF], png.clone()),
                Precondition::None,
            )
            .await
            .unwrap();
    }
    let source = StoreSource::live(store, owner());
    assert_eq!(
        source.read(&path("MEMORY.md")).await.unwrap(),
        ReadOutcome::Refused(Refusal::Binary {
            content_type: "image/png".into()
        })
    );
    let ctx = assemble(&source, &ContextConfig::default()).await.unwrap();
    assert!(
        ctx.text
            .contains("[SKIPPED: MEMORY.md: a binary file (image/png), not text]"),
        "{}",
        ctx.text
    );
    assert!(!ctx.text.contains("iVBO"), "no base64 in the block");
    let memory = ctx
        .report
        .entries
        .iter()
        .find(|e| e.path == "MEMORY.md")
        .unwrap();
    assert_eq!(memory.outcome, EntryOutcome::Skipped);
    // A knowledge file is listed by name, never read.
    assert!(
        ctx.text.contains("- knowledge/diagram.png\n"),
        "{}",
        ctx.text
    );
}
