//! The session index: concurrent recorders, updates, unknown keys and a corrupt file.

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use wsp_context::{
    SessionUpdate, WriteError, WriteOptions, read_session_index, record_session, session_index_path,
};
use wsp_store::{MemoryStore, WorkspaceStore};

use crate::support::{YieldingStore, owner, put_all};

fn at(minute: u32) -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 3, 7, 9, minute, 0).unwrap()
}

fn update(id: &str, minute: u32, summary: Option<&str>) -> SessionUpdate {
    SessionUpdate {
        id: id.into(),
        at: at(minute),
        summary: summary.map(Into::into),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_recorders_keep_every_session() {
    let store: Arc<dyn WorkspaceStore> = Arc::new(YieldingStore::default());
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let id = format!("s-{i:02}");
                let (_, written) = record_session(
                    store.as_ref(),
                    &owner(),
                    "planner",
                    update(&id, i % 60, Some("started")),
                    &WriteOptions::default(),
                )
                .await
                .unwrap();
                written.attempts
            })
        })
        .collect();
    let mut contended = false;
    for t in tasks {
        contended |= t.await.unwrap() > 1;
    }
    assert!(
        contended,
        "no update ever conflicted; the test did not race"
    );
    let index = read_session_index(store.as_ref(), &owner(), "planner")
        .await
        .unwrap();
    let mut ids: Vec<&str> = index.sessions.iter().map(|s| s.id.as_str()).collect();
    ids.sort_unstable();
    let expect: Vec<String> = (0..32).map(|i| format!("s-{i:02}")).collect();
    assert_eq!(ids, expect.iter().map(String::as_str).collect::<Vec<_>>());
}

#[tokio::test]
async fn recording_again_updates_and_keeps_unknown_keys() {
    let store = MemoryStore::default();
    let path = session_index_path("planner").unwrap();
    put_all(
        &store,
        &[(
            path.as_str(),
            r#"{"sessions":[{"id":"s-1","startedAt":"2025-03-07T08:00:00Z","updatedAt":"2025-03-07T08:00:00Z","summary":"old","turns":12}],"format":"agentscope"}"#,
        )],
    )
    .await;
    let options = WriteOptions::default();
    let (index, _) = record_session(
        &store,
        &owner(),
        "planner",
        update("s-1", 30, None),
        &options,
    )
    .await
    .unwrap();
    let s = &index.sessions[0];
    assert_eq!((s.summary.as_deref(), s.updated_at), (Some("old"), at(30)));
    assert_eq!(
        s.started_at,
        Utc.with_ymd_and_hms(2025, 3, 7, 8, 0, 0).unwrap()
    );
    let (index, written) = record_session(
        &store,
        &owner(),
        "planner",
        update("s-2", 31, Some("second")),
        &options,
    )
    .await
    .unwrap();
    assert_eq!(index.sessions.len(), 2);
    assert_eq!(written.file.meta.content_type, "application/json");
    let json: serde_json::Value = serde_json::from_str(&written.file.content).unwrap();
    assert_eq!(json["format"], "agentscope");
    assert_eq!(json["sessions"][0]["turns"], 12);
    assert_eq!(json["sessions"][1]["startedAt"], "2025-03-07T09:31:00Z");
    assert_eq!(json["sessions"][1]["summary"], "second");
}

#[tokio::test]
async fn a_corrupt_index_is_left_alone() {
    let store = MemoryStore::default();
    let path = session_index_path("planner").unwrap();
    put_all(&store, &[(path.as_str(), "not json")]).await;
    let err = record_session(
        &store,
        &owner(),
        "planner",
        update("s-1", 0, None),
        &WriteOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, WriteError::Corrupt { .. }), "{err:?}");
    let file = store.get(&owner(), &path, None).await.unwrap();
    assert_eq!((file.content.as_str(), file.meta.version), ("not json", 1));
}

#[test]
fn agent_ids_are_one_component() {
    assert!(session_index_path("agent-1.b_c").is_ok());
    for bad in ["", "a/b", "..", ".hidden", "a b", "a:b"] {
        assert!(
            matches!(session_index_path(bad), Err(WriteError::Invalid(_))),
            "{bad:?}"
        );
    }
}
